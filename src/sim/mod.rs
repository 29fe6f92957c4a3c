//! The Kafka model: brokers, partitions, replicas, producers, consumers and groups are entities,
//! and the messages on the wire are rows of [`Wires`]; Kafka's rules are systems in the
//! [`SimStep`] schedule, one step per simulated millisecond, single-threaded and totally ordered
//! so that a scenario and a seed always give the same run. [`Sim`] (`run.rs`) runs it.

use bevy::ecs::schedule::{LogLevel, ScheduleBuildSettings, ScheduleLabel, SingleThreadedExecutor};
use bevy::prelude::*;

pub mod checkpoint;
pub mod chunked;
pub mod clock;
pub mod cluster;
pub mod consumer;
pub mod controller;
pub mod events;
mod faults;
pub mod group_coordinator;
pub mod invariants;
pub mod isr;
pub mod keys;
pub mod lag;
pub mod leader;
pub mod ledger;
mod load;
pub mod network;
pub mod producer;
pub mod protocol;
pub mod reads;
pub mod replication;
mod run;
pub mod timeline;
pub mod trace;
pub mod wires;

pub use clock::{SimClock, SimRng, Wake};
pub use cluster::{Broker, BrokerId, Cluster, Partition, Record, Replica};
pub use events::{Event, EventKind, EventLog, Metrics};
pub use network::{Node, Wire, WireState};
pub use run::{CHECKPOINT_BYTES, CHECKPOINT_EVERY_MS, MAX_CHECKPOINTS, Sim, checkpoint_every_ms};
pub use wires::{Message, Payload, Wires};

/// One step of the simulation: everything that happens in one millisecond of sim time.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimStep;

/// The phases of a step, in the order they run. Each message that arrives at a step is handled in
/// the phase of its kind; what a phase sends arrives at a later step.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimSet {
    /// Scenario actions due now.
    Timeline,
    /// Links cut: messages on them are lost; dead brokers refuse what reaches them.
    Network,
    /// Heartbeats, the controller's fencing and elections.
    Controller,
    /// Leaders answer followers' fetches; followers append what they fetched and fetch again.
    Replication,
    /// Leaders append produce requests and answer acks=0/1 ones.
    Append,
    /// The leader's ISR checks: expansion and the periodic shrink.
    Isr,
    /// Requests held at a leader (acks=all produces, fetches waiting for data) that can finish.
    Delayed,
    /// Group coordinators: joins, syncs, heartbeats, sessions, offset commits.
    Groups,
    /// Consumers: group responses, fetched records, processing, requests; the lag monitor.
    Consumers,
    /// Producers: handle responses, time out, accumulate new records and send batches.
    Producer,
    /// Checks of Kafka's invariants.
    Invariants,
    /// Despawns finished messages and moves the clock one millisecond on.
    Clock,
}

/// The model: the step schedule and its systems. Runs the same under `MinimalPlugins` (command
/// line, tests) and in the window app.
pub fn plugin(app: &mut App) {
    let mut schedule = Schedule::new(SimStep);
    schedule.set_executor(SingleThreadedExecutor::new());
    schedule.set_build_settings(ScheduleBuildSettings {
        ambiguity_detection: LogLevel::Error,
        // What a step spawns (messages) is only read at later steps, and despawns are of
        // messages already handled: the commands of a step are applied once, at its end.
        auto_insert_apply_deferred: false,
        ..default()
    });
    schedule.configure_sets(
        (
            SimSet::Timeline,
            SimSet::Network,
            SimSet::Controller,
            SimSet::Replication,
            SimSet::Append,
            SimSet::Isr,
            SimSet::Delayed,
            SimSet::Groups,
            SimSet::Consumers,
            SimSet::Producer,
            SimSet::Invariants,
            SimSet::Clock,
        )
            .chain(),
    );
    app.add_schedule(schedule);
    // Scenarios without consumer groups skip the consumer side altogether.
    app.configure_sets(
        SimStep,
        (SimSet::Groups, SimSet::Consumers).run_if(has_consumer_groups),
    );

    app.add_plugins((
        clock::plugin,
        events::plugin,
        timeline::plugin,
        wires::plugin,
        faults::plugin,
        controller::plugin,
        replication::plugin,
        leader::plugin,
        isr::plugin,
        producer::plugin,
        invariants::plugin,
    ))
    .add_plugins((
        reads::plugin,
        group_coordinator::plugin,
        consumer::plugin,
        lag::plugin,
    ));
}

fn has_consumer_groups(cluster: Option<Res<Cluster>>) -> bool {
    cluster.is_some_and(|c| !c.groups.is_empty())
}
