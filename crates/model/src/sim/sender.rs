//! The producer's I/O loop (`Sender.runOnce`): it handles the answers that arrived, gives up
//! batches past their delivery timeout, takes the application's new records into the
//! accumulator, asks for metadata where a leader is unknown, and drains ready batches into one
//! ProduceRequest per leader. What a producer holds (its accumulator, connections, requests in
//! flight) is the `Producer` component, in `producer.rs`.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::clock::SimRng;
use super::cluster::{Broker, BrokerId, Cluster, Partition};
use super::keys::{self, Key};
use super::ledger::AckLedger;
use super::metadata::Refresh;
use super::network::{Network, Node};
use super::protocol::{BatchResult, ProduceRequest, ProduceResponse, WireBatch};
use crate::scenario::Acks;

use super::producer::*;

/// A producer's requests to send now: to each leader with a batch ready and a connection open,
/// the ready batches.
fn send_requests(
    producer: &mut Producer,
    now: u64,
    network: &mut Network,
    rng: &mut SimRng,
    ledger: &mut AckLedger,
    reach: &[(Reach, u64)],
    by_leader: &mut Vec<(BrokerId, u32)>,
) {
    // (leader, partition) of each partition with a batch, from the producer's metadata, by
    // leader and then partition: a scratch kept between steps.
    by_leader.clear();
    for p in 0..producer.partitions.len() {
        let Some(head) = producer.queues[p].front_mut() else {
            continue;
        };
        if let (Some(leader), epoch) = producer.metadata.leaders[p] {
            head.see_leader_epoch(epoch);
            by_leader.push((leader, p as u32));
        }
    }
    by_leader.sort_unstable();
    for led in by_leader.chunk_by(|a, b| a.0 == b.0) {
        let broker = led[0].0;
        let in_flight = producer
            .in_flight
            .iter()
            .filter(|f| f.broker == broker)
            .count();
        if in_flight >= producer.config.max_in_flight_requests_per_connection as usize {
            continue;
        }
        let ready = led.iter().any(|&(_, p)| {
            let queue = &producer.queues[p as usize];
            let head = &queue[0];
            if head.attempts > 0 {
                return head.retry_due(now);
            }
            let full = queue.len() > 1 || head.is_full(producer.config.batch_size);
            full || now >= head.created_ms + producer.config.linger_ms
        });
        if !ready {
            continue;
        }
        let (broker_reach, round_trip_ms) = reach
            .get(broker as usize)
            .copied()
            .unwrap_or((Reach::Unreachable, 0));
        if !producer.ready_to_send(broker, now, broker_reach, round_trip_ms, rng, ledger) {
            continue;
        }
        let start = producer.drain_start.get(&broker).copied().unwrap_or(0) % led.len();
        producer.drain_start.insert(broker, start + 1);
        let mut batches = Vec::new();
        let mut size = 0u32;
        for k in 0..led.len() {
            let p = led[(start + k) % led.len()].1;
            let queue = &producer.queues[p as usize];
            let Some(head) = queue.front() else { continue };
            if head.attempts > 0 && !head.retry_due(now) {
                continue;
            }
            // `RecordAccumulator.drainBatchesForOneNode` stops filling the request here.
            if producer.holds_back(head) {
                break;
            }
            if !batches.is_empty() && size + head.bytes > MAX_REQUEST_SIZE {
                break;
            }
            let mut batch = producer.queues[p as usize]
                .pop_front()
                .expect("head exists");
            // Only a batch never sent gets a sequence: one first sent before the producer was
            // restarted with idempotence goes on without (Kafka's producer never changes it).
            if producer.idempotent && batch.base_sequence.is_none() && batch.attempts == 0 {
                let epoch = producer.producer_epoch;
                let sequences = &mut producer.sequences[p as usize];
                // A partition still numbered in an older epoch starts the current one at 0 once
                // nothing of the old is outstanding (`maybeUpdateProducerIdAndEpoch`).
                if sequences.epoch != epoch {
                    *sequences = Sequences::starting(epoch);
                }
                batch.producer_epoch = epoch;
                batch.base_sequence = Some(sequences.next);
                sequences.next += batch.records.len() as i32;
            }
            batch.sequence_reset = false;
            size += batch.bytes;
            batches.push(batch);
        }
        if batches.is_empty() {
            continue;
        }
        let request = ProduceRequest {
            producer: producer.index,
            acks: producer.acks,
            timeout_ms: producer.config.request_timeout_ms,
            batches: batches
                .iter()
                .map(|b| WireBatch {
                    id: b.id,
                    partition: producer.partitions[b.partition as usize],
                    producer: producer.index,
                    base_sequence: if producer.idempotent {
                        b.base_sequence
                    } else {
                        None
                    },
                    producer_epoch: b.producer_epoch,
                    retry: b.attempts > 0,
                    records: b.records.clone(),
                    max_timestamp: b.max_timestamp,
                })
                .collect(),
            outcomes: Vec::new(),
        };
        let from = Node::Producer(producer.index);
        let wire_id = network.send(now, from, Node::Broker(broker), request).id;
        if producer.acks == Acks::Zero {
            // acks=0: done once written to the socket; no answer will come.
            for batch in &batches {
                producer.stats.acked += batch.records.len() as u64;
                producer.record_acked(batch, None, ledger);
            }
        } else {
            producer.in_flight.push(InFlight {
                wire_id,
                broker,
                sent_ms: now,
                batches,
            });
        }
    }
}

