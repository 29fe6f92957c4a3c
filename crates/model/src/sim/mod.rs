//! The Kafka model: brokers, partitions, replicas, producers, consumers and groups are entities,
//! and the messages on the wire are rows of [`Wires`]. Kafka's rules are functions named after
//! Kafka's own, called in order by one system per [`Phase`] of a step; a step is one simulated
//! instant, and [`Phases`] runs its phases in a fixed order on one thread, skipping those with
//! nothing due, so that a scenario and a seed always give the same run. [`Sim`] (`run.rs`) runs
//! it. This file is the schedule: the phases, top to bottom, and the rules each one calls.

use bevy_app::App;
use bevy_ecs::change_detection::CheckChangeTicks;
use bevy_ecs::prelude::*;
use bevy_ecs::system::BoxedSystem;

use consumer::Consumer;
use group_coordinator::ConsumerGroup;
use invariants::Invariants;
use lag::LagMonitor;
use ledger::AckLedger;
use network::Network;
use producer::Producer;
use protocol::ConsumerFetch;
use timeline::Timeline;

pub mod checkpoint;
pub mod chunked;
pub mod clock;
pub mod cluster;
pub mod consumer;
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
pub mod metadata;
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
    /// Requests held at a leader (acks=all produces, fetches waiting for data) that can finish.
    Delayed,
    /// Group coordinators: joins, syncs, heartbeats, sessions, offset commits.
    Groups,
    /// Consumers: group responses, fetched records, processing, requests; the lag monitor.
    Consumers,
    /// Producers: handle responses, time out, accumulate new records and send batches.
    Producers,
    /// Checks of Kafka's invariants.
    Checks,
    /// The wire as the next step sees it, and the clock moved on to the next instant.
    Clock,
}

