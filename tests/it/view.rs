//! What the window shows, read headless: the snapshot of the model the scene draws, and the
//! sandbox's actions, which must replay exactly when seeking.

use kafkascope::report::Report;
use kafkascope::scenario::{Action, Scenario, TimelineEntry};
use kafkascope::sim::Sim;
use kafkascope::view::palette::ReplicaRole;
use kafkascope::view::snapshot::{MessageKind, Snapshot};

use super::built_in;

fn with_action(mut scenario: Scenario, at_ms: u64, action: Action) -> Scenario {
    scenario.timeline.push(TimelineEntry { at_ms, action });
    scenario
}

fn report_at(scenario: &Scenario, until: u64) -> String {
    let mut sim = Sim::new(scenario);
    sim.run_until(until);
    Report::of(&sim).to_json()
}

#[test]
fn a_sandbox_action_is_the_same_as_a_scripted_one_and_replays_when_seeking() {
    let quickstart = built_in("quickstart");
    let scripted = report_at(
        &with_action(quickstart.clone(), 10_000, Action::CrashBroker(1)),
        30_000,
    );

    let mut sim = Sim::new(&quickstart);
    sim.run_until(10_000);
    sim.act(Action::CrashBroker(1));
    sim.run_until(30_000);
    assert_eq!(
        Report::of(&sim).to_json(),
        scripted,
        "acting now = a timeline entry now"
    );

    // Back before the action (from a checkpoint that predates it) and forward again.
    sim.seek(4_000);
    sim.seek(30_000);
    assert_eq!(
        Report::of(&sim).to_json(),
        scripted,
        "seeking replays the action"
    );
    sim.seek(12_345);
    sim.seek(30_000);
    assert_eq!(Report::of(&sim).to_json(), scripted);
}

#[test]
fn acting_in_the_past_keeps_what_came_after_until_it_is_discarded() {
    let quickstart = built_in("quickstart");
    let mut sim = Sim::new(&quickstart);
    sim.run_until(10_000);
    sim.act(Action::CrashBroker(1));
    sim.run_until(30_000);
    sim.seek(8_000);
    sim.act(Action::CrashBroker(2));
    sim.run_until(30_000);
    // The crash at 10 s stays and replays after the one inserted at 8 s.
    let both = with_action(
        with_action(quickstart.clone(), 8_000, Action::CrashBroker(2)),
        10_000,
        Action::CrashBroker(1),
    );
    assert_eq!(Report::of(&sim).to_json(), report_at(&both, 30_000));
    assert_eq!(sim.actions().len(), 2);
    // Discarded from 9 s on, only the one at 8 s is left.
    sim.seek(9_000);
    assert_eq!(sim.discard_later_actions(), 1);
    sim.run_until(30_000);
    let expected = report_at(
        &with_action(quickstart, 8_000, Action::CrashBroker(2)),
        30_000,
    );
    assert_eq!(Report::of(&sim).to_json(), expected);
    assert_eq!(sim.actions().len(), 1);
}

#[test]
fn the_snapshot_of_a_healthy_cluster() {
    let mut sim = Sim::new(&built_in("quickstart"));
    sim.run_until(12_000);
    let report = Report::of(&sim);
    let s = Snapshot::of(sim.world_mut());
    assert_eq!(s.now_ms, 12_000);
    assert_eq!(s.brokers.len(), 3);
    assert!(
        s.brokers
            .iter()
            .all(|b| b.alive && !b.fenced && b.state == "online")
    );
    let orders: Vec<_> = s.partitions.iter().filter(|p| !p.internal).collect();
    assert_eq!(orders.len(), 3);
    for (p, r) in orders.iter().zip(&report.partitions) {
        assert_eq!(p.name(), format!("{}-{}", r.topic, r.partition));
        assert_eq!((p.leader, &p.isr), (r.leader, &r.isr));
        let leader = p.leader.unwrap();
        for replica in &p.replicas {
            let expected = if replica.broker == leader {
                ReplicaRole::Leader
            } else {
                ReplicaRole::InSync
            };
            assert_eq!(replica.role, expected, "{} on {}", p.name(), replica.broker);
        }
        assert_eq!(p.leader_replica().unwrap().high_watermark, r.high_watermark);
    }
    assert_eq!(
        (s.under_replicated(), s.offline(), s.under_min_isr()),
        (0, 0, 0)
    );
    // The lag the overlay writes out is the report's.
    let group = &s.groups[0];
    for (row, o) in group.offsets.iter().zip(&report.consumer_groups[0].offsets) {
        assert_eq!(row.lag, row.committed.map(|c| row.high_watermark - c));
        assert_eq!(
            (row.lag, row.committed, row.consumer_lag),
            (o.lag, o.committed, o.consumer_lag)
        );
    }
    assert_eq!(group.members.len(), 2);
    let kinds: Vec<MessageKind> = s.messages.iter().map(|m| m.kind).collect();
    assert!(!kinds.is_empty(), "messages are on the wire at any instant");
    assert!(s.messages.windows(2).all(|w| w[0].wire.id < w[1].wire.id));
}

