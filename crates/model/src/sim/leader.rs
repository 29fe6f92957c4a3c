//! The partition leader's side of produce: append, acks, `min.insync.replicas`, idempotence, and
//! acks=all requests held until the high watermark passes them (`Partition.appendRecordsToLeader`,
//! `DelayedProduce`).

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::cluster::{Broker, Cluster, Partition, Record, Replica};
use super::events::{EventKind, Metrics};
use super::network::{Network, Node, Wire, WireState};
use super::producer::{Producer, producer_name};
use super::protocol::{
    BatchOutcome, BatchResult, KafkaError, ProduceRequest, ProduceResponse, WireBatch,
};
use super::purgatory::DelayedPhase;
use crate::scenario::Acks;

fn broker_of(node: Node) -> u32 {
    node.broker().expect("produce requests go to brokers")
}

/// The leader appends one batch, or says why not.
/// The broker leads by its own metadata: a leader cut off from the controller goes on appending
/// in its old epoch after another was elected (`ReplicaManager` acts on the metadata it has).
fn append_batch(
    (broker, seen): (u32, u64),
    now: u64,
    acks: Acks,
    batch: &WireBatch,
    partition: &Partition,
    replicas: &mut Query<&mut Replica>,
    (metrics, notes): (&mut Metrics, &mut Notes),
) -> BatchOutcome {
    let Some(epoch) = partition.leads_as_seen(broker, seen) else {
        return BatchOutcome::Done(Err(KafkaError::NotLeaderOrFollower));
    };
    // `Partition.appendRecordsToLeader`: acks=all needs min.insync.replicas in the ISR before the
    // append, capped by the replica count (`effectiveMinIsr`, Kafka 3.7+).
    if acks == Acks::All && partition.isr.len() < partition.effective_min_isr() {
        return BatchOutcome::Done(Err(KafkaError::NotEnoughReplicas));
    }
    let Some(leader_entity) = partition.replica_on(broker) else {
        return BatchOutcome::Done(Err(KafkaError::NotLeaderOrFollower));
    };
    let mut leader = replicas.get_mut(leader_entity).expect("replica entity");
    let count = batch.records.len() as u64;

    // Idempotence (`ProducerStateManager`, `ProducerAppendInfo.checkProducerEpoch` and
    // `checkSequence`): a batch seen before is answered with its first offset and not appended
    // again; an older producer epoch is refused; a new epoch must start again at sequence 0; in
    // the same epoch a gap is refused. A producer the leader has no state for may start anywhere.
    if let Some(seq) = batch.base_sequence {
        let last_seq = seq + count as i32 - 1;
        let state = leader.producer_state(batch.producer);
        let current = state.and_then(|s| s.back()).copied();
        match current {
            Some(last) if batch.producer_epoch == last.producer_epoch => {
                if let Some(dup) = state.into_iter().flatten().find(|m| {
                    m.producer_epoch == batch.producer_epoch
                        && m.first_sequence == seq
                        && m.last_sequence == last_seq
                }) {
                    return wait_or_done(acks, dup.first_offset, count);
                }
                if seq != last.last_sequence + 1 {
                    return BatchOutcome::Done(Err(KafkaError::OutOfOrderSequenceNumber));
                }
            }
            Some(last) if batch.producer_epoch < last.producer_epoch => {
                return BatchOutcome::Done(Err(KafkaError::InvalidProducerEpoch));
            }
            Some(_) if seq != 0 => {
                return BatchOutcome::Done(Err(KafkaError::OutOfOrderSequenceNumber));
            }
            Some(_) | None => {}
        }
    }

    let base = leader.log_end_offset();
    if batch.retry
        && let Some(first) = batch.records.first()
        && let Some(first_offset) = leader.earlier_copy(first.id, batch.max_timestamp, base)
    {
        metrics.note_duplicate(batch.producer, count);
        notes
            .duplicated
            .push((batch.partition, base, first_offset, count));
    }
    let records = batch.records.iter().enumerate().map(|(i, r)| {
        let record = Record::produced(
            r.id,
            r.key,
            epoch,
            batch.base_sequence,
            batch.producer_epoch,
            i,
            r.bytes,
        );
        if r.tombstone {
            record.tombstone()
        } else {
            record
        }
    });
    if let Some(base) = leader.append(records, epoch, &partition.log, now, batch.max_timestamp) {
        notes.rolled.push((batch.partition, base));
    }
    metrics.records_appended += count;
    wait_or_done(acks, base, count)
}

