//! The cluster's entities: brokers, partitions and their replicas (each with its log); `load.rs`
//! builds them from a scenario.

use std::collections::VecDeque;

use bevy_ecs::prelude::*;

use crate::scenario::ClusterConfig;

use super::segments::{LogConfig, Segments};

/// Brokers are numbered from 1, as `node.id`s usually are.
pub type BrokerId = u32;

#[derive(Clone, Component, Debug)]
pub struct Broker {
    pub id: BrokerId,
    /// The broker's process runs and is registered: it serves requests and replicates.
    pub alive: bool,
    /// The process runs again after a crash but its new incarnation is not registered yet: it
    /// only asks the controller to register it (`BrokerLifecycleManager`).
    pub starting: bool,
    /// Registrations refused in a row (the back-off before the next grows with them).
    pub failed_registrations: u32,
    /// Fenced by the controller (its heartbeats stopped): it may neither lead nor join an ISR.
    pub fenced: bool,
    /// Counts the process's starts; a new one registers anew with the controller.
    pub incarnation: u32,
    pub next_heartbeat_ms: u64,
    /// The process died without a clean shutdown and has not registered since (KIP-966 takes such
    /// a broker out of the eligible leader replicas).
    pub unclean_shutdown: bool,
    /// Its replica fetchers, one per leader broker it follows partitions from.
    pub fetchers: Vec<(BrokerId, Fetcher)>,
    /// How far it has applied the controller's metadata log: who leads each partition, as far as
    /// this broker knows ([`Partition::leader_seen`]).
    pub metadata_offset: u64,
    /// How far it has acted on the leaderships in that log: started the epochs it leads.
    pub leaderships_applied: u64,
    /// `BrokerLifecycleManager`'s PENDING_CONTROLLED_SHUTDOWN: its heartbeats ask to shut down
    /// (`wantShutDown`) until the controller answers `shouldShutDown`; `Some(true)` once a first
    /// answer said to wait.
    pub pending_shutdown: Option<bool>,
    /// The controller's CONTROLLED_SHUTDOWN state of the broker (`BrokerHeartbeatManager`): it
    /// may no longer lead or join an ISR.
    pub in_controlled_shutdown: bool,
    /// When its log manager next deletes what retention no longer keeps.
    pub next_retention_check_ms: u64,
    /// When its log cleaner next looks for a compacted log to clean.
    pub next_cleaner_check_ms: u64,
}

impl Broker {
    pub fn new(id: BrokerId) -> Self {
        Broker {
            id,
            alive: true,
            starting: false,
            failed_registrations: 0,
            fenced: false,
            incarnation: 0,
            next_heartbeat_ms: 0,
            unclean_shutdown: false,
            fetchers: Vec::new(),
            metadata_offset: 0,
            leaderships_applied: 0,
            pending_shutdown: None,
            in_controlled_shutdown: false,
            next_retention_check_ms: super::retention::INITIAL_TASK_DELAY_MS,
            next_cleaner_check_ms: 0,
        }
    }

    /// The fetcher that follows partitions from `leader`.
    pub fn fetcher(&mut self, leader: BrokerId) -> &mut Fetcher {
        let i = match self.fetchers.iter().position(|(l, _)| *l == leader) {
            Some(i) => i,
            None => {
                self.fetchers.push((leader, Fetcher::default()));
                self.fetchers.sort_by_key(|(l, _)| *l);
                self.fetchers
                    .iter()
                    .position(|(l, _)| *l == leader)
                    .expect("just added")
            }
        };
        &mut self.fetchers[i].1
    }

    /// `online`, `starting`, `crashed`, `stopped` (after a controlled shutdown), `shutting down`
    /// or `fenced`, as the report names the states.
    pub fn state(&self) -> &'static str {
        if self.starting {
            "starting"
        } else if !self.alive && self.unclean_shutdown {
            "crashed"
        } else if !self.alive {
            "stopped"
        } else if self.pending_shutdown.is_some() {
            "shutting down"
        } else if self.fenced {
            "fenced"
        } else {
            "online"
        }
    }

    /// May lead a partition or be in an ISR, as far as the controller knows
    /// (`Partition.isReplicaIsrEligible`, `PartitionChangeBuilder`).
    pub fn eligible(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }
}

/// What the leader's rules need to know of every broker, by id (index 0 unused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerView {
    pub alive: bool,
    /// Restarted, waiting for the controller to register it: it hears only the controller.
    pub starting: bool,
    pub eligible: bool,
    /// How far it has applied the controller's metadata log.
    pub metadata_offset: u64,
}

/// The brokers' views, indexed by id (index 0 unused). In [`super::Runtime`], the views once the
/// controller's phase has run: no later phase of a step changes what they hold, so those phases
/// read them there instead of building them again (`Phases::run` refreshes them).
#[derive(Clone, Debug)]
pub struct BrokerViews {
    views: [BrokerView; crate::scenario::limits::BROKERS as usize + 1],
    len: usize,
}

impl std::ops::Deref for BrokerViews {
    type Target = [BrokerView];

    fn deref(&self) -> &[BrokerView] {
        &self.views[..self.len]
    }
}

impl Default for BrokerViews {
    fn default() -> Self {
        BrokerViews {
            views: [BrokerView::default(); crate::scenario::limits::BROKERS as usize + 1],
            len: 0,
        }
    }
}

impl BrokerViews {
    /// The views, which debug builds check against `brokers` as they are now.
    pub fn checked<'a>(&self, brokers: impl Iterator<Item = &'a Broker>) -> &Self {
        debug_assert_eq!(
            *broker_views(brokers),
            **self,
            "the brokers' views are current"
        );
        self
    }
}

pub fn broker_views<'a>(brokers: impl Iterator<Item = &'a Broker>) -> BrokerViews {
    let mut views = BrokerViews {
        views: [BrokerView::default(); crate::scenario::limits::BROKERS as usize + 1],
        len: 0,
    };
    for b in brokers {
        let i = b.id as usize;
        views.len = views.len.max(i + 1);
        views.views[i] = BrokerView {
            alive: b.alive,
            starting: b.starting,
            eligible: b.eligible(),
            metadata_offset: b.metadata_offset,
        };
    }
    views
}

/// A topic's settings; its partitions are entities.
#[derive(Debug, Clone)]
pub struct Topic {
    pub name: String,
    pub partitions: Vec<Entity>,
    pub replication_factor: u32,
    pub min_insync_replicas: u32,
}

/// Where the entities of the loaded scenario are, in the scenario's order.
#[derive(Clone, Resource, Debug)]
pub struct Cluster {
    pub scenario: String,
    pub seed: u64,
    pub config: ClusterConfig,
    /// Broker `id` is at `brokers[id - 1]`.
    pub brokers: Vec<Entity>,
    /// The active KRaft controller.
    pub controller: Entity,
    pub topics: Vec<Topic>,
    /// Every partition, topic by topic.
    pub partitions: Vec<Entity>,
    pub producers: Vec<Entity>,
    pub groups: Vec<Entity>,
    /// Every consumer ever started, in order (a node index on the wire).
    pub consumers: Vec<Entity>,
    /// Counts the changes of any partition's replica set (reassignments), so that what is kept
    /// of who follows what is computed again.
    pub assignments_version: u64,
}

impl Cluster {
    /// A partition by its ordinal, as the assignors name it: (topic, index).
    pub fn topic_partition(
        &self,
        partitions: &Query<&Partition>,
        ordinal: u32,
    ) -> crate::assignor::TopicPartition {
        let p = partitions
            .get(self.partitions[ordinal as usize])
            .expect("partition");
        (self.topics[p.topic].name.clone(), p.index)
    }

    /// The ordinal of a partition the assignors name.
    pub fn ordinal_of(&self, tp: &crate::assignor::TopicPartition) -> Option<u32> {
        let topic = self.topics.iter().find(|t| t.name == tp.0)?;
        let entity = *topic.partitions.get(tp.1 as usize)?;
        self.partitions
            .iter()
            .position(|e| *e == entity)
            .map(|i| i as u32)
    }

