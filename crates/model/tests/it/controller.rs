//! The controller, failures and elections: the data-loss cases of the reference (section 6),
//! election timing, preferred leaders and eligible leader replicas.

use kafkascope_model::report::Report;
use kafkascope_model::scenario::{Action, Scenario, TimelineEntry};
use kafkascope_model::sim::loss::Missing;
use kafkascope_model::sim::{EventKind, Sim};

fn elections(report: &Report) -> Vec<(u64, u32, u32, bool)> {
    report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LeaderElected {
                leader,
                leader_epoch,
                unclean,
                ..
            } => Some((e.at_ms, *leader, *leader_epoch, *unclean)),
            _ => None,
        })
        .collect()
}

fn truncations_of(report: &Report, broker: u32) -> Vec<(u64, u64)> {
    report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Truncated {
                broker: b,
                from_offset,
                to_offset,
                ..
            } if *b == broker => Some((*from_offset, *to_offset)),
            _ => None,
        })
        .collect()
}

fn shrink_time(report: &Report) -> u64 {
    report
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::IsrShrink { .. }))
        .expect("the ISR shrinks")
        .at_ms
}

#[test]
fn case_1_isr_shrinks_to_the_leader_then_it_dies_offline_nothing_lost() {
    let report = crate::run(&crate::built_in("isr-then-leader-dies"));
    let p = &report.partitions[0];
    assert_eq!(p.leader, None, "offline");
    assert_eq!(p.isr, vec![1], "the ISR keeps its last member");
    assert!(elections(&report).is_empty());
    assert!(
        report
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PartitionOffline { .. }))
    );
    assert_eq!(
        report.acked_records_lost,
        0,
        "1's disk survives: {:?}",
        &report.lost_records[..3.min(report.lost_records.len())]
    );
    assert!(
        report.producers[0].stats.acked > 2000,
        "acks continued on 1 alone"
    );
    assert_eq!(report.brokers[0].state, "crashed");
    assert!(report.metrics.offline_partition_ms > 20_000);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn case_1_with_the_leaders_disk_lost_every_write_acked_after_the_shrink_is_lost() {
    let scenario = crate::built_in("isr-then-leader-wiped");
    let mut sim = Sim::new(&scenario);
    sim.run_until(45_001);
    let at_shrink = Report::of(&sim);
    assert_eq!(at_shrink.partitions[0].isr, vec![1]);
    let committed_on_followers = at_shrink.partitions[0].replicas[1].log_end_offset;
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    assert_eq!(report.partitions[0].leader, None);
    let lost_after_shrink = report
        .lost_records
        .iter()
        .filter(|r| r.offset.is_some_and(|o| o >= committed_on_followers))
        .count() as u64;
    let acked_after_shrink = report.producers[0].stats.acked - committed_on_followers;
    assert!(acked_after_shrink > 500);
    assert_eq!(
        lost_after_shrink, acked_after_shrink,
        "every write acked after the shrink"
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn case_2_unclean_election_loses_acknowledged_writes_and_the_old_leader_truncates() {
    let report = crate::run(&crate::built_in("unclean-election"));
    let crash = 60_000;
    let e = elections(&report);
    assert_eq!(e.len(), 1, "{e:?}");
    let (at, leader, epoch, unclean) = e[0];
    assert_eq!((leader, epoch, unclean), (2, 1, true));
    assert!(
        at >= crash + 7_000 && at <= crash + 9_001,
        "after fencing: {at}"
    );
    assert_eq!(report.metrics.unclean_leader_elections, 1);
    assert!(
        report.acked_records_lost > 1000,
        "lost {}",
        report.acked_records_lost
    );
    assert!(
        report
            .lost_records
            .iter()
            .all(|r| r.why.contains("elected uncleanly"))
    );
    let truncated = truncations_of(&report, 1);
    assert_eq!(
        truncated.len(),
        1,
        "1 truncates when it returns: {truncated:?}"
    );
    assert!(truncated[0].0 > truncated[0].1);
    assert_eq!(report.partitions[0].leader, Some(2));
    assert!(
        report.producers[0].stats.acked > 4000,
        "the producer recovers (epoch bump)"
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn case_3_min_insync_replicas_2_refuses_writes_and_loses_nothing() {
    let report = crate::run(&crate::built_in("min-isr-protects"));
    let p = &report.producers[0];
    assert!(
        p.stats
            .errors
            .get("NOT_ENOUGH_REPLICAS")
            .copied()
            .unwrap_or(0)
            > 0
    );
    assert_eq!(report.partitions[0].leader, None, "offline after 1 crashes");
    assert_eq!(report.acked_records_lost, 0);
    assert!(shrink_time(&report) < 90_000);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn case_4_acks_one_leader_crash_loses_acknowledged_records() {
    let report = crate::run(&crate::built_in("acks-one-crash"));
    let e = elections(&report);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        (e[0].1, e[0].2, e[0].3),
        (2, 1, false),
        "2 is elected cleanly after fencing"
    );
    assert!(report.acked_records_lost > 0);
    assert!(
        report
            .lost_records
            .iter()
            .all(|r| r.why.contains("leader 2"))
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn case_5_clean_failover_loses_nothing_and_the_old_leader_truncates() {
    let report = crate::run(&crate::built_in("clean-failover"));
    let e = elections(&report);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        (e[0].1, e[0].2, e[0].3),
        (2, 1, false),
        "2, first in ISR order"
    );
    assert_eq!(report.acked_records_lost, 0);
    let truncated = truncations_of(&report, 1);
    assert_eq!(truncated.len(), 1, "{truncated:?}");
    assert!(truncated[0].0 > truncated[0].1, "uncommitted records go");
    assert_eq!(report.partitions[0].isr, vec![1, 2, 3], "1 rejoins");
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn the_election_follows_the_session_timeout_not_the_crash() {
    let base = crate::built_in("clean-failover");
    let (session, interval) = (
        base.cluster.session_timeout_ms,
        base.cluster.heartbeat_interval_ms,
    );
    // Crashes at every phase of the heartbeat cycle.
    for crash in [10_000, 10_001, 10_500, 10_999, 11_000, 11_999, 12_345] {
        let mut scenario = base.clone();
        scenario.timeline.retain(|t| {
            !matches!(
                t.action,
                kafkascope_model::scenario::Action::CrashBroker(_)
                    | kafkascope_model::scenario::Action::RestartBroker(_)
            )
        });
        scenario
            .timeline
            .push(kafkascope_model::scenario::TimelineEntry {
                at_ms: crash,
                action: kafkascope_model::scenario::Action::CrashBroker(1),
            });
        scenario.duration_ms = crash + session + 2_000;
        let report = crate::run(&scenario);
        let e = elections(&report);
        assert_eq!(e.len(), 1, "crash at {crash}: {e:?}");
        let at = e[0].0;
        assert!(
            at >= crash + session - interval && at <= crash + session + 1,
            "crash at {crash}, elected at {at}"
        );
        let fenced = report
            .events
            .iter()
            .find(|e| matches!(e.kind, EventKind::BrokerFenced { broker: 1 }))
            .unwrap();
        assert_eq!(fenced.at_ms, at, "the election comes with the fencing");
    }
}

#[test]
fn preferred_election_gives_leadership_back_to_the_first_replica() {
    let mut scenario = crate::built_in("clean-failover");
    scenario
        .timeline
        .push(kafkascope_model::scenario::TimelineEntry {
            at_ms: 38_000,
            action: kafkascope_model::scenario::Action::PreferredElection,
        });
    let report = crate::run(&scenario);
    let e = elections(&report);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!((e[1].0, e[1].1, e[1].2), (38_000, 1, 2));

    // Without the action, the automatic rebalance does the same, an interval after the failover
    // left the partition away from its first replica (1 is back in the ISR by then).
    let mut scenario = crate::built_in("clean-failover");
    scenario.cluster.leader_imbalance_check_interval_ms = 15_000;
    let report = crate::run(&scenario);
    let e = elections(&report);
    assert_eq!((e[1].0, e[1].1), (e[0].0 + 15_000, 1), "{e:?}");
    scenario.cluster.auto_leader_rebalance_enable = false;
    let report = crate::run(&scenario);
    assert_eq!(elections(&report).len(), 1, "no rebalance when it is off");
    assert_eq!(report.partitions[0].leader, Some(2));
}

/// ISR {1, 2, 3} shrinks to {1, 2} and then {1} (below min.insync.replicas 2); then leader 1 is
/// cut off from everything and fenced.
fn elr_scenario(elr: bool) -> kafkascope_model::scenario::Scenario {
    crate::scenario(&format!(
        r#"(
        name: "elr", seed: 5, duration_ms: 60000,
        cluster: (brokers: 3, replica_lag_time_max_ms: 10000, eligible_leader_replicas: {elr}),
        topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
                  assignment: Some([[1, 2, 3]]))],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 50, keys: Sequence("k"))],
        timeline: [
            (at_ms: 2000, action: CutLink(1, 3)),
            (at_ms: 20000, action: CutLink(1, 2)),
            (at_ms: 40000, action: IsolateBroker(1)),
        ],
    )"#
    ))
}

#[test]
fn eligible_leader_replicas_keep_a_replica_that_left_below_min_isr_electable() {
    let without = crate::run(&elr_scenario(false));
    assert_eq!(
        without.partitions[0].leader, None,
        "without ELR the partition is offline"
    );
    assert_eq!(without.partitions[0].isr, vec![1]);

    let with = crate::run(&elr_scenario(true));
    let e = elections(&with);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        (e[0].1, e[0].3),
        (2, false),
        "2 left the ISR below min ISR: elected cleanly"
    );
    assert_eq!(with.partitions[0].leader, Some(2));
    assert_eq!(with.acked_records_lost, 0);
    assert!(
        with.invariant_violations.is_empty(),
        "{:?}",
        with.invariant_violations
    );
    // 3 left while the ISR was still at min ISR: not eligible.
    assert!(!with.partitions[0].elr.contains(&3));
}

