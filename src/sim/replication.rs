//! Followers pull: each follower fetches from its own log end offset; the leader learns the
//! follower's progress from that offset (`Partition.updateFollowerFetchState`), answers with the
//! records it lacks and the high watermark, or holds the fetch until data arrives
//! (`replica.fetch.wait.max.ms`). The follower takes the high watermark from the response, capped
//! by its own log end offset, so it learns a new one a fetch later than the leader.

use bevy::prelude::*;

use super::cluster::{Broker, Cluster, Partition, Record, Replica, broker_views};
use super::events::{EventKind, EventLog, Metrics};
use super::network::{Network, Node, Wire, WireState, arrivals};
use super::protocol::{Diverging, FetchRequest, FetchResponse, KafkaError};
use super::{SimClock, SimSet, SimStep, Wake};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        SimStep,
        (
            leaders_answer_fetches,
            followers_take_responses,
            followers_time_out_fetches,
            followers_send_fetches,
            wake_followers,
        )
            .chain()
            .in_set(SimSet::Replication),
    )
    .add_systems(
        SimStep,
        complete_delayed_fetches
            .in_set(SimSet::Delayed)
            .after(super::leader::complete_delayed_produce),
    );
}

/// The records from `from` up to `max_bytes` (at least one, as Kafka always returns a whole first
/// batch).
fn read_log(leader: &Replica, from: u64, max_bytes: u64) -> Vec<Record> {
    let mut bytes = 0u64;
    let mut out = Vec::new();
    for record in leader.log.iter_from(from as usize) {
        bytes += u64::from(record.bytes);
        if bytes > max_bytes && !out.is_empty() {
            break;
        }
        out.push(record.clone());
    }
    out
}

/// What a fetch response carries besides its envelope.
struct Answer {
    records: Vec<Record>,
    high_watermark: u64,
    error: Option<KafkaError>,
    diverging: Option<Diverging>,
}

impl Answer {
    fn error(error: KafkaError) -> Self {
        Answer {
            records: Vec::new(),
            high_watermark: 0,
            error: Some(error),
            diverging: None,
        }
    }
}

fn answer(
    commands: &mut Commands,
    network: &mut Network,
    now: u64,
    wire: &Wire,
    request: &FetchRequest,
    answer: Answer,
) {
    commands.spawn((
        network.send(now, wire.to, wire.from),
        FetchResponse {
            request: wire.id,
            partition: request.partition,
            replica: request.replica,
            records: answer.records,
            high_watermark: answer.high_watermark,
            error: answer.error,
            diverging: answer.diverging,
        },
    ));
}

/// Whether the follower's log leaves the leader's before the fetch offset
/// (`Partition.fetchRecords` with `lastFetchedEpoch`): the leader's largest epoch at or below the
/// follower's last one is older, or ends before the fetch offset.
fn divergence(leader: &Replica, request: &FetchRequest) -> Option<Diverging> {
    let leader_leo = leader.log_end_offset();
    match request.last_fetched_epoch {
        Some(epoch) => match leader.end_offset_for(epoch) {
            Some((found, end)) if found < epoch || end < request.fetch_offset => Some(Diverging {
                epoch: Some(found),
                end_offset: end,
            }),
            Some(_) => None,
            None => Some(Diverging {
                epoch: None,
                end_offset: leader_leo,
            }),
        },
        // Past the leader's end with no epoch to compare: out of range, back to its end.
        None if request.fetch_offset > leader_leo => Some(Diverging {
            epoch: None,
            end_offset: leader_leo,
        }),
        None => None,
    }
}

