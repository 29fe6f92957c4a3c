//! Followers pull: each follower fetches from its own log end offset; the leader learns the
//! follower's progress from that offset (`Partition.updateFollowerFetchState`), answers with the
//! records it lacks and the high watermark, or holds the fetch until data arrives
//! (`replica.fetch.wait.max.ms`). The follower takes the high watermark from the response, capped
//! by its own log end offset, so it learns a new one a fetch later than the leader.

use std::ops::Range;

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::Wake;
use super::cluster::{Broker, BrokerId, Cluster, FollowerStates, Partition, Record, Replica};
use super::events::{EventKind, EventLog};
use super::network::{Network, Node, Wire, WireState};
use super::protocol::{
    Answers, Diverging, FetchPartition, FetchRequest, FetchResponse, FetchedPartition, KafkaError,
};
use super::purgatory::DelayedPhase;
use crate::scenario::ClusterConfig;

/// The records from `from` up to `max_bytes` (at least one, as Kafka always returns a whole first
/// batch).
/// They go at the end of `out`; returns where. The places of records the leader's cleaner removed
/// go too, and count no bytes: the follower marks them removed in its own log.
fn read_log(leader: &Replica, from: u64, max_bytes: u64, out: &mut Vec<Record>) -> Range<u32> {
    let start = out.len();
    let mut bytes = 0u64;
    for (offset, record) in (from..).zip(leader.log.iter_from(from as usize)) {
        if !leader.cleaned.is_removed(offset) {
            bytes += u64::from(record.bytes());
        }
        if bytes > max_bytes && out.len() > start {
            break;
        }
        out.push(*record);
    }
    start as u32..out.len() as u32
}

/// The leader's answer for every partition of a follower's fetch, read now, into `out` (kept
/// between steps: most fetches are held, and their answers dropped).
/// `seen` is how far `to` has applied the metadata log.
fn answer_all(
    request: &FetchRequest,
    partitions: &Query<&Partition>,
    (to, seen): (u32, u64),
    replicas: &Query<&Replica>,
    max_bytes: u64,
    out: &mut Answers,
) {
    let (answers, records) = out;
    answers.clear();
    records.clear();
    answers.extend(request.partitions.iter().map(|f| {
        let partition = partitions.get(f.partition).expect("partition entity");
        answer_partition(f, partition, (to, seen), replicas, max_bytes, records)
    }));
}

/// The answer for one partition of a fetch.
/// The broker answers as the leader it takes itself for.
fn answer_partition(
    fetch: &FetchPartition,
    partition: &Partition,
    (to, seen): (u32, u64),
    replicas: &Query<&Replica>,
    max_bytes: u64,
    records: &mut Vec<Record>,
) -> FetchedPartition {
    let mut answer = FetchedPartition {
        partition: fetch.partition,
        replica: fetch.replica,
        records: 0..0,
        base_offset: fetch.fetch_offset,
        high_watermark: 0,
        log_start_offset: 0,
        max_timestamp: 0,
        error: None,
        diverging: None,
    };
    let leader = partition
        .replica_on(to)
        .filter(|_| partition.leads_as_seen(to, seen).is_some())
        .map(|e| replicas.get(e).expect("replica entity"));
    let Some(leader) = leader else {
        answer.error = Some(KafkaError::NotLeaderOrFollower);
        return answer;
    };
    answer.high_watermark = leader.high_watermark;
    answer.log_start_offset = leader.log_start_offset;
    answer.diverging = divergence(leader, fetch.fetch_offset, fetch.last_fetched_epoch);
    if answer.diverging.is_some() {
        return answer;
    }
    // Below the log start retention deleted the records (`UnifiedLog.read`,
    // `checkLogStartOffset`).
    if fetch.fetch_offset < leader.log_start_offset {
        answer.error = Some(KafkaError::OffsetOutOfRange);
        return answer;
    }
    if fetch.fetch_offset < leader.log_end_offset() {
        answer.records = read_log(leader, fetch.fetch_offset, max_bytes, records);
        let last = fetch.fetch_offset + u64::from(answer.records.end - answer.records.start) - 1;
        answer.max_timestamp = leader.segments.holding(last).largest_timestamp();
    }
    answer
}