    /// A partition as Kafka names it: `topic-index`.
    pub fn partition_name(&self, partition: &Partition) -> String {
        format!("{}-{}", self.topics[partition.topic].name, partition.index)
    }
}

/// A partition's reassignment under way (`PartitionReassignmentReplicas`): its replicas are the
/// target's followed by those it removes until every target replica is in the ISR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reassignment {
    /// The replicas it will have, the preferred leader first.
    pub target: Vec<BrokerId>,
    /// In the target, not among the replicas before (ascending).
    pub adding: Vec<BrokerId>,
    /// Among the replicas before, not in the target (ascending).
    pub removing: Vec<BrokerId>,
}

/// One partition of a topic: who leads it, its ISR and its replicas. The leader's view of its
/// followers is a component of its own beside it ([`FollowerStates`]): that changes at every
/// fetch, and a change to this one means the partition's leadership, ISR or replicas changed.
#[derive(Clone, Component, Debug)]
pub struct Partition {
    pub topic: usize,
    pub index: u32,
    /// Position in `Cluster::partitions`.
    pub ordinal: u32,
    /// Replica brokers, preferred leader first.
    pub assignment: Vec<BrokerId>,
    /// The replica entities, in assignment order.
    pub replicas: Vec<Entity>,
    pub leader: Option<BrokerId>,
    pub leader_epoch: u32,
    /// In-sync replicas, kept in assignment order.
    pub isr: Vec<BrokerId>,
    /// Eligible leader replicas (KIP-966): left the ISR while it was below `min.insync.replicas`,
    /// so they hold everything committed.
    pub elr: Vec<BrokerId>,
    /// `unclean.leader.election.enable` of the topic.
    pub unclean_leader_election: bool,
    /// Whether the current leader was elected uncleanly.
    pub elected_uncleanly: bool,
    /// Since when the partition has had no leader.
    pub offline_since_ms: Option<u64>,
    /// A reassignment under way (KIP-455).
    pub reassignment: Option<Reassignment>,
    /// Since when the controller's leader has been down or cut off from everyone, not yet fenced:
    /// the partition counts as online (OfflinePartitionsCount 0), yet nothing can write to it.
    pub dead_leader_since_ms: Option<u64>,
    pub min_insync_replicas: u32,
    /// The topic's `segment.*`, `retention.*` and `cleanup.policy`.
    pub log: LogConfig,
    /// Its leadership changes in the controller's metadata log, oldest first: a broker or client
    /// that has seen the log up to some offset sees the last of them at or below it.
    pub history: Vec<LeaderRecord>,
}

/// A partition's leader and epoch from one offset of the controller's metadata log on
/// (`PartitionChangeRecord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderRecord {
    pub offset: u64,
    pub leader: Option<BrokerId>,
    pub leader_epoch: u32,
}

/// What the leader knows of each replica of a partition, in assignment order (the leader's own
/// entry unused), learnt from fetch requests (`Partition.updateFollowerFetchState`; Kafka's
/// `Partition.remoteReplicasMap`). On the partition's entity.
#[derive(Clone, Component, Debug, Default)]
pub struct FollowerStates(pub Vec<FollowerState>);

impl FollowerStates {
    /// A new partition's: every replica in sync, as of `now`.
    pub fn new(replicas: usize, now: u64) -> Self {
        FollowerStates(vec![FollowerState::reset(true, now); replicas])
    }
}

/// The leader's record of one follower (`ReplicaState` in Kafka's `Replica.scala`). Kafka keeps
/// wall-clock times and 0 for "never"; sim time starts at 0, so "never" is `None` here.
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowerState {
    pub log_end_offset: u64,
    pub last_caught_up_ms: Option<u64>,
    pub last_fetch_ms: Option<u64>,
    pub last_fetch_leader_log_end_offset: u64,
}

impl FollowerState {
    /// In sync when the leader takes over (`Replica.resetReplicaState`: caught up now if in the
    /// ISR, else never).
    pub fn reset(in_isr: bool, now: u64) -> Self {
        FollowerState {
            last_caught_up_ms: in_isr.then_some(now),
            ..FollowerState::default()
        }
    }

    /// `ReplicaState.isCaughtUp`: at the leader's end, or caught up within the lag time.
    pub fn is_caught_up(&self, leader_leo: u64, now: u64, lag_max_ms: u64) -> bool {
        self.log_end_offset == leader_leo
            || self
                .last_caught_up_ms
                .is_some_and(|t| now.saturating_sub(t) <= lag_max_ms)
    }

    /// A fetch from this follower reached the leader at `now`.
    pub fn fetched_at(&self, now: u64) -> bool {
        self.last_fetch_ms == Some(now)
    }

    /// `Replica.updateFetchStateOrThrow`: a fetch at `fetch_offset` reached the leader at `now`.
    pub fn record_fetch(&mut self, fetch_offset: u64, leader_leo: u64, now: u64) {
        if fetch_offset >= leader_leo {
            self.last_caught_up_ms = self.last_caught_up_ms.max(Some(now));
        } else if fetch_offset >= self.last_fetch_leader_log_end_offset {
            self.last_caught_up_ms = self.last_caught_up_ms.max(self.last_fetch_ms);
        }
        self.log_end_offset = fetch_offset;
        self.last_fetch_leader_log_end_offset =
            self.last_fetch_leader_log_end_offset.max(leader_leo);
        self.last_fetch_ms = Some(now);
    }
}

/// The settings a partition takes from its topic when it is created.
#[derive(Debug, Clone, Copy)]
pub struct TopicSettings {
    /// `min.insync.replicas`.
    pub min_insync_replicas: u32,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election: bool,
    /// Segments, retention and cleanup policy.
    pub log: LogConfig,
}

impl Partition {
    pub fn position(&self, broker: BrokerId) -> Option<usize> {
        self.assignment.iter().position(|b| *b == broker)
    }

    pub fn replica_on(&self, broker: BrokerId) -> Option<Entity> {
        self.position(broker).map(|i| self.replicas[i])
    }

    pub fn leader_replica(&self) -> Option<Entity> {
        self.leader.and_then(|b| self.replica_on(b))
    }

    /// The leader and epoch as seen by one who has applied the metadata log up to `offset`.
    /// A partition led by its first replica with every replica in sync, in epoch 0, created by
    /// the metadata record at `created_offset`.
    pub fn new(
        topic: usize,
        index: u32,
        ordinal: u32,
        assignment: Vec<BrokerId>,
        replicas: Vec<Entity>,
        settings: TopicSettings,
        created_offset: u64,
    ) -> Self {
        let TopicSettings {
            min_insync_replicas,
            unclean_leader_election,
            log,
        } = settings;
        Partition {
            topic,
            index,
            ordinal,
            leader: assignment.first().copied(),
            leader_epoch: 0,
            isr: assignment.clone(),
            elr: Vec::new(),
            unclean_leader_election,
            elected_uncleanly: false,
            offline_since_ms: None,
            dead_leader_since_ms: None,
            reassignment: None,
            history: vec![LeaderRecord {
                offset: created_offset,
                leader: assignment.first().copied(),
                leader_epoch: 0,
            }],
            assignment,
            replicas,
            min_insync_replicas,
            log,
        }
    }

    /// Makes `brokers` the replicas, in order (a reassignment's steps): each kept replica keeps
    /// its entity and what the leader knows of it, each new one takes its entity from `added`
    /// and starts outside the ISR; the ISR and ELR keep only replicas.
    pub fn set_replicas(
        &mut self,
        followers: &mut FollowerStates,
        brokers: &[BrokerId],
        added: &[(BrokerId, Entity)],
        now: u64,
    ) {
        let (replicas, states) = brokers
            .iter()
            .map(|b| match self.position(*b) {
                Some(i) => (self.replicas[i], followers.0[i]),
                None => {
                    let (_, e) = added
                        .iter()
                        .find(|(a, _)| a == b)
                        .expect("an entity for each added replica");
                    (*e, FollowerState::reset(false, now))
                }
            })
            .unzip();
        self.assignment = brokers.to_vec();
        self.replicas = replicas;
        followers.0 = states;
        self.isr.retain(|b| brokers.contains(b));
        self.elr.retain(|b| brokers.contains(b));
        self.sort_isr();
    }

