//! The messages on the wire, as rows: the network keeps each message (its envelope and its
//! payload) under its wire id, with the queues that say which are due, so a step touches only the
//! messages that arrive or wait at it, never every message. The view reads the rows by wire id.
//!
//! A step sees the messages as they stood when it began: what it sends goes on the wire at its
//! end ([`Network::send`] keeps it until then), and what it finishes leaves at its end, so every
//! rule of a step reads the same wire whatever order the rules run in.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use bevy_ecs::entity::EntityHashMap;
use bevy_platform::collections::HashMap;

use bevy_ecs::prelude::*;

use super::Wake;
use super::events::Metrics;
use super::network::{Message, Network, Wire, WireState};
use super::protocol::{KINDS, OnWire, Payload};

/// The messages themselves: in slots reused as messages come and go, found through a hash index
/// by wire id (its hasher is fixed, and nothing depends on its order).
#[derive(Debug, Clone, Default)]
struct Rows {
    slots: Vec<Option<Message>>,
    free: Vec<u32>,
    index: HashMap<u64, u32>,
}

impl Rows {
    fn get(&self, id: u64) -> Option<&Message> {
        let slot = *self.index.get(&id)?;
        self.slots[slot as usize].as_ref()
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut Message> {
        let slot = *self.index.get(&id)?;
        self.slots[slot as usize].as_mut()
    }

    fn insert(&mut self, message: Message) {
        let id = message.wire.id;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(message);
                slot
            }
            None => {
                self.slots.push(Some(message));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(id, slot);
    }

    fn remove(&mut self, id: u64) -> Option<Message> {
        let slot = self.index.remove(&id)?;
        self.free.push(slot);
        self.slots[slot as usize].take()
    }

    /// In send order (sorted for the asking: the model itself never needs every message).
    fn in_send_order(&self) -> Vec<&Message> {
        let mut messages: Vec<&Message> = self.slots.iter().flatten().collect();
        messages.sort_unstable_by_key(|m| m.wire.id);
        messages
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Message> {
        self.slots.iter_mut().flatten()
    }
}

impl std::ops::Index<&u64> for Rows {
    type Output = Message;
    fn index(&self, id: &u64) -> &Message {
        self.get(*id).expect("a message on the wire")
    }
}

/// A set kept as a sorted vector: the held messages are a few hundred at most, and arrive nearly
/// in order, so an insertion or removal moves little, and listing them in order is a copy.
#[derive(Debug, Clone)]
struct Sorted<T>(Vec<T>);

impl<T> Default for Sorted<T> {
    fn default() -> Self {
        Sorted(Vec::new())
    }
}

impl<T: Ord + Copy> Sorted<T> {
    fn insert(&mut self, x: T) {
        if let Err(i) = self.0.binary_search(&x) {
            self.0.insert(i, x);
        }
    }

    fn remove(&mut self, x: &T) {
        if let Ok(i) = self.0.binary_search(x) {
            self.0.remove(i);
        }
    }

    fn contains(&self, x: &T) -> bool {
        self.0.binary_search(x).is_ok()
    }

    /// The elements from the first at or after `x`.
    fn from(&self, x: &T) -> &[T] {
        &self.0[self.0.partition_point(|y| y < x)..]
    }

    /// The elements up to and including `x`.
    fn up_to(&self, x: &T) -> &[T] {
        &self.0[..self.0.partition_point(|y| y <= x)]
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Every message on the wire or held at its receiver, by wire id, and the queues of what is due.
#[derive(Debug, Clone, Default)]
pub struct Wires {
    rows: Rows,
    /// Per kind, (arrive_ms, wire id) of the messages still travelling, earliest first (lost ones
    /// included: they leave when they would have arrived).
    travelling: [BinaryHeap<Reverse<(u64, u64)>>; KINDS],
    /// Per kind, the messages that arrive at the current step, in send order.
    due: [Vec<u64>; KINDS],
    /// Per kind, the messages held at their receiver, in send order.
    held: [Sorted<u64>; KINDS],
    /// (until_ms, wire id) of the held messages: when their waits run out.
    holds: Sorted<(u64, u64)>,
    /// The held fetches (a follower's or a consumer's) of each partition, with the broker that
    /// holds each: every broker has its own `DelayedOperationPurgatory`, which watches a delayed
    /// fetch under each of its partitions, so a change to a partition on one broker wakes only
    /// the fetches that broker holds.
    watching: EntityHashMap<Vec<(u64, u32)>>,
    /// Handled at this step: they leave at its end.
    finished: Vec<u64>,
    /// Lost and due to leave at the end of this step.
    lost: Vec<u64>,
}

impl Wires {
    /// Every message, in send order.
    pub fn iter(&self) -> impl Iterator<Item = &Message> {
        self.rows.in_send_order().into_iter()
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.len() == 0
    }

    pub fn get(&self, id: u64) -> Option<&Message> {
        self.rows.get(id)
    }

    /// A message of a known kind.
    pub fn get_of<T: OnWire>(&self, id: u64) -> Option<(&Wire, &T)> {
        let message = self.rows.get(id)?;
        Some((&message.wire, T::of(&message.payload)?))
    }

    /// A message of a known kind, to change its payload. Its envelope changes only through
    /// [`Wires::hold`] and the ways to lose it, which keep the queues right.
    pub fn get_mut_of<T: OnWire>(&mut self, id: u64) -> Option<(&Wire, &mut T)> {
        let message = self.rows.get_mut(id)?;
        Some((&message.wire, T::of_mut(&mut message.payload)?))
    }

    /// Puts in `out` the messages of a kind that arrive now (still on their way, not lost), in
    /// send order.
    pub fn arriving<T: OnWire>(&self, out: &mut Vec<u64>) {
        out.clear();
        out.extend(
            self.due[T::KIND as usize]
                .iter()
                .copied()
                .filter(|id| self.rows[id].wire.state == WireState::InFlight),
        );
    }

    /// Puts in `out` the messages of a kind held at their receiver, in send order.
    pub fn held<T: OnWire>(&self, out: &mut Vec<u64>) {
        out.clear();
        out.extend(self.held[T::KIND as usize].iter().copied());
    }

    /// Whether any message of a kind arrives now or is held.
    pub fn any_due<T: OnWire>(&self) -> bool {
        !self.due[T::KIND as usize].is_empty() || !self.held[T::KIND as usize].is_empty()
    }

    /// Every message that arrives now or is held, of every kind, in send order.
    pub fn all_arriving_or_held(&self, out: &mut Vec<u64>) {
        out.clear();
        for kind in 0..KINDS {
            out.extend(
                self.due[kind]
                    .iter()
                    .copied()
                    .filter(|id| self.rows[id].wire.state == WireState::InFlight),
            );
            out.extend(self.held[kind].iter().copied());
        }
        out.sort_unstable();
    }

    /// When the first message of a kind that is still on its way (not lost) arrives.
    pub fn next_arrival<T: OnWire>(&self) -> Option<u64> {
        // Heartbeats, the one kind asked about, are few: a look at each is cheap.
        self.travelling[T::KIND as usize]
            .iter()
            .filter(|Reverse((_, id))| {
                self.rows
                    .get(*id)
                    .is_some_and(|m| m.wire.state == WireState::InFlight)
            })
            .map(|Reverse((at, _))| *at)
            .min()
    }

    /// Puts in `out` the held messages of a kind that watch any of `touched` or whose wait has
    /// run out by `now`, in send order. Each touched partition names the broker whose copy of it
    /// changed, or `None` for a change to the partition itself (wakes what every broker holds).
    pub fn held_due<T: OnWire>(
        &self,
        touched: &[(Entity, Option<u32>)],
        now: u64,
        out: &mut Vec<u64>,
    ) {
        out.clear();
        for &(partition, broker) in touched {
            if let Some(held) = self.watching.get(&partition) {
                out.extend(
                    held.iter()
                        .filter(|(id, at)| {
                            broker.is_none_or(|b| b == *at) && self.is_held::<T>(*id)
                        })
                        .map(|(id, _)| *id),
                );
            }
        }
        out.extend(
            self.holds
                .up_to(&(now, u64::MAX))
                .iter()
                .map(|(_, id)| *id)
                .filter(|id| self.is_held::<T>(*id)),
        );
        out.sort_unstable();
        out.dedup();
    }

    /// Adds to `out` the held messages of a kind at any of `brokers`, keeping send order.
    pub fn held_at<T: OnWire>(&self, brokers: &[u32], out: &mut Vec<u64>) {
        if brokers.is_empty() {
            return;
        }
        out.extend(self.held[T::KIND as usize].iter().copied().filter(|id| {
            self.rows[id]
                .wire
                .to
                .broker()
                .is_some_and(|b| brokers.contains(&b))
        }));
        out.sort_unstable();
        out.dedup();
    }

    fn is_held<T: OnWire>(&self, id: u64) -> bool {
        self.held[T::KIND as usize].contains(&id)
    }

    /// Parks an arrived message at its receiver until it can be answered, at the latest
    /// `until_ms`.
    pub fn hold(&mut self, id: u64, until_ms: u64) {
        let message = self.rows.get_mut(id).expect("a message on the wire");
        if let WireState::Held { until_ms: before } = message.wire.state {
            self.holds.remove(&(before, id));
        } else {
            watch(&mut self.watching, &message.wire, &message.payload, true);
        }
        message.wire.state = WireState::Held { until_ms };
        self.held[message.payload.kind() as usize].insert(id);
        self.holds.insert((until_ms, id));
    }

    /// The message is answered (or dropped by its receiver): it leaves the wire at the end of
    /// the step, and a held one is no longer listed as held, so no later rule answers it again.
    pub fn finish(&mut self, id: u64) {
        if let Some(message) = self.rows.get(id)
            && matches!(message.wire.state, WireState::Held { .. })
        {
            self.held[message.payload.kind() as usize].remove(&id);
        }
        self.finished.push(id);
    }

    /// Messages on their way whose link is cut now: lost, they go on to where they would have
    /// been and leave when they would have arrived.
    pub fn lose_where(&mut self, now: u64, cut: impl Fn(&Wire) -> bool) {
        for message in self.rows.iter_mut() {
            if message.wire.state == WireState::InFlight && cut(&message.wire) {
                message.wire.state = WireState::Lost { at_ms: now };
                // One due now has left its queue: it leaves at the end of this step.
                if message.wire.arrive_ms <= now {
                    self.lost.push(message.wire.id);
                }
            }
        }
    }

    /// A message on its way whose connection its sender closed: lost, it goes on to where it would
    /// have been and leaves when it would have arrived. One already arrived is left alone.
    pub fn lose(&mut self, id: u64, now: u64) {
        if let Some(message) = self.rows.get_mut(id)
            && message.wire.state == WireState::InFlight
        {
            message.wire.state = WireState::Lost { at_ms: now };
            if message.wire.arrive_ms <= now {
                self.lost.push(id);
            }
        }
    }

    /// A message refused by its receiver (arriving now or held there): lost now, and it leaves
    /// at the end of the step.
    pub fn refuse(&mut self, id: u64, now: u64) -> &Message {
        let message = self.rows.get_mut(id).expect("a message on the wire");
        if let WireState::Held { until_ms } = message.wire.state {
            self.holds.remove(&(until_ms, id));
            self.held[message.payload.kind() as usize].remove(&id);
            watch(&mut self.watching, &message.wire, &message.payload, false);
        }
        message.wire.state = WireState::Lost { at_ms: now };
        message.wire.arrive_ms = message.wire.arrive_ms.min(now);
        self.lost.push(id);
        message
    }

    /// The end of a step: what it finished and what was lost by now leave, what it sent goes
    /// on the wire, and the clock is woken when the next message arrives or a wait runs out.
    fn end_step(
        &mut self,
        now: u64,
        sent: impl Iterator<Item = Message>,
        metrics: &mut Metrics,
        wake: &mut Wake,
    ) {
        // The waits of messages handled now still wake the clock, as they did before handling.
        if let Some((until, _)) = self.holds.from(&(now + 1, 0)).first() {
            wake.at(*until);
        }
        for queue in &self.travelling {
            if let Some(Reverse((at, _))) = queue.peek() {
                wake.at(*at);
            }
        }
        for id in std::mem::take(&mut self.lost) {
            if self.remove(id).is_some() {
                metrics.messages_lost += 1;
            }
        }
        let mut finished = std::mem::take(&mut self.finished);
        for id in finished.drain(..) {
            self.remove(id);
        }
        self.finished = finished;
        for message in sent {
            wake.at(message.wire.arrive_ms);
            let id = message.wire.id;
            self.travelling[message.payload.kind() as usize]
                .push(Reverse((message.wire.arrive_ms, id)));
            self.rows.insert(message);
        }
    }

    fn remove(&mut self, id: u64) -> Option<Message> {
        // An entry in the queue of arrivals goes when it comes to the top.
        let message = self.rows.remove(id)?;
        if let WireState::Held { until_ms } = message.wire.state {
            self.holds.remove(&(until_ms, id));
            self.held[message.payload.kind() as usize].remove(&id);
            watch(&mut self.watching, &message.wire, &message.payload, false);
        }
        Some(message)
    }

    /// The start of the step at `now`: the messages that arrive now are due; lost ones that
    /// would have arrived leave at its end.
    fn take_arrivals(&mut self, now: u64) {
        for kind in 0..KINDS {
            self.due[kind].clear();
            while let Some(&Reverse((at, id))) = self.travelling[kind].peek()
                && at <= now
            {
                self.travelling[kind].pop();
                match self.rows.get(id).map(|m| m.wire.state) {
                    Some(WireState::InFlight) => self.due[kind].push(id),
                    Some(WireState::Lost { .. }) => self.lost.push(id),
                    Some(WireState::Held { .. }) => unreachable!("a held message has arrived"),
                    None => {} // Gone before it arrived.
                }
            }
        }
    }

    /// About what a copy takes in memory: the rows and the queues (payloads' own vectors are
    /// left out, as the checkpoint's estimate leaves out other small vectors).
    pub fn approx_bytes(&self) -> usize {
        let queued: usize = self.travelling.iter().map(BinaryHeap::len).sum::<usize>()
            + self.held.iter().map(Sorted::len).sum::<usize>()
            + self.holds.len();
        self.rows.slots.len() * size_of::<Option<Message>>()
            + self.rows.index.len() * 2 * size_of::<u64>()
            + queued * 2 * size_of::<u64>()
    }

    /// Every entity a message refers to, for checkpoints.
    pub fn payloads_mut(&mut self) -> impl Iterator<Item = &mut Payload> {
        self.rows.iter_mut().map(|m| &mut m.payload)
    }

    /// Points the partitions watched at other entities, for checkpoints.
    pub fn remap_watched(&mut self, to: impl Fn(Entity) -> Entity) {
        self.watching = std::mem::take(&mut self.watching)
            .into_iter()
            .map(|(partition, ids)| (to(partition), ids))
            .collect();
    }
}

/// Starts or stops watching a held fetch under each partition it fetches, at the broker that
/// holds it.
fn watch(watching: &mut EntityHashMap<Vec<(u64, u32)>>, wire: &Wire, payload: &Payload, on: bool) {
    let Some(broker) = wire.to.broker() else {
        return; // Only brokers hold fetches.
    };
    let id = wire.id;
    let mut one = |partition: Entity| {
        let held = watching.entry(partition).or_default();
        if on {
            held.push((id, broker));
        } else if let Some(i) = held.iter().position(|(x, _)| *x == id) {
            held.swap_remove(i);
        }
    };
    match payload {
        Payload::Fetch(request) => request.partitions.iter().for_each(|p| one(p.partition)),
        Payload::ConsumerFetch(fetch) => one(fetch.partition),
        _ => {}
    }
}

/// The last thing a step does before the clock moves: the wire as the next step will see it.
pub(super) fn end_step(
    now: u64,
    network: &mut Network,
    wires: &mut Wires,
    metrics: &mut Metrics,
    wake: &mut Wake,
) {
    let sent = network.take_sent();
    wires.end_step(now, sent, metrics, wake);
}

/// The first thing at the new instant: which messages arrive at it.
pub(super) fn take_arrivals(now: u64, wires: &mut Wires) {
    wires.take_arrivals(now);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ClusterConfig;
    use crate::sim::network::Node;
    use crate::sim::protocol::{FetchRequest, Heartbeat};

    fn heartbeat(broker: u32) -> Heartbeat {
        Heartbeat {
            broker,
            incarnation: 1,
            registration: false,
            want_shut_down: false,
            metadata_offset: 0,
        }
    }

    /// Runs the end of the step at `now` and the start of the next one at `next`.
    fn between_steps(wires: &mut Wires, network: &mut Network, now: u64, next: u64) -> (u64, u64) {
        let mut metrics = Metrics::default();
        let mut wake = Wake::default();
        wires.end_step(now, network.take_sent(), &mut metrics, &mut wake);
        wires.take_arrivals(next);
        (wake.next_ms(), metrics.messages_lost)
    }

    fn network() -> Network {
        Network::new(&ClusterConfig {
            network_latency_ms: 2,
            ..ClusterConfig::default()
        })
    }

    #[test]
    fn what_a_step_sends_goes_on_the_wire_at_its_end_and_arrives_in_send_order() {
        let mut network = network();
        let mut wires = Wires::default();
        let a = network.send(0, Node::Broker(1), Node::Controller, heartbeat(1));
        let b = network.send(0, Node::Broker(2), Node::Controller, heartbeat(2));
        assert!(wires.is_empty(), "not on the wire before the step ends");
        let (wake, _) = between_steps(&mut wires, &mut network, 0, 1);
        assert_eq!(wake, 2, "the clock wakes when they arrive");
        assert_eq!(wires.len(), 2);
        let mut due = Vec::new();
        wires.arriving::<Heartbeat>(&mut due);
        assert!(due.is_empty(), "nothing arrives before the latency");
        between_steps(&mut wires, &mut network, 1, 2);
        wires.arriving::<Heartbeat>(&mut due);
        assert_eq!(due, vec![a.id, b.id]);
        wires.arriving::<FetchRequest>(&mut due);
        assert!(due.is_empty(), "each kind has its own arrivals");
    }

    #[test]
    fn a_finished_message_leaves_at_the_end_of_its_step_and_a_held_one_wakes_the_clock() {
        let mut network = network();
        let mut wires = Wires::default();
        let a = network.send(0, Node::Broker(1), Node::Controller, heartbeat(1));
        let b = network.send(0, Node::Broker(2), Node::Controller, heartbeat(2));
        between_steps(&mut wires, &mut network, 0, 2);
        wires.finish(a.id);
        wires.hold(b.id, 50);
        assert!(
            wires.get(a.id).is_some(),
            "still there for the rest of the step"
        );
        let mut held = Vec::new();
        wires.held::<Heartbeat>(&mut held);
        assert_eq!(held, vec![b.id]);
        let (wake, _) = between_steps(&mut wires, &mut network, 2, 3);
        assert_eq!(wake, 50, "the hold runs out at 50 ms");
        assert!(wires.get(a.id).is_none());
        wires.finish(b.id);
        between_steps(&mut wires, &mut network, 3, 4);
        wires.held::<Heartbeat>(&mut held);
        assert!(held.is_empty() && wires.is_empty());
    }

    #[test]
    fn a_message_lost_on_the_way_leaves_when_it_would_have_arrived() {
        let mut network = network();
        let mut wires = Wires::default();
        let a = network.send(0, Node::Broker(1), Node::Controller, heartbeat(1));
        between_steps(&mut wires, &mut network, 0, 1);
        wires.lose_where(1, |w| w.from == Node::Broker(1));
        assert_eq!(
            wires.next_arrival::<Heartbeat>(),
            None,
            "lost, it arrives nowhere"
        );
        let (wake, lost) = between_steps(&mut wires, &mut network, 1, 2);
        assert_eq!(
            (wake, lost),
            (2, 0),
            "it is drawn until it would have arrived"
        );
        let mut due = Vec::new();
        wires.arriving::<Heartbeat>(&mut due);
        assert!(due.is_empty());
        let (_, lost) = between_steps(&mut wires, &mut network, 2, 3);
        assert_eq!(lost, 1);
        assert!(wires.get(a.id).is_none());
    }

    #[test]
    fn a_refused_message_is_lost_at_once() {
        let mut network = network();
        let mut wires = Wires::default();
        let a = network.send(0, Node::Broker(1), Node::Controller, heartbeat(1));
        between_steps(&mut wires, &mut network, 0, 2);
        wires.hold(a.id, 100);
        let mut all = Vec::new();
        wires.all_arriving_or_held(&mut all);
        assert_eq!(all, vec![a.id]);
        wires.refuse(a.id, 5);
        let (wake, lost) = between_steps(&mut wires, &mut network, 5, 6);
        assert_eq!(
            (wake, lost),
            (u64::MAX, 1),
            "its wait no longer wakes anyone"
        );
        assert!(wires.is_empty());
    }
}
