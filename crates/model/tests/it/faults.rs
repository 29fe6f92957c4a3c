//! Seeded random fault schedules. With Kafka's safe settings (acks=all, min.insync.replicas 2,
//! no unclean election, no disk lost) no acknowledged record may ever be lost and no invariant may
//! break; with acks=1 or unclean election the ledger must find losses in some runs, so the check
//! can fail.

use kafkascope_model::report::Report;
use kafkascope_model::scenario::{Action, Scenario, TimelineEntry};
use kafkascope_model::sim::loss::Missing;
use kafkascope_model::sim::{EventKind, SimRng};

const BASE: &str = r#"(
    name: "faults", duration_ms: 24000,
    cluster: (brokers: 3),
    topics: [(name: "t", partitions: 2, replication_factor: 3, min_insync_replicas: 2)],
    producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Sequence("k"))],
)"#;

/// `n` distinct brokers of `1..=brokers` in a random order, for a reassignment.
fn some_brokers(rng: &mut SimRng, brokers: u32, n: u32) -> Vec<u32> {
    let mut all: Vec<u32> = (1..=brokers).collect();
    for i in (1..all.len()).rev() {
        all.swap(i, rng.below(i as u64 + 1) as usize);
    }
    all.truncate(n as usize);
    all
}

/// One of Kafka's operations, drawn from `rng`, that keeps the safe settings safe: controlled
/// shutdowns, rolling restarts, reassignments to two or three brokers, added brokers and partitions,
/// `min.insync.replicas` 2 or 3, and eligible leader replicas on or off.
fn operation(rng: &mut SimRng, brokers: u32, partitions: u64) -> Action {
    use kafkascope_model::scenario::Stop;
    match rng.below(8) {
        7 => Action::AddBroker,
        6 => Action::AddPartitions("t".into(), (partitions + 1 + rng.below(2)) as u32),
        0 => Action::ControlledShutdown(1 + rng.below(u64::from(brokers)) as u32),
        1 => Action::RollingRestart(if rng.below(2) == 0 {
            Stop::Controlled
        } else {
            Stop::Crash
        }),
        2 | 3 => {
            let n = 2 + rng.below(2) as u32;
            let partition = rng.below(partitions) as u32;
            Action::Reassign("t".into(), partition, some_brokers(rng, brokers, n))
        }
        4 => Action::SetMinIsr("t".into(), 2 + rng.below(2) as u32),
        _ => Action::SetEligibleLeaderReplicas(rng.below(2) == 0),
    }
}

/// A schedule of 2 to 7 faults, and with `operations` Kafka's operations too, in the first 15 s,
/// drawn from `seed`.
fn schedule(seed: u64, operations: bool) -> Vec<TimelineEntry> {
    let mut rng = SimRng::new(seed);
    let broker = |rng: &mut SimRng| 1 + rng.below(3) as u32;
    (0..2 + rng.below(6))
        .map(|_| {
            let at_ms = 500 + rng.below(14_500);
            let action = match rng.below(if operations { 14 } else { 10 }) {
                10..=13 => operation(&mut rng, 3, 2),
                0 | 1 => Action::CrashBroker(broker(&mut rng)),
                2 | 3 => Action::RestartBroker(broker(&mut rng)),
                4 => Action::IsolateBroker(broker(&mut rng)),
                5 => Action::HealBroker(broker(&mut rng)),
                6 => {
                    let a = broker(&mut rng);
                    Action::CutLink(a, a % 3 + 1)
                }
                7 => Action::CutControllerLink(broker(&mut rng)),
                8 => Action::SlowBroker(broker(&mut rng), rng.below(50)),
                _ => Action::PreferredElection,
            };
            TimelineEntry { at_ms, action }
        })
        .collect()
}

fn run(seed: u64, operations: bool, adjust: impl Fn(&mut Scenario)) -> Report {
    let mut scenario = crate::scenario(BASE);
    scenario.seed = seed;
    scenario.timeline = schedule(seed, operations);
    adjust(&mut scenario);
    scenario.validate("faults", scenario.duration_ms).unwrap();
    crate::run(&scenario)
}