#[test]
fn an_isolated_leader_is_replaced_and_catches_up_when_it_comes_back() {
    // Its fetch sent while isolated is lost; the fetcher gives up after request.timeout.ms and
    // then catches up from the new leader.
    let scenario = crate::scenario(
        r#"(
        name: "isolated", seed: 9, duration_ms: 70000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
                  assignment: Some([[1, 2, 3]]))],
        producers: [(name: "p", topic: "t", acks: One, records_per_sec: 200, keys: Sequence("k"))],
        timeline: [
            (at_ms: 5000, action: IsolateBroker(1)),
            (at_ms: 25000, action: HealBroker(1)),
        ],
    )"#,
    );
    let report = crate::run(&scenario);
    let e = elections(&report);
    assert_eq!(e[0].1, 2);
    assert!(e[0].0 >= 5_000 + 7_000 && e[0].0 <= 5_000 + 9_001, "{e:?}");
    assert!(
        report
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::BrokerUnfenced { broker: 1 }))
    );
    assert_eq!(report.brokers[0].state, "online");
    assert_eq!(report.partitions[0].isr, vec![1, 2, 3]);
    let leo = report.partitions[0].log_end_offset;
    assert!(
        report.partitions[0]
            .replicas
            .iter()
            .all(|r| r.log_end_offset == leo),
        "all caught up"
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn a_wiped_broker_restarts_empty_and_catches_up() {
    let scenario = crate::scenario(
        r#"(
        name: "wipe", seed: 4, duration_ms: 40000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 2, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Sequence("k"))],
        timeline: [
            (at_ms: 5000, action: WipeBroker(3)),
            (at_ms: 20000, action: RestartBroker(3)),
        ],
    )"#,
    );
    let mut sim = Sim::new(&scenario);
    sim.run_until(6_000);
    let wiped = Report::of(&sim);
    assert!(wiped.partitions.iter().all(|p| {
        p.replicas
            .iter()
            .find(|r| r.broker == 3)
            .unwrap()
            .log_end_offset
            == 0
    }));
    assert_eq!(wiped.brokers[2].state, "crashed");
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    for p in &report.partitions {
        assert_eq!(p.isr.len(), 3, "3 rejoined {}", p.partition);
        assert!(
            p.replicas
                .iter()
                .all(|r| r.log_end_offset == p.log_end_offset)
        );
    }
    assert_eq!(report.acked_records_lost, 0);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

