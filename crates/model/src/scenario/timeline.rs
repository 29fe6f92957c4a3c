//! The timeline section: actions at their instants (the sandbox sends the same actions).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::limits::{self, RecordMemory, key_too_long, rate_too_high};
use super::{Acks, Check, ProducerSettings, Scenario, ScenarioError};

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
    /// Have a producer send a tombstone for this key: a null value, which deletes the key from
    /// a compacted topic.
    Tombstone(String, String),
    /// The broker's process dies; its disk is kept.
    CrashBroker(u32),
    /// A crashed or stopped broker starts again (with whatever disk it has).
    RestartBroker(u32),
    /// Stop a broker cleanly: its leaderships move to other in-sync replicas first
    /// (`kafka-server-stop`, `BrokerLifecycleManager.beginControlledShutdown`).
    ControlledShutdown(u32),
    /// The broker crashes and loses its disk: it restarts empty.
    WipeBroker(u32),
    /// Cut a broker off from every other node, the controller and clients included.
    IsolateBroker(u32),
    HealBroker(u32),
    /// A producer's connection to a broker hangs until `until_ms` (a half-open connection, a
    /// proxy that stops forwarding replies): the leader appends the batches and answers, no
    /// answer arrives, later answers on the connection are lost too, and the producer retries
    /// once `request.timeout.ms` closes it.
    DropResponses(String, u32, u64),
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
    /// Start or close members (cleanly, newest first) until the group has this many.
    SetGroupMembers(String, u32),
    /// A topic's `min.insync.replicas` (`kafka-configs --alter`, applied by every broker).
    SetMinIsr(String, u32),
    /// A topic's `unclean.leader.election.enable`.
    SetUncleanElection(String, bool),
    /// One of a topic's log settings (`kafka-configs --alter --add-config`): every broker takes it
    /// at once, and each applies it at its next append or retention check.
    SetTopicConfig(String, LogSetting),
    /// Eligible leader replicas (KIP-966) on or off for the cluster.
    SetEligibleLeaderReplicas(bool),
    /// Restart a producer with other settings; those left out stay.
    SetProducer(String, ProducerSettings),
    /// Restart every broker in turn, in id order, stopping each as `Stop` says; the next waits
    /// until no partition is under-replicated, and the preferred leaders are elected at the end.
    RollingRestart(Stop),
    /// Move a partition's replicas to these brokers, the first the preferred leader
    /// (`kafka-reassign-partitions`, KIP-455): the new replicas catch up and join the ISR, then
    /// the old ones are dropped. Also how a replication factor changes.
    Reassign(String, u32, Vec<u32>),
    /// Give a topic this many partitions in all (`kafka-topics --alter --partitions`,
    /// CreatePartitions): keyed records map by the new count once producers learn of it.
    AddPartitions(String, u32),
    /// A new broker, the next id, joins the cluster: it registers with the controller and hosts
    /// nothing until partitions are created or reassigned onto it.
    AddBroker,
}

/// How a rolling restart stops each broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stop {
    /// A controlled shutdown (`kafka-server-stop`): leaderships move first.
    Controlled,
    /// The process is killed (`kill -9`): the controller notices only when its session expires.
    Crash,
}

/// Why Kafka refuses a reassignment's replica list with INVALID_REPLICA_ASSIGNMENT
/// (`ReplicationControlManager.validateManualPartitionAssignment`), brokers being 1 to `brokers`.
pub fn reassignment_refusal(
    topic: &str,
    partition: u32,
    target: &[u32],
    brokers: u32,
) -> Option<String> {
    let name = format!("The manual partition assignment for {topic}-{partition}");
    if target.is_empty() {
        return Some(format!("{name} includes an empty replica list."));
    }
    for (i, b) in target.iter().enumerate() {
        if *b == 0 || *b > brokers {
            return Some(format!(
                "{name} includes broker {b}, but no such broker is registered."
            ));
        }
        if target[..i].contains(b) {
            return Some(format!("{name} includes the broker {b} more than once."));
        }
    }
    None
}