/// Metadata travels: every other schedule runs on 5 ms links, so brokers and clients learn of
/// each leadership change later; `SlowBroker` delays a broker's metadata too, and
/// `CutControllerLink` leaves a broker on its old view until the link heals. The schedules hold
/// Kafka's operations too: controlled shutdowns, rolling restarts, reassignments.
#[test]
fn safe_settings_never_lose_an_acknowledged_record() {
    let mut elections = 0;
    for seed in 0..200 {
        let report = run(seed, true, |s| {
            if seed % 2 == 1 {
                s.cluster.network_latency_ms = 5;
            }
        });
        assert!(
            report.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            report.invariant_violations
        );
        assert_eq!(
            report.acked_records_lost,
            0,
            "seed {seed}: {:?}",
            &report.lost_records[..report.lost_records.len().min(3)]
        );
        elections += report.metrics.leader_elections;
    }
    assert!(
        elections > 100,
        "the schedules do move leaders ({elections} elections)"
    );
}

/// The same schedules on logs that retention keeps short: deleted segments, followers that
/// start again at their leader's log start, truncations below a log start. With the safe
/// settings, no acknowledged record is lost (one retention deleted expired) and no invariant
/// breaks.
#[test]
fn safe_settings_with_a_short_retention_keep_every_invariant() {
    let (mut deleted, mut started_again) = (0, 0);
    for seed in 0..100 {
        let report = run(seed, true, |s| {
            // The first checks run 30 s after each broker starts: the faults come after them.
            s.duration_ms = 75_000;
            s.timeline.iter_mut().for_each(|e| e.at_ms += 30_000);
            s.cluster.log_retention_check_interval_ms = 1_000;
            let t = &mut s.topics[0];
            (t.retention_ms, t.segment_bytes) = (2_000, 2_000);
        });
        assert!(
            report.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            report.invariant_violations
        );
        // A partition may end offline (its in-sync brokers down): its records are unavailable,
        // never lost.
        let lost: Vec<_> = report
            .lost_records
            .iter()
            .filter(|r| r.state == Missing::Lost)
            .take(3)
            .collect();
        assert!(lost.is_empty(), "seed {seed}: {lost:?}");
        deleted += report
            .partitions
            .iter()
            .filter(|p| p.log_start_offset > 0)
            .count();
        started_again += report
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::TruncatedFully { .. }))
            .count();
    }
    assert!(deleted > 100, "retention deleted in the runs ({deleted})");
    assert!(
        started_again > 0,
        "no follower fell behind its leader's log start"
    );
}

#[test]
fn unsafe_settings_lose_records_in_some_runs() {
    let mut acks_one_losses = 0;
    let mut unclean_losses = 0;
    for seed in 0..60 {
        let acks_one = run(seed, false, |s| {
            s.producers[0].acks = kafkascope_model::scenario::Acks::One
        });
        assert!(
            acks_one.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            acks_one.invariant_violations
        );
        acks_one_losses += usize::from(acks_one.acked_records_lost > 0);
        // Followers that fall behind leave the ISR sooner, so out-of-sync replicas get elected.
        let unclean = run(seed, false, |s| {
            s.topics[0].min_insync_replicas = 1;
            s.topics[0].unclean_leader_election = true;
            s.cluster.replica_lag_time_max_ms = 3_000;
        });
        assert!(
            unclean.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            unclean.invariant_violations
        );
        unclean_losses += usize::from(unclean.acked_records_lost > 0);
    }
    assert!(acks_one_losses > 0, "acks=1 loses records in some runs");
    assert!(
        unclean_losses > 0,
        "unclean election loses records in some runs"
    );
    eprintln!("runs with losses: acks=1 {acks_one_losses}/60, unclean {unclean_losses}/60");
}

