//! Brokers serving consumers: only records below the serving replica's high watermark
//! (read_uncommitted), from the leader, or from an in-sync follower in the consumer's rack when
//! the brokers select replicas by rack (KIP-392). Each broker judges by its own metadata: a
//! leader the controller replaced but that has not learnt it still serves what it has. A fetch
//! that finds nothing new waits up to `fetch.max.wait.ms` for the high watermark to pass it
//! (`DelayedFetch` with HIGH_WATERMARK isolation).

use bevy_ecs::prelude::*;

use super::Runtime;
use super::cluster::{BrokerView, Cluster, LeaderRecord, Partition, Replica};
use super::network::{Wire, WireState};
use super::protocol::{ConsumerFetch, ConsumerFetchResponse, KafkaError};
use super::purgatory::DelayedPhase;

/// `fetch.max.wait.ms`.
const FETCH_MAX_WAIT_MS: u64 = 500;

/// Whether a broker may serve this consumer, by `seen`, the leadership as it knows it: as the
/// leader, or as an in-sync follower picked by the rack-aware selector. A leader the controller
/// replaced behind its back still finds its own epoch current and reads up to its own high
/// watermark, with no error (`Partition.fetchRecords`, `localLogWithEpochOrThrow`).
fn may_serve(seen: &LeaderRecord, partition: &Partition, broker: u32, cluster: &Cluster) -> bool {
    seen.leader == Some(broker)
        || (cluster.config.rack_aware_replica_selector
            && seen.leader.is_some()
            && partition.in_isr(broker))
}

/// What a broker answers a consumer's fetch now: (from, count, error), or `None` to hold it.
/// The replica a consumer fetch asks, while it is still one of the partition's.
fn served_by<'a>(
    request: &ConsumerFetch,
    partition: &Partition,
    replicas: &'a Query<&Replica>,
) -> Option<&'a Replica> {
    if !partition.replicas.contains(&request.replica) {
        return None;
    }
    replicas.get(request.replica).ok()
}

fn answer(
    wire: &Wire,
    request: &ConsumerFetch,
    partition: &Partition,
    replica: &Replica,
    cluster: &Cluster,
    brokers: &[BrokerView],
    now: u64,
) -> Option<(u64, u64, Option<KafkaError>)> {
    let broker = to_broker(wire);
    let seen = partition.leader_seen(brokers[broker as usize].metadata_offset);
    if !may_serve(&seen, partition, broker, cluster) {
        return Some((request.offset, 0, Some(KafkaError::NotLeaderOrFollower)));
    }
    // Past the log's end (it was truncated), or below its start (retention deleted it):
    // `UnifiedLog.read`, `checkLogStartOffset`.
    if request.offset > replica.log_end_offset() || request.offset < replica.log_start_offset {
        return Some((request.offset, 0, Some(KafkaError::OffsetOutOfRange)));
    }
    let count = replica
        .high_watermark
        .saturating_sub(request.offset)
        .min(u64::from(request.max_records));
    let expired = matches!(wire.state, WireState::Held { until_ms } if now >= until_ms);
    (count > 0 || expired).then_some((request.offset, count, None))
}

fn to_broker(wire: &Wire) -> u32 {
    wire.to.broker().expect("consumer fetches go to brokers")
}

impl DelayedPhase<'_, '_> {
    /// Arriving fetches are answered or held; a held one is looked at again only when its partition
    /// changed, its broker's replica of it has a new high watermark or a shorter log, its broker's
    /// metadata moved, or its wait ran out: nothing else changes its answer.
    pub(super) fn serve_consumer_fetches(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            applied,
            partitions,
            replicas,
            changed_partitions,
            log_ends,
            touched,
            due,
            arriving,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wires,
            metrics,
            views,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let views = views.checked(brokers.iter());
        touched.clear();
        touched.extend(changed_partitions.iter().map(|p| (p, None)));
        // Only a new high watermark or a log cut back below it can answer a held fetch.
        touched.extend(&log_ends.readable);
        touched.sort_unstable();
        touched.dedup();
        wires.held_due::<ConsumerFetch>(touched, now, due);
        // A broker that learnt of a new leadership looks again at the fetches it holds.
        wires.held_at::<ConsumerFetch>(&applied.moved, due);
        #[cfg(debug_assertions)]
        {
            let mut held = Vec::new();
            wires.held::<ConsumerFetch>(&mut held);
            for id in held.into_iter().filter(|id| due.binary_search(id).is_err()) {
                let (wire, request) = wires.get_of::<ConsumerFetch>(id).expect("a consumer fetch");
                let partition = partitions.get(request.partition).expect("partition entity");
                let Some(replica) = served_by(request, partition, replicas) else {
                    continue;
                };
                debug_assert_eq!(
                    answer(wire, request, partition, replica, cluster, views, now),
                    None,
                    "a held consumer fetch left out would be answered"
                );
            }
        }
        wires.arriving::<ConsumerFetch>(arriving);
        due.extend(arriving.iter().copied());
        due.sort_unstable();
        for &id in due.iter() {
            let (&wire, request) = wires.get_of::<ConsumerFetch>(id).expect("a consumer fetch");
            let partition = partitions.get(request.partition).expect("partition entity");
            let answered = match served_by(request, partition, replicas) {
                Some(replica) => answer(&wire, request, partition, replica, cluster, views, now)
                    .map(|(from, count, error)| {
                        let bounds = (replica.log_start_offset, replica.high_watermark);
                        // The fetch is capped in records: the offsets compaction emptied count
                        // for none.
                        let (count, removed) = match error {
                            None => {
                                let (end, removed) = replica.cleaned.records_from(
                                    from,
                                    replica.high_watermark,
                                    u64::from(request.max_records),
                                );
                                (end - from, removed)
                            }
                            Some(_) => (count, Vec::new()),
                        };
                        (from, count, error, bounds, removed)
                    }),
                // A reassignment removed the replica while the fetch was on its way or held.
                None => Some((
                    request.offset,
                    0,
                    Some(KafkaError::NotLeaderOrFollower),
                    (0, 0),
                    Vec::new(),
                )),
            };
            let Some((from, count, error, (log_start_offset, high_watermark), removed)) = answered
            else {
                if !wire.held() {
                    wires.hold(id, now + FETCH_MAX_WAIT_MS);
                }
                continue;
            };
            // KIP-951: a refusal names the leader the broker knows of.
            let broker = to_broker(&wire);
            let seen = partition.leader_seen(views[broker as usize].metadata_offset);
            let current_leader = (error == Some(KafkaError::NotLeaderOrFollower))
                .then(|| seen.leader.map(|l| (l, seen.leader_epoch)))
                .flatten()
                .filter(|(l, _)| *l != broker);
            if error.is_none() && seen.leader != Some(broker) {
                metrics.records_read_from_followers +=
                    count - removed.iter().map(|r| r.end - r.start).sum::<u64>();
            }
            network.send(
                now,
                wire.to,
                wire.from,
                ConsumerFetchResponse {
                    request: wire.id,
                    consumer: request.consumer,
                    partition: request.partition,
                    from,
                    count,
                    removed,
                    high_watermark,
                    log_start_offset,
                    error,
                    current_leader,
                },
            );
            wires.finish(id);
        }
    }
}
