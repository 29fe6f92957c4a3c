//! The topics section: partitions, replication factor, `min.insync.replicas`, placement, and
//! how the log ages (segments, retention, cleanup policy).

use serde::{Deserialize, Serialize};

use super::{Check, LogSetting, Scenario, ScenarioError, defaults, limits};

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
    /// `retention.ms`: a segment whose newest record is older than this is deleted; -1 keeps
    /// every segment (7 days by default).
    #[serde(default = "defaults::retention_ms")]
    pub retention_ms: i64,
    /// `retention.bytes`: the oldest segments are deleted while the log holds more than this; -1
    /// (the default) sets no limit.
    #[serde(default = "defaults::retention_bytes")]
    pub retention_bytes: i64,
    /// `segment.bytes`: the active segment rolls before an append would take it past this size
    /// (1 GiB by default; Kafka's topic-level minimum is 14 bytes).
    #[serde(default = "defaults::segment_bytes")]
    pub segment_bytes: u64,
    /// `segment.ms`: the active segment rolls once its first record is this much older than the
    /// records appended (7 days by default).
    #[serde(default = "defaults::segment_ms")]
    pub segment_ms: u64,
    /// `cleanup.policy`: what happens to old segments.
    #[serde(default)]
    pub cleanup_policy: CleanupPolicy,
    /// `min.cleanable.dirty.ratio`: the cleaner takes a compacted log once the bytes written
    /// since its last cleaning are more than this share of the log (0.5 by default).
    #[serde(default = "defaults::min_cleanable_dirty_ratio")]
    pub min_cleanable_dirty_ratio: DirtyRatio,
    /// `min.compaction.lag.ms`: a record stays uncompacted at least this long (0 by default).
    #[serde(default = "defaults::min_compaction_lag_ms")]
    pub min_compaction_lag_ms: u64,
    /// `delete.retention.ms`: how long a tombstone outlives the cleaning that first kept it,
    /// for consumers to see the delete (a day by default).
    #[serde(default = "defaults::delete_retention_ms")]
    pub delete_retention_ms: u64,
}

/// `min.cleanable.dirty.ratio`, a share from 0 to 1, kept in millionths so that the cleaner's
/// comparison is exact on every platform. Written as a number (`0.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirtyRatio(u32);

impl DirtyRatio {
    const ONE: u32 = 1_000_000;

    pub const fn from_millionths(millionths: u32) -> DirtyRatio {
        DirtyRatio(millionths)
    }

    /// The share nearest `value`, if it lies from 0 to 1 (`LogConfig`'s `between(0, 1)`).
    pub fn new(value: f64) -> Option<DirtyRatio> {
        (0.0..=1.0)
            .contains(&value)
            .then(|| DirtyRatio((value * f64::from(Self::ONE)).round() as u32))
    }

    pub fn value(self) -> f64 {
        f64::from(self.0) / f64::from(Self::ONE)
    }

    /// Whether `part` of `whole` bytes is a larger share than this (`cleanableRatio >
    /// minCleanableRatio`).
    pub fn exceeded_by(self, part: u64, whole: u64) -> bool {
        u128::from(part) * u128::from(Self::ONE) > u128::from(self.0) * u128::from(whole)
    }
}

impl Serialize for DirtyRatio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.value())
    }
}

impl<'de> Deserialize<'de> for DirtyRatio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(d)?;
        DirtyRatio::new(value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{value}: min.cleanable.dirty.ratio lies from 0 to 1"
            ))
        })
    }
}

impl std::fmt::Display for DirtyRatio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.value())
    }
}

/// `cleanup.policy` (`TopicConfig.CLEANUP_POLICY_CONFIG`): `delete`, `compact`, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CleanupPolicy {
    /// Retention deletes old segments (Kafka's default).
    #[default]
    Delete,
    /// The log cleaner keeps the latest record of each key; retention deletes nothing.
    Compact,
    /// Both: compacted, and old segments deleted too.
    CompactDelete,
}

impl CleanupPolicy {
    /// Whether retention deletes segments (`LogConfig.delete`).
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }

    /// Whether the log cleaner compacts the log (`LogConfig.compact`).
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }

    /// As `kafka-configs` writes it.
    pub fn as_kafka(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }
}

/// `segment.bytes`' minimum for a topic (`LogConfig`'s `atLeast(LegacyRecord.RECORD_OVERHEAD_V0)`).
pub const MIN_SEGMENT_BYTES: u64 = 14;

impl Scenario {
    /// The replicas of each partition of a topic: the file's assignment, or Kafka's rack-unaware
    /// placement (`AdminUtils.assignReplicasToBrokers`) with start index and replica shift 0, where
    /// Kafka draws both at random. Brokers are `1..=brokers`.
    pub fn assignment(&self, topic: &TopicConfig) -> Vec<Vec<u32>> {
        if let Some(assignment) = &topic.assignment {
            return assignment.clone();
        }
        rack_unaware_assignment(
            self.cluster.brokers,
            topic.partitions,
            topic.replication_factor,
        )
    }
}

/// Kafka's rack-unaware placement (`AdminUtils.assignReplicasToBrokers`) of `partitions`
/// partitions on brokers `1..=brokers`, with start index and replica shift 0 where Kafka draws
/// both at random.
pub fn rack_unaware_assignment(brokers: u32, partitions: u32, rf: u32) -> Vec<Vec<u32>> {
    {
        let n = brokers;
        let mut replica_shift = 0;
        (0..partitions)
            .map(|p| {
                if p > 0 && p % n == 0 {
                    replica_shift += 1;
                }
                let first = p % n;
                let mut replicas = vec![first + 1];
                for j in 0..rf.saturating_sub(1) {
                    let shift = 1 + (replica_shift + j) % (n - 1);
                    replicas.push((first + shift) % n + 1);
                }
                replicas
            })
            .collect()
    }
}

/// Refuses topics that cannot exist on this cluster, naming the field.
pub(super) fn validate(s: &Scenario, check: &Check) -> Result<(), ScenarioError> {
    let bad = |field: String, message: String| check.bad(field, message);
    let c = &s.cluster;
    let mut total_partitions: u64 = 0;
    let mut total_replicas: u64 = 0;
    for (i, t) in s.topics.iter().enumerate() {
        let at = |f: &str| format!("topics[{i}].{f}");
        if t.name.is_empty() {
            return Err(bad(at("name"), "a topic needs a name".into()));
        }
        if s.topics[..i].iter().any(|o| o.name == t.name) {
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
        // The same refusals as a live change (`kafka-configs --alter`).
        for (field, setting) in [
            ("retention_ms", LogSetting::RetentionMs(t.retention_ms)),
            (
                "retention_bytes",
                LogSetting::RetentionBytes(t.retention_bytes),
            ),
            ("segment_bytes", LogSetting::SegmentBytes(t.segment_bytes)),
            ("segment_ms", LogSetting::SegmentMs(t.segment_ms)),
        ] {
            setting.check().map_err(|why| bad(at(field), why))?;
        }
        if t.min_insync_replicas == 0 {
            return Err(bad(
                at("min_insync_replicas"),
                "0: Kafka's minimum is 1".into(),
            ));
        }
        // Above the replication factor is accepted: since Kafka 3.7 brokers and the controller
        // cap it by the replica count (`Partition.effectiveMinIsr`, KAFKA-15583).
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
                            format!("broker {b} does not exist (brokers are 1 to {})", c.brokers),
                        ));
                    }
                    if replicas[..j].contains(b) {
                        return Err(bad(field, format!("broker {b} is listed twice")));
                    }
                }
            }
        }
    }
    Ok(())
}