    /// Whether a broker that has applied the metadata log up to `offset` knows the partition
    /// exists (one added by `AddPartitions` is created by a record in the log).
    pub fn known_at(&self, offset: u64) -> bool {
        self.history[0].offset <= offset
    }

    pub fn leader_seen(&self, offset: u64) -> LeaderRecord {
        *self
            .history
            .iter()
            .rev()
            .find(|r| r.offset <= offset)
            .unwrap_or(&self.history[0])
    }

    /// Whether `broker`, which has applied the metadata log up to `offset`, takes itself for the
    /// partition's leader, and in which epoch. A leader cut off from the controller goes on
    /// leading in its old epoch until it learns otherwise.
    pub fn leads_as_seen(&self, broker: BrokerId, offset: u64) -> Option<u32> {
        let seen = self.leader_seen(offset);
        (seen.leader == Some(broker)).then_some(seen.leader_epoch)
    }

    /// The controller's leader, once it has learnt that it leads (a broker acts on its own
    /// metadata: until then it refuses what only the leader does).
    pub fn acting_leader(&self, brokers: &[BrokerView]) -> Option<BrokerId> {
        self.leader.filter(|&l| {
            self.leads_as_seen(l, brokers[l as usize].metadata_offset) == Some(self.leader_epoch)
        })
    }

    /// Whether `broker`'s view of the leadership is the controller's latest.
    pub fn is_current(&self, offset: u64) -> bool {
        self.history.last().is_none_or(|r| r.offset <= offset)
    }

    pub fn in_isr(&self, broker: BrokerId) -> bool {
        self.isr.contains(&broker)
    }

    /// `min.insync.replicas`, capped by the replica count (`Partition.effectiveMinIsr`).
    pub fn effective_min_isr(&self) -> usize {
        (self.min_insync_replicas as usize).min(self.assignment.len())
    }

    /// Puts the ISR back in assignment order after a change.
    pub fn sort_isr(&mut self) {
        let assignment = &self.assignment;
        self.isr
            .sort_by_key(|b| assignment.iter().position(|a| a == b).unwrap_or(usize::MAX));
    }

    /// `Partition.maybeIncrementLeaderHW`: the smallest log end offset among the leader, the ISR
    /// and eligible followers caught up enough to be about to join it; never while the ISR is
    /// below the effective `min.insync.replicas` (Kafka 3.7+), never backwards. Returns the new
    /// high watermark when it moves.
    pub fn next_leader_hw(
        &self,
        followers: &FollowerStates,
        leader: &Replica,
        brokers: &[BrokerView],
        now: u64,
        lag_max_ms: u64,
    ) -> Option<u64> {
        if self.isr.len() < self.effective_min_isr() {
            return None;
        }
        let leader_leo = leader.log_end_offset();
        let mut new_hw = leader_leo;
        for (i, broker) in self.assignment.iter().enumerate() {
            if Some(*broker) == self.leader {
                continue;
            }
            let f = &followers.0[i];
            if f.log_end_offset < new_hw
                && (self.in_isr(*broker)
                    || (f.is_caught_up(leader_leo, now, lag_max_ms)
                        && brokers[*broker as usize].eligible))
            {
                new_hw = f.log_end_offset;
            }
        }
        (new_hw > leader.high_watermark).then_some(new_hw)
    }
}

/// One record in a replica's log, in 24 bytes: a long run's logs hold millions. Its offset is
/// its index: retention frees what lies below the log start, and compaction leaves a record in
/// place, marked removed in its replica's [`super::cleaner::Cleaned`]. What Kafka keeps once
/// per batch (the producer's id and epoch, the base sequence, the sizes) is packed into the
/// record's own words. Its leader epoch is its replica's epoch cache's to say
/// ([`Replica::epochs`]); the record keeps only its low bits, to check the cache by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The record's id in the low [`ID_BITS`]: unique over the run, which `send()` made it (a
    /// retried duplicate has the same id), its producer in its high bits
    /// ([`super::ledger::producer_of`]); 0 in `__consumer_offsets`. Above it, a produced record's
    /// producer epoch (15 bits: Kafka's is a positive `short`) and at the top whether it belongs
    /// to a transaction, or a coordinator's record's leader epoch mark ([`EPOCH_MARK_BITS`]).
    word: u64,
    /// Written out by its producer's [`super::producer::Producer::key_text`]. In
    /// `__consumer_offsets`, what the coordinator wrote about (the group, and the partition of
    /// a committed offset), as Kafka's `OffsetCommitKey` and `GroupMetadataKey` say it.
    pub key: super::keys::Key,
    /// A produced record: its bytes, whether it starts its batch, whether it is a tombstone,
    /// its sequence and its leader epoch mark ([`Packed`]). In `__consumer_offsets`: the
    /// committed offset.
    packed: u64,
}

/// A record's id fits this many bits: its producer's index, then its send number
/// ([`super::ledger::record_id`]).
pub const ID_BITS: u32 = 48;
const ID_MASK: u64 = (1 << ID_BITS) - 1;
/// The top bit of a produced record's word: written in a transaction (`RecordBatch.isTransactional`).
const TRANSACTIONAL: u64 = 1 << 63;
/// A producer epoch is a positive `short` in Kafka: 15 bits.
const PRODUCER_EPOCH_MASK: u64 = (1 << 15) - 1;
/// The largest producer epoch (`Short.MAX_VALUE`).
pub const MAX_PRODUCER_EPOCH: u16 = PRODUCER_EPOCH_MASK as u16;
/// The send number no record reaches: a transaction marker's id, with its producer above it.
/// (Not the largest: the last producer's marker at epoch `2^15 - 1` would then be all ones, the
/// placeholder's word.)
const MARKER_SEND_NUMBER: u64 = (1 << super::ledger::SEND_NUMBER_BITS) - 2;
/// The bytes the model counts for a transaction marker: its control record's key (version and
/// type, 4 bytes) and value (version and coordinator epoch, 6 bytes) with the record's framing
/// (`EndTransactionMarker`, `DefaultRecord`); the batch header is left out, as for every record.
const MARKER_BYTES: u32 = 17;

/// The low bits of a record's leader epoch that it keeps: enough for the epoch-cache check
/// (`invariants`) to tell a lost or misplaced epoch from the right one.
pub const EPOCH_MARK_BITS: u32 = 9;
const EPOCH_MARK_MASK: u64 = (1 << EPOCH_MARK_BITS) - 1;

/// The bits of a produced record's word: bytes, whether it starts its batch, whether it is a
/// tombstone, its sequence plus one (0 for none), then its leader epoch mark.
struct Packed;

impl Packed {
    /// `limits::RECORD_BYTES` (1 MiB) fits in 21 bits.
    const BYTES_BITS: u32 = 21;
    const BYTES_MASK: u64 = (1 << Self::BYTES_BITS) - 1;
    const FIRST: u64 = 1 << Self::BYTES_BITS;
    const TOMBSTONE: u64 = Self::FIRST << 1;
    const SEQUENCE_SHIFT: u32 = Self::BYTES_BITS + 2;
    const EPOCH_SHIFT: u32 = Self::SEQUENCE_SHIFT + u32::BITS;
}

const _: () = assert!(
    crate::scenario::limits::RECORD_BYTES as u64 <= Packed::BYTES_MASK
        && Packed::EPOCH_SHIFT + EPOCH_MARK_BITS == u64::BITS
        && ID_BITS + u16::BITS == u64::BITS
        && EPOCH_MARK_BITS <= u16::BITS,
    "a record's bytes, batch start, tombstone bit, sequence and epoch mark must fit in its word, \
     its id and producer epoch in the other"
);

