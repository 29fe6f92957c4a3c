//! Kafka's operations as timeline actions: configuration changed live, group membership, and
//! refusals of what cannot apply.

use kafkascope_model::report::Report;

use crate::refusals;
use kafkascope_model::scenario::{Action, Keys, ProducerSettings, TimelineEntry};
use kafkascope_model::sim::EventKind;

#[test]
fn min_insync_replicas_changes_live_and_is_capped_by_the_replica_count() {
    // ISR shrinks to leader 1 at about 35 s (followers cut off at 5 s). With min.insync.replicas
    // 1, acks=all writes go on; raised to 2 at 50 s, the leader refuses them
    // (NOT_ENOUGH_REPLICAS, `Partition.appendRecordsToLeader`).
    let mut scenario = crate::built_in("isr-then-leader-dies");
    scenario
        .timeline
        .retain(|e| !matches!(e.action, Action::CrashBroker(_)));
    scenario.timeline.push(TimelineEntry {
        at_ms: 50_000,
        action: Action::SetMinIsr("orders".into(), 2),
    });
    let report = crate::run(&scenario);
    let errors = &report.producers[0].stats.errors;
    assert!(
        errors.get("NOT_ENOUGH_REPLICAS").is_some_and(|n| *n > 0),
        "{errors:?}"
    );
    assert!(report.events.iter().any(|e| e.at_ms == 50_000
        && matches!(
            &e.kind,
            EventKind::MinIsrChanged {
                min_insync_replicas: 2,
                ..
            }
        )));

    // Above the replication factor, Kafka 3.7+ requires every replica, no more
    // (`Partition.effectiveMinIsr`): with the full ISR, acks=all succeeds.
    let mut scenario = crate::built_in("quickstart");
    let topic = scenario.producers[0].topic.clone();
    let rf = scenario.topics[0].replication_factor;
    scenario.topics[0].min_insync_replicas = rf + 2;
    scenario.timeline = vec![TimelineEntry {
        at_ms: 1_000,
        action: Action::SetMinIsr(topic, rf + 5),
    }];
    scenario.duration_ms = 10_000;
    let report = crate::run(&scenario);
    let stats = &report.producers[0].stats;
    assert!(stats.acked > 0 && stats.errors.is_empty(), "{stats:?}");
    assert!(refusals(&report).is_empty());
}

#[test]
fn turning_unclean_election_on_elects_at_the_controllers_next_check() {
    // The partition goes offline at about 67 s (leader 1 fenced, its followers out of the ISR).
    // Unclean election turned on at 80 s elects no one at once: the controller's check of
    // leaderless partitions, five minutes after it found one, elects follower 2.
    let mut scenario = crate::built_in("isr-then-leader-dies");
    scenario.duration_ms = 400_000;
    scenario.timeline.push(TimelineEntry {
        at_ms: 80_000,
        action: Action::SetUncleanElection("orders".into(), true),
    });
    let report = crate::run(&scenario);
    let offline = report
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::PartitionOffline { .. }))
        .expect("offline")
        .at_ms;
    let elected = report
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::LeaderElected {
                unclean: true,
                leader,
                reason,
                ..
            } => Some((e.at_ms, *leader, reason.as_str())),
            _ => None,
        })
        .expect("an unclean election");
    assert_eq!(
        elected,
        (offline + 300_000, 2, "unclean election check"),
        "offline at {offline}"
    );
    assert_eq!(report.metrics.unclean_leader_elections, 1);
}

