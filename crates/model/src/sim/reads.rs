//! Brokers serving consumers: only records below the serving replica's high watermark
//! (read_uncommitted), from the leader, or from an in-sync follower in the consumer's rack when
//! the brokers select replicas by rack (KIP-392). A fetch that finds nothing new waits up to
//! `fetch.max.wait.ms` for the high watermark to pass it (`DelayedFetch` with HIGH_WATERMARK
//! isolation).

use bevy_ecs::prelude::*;

use super::cluster::{Cluster, Partition, Replica};
use super::network::{Network, Node, Wire, WireState};
use super::protocol::{ConsumerFetch, ConsumerFetchResponse, KafkaError};
use super::wires::Wires;
use super::{Metrics, SimClock};

/// `fetch.max.wait.ms`.
const FETCH_MAX_WAIT_MS: u64 = 500;

/// Whether a replica may serve this consumer: the leader, or an in-sync follower picked by the
/// rack-aware selector.
fn may_serve(partition: &Partition, broker: u32, cluster: &Cluster) -> bool {
    partition.leader == Some(broker)
        || (cluster.config.rack_aware_replica_selector
            && partition.leader.is_some()
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
    now: u64,
) -> Option<(u64, u64, Option<KafkaError>)> {
    let Node::Broker(broker) = wire.to else {
        unreachable!("consumer fetches go to brokers")
    };
    if !may_serve(partition, broker, cluster) {
        return Some((request.offset, 0, Some(KafkaError::NotLeaderOrFollower)));
    }
    if request.offset > replica.log_end_offset() {
        return Some((request.offset, 0, Some(KafkaError::OffsetOutOfRange)));
    }
    let count = replica
        .high_watermark
        .saturating_sub(request.offset)
        .min(u64::from(request.max_records));
    let expired = matches!(wire.state, WireState::Held { until_ms } if now >= until_ms);
    (count > 0 || expired).then_some((request.offset, count, None))
}

/// Arriving fetches are answered or held; a held one is looked at again only when its partition
/// or a replica of it changed, or its wait ran out: nothing else changes its answer.
#[allow(clippy::too_many_arguments)]
pub(super) fn serve_consumer_fetches(
    clock: &SimClock,
    cluster: &Cluster,
    network: &mut Network,
    wires: &mut Wires,
    metrics: &mut Metrics,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    changed_partitions: &Query<Entity, Changed<Partition>>,
    changed_replicas: &Query<&Replica, Changed<Replica>>,
    touched: &mut Vec<Entity>,
    due: &mut Vec<u64>,
    arriving: &mut Vec<u64>,
) {
    let now = clock.now_ms;
    touched.clear();
    touched.extend(changed_partitions.iter());
    touched.extend(changed_replicas.iter().map(|r| r.partition));
    touched.sort_unstable();
    touched.dedup();
    wires.held_due::<ConsumerFetch>(touched, now, due);
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
                answer(wire, request, partition, replica, cluster, now),
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
            Some(replica) => answer(&wire, request, partition, replica, cluster, now)
                .map(|(from, count, error)| (from, count, error, replica.high_watermark)),
            // A reassignment removed the replica while the fetch was on its way or held.
            None => Some((request.offset, 0, Some(KafkaError::NotLeaderOrFollower), 0)),
        };
        let Some((from, count, error, high_watermark)) = answered else {
            if !wire.held() {
                wires.hold(id, now + FETCH_MAX_WAIT_MS);
            }
            continue;
        };
        // KIP-951: a refusal names the leader. Consumers are served by the controller's current
        // leader (a simplification: Kafka's broker refuses, and names, by its own metadata), so
        // that is the one named.
        let current_leader = (error == Some(KafkaError::NotLeaderOrFollower))
            .then(|| partition.leader.map(|l| (l, partition.leader_epoch)))
            .flatten()
            .filter(|(l, _)| Node::Broker(*l) != wire.to);
        if error.is_none() && partition.leader.is_none_or(|l| wire.to != Node::Broker(l)) {
            metrics.records_read_from_followers += count;
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
                high_watermark,
                error,
                current_leader,
            },
        );
        wires.finish(id);
    }
}
