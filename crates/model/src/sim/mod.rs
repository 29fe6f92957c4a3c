//! The Kafka model: brokers, partitions, replicas, producers, consumers and groups are entities,
//! and the messages on the wire are rows of [`Wires`]. Kafka's rules are functions named after
//! Kafka's own, called in order by one system per [`Phase`] of a step; a step is one simulated
//! instant, and [`Phases`] runs its phases in a fixed order on one thread, skipping those with
//! nothing due, so that a scenario and a seed always give the same run. [`Sim`] (`run.rs`) runs
//! it. This file is only the schedule: the phases in order and what makes each one due. Each
//! phase's system lives in its part of Kafka's file, beside a `SystemParam` context (as
//! `ControllerPhase` in `controller.rs`) that borrows what the phase needs for one step and whose
//! methods are the phase's rules.

use bevy_app::App;
use bevy_ecs::change_detection::CheckChangeTicks;
use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;

use clock::Standing;
use timeline::Timeline;

pub mod checkpoint;
pub mod chunked;
pub mod cleaner;
pub mod clock;
pub mod cluster;
pub mod consumer;
pub mod consumer_group;
pub mod consumer_protocol;
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
pub mod loss;
pub mod metadata;
pub mod network;
mod poll;
pub mod producer;
pub mod protocol;
mod purgatory;
pub mod quorum;
pub mod reads;
pub mod replication;
mod retention;
mod run;
pub mod runtime;
pub mod segments;
mod sender;
pub mod timeline;
pub mod trace;
pub mod wires;

pub use clock::{SimClock, SimRng, Wake};
pub use cluster::{Broker, BrokerId, BrokerViews, Cluster, Partition, Record, Replica};
pub use events::{Event, EventKind, EventLog, Metrics, ResetReason};
pub use network::Message;
pub use network::{Node, Wire, WireState};
pub use protocol::Payload;
pub use run::{
    CHECKPOINT_BYTES, CHECKPOINT_EVERY_MS, MAX_CHECKPOINTS, OPEN_ENDED_CHECKPOINT_BYTES,
    OPEN_ENDED_REPLAY_APPENDS, OPEN_ENDED_THINNING, SEEKABLE_MS, Sim, checkpoint_every_ms,
    open_ended_max_every_ms,
};
pub use runtime::Runtime;
pub use wires::Wires;

/// The phases of a step, in the order they run. Each message that arrives at a step is handled in
/// the phase of its kind; what a phase sends arrives at a later step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
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
    /// The leader's ISR checks: expansion and the periodic shrink; high watermarks.
    Isr,
    /// Each broker's periodic retention check: segments deleted, log start offsets moved.
    Retention,
    /// Each broker's log cleaner: compacted logs cleaned, and their old segments deleted.
    Cleaner,
    /// Requests held at a leader (acks=all produces, fetches waiting for data) that can finish.
    Delayed,
    /// Group coordinators: joins, syncs, heartbeats, sessions, offset commits.
    Groups,
    /// Consumers: group responses, fetched records, processing, requests.
    Consumers,
    /// The lag monitor: partitions nobody consumes, and each group's lag when a sample is due.
    Lag,
    /// Producers: handle responses, time out, accumulate new records and send batches.
    Producers,
    /// Checks of Kafka's invariants.
    Checks,
    /// The wire as the next step sees it, and the clock moved on to the next instant.
    Clock,
}

impl Phase {
    /// Every phase, in the order a step runs them.
    pub const ALL: [Phase; 15] = [
        Phase::Timeline,
        Phase::Network,
        Phase::Controller,
        Phase::Replication,
        Phase::Append,
        Phase::Isr,
        Phase::Retention,
        Phase::Cleaner,
        Phase::Delayed,
        Phase::Groups,
        Phase::Consumers,
        Phase::Lag,
        Phase::Producers,
        Phase::Checks,
        Phase::Clock,
    ];

    fn system(self) -> BoxedSystem {
        fn boxed<M>(system: impl IntoSystem<(), (), M>) -> BoxedSystem {
            Box::new(IntoSystem::into_system(system))
        }
        match self {
            Phase::Timeline => boxed(timeline::apply_actions),
            Phase::Network => boxed(faults::phase),
            Phase::Controller => boxed(controller::phase),
            Phase::Replication => boxed(replication::phase),
            Phase::Append => boxed(leader::phase),
            Phase::Isr => boxed(isr::phase),
            Phase::Retention => boxed(retention::phase),
            Phase::Cleaner => boxed(cleaner::phase),
            Phase::Delayed => boxed(purgatory::phase),
            Phase::Groups => boxed(group_coordinator::phase),
            Phase::Consumers => boxed(poll::phase),
            Phase::Lag => boxed(lag::phase),
            Phase::Producers => boxed(sender::phase),
            Phase::Checks => boxed(invariants::phase),
            Phase::Clock => boxed(clock_phase),
        }
    }
}

