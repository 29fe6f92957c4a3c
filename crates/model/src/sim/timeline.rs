//! The scenario's timeline: actions applied at their instant. The sandbox sends the same actions.

use bevy_app::App;
use bevy_ecs::prelude::*;

use super::SimClock;
use super::cluster::{Broker, Cluster, Replica};
use super::consumer::Consumer;
use super::controller::Controller;
use super::events::{EventKind, EventLog};
use super::group_coordinator::ConsumerGroup;
use super::ledger::AckLedger;
use super::network::Network;
use super::producer::Producer;
use crate::scenario::{Action, Scenario};

/// Actions still to come, in time order (stable for equal times: file order).
#[derive(Clone, Resource, Debug, Default)]
pub struct Timeline {
    pending: Vec<(u64, Action)>,
    next: usize,
    /// The instant of the latest step that applied an action: the rules that run only when due
    /// also run then, since an action may change what is due.
    acted_ms: Option<u64>,
}

impl Timeline {
    pub fn new(scenario: &Scenario) -> Self {
        let mut pending: Vec<(u64, Action)> = scenario
            .timeline
            .iter()
            .map(|e| (e.at_ms, e.action.clone()))
            .collect();
        pending.sort_by_key(|(at, _)| *at);
        Timeline {
            pending,
            next: 0,
            acted_ms: None,
        }
    }

    /// The instant of the next action to apply.
    pub fn next_at(&self) -> Option<u64> {
        self.pending.get(self.next).map(|(at, _)| *at)
    }

    /// Whether an action was applied at this instant.
    pub fn acted_at(&self, now_ms: u64) -> bool {
        self.acted_ms == Some(now_ms)
    }