impl Phase {
    /// Every phase, in the order a step runs them.
    pub const ALL: [Phase; 12] = [
        Phase::Timeline,
        Phase::Network,
        Phase::Controller,
        Phase::Replication,
        Phase::Append,
        Phase::Isr,
        Phase::Delayed,
        Phase::Groups,
        Phase::Consumers,
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
            Phase::Append => boxed(append_phase),
            Phase::Isr => boxed(isr_phase),
            Phase::Delayed => boxed(delayed_phase),
            Phase::Groups => boxed(groups_phase),
            Phase::Consumers => boxed(consumers_phase),
            Phase::Producers => boxed(producers_phase),
            Phase::Checks => boxed(checks_phase),
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
        }
    }

    /// The phases, in order.
    pub fn order(&self) -> impl Iterator<Item = Phase> + '_ {
        self.systems.iter().map(|(phase, _)| *phase)
    }

    /// Runs one step.
    pub fn run(&mut self, world: &mut World) {
        // Only the last phase moves the clock, and no phase adds a consumer group.
        let clock = *world.resource::<SimClock>();
        let groups = !world.resource::<Cluster>().groups.is_empty();
        for (phase, system) in &mut self.systems {
            if !due(*phase, &clock, groups, world, &mut self.brokers) {
                continue;
            }
            system
                .run_without_applying_deferred((), world)
                .expect("the model's resources are in its world");
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

/// Whether a phase has anything to do at this step; looked at when the phase's turn comes, after
/// the phases before it ran.
fn due(
    phase: Phase,
    clock: &SimClock,
    groups: bool,
    world: &World,
    brokers: &mut QueryState<&'static Broker>,
) -> bool {
    match phase {
        Phase::Timeline => timeline::actions_due(clock, world.resource()),
        Phase::Network => faults::any_fault(clock, world.resource(), brokers.iter(world)),
        Phase::Controller => controller::controller_due(clock, world.resource(), world.resource()),
        // Scenarios without consumer groups skip the consumer side altogether.
        Phase::Groups | Phase::Consumers => groups,
        Phase::Replication
        | Phase::Append
        | Phase::Isr
        | Phase::Delayed
        | Phase::Producers
        | Phase::Checks
        | Phase::Clock => true,
    }
}

/// The model's resources and components, with their initial state. The step's systems are
/// [`Phases`], which [`Sim`] builds for its world.
pub fn plugin(app: &mut App) {
    app.add_plugins((
        clock::plugin,
        events::plugin,
        timeline::plugin,
        invariants::plugin,
        lag::plugin,
    ));
}

#[allow(clippy::too_many_arguments)]
fn append_phase(
    clock: Res<SimClock>,
    mut network: ResMut<Network>,
    mut metrics: ResMut<Metrics>,
    mut wires: ResMut<Wires>,
    brokers: Query<&Broker>,
    partitions: Query<&Partition>,
    mut replicas: Query<&mut Replica>,
    mut due: Local<Vec<u64>>,
) {
    leader::append_produce_requests(
        &clock,
        &mut network,
        &mut metrics,
        &mut wires,
        &brokers,
        &partitions,
        &mut replicas,
        &mut due,
    );
}

#[allow(clippy::too_many_arguments)]
fn isr_phase(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    network: Res<Network>,
    mut events: ResMut<EventLog>,
    mut metrics: ResMut<Metrics>,
    mut wake: ResMut<Wake>,
    brokers: Query<&Broker>,
    mut partitions: Query<&mut Partition>,
    mut replicas: Query<&mut Replica>,
    mut watch: Local<isr::HighWatermarks>,
) {
    use isr::*;
    expand_isr(
        &clock,
        &cluster,
        &mut wake,
        &mut events,
        &mut metrics,
        &network,
        &brokers,
        &mut partitions,
        &replicas.as_readonly(),
    );
    // The ISR check is periodic: the steps between checks skip it.
    if isr_check_due(&clock, &wake) {
        shrink_isr(
            &clock,
            &cluster,
            &mut events,
            &mut metrics,
            &network,
            &brokers,
            &mut partitions,
            &replicas.as_readonly(),
            &mut wake,
        );
    }
    advance_high_watermarks(
        &clock,
        &cluster,
        &brokers,
        &mut partitions,
        &mut replicas,
        &mut wake,
        &mut watch,
    );
}

/// What the delayed phase keeps between steps: due and arriving messages, touched partitions,
/// and a fetch's answers.
type DelayedScratch = (Vec<u64>, Vec<u64>, Vec<Entity>, replication::Answers);

#[allow(clippy::too_many_arguments)]
fn delayed_phase(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut network: ResMut<Network>,
    mut wires: ResMut<Wires>,
    brokers: Query<&Broker>,
    changed_brokers: Query<&Broker, Changed<Broker>>,
    partitions: Query<&Partition>,
    replicas: Query<&Replica>,
    changed_partitions: Query<Entity, Changed<Partition>>,
    changed_replicas: Query<&Replica, Changed<Replica>>,
    mut metrics: ResMut<Metrics>,
    mut scratch: Local<DelayedScratch>,
) {
    let (due, arriving, touched, answers) = &mut *scratch;
    // Each rule fills `touched` afresh.
    leader::complete_delayed_produce(
        &clock,
        &mut network,
        &mut wires,
        &brokers,
        &partitions,
        &replicas,
        due,
    );
    replication::complete_delayed_fetches(
        &clock,
        &cluster,
        &mut network,
        &mut wires,
        &brokers,
        &partitions,
        &replicas,
        &changed_replicas,
        touched,
        due,
        answers,
    );
    if wires.any_due::<ConsumerFetch>() {
        reads::serve_consumer_fetches(
            &clock,
            &cluster,
            &mut network,
            &mut wires,
            &mut metrics,
            &brokers,
            &changed_brokers,
            &partitions,
            &replicas,
            &changed_partitions,
            &changed_replicas,
            touched,
            due,
            arriving,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn groups_phase(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut network: ResMut<Network>,
    mut events: ResMut<EventLog>,
    mut wake: ResMut<Wake>,
    mut wires: ResMut<Wires>,
    brokers: Query<&Broker>,
    partitions: Query<&Partition>,
    mut replicas: Query<&mut Replica>,
    mut groups: Query<&mut ConsumerGroup>,
    mut due: Local<Vec<u64>>,
) {
    use group_coordinator::*;
    // Each broker acts as coordinator by its own metadata.
    let views = cluster::broker_views(brokers.iter());
    follow_offsets_partitions(
        &cluster,
        &views,
        &partitions,
        &replicas.as_readonly(),
        &mut groups,
    );
    handle_group_requests(
        &clock,
        &cluster,
        &mut network,
        &mut events,
        &mut wires,
        &views,
        &partitions,
        &mut replicas,
        &mut groups,
        &mut wake,
        &mut due,
    );
    complete_joins(
        &clock,
        &cluster,
        &mut network,
        &mut wake,
        &mut wires,
        &mut groups,
        &mut due,
    );
    expire_sessions(&clock, &cluster, &mut events, &mut wake, &mut groups);
    complete_writes(
        &clock,
        &cluster,
        &mut network,
        &mut events,
        &mut wires,
        &views,
        &partitions,
        &replicas.as_readonly(),
        &mut groups,
        &mut due,
    );
}

#[allow(clippy::too_many_arguments)]
fn consumers_phase(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut events: ResMut<EventLog>,
    mut network: ResMut<Network>,
    mut wake: ResMut<Wake>,
    mut wires: ResMut<Wires>,
    mut invariants: ResMut<Invariants>,
    mut monitor: ResMut<LagMonitor>,
    brokers: Query<&Broker>,
    partitions: Query<&Partition>,
    replicas: Query<&Replica>,
    groups: Query<&ConsumerGroup>,
    mut consumers: Query<&mut Consumer>,
    mut scratch: Local<(Vec<u64>, lag::Owners)>,
) {
    use consumer::*;
    let (due, owners) = &mut *scratch;
    handle_group_responses(
        &clock,
        &cluster,
        &mut network,
        &mut wires,
        &groups,
        &mut consumers,
        due,
    );
    handle_fetch_responses(
        &clock,
        &cluster,
        &mut events,
        &mut invariants,
        &mut wires,
        &partitions,
        &replicas,
        &groups,
        &mut consumers,
        due,
    );
    process_records(&clock, &cluster, &mut wake, &groups, &mut consumers);
    send_requests(
        &clock,
        &cluster,
        &mut network,
        &mut wake,
        &mut invariants,
        &brokers,
        &partitions,
        &replicas,
        &groups,
        &mut consumers,
    );
    lag::count_paused(
        &clock,
        &cluster,
        &mut monitor,
        &groups,
        &consumers.as_readonly(),
        owners,
    );
    lag::sample_lag(
        &clock,
        &cluster,
        &mut monitor,
        &mut wake,
        &groups,
        &partitions,
        &replicas,
        owners,
    );
}

#[allow(clippy::too_many_arguments)]
fn producers_phase(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut network: ResMut<Network>,
    mut wake: ResMut<Wake>,
    mut rng: ResMut<SimRng>,
    mut ledger: ResMut<AckLedger>,
    mut wires: ResMut<Wires>,
    brokers: Query<&Broker>,
    partitions: Query<&Partition>,
    mut producers: Query<&mut Producer>,
    mut scratch: Local<producer::Scratch>,
) {
    use producer::*;
    let Scratch {
        due,
        keys,
        by_leader,
    } = &mut *scratch;
    handle_responses(
        &clock,
        &cluster,
        &mut rng,
        &mut ledger,
        &mut wires,
        &mut producers,
        due,
    );
    expire(
        &clock,
        &cluster,
        &mut rng,
        &mut ledger,
        &mut wires,
        &mut producers,
    );
    accumulate(&clock, &cluster, &mut rng, &mut producers, keys);
    // After the new records: one for a partition with no known leader asks for metadata now.
    refresh_metadata(
        &clock,
        &cluster,
        &network,
        &mut wake,
        &brokers,
        &partitions,
        &mut producers,
    );
    send(
        &clock,
        &cluster,
        &mut network,
        &mut rng,
        &mut ledger,
        &mut wake,
        &brokers,
        &mut producers,
        by_leader,
    );
}

#[allow(clippy::too_many_arguments)]
fn checks_phase(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    metrics: Res<Metrics>,
    ledger: Res<AckLedger>,
    mut invariants: ResMut<Invariants>,
    brokers: Query<&Broker>,
    partitions: Query<&Partition>,
    replicas: Query<&Replica>,
    producers: Query<&Producer>,
    changed_partitions: Query<Entity, Changed<Partition>>,
    changed_replicas: Query<&Replica, Changed<Replica>>,
    groups: Query<&ConsumerGroup>,
    consumers: Query<&Consumer>,
    mut touched: Local<Vec<Entity>>,
) {
    use invariants::*;
    invariants.fit(cluster.partitions.len());
    check(
        &clock,
        &cluster,
        &mut invariants,
        &changed_partitions,
        &changed_replicas,
        &brokers,
        &partitions,
        &replicas,
        &producers,
        &mut touched,
    );
    if elections_or_truncations(&metrics, &invariants) {
        check_no_safe_loss(
            &clock,
            &cluster,
            &metrics,
            &ledger,
            &mut invariants,
            &partitions,
            &replicas,
            &producers,
        );
    }
    if !cluster.groups.is_empty() {
        check_committed_offsets(&clock, &cluster, &mut invariants, &groups);
        check_single_owner(&clock, &cluster, &mut invariants, &groups, &consumers);
    }
}

fn clock_phase(
    mut clock: ResMut<SimClock>,
    mut wake: ResMut<Wake>,
    timeline: Res<Timeline>,
    mut network: ResMut<Network>,
    mut wires: ResMut<Wires>,
    mut metrics: ResMut<Metrics>,
) {
    wires::end_step(
        clock.now_ms,
        &mut network,
        &mut wires,
        &mut metrics,
        &mut wake,
    );
    clock::tick(&mut clock, &mut wake, &timeline);
    wires::take_arrivals(clock.now_ms, &mut wires);
}