/// The record ids of each broker's replica of the only partition, by broker.
fn logs(sim: &mut Sim) -> Vec<(u32, Vec<u64>)> {
    let world = sim.world_mut();
    let mut replicas = world.query::<&kafkascope_model::sim::Replica>();
    let mut logs: Vec<(u32, Vec<u64>)> = replicas
        .iter(world)
        .map(|r| (r.broker, r.log.iter().map(|record| record.id()).collect()))
        .collect();
    logs.sort();
    logs
}

#[test]
fn a_leader_epoch_with_no_records_is_forgotten_and_its_leader_follows_again() {
    // 2 leads epoch 1 while 1 is down and writes nothing; the preferred election gives 1 epoch 2.
    // 2's history ends with an epoch 1 has never seen: 1 answers its fetch as diverging at 2's
    // own log end, and `UnifiedLog.truncateTo` cuts the empty epoch from 2's history although no
    // record goes, so 2's next fetch is answered with records.
    let scenario = crate::scenario(
        r#"(
        name: "empty epoch", seed: 1, duration_ms: 60000,
        cluster: (brokers: 3, auto_leader_rebalance_enable: false),
        topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
                  assignment: Some([[1, 2, 3]]))],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 0, keys: Sequence("k"))],
        timeline: [
            (at_ms: 500, action: Produce("p", Some("a"), 50)),
            (at_ms: 2000, action: CrashBroker(1)),
            (at_ms: 20000, action: RestartBroker(1)),
            (at_ms: 30000, action: PreferredElection),
            (at_ms: 31000, action: Produce("p", Some("a"), 50)),
        ],
    )"#,
    );
    let mut sim = Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    let epochs: Vec<(u32, u32)> = elections(&report)
        .iter()
        .map(|&(_, leader, epoch, _)| (leader, epoch))
        .collect();
    assert_eq!(epochs, [(2, 1), (1, 2)]);
    let p = &report.partitions[0];
    assert_eq!(p.isr, [1, 2, 3], "2 never leaves the ISR");
    assert_eq!(
        report.metrics.isr_shrinks, 0,
        "the leader never shrinks 2 out"
    );
    let follower = p.replicas.iter().find(|r| r.broker == 2).unwrap();
    assert_eq!(
        (follower.log_end_offset, follower.high_watermark),
        (100, 100)
    );
    assert!(
        report.producers[0].stats.errors.is_empty(),
        "the burst after the election is acknowledged at once"
    );
    assert_eq!(report.metrics.records_truncated, 0);
    // One fetch a round trip forever was the symptom: 30 s of that is tens of thousands.
    assert!(
        report.metrics.fetch_requests < 1000,
        "{}",
        report.metrics.fetch_requests
    );
    let logs = logs(&mut sim);
    assert!(logs.iter().all(|(_, log)| *log == logs[0].1), "{logs:?}");
}