#[allow(clippy::too_many_arguments)]
fn leaders_answer_fetches(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut network: ResMut<Network>,
    mut metrics: ResMut<Metrics>,
    mut requests: Query<(Entity, &mut Wire, &FetchRequest)>,
    mut partitions: Query<&mut Partition>,
    replicas: Query<&Replica>,
    mut commands: Commands,
) {
    let now = clock.now_ms;
    for entity in arrivals(requests.iter().map(|(e, w, _)| (e, w)), now) {
        let (_, mut wire, request) = requests.get_mut(entity).unwrap();
        metrics.fetch_requests += 1;
        let mut partition = partitions
            .get_mut(request.partition)
            .expect("partition entity");
        let Node::Broker(to) = wire.to else {
            unreachable!("fetches go to brokers")
        };
        let Node::Broker(follower) = wire.from else {
            unreachable!("followers are brokers")
        };
        let leader_entity = partition
            .leader_replica()
            .filter(|_| partition.leader == Some(to));
        let Some(leader_entity) = leader_entity else {
            let error = Answer::error(KafkaError::NotLeaderOrFollower);
            answer(&mut commands, &mut network, now, &wire, request, error);
            commands.entity(entity).despawn();
            continue;
        };
        let leader = replicas.get(leader_entity).expect("replica entity");
        let leader_leo = leader.log_end_offset();
        if let Some(diverging) = divergence(leader, request) {
            let reply = Answer {
                records: Vec::new(),
                high_watermark: leader.high_watermark,
                error: None,
                diverging: Some(diverging),
            };
            answer(&mut commands, &mut network, now, &wire, request, reply);
            commands.entity(entity).despawn();
            continue;
        }
        // Kafka reads the log (and the high watermark it reports) before it records the fetch.
        let hw_before = leader.high_watermark;
        if let Some(i) = partition.position(follower) {
            partition.followers[i].record_fetch(request.fetch_offset, leader_leo, now);
        }
        if request.fetch_offset < leader_leo {
            let reply = Answer {
                records: read_log(
                    leader,
                    request.fetch_offset,
                    cluster.config.replica_fetch_max_bytes,
                ),
                high_watermark: hw_before,
                error: None,
                diverging: None,
            };
            answer(&mut commands, &mut network, now, &wire, request, reply);
            commands.entity(entity).despawn();
        } else {
            wire.state = WireState::Held {
                until_ms: now + cluster.config.replica_fetch_wait_max_ms,
            };
        }
    }
}

/// `DelayedFetch`: a held follower fetch finishes when the leader's log end offset passes its
/// offset or its wait runs out. A high watermark change alone does not finish it (KAFKA-9952).
#[allow(clippy::too_many_arguments)]
pub(super) fn complete_delayed_fetches(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut network: ResMut<Network>,
    requests: Query<(Entity, &Wire, &FetchRequest)>,
    partitions: Query<&Partition>,
    replicas: Query<&Replica>,
    changed: Query<&Replica, Changed<Replica>>,
    mut commands: Commands,
) {
    let now = clock.now_ms;
    // Only partitions whose replicas changed since the last step can have new data.
    let mut touched: Vec<Entity> = changed.iter().map(|r| r.partition).collect();
    touched.sort_unstable();
    touched.dedup();
    let mut due: Vec<(u64, Entity)> = requests
        .iter()
        .filter(|(_, wire, request)| match wire.state {
            WireState::Held { until_ms } => {
                now >= until_ms || touched.binary_search(&request.partition).is_ok()
            }
            _ => false,
        })
        .map(|(e, w, _)| (w.id, e))
        .collect();
    due.sort_unstable();
    for (_, entity) in due {
        let (_, wire, request) = requests.get(entity).unwrap();
        let partition = partitions.get(request.partition).expect("partition entity");
        let Node::Broker(to) = wire.to else {
            unreachable!("fetches go to brokers")
        };
        let expired = matches!(wire.state, WireState::Held { until_ms } if now >= until_ms);
        let leader = partition
            .leader_replica()
            .filter(|_| partition.leader == Some(to))
            .map(|e| replicas.get(e).expect("replica entity"));
        match leader {
            None => {
                let error = Answer::error(KafkaError::NotLeaderOrFollower);
                answer(&mut commands, &mut network, now, wire, request, error);
                commands.entity(entity).despawn();
            }
            Some(leader) if expired || leader.log_end_offset() > request.fetch_offset => {
                let reply = Answer {
                    records: read_log(
                        leader,
                        request.fetch_offset,
                        cluster.config.replica_fetch_max_bytes,
                    ),
                    high_watermark: leader.high_watermark,
                    error: None,
                    diverging: None,
                };
                answer(&mut commands, &mut network, now, wire, request, reply);
                commands.entity(entity).despawn();
            }
            Some(_) => {}
        }
    }
}