/// The bytes the model counts for a record of `__consumer_offsets`.
const COORDINATOR_RECORD_BYTES: u32 = 64;

impl Record {
    /// A record a producer sent: the `index`th of a batch whose first sequence is
    /// `base_sequence` (`None` without idempotence), appended in `leader_epoch`.
    pub fn produced(
        id: u64,
        key: super::keys::Key,
        leader_epoch: u32,
        base_sequence: Option<i32>,
        producer_epoch: u16,
        index: usize,
        bytes: u32,
    ) -> Record {
        debug_assert!(u64::from(bytes) <= Packed::BYTES_MASK && id <= ID_MASK);
        debug_assert!(u64::from(producer_epoch) <= PRODUCER_EPOCH_MASK);
        // A sequence is never negative (`DefaultRecordBatch.incrementSequence` wraps to 0), so
        // it and one more fit in 32 bits.
        let sequence = base_sequence.map_or(0, |s| s as u32 + index as u32 + 1);
        Record {
            word: id | u64::from(producer_epoch) << ID_BITS,
            key,
            packed: u64::from(bytes)
                | if index == 0 { Packed::FIRST } else { 0 }
                | u64::from(sequence) << Packed::SEQUENCE_SHIFT
                | (u64::from(leader_epoch) & EPOCH_MARK_MASK) << Packed::EPOCH_SHIFT,
        }
    }

    /// The same record under another id: a divergent copy of it, for tests of the checks.
    pub fn renumbered(self, id: u64) -> Record {
        debug_assert!(id <= ID_MASK);
        Record {
            word: self.word & !ID_MASK | id,
            ..self
        }
    }

    /// The same record, written in its producer's transaction.
    pub fn in_transaction(mut self) -> Record {
        if self.key.coordinator_of().is_none() {
            self.word |= TRANSACTIONAL;
        }
        self
    }

    /// Whether it belongs to a transaction (a marker does, as Kafka's control batches are
    /// transactional).
    pub fn is_transactional(&self) -> bool {
        !self.is_placeholder()
            && self.key.coordinator_of().is_none()
            && self.word & TRANSACTIONAL != 0
    }

    /// A transaction marker (`EndTransactionMarker`): the control record that ends `producer`'s
    /// transaction in this partition, committed or aborted, written by the leader in
    /// `leader_epoch` at its transaction coordinator's request.
    pub fn marker(producer: u32, producer_epoch: u16, commit: bool, leader_epoch: u32) -> Record {
        let id = super::ledger::record_id(producer, MARKER_SEND_NUMBER);
        Record {
            word: id | u64::from(producer_epoch) << ID_BITS | TRANSACTIONAL,
            key: super::keys::Key::marker(commit),
            packed: u64::from(MARKER_BYTES)
                | (u64::from(leader_epoch) & EPOCH_MARK_MASK) << Packed::EPOCH_SHIFT,
        }
    }

    /// For a transaction marker, whether it commits; `None` for any other record. A marker is
    /// never given to an application.
    pub fn control(&self) -> Option<bool> {
        self.key.marker_of()
    }

    /// The same record with a null value: a tombstone, which deletes its key from a compacted
    /// log.
    pub fn tombstone(mut self) -> Record {
        if self.key.coordinator_of().is_none() {
            self.packed |= Packed::TOMBSTONE;
        }
        self
    }

    /// Whether its value is null (a coordinator's records never are).
    pub fn is_tombstone(&self) -> bool {
        self.key.coordinator_of().is_none() && self.packed & Packed::TOMBSTONE != 0
    }

    /// A record a group's coordinator wrote to `__consumer_offsets` in `leader_epoch`.
    pub fn coordinator(written: CoordinatorRecord, leader_epoch: u32) -> Record {
        Record {
            word: (u64::from(leader_epoch) & EPOCH_MARK_MASK) << ID_BITS,
            key: super::keys::Key::coordinator(written.group, written.offset.map(|o| o.0)),
            packed: written.offset.map_or(0, |o| o.1),
        }
    }

    /// What keeps a place that holds no record: below the start of a log that started again
    /// later, or in a chunk of places compaction emptied. Its id is no record's, and, being
    /// the coordinator's, nobody can follow it.
    pub fn placeholder() -> Record {
        Record {
            word: u64::MAX,
            ..Record::coordinator(
                CoordinatorRecord {
                    group: 0,
                    offset: None,
                },
                0,
            )
        }
    }

    /// Whether it keeps a place that holds no record ([`Record::placeholder`]).
    pub fn is_placeholder(&self) -> bool {
        self.word == u64::MAX
    }

    /// Unique over the run: which `send()` made it (a retried duplicate has the same id). 0 in
    /// `__consumer_offsets`.
    pub fn id(&self) -> u64 {
        self.word & ID_MASK
    }

    /// What a group's coordinator wrote, for a record of `__consumer_offsets`.
    pub fn written(&self) -> Option<CoordinatorRecord> {
        let (group, partition) = self.key.coordinator_of()?;
        Some(CoordinatorRecord {
            group,
            offset: partition.map(|p| (p, self.packed)),
        })
    }

    pub fn bytes(&self) -> u32 {
        if self.key.coordinator_of().is_some() {
            return COORDINATOR_RECORD_BYTES;
        }
        (self.packed & Packed::BYTES_MASK) as u32
    }

    /// The producer's index in the scenario; `u32::MAX` for a coordinator's record.
    pub fn producer(&self) -> u32 {
        if self.key.coordinator_of().is_some() {
            return u32::MAX;
        }
        super::ledger::producer_of(self.id())
    }

    /// The idempotent producer's epoch (bumped when it resets its sequence numbers).
    pub fn producer_epoch(&self) -> u16 {
        if self.key.coordinator_of().is_some() {
            return 0;
        }
        (self.word >> ID_BITS & PRODUCER_EPOCH_MASK) as u16
    }

    /// Its idempotent producer's sequence number, or `None` (`RecordBatch.NO_SEQUENCE`).
    pub fn sequence(&self) -> Option<i32> {
        if self.key.coordinator_of().is_some() {
            return None;
        }
        let plus_one = (self.packed >> Packed::SEQUENCE_SHIFT) as u32;
        plus_one.checked_sub(1).map(|s| s as i32)
    }

    /// Whether it is the first record of its producer's batch.
    pub fn starts_batch(&self) -> bool {
        self.key.coordinator_of().is_none() && self.packed & Packed::FIRST != 0
    }

    /// The low [`EPOCH_MARK_BITS`] of the leader epoch it was appended in.
    pub fn epoch_mark(&self) -> u32 {
        let mark = if self.key.coordinator_of().is_some() {
            self.word >> ID_BITS
        } else {
            self.packed >> Packed::EPOCH_SHIFT
        };
        (mark & EPOCH_MARK_MASK) as u32
    }

    /// The latest leader epoch, up to `latest`, that its epoch mark can stand for: its epoch
    /// when it was appended fewer than `2^EPOCH_MARK_BITS` epochs before `latest`.
    pub fn leader_epoch_up_to(&self, latest: u32) -> u32 {
        let behind = (Record::epoch_mark_of(latest) + (1 << EPOCH_MARK_BITS) - self.epoch_mark())
            & EPOCH_MARK_MASK as u32;
        latest.saturating_sub(behind)
    }

    /// The mark a record appended in `leader_epoch` carries.
    pub fn epoch_mark_of(leader_epoch: u32) -> u32 {
        (u64::from(leader_epoch) & EPOCH_MARK_MASK) as u32
    }
}

// The scenario limits count a record's memory by this size.
const _: () = assert!(
    size_of::<Record>() as u64 == crate::scenario::limits::LOG_RECORD_BYTES,
    "scenario::limits::LOG_RECORD_BYTES must be the size of a Record"
);

