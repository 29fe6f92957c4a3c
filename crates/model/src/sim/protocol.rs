//! The payloads of the messages on the wire, and Kafka's error codes among them.

use std::convert::identity as as_is;

use bevy_ecs::prelude::*;
use serde::Serialize;

use super::cluster::Record;
use crate::scenario::Acks;

/// The error codes of produce and fetch responses that the model can produce (`Errors.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum KafkaError {
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    RequestTimedOut,
    NotLeaderOrFollower,
    OutOfOrderSequenceNumber,
    /// A batch of an idempotent producer's older epoch, after the leader saw a newer one.
    InvalidProducerEpoch,
    /// The connection broke (the broker's process is gone): not a response code but what the
    /// client reports (`Errors.NETWORK_EXCEPTION`).
    NetworkException,
    /// A consumer asked for an offset the replica does not have.
    OffsetOutOfRange,
}

impl KafkaError {
    /// The name Kafka's clients and logs print.
    pub fn name(self) -> &'static str {
        match self {
            KafkaError::NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            KafkaError::NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            KafkaError::RequestTimedOut => "REQUEST_TIMED_OUT",
            KafkaError::NotLeaderOrFollower => "NOT_LEADER_OR_FOLLOWER",
            KafkaError::OutOfOrderSequenceNumber => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            KafkaError::InvalidProducerEpoch => "INVALID_PRODUCER_EPOCH",
            KafkaError::NetworkException => "NETWORK_EXCEPTION",
            KafkaError::OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
        }
    }

    /// Whether the producer retries a batch that got this error: Kafka's `RetriableException`
    /// subclasses. OUT_OF_ORDER_SEQUENCE_NUMBER is not one, but the idempotent producer (the only
    /// one that gets it) retries it anyway (`TransactionManager.canRetry`).
    pub fn retriable(self) -> bool {
        !matches!(
            self,
            KafkaError::InvalidProducerEpoch | KafkaError::OutOfOrderSequenceNumber
        )
    }
}

/// A record waiting in a producer's batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRecord {
    /// Unique over the run (see `Record::id`).
    pub id: u64,
    pub key: super::keys::Key,
    pub bytes: u32,
    /// A null value: a delete for a compacted topic.
    pub tombstone: bool,
}

/// One partition's batch in a produce request.
#[derive(Debug, Clone)]
pub struct WireBatch {
    /// The producer's own id for the batch.
    pub id: u64,
    pub partition: Entity,
    pub producer: u32,
    /// First sequence number when the producer is idempotent.
    pub base_sequence: Option<i32>,
    pub producer_epoch: u16,
    /// Sent before: the model's own mark, so that a leader that appends it again can tell
    /// (Kafka's request says nothing of it).
    pub retry: bool,
    pub records: Vec<PendingRecord>,
    /// The largest of its records' timestamps (`maxTimestamp`; `CreateTime`, the time of each
    /// record's `send()`).
    pub max_timestamp: u64,
}

/// Where the leader is with one batch of a produce request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Answered: the batch's base offset, or an error.
    Done(Result<u64, KafkaError>),
    /// Appended at `base_offset`; acks=all waits until the high watermark reaches `required`.
    Waiting { base_offset: u64, required: u64 },
}

/// A ProduceRequest to a partition leader: the batches of every partition that broker leads.
#[derive(Debug, Clone)]
pub struct ProduceRequest {
    pub producer: u32,
    pub acks: Acks,
    /// How long an acks=all request may wait at the leader (`request.timeout.ms`).
    pub timeout_ms: u64,
    pub batches: Vec<WireBatch>,
    /// Filled in by the leader, one per batch.
    pub outcomes: Vec<BatchOutcome>,
}

/// The answer to one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchResult {
    pub batch: u64,
    pub partition: Entity,
    pub result: Result<u64, KafkaError>,
    /// With NOT_LEADER_OR_FOLLOWER, the leader and epoch the broker knows of, where it knows
    /// one (KIP-951's `CurrentLeader`).
    pub current_leader: Option<(u32, u32)>,
}

#[derive(Debug, Clone)]
pub struct ProduceResponse {
    /// The wire id of the request it answers.
    pub request: u64,
    pub results: Vec<BatchResult>,
    /// Not an answer: the broker closed the connection, as it does on any error to an acks=0
    /// request, which gets no answer (`KafkaApis.handleProduceRequest`, `closeConnection`).
    pub closed: bool,
}

