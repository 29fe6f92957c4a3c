//! A consumer group as its coordinator keeps it (`ClassicGroup`, `ConsumerGroup`): its state,
//! members, generation or epochs, assignment and committed offsets. The coordinator's rules are
//! in `group_coordinator.rs` (the classic protocol) and `consumer_protocol.rs` (KIP-848's).

use std::collections::{BTreeMap, BTreeSet};

use bevy_ecs::prelude::*;

use super::events::{EventKind, EventLog};
use super::protocol::GroupResponseBody;
use crate::assignor::{Assignment, TopicPartition};
use crate::scenario::ConsumerGroupConfig;

/// A new member's JoinGroup may wait this long before the member is removed, in place of its
/// session timeout (`GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`, applied in
/// `GroupMetadataManager.addMemberThenRebalanceOrCompleteJoin`).
pub const NEW_MEMBER_JOIN_TIMEOUT_MS: u64 = 5 * 60 * 1000;

/// A group's state: the classic protocol's (`ClassicGroupState`), and the consumer protocol's
/// (`ConsumerGroup.ConsumerGroupState`: Assigning while the target assignment trails the group
/// epoch, Reconciling while some member is not at the target yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Assigning,
    Reconciling,
    Stable,
}

impl GroupState {
    /// The name Kafka's tools print.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Assigning => "Assigning",
            GroupState::Reconciling => "Reconciling",
            GroupState::Stable => "Stable",
        }
    }
}

/// A member as the coordinator knows it.
#[derive(Debug, Clone)]
pub struct GroupMember {
    pub id: String,
    pub instance_id: Option<String>,
    pub topics: Vec<String>,
    pub owned: Vec<TopicPartition>,
    pub last_heartbeat_ms: u64,
    /// Rejoined in the rebalance under way: its JoinGroup waits at the coordinator.
    pub joined: bool,
    /// Joined for the first time and not through a join phase yet (`ClassicGroupMember.isNew`).
    pub is_new: bool,
    /// Its SyncGroup waits at the coordinator for the leader's assignment.
    pub awaiting_sync: bool,
    /// In a consumer-protocol group: its epochs and assignment.
    pub reconciliation: Reconciliation,
}

impl GroupMember {
    pub fn new(id: String, instance_id: Option<String>, topics: Vec<String>, now: u64) -> Self {
        GroupMember {
            id,
            instance_id,
            topics,
            owned: Vec::new(),
            last_heartbeat_ms: now,
            joined: true,
            is_new: true,
            awaiting_sync: false,
            reconciliation: Reconciliation::default(),
        }
    }

    /// `ClassicGroupMember.hasSatisfiedHeartbeat`: a member waiting in a join or a sync needs
    /// no heartbeat, since its client sends none then; a new one still times out.
    pub(super) fn has_satisfied_heartbeat(&self, state: GroupState) -> bool {
        !self.is_new
            && ((self.joined && state == GroupState::PreparingRebalance) || self.awaiting_sync)
    }

    /// When the member is removed if it sends nothing: a new member's JoinGroup may wait
    /// longer than a session.
    pub(super) fn heartbeat_deadline_ms(&self, session_timeout_ms: u64) -> u64 {
        self.last_heartbeat_ms
            + if self.is_new {
                NEW_MEMBER_JOIN_TIMEOUT_MS
            } else {
                session_timeout_ms
            }
    }
}

/// A consumer group, at its coordinator.
#[derive(Clone, Component, Debug)]
pub struct ConsumerGroup {
    pub index: u32,
    pub name: String,
    pub config: ConsumerGroupConfig,
    /// Ordinals (in `Cluster::partitions`) of its topics' partitions, topic by topic.
    pub partitions: Vec<u32>,
    /// The `__consumer_offsets` partition that holds the group.
    pub offsets_partition: Entity,
    /// The leader epoch of the offsets partition the committed offsets were loaded at.
    pub loaded_epoch: u32,
    pub state: GroupState,
    /// The generation; in a consumer-protocol group, the group epoch.
    pub generation: u32,
    /// Consumer protocol: the epoch of the target assignment, which trails the group epoch until
    /// a heartbeat computes it.
    pub assignment_epoch: u32,
    /// Consumer protocol: the target assignment by member, as partition ordinals.
    pub target: BTreeMap<String, BTreeSet<u32>>,
    pub leader: Option<String>,
    /// Members in the order they joined.
    pub members: Vec<GroupMember>,
    /// When the join phase ends at the latest.
    pub join_deadline_ms: u64,
    /// An empty group's first rebalance waits for more members until then.
    pub initial_delay_until_ms: u64,
    pub assignment: Assignment,
    /// Committed offsets by partition ordinal: the next offset to read, as of the offsets
    /// partition's high watermark. Written only through [`ConsumerGroup::commit`] and
    /// [`ConsumerGroup::load_committed`], which count the writes.
    committed: BTreeMap<u32, u64>,
    /// The offset of the offsets partition's log up to which its commit records are in
    /// `committed`: the coordinator's last committed offset (`CoordinatorRuntime`).
    pub applied_to: u64,
    /// Committed offsets with every commit record the coordinator holds, committed or not: what
    /// a consumer's OffsetFetch reads. It asks with `requireStable`, which Kafka serves from the
    /// latest state and answers once that state is committed
    /// (`GroupCoordinatorService.fetchOffsets`, a write operation).
    pub(super) latest: BTreeMap<u32, u64>,
    /// How many times a coordinator loaded the group: a load serves the offsets as of the new
    /// leader's high watermark, which may trail the old leader's.
    pub loads: u64,
    /// How many times the committed offsets were written: the invariant check looks at a group's
    /// offsets again only after a write.
    committed_writes: u64,
    pub rebalances: u64,
    /// A classic group's leader sent its assignment: the group is stored with it, and becomes
    /// stable once that record is committed.
    pub pending_sync: Option<PendingSync>,
}