#[test]
fn followers_of_a_leader_that_lost_its_disk_drop_what_they_had_and_copy_its_log() {
    // `isr-then-leader-wiped`, then the wiped broker comes back: still the ISR's only member, it
    // leads with an empty log in a new epoch. The followers' epoch 0 is older than any epoch the
    // leader knows, so it ends where the leader's first epoch starts, offset 0
    // (`LeaderEpochFileCache.endOffsetFor`): they truncate everything and copy the new log.
    let mut scenario = crate::built_in("isr-then-leader-wiped");
    scenario.duration_ms = 100_000;
    for (at_ms, action) in [
        (70_000, Action::HealLink(1, 2)),
        (70_000, Action::HealLink(1, 3)),
        (75_000, Action::RestartBroker(1)),
    ] {
        scenario.timeline.push(TimelineEntry { at_ms, action });
    }
    let mut sim = Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    for broker in [2, 3] {
        let truncated = truncations_of(&report, broker);
        assert_eq!(truncated.len(), 1, "{broker}: {truncated:?}");
        assert_eq!(truncated[0].1, 0, "{broker} keeps nothing: {truncated:?}");
    }
    let p = &report.partitions[0];
    assert_eq!(p.isr, [1, 2, 3]);
    let logs = logs(&mut sim);
    assert!(!logs[0].1.is_empty());
    assert!(
        logs.iter().all(|(_, log)| *log == logs[0].1),
        "the followers hold the leader's records"
    );
}

/// `clean-failover` (leader 1 crashes at 10 s) with these actions instead of its restart.
fn clean_failover_with(actions: &[(u64, Action)]) -> kafkascope_model::scenario::Scenario {
    let mut scenario = crate::built_in("clean-failover");
    scenario
        .timeline
        .retain(|t| !matches!(t.action, Action::RestartBroker(_)));
    for (at_ms, action) in actions {
        scenario.timeline.push(TimelineEntry {
            at_ms: *at_ms,
            action: action.clone(),
        });
    }
    scenario
}

#[test]
fn a_quick_restart_is_refused_until_the_old_session_expires() {
    // Leader 1 crashes at 10 s and is back 2 s later, well within broker.session.timeout.ms:
    // `ClusterControlManager.registerBroker` refuses the new incarnation while the old one's
    // session is valid, so the failover comes at the session timeout, as for a broker that stays
    // down. The refused broker serves nothing and retries with `BrokerLifecycleManager`'s
    // back-off; once registered it asks to be unfenced within milliseconds.
    let mut scenario = clean_failover_with(&[(12_000, Action::RestartBroker(1))]);
    scenario.duration_ms = 25_000;
    let session = scenario.cluster.session_timeout_ms;
    let interval = scenario.cluster.heartbeat_interval_ms;
    let mut sim = Sim::new(&scenario);
    sim.run_until(14_000);
    let starting = Report::of(&sim);
    assert_eq!(starting.brokers[0].state, "starting");
    assert_eq!(starting.partitions[0].leader, Some(1), "no failover yet");
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    let at = |wanted: fn(&EventKind) -> bool| -> Vec<u64> {
        report
            .events
            .iter()
            .filter(|e| wanted(&e.kind))
            .map(|e| e.at_ms)
            .collect()
    };
    assert_eq!(
        at(|k| matches!(k, EventKind::RegistrationRefused { broker: 1 })),
        [12_001]
    );
    let e = elections(&report);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].0 >= 10_000 + session - interval && e[0].0 <= 10_000 + session + 1,
        "the failover waits for the session timeout: {e:?}"
    );
    let registered = at(|k| matches!(k, EventKind::BrokerRegistered { broker: 1 }));
    assert_eq!(registered.len(), 1);
    // Retries at about 100, 300, 700, 1500, 3100 and 6300 ms after the first refusal: the one
    // after the old session expired is accepted.
    assert!(
        registered[0] > e[0].0 && registered[0] < 12_001 + 6_300 + 200,
        "registered at {registered:?}"
    );
    let unfenced = at(|k| matches!(k, EventKind::BrokerUnfenced { broker: 1 }));
    assert_eq!(unfenced.len(), 1);
    assert!(
        unfenced[0] - registered[0] <= 15,
        "{registered:?} then {unfenced:?}"
    );
    assert_eq!(report.brokers[0].state, "online");
    assert_eq!(report.acked_records_lost, 0);
}