    /// Adds an action to apply at `at_ms` (no earlier than the next step).
    pub fn push(&mut self, at_ms: u64, action: Action) {
        let at = self.pending[self.next..]
            .iter()
            .position(|(t, _)| *t > at_ms)
            .map_or(self.pending.len(), |i| self.next + i);
        self.pending.insert(at, (at_ms, action));
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

/// The timeline's phase: every action due now, in order.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_actions(
    clock: Res<SimClock>,
    mut cluster: ResMut<Cluster>,
    mut timeline: ResMut<Timeline>,
    mut network: ResMut<Network>,
    mut events: ResMut<EventLog>,
    mut ledger: ResMut<AckLedger>,
    mut producers: Query<&mut Producer>,
    mut brokers: Query<&mut Broker>,
    mut replicas: Query<&mut Replica>,
    mut controllers: Query<&mut Controller>,
    groups: Query<&ConsumerGroup>,
    mut consumers: Query<&mut Consumer>,
    mut commands: Commands,
) {
    let now = clock.now_ms;
    while let Some((at, action)) = timeline.pending.get(timeline.next).cloned() {
        if at > now {
            break;
        }
        timeline.next += 1;
        timeline.acted_ms = Some(now);
        let producer = |name: &str| {
            cluster
                .producers
                .iter()
                .copied()
                .find(|e| producers.get(*e).is_ok_and(|p| p.name == name))
        };
        let kind = match action {
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
            Action::SetAcks(name, acks) => {
                let Some(entity) = producer(&name) else {
                    continue;
                };
                let mut p = producers.get_mut(entity).unwrap();
                p.set_acks(acks);
                EventKind::AcksChanged {
                    producer: name,
                    acks: acks.as_config().to_string(),
                    idempotent: p.idempotent,
                }
            }
            Action::SetRate(name, records_per_sec) => {
                let Some(entity) = producer(&name) else {
                    continue;
                };
                producers
                    .get_mut(entity)
                    .unwrap()
                    .set_rate(now, records_per_sec);
                EventKind::RateChanged {
                    producer: name,
                    records_per_sec,
                }
            }
            Action::CrashBroker(b) | Action::WipeBroker(b) => {
                let wipe = matches!(action, Action::WipeBroker(_));
                let mut broker = brokers.get_mut(cluster.brokers[b as usize - 1]).unwrap();
                broker.alive = false;
                broker.starting = false;
                broker.unclean_shutdown = true;
                broker.fetchers.clear();
                if wipe {
                    for mut replica in &mut replicas {
                        if replica.broker == b {
                            replica.wipe();
                        }
                    }
                }
                if wipe {
                    ledger.disk_lost = true;
                    EventKind::BrokerWiped { broker: b }
                } else {
                    EventKind::BrokerCrashed { broker: b }
                }
            }
            Action::RestartBroker(b) => {
                let mut broker = brokers.get_mut(cluster.brokers[b as usize - 1]).unwrap();
                if broker.alive || broker.starting {
                    continue; // Already running.
                }
                // It serves nothing until the controller registers it.
                broker.starting = true;
                broker.failed_registrations = 0;
                broker.incarnation += 1;
                broker.next_heartbeat_ms = now;
                EventKind::BrokerRestarted { broker: b }
            }
            Action::IsolateBroker(b) => {
                network.isolated.insert(b);
                EventKind::BrokerIsolated { broker: b }
            }
            Action::HealBroker(b) => {
                network.isolated.remove(&b);
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
            Action::PreferredElection => {
                controllers
                    .get_mut(cluster.controller)
                    .unwrap()
                    .preferred_election_requested = true;
                EventKind::PreferredElectionRequested
            }
            Action::AddConsumer(name) => {
                let Some(g) = groups.iter().find(|g| g.name == name) else {
                    continue;
                };
                let number = consumers.iter().filter(|c| c.group == g.index).count() as u32 + 1;
                // A static member comes back under the instance id of one that is gone.
                let index = cluster.consumers.len() as u32;
                let mut consumer = Consumer::new(index, g.index, number, &g.config, now);
                if g.config.static_members {
                    let live: Vec<String> = consumers
                        .iter()
                        .filter(|c| c.group == g.index && c.alive)
                        .filter_map(|c| c.instance_id.clone())
                        .collect();
                    let free = (1..=number)
                        .map(|k| format!("{}-instance-{k}", g.name))
                        .find(|id| !live.contains(id));
                    consumer.instance_id = free;
                }
                let member = consumer.member_id.clone();
                let entity = commands
                    .spawn((Name::new(format!("consumer {member}")), consumer))
                    .id();
                cluster.consumers.push(entity);
                EventKind::ConsumerAdded {
                    group: name,
                    member,
                }
            }
            Action::RemoveConsumer(ref name) | Action::CrashConsumer(ref name) => {
                let crash = matches!(action, Action::CrashConsumer(_));
                let name = name.clone();
                let Some(g) = groups.iter().find(|g| g.name == name) else {
                    continue;
                };
                let newest = cluster.consumers.iter().rev().copied().find(|e| {
                    consumers
                        .get(*e)
                        .is_ok_and(|c| c.group == g.index && c.alive && !c.leaving)
                });
                let Some(entity) = newest else { continue };
                let mut c = consumers.get_mut(entity).unwrap();
                let member = c.member_id.clone();
                if crash {
                    c.alive = false;
                    EventKind::ConsumerCrashed {
                        group: name,
                        member,
                    }
                } else {
                    c.leaving = true;
                    EventKind::ConsumerRemoved {
                        group: name,
                        member,
                    }
                }
            }
            Action::SetConsumerRate(name, records_per_sec) => {
                let Some(g) = groups.iter().find(|g| g.name == name) else {
                    continue;
                };
                for mut c in &mut consumers {
                    if c.group == g.index {
                        c.records_per_sec = records_per_sec;
                    }
                }
                EventKind::ConsumerRateChanged {
                    group: name,
                    records_per_sec,
                }
            }
            Action::Produce(name, key, count) => {
                let Some(entity) = producer(&name) else {
                    continue;
                };
                producers
                    .get_mut(entity)
                    .unwrap()
                    .requested
                    .push_back((key.clone(), count));
                EventKind::RecordsProduced {
                    producer: name,
                    key,
                    count,
                }
            }
        };
        events.push(now, kind);
    }
}
