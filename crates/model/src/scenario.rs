//! Scenario files: the cluster, its topics and clients, and a timeline of actions, read from RON.
//!
//! Every field a file leaves out takes Kafka's default (named next to it). Unknown fields are
//! errors, and a scenario that could not exist is refused with the field that is wrong.

use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::assignor::Assignor;

/// A built-in scenario: its name, and the RON text compiled into the binary (the web build has no
/// file system).
pub struct BuiltIn {
    pub name: &'static str,
    pub source: &'static str,
}

impl BuiltIn {
    /// The built-in scenario whose `name` field is `name` (which can differ from the file name:
    /// `isr-shrink` is named "ISR shrink"), so that a loaded scenario can be linked to and picked
    /// again by its file name.
    pub fn named(name: &str) -> Option<&'static BuiltIn> {
        static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| {
            BUILT_IN
                .iter()
                .map(|b| Scenario::built_in(b.name).map_or_else(|_| String::new(), |s| s.name))
                .collect()
        });
        BUILT_IN
            .iter()
            .zip(names)
            .find(|(_, n)| *n == name)
            .map(|(b, _)| b)
    }
}

/// The scenarios in `scenarios/`, embedded. `quickstart` comes first: it is the default.
pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "quickstart",
        source: include_str!("../../../scenarios/quickstart.ron"),
    },
    BuiltIn {
        name: "walkthrough",
        source: include_str!("../../../scenarios/walkthrough.ron"),
    },
    BuiltIn {
        name: "isr-shrink",
        source: include_str!("../../../scenarios/isr-shrink.ron"),
    },
    BuiltIn {
        name: "min-isr",
        source: include_str!("../../../scenarios/min-isr.ron"),
    },
    BuiltIn {
        name: "acks-one",
        source: include_str!("../../../scenarios/acks-one.ron"),
    },
    BuiltIn {
        name: "isr-then-leader-dies",
        source: include_str!("../../../scenarios/isr-then-leader-dies.ron"),
    },
    BuiltIn {
        name: "isr-then-leader-wiped",
        source: include_str!("../../../scenarios/isr-then-leader-wiped.ron"),
    },
    BuiltIn {
        name: "unclean-election",
        source: include_str!("../../../scenarios/unclean-election.ron"),
    },
    BuiltIn {
        name: "min-isr-protects",
        source: include_str!("../../../scenarios/min-isr-protects.ron"),
    },
    BuiltIn {
        name: "acks-one-crash",
        source: include_str!("../../../scenarios/acks-one-crash.ron"),
    },
    BuiltIn {
        name: "cut-off-leader-acks-one",
        source: include_str!("../../../scenarios/cut-off-leader-acks-one.ron"),
    },
    BuiltIn {
        name: "cut-off-leader-acks-all",
        source: include_str!("../../../scenarios/cut-off-leader-acks-all.ron"),
    },
    BuiltIn {
        name: "clean-failover",
        source: include_str!("../../../scenarios/clean-failover.ron"),
    },
    BuiltIn {
        name: "consumers",
        source: include_str!("../../../scenarios/consumers.ron"),
    },
    BuiltIn {
        name: "rebalance-storm",
        source: include_str!("../../../scenarios/rebalance-storm.ron"),
    },
    BuiltIn {
        name: "rebalance-storm-cooperative",
        source: include_str!("../../../scenarios/rebalance-storm-cooperative.ron"),
    },
    BuiltIn {
        name: "rebalance-storm-consumer-protocol",
        source: include_str!("../../../scenarios/rebalance-storm-consumer-protocol.ron"),
    },
    BuiltIn {
        name: "leader-reads",
        source: include_str!("../../../scenarios/leader-reads.ron"),
    },
    BuiltIn {
        name: "throughput",
        source: include_str!("../../../scenarios/throughput.ron"),
    },
    BuiltIn {
        name: "large",
        source: include_str!("../../../scenarios/large.ron"),
    },
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// One line for `kafkascope list` and the scenario picker.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "defaults::duration_ms")]
    pub duration_ms: u64,
    #[serde(default)]
    pub cluster: ClusterConfig,
    #[serde(default)]
    pub topics: Vec<TopicConfig>,
    #[serde(default)]
    pub producers: Vec<ProducerConfig>,
    #[serde(default)]
    pub consumer_groups: Vec<ConsumerGroupConfig>,
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    #[serde(default = "defaults::brokers")]
    pub brokers: u32,
    /// `replica.lag.time.max.ms`.
    #[serde(default = "defaults::replica_lag_time_max_ms")]
    pub replica_lag_time_max_ms: u64,
    /// One-way latency of every link, in whole milliseconds (the simulation's step).
    #[serde(default = "defaults::network_latency_ms")]
    pub network_latency_ms: u64,
    /// `replica.fetch.wait.max.ms`: how long a leader holds a follower's fetch that finds no data.
    #[serde(default = "defaults::replica_fetch_wait_max_ms")]
    pub replica_fetch_wait_max_ms: u64,
    /// `replica.fetch.max.bytes`: the most record bytes one fetch response carries per partition.
    #[serde(default = "defaults::replica_fetch_max_bytes")]
    pub replica_fetch_max_bytes: u64,
    /// `replica.socket.timeout.ms`: when a follower's fetcher gives up on a fetch that got no
    /// answer (the request timeout of `BrokerBlockingSender`'s network client).
    #[serde(default = "defaults::replica_socket_timeout_ms")]
    pub replica_socket_timeout_ms: u64,
    /// The earlier name of `replica_socket_timeout_ms`, refused with a message that says so.
    #[serde(
        default,
        rename = "request_timeout_ms",
        skip_serializing,
        deserialize_with = "present"
    )]
    pub old_request_timeout_ms: Option<u64>,
    /// `replica.fetch.backoff.ms`: the pause after a failed fetch.
    #[serde(default = "defaults::replica_fetch_backoff_ms")]
    pub replica_fetch_backoff_ms: u64,
    /// `broker.heartbeat.interval.ms`: how often a broker heartbeats the active controller.
    #[serde(default = "defaults::heartbeat_interval_ms")]
    pub heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`: a broker silent this long is fenced.
    #[serde(default = "defaults::session_timeout_ms")]
    pub session_timeout_ms: u64,
    /// Eligible leader replicas (KIP-966; `eligible.leader.replicas.version`).
    #[serde(default)]
    pub eligible_leader_replicas: bool,
    /// `auto.leader.rebalance.enable`.
    #[serde(default = "defaults::yes")]
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds`, in milliseconds.
    #[serde(default = "defaults::leader_imbalance_check_interval_ms")]
    pub leader_imbalance_check_interval_ms: u64,
    /// `offsets.topic.num.partitions`.
    #[serde(default = "defaults::offsets_topic_partitions")]
    pub offsets_topic_partitions: u32,
    /// `offsets.topic.replication.factor` (capped by the broker count).
    #[serde(default = "defaults::offsets_topic_replication_factor")]
    pub offsets_topic_replication_factor: u32,
    /// `group.initial.rebalance.delay.ms`: an empty group waits this long for more members.
    #[serde(default = "defaults::group_initial_rebalance_delay_ms")]
    pub group_initial_rebalance_delay_ms: u64,
    /// `group.consumer.heartbeat.interval.ms`: how often members of consumer-protocol groups
    /// heartbeat; the coordinator tells them in each ConsumerGroupHeartbeat response.
    #[serde(default = "defaults::group_consumer_heartbeat_interval_ms")]
    pub group_consumer_heartbeat_interval_ms: u64,
    /// `group.consumer.session.timeout.ms`: a consumer-protocol member silent this long is fenced.
    #[serde(default = "defaults::group_consumer_session_timeout_ms")]
    pub group_consumer_session_timeout_ms: u64,
    /// `broker.rack` of each broker, in id order.
    #[serde(default)]
    pub broker_racks: Option<Vec<String>>,
    /// `replica.selector.class=RackAwareReplicaSelector`: consumers with a rack may read from a
    /// follower in it (KIP-392).
    #[serde(default)]
    pub rack_aware_replica_selector: bool,
}

