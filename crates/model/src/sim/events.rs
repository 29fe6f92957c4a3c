//! What happened, in order: the event log the report, the view's timeline and the event panel
//! read, and the counters behind Kafka's metrics.

use serde::Serialize;

/// One event at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub at_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Events, named as Kafka's logs and metrics name them where they have a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum EventKind {
    /// The leader removed replicas that fell behind from the ISR.
    IsrShrink {
        topic: String,
        partition: u32,
        isr: Vec<u32>,
        removed: Vec<u32>,
    },
    /// A follower caught up with the high watermark and rejoined the ISR.
    IsrExpand {
        topic: String,
        partition: u32,
        isr: Vec<u32>,
        added: Vec<u32>,
    },
    /// A timeline action (from the scenario or the sandbox) that could not apply at its instant.
    ActionRefused {
        action: String,
        why: String,
    },
    LinkCut {
        a: u32,
        b: u32,
    },
    LinkHealed {
        a: u32,
        b: u32,
    },
    BrokerSlowed {
        broker: u32,
        extra_ms: u64,
    },
    /// The producer's connection to the broker hangs: the broker's answers sent until
    /// `until_ms`, and later ones on the same connection, are lost on the way.
    ProduceAnswersDropped {
        producer: String,
        broker: u32,
        until_ms: u64,
    },
    /// A leader appended a retried batch that its log already held from an earlier attempt,
    /// whose answer never reached the producer: its records are in the log twice.
    DuplicateAppended {
        producer: String,
        topic: String,
        partition: u32,
        broker: u32,
        records: u64,
        offset: u64,
        /// Where the earlier copy starts.
        first_offset: u64,
    },
    AcksChanged {
        producer: String,
        acks: String,
        idempotent: bool,
    },
    RateChanged {
        producer: String,
        records_per_sec: u32,
    },
    RecordsProduced {
        producer: String,
        key: Option<String>,
        count: u64,
    },
    /// The application sent a tombstone: its key with a null value.
    TombstoneProduced {
        producer: String,
        key: String,
    },
    BrokerCrashed {
        broker: u32,
    },
    /// The broker crashed and its disk is gone.
    BrokerWiped {
        broker: u32,
    },
    BrokerRestarted {
        broker: u32,
    },
    /// A topic's `min.insync.replicas` changed.
    MinIsrChanged {
        topic: String,
        min_insync_replicas: u32,
    },
    /// A topic's `unclean.leader.election.enable` changed.
    UncleanElectionChanged {
        topic: String,
        enabled: bool,
    },
    EligibleLeaderReplicasChanged {
        enabled: bool,
    },
    /// A producer restarted with other settings (those given, as a scenario writes them).
    ProducerReconfigured {
        producer: String,
        settings: String,
        idempotent: bool,
    },
    /// Members were started or closed until the group had this many.
    GroupMembersSet {
        group: String,
        members: u32,
    },
    /// A new broker started; it registers with the controller.
    BrokerAdded {
        broker: u32,
    },
    /// An operator asked for more partitions (`kafka-topics --alter --partitions`).
    PartitionsRequested {
        topic: String,
        partitions: u32,
    },
    /// The controller created the new partitions: the topic has this many.
    PartitionsCreated {
        topic: String,
        partitions: u32,
    },
    /// An operator asked to move a partition's replicas (`kafka-reassign-partitions`).
    ReassignmentRequested {
        topic: String,
        partition: u32,
        target: Vec<u32>,
    },
    /// A partition's reassignment begins: its replicas are the target's and those it removes.
    ReassignmentStarted {
        topic: String,
        partition: u32,
        replicas: Vec<u32>,
        adding: Vec<u32>,
        removing: Vec<u32>,
    },
    /// Every target replica joined the ISR: the removed replicas are dropped.
    ReassignmentCompleted {
        topic: String,
        partition: u32,
        replicas: Vec<u32>,
        isr: Vec<u32>,
    },
    /// A rolling restart begins: these brokers, in turn.
    RollingRestartStarted {
        brokers: Vec<u32>,
        /// Controlled shutdowns; else crashes.
        controlled: bool,
    },
    /// A rolling restart's broker is back and nothing is under-replicated.
    RollingRestartBrokerDone {
        broker: u32,
    },
    RollingRestartDone,
    /// An operator asked the broker to stop: it begins a controlled shutdown.
    ControlledShutdownRequested {
        broker: u32,
    },
    /// The controller took the broker into controlled shutdown: it leaves every ISR and its
    /// leaderships move.
    BrokerInControlledShutdown {
        broker: u32,
    },
    /// The broker stopped cleanly at the controller's word, its log intact.
    BrokerShutDown {
        broker: u32,
    },
    BrokerIsolated {
        broker: u32,
    },
    BrokerHealed {
        broker: u32,
    },
    ControllerLinkCut {
        broker: u32,
    },
    ControllerLinkHealed {
        broker: u32,
    },
    PreferredElectionRequested,
    /// The controller fenced a broker whose heartbeats stopped.
    BrokerFenced {
        broker: u32,
    },
    BrokerUnfenced {
        broker: u32,
    },
    /// A restarted broker's registration was refused: its previous incarnation's session is still
    /// valid (reported once a restart; the broker retries with back-off).
    RegistrationRefused {
        broker: u32,
    },
    /// The controller registered a restarted broker's new incarnation (fenced until it heartbeats
    /// again).
    BrokerRegistered {
        broker: u32,
    },
    LeaderElected {
        topic: String,
        partition: u32,
        leader: u32,
        leader_epoch: u32,
        unclean: bool,
        isr: Vec<u32>,
        /// What moved it: "leader fenced", "replica unfenced", "preferred leader", "controlled
        /// shutdown", "reassignment".
        reason: String,
    },
    /// No replica can lead: the partition is unavailable.
    PartitionOffline {
        topic: String,
        partition: u32,
        leader_epoch: u32,
        isr: Vec<u32>,
    },
    ConsumerAdded {
        group: String,
        member: String,
    },
    ConsumerRemoved {
        group: String,
        member: String,
    },
    ConsumerCrashed {
        group: String,
        member: String,
    },
    /// With `auto.offset.reset=none`, `poll()` threw and the application stopped, as a crash
    /// does: `error` is the exception.
    ConsumerFailed {
        group: String,
        member: String,
        topic: String,
        partition: u32,
        error: String,
    },
    ConsumerRateChanged {
        group: String,
        records_per_sec: u32,
    },
    /// The coordinator asked every member to rejoin.
    RebalanceStarted {
        group: String,
        generation: u32,
    },
    /// The leader's assignment reached the members: a new generation is consuming.
    RebalanceCompleted {
        group: String,
        generation: u32,
    },
    /// Consumer protocol: the membership changed, so the coordinator bumped the group epoch; the
    /// next heartbeat computes the target assignment for it.
    GroupEpochBumped {
        group: String,
        epoch: u32,
        /// Who joined, left or was fenced, and why.
        reason: String,
    },
    /// Consumer protocol: a member reached the target assignment's epoch with all its partitions.
    MemberReconciled {
        group: String,
        member: String,
        epoch: u32,
    },
    /// A consumer's position was out of range (OFFSET_OUT_OF_RANGE): below the log start, as
    /// retention deleted what it had not read, or past the log's end, as the log was truncated.
    /// It starts again where `auto.offset.reset` says; after a truncation its next commit takes
    /// the group's committed offset back.
    OffsetReset {
        group: String,
        member: String,
        topic: String,
        partition: u32,
        from: u64,
        to: u64,
        reason: ResetReason,
    },
    /// A follower cut its log back to where it agrees with its leader.
    Truncated {
        broker: u32,
        topic: String,
        partition: u32,
        from_offset: u64,
        to_offset: u64,
    },
    /// A topic's log setting changed (`kafka-configs --alter`).
    TopicConfigChanged {
        topic: String,
        config: String,
    },
    /// A replica's active segment was full or old: a new one starts at `base_offset`
    /// (`UnifiedLog.roll`).
    SegmentRolled {
        broker: u32,
        topic: String,
        partition: u32,
        base_offset: u64,
    },
    /// A broker's retention check deleted a replica's oldest segments: its log start offset
    /// moved from `from_offset` to `to_offset` (`UnifiedLog.deleteOldSegments`).
    SegmentsDeleted {
        broker: u32,
        topic: String,
        partition: u32,
        segments: u32,
        from_offset: u64,
        to_offset: u64,
    },
    /// A broker's log cleaner compacted a replica's log: of the offsets from `from_offset` up to
    /// `to_offset`, it kept the latest record of each key and removed `records_removed`, of
    /// which `tombstones_removed` were tombstones past their delete horizon (`Cleaner.doClean`).
    LogCleaned {
        broker: u32,
        topic: String,
        partition: u32,
        from_offset: u64,
        to_offset: u64,
        records_removed: u64,
        tombstones_removed: u64,
    },
    /// A follower whose log ended below its leader's log start dropped it and starts again at
    /// the leader's log start (`truncateFullyAndStartAt`).
    TruncatedFully {
        broker: u32,
        topic: String,
        partition: u32,
        from_offset: u64,
        start_offset: u64,
    },
}

