//! Brokers serving consumers: only records below the serving replica's high watermark
//! (read_uncommitted), from the leader, or from an in-sync follower in the consumer's rack when
//! the brokers select replicas by rack (KIP-392). A fetch that finds nothing new waits up to
//! `fetch.max.wait.ms` for the high watermark to pass it (`DelayedFetch` with HIGH_WATERMARK
//! isolation).

use bevy::prelude::*;

use super::cluster::{Cluster, Partition, Replica};
use super::network::{Network, Node, WireState};
use super::protocol::{ConsumerFetch, ConsumerFetchResponse, KafkaError};
use super::wires::Wires;
use super::{SimClock, SimSet, SimStep};

/// `fetch.max.wait.ms`.
const FETCH_MAX_WAIT_MS: u64 = 500;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        SimStep,
        serve_consumer_fetches
            .in_set(SimSet::Delayed)
            .after(super::replication::complete_delayed_fetches)
            .run_if(|wires: Res<Wires>| wires.any_due::<ConsumerFetch>()),
    );
}

/// Whether a replica may serve this consumer: the leader, or an in-sync follower picked by the
/// rack-aware selector.
fn may_serve(partition: &Partition, broker: u32, cluster: &Cluster) -> bool {
    partition.leader == Some(broker)
        || (cluster.config.rack_aware_replica_selector
            && partition.leader.is_some()
            && partition.in_isr(broker))
}

fn serve_consumer_fetches(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut network: ResMut<Network>,
    mut wires: ResMut<Wires>,
    partitions: Query<&Partition>,
    replicas: Query<&Replica>,
    mut due: Local<Vec<u64>>,
) {
    let now = clock.now_ms;
    wires.arriving_or_held::<ConsumerFetch>(&mut due);
    for &id in due.iter() {
        let (&wire, request) = wires.get_of::<ConsumerFetch>(id).expect("a consumer fetch");
        let Node::Broker(broker) = wire.to else {
            unreachable!("consumer fetches go to brokers")
        };
        let partition = partitions.get(request.partition).expect("partition entity");
        let replica = replicas.get(request.replica).expect("replica entity");
        let (from, count, error) = if !may_serve(partition, broker, &cluster) {
            (request.offset, 0, Some(KafkaError::NotLeaderOrFollower))
        } else if request.offset > replica.log_end_offset() {
            (request.offset, 0, Some(KafkaError::OffsetOutOfRange))
        } else {
            let hw = replica.high_watermark;
            let count = hw
                .saturating_sub(request.offset)
                .min(u64::from(request.max_records));
            let expired = matches!(wire.state, WireState::Held { until_ms } if now >= until_ms);
            if count == 0 && !expired {
                if !wire.held() {
                    wires.hold(id, now + FETCH_MAX_WAIT_MS);
                }
                continue;
            }
            (request.offset, count, None)
        };
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
                high_watermark: replica.high_watermark,
                error,
            },
        );
        wires.finish(id);
    }
}