#[test]
fn consumer_groups_keep_their_invariants_through_broker_and_member_faults() {
    // Brokers fail under a group whose members come and go: reads stay below the high watermark,
    // committed offsets never go back, no partition has two owners, no member fetches what it
    // was not assigned, and the safe settings still lose nothing.
    for seed in 0..60 {
        let mut scenario = crate::scenario(BASE);
        scenario.seed = seed;
        scenario.duration_ms = 30_000;
        // Eager, cooperative and consumer-protocol groups in turn, each with a 6 s session.
        let membership = match seed % 3 {
            0 => "assignor: Range, session_timeout_ms: 6000, heartbeat_interval_ms: 1000",
            1 => {
                "assignor: CooperativeSticky, session_timeout_ms: 6000, heartbeat_interval_ms: 1000"
            }
            _ => "protocol: Consumer",
        };
        scenario.cluster.group_consumer_session_timeout_ms = 6_000;
        scenario.cluster.group_consumer_heartbeat_interval_ms = 1_000;
        scenario.consumer_groups = vec![crate::scenario(&format!(
            r#"(name: "x", topics: [(name: "t")], consumer_groups: [(name: "readers", topics: ["t"], members: 2,
                {membership}, records_per_sec: 300, auto_offset_reset: Earliest)])"#
        ))
        .consumer_groups[0]
            .clone()];
        let mut timeline = schedule(seed, true);
        let mut rng = SimRng::new(seed + 1000);
        for _ in 0..3 {
            let action = match rng.below(3) {
                0 => Action::AddConsumer("readers".into()),
                1 => Action::RemoveConsumer("readers".into()),
                _ => Action::CrashConsumer("readers".into()),
            };
            timeline.push(TimelineEntry {
                at_ms: 1_000 + rng.below(20_000),
                action,
            });
        }
        scenario.timeline = timeline;
        scenario.validate("faults", scenario.duration_ms).unwrap();
        let report = crate::run(&scenario);
        assert!(
            report.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            report.invariant_violations
        );
        assert_eq!(report.acked_records_lost, 0, "seed {seed}");
    }
}

/// A schedule where a member rejoined before its last commit was answered and took its
/// partition back from the group's older committed offset: `ConsumerCoordinator.onJoinPrepare`
/// waits for that commit before the JoinGroup goes out.
const REJOIN_BEFORE_COMMIT_1: &str = r#"(
    name: "committed goes back 1", seed: 19330, duration_ms: 107000,
    cluster: (brokers: 4),
    topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
              unclean_leader_election: false)],
    producers: [(name: "p", topic: "t", acks: All, records_per_sec: 500, keys: Random(1000))],
    consumer_groups: [(name: "g", topics: ["t"], members: 4, assignor: RoundRobin, records_per_sec: 200, auto_offset_reset: Earliest)],
    timeline: [
        (at_ms: 11406, action: CrashBroker(1)),
        (at_ms: 17674, action: AddConsumer("g")),
        (at_ms: 24006, action: RestartBroker(1)),
        (at_ms: 35067, action: CutControllerLink(4)),
        (at_ms: 37482, action: HealControllerLink(4)),
        (at_ms: 45699, action: RemoveConsumer("g")),
        (at_ms: 48524, action: CrashConsumer("g")),
        (at_ms: 55521, action: CutLink(2, 3)),
        (at_ms: 61953, action: AddConsumer("g")),
        (at_ms: 62000, action: HealLink(2, 3))
    ],
)"#;