#[test]
fn the_automatic_rebalance_comes_an_interval_after_the_imbalance_and_again_while_it_lasts() {
    // `QuorumController.maybeScheduleNextBalancePartitionLeaders`: the check is scheduled
    // leader.imbalance.check.interval.seconds after a change leaves a partition away from its
    // first replica, and again after each check while one still is; not on a fixed grid from 0.
    let scenario = |restart_ms: u64| {
        crate::scenario(&format!(
            r#"(
            name: "rebalance", seed: 3, duration_ms: 800000,
            cluster: (brokers: 3),
            topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
                      assignment: Some([[1, 2, 3]]))],
            producers: [(name: "p", topic: "t", acks: All, records_per_sec: 20, keys: Sequence("k"))],
            timeline: [
                (at_ms: 100000, action: CrashBroker(1)),
                (at_ms: {restart_ms}, action: RestartBroker(1)),
            ],
        )"#
        ))
    };
    let interval = scenario(150_000).cluster.leader_imbalance_check_interval_ms;
    // 1 is back in the ISR long before the check: it leads again one interval after the failover.
    let report = crate::run(&scenario(150_000));
    let e = elections(&report);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!((e[0].1, e[1].1), (2, 1));
    assert_eq!(e[1].0, e[0].0 + interval, "{e:?}");
    // 1 is still down at the first check: nothing moves, and the next check comes an interval
    // later.
    let report = crate::run(&scenario(450_000));
    let e = elections(&report);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[1].1, 1);
    assert_eq!(e[1].0, e[0].0 + 2 * interval, "{e:?}");
}

#[test]
fn a_broker_that_crashes_while_registering_stops_asking() {
    let mut scenario = clean_failover_with(&[
        (12_000, Action::RestartBroker(1)),
        (12_500, Action::CrashBroker(1)),
    ]);
    scenario.duration_ms = 30_000;
    let report = crate::run(&scenario);
    assert_eq!(report.brokers[0].state, "crashed");
    let registrations = report
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::BrokerRegistered { broker: 1 }))
        .count();
    assert_eq!(registrations, 0, "a crashed process registers nothing");
    assert_eq!(report.partitions[0].leader, Some(2));
}

#[test]
fn a_broker_is_unfenced_only_by_a_heartbeat_after_its_registration_answer() {
    // Broker 1's messages take 5 s more when it restarts: it sends its registration again before
    // the first answer is back. The repeat registers nothing new; only a heartbeat the broker
    // sends once it has its answer unfences it, so it never leads while still starting.
    let scenario = crate::scenario(
        r#"(
        name: "slow registration", seed: 3, duration_ms: 40000,
        cluster: (brokers: 3),
        topics: [
            (name: "solo", partitions: 1, replication_factor: 1, min_insync_replicas: 1,
             assignment: Some([[1]])),
            (name: "orders", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
             assignment: Some([[1, 2, 3]])),
        ],
        producers: [(name: "p1", topic: "orders", acks: All, records_per_sec: 100, keys: Sequence("k"))],
        timeline: [
            (at_ms: 10000, action: CrashBroker(1)),
            (at_ms: 19000, action: SlowBroker(1, 5000)),
            (at_ms: 20000, action: RestartBroker(1)),
        ],
    )"#,
    );
    let mut sim = Sim::new(&scenario);
    while sim.now_ms() < scenario.duration_ms {
        sim.step();
        let report = Report::of(&sim);
        if report.brokers[0].state == "starting" {
            assert!(
                report.partitions.iter().all(|p| p.leader != Some(1)),
                "{} ms: broker 1 leads while it is starting",
                sim.now_ms()
            );
        }
    }
    let report = Report::of(&sim);
    let registered = report
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::BrokerRegistered { broker: 1 }))
        .count();
    assert_eq!(registered, 1);
    assert_eq!(report.brokers[0].state, "online");
    assert_eq!(
        report.partitions[0].leader,
        Some(1),
        "it leads its own partition again"
    );
}

#[test]
fn a_heartbeat_from_a_gone_incarnation_changes_nothing() {
    // A heartbeat slowed by 20 s is still on its way when broker 1 crashes; the broker restarts
    // and registers anew before it arrives. It is stale (STALE_BROKER_EPOCH): no refusal, no
    // second registration.
    let mut scenario = crate::built_in("clean-failover");
    scenario.timeline = vec![
        TimelineEntry {
            at_ms: 9_999,
            action: Action::SlowBroker(1, 20_000),
        },
        TimelineEntry {
            at_ms: 10_500,
            action: Action::CrashBroker(1),
        },
        TimelineEntry {
            at_ms: 18_000,
            action: Action::SlowBroker(1, 0),
        },
        TimelineEntry {
            at_ms: 18_000,
            action: Action::RestartBroker(1),
        },
    ];
    scenario.duration_ms = 45_000;
    let report = crate::run(&scenario);
    let kinds: Vec<&EventKind> = report
        .events
        .iter()
        .map(|e| &e.kind)
        .filter(|k| {
            matches!(
                k,
                EventKind::RegistrationRefused { .. }
                    | EventKind::BrokerRegistered { .. }
                    | EventKind::BrokerFenced { .. }
                    | EventKind::BrokerUnfenced { .. }
            )
        })
        .collect();
    assert_eq!(kinds.len(), 3, "fenced, registered, unfenced: {kinds:?}");
    assert_eq!(report.brokers[0].state, "online");
}

