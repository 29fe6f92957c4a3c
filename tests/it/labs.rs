//! The labs, driven headless: each one's table, counted from its runs, holds the numbers Kafka
//! gives for what it shows (the reference's data-loss table, KIP-392, the assignors, the
//! controlled shutdown).

use kafkascope::tour::{BUILT_IN_TOURS, LabMetric, Tour};
use kafkascope::view::lab::{Table, table};

/// A built-in lab's table.
fn lab(name: &str) -> Table {
    let (tour, _) = Tour::built_in(name).unwrap_or_else(|e| panic!("{e}"));
    let lab = tour.lab.as_ref().expect("a lab");
    let base = tour.base_scenario().expect("its scenario");
    table(lab, &base).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The "now" of a metric in run `run`.
fn now(t: &Table, metric: LabMetric, run: usize) -> u64 {
    t.get(&metric, run)
        .unwrap_or_else(|| panic!("{metric:?} in run {run}"))
        .1
}

#[test]
fn every_built_in_lab_loads_and_names_its_runs() {
    let labs: Vec<&str> = BUILT_IN_TOURS
        .iter()
        .map(|b| b.name)
        .filter(|n| n.starts_with("lab-"))
        .collect();
    assert_eq!(labs.len(), 7, "{labs:?}");
    for name in labs {
        let (tour, scenario) = Tour::built_in(name).unwrap_or_else(|e| panic!("{e}"));
        let lab = tour.lab.as_ref().expect("a lab");
        assert!(!lab.prevent.is_empty(), "{name}");
        crate::assert_short_beats(&tour);
        // The tour plays the first run: its scenario is that run's.
        let runs = tour.run_scenarios().expect("runs");
        assert_eq!(runs[0].1.to_ron(), scenario.to_ron(), "{name}");
        // Lock-step runs last as long as each other.
        assert!(
            runs.iter().all(|(_, s)| s.duration_ms >= lab.now_ms),
            "{name}"
        );
    }
}

#[test]
fn acks_all_loses_what_one_copy_held_and_min_isr_2_refuses_instead() {
    let t = lab("lab-acks-all");
    // min.insync.replicas=1: the writes acknowledged after the shrink are on the wiped leader.
    assert!(now(&t, LabMetric::AckedLost, 0) > 0);
    // min.insync.replicas=2: NOT_ENOUGH_REPLICAS, and nothing acknowledged is lost.
    assert_eq!(now(&t, LabMetric::AckedLost, 1), 0);
    assert!(
        now(
            &t,
            LabMetric::Errors("p1".into(), "NOT_ENOUGH_REPLICAS".into()),
            1
        ) > 0
    );
    assert_eq!(
        now(
            &t,
            LabMetric::Errors("p1".into(), "NOT_ENOUGH_REPLICAS".into()),
            0
        ),
        0
    );
    // The first run acknowledged what the second refused.
    assert!(now(&t, LabMetric::Acked("p1".into()), 0) > now(&t, LabMetric::Acked("p1".into()), 1));
}

#[test]
fn consumers_read_from_a_follower_only_with_the_rack_aware_selector() {
    let t = lab("lab-leader-reads");
    assert_eq!(now(&t, LabMetric::ReadFromFollowers, 0), 0);
    assert!(now(&t, LabMetric::ReadFromFollowers, 1) > 1000);
    assert_eq!(now(&t, LabMetric::AckedLost, 1), 0);
}

#[test]
fn without_unclean_election_the_partition_halts_and_with_it_records_are_lost() {
    let t = lab("lab-unclean-election");
    // Off: offline, its time counted, the records unavailable and none lost.
    assert_eq!(now(&t, LabMetric::OfflinePartitionsCount, 0), 1);
    assert!(now(&t, LabMetric::OfflineTime, 0) > 0);
    assert!(now(&t, LabMetric::AckedUnavailable, 0) > 0);
    assert_eq!(now(&t, LabMetric::AckedLost, 0), 0);
    // On: an out-of-sync replica leads, and what it lacked is lost.
    assert_eq!(now(&t, LabMetric::OfflinePartitionsCount, 1), 0);
    assert_eq!(now(&t, LabMetric::UncleanLeaderElections, 1), 1);
    assert!(now(&t, LabMetric::AckedLost, 1) > 0);
}

#[test]
fn an_eager_storm_pauses_more_partitions_than_cooperative_or_the_consumer_protocol() {
    let t = lab("lab-rebalance-storm");
    let pauses = |run| {
        let (was, now) = t.get(&LabMetric::Pauses("analytics".into()), run).unwrap();
        now - was
    };
    let (eager, cooperative, consumer) = (pauses(0), pauses(1), pauses(2));
    assert!(
        eager > cooperative && eager > consumer,
        "pauses: eager {eager}, cooperative {cooperative}, consumer protocol {consumer}"
    );
    assert!(cooperative > 0 && consumer > 0);
}

#[test]
fn adding_partitions_splits_keys_across_two_partitions() {
    let t = lab("lab-add-partitions");
    let (was, now) = t.get(&LabMetric::KeysSplit("orders".into()), 0).unwrap();
    assert_eq!(was, 0);
    // murmur2 % 4 moves about half of 50 keys.
    assert!((15..=35).contains(&now), "{now} keys split");
}

#[test]
fn a_controlled_rolling_restart_leaves_no_dead_leader_and_a_crashing_one_does() {
    let t = lab("lab-rolling-restart");
    assert_eq!(now(&t, LabMetric::DeadLeaderTime, 0), 0);
    // Each crash leaves its partitions led by a dead broker until it is fenced, up to
    // broker.session.timeout.ms after its last heartbeat.
    assert!(now(&t, LabMetric::DeadLeaderTime, 1) > 3 * 6_000);
    assert!(
        now(
            &t,
            LabMetric::Errors("checkout".into(), "NETWORK_EXCEPTION".into()),
            1
        ) > 0
    );
    for run in 0..2 {
        assert_eq!(now(&t, LabMetric::AckedLost, run), 0);
        assert_eq!(now(&t, LabMetric::OfflinePartitionsCount, run), 0);
    }
}

#[test]
fn a_group_behind_retention_resets_and_skips_what_it_never_read() {
    let t = lab("lab-retention");
    for run in 0..2 {
        let (was, _) = t
            .get(&LabMetric::OffsetResets("reports".into()), run)
            .unwrap();
        assert_eq!(was, 0, "no reset before the first retention check (30 s)");
        assert!(now(&t, LabMetric::OffsetResets("reports".into()), run) > 0);
        assert!(now(&t, LabMetric::RecordsSkipped("reports".into()), run) > 0);
        // The lag has a ceiling: each reset skips instead of catching up.
        let max_lag = now(&t, LabMetric::MaxLag("reports".into()), run);
        assert!((50..200).contains(&max_lag), "run {run}: {max_lag}");
    }
    // earliest lands at the log start and soon falls behind again: more resets, each skipping
    // only what was deleted; latest skips everything up to the end, and falls behind later.
    let resets = |run| now(&t, LabMetric::OffsetResets("reports".into()), run);
    let skipped = |run| now(&t, LabMetric::RecordsSkipped("reports".into()), run);
    assert!(resets(0) > resets(1), "{} against {}", resets(0), resets(1));
    assert!(
        skipped(0) / resets(0) < skipped(1) / resets(1),
        "a latest reset skips more"
    );
}