/// The same race with one member and a coordinator on a slow broker.
const REJOIN_BEFORE_COMMIT_2: &str = r#"(
    name: "committed goes back 2", seed: 518607, duration_ms: 96000,
    cluster: (brokers: 3),
    topics: [(name: "t", partitions: 4, replication_factor: 3, min_insync_replicas: 2,
              unclean_leader_election: false)],
    producers: [(name: "p", topic: "t", acks: All, records_per_sec: 500, keys: Random(1000))],
    consumer_groups: [(name: "g", topics: ["t"], members: 1, assignor: RoundRobin, records_per_sec: 200, auto_offset_reset: Earliest)],
    timeline: [
        (at_ms: 7564, action: SlowBroker(3, 2000)),
        (at_ms: 14272, action: CrashBroker(2)),
        (at_ms: 19630, action: CutLink(2, 3)),
        (at_ms: 21972, action: AddConsumer("g")),
        (at_ms: 29281, action: SlowBroker(3, 0)),
        (at_ms: 30001, action: CrashConsumer("g")),
        (at_ms: 32508, action: CutLink(2, 1)),
        (at_ms: 37745, action: HealLink(2, 3)),
        (at_ms: 39950, action: HealLink(2, 1)),
        (at_ms: 40189, action: IsolateBroker(2)),
        (at_ms: 43678, action: CrashBroker(3)),
        (at_ms: 45699, action: CutLink(3, 1)),
        (at_ms: 47770, action: RestartBroker(2)),
        (at_ms: 48285, action: HealBroker(2)),
        (at_ms: 50235, action: HealLink(3, 1)),
        (at_ms: 51000, action: RestartBroker(3))
    ],
)"#;

/// A schedule where a new coordinator served commit records its offsets partition had not
/// committed (above the high watermark), then a later one, whose log lacked them, served older
/// offsets: the coordinator serves its state as of the high watermark
/// (`OffsetMetadataManager.fetchOffsets` at the last committed offset). A load may still serve
/// older offsets than the last coordinator did, when the new leader's high watermark trails, so
/// the invariant allows a move back at a load: this schedule's regression test is
/// `the_coordinator_serves_committed_offsets_as_of_the_high_watermark`.
const LOADED_ABOVE_THE_HIGH_WATERMARK: &str = r#"(
    name: "committed goes back 3", seed: 226111, duration_ms: 142000,
    cluster: (brokers: 3),
    topics: [(name: "t", partitions: 3, replication_factor: 3, min_insync_replicas: 2,
              unclean_leader_election: false)],
    producers: [(name: "p", topic: "t", acks: All, records_per_sec: 500, keys: Random(1000))],
    consumer_groups: [(name: "g", topics: ["t"], members: 2, assignor: RoundRobin, records_per_sec: 200, auto_offset_reset: Earliest)],
    timeline: [
        (at_ms: 8525, action: CutLink(2, 3)),
        (at_ms: 10970, action: CutLink(2, 1)),
        (at_ms: 21482, action: HealLink(2, 3)),
        (at_ms: 21790, action: CutControllerLink(1)),
        (at_ms: 31980, action: HealControllerLink(1)),
        (at_ms: 32896, action: IsolateBroker(3)),
        (at_ms: 39288, action: CrashBroker(3)),
        (at_ms: 45608, action: CrashBroker(1)),
        (at_ms: 48598, action: CutControllerLink(2)),
        (at_ms: 49478, action: HealLink(2, 1)),
        (at_ms: 52338, action: HealBroker(3)),
        (at_ms: 53081, action: HealControllerLink(2)),
        (at_ms: 58898, action: IsolateBroker(2)),
        (at_ms: 61992, action: HealBroker(2)),
        (at_ms: 65666, action: CutLink(2, 1)),
        (at_ms: 67893, action: CutLink(2, 3)),
        (at_ms: 69904, action: HealLink(2, 3)),
        (at_ms: 70786, action: HealLink(2, 1)),
        (at_ms: 70831, action: RestartBroker(1)),
        (at_ms: 74846, action: CutLink(1, 3)),
        (at_ms: 86795, action: RemoveConsumer("g")),
        (at_ms: 97000, action: HealLink(1, 3)),
        (at_ms: 97000, action: RestartBroker(3))
    ],
)"#;

#[test]
fn committed_offsets_do_not_go_back_in_the_schedules_that_broke_them() {
    for source in [
        REJOIN_BEFORE_COMMIT_1,
        REJOIN_BEFORE_COMMIT_2,
        LOADED_ABOVE_THE_HIGH_WATERMARK,
    ] {
        let scenario = crate::scenario(source);
        let report = crate::run(&scenario);
        assert!(
            report.invariant_violations.is_empty(),
            "{}: {:?}",
            scenario.name,
            report.invariant_violations
        );
        assert_eq!(report.acked_records_lost, 0, "{}", scenario.name);
        let g = &report.consumer_groups[0];
        assert!(
            g.offsets.iter().all(|o| o.committed.is_some()),
            "{}: the group commits: {:?}",
            scenario.name,
            g.offsets
        );
    }
}

