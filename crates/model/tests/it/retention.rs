//! Segments and retention: each broker's check deletes the expired segments of every replica it
//! holds, the log start offset only moves forward, and a consumer that falls behind it resets by
//! `auto.offset.reset`.

use kafkascope_model::report::Report;
use kafkascope_model::scenario::Action;
use kafkascope_model::sim::ledger::AckLedger;
use kafkascope_model::sim::{Cluster, EventKind, Partition, Replica, ResetReason, Sim};

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
        // Record n is sent at n * 10 ms, and segments hold ten records. At 30 s a segment goes
        // when its newest record is more than 10 s old: [1990, 1999], newest at 19.99 s, is
        // 10.01 s old and goes; [2000, 2009], newest at 20.09 s, stays. Every replica's log
        // starts at 2000, at a segment's base.
        assert_eq!(start, first, "broker {broker}'s log starts at a segment");
        assert_eq!(start, 2_000, "broker {broker}");
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
        let report = crate::run(&crate::scenario(&aging(reset)));
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

#[test]
fn the_group_counts_its_resets_and_the_offsets_they_skipped() {
    for reset in ["Earliest", "Latest"] {
        let report = crate::run(&crate::scenario(&aging(reset)));
        let resets = resets(&report);
        let group = &report.consumer_groups[0];
        assert_eq!(group.offset_resets, resets.len() as u64, "{reset}");
        // Each reset from a position below the log start skips the offsets from the position up
        // to where it lands: with `earliest` exactly the deleted records it had not read.
        let skipped: u64 = resets.iter().map(|&(_, from, to, _)| to - from).sum();
        assert_eq!(group.records_skipped, skipped, "{reset}");
        // The member's first poll took 500 records, which it processes at 20 a second: it
        // fetches next at about 43 s, after the check at 40 s moved the log start to 3000 (the
        // segments whose newest record was sent before 30 s, as above). With `earliest` it lands
        // there, and skips exactly the offsets from its position, which it had not read, to 3000,
        // which retention deleted.
        let (at, from, to, _) = resets[0];
        assert!((40_000..45_000).contains(&at), "{reset}: {at}");
        assert!(from < 3_000, "{reset}: {from}");
        if reset == "Earliest" {
            assert_eq!(to, 3_000);
        }
        let json = serde_json::to_string(&report).expect("a report");
        assert!(json.contains(r#""records_skipped":"#), "{reset}");
        assert!(json.contains(r#""log_start_offset":"#), "{reset}");
    }
}

#[test]
fn a_log_start_past_the_high_watermark_is_caught() {
    let scenario = crate::scenario(&aging("Earliest"));
    let mut sim = Sim::new(&scenario);
    sim.run_until(10_000);
    // A broken rule's doing, made by hand: the leader's log start jumps past its high
    // watermark. (A follower's would be mended by its next fetch, which bounds its high
    // watermark below by its log start, as `UnifiedLog.updateHighWatermark` does.)
    let world = sim.world_mut();
    let partition = world.resource::<Cluster>().topics[0].partitions[0];
    let leader = world.get::<Partition>(partition).unwrap().leader.unwrap();
    let mut replicas = world.query::<&mut Replica>();
    for mut replica in replicas.iter_mut(world) {
        if replica.partition == partition && replica.broker == leader {
            replica.log_start_offset = replica.high_watermark + 5;
        }
    }
    sim.run_until(10_002);
    let violations = Report::of(&sim).invariant_violations;
    assert!(!violations.is_empty(), "{violations:?}");
    assert!(
        violations[0].contains("log start offset")
            && violations[0].contains(&format!("broker {leader}")),
        "{violations:?}"
    );
}

/// The group's failures: (instant, exception).
fn failures(report: &Report) -> Vec<(u64, String)> {
    report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ConsumerFailed { error, .. } => Some((e.at_ms, error.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn with_auto_offset_reset_none_the_consumer_stops_instead() {
    // No committed offset to start from: the first poll throws.
    let report = crate::run(&crate::scenario(&aging("None")));
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].1, "NoOffsetForPartitionException");
    assert!(resets(&report).is_empty());
    // A member that started (here by `earliest`) reads until retention passes its position;
    // then, with `none`, it throws instead of resetting, and stops.
    let mut sim = Sim::new(&crate::scenario(&aging("Earliest")));
    sim.run_until(5_000);
    let world = sim.world_mut();
    let mut groups = world.query::<&mut kafkascope_model::sim::consumer_group::ConsumerGroup>();
    for mut group in groups.iter_mut(world) {
        group.config.auto_offset_reset = kafkascope_model::scenario::OffsetReset::None;
    }
    sim.run_until(60_000);
    let report = Report::of(&sim);
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].1, "OffsetOutOfRangeException");
    assert!(resets(&report).is_empty(), "it does not reset");
    assert_eq!(report.consumer_groups[0].offset_resets, 0);
    assert!(report.invariant_violations.is_empty());
}

#[test]
fn a_topic_config_altered_live_applies_at_the_next_check() {
    // kafka-configs --alter --add-config retention.ms=2000 at 20 s: the first check, at 30 s,
    // deletes the segments whose newest record is more than 2 s old.
    let source = aging("Earliest").replace(
        "consumer_groups:",
        r#"timeline: [(at_ms: 20000, action: SetTopicConfig("t", RetentionMs(2000)))],
    consumer_groups:"#,
    );
    let mut sim = Sim::new(&crate::scenario(&source));
    sim.run_until(30_001);
    let report = Report::of(&sim);
    assert!(report.events.iter().any(|e| matches!(
        &e.kind,
        EventKind::TopicConfigChanged { topic, config } if topic == "t" && config == "retention.ms=2000"
    )));
    // Record n is sent at n * 10 ms: [2790, 2799], newest at 27.99 s, is more than 2 s old at
    // 30 s; [2800, 2809], newest at 28.09 s, is not.
    assert!(
        starts(&mut sim).iter().all(|&(_, start, _)| start == 2_800),
        "{:?}",
        starts(&mut sim)
    );
    // A value Kafka refuses is refused.
    let bad = aging("Earliest").replace(
        "consumer_groups:",
        r#"timeline: [(at_ms: 20000, action: SetTopicConfig("t", SegmentBytes(10)))],
    consumer_groups:"#,
    );
    let error = kafkascope_model::scenario::Scenario::parse(&bad, "bad.ron").unwrap_err();
    assert!(
        error.to_string().contains("minimum for a topic is 14"),
        "{error}"
    );
}

/// Each replica of `t-0`: (broker, log start offset, first offset its log still holds).
fn fronts(sim: &mut Sim) -> Vec<(u32, u64, usize)> {
    let world = sim.world_mut();
    let partition = world.resource::<Cluster>().topics[0].partitions[0];
    let mut replicas = world.query::<&Replica>();
    let mut fronts: Vec<_> = replicas
        .iter(world)
        .filter(|r| r.partition == partition)
        .map(|r| (r.broker, r.log_start_offset, r.log.front()))
        .collect();
    fronts.sort_unstable();
    fronts
}

#[test]
fn deleted_records_are_freed_and_leave_the_ledger_without_counting_as_lost() {
    let scenario = crate::scenario(&aging("Earliest"));
    let mut sim = Sim::new(&scenario);
    sim.run_until(45_001);
    for (broker, start, front) in fronts(&mut sim) {
        assert!(start >= 3_000, "broker {broker}: {start}");
        // No replica reads below its log start again: its records there are let go.
        assert_eq!(front as u64, start, "broker {broker}");
    }
    let min_start = fronts(&mut sim).iter().map(|f| f.1).min().unwrap();
    let world = sim.world();
    let ledger = world.resource::<AckLedger>();
    let first = ledger.iter().next().expect("records kept");
    // The ledger forgets, at each check, what every replica had deleted by then: followers take
    // their leader's log start from their next fetch, so the ledger trails by one check.
    let offset = first.offset().unwrap();
    assert!(
        offset > 0 && offset <= min_start && min_start - offset <= 500,
        "the ledger starts at {offset}, the logs at {min_start}"
    );
    assert_eq!(
        ledger.get(first.partition, 0).map(|r| r.id),
        None,
        "forgotten"
    );
    assert_eq!(
        ledger.len() as u64,
        Report::of(&sim).producers[0].stats.acked,
        "the ledger keeps its places"
    );
    let report = Report::of(&sim);
    assert_eq!(report.acked_records_lost, 0, "{:?}", report.lost_records);
    assert!(report.invariant_violations.is_empty());
}

/// `AbstractFetcherThread`'s out-of-range handling: a follower away for longer than the
/// retention comes back with a log that ends below its leader's log start, drops it whole, and
/// starts again at the leader's log start, then catches up and rejoins the ISR.
#[test]
fn a_follower_back_after_retention_starts_again_at_the_leaders_log_start() {
    let scenario = crate::scenario(&aging("Earliest"));
    let mut sim = Sim::new(&scenario);
    sim.run_until(1_000);
    let leader = {
        let world = sim.world_mut();
        let partition = world.resource::<Cluster>().topics[0].partitions[0];
        world.get::<Partition>(partition).unwrap().leader.unwrap()
    };
    let away = if leader == 3 { 2 } else { 3 };
    sim.act(Action::CrashBroker(away));
    sim.run_until(40_000);
    let behind = fronts(&mut sim);
    let leader_start = behind.iter().find(|f| f.0 == leader).unwrap().1;
    assert!(leader_start >= 2_500, "{behind:?}");
    sim.act(Action::RestartBroker(away));
    sim.run_until(50_000);
    let report = Report::of(&sim);
    let truncated: Vec<(u32, u64)> = report
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::TruncatedFully {
                broker,
                start_offset,
                ..
            } => Some((broker, start_offset)),
            _ => None,
        })
        .collect();
    assert_eq!(truncated.len(), 1, "{truncated:?}");
    let (broker, at) = truncated[0];
    assert_eq!(broker, away);
    assert!(
        at >= leader_start,
        "it starts at the leader's log start: {at}"
    );
    let p = &report.partitions[0];
    assert!(
        p.isr.contains(&away),
        "it caught up and rejoined the ISR: {:?}",
        p.isr
    );
    let back = p.replicas.iter().find(|r| r.broker == away).unwrap();
    assert!(back.log_start_offset >= at);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    assert_eq!(report.acked_records_lost, 0);
}

/// `__consumer_offsets` rolls at `offsets.topic.segment.bytes` (here less than its two records of
/// 64 bytes), and says so as any log does.
#[test]
fn the_offsets_topic_rolls_at_its_own_segment_size() {
    let source = aging("Earliest").replace(
        "log_retention_check_interval_ms: 5000)",
        "log_retention_check_interval_ms: 5000, offsets_topic_segment_bytes: 100)",
    );
    let report = Report::of(&{
        let mut sim = Sim::new(&crate::scenario(&source));
        sim.run_until(30_000);
        sim
    });
    let rolls = report
        .events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::SegmentRolled { topic, .. } if topic == "__consumer_offsets")
        })
        .count();
    assert!(rolls > 0, "no roll of __consumer_offsets");
    let zero = kafkascope_model::scenario::Scenario::parse(
        &aging("Earliest").replace(
            "log_retention_check_interval_ms: 5000)",
            "log_retention_check_interval_ms: 5000, offsets_topic_segment_bytes: 0)",
        ),
        "zero.ron",
    )
    .unwrap_err();
    assert!(
        zero.to_string().contains("offsets_topic_segment_bytes"),
        "{zero}"
    );
}