/// One partition of a follower's fetch: from the follower's own log end offset.
#[derive(Debug, Clone)]
pub struct FetchPartition {
    pub partition: Entity,
    /// The follower's replica entity.
    pub replica: Entity,
    pub fetch_offset: u64,
    /// The epoch of the follower's last record (`lastFetchedEpoch`, KIP-595/KIP-320): the leader
    /// checks the logs agree up to the fetch offset.
    pub last_fetched_epoch: Option<u32>,
}

/// A follower's Fetch to one leader broker, for every partition it follows from it (one request
/// per follower and leader broker, as `ReplicaFetcherThread` sends).
#[derive(Debug, Clone)]
pub struct FetchRequest {
    pub partitions: Vec<FetchPartition>,
}

/// Where a follower's log leaves the leader's (`FetchResponse.divergingEpoch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Diverging {
    /// The largest leader epoch at or below the follower's, or `None` if the leader has none.
    pub epoch: Option<u32>,
    /// Where that epoch ends on the leader.
    pub end_offset: u64,
}

/// A fetch response's body as a leader builds it: each partition's answer, and their records.
pub(super) type Answers = (Vec<FetchedPartition>, Vec<Record>);

/// One partition of a fetch response.
#[derive(Debug, Clone)]
pub struct FetchedPartition {
    pub partition: Entity,
    pub replica: Entity,
    /// Where its records are in the response's [`FetchResponse::records`].
    pub records: std::ops::Range<u32>,
    /// The offset of its first record (a batch's `baseOffset`).
    pub base_offset: u64,
    pub high_watermark: u64,
    /// The leader's log start offset (`PartitionData.logStartOffset`).
    pub log_start_offset: u64,
    /// The largest timestamp of the leader's segment that its last record lies in: the model
    /// keeps timestamps per segment, not per record.
    pub max_timestamp: u64,
    pub error: Option<KafkaError>,
    /// Set when the follower's log diverges: it truncates before fetching again.
    pub diverging: Option<Diverging>,
}

#[derive(Debug, Clone)]
pub struct FetchResponse {
    pub request: u64,
    pub partitions: Vec<FetchedPartition>,
    /// Every partition's records, one partition after another: one vector for the response, not
    /// one per partition.
    pub records: Vec<Record>,
}

impl FetchResponse {
    /// One partition's records.
    pub fn records_of(&self, partition: &FetchedPartition) -> &[Record] {
        &self.records[partition.records.start as usize..partition.records.end as usize]
    }
}

/// A broker's heartbeat to the active controller (`BrokerHeartbeatRequest`).
#[derive(Debug, Clone)]
pub struct Heartbeat {
    pub broker: u32,
    pub incarnation: u32,
    /// The first of a new incarnation: a `BrokerRegistrationRequest`.
    pub registration: bool,
    /// `wantShutDown`: the broker is in controlled shutdown.
    pub want_shut_down: bool,
    /// `currentMetadataOffset`: how far the broker has applied the metadata log.
    pub metadata_offset: u64,
}

/// The controller's answer (`BrokerHeartbeatResponse`), drawn on the way back.
#[derive(Debug, Clone)]
pub struct HeartbeatResponse {
    pub broker: u32,
    /// The incarnation the heartbeat came from (an answer to an earlier one is ignored).
    pub incarnation: u32,
    pub fenced: bool,
    /// A registration refused with DUPLICATE_BROKER_REGISTRATION: the broker's previous
    /// incarnation still has a valid session.
    pub refused: bool,
    /// The end of the controller's metadata log: the broker catches up to it (after a cut
    /// controller link heals, the first answer brings it up to date).
    pub metadata_offset: u64,
    /// `shouldShutDown`: a broker in controlled shutdown leads nothing and every active broker
    /// has learnt so; it may stop.
    pub should_shut_down: bool,
}

/// Errors of the group protocol (`Errors.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum GroupError {
    RebalanceInProgress,
    UnknownMemberId,
    IllegalGeneration,
    NotCoordinator,
    /// The coordinator could not write the operation's records in time
    /// (`offsets.commit.timeout.ms`), or is not ready: find it again and retry.
    CoordinatorNotAvailable,
    /// A consumer-protocol member's epoch is not the coordinator's: it must give up its
    /// partitions and rejoin (`FencedMemberEpochException`).
    FencedMemberEpoch,
    /// An OffsetCommit carries another member epoch than the member's
    /// (`StaleMemberEpochException`).
    StaleMemberEpoch,
}

