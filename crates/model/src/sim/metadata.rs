//! What clients know of the cluster (`org.apache.kafka.clients.Metadata`): who leads each
//! partition, as of their last Metadata answer. Producers and consumers send to the leader their
//! metadata names, and ask again when an error says it is stale, when they have records for a
//! partition with no known leader, and every `metadata.max.age.ms`. A Metadata request goes to the
//! least loaded broker the client can reach and is answered from that broker's own metadata, so
//! a broker cut off from the controller hands out its stale view.

use super::cluster::{BrokerId, BrokerViews, LeaderRecord, Partition};
use super::network::{Network, Node};

/// A client's metadata (`org.apache.kafka.clients.Metadata`): each of its partitions' leader and
/// epoch as it last learnt them. It asks again (a Metadata request to the least loaded broker,
/// answered from that broker's own metadata) when an error says its view is stale, and every
/// `metadata.max.age.ms`.
#[derive(Clone, Debug, Default)]
pub struct ClientMetadata {
    /// By the client's partition index: (leader, leader epoch). Shared with checkpoints until it
    /// changes, which is seldom.
    pub leaders: std::sync::Arc<Vec<(Option<BrokerId>, u32)>>,
    /// An update was asked for (`Metadata.requestUpdate`).
    pub wanted: bool,
    /// The Metadata request on its way: when its answer is read.
    pub answer_at: Option<u64>,
    /// When the last answer came.
    pub refreshed_ms: u64,
    /// Metadata requests sent: where the next one starts looking for the least loaded broker.
    pub requests: u64,
    /// How far the broker that gave the last answer had applied the metadata log: which
    /// partitions it knew of.
    pub answered_offset: u64,
}

impl ClientMetadata {
    /// KIP-951: a NOT_LEADER_OR_FOLLOWER answer names the leader the broker knows; it is taken
    /// at once where its epoch is newer (`Metadata.updatePartitionLeadership`).
    pub fn take_hint(&mut self, index: usize, leader: BrokerId, epoch: u32) {
        if self.leaders.get(index).is_some_and(|c| c.1 < epoch) {
            std::sync::Arc::make_mut(&mut self.leaders)[index] = (Some(leader), epoch);
        }
    }

    /// Takes a Metadata answer: a partition's entry is replaced unless its epoch is older than
    /// the one cached (`Metadata.updateLatestMetadata`, KIP-320).
    pub fn take_answer(&mut self, seen: impl Iterator<Item = LeaderRecord>, now: u64) {
        for (i, seen) in seen.enumerate().take(self.leaders.len()) {
            let cached = self.leaders[i];
            let taken = (seen.leader, seen.leader_epoch);
            if seen.leader_epoch >= cached.1 && taken != cached {
                std::sync::Arc::make_mut(&mut self.leaders)[i] = taken;
            }
        }
        self.refreshed_ms = now;
        self.answer_at = None;
        self.wanted = false;
    }
}

/// When a client's Metadata request goes out and how its answer is read.
pub struct Refresh<'a> {
    pub now: u64,
    /// A request and its answer.
    pub round_trip_ms: u64,
    /// `retry.backoff.ms`: no new request sooner after an answer (`Metadata.timeToNextUpdate`).
    pub backoff_ms: u64,
    /// `metadata.max.age.ms`.
    pub max_age_ms: u64,
    /// The client on the wire.
    pub node: Node,
    pub network: &'a Network,
    pub brokers: &'a BrokerViews,
}

impl ClientMetadata {
    /// Sends a Metadata request if one is due, and reads its answer once it is back: from the
    /// least loaded broker the client reaches (`NetworkClient.leastLoadedNode`: fewest of its
    /// requests in flight, `load`; among equals Kafka starts at a random node, here at the next
    /// broker in turn, so that one broker's stale view cannot hold a client), that broker's view
    /// of each of `partitions` (in the client's partition order). Returns when to look again.
    pub fn refresh<'p>(
        &mut self,
        r: &Refresh,
        load: impl Fn(BrokerId) -> usize,
        partitions: impl Iterator<Item = &'p Partition>,
    ) -> u64 {
        let now = r.now;
        let aged = now >= self.refreshed_ms + r.max_age_ms;
        let backed_off = now >= self.refreshed_ms + r.backoff_ms;
        if self.answer_at.is_none() && ((self.wanted && backed_off) || aged) {
            self.answer_at = Some(now + r.round_trip_ms);
        }
        if self.answer_at.is_some_and(|at| at <= now) {
            let n = (r.brokers.len() as u64).saturating_sub(1).max(1);
            let start = self.requests % n;
            self.requests += 1;
            let least_loaded = (1..r.brokers.len() as BrokerId)
                .filter(|b| {
                    r.brokers[*b as usize].alive && !r.network.is_cut(r.node, Node::Broker(*b))
                })
                .min_by_key(|b| (load(*b), (u64::from(*b) - 1 + n - start) % n));
            match least_loaded {
                Some(b) => {
                    let seen = r.brokers[b as usize].metadata_offset;
                    self.take_answer(partitions.map(|p| p.leader_seen(seen)), now);
                    self.answered_offset = seen;
                }
                // No broker to ask: try again after the back-off.
                None => self.answer_at = Some(now + r.backoff_ms),
            }
        }
        let next = match self.answer_at {
            Some(at) => at,
            None if self.wanted => self.refreshed_ms + r.backoff_ms,
            None => self.refreshed_ms + r.max_age_ms,
        };
        next.max(now + 1)
    }
}