#[test]
fn an_offline_partition_whose_electable_replicas_all_shut_down_uncleanly_is_unavailable_not_a_broken_promise()
 {
    // KIP-966: a replica that registers after an unclean shutdown leaves the ELR, as it may have
    // lost data it had not flushed. When that happens to every replica that could lead, Kafka
    // keeps the partition offline (only an unclean election could bring it back): the ledger
    // counts its records as unavailable, not lost, and the safe-settings check does not call that
    // a broken promise while a replica still holds them.
    let scenario = crate::scenario(
        r#"(
        name: "both unclean", seed: 118, duration_ms: 60000,
        cluster: (brokers: 3, eligible_leader_replicas: true, session_timeout_ms: 6000,
                  heartbeat_interval_ms: 1000),
        topics: [(name: "t", partitions: 1, replication_factor: 2, min_insync_replicas: 2,
                  assignment: Some([[1, 2]]))],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Sequence("k"))],
        timeline: [
            (at_ms: 10000, action: CrashBroker(2)),
            (at_ms: 20000, action: CrashBroker(1)),
            (at_ms: 30000, action: RestartBroker(2)),
            (at_ms: 30000, action: RestartBroker(1)),
        ],
    )"#,
    );
    let report = crate::run(&scenario);
    let p = &report.partitions[0];
    assert_eq!((p.leader, p.isr.len()), (None, 0), "offline: {p:?}");
    assert!(report.brokers.iter().all(|b| b.state == "online"));
    assert_eq!(report.acked_records_lost, 0);
    assert!(report.acked_records_unavailable > 0);
    assert_eq!(report.lost_records[0].state, Missing::Unavailable);
    assert!(
        report.lost_records[0].why.contains("partition offline"),
        "{:?}",
        report.lost_records[0]
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

/// A leader cut off from the controller but not from its clients does not know it was replaced
/// (a KRaft broker acts on the metadata it has; `BrokerLifecycleManager` only retries its
/// heartbeats): with acks=1 it goes on acknowledging writes alone, and truncates them when the
/// link heals and it learns the new leader. The producer's metadata named it the whole time: no
/// error told it otherwise until the old leader answered NOT_LEADER_OR_FOLLOWER.
#[test]
fn a_leader_cut_off_from_the_controller_loses_what_it_acknowledges_with_acks_one() {
    let report = crate::run(&crate::built_in("cut-off-leader-acks-one"));
    let e = elections(&report);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!((e[0].1, e[0].2), (2, 1), "2 leads epoch 1 once 1 is fenced");
    let fenced_at = report
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::BrokerFenced { broker: 1 }))
        .expect("1 is fenced")
        .at_ms;
    // Broker 1 acknowledged alone from the election to the heal (60 s), 200 records a second.
    let zombie_ms = 60_000 - fenced_at;
    assert!(
        report.acked_records_lost >= zombie_ms * 200 / 1000 - 200,
        "{} lost over {zombie_ms} ms",
        report.acked_records_lost
    );
    let truncated = truncations_of(&report, 1);
    assert_eq!(truncated.len(), 1, "{truncated:?}");
    assert!(truncated[0].0 - truncated[0].1 >= report.acked_records_lost);
    assert!(
        report
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Truncated { .. }))
            .all(|e| e.at_ms >= 60_000),
        "it learns only once the link heals"
    );
    let errors = &report.producers[0].stats.errors;
    assert!(!errors.contains_key("REQUEST_TIMED_OUT"), "{errors:?}");
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

/// The same cut-off leader with acks=all and min.insync.replicas 2: its followers fetch from the
/// new leader, so its high watermark stays and it answers no write; the requests time out
/// (REQUEST_TIMED_OUT after request.timeout.ms), the producer asks for metadata and moves to the
/// new leader. Nothing acknowledged is lost, and what the old leader appended meanwhile is
/// truncated once it learns.
#[test]
fn a_leader_cut_off_from_the_controller_loses_nothing_with_acks_all_and_min_isr_two() {
    let report = crate::run(&crate::built_in("cut-off-leader-acks-all"));
    assert_eq!(report.acked_records_lost, 0);
    let errors = &report.producers[0].stats.errors;
    assert!(
        errors.get("REQUEST_TIMED_OUT").is_some_and(|n| *n > 0),
        "{errors:?}"
    );
    let p = &report.producers[0].stats;
    assert!(p.acked + 10 >= p.sent, "the writes moved on: {p:?}");
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

/// Three brokers, three partitions led by 1, 2 and 3, acks=all with min.insync.replicas 2, and
/// a consumer group; broker 1 goes away at 10 s by `action` and comes back at 20 s.
fn broker_one_leaves(action: Action) -> Scenario {
    let mut scenario = crate::scenario(
        r#"(
        name: "leaves", seed: 7, duration_ms: 40000,
        cluster: (brokers: 3),
        topics: [(name: "orders", partitions: 3, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "orders", acks: All, records_per_sec: 300, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["orders"], members: 2)],
        timeline: [(at_ms: 20000, action: RestartBroker(1))],
    )"#,
    );
    scenario.timeline.insert(
        0,
        TimelineEntry {
            at_ms: 10_000,
            action,
        },
    );
    scenario
}

