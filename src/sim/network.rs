//! The wire: every request and response is an entity with the instant it was sent and the instant
//! it arrives, so the view can draw exactly where it is at any sim time.

use std::collections::BTreeSet;

use bevy::prelude::*;
use serde::Serialize;

use super::clock::SimRng;
use super::cluster::{Broker, BrokerId, Cluster, broker_views};
use super::consumer::Consumer;
use super::events::Metrics;
use super::ledger::AckLedger;
use super::producer::Producer;
use super::protocol::{ConsumerFetch, FetchRequest, GroupRequest, KafkaError, ProduceRequest};
use super::{SimClock, SimSet, SimStep, Wake};
use crate::scenario::ClusterConfig;

/// An end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Node {
    Broker(BrokerId),
    /// A producer, by its index in the scenario.
    Producer(u32),
    /// The active KRaft controller.
    Controller,
    /// A consumer, by its index in `Cluster::consumers`.
    Consumer(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireState {
    /// On its way; handled by its receiver at `arrive_ms`.
    InFlight,
    /// Dropped on a cut link at this instant; removed at `arrive_ms`.
    Lost { at_ms: u64 },
    /// Arrived and parked at the receiver until it can be answered, at the latest `until_ms`
    /// (a produce waiting for acks=all, a fetch waiting for data).
    Held { until_ms: u64 },
}

/// The envelope of every message. The payload is a second component (`ProduceRequest`, ...).
#[derive(Component, Debug, Clone)]
pub struct Wire {
    /// Unique and increasing in send order: the order receivers handle simultaneous arrivals in.
    pub id: u64,
    pub from: Node,
    pub to: Node,
    pub sent_ms: u64,
    pub arrive_ms: u64,
    pub state: WireState,
}

impl Wire {
    pub fn arrives_now(&self, now: u64) -> bool {
        self.state == WireState::InFlight && self.arrive_ms == now
    }

    pub fn held(&self) -> bool {
        matches!(self.state, WireState::Held { .. })
    }
}

/// Link latency, cut links and slow brokers.
#[derive(Resource, Debug, Clone)]
pub struct Network {
    pub latency_ms: u64,
    /// Cut broker-to-broker links, smaller id first.
    pub cut: BTreeSet<(BrokerId, BrokerId)>,
    /// Brokers cut off from every other node.
    pub isolated: BTreeSet<BrokerId>,
    /// Brokers whose link to the controller is cut.
    pub controller_cut: BTreeSet<BrokerId>,
    /// Extra delay of every message to or from a broker, indexed by broker id.
    pub extra_ms: Vec<u64>,
    next_id: u64,
    /// The earliest arrival among messages sent this step (not yet spawned, so not yet seen).
    first_arrival_ms: u64,
}

impl Network {
    pub fn new(config: &ClusterConfig) -> Self {
        Network {
            latency_ms: config.network_latency_ms,
            cut: BTreeSet::new(),
            isolated: BTreeSet::new(),
            controller_cut: BTreeSet::new(),
            extra_ms: vec![0; config.brokers as usize + 1],
            next_id: 0,
            first_arrival_ms: u64::MAX,
        }
    }

    fn link(a: BrokerId, b: BrokerId) -> (BrokerId, BrokerId) {
        (a.min(b), a.max(b))
    }

    pub fn cut_link(&mut self, a: BrokerId, b: BrokerId) {
        self.cut.insert(Self::link(a, b));
    }

    pub fn heal_link(&mut self, a: BrokerId, b: BrokerId) {
        self.cut.remove(&Self::link(a, b));
    }

    /// Whether messages between two nodes are dropped: a cut broker link, a cut controller link,
    /// or an isolated broker at either end.
    pub fn is_cut(&self, from: Node, to: Node) -> bool {
        let isolated = |n: Node| matches!(n, Node::Broker(b) if self.isolated.contains(&b));
        if isolated(from) || isolated(to) {
            return true;
        }
        match (from, to) {
            (Node::Broker(a), Node::Broker(b)) => self.cut.contains(&Self::link(a, b)),
            (Node::Broker(b), Node::Controller) | (Node::Controller, Node::Broker(b)) => {
                self.controller_cut.contains(&b)
            }
            _ => false,
        }
    }

    /// Whether anything is cut at all (most of the time nothing is).
    pub fn any_cut(&self) -> bool {
        !(self.cut.is_empty() && self.isolated.is_empty() && self.controller_cut.is_empty())
    }

    /// How many messages have been sent since the run began.
    pub fn messages_sent(&self) -> u64 {
        self.next_id
    }

    fn extra(&self, node: Node) -> u64 {
        match node {
            Node::Broker(b) => self.extra_ms.get(b as usize).copied().unwrap_or(0),
            Node::Producer(_) | Node::Controller | Node::Consumer(_) => 0,
        }
    }

    /// The envelope of a message sent now: latency plus the slow brokers' extra delay at either
    /// end; lost at once if its link is cut.
    pub fn send(&mut self, now: u64, from: Node, to: Node) -> Wire {
        self.next_id += 1;
        let state = if self.is_cut(from, to) {
            WireState::Lost { at_ms: now }
        } else {
            WireState::InFlight
        };
        let arrive_ms = now + self.latency_ms + self.extra(from) + self.extra(to);
        self.first_arrival_ms = self.first_arrival_ms.min(arrive_ms);
        Wire {
            id: self.next_id,
            from,
            to,
            sent_ms: now,
            arrive_ms,
            state,
        }
    }
}

/// The messages of one kind that arrive now, in send order.
pub fn arrivals<'a>(messages: impl Iterator<Item = (Entity, &'a Wire)>, now: u64) -> InSendOrder {
    in_send_order(messages.filter(|(_, w)| w.arrives_now(now)))
}