impl fmt::Display for Action {
    /// An action in words, as the event log and a refusal say it: "p1: acks=1 (idempotence
    /// off)", "controlled shutdown of broker 2".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Action::*;
        let records = |n: u64| if n == 1 { "record" } else { "records" };
        match self {
            CutLink(a, b) => write!(f, "cut link {a}-{b}"),
            HealLink(a, b) => write!(f, "heal link {a}-{b}"),
            SlowBroker(b, 0) => write!(f, "broker {b} at full speed again"),
            SlowBroker(b, ms) => write!(f, "broker {b} slowed by {ms} ms a message"),
            SetAcks(p, acks) => write!(f, "{p}: acks={}", acks.as_config()),
            SetRate(p, r) => write!(f, "{p}: {r} records/s"),
            Produce(p, Some(key), n) => write!(f, "{p}: {n} {} with key {key:?}", records(*n)),
            Produce(p, None, n) => write!(f, "{p}: {n} {} without a key", records(*n)),
            Tombstone(p, key) => write!(f, "{p}: a tombstone for key {key:?}"),
            CrashBroker(b) => write!(f, "crash broker {b}"),
            RestartBroker(b) => write!(f, "restart broker {b}"),
            ControlledShutdown(b) => write!(f, "controlled shutdown of broker {b}"),
            WipeBroker(b) => write!(f, "broker {b} dies with its disk"),
            IsolateBroker(b) => write!(f, "isolate broker {b}"),
            HealBroker(b) => write!(f, "reconnect broker {b}"),
            DropResponses(p, b, until) => {
                write!(
                    f,
                    "{p}: its connection to broker {b} hangs until {until} ms"
                )
            }
            CutControllerLink(b) => write!(f, "cut broker {b} off from the controller"),
            HealControllerLink(b) => write!(f, "reconnect broker {b} to the controller"),
            PreferredElection => f.write_str("preferred leader election"),
            AddConsumer(g) => write!(f, "{g}: a member joins"),
            RemoveConsumer(g) => write!(f, "{g}: the newest member leaves"),
            CrashConsumer(g) => write!(f, "{g}: the newest member crashes"),
            SetConsumerRate(g, r) => write!(f, "{g}: each member processes {r} records/s"),
            SetGroupMembers(g, n) => write!(f, "{g}: {n} members"),
            SetMinIsr(t, n) => write!(f, "{t}: min.insync.replicas={n}"),
            SetUncleanElection(t, on) => write!(f, "{t}: unclean.leader.election.enable={on}"),
            SetTopicConfig(t, setting) => write!(f, "{t}: {setting}"),
            SetEligibleLeaderReplicas(on) => write!(
                f,
                "eligible leader replicas (KIP-966) {}",
                if *on { "on" } else { "off" }
            ),
            SetProducer(p, settings) => write!(f, "{p}: {}", settings_in_words(settings)),
            RollingRestart(Stop::Controlled) => {
                f.write_str("rolling restart by controlled shutdowns")
            }
            RollingRestart(Stop::Crash) => f.write_str("rolling restart by kill -9"),
            Reassign(t, p, to) => write!(f, "reassign {t}-{p} to brokers {to:?}"),
            AddPartitions(t, n) => write!(f, "{t}: {n} partitions"),
            AddBroker => f.write_str("add a broker"),
        }
    }
}

/// A producer's new settings in words, as its config would name them; idempotence left to its
/// default follows acks, on only with acks=all (`ProducerConfig`,
/// `postProcessAndValidateIdempotenceConfigs`).
fn settings_in_words(s: &super::ProducerSettings) -> String {
    let mut parts = Vec::new();
    if let Some(acks) = s.acks {
        parts.push(format!("acks={}", acks.as_config()));
    }
    if let Some(rate) = s.records_per_sec {
        parts.push(format!("{rate} records/s"));
    }
    if let Some(keys) = &s.keys {
        parts.push(match keys {
            super::Keys::None => "no keys".to_string(),
            super::Keys::Sequence(prefix) => format!("keys {prefix}0, {prefix}1, ..."),
            super::Keys::Fixed(key) => format!("key {key:?}"),
            super::Keys::Random(n) => format!("{n} random keys"),
        });
    }
    if let Some(linger) = s.linger_ms {
        parts.push(format!("linger.ms={linger}"));
    }
    if let Some(batch) = s.batch_size {
        parts.push(format!("batch.size={batch}"));
    }
    match (s.enable_idempotence, s.acks) {
        (Some(Some(on)), _) => parts.push(format!("enable.idempotence={on}")),
        (Some(None), Some(Acks::All)) => parts.push("(idempotence on)".into()),
        (Some(None), Some(_)) => parts.push("(idempotence off)".into()),
        (Some(None), None) => parts.push("enable.idempotence back to its default".into()),
        (None, _) => {}
    }
    if parts.is_empty() {
        "settings unchanged".into()
    } else {
        parts.join(" ")
    }
}