#[test]
fn a_controlled_shutdown_moves_every_leadership_at_once_while_a_crash_waits_for_the_session() {
    // `BrokerLifecycleManager.beginControlledShutdown` heartbeats at once; the controller moves
    // the broker's leaderships to in-sync replicas (`handleBrokerInControlledShutdown`) and lets
    // it stop once it leads nothing and the other brokers know (`shouldShutDown`).
    let clean = crate::run(&broker_one_leaves(Action::ControlledShutdown(1)));
    let moved: Vec<&kafkascope_model::sim::Event> = clean
        .events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::LeaderElected { reason, .. } if reason == "controlled shutdown")
        })
        .collect();
    // Broker 1 led orders-0 and some partitions of __consumer_offsets.
    assert!(moved.len() >= 2, "{moved:?}");
    assert!(moved.iter().all(|e| e.at_ms < 11_000), "{moved:?}");
    assert!(moved.iter().all(|e| !matches!(
        &e.kind,
        EventKind::LeaderElected { leader: 1, .. } | EventKind::LeaderElected { unclean: true, .. }
    )));
    let order: Vec<&str> = clean
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ControlledShutdownRequested { broker: 1 } => Some("requested"),
            EventKind::BrokerInControlledShutdown { broker: 1 } => Some("in controlled shutdown"),
            EventKind::BrokerFenced { broker: 1 } => Some("fenced"),
            EventKind::BrokerShutDown { broker: 1 } => Some("stopped"),
            EventKind::BrokerRegistered { broker: 1 } => Some("registered"),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "requested",
            "in controlled shutdown",
            "fenced",
            "stopped",
            "registered"
        ]
    );
    assert_eq!(clean.metrics.offline_partition_ms, 0);
    assert_eq!(clean.metrics.dead_leader_ms, 0);
    assert_eq!(clean.metrics.unclean_leader_elections, 0);
    assert_eq!(
        (clean.acked_records_lost, clean.acked_records_unavailable),
        (0, 0)
    );
    assert!(
        clean.invariant_violations.is_empty(),
        "{:?}",
        clean.invariant_violations
    );
    assert!(clean.brokers.iter().all(|b| b.state == "online"));

    // The same broker crashing: its partitions keep a dead leader until the controller fences
    // it, `broker.session.timeout.ms` (9 s) after its last heartbeat.
    let crash = crate::run(&broker_one_leaves(Action::CrashBroker(1)));
    let fenced_at = crash
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::BrokerFenced { broker: 1 }))
        .expect("fenced")
        .at_ms;
    assert!((17_000..=19_001).contains(&fenced_at), "{fenced_at}");
    // At least orders-0 stalled from 10 s until the fencing.
    assert!(
        crash.metrics.dead_leader_ms >= fenced_at - 10_000,
        "{:?}",
        crash.metrics
    );
    assert_eq!(crash.acked_records_lost, 0);
}

#[test]
fn a_controlled_shutdown_of_a_broker_that_is_not_running_is_refused() {
    let mut scenario = broker_one_leaves(Action::CrashBroker(1));
    scenario.timeline.push(TimelineEntry {
        at_ms: 12_000,
        action: Action::ControlledShutdown(1),
    });
    scenario.timeline.push(TimelineEntry {
        at_ms: 30_000,
        action: Action::RestartBroker(2),
    });
    let report = crate::run(&scenario);
    let refused = crate::refusals(&report);
    let refusals: Vec<(u64, &str, &str)> = refused
        .iter()
        .map(|(at, action, why)| (*at, action.as_str(), why.as_str()))
        .collect();
    assert_eq!(
        refusals,
        [
            (
                12_000,
                "controlled shutdown of broker 1",
                "broker 1 is not running (crashed)"
            ),
            (30_000, "restart broker 2", "broker 2 is running"),
        ]
    );
    assert!(report.invariant_violations.is_empty());
}

#[test]
fn records_acknowledged_before_a_shrink_are_unavailable_and_those_after_it_lost() {
    // isr-then-leader-wiped: the followers are cut off at 5 s and leave the ISR at 45 s; leader
    // 1 then acknowledges alone, and loses its disk at 60 s. What was acknowledged before the
    // cut is still on the followers, which may not lead with unclean election off.
    let report = crate::run(&crate::built_in("isr-then-leader-wiped"));
    let shrink = report
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::IsrShrink { .. }))
        .expect("a shrink")
        .at_ms;
    assert_eq!(shrink, 45_000);
    let follower_end = report.partitions[0].replicas[1].log_end_offset;
    assert!(follower_end > 0);
    assert_eq!(report.acked_records_unavailable, follower_end);
    assert!(report.acked_records_lost > 0);
    for record in &report.lost_records {
        let offset = record.offset.expect("acks=all records have offsets");
        match record.state {
            Missing::Unavailable => assert!(offset < follower_end, "{record:?}"),
            Missing::Lost => assert!(offset >= follower_end, "{record:?}"),
        }
    }
    assert_eq!(
        report.acked_records_lost + report.acked_records_unavailable,
        report.lost_records.len() as u64
    );
}

