//! The wire: every request and response has the instant it was sent and the instant it arrives,
//! so the view can draw exactly where it is at any sim time; links can be cut and brokers slowed.
//! The messages themselves are rows of [`super::wires::Wires`]; what the faults do to them is in
//! `faults.rs`.

use std::collections::BTreeSet;

use serde::Serialize;

use super::cluster::BrokerId;
use super::protocol::{OnWire, Payload};
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

impl Node {
    /// The broker this end is, if it is one.
    pub fn broker(self) -> Option<BrokerId> {
        match self {
            Node::Broker(b) => Some(b),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireState {
    /// On its way; handled by its receiver at `arrive_ms`.
    InFlight,
    /// Dropped on a cut link at this instant; removed at `arrive_ms`.
    Lost { at_ms: u64 },
    /// Arrived and parked at the receiver until it can be answered, at the latest `until_ms`
    /// (a produce waiting for acks=all, a fetch waiting for data).
    Held { until_ms: u64 },
}

/// The envelope of every message (its payload is beside it in [`Wires`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    pub fn held(&self) -> bool {
        matches!(self.state, WireState::Held { .. })
    }
}

/// Link latency, cut links and slow brokers.
#[derive(Debug, Clone)]
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
    /// (producer, broker, until): the producer's connection to the broker hangs until then:
    /// the broker's answers are lost on the way.
    pub dropped_answers: Vec<(u32, BrokerId, u64)>,
    /// (producer, broker): connections that lost an answer. Kafka's client pairs answers with
    /// requests in order on a connection, and TCP loses none without losing the connection, so
    /// every later answer on it is lost too, until the producer closes it (a request timeout,
    /// or the broker's reset).
    pub hung: Vec<(u32, BrokerId)>,
    next_id: u64,
    /// Sent at this step: on the wire from its end.
    sent: Vec<Message>,
}

impl Network {
    pub fn new(config: &ClusterConfig) -> Self {
        Network {
            latency_ms: config.network_latency_ms,
            cut: BTreeSet::new(),
            isolated: BTreeSet::new(),
            controller_cut: BTreeSet::new(),
            extra_ms: vec![0; config.brokers as usize + 1],
            dropped_answers: Vec::new(),
            hung: Vec::new(),
            next_id: 0,
            sent: Vec::new(),
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

    /// Hangs a producer's connection to a broker until `until_ms`: the broker's answers to it
    /// are lost (the latest such action for the pair holds).
    pub fn drop_answers(&mut self, producer: u32, broker: BrokerId, until_ms: u64) {
        self.dropped_answers
            .retain(|&(p, b, _)| (p, b) != (producer, broker));
        self.dropped_answers.push((producer, broker, until_ms));
    }

    /// The producer closed its connection to the broker: answers on its next one arrive.
    pub fn connection_closed(&mut self, producer: u32, broker: BrokerId) {
        self.hung.retain(|&pair| pair != (producer, broker));
    }

    /// Whether a message sent now is an answer lost on a hung connection (a broker sends a
    /// producer nothing but produce answers).
    fn answer_dropped(&mut self, now: u64, from: Node, to: Node) -> bool {
        if self.dropped_answers.is_empty() && self.hung.is_empty() {
            return false;
        }
        let (Node::Broker(broker), Node::Producer(producer)) = (from, to) else {
            return false;
        };
        let pair = (producer, broker);
        self.dropped_answers.retain(|&(_, _, until)| now < until);
        if self.dropped_answers.iter().any(|&(p, b, _)| (p, b) == pair)
            && !self.hung.contains(&pair)
        {
            self.hung.push(pair);
        }
        self.hung.contains(&pair)
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

    /// Sends a message now: it arrives after the latency plus the slow brokers' extra delay at
    /// either end, and is lost at once if its link is cut. It goes on the wire at the end of the
    /// step; its envelope is returned.
    pub fn send(&mut self, now: u64, from: Node, to: Node, payload: impl OnWire) -> Wire {
        let wire = self.envelope(now, from, to);
        self.sent.push(Message {
            wire,
            payload: payload.into_payload(),
        });
        wire
    }

    fn envelope(&mut self, now: u64, from: Node, to: Node) -> Wire {
        self.next_id += 1;
        let state = if self.is_cut(from, to) || self.answer_dropped(now, from, to) {
            WireState::Lost { at_ms: now }
        } else {
            WireState::InFlight
        };
        let arrive_ms = now + self.latency_ms + self.extra(from) + self.extra(to);
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

impl Network {
    /// What this step sent, to go on the wire.
    pub(super) fn take_sent(&mut self) -> std::vec::Drain<'_, Message> {
        self.sent.drain(..)
    }
}

/// One message: its envelope and what it carries.
#[derive(Debug, Clone)]
pub struct Message {
    pub wire: Wire,
    pub payload: Payload,
}