/// Refuses actions that could never apply (an unknown broker, producer or group), naming the
/// entry; adds what they produce to `memory` and the members they add to `consumers`.
pub(super) fn validate(
    s: &Scenario,
    check: &Check,
    until_ms: u64,
    memory: &mut RecordMemory,
    consumers: &mut u64,
) -> Result<(), ScenarioError> {
    let bad = |field: String, message: String| check.bad(field, message);
    let c = &s.cluster;
    // Brokers an `AddBroker` adds may be named by any entry; one named before it joins is
    // refused when the action applies.
    let added = s
        .timeline
        .iter()
        .filter(|e| e.action == Action::AddBroker)
        .count() as u32;
    let brokers = c.brokers + added;
    if brokers > limits::BROKERS {
        return Err(bad(
            "timeline".into(),
            format!(
                "{} brokers with those AddBroker adds: a cluster has at most {}",
                brokers,
                limits::BROKERS
            ),
        ));
    }
    for (i, entry) in s.timeline.iter().enumerate() {
        let field = format!("timeline[{i}].action");
        if entry.at_ms > s.duration_ms {
            return Err(bad(
                format!("timeline[{i}].at_ms"),
                format!(
                    "{} is after the end of the scenario (duration_ms {})",
                    entry.at_ms, s.duration_ms
                ),
            ));
        }
        let broker = |b: u32| -> Result<(), ScenarioError> {
            if b == 0 || b > brokers {
                Err(bad(
                    field.clone(),
                    format!("broker {b} does not exist (brokers are 1 to {brokers})"),
                ))
            } else {
                Ok(())
            }
        };
        let producer = |name: &str| -> Result<usize, ScenarioError> {
            s.producer_index(name)
                .ok_or_else(|| bad(field.clone(), format!("no producer named {name:?}")))
        };
        // The replication factor of a producer's topic (checked to exist above).
        let producer_rf = |p: usize| {
            s.topic_index(&s.producers[p].topic)
                .map_or(1, |t| u64::from(s.topics[t].replication_factor))
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
            Action::DropResponses(name, b, until_ms) => {
                producer(name)?;
                broker(*b)?;
                if *until_ms <= entry.at_ms {
                    return Err(bad(
                        field,
                        format!(
                            "until {until_ms} ms: it must come after the action's instant, {} ms",
                            entry.at_ms
                        ),
                    ));
                }
            }
            Action::SetAcks(name, acks) => {
                let p = &s.producers[producer(name)?];
                if p.enable_idempotence == Some(true) && *acks != Acks::All {
                    return Err(bad(
                        field,
                        format!("producer {name:?} sets enable_idempotence, which needs acks=all"),
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
            | Action::ControlledShutdown(b)
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
                if !s.consumer_groups.iter().any(|g| g.name == *group) {
                    return Err(bad(field, format!("no consumer group named {group:?}")));
                }
                if matches!(entry.action, Action::AddConsumer(_)) {
                    *consumers += 1;
                }
            }
            Action::SetGroupMembers(group, members) => {
                if !s.consumer_groups.iter().any(|g| g.name == *group) {
                    return Err(bad(field, format!("no consumer group named {group:?}")));
                }
                if *members > limits::CONSUMERS {
                    return Err(bad(
                        field,
                        format!("{members} members: at most {}", limits::CONSUMERS),
                    ));
                }
                *consumers += u64::from(*members);
            }
            Action::SetMinIsr(topic, min_isr) => {
                if s.topic_index(topic).is_none() {
                    return Err(bad(field, format!("no topic named {topic:?}")));
                }
                if *min_isr == 0 {
                    return Err(bad(field, "0: Kafka's minimum is 1".into()));
                }
            }
            Action::SetUncleanElection(topic, _) => {
                if s.topic_index(topic).is_none() {
                    return Err(bad(field, format!("no topic named {topic:?}")));
                }
            }
            Action::SetTopicConfig(topic, setting) => {
                if s.topic_index(topic).is_none() {
                    return Err(bad(field, format!("no topic named {topic:?}")));
                }
                if let Err(why) = setting.check() {
                    return Err(bad(field, why));
                }
            }
            Action::SetEligibleLeaderReplicas(_)
            | Action::RollingRestart(_)
            | Action::AddBroker => {}
            Action::AddPartitions(topic, total) => {
                let Some(t) = s.topic_index(topic) else {
                    return Err(bad(field, format!("no topic named {topic:?}")));
                };
                let topics: u64 = s.topics.iter().map(|t| u64::from(t.partitions)).sum();
                let more = u64::from(total.saturating_sub(s.topics[t].partitions));
                if topics + more > u64::from(limits::PARTITIONS) {
                    return Err(bad(
                        field,
                        format!(
                            "{} partitions in all: at most {} fit",
                            topics + more,
                            limits::PARTITIONS
                        ),
                    ));
                }
                let rf = u64::from(s.topics[t].replication_factor);
                let replicas: u64 = s
                    .topics
                    .iter()
                    .map(|t| u64::from(t.partitions) * u64::from(t.replication_factor))
                    .sum();
                if replicas + more * rf > limits::REPLICAS {
                    return Err(bad(
                        field,
                        format!(
                            "{} replicas in all (partitions x replication factor): at most {} fit",
                            replicas + more * rf,
                            limits::REPLICAS
                        ),
                    ));
                }
            }
            Action::Reassign(topic, partition, target) => {
                let Some(t) = s.topic_index(topic) else {
                    return Err(bad(field, format!("no topic named {topic:?}")));
                };
                if *partition >= s.topics[t].partitions {
                    return Err(bad(
                        field,
                        format!(
                            "{topic} has partitions 0 to {}, not {partition}",
                            s.topics[t].partitions - 1
                        ),
                    ));
                }
                if let Some(why) = reassignment_refusal(topic, *partition, target, brokers) {
                    return Err(bad(field, why));
                }
            }
            Action::SetProducer(name, settings) => {
                let p = producer(name)?;
                // What can be judged before the run; the rest (acks with idempotence, say)
                // depends on earlier changes and is checked when the action applies.
                let alone = ProducerSettings {
                    acks: None,
                    enable_idempotence: None,
                    ..settings.clone()
                };
                if let Err(why) = alone.applied_to(&s.producers[p]) {
                    return Err(bad(field, why));
                }
                if let Some(rate) = settings.records_per_sec {
                    memory.add(
                        u64::from(rate)
                            .saturating_mul(until_ms.saturating_sub(entry.at_ms) / 1000 + 1),
                        producer_rf(p),
                    );
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
            Action::Tombstone(name, key) => {
                let p = producer(name)?;
                if let Some(why) = key_too_long(key) {
                    return Err(bad(field, why));
                }
                memory.add(1, producer_rf(p));
            }
        }
    }
    Ok(())
}

/// A topic's log setting, as `kafka-configs --alter --add-config` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogSetting {
    RetentionMs(i64),
    RetentionBytes(i64),
    SegmentBytes(u64),
    SegmentMs(u64),
    CleanupPolicy(super::CleanupPolicy),
    MinCleanableDirtyRatio(super::DirtyRatio),
    MinCompactionLagMs(u64),
    DeleteRetentionMs(u64),
}

impl LogSetting {
    /// Refuses what Kafka's `LogConfig` refuses.
    pub fn check(&self) -> Result<(), String> {
        match *self {
            LogSetting::RetentionMs(v) | LogSetting::RetentionBytes(v) if v < -1 => {
                Err(format!("{v}: -1 for no limit, otherwise at least 0"))
            }
            LogSetting::SegmentBytes(v) if v < super::MIN_SEGMENT_BYTES => Err(format!(
                "{v}: Kafka's minimum for a topic is {} bytes",
                super::MIN_SEGMENT_BYTES
            )),
            LogSetting::SegmentMs(0) => Err("0: Kafka's minimum is 1 ms".into()),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for LogSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogSetting::RetentionMs(v) => write!(f, "retention.ms={v}"),
            LogSetting::RetentionBytes(v) => write!(f, "retention.bytes={v}"),
            LogSetting::SegmentBytes(v) => write!(f, "segment.bytes={v}"),
            LogSetting::SegmentMs(v) => write!(f, "segment.ms={v}"),
            LogSetting::CleanupPolicy(p) => write!(f, "cleanup.policy={}", p.as_kafka()),
            LogSetting::MinCleanableDirtyRatio(r) => write!(f, "min.cleanable.dirty.ratio={r}"),
            LogSetting::MinCompactionLagMs(v) => write!(f, "min.compaction.lag.ms={v}"),
            LogSetting::DeleteRetentionMs(v) => write!(f, "delete.retention.ms={v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_in_words() {
        let acks_one = ProducerSettings {
            acks: Some(Acks::One),
            enable_idempotence: Some(None),
            ..ProducerSettings::default()
        };
        let cases = [
            (
                Action::SetProducer("p1".into(), acks_one),
                "p1: acks=1 (idempotence off)",
            ),
            (
                Action::ControlledShutdown(2),
                "controlled shutdown of broker 2",
            ),
            (Action::CutLink(1, 3), "cut link 1-3"),
            (
                Action::DropResponses("p1".into(), 2, 6_000),
                "p1: its connection to broker 2 hangs until 6000 ms",
            ),
            (
                Action::SetMinIsr("orders".into(), 2),
                "orders: min.insync.replicas=2",
            ),
            (
                Action::Reassign("orders".into(), 0, vec![2, 3, 1]),
                "reassign orders-0 to brokers [2, 3, 1]",
            ),
            (
                Action::Produce("p1".into(), Some("user-7".into()), 1),
                "p1: 1 record with key \"user-7\"",
            ),
            (
                Action::RollingRestart(Stop::Crash),
                "rolling restart by kill -9",
            ),
        ];
        for (action, words) in cases {
            assert_eq!(action.to_string(), words);
        }
    }
}