/// Between a leader's crash and its fencing, the records it alone had are already lost: the
/// crashed broker cannot take its leadership back (`ClusterControlManager.registerBroker` refuses
/// its new incarnation while the old session is valid), and once it is fenced the controller
/// elects the first active in-sync replica (`PartitionChangeBuilder.electAnyLeader`), whose log
/// lacks them. The ledger says so from the crash on, not only after the election.
#[test]
fn records_only_a_crashed_leader_had_are_lost_before_it_is_fenced() {
    let mut scenario = crate::built_in("acks-one-crash");
    scenario.duration_ms = 15_000;
    let before = crate::run(&scenario);
    let after = crate::run(&crate::built_in("acks-one-crash"));
    assert!(
        before.brokers[0].state != "fenced" && before.partitions[0].leader == Some(1),
        "broker 1 is down but still leads: {:?}",
        before.partitions[0]
    );
    assert_eq!(before.acked_records_unavailable, 0);
    assert!(before.acked_records_lost > 0);
    assert_eq!(before.acked_records_lost, after.acked_records_lost);
    assert!(
        before.lost_records[0].why.contains("broker 2"),
        "{:?}",
        before.lost_records[0]
    );
    // The same with unclean election on and every in-sync follower down too: the first replica
    // up is elected uncleanly, and what it lacks is lost as well.
    let unclean = crate::scenario(
        r#"(name: "unclean-next", seed: 9, duration_ms: 60000, cluster: (brokers: 3),
            topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 1,
                      unclean_leader_election: true, assignment: Some([[1, 2, 3]]))],
            producers: [(name: "p", topic: "t", acks: One, records_per_sec: 100, keys: Sequence("k"))],
            timeline: [
                (at_ms: 5000, action: CutLink(1, 3)),
                (at_ms: 5000, action: CutLink(2, 3)),
            ])"#,
    );
    let mut shrunk = unclean.clone();
    // Broker 3 leaves the ISR at the leader's check 30 s or more after it last caught up.
    shrunk.timeline.push(TimelineEntry {
        at_ms: 48_000,
        action: Action::CrashBroker(2),
    });
    shrunk.timeline.push(TimelineEntry {
        at_ms: 48_500,
        action: Action::CrashBroker(1),
    });
    shrunk.duration_ms = 49_000;
    let report = crate::run(&shrunk);
    let p = &report.partitions[0];
    assert_eq!(p.isr, [1, 2], "{p:?}");
    assert_eq!(
        report.acked_records_unavailable,
        0,
        "{:?}",
        report.lost_records.first()
    );
    assert!(report.acked_records_lost > 0);
    assert!(
        report.lost_records[0].why.contains("broker 3 uncleanly"),
        "{:?}",
        report.lost_records[0]
    );
}

/// `ReplicaManager.applyLocalLeadersDelta`: a broker stops fetching a partition before it starts
/// its leader epoch (`removeFetcherForPartitions`, then `Partition.makeLeader` and
/// `maybeAssignEpochStartOffset`), both when it learns from the metadata log that it leads. A
/// slow old leader keeps answering a new leader's fetches until the new leader learns: were the
/// epoch started at the election instant, those late appends would bury its start in the epoch
/// cache (the invariant `epoch-cache-off-log`), a returning replica would truncate too little,
/// and an in-sync replica would hold other records below the high watermark.
#[test]
fn a_new_leader_starts_its_epoch_when_it_learns_it_leads() {
    let scenario = crate::scenario(
        r#"(name: "slow-zombie", seed: 5, duration_ms: 90000, cluster: (brokers: 3),
            topics: [(name: "orders", partitions: 1, replication_factor: 3, min_insync_replicas: 1,
                      assignment: Some([[1, 2, 3]]))],
            producers: [(name: "checkout", topic: "orders", acks: One, records_per_sec: 200,
                         keys: Sequence("order-"))],
            timeline: [
                (at_ms: 1000, action: SlowBroker(1, 100)),
                (at_ms: 10000, action: CutControllerLink(1)),
                (at_ms: 60000, action: HealControllerLink(1)),
                (at_ms: 70000, action: PreferredElection),
            ])"#,
    );
    let report = crate::run(&scenario);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    let e = elections(&report);
    assert_eq!(
        e.last().map(|e| e.1),
        Some(1),
        "the preferred leader leads again: {e:?}"
    );
    // Every replica's log is the leader's, record for record, below the high watermark.
    let p = &report.partitions[0];
    assert!(
        p.replicas
            .iter()
            .all(|r| r.log_end_offset >= p.high_watermark),
        "{p:?}"
    );
}