/// Why a consumer's position was out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ResetReason {
    /// Below the serving replica's log start offset: retention deleted those records.
    BelowLogStart,
    /// Past the log's end: the log was truncated below it.
    PastLogEnd,
}

#[derive(Clone, Debug, Default)]
pub struct EventLog {
    /// In chunks shared with checkpoints, which would otherwise each copy the whole log. Those
    /// older than the seekable window ([`super::SEEKABLE_MS`]) are forgotten, as the
    /// checkpoints are: a run left playing all day keeps its memory flat.
    pub events: super::chunked::Chunked<Event>,
}

impl EventLog {
    pub fn push(&mut self, at_ms: u64, kind: EventKind) {
        self.events.push(Event { at_ms, kind });
        let window_starts = at_ms.saturating_sub(super::SEEKABLE_MS);
        self.events.drop_front_while(|e| e.at_ms < window_starts);
    }
}

impl Metrics {
    /// Counts a producer's records appended a second time.
    pub fn note_duplicate(&mut self, producer: u32, records: u64) {
        self.duplicate_records += records;
        let i = producer as usize;
        if self.duplicates_by_producer.len() <= i {
            self.duplicates_by_producer.resize(i + 1, 0);
        }
        self.duplicates_by_producer[i] += records;
    }
}

/// Counters over the whole run.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Metrics {
    /// `IsrShrinksPerSec`, summed.
    pub isr_shrinks: u64,
    /// `IsrExpandsPerSec`, summed.
    pub isr_expands: u64,
    pub produce_requests: u64,
    pub fetch_requests: u64,
    /// Records appended by leaders (a retried batch without idempotence counts again).
    pub records_appended: u64,
    /// Records a leader appended a second time: a retried batch whose earlier attempt it had
    /// appended (what `enable.idempotence` prevents).
    pub duplicate_records: u64,
    /// The same, per producer (by index).
    #[serde(skip)]
    pub duplicates_by_producer: Vec<u64>,
    /// Records appended by followers from fetch responses.
    pub records_replicated: u64,
    /// Messages dropped on cut links or refused by a dead broker.
    pub messages_lost: u64,
    /// `LeaderElectionRate`, summed.
    pub leader_elections: u64,
    /// `UncleanLeaderElectionsPerSec`, summed.
    pub unclean_leader_elections: u64,
    /// Time partitions spent without a leader, summed over partitions.
    pub offline_partition_ms: u64,
    /// Time partitions spent led by a broker that was down or cut off from everyone, before the
    /// controller fenced it and moved the leadership: Kafka counts them online, yet writes and
    /// reads stall. Summed over partitions.
    pub dead_leader_ms: u64,
    /// Records removed from followers' logs by truncation.
    pub records_truncated: u64,
    /// Records consumers were sent by a follower (KIP-392's fetch from the closest replica).
    pub records_read_from_followers: u64,
}