/// Whether an answer is worth sending before the wait runs out (`DelayedFetch.tryComplete`:
/// some partition has data, diverged or failed).
fn worth_sending(answers: &[FetchedPartition]) -> bool {
    answers
        .iter()
        .any(|a| !a.records.is_empty() || a.diverging.is_some() || a.error.is_some())
}

fn respond(network: &mut Network, now: u64, wire: &Wire, answers: &mut Answers) {
    let (partitions, records) = std::mem::take(answers);
    network.send(
        now,
        wire.to,
        wire.from,
        FetchResponse {
            request: wire.id,
            partitions,
            records,
        },
    );
}

/// Whether the follower's log leaves the leader's before the fetch offset
/// (`Partition.fetchRecords` with `lastFetchedEpoch`): the leader's largest epoch at or below the
/// follower's last one is older, or ends before the fetch offset.
fn divergence(
    leader: &Replica,
    fetch_offset: u64,
    last_fetched_epoch: Option<u32>,
) -> Option<Diverging> {
    let leader_leo = leader.log_end_offset();
    match last_fetched_epoch {
        Some(epoch) => match leader.end_offset_for(epoch) {
            Some((found, end)) if found < epoch || end < fetch_offset => Some(Diverging {
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
        None if fetch_offset > leader_leo => Some(Diverging {
            epoch: None,
            end_offset: leader_leo,
        }),
        None => None,
    }
}

/// Where a follower told its log diverges truncates it: the end of the leader's epoch, or its own
/// end of that epoch if sooner (KIP-279).
fn truncates_to(follower: &Replica, d: Diverging) -> u64 {
    match d.epoch {
        Some(epoch) => {
            let own_end = follower.end_offset_for(epoch).map_or(0, |(_, end)| end);
            d.end_offset.min(own_end)
        }
        // Out of range with no epoch to compare: back to the leader's end
        // (`AbstractFetcherThread.handleOutOfRangeError`).
        None => d.end_offset,
    }
}

/// `AbstractFetcherThread.fetchOffsetAndTruncate` after OFFSET_OUT_OF_RANGE: a follower whose
/// log ends below its leader's log start (it was away longer than the topic's retention) drops
/// its log and starts again at the leader's log start. Kafka's follower asks the leader for its
/// log start (`fetchEarliestOffset`); the model takes it from the fetch response, which carries
/// it (`PartitionData.logStartOffset`).
fn start_at_leader_log_start(
    fetched: &FetchedPartition,
    partition: &Partition,
    leader: BrokerId,
    replicas: &mut Query<&mut Replica>,
    now: u64,
    (cluster, events): (&Cluster, &mut EventLog),
) {
    if partition.replica_on(leader).is_none() {
        return;
    }
    let mut follower = replicas.get_mut(fetched.replica).expect("replica entity");
    let from_offset = follower.log_end_offset();
    // A follower whose log reaches the leader's log start fetches on from its own end.
    if fetched.log_start_offset <= from_offset {
        return;
    }
    follower.truncate_fully_and_start_at(fetched.log_start_offset, now);
    events.push(
        now,
        EventKind::TruncatedFully {
            broker: follower.broker,
            topic: cluster.topics[partition.topic].name.clone(),
            partition: partition.index,
            from_offset,
            start_offset: fetched.log_start_offset,
        },
    );
}

/// Where `follower`'s log would be cut at its next fetch from `leader`, by the rules above; `None`
/// when the two agree up to the follower's log end (what the view marks as a divergence).
pub fn truncation_point(leader: &Replica, follower: &Replica) -> Option<u64> {
    let d = divergence(leader, follower.log_end_offset(), follower.latest_epoch())?;
    Some(truncates_to(follower, d)).filter(|to| *to < follower.log_end_offset())
}

/// A fetch with no answer within the broker's `request.timeout.ms` is given up; the fetcher backs
/// off `replica.fetch.backoff.ms` and tries again.
fn time_out_fetches(broker: &mut Broker, now: u64, config: &ClusterConfig) {
    for (_, fetcher) in &mut broker.fetchers {
        if fetcher.in_flight.is_some() && now >= fetcher.sent_ms + config.replica_socket_timeout_ms
        {
            fetcher.in_flight = None;
            fetcher.backoff_until_ms = now + config.replica_fetch_backoff_ms;
        }
    }
}

/// The fetchers' next deadline: a fetch's timeout, or the end of a back-off. Returns it, or
/// `u64::MAX` if none is ahead.
fn wake_fetchers(broker: &Broker, now: u64, config: &ClusterConfig, wake: &mut Wake) -> u64 {
    let mut next = u64::MAX;
    for (_, f) in &broker.fetchers {
        let at = if f.in_flight.is_some() {
            f.sent_ms + config.replica_socket_timeout_ms
        } else {
            f.backoff_until_ms
        };
        if at > now {
            next = next.min(at);
        }
    }
    wake.at(next);
    next
}

/// The replication phase's rules, with what they borrow for one step.
#[derive(SystemParam)]
pub(super) struct ReplicationPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    brokers: Query<'w, 's, &'static mut Broker>,
    partitions: Query<'w, 's, &'static Partition>,
    /// What each leader knows of its followers, from their fetches.
    followers: Query<'w, 's, &'static mut FollowerStates>,
    replicas: Query<'w, 's, &'static mut Replica>,
    /// Kept between steps, so that a step allocates little: the messages arriving now,
    due: Local<'s, Vec<u64>>,
    /// a fetch's answers,
    answers: Local<'s, Answers>,
    /// and who follows whom.
    followed: Local<'s, Followed>,
}

/// The replication phase: leaders answer followers' fetches; followers append what they fetched
/// and fetch again.
pub(super) fn phase(mut rules: ReplicationPhase) {
    rules.leaders_answer_fetches();
    rules.followers_take_responses();
    rules.followers_send_fetches();
}

/// Which partitions each broker follows from which leader, with its replica of each, in
/// partition order: the (follower, leader) pairs `ReplicaFetcherManager` keeps a fetcher thread
/// for, each broker by the leaders its own metadata names. Leadership changes rarely, so it is
/// computed again only when some broker's metadata moved on since, instead of every broker
/// looking at every partition at every step.
#[derive(Default)]
pub(super) struct Followed {
    /// The partitions' entities when computed, by ordinal (a restored checkpoint has other
    /// entities), and how far each broker had applied the metadata log, by id - 1.
    partitions: Vec<Entity>,
    seen: Vec<u64>,
    assignments_version: u64,
    /// By broker id - 1: (leader, [(partition, the follower's replica)]), by leader.
    by_broker: Vec<Vec<(BrokerId, Followers)>>,
    /// By broker id - 1: the next deadline of its fetchers when it last looked at them (0: look
    /// at the next step).
    next_ms: Vec<u64>,
}

/// The partitions one follower fetches from one leader: (partition, the follower's replica).
type Followers = Vec<(Entity, Entity)>;

impl Followed {
    fn compute(cluster: &Cluster, partitions: &Query<&Partition>, seen: &[u64]) -> Followed {
        let mut followed = Followed {
            partitions: cluster.partitions.clone(),
            seen: seen.to_vec(),
            assignments_version: cluster.assignments_version,
            by_broker: vec![Vec::new(); cluster.brokers.len()],
            next_ms: vec![0; cluster.brokers.len()],
        };
        for (&p, partition) in cluster
            .partitions
            .iter()
            .zip(partitions.iter_many(&cluster.partitions))
        {
            for (&follower, &replica) in partition.assignment.iter().zip(&partition.replicas) {
                let Some(leader) = partition.leader_seen(seen[follower as usize - 1]).leader else {
                    continue;
                };
                if follower == leader {
                    continue;
                }
                let pairs = &mut followed.by_broker[follower as usize - 1];
                let i = match pairs.binary_search_by_key(&leader, |(l, _)| *l) {
                    Ok(i) => i,
                    Err(i) => {
                        pairs.insert(i, (leader, Vec::new()));
                        i
                    }
                };
                pairs[i].1.push((p, replica));
            }
        }
        followed
    }

    /// Computes the pairs again if some broker's metadata moved on since: leadership records
    /// are written past every broker's offset, so a broker's view changes only with its offset.
    fn refresh(&mut self, cluster: &Cluster, partitions: &Query<&Partition>, seen: &[u64]) {
        let current = self.partitions == cluster.partitions
            && self.assignments_version == cluster.assignments_version
            && self.by_broker.len() == cluster.brokers.len()
            && self.seen == seen;
        if !current {
            *self = Followed::compute(cluster, partitions, seen);
        }
        #[cfg(debug_assertions)]
        {
            let fresh = Followed::compute(cluster, partitions, seen);
            debug_assert_eq!(
                self.by_broker, fresh.by_broker,
                "the followed pairs are current"
            );
        }
    }
}

impl ReplicationPhase<'_, '_> {
    /// The leader records each partition's fetch offset as the follower's log end offset
    /// (`Partition.updateFollowerFetchState`) and answers at once if any partition has something for
    /// the follower, else holds the fetch.
    fn leaders_answer_fetches(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            followers,
            replicas,
            due,
            answers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            metrics,
            wires,
            views,
            ..
        } = &mut **runtime;
        let brokers = &brokers.as_readonly();
        let replicas = &replicas.as_readonly();
        let now = clock.now_ms;
        let max_bytes = cluster.config.replica_fetch_max_bytes;
        wires.arriving::<FetchRequest>(due);
        if due.is_empty() {
            return;
        }
        let views = views.checked(brokers.iter());
        for &id in due.iter() {
            let (wire, request) = wires.get_of::<FetchRequest>(id).expect("a fetch");
            metrics.fetch_requests += 1;
            let (Node::Broker(to), Node::Broker(follower)) = (wire.to, wire.from) else {
                unreachable!("followers fetch from brokers")
            };
            // Kafka reads the log (and the high watermark it reports) before it records the fetch.
            let seen = views[to as usize].metadata_offset;
            answer_all(
                request,
                &partitions.as_readonly(),
                (to, seen),
                replicas,
                max_bytes,
                answers,
            );
            for (fetch, answer) in request.partitions.iter().zip(&answers.0) {
                if answer.error.is_some() || answer.diverging.is_some() {
                    continue;
                }
                let partition = partitions.get(fetch.partition).expect("partition entity");
                // The follower states belong to the controller's current leader: a replaced leader
                // that has not learnt so keeps its high watermark where it was.
                if partition.leader != Some(to) {
                    continue;
                }
                let leader = partition.leader_replica().expect("answered as leader");
                let leader_leo = replicas
                    .get(leader)
                    .expect("replica entity")
                    .log_end_offset();
                if let Some(i) = partition.position(follower) {
                    let mut states = followers
                        .get_mut(fetch.partition)
                        .expect("partition entity");
                    states.0[i].record_fetch(fetch.fetch_offset, leader_leo, now);
                }
            }
            if worth_sending(&answers.0) {
                respond(network, now, wire, answers);
                wires.finish(id);
            } else {
                wires.hold(id, now + cluster.config.replica_fetch_wait_max_ms);
            }
        }
    }

    /// The follower appends what it fetched for each partition and takes the leader's high
    /// watermark, capped by its own log end offset (`ReplicaFetcherThread.processPartitionData`).
    /// Told its log diverges, it truncates to where it agrees with the leader (KIP-101, KIP-279): the
    /// end of the leader's epoch, or its own end of that epoch if sooner.
    fn followers_take_responses(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            metrics,
            events,
            wires,
            ..
        } = &mut **runtime;
        let partitions = &partitions.as_readonly();
        let now = clock.now_ms;
        wires.arriving::<FetchResponse>(due);
        for &id in due.iter() {
            wires.finish(id);
            let (wire, response) = wires.get_of::<FetchResponse>(id).expect("a fetch response");
            let (Node::Broker(follower), Node::Broker(leader)) = (wire.to, wire.from) else {
                unreachable!("fetch responses go between brokers")
            };
            let mut broker = brokers
                .get_mut(cluster.brokers[follower as usize - 1])
                .expect("broker entity");
            let seen = broker.metadata_offset;
            let fetcher = broker.fetcher(leader);
            if fetcher.in_flight != Some(response.request) {
                continue; // An answer to a fetch the follower already gave up on.
            }
            fetcher.in_flight = None;
            for fetched in &response.partitions {
                let partition = partitions.get(fetched.partition).expect("partition entity");
                if fetched.error == Some(KafkaError::OffsetOutOfRange)
                    && partition.leader_seen(seen).leader == Some(leader)
                    && partition.replicas.contains(&fetched.replica)
                {
                    start_at_leader_log_start(
                        fetched,
                        partition,
                        leader,
                        replicas,
                        now,
                        (cluster, events),
                    );
                    continue;
                }
                if fetched.error.is_some() || partition.leader_seen(seen).leader != Some(leader) {
                    continue; // Leadership moved: the partition is fetched from its new leader.
                }
                // A replica a reassignment removed while the fetch was on its way is gone.
                if !partition.replicas.contains(&fetched.replica) {
                    continue;
                }
                let mut replica = replicas.get_mut(fetched.replica).expect("replica entity");
                if let Some(d) = fetched.diverging {
                    let to = truncates_to(&replica, d);
                    let from = replica.log_end_offset();
                    let removed = replica.truncate_to(to, now);
                    if removed > 0 {
                        metrics.records_truncated += removed;
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
                let records = response.records_of(fetched);
                if !records.is_empty() {
                    if fetched.base_offset != replica.log_end_offset() {
                        continue; // Not where this log ends: a stale answer.
                    }
                    metrics.records_replicated += records.len() as u64;
                    // What it copies is its leader's records: it keeps one copy of them. (A
                    // reassignment may have removed the answering leader's replica since.)
                    let (log, max_timestamp) = (&partition.log, fetched.max_timestamp);
                    let rolled = match partition.replica_on(leader) {
                        Some(leader) => {
                            let [mut follower, leader] = replicas
                                .get_many_mut([fetched.replica, leader])
                                .expect("a follower and its leader are two replicas");
                            let rolled = follower.append_fetched(
                                records,
                                (&leader, partition.leader_epoch),
                                log,
                                now,
                                max_timestamp,
                            );
                            replica = follower;
                            rolled
                        }
                        // Without the leader's epoch cache, each record's epoch is the latest
                        // its mark stands for: the answer is a few epochs old at most.
                        None => replica.append_of_epochs(
                            records
                                .iter()
                                .map(|r| (r.leader_epoch_up_to(partition.leader_epoch), *r)),
                            log,
                            now,
                            max_timestamp,
                        ),
                    };
                    if let Some(base_offset) = rolled {
                        events.push(
                            now,
                            EventKind::SegmentRolled {
                                broker: replica.broker,
                                topic: cluster.topics[partition.topic].name.clone(),
                                partition: partition.index,
                                base_offset,
                            },
                        );
                    }
                }
                // Only a change marks the replica changed: checkpoints share unchanged ones.
                // Bounded by the log end, and below by the log start: a new leader's high
                // watermark may trail the start this follower took from the leader before it
                // (`UnifiedLog.updateHighWatermark`).
                let high_watermark = fetched
                    .high_watermark
                    .min(replica.log_end_offset())
                    .max(replica.log_start_offset);
                // The follower's log start follows its leader's (`ReplicaFetcherThread`,
                // `maybeIncrementLogStartOffset`), after the high watermark that bounds it.
                let moves_start = fetched.log_start_offset > replica.log_start_offset;
                if moves_start || replica.high_watermark != high_watermark {
                    replica.high_watermark = high_watermark;
                    if moves_start {
                        replica.increment_log_start_offset(fetched.log_start_offset);
                    }
                }
            }
        }
    }

    /// Each running broker's fetcher for each leader it follows partitions from, when idle (its last
    /// fetch answered or timed out, its back-off over), asks for what follows each of those
    /// replicas' log end offsets, in one request.
    fn followers_send_fetches(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            followed,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            ..
        } = &mut **runtime;
        let partitions = &partitions.as_readonly();
        let replicas = &replicas.as_readonly();
        let now = clock.now_ms;
        // How far each broker has applied the metadata log, by id - 1.
        let seen: Vec<u64> = cluster
            .brokers
            .iter()
            .map(|e| brokers.get(*e).expect("broker entity").metadata_offset)
            .collect();
        followed.refresh(cluster, partitions, &seen);
        for (i, &broker_entity) in cluster.brokers.iter().enumerate() {
            let mut broker = brokers.get_mut(broker_entity).expect("broker entity");
            // Once a broker has looked, each fetcher it follows with is in flight or backing off:
            // nothing is due before their next deadline unless the broker changed since (an
            // answer taken at this step, a connection refused, a restart) or whom it follows did.
            let next = followed.next_ms[i];
            if clock.skip_idle_rules && now < next && !broker.is_changed() {
                wake.at(next);
                continue;
            }
            time_out_fetches(&mut broker, now, &cluster.config);
            if !broker.alive {
                followed.next_ms[i] = wake_fetchers(&broker, now, &cluster.config, wake);
                continue;
            }
            let follower = broker.id;
            for (leader, list) in &followed.by_broker[follower as usize - 1] {
                let fetcher = broker.fetcher(*leader);
                if fetcher.in_flight.is_some() || now < fetcher.backoff_until_ms {
                    continue;
                }
                let fetches = list
                    .iter()
                    .map(|&(partition, replica)| {
                        let r = replicas.get(replica).expect("replica entity");
                        FetchPartition {
                            partition,
                            replica,
                            fetch_offset: r.log_end_offset(),
                            last_fetched_epoch: r.latest_epoch(),
                        }
                    })
                    .collect();
                let wire = network.send(
                    now,
                    Node::Broker(follower),
                    Node::Broker(*leader),
                    FetchRequest {
                        partitions: fetches,
                    },
                );
                let fetcher = broker.fetcher(*leader);
                fetcher.in_flight = Some(wire.id);
                fetcher.sent_ms = now;
            }
            followed.next_ms[i] = wake_fetchers(&broker, now, &cluster.config, wake);
        }
    }
}

impl DelayedPhase<'_, '_> {
    /// `DelayedFetch`: a held follower fetch finishes when the leader's log end offset passes one of
    /// its partitions' offsets, a partition's leadership moves, or its wait runs out. A high
    /// watermark change alone does not finish it (KAFKA-9952).
    pub(super) fn complete_delayed_fetches(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            changed_partitions,
            touched,
            due,
            answers,
            applied,
            log_ends,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wires,
            views,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let views = views.checked(brokers.iter());
        // Only a partition whose log on the fetch's broker moved since the last step can have new
        // data for it. A change to the partition itself (a reassignment removing the replica)
        // wakes its fetches on every broker: a broker that stops a replica completes what it held
        // for it (`ReplicaManager.stopPartitions`).
        touched.clear();
        touched.extend(changed_partitions.iter().map(|p| (p, None)));
        touched.extend(&log_ends.moved);
        touched.sort_unstable();
        touched.dedup();
        // The fetches watching a touched partition (`DelayedOperationPurgatory.checkAndComplete`
        // by partition), and those whose wait has run out.
        wires.held_due::<FetchRequest>(touched, now, due);
        // A broker that learnt of a new leadership looks again at the fetches it holds.
        wires.held_at::<FetchRequest>(&applied.moved, due);
        // Those left out would not be answered.
        #[cfg(debug_assertions)]
        {
            let mut held = Vec::new();
            wires.held::<FetchRequest>(&mut held);
            held.retain(|id| due.binary_search(id).is_err());
            for id in held {
                let (wire, request) = wires.get_of::<FetchRequest>(id).expect("a fetch");
                let to = wire.to.broker().expect("fetches go to brokers");
                let seen = views[to as usize].metadata_offset;
                let mut scratch = Answers::default();
                let max_bytes = cluster.config.replica_fetch_max_bytes;
                answer_all(
                    request,
                    partitions,
                    (to, seen),
                    replicas,
                    max_bytes,
                    &mut scratch,
                );
                debug_assert!(
                    !worth_sending(&scratch.0),
                    "a held fetch left out would be answered"
                );
            }
        }
        for &id in due.iter() {
            let (wire, request) = wires.get_of::<FetchRequest>(id).expect("a fetch");
            let to = wire.to.broker().expect("fetches go to brokers");
            let expired = matches!(wire.state, WireState::Held { until_ms } if now >= until_ms);
            let seen = views[to as usize].metadata_offset;
            // A fetch with nothing new reads no records: looking again costs little.
            answer_all(
                request,
                partitions,
                (to, seen),
                replicas,
                cluster.config.replica_fetch_max_bytes,
                answers,
            );
            if expired || worth_sending(&answers.0) {
                respond(network, now, wire, answers);
                wires.finish(id);
            }
        }
    }
}
