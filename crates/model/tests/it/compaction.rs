//! Compaction: every broker's cleaner keeps the latest record of each key of a compacted log, a
//! tombstone goes once `delete.retention.ms` has passed, consumers read only what is kept, and
//! `__consumer_offsets` is compacted too.

use std::collections::HashMap;

use kafkascope_model::report::Report;
use kafkascope_model::sim::chunked::CHUNK;
use kafkascope_model::sim::consumer::Consumer;
use kafkascope_model::sim::keys::Key;
use kafkascope_model::sim::ledger::AckLedger;
use kafkascope_model::sim::{Cluster, EventKind, Partition, Replica, Sim};

/// Every replica of the topic's partition 0.
fn replicas<'a>(sim: &'a Sim, topic: &str) -> Vec<&'a Replica> {
    let world = sim.world();
    let cluster = world.resource::<Cluster>();
    let t = cluster
        .topics
        .iter()
        .find(|t| t.name == topic)
        .expect("the topic");
    let partition = t.partitions[0];
    let mut replicas: Vec<&Replica> = world
        .iter_entities()
        .filter_map(|e| world.get::<Replica>(e.id()))
        .filter(|r| r.partition == partition)
        .collect();
    replicas.sort_by_key(|r| r.broker);
    replicas
}

#[test]
fn compaction_keeps_the_latest_value_of_each_key_on_every_replica() {
    let mut sim = Sim::new(&crate::built_in("compaction"));
    // Each record's key and whether it is a tombstone, read once a second as the log grows,
    // before any cleaning can have reached it: a chunk whose places compaction empties gives
    // its memory back, and holds placeholders instead.
    let mut written: Vec<(Key, bool)> = Vec::new();
    while sim.now_ms() < 120_000 {
        sim.run_until(sim.now_ms() + 1_000);
        let log = &replicas(&sim, "profiles")[0].log;
        for offset in written.len()..log.len() {
            let record = log.get(offset).expect("a record");
            assert!(
                !record.is_placeholder(),
                "offset {offset} was vacated at once"
            );
            written.push((record.key, record.is_tombstone()));
        }
    }
    let replicas = replicas(&sim, "profiles");
    assert_eq!(replicas.len(), 3);
    for replica in &replicas {
        let cleaned_to = replica.cleaned.checkpoint().expect("the log was cleaned");
        assert!(cleaned_to > 200, "broker {}: {cleaned_to}", replica.broker);
        // The latest offset of each key below the cleaned point, tombstones included.
        let mut latest = HashMap::new();
        for (offset, (key, tombstone)) in (0..cleaned_to).zip(&written) {
            latest.insert(*key, (offset, *tombstone));
        }
        let kept: Vec<u64> = (0..cleaned_to)
            .filter(|o| !replica.cleaned.is_removed(*o))
            .collect();
        // Exactly the latest value of each key, but for the deleted key, whose tombstone went
        // at the cleaning after its horizon.
        let mut expected: Vec<u64> = latest
            .values()
            .filter(|(_, tombstone)| !tombstone)
            .map(|(o, _)| *o)
            .collect();
        expected.sort_unstable();
        assert_eq!(kept, expected, "broker {}", replica.broker);
        assert_eq!(latest.len(), 4, "three keys and user-42");
        assert_eq!(kept.len(), 3, "user-42 was deleted");
        // Each chunk of places all removed holds placeholders: its records' memory went.
        let chunks = cleaned_to as usize / CHUNK;
        let vacated = (0..chunks)
            .filter(|k| {
                let places = k * CHUNK..(k + 1) * CHUNK;
                let all_removed = places.clone().all(|o| replica.cleaned.is_removed(o as u64));
                let placeholders = places
                    .clone()
                    .all(|o| replica.log.get(o).is_some_and(|r| r.is_placeholder()));
                assert_eq!(
                    all_removed, placeholders,
                    "broker {} chunk {k}",
                    replica.broker
                );
                placeholders
            })
            .count();
        assert!(
            vacated >= chunks - 1,
            "broker {}: {vacated} of {chunks}",
            replica.broker
        );
        // Nothing above the cleaned point is removed.
        assert!((cleaned_to..replica.log_end_offset()).all(|o| !replica.cleaned.is_removed(o)));
        // The segments hold the kept records' bytes only.
        let bytes: u64 = replica.segments.iter().map(|s| s.bytes).sum();
        let kept_after = (cleaned_to..replica.log_end_offset()).count() as u64;
        assert_eq!(bytes, (kept.len() as u64 + kept_after) * 100);
    }
    let report = Report::of(&sim);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    assert!(
        report.lost_records.is_empty(),
        "compacted records are not lost"
    );
}

