//! What happened, in order: the event log the report, the view's timeline and the event panel
//! read, and the counters behind Kafka's metrics.

use bevy::prelude::*;
use serde::Serialize;

/// One event at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub at_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Events, named as Kafka's logs and metrics name them where they have a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum EventKind {
    /// The leader removed replicas that fell behind from the ISR.
    IsrShrink {
        topic: String,
        partition: u32,
        isr: Vec<u32>,
        removed: Vec<u32>,
    },
    /// A follower caught up with the high watermark and rejoined the ISR.
    IsrExpand {
        topic: String,
        partition: u32,
        isr: Vec<u32>,
        added: Vec<u32>,
    },
    LinkCut {
        a: u32,
        b: u32,
    },
    LinkHealed {
        a: u32,
        b: u32,
    },
    BrokerSlowed {
        broker: u32,
        extra_ms: u64,
    },
    AcksChanged {
        producer: String,
        acks: String,
        idempotent: bool,
    },
    RateChanged {
        producer: String,
        records_per_sec: u32,
    },
    RecordsProduced {
        producer: String,
        key: Option<String>,
        count: u64,
    },
}

#[derive(Resource, Debug, Default)]
pub struct EventLog {
    pub events: Vec<Event>,
}

impl EventLog {
    pub fn push(&mut self, at_ms: u64, kind: EventKind) {
        self.events.push(Event { at_ms, kind });
    }
}

/// Counters over the whole run.
#[derive(Resource, Debug, Default, Clone, Serialize)]
pub struct Metrics {
    /// `IsrShrinksPerSec`, summed.
    pub isr_shrinks: u64,
    /// `IsrExpandsPerSec`, summed.
    pub isr_expands: u64,
    pub produce_requests: u64,
    pub fetch_requests: u64,
    /// Records appended by leaders (a retried batch without idempotence counts again).
    pub records_appended: u64,
    /// Records appended by followers from fetch responses.
    pub records_replicated: u64,
    /// Messages dropped on cut links.
    pub messages_lost: u64,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<EventLog>().init_resource::<Metrics>();
}
