//! The active KRaft controller: broker heartbeats and sessions, fencing, and leader elections
//! (`BrokerHeartbeatManager`, `ReplicationControlManager`, `PartitionChangeBuilder`).
//!
//! - Brokers heartbeat every `broker.heartbeat.interval.ms`; one silent for longer than
//!   `broker.session.timeout.ms` is fenced: it leaves every ISR and the partitions it led get a
//!   new leader. The controller never sees a crash itself, only the heartbeats stopping.
//! - Election: the first replica in assignment order that is in the ISR and not fenced; else,
//!   with eligible leader replicas (KIP-966), the first such ELR member; else, with
//!   `unclean.leader.election.enable`, the first replica not fenced (ISR = [it]); else the
//!   partition is offline and its ISR keeps its last member. Every leader change bumps the epoch.
//! - A fenced broker that heartbeats again is unfenced, and offline partitions it can lead get a
//!   leader. A restarted broker registers as a new incarnation: refused while the old one's
//!   session is still valid (it retries with back-off), then fenced until its next heartbeat.
//! - Preferred leader election on request, and periodically when `auto.leader.rebalance.enable`.
//! - Every leadership change is a record in the controller's metadata log. It reaches each
//!   broker the controller can reach one network latency later (KRaft brokers fetch the log from
//!   the controller, `BrokerMetadataPublisher`); a broker cut off from the controller keeps its
//!   last view and catches up from its next heartbeat answer once the link heals.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::Wake;
use super::clock::{SimRng, Standing};
use super::cluster::{
    Broker, BrokerId, BrokerViews, Cluster, FollowerState, FollowerStates, LeaderRecord, Partition,
    Reassignment, Replica,
};
use super::consumer_group::ConsumerGroup;
use super::events::{EventKind, EventLog, Metrics};
use super::network::Node;
use super::protocol::OnWire;
use super::protocol::{Heartbeat, HeartbeatResponse};
use super::quorum::{Controller, MetadataLog};
use super::wires::Wires;

/// What an election needs besides the partition.
pub struct ElectionContext<'a> {
    pub now: u64,
    pub cluster: &'a Cluster,
    pub brokers: BrokerViews,
    pub events: &'a mut EventLog,
    pub metrics: &'a mut Metrics,
    pub metadata: &'a mut MetadataLog,
    /// Why the leadership changes, for the event log.
    pub reason: &'static str,
}

impl ElectionContext<'_> {
    /// Which brokers the controller may elect now.
    pub fn eligible(&self) -> impl Fn(BrokerId) -> bool + '_ {
        |b| self.brokers[b as usize].eligible
    }
}

/// Who leads next: `Some((broker, unclean))`, or `None` for offline. `acceptable` says which
/// brokers may lead (`PartitionChangeBuilder.isAcceptableLeader`: registered, unfenced, not
/// shutting down). `PartitionChangeBuilder.electAnyLeader`: the first replica in assignment order
/// that is in the ISR, or in the ELR once the ISR is empty (`isValidNewLeader`), then, with
/// unclean election, the first acceptable one.
pub fn choose_leader(
    partition: &Partition,
    acceptable: impl Fn(BrokerId) -> bool,
    elr_enabled: bool,
) -> Option<(BrokerId, bool)> {
    if let Some(b) = partition
        .assignment
        .iter()
        .find(|b| partition.in_isr(**b) && acceptable(**b))
    {
        return Some((*b, false));
    }
    if elr_enabled
        && let Some(b) = partition
            .assignment
            .iter()
            .find(|b| partition.elr.contains(b) && acceptable(**b))
    {
        return Some((*b, false));
    }
    if partition.unclean_leader_election
        && let Some(b) = partition.assignment.iter().find(|b| acceptable(**b))
    {
        return Some((*b, true));
    }
    None
}