impl GroupError {
    pub fn name(self) -> &'static str {
        match self {
            GroupError::RebalanceInProgress => "REBALANCE_IN_PROGRESS",
            GroupError::UnknownMemberId => "UNKNOWN_MEMBER_ID",
            GroupError::IllegalGeneration => "ILLEGAL_GENERATION",
            GroupError::NotCoordinator => "NOT_COORDINATOR",
            GroupError::CoordinatorNotAvailable => "COORDINATOR_NOT_AVAILABLE",
            GroupError::FencedMemberEpoch => "FENCED_MEMBER_EPOCH",
            GroupError::StaleMemberEpoch => "STALE_MEMBER_EPOCH",
        }
    }
}

/// A member's request to its group coordinator.
#[derive(Debug, Clone)]
pub struct GroupRequest {
    /// Index of the group in the scenario.
    pub group: u32,
    pub member: String,
    pub body: GroupRequestBody,
    /// Set by the coordinator on a request whose answer waits for its writes: where they end in
    /// the offsets partition (its last written offset), which the high watermark must reach
    /// before `answer` goes out.
    pub write_ends_at: Option<u64>,
    pub answer: Option<Box<GroupResponseBody>>,
}

#[derive(Debug, Clone)]
pub enum GroupRequestBody {
    JoinGroup {
        instance_id: Option<String>,
        topics: Vec<String>,
        /// Partitions it owns now (cooperative and sticky members send them).
        owned: Vec<crate::assignor::TopicPartition>,
    },
    SyncGroup {
        generation: u32,
        /// Only the leader sends the assignment.
        assignment: Option<crate::assignor::Assignment>,
    },
    Heartbeat {
        generation: u32,
    },
    LeaveGroup,
    /// Offsets to commit: (partition ordinal, next offset to read). `generation` is the member
    /// epoch in a consumer-protocol group.
    OffsetCommit {
        generation: u32,
        offsets: Vec<(u32, u64)>,
    },
    /// KIP-848's one membership request: joins (epoch 0), heartbeats, acknowledges what the
    /// member owns, and leaves (epoch -1).
    ConsumerGroupHeartbeat {
        member_epoch: i32,
        topics: Vec<String>,
        /// The partitions it owns now, by ordinal. Kafka's client sends them when they changed
        /// since its last heartbeat; the coordinator reads the same either way.
        owned: Vec<u32>,
        /// `max.poll.interval.ms`: how long the member may take to revoke partitions.
        rebalance_timeout_ms: u64,
        /// A full request, with every field set: the client sends one after any failed
        /// heartbeat (`resetHeartbeatState`), and the answer then carries the assignment.
        full: bool,
    },
}

impl GroupRequestBody {
    /// The request's name in Kafka's protocol.
    pub fn name(&self) -> &'static str {
        match self {
            GroupRequestBody::JoinGroup { .. } => "JoinGroup",
            GroupRequestBody::SyncGroup { .. } => "SyncGroup",
            GroupRequestBody::Heartbeat { .. } => "Heartbeat",
            GroupRequestBody::LeaveGroup => "LeaveGroup",
            GroupRequestBody::OffsetCommit { .. } => "OffsetCommit",
            GroupRequestBody::ConsumerGroupHeartbeat { .. } => "ConsumerGroupHeartbeat",
        }
    }
}

/// The coordinator's answer.
#[derive(Debug, Clone)]
pub struct GroupResponse {
    /// Wire id of the request it answers: the client matches each response to its request.
    pub request: u64,
    pub group: u32,
    pub member: String,
    pub body: GroupResponseBody,
}

#[derive(Debug, Clone)]
pub enum GroupResponseBody {
    JoinGroup {
        generation: u32,
        leader: String,
        /// The members and subscriptions, for the leader only.
        members: Vec<crate::assignor::Member>,
    },
    SyncGroup {
        generation: u32,
        assignment: Vec<crate::assignor::TopicPartition>,
    },
    Heartbeat,
    LeaveGroup,
    OffsetCommit {
        offsets: Vec<(u32, u64)>,
    },
    ConsumerGroupHeartbeat {
        member_epoch: i32,
        heartbeat_interval_ms: u64,
        /// The member's assignment by ordinal, sent when it changed or the request was a full
        /// one (a join).
        assignment: Option<Vec<u32>>,
    },
    Error {
        request: &'static str,
        error: GroupError,
    },
}

/// A consumer's fetch of one partition, from its position. Only records below the serving
/// replica's high watermark come back.
#[derive(Debug, Clone)]
pub struct ConsumerFetch {
    pub consumer: Entity,
    pub partition: Entity,
    /// The replica asked (the leader, or a follower in the consumer's rack, KIP-392).
    pub replica: Entity,
    pub offset: u64,
    pub max_records: u32,
}