/// The classic leader's SyncGroup, written and waiting for the offsets partition's high
/// watermark (`GroupMetadataManager.classicGroupSyncToClassicGroup`, its `appendFuture`).
#[derive(Debug, Clone)]
pub struct PendingSync {
    pub generation: u32,
    pub assignment: Assignment,
    /// Where the group's record ends in the offsets partition.
    pub ends_at: u64,
    /// When the write fails (`offsets.commit.timeout.ms`).
    pub deadline_ms: u64,
}

impl ConsumerGroup {
    /// Committed offsets by partition ordinal: the next offset to read, as of the offsets
    /// partition's high watermark (what `kafka-consumer-groups` reads).
    pub fn committed(&self) -> &BTreeMap<u32, u64> {
        &self.committed
    }

    /// A consumer's OffsetFetch of a partition: the latest state ([`ConsumerGroup::latest`]).
    pub fn offset_fetch(&self, partition: u32) -> Option<u64> {
        self.latest
            .get(&partition)
            .or_else(|| self.committed.get(&partition))
            .copied()
    }

    /// How many times the committed offsets were written.
    pub fn committed_writes(&self) -> u64 {
        self.committed_writes
    }

    /// An offset commit has been written to the offsets partition's committed log.
    pub(super) fn commit(&mut self, partition: u32, offset: u64) {
        self.committed.insert(partition, offset);
        self.committed_writes += 1;
    }

    /// The committed offsets a new coordinator read from its log.
    pub(super) fn load_committed(&mut self, committed: BTreeMap<u32, u64>) {
        self.committed = committed;
        self.committed_writes += 1;
    }

    pub fn new(
        index: u32,
        config: &ConsumerGroupConfig,
        partitions: Vec<u32>,
        offsets_partition: Entity,
    ) -> Self {
        ConsumerGroup {
            index,
            name: config.name.clone(),
            config: config.clone(),
            partitions,
            offsets_partition,
            loaded_epoch: 0,
            state: GroupState::Empty,
            generation: 0,
            assignment_epoch: 0,
            target: BTreeMap::new(),
            leader: None,
            members: Vec::new(),
            join_deadline_ms: 0,
            initial_delay_until_ms: 0,
            assignment: Assignment::new(),
            committed: BTreeMap::new(),
            applied_to: 0,
            latest: BTreeMap::new(),
            loads: 0,
            committed_writes: 0,
            rebalances: 0,
            pending_sync: None,
        }
    }

    /// A member's part of the current generation's assignment, as SyncGroup answers it.
    pub(super) fn sync_body(&self, member: &str) -> GroupResponseBody {
        GroupResponseBody::SyncGroup {
            generation: self.generation,
            assignment: self.assignment.get(member).cloned().unwrap_or_default(),
        }
    }

    pub(super) fn member(&self, id: &str) -> Option<usize> {
        self.members.iter().position(|m| m.id == id)
    }

    /// Moves to PreparingRebalance: every member must rejoin.
    pub(super) fn start_rebalance(
        &mut self,
        now: u64,
        events: &mut EventLog,
        initial_delay_ms: u64,
    ) {
        if self.state == GroupState::PreparingRebalance {
            return;
        }
        if self.state == GroupState::Empty {
            self.initial_delay_until_ms = now + initial_delay_ms;
        }
        self.state = GroupState::PreparingRebalance;
        self.join_deadline_ms = now + self.config.max_poll_interval_ms;
        self.rebalances += 1;
        for m in &mut self.members {
            m.joined = false;
            m.awaiting_sync = false;
        }
        events.push(
            now,
            EventKind::RebalanceStarted {
                group: self.name.clone(),
                generation: self.generation,
            },
        );
    }
}

/// Where a member stands in reconciling to the target assignment (`modern.MemberState`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReconcileState {
    /// At its epoch's assignment.
    #[default]
    Stable,
    /// Must give up `pending_revocation` before it moves to the next epoch.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions another member has yet to release.
    UnreleasedPartitions,
}

/// A consumer-protocol member's assignment at the coordinator (`ConsumerGroupMember`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciliation {
    pub member_epoch: u32,
    pub previous_member_epoch: u32,
    pub state: ReconcileState,
    /// Partition ordinals it may consume.
    pub assigned: BTreeSet<u32>,
    /// Partition ordinals it must give up; they are still its own until it does.
    pub pending_revocation: BTreeSet<u32>,
    /// Its `max.poll.interval.ms`: how long it may take to revoke.
    pub rebalance_timeout_ms: u64,
    /// It is fenced at this time if it is still in this member epoch (the rebalance timeout,
    /// armed when it is asked to revoke).
    pub revoke_deadline: Option<(u64, u32)>,
}

impl Reconciliation {
    /// `ConsumerGroupMember.isReconciledTo`.
    pub(super) fn is_reconciled_to(&self, target_epoch: u32) -> bool {
        self.state == ReconcileState::Stable && self.member_epoch == target_epoch
    }

    /// `ConsumerGroupMember.Builder.updateMemberEpoch`.
    pub(super) fn update_member_epoch(&mut self, epoch: u32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }
}