/// A value given in the file (which makes the field `Some`), written bare as any other field.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Writes a field read by [`present`] back bare; a field not given is skipped.
fn given<S: serde::Serializer, T: Serialize>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => v.serialize(s),
        None => s.serialize_none(),
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            brokers: defaults::brokers(),
            replica_lag_time_max_ms: defaults::replica_lag_time_max_ms(),
            network_latency_ms: defaults::network_latency_ms(),
            replica_fetch_wait_max_ms: defaults::replica_fetch_wait_max_ms(),
            replica_fetch_max_bytes: defaults::replica_fetch_max_bytes(),
            replica_socket_timeout_ms: defaults::replica_socket_timeout_ms(),
            old_request_timeout_ms: None,
            replica_fetch_backoff_ms: defaults::replica_fetch_backoff_ms(),
            heartbeat_interval_ms: defaults::heartbeat_interval_ms(),
            session_timeout_ms: defaults::session_timeout_ms(),
            eligible_leader_replicas: false,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: defaults::leader_imbalance_check_interval_ms(),
            offsets_topic_partitions: defaults::offsets_topic_partitions(),
            offsets_topic_replication_factor: defaults::offsets_topic_replication_factor(),
            group_initial_rebalance_delay_ms: defaults::group_initial_rebalance_delay_ms(),
            group_consumer_heartbeat_interval_ms: defaults::group_consumer_heartbeat_interval_ms(),
            group_consumer_session_timeout_ms: defaults::group_consumer_session_timeout_ms(),
            broker_racks: None,
            rack_aware_replica_selector: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicConfig {
    pub name: String,
    /// `num.partitions`.
    #[serde(default = "defaults::one")]
    pub partitions: u32,
    /// `default.replication.factor`.
    #[serde(default = "defaults::one")]
    pub replication_factor: u32,
    /// `min.insync.replicas`.
    #[serde(default = "defaults::one")]
    pub min_insync_replicas: u32,
    /// Brokers of each partition, preferred leader first. Left out: Kafka's rack-unaware
    /// assignment.
    #[serde(default)]
    pub assignment: Option<Vec<Vec<u32>>>,
    /// `unclean.leader.election.enable`.
    #[serde(default)]
    pub unclean_leader_election: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Acks {
    Zero,
    One,
    All,
}

impl Acks {
    /// The value as a producer config file writes it.
    pub fn as_config(self) -> &'static str {
        match self {
            Acks::Zero => "0",
            Acks::One => "1",
            Acks::All => "all",
        }
    }
}

/// How a producer picks the keys of the records it sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Keys {
    /// No key: the sticky partitioner (KIP-480, KIP-794).
    None,
    /// `prefix` followed by a counter from 0.
    Sequence(String),
    /// The same key every time.
    Fixed(String),
    /// One of `n` keys (`key-0` .. `key-{n-1}`), drawn from the seeded generator.
    Random(u32),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerConfig {
    pub name: String,
    pub topic: String,
    #[serde(default = "defaults::acks")]
    pub acks: Acks,
    /// Records the application hands to `send()` each second, spread evenly.
    #[serde(default)]
    pub records_per_sec: u32,
    #[serde(default = "defaults::keys")]
    pub keys: Keys,
    /// `linger.ms` (5 since Kafka 4.0, KIP-1030).
    #[serde(default = "defaults::linger_ms")]
    pub linger_ms: u64,
    /// `batch.size`.
    #[serde(default = "defaults::batch_size")]
    pub batch_size: u32,
    /// Size of each record on the wire, key and value together.
    #[serde(default = "defaults::record_bytes")]
    pub record_bytes: u32,
    /// `enable.idempotence`. Left out: on when acks is all, as Kafka does since 3.0.
    #[serde(default)]
    pub enable_idempotence: Option<bool>,
    /// `request.timeout.ms`.
    #[serde(default = "defaults::request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// `delivery.timeout.ms`.
    #[serde(default = "defaults::delivery_timeout_ms")]
    pub delivery_timeout_ms: u64,
    /// `retry.backoff.ms`.
    #[serde(default = "defaults::retry_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// `retry.backoff.max.ms`.
    #[serde(default = "defaults::retry_backoff_max_ms")]
    pub retry_backoff_max_ms: u64,
    /// `max.in.flight.requests.per.connection`.
    #[serde(default = "defaults::max_in_flight")]
    pub max_in_flight_requests_per_connection: u32,
    /// `metadata.max.age.ms`: the producer asks for metadata at least this often, even with no
    /// error to prompt it.
    #[serde(default = "defaults::metadata_max_age_ms")]
    pub metadata_max_age_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OffsetReset {
    Earliest,
    Latest,
}

/// A consumer group: its members share the partitions of its topics.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerGroupConfig {
    /// `group.id`.
    pub name: String,
    pub topics: Vec<String>,
    /// Members at the start.
    #[serde(default = "defaults::one")]
    pub members: u32,
    /// `group.protocol`: the classic protocol (Kafka 4.0's default) or KIP-848's consumer
    /// protocol.
    #[serde(default)]
    pub protocol: GroupProtocol,
    /// The assignor, read through [`ConsumerGroupConfig::assignor`]: with the classic protocol
    /// `partition.assignment.strategy`, run by the group's leader (Kafka's default list starts with
    /// range); with the consumer protocol `group.remote.assignor`, run by the coordinator (the
    /// first of `group.consumer.assignors`, uniform, by default).
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub assignor: Option<Assignor>,
    /// How many records each member processes per second.
    #[serde(default = "defaults::consumer_records_per_sec")]
    pub records_per_sec: u32,
    /// `auto.commit.interval.ms`.
    #[serde(default = "defaults::auto_commit_interval_ms")]
    pub auto_commit_interval_ms: u64,
    /// Commit after each processed batch instead of every `auto_commit_interval_ms`.
    #[serde(default)]
    pub commit_after_each_batch: bool,
    /// `session.timeout.ms`, read through [`ConsumerGroupConfig::session_timeout_ms`]; only
    /// the classic protocol takes it.
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_timeout_ms: Option<u64>,
    /// `heartbeat.interval.ms`, read through [`ConsumerGroupConfig::heartbeat_interval_ms`];
    /// only the classic protocol takes it.
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub heartbeat_interval_ms: Option<u64>,
    /// `max.poll.interval.ms` (also the rebalance timeout).
    #[serde(default = "defaults::max_poll_interval_ms")]
    pub max_poll_interval_ms: u64,
    /// `max.poll.records`: the most records one fetch hands the application.
    #[serde(default = "defaults::max_poll_records")]
    pub max_poll_records: u32,
    /// `auto.offset.reset`.
    #[serde(default = "defaults::auto_offset_reset")]
    pub auto_offset_reset: OffsetReset,
    /// `client.rack`.
    #[serde(default)]
    pub rack: Option<String>,
    /// Members get a `group.instance.id` (static membership, KIP-345).
    #[serde(default)]
    pub static_members: bool,
}

