//! What every phase of a step shares beside the cluster, as one resource.

use bevy_ecs::prelude::*;

use super::clock::{SimClock, SimRng, Wake};
use super::cluster::BrokerViews;
use super::events::{EventLog, Metrics};
use super::network::Network;
use super::wires::Wires;

/// The clock and its standing deadlines, the seeded generator, the network and the messages on
/// its wire, the event log and the metrics, and the brokers' views. One resource, not eight: a
/// phase's system fetches each of its resources at every step it runs (about 70 instructions
/// each in Bevy 0.19, where a resource is an entity), and nearly every phase needs most of these.
#[derive(Resource, Clone)]
pub struct Runtime {
    pub clock: SimClock,
    pub wake: Wake,
    pub rng: SimRng,
    pub network: Network,
    pub wires: Wires,
    pub events: EventLog,
    pub metrics: Metrics,
    /// The brokers as this step's controller phase left them: [`super::Phases::run`] refreshes
    /// them once that phase has run, and no later phase changes what they hold.
    pub views: BrokerViews,
}

impl Runtime {
    /// The runtime of a scenario about to start: its network, and its seed.
    pub fn new(network: Network, seed: u64) -> Runtime {
        Runtime {
            clock: SimClock::default(),
            wake: Wake::default(),
            rng: SimRng::new(seed),
            network,
            wires: Wires::default(),
            events: EventLog::default(),
            metrics: Metrics::default(),
            views: BrokerViews::default(),
        }
    }
}