/// A record of `__consumer_offsets`, written by a group's coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorRecord {
    pub group: u32,
    /// A committed offset: the partition's ordinal in `Cluster::partitions` and the next offset
    /// to read. `None` for a record of the group's membership and assignment (the classic
    /// protocol's `GroupMetadata`, KIP-848's member, epoch and assignment records).
    pub offset: Option<(u32, u64)>,
}

/// The last batches of one producer on one partition, for duplicate detection
/// (`ProducerStateEntry` keeps 5 of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub producer_epoch: u16,
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: u64,
}

pub const PRODUCER_STATE_BATCHES: usize = 5;

/// A broker's copy of one partition.
#[derive(Clone, Component, Debug)]
pub struct Replica {
    pub partition: Entity,
    pub broker: BrokerId,
    pub log: super::chunked::Chunked<Record>,
    pub high_watermark: u64,
    /// The first offset it serves: below it, retention deleted the segments (`logStartOffset`).
    pub log_start_offset: u64,
    /// Where its records lie on disk.
    pub segments: Segments,
    /// What its log cleaner removed, and how far it got.
    pub cleaned: super::cleaner::Cleaned,
    /// Leader epoch history: `(epoch, start offset)`, oldest first (`LeaderEpochFileCache`).
    pub epochs: Vec<(u32, u64)>,
    /// Idempotent producers' recent batches, by producer index.
    pub producer_batches: Vec<(u32, VecDeque<BatchMetadata>)>,
    /// The transactions in its log: the open ones, the aborted ones (Kafka's transaction index,
    /// which read_committed readers skip by), and the committed ones whose marker is at or above
    /// its high watermark, which a truncation may open again.
    pub txns: Vec<Txn>,
}

/// A producer's transaction in a replica's log (`ProducerStateEntry.currentTxnFirstOffset`,
/// `CompletedTxn`, `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Txn {
    pub producer: u32,
    /// The offset of its first record.
    pub first_offset: u64,
    /// Its marker's offset, and whether it committed; `None` while it is open.
    pub end: Option<(u64, bool)>,
}

/// A follower broker's fetcher for one leader broker: at most one fetch in flight.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fetcher {
    /// Wire id of the fetch in flight.
    pub in_flight: Option<u64>,
    pub sent_ms: u64,
    /// No fetch before this instant (`replica.fetch.backoff.ms` after a failure).
    pub backoff_until_ms: u64,
}

impl Replica {
    pub fn new(partition: Entity, broker: BrokerId) -> Self {
        Replica {
            partition,
            broker,
            log: Default::default(),
            high_watermark: 0,
            log_start_offset: 0,
            segments: Segments::default(),
            cleaned: Default::default(),
            epochs: vec![(0, 0)],
            producer_batches: Vec::new(),
            txns: Vec::new(),
        }
    }

    pub fn log_end_offset(&self) -> u64 {
        self.log.len() as u64
    }

    /// The start offset of an epoch in this replica's history.
    pub fn epoch_start(&self, epoch: u32) -> Option<u64> {
        self.epochs
            .iter()
            .find(|(e, _)| *e == epoch)
            .map(|(_, s)| *s)
    }

    /// The latest epoch in this replica's history.
    pub fn latest_epoch(&self) -> Option<u32> {
        self.epochs.last().map(|(e, _)| *e)
    }

    /// `LeaderEpochFileCache.endOffsetFor`: the largest epoch at or below `epoch` in this
    /// history, and the offset where it ends (the next epoch's start, or the log end). Below
    /// every epoch it knows, `epoch` itself, ending where the first known epoch starts: what
    /// came before is not this log's, so a follower asking about it keeps none of it. `None`
    /// for an empty history.
    pub fn end_offset_for(&self, epoch: u32) -> Option<(u32, u64)> {
        let Some(i) = self.epochs.iter().rposition(|(e, _)| *e <= epoch) else {
            return self.epochs.first().map(|(_, start)| (epoch, *start));
        };
        let end = self
            .epochs
            .get(i + 1)
            .map_or(self.log_end_offset(), |(_, start)| *start);
        Some((self.epochs[i].0, end))
    }

    /// `LeaderEpochFileCache.assign`: `epoch` starts at `start`. Entries it contradicts (the same
    /// or a later epoch, or one starting at or after `start`) go first, so the history stays
    /// increasing in both; an epoch that started and wrote nothing is replaced.
    pub fn assign_epoch(&mut self, epoch: u32, start: u64) {
        let needed = self
            .epochs
            .last()
            .is_none_or(|&(e, s)| e != epoch || start < s);
        if !needed {
            return;
        }
        while self
            .epochs
            .last()
            .is_some_and(|&(e, s)| e >= epoch || s >= start)
        {
            self.epochs.pop();
        }
        self.epochs.push((epoch, start));
    }

    /// Cuts the log back to `offset` (a follower that diverged from its leader). Returns how
    /// many records went. The epoch history is cut back to the log's end even when no record
    /// goes (`UnifiedLog.truncateTo`): an epoch this broker started as leader and wrote nothing
    /// in would otherwise be sent with every fetch, and diverge at every answer.
    pub fn truncate_to(&mut self, offset: u64, now: u64) -> u64 {
        if offset < self.log_start_offset {
            // Below the log start there is nothing to keep (`UnifiedLog.truncateTo`).
            let leo = self.log_end_offset();
            self.truncate_fully_and_start_at(offset, now);
            return leo - offset;
        }
        let leo = self.log_end_offset();
        self.epochs.retain(|(_, start)| *start < offset.min(leo));
        if offset >= leo {
            return 0;
        }
        let (log, cleaned) = (&self.log, &self.cleaned);
        self.segments.truncate_to(offset, now, |from, to| {
            (from..to)
                .filter(|o| !cleaned.is_removed(*o))
                .filter_map(|o| log.get(o as usize))
                .map(|r| u64::from(r.bytes()))
                .sum()
        });
        self.log_start_offset = self.log_start_offset.min(offset);
        self.log.truncate(offset as usize);
        self.cleaned.truncate(offset);
        for (_, batches) in &mut self.producer_batches {
            batches.retain(|b| b.first_offset < offset);
        }
        // A transaction whose marker is cut off is open again (`UnifiedLog.truncateTo`,
        // `rebuildProducerState`); one that started above the cut is gone.
        self.txns.retain(|t| t.first_offset < offset);
        for txn in &mut self.txns {
            if txn.end.is_some_and(|(at, _)| at >= offset) {
                txn.end = None;
            }
        }
        self.high_watermark = self.high_watermark.min(offset);
        leo - offset
    }

    /// The disk is gone: no log, no history.
    pub fn wipe(&mut self) {
        self.log.clear();
        self.high_watermark = 0;
        self.log_start_offset = 0;
        self.segments = Segments::default();
        self.cleaned.start_at(0);
        self.epochs.clear();
        self.producer_batches.clear();
        self.txns.clear();
    }

    pub fn producer_state(&self, producer: u32) -> Option<&VecDeque<BatchMetadata>> {
        self.producer_batches
            .iter()
            .find(|(p, _)| *p == producer)
            .map(|(_, b)| b)
    }

    /// Appends records of `leader_epoch` at the end of the log (the leader's, or the follower's
    /// copy), the largest of whose timestamps is `max_timestamp`, into its active segment or a
    /// new one (`UnifiedLog.append`), and keeps the producers' batch metadata up to date, as
    /// both leader and follower do. Returns the new segment's base offset if the log rolled.
    pub fn append(
        &mut self,
        records: impl IntoIterator<Item = Record>,
        leader_epoch: u32,
        config: &LogConfig,
        now: u64,
        max_timestamp: u64,
    ) -> Option<u64> {
        let records = records.into_iter().map(|r| (leader_epoch, r));
        self.append_of_epochs(records, config, now, max_timestamp)
    }