/// The follower appends what it fetched and takes the leader's high watermark, capped by its own
/// log end offset (`ReplicaFetcherThread.processPartitionData`). Told its log diverges, it
/// truncates to where it agrees with the leader (KIP-101, KIP-279): the end of the leader's epoch,
/// or its own end of that epoch if sooner.
#[allow(clippy::too_many_arguments)]
fn followers_take_responses(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut metrics: ResMut<Metrics>,
    mut events: ResMut<EventLog>,
    responses: Query<(Entity, &Wire, &FetchResponse)>,
    partitions: Query<&Partition>,
    mut replicas: Query<&mut Replica>,
    mut commands: Commands,
) {
    let now = clock.now_ms;
    for entity in arrivals(responses.iter().map(|(e, w, _)| (e, w)), now) {
        let (_, _, response) = responses.get(entity).unwrap();
        commands.entity(entity).despawn();
        let mut replica = replicas.get_mut(response.replica).expect("replica entity");
        if replica.fetcher.in_flight != Some(response.request) {
            continue; // An answer to a fetch the follower already gave up on.
        }
        replica.fetcher.in_flight = None;
        if response.error.is_some() {
            replica.fetcher.backoff_until_ms = now + cluster.config.replica_fetch_backoff_ms;
            continue;
        }
        if let Some(d) = response.diverging {
            let to = match d.epoch {
                Some(epoch) => {
                    let own_end = replica.end_offset_for(epoch).map_or(0, |(_, end)| end);
                    d.end_offset.min(own_end)
                }
                // The leader knows none of the follower's epochs: keep only what was committed
                // and what the leader has.
                None => d.end_offset.min(replica.high_watermark),
            };
            let from = replica.log_end_offset();
            let removed = replica.truncate_to(to);
            if removed > 0 {
                metrics.records_truncated += removed;
                let partition = partitions
                    .get(response.partition)
                    .expect("partition entity");
                events.push(
                    now,
                    EventKind::Truncated {
                        broker: replica.broker,
                        topic: cluster.topics[partition.topic].name.clone(),
                        partition: partition.index,
                        from_offset: from,
                        to_offset: to,
                    },
                );
            }
            continue;
        }
        if let Some(first) = response.records.first() {
            if first.offset != replica.log_end_offset() {
                continue; // Not where this log ends: a stale answer.
            }
            metrics.records_replicated += response.records.len() as u64;
            replica.append(response.records.iter().cloned());
        }
        replica.high_watermark = response.high_watermark.min(replica.log_end_offset());
    }
}

/// A fetch with no answer within the broker's `request.timeout.ms` is given up; the fetcher backs
/// off `replica.fetch.backoff.ms` and tries again.
fn followers_time_out_fetches(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut replicas: Query<&mut Replica>,
) {
    let now = clock.now_ms;
    for mut replica in &mut replicas {
        if replica.fetcher.in_flight.is_some()
            && now >= replica.fetcher.sent_ms + cluster.config.request_timeout_ms
        {
            replica.fetcher.in_flight = None;
            replica.fetcher.backoff_until_ms = now + cluster.config.replica_fetch_backoff_ms;
        }
    }
}

/// Every follower without a fetch in flight asks its leader for what follows its log end offset.
fn followers_send_fetches(
    clock: Res<SimClock>,
    mut network: ResMut<Network>,
    brokers: Query<&Broker>,
    partitions: Query<&Partition>,
    mut replicas: Query<(Entity, &mut Replica)>,
    mut commands: Commands,
) {
    let now = clock.now_ms;
    let views = broker_views(brokers.iter());
    let mut idle: Vec<Entity> = replicas
        .iter()
        .filter(|(_, r)| {
            r.fetcher.in_flight.is_none()
                && now >= r.fetcher.backoff_until_ms
                && views[r.broker as usize].alive
        })
        .map(|(e, _)| e)
        .collect();
    if idle.is_empty() {
        return;
    }
    // In partition order, then replica order: the order their fetches get wire ids in.
    idle.sort_by_key(|e| {
        let replica = &replicas.get(*e).expect("replica entity").1;
        let partition = partitions.get(replica.partition).expect("partition entity");
        (partition.ordinal, partition.position(replica.broker))
    });
    for replica_entity in idle {
        let (_, mut replica) = replicas.get_mut(replica_entity).expect("replica entity");
        let partition = partitions.get(replica.partition).expect("partition entity");
        let Some(leader) = partition.leader.filter(|l| *l != replica.broker) else {
            continue;
        };
        let wire = network.send(now, Node::Broker(replica.broker), Node::Broker(leader));
        replica.fetcher.in_flight = Some(wire.id);
        replica.fetcher.sent_ms = now;
        commands.spawn((
            wire,
            FetchRequest {
                partition: replica.partition,
                replica: replica_entity,
                fetch_offset: replica.log_end_offset(),
                last_fetched_epoch: replica.latest_epoch(),
            },
        ));
    }
}

/// A follower's next deadline: its fetch's timeout, or the end of its back-off.
fn wake_followers(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut wake: ResMut<Wake>,
    replicas: Query<&Replica>,
) {
    let now = clock.now_ms;
    for replica in &replicas {
        let f = &replica.fetcher;
        let at = if f.in_flight.is_some() {
            f.sent_ms + cluster.config.request_timeout_ms
        } else {
            f.backoff_until_ms
        };
        if at > now {
            wake.at(at);
        }
    }
}