/// `group.protocol`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupProtocol {
    /// JoinGroup, SyncGroup and Heartbeat; the group's leader assigns.
    #[default]
    Classic,
    /// KIP-848: ConsumerGroupHeartbeat alone; the coordinator assigns and each member reconciles
    /// on its own.
    Consumer,
}

impl GroupProtocol {
    /// The name in `group.protocol` (and in reports).
    pub fn name(self) -> &'static str {
        match self {
            GroupProtocol::Classic => "classic",
            GroupProtocol::Consumer => "consumer",
        }
    }
}

impl ConsumerGroupConfig {
    /// The assignor in use: the one given, else the protocol's default.
    pub fn assignor(&self) -> Assignor {
        self.assignor.unwrap_or(match self.protocol {
            GroupProtocol::Classic => Assignor::Range,
            GroupProtocol::Consumer => Assignor::Uniform,
        })
    }

    /// `session.timeout.ms` of a classic member (45 s by default).
    pub fn session_timeout_ms(&self) -> u64 {
        self.session_timeout_ms
            .unwrap_or_else(defaults::consumer_session_timeout_ms)
    }

    /// `heartbeat.interval.ms` of a classic member (3 s by default).
    pub fn heartbeat_interval_ms(&self) -> u64 {
        self.heartbeat_interval_ms
            .unwrap_or_else(defaults::consumer_heartbeat_interval_ms)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineEntry {
    pub at_ms: u64,
    pub action: Action,
}

/// What a timeline (or a person in the sandbox) does to the running cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Cut the network link between two brokers: messages on it are dropped, both ways.
    CutLink(u32, u32),
    HealLink(u32, u32),
    /// Add `extra_ms` to every message to or from a broker (0 restores it).
    SlowBroker(u32, u64),
    /// Restart a producer with other acks.
    SetAcks(String, Acks),
    SetRate(String, u32),
    /// Have a producer send `count` records with this key at once (`None`: no key).
    Produce(String, Option<String>, u64),
    /// The broker's process dies; its disk is kept.
    CrashBroker(u32),
    /// A crashed broker starts again (with whatever disk it has).
    RestartBroker(u32),
    /// The broker crashes and loses its disk: it restarts empty.
    WipeBroker(u32),
    /// Cut a broker off from every other node, the controller and clients included.
    IsolateBroker(u32),
    HealBroker(u32),
    /// Cut only the link between a broker and the controller.
    CutControllerLink(u32),
    HealControllerLink(u32),
    /// Ask the controller to move each partition's leadership to its preferred replica.
    PreferredElection,
    /// A new member joins the group.
    AddConsumer(String),
    /// The group's newest member closes cleanly (LeaveGroup; static members send none).
    RemoveConsumer(String),
    /// The group's newest member dies without a word: its session times out.
    CrashConsumer(String),
    /// Each member of the group processes this many records per second.
    SetConsumerRate(String, u32),
}

mod defaults {
    use super::{Acks, Keys};
    pub fn duration_ms() -> u64 {
        60_000
    }
    pub fn brokers() -> u32 {
        3
    }
    pub fn one() -> u32 {
        1
    }
    pub fn replica_lag_time_max_ms() -> u64 {
        30_000
    }
    pub fn network_latency_ms() -> u64 {
        1
    }
    pub fn replica_fetch_wait_max_ms() -> u64 {
        500
    }
    pub fn replica_fetch_max_bytes() -> u64 {
        1_048_576
    }
    pub fn replica_fetch_backoff_ms() -> u64 {
        1_000
    }
    pub fn heartbeat_interval_ms() -> u64 {
        2_000
    }
    pub fn session_timeout_ms() -> u64 {
        9_000
    }
    pub fn leader_imbalance_check_interval_ms() -> u64 {
        300_000
    }
    pub fn yes() -> bool {
        true
    }
    pub fn offsets_topic_partitions() -> u32 {
        50
    }
    pub fn offsets_topic_replication_factor() -> u32 {
        3
    }
    pub fn group_initial_rebalance_delay_ms() -> u64 {
        3_000
    }
    pub fn group_consumer_heartbeat_interval_ms() -> u64 {
        5_000
    }
    pub fn group_consumer_session_timeout_ms() -> u64 {
        45_000
    }
    pub fn consumer_records_per_sec() -> u32 {
        1_000
    }
    pub fn auto_commit_interval_ms() -> u64 {
        5_000
    }
    pub fn consumer_session_timeout_ms() -> u64 {
        45_000
    }
    pub fn consumer_heartbeat_interval_ms() -> u64 {
        3_000
    }
    pub fn max_poll_interval_ms() -> u64 {
        300_000
    }
    pub fn max_poll_records() -> u32 {
        500
    }
    pub fn auto_offset_reset() -> super::OffsetReset {
        super::OffsetReset::Latest
    }
    pub fn acks() -> Acks {
        Acks::All
    }
    pub fn keys() -> Keys {
        Keys::None
    }
    pub fn linger_ms() -> u64 {
        5
    }
    pub fn batch_size() -> u32 {
        16_384
    }
    pub fn record_bytes() -> u32 {
        100
    }
    pub fn request_timeout_ms() -> u64 {
        30_000
    }
    pub fn replica_socket_timeout_ms() -> u64 {
        30_000
    }
    pub fn delivery_timeout_ms() -> u64 {
        120_000
    }
    pub fn retry_backoff_ms() -> u64 {
        100
    }
    pub fn retry_backoff_max_ms() -> u64 {
        1_000
    }
    pub fn metadata_max_age_ms() -> u64 {
        300_000
    }
    pub fn max_in_flight() -> u32 {
        5
    }
}

/// Why a scenario was refused. Printed as `origin:line:column: message` for syntax errors and
/// `origin: field: message` for a scenario that cannot exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScenarioError {
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    Invalid {
        origin: String,
        field: String,
        message: String,
    },
    NotFound {
        name: String,
    },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Syntax {
                origin,
                line,
                column,
                message,
            } => write!(f, "{origin}:{line}:{column}: {message}"),
            ScenarioError::Invalid {
                origin,
                field,
                message,
            } => write!(f, "{origin}: {field}: {message}"),
            ScenarioError::NotFound { name } => {
                let names: Vec<&str> = BUILT_IN.iter().map(|b| b.name).collect();
                write!(
                    f,
                    "{name}: no such file, and no built-in scenario of that name (built-in: {})",
                    names.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Limits that keep a scenario inside the memory of a laptop and of a browser tab.
pub mod limits {
    pub const BROKERS: u32 = 64;
    pub const PARTITIONS: u32 = 4_096;
    /// Replicas of all topics together (partitions x replication factor): each follower fetches
    /// and each leader tracks its followers, so the step's work grows with them.
    pub const REPLICAS: u64 = 16_384;
    pub const PRODUCERS: usize = 256;
    pub const CONSUMERS: u32 = 1_024;
    pub const RECORDS_PER_SEC: u32 = 1_000_000;
    pub const RECORD_BYTES: u32 = 1_048_576;
    pub const BATCH_SIZE: u32 = 16 * 1_048_576;
    /// Memory for the records a run keeps: every replica's copy in its log, and each record's
    /// entry in the ledger of acknowledged writes, its key, and its copies on the way.
    pub const RECORD_MEMORY_BYTES: u64 = 2 * 1024 * 1024 * 1024;
    /// What one replica's copy of a record costs (`Record`). Replicas that agree share their
    /// copies, so counting one per replica is on the safe side; what it leaves over pays for the
    /// checkpoints (`large`: 10 simulated minutes, 3 million records, 602 MB in all).
    pub const LOG_RECORD_BYTES: u64 = size_of::<crate::sim::Record>() as u64;
    /// What a produced record costs besides its log copies: its ledger entry (32 bytes), its
    /// queue and wire copies while in flight, and the allocator's share.
    pub const PRODUCED_RECORD_BYTES: u64 = 64;
    pub const DURATION_MS: u64 = 7 * 24 * 3_600_000;
    pub const LATENCY_MS: u64 = 60_000;
    /// A record key's bytes (a key, or a `Sequence` prefix): every record keeps its own.
    pub const KEY_BYTES: usize = 4_096;
    /// The most record bytes a follower's fetch may ask for (`replica.fetch.max.bytes`).
    pub const FETCH_BYTES: u64 = 64 * 1_048_576;
}

/// What the text holds where a syntax error was found (ron's span, lines and columns from 1), to
/// add to ron's message, with a hint for the usual slips: a fraction where a whole number goes,
/// parentheses after an action that takes no values.
fn found_at(
    source: &str,
    (line, column): (usize, usize),
    (end_line, end_column): (usize, usize),
) -> String {
    let ends_the_file = end_line >= source.lines().count().max(1)
        && source
            .lines()
            .last()
            .is_none_or(|l| end_column > l.chars().count());
    if ends_the_file {
        return ", found the end of the file".into();
    }
    let Some(text) = source.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let before: String = text.chars().take(column.saturating_sub(1)).collect();
    let mut rest = text
        .chars()
        .skip(column.saturating_sub(1))
        .skip_while(|c| c.is_whitespace());
    let Some(first) = rest.next() else {
        return String::new();
    };
    let mut token: String = std::iter::once(first)
        .chain(rest.take_while(|c| !c.is_whitespace() && !",()[]".contains(*c)))
        .take(24)
        .collect();
    // ron points past a minus sign.
    if before.ends_with('-') {
        token.insert(0, '-');
    }
    let hint = if token.starts_with('.') && before.ends_with(|c: char| c.is_ascii_digit()) {
        " (a whole number goes here)".to_string()
    } else if token.starts_with('(') && before.ends_with(|c: char| c.is_alphanumeric()) {
        let name: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!(" (`{name}` is written without parentheses)")
    } else {
        String::new()
    };
    format!(", found `{token}`{hint}")
}

/// An estimate of the memory the records of a run take, against [`limits::RECORD_MEMORY_BYTES`].
#[derive(Default)]
struct RecordMemory {
    records: u64,
    bytes: u64,
}

impl RecordMemory {
    /// `records` produced to a topic of replication factor `rf`. Keys cost nothing more: a key
    /// made by a rule is a number in the record, and one given as text is kept once.
    fn add(&mut self, records: u64, rf: u64) {
        let each = limits::LOG_RECORD_BYTES * rf + limits::PRODUCED_RECORD_BYTES;
        self.records = self.records.saturating_add(records);
        self.bytes = self.bytes.saturating_add(records.saturating_mul(each));
    }
}

/// Why a rate is refused: above [`limits::RECORDS_PER_SEC`].
fn rate_too_high(rate: u32) -> Option<String> {
    (rate > limits::RECORDS_PER_SEC)
        .then(|| format!("{rate} records/s: at most {}", limits::RECORDS_PER_SEC))
}

/// Why a key is refused: longer than [`limits::KEY_BYTES`].
fn key_too_long(key: &str) -> Option<String> {
    (key.len() > limits::KEY_BYTES).then(|| {
        format!(
            "a key of {} bytes: at most {}",
            key.len(),
            limits::KEY_BYTES
        )
    })
}

/// Reads RON text into `T`; a syntax error gives `origin:line:column` and what was found there.
pub fn parse_ron<T: serde::de::DeserializeOwned>(
    source: &str,
    origin: &str,
) -> Result<T, ScenarioError> {
    // A byte order mark (some editors write one) becomes a space: columns stay the same.
    let source = match source.strip_prefix('\u{feff}') {
        Some(rest) => std::borrow::Cow::Owned(format!(" {rest}")),
        None => std::borrow::Cow::Borrowed(source),
    };
    ron::from_str(&source).map_err(|e| {
        let (line, column) = (e.span.start.line, e.span.start.col);
        let mut message = e.code.to_string();
        // Messages that quote nothing get what was found there.
        if !message.contains('`') {
            message.push_str(&found_at(
                &source,
                (line, column),
                (e.span.end.line, e.span.end.col),
            ));
        }
        ScenarioError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message,
        }
    })
}

/// The largest scenario or tour file read (the built-in ones are a few kilobytes).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the file `name` when it is a path to one, `None` when no such path exists (it is
/// a built-in's name, then). `built_in` says whether a built-in of that name exists: it wins over
/// a folder or device of that name. `kind` ("scenario", "tour") names the file in messages.
pub fn read_named_file(
    name: &str,
    built_in: bool,
    kind: &str,
) -> Result<Option<String>, ScenarioError> {
    let path = std::path::Path::new(name);
    let unreadable = |message: String| ScenarioError::Invalid {
        origin: name.to_string(),
        field: "file".into(),
        message,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            if meta.len() > MAX_FILE_BYTES {
                return Err(unreadable(format!(
                    "{} bytes: a {kind} file is at most {MAX_FILE_BYTES}",
                    meta.len()
                )));
            }
            std::fs::read_to_string(path)
                .map(Some)
                .map_err(|e| unreadable(format!("cannot be read: {e}")))
        }
        Ok(meta) if !built_in => {
            let what = if meta.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            };
            Err(unreadable(format!(
                "is {what}: give a {kind}'s .ron file or a built-in's name"
            )))
        }
        _ => Ok(None),
    }
}

