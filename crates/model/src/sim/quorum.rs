//! The active KRaft controller's state (`QuorumController`): each broker's registration and last
//! heartbeat, what the timeline asked of it, and its metadata log. The rules that change it are
//! the controller's phase, in `controller.rs`.

use std::collections::VecDeque;

use bevy_ecs::prelude::*;

use super::cluster::BrokerId;
use crate::scenario::ClusterConfig;

/// The controller's own state.
#[derive(Clone, Component, Debug)]
pub struct Controller {
    /// When each broker's last heartbeat arrived, by broker id.
    pub last_heartbeat_ms: Vec<u64>,
    /// The incarnation each broker last registered with, by broker id.
    pub registered: Vec<u32>,
    /// The incarnation whose registration it last refused, by broker id (0: none; restarts
    /// count from 1), so that a refusal is reported once.
    pub refused: Vec<u32>,
    /// A `PreferredElection` action waits to be carried out.
    pub preferred_election_requested: bool,
    /// When the automatic preferred election runs next, if it is scheduled: it is, while
    /// `auto.leader.rebalance.enable` and some partition is led by a broker other than its first
    /// replica.
    pub next_balance_check_ms: Option<u64>,
    /// Brokers started by `AddBroker`, which join the cluster once their entities exist.
    pub new_brokers: Vec<Entity>,
    /// Partitions asked for, by topic index, created once their entities exist.
    pub requested_partitions: Vec<(usize, Vec<Entity>)>,
    /// Reassignments asked for, which start once their new replicas exist.
    pub requested: Vec<RequestedReassignment>,
    /// Partitions whose reassignment is under way.
    pub reassigning: Vec<Entity>,
    /// When the controller next looks for leaderless partitions whose topic allows an unclean
    /// election, if it is scheduled: it is while some partition has no leader.
    pub next_unclean_check_ms: Option<u64>,
    pub metadata: MetadataLog,
    /// The metadata offset each broker reported in its last heartbeat, by broker id.
    pub reported_offset: Vec<u64>,
    /// For a broker in controlled shutdown, the end of the metadata log once its leaderships
    /// were moved (`BrokerHeartbeatState.controlledShutdownOffset`): it may stop when every
    /// active broker has applied that far.
    pub controlled_shutdown_offset: Vec<Option<u64>>,
}

/// A reassignment asked for: the partition, its target replicas, and the replica entities made
/// for the brokers it adds.
#[derive(Clone, Debug)]
pub struct RequestedReassignment {
    pub partition: Entity,
    pub target: Vec<BrokerId>,
    pub added: Vec<(BrokerId, Entity)>,
}

/// The controller's metadata log, as far as leadership goes: its end, and the records on their
/// way to the brokers.
#[derive(Clone, Debug, Default)]
pub struct MetadataLog {
    /// The offset of the last record written.
    pub end: u64,
    /// (when it reaches the brokers, offset), in order.
    pub deliveries: VecDeque<(u64, u64)>,
    /// (when, broker, offset) for slowed brokers, whose records come `SlowBroker`'s extra delay
    /// later.
    pub slow_deliveries: Vec<(u64, BrokerId, u64)>,
}

impl MetadataLog {
    /// When the next record reaches some broker.
    pub fn next_delivery(&self) -> Option<u64> {
        let slow = self.slow_deliveries.iter().map(|(at, ..)| *at).min();
        match (self.deliveries.front().map(|(at, _)| *at), slow) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl MetadataLog {
    /// Writes a record; it reaches the brokers after `latency_ms`. Returns its offset.
    pub(super) fn append(&mut self, now: u64, latency_ms: u64) -> u64 {
        self.end += 1;
        self.deliveries.push_back((now + latency_ms, self.end));
        self.end
    }
}

impl Controller {
    pub fn new(config: &ClusterConfig) -> Self {
        let n = config.brokers as usize + 1;
        Controller {
            last_heartbeat_ms: vec![0; n],
            registered: vec![0; n],
            refused: vec![0; n],
            preferred_election_requested: false,
            // Every partition starts led by its first replica: nothing to balance.
            next_balance_check_ms: None,
            next_unclean_check_ms: None,
            new_brokers: Vec::new(),
            requested_partitions: Vec::new(),
            requested: Vec::new(),
            reassigning: Vec::new(),
            metadata: MetadataLog::default(),
            reported_offset: vec![0; n],
            controlled_shutdown_offset: vec![None; n],
        }
    }
}
