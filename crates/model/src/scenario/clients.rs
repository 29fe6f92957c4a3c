//! The clients sections: producers and consumer groups, with Kafka's client defaults.

use serde::{Deserialize, Serialize};

use super::limits::{self, RecordMemory, key_too_long, rate_too_high};
use super::{Assignor, Check, Scenario, ScenarioError, defaults, given, present};

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
    /// Every this many records, the application sends a tombstone (its key with a null value)
    /// instead of a value: the delete a compacted topic keeps for `delete.retention.ms`. 0 (the
    /// default) sends none.
    #[serde(default)]
    pub tombstone_every: u32,
}

/// A producer's settings to change live (`SetProducer`); those left out stay as they are. The
/// application restarts its producer with them: batches already made keep theirs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerSettings {
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub acks: Option<Acks>,
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub records_per_sec: Option<u32>,
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub keys: Option<Keys>,
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub linger_ms: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub batch_size: Option<u32>,
    /// `Some(None)` goes back to Kafka's default (on with acks=all).
    #[serde(
        default,
        deserialize_with = "present",
        serialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_idempotence: Option<Option<bool>>,
}

impl ProducerSettings {
    /// `config` with these settings applied, refused as Kafka's client refuses a config (the
    /// checks `validate_producers` makes of a file's producer).
    pub fn applied_to(&self, config: &ProducerConfig) -> Result<ProducerConfig, String> {
        let mut next = config.clone();
        if let Some(acks) = self.acks {
            next.acks = acks;
        }
        if let Some(rate) = self.records_per_sec {
            next.records_per_sec = rate;
        }
        if let Some(keys) = &self.keys {
            next.keys = keys.clone();
        }
        if let Some(linger) = self.linger_ms {
            next.linger_ms = linger;
        }
        if let Some(batch) = self.batch_size {
            next.batch_size = batch;
        }
        if let Some(idempotence) = self.enable_idempotence {
            next.enable_idempotence = idempotence;
        }
        match producer_refusal(&next) {
            Some((field, why)) => Err(format!("{field} {why}")),
            None => Ok(next),
        }
    }
}