/// The ledger of acknowledged writes forgets, from the oldest on, the records every replica's
/// cleaner removed: they are neither lost nor unavailable, and a compacted log's ledger stays
/// as short as what its logs keep at their front.
#[test]
fn the_ledger_forgets_what_every_replica_compacted_away() {
    let mut sim = Sim::new(&crate::built_in("compaction"));
    sim.run_until(120_000);
    let replicas = replicas(&sim, "profiles");
    let ledger = sim.world().resource::<AckLedger>();
    assert!(ledger.forgotten() > 0, "something was forgotten");
    let first = ledger.iter().next().expect("records kept");
    let kept_from = first.offset().expect("acks=all");
    let removed_everywhere = |o: u64| replicas.iter().all(|r| r.cleaned.is_removed(o));
    assert!(
        kept_from > 0 && !removed_everywhere(kept_from),
        "{kept_from}"
    );
    assert!(
        (0..kept_from).all(removed_everywhere),
        "it forgot only what went"
    );
    assert_eq!(
        ledger.forgotten() as u64,
        kept_from,
        "one producer's records, in order"
    );
}

/// A value kept for good (`user-42`, never deleted here) stops the ledger's forgetting at its
/// offset; past it, the rows of whole chunks every replica's cleaner emptied are let go, and
/// nothing counts as lost.
#[test]
fn past_a_value_kept_for_good_the_ledger_lets_go_of_emptied_chunks() {
    let source = crate::built_in_source("compaction").replace(
        "(at_ms: 40000, action: Tombstone(\"accounts\", \"user-42\")),",
        "",
    );
    let mut sim = Sim::new(&crate::scenario(&source));
    sim.run_until(120_000);
    let replicas = replicas(&sim, "profiles");
    let world = sim.world();
    let ordinal = {
        let cluster = world.resource::<Cluster>();
        let entity = cluster
            .topics
            .iter()
            .find(|t| t.name == "profiles")
            .unwrap()
            .partitions[0];
        world.get::<Partition>(entity).unwrap().ordinal
    };
    let ledger = world.resource::<AckLedger>();
    let front = ledger.forgotten();
    let first = ledger.get(ordinal, front).expect("the oldest record kept");
    assert!(
        first.offset().is_some_and(|o| o < 20),
        "user-42's value, written at 5 s, holds the front: {first:?}"
    );
    let len = ledger.len_of(ordinal);
    let vacant: Vec<usize> = (front..len)
        .filter(|i| ledger.get(ordinal, *i).is_none())
        .collect();
    assert!(vacant.len() >= 2 * CHUNK, "{} rows let go", vacant.len());
    // Whole chunks of rows, each of records every replica removed.
    assert!(
        vacant
            .chunks(CHUNK)
            .all(|c| c[0] % CHUNK == 0 && c.len() == CHUNK)
    );
    let kept: Vec<u64> = (front..len)
        .filter_map(|i| ledger.get(ordinal, i))
        .filter_map(|r| r.offset())
        .filter(|o| replicas.iter().all(|r| r.cleaned.is_removed(*o)))
        .collect();
    assert!(
        kept.len() < 2 * CHUNK,
        "removed everywhere yet kept: only rows in chunks with a record some replica keeps"
    );
    let report = Report::of(&sim);
    assert!(report.lost_records.is_empty(), "{:?}", report.lost_records);
    assert!(report.invariant_violations.is_empty());
    assert_eq!(
        report.producers.iter().map(|p| p.stats.acked).sum::<u64>(),
        len as u64
    );
}

#[test]
fn a_tombstone_is_kept_for_delete_retention_ms_after_the_cleaning_that_first_kept_it() {
    let mut sim = Sim::new(&crate::built_in("compaction"));
    sim.run_until(120_000);
    let report = Report::of(&sim);
    // (at, broker, tombstones removed) of each cleaning of the topic.
    let cleanings: Vec<(u64, u32, u64)> = report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LogCleaned {
                broker,
                topic,
                tombstones_removed,
                ..
            } if topic == "profiles" => Some((e.at_ms, *broker, *tombstones_removed)),
            _ => None,
        })
        .collect();
    // The cleaner looks every 15 s (`log.cleaner.backoff.ms`), and each look finds the log more
    // than half dirty: 300 new records against about nine kept.
    for broker in 1..=3 {
        let times: Vec<u64> = cleanings
            .iter()
            .filter(|c| c.1 == broker)
            .map(|c| c.0)
            .collect();
        assert_eq!(
            times,
            [15_000, 30_000, 45_000, 60_000, 75_000, 90_000, 105_000],
            "broker {broker}"
        );
    }
    // The tombstone sent at 40 s is first kept by the cleaning at 45 s: its horizon is 65 s. The
    // cleaning at 60 s keeps it; the one at 75 s removes it, on every replica.
    let removed: Vec<(u64, u32)> = cleanings
        .iter()
        .filter(|c| c.2 > 0)
        .map(|c| (c.0, c.1))
        .collect();
    assert_eq!(removed, [(75_000, 1), (75_000, 2), (75_000, 3)]);
}