/// A random safe schedule with a consumer group, drawn from `seed`: 3 or 4 brokers, 1 to 4
/// partitions at replication factor 3 and `min.insync.replicas` 2, acks=all, a group of 1 to 4
/// members (eager, cooperative or consumer protocol, 6 s sessions), and 4 to 14 broker, link,
/// controller and member faults and operations over a minute, on 1 ms or 5 ms links.
fn safe_schedule_with_a_group(seed: u64) -> Scenario {
    let mut rng = SimRng::new(seed);
    let brokers = 3 + rng.below(2) as u32;
    let partitions = 1 + rng.below(4);
    let members = 1 + rng.below(4);
    let membership = match rng.below(3) {
        0 => "assignor: Range, session_timeout_ms: 6000, heartbeat_interval_ms: 1000",
        1 => "assignor: CooperativeSticky, session_timeout_ms: 6000, heartbeat_interval_ms: 1000",
        _ => "protocol: Consumer",
    };
    let latency = if rng.below(2) == 0 { 1 } else { 5 };
    let mut scenario = crate::scenario(&format!(
        r#"(
        name: "sweep", seed: {seed}, duration_ms: 70000,
        cluster: (brokers: {brokers}, network_latency_ms: {latency},
                  group_consumer_session_timeout_ms: 6000, group_consumer_heartbeat_interval_ms: 1000),
        topics: [(name: "t", partitions: {partitions}, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 300, keys: Random(1000))],
        consumer_groups: [(name: "g", topics: ["t"], members: {members}, {membership},
                           records_per_sec: 150, auto_offset_reset: Earliest)],
    )"#
    ));
    let broker = |rng: &mut SimRng| 1 + rng.below(u64::from(brokers)) as u32;
    for _ in 0..4 + rng.below(11) {
        let at_ms = 500 + rng.below(55_000);
        let action = match rng.below(19) {
            18 => Action::DropResponses("p".into(), broker(&mut rng), at_ms + rng.below(3_000) + 1),
            14..=16 => operation(&mut rng, brokers, partitions),
            17 => Action::SetGroupMembers("g".into(), rng.below(5) as u32),
            0 | 1 => Action::CrashBroker(broker(&mut rng)),
            2 | 3 => Action::RestartBroker(broker(&mut rng)),
            4 => Action::IsolateBroker(broker(&mut rng)),
            5 => Action::HealBroker(broker(&mut rng)),
            6 => {
                let a = broker(&mut rng);
                Action::CutLink(a, a % brokers + 1)
            }
            7 => {
                let a = broker(&mut rng);
                Action::HealLink(a, a % brokers + 1)
            }
            8 => Action::CutControllerLink(broker(&mut rng)),
            9 => Action::HealControllerLink(broker(&mut rng)),
            10 => Action::SlowBroker(broker(&mut rng), rng.below(100)),
            11 => Action::AddConsumer("g".into()),
            12 => Action::RemoveConsumer("g".into()),
            _ => Action::CrashConsumer("g".into()),
        };
        scenario.timeline.push(TimelineEntry { at_ms, action });
    }
    scenario.timeline.sort_by_key(|e| e.at_ms);
    scenario.validate("sweep", scenario.duration_ms).unwrap();
    scenario
}

/// The first 30 of the sweep below run with the tests.
#[test]
fn safe_schedules_with_groups_keep_every_invariant() {
    for seed in 0..30 {
        let report = crate::run(&safe_schedule_with_a_group(seed));
        assert!(
            report.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            report.invariant_violations
        );
        assert_eq!(report.acked_records_lost, 0, "seed {seed}");
    }
}

