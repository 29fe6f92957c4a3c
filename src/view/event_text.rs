//! The event log in words, as the overlay's log and the timeline's markers show it.

use crate::sim::{EventKind, ResetReason};

/// What kind of mark an event gets on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Something broke or data was lost.
    Bad,
    /// The cluster healed or changed as it should.
    Good,
    /// A scripted or user action, or routine group activity.
    Info,
}

fn list(brokers: &[u32]) -> String {
    let items: Vec<String> = brokers.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(","))
}

/// One line for an event, in Kafka's words.
pub fn describe(kind: &EventKind) -> (Severity, String) {
    use EventKind as E;
    use Severity::*;
    match kind {
        E::IsrShrink {
            topic,
            partition,
            isr,
            removed,
        } => (
            Bad,
            format!(
                "{topic}-{partition}: ISR shrinks to {} (broker {} fell behind)",
                list(isr),
                list(removed)
            ),
        ),
        E::IsrExpand {
            topic,
            partition,
            isr,
            added,
        } => (
            Good,
            format!(
                "{topic}-{partition}: ISR expands to {} (broker {} caught up)",
                list(isr),
                list(added)
            ),
        ),
        E::ActionRefused { action, why } => (Bad, format!("{action} refused: {why}")),
        E::MinIsrChanged {
            topic,
            min_insync_replicas,
        } => (
            Info,
            format!("{topic}: min.insync.replicas set to {min_insync_replicas}"),
        ),
        E::UncleanElectionChanged { topic, enabled } => (
            Info,
            format!("{topic}: unclean.leader.election.enable set to {enabled}"),
        ),
        E::EligibleLeaderReplicasChanged { enabled } => (
            Info,
            format!(
                "eligible leader replicas (KIP-966) {}",
                if *enabled { "on" } else { "off" }
            ),
        ),
        E::ProducerReconfigured {
            producer,
            settings,
            idempotent,
        } => (
            Info,
            format!(
                "producer {producer} restarted with {settings}{}",
                if *idempotent { " (idempotent)" } else { "" }
            ),
        ),
        E::GroupMembersSet { group, members } => {
            (Info, format!("group {group}: {members} members wanted"))
        }
        E::BrokerAdded { broker } => (
            Info,
            format!(
                "broker {broker} added: it registers with the controller and hosts nothing yet"
            ),
        ),
        E::PartitionsRequested { topic, partitions } => {
            (Info, format!("{topic}: {partitions} partitions asked for"))
        }
        E::PartitionsCreated { topic, partitions } => (
            Info,
            format!("{topic}: now {partitions} partitions; clients learn of them from metadata"),
        ),
        E::ReassignmentRequested {
            topic,
            partition,
            target,
        } => (
            Info,
            format!(
                "{topic}-{partition}: reassignment to {} asked for",
                list(target)
            ),
        ),
        E::ReassignmentStarted {
            topic,
            partition,
            replicas,
            adding,
            removing,
        } => (
            Info,
            format!(
                "{topic}-{partition}: reassignment begins, replicas {} (adding {}, removing {})",
                list(replicas),
                list(adding),
                list(removing)
            ),
        ),
        E::ReassignmentCompleted {
            topic,
            partition,
            replicas,
            isr,
        } => (
            Good,
            format!(
                "{topic}-{partition}: reassignment complete, replicas {}, ISR {}",
                list(replicas),
                list(isr)
            ),
        ),
        E::RollingRestartStarted {
            brokers,
            controlled,
        } => (
            Info,
            format!(
                "rolling restart of brokers {} begins ({})",
                list(brokers),
                if *controlled {
                    "controlled shutdowns"
                } else {
                    "kill -9"
                }
            ),
        ),
        E::RollingRestartBrokerDone { broker } => (
            Good,
            format!("rolling restart: broker {broker} is back, nothing under-replicated"),
        ),
        E::RollingRestartDone => (
            Good,
            "rolling restart done: preferred leaders elected again".to_string(),
        ),
        E::ControlledShutdownRequested { broker } => {
            (Info, format!("broker {broker}: controlled shutdown begins"))
        }
        E::BrokerInControlledShutdown { broker } => (
            Info,
            format!("controller: broker {broker} in controlled shutdown, its leaderships move"),
        ),
        E::BrokerShutDown { broker } => (Info, format!("broker {broker} stopped cleanly")),
        E::LinkCut { a, b } => (Bad, format!("network link {a}-{b} cut")),
        E::LinkHealed { a, b } => (Good, format!("network link {a}-{b} healed")),
        E::ProduceAnswersDropped {
            producer,
            broker,
            until_ms,
        } => (
            Bad,
            format!(
                "{producer}: its connection to broker {broker} hangs until {}: answers lost until it reconnects",
                clock(*until_ms)
            ),
        ),
        E::DuplicateAppended {
            producer,
            topic,
            partition,
            broker,
            records,
            offset,
            first_offset,
        } => (
            Bad,
            format!(
                "{topic}-{partition}: broker {broker} appends {producer}'s retried batch again at offset {offset}: {records} {} duplicated (first written at {first_offset})",
                if *records == 1 { "record" } else { "records" }
            ),
        ),
        E::BrokerSlowed { broker, extra_ms } => (
            Info,
            format!("broker {broker}: {extra_ms} ms added to every message"),
        ),
        E::AcksChanged {
            producer,
            acks,
            idempotent,
        } => (
            Info,
            format!("producer {producer}: acks={acks}, enable.idempotence={idempotent}"),
        ),
        E::RateChanged {
            producer,
            records_per_sec,
        } => (
            Info,
            format!("producer {producer}: {records_per_sec} records/s"),
        ),
        E::RecordsProduced {
            producer,
            key,
            count,
        } => (
            Info,
            format!(
                "producer {producer}: {count} records with key {}",
                key.as_deref().unwrap_or("(none)")
            ),
        ),
        E::TombstoneProduced { producer, key } => (
            Info,
            format!("producer {producer}: a tombstone (null value) for key {key}"),
        ),
        E::BrokerCrashed { broker } => (Bad, format!("broker {broker} crashed")),
        E::BrokerWiped { broker } => (Bad, format!("broker {broker} crashed and lost its disk")),
        E::BrokerRestarted { broker } => (Good, format!("broker {broker} restarted")),
        E::BrokerIsolated { broker } => (Bad, format!("broker {broker} isolated from the network")),
        E::BrokerHealed { broker } => (Good, format!("broker {broker} back on the network")),
        E::ControllerLinkCut { broker } => (
            Bad,
            format!("link between broker {broker} and the controller cut"),
        ),
        E::ControllerLinkHealed { broker } => (
            Good,
            format!("link between broker {broker} and the controller healed"),
        ),
        E::PreferredElectionRequested => (Info, "preferred leader election requested".into()),
        E::BrokerFenced { broker } => (
            Bad,
            format!(
                "controller fenced broker {broker}: no heartbeat within broker.session.timeout.ms"
            ),
        ),
        E::BrokerUnfenced { broker } => (Good, format!("controller unfenced broker {broker}")),
        E::RegistrationRefused { broker } => (
            Bad,
            format!(
                "controller refused broker {broker}'s registration: its old session is still valid"
            ),
        ),
        E::BrokerRegistered { broker } => (
            Good,
            format!("controller registered broker {broker} (fenced until its next heartbeat)"),
        ),
        E::LeaderElected {
            topic,
            partition,
            leader,
            leader_epoch,
            unclean,
            isr,
            reason,
        } => (
            if *unclean { Bad } else { Good },
            format!(
                "{topic}-{partition}: {}leader is broker {leader}, epoch {leader_epoch}, ISR {} ({reason})",
                if *unclean { "UNCLEAN election, " } else { "" },
                list(isr)
            ),
        ),
        E::PartitionOffline {
            topic,
            partition,
            leader_epoch,
            isr,
        } => (
            Bad,
            format!(
                "{topic}-{partition}: OFFLINE, no eligible leader (epoch {leader_epoch}, ISR {})",
                list(isr)
            ),
        ),
        E::ConsumerAdded { group, member } => (Info, format!("group {group}: {member} starts")),
        E::ConsumerRemoved { group, member } => {
            (Info, format!("group {group}: {member} leaves (LeaveGroup)"))
        }
        E::ConsumerCrashed { group, member } => {
            (Bad, format!("group {group}: {member} dies without a word"))
        }
        E::ConsumerFailed {
            group,
            member,
            topic,
            partition,
            error,
        } => (
            Bad,
            format!(
                "group {group}: {member} stops: poll() throws {error} for {topic}-{partition} (auto.offset.reset=none)"
            ),
        ),
        E::ConsumerRateChanged {
            group,
            records_per_sec,
        } => (
            Info,
            format!("group {group}: each member processes {records_per_sec} records/s"),
        ),
        E::RebalanceStarted { group, generation } => (
            Info,
            format!("group {group}: rebalance starts (after generation {generation})"),
        ),
        E::RebalanceCompleted { group, generation } => (
            Good,
            format!("group {group}: generation {generation} assigned"),
        ),
        E::OffsetReset {
            group,
            member,
            topic,
            partition,
            from,
            to,
            reason,
        } => (
            Bad,
            match reason {
                ResetReason::PastLogEnd => format!(
                    "group {group}: {member}'s position {from} in {topic}-{partition} is past the log's end (truncated): auto.offset.reset moves it to {to}"
                ),
                ResetReason::BelowLogStart => format!(
                    "group {group}: {member}'s position {from} in {topic}-{partition} is below the log start (retention deleted it): auto.offset.reset moves it to {to}, skipping {}",
                    to.saturating_sub(*from)
                ),
            },
        ),
        E::GroupEpochBumped {
            group,
            epoch,
            reason,
        } => (
            if reason.contains("fenced") { Bad } else { Info },
            format!("group {group}: epoch {epoch}, as {reason}"),
        ),
        E::MemberReconciled {
            group,
            member,
            epoch,
        } => (
            Good,
            format!("group {group}: {member} reaches epoch {epoch} with its whole assignment"),
        ),
        E::Truncated {
            broker,
            topic,
            partition,
            from_offset,
            to_offset,
        } => (
            Bad,
            format!(
                "{topic}-{partition}: broker {broker} truncates its log from {from_offset} to {to_offset}"
            ),
        ),
        E::TopicConfigChanged { topic, config } => (
            Info,
            format!("{topic}: kafka-configs --alter sets {config}"),
        ),
        E::SegmentRolled {
            broker,
            topic,
            partition,
            base_offset,
        } => (
            Info,
            format!(
                "{topic}-{partition}: broker {broker} rolls a new segment at offset {base_offset}"
            ),
        ),
        E::SegmentsDeleted {
            broker,
            topic,
            partition,
            segments,
            from_offset,
            to_offset,
        } => (
            Info,
            format!(
                "{topic}-{partition}: broker {broker}'s retention deletes {segments} segment{}: the log starts at {to_offset} (was {from_offset})",
                if *segments == 1 { "" } else { "s" }
            ),
        ),
        E::LogCleaned {
            broker,
            topic,
            partition,
            from_offset,
            to_offset,
            records_removed,
            tombstones_removed,
        } => {
            let plural =
                |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            let older = records_removed - tombstones_removed;
            let tombstones = match tombstones_removed {
                0 => String::new(),
                n => format!(
                    " and {} past delete.retention.ms",
                    plural(*n, "tombstone", "tombstones")
                ),
            };
            (
                Info,
                format!(
                    "{topic}-{partition}: broker {broker}'s cleaner compacts offsets {from_offset}-{}: removes {}{tombstones}",
                    to_offset.saturating_sub(1),
                    plural(
                        older,
                        "older value of its key",
                        "older values of their keys"
                    ),
                ),
            )
        }
        E::TruncatedFully {
            broker,
            topic,
            partition,
            from_offset,
            start_offset,
        } => (
            Bad,
            format!(
                "{topic}-{partition}: broker {broker}'s log ends at {from_offset}, below the leader's log start: it drops it and starts at {start_offset}"
            ),
        ),
    }
}

/// Sim time as the overlay writes it: seconds with milliseconds.
pub fn clock(ms: u64) -> String {
    format!("{}.{:03} s", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_in_kafkas_words() {
        let (severity, line) = describe(&EventKind::IsrShrink {
            topic: "orders".into(),
            partition: 0,
            isr: vec![1, 2],
            removed: vec![3],
        });
        assert_eq!(severity, Severity::Bad);
        assert_eq!(
            line,
            "orders-0: ISR shrinks to [1,2] (broker [3] fell behind)"
        );
        let (severity, line) = describe(&EventKind::LeaderElected {
            topic: "orders".into(),
            partition: 2,
            leader: 3,
            leader_epoch: 4,
            unclean: true,
            isr: vec![3],
            reason: "leader fenced".into(),
        });
        assert_eq!(severity, Severity::Bad);
        assert!(line.contains("UNCLEAN"), "{line}");
        assert_eq!(clock(61_005), "61.005 s");
    }
}