#[test]
fn a_producer_restarts_with_other_settings_and_refuses_what_kafka_refuses() {
    let mut scenario = crate::built_in("quickstart");
    let name = scenario.producers[0].name.clone();
    scenario.producers[0].enable_idempotence = Some(true);
    scenario.producers[0].acks = kafkascope_model::scenario::Acks::All;
    scenario.duration_ms = 10_000;
    scenario.timeline = vec![
        TimelineEntry {
            at_ms: 2_000,
            action: Action::SetProducer(
                name.clone(),
                ProducerSettings {
                    linger_ms: Some(50),
                    batch_size: Some(4096),
                    keys: Some(Keys::Sequence("order-".into())),
                    records_per_sec: Some(500),
                    ..ProducerSettings::default()
                },
            ),
        },
        // Idempotence was set on explicitly: acks=1 is refused, as `ProducerConfig` refuses it.
        TimelineEntry {
            at_ms: 3_000,
            action: Action::SetProducer(
                name.clone(),
                ProducerSettings {
                    acks: Some(kafkascope_model::scenario::Acks::One),
                    ..ProducerSettings::default()
                },
            ),
        },
        // Both at once is fine.
        TimelineEntry {
            at_ms: 4_000,
            action: Action::SetProducer(
                name.clone(),
                ProducerSettings {
                    acks: Some(kafkascope_model::scenario::Acks::One),
                    enable_idempotence: Some(Some(false)),
                    ..ProducerSettings::default()
                },
            ),
        },
    ];
    let report = crate::run(&scenario);
    let refused = refusals(&report);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, 3_000);
    assert!(
        refused[0].2.contains("idempotence needs acks=all"),
        "{refused:?}"
    );
    let p = &report.producers[0];
    assert_eq!((p.acks.as_str(), p.idempotent), ("1", false));
    // Keys of the new prefix were written after 2 s.
    assert!(report.events.iter().any(|e| matches!(&e.kind,
        EventKind::ProducerReconfigured { settings, .. } if settings.contains("order-"))));
    // 500 records/s from 2 s on: about 4000 more than the old rate would make.
    assert!(p.stats.sent > 4_000, "{:?}", p.stats);
}

#[test]
fn a_group_grows_and_shrinks_to_the_members_asked_for() {
    let mut scenario = crate::built_in("consumers");
    let group = scenario.consumer_groups[0].name.clone();
    scenario.timeline = vec![
        TimelineEntry {
            at_ms: 5_000,
            action: Action::SetGroupMembers(group.clone(), 5),
        },
        TimelineEntry {
            at_ms: 30_000,
            action: Action::SetGroupMembers(group.clone(), 1),
        },
    ];
    scenario.duration_ms = 60_000;
    let report = crate::run(&scenario);
    let members = report.consumer_groups[0]
        .assignment
        .as_object()
        .expect("an assignment")
        .len();
    assert_eq!(members, 1, "{:?}", report.consumer_groups[0].assignment);
    let added = report
        .events
        .iter()
        .filter(|e| e.at_ms == 5_000 && matches!(e.kind, EventKind::ConsumerAdded { .. }))
        .count();
    let before = scenario.consumer_groups[0].members as usize;
    assert_eq!(added, 5 - before);
    let removed = report
        .events
        .iter()
        .filter(|e| e.at_ms == 30_000 && matches!(e.kind, EventKind::ConsumerRemoved { .. }))
        .count();
    assert_eq!(removed, 4);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn eligible_leader_replicas_turned_off_empties_every_elr() {
    // KIP-966 keeps follower 2 electable when it leaves an ISR below min.insync.replicas; turned
    // off, the controller keeps no ELR.
    let scenario = crate::scenario(
        r#"(
        name: "elr", seed: 3, duration_ms: 60000,
        cluster: (brokers: 3, eligible_leader_replicas: true),
        topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 3,
                  assignment: Some([[1, 2, 3]]))],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 50)],
        timeline: [
            (at_ms: 5000, action: CrashBroker(2)),
            (at_ms: 40000, action: SetEligibleLeaderReplicas(false)),
        ],
    )"#,
    );
    let mut early = scenario.clone();
    early.duration_ms = 39_000;
    assert_eq!(crate::run(&early).partitions[0].elr, [2]);
    let report = crate::run(&scenario);
    assert!(
        report.partitions[0].elr.is_empty(),
        "{:?}",
        report.partitions[0]
    );
}