/// The producers' rules, with what they borrow for one step.
#[derive(SystemParam)]
pub(super) struct ProducersPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    ledger: ResMut<'w, AckLedger>,
    brokers: Query<'w, 's, &'static Broker>,
    partitions: Query<'w, 's, &'static Partition>,
    producers: Query<'w, 's, &'static mut Producer>,
    /// Kept between steps, so that a step allocates little: the responses arriving now,
    due: Local<'s, Vec<u64>>,
    /// a step's keys,
    key_scratch: Local<'s, KeyScratch>,
    /// and (leader, partition) of a producer's partitions with a batch.
    by_leader: Local<'s, Vec<(BrokerId, u32)>>,
}

/// The producers' phase: handle responses, time out, accumulate new records and send batches.
pub(super) fn phase(mut rules: ProducersPhase) {
    rules.handle_responses();
    rules.expire();
    rules.accumulate();
    // After the new records: one for a partition with no known leader asks for metadata now.
    rules.refresh_metadata();
    rules.send();
}

impl ProducersPhase<'_, '_> {
    fn handle_responses(&mut self) {
        let Self {
            runtime,
            cluster,
            ledger,
            producers,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            rng,
            wires,
            network,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        wires.arriving::<ProduceResponse>(due);
        for &id in due.iter() {
            wires.finish(id);
            let (wire, response) = wires
                .get_of::<ProduceResponse>(id)
                .expect("a produce response");
            let Node::Producer(index) = wire.to else {
                unreachable!("produce responses go to producers")
            };
            let mut producer = producers
                .get_mut(cluster.producers[index as usize])
                .expect("producer entity");
            if response.closed {
                if let Node::Broker(broker) = wire.from {
                    producer.connection_broke(broker, response.request, now, rng, ledger);
                    network.connection_closed(index, broker);
                }
                continue;
            }
            let Some(i) = producer
                .in_flight
                .iter()
                .position(|f| f.wire_id == response.request)
            else {
                continue; // The request timed out on the client already.
            };
            let mut in_flight = producer.in_flight.remove(i);
            for BatchResult {
                batch,
                result,
                current_leader,
                ..
            } in &response.results
            {
                if let Some(j) = in_flight.batches.iter().position(|b| b.id == *batch) {
                    let batch = in_flight.batches.remove(j);
                    if let Some((leader, epoch)) = current_leader {
                        producer
                            .metadata
                            .take_hint(batch.partition as usize, *leader, *epoch);
                    }
                    producer.complete(batch, *result, now, rng, ledger);
                }
            }
        }
    }

    /// Client-side timeouts, for every producer ([`Producer::expire`]); what was still on its way on
    /// a connection closed for a timeout never arrives.
    fn expire(&mut self) {
        let Self {
            runtime,
            cluster,
            ledger,
            producers,
            ..
        } = self;
        let Runtime {
            clock,
            rng,
            wires,
            network,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        // In scenario order: the order producers draw random numbers and wire ids in.
        for &entity in &cluster.producers {
            let mut producer = producers.get_mut(entity).expect("producer entity");
            for (id, broker) in producer.expire(now, rng, ledger) {
                network.connection_closed(producer.index, broker);
                wires.lose(id, now);
            }
        }
    }

    /// The application calls `send()`: records at the configured rate, spread evenly over each
    /// second, and those the timeline asks for.
    fn accumulate(&mut self) {
        let Self {
            runtime,
            cluster,
            producers,
            key_scratch,
            ..
        } = self;
        let Runtime { clock, rng, .. } = &mut **runtime;
        let now = clock.now_ms;
        let (batch, available, text) = &mut **key_scratch;
        // In scenario order: the order producers draw random numbers and wire ids in.
        for &entity in &cluster.producers {
            let mut producer = producers.get_mut(entity).expect("producer entity");
            let due =
                (now - producer.rate_since_ms + 1) * u64::from(producer.records_per_sec) / 1000;
            batch.clear();
            while producer.made_since < due {
                producer.made_since += 1;
                let key = producer.next_key(rng);
                batch.push((key, false));
            }
            while let Some((key, count, tombstone)) = producer.requested.pop_front() {
                let key = match key {
                    Some(k) => Key::named(keys::intern(&mut producer.key_names, &k)),
                    None => Key::NONE,
                };
                batch.extend(std::iter::repeat_n((key, tombstone), count as usize));
            }
            if batch.is_empty() {
                continue;
            }
            available.clear();
            available.extend(producer.metadata.leaders.iter().map(|(l, _)| l.is_some()));
            for &(key, tombstone) in batch.iter() {
                let keyless = key.is_none();
                let partition = producer.choose_partition(key, text, available, rng);
                producer.append(now, partition, key, tombstone);
                if keyless {
                    producer.after_keyless_record(available, rng);
                }
            }
        }
    }

    /// The producers' Metadata requests ([`ClientMetadata::refresh`]). Records waiting for a
    /// partition with no known leader ask for one (`Sender.sendProducerData`,
    /// `unknownLeaderTopics`); a producer's load on a broker is its requests in flight there.
    fn refresh_metadata(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            producers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            views,
            ..
        } = &mut **runtime;
        let views = views.checked(brokers.iter());
        for &entity in &cluster.producers {
            let mut producer = producers.get_mut(entity).expect("producer entity");
            let producer = &mut *producer;
            let unknown_leader = producer
                .queues
                .iter()
                .zip(producer.metadata.leaders.iter())
                .any(|(q, (leader, _))| !q.is_empty() && leader.is_none());
            producer.metadata.wanted |= unknown_leader;
            let refresh = Refresh {
                now: clock.now_ms,
                round_trip_ms: 2 * cluster.config.network_latency_ms,
                backoff_ms: producer.config.retry_backoff_ms,
                max_age_ms: producer.config.metadata_max_age_ms,
                node: Node::Producer(producer.index),
                network,
                brokers: views,
            };
            let in_flight = &producer.in_flight;
            let next = producer.metadata.refresh(
                &refresh,
                |b| in_flight.iter().filter(|f| f.broker == b).count(),
                producer
                    .partitions
                    .iter()
                    .map(|p| partitions.get(*p).expect("partition entity")),
            );
            wake.at(next);
            // The answer lists the topic's partitions the answering broker knows of: those added
            // since are used from now on (`Metadata.update`).
            if producer.metadata.refreshed_ms == clock.now_ms {
                let seen = producer.metadata.answered_offset;
                let topic = &cluster.topics[producer.topic];
                for &e in &topic.partitions[producer.partitions.len().min(topic.partitions.len())..]
                {
                    let p = partitions.get(e).expect("partition entity");
                    if !p.known_at(seen) {
                        break;
                    }
                    let record = p.leader_seen(seen);
                    producer.learn_partition(e, p.ordinal, (record.leader, record.leader_epoch));
                }
            }
        }
    }

    /// The sender (`Sender.sendProducerData`): a leader is ready when one of its partitions' first
    /// batch is full, has lingered `linger.ms`, or is a retry whose back-off passed; then it takes the
    /// first batch of each of that leader's partitions (`RecordAccumulator.drain`) into one request,
    /// up to `max.request.size`, while fewer than `max.in.flight.requests.per.connection` requests
    /// to that broker wait an answer.
    fn send(&mut self) {
        let Self {
            runtime,
            cluster,
            ledger,
            brokers,
            producers,
            by_leader,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            rng,
            wake,
            views,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let views = views.checked(brokers.iter());
        // In scenario order: the order producers draw random numbers and wire ids in.
        for &entity in &cluster.producers {
            let mut producer = producers.get_mut(entity).expect("producer entity");
            let producer = &mut *producer;
            producer.settle_sequences();
            if producer.queues.iter().any(|q| !q.is_empty()) {
                // How each broker answers a connection attempt now, and the round trip to it.
                let node = Node::Producer(producer.index);
                let reach: Vec<(Reach, u64)> = (0..views.len())
                    .map(|b| {
                        let view = views[b];
                        let reach = if network.is_cut(node, Node::Broker(b as BrokerId)) {
                            Reach::Unreachable
                        } else if view.alive && !view.starting {
                            Reach::Accepting
                        } else {
                            Reach::Refusing
                        };
                        let one_way = network.latency_ms
                            + network.extra_ms.get(b).copied().unwrap_or_default();
                        (reach, 2 * one_way)
                    })
                    .collect();
                send_requests(producer, now, network, rng, ledger, &reach, by_leader);
                // A connection that failed just now asks for metadata at the phase's next turn.
                if producer.metadata.wanted {
                    wake.at(now + 1);
                }
            }
            producer.wake(now, wake);
        }
    }
}