/// Runs `check` on the first `KAFKASCOPE_SWEEP` seeds (1000 unless set) and fails with those
/// that failed, after saying how many did.
fn sweep(what: &str, check: impl Fn(u64) -> Result<(), String>) {
    let n: u64 = std::env::var("KAFKASCOPE_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let failures: Vec<(u64, String)> = (0..n)
        .filter_map(|seed| check(seed).err().map(|e| (seed, e)))
        .collect();
    eprintln!("{n} {what}: {} failed", failures.len());
    assert!(failures.is_empty(), "{failures:?}");
}

/// The sweeps the README's reliability figures come from, run by hand:
/// `KAFKASCOPE_SWEEP=1000 cargo test --release -p kafkascope-model -- --ignored sweep`.
#[test]
#[ignore = "minutes long: run by hand"]
fn sweep_of_safe_schedules_with_groups() {
    sweep("safe schedules with a group", |seed| {
        let report = crate::run(&safe_schedule_with_a_group(seed));
        match (
            report.invariant_violations.is_empty(),
            report.acked_records_lost,
        ) {
            (true, 0) => Ok(()),
            _ => Err(format!(
                "{:?}, {} lost",
                report.invariant_violations, report.acked_records_lost
            )),
        }
    });
}

/// `OffsetMetadataManager.fetchOffsets` at the last committed offset: what the coordinator serves
/// as committed (to the lag monitor and the report) is exactly its commit records below the
/// offsets partition's high watermark, checked every 100 ms through the schedule where a
/// coordinator once served records above it.
#[test]
fn the_coordinator_serves_committed_offsets_as_of_the_high_watermark() {
    use kafkascope_model::sim::consumer_group::ConsumerGroup;
    use kafkascope_model::sim::{Cluster, Partition, Replica, Sim};
    use std::collections::BTreeMap;
    let scenario = crate::scenario(LOADED_ABOVE_THE_HIGH_WATERMARK);
    let mut sim = Sim::new(&scenario);
    let mut checked = 0;
    for t in (100..=scenario.duration_ms).step_by(100) {
        sim.run_until(t);
        let world = sim.world();
        let cluster = world.resource::<Cluster>();
        let group = world
            .get::<ConsumerGroup>(cluster.groups[0])
            .expect("group");
        let offsets = world
            .get::<Partition>(group.offsets_partition)
            .expect("offsets partition");
        let Some(leader) = offsets
            .leader_replica()
            .filter(|_| offsets.leader_epoch == group.loaded_epoch)
        else {
            continue;
        };
        let leader = world.get::<Replica>(leader).expect("replica");
        let mut expected = BTreeMap::new();
        for record in leader.log.iter().take(leader.high_watermark as usize) {
            if let Some((partition, offset)) = record
                .written()
                .filter(|c| c.group == group.index)
                .and_then(|c| c.offset)
            {
                expected.insert(partition, offset);
            }
        }
        assert_eq!(group.committed(), &expected, "{t} ms");
        checked += 1;
    }
    assert!(checked > 1000, "{checked}");
}

/// A cooperative-sticky or consumer-protocol group (by `seed`'s parity) of 1 to 4 members on 1
/// to 8 partitions, with 1 to 6 joins and clean leaves in its first 40 s and no broker fault.
/// Returns the scenario, how many membership changes it has (the first members' joins
/// included), and when the last one is given.
fn membership_changes(seed: u64) -> (Scenario, u64, u64) {
    let mut rng = SimRng::new(seed);
    let partitions = 1 + rng.below(8);
    let mut members = 1 + rng.below(4);
    let membership = if seed.is_multiple_of(2) {
        "assignor: CooperativeSticky"
    } else {
        "protocol: Consumer"
    };
    let mut scenario = crate::scenario(&format!(
        r#"(
        name: "membership", seed: {seed}, duration_ms: 70000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: {partitions}, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 300, keys: Random(1000))],
        consumer_groups: [(name: "g", topics: ["t"], members: {members}, {membership},
                           records_per_sec: 150, auto_offset_reset: Earliest)],
    )"#
    ));
    let mut changes = members;
    let mut at_ms = 5_000;
    for _ in 0..1 + rng.below(6) {
        at_ms += 200 + rng.below(6_000);
        let action = if members < 2 || rng.below(2) == 0 {
            members += 1;
            Action::AddConsumer("g".into())
        } else {
            members -= 1;
            Action::RemoveConsumer("g".into())
        };
        changes += 1;
        scenario.timeline.push(TimelineEntry { at_ms, action });
    }
    scenario
        .validate("membership", scenario.duration_ms)
        .unwrap();
    (scenario, changes, at_ms)
}