fn wait_or_done(acks: Acks, base_offset: u64, count: u64) -> BatchOutcome {
    match acks {
        // acks=1 answers after the leader's own append; acks=0 gets no answer at all.
        Acks::Zero | Acks::One => BatchOutcome::Done(Ok(base_offset)),
        Acks::All => BatchOutcome::Waiting {
            base_offset,
            required: base_offset + count,
        },
    }
}

/// The answer to a produce request. A batch refused with NOT_LEADER_OR_FOLLOWER names the leader
/// the broker knows of (KIP-951, `ReplicaManager.getCurrentLeader`).
fn respond(
    network: &mut Network,
    now: u64,
    wire: &Wire,
    request: &ProduceRequest,
    partitions: &Query<&Partition>,
    seen: u64,
) {
    let broker = broker_of(wire.to);
    let results = request
        .batches
        .iter()
        .zip(&request.outcomes)
        .map(|(batch, outcome)| {
            let result = match outcome {
                BatchOutcome::Done(result) => *result,
                BatchOutcome::Waiting { .. } => Err(KafkaError::RequestTimedOut),
            };
            let current_leader = (result == Err(KafkaError::NotLeaderOrFollower))
                .then(|| {
                    let known = partitions
                        .get(batch.partition)
                        .expect("partition entity")
                        .leader_seen(seen);
                    known
                        .leader
                        .filter(|l| *l != broker)
                        .map(|l| (l, known.leader_epoch))
                })
                .flatten();
            BatchResult {
                batch: batch.id,
                partition: batch.partition,
                result,
                current_leader,
            }
        })
        .collect();
    network.send(
        now,
        wire.to,
        wire.from,
        ProduceResponse {
            request: wire.id,
            results,
            closed: false,
        },
    );
}

/// What an append leaves for the event log.
#[derive(Default)]
pub(super) struct Notes {
    /// The partitions whose leader rolled a segment, with its base offset.
    rolled: Vec<(Entity, u64)>,
    /// Retried batches appended again: partition, offset, the earlier copy's, records.
    duplicated: Vec<(Entity, u64, u64, u64)>,
}

/// The append phase's rule, with what it borrows for one step.
#[derive(SystemParam)]
pub(super) struct AppendPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    brokers: Query<'w, 's, &'static Broker>,
    partitions: Query<'w, 's, &'static Partition>,
    replicas: Query<'w, 's, &'static mut Replica>,
    producers: Query<'w, 's, &'static Producer>,
    /// The produce requests arriving now, kept between steps.
    due: Local<'s, Vec<u64>>,
    /// Scratch: what this step's appends leave for the event log.
    notes: Local<'s, Notes>,
}

/// The append phase: leaders append produce requests and answer acks=0/1 ones.
pub(super) fn phase(mut rules: AppendPhase) {
    rules.append_produce_requests();
}