/// Makes `leader` the partition's leader (or takes it offline) in a new epoch: the new leader
/// starts the epoch at its log end offset (KIP-101) and every follower fetches from it at once.
pub fn set_leader(
    partition: &mut Partition,
    followers: &mut FollowerStates,
    leader: Option<(BrokerId, bool)>,
    ctx: &mut ElectionContext,
) {
    let now = ctx.now;
    if leader.is_none() && partition.leader.is_none() {
        return; // Already offline.
    }
    partition.leader = leader.map(|(b, _)| b);
    new_leader_epoch(partition, ctx);
    partition.elected_uncleanly = leader.is_some_and(|(_, unclean)| unclean);
    if let Some(since) = partition.dead_leader_since_ms.take() {
        ctx.metrics.dead_leader_ms += now - since;
    }
    // A broker down but not yet fenced can still be chosen (a preferred election, say).
    if let Some((b, _)) = leader
        && !ctx.brokers[b as usize].alive
    {
        partition.dead_leader_since_ms = Some(now);
    }
    let topic = ctx.cluster.topics[partition.topic].name.clone();
    match leader {
        Some((b, unclean)) => {
            if unclean {
                partition.isr = vec![b];
                partition.elr.clear();
            } else if !partition.in_isr(b) {
                // Elected from the ELR: it is the ISR now.
                partition.isr = vec![b];
                partition.elr.retain(|e| *e != b);
            }
            if let Some(since) = partition.offline_since_ms.take() {
                ctx.metrics.offline_partition_ms += now - since;
            }
            ctx.metrics.leader_elections += 1;
            if unclean {
                ctx.metrics.unclean_leader_elections += 1;
            }
            ctx.events.push(
                now,
                EventKind::LeaderElected {
                    topic,
                    partition: partition.index,
                    leader: b,
                    leader_epoch: partition.leader_epoch,
                    unclean,
                    isr: partition.isr.clone(),
                    reason: ctx.reason.to_string(),
                },
            );
        }
        None => {
            partition.offline_since_ms.get_or_insert(now);
            ctx.events.push(
                now,
                EventKind::PartitionOffline {
                    topic,
                    partition: partition.index,
                    leader_epoch: partition.leader_epoch,
                    isr: partition.isr.clone(),
                },
            );
        }
    }
    // `Partition.makeLeader` resets what the leader knows of each follower: ISR members count as
    // caught up now, their log end offsets are unknown until they fetch.
    for (b, f) in partition.assignment.iter().zip(followers.0.iter_mut()) {
        *f = FollowerState::reset(partition.isr.contains(b), now);
    }
}

/// The next leader epoch, written to the metadata log with the partition's leader.
fn new_leader_epoch(partition: &mut Partition, ctx: &mut ElectionContext) {
    partition.leader_epoch += 1;
    let offset = ctx
        .metadata
        .append(ctx.now, ctx.cluster.config.network_latency_ms);
    partition.history.push(LeaderRecord {
        offset,
        leader: partition.leader,
        leader_epoch: partition.leader_epoch,
    });
}

/// The controller fences a broker: out of every ISR and leadership.
fn fence(broker: BrokerId, partitions: &mut PartitionsMut, ctx: &mut ElectionContext) {
    ctx.events.push(ctx.now, EventKind::BrokerFenced { broker });
    leave_isrs_and_leaderships(broker, partitions, ctx);
}

/// A broker leaves every ISR (never emptying one, unless KIP-966 keeps it electable in the ELR)
/// and every partition it led gets a new leader among the others, or goes offline
/// (`ReplicationControlManager.generateLeaderAndIsrUpdates`, for fencing and for controlled
/// shutdown alike; `ctx.brokers` already counts the broker ineligible).
fn leave_isrs_and_leaderships(
    broker: BrokerId,
    partitions: &mut PartitionsMut,
    ctx: &mut ElectionContext,
) {
    let elr_enabled = ctx.cluster.config.eligible_leader_replicas;
    for &entity in &ctx.cluster.partitions {
        let (mut partition, mut followers) = partitions.get_mut(entity).expect("partition entity");
        if !partition.assignment.contains(&broker) {
            continue;
        }
        if partition.in_isr(broker) && (partition.isr.len() > 1 || elr_enabled) {
            partition.isr.retain(|b| *b != broker);
            if elr_enabled && partition.isr.len() < partition.effective_min_isr() {
                partition.elr.push(broker);
                partition.elr.sort_unstable();
            }
        }
        if partition.leader == Some(broker) {
            let next = choose_leader(&partition, ctx.eligible(), elr_enabled);
            set_leader(&mut partition, &mut followers, next, ctx);
        }
    }
}

/// A fenced broker is back: offline partitions it can lead get a leader.
fn unfence(broker: BrokerId, partitions: &mut PartitionsMut, ctx: &mut ElectionContext) {
    ctx.events
        .push(ctx.now, EventKind::BrokerUnfenced { broker });
    let elr_enabled = ctx.cluster.config.eligible_leader_replicas;
    for &entity in &ctx.cluster.partitions {
        let (mut partition, mut followers) = partitions.get_mut(entity).expect("partition entity");
        if partition.leader.is_none()
            && partition.assignment.contains(&broker)
            && let Some(next) = choose_leader(&partition, ctx.eligible(), elr_enabled)
        {
            set_leader(&mut partition, &mut followers, Some(next), ctx);
        }
    }
}

/// A heartbeat or its answer still on its way wakes the controller's rules when it arrives.
fn wake_at_arrivals<T: OnWire>(wires: &Wires, wake: &mut Wake) {
    if let Some(at) = wires.next_arrival::<T>() {
        wake.standing_at(Standing::Controller, at);
    }
}

/// After its registration is accepted, a broker heartbeats again this soon
/// (`BrokerLifecycleManager`: at once, then every 10 ms while it catches up), asking to be
/// unfenced; the model takes its metadata catch-up and log recovery as instant.
pub const STARTUP_HEARTBEAT_MS: u64 = 10;

/// After the controller's first answer that a controlled shutdown must wait, the broker asks
/// again this soon (`BrokerLifecycleManager`), then at its usual interval.
const FIRST_SHUTDOWN_RETRY_MS: u64 = 50;