/// What [`membership_changes`]' run must show: a cooperative group settles within two
/// rebalances of its last change; a consumer-protocol group bumps its epoch once per change
/// (`consumerGroupHeartbeat` for a join, `consumerGroupLeave` for a leave) and every member
/// reaches the target epoch. Either way each partition ends with one owner.
fn membership_settles(seed: u64) -> Result<(), String> {
    let (scenario, changes, last) = membership_changes(seed);
    let report = crate::run(&scenario);
    if !report.invariant_violations.is_empty() {
        return Err(format!("{:?}", report.invariant_violations));
    }
    let group = &report.consumer_groups[0];
    let owned: Vec<String> = group
        .assignment
        .as_object()
        .expect("an assignment")
        .values()
        .flat_map(|a| a.as_array().expect("partitions").iter())
        .map(|p| p.to_string())
        .collect();
    let partitions = scenario.topics[0].partitions as usize;
    let mut distinct = owned.clone();
    distinct.sort();
    distinct.dedup();
    if owned.len() != partitions || distinct.len() != partitions {
        return Err(format!(
            "partitions not owned once each: {}",
            group.assignment
        ));
    }
    if group.protocol == "classic" {
        let after = report
            .events
            .iter()
            .filter(|e| e.at_ms >= last)
            .filter(|e| {
                matches!(
                    e.kind,
                    kafkascope_model::sim::EventKind::RebalanceStarted { .. }
                )
            })
            .count();
        if after > 2 {
            return Err(format!(
                "{after} rebalances after the last change at {last} ms"
            ));
        }
    } else {
        let bumps = report
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    kafkascope_model::sim::EventKind::GroupEpochBumped { .. }
                )
            })
            .count() as u64;
        if bumps != changes {
            return Err(format!("{bumps} epoch bumps for {changes} changes"));
        }
        let epochs = group.epochs.as_ref().expect("epochs");
        if epochs.target_assignment_epoch != epochs.group_epoch
            || epochs.members.values().any(|e| *e != epochs.group_epoch)
        {
            return Err(format!("not every member at the target epoch: {epochs:?}"));
        }
    }
    Ok(())
}