impl Scenario {
    /// Reads and checks a scenario. `origin` names it in messages (a path, or a built-in's name).
    pub fn parse(source: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = parse_ron(source, origin)?;
        scenario.validate(origin, scenario.duration_ms)?;
        Ok(scenario)
    }

    /// A scenario from a file path, or a built-in one by name.
    pub fn load(name: &str) -> Result<Scenario, ScenarioError> {
        match read_named_file(name, Scenario::built_in(name).is_ok(), "scenario")? {
            Some(source) => Scenario::parse(&source, name),
            None => Scenario::built_in(name),
        }
    }

    /// A built-in scenario by name.
    pub fn built_in(name: &str) -> Result<Scenario, ScenarioError> {
        let built_in =
            BUILT_IN
                .iter()
                .find(|b| b.name == name)
                .ok_or_else(|| ScenarioError::NotFound {
                    name: name.to_string(),
                })?;
        Scenario::parse(built_in.source, &format!("scenarios/{}.ron", built_in.name))
    }

    pub fn topic_index(&self, name: &str) -> Option<usize> {
        self.topics.iter().position(|t| t.name == name)
    }

    pub fn producer_index(&self, name: &str) -> Option<usize> {
        self.producers.iter().position(|p| p.name == name)
    }

    /// The replicas of each partition of a topic: the file's assignment, or Kafka's rack-unaware
    /// placement (`AdminUtils.assignReplicasToBrokers`) with start index and replica shift 0, where
    /// Kafka draws both at random. Brokers are `1..=brokers`.
    pub fn assignment(&self, topic: &TopicConfig) -> Vec<Vec<u32>> {
        if let Some(assignment) = &topic.assignment {
            return assignment.clone();
        }
        let n = self.cluster.brokers;
        let mut replica_shift = 0;
        (0..topic.partitions)
            .map(|p| {
                if p > 0 && p % n == 0 {
                    replica_shift += 1;
                }
                let first = p % n;
                let mut replicas = vec![first + 1];
                for j in 0..topic.replication_factor.saturating_sub(1) {
                    let shift = 1 + (replica_shift + j) % (n - 1);
                    replicas.push((first + shift) % n + 1);
                }
                replicas
            })
            .collect()
    }