#[derive(Debug, Clone)]
pub struct ConsumerFetchResponse {
    pub request: u64,
    pub consumer: Entity,
    pub partition: Entity,
    /// Records `from .. from + count`, but for the offsets in `removed`.
    pub from: u64,
    pub count: u64,
    /// Runs of offsets in it whose records compaction removed (a compacted log's batches skip
    /// them); usually none.
    pub removed: Vec<std::ops::Range<u64>>,
    /// The serving replica's high watermark when it answered.
    pub high_watermark: u64,
    /// The serving replica's log start offset (`PartitionData.logStartOffset`).
    pub log_start_offset: u64,
    pub error: Option<KafkaError>,
    /// With NOT_LEADER_OR_FOLLOWER, the leader and epoch the broker knows of (KIP-951's
    /// `CurrentLeader`).
    pub current_leader: Option<(u32, u32)>,
}

/// What a message carries: one of Kafka's requests or responses.
#[derive(Debug, Clone)]
pub enum Payload {
    Produce(ProduceRequest),
    ProduceResponse(ProduceResponse),
    Fetch(FetchRequest),
    FetchResponse(FetchResponse),
    Heartbeat(Heartbeat),
    HeartbeatResponse(HeartbeatResponse),
    // Boxed: the group protocol's messages are rare and the largest, and every row has the
    // room of the largest payload.
    Group(Box<GroupRequest>),
    GroupResponse(Box<GroupResponse>),
    ConsumerFetch(ConsumerFetch),
    ConsumerFetchResponse(ConsumerFetchResponse),
}

/// A payload's kind, in the order the trace digest numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Produce,
    ProduceResponse,
    Fetch,
    FetchResponse,
    Heartbeat,
    HeartbeatResponse,
    Group,
    GroupResponse,
    ConsumerFetch,
    ConsumerFetchResponse,
}

/// How many kinds there are.
pub(super) const KINDS: usize = Kind::ConsumerFetchResponse as usize + 1;

impl Payload {
    pub fn kind(&self) -> Kind {
        match self {
            Payload::Produce(_) => Kind::Produce,
            Payload::ProduceResponse(_) => Kind::ProduceResponse,
            Payload::Fetch(_) => Kind::Fetch,
            Payload::FetchResponse(_) => Kind::FetchResponse,
            Payload::Heartbeat(_) => Kind::Heartbeat,
            Payload::HeartbeatResponse(_) => Kind::HeartbeatResponse,
            Payload::Group(_) => Kind::Group,
            Payload::GroupResponse(_) => Kind::GroupResponse,
            Payload::ConsumerFetch(_) => Kind::ConsumerFetch,
            Payload::ConsumerFetchResponse(_) => Kind::ConsumerFetchResponse,
        }
    }
}

/// A payload type: how it is found in and put into a [`Payload`].
pub trait OnWire: Sized {
    const KIND: Kind;
    fn of(payload: &Payload) -> Option<&Self>;
    fn of_mut(payload: &mut Payload) -> Option<&mut Self>;
    fn into_payload(self) -> Payload;
}

/// Each payload type with its variant and how the variant holds it (as is, or boxed).
macro_rules! on_wire {
    ($($variant:ident: $t:ty => $hold:path),* $(,)?) => {
        $(impl OnWire for $t {
            const KIND: Kind = Kind::$variant;
            fn of(payload: &Payload) -> Option<&Self> {
                match payload {
                    Payload::$variant(p) => Some(p),
                    _ => None,
                }
            }
            fn of_mut(payload: &mut Payload) -> Option<&mut Self> {
                match payload {
                    Payload::$variant(p) => Some(p),
                    _ => None,
                }
            }
            fn into_payload(self) -> Payload {
                Payload::$variant($hold(self))
            }
        })*
    };
}

on_wire!(
    Produce: ProduceRequest => as_is,
    ProduceResponse: ProduceResponse => as_is,
    Fetch: FetchRequest => as_is,
    FetchResponse: FetchResponse => as_is,
    Heartbeat: Heartbeat => as_is,
    HeartbeatResponse: HeartbeatResponse => as_is,
    Group: GroupRequest => Box::new,
    GroupResponse: GroupResponse => Box::new,
    ConsumerFetch: ConsumerFetch => as_is,
    ConsumerFetchResponse: ConsumerFetchResponse => as_is,
);