#[test]
fn a_rolling_restart_ends_on_the_preferred_leaders_and_nothing_was_ever_offline() {
    let report = crate::run(&crate::built_in("rolling-restart"));
    let done: Vec<u32> = report
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::RollingRestartBrokerDone { broker } => Some(broker),
            _ => None,
        })
        .collect();
    assert_eq!(done, [1, 2, 3]);
    assert!(
        report
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::RollingRestartDone))
    );
    // One broker at a time: each stops only once the one before is back in every ISR.
    let stops: Vec<u64> = report
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ControlledShutdownRequested { .. }))
        .map(|e| e.at_ms)
        .collect();
    let back: Vec<u64> = report
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RollingRestartBrokerDone { .. }))
        .map(|e| e.at_ms)
        .collect();
    assert_eq!(stops.len(), 3);
    assert!(
        stops[1] > back[0] && stops[2] > back[1],
        "{stops:?} {back:?}"
    );
    for p in &report.partitions {
        assert_eq!(p.leader, Some(p.replicas[0].broker), "{p:?}");
        assert_eq!(p.isr.len(), p.replicas.len(), "{p:?}");
    }
    let m = &report.metrics;
    assert_eq!((m.offline_partition_ms, m.dead_leader_ms), (0, 0), "{m:?}");
    assert_eq!(report.acked_records_lost, 0);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    assert!(report.brokers.iter().all(|b| b.state == "online"));

    // kill -9 instead: each broker's partitions keep a dead leader until its session expires.
    let crash = crate::run(&crate::built_in("rolling-restart-crash"));
    assert!(
        crash.metrics.dead_leader_ms > 3 * 6_000,
        "{:?}",
        crash.metrics
    );
    assert_eq!(crash.metrics.offline_partition_ms, 0);
    let timeouts = crash.producers[0].stats.errors.values().sum::<u64>();
    assert!(timeouts > 0, "{:?}", crash.producers[0].stats);
    assert_eq!(
        report.producers[0].stats.errors.get("REQUEST_TIMED_OUT"),
        None
    );
}

#[test]
fn a_rolling_restart_is_refused_while_a_broker_is_down_or_one_is_under_way() {
    use kafkascope_model::scenario::Stop;
    let mut scenario = crate::built_in("rolling-restart");
    let at = |at_ms: u64, action: Action| TimelineEntry { at_ms, action };
    scenario.timeline = vec![
        at(2_000, Action::CrashBroker(2)),
        at(3_000, Action::RollingRestart(Stop::Controlled)),
        at(3_000, Action::RestartBroker(2)),
        at(20_000, Action::RollingRestart(Stop::Controlled)),
        at(21_000, Action::RollingRestart(Stop::Crash)),
    ];
    let report = crate::run(&scenario);
    let refused: Vec<(u64, String)> = refusals(&report)
        .into_iter()
        .map(|(at, _, why)| (at, why))
        .collect();
    assert_eq!(
        refused,
        [
            (
                3_000,
                "broker 2 is crashed: a rolling restart starts with every broker online".into()
            ),
            (21_000, "a rolling restart is already under way".into()),
        ]
    );
}

/// The events of one partition's reassignment, in order, as (instant, what).
fn reassignment_steps(report: &Report) -> Vec<(u64, String)> {
    report
        .events
        .iter()
        .filter_map(|e| {
            let what = match &e.kind {
                EventKind::ReassignmentRequested {
                    partition: 0,
                    target,
                    ..
                } => {
                    format!("requested {target:?}")
                }
                EventKind::ReassignmentStarted {
                    partition: 0,
                    replicas,
                    adding,
                    removing,
                    ..
                } => format!("started {replicas:?} adding {adding:?} removing {removing:?}"),
                EventKind::IsrExpand {
                    partition: 0,
                    topic,
                    added,
                    ..
                } if topic == "orders" => {
                    format!("isr adds {added:?}")
                }
                EventKind::LeaderElected {
                    partition: 0,
                    topic,
                    leader,
                    reason,
                    ..
                } if topic == "orders" => {
                    format!("leader {leader} ({reason})")
                }
                EventKind::ReassignmentCompleted {
                    partition: 0,
                    replicas,
                    isr,
                    ..
                } => format!("completed {replicas:?} isr {isr:?}"),
                _ => return None,
            };
            Some((e.at_ms, what))
        })
        .collect()
}