    /// [`Replica::append`], each record with its own leader epoch.
    pub fn append_of_epochs(
        &mut self,
        records: impl IntoIterator<Item = (u32, Record)>,
        config: &LogConfig,
        now: u64,
        max_timestamp: u64,
    ) -> Option<u64> {
        let start = self.log_end_offset();
        let mut bytes = 0;
        for (leader_epoch, record) in records {
            bytes += self.note_appended(&record, leader_epoch, self.log_end_offset());
            self.log.push(record);
        }
        self.segments
            .append(config, now, start, max_timestamp, bytes)
    }

    /// Where its log already holds the batch whose first record is `first_id` and whose largest
    /// timestamp is `max_timestamp`, below `before`: the earlier copy of a retried batch, which
    /// a leader without the producer's sequence numbers cannot recognise and appends again. Not
    /// a rule of Kafka's but the model's own look, made only for retried batches: it reads the
    /// segments that can hold the batch (those whose largest timestamp reaches its own), newest
    /// first.
    pub fn earlier_copy(&self, first_id: u64, max_timestamp: u64, before: u64) -> Option<u64> {
        let start = self.log_start_offset.max(self.log.front() as u64);
        let mut end = before;
        for segment in self.segments.iter().rev() {
            let from = segment.base_offset.max(start);
            if segment.largest_timestamp() >= max_timestamp {
                let found = (from..end.max(from)).rev().find(|&offset| {
                    !self.cleaned.is_removed(offset)
                        && self
                            .log
                            .get(offset as usize)
                            .is_some_and(|r| r.id() == first_id && r.starts_batch())
                });
                if found.is_some() {
                    return found;
                }
            }
            if from <= start {
                break;
            }
            end = end.min(segment.base_offset);
        }
        None
    }

    /// A follower appends what it fetched from its leader, whose log `leader` holds the same
    /// records at the same offsets: it keeps the leader's copies instead of its own
    /// ([`super::chunked::Chunked::extend_shared`]). It reads each record's leader epoch from
    /// the leader's epoch cache, as Kafka's follower reads it from each batch's header; where the
    /// leader has truncated since it answered, from the record's mark, up to `latest_epoch`
    /// ([`Record::leader_epoch_up_to`]). The records are one append, as Kafka's follower appends
    /// a partition's fetched records at once (`appendAsFollower`).
    pub fn append_fetched(
        &mut self,
        records: &[Record],
        (leader, latest_epoch): (&Replica, u32),
        config: &LogConfig,
        now: u64,
        max_timestamp: u64,
    ) -> Option<u64> {
        let start = self.log_end_offset();
        self.log.extend_shared(&leader.log, records);
        let end = self.log_end_offset();
        let any_removed = self.cleaned.copy_removed(&leader.cleaned, start, end);
        // The leader's epochs, from the one the first record is in.
        let first = leader.epochs.partition_point(|(_, s)| *s <= start);
        let mut epochs = leader.epochs[first.saturating_sub(1)..].iter().peekable();
        let mut cached = None;
        let mut bytes = 0;
        for (offset, record) in (start..).zip(records) {
            // A place whose chunk the leader's compaction emptied holds nothing to note.
            if record.is_placeholder() {
                continue;
            }
            while let Some(&(e, _)) = epochs.next_if(|(_, s)| *s <= offset) {
                cached = Some(e);
            }
            let epoch = cached
                .filter(|e| Record::epoch_mark_of(*e) == record.epoch_mark())
                .unwrap_or_else(|| record.leader_epoch_up_to(latest_epoch));
            let record_bytes = self.note_appended(record, epoch, offset);
            if !(any_removed && self.cleaned.is_removed(offset)) {
                bytes += record_bytes;
            }
        }
        self.segments
            .append(config, now, start, max_timestamp, bytes)
    }

    /// `UnifiedLog.maybeIncrementLogStartOffset`: the log start moves forward to `offset` (never
    /// back, and never past the high watermark), and the epoch history forgets what lies before
    /// it (`LeaderEpochFileCache.truncateFromStart`). Returns whether it moved.
    pub fn increment_log_start_offset(&mut self, offset: u64) -> bool {
        let offset = offset.min(self.high_watermark);
        if offset <= self.log_start_offset {
            return false;
        }
        self.log_start_offset = offset;
        // Nothing below the log start is read again: its records are freed once no other
        // replica or checkpoint holds them.
        self.log.drop_front(offset as usize);
        self.cleaned.drop_front(offset);
        // The latest epoch that starts at or below the new start now starts at it; older ones go.
        if let Some(i) = self.epochs.iter().rposition(|(_, start)| *start <= offset) {
            self.epochs.drain(..i);
            self.epochs[0].1 = offset;
        }
        // The transaction index goes with the segments it indexed.
        self.txns
            .retain(|t| t.end.is_none_or(|(at, _)| at >= offset));
        true
    }

    /// `UnifiedLog.lastStableOffset`: the first offset of its oldest transaction that is open,
    /// or whose marker the high watermark has not passed (`ProducerStateManager.
    /// firstUnstableOffset`: `ongoingTxns` and `unreplicatedTxns`), where that is below the high
    /// watermark; else the high watermark. Below it every record is decided, committed or
    /// aborted, and the decision replicated: a read_committed reader reads no further.
    pub fn last_stable_offset(&self) -> u64 {
        let hw = self.high_watermark;
        self.txns
            .iter()
            .filter(|t| t.end.is_none_or(|(at, _)| at >= hw))
            .map(|t| t.first_offset)
            .fold(hw, u64::min)
    }

    /// Its aborted transactions, oldest first: `(producer, first offset, marker's offset)`
    /// (`AbortedTxn`, the transaction index).
    pub fn aborted_txns(&self) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        self.txns.iter().filter_map(|t| match t.end {
            Some((at, false)) => Some((t.producer, t.first_offset, at)),
            _ => None,
        })
    }

    /// A transactional record starts its producer's transaction here if none is open; a marker
    /// ends it (`ProducerAppendInfo.appendDataBatch`, `appendEndTxnMarker`: a marker with no
    /// transaction open completes nothing). Committed transactions the high watermark has
    /// passed are forgotten then: only a truncation below it could open them again.
    fn note_transactional(&mut self, record: &Record, offset: u64) {
        let producer = record.producer();
        let open = self
            .txns
            .iter_mut()
            .find(|t| t.producer == producer && t.end.is_none());
        match (record.control(), open) {
            (None, Some(_)) => {}
            (None, None) => self.txns.push(Txn {
                producer,
                first_offset: offset,
                end: None,
            }),
            (Some(commit), Some(txn)) => {
                txn.end = Some((offset, commit));
                let hw = self.high_watermark;
                self.txns
                    .retain(|t| !matches!(t.end, Some((at, true)) if at < hw));
            }
            (Some(_), None) => {}
        }
    }

    /// `UnifiedLog.deleteOldSegments`: the segments this replica no longer keeps go, and its log
    /// start moves past them. Returns what went.
    pub fn delete_old_segments(
        &mut self,
        config: &LogConfig,
        now: u64,
    ) -> Option<super::segments::Deleted> {
        let mut start = self.log_start_offset;
        let (high_watermark, log_end) = (self.high_watermark, self.log_end_offset());
        let deleted =
            self.segments
                .delete_old_segments(config, now, &mut start, high_watermark, log_end)?;
        self.increment_log_start_offset(start);
        Some(deleted)
    }

    /// `UnifiedLog.truncateFullyAndStartAt`: a follower fallen behind its leader's log start
    /// drops its whole log, history and producer state, and starts again at `offset`. A log's
    /// offsets are its places: the log holds nothing below its new start
    /// ([`super::chunked::Chunked::start_at`]), and below its log start a replica serves nothing.
    /// Returns how many records it held from its old log start.
    pub fn truncate_fully_and_start_at(&mut self, offset: u64, now: u64) -> u64 {
        let removed = self.log_end_offset().saturating_sub(self.log_start_offset);
        self.log.start_at(offset as usize, &Record::placeholder());
        self.cleaned.start_at(offset);
        self.epochs.clear();
        self.producer_batches.clear();
        self.txns.clear();
        self.segments.truncate_fully_and_start_at(offset, now);
        self.log_start_offset = offset;
        self.high_watermark = offset;
        removed
    }

    /// What appending `record` of `leader_epoch` at `offset` changes besides the log: the
    /// leader epochs' start offsets, and its producer's batches. Returns the record's bytes,
    /// which its segment grows by.
    fn note_appended(&mut self, record: &Record, leader_epoch: u32, offset: u64) -> u64 {
        // A record of another leader epoch starts that epoch in this replica's history
        // (`UnifiedLog.append`, `maybeAssignEpochStartOffset`).
        self.assign_epoch(leader_epoch, offset);
        if record.word & TRANSACTIONAL != 0 && !record.is_placeholder() {
            self.note_transactional(record, offset);
        }
        if let Some(sequence) = record.sequence() {
            let producer = record.producer();
            let producer_epoch = record.producer_epoch();
            let batches = match self
                .producer_batches
                .iter_mut()
                .position(|(p, _)| *p == producer)
            {
                Some(i) => &mut self.producer_batches[i].1,
                None => {
                    self.producer_batches.push((producer, VecDeque::new()));
                    &mut self.producer_batches.last_mut().unwrap().1
                }
            };
            // A new producer epoch starts the producer's sequence numbers afresh.
            if batches
                .back()
                .is_some_and(|b| b.producer_epoch < producer_epoch)
            {
                batches.clear();
            }
            if record.starts_batch() || batches.is_empty() {
                if batches.len() == PRODUCER_STATE_BATCHES {
                    batches.pop_front();
                }
                // A log that starts inside a batch finds the batch's first sequence behind it.
                let first_sequence = if record.starts_batch() {
                    sequence
                } else {
                    batch_first_sequence(&self.log, (producer, producer_epoch), offset)
                        .unwrap_or(sequence)
                };
                batches.push_back(BatchMetadata {
                    producer_epoch,
                    first_sequence,
                    last_sequence: sequence,
                    first_offset: offset,
                });
            } else if let Some(last) = batches.back_mut() {
                last.last_sequence = sequence;
            }
        }
        u64::from(record.bytes())
    }
}