#[test]
fn the_snapshot_of_a_shrunk_isr() {
    let mut sim = Sim::new(&built_in("isr-shrink"));
    sim.run_until(50_000);
    let s = Snapshot::of(sim.world_mut());
    let p = &s.partitions[0];
    assert_eq!(p.isr, vec![1, 2]);
    let role = |b| p.replicas.iter().find(|r| r.broker == b).unwrap().role;
    assert_eq!(
        (role(1), role(2), role(3)),
        (
            ReplicaRole::Leader,
            ReplicaRole::InSync,
            ReplicaRole::OutOfSync
        )
    );
    assert_eq!(s.under_replicated(), 1);
    assert_eq!(s.cut_links, vec![(1, 3)]);
}

#[test]
fn a_crashed_leader_is_offline_before_the_controller_knows() {
    // isr-then-leader-dies: 1 crashes at 60 s; the controller fences it 9 s of silence later.
    let mut sim = Sim::new(&built_in("isr-then-leader-dies"));
    sim.run_until(62_000);
    let s = Snapshot::of(sim.world_mut());
    let p = &s.partitions[0];
    assert_eq!(p.leader, Some(1), "the controller has not noticed yet");
    assert!(!s.broker(1).unwrap().alive && !s.broker(1).unwrap().fenced);
    assert_eq!(p.replicas[0].role, ReplicaRole::Offline);
    sim.run_until(75_000);
    let s = Snapshot::of(sim.world_mut());
    assert!(s.broker(1).unwrap().fenced);
    assert_eq!(s.offline(), 1);
}

#[test]
fn a_replaced_leader_cut_off_from_the_controller_shows_as_a_zombie_until_it_learns() {
    use kafkascope::view::explain::{Target, explain};
    // cut-off-leader-acks-one: 1 loses the controller at 10 s, is replaced at 17 s, and hears the
    // controller again at 60 s.
    let scenario = built_in("cut-off-leader-acks-one");
    let mut sim = Sim::new(&scenario);
    sim.run_until(40_000);
    let s = Snapshot::of(sim.world_mut());
    let p = &s.partitions[0];
    assert_eq!((p.leader, p.leader_epoch), (Some(2), 1));
    let old = p.replicas.iter().find(|r| r.broker == 1).unwrap();
    assert_eq!(
        old.stale_leader,
        Some(0),
        "it still leads epoch 0 as far as it knows"
    );
    assert!(old.log_end_offset > p.replicas[1].log_end_offset + 1000);
    assert!(old.truncates_to.is_some());
    let (_, body) = explain(
        &s,
        &scenario.cluster,
        Target::Replica {
            ordinal: 0,
            broker: 1,
        },
    )
    .expect("an explanation");
    assert!(
        body.contains("zombie") && body.contains("broker 2"),
        "{body}"
    );
    sim.run_until(61_000);
    let s = Snapshot::of(sim.world_mut());
    assert!(
        s.partitions[0]
            .replicas
            .iter()
            .all(|r| r.stale_leader.is_none())
    );
}