#[test]
fn a_reassignment_goes_through_kafkas_steps_in_order() {
    // KIP-455 as `ReplicationControlManager` runs it: the replicas become the target followed by
    // those removed; the added replica copies the log outside the ISR and joins it; then the
    // reassignment completes (`PartitionChangeBuilder.maybeCompleteReassignment`), moving the
    // leadership first when the leader is removed.
    let scenario = crate::built_in("reassign");
    let report = crate::run(&scenario);
    let steps = reassignment_steps(&report);
    let whats: Vec<&str> = steps.iter().map(|(_, w)| w.as_str()).collect();
    assert_eq!(
        whats,
        [
            "requested [1, 2, 4]",
            "started [1, 2, 4] adding [4] removing []",
            "isr adds [4]",
            "completed [1, 2, 4] isr [1, 2, 4]",
            "requested [2, 4]",
            "started [2, 4, 1] adding [] removing [1]",
            "leader 2 (reassignment)",
            "completed [2, 4] isr [2, 4]",
        ]
    );
    let at: Vec<u64> = steps.iter().map(|(t, _)| *t).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    // The new replica needs time to copy 20 s of records from 20 ms farther away.
    assert!(at[2] > at[1] + 100, "{steps:?}");

    // Midway, the partition has three replicas and an ISR of two: under-replicated.
    let mut midway = scenario.clone();
    midway.duration_ms = at[1] + 50;
    let p = &crate::run(&midway).partitions[0];
    let brokers: Vec<u32> = p.replicas.iter().map(|r| r.broker).collect();
    assert_eq!((brokers, p.isr.clone()), (vec![1, 2, 4], vec![1, 2]));

    let p = &report.partitions[0];
    let brokers: Vec<u32> = p.replicas.iter().map(|r| r.broker).collect();
    assert_eq!((brokers, p.leader), (vec![2, 4], Some(2)));
    assert_eq!(report.acked_records_lost, 0);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn a_reassignment_is_refused_as_kafka_refuses_it() {
    for (target, why) in [
        ("[]", "includes an empty replica list."),
        (
            "[1, 9]",
            "includes broker 9, but no such broker is registered.",
        ),
        ("[2, 2]", "includes the broker 2 more than once."),
    ] {
        let source = format!(
            r#"(name: "x", cluster: (brokers: 3), topics: [(name: "t", replication_factor: 2)],
                timeline: [(at_ms: 10, action: Reassign("t", 0, {target}))])"#
        );
        let e = kafkascope_model::scenario::Scenario::parse(&source, "x.ron")
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("timeline[0].action") && e.contains(why),
            "{target}: {e}"
        );
    }
    // One at a time: a second while the first is under way is refused at its instant.
    let mut scenario = crate::built_in("reassign");
    scenario.timeline.push(TimelineEntry {
        at_ms: 20_010,
        action: Action::Reassign("orders".into(), 0, vec![3, 4]),
    });
    let refused = refusals(&crate::run(&scenario));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].2.contains("is under way"), "{refused:?}");
}

/// Every record in the topic's leaders' logs, as (partition, send id, key text).
fn keyed_records(sim: &kafkascope_model::sim::Sim, topic: &str) -> Vec<(u32, u64, String)> {
    use kafkascope_model::sim::producer::Producer;
    use kafkascope_model::sim::{Cluster, Partition, Replica};
    let world = sim.world();
    let cluster = world.resource::<Cluster>();
    let producer = world
        .get::<Producer>(cluster.producers[0])
        .expect("a producer");
    let topic = cluster
        .topics
        .iter()
        .find(|t| t.name == topic)
        .expect("topic");
    let mut out = Vec::new();
    for &entity in &topic.partitions {
        let p = world.get::<Partition>(entity).expect("partition");
        let leader = p.leader_replica().expect("a leader");
        let replica = world.get::<Replica>(leader).expect("replica");
        for record in replica.log.iter_from(0) {
            let key = producer.key_text(record.key).expect("keyed records");
            out.push((p.index, record.id(), key));
        }
    }
    out
}

#[test]
fn after_adding_partitions_keys_map_by_murmur2_of_the_new_count_and_both_protocols_consume_them() {
    use kafkascope_model::partitioner::partition_for_key;
    use kafkascope_model::scenario::GroupProtocol;
    for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
        let mut scenario = crate::built_in("add-partitions");
        scenario.consumer_groups[0].protocol = protocol;
        let mut sim = kafkascope_model::sim::Sim::new(&scenario);
        sim.run_until(scenario.duration_ms);
        let records = keyed_records(&sim, "orders");
        // The producer's first send that went to a new partition: every later send maps by
        // murmur2 % 4 (`BuiltInPartitioner.partitionForKey`), every earlier one by % 2.
        let learnt = records
            .iter()
            .filter(|(p, ..)| *p >= 2)
            .map(|(_, id, _)| *id)
            .min()
            .expect("records in the new partitions");
        let mut moved = 0;
        for (p, id, key) in &records {
            let count = if *id >= learnt { 4 } else { 2 };
            assert_eq!(
                partition_for_key(key.as_bytes(), count),
                *p,
                "{key} (send {id}) in orders-{p}"
            );
            moved += usize::from(*id >= learnt && partition_for_key(key.as_bytes(), 2) != *p);
        }
        assert!(moved > 1000, "keys moved to another partition: {moved}");
        let report = kafkascope_model::report::Report::of(&sim);
        let offsets = &report.consumer_groups[0].offsets;
        assert_eq!(offsets.len(), 4, "{protocol:?}: {offsets:?}");
        for o in offsets {
            assert!(
                o.committed.is_some_and(|c| c > 0),
                "{protocol:?}: the group consumes orders-{}: {o:?}",
                o.partition
            );
        }
        assert!(
            report.invariant_violations.is_empty(),
            "{:?}",
            report.invariant_violations
        );
        assert_eq!(report.acked_records_lost, 0);
    }
}

