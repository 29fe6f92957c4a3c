//! The scenario's timeline: actions applied at their instant. The sandbox sends the same actions.

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::SimClock;
use super::cluster::{Broker, Cluster, FollowerStates, Partition, Replica, TopicSettings};
use super::consumer::Consumer;
use super::consumer_group::ConsumerGroup;
use super::events::{EventKind, EventLog};
use super::ledger::AckLedger;
use super::producer::Producer;
use super::quorum::{Controller, RequestedReassignment};
use crate::scenario::{Action, ConsumerGroupConfig, Scenario, Stop};

/// Actions still to come, in time order (stable for equal times: file order).
#[derive(Clone, Resource, Debug, Default)]
pub struct Timeline {
    /// Each with its instant, and whether it was given while running (`Sim::act`) rather than
    /// written in the scenario.
    pending: Vec<(u64, Action, bool)>,
    next: usize,
    /// The instant of the latest step that applied an action: the rules that run only when due
    /// also run then, since an action may change what is due.
    acted_ms: Option<u64>,
    /// A rolling restart under way.
    pub rolling: Option<RollingRestart>,
}

impl super::checkpoint::HeapBytes for Timeline {
    fn heap_bytes(&self) -> usize {
        super::checkpoint::vec_bytes(&self.pending)
    }
}

/// A rolling restart, as an operator's script runs one: stop a broker, start it, wait until it
/// is back in every ISR, then the next. It looks every [`ROLLING_CHECK_MS`].
#[derive(Clone, Debug)]
pub struct RollingRestart {
    pub stop: Stop,
    /// Brokers still to restart, in order.
    pub brokers: std::collections::VecDeque<u32>,
    /// The broker being restarted, and how far it is.
    pub current: Option<(u32, Stage)>,
    pub next_check_ms: u64,
}

/// Where a broker of a rolling restart is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Asked to stop; waiting for the process to be down.
    Stopping,
    /// Started again; waiting for the controller to unfence it.
    Starting,
    /// Serving; waiting until no partition is under-replicated.
    CatchingUp,
}

/// How often a rolling restart looks at the cluster (as a script polling
/// `kafka-topics --describe --under-replicated-partitions` would).
pub const ROLLING_CHECK_MS: u64 = 1_000;

impl Timeline {
    pub fn new(scenario: &Scenario) -> Self {
        let mut pending: Vec<(u64, Action, bool)> = scenario
            .timeline
            .iter()
            .map(|e| (e.at_ms, e.action.clone(), false))
            .collect();
        pending.sort_by_key(|(at, ..)| *at);
        Timeline {
            pending,
            next: 0,
            acted_ms: None,
            rolling: None,
        }
    }

    /// The instant of the next action to apply, or of a rolling restart's next look.
    pub fn next_at(&self) -> Option<u64> {
        let action = self.pending.get(self.next).map(|(at, ..)| *at);
        let rolling = self.rolling.as_ref().map(|r| r.next_check_ms);
        action.into_iter().chain(rolling).min()
    }

    /// Whether an action was applied at this instant.
    pub fn acted_at(&self, now_ms: u64) -> bool {
        self.acted_ms == Some(now_ms)
    }

    /// Adds an action given while running, to apply at `at_ms` (no earlier than the next step),
    /// after those due at the same instant.
    pub fn push(&mut self, at_ms: u64, action: Action) {
        let at = self.pending[self.next..]
            .iter()
            .position(|(t, ..)| *t > at_ms)
            .map_or(self.pending.len(), |i| self.next + i);
        self.pending.insert(at, (at_ms, action, true));
    }