/// The messages of one kind held at their receiver, in send order.
pub fn held<'a>(messages: impl Iterator<Item = (Entity, &'a Wire)>) -> InSendOrder {
    in_send_order(messages.filter(|(_, w)| w.held()))
}

/// Message entities in send order. A named type, not `impl Iterator`, so that it does not
/// borrow the query the messages came from, which the caller goes on to use.
pub type InSendOrder =
    std::iter::Map<std::vec::IntoIter<(u64, Entity)>, fn((u64, Entity)) -> Entity>;

fn in_send_order<'a>(messages: impl Iterator<Item = (Entity, &'a Wire)>) -> InSendOrder {
    let mut due: Vec<(u64, Entity)> = messages.map(|(e, w)| (w.id, e)).collect();
    due.sort_unstable();
    due.into_iter().map(|(_, e)| e)
}

pub(super) fn plugin(app: &mut App) {
    app.configure_sets(SimStep, SimSet::Network.run_if(any_fault))
        .add_systems(
            SimStep,
            (drop_on_cut_links, refuse_at_dead_brokers)
                .chain()
                .in_set(SimSet::Network),
        )
        .add_systems(
            SimStep,
            despawn_lost
                .in_set(SimSet::Clock)
                .before(super::clock::tick),
        );
}

/// Only a cut link or a dead broker loses messages: a healthy cluster skips the phase.
fn any_fault(clock: Res<SimClock>, network: Res<Network>, brokers: Query<&Broker>) -> bool {
    !clock.skip_idle_rules || network.any_cut() || brokers.iter().any(|b| !b.alive)
}

/// A message whose link is cut while it travels never arrives (a network partition drops
/// packets; nobody is told).
fn drop_on_cut_links(clock: Res<SimClock>, network: Res<Network>, mut wires: Query<&mut Wire>) {
    if !network.any_cut() {
        return;
    }
    for mut wire in &mut wires {
        if wire.state == WireState::InFlight && network.is_cut(wire.from, wire.to) {
            wire.state = WireState::Lost {
                at_ms: clock.now_ms,
            };
        }
    }
}

/// Lost messages stay visible until they would have arrived, then go. Every other message wakes
/// the clock when it arrives or when its hold runs out.
fn despawn_lost(
    clock: Res<SimClock>,
    wires: Query<(Entity, &Wire)>,
    mut metrics: ResMut<Metrics>,
    mut network: ResMut<Network>,
    mut wake: ResMut<Wake>,
    mut commands: Commands,
) {
    let now = clock.now_ms;
    wake.at(network.first_arrival_ms);
    network.first_arrival_ms = u64::MAX;
    for (entity, wire) in &wires {
        match wire.state {
            WireState::Lost { .. } if wire.arrive_ms <= now => {
                metrics.messages_lost += 1;
                commands.entity(entity).despawn();
            }
            WireState::Held { until_ms } if until_ms > now => wake.at(until_ms),
            _ if wire.arrive_ms > now => wake.at(wire.arrive_ms),
            _ => {}
        }
    }
}

/// A broker whose process is gone refuses connections: a request that reaches it, or one it was
/// holding when it died, is lost, and its sender learns at once (the connection resets; a producer
/// sees NETWORK_EXCEPTION, a follower's fetcher backs off).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn refuse_at_dead_brokers(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut rng: ResMut<SimRng>,
    mut ledger: ResMut<AckLedger>,
    mut brokers_mut: Query<&mut Broker>,
    mut wires: Query<(
        Entity,
        &mut Wire,
        Option<&ProduceRequest>,
        Option<&FetchRequest>,
        Option<&GroupRequest>,
        Option<&ConsumerFetch>,
    )>,
    mut producers: Query<&mut Producer>,
    mut consumers: Query<&mut Consumer>,
) {
    if brokers_mut.iter().all(|b| b.alive) {
        return;
    }
    let now = clock.now_ms;
    let views = broker_views(brokers_mut.iter());
    // A broker still registering hears only the controller's answers.
    let dead = |w: &Wire| match w.to {
        Node::Broker(b) => {
            let view = views[b as usize];
            !(view.alive || view.starting && w.from == Node::Controller)
        }
        _ => false,
    };
    let mut refused: Vec<(u64, Entity)> = wires
        .iter()
        .filter(|(_, w, ..)| dead(w) && (w.arrives_now(now) || w.held()))
        .map(|(e, w, ..)| (w.id, e))
        .collect();
    refused.sort_unstable();
    for (_, entity) in refused {
        let (_, mut wire, produce, fetch, group, consumer_fetch) = wires.get_mut(entity).unwrap();
        wire.state = WireState::Lost { at_ms: now };
        wire.arrive_ms = wire.arrive_ms.min(now);
        if let Some(request) = produce {
            let producer = cluster.producers[request.producer as usize];
            producers
                .get_mut(producer)
                .expect("producer entity")
                .fail_request(
                    wire.id,
                    KafkaError::NetworkException,
                    now,
                    &mut rng,
                    &mut ledger,
                );
        }
        if (group.is_some() || consumer_fetch.is_some())
            && let Node::Consumer(c) = wire.from
        {
            consumers
                .get_mut(cluster.consumers[c as usize])
                .expect("consumer entity")
                .request_failed(wire.id, now);
        }
        if let (Some(_), Node::Broker(follower), Node::Broker(leader)) = (fetch, wire.from, wire.to)
        {
            let mut broker = brokers_mut
                .get_mut(cluster.brokers[follower as usize - 1])
                .expect("broker entity");
            let fetcher = broker.fetcher(leader);
            if fetcher.in_flight == Some(wire.id) {
                fetcher.in_flight = None;
                fetcher.backoff_until_ms = now + cluster.config.replica_fetch_backoff_ms;
            }
        }
    }
}