#[test]
fn fewer_partitions_are_refused_with_kafkas_reason() {
    let mut scenario = crate::built_in("add-partitions");
    for (at_ms, total) in [(30_000, 4), (31_000, 3)] {
        scenario.timeline.push(TimelineEntry {
            at_ms,
            action: Action::AddPartitions("orders".into(), total),
        });
    }
    let refused: Vec<String> = refusals(&crate::run(&scenario))
        .into_iter()
        .map(|(_, _, why)| why)
        .collect();
    assert_eq!(
        refused,
        [
            "Topic already has 4 partition(s).",
            "The topic orders currently has 4 partition(s); 3 would not be an increase.",
        ]
    );
}

#[test]
fn an_added_broker_registers_hosts_nothing_and_takes_a_reassigned_replica() {
    let scenario = crate::scenario(
        r#"(
        name: "grow", seed: 5, duration_ms: 40000,
        cluster: (brokers: 3),
        topics: [(name: "orders", partitions: 3, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "orders", acks: All, records_per_sec: 500, keys: Sequence("k"))],
        timeline: [
            (at_ms: 3000, action: ControlledShutdown(4)),
            (at_ms: 5000, action: AddBroker),
            (at_ms: 10000, action: Reassign("orders", 0, [4, 2, 3])),
        ],
    )"#,
    );
    let mut early = scenario.clone();
    early.duration_ms = 9_000;
    let report = crate::run(&early);
    assert_eq!(report.brokers.len(), 4);
    assert_eq!(report.brokers[3].state, "online");
    // Nothing moves onto a new broker by itself.
    assert!(
        report
            .partitions
            .iter()
            .all(|p| p.replicas.iter().all(|r| r.broker != 4))
    );
    let registered = report
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::BrokerRegistered { broker: 4 }))
        .expect("registered")
        .at_ms;
    assert!(registered < 5_100, "{registered}");
    let report = crate::run(&scenario);
    let refused = refusals(&report);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].2, "broker 4 does not exist");
    let p = &report.partitions[0];
    assert_eq!(
        p.leader,
        Some(4),
        "leader 1 was removed: the first target replica in the ISR leads: {p:?}"
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

/// `PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`: a reassignment
/// that removes a replica bumps the leader epoch even when the leader stays, so the removed one
/// is fenced from it; one that only adds replicas does not.
#[test]
fn a_reassignment_that_removes_a_follower_bumps_the_leader_epoch() {
    let scenario = crate::scenario(
        r#"(name: "bump", seed: 3, duration_ms: 30000, cluster: (brokers: 3),
            topics: [(name: "t", partitions: 1, replication_factor: 2, assignment: Some([[1, 2]]))],
            producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Sequence("k"))],
            timeline: [
                (at_ms: 5000, action: Reassign("t", 0, [1, 2, 3])),
                (at_ms: 15000, action: Reassign("t", 0, [1, 3])),
            ])"#,
    );
    let mut added = scenario.clone();
    added.duration_ms = 14_000;
    let p = &crate::run(&added).partitions[0];
    assert_eq!((p.leader, p.leader_epoch), (Some(1), 0), "{p:?}");
    let report = crate::run(&scenario);
    let p = &report.partitions[0];
    let brokers: Vec<u32> = p.replicas.iter().map(|r| r.broker).collect();
    assert_eq!(brokers, [1, 3]);
    assert_eq!((p.leader, p.leader_epoch), (Some(1), 1), "{p:?}");
    assert_eq!(report.acked_records_lost, 0);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}