#[test]
fn groups_settle_after_joins_and_leaves() {
    for seed in 0..40 {
        if let Err(e) = membership_settles(seed) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
#[ignore = "minutes long: run by hand"]
fn sweep_of_membership_changes() {
    sweep("schedules of joins and leaves", membership_settles);
}

/// A schedule with any settings, drawn from `seed`: acks 0, 1 or all, `min.insync.replicas` 1
/// or 2, unclean election on or off, 3 brokers, 1 to 3 partitions, sometimes a group; faults over
/// a minute that include zombie leaders returning (a controller link cut, then healed), slow
/// brokers just before preferred elections, and automatic rebalances every 10 s. Returns the
/// scenario and how many of its actions can break a producer's connection.
fn any_settings_schedule(seed: u64) -> (Scenario, u64) {
    let mut rng = SimRng::new(seed);
    let acks = ["Zero", "One", "All"][rng.below(3) as usize];
    let partitions = 1 + rng.below(3);
    let min_isr = 1 + rng.below(2);
    let unclean = rng.below(2) == 0;
    let latency = if rng.below(2) == 0 { 1 } else { 5 };
    let group = if rng.below(2) == 0 {
        r#"consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: 150,
                             auto_offset_reset: Earliest)],"#
    } else {
        ""
    };
    let mut scenario = crate::scenario(&format!(
        r#"(
        name: "any", seed: {seed}, duration_ms: 70000,
        cluster: (brokers: 3, network_latency_ms: {latency},
                  leader_imbalance_check_interval_ms: 10000),
        topics: [(name: "t", partitions: {partitions}, replication_factor: 3,
                  min_insync_replicas: {min_isr}, unclean_leader_election: {unclean})],
        producers: [(name: "p", topic: "t", acks: {acks}, records_per_sec: 300,
                     keys: Random(1000))],
        {group}
    )"#
    ));
    let broker = |rng: &mut SimRng| 1 + rng.below(3) as u32;
    let mut breaking = 0;
    let mut push = |at_ms: u64, action: Action| {
        scenario.timeline.push(TimelineEntry { at_ms, action });
    };
    for _ in 0..3 + rng.below(8) {
        let at_ms = 500 + rng.below(55_000);
        match rng.below(9) {
            0 => {
                breaking += 1;
                push(at_ms, Action::CrashBroker(broker(&mut rng)));
            }
            // Answers lost: every retry after them is a batch the leader may hold already.
            8 => {
                let until_ms = at_ms + 1 + rng.below(2_000);
                push(
                    at_ms,
                    Action::DropResponses("p".into(), broker(&mut rng), until_ms),
                );
            }
            1 => {
                breaking += 1;
                push(at_ms, Action::RestartBroker(broker(&mut rng)));
            }
            2 => {
                breaking += 1;
                push(at_ms, Action::IsolateBroker(broker(&mut rng)));
                push(
                    at_ms + rng.below(15_000),
                    Action::HealBroker(broker(&mut rng)),
                );
            }
            // A zombie leader, and its return.
            3 | 4 => {
                let b = broker(&mut rng);
                push(at_ms, Action::CutControllerLink(b));
                push(at_ms + 1 + rng.below(20_000), Action::HealControllerLink(b));
            }
            // A slow broker just before a preferred election.
            5 => {
                let b = broker(&mut rng);
                push(at_ms, Action::SlowBroker(b, rng.below(200)));
                push(at_ms + rng.below(50), Action::PreferredElection);
            }
            6 => {
                let a = broker(&mut rng);
                push(at_ms, Action::CutLink(a, a % 3 + 1));
            }
            _ => {
                breaking += 1;
                push(at_ms, Action::ControlledShutdown(broker(&mut rng)));
            }
        }
    }
    scenario.timeline.retain(|e| e.at_ms < 69_000);
    scenario.timeline.sort_by_key(|e| e.at_ms);
    scenario.validate("any", scenario.duration_ms).unwrap();
    (scenario, breaking)
}

/// What [`any_settings_schedule`]'s run must show: no invariant broken, and the producer's
/// NETWORK_EXCEPTION errors bounded by the connections broken: each break fails at most the
/// requests in flight then (`max.in.flight.requests.per.connection`, 5, each with a batch per
/// partition), and nothing fails again while the broker refuses connections.
fn any_settings_hold(seed: u64) -> Result<(), String> {
    let (scenario, breaking) = any_settings_schedule(seed);
    let report = crate::run(&scenario);
    if !report.invariant_violations.is_empty() {
        return Err(format!("{:?}", report.invariant_violations));
    }
    let partitions = scenario.topics[0].partitions as u64;
    let bound = (breaking + 1) * 5 * partitions;
    let errors = &report.producers[0].stats.errors;
    let failed = errors.get("NETWORK_EXCEPTION").copied().unwrap_or(0);
    if failed > bound {
        return Err(format!(
            "{failed} NETWORK_EXCEPTION for {breaking} broken connections (at most {bound})"
        ));
    }
    Ok(())
}

#[test]
fn schedules_with_any_settings_keep_every_invariant() {
    for seed in 0..40 {
        if let Err(e) = any_settings_hold(seed) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
#[ignore = "minutes long: run by hand"]
fn sweep_of_schedules_with_any_settings() {
    sweep("schedules with any settings", any_settings_hold);
}