/// `BrokerLifecycleManager`'s back-off before it sends a refused registration again:
/// `ExponentialBackoff(100, 2, broker.session.timeout.ms, 0.02)`.
fn registration_backoff(failed: u32, session_timeout_ms: u64, rng: &mut SimRng) -> u64 {
    let term = 100u64.saturating_mul(1 << failed.min(32));
    (term.min(session_timeout_ms) * rng.permille(980, 1020) / 1000).min(session_timeout_ms)
}

/// `unclean.leader.election.interval.ms` (internal, 5 minutes): while some partition has no
/// leader, the controller looks this often for those whose topic now allows an unclean election
/// (`QuorumController.maybeScheduleNextElectUncleanLeaders`,
/// `ReplicationControlManager.maybeTriggerUncleanLeaderElectionForLeaderlessPartitions`): turning
/// `unclean.leader.election.enable` on elects no one at once.
pub const UNCLEAN_CHECK_INTERVAL_MS: u64 = 300_000;

/// The partitions, with what each one's leader knows of its followers (an election resets it).
type PartitionsMut<'w, 's> = Query<'w, 's, (&'static mut Partition, &'static mut FollowerStates)>;

/// The controller's rules, with what they borrow for one step.
#[derive(SystemParam)]
pub(super) struct ControllerPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: ResMut<'w, Cluster>,
    controllers: Query<'w, 's, &'static mut Controller>,
    brokers: Query<'w, 's, &'static mut Broker>,
    /// With what each partition's leader knows of its followers, which an election resets.
    partitions: PartitionsMut<'w, 's>,
    replicas: Query<'w, 's, &'static mut Replica>,
    groups: Query<'w, 's, &'static mut ConsumerGroup>,
    /// Heartbeats and answers arriving now.
    due: Local<'s, Vec<u64>>,
    /// Despawns the replicas a reassignment removes.
    commands: Commands<'w, 's>,
}

/// The controller's phase: heartbeats, the controller's fencing, elections and changes.
pub(super) fn phase(mut rules: ControllerPhase) {
    rules.controller_publishes_metadata();
    rules.brokers_send_heartbeats();
    rules.brokers_take_heartbeat_responses();
    rules.brokers_learn_leaderships();
    rules.controller_handles_heartbeats();
    rules.controller_checks_sessions();
    rules.controller_balances_leaders();
    // After the heartbeats, which collect the controller's wakes afresh.
    rules.controller_adds_brokers();
    rules.controller_creates_partitions();
    rules.controller_starts_reassignments();
    rules.controller_completes_reassignments();
    // What this step's elections wrote reaches the brokers a network latency later.
    if let Some(at) = rules.controller().metadata.next_delivery() {
        rules.runtime.wake.standing_at(Standing::Controller, at);
    }
}