/// KIP-392: a follower the consumer reads from may have deleted more than its leader (each
/// replica's segments end where its own appends rolled them). Its OFFSET_OUT_OF_RANGE does not
/// reset the position: the consumer clears its preferred read replica and asks the leader next
/// (`FetchCollector.handleInitializeErrors`), and only the leader's answer resets it.
#[test]
fn out_of_range_from_a_follower_sends_the_next_fetch_to_the_leader() {
    use kafkascope_model::sim::protocol::KafkaError;
    use kafkascope_model::sim::{Node, Payload};
    let scenario = crate::scenario(
        r#"(
        name: "rack-retention", seed: 8, duration_ms: 60000,
        cluster: (brokers: 3, broker_racks: Some(["a", "b", "c"]), rack_aware_replica_selector: true,
                  log_retention_check_interval_ms: 1000),
        topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
                  assignment: Some([[1, 2, 3]]), segment_bytes: 1000, retention_ms: 5000)],
        producers: [(name: "p", topic: "t", records_per_sec: 200, linger_ms: 7, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], rack: Some("c"), records_per_sec: 40,
                           auto_offset_reset: Earliest)],
    )"#,
    );
    let mut sim = Sim::new(&scenario);
    let (mut seen, mut from_follower, mut then_leader) = (0u64, 0, 0);
    // Out of range from the follower, answered: the next fetch sent must go to the leader.
    let mut expect_leader = false;
    while sim.now_ms() < scenario.duration_ms {
        sim.step();
        let now = sim.now_ms();
        let wires = &sim
            .world()
            .resource::<kafkascope_model::sim::Runtime>()
            .wires;
        let mut new: Vec<_> = wires.iter().filter(|m| m.wire.id >= seen).collect();
        new.sort_by_key(|m| m.wire.id);
        for message in &new {
            if let Payload::ConsumerFetch(_) = message.payload
                && expect_leader
            {
                assert_eq!(message.wire.to, Node::Broker(1), "at {now} ms");
                expect_leader = false;
                then_leader += 1;
            }
        }
        seen = new.last().map_or(seen, |m| m.wire.id + 1);
        // Responses arriving now.
        for message in wires.iter() {
            if let Payload::ConsumerFetchResponse(r) = &message.payload
                && message.wire.arrive_ms == now
                && r.error == Some(KafkaError::OffsetOutOfRange)
                && message.wire.from == Node::Broker(3)
            {
                from_follower += 1;
                expect_leader = true;
            }
        }
    }
    assert!(
        from_follower > 0,
        "the follower never answered out of range"
    );
    assert!(then_leader > 0);
    let report = Report::of(&sim);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}
