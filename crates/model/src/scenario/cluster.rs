//! The cluster section: brokers, links, and the broker settings of replication, fencing and
//! groups.

use serde::{Deserialize, Serialize};

use super::{Check, ScenarioError, defaults, limits};

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
    /// `log.retention.check.interval.ms`: how often each broker deletes the segments retention
    /// has expired, the first time 30 s after it starts (`log.initial.task.delay.ms`).
    #[serde(default = "defaults::log_retention_check_interval_ms")]
    pub log_retention_check_interval_ms: u64,
    /// `offsets.topic.segment.bytes` (100 MiB): the segments of `__consumer_offsets`, kept
    /// small in Kafka so that its compaction and a new coordinator's load go quicker.
    #[serde(default = "defaults::offsets_topic_segment_bytes")]
    pub offsets_topic_segment_bytes: u64,
    /// `log.cleaner.backoff.ms`: how long each broker's log cleaner sleeps when no compacted
    /// log is dirty enough to clean (15 s).
    #[serde(default = "defaults::log_cleaner_backoff_ms")]
    pub log_cleaner_backoff_ms: u64,
}

/// A value given in the file (which makes the field `Some`), written bare as any other field.
pub(super) fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Writes a field read by [`present`] back bare; a field not given is skipped.
pub(super) fn given<S: serde::Serializer, T: Serialize>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
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
            log_retention_check_interval_ms: defaults::log_retention_check_interval_ms(),
            log_cleaner_backoff_ms: defaults::log_cleaner_backoff_ms(),
            offsets_topic_segment_bytes: defaults::offsets_topic_segment_bytes(),
        }
    }
}

impl ClusterConfig {
    /// Refuses settings Kafka refuses, or that the model cannot run, naming the field.
    pub(super) fn validate(&self, check: &Check) -> Result<(), ScenarioError> {
        let bad = |field: String, message: String| check.bad(field, message);
        let too_long = |field: String, value: u64| check.at_most_a_week(field, value);
        let c = self;
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
            (
                "log_retention_check_interval_ms",
                c.log_retention_check_interval_ms,
            ),
            ("log_cleaner_backoff_ms", c.log_cleaner_backoff_ms),
        ] {
            too_long(format!("cluster.{field}"), value)?;
        }
        // `GroupCoordinatorConfig`: an INT, at least 1.
        if c.offsets_topic_segment_bytes == 0 || c.offsets_topic_segment_bytes > i32::MAX as u64 {
            return Err(bad(
                "cluster.offsets_topic_segment_bytes".into(),
                format!(
                    "{} bytes: Kafka takes 1 to {}",
                    c.offsets_topic_segment_bytes,
                    i32::MAX
                ),
            ));
        }
        // `CleanerConfig`: log.cleaner.backoff.ms is at least 0; the model takes 1 ms, so that
        // the cleaner's next look is always a later instant.
        if c.log_cleaner_backoff_ms == 0 {
            return Err(bad(
                "cluster.log_cleaner_backoff_ms".into(),
                "0 ms: the model's cleaner sleeps at least 1 ms between looks".into(),
            ));
        }
        if c.log_retention_check_interval_ms == 0 {
            return Err(bad(
                "cluster.log_retention_check_interval_ms".into(),
                "0 ms: Kafka's minimum is 1 ms".into(),
            ));
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
        Ok(())
    }
}