/// The sequence of the first record of the batch of `producer` (and its epoch) that goes on at
/// `offset`, if the log still holds it below.
fn batch_first_sequence(
    log: &super::chunked::Chunked<Record>,
    (producer, epoch): (u32, u16),
    offset: u64,
) -> Option<i32> {
    (0..offset as usize)
        .rev()
        .map_while(|o| log.get(o))
        .take_while(|r| r.producer() == producer && r.producer_epoch() == epoch)
        .find(|r| r.starts_batch())
        .and_then(Record::sequence)
}

/// Kafka's internal topic of committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

// A log holds a record per offset, shared by the replicas that agree: keep it small.
const _: () = assert!(size_of::<Record>() == 24);

/// A query of the model's world read from outside the schedule (`load` registers every model
/// component, so the query can be made from a shared borrow).
pub fn read<D: bevy_ecs::query::QueryData>(world: &World) -> QueryState<D> {
    world
        .try_query::<D>()
        .expect("the model's components are registered when it loads")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_start_moving_forward_trims_the_epoch_history_from_its_start() {
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        replica.epochs = vec![(0, 0), (1, 100), (2, 200)];
        replica.high_watermark = 300;
        // `LeaderEpochFileCache.truncateFromStart`: the entries starting at or below the new start
        // go, and the last of them comes back starting at it.
        assert!(replica.increment_log_start_offset(100));
        assert_eq!(replica.epochs, vec![(1, 100), (2, 200)]);
        assert!(replica.increment_log_start_offset(150));
        assert_eq!(replica.epochs, vec![(1, 150), (2, 200)]);
        // Never back, and never past the high watermark.
        assert!(!replica.increment_log_start_offset(120));
        assert!(replica.increment_log_start_offset(400));
        assert_eq!(replica.log_start_offset, 300);
        assert_eq!(replica.epochs, vec![(2, 300)]);
    }

    /// The `index`th record of a batch of producer 3 (epoch 7) whose first sequence is `base`.
    fn batch_record(send: u64, leader_epoch: u32, base: i32, index: usize) -> Record {
        let id = super::super::ledger::record_id(3, send);
        let key = super::super::keys::Key::named(5);
        Record::produced(id, key, leader_epoch, Some(base), 7, index, 1_000)
    }

    #[test]
    fn a_record_keeps_what_kafka_keeps_per_batch_in_its_two_words() {
        let record = batch_record(12, 600, i32::MAX - 2, 2);
        assert_eq!(size_of::<Record>(), 24);
        assert_eq!(record.id(), super::super::ledger::record_id(3, 12));
        assert_eq!(record.producer(), 3);
        assert_eq!(record.producer_epoch(), 7);
        // The largest sequence there is, and the batch's place, survive the packing.
        assert_eq!(record.sequence(), Some(i32::MAX));
        assert!(!record.starts_batch() && batch_record(12, 600, 0, 0).starts_batch());
        assert_eq!(record.bytes(), 1_000);
        assert!(!record.is_tombstone() && record.tombstone().is_tombstone());
        assert_eq!(record.epoch_mark(), 600 % 512);
        assert_eq!(record.renumbered(40).id(), 40);
        assert_eq!(record.renumbered(40).producer_epoch(), 7);
        let plain = Record::produced(1, super::super::keys::Key::NONE, 0, None, 0, 0, 1);
        assert_eq!(plain.sequence(), None);
        // A coordinator's record keeps its committed offset whole, and its epoch mark too.
        let written = CoordinatorRecord {
            group: 2,
            offset: Some((9, u64::MAX - 1)),
        };
        let offsets = Record::coordinator(written.clone(), 1_000);
        assert_eq!(offsets.written(), Some(written));
        assert_eq!((offsets.id(), offsets.sequence()), (0, None));
        assert_eq!(offsets.epoch_mark(), 1_000 % 512);
        assert!(!offsets.is_placeholder() && Record::placeholder().is_placeholder());
    }

    #[test]
    fn an_epoch_mark_stands_for_the_latest_epoch_with_its_low_bits() {
        let at = |epoch| batch_record(0, epoch, 0, 0);
        assert_eq!(at(5).leader_epoch_up_to(5), 5);
        assert_eq!(at(5).leader_epoch_up_to(9), 5);
        assert_eq!(at(510).leader_epoch_up_to(514), 510);
        assert_eq!(at(0).leader_epoch_up_to(511), 0);
        // 512 epochs on, the mark is read as the later epoch.
        assert_eq!(at(3).leader_epoch_up_to(515), 515);
    }

    #[test]
    fn a_follower_takes_each_records_epoch_from_its_leaders_cache() {
        let config = LogConfig::default();
        let mut leader = Replica::new(Entity::PLACEHOLDER, 1);
        leader.append(
            (0..3).map(|i| batch_record(i, 0, 0, i as usize)),
            0,
            &config,
            0,
            0,
        );
        leader.append(
            (3..5).map(|i| batch_record(i, 2, 3, i as usize - 3)),
            2,
            &config,
            0,
            0,
        );
        leader.append((5..6).map(|i| batch_record(i, 4, 5, 0)), 4, &config, 0, 0);
        assert_eq!(leader.epochs, vec![(0, 0), (2, 3), (4, 5)]);
        let records: Vec<Record> = leader.log.iter_from(0).copied().collect();
        let mut follower = Replica::new(Entity::PLACEHOLDER, 2);
        follower.append_fetched(&records[..4], (&leader, 4), &config, 0, 0);
        assert_eq!(follower.epochs, vec![(0, 0), (2, 3)]);
        follower.append_fetched(&records[4..], (&leader, 4), &config, 0, 0);
        assert_eq!(follower.epochs, leader.epochs);
        // Its producer state is the leader's: three batches, by their first sequences.
        let firsts = |r: &Replica| -> Vec<(i32, i32, u64)> {
            r.producer_state(3)
                .into_iter()
                .flatten()
                .map(|b| (b.first_sequence, b.last_sequence, b.first_offset))
                .collect()
        };
        assert_eq!(firsts(&follower), vec![(0, 2, 0), (3, 4, 3), (5, 5, 5)]);
        assert_eq!(firsts(&follower), firsts(&leader));
    }

    #[test]
    fn an_earlier_copy_of_a_batch_is_found_in_the_segments_that_can_hold_it() {
        // Two records of 1,000 bytes to a segment: each batch below gets one of its own.
        let config = LogConfig {
            segment_bytes: 2_500,
            ..LogConfig::default()
        };
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        for (batch, at) in [(0, 100), (1, 200), (2, 300)] {
            let records = (0..2).map(|i| batch_record(batch * 2 + i, 0, 0, i as usize));
            replica.append(records, 0, &config, at, at);
        }
        assert_eq!(replica.segments.len(), 3);
        let first = |batch: u64| super::super::ledger::record_id(3, batch * 2);
        let leo = replica.log_end_offset();
        assert_eq!(replica.earlier_copy(first(0), 100, leo), Some(0));
        assert_eq!(replica.earlier_copy(first(1), 200, leo), Some(2));
        // Only the batch's first record starts it.
        let second = super::super::ledger::record_id(3, 3);
        assert_eq!(replica.earlier_copy(second, 200, leo), None);
        // A segment whose records are all older than the batch cannot hold it.
        assert_eq!(replica.earlier_copy(first(1), 250, leo), None);
        // Below the offset asked for only, and above the log start.
        assert_eq!(replica.earlier_copy(first(2), 300, 4), None);
        replica.high_watermark = leo;
        assert!(replica.increment_log_start_offset(2));
        assert_eq!(replica.earlier_copy(first(0), 100, leo), None);
        assert_eq!(replica.earlier_copy(first(2), 300, leo), Some(4));
    }

    #[test]
    fn a_marker_is_a_control_record_of_its_producer_and_epoch() {
        let marker = Record::marker(3, 7, false, 600);
        assert_eq!(marker.control(), Some(false));
        assert_eq!(Record::marker(3, 7, true, 600).control(), Some(true));
        assert_eq!((marker.producer(), marker.producer_epoch()), (3, 7));
        assert!(marker.is_transactional() && !marker.starts_batch());
        assert_eq!((marker.sequence(), marker.written()), (None, None));
        assert_eq!(marker.epoch_mark(), 600 % 512);
        assert_eq!(marker.bytes(), MARKER_BYTES);
        // Its id is no record's: no send reaches its number.
        assert_eq!(
            super::super::ledger::send_number(marker.id()),
            MARKER_SEND_NUMBER
        );
        let record = batch_record(1, 0, 0, 0);
        assert_eq!(record.control(), None);
        assert!(!record.is_transactional());
        let written = record.in_transaction();
        assert!(written.is_transactional());
        assert_eq!(written.producer_epoch(), 7, "the epoch keeps its 15 bits");
        let offsets = CoordinatorRecord {
            group: 1,
            offset: Some((0, 5)),
        };
        assert!(
            !Record::coordinator(offsets, 3)
                .in_transaction()
                .is_transactional()
        );
        assert!(!Record::placeholder().is_transactional());
    }

    /// A transaction of producer 3: `n` records from send number `from`.
    fn in_transaction(from: u64, n: u64) -> impl Iterator<Item = Record> {
        (from..from + n)
            .map(move |i| batch_record(i, 0, i as i32, (i - from) as usize).in_transaction())
    }

    #[test]
    fn the_last_stable_offset_stops_at_the_first_open_transaction() {
        let config = LogConfig::default();
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        // Offsets 0-1 outside any transaction, 2-4 in one.
        replica.append(
            (0..2).map(|i| batch_record(i, 0, i as i32, i as usize)),
            0,
            &config,
            0,
            0,
        );
        replica.append(in_transaction(2, 3), 0, &config, 0, 0);
        replica.high_watermark = 5;
        assert_eq!(replica.last_stable_offset(), 2);
        // Below the high watermark only: a transaction above it does not hold it back further.
        replica.high_watermark = 1;
        assert_eq!(replica.last_stable_offset(), 1);
        // The commit marker at 5 decides it, but until the high watermark passes the marker the
        // decision may yet be lost: the last stable offset stays (`unreplicatedTxns`).
        replica.append([Record::marker(3, 7, true, 0)], 0, &config, 0, 0);
        replica.high_watermark = 5;
        assert_eq!(replica.last_stable_offset(), 2);
        replica.high_watermark = 6;
        assert_eq!(replica.last_stable_offset(), 6);
        assert_eq!(replica.aborted_txns().count(), 0);
        // An aborted transaction stays in the index, committed ones the high watermark passed go.
        replica.append(in_transaction(5, 2), 0, &config, 0, 0);
        replica.append([Record::marker(3, 7, false, 0)], 0, &config, 0, 0);
        replica.high_watermark = 9;
        replica.append(in_transaction(7, 1), 0, &config, 0, 0);
        replica.append([Record::marker(3, 7, true, 0)], 0, &config, 0, 0);
        assert_eq!(replica.aborted_txns().collect::<Vec<_>>(), vec![(3, 6, 8)]);
        assert_eq!(
            replica.txns.len(),
            2,
            "the aborted one and the last, above the high watermark"
        );
        // A marker with no transaction open completes nothing.
        replica.append([Record::marker(3, 7, false, 0)], 0, &config, 0, 0);
        assert_eq!(replica.aborted_txns().count(), 1);
    }

    #[test]
    fn a_truncation_opens_again_the_transaction_whose_marker_it_cut() {
        let config = LogConfig::default();
        let mut leader = Replica::new(Entity::PLACEHOLDER, 1);
        leader.append(in_transaction(0, 3), 0, &config, 0, 0);
        leader.append([Record::marker(3, 7, false, 0)], 0, &config, 0, 0);
        leader.append(in_transaction(3, 2), 0, &config, 0, 0);
        // A follower that fetched it all knows the same transactions.
        let records: Vec<Record> = leader.log.iter_from(0).copied().collect();
        let mut follower = Replica::new(Entity::PLACEHOLDER, 2);
        follower.append_fetched(&records, (&leader, 0), &config, 0, 0);
        assert_eq!(follower.txns, leader.txns);
        follower.high_watermark = 6;
        assert_eq!(follower.last_stable_offset(), 4);
        // Cut at the marker: the first transaction is open again, the second is gone.
        follower.truncate_to(3, 0);
        assert_eq!(
            follower.txns,
            vec![Txn {
                producer: 3,
                first_offset: 0,
                end: None
            }]
        );
        assert_eq!(follower.last_stable_offset(), 0);
        assert_eq!(follower.aborted_txns().count(), 0);
    }

    #[test]
    fn a_log_that_knows_no_batch_of_a_producer_finds_the_batchs_start_behind_it() {
        let config = LogConfig::default();
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        replica.append(
            (0..4).map(|i| batch_record(i, 0, 10, i as usize)),
            0,
            &config,
            0,
            0,
        );
        replica.producer_batches.clear();
        replica.truncate_to(2, 0);
        // The rest of the batch comes again: its first sequence is the one at offset 0.
        replica.append(
            (2..4).map(|i| batch_record(i, 0, 10, i as usize)),
            0,
            &config,
            0,
            0,
        );
        let batch = replica.producer_state(3).and_then(|b| b.back()).copied();
        let batch = batch.expect("the producer's batch");
        assert_eq!((batch.first_sequence, batch.last_sequence), (10, 13));
    }
}