#[test]
fn a_consumer_reading_from_the_start_reads_only_what_compaction_kept() {
    let mut sim = Sim::new(&crate::built_in("compaction"));
    sim.run_until(120_000);
    let world = sim.world();
    let processed: HashMap<String, u64> = world
        .resource::<Cluster>()
        .consumers
        .iter()
        .filter_map(|e| world.get::<Consumer>(*e))
        .map(|c| (c.member_id.clone(), c.processed_total))
        .collect();
    // The cache reads every record as it comes, before any cleaning; rebuild starts at 60 s from
    // offset 0, when the log is cleaned up to 120: four latest values (user-42's tombstone
    // among them), then the 120 or so records written since.
    let cache = processed
        .iter()
        .find(|(m, _)| m.starts_with("cache"))
        .expect("cache");
    let rebuild = processed
        .iter()
        .find(|(m, _)| m.starts_with("rebuild"))
        .expect("rebuild");
    let report = Report::of(&sim);
    let committed = |group: &str| {
        report
            .consumer_groups
            .iter()
            .find(|g| g.name == group)
            .and_then(|g| g.offsets.first())
            .and_then(|o| o.committed)
            .expect("a committed offset")
    };
    // Both commit the same position: offsets count places, kept or not.
    assert_eq!(committed("cache"), committed("rebuild"));
    assert!(*cache.1 >= 230, "cache processed {}", cache.1);
    assert!(
        (120..=130).contains(rebuild.1),
        "rebuild processed {} records",
        rebuild.1
    );
}

#[test]
fn the_offsets_topic_is_compacted_and_a_new_coordinator_loads_the_latest_commits() {
    // The broker leading the group's `__consumer_offsets` partition crashes after cleanings: the
    // new coordinator loads the group's offsets from a compacted log.
    let source = crate::built_in_source("compaction").replace(
        "(at_ms: 60000, action: SetGroupMembers(\"rebuild\", 1)),",
        "(at_ms: 60000, action: SetGroupMembers(\"rebuild\", 1)),\n        (at_ms: 80000, action: CrashBroker(1)),",
    );
    assert!(source.contains("CrashBroker(1)"));
    let mut sim = Sim::new(&crate::scenario(&source));
    sim.run_until(120_000);
    let report = Report::of(&sim);
    let offsets_cleanings = report
        .events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::LogCleaned { topic, records_removed, .. }
                if topic == "__consumer_offsets" && *records_removed > 0 && e.at_ms < 80_000)
        })
        .count();
    assert!(
        offsets_cleanings >= 3,
        "{offsets_cleanings} cleanings of __consumer_offsets"
    );
    assert!(
        report
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::LeaderElected { ref topic, .. } if topic == "__consumer_offsets")),
        "the coordinator moved"
    );
    // No committed offset went back, and the groups go on from where they were.
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    for group in &report.consumer_groups {
        let o = group.offsets.first().expect("an offset");
        assert!(
            o.committed.is_some_and(|c| c + 200 > o.high_watermark),
            "{}: {o:?}",
            group.name
        );
    }
}

#[test]
fn a_compacted_topic_refuses_records_without_a_key() {
    // A scenario whose producer has no keys is refused where it says so.
    let keyless = crate::built_in_source("compaction").replace("keys: Random(3)", "keys: None");
    let refused = kafkascope_model::scenario::Scenario::parse(&keyless, "keyless.ron")
        .expect_err("a keyless producer on a compacted topic");
    assert!(
        refused.to_string().contains("producers[0].keys"),
        "{refused}"
    );
    // Live, a producer switched to no keys, or records sent without one, are refused too.
    let source = crate::built_in_source("compaction").replace(
        "(at_ms: 5000, action: Produce(\"accounts\", Some(\"user-42\"), 1)),",
        "(at_ms: 5000, action: Produce(\"accounts\", Some(\"user-42\"), 1)),
        (at_ms: 6000, action: SetProducer(\"profiles\", (keys: None))),
        (at_ms: 7000, action: Produce(\"accounts\", None, 3)),",
    );
    let mut sim = Sim::new(&crate::scenario(&source));
    sim.run_until(10_000);
    let refusals = crate::refusals(&Report::of(&sim));
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(
        refusals
            .iter()
            .all(|(_, _, why)| why.contains("INVALID_RECORD"))
    );
}
