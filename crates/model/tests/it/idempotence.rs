//! Idempotence against its absence: lost answers, retries, and what the leader's log holds.

use std::collections::BTreeMap;

use kafkascope_model::report::Report;
use kafkascope_model::sim::{EventKind, Node, Partition, Payload, Record, Replica, Runtime, Sim};

/// The leader's log of the single partition.
fn leader_log(sim: &mut Sim) -> Vec<Record> {
    let world = sim.world_mut();
    let partition = world
        .query::<&Partition>()
        .single(world)
        .expect("one partition")
        .clone();
    let leader = partition.leader_replica().expect("a leader");
    world
        .get::<Replica>(leader)
        .expect("replica")
        .log
        .iter()
        .copied()
        .collect()
}

/// How many of each producer's records are in the log more than once, counted from the log.
fn repeated_by_producer(log: &[Record]) -> BTreeMap<u32, u64> {
    let mut copies: BTreeMap<u64, (u32, u64)> = BTreeMap::new();
    for record in log {
        copies
            .entry(record.id())
            .or_insert((record.producer(), 0))
            .1 += 1;
    }
    let mut repeated = BTreeMap::new();
    for (producer, n) in copies.into_values() {
        *repeated.entry(producer).or_insert(0) += n - 1;
    }
    repeated
}

#[test]
fn lost_answers_duplicate_records_only_without_idempotence() {
    let scenario = crate::built_in("idempotence");
    let mut sim = Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    let log = leader_log(&mut sim);
    let repeated = repeated_by_producer(&log);
    let (idempotent, legacy) = (&report.producers[0], &report.producers[1]);
    assert!(idempotent.idempotent && !legacy.idempotent);
    for p in [idempotent, legacy] {
        // Five requests had their answers lost: the in-flight limit then stops the producer
        // until `request.timeout.ms` cancels them.
        assert_eq!(
            p.stats.errors.get("REQUEST_TIMED_OUT"),
            Some(&5),
            "{}",
            p.name
        );
        assert_eq!(p.stats.failed, 0, "{}", p.name);
    }
    assert_eq!(idempotent.duplicate_records, 0);
    assert_eq!(
        repeated.get(&0).copied().unwrap_or(0),
        0,
        "the idempotent producer's records are in the log once each"
    );
    assert!(
        legacy.duplicate_records >= 5,
        "{}",
        legacy.duplicate_records
    );
    assert_eq!(repeated.get(&1).copied(), Some(legacy.duplicate_records));
    assert_eq!(report.metrics.duplicate_records, legacy.duplicate_records);
    // Each event names both copies of the batch.
    let mut named = 0;
    for event in &report.events {
        if let EventKind::DuplicateAppended {
            producer,
            offset,
            first_offset,
            records,
            ..
        } = &event.kind
        {
            assert_eq!(producer, "legacy");
            for i in 0..*records {
                let (copy, first) = (log[(offset + i) as usize], log[(first_offset + i) as usize]);
                assert_eq!(copy.id(), first.id());
                assert!(first_offset < offset);
            }
            named += records;
        }
    }
    assert_eq!(named, legacy.duplicate_records);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn a_retried_idempotent_batch_is_answered_with_its_original_offset() {
    // `ProducerStateEntry.findDuplicateBatch`: the leader finds the batch among the producer's
    // last five and answers with the offset it was first written at, appending nothing.
    let scenario = crate::built_in("idempotence");
    let mut sim = Sim::new(&scenario);
    sim.run_until(30_000);
    let appended_before = leader_log(&mut sim).len();
    // The retried batches' first records, by batch id, and the offsets the leader answers.
    let mut first_records: BTreeMap<u64, u64> = BTreeMap::new();
    let mut answers: BTreeMap<u64, u64> = BTreeMap::new();
    while sim.now_ms() < 40_000 {
        sim.step();
        let wires = &sim.world().resource::<Runtime>().wires;
        for message in wires.iter() {
            match &message.payload {
                Payload::Produce(request) if request.producer == 0 => {
                    for batch in request.batches.iter().filter(|b| b.retry) {
                        first_records.insert(batch.id, batch.records[0].id);
                    }
                }
                Payload::ProduceResponse(response) if message.wire.to == Node::Producer(0) => {
                    for result in &response.results {
                        if let Ok(base) = result.result {
                            answers.insert(result.batch, base);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert_eq!(first_records.len(), 5, "five batches retried");
    let log = leader_log(&mut sim);
    for (batch, first_id) in &first_records {
        let base = answers[batch];
        assert!(
            (base as usize) < appended_before,
            "batch {batch} answered with {base}, an offset written before the retry"
        );
        assert_eq!(log[base as usize].id(), *first_id);
        assert_eq!(log.iter().filter(|r| r.id() == *first_id).count(), 1);
    }
}
