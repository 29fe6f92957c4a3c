//! Seeded random fault schedules. With Kafka's safe settings (acks=all, min.insync.replicas 2,
//! no unclean election, no disk lost) no acknowledged record may ever be lost and no invariant may
//! break; with acks=1 or unclean election the ledger must find losses in some runs, so the check
//! can fail.

use kafkascope_model::report::Report;
use kafkascope_model::scenario::{Action, Scenario, TimelineEntry};
use kafkascope_model::sim::SimRng;

const BASE: &str = r#"(
    name: "faults", duration_ms: 24000,
    cluster: (brokers: 3),
    topics: [(name: "t", partitions: 2, replication_factor: 3, min_insync_replicas: 2)],
    producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Sequence("k"))],
)"#;

/// A schedule of 2 to 7 faults in the first 15 s, drawn from `seed`.
fn schedule(seed: u64) -> Vec<TimelineEntry> {
    let mut rng = SimRng::new(seed);
    let broker = |rng: &mut SimRng| 1 + rng.below(3) as u32;
    (0..2 + rng.below(6))
        .map(|_| {
            let at_ms = 500 + rng.below(14_500);
            let action = match rng.below(10) {
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

fn run(seed: u64, adjust: impl Fn(&mut Scenario)) -> Report {
    let mut scenario = crate::scenario(BASE);
    scenario.seed = seed;
    scenario.timeline = schedule(seed);
    adjust(&mut scenario);
    scenario.validate("faults", scenario.duration_ms).unwrap();
    crate::run(&scenario)
}

/// Metadata travels: every other schedule runs on 5 ms links, so brokers and clients learn of
/// each leadership change later; `SlowBroker` delays a broker's metadata too, and
/// `CutControllerLink` leaves a broker on its old view until the link heals.
#[test]
fn safe_settings_never_lose_an_acknowledged_record() {
    let mut elections = 0;
    for seed in 0..200 {
        let report = run(seed, |s| {
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

#[test]
fn unsafe_settings_lose_records_in_some_runs() {
    let mut acks_one_losses = 0;
    let mut unclean_losses = 0;
    for seed in 0..60 {
        let acks_one = run(seed, |s| {
            s.producers[0].acks = kafkascope_model::scenario::Acks::One
        });
        assert!(
            acks_one.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            acks_one.invariant_violations
        );
        acks_one_losses += usize::from(acks_one.acked_records_lost > 0);
        // Followers that fall behind leave the ISR sooner, so out-of-sync replicas get elected.
        let unclean = run(seed, |s| {
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
        let mut timeline = schedule(seed);
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