    /// Refuses a scenario that cannot exist, naming the field. `until_ms` is how far it will run
    /// (its duration, or more from the command line), for the memory estimate.
    pub fn validate(&self, origin: &str, until_ms: u64) -> Result<(), ScenarioError> {
        let bad = |field: String, message: String| ScenarioError::Invalid {
            origin: origin.to_string(),
            field,
            message,
        };
        let c = &self.cluster;
        if c.brokers == 0 || c.brokers > limits::BROKERS {
            return Err(bad(
                "cluster.brokers".into(),
                format!(
                    "{} brokers: a cluster has 1 to {}",
                    c.brokers,
                    limits::BROKERS
                ),
            ));
        }
        if c.old_request_timeout_ms.is_some() {
            return Err(bad(
                "cluster.request_timeout_ms".into(),
                "is now replica_socket_timeout_ms: it is Kafka's replica.socket.timeout.ms, the followers' fetch timeout".into(),
            ));
        }
        if c.network_latency_ms == 0 || c.network_latency_ms > limits::LATENCY_MS {
            return Err(bad(
                "cluster.network_latency_ms".into(),
                format!(
                    "{} ms: a link takes 1 ms (the simulation's step) to {} ms",
                    c.network_latency_ms,
                    limits::LATENCY_MS
                ),
            ));
        }
        for (field, value) in [
            ("replica_lag_time_max_ms", c.replica_lag_time_max_ms),
            ("replica_socket_timeout_ms", c.replica_socket_timeout_ms),
            ("heartbeat_interval_ms", c.heartbeat_interval_ms),
            ("session_timeout_ms", c.session_timeout_ms),
            (
                "leader_imbalance_check_interval_ms",
                c.leader_imbalance_check_interval_ms,
            ),
        ] {
            if value < 2 {
                return Err(bad(
                    format!("cluster.{field}"),
                    format!("{value} ms: must be at least 2 ms"),
                ));
            }
        }
        let too_long = |field: String, value: u64| -> Result<(), ScenarioError> {
            if value > limits::DURATION_MS {
                Err(ScenarioError::Invalid {
                    origin: origin.to_string(),
                    field,
                    message: format!("{value} ms: at most {} ms (a week)", limits::DURATION_MS),
                })
            } else {
                Ok(())
            }
        };
        for (field, value) in [
            ("replica_lag_time_max_ms", c.replica_lag_time_max_ms),
            ("replica_fetch_wait_max_ms", c.replica_fetch_wait_max_ms),
            ("replica_socket_timeout_ms", c.replica_socket_timeout_ms),
            ("replica_fetch_backoff_ms", c.replica_fetch_backoff_ms),
            ("heartbeat_interval_ms", c.heartbeat_interval_ms),
            ("session_timeout_ms", c.session_timeout_ms),
            (
                "leader_imbalance_check_interval_ms",
                c.leader_imbalance_check_interval_ms,
            ),
            (
                "group_initial_rebalance_delay_ms",
                c.group_initial_rebalance_delay_ms,
            ),
            (
                "group_consumer_heartbeat_interval_ms",
                c.group_consumer_heartbeat_interval_ms,
            ),
            (
                "group_consumer_session_timeout_ms",
                c.group_consumer_session_timeout_ms,
            ),
        ] {
            too_long(format!("cluster.{field}"), value)?;
        }
        // `GroupCoordinatorConfig`: group.consumer.heartbeat.interval.ms must be less than
        // group.consumer.session.timeout.ms.
        let (heartbeat, session) = (
            c.group_consumer_heartbeat_interval_ms,
            c.group_consumer_session_timeout_ms,
        );
        if heartbeat == 0 || heartbeat >= session {
            return Err(bad(
                "cluster.group_consumer_heartbeat_interval_ms".into(),
                format!(
                    "{heartbeat} ms must be above 0 and below group_consumer_session_timeout_ms ({session} ms), as Kafka requires"
                ),
            ));
        }
        // KafkaConfig.validateValues: replica.fetch.wait.max.ms is at most replica.socket.timeout.ms
        // (replica_socket_timeout_ms), so a held fetch does not time out at the follower, which
        // would fetch again while the first is still held; and at most replica.lag.time.max.ms.
        for (field, value) in [
            ("replica_socket_timeout_ms", c.replica_socket_timeout_ms),
            ("replica_lag_time_max_ms", c.replica_lag_time_max_ms),
        ] {
            if c.replica_fetch_wait_max_ms > value {
                return Err(bad(
                    "cluster.replica_fetch_wait_max_ms".into(),
                    format!(
                        "{} ms: at most {field} ({value} ms), as Kafka requires",
                        c.replica_fetch_wait_max_ms
                    ),
                ));
            }
        }
        if c.session_timeout_ms <= c.heartbeat_interval_ms {
            return Err(bad(
                "cluster.session_timeout_ms".into(),
                format!(
                    "{} ms is not above heartbeat_interval_ms ({} ms): every broker would be fenced between heartbeats",
                    c.session_timeout_ms, c.heartbeat_interval_ms
                ),
            ));
        }
        if c.replica_fetch_max_bytes == 0 || c.replica_fetch_max_bytes > limits::FETCH_BYTES {
            return Err(bad(
                "cluster.replica_fetch_max_bytes".into(),
                format!(
                    "{}: must be 1 to {}",
                    c.replica_fetch_max_bytes,
                    limits::FETCH_BYTES
                ),
            ));
        }
        if self.duration_ms == 0 || self.duration_ms > limits::DURATION_MS {
            return Err(bad(
                "duration_ms".into(),
                format!(
                    "{} ms: a run lasts 1 ms to {} ms (a week)",
                    self.duration_ms,
                    limits::DURATION_MS
                ),
            ));
        }

        let mut total_partitions: u64 = 0;
        let mut total_replicas: u64 = 0;
        for (i, t) in self.topics.iter().enumerate() {
            let at = |f: &str| format!("topics[{i}].{f}");
            if t.name.is_empty() {
                return Err(bad(at("name"), "a topic needs a name".into()));
            }
            if self.topics[..i].iter().any(|o| o.name == t.name) {
                return Err(bad(
                    at("name"),
                    format!("topic {:?} is defined twice", t.name),
                ));
            }
            if t.partitions == 0 {
                return Err(bad(
                    at("partitions"),
                    "0 partitions: a topic has at least one".into(),
                ));
            }
            total_partitions += u64::from(t.partitions);
            if total_partitions > u64::from(limits::PARTITIONS) {
                return Err(bad(
                    at("partitions"),
                    format!(
                        "{} partitions in all: at most {} fit",
                        total_partitions,
                        limits::PARTITIONS
                    ),
                ));
            }
            if t.replication_factor == 0 {
                return Err(bad(
                    at("replication_factor"),
                    "0: every partition has at least one replica".into(),
                ));
            }
            if t.replication_factor > c.brokers {
                return Err(bad(
                    at("replication_factor"),
                    format!(
                        "{} is above the broker count ({}): each replica needs its own broker",
                        t.replication_factor, c.brokers
                    ),
                ));
            }
            total_replicas += u64::from(t.partitions) * u64::from(t.replication_factor);
            if total_replicas > limits::REPLICAS {
                return Err(bad(
                    at("replication_factor"),
                    format!(
                        "{total_replicas} replicas in all (partitions x replication factor): at most {} fit",
                        limits::REPLICAS
                    ),
                ));
            }
            if t.min_insync_replicas == 0 {
                return Err(bad(
                    at("min_insync_replicas"),
                    "0: Kafka's minimum is 1".into(),
                ));
            }
            if t.min_insync_replicas > t.replication_factor {
                return Err(bad(
                    at("min_insync_replicas"),
                    format!(
                        "{} is above the replication factor ({}): acks=all could never succeed",
                        t.min_insync_replicas, t.replication_factor
                    ),
                ));
            }
            if let Some(assignment) = &t.assignment {
                if assignment.len() != t.partitions as usize {
                    return Err(bad(
                        at("assignment"),
                        format!(
                            "lists {} partitions, the topic has {}",
                            assignment.len(),
                            t.partitions
                        ),
                    ));
                }
                for (p, replicas) in assignment.iter().enumerate() {
                    let field = format!("topics[{i}].assignment[{p}]");
                    if replicas.len() != t.replication_factor as usize {
                        return Err(bad(
                            field,
                            format!(
                                "{} replicas, the replication factor is {}",
                                replicas.len(),
                                t.replication_factor
                            ),
                        ));
                    }
                    for (j, b) in replicas.iter().enumerate() {
                        if *b == 0 || *b > c.brokers {
                            return Err(bad(
                                field,
                                format!(
                                    "broker {b} does not exist (brokers are 1 to {})",
                                    c.brokers
                                ),
                            ));
                        }
                        if replicas[..j].contains(b) {
                            return Err(bad(field, format!("broker {b} is listed twice")));
                        }
                    }
                }
            }
        }

        if self.producers.len() > limits::PRODUCERS {
            return Err(bad(
                "producers".into(),
                format!(
                    "{} producers: at most {}",
                    self.producers.len(),
                    limits::PRODUCERS
                ),
            ));
        }
        let mut memory = RecordMemory::default();
        for (i, p) in self.producers.iter().enumerate() {
            let at = |f: &str| format!("producers[{i}].{f}");
            if p.name.is_empty() {
                return Err(bad(at("name"), "a producer needs a name".into()));
            }
            if self.producers[..i].iter().any(|o| o.name == p.name) {
                return Err(bad(
                    at("name"),
                    format!("producer {:?} is defined twice", p.name),
                ));
            }
            let Some(topic) = self.topic_index(&p.topic) else {
                return Err(bad(at("topic"), format!("no topic named {:?}", p.topic)));
            };
            if let Some(why) = rate_too_high(p.records_per_sec) {
                return Err(bad(at("records_per_sec"), why));
            }
            if p.record_bytes == 0 || p.record_bytes > limits::RECORD_BYTES {
                return Err(bad(
                    at("record_bytes"),
                    format!(
                        "{}: a record has 1 to {} bytes",
                        p.record_bytes,
                        limits::RECORD_BYTES
                    ),
                ));
            }
            if p.batch_size == 0 || p.batch_size > limits::BATCH_SIZE {
                return Err(bad(
                    at("batch_size"),
                    format!("{}: must be 1 to {}", p.batch_size, limits::BATCH_SIZE),
                ));
            }
            if let Keys::Sequence(key) | Keys::Fixed(key) = &p.keys
                && let Some(why) = key_too_long(key)
            {
                return Err(bad(at("keys"), why));
            }
            if let Keys::Random(0) = p.keys {
                return Err(bad(at("keys"), "Random(0): needs at least one key".into()));
            }
            if p.enable_idempotence == Some(true) && p.acks != Acks::All {
                return Err(bad(
                    at("enable_idempotence"),
                    format!(
                        "idempotence needs acks=all, this producer has acks={} (Kafka refuses the config)",
                        p.acks.as_config()
                    ),
                ));
            }
            if p.max_in_flight_requests_per_connection == 0 {
                return Err(bad(
                    at("max_in_flight_requests_per_connection"),
                    "0: a producer needs at least one request in flight".into(),
                ));
            }
            // Kafka 4.0 refuses this even when idempotence is only on by default, with any acks
            // (`ProducerConfig.postProcessAndValidateIdempotenceConfigs`).
            let in_flight = p.max_in_flight_requests_per_connection;
            if p.enable_idempotence != Some(false) && in_flight > 5 {
                return Err(bad(
                    at("max_in_flight_requests_per_connection"),
                    format!(
                        "{in_flight}: the idempotent producer allows at most 5 requests in flight; set enable_idempotence: Some(false) for more (Kafka refuses the config)"
                    ),
                ));
            }
            for (field, value) in [
                ("linger_ms", p.linger_ms),
                ("request_timeout_ms", p.request_timeout_ms),
                ("delivery_timeout_ms", p.delivery_timeout_ms),
                ("retry_backoff_ms", p.retry_backoff_ms),
                ("retry_backoff_max_ms", p.retry_backoff_max_ms),
            ] {
                too_long(at(field), value)?;
            }
            for (field, value) in [
                ("request_timeout_ms", p.request_timeout_ms),
                ("retry_backoff_ms", p.retry_backoff_ms),
            ] {
                if value == 0 {
                    return Err(bad(at(field), "must be at least 1 ms".into()));
                }
            }
            if p.retry_backoff_max_ms < p.retry_backoff_ms {
                return Err(bad(
                    at("retry_backoff_max_ms"),
                    "must be at least retry_backoff_ms".into(),
                ));
            }
            // `KafkaProducer.configureDeliveryTimeout` refuses this combination.
            if p.delivery_timeout_ms < p.linger_ms + p.request_timeout_ms {
                return Err(bad(
                    at("delivery_timeout_ms"),
                    format!(
                        "{} is below linger_ms + request_timeout_ms ({}): Kafka refuses the config",
                        p.delivery_timeout_ms,
                        p.linger_ms + p.request_timeout_ms
                    ),
                ));
            }
            memory.add(
                u64::from(p.records_per_sec).saturating_mul(until_ms / 1000 + 1),
                u64::from(self.topics[topic].replication_factor),
            );
        }

        if let Some(racks) = &c.broker_racks
            && racks.len() != c.brokers as usize
        {
            return Err(bad(
                "cluster.broker_racks".into(),
                format!(
                    "{} racks for {} brokers: give one per broker",
                    racks.len(),
                    c.brokers
                ),
            ));
        }
        if c.offsets_topic_partitions == 0 || c.offsets_topic_partitions > limits::PARTITIONS {
            return Err(bad(
                "cluster.offsets_topic_partitions".into(),
                format!(
                    "{}: must be 1 to {}",
                    c.offsets_topic_partitions,
                    limits::PARTITIONS
                ),
            ));
        }
        if c.offsets_topic_replication_factor == 0 {
            return Err(bad(
                "cluster.offsets_topic_replication_factor".into(),
                "0: the offsets topic needs at least one replica".into(),
            ));
        }
        let mut consumers: u64 = 0;
        for (i, g) in self.consumer_groups.iter().enumerate() {
            let at = |f: &str| format!("consumer_groups[{i}].{f}");
            if g.name.is_empty() {
                return Err(bad(at("name"), "a group needs a group.id".into()));
            }
            if self.consumer_groups[..i].iter().any(|o| o.name == g.name) {
                return Err(bad(
                    at("name"),
                    format!("group {:?} is defined twice", g.name),
                ));
            }
            if g.topics.is_empty() {
                return Err(bad(
                    at("topics"),
                    "a group subscribes to at least one topic".into(),
                ));
            }
            if let Some(t) = g.topics.iter().find(|t| self.topic_index(t).is_none()) {
                return Err(bad(at("topics"), format!("no topic named {t:?}")));
            }
            if let Some((j, t)) = g
                .topics
                .iter()
                .enumerate()
                .find(|(j, t)| g.topics[..*j].contains(t))
            {
                return Err(bad(
                    at(&format!("topics[{j}]")),
                    format!("{t:?} is listed twice: a group subscribes to a topic once"),
                ));
            }
            match g.protocol {
                GroupProtocol::Classic => {
                    if g.assignor() == Assignor::Uniform {
                        return Err(bad(
                            at("assignor"),
                            "Uniform is a server-side assignor of the consumer protocol \
                             (group.consumer.assignors): a classic group's leader runs Range, \
                             RoundRobin, Sticky or CooperativeSticky"
                                .into(),
                        ));
                    }
                }
                GroupProtocol::Consumer => {
                    // `ConsumerConfig.CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`: with
                    // group.protocol=consumer the coordinator assigns and sets the timings.
                    if !matches!(g.assignor(), Assignor::Uniform | Assignor::Range) {
                        return Err(bad(
                            at("assignor"),
                            format!(
                                "{:?} is a client-side assignor (partition.assignment.strategy), \
                                 which Kafka's consumer refuses with group.protocol=consumer: the \
                                 coordinator assigns, with Uniform or Range (group.remote.assignor)",
                                g.assignor()
                            ),
                        ));
                    }
                    for (field, value, broker) in [
                        (
                            "session_timeout_ms",
                            g.session_timeout_ms,
                            "cluster.group_consumer_session_timeout_ms",
                        ),
                        (
                            "heartbeat_interval_ms",
                            g.heartbeat_interval_ms,
                            "cluster.group_consumer_heartbeat_interval_ms",
                        ),
                    ] {
                        if value.is_some() {
                            return Err(bad(
                                at(field),
                                format!(
                                    "cannot be set with protocol Consumer, as Kafka's consumer \
                                     refuses it with group.protocol=consumer: the broker's {broker} \
                                     applies"
                                ),
                            ));
                        }
                    }
                    if g.static_members {
                        return Err(bad(
                            at("static_members"),
                            "static membership is modelled for the classic protocol only".into(),
                        ));
                    }
                }
            }
            for (field, value) in [
                ("auto_commit_interval_ms", g.auto_commit_interval_ms),
                ("session_timeout_ms", g.session_timeout_ms()),
                ("heartbeat_interval_ms", g.heartbeat_interval_ms()),
                ("max_poll_interval_ms", g.max_poll_interval_ms),
            ] {
                too_long(at(field), value)?;
            }
            let (heartbeat, session) = (g.heartbeat_interval_ms(), g.session_timeout_ms());
            if heartbeat == 0 || heartbeat >= session {
                return Err(bad(
                    at("heartbeat_interval_ms"),
                    format!(
                        "{heartbeat} ms must be above 0 and below session_timeout_ms ({session} ms), as Kafka requires"
                    ),
                ));
            }
            for (field, value) in [
                ("auto_commit_interval_ms", g.auto_commit_interval_ms),
                ("max_poll_records", u64::from(g.max_poll_records)),
                // `ConsumerConfig`: max.poll.interval.ms is at least 1.
                ("max_poll_interval_ms", g.max_poll_interval_ms),
            ] {
                if value == 0 {
                    return Err(bad(at(field), "must be at least 1".into()));
                }
            }
            if let Some(why) = rate_too_high(g.records_per_sec) {
                return Err(bad(at("records_per_sec"), why));
            }
            consumers += u64::from(g.members);
        }
        for (i, entry) in self.timeline.iter().enumerate() {
            let field = format!("timeline[{i}].action");
            if entry.at_ms > self.duration_ms {
                return Err(bad(
                    format!("timeline[{i}].at_ms"),
                    format!(
                        "{} is after the end of the scenario (duration_ms {})",
                        entry.at_ms, self.duration_ms
                    ),
                ));
            }
            let broker = |b: u32| -> Result<(), ScenarioError> {
                if b == 0 || b > c.brokers {
                    Err(bad(
                        field.clone(),
                        format!("broker {b} does not exist (brokers are 1 to {})", c.brokers),
                    ))
                } else {
                    Ok(())
                }
            };
            let producer = |name: &str| -> Result<usize, ScenarioError> {
                self.producer_index(name)
                    .ok_or_else(|| bad(field.clone(), format!("no producer named {name:?}")))
            };
            // The replication factor of a producer's topic (checked to exist above).
            let producer_rf = |p: usize| {
                self.topic_index(&self.producers[p].topic)
                    .map_or(1, |t| u64::from(self.topics[t].replication_factor))
            };
            match &entry.action {
                Action::CutLink(a, b) | Action::HealLink(a, b) => {
                    broker(*a)?;
                    broker(*b)?;
                    if a == b {
                        return Err(bad(
                            field,
                            format!("a link joins two brokers, not {a} and {b}"),
                        ));
                    }
                }
                Action::SlowBroker(b, extra) => {
                    broker(*b)?;
                    if *extra > limits::LATENCY_MS {
                        return Err(bad(
                            field,
                            format!("{extra} ms: at most {}", limits::LATENCY_MS),
                        ));
                    }
                }
                Action::SetAcks(name, acks) => {
                    let p = &self.producers[producer(name)?];
                    if p.enable_idempotence == Some(true) && *acks != Acks::All {
                        return Err(bad(
                            field,
                            format!(
                                "producer {name:?} sets enable_idempotence, which needs acks=all"
                            ),
                        ));
                    }
                }
                Action::SetRate(name, rate) => {
                    let p = producer(name)?;
                    if let Some(why) = rate_too_high(*rate) {
                        return Err(bad(field, why));
                    }
                    memory.add(
                        u64::from(*rate)
                            .saturating_mul(until_ms.saturating_sub(entry.at_ms) / 1000 + 1),
                        producer_rf(p),
                    );
                }
                Action::CrashBroker(b)
                | Action::RestartBroker(b)
                | Action::WipeBroker(b)
                | Action::IsolateBroker(b)
                | Action::HealBroker(b)
                | Action::CutControllerLink(b)
                | Action::HealControllerLink(b) => broker(*b)?,
                Action::PreferredElection => {}
                Action::AddConsumer(group)
                | Action::RemoveConsumer(group)
                | Action::CrashConsumer(group)
                | Action::SetConsumerRate(group, _) => {
                    if let Action::SetConsumerRate(_, rate) = &entry.action
                        && let Some(why) = rate_too_high(*rate)
                    {
                        return Err(bad(field, why));
                    }
                    if !self.consumer_groups.iter().any(|g| g.name == *group) {
                        return Err(bad(field, format!("no consumer group named {group:?}")));
                    }
                    if matches!(entry.action, Action::AddConsumer(_)) {
                        consumers += 1;
                    }
                }
                Action::Produce(name, key, count) => {
                    let p = producer(name)?;
                    if let Some(key) = key
                        && let Some(why) = key_too_long(key)
                    {
                        return Err(bad(field, why));
                    }
                    memory.add(*count, producer_rf(p));
                }
            }
        }
        if consumers > u64::from(limits::CONSUMERS) {
            return Err(bad(
                "consumer_groups".into(),
                format!(
                    "{consumers} consumers in all: at most {}",
                    limits::CONSUMERS
                ),
            ));
        }
        if memory.bytes > limits::RECORD_MEMORY_BYTES {
            const MIB: u64 = 1024 * 1024;
            return Err(bad(
                "producers".into(),
                format!(
                    "the producers would make about {} records by {until_ms} ms, which with their copies in every replica take about {} MiB; at most {} MiB fit in memory (lower records_per_sec or duration_ms)",
                    memory.records,
                    memory.bytes / MIB,
                    limits::RECORD_MEMORY_BYTES / MIB
                ),
            ));
        }
        Ok(())
    }
}