/// The step: each phase's system, run in [`Phase::ALL`]'s order on the one thread. A phase whose
/// rules have nothing due (no action, no fault, the controller between its deadlines, no consumer
/// group) is skipped by a look at the model, not run to find out. Each phase is one system, so
/// Bevy checks at start-up that its parameters do not conflict, and its change detection sees
/// what earlier phases and earlier steps changed since the phase last ran.
pub struct Phases {
    systems: Vec<(Phase, BoxedSystem)>,
    /// For the look at whether a fault can lose messages.
    brokers: QueryState<&'static Broker>,
    /// The scenario has consumer groups (no phase adds one): found at the first step.
    groups: Option<bool>,
}

impl Phases {
    pub fn new(world: &mut World) -> Phases {
        let systems = Phase::ALL
            .iter()
            .map(|&phase| {
                let mut system = phase.system();
                system.initialize(world);
                (phase, system)
            })
            .collect();
        Phases {
            systems,
            brokers: world.query(),
            groups: None,
        }
    }

    /// The phases, in order.
    pub fn order(&self) -> impl Iterator<Item = Phase> + '_ {
        self.systems.iter().map(|(phase, _)| *phase)
    }

    /// Runs one step.
    pub fn run(&mut self, world: &mut World) {
        // Only the last phase moves the clock, and no phase adds a consumer group.
        let clock = world.resource::<Runtime>().clock;
        let groups = *self
            .groups
            .get_or_insert_with(|| !world.resource::<Cluster>().groups.is_empty());
        let mut due = Due {
            groups,
            ..Due::default()
        };
        for (phase, system) in &mut self.systems {
            // Only the phases up to the controller's change what the brokers' views hold.
            if *phase == Phase::Replication {
                let views = cluster::broker_views(self.brokers.iter(world));
                world.resource_mut::<Runtime>().views = views;
            }
            if !due.phase(*phase, &clock, world, &mut self.brokers) {
                continue;
            }
            system
                .run_without_applying_deferred((), world)
                .expect("the model's resources are in its world");
            due.timeline_ran |= *phase == Phase::Timeline;
        }
        // What a step spawns (a consumer the timeline adds) exists from the next step on. Only
        // systems with commands have anything to apply.
        for (_, system) in self.systems.iter_mut().filter(|(_, s)| s.has_deferred()) {
            system.apply_deferred(world);
        }
    }

    /// Hands the systems the world's periodic check of change ticks.
    pub fn check_change_ticks(&mut self, check: CheckChangeTicks) {
        for (_, system) in &mut self.systems {
            system.check_change_tick(check);
        }
    }
}

/// What a step has found out about which phases are due: each phase is looked at when its turn
/// comes, after the phases before it ran, with as few look-ups of resources as that allows (each
/// costs about 70 instructions).
#[derive(Default)]
struct Due {
    /// The scenario has consumer groups: no phase adds one.
    groups: bool,
    /// The timeline's phase ran at this step: only then can it have acted now.
    timeline_ran: bool,
    /// Whether the retention and cleaner phases are due, found with the controller's: only each
    /// of the two phases' own runs moves its deadline, and the timeline acts before all three.
    log_manager: [bool; 2],
}

impl Due {
    fn phase(
        &mut self,
        phase: Phase,
        clock: &SimClock,
        world: &World,
        brokers: &mut QueryState<&'static Broker>,
    ) -> bool {
        match phase {
            Phase::Timeline => timeline::actions_due(clock, world.resource()),
            Phase::Network => {
                let network = &world.resource::<Runtime>().network;
                faults::any_fault(clock, network, brokers.iter(world))
            }
            Phase::Controller => {
                let acted =
                    self.timeline_ran && world.resource::<Timeline>().acted_at(clock.now_ms);
                let wake = &world.resource::<Runtime>().wake;
                let due = |rule| wake.due(rule, clock) || acted;
                self.log_manager = [due(Standing::Retention), due(Standing::Cleaner)];
                due(Standing::Controller)
            }
            Phase::Retention => self.log_manager[0],
            Phase::Cleaner => self.log_manager[1],
            // Scenarios without consumer groups skip the consumer side altogether.
            Phase::Groups | Phase::Consumers | Phase::Lag => self.groups,
            Phase::Replication
            | Phase::Append
            | Phase::Isr
            | Phase::Delayed
            | Phase::Producers
            | Phase::Checks
            | Phase::Clock => true,
        }
    }
}

/// The clock's phase, the last of a step: the wire as the next step sees it, the clock moved on
/// to the next instant at which anything is due (the timeline's next action among them), and
/// what arrives then.
fn clock_phase(mut runtime: ResMut<Runtime>, timeline: Res<Timeline>) {
    let Runtime {
        clock,
        wake,
        network,
        wires,
        metrics,
        ..
    } = &mut *runtime;
    wires::end_step(clock.now_ms, network, wires, metrics, wake);
    clock::tick(clock, wake, timeline.next_at());
    wires::take_arrivals(clock.now_ms, wires);
}

/// The model's resources and components, with their initial state. The step's systems are
/// [`Phases`], which [`Sim`] builds for its world.
pub fn plugin(app: &mut App) {
    app.add_plugins((timeline::plugin, invariants::plugin, lag::plugin));
}