/// Why Kafka's producer (or the model's limits) refuses a producer's config, and the field:
/// the checks of a file's producer and of a running one's new settings (`SetProducer`) alike.
pub(super) fn producer_refusal(p: &ProducerConfig) -> Option<(&'static str, String)> {
    if let Some(why) = rate_too_high(p.records_per_sec) {
        return Some(("records_per_sec", why));
    }
    if p.record_bytes == 0 || p.record_bytes > limits::RECORD_BYTES {
        return Some((
            "record_bytes",
            format!(
                "{}: a record has 1 to {} bytes",
                p.record_bytes,
                limits::RECORD_BYTES
            ),
        ));
    }
    if p.batch_size == 0 || p.batch_size > limits::BATCH_SIZE {
        return Some((
            "batch_size",
            format!("{}: must be 1 to {}", p.batch_size, limits::BATCH_SIZE),
        ));
    }
    if let Keys::Sequence(key) | Keys::Fixed(key) = &p.keys
        && let Some(why) = key_too_long(key)
    {
        return Some(("keys", why));
    }
    if let Keys::Random(0) = p.keys {
        return Some(("keys", "Random(0): needs at least one key".into()));
    }
    if p.enable_idempotence == Some(true) && p.acks != Acks::All {
        return Some((
            "enable_idempotence",
            format!(
                "idempotence needs acks=all, this producer has acks={} (Kafka refuses the config)",
                p.acks.as_config()
            ),
        ));
    }
    if p.max_in_flight_requests_per_connection == 0 {
        return Some((
            "max_in_flight_requests_per_connection",
            "0: a producer needs at least one request in flight".into(),
        ));
    }
    // Kafka 4.0 refuses this even when idempotence is only on by default, with any acks
    // (`ProducerConfig.postProcessAndValidateIdempotenceConfigs`).
    let in_flight = p.max_in_flight_requests_per_connection;
    if p.enable_idempotence != Some(false) && in_flight > 5 {
        return Some((
            "max_in_flight_requests_per_connection",
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
        if let Some(why) = limits::longer_than_a_week(value) {
            return Some((field, why));
        }
    }
    for (field, value) in [
        ("request_timeout_ms", p.request_timeout_ms),
        ("retry_backoff_ms", p.retry_backoff_ms),
    ] {
        if value == 0 {
            return Some((field, "must be at least 1 ms".into()));
        }
    }
    if p.retry_backoff_max_ms < p.retry_backoff_ms {
        return Some((
            "retry_backoff_max_ms",
            "must be at least retry_backoff_ms".into(),
        ));
    }
    // `KafkaProducer.configureDeliveryTimeout` refuses this combination.
    if p.delivery_timeout_ms < p.linger_ms + p.request_timeout_ms {
        return Some((
            "delivery_timeout_ms",
            format!(
                "{} is below linger_ms + request_timeout_ms ({}): Kafka refuses the config",
                p.delivery_timeout_ms,
                p.linger_ms + p.request_timeout_ms
            ),
        ));
    }
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OffsetReset {
    Earliest,
    Latest,
    /// No reset: `poll()` throws (NoOffsetForPartitionException without a committed offset,
    /// OffsetOutOfRangeException out of range), and the application stops.
    None,
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
    /// `metadata.max.age.ms`: members ask for metadata at least this often, and so learn of
    /// partitions added to their topics.
    #[serde(default = "defaults::metadata_max_age_ms")]
    pub metadata_max_age_ms: u64,
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

/// Refuses producers Kafka's client would refuse, naming the field; returns the memory their
/// records take by `until_ms`.
pub(super) fn validate_producers(
    s: &Scenario,
    check: &Check,
    until_ms: u64,
) -> Result<RecordMemory, ScenarioError> {
    let bad = |field: String, message: String| check.bad(field, message);
    if s.producers.len() > limits::PRODUCERS {
        return Err(bad(
            "producers".into(),
            format!(
                "{} producers: at most {}",
                s.producers.len(),
                limits::PRODUCERS
            ),
        ));
    }
    let mut memory = RecordMemory::default();
    for (i, p) in s.producers.iter().enumerate() {
        let at = |f: &str| format!("producers[{i}].{f}");
        if p.name.is_empty() {
            return Err(bad(at("name"), "a producer needs a name".into()));
        }
        if s.producers[..i].iter().any(|o| o.name == p.name) {
            return Err(bad(
                at("name"),
                format!("producer {:?} is defined twice", p.name),
            ));
        }
        let Some(topic) = s.topic_index(&p.topic) else {
            return Err(bad(at("topic"), format!("no topic named {:?}", p.topic)));
        };
        if let Some((field, why)) = producer_refusal(p) {
            return Err(bad(at(field), why));
        }
        // `LogValidator.validateKey`: a compacted topic refuses a record without a key.
        if matches!(p.keys, Keys::None) && s.topics[topic].cleanup_policy.compacts() {
            return Err(bad(
                at("keys"),
                format!(
                    "topic {:?} is compacted, and Kafka refuses records without a key there \
                     (INVALID_RECORD): give the producer keys",
                    p.topic
                ),
            ));
        }
        if p.tombstone_every > 0 && matches!(p.keys, Keys::None) {
            return Err(bad(
                at("tombstone_every"),
                "a tombstone deletes a key: the producer needs keys to send one".into(),
            ));
        }
        memory.add(
            u64::from(p.records_per_sec).saturating_mul(until_ms / 1000 + 1),
            u64::from(s.topics[topic].replication_factor),
        );
    }
    Ok(memory)
}

/// Refuses consumer groups Kafka would refuse, naming the field; returns how many members they
/// start with.
pub(super) fn validate_groups(s: &Scenario, check: &Check) -> Result<u64, ScenarioError> {
    let bad = |field: String, message: String| check.bad(field, message);
    let too_long = |field: String, value: u64| check.at_most_a_week(field, value);
    let mut consumers: u64 = 0;
    for (i, g) in s.consumer_groups.iter().enumerate() {
        let at = |f: &str| format!("consumer_groups[{i}].{f}");
        if g.name.is_empty() {
            return Err(bad(at("name"), "a group needs a group.id".into()));
        }
        if s.consumer_groups[..i].iter().any(|o| o.name == g.name) {
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
        if let Some(t) = g.topics.iter().find(|t| s.topic_index(t).is_none()) {
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
            ("metadata_max_age_ms", g.metadata_max_age_ms),
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
    Ok(consumers)
}
