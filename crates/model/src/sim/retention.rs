//! Retention: every broker's log manager deletes the segments its logs no longer keep
//! (`LogManager.cleanupLogs`, the `kafka-log-retention` task), first `log.initial.task.delay.ms`
//! (30 s) after the broker starts and then every `log.retention.check.interval.ms`. It looks at
//! every replica the broker holds, leader or follower alike, with each topic's own settings
//! (`UnifiedLog.deleteOldSegments`, in `segments.rs`).

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::Wake;
use super::clock::Standing;
use super::cluster::{Broker, Cluster, Partition, Replica};
use super::events::{EventKind, EventLog};
use super::ledger::AckLedger;

/// `log.initial.task.delay.ms` (`ServerLogConfigs.LOG_INITIAL_TASK_DELAY_MS_DEFAULT`): how long
/// after a broker starts its first retention check runs.
pub const INITIAL_TASK_DELAY_MS: u64 = 30_000;

/// What a broker's log manager borrows for one step: the context of the retention phase's rules
/// and of the cleaner phase's (`cleaner.rs`), Kafka's two tasks that age logs.
#[derive(SystemParam)]
pub(super) struct LogManager<'w, 's> {
    pub(super) runtime: ResMut<'w, Runtime>,
    pub(super) cluster: Res<'w, Cluster>,
    pub(super) ledger: ResMut<'w, AckLedger>,
    pub(super) brokers: Query<'w, 's, &'static mut Broker>,
    pub(super) partitions: Query<'w, 's, &'static Partition>,
    pub(super) replicas: Query<'w, 's, &'static mut Replica>,
}

/// The retention phase: each broker whose check is due deletes what its logs no longer keep,
/// and the ledger forgets the records that no replica keeps.
pub(super) fn phase(mut rules: LogManager) {
    if rules.delete_old_segments() {
        rules.forget_expired();
    }
}

/// Whether a broker's periodic task, next due at `next_ms`, runs now. A broker whose process is
/// down runs none (it starts them again when it restarts); one not due yet keeps its deadline.
pub(super) fn task_due(
    broker: &Broker,
    next_ms: u64,
    (wake, task): (&mut Wake, Standing),
    now: u64,
) -> bool {
    if !broker.alive && !broker.starting {
        return false;
    }
    if now < next_ms {
        wake.standing_at(task, next_ms);
        return false;
    }
    true
}

impl LogManager<'_, '_> {
    /// `LogManager.cleanupLogs` on each broker whose check is due, in broker order, each
    /// replica in partition order. Returns whether any broker checked.
    fn delete_old_segments(&mut self) -> bool {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            ..
        } = self;
        let Runtime {
            clock,
            events,
            wake,
            ..
        } = &mut **runtime;
        let mut checked = false;
        let now = clock.now_ms;
        let interval = cluster.config.log_retention_check_interval_ms;
        wake.clear(Standing::Retention);
        for &entity in &cluster.brokers {
            let mut broker = brokers.get_mut(entity).expect("broker entity");
            let next = broker.next_retention_check_ms;
            if !task_due(&broker, next, (wake, Standing::Retention), now) {
                continue;
            }
            broker.next_retention_check_ms = now + interval;
            checked = true;
            wake.standing_at(Standing::Retention, broker.next_retention_check_ms);
            let id = broker.id;
            // With a cleaner running, the retention task leaves compacted logs to it
            // (`LogManager.cleanupLogs`, `pauseCleaningForNonCompactedPartitions`).
            for partition in partitions
                .iter_many(&cluster.partitions)
                .filter(|p| !p.log.cleanup_policy.compacts())
            {
                let Some(replica) = partition.replica_on(id) else {
                    continue;
                };
                let mut replica = replicas.get_mut(replica).expect("replica entity");
                delete_old_segments(&mut replica, partition, id, (cluster, events), now);
            }
        }
        checked
    }
}

/// `UnifiedLog.deleteOldSegments` on one broker's replica of a partition, reported as an event.
/// Only a deletion marks the replica changed: checkpoints share unchanged ones. Returns whether
/// anything went.
pub(super) fn delete_old_segments(
    replica: &mut Mut<Replica>,
    partition: &Partition,
    broker: u32,
    (cluster, events): (&Cluster, &mut EventLog),
    now: u64,
) -> bool {
    let Some(deleted) = replica
        .bypass_change_detection()
        .delete_old_segments(&partition.log, now)
    else {
        return false;
    };
    replica.set_changed();
    events.push(
        now,
        EventKind::SegmentsDeleted {
            broker,
            topic: cluster.topics[partition.topic].name.clone(),
            partition: partition.index,
            segments: deleted.segments as u32,
            from_offset: deleted.from,
            to_offset: deleted.to,
        },
    );
    true
}

impl LogManager<'_, '_> {
    /// The ledger forgets the acknowledged records below every replica's log start, and those
    /// every replica's cleaner removed: followers take their leader's log start from their
    /// fetches, so by the next check they have caught up with this one's deletions.
    pub(super) fn forget_expired(&mut self) {
        let replicas = &self.replicas.as_readonly();
        let logs: Vec<Vec<&Replica>> = self
            .partitions
            .iter_many(&self.cluster.partitions)
            .map(|p| logs_of(p, replicas))
            .collect();
        let log_starts: Vec<u64> = logs
            .iter()
            .map(|l| l.iter().map(|r| r.log_start_offset).min().unwrap_or(0))
            .collect();
        self.ledger.forget_expired(&log_starts, |ordinal, offset| {
            super::cleaner::removed_everywhere(&logs[ordinal as usize], offset)
        });
    }
}

/// A partition's replicas, in assignment order.
pub(super) fn logs_of<'a>(
    partition: &Partition,
    replicas: &'a Query<&Replica>,
) -> Vec<&'a Replica> {
    partition
        .replicas
        .iter()
        .filter_map(|r| replicas.get(*r).ok())
        .collect()
}