    /// Puts `given` in place of the actions given while running that are still to come (a
    /// checkpoint's timeline may hold some of them, or none).
    pub fn replace_given<'a>(&mut self, given: impl IntoIterator<Item = &'a (u64, Action)>) {
        let next = self.next;
        let mut i = 0;
        self.pending.retain(|(.., from_run)| {
            i += 1;
            i <= next || !from_run
        });
        for (at, action) in given {
            self.push(*at, action.clone());
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Timeline>();
}

/// Most steps have no action to apply: they skip the phase, and the clock reads the next
/// action's instant from the timeline itself.
pub(super) fn actions_due(clock: &SimClock, timeline: &Timeline) -> bool {
    !clock.skip_idle_rules || timeline.next_at().is_some_and(|at| at <= clock.now_ms)
}

/// What the timeline's actions change, borrowed for one step.
#[derive(SystemParam)]
pub(super) struct Targets<'w, 's> {
    /// The event log, for events besides an action's own (the members a `SetGroupMembers`
    /// starts, say), and the wake-ups: a member started now acts from the next instant,
    /// whatever else is due then.
    runtime: ResMut<'w, Runtime>,
    cluster: ResMut<'w, Cluster>,
    ledger: ResMut<'w, AckLedger>,
    producers: Query<'w, 's, &'static mut Producer>,
    brokers: Query<'w, 's, &'static mut Broker>,
    replicas: Query<'w, 's, &'static mut Replica>,
    partitions: Query<'w, 's, &'static mut Partition>,
    controllers: Query<'w, 's, &'static mut Controller>,
    groups: Query<'w, 's, &'static ConsumerGroup>,
    consumers: Query<'w, 's, &'static mut Consumer>,
    commands: Commands<'w, 's>,
    /// Members started in this step (group, instance id): spawned, not yet in `consumers`.
    spawned: Local<'s, Vec<(u32, Option<String>)>>,
}

/// An action applied (what happened), or refused at its instant (why not).
type Outcome = Result<EventKind, String>;

/// The timeline's phase: every action due now, in order. An action that cannot apply now is
/// refused with the reason, in the event log; it never stops the run.
pub(super) fn apply_actions(mut timeline: ResMut<Timeline>, mut targets: Targets) {
    let now = targets.runtime.clock.now_ms;
    targets.spawned.clear();
    while let Some((at, action, _)) = timeline.pending.get(timeline.next).cloned() {
        if at > now {
            break;
        }
        timeline.next += 1;
        timeline.acted_ms = Some(now);
        let outcome = match action {
            Action::CutLink(..)
            | Action::HealLink(..)
            | Action::SlowBroker(..)
            | Action::IsolateBroker(_)
            | Action::HealBroker(_)
            | Action::CutControllerLink(_)
            | Action::HealControllerLink(_) => network_action(&mut targets, now, &action),
            Action::DropResponses(..) => drop_answers(&mut targets, &action),
            Action::CrashBroker(_)
            | Action::WipeBroker(_)
            | Action::RestartBroker(_)
            | Action::ControlledShutdown(_) => broker_action(&mut targets, now, &action),
            Action::Reassign(..) => reassign(&mut targets, &action),
            Action::AddPartitions(..) => add_partitions(&mut targets, now, &action),
            Action::AddBroker => add_broker(&mut targets, now),
            Action::PreferredElection
            | Action::SetMinIsr(..)
            | Action::SetUncleanElection(..)
            | Action::SetTopicConfig(..)
            | Action::SetEligibleLeaderReplicas(_) => controller_action(&mut targets, &action),
            Action::SetAcks(..)
            | Action::SetRate(..)
            | Action::Produce(..)
            | Action::Tombstone(..)
            | Action::SetProducer(..) => producer_action(&mut targets, now, &action),
            Action::AddConsumer(_)
            | Action::RemoveConsumer(_)
            | Action::CrashConsumer(_)
            | Action::SetConsumerRate(..)
            | Action::SetGroupMembers(..) => group_action(&mut targets, now, &action),
            Action::RollingRestart(stop) => start_rolling(&mut timeline, &targets, now, stop),
        };
        log(&mut targets.runtime.events, now, &action, outcome);
    }
    if timeline
        .rolling
        .as_ref()
        .is_some_and(|r| r.next_check_ms <= now)
    {
        timeline.acted_ms = Some(now);
        roll_on(&mut timeline, &mut targets, now);
    }
}

/// What an action did, or why it was refused, into the event log.
fn log(events: &mut EventLog, now: u64, action: &Action, outcome: Outcome) {
    let kind = outcome.unwrap_or_else(|why| EventKind::ActionRefused {
        action: action.to_string(),
        why,
    });
    events.push(now, kind);
}

/// Applies one action for a rolling restart, as the timeline would, and logs it.
fn apply_for_rolling(t: &mut Targets, now: u64, action: Action) {
    let outcome = match action {
        Action::PreferredElection => controller_action(t, &action),
        _ => broker_action(t, now, &action),
    };
    log(&mut t.runtime.events, now, &action, outcome);
}

/// A rolling restart's look at the cluster: the current broker moves on a stage when it can, and
/// the next starts once nothing is under-replicated.
fn roll_on(timeline: &mut Timeline, t: &mut Targets, now: u64) {
    let Some(rolling) = timeline.rolling.as_mut() else {
        return;
    };
    rolling.next_check_ms = now + ROLLING_CHECK_MS;
    let broker_state = |t: &Targets, b: u32| {
        let broker = t
            .brokers
            .get(t.cluster.brokers[b as usize - 1])
            .expect("broker entity");
        (broker.alive, broker.starting, broker.fenced)
    };
    match rolling.current {
        None => match rolling.brokers.pop_front() {
            Some(b) => {
                rolling.current = Some((b, Stage::Stopping));
                let stop = match rolling.stop {
                    Stop::Controlled => Action::ControlledShutdown(b),
                    Stop::Crash => Action::CrashBroker(b),
                };
                apply_for_rolling(t, now, stop);
            }
            None => {
                timeline.rolling = None;
                t.runtime.events.push(now, EventKind::RollingRestartDone);
                apply_for_rolling(t, now, Action::PreferredElection);
            }
        },
        Some((b, Stage::Stopping)) => {
            let (alive, starting, _) = broker_state(t, b);
            if !alive && !starting {
                rolling.current = Some((b, Stage::Starting));
                apply_for_rolling(t, now, Action::RestartBroker(b));
            }
        }
        Some((b, Stage::Starting)) => {
            let (alive, _, fenced) = broker_state(t, b);
            if alive && !fenced {
                rolling.current = Some((b, Stage::CatchingUp));
            }
        }
        Some((b, Stage::CatchingUp)) => {
            let under_replicated = t.cluster.partitions.iter().any(|&e| {
                let p = t.partitions.get(e).expect("partition entity");
                p.isr.len() < p.assignment.len()
            });
            if !under_replicated {
                rolling.current = None;
                t.runtime
                    .events
                    .push(now, EventKind::RollingRestartBrokerDone { broker: b });
            }
        }
    }
}

/// Starts a rolling restart of every broker, in id order, at once; refused while one is under way
/// or while some broker is not serving (a rolling restart starts from a healthy cluster).
fn start_rolling(timeline: &mut Timeline, t: &Targets, now: u64, stop: Stop) -> Outcome {
    if timeline.rolling.is_some() {
        return Err("a rolling restart is already under way".into());
    }
    for &entity in &t.cluster.brokers {
        let broker = t.brokers.get(entity).expect("broker entity");
        if !broker.alive || broker.fenced || broker.pending_shutdown.is_some() {
            return Err(format!(
                "broker {} is {}: a rolling restart starts with every broker online",
                broker.id,
                broker.state()
            ));
        }
    }
    let brokers: std::collections::VecDeque<u32> = (1..=t.cluster.brokers.len() as u32).collect();
    timeline.rolling = Some(RollingRestart {
        stop,
        brokers: brokers.clone(),
        current: None,
        next_check_ms: now,
    });
    Ok(EventKind::RollingRestartStarted {
        brokers: brokers.into(),
        controlled: stop == Stop::Controlled,
    })
}

/// An action of another family reached a family's function: a slip in `apply_actions`.
fn misrouted(action: &Action) -> String {
    format!("{action} was sent to the wrong family of actions")
}

/// Links and reachability: cuts, heals and delays.
fn network_action(t: &mut Targets, now: u64, action: &Action) -> Outcome {
    let network = &mut t.runtime.network;
    Ok(match *action {
        Action::CutLink(a, b) => {
            network.cut_link(a, b);
            EventKind::LinkCut { a, b }
        }
        Action::HealLink(a, b) => {
            network.heal_link(a, b);
            EventKind::LinkHealed { a, b }
        }
        Action::SlowBroker(broker, extra_ms) => {
            if let Some(slot) = network.extra_ms.get_mut(broker as usize) {
                *slot = extra_ms;
            }
            EventKind::BrokerSlowed { broker, extra_ms }
        }
        Action::IsolateBroker(b) => {
            network.isolated.insert(b);
            leader_gone(t, b, now);
            EventKind::BrokerIsolated { broker: b }
        }
        Action::HealBroker(b) => {
            network.isolated.remove(&b);
            let alive = t
                .cluster
                .brokers
                .get((b as usize).wrapping_sub(1))
                .is_some_and(|e| t.brokers.get(*e).is_ok_and(|broker| broker.alive));
            if alive {
                leader_back(t, b, now);
            }
            EventKind::BrokerHealed { broker: b }
        }
        Action::CutControllerLink(b) => {
            network.controller_cut.insert(b);
            EventKind::ControllerLinkCut { broker: b }
        }
        Action::HealControllerLink(b) => {
            network.controller_cut.remove(&b);
            EventKind::ControllerLinkHealed { broker: b }
        }
        _ => return Err(misrouted(action)),
    })
}

/// A producer's connection to a broker hangs: the broker's answers to it are lost.
fn drop_answers(t: &mut Targets, action: &Action) -> Outcome {
    let Action::DropResponses(name, broker, until_ms) = action else {
        return Err(misrouted(action));
    };
    if t.cluster
        .brokers
        .get((*broker as usize).wrapping_sub(1))
        .is_none()
    {
        return Err(format!("broker {broker} does not exist"));
    }
    let entity = producer_named(t, name)?;
    let index = t.producers.get(entity).expect("producer entity").index;
    t.runtime.network.drop_answers(index, *broker, *until_ms);
    Ok(EventKind::ProduceAnswersDropped {
        producer: name.clone(),
        broker: *broker,
        until_ms: *until_ms,
    })
}

/// Broker processes: crashes, lost disks and restarts.
fn broker_action(t: &mut Targets, now: u64, action: &Action) -> Outcome {
    let b = match *action {
        Action::CrashBroker(b)
        | Action::WipeBroker(b)
        | Action::RestartBroker(b)
        | Action::ControlledShutdown(b) => b,
        _ => return Err(misrouted(action)),
    };
    let Some(&entity) = t.cluster.brokers.get((b as usize).wrapping_sub(1)) else {
        return Err(format!("broker {b} does not exist"));
    };
    let mut broker = t.brokers.get_mut(entity).expect("broker entity");
    Ok(match *action {
        Action::RestartBroker(_) => {
            if broker.alive || broker.starting {
                return Err(format!("broker {b} is running"));
            }
            // It serves nothing until the controller registers it.
            broker.starting = true;
            broker.failed_registrations = 0;
            broker.incarnation += 1;
            broker.next_heartbeat_ms = now;
            // Its log manager starts with it (`LogManager.startup`).
            broker.next_retention_check_ms = now + super::retention::INITIAL_TASK_DELAY_MS;
            // So does its log cleaner (`LogCleaner.startup`), which looks at once.
            broker.next_cleaner_check_ms = now;
            EventKind::BrokerRestarted { broker: b }
        }
        Action::ControlledShutdown(_) => {
            if !broker.alive {
                return Err(format!("broker {b} is not running ({})", broker.state()));
            }
            if broker.pending_shutdown.is_some() {
                return Err(format!("broker {b} is already shutting down"));
            }
            // `BrokerLifecycleManager.beginControlledShutdown`: the next heartbeat goes at once.
            broker.pending_shutdown = Some(false);
            broker.next_heartbeat_ms = now;
            EventKind::ControlledShutdownRequested { broker: b }
        }
        _ => {
            let wipe = matches!(action, Action::WipeBroker(_));
            broker.alive = false;
            broker.starting = false;
            broker.unclean_shutdown = true;
            broker.pending_shutdown = None;
            broker.fetchers.clear();
            leader_gone(t, b, now);
            if !wipe {
                return Ok(EventKind::BrokerCrashed { broker: b });
            }
            for mut replica in &mut t.replicas {
                if replica.broker == b {
                    replica.wipe();
                }
            }
            t.ledger.disk_lost = true;
            EventKind::BrokerWiped { broker: b }
        }
    })
}

/// Broker `b` went down or was cut off: the partitions it leads, as the controller sees them,
/// stall until the controller fences it (`dead_leader_ms`).
fn leader_gone(t: &mut Targets, b: u32, now: u64) {
    for &entity in &t.cluster.partitions {
        let mut partition = t.partitions.get_mut(entity).expect("partition entity");
        if partition.leader == Some(b) {
            partition.dead_leader_since_ms.get_or_insert(now);
        }
    }
}

/// Broker `b` can be reached again while still leading: its partitions no longer stall.
fn leader_back(t: &mut Targets, b: u32, now: u64) {
    for &entity in &t.cluster.partitions {
        let mut partition = t.partitions.get_mut(entity).expect("partition entity");
        if partition.leader == Some(b)
            && let Some(since) = partition.dead_leader_since_ms.take()
        {
            t.runtime.metrics.dead_leader_ms += now - since;
        }
    }
}

/// Requests to the controller, and configuration it applies (`kafka-configs --alter` is an
/// IncrementalAlterConfigs the controller writes to the metadata log).
fn controller_action(t: &mut Targets, action: &Action) -> Outcome {
    Ok(match action {
        Action::PreferredElection => {
            t.controllers
                .get_mut(t.cluster.controller)
                .expect("controller")
                .preferred_election_requested = true;
            EventKind::PreferredElectionRequested
        }
        Action::SetMinIsr(topic, _)
        | Action::SetUncleanElection(topic, _)
        | Action::SetTopicConfig(topic, _)
            if t.cluster.topics.iter().all(|tp| tp.name != *topic) =>
        {
            return Err(format!("no topic named {topic:?}"));
        }
        Action::SetMinIsr(_, 0) => return Err("0: Kafka's minimum is 1".into()),
        Action::SetMinIsr(topic, n) => {
            // No upper bound: above the replica count, brokers require every replica
            // (`Partition.effectiveMinIsr`, Kafka 3.7+).
            if let Some(tp) = t.cluster.topics.iter_mut().find(|tp| tp.name == *topic) {
                tp.min_insync_replicas = *n;
            }
            for_each_partition(t, topic, |p| p.min_insync_replicas = *n);
            EventKind::MinIsrChanged {
                topic: topic.clone(),
                min_insync_replicas: *n,
            }
        }
        Action::SetUncleanElection(topic, enabled) => {
            // Takes effect at the next election; the controller's periodic check elects leaders
            // for partitions left offline (`controller_balances_leaders`).
            for_each_partition(t, topic, |p| p.unclean_leader_election = *enabled);
            EventKind::UncleanElectionChanged {
                topic: topic.clone(),
                enabled: *enabled,
            }
        }
        Action::SetTopicConfig(topic, setting) => {
            setting.check()?;
            // Each broker reads it at its next append (a roll) or retention check.
            for_each_partition(t, topic, |p| p.log = p.log.with(*setting));
            EventKind::TopicConfigChanged {
                topic: topic.clone(),
                config: setting.to_string(),
            }
        }
        Action::SetEligibleLeaderReplicas(enabled) => {
            t.cluster.config.eligible_leader_replicas = *enabled;
            // Off, no ELR is kept: elections no longer read it (the model's rule, docs/model.md).
            if !*enabled {
                for &entity in &t.cluster.partitions {
                    t.partitions
                        .get_mut(entity)
                        .expect("partition entity")
                        .elr
                        .clear();
                }
            }
            EventKind::EligibleLeaderReplicasChanged { enabled: *enabled }
        }
        _ => return Err(misrouted(action)),
    })
}

/// Asks the controller to reassign a partition (`AlterPartitionReassignments`), refused as Kafka
/// refuses a replica list; the controller starts it (`controller_starts_reassignments`).
fn reassign(t: &mut Targets, action: &Action) -> Outcome {
    let Action::Reassign(topic, index, target) = action else {
        return Err(misrouted(action));
    };
    let entity = t
        .cluster
        .topics
        .iter()
        .find(|tp| tp.name == *topic)
        .and_then(|tp| tp.partitions.get(*index as usize).copied())
        .ok_or_else(|| format!("no partition {topic}-{index}"))?;
    let brokers = t.cluster.brokers.len() as u32;
    if let Some(why) = crate::scenario::reassignment_refusal(topic, *index, target, brokers) {
        return Err(why);
    }
    let partition = t.partitions.get(entity).expect("partition entity");
    let mut controller = t
        .controllers
        .get_mut(t.cluster.controller)
        .expect("controller");
    if partition.reassignment.is_some()
        || controller.requested.iter().any(|r| r.partition == entity)
    {
        return Err(format!(
            "a reassignment of {topic}-{index} is under way (Kafka would replace it; the model \
             runs one at a time)"
        ));
    }
    // The new replicas' entities exist from the next step on, when the controller starts it.
    let added = target
        .iter()
        .filter(|b| partition.position(**b).is_none())
        .map(|&b| {
            let name = format!("{topic}-{index} on broker {b}");
            let replica = t.commands.spawn((Name::new(name), Replica::new(entity, b)));
            (b, replica.id())
        })
        .collect();
    controller.requested.push(RequestedReassignment {
        partition: entity,
        target: target.clone(),
        added,
    });
    Ok(EventKind::ReassignmentRequested {
        topic: topic.clone(),
        partition: *index,
        target: target.clone(),
    })
}

/// Changes every partition of a topic (a topic configuration every broker applies).
fn for_each_partition(t: &mut Targets, topic: &str, mut change: impl FnMut(&mut Partition)) {
    let Some(tp) = t.cluster.topics.iter().find(|tp| tp.name == topic) else {
        return;
    };
    for &entity in &tp.partitions {
        change(&mut t.partitions.get_mut(entity).expect("partition entity"));
    }
}

/// Starts a new broker with the next id: it registers with the controller (it has never been
/// unfenced) and joins the cluster once its entity exists (`controller_adds_brokers`).
fn add_broker(t: &mut Targets, now: u64) -> Outcome {
    let mut controller = t
        .controllers
        .get_mut(t.cluster.controller)
        .expect("controller");
    let id = (t.cluster.brokers.len() + controller.new_brokers.len() + 1) as u32;
    if id > crate::scenario::limits::BROKERS {
        return Err(format!(
            "a cluster has at most {} brokers",
            crate::scenario::limits::BROKERS
        ));
    }
    let mut broker = Broker::new(id);
    broker.alive = false;
    broker.starting = true;
    broker.fenced = true;
    broker.incarnation = 1;
    broker.next_heartbeat_ms = now;
    broker.next_retention_check_ms = now + super::retention::INITIAL_TASK_DELAY_MS;
    broker.next_cleaner_check_ms = now;
    let entity = t
        .commands
        .spawn((Name::new(format!("broker {id}")), broker))
        .id();
    controller.new_brokers.push(entity);
    Ok(EventKind::BrokerAdded { broker: id })
}

/// Asks the controller for more partitions (CreatePartitions), refused as
/// `ReplicationControlManager.createPartitions` refuses it. The new partitions are placed as a
/// topic of the new count would be (the model's placement, `rack_unaware_assignment`, where Kafka
/// stripes them from a random start), led by their first replica; the controller creates them
/// once their entities exist (`controller_creates_partitions`).
fn add_partitions(t: &mut Targets, now: u64, action: &Action) -> Outcome {
    let Action::AddPartitions(name, total) = action else {
        return Err(misrouted(action));
    };
    let Some(topic) = t
        .cluster
        .topics
        .iter()
        .position(|tp| tp.name == *name && tp.name != super::cluster::OFFSETS_TOPIC)
    else {
        return Err(format!("no topic named {name:?}"));
    };
    let mut controller = t
        .controllers
        .get_mut(t.cluster.controller)
        .expect("controller");
    let asked: usize = controller
        .requested_partitions
        .iter()
        .filter(|(tp, _)| *tp == topic)
        .map(|(_, new)| new.len())
        .sum();
    let current = (t.cluster.topics[topic].partitions.len() + asked) as u32;
    // `ReplicationControlManager.createPartitions`: InvalidPartitionsException.
    if *total == current {
        return Err(format!("Topic already has {current} partition(s)."));
    }
    if *total < current {
        return Err(format!(
            "The topic {name} currently has {current} partition(s); {total} would not be an increase."
        ));
    }
    let brokers = t.cluster.brokers.len() as u32;
    let first = t.cluster.topics[topic].partitions[0];
    let (rf, min_isr, unclean, log) = {
        let p = t.partitions.get(first).expect("partition entity");
        (
            t.cluster.topics[topic].replication_factor,
            p.min_insync_replicas,
            p.unclean_leader_election,
            p.log,
        )
    };
    let placement = crate::scenario::rack_unaware_assignment(brokers, *total, rf);
    let mut created = Vec::new();
    for index in current..*total {
        let assignment = placement[index as usize].clone();
        let entity = t.commands.spawn_empty().id();
        let replicas = assignment
            .iter()
            .map(|b| {
                let replica_name = format!("{name}-{index} on broker {b}");
                t.commands
                    .spawn((Name::new(replica_name), Replica::new(entity, *b)))
                    .id()
            })
            .collect();
        // Its ordinal and creating record are set when the controller creates it.
        let partition = Partition::new(
            topic,
            index,
            u32::MAX,
            assignment,
            replicas,
            TopicSettings {
                min_insync_replicas: min_isr,
                unclean_leader_election: unclean,
                log,
            },
            u64::MAX,
        );
        let followers = FollowerStates::new(partition.assignment.len(), now);
        t.commands.entity(entity).insert((
            Name::new(format!("{name}-{index}")),
            partition,
            followers,
        ));
        created.push(entity);
    }
    controller.requested_partitions.push((topic, created));
    Ok(EventKind::PartitionsRequested {
        topic: name.clone(),
        partitions: *total,
    })
}

/// The producer of that name, or why there is none.
fn producer_named(t: &Targets, name: &str) -> Result<Entity, String> {
    t.cluster
        .producers
        .iter()
        .copied()
        .find(|e| t.producers.get(*e).is_ok_and(|p| p.name == name))
        .ok_or_else(|| format!("no producer named {name:?}"))
}

/// Producers: their settings, and records sent on request.
fn producer_action(t: &mut Targets, now: u64, action: &Action) -> Outcome {
    let (Action::SetAcks(name, _)
    | Action::SetRate(name, _)
    | Action::Produce(name, ..)
    | Action::Tombstone(name, _)
    | Action::SetProducer(name, _)) = action
    else {
        return Err(misrouted(action));
    };
    let entity = producer_named(t, name)?;
    let mut p = t.producers.get_mut(entity).expect("producer entity");
    let producer = name.clone();
    // `LogValidator.validateKey`: a compacted topic refuses records without a key.
    let compacted = t.cluster.topics[p.topic]
        .partitions
        .first()
        .and_then(|e| t.partitions.get(*e).ok())
        .is_some_and(|partition| partition.log.cleanup_policy.compacts());
    let keyless = match action {
        Action::Produce(_, key, _) => key.is_none(),
        Action::SetProducer(_, settings) => {
            matches!(settings.keys, Some(crate::scenario::Keys::None))
        }
        _ => false,
    };
    if compacted && keyless {
        return Err(format!(
            "topic {:?} is compacted: Kafka refuses records without a key there (INVALID_RECORD)",
            t.cluster.topics[p.topic].name
        ));
    }
    Ok(match action {
        Action::SetAcks(_, acks) => {
            p.set_acks(*acks);
            EventKind::AcksChanged {
                producer,
                acks: acks.as_config().to_string(),
                idempotent: p.idempotent,
            }
        }
        Action::SetRate(_, records_per_sec) => {
            p.set_rate(now, *records_per_sec);
            EventKind::RateChanged {
                producer,
                records_per_sec: *records_per_sec,
            }
        }
        Action::SetProducer(_, settings) => {
            let config = settings.applied_to(&p.config)?;
            p.reconfigure(config)?;
            if let Some(rate) = settings.records_per_sec {
                p.set_rate(now, rate);
            }
            EventKind::ProducerReconfigured {
                producer,
                settings: ron::to_string(settings).unwrap_or_default(),
                idempotent: p.idempotent,
            }
        }
        Action::Tombstone(_, key) => {
            p.requested.push_back((Some(key.clone()), 1, true));
            EventKind::TombstoneProduced {
                producer,
                key: key.clone(),
            }
        }
        Action::Produce(_, key, count) => {
            p.requested.push_back((key.clone(), *count, false));
            EventKind::RecordsProduced {
                producer,
                key: key.clone(),
                count: *count,
            }
        }
        _ => return Err(misrouted(action)),
    })
}

/// Consumer groups: members joining, leaving and dying, and their pace.
fn group_action(t: &mut Targets, now: u64, action: &Action) -> Outcome {
    let (Action::AddConsumer(name)
    | Action::RemoveConsumer(name)
    | Action::CrashConsumer(name)
    | Action::SetConsumerRate(name, _)
    | Action::SetGroupMembers(name, _)) = action
    else {
        return Err(misrouted(action));
    };
    let (index, config) = t
        .groups
        .iter()
        .find(|g| g.name == *name)
        .map(|g| (g.index, g.config.clone()))
        .ok_or_else(|| format!("no consumer group named {name:?}"))?;
    let group = name.clone();
    Ok(match action {
        Action::AddConsumer(_) => {
            let member = add_member(t, index, &config, now);
            EventKind::ConsumerAdded { group, member }
        }
        Action::RemoveConsumer(_) | Action::CrashConsumer(_) => {
            let Some(entity) = newest_member(t, index) else {
                return Err(format!("group {name:?} has no live member"));
            };
            let mut c = t.consumers.get_mut(entity).expect("consumer entity");
            let member = c.member_id.clone();
            if matches!(action, Action::CrashConsumer(_)) {
                c.alive = false;
                EventKind::ConsumerCrashed { group, member }
            } else {
                c.leaving = true;
                EventKind::ConsumerRemoved { group, member }
            }
        }
        Action::SetGroupMembers(_, members) => {
            let live = t
                .consumers
                .iter()
                .filter(|c| c.group == index && c.alive && !c.leaving)
                .count() as u32;
            for _ in live..*members {
                let member = add_member(t, index, &config, now);
                let group = group.clone();
                t.runtime
                    .events
                    .push(now, EventKind::ConsumerAdded { group, member });
            }
            for _ in *members..live {
                let entity = newest_member(t, index).expect("a live member to close");
                let mut c = t.consumers.get_mut(entity).expect("consumer entity");
                c.leaving = true;
                let (group, member) = (group.clone(), c.member_id.clone());
                t.runtime
                    .events
                    .push(now, EventKind::ConsumerRemoved { group, member });
            }
            EventKind::GroupMembersSet {
                group,
                members: *members,
            }
        }
        Action::SetConsumerRate(_, records_per_sec) => {
            for mut c in &mut t.consumers {
                if c.group == index {
                    c.records_per_sec = *records_per_sec;
                }
            }
            EventKind::ConsumerRateChanged {
                group,
                records_per_sec: *records_per_sec,
            }
        }
        _ => return Err(misrouted(action)),
    })
}

/// The newest member of the group at `group` that is alive and not leaving.
fn newest_member(t: &Targets, group: u32) -> Option<Entity> {
    t.cluster.consumers.iter().rev().copied().find(|e| {
        t.consumers
            .get(*e)
            .is_ok_and(|c| c.group == group && c.alive && !c.leaving)
    })
}

/// A new member of the group at `group` starts; returns its member id. A static member comes back
/// under the instance id of one that is gone.
fn add_member(t: &mut Targets, group: u32, config: &ConsumerGroupConfig, now: u64) -> String {
    // Members started earlier in this step are not in the query yet.
    let spawned = t.spawned.iter().filter(|(g, _)| *g == group);
    let number =
        (t.consumers.iter().filter(|c| c.group == group).count() + spawned.count()) as u32 + 1;
    let index = t.cluster.consumers.len() as u32;
    let mut consumer = Consumer::new(index, group, number, config, now);
    if config.static_members {
        let live: Vec<String> = t
            .consumers
            .iter()
            .filter(|c| c.group == group && c.alive)
            .filter_map(|c| c.instance_id.clone())
            .chain(
                t.spawned
                    .iter()
                    .filter(|(g, _)| *g == group)
                    .filter_map(|(_, id)| id.clone()),
            )
            .collect();
        let free = (1..=number)
            .map(|k| format!("{}-instance-{k}", config.name))
            .find(|id| !live.contains(id));
        consumer.instance_id = free;
    }
    let member = consumer.member_id.clone();
    t.spawned.push((group, consumer.instance_id.clone()));
    t.runtime.wake.at(now + 1);
    let entity = t
        .commands
        .spawn((Name::new(format!("consumer {member}")), consumer))
        .id();
    t.cluster.consumers.push(entity);
    member
}