impl AppendPhase<'_, '_> {
    fn append_produce_requests(&mut self) {
        let Self {
            runtime,
            brokers,
            partitions,
            replicas,
            due,
            cluster,
            notes,
            producers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            metrics,
            wires,
            views,
            events,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        wires.arriving::<ProduceRequest>(due);
        if due.is_empty() {
            return;
        }
        let views = views.checked(brokers.iter());
        for &id in due.iter() {
            let (&wire, request) = wires
                .get_mut_of::<ProduceRequest>(id)
                .expect("a produce request");
            let broker = broker_of(wire.to);
            metrics.produce_requests += 1;
            let acks = request.acks;
            let outcomes: Vec<BatchOutcome> = request
                .batches
                .iter()
                .map(|batch| {
                    let partition = partitions.get(batch.partition).expect("partition entity");
                    let seen = views[broker as usize].metadata_offset;
                    append_batch(
                        (broker, seen),
                        now,
                        acks,
                        batch,
                        partition,
                        replicas,
                        (metrics, notes),
                    )
                })
                .collect();
            for (partition, base_offset) in notes.rolled.drain(..) {
                let partition = partitions.get(partition).expect("partition entity");
                events.push(
                    now,
                    EventKind::SegmentRolled {
                        broker,
                        topic: cluster.topics[partition.topic].name.clone(),
                        partition: partition.index,
                        base_offset,
                    },
                );
            }
            for (partition, offset, first_offset, records) in notes.duplicated.drain(..) {
                let partition = partitions.get(partition).expect("partition entity");
                events.push(
                    now,
                    EventKind::DuplicateAppended {
                        producer: producer_name(cluster, producers, request.producer),
                        topic: cluster.topics[partition.topic].name.clone(),
                        partition: partition.index,
                        broker,
                        records,
                        offset,
                        first_offset,
                    },
                );
            }
            request.outcomes = outcomes;
            let all_done = request
                .outcomes
                .iter()
                .all(|o| matches!(o, BatchOutcome::Done(_)));
            if acks == Acks::Zero {
                // No answer; on an error the broker closes the connection "so that the producer
                // client will know that some error has happened and will refresh its metadata"
                // (`KafkaApis.handleProduceRequest`).
                if request
                    .outcomes
                    .iter()
                    .any(|o| matches!(o, BatchOutcome::Done(Err(_))))
                {
                    let closed = ProduceResponse {
                        request: wire.id,
                        results: Vec::new(),
                        closed: true,
                    };
                    network.send(now, wire.to, wire.from, closed);
                }
                wires.finish(id);
            } else if all_done {
                let seen = views[broker as usize].metadata_offset;
                respond(network, now, &wire, request, partitions, seen);
                wires.finish(id);
            } else {
                let until_ms = now + request.timeout_ms;
                wires.hold(id, until_ms);
            }
        }
    }
}

impl DelayedPhase<'_, '_> {
    /// `DelayedProduce.tryComplete`: a held acks=all request finishes when the high watermark has
    /// passed each of its batches (with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR has meanwhile
    /// fallen below `min.insync.replicas`), or times out with REQUEST_TIMED_OUT.
    pub(super) fn complete_delayed_produce(&mut self) {
        let Self {
            runtime,
            brokers,
            partitions,
            replicas,
            due,
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
        wires.held::<ProduceRequest>(due);
        if due.is_empty() {
            return;
        }
        let views = views.checked(brokers.iter());
        for &id in due.iter() {
            let (&wire, request) = wires
                .get_mut_of::<ProduceRequest>(id)
                .expect("a produce request");
            let broker = broker_of(wire.to);
            for (batch, outcome) in request.batches.iter().zip(request.outcomes.iter_mut()) {
                let BatchOutcome::Waiting {
                    base_offset,
                    required,
                } = *outcome
                else {
                    continue;
                };
                let partition = partitions.get(batch.partition).expect("partition entity");
                // A leader that learns it was replaced answers NOT_LEADER_OR_FOLLOWER at once
                // (`ReplicaManager.becomeLeaderOrFollower` completes its delayed produces); one
                // that has not learnt waits: its followers fetch from the new leader, so its high
                // watermark stays, and the request times out.
                let seen = views[broker as usize].metadata_offset;
                let leader = partition
                    .replica_on(broker)
                    .filter(|_| partition.leads_as_seen(broker, seen).is_some());
                let Some(leader) = leader else {
                    *outcome = BatchOutcome::Done(Err(KafkaError::NotLeaderOrFollower));
                    continue;
                };
                let hw = replicas.get(leader).expect("replica entity").high_watermark;
                if hw >= required {
                    *outcome = if partition.isr.len() < partition.effective_min_isr() {
                        BatchOutcome::Done(Err(KafkaError::NotEnoughReplicasAfterAppend))
                    } else {
                        BatchOutcome::Done(Ok(base_offset))
                    };
                }
            }
            let all_done = request
                .outcomes
                .iter()
                .all(|o| matches!(o, BatchOutcome::Done(_)));
            let expired = matches!(wire.state, WireState::Held { until_ms } if now >= until_ms);
            if all_done || expired {
                let seen = views[broker as usize].metadata_offset;
                respond(network, now, &wire, request, partitions, seen);
                wires.finish(id);
            }
        }
    }
}