#[test]
fn explanations_use_the_scenarios_settings_and_the_models_numbers() {
    use kafkascope::view::explain::{Target, explain};
    let mut scenario = built_in("isr-shrink");
    scenario.cluster.replica_lag_time_max_ms = 20_000;
    scenario.cluster.session_timeout_ms = 7_000;
    let mut sim = Sim::new(&scenario);
    sim.run_until(50_000);
    let s = Snapshot::of(sim.world_mut());
    let config = &scenario.cluster;
    let text = |target| explain(&s, config, target).expect("an explanation");

    let (title, body) = text(Target::Replica {
        ordinal: 0,
        broker: 3,
    });
    assert_eq!(title, format!("{} on broker 3", s.partitions[0].name()));
    assert!(body.contains("out of the ISR"), "{body}");
    assert!(
        body.contains("replica.lag.time.max.ms (20.000 s)"),
        "{body}"
    );
    let lagging = s.partitions[0]
        .replicas
        .iter()
        .find(|r| r.broker == 3)
        .unwrap();
    assert!(
        body.contains(&format!(
            "Log end offset (LEO) {}, high watermark (HW) {}",
            lagging.log_end_offset, lagging.high_watermark
        )),
        "{body}"
    );
    assert!(body.contains("ISR [1, 2]"), "{body}");

    let (_, leader) = text(Target::Replica {
        ordinal: 0,
        broker: 1,
    });
    assert!(leader.contains("the leader"), "{leader}");

    let (_, controller) = text(Target::Controller);
    assert!(
        controller.contains("broker.session.timeout.ms (7.000 s)"),
        "{controller}"
    );

    // A message on the wire names its ends and its timing.
    let i = s
        .messages
        .iter()
        .position(|m| m.kind == MessageKind::Fetch)
        .expect("a follower's fetch in flight");
    let (title, body) = text(Target::Message(i));
    assert!(title.contains(" to broker "), "{title}");
    assert!(
        body.contains("Sent at") && body.contains("arrives at"),
        "{body}"
    );

    // Things the snapshot does not hold have no explanation.
    assert_eq!(
        explain(
            &s,
            config,
            Target::Replica {
                ordinal: 9,
                broker: 1
            }
        ),
        None
    );
    assert_eq!(explain(&s, config, Target::Message(s.messages.len())), None);
}

/// A followed record that retention deleted is said to have expired as configured, not to be
/// lost: before and after the ledger forgets it.
#[test]
fn a_followed_record_retention_deleted_expired_and_is_not_lost() {
    use kafkascope::view::follow::{AckScan, at_offset, trace};
    let scenario = kafkascope::scenario::Scenario::parse(
        r#"(
        name: "aging", duration_ms: 60000,
        cluster: (brokers: 3, log_retention_check_interval_ms: 5000),
        topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
                  segment_bytes: 1000, retention_ms: 10000)],
        producers: [(name: "p", topic: "t", records_per_sec: 100, linger_ms: 0)],
    )"#,
        "aging.ron",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(&scenario);
    sim.run_until(5_000);
    let picked = at_offset(sim.world(), 0, 100).expect("offset 100 is written");
    let mut acks = AckScan::default();
    let t = trace(sim.world_mut(), picked, &mut acks).expect("a trace");
    assert!(
        t.acked && !t.lost && !t.expired && !t.replicas.is_empty(),
        "{t:?}"
    );
    // The first check, at 30 s, deletes what is more than 10 s old; the one at 35 s lets the
    // ledger forget it.
    for until in [30_001, 40_001] {
        sim.run_until(until);
        let t = trace(sim.world_mut(), picked, &mut acks).expect("a trace");
        assert!(t.expired && !t.lost, "at {until} ms: {t:?}");
        assert_eq!(t.offset, Some(100));
        assert!(t.replicas.is_empty());
    }
}

/// A followed record that compaction removed is said to be compacted away as configured, not to
/// be lost, and no broker's log holds it any more.
#[test]
fn a_followed_record_compaction_removed_is_not_lost() {
    use kafkascope::view::follow::{AckScan, at_offset, trace};
    let scenario =
        kafkascope::scenario::Scenario::built_in("compaction").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(&scenario);
    sim.run_until(10_000);
    // Offset 0 is one of three keys' first values: newer ones follow within seconds.
    let picked = at_offset(sim.world(), 0, 0).expect("offset 0 is written");
    let mut acks = AckScan::default();
    let t = trace(sim.world_mut(), picked, &mut acks).expect("a trace");
    assert!(t.acked && !t.compacted && t.replicas.len() == 3, "{t:?}");
    // The cleaners' first look, at 15 s, removes it on every replica.
    sim.run_until(15_001);
    let t = trace(sim.world_mut(), picked, &mut acks).expect("a trace");
    assert!(t.compacted && !t.lost && !t.expired, "{t:?}");
    assert_eq!(t.offset, Some(0));
    assert!(t.replicas.is_empty());
}