impl<'w, 's> ControllerPhase<'w, 's> {
    /// The controller's own state.
    fn controller(&mut self) -> Mut<'_, Controller> {
        self.controllers
            .get_mut(self.cluster.controller)
            .expect("controller")
    }

    /// What an election needs, with the brokers as the controller sees them now, and the
    /// partitions it changes.
    fn election(
        &mut self,
        reason: &'static str,
    ) -> (ElectionContext<'_>, &mut PartitionsMut<'w, 's>) {
        let controller = self
            .controllers
            .get_mut(self.cluster.controller)
            .expect("controller")
            .into_inner();
        let runtime = &mut *self.runtime;
        let ctx = ElectionContext {
            now: runtime.clock.now_ms,
            cluster: &self.cluster,
            brokers: super::cluster::broker_views(self.brokers.iter()),
            events: &mut runtime.events,
            metrics: &mut runtime.metrics,
            metadata: &mut controller.metadata,
            reason,
        };
        (ctx, &mut self.partitions)
    }

    /// Fences or unfences a broker: sets its flag, then runs `fence` or `unfence` with the
    /// brokers as the controller sees them now.
    fn change_fencing(&mut self, fenced: bool, broker: BrokerId) {
        let entity = self.cluster.brokers[broker as usize - 1];
        self.brokers.get_mut(entity).expect("broker entity").fenced = fenced;
        if fenced {
            let (mut ctx, partitions) = self.election("leader fenced");
            fence(broker, partitions, &mut ctx);
        } else {
            let (mut ctx, partitions) = self.election("replica unfenced");
            unfence(broker, partitions, &mut ctx);
        }
    }

    /// A heartbeat asks to shut down (`BrokerHeartbeatManager.calculateNextBrokerState`). The
    /// first puts the broker in CONTROLLED_SHUTDOWN: it leaves every ISR and its leaderships move
    /// to other in-sync replicas (`ReplicationControlManager.handleBrokerInControlledShutdown`).
    /// It may stop (SHUTDOWN_NOW, and the controller fences it) once it leads nothing and every
    /// active broker has applied the metadata log that far; a fenced broker may stop at once.
    /// Returns whether it may stop.
    fn controlled_shutdown(&mut self, b: BrokerId, fenced: bool) -> bool {
        if fenced {
            return true;
        }
        let now = self.runtime.clock.now_ms;
        let entity = self.cluster.brokers[b as usize - 1];
        if !self
            .brokers
            .get(entity)
            .expect("broker")
            .in_controlled_shutdown
        {
            self.brokers
                .get_mut(entity)
                .expect("broker")
                .in_controlled_shutdown = true;
            self.runtime
                .events
                .push(now, EventKind::BrokerInControlledShutdown { broker: b });
            let (mut ctx, partitions) = self.election("controlled shutdown");
            leave_isrs_and_leaderships(b, partitions, &mut ctx);
            let mut controller = self.controller();
            controller.controlled_shutdown_offset[b as usize] = Some(controller.metadata.end);
        }
        let Self {
            cluster,
            brokers,
            partitions,
            controllers,
            ..
        } = self;
        let leads = cluster
            .partitions
            .iter()
            .any(|&p| partitions.get(p).expect("partition entity").0.leader == Some(b));
        let controller = controllers.get(cluster.controller).expect("controller");
        // `BrokerHeartbeatManager.lowestActiveOffset`: active brokers are unfenced and not
        // shutting down.
        let lowest_active = brokers
            .iter()
            .filter(|o| !o.fenced && !o.in_controlled_shutdown)
            .map(|o| controller.reported_offset[o.id as usize])
            .min()
            .unwrap_or(u64::MAX);
        let caught_up = controller.controlled_shutdown_offset[b as usize]
            .is_some_and(|offset| offset <= lowest_active);
        if leads || !caught_up {
            return false;
        }
        self.change_fencing(true, b);
        true
    }

    /// Gives each partition whose first replica is in the ISR and not fenced, but not leading,
    /// back to it (`ReplicationControlManager.maybeBalancePartitionLeaders`).
    fn elect_preferred_leaders(&mut self) {
        let (mut ctx, partitions) = self.election("preferred leader");
        for &entity in &ctx.cluster.partitions {
            let (mut partition, mut followers) =
                partitions.get_mut(entity).expect("partition entity");
            let preferred = partition.assignment[0];
            if partition.leader != Some(preferred)
                && partition.in_isr(preferred)
                && ctx.brokers[preferred as usize].eligible
            {
                set_leader(
                    &mut partition,
                    &mut followers,
                    Some((preferred, false)),
                    &mut ctx,
                );
            }
        }
    }

    /// A broker that learns from the metadata log that it leads a partition stops fetching it, then
    /// starts its epoch at its log end offset (KIP-101): `ReplicaManager.applyLocalLeadersDelta`
    /// removes the partition's fetcher before `Partition.makeLeader` calls
    /// `maybeAssignEpochStartOffset`, so no record of the old leader can land after the epoch's
    /// start. Until the broker learns, it follows the leader it knows of.
    fn brokers_learn_leaderships(&mut self) {
        let Self {
            cluster,
            brokers,
            partitions,
            replicas,
            ..
        } = self;
        for &entity in &cluster.brokers {
            let mut broker = brokers.get_mut(entity).expect("broker entity");
            let (applied, seen) = (broker.leaderships_applied, broker.metadata_offset);
            if seen <= applied {
                continue;
            }
            broker.leaderships_applied = seen;
            for &p in &cluster.partitions {
                let (partition, _) = partitions.get(p).expect("partition entity");
                let changed = partition.history.last().is_some_and(|r| r.offset > applied);
                if !changed {
                    continue;
                }
                let Some(epoch) = partition.leads_as_seen(broker.id, seen) else {
                    continue;
                };
                let learnt = partition
                    .history
                    .iter()
                    .rev()
                    .take_while(|r| r.offset > applied)
                    .any(|r| r.offset <= seen && r.leader == Some(broker.id));
                if let Some(replica) = partition.replica_on(broker.id).filter(|_| learnt) {
                    let mut replica = replicas.get_mut(replica).expect("replica entity");
                    let leo = replica.log_end_offset();
                    replica.assign_epoch(epoch, leo);
                }
            }
        }
    }

    fn brokers_send_heartbeats(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        wake.clear(Standing::Controller);
        for &entity in &cluster.brokers {
            let mut broker = brokers.get_mut(entity).expect("broker entity");
            if !broker.alive && !broker.starting {
                continue;
            }
            if now >= broker.next_heartbeat_ms {
                let heartbeat = Heartbeat {
                    broker: broker.id,
                    incarnation: broker.incarnation,
                    registration: broker.starting,
                    want_shut_down: broker.pending_shutdown.is_some(),
                    metadata_offset: broker.metadata_offset,
                };
                let wire = network.send(now, Node::Broker(broker.id), Node::Controller, heartbeat);
                wake.standing_at(Standing::Controller, wire.arrive_ms);
                broker.next_heartbeat_ms = now + cluster.config.heartbeat_interval_ms;
            }
            wake.standing_at(Standing::Controller, broker.next_heartbeat_ms);
        }
    }

    /// Records of the metadata log reach the brokers the controller can reach, one network latency
    /// after they were written; a broker cut off or down misses them and catches up from a later
    /// heartbeat answer.
    fn controller_publishes_metadata(&mut self) {
        let Self {
            runtime,
            cluster,
            controllers,
            brokers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let mut controller = controllers.get_mut(cluster.controller).expect("controller");
        let metadata = &mut controller.metadata;
        let mut reached = None;
        while let Some(&(at, offset)) = metadata.deliveries.front() {
            if at > now {
                break;
            }
            metadata.deliveries.pop_front();
            reached = Some(offset);
        }
        let reach = |broker: &mut Broker, offset: u64| {
            if broker.alive && !network.is_cut(Node::Controller, Node::Broker(broker.id)) {
                broker.metadata_offset = broker.metadata_offset.max(offset);
            }
        };
        if let Some(offset) = reached {
            for &entity in &cluster.brokers {
                let mut broker = brokers.get_mut(entity).expect("broker entity");
                match network.extra_ms[broker.id as usize] {
                    0 => reach(&mut broker, offset),
                    extra => metadata
                        .slow_deliveries
                        .push((now + extra, broker.id, offset)),
                }
            }
        }
        metadata.slow_deliveries.sort_unstable();
        while let Some(&(at, b, offset)) = metadata.slow_deliveries.first() {
            if at > now {
                break;
            }
            metadata.slow_deliveries.remove(0);
            let mut broker = brokers
                .get_mut(cluster.brokers[b as usize - 1])
                .expect("broker entity");
            reach(&mut broker, offset);
        }
        if let Some(at) = metadata.next_delivery() {
            wake.standing_at(Standing::Controller, at);
        }
    }

    /// A registered broker starts serving (fenced until its next heartbeat, sent soon); a refused
    /// one tries again after a back-off. A broker in controlled shutdown stops when told it should,
    /// and otherwise asks again (`BrokerLifecycleManager`: 50 ms after the first answer, then at its
    /// usual interval).
    fn brokers_take_heartbeat_responses(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            rng,
            wake,
            events,
            wires,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        wake_at_arrivals::<HeartbeatResponse>(wires, wake);
        wires.arriving::<HeartbeatResponse>(due);
        for &id in due.iter() {
            wires.finish(id);
            let (_, response) = wires
                .get_of::<HeartbeatResponse>(id)
                .expect("a heartbeat response");
            let mut broker = brokers
                .get_mut(cluster.brokers[response.broker as usize - 1])
                .expect("broker entity");
            if response.incarnation != broker.incarnation {
                continue;
            }
            if !response.refused {
                broker.metadata_offset = broker.metadata_offset.max(response.metadata_offset);
            }
            if let Some(answered) = broker.pending_shutdown
                && broker.alive
            {
                if response.should_shut_down {
                    // A clean stop: its log is intact and flushed (KIP-966 counts it clean).
                    broker.alive = false;
                    broker.unclean_shutdown = false;
                    broker.pending_shutdown = None;
                    broker.fetchers.clear();
                    events.push(now, EventKind::BrokerShutDown { broker: broker.id });
                } else if !answered {
                    broker.pending_shutdown = Some(true);
                    broker.next_heartbeat_ms = now + FIRST_SHUTDOWN_RETRY_MS;
                    wake.standing_at(Standing::Controller, broker.next_heartbeat_ms);
                }
                continue;
            }
            if !broker.starting {
                continue;
            }
            if response.refused {
                let delay = registration_backoff(
                    broker.failed_registrations,
                    cluster.config.session_timeout_ms,
                    rng,
                );
                broker.failed_registrations += 1;
                broker.next_heartbeat_ms = now + delay;
            } else {
                broker.starting = false;
                broker.alive = true;
                broker.failed_registrations = 0;
                broker.next_heartbeat_ms = now + STARTUP_HEARTBEAT_MS;
            }
            wake.standing_at(Standing::Controller, broker.next_heartbeat_ms);
        }
    }

    fn controller_handles_heartbeats(&mut self) {
        let now = self.runtime.clock.now_ms;
        let runtime = &mut *self.runtime;
        wake_at_arrivals::<Heartbeat>(&runtime.wires, &mut runtime.wake);
        let mut due = std::mem::take(&mut *self.due);
        self.runtime.wires.arriving::<Heartbeat>(&mut due);
        for &id in &due {
            self.runtime.wires.finish(id);
            let (&wire, heartbeat) = self
                .runtime
                .wires
                .get_of::<Heartbeat>(id)
                .expect("a heartbeat");
            let heartbeat = heartbeat.clone();
            let b = heartbeat.broker;
            let broker_entity = self.cluster.brokers[b as usize - 1];
            let session_timeout_ms = self.cluster.config.session_timeout_ms;
            let fenced = self.brokers.get(broker_entity).expect("broker").fenced;
            let mut controller = self.controller();
            let current = heartbeat.incarnation == controller.registered[b as usize];
            if !heartbeat.registration && !current {
                // From an incarnation that is gone (sent before the broker crashed and came back):
                // STALE_BROKER_EPOCH. Nothing changes, and the process it came from is no more.
                continue;
            }
            let mut should_shut_down = false;
            let session_valid =
                !fenced && now <= controller.last_heartbeat_ms[b as usize] + session_timeout_ms;
            let refused = heartbeat.registration && !current && session_valid;
            if refused {
                // `ClusterControlManager.registerBroker`: DUPLICATE_BROKER_REGISTRATION while the
                // previous incarnation's session is valid; it resolves when that session expires.
                // The old incarnation's session runs on.
                if controller.refused[b as usize] != heartbeat.incarnation {
                    controller.refused[b as usize] = heartbeat.incarnation;
                    self.runtime
                        .events
                        .push(now, EventKind::RegistrationRefused { broker: b });
                }
            } else if heartbeat.registration && current {
                // The same incarnation again (its first answer slow or lost): it stays registered,
                // and fenced until a heartbeat of its own asks to be unfenced.
                controller.last_heartbeat_ms[b as usize] = now;
            } else if heartbeat.registration {
                // A new incarnation registers: the old one is gone, so it is fenced first.
                controller.last_heartbeat_ms[b as usize] = now;
                controller.registered[b as usize] = heartbeat.incarnation;
                controller.controlled_shutdown_offset[b as usize] = None;
                let mut broker = self.brokers.get_mut(broker_entity).expect("broker");
                broker.in_controlled_shutdown = false;
                let unclean_shutdown = std::mem::take(&mut broker.unclean_shutdown);
                self.runtime
                    .events
                    .push(now, EventKind::BrokerRegistered { broker: b });
                if !fenced {
                    self.change_fencing(true, b);
                }
                // KIP-966: after an unclean shutdown the broker may have lost data it had, so it is
                // no longer an eligible leader replica anywhere.
                if unclean_shutdown {
                    for &p in &self.cluster.partitions {
                        let (mut partition, _) =
                            self.partitions.get_mut(p).expect("partition entity");
                        if partition.elr.contains(&b) {
                            partition.elr.retain(|e| *e != b);
                        }
                    }
                }
            } else if heartbeat.want_shut_down {
                controller.last_heartbeat_ms[b as usize] = now;
                controller.reported_offset[b as usize] = heartbeat.metadata_offset;
                should_shut_down = self.controlled_shutdown(b, fenced);
            } else {
                controller.last_heartbeat_ms[b as usize] = now;
                controller.reported_offset[b as usize] = heartbeat.metadata_offset;
                if fenced {
                    self.change_fencing(false, b);
                }
            }
            let response = HeartbeatResponse {
                broker: b,
                incarnation: heartbeat.incarnation,
                fenced: self.brokers.get(broker_entity).expect("broker").fenced,
                refused,
                metadata_offset: self.controller().metadata.end,
                should_shut_down,
            };
            let response = self
                .runtime
                .network
                .send(now, Node::Controller, wire.from, response);
            self.runtime
                .wake
                .standing_at(Standing::Controller, response.arrive_ms);
        }
        *self.due = due;
    }

    /// `BrokerHeartbeatManager`: a broker whose last heartbeat is older than the session timeout is
    /// fenced.
    fn controller_checks_sessions(&mut self) {
        let now = self.runtime.clock.now_ms;
        let session = self.cluster.config.session_timeout_ms;
        for i in 0..self.cluster.brokers.len() {
            let broker = self.brokers.get(self.cluster.brokers[i]).expect("broker");
            if broker.fenced {
                continue;
            }
            let b = broker.id;
            let deadline = self.controller().last_heartbeat_ms[b as usize] + session;
            if now <= deadline {
                self.runtime
                    .wake
                    .standing_at(Standing::Controller, deadline + 1);
                continue;
            }
            self.change_fencing(true, b);
        }
    }

    /// Preferred leader election, and the periodic unclean election of leaderless partitions. Preferred:
    /// each partition whose first assigned replica is in the ISR and not fenced, but not leading,
    /// gets it back as leader. Runs on request, and with
    /// `auto.leader.rebalance.enable` `leader.imbalance.check.interval.seconds` after a change left
    /// some partition led by another broker, then again after each run while one still is
    /// (`QuorumController.maybeScheduleNextBalancePartitionLeaders`, which the controller calls after
    /// every change it writes).
    fn controller_balances_leaders(&mut self) {
        let now = self.runtime.clock.now_ms;
        let periodic = self.cluster.config.auto_leader_rebalance_enable;
        let mut controller = self.controller();
        let due_check = periodic && controller.next_balance_check_ms.is_some_and(|at| now >= at);
        if due_check {
            controller.next_balance_check_ms = None;
        }
        let requested = std::mem::take(&mut controller.preferred_election_requested);
        if due_check || requested {
            self.elect_preferred_leaders();
        }
        let Self {
            runtime,
            cluster,
            controllers,
            partitions,
            ..
        } = self;
        let Runtime { wake, .. } = &mut **runtime;
        let mut controller = controllers.get_mut(cluster.controller).expect("controller");
        let imbalanced = || {
            partitions
                .iter()
                .any(|(p, _)| p.leader != Some(p.assignment[0]))
        };
        if periodic && controller.next_balance_check_ms.is_none() && imbalanced() {
            controller.next_balance_check_ms =
                Some(now + cluster.config.leader_imbalance_check_interval_ms);
        }
        if let Some(at) = controller.next_balance_check_ms {
            wake.standing_at(Standing::Controller, at);
        }
        let unclean_check = controller.next_unclean_check_ms.is_some_and(|at| now >= at);
        if unclean_check {
            controller.next_unclean_check_ms = None;
        }
        if unclean_check {
            let (mut ctx, partitions) = self.election("unclean election check");
            for &entity in &ctx.cluster.partitions {
                let (mut partition, mut followers) =
                    partitions.get_mut(entity).expect("partition entity");
                if partition.leader.is_none()
                    && partition.unclean_leader_election
                    && let Some(next) = choose_leader(&partition, ctx.eligible(), false)
                {
                    set_leader(&mut partition, &mut followers, Some(next), &mut ctx);
                }
            }
        }
        let Self {
            runtime,
            cluster,
            controllers,
            partitions,
            ..
        } = self;
        let Runtime { wake, .. } = &mut **runtime;
        let mut controller = controllers.get_mut(cluster.controller).expect("controller");
        let leaderless = || partitions.iter().any(|(p, _)| p.leader.is_none());
        if controller.next_unclean_check_ms.is_none() && leaderless() {
            controller.next_unclean_check_ms = Some(now + UNCLEAN_CHECK_INTERVAL_MS);
        }
        if let Some(at) = controller.next_unclean_check_ms {
            wake.standing_at(Standing::Controller, at);
        }
    }

    /// Brokers an `AddBroker` started join the cluster once their entities exist: the controller
    /// and the network make room for them, and their registration heartbeats go out.
    fn controller_adds_brokers(&mut self) {
        let Self {
            runtime,
            cluster,
            controllers,
            brokers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            ..
        } = &mut **runtime;
        let mut controller = controllers.get_mut(cluster.controller).expect("controller");
        if controller.new_brokers.is_empty() {
            return;
        }
        if controller
            .new_brokers
            .iter()
            .any(|e| brokers.get(*e).is_err())
        {
            // Spawned this step: they exist from the next.
            wake.standing_at(Standing::Controller, clock.now_ms + 1);
            return;
        }
        for entity in std::mem::take(&mut controller.new_brokers) {
            cluster.brokers.push(entity);
            let n = cluster.brokers.len() + 1;
            controller.last_heartbeat_ms.resize(n, 0);
            controller.registered.resize(n, 0);
            controller.refused.resize(n, 0);
            controller.reported_offset.resize(n, 0);
            controller.controlled_shutdown_offset.resize(n, None);
            network.extra_ms.resize(n, 0);
        }
        wake.standing_at(Standing::Controller, clock.now_ms + 1);
    }

    /// Creates the partitions asked for once their entities exist: each gets the next ordinal and a
    /// record in the metadata log, from which brokers and clients learn of it. The group coordinators
    /// take them into their groups' subscriptions at once; a consumer-protocol group's epoch is
    /// bumped, so its next heartbeat computes an assignment with them
    /// (`GroupMetadataManager.onNewMetadataImage`, then `consumerGroupHeartbeat`).
    fn controller_creates_partitions(&mut self) {
        let Self {
            runtime,
            cluster,
            controllers,
            partitions,
            replicas,
            groups,
            ..
        } = self;
        let Runtime {
            clock,
            wake,
            events,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let mut controller = controllers.get_mut(cluster.controller).expect("controller");
        if controller.requested_partitions.is_empty() {
            return;
        }
        let requested = std::mem::take(&mut controller.requested_partitions);
        for (topic, created) in requested {
            let exists = created.iter().all(|e| {
                partitions
                    .get(*e)
                    .is_ok_and(|(p, _)| p.replicas.iter().all(|r| replicas.get(*r).is_ok()))
            });
            if !exists {
                // Spawned this step: they exist from the next.
                wake.standing_at(Standing::Controller, now + 1);
                controller.requested_partitions.push((topic, created));
                continue;
            }
            let mut ordinals = Vec::new();
            for &entity in &created {
                let ordinal = cluster.partitions.len() as u32;
                cluster.partitions.push(entity);
                cluster.topics[topic].partitions.push(entity);
                let offset = controller
                    .metadata
                    .append(now, cluster.config.network_latency_ms);
                let (mut partition, _) = partitions.get_mut(entity).expect("partition entity");
                partition.ordinal = ordinal;
                partition.history[0].offset = offset;
                ordinals.push(ordinal);
            }
            let name = cluster.topics[topic].name.clone();
            for mut group in groups.iter_mut() {
                if !group.config.topics.contains(&name) {
                    continue;
                }
                group.partitions.extend(&ordinals);
                if group.config.protocol == crate::scenario::GroupProtocol::Consumer {
                    super::consumer_protocol::bump_group_epoch(
                        &mut group,
                        now,
                        events,
                        format!(
                            "{name} has {} partitions",
                            cluster.topics[topic].partitions.len()
                        ),
                    );
                }
            }
            events.push(
                now,
                EventKind::PartitionsCreated {
                    topic: name,
                    partitions: cluster.topics[topic].partitions.len() as u32,
                },
            );
        }
        cluster.assignments_version += 1;
    }

    /// Starts each reassignment asked for whose new replicas exist
    /// (`ReplicationControlManager.changePartitionReassignment`): the replicas become the target
    /// followed by those it removes (`PartitionReassignmentReplicas`), and the added replicas start
    /// empty, out of the ISR, fetching from the leader. The controller completes it once every
    /// target replica is in the ISR (`controller_completes_reassignments`).
    fn controller_starts_reassignments(&mut self) {
        let Self {
            runtime,
            cluster,
            controllers,
            partitions,
            replicas,
            ..
        } = self;
        let Runtime {
            clock,
            wake,
            events,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let mut controller = controllers.get_mut(cluster.controller).expect("controller");
        if controller.requested.is_empty() {
            return;
        }
        let requested = std::mem::take(&mut controller.requested);
        for request in requested {
            if request.added.iter().any(|(_, e)| replicas.get(*e).is_err()) {
                // Spawned this step: they exist from the next.
                wake.standing_at(Standing::Controller, now + 1);
                controller.requested.push(request);
                continue;
            }
            let (mut partition, mut followers) = partitions
                .get_mut(request.partition)
                .expect("partition entity");
            let current = partition.assignment.clone();
            let target = request.target;
            let mut adding: Vec<BrokerId> = target
                .iter()
                .copied()
                .filter(|b| !current.contains(b))
                .collect();
            let mut removing: Vec<BrokerId> = current
                .iter()
                .copied()
                .filter(|b| !target.contains(b))
                .collect();
            adding.sort_unstable();
            removing.sort_unstable();
            let assignment: Vec<BrokerId> = target.iter().chain(&removing).copied().collect();
            partition.set_replicas(&mut followers, &assignment, &request.added, now);
            partition.reassignment = Some(Reassignment {
                target,
                adding: adding.clone(),
                removing: removing.clone(),
            });
            cluster.assignments_version += 1;
            controller.reassigning.push(request.partition);
            events.push(
                now,
                EventKind::ReassignmentStarted {
                    topic: cluster.topics[partition.topic].name.clone(),
                    partition: partition.index,
                    replicas: assignment,
                    adding,
                    removing,
                },
            );
        }
    }

    /// Completes each reassignment whose target replicas are all in the ISR
    /// (`PartitionChangeBuilder.maybeCompleteReassignment`, run as the controller takes the leader's
    /// AlterPartition): the replicas become the target, the removed ones leave the ISR and are
    /// deleted (a broker that no longer finds itself among the replicas deletes its log,
    /// `ReplicaManager.applyDelta`), and if the leader was removed, the first target replica in the
    /// ISR leads (or none: the partition goes offline).
    fn controller_completes_reassignments(&mut self) {
        let now = self.runtime.clock.now_ms;
        let pending = std::mem::take(&mut self.controller().reassigning);
        if pending.is_empty() {
            return;
        }
        let mut waiting = Vec::new();
        let mut despawned = Vec::new();
        let mut completed = 0;
        let (mut ctx, partitions) = self.election("reassignment");
        for entity in pending {
            let (mut partition, mut followers) =
                partitions.get_mut(entity).expect("partition entity");
            let Some(reassignment) = partition.reassignment.clone() else {
                continue;
            };
            if !reassignment.target.iter().all(|b| partition.in_isr(*b)) {
                waiting.push(entity);
                continue;
            }
            despawned.extend(
                reassignment
                    .removing
                    .iter()
                    .filter_map(|&b| partition.replica_on(b)),
            );
            partition.set_replicas(&mut followers, &reassignment.target, &[], now);
            partition.reassignment = None;
            completed += 1;
            if partition
                .leader
                .is_some_and(|l| !reassignment.target.contains(&l))
            {
                let next = choose_leader(&partition, ctx.eligible(), false)
                    .filter(|(_, unclean)| !unclean);
                set_leader(&mut partition, &mut followers, next, &mut ctx);
            } else if !reassignment.removing.is_empty() && partition.leader.is_some() {
                // Replicas left while the leader stays: its epoch is bumped all the same, so that
                // the removed ones are fenced from it
                // (`PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`).
                new_leader_epoch(&mut partition, &mut ctx);
            }
            ctx.events.push(
                now,
                EventKind::ReassignmentCompleted {
                    topic: ctx.cluster.topics[partition.topic].name.clone(),
                    partition: partition.index,
                    replicas: partition.assignment.clone(),
                    isr: partition.isr.clone(),
                },
            );
        }
        self.controller().reassigning = waiting;
        for replica in despawned {
            self.commands.entity(replica).despawn();
        }
        self.cluster.assignments_version += completed;
    }
}
