//! Segments and retention: each broker's check deletes the expired segments of every replica it
//! holds, the log start offset only moves forward, and a consumer that falls behind it resets by
//! `auto.offset.reset`.

use kafkascope_model::report::Report;
use kafkascope_model::sim::{Cluster, EventKind, Replica, ResetReason, Sim};

/// One partition on three brokers, 100 records a second of 100 bytes, segments of ten records,
/// 10 s of retention checked every 5 s; a group reading 20 records a second.
fn aging(reset: &str) -> String {
    format!(
        r#"(
    name: "aging",
    duration_ms: 60000,
    cluster: (brokers: 3, log_retention_check_interval_ms: 5000),
    topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
              segment_bytes: 1000, retention_ms: 10000)],
    producers: [(name: "p", topic: "t", records_per_sec: 100, linger_ms: 0)],
    consumer_groups: [(name: "slow", topics: ["t"], members: 1, records_per_sec: 20,
                       auto_offset_reset: {reset})],
)"#
    )
}

/// Each replica of `t-0`: (broker, log start offset, first segment's base offset).
fn starts(sim: &mut Sim) -> Vec<(u32, u64, u64)> {
    let world = sim.world_mut();
    let partition = world.resource::<Cluster>().topics[0].partitions[0];
    let mut replicas = world.query::<&Replica>();
    let mut starts: Vec<_> = replicas
        .iter(world)
        .filter(|r| r.partition == partition)
        .map(|r| {
            let first = r.segments.iter().next().expect("a segment").base_offset;
            (r.broker, r.log_start_offset, first)
        })
        .collect();
    starts.sort_unstable();
    starts
}

#[test]
fn each_broker_deletes_expired_segments_of_every_replica_at_its_checks() {
    let scenario = crate::scenario(&aging("Earliest"));
    let mut sim = Sim::new(&scenario);
    // The first check runs 30 s after a broker starts (`log.initial.task.delay.ms`).
    sim.run_until(30_000);
    let before = starts(&mut sim);
    assert!(before.iter().all(|&(_, start, _)| start == 0), "{before:?}");
    sim.run_until(30_001);
    let after = starts(&mut sim);
    assert_eq!(after.len(), 3, "every broker holds a replica: {after:?}");
    for &(broker, start, first) in &after {
        // At 30 s every segment whose newest record is more than 10 s old goes: about 2000
        // records of 3000, and never a part of a segment.
        assert_eq!(start, first, "broker {broker}'s log starts at a segment");
        assert!((1_800..=2_000).contains(&start), "broker {broker}: {start}");
        assert_eq!(start % 10, 0, "segments hold ten records: {start}");
    }
    let report = Report::of(&sim);
    let deleted: Vec<u32> = report
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::SegmentsDeleted { broker, .. } if e.at_ms == 30_000 => Some(broker),
            _ => None,
        })
        .collect();
    assert_eq!(
        deleted,
        vec![1, 2, 3],
        "each broker deletes at its own check"
    );
    // Nothing moves between checks, and each check moves every log start forward.
    let mut last = after;
    for at in [34_999, 35_001, 39_999, 40_001] {
        sim.run_until(at);
        let now = starts(&mut sim);
        for (a, b) in last.iter().zip(&now) {
            assert!(b.1 >= a.1, "a log start went back: {a:?} then {b:?}");
            if at % 5_000 == 4_999 {
                assert_eq!(a.1, b.1, "moved between checks");
            } else {
                assert!(b.1 > a.1, "the check at {} moved nothing", at - 1);
            }
        }
        last = now;
    }
    assert!(Report::of(&sim).invariant_violations.is_empty());
}

/// The resets of the group's member: (instant, from, to, reason).
fn resets(report: &Report) -> Vec<(u64, u64, u64, ResetReason)> {
    report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::OffsetReset {
                from, to, reason, ..
            } => Some((e.at_ms, *from, *to, *reason)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_consumer_below_the_log_start_resets_by_auto_offset_reset() {
    for reset in ["Earliest", "Latest"] {
        let scenario = crate::scenario(&aging(reset));
        let mut sim = Sim::new(&scenario);
        sim.run_until(60_000);
        let report = Report::of(&sim);
        let resets = resets(&report);
        assert!(
            !resets.is_empty(),
            "{reset}: the slow group falls behind retention"
        );
        let (at, from, to, reason) = resets[0];
        assert_eq!(reason, ResetReason::BelowLogStart, "{reset}");
        let events_before: Vec<_> = report
            .events
            .iter()
            .filter(|e| e.at_ms < at)
            .filter_map(|e| match e.kind {
                EventKind::SegmentsDeleted { to_offset, .. } => Some(to_offset),
                _ => None,
            })
            .collect();
        let log_start = *events_before.iter().max().expect("retention ran before");
        assert!(
            from < log_start,
            "{reset}: read at {from}, below the log start {log_start}"
        );
        match reset {
            // To the leader's log start, which may have moved on by a check since.
            "Earliest" => assert!(to >= log_start && to % 10 == 0, "{to}"),
            // To the high watermark: every record in between is skipped.
            _ => assert!(to > log_start + 500, "{to}"),
        }
        assert!(report.invariant_violations.is_empty(), "{reset}");
    }
}
