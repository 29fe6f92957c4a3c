//! Consumer groups: Kafka's assignors, the group protocol, offsets and lag.

use std::collections::BTreeMap;

use kafkascope_model::assignor::{Assignor, Member, assign, to_json};
use kafkascope_model::report::Report;
use kafkascope_model::scenario::Scenario;
use serde_json::json;

fn member(id: &str, topics: &[&str]) -> Member {
    Member {
        id: id.into(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned: Vec::new(),
    }
}

fn topics(list: &[(&str, u32)]) -> BTreeMap<String, u32> {
    list.iter().map(|(t, n)| (t.to_string(), *n)).collect()
}

#[test]
fn range_assignor_matches_kafkas_examples() {
    let a = assign(
        Assignor::Range,
        &topics(&[("t1", 3), ("t2", 3)]),
        &[member("c1", &["t1", "t2"]), member("c2", &["t1", "t2"])],
    );
    assert_eq!(
        to_json(&a),
        json!({"c1": ["t1-0", "t1-1", "t2-0", "t2-1"], "c2": ["t1-2", "t2-2"]})
    );
    let a = assign(
        Assignor::Range,
        &topics(&[("t1", 3), ("t2", 2)]),
        &[
            member("c1", &["t1"]),
            member("c2", &["t1", "t2"]),
            member("c3", &["t1"]),
        ],
    );
    assert_eq!(
        to_json(&a),
        json!({"c1": ["t1-0"], "c2": ["t1-1", "t2-0", "t2-1"], "c3": ["t1-2"]})
    );
}

#[test]
fn round_robin_assignor_matches_kafkas_example() {
    let a = assign(
        Assignor::RoundRobin,
        &topics(&[("t1", 3), ("t2", 3)]),
        &[member("c2", &["t1", "t2"]), member("c1", &["t1", "t2"])],
    );
    assert_eq!(
        to_json(&a),
        json!({"c1": ["t1-0", "t1-2", "t2-1"], "c2": ["t1-1", "t2-0", "t2-2"]})
    );
    // Members not subscribed to a topic are skipped (RoundRobinAssignorTest's unequal case).
    let a = assign(
        Assignor::RoundRobin,
        &topics(&[("t1", 1), ("t2", 2), ("t3", 3)]),
        &[
            member("c0", &["t1"]),
            member("c1", &["t1", "t2"]),
            member("c2", &["t1", "t2", "t3"]),
        ],
    );
    assert_eq!(
        to_json(&a),
        json!({"c0": ["t1-0"], "c1": ["t2-0"], "c2": ["t2-1", "t3-0", "t3-1", "t3-2"]})
    );
}

/// `ConstrainedAssignmentBuilder`, with `AbstractStickyAssignorTest`'s cases whose outcome does
/// not hang on the order Kafka's hash map lists members in (the model's is by member id).
#[test]
fn sticky_assignor_matches_kafkas_examples() {
    // testAllConsumersAreUnderMinQuota: 5 partitions, quotas 1 to 2; the members under the
    // minimum are filled first, then those at it up to the maximum.
    let t = topics(&[("topic1", 2), ("topic2", 3)]);
    let members = owning(
        &[
            ("c1", &[("topic1", 0)]),
            ("c2", &[("topic1", 1)]),
            ("c3", &[]),
        ],
        &t,
    );
    for assignor in [Assignor::Sticky, Assignor::CooperativeSticky] {
        assert_eq!(
            to_json(&assign(assignor, &t, &members)),
            json!({"c1": ["topic1-0", "topic2-1"], "c2": ["topic1-1", "topic2-2"], "c3": ["topic2-0"]}),
            "{assignor:?}"
        );
    }
    // testConsumerOwningMinQuotaExpectedMaxQuota: both keep what they own; the one partition
    // left goes to the first at the minimum.
    let members = owning(
        &[
            ("c1", &[("topic1", 0), ("topic2", 1)]),
            ("c2", &[("topic1", 1), ("topic2", 2)]),
        ],
        &t,
    );
    assert_eq!(
        to_json(&assign(Assignor::CooperativeSticky, &t, &members)),
        json!({"c1": ["topic1-0", "topic2-0", "topic2-1"], "c2": ["topic1-1", "topic2-2"]})
    );
    // testAllConsumersReachExpectedQuotaAndAreConsideredFilled.
    let t = topics(&[("topic", 4)]);
    let members = owning(
        &[
            ("c1", &[("topic", 0), ("topic", 1)]),
            ("c2", &[("topic", 2)]),
            ("c3", &[]),
        ],
        &t,
    );
    assert_eq!(
        to_json(&assign(Assignor::CooperativeSticky, &t, &members)),
        json!({"c1": ["topic-0", "topic-1"], "c2": ["topic-2"], "c3": ["topic-3"]})
    );
    // testAddRemoveConsumerOneTopic: c2 joins; c1 keeps its first two partitions (by partition
    // number) and gives up topic-2, which a cooperative c2 gets only in the next round.
    let t = topics(&[("topic", 3)]);
    let first = assign(Assignor::Sticky, &t, &owning(&[("c1", &[])], &t));
    assert_eq!(
        to_json(&first),
        json!({"c1": ["topic-0", "topic-1", "topic-2"]})
    );
    let members = owning(
        &[
            ("c1", &[("topic", 0), ("topic", 1), ("topic", 2)]),
            ("c2", &[]),
        ],
        &t,
    );
    assert_eq!(
        to_json(&assign(Assignor::Sticky, &t, &members)),
        json!({"c1": ["topic-0", "topic-1"], "c2": ["topic-2"]})
    );
    assert_eq!(
        to_json(&assign(Assignor::CooperativeSticky, &t, &members)),
        json!({"c1": ["topic-0", "topic-1"], "c2": []})
    );
    let members = owning(&[("c1", &[("topic", 0), ("topic", 1)]), ("c2", &[])], &t);
    assert_eq!(
        to_json(&assign(Assignor::CooperativeSticky, &t, &members)),
        json!({"c1": ["topic-0", "topic-1"], "c2": ["topic-2"]}),
        "the follow-up round gives the revoked partition to c2 and moves nothing else"
    );
    // c1 leaves: c2 keeps its partition and takes the rest.
    let members = owning(&[("c2", &[("topic", 2)])], &t);
    assert_eq!(
        to_json(&assign(Assignor::CooperativeSticky, &t, &members)),
        json!({"c2": ["topic-0", "topic-1", "topic-2"]})
    );
}

/// A group's rounds after membership changes, run through the assignor alone: each member owns
/// what the last round gave it (a cooperative member gives up what it lost, an eager sticky one
/// reports its last assignment, a uniform member holds its part of the target). Returns how many
/// rounds the last change took to settle, that is until a round takes nothing from anyone.
fn rounds_to_settle(assignor: Assignor, seed: u64) -> usize {
    let mut rng = kafkascope_model::sim::SimRng::new(seed);
    let t = topics(&[("a", 1 + rng.below(7) as u32), ("b", rng.below(6) as u32)]);
    let mut owned: BTreeMap<String, Vec<(String, u32)>> = BTreeMap::new();
    let mut next_id = 0;
    let mut rounds = 0;
    for _ in 0..12 {
        // A join or a leave, then rounds until nothing moves.
        if owned.len() < 2 || rng.below(3) > 0 {
            next_id += 1;
            owned.insert(format!("m{next_id:02}"), Vec::new());
        } else {
            let leaving = owned.keys().nth(rng.below(owned.len() as u64) as usize);
            let leaving = leaving.expect("a member").clone();
            owned.remove(&leaving);
        }
        rounds = 0;
        loop {
            rounds += 1;
            assert!(
                rounds <= 5,
                "{assignor:?} seed {seed}: no end to the rounds"
            );
            let members: Vec<Member> = owned
                .iter()
                .map(|(id, o)| Member {
                    id: id.clone(),
                    topics: vec!["a".into(), "b".into()],
                    owned: o.clone(),
                })
                .collect();
            let assignment = assign(assignor, &t, &members);
            let revoked = members
                .iter()
                .any(|m| m.owned.iter().any(|tp| !assignment[&m.id].contains(tp)));
            let all: usize = t.values().map(|n| *n as usize).sum();
            let given: usize = assignment.values().map(Vec::len).sum();
            for (id, partitions) in assignment {
                owned.insert(id, partitions);
            }
            if !revoked {
                // Settled: every partition has an owner, none two, and the counts differ by
                // one at most.
                assert_eq!(given, all, "{assignor:?} seed {seed}: {owned:?}");
                let sizes: Vec<usize> = owned.values().map(Vec::len).collect();
                let (min, max) = (sizes.iter().min(), sizes.iter().max());
                assert!(
                    max.unwrap() - min.unwrap() <= 1,
                    "{assignor:?} seed {seed}: {owned:?}"
                );
                break;
            }
        }
    }
    rounds
}

/// `CooperativeStickyAssignor`: after any join or leave, the round that takes partitions from
/// their owners is followed by one that only hands them out, and then nothing moves. Eager
/// sticky and the uniform assignor reach the same assignment again at once.
#[test]
fn after_any_join_or_leave_a_cooperative_group_settles_within_two_rounds() {
    for seed in 0..300 {
        assert!(rounds_to_settle(Assignor::CooperativeSticky, seed) <= 2);
        assert!(rounds_to_settle(Assignor::Sticky, seed) <= 2);
        assert!(rounds_to_settle(Assignor::Uniform, seed) <= 2);
    }
}

fn owning(members: &[(&str, &[(&str, u32)])], t: &BTreeMap<String, u32>) -> Vec<Member> {
    members
        .iter()
        .map(|(id, owned)| Member {
            owned: owned.iter().map(|(t, p)| (t.to_string(), *p)).collect(),
            ..member(id, &t.keys().map(String::as_str).collect::<Vec<_>>())
        })
        .collect()
}

/// The consumer protocol's uniform assignor, with `OptimizedUniformAssignmentBuilderTest`'s
/// cases. Kafka lists topics in its topic-id set's order, here topic3 before topic1 and topic2
/// before topic1; the model lists them by name, so those topics are named so as to sort first.
#[test]
fn uniform_assignor_matches_kafkas_examples() {
    // testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks (topic3 is "a-topic3").
    let t = topics(&[("topic1", 3), ("a-topic3", 2)]);
    let first = assign(
        Assignor::Uniform,
        &t,
        &owning(&[("A", &[]), ("B", &[])], &t),
    );
    assert_eq!(
        to_json(&first),
        json!({"A": ["a-topic3-0", "a-topic3-1", "topic1-0"], "B": ["topic1-1", "topic1-2"]})
    );
    // testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics: the
    // members keep up to their quota (2 each), and what they give back goes to C.
    let t = topics(&[("topic1", 3), ("topic2", 3)]);
    let members = owning(
        &[
            ("A", &[("topic1", 0), ("topic1", 2), ("topic2", 0)]),
            ("B", &[("topic1", 1), ("topic2", 1), ("topic2", 2)]),
            ("C", &[]),
        ],
        &t,
    );
    assert_eq!(
        to_json(&assign(Assignor::Uniform, &t, &members)),
        json!({"A": ["topic1-0", "topic1-2"], "B": ["topic1-1", "topic2-1"], "C": ["topic2-0", "topic2-2"]})
    );
    // testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics (topic2
    // is "a-topic2"): C's partitions go to A and B, nothing else moves.
    let t = topics(&[("topic1", 3), ("a-topic2", 3)]);
    let members = owning(
        &[
            ("A", &[("topic1", 0), ("a-topic2", 0)]),
            ("B", &[("topic1", 1), ("a-topic2", 1)]),
        ],
        &t,
    );
    assert_eq!(
        to_json(&assign(Assignor::Uniform, &t, &members)),
        json!({"A": ["a-topic2-0", "a-topic2-2", "topic1-0"], "B": ["a-topic2-1", "topic1-1", "topic1-2"]})
    );
}

fn group(report: &Report) -> &kafkascope_model::report::GroupReport {
    &report.consumer_groups[0]
}

pub fn no_violations(report: &Report) {
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

/// How many members the group's current assignment names.
fn assigned_members(report: &Report) -> usize {
    group(report).assignment.as_object().map_or(0, |m| m.len())
}

#[test]
fn a_group_faster_than_its_producer_ends_with_no_lag() {
    let report = crate::run(&crate::built_in("consumers"));
    let g = group(&report);
    assert_eq!(g.generation, 1);
    assert_eq!(
        g.assignment,
        json!({"billing-1": ["orders-0", "orders-1"], "billing-2": ["orders-2", "orders-3"]})
    );
    for o in &g.offsets {
        assert!(o.high_watermark > 1000);
        assert_eq!(o.committed, Some(o.high_watermark), "{o:?}");
        assert_eq!(o.lag, Some(0));
    }
    let max_lag = g.max_lag.expect("lag is known once the group commits");
    assert!(max_lag > 0 && max_lag < 1000, "max lag {max_lag}");
    // The coordinator is the leader of __consumer_offsets partition abs(hash("billing")) % 50.
    let p = kafkascope_model::partitioner::offsets_partition_for_group("billing", 50);
    assert!(
        report
            .partitions
            .iter()
            .any(|x| x.topic == "__consumer_offsets" && x.partition == p)
    );
    no_violations(&report);
}

#[test]
fn cooperative_rebalancing_pauses_less_than_eager_under_the_same_storm() {
    let eager = crate::run(&crate::built_in("rebalance-storm"));
    let cooperative = crate::run(&crate::built_in("rebalance-storm-cooperative"));
    let (e, c) = (group(&eager), group(&cooperative));
    assert!(e.rebalances >= 5, "eager rebalances {}", e.rebalances);
    assert!(
        c.rebalances > e.rebalances,
        "cooperative needs follow-up rebalances"
    );
    assert!(
        c.paused_ms * 2 < e.paused_ms,
        "paused: cooperative {} eager {}",
        c.paused_ms,
        e.paused_ms
    );
    assert!(e.max_lag > Some(1000), "the storm builds lag");
    for r in [&eager, &cooperative] {
        no_violations(r);
        let started = r
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    kafkascope_model::sim::EventKind::RebalanceStarted { .. }
                )
            })
            .count() as u64;
        assert_eq!(started, group(r).rebalances);
    }
}

#[test]
fn a_static_member_that_returns_within_its_session_causes_no_rebalance() {
    let base = r#"(
        name: "static", seed: 3, duration_ms: 40000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 4, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 100, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, static_members: STATIC,
                           session_timeout_ms: 20000, auto_offset_reset: Earliest)],
        timeline: [
            (at_ms: 10000, action: CrashConsumer("g")),
            (at_ms: 15000, action: AddConsumer("g")),
        ],
    )"#;
    let dynamic = crate::run(&crate::scenario(&base.replace("STATIC", "false")));
    let fixed = crate::run(&crate::scenario(&base.replace("STATIC", "true")));
    assert_eq!(group(&fixed).rebalances, 1, "only the first join");
    assert!(
        group(&dynamic).rebalances >= 2,
        "a new dynamic member rebalances"
    );
    no_violations(&fixed);
}

#[test]
fn a_consumer_in_a_rack_reads_from_the_in_sync_replica_there() {
    let scenario = crate::scenario(
        r#"(
        name: "racks", seed: 8, duration_ms: 20000,
        cluster: (brokers: 3, broker_racks: Some(["a", "b", "c"]), rack_aware_replica_selector: true),
        topics: [(name: "t", partitions: 1, replication_factor: 3, assignment: Some([[1, 2, 3]]))],
        producers: [(name: "p", topic: "t", records_per_sec: 100, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], rack: Some("c"), auto_offset_reset: Earliest)],
    )"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    let mut from_follower = 0;
    let mut seen = 0;
    while sim.now_ms() < scenario.duration_ms {
        sim.step();
        let wires = &sim
            .world()
            .resource::<kafkascope_model::sim::Runtime>()
            .wires;
        for message in wires.iter() {
            if !matches!(
                message.payload,
                kafkascope_model::sim::Payload::ConsumerFetch(_)
            ) {
                continue;
            }
            seen += 1;
            if message.wire.to == kafkascope_model::sim::Node::Broker(3) {
                from_follower += 1;
            }
        }
    }
    assert!(seen > 0);
    assert_eq!(
        from_follower, seen,
        "every fetch goes to broker 3, in rack c"
    );
    let report = Report::of(&sim);
    assert!(group(&report).offsets[0].committed.unwrap_or(0) > 1000);
    no_violations(&report);
}

#[test]
fn committing_after_each_batch_keeps_committed_offsets_closer() {
    let auto = crate::built_in("consumers");
    let mut per_batch = auto.clone();
    per_batch.consumer_groups[0].commit_after_each_batch = true;
    let lag_at = |scenario: &kafkascope_model::scenario::Scenario, at: u64| -> u64 {
        let mut sim = kafkascope_model::sim::Sim::new(scenario);
        let mut total = 0;
        // Summed over a few instants, so the phase of the 5 s commit timer does not decide.
        for k in 0..10 {
            sim.run_until(at + k * 700);
            total += group(&Report::of(&sim))
                .offsets
                .iter()
                .map(|o| o.lag.expect("committed"))
                .sum::<u64>();
        }
        total
    };
    let (a, b) = (lag_at(&auto, 20_000), lag_at(&per_batch, 20_000));
    assert!(b * 3 < a, "committed lag: per batch {b}, every 5 s {a}");
}

#[test]
fn the_group_survives_its_coordinator_broker_crashing() {
    let base = crate::built_in("consumers");
    let p = kafkascope_model::partitioner::offsets_partition_for_group("billing", 50);
    let mut sim = kafkascope_model::sim::Sim::new(&base);
    sim.run_until(10_000);
    let coordinator = Report::of(&sim)
        .partitions
        .iter()
        .find(|x| x.topic == "__consumer_offsets" && x.partition == p)
        .and_then(|x| x.leader)
        .expect("the offsets partition has a leader");
    let mut scenario = base.clone();
    scenario
        .timeline
        .push(kafkascope_model::scenario::TimelineEntry {
            at_ms: 15_000,
            action: kafkascope_model::scenario::Action::CrashBroker(coordinator),
        });
    let report = crate::run(&scenario);
    let moved = report
        .partitions
        .iter()
        .find(|x| x.topic == "__consumer_offsets" && x.partition == p)
        .unwrap();
    assert_ne!(moved.leader, Some(coordinator), "the coordinator moved");
    assert!(moved.leader.is_some());
    for o in &group(&report).offsets {
        assert_eq!(
            o.committed,
            Some(o.high_watermark),
            "the group caught up again: {o:?}"
        );
    }
    no_violations(&report);
}

#[test]
fn a_member_that_does_not_poll_within_max_poll_interval_leaves_and_rejoins() {
    // Each member needs 500 records / 20 per s = 25 s per poll, more than the 10 s allowed.
    let slow = r#"(
        name: "slow", seed: 6, duration_ms: 60000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 2, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 200, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: RATE,
                           max_poll_interval_ms: 10000, auto_offset_reset: Earliest)],
    )"#;
    let slow_report = crate::run(&crate::scenario(&slow.replace("RATE", "20")));
    let fast_report = crate::run(&crate::scenario(&slow.replace("RATE", "2000")));
    assert_eq!(group(&fast_report).rebalances, 1);
    assert!(
        group(&slow_report).rebalances >= 4,
        "rebalances: {}",
        group(&slow_report).rebalances
    );
    no_violations(&slow_report);
}

/// Records each member processed while it was itself rejoining (JoinGroup or SyncGroup in
/// flight at two samples in a row), over the storm's first join (at 15 s) and leave (at 20 s).
fn processed_while_rejoining(name: &str) -> (u64, u64) {
    use kafkascope_model::sim::cluster::Cluster;
    use kafkascope_model::sim::consumer::{Consumer, MemberState};
    let scenario = crate::built_in(name);
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.run_until(15_000);
    let members = |sim: &kafkascope_model::sim::Sim| -> Vec<(bool, u64)> {
        let world = sim.world();
        world
            .resource::<Cluster>()
            .consumers
            .iter()
            .filter_map(|e| world.get::<Consumer>(*e))
            .map(|c| {
                let rejoining =
                    c.alive && matches!(c.state, MemberState::Joining | MemberState::Syncing);
                (rejoining, c.processed_total)
            })
            .collect()
    };
    let (mut processed, mut rejoining_ms) = (0, 0);
    let mut before = members(&sim);
    for t in 15_001..=24_000 {
        sim.run_until(t);
        let now = members(&sim);
        for ((was, a), (is, b)) in before.iter().zip(&now) {
            if *was && *is {
                processed += b - a;
                rejoining_ms += 1;
            }
        }
        before = now;
    }
    (processed, rejoining_ms)
}

/// KIP-429: a cooperative member goes on fetching and processing the partitions it keeps while
/// it rejoins (`ClassicKafkaConsumer.poll` does not wait for the rebalance); an eager member
/// gave every partition up before rejoining (`ConsumerCoordinator.onJoinPrepare`), so it
/// processes nothing until its new assignment arrives.
#[test]
fn cooperative_members_keep_consuming_while_they_rejoin() {
    let (eager, eager_ms) = processed_while_rejoining("rebalance-storm");
    let (cooperative, cooperative_ms) = processed_while_rejoining("rebalance-storm-cooperative");
    assert!(eager_ms > 0 && cooperative_ms > 0, "both groups rebalance");
    assert_eq!(eager, 0, "an eager member owns nothing while it rejoins");
    assert!(
        cooperative > 100,
        "cooperative members processed {cooperative} records while rejoining, over {cooperative_ms} member-ms"
    );
}

/// `max.poll.interval.ms` counts from the last `poll()`, and each poll hands out at most
/// `max.poll.records` (`ClassicKafkaConsumer.poll`, `FetchCollector.collectFetch`): a member that
/// falls behind on two partitions but finishes each poll's batch in time stays in the group,
/// however long its backlog.
#[test]
fn a_member_behind_on_two_partitions_that_polls_in_time_stays_in_the_group() {
    // 500 records at 100 per s: a poll every 5 s, within the 10 s allowed, while the producer's
    // 200 per s makes the backlog grow without end.
    let report = crate::run(&crate::scenario(
        r#"(
        name: "behind", seed: 4, duration_ms: 60000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 2, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 200, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], records_per_sec: 100,
                           max_poll_interval_ms: 10000, auto_offset_reset: Earliest)],
    )"#,
    ));
    let g = group(&report);
    assert_eq!(g.rebalances, 1, "only the first join");
    let lag: u64 = g.offsets.iter().filter_map(|o| o.lag).sum();
    assert!(lag > 3000, "the member fell behind: lag {lag}");
    // Both partitions advance: the polls take from each in turn, not one partition first.
    for o in &g.offsets {
        assert!(o.committed.unwrap_or(0) > 1000, "{o:?}");
    }
    no_violations(&report);
}

/// A member asked to rejoin (its heartbeat answered REBALANCE_IN_PROGRESS) finishes the batch in
/// hand and sends its JoinGroup at its next poll (`HeartbeatResponseHandler` only calls
/// `requestRejoin`); it never sends one while it holds records.
#[test]
fn a_member_rejoins_at_its_next_poll_after_the_batch_in_hand() {
    use kafkascope_model::sim::cluster::Cluster;
    use kafkascope_model::sim::consumer::{Consumer, MemberState};
    // 500 records at 50 per s: 10 s a batch.
    let scenario = crate::scenario(
        r#"(
        name: "rejoin", seed: 5, duration_ms: 60000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 2, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 200, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: 50,
                           auto_offset_reset: Earliest)],
        timeline: [(at_ms: 20000, action: AddConsumer("g"))],
    )"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.run_until(20_000);
    let states = |sim: &kafkascope_model::sim::Sim| -> Vec<(MemberState, bool)> {
        let world = sim.world();
        world
            .resource::<Cluster>()
            .consumers
            .iter()
            .filter_map(|e| world.get::<Consumer>(*e))
            .map(|c| (c.state, c.in_hand.is_empty()))
            .collect()
    };
    let mut before = states(&sim);
    let mut rejoined_at = Vec::new();
    while sim.now_ms() < 45_000 {
        sim.step();
        let now = states(&sim);
        for (i, ((was, _), (is, empty))) in before.iter().zip(&now).enumerate() {
            if *was == MemberState::Stable && *is == MemberState::Joining {
                assert!(empty, "member {i} sent its JoinGroup with records in hand");
                rejoined_at.push(sim.now_ms());
            }
        }
        before = now;
    }
    assert_eq!(rejoined_at.len(), 2, "both old members rejoined once");
    // The heartbeat that learns of the rebalance comes within 3 s; the JoinGroup waits for
    // the batch in hand, up to 10 s.
    assert!(
        rejoined_at.iter().any(|t| *t > 20_000 + 3_000),
        "a member rejoined only after its batch: {rejoined_at:?}"
    );
    let report = Report::of(&sim);
    no_violations(&report);
}

/// A member that closes while its JoinGroup waits at the coordinator sends LeaveGroup at once
/// (`AbstractCoordinator.maybeLeaveGroup`), so the rebalance under way goes on without it: one
/// rebalance, not a second after the first completes.
#[test]
fn a_member_that_closes_during_a_rebalance_leaves_at_once() {
    let report = crate::run(&crate::scenario(
        r#"(
        name: "leave", seed: 7, duration_ms: 40000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 4, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 100, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: 50,
                           auto_offset_reset: Earliest)],
        timeline: [
            (at_ms: 20000, action: AddConsumer("g")),
            (at_ms: 20500, action: RemoveConsumer("g")),
        ],
    )"#,
    ));
    let g = group(&report);
    assert_eq!(
        g.rebalances, 2,
        "the first join and the one the new member started"
    );
    assert_eq!(assigned_members(&report), 2, "{}", g.assignment);
    no_violations(&report);
}

/// A rebalance that waits for a slow member longer than `session.timeout.ms` removes no member
/// that waits in it (`ClassicGroupMember.hasSatisfiedHeartbeat`): their clients send no heartbeat
/// while their JoinGroup is parked, and the new member's JoinGroup may wait 5 minutes
/// (`group.classic.new.member.join.timeout.ms`).
#[test]
fn members_waiting_in_a_join_are_not_expired() {
    // 500 records at 25 per s: 20 s a batch, twice the session timeout.
    let report = crate::run(&crate::scenario(
        r#"(
        name: "waiting", seed: 9, duration_ms: 80000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 4, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 200, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: 25,
                           session_timeout_ms: 10000, heartbeat_interval_ms: 3000,
                           auto_offset_reset: Earliest)],
        timeline: [(at_ms: 20000, action: AddConsumer("g"))],
    )"#,
    ));
    let g = group(&report);
    assert_eq!(
        g.rebalances, 2,
        "the first join and the new member's, nobody expired"
    );
    assert_eq!(assigned_members(&report), 3, "{}", g.assignment);
    no_violations(&report);
}

/// How many times each partition of the group paused, in the group's partition order.
fn pauses(report: &Report) -> Vec<u64> {
    group(report).offsets.iter().map(|o| o.pauses).collect()
}

/// A storm of joins and leaves: an eager member gives up every partition before it rejoins
/// (`ConsumerCoordinator.onJoinPrepare`), so every partition pauses at every rebalance; a
/// cooperative member keeps what it keeps (KIP-429), and so does a consumer-protocol member
/// (KIP-848, `CurrentAssignmentBuilder`), so only the partitions that move pause.
#[test]
fn in_a_storm_only_the_partitions_that_move_pause_in_cooperative_and_consumer_protocol_groups() {
    let eager = crate::run(&crate::built_in("rebalance-storm"));
    let cooperative = crate::run(&crate::built_in("rebalance-storm-cooperative"));
    let consumer = crate::run(&crate::built_in("rebalance-storm-consumer-protocol"));
    let (e, c, k) = (pauses(&eager), pauses(&cooperative), pauses(&consumer));
    // The first join is not a pause; each rebalance after it is one for every partition.
    let rebalances = group(&eager).rebalances - 1;
    assert!(
        e.iter().all(|p| *p == rebalances),
        "every eager partition pauses at every rebalance: {e:?} over {rebalances} rebalances"
    );
    let (e_total, c_total, k_total): (u64, u64, u64) =
        (e.iter().sum(), c.iter().sum(), k.iter().sum());
    assert!(
        c_total * 10 <= e_total * 4 && k_total * 10 <= e_total * 4,
        "pauses: cooperative {c_total}, consumer protocol {k_total}, eager {e_total}"
    );
    // Every join and leave moves partitions in the consumer protocol, with no barrier that
    // gathers them into one rebalance: some do pause, and the group epoch counts each change.
    assert!(k_total > 0, "{k:?}");
    assert_eq!(group(&consumer).protocol, "consumer");
    let epochs = group(&consumer).epochs.as_ref().expect("epochs");
    assert_eq!(epochs.group_epoch, group(&consumer).generation);
    assert_eq!(epochs.target_assignment_epoch, epochs.group_epoch);
    assert!(
        epochs.members.values().all(|e| *e == epochs.group_epoch),
        "{epochs:?}"
    );
    for r in [&eager, &cooperative, &consumer] {
        no_violations(r);
    }
    assert_eq!(
        group(&eager).paused_ms,
        group(&eager)
            .offsets
            .iter()
            .map(|o| o.paused_ms)
            .sum::<u64>()
    );
}

/// A member crashes, then another joins: the join phase waits for the dead member until its
/// session times out (45 s). The eager members gave up everything to rejoin, so the whole group
/// stalls; cooperative members go on with what they own, and only the dead member's partitions
/// wait.
#[test]
fn after_a_crash_only_the_dead_members_partitions_stall_in_a_cooperative_group() {
    let base = r#"(
        name: "crash-then-join", seed: 12, duration_ms: 70000,
        cluster: (brokers: 3),
        topics: [(name: "t", partitions: 6, replication_factor: 3)],
        producers: [(name: "p", topic: "t", records_per_sec: 300, keys: Random(1000))],
        consumer_groups: [(name: "g", topics: ["t"], members: 3, assignor: ASSIGNOR,
                           records_per_sec: 400, auto_offset_reset: Earliest)],
        timeline: [
            (at_ms: 10000, action: CrashConsumer("g")),
            (at_ms: 15000, action: AddConsumer("g")),
        ],
    )"#;
    let eager = crate::run(&crate::scenario(&base.replace("ASSIGNOR", "Range")));
    let cooperative = crate::run(&crate::scenario(
        &base.replace("ASSIGNOR", "CooperativeSticky"),
    ));
    // The consumer protocol's session is the broker's group.consumer.session.timeout.ms, 45 s.
    let consumer = crate::run(&crate::scenario(
        &base.replace("assignor: ASSIGNOR", "protocol: Consumer"),
    ));
    let paused =
        |r: &Report| -> Vec<u64> { group(r).offsets.iter().map(|o| o.paused_ms).collect() };
    let (e, c, k) = (paused(&eager), paused(&cooperative), paused(&consumer));
    // From the members' rejoining (within a heartbeat of 15 s) to the dead member's session
    // expiring (10 s + 45 s).
    assert!(
        e.iter().all(|p| *p > 35_000),
        "every eager partition stalls: {e:?}"
    );
    // The dead member's two partitions wait for its session to expire. The cooperative group
    // moves one partition to the new member through a follow-up rebalance; the consumer-protocol
    // group asks the dead member to give one up, which it never does, so the new member gets it
    // only when the dead one is fenced.
    for (name, p) in [("cooperative", &c), ("consumer protocol", &k)] {
        let stalled = p.iter().filter(|p| **p > 35_000).count();
        assert_eq!(
            stalled, 2,
            "{name}: the dead member's two partitions: {p:?}"
        );
        assert!(
            p.iter().filter(|p| **p <= 35_000).all(|p| *p < 10_000),
            "{name}: the others pause for a moment at most: {p:?}"
        );
    }
    for r in [&eager, &cooperative, &consumer] {
        no_violations(r);
    }
}

/// Before a group's first commit its committed offset and lag are unknown, as
/// `kafka-consumer-groups` prints them ("-"), and `max_lag` is not taken from them.
#[test]
fn lag_is_unknown_before_the_first_commit() {
    let scenario = crate::built_in("consumers");
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.run_until(2_000);
    let report = Report::of(&sim);
    let g = group(&report);
    assert!(
        !g.offsets.is_empty(),
        "every partition is listed from the start"
    );
    for o in &g.offsets {
        assert_eq!((o.committed, o.lag, o.max_lag), (None, None, None), "{o:?}");
    }
    assert_eq!(g.max_lag, None);
    sim.run_until(20_000);
    let report = Report::of(&sim);
    for o in &group(&report).offsets {
        let (Some(committed), Some(lag)) = (o.committed, o.lag) else {
            panic!("committed by 20 s: {o:?}");
        };
        assert_eq!(lag, o.high_watermark - committed);
    }
}

/// KIP-848's reconciliation, watched at every millisecond of the consumer-protocol storm: no
/// partition is ever held by two live members at once, and each member gives partitions up and
/// takes partitions in separate steps, taking only at a later member epoch than the one it
/// gave up at (`CurrentAssignmentBuilder`: revoke first, then the next epoch; a partition is
/// assigned once its previous owner has released it).
#[test]
fn consumer_protocol_members_revoke_before_they_are_assigned_and_never_share_a_partition() {
    use kafkascope_model::sim::cluster::Cluster;
    use kafkascope_model::sim::consumer::Consumer;
    use std::collections::BTreeSet;
    let scenario = crate::built_in("rebalance-storm-consumer-protocol");
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    // Per member: its partitions and epoch at the last step, and the epoch it last revoked at.
    let mut last: BTreeMap<String, (BTreeSet<u32>, u32, Option<u32>)> = BTreeMap::new();
    let (mut revocations, mut assignments) = (0, 0);
    for t in 1..=scenario.duration_ms {
        sim.run_until(t);
        let world = sim.world();
        let mut owner: BTreeMap<u32, String> = BTreeMap::new();
        for c in world
            .resource::<Cluster>()
            .consumers
            .iter()
            .filter_map(|e| world.get::<Consumer>(*e))
            .filter(|c| c.alive)
        {
            let now: BTreeSet<u32> = c.assigned.keys().copied().collect();
            for o in &now {
                if let Some(other) = owner.insert(*o, c.member_id.clone()) {
                    panic!("{t} ms: partition #{o} held by {other} and {}", c.member_id);
                }
            }
            let entry = last
                .entry(c.member_id.clone())
                .or_insert((BTreeSet::new(), 0, None));
            let (before, epoch, revoked_at) = entry;
            let gave_up = before.difference(&now).count();
            let took = now.difference(before).count();
            assert!(
                gave_up == 0 || took == 0,
                "{t} ms: {} gave up and took partitions at once: {before:?} -> {now:?}",
                c.member_id
            );
            if gave_up > 0 && c.generation > 0 {
                revocations += 1;
                *revoked_at = Some(c.generation);
            }
            if took > 0 {
                assignments += 1;
                assert!(
                    revoked_at.is_none_or(|r| c.generation > r),
                    "{t} ms: {} took {now:?} at epoch {}, not after the epoch {revoked_at:?} it revoked at",
                    c.member_id,
                    c.generation
                );
            }
            *before = now;
            *epoch = c.generation;
        }
    }
    assert!(
        revocations >= 5 && assignments >= 5,
        "the storm moves partitions: {revocations} revocations, {assignments} assignments"
    );
    no_violations(&Report::of(&sim));
}

/// One consumer of a single broker that takes 20 s over every message, to and from the group
/// coordinator too: its JoinGroup's answer comes back 43 s after it left, after the client gave
/// up on it at 30 s.
pub fn late_join_answer() -> Scenario {
    crate::scenario(
        r#"(
        name: "late-join-answer", seed: 3, duration_ms: 60000,
        cluster: (brokers: 1),
        topics: [(name: "t", partitions: 2)],
        consumer_groups: [(name: "g", topics: ["t"], max_poll_interval_ms: 10000)],
        timeline: [(at_ms: 0, action: SlowBroker(1, 20000))],
    )"#,
    )
}

/// A response answers only its own request (`NetworkClient`'s correlation ids): when a JoinGroup
/// is answered after the client gave up on it (`max(request.timeout.ms, rebalance timeout + 5
/// s)`, here 30 s) and sent another, the late answer is dropped. Every message to and from the
/// coordinator takes 20 s here, so the first JoinGroup's answer comes back 43 s after it left.
#[test]
fn a_group_response_to_a_request_given_up_is_dropped() {
    use kafkascope_model::sim::cluster::Cluster;
    use kafkascope_model::sim::consumer::{Consumer, MemberState};
    let scenario = late_join_answer();
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    let member = |sim: &kafkascope_model::sim::Sim| {
        let world = sim.world();
        let c = world
            .get::<Consumer>(world.resource::<Cluster>().consumers[0])
            .expect("consumer");
        (c.state, c.generation, c.request_in_flight)
    };
    sim.run_until(1_000);
    let (state, _, first) = member(&sim);
    assert_eq!(state, MemberState::Joining);
    // Given up at 30 s, and sent again.
    sim.run_until(31_000);
    let (state, _, second) = member(&sim);
    assert_eq!(state, MemberState::Joining);
    assert_ne!(second, first, "a second JoinGroup is on its way");
    // The first JoinGroup reached the coordinator at 20 s and was answered after the 3 s
    // initial delay; the answer lands at about 43 s, and changes nothing.
    sim.run_until(45_000);
    assert_eq!(
        member(&sim),
        (MemberState::Joining, 0, second),
        "the late answer to the first JoinGroup is dropped"
    );
    no_violations(&Report::of(&sim));
}

/// An unclean election leaves the new leader's log shorter than the group's position: the
/// member's fetch gets OFFSET_OUT_OF_RANGE and `auto.offset.reset` (earliest) starts it again at
/// the log's start, so its next commit takes the group's committed offset back, as Kafka lets it
/// (`Fetcher.handleOffsetOutOfRange`). The model logs the reset, and the invariant allows exactly
/// that move back.
#[test]
fn an_offset_reset_after_an_unclean_election_takes_the_committed_offset_back() {
    let mut scenario = crate::built_in("unclean-election");
    scenario.consumer_groups = crate::scenario(
        r#"(name: "x", topics: [(name: "orders")], consumer_groups: [(name: "readers",
            topics: ["orders"], records_per_sec: 200, auto_offset_reset: Earliest)])"#,
    )
    .consumer_groups;
    let report = crate::run(&scenario);
    let resets: Vec<(u64, u64)> = report
        .events
        .iter()
        .filter_map(|e| match e.kind {
            kafkascope_model::sim::EventKind::OffsetReset { from, to, .. } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(resets.len(), 1, "{resets:?}");
    let (from, to) = resets[0];
    assert_eq!(to, 0, "earliest");
    assert!(from > 2_500, "past the new leader's end: {from}");
    assert!(
        group(&report).offsets[0].committed < Some(from),
        "the committed offset went back"
    );
    no_violations(&report);
}

/// KIP-951: a broker that refuses a consumer's fetch with NOT_LEADER_OR_FOLLOWER names the leader
/// it knows of, and the consumer fetches there at once, without a Metadata request. Here the
/// preferred election at 30 s moves the partition from broker 2 back to broker 1.
#[test]
fn a_consumer_follows_the_leader_a_refusal_names() {
    use kafkascope_model::sim::cluster::Cluster;
    use kafkascope_model::sim::consumer::Consumer;
    let scenario = crate::scenario(
        r#"(
        name: "hint", seed: 4, duration_ms: 40000,
        cluster: (brokers: 3, auto_leader_rebalance_enable: false),
        topics: [(name: "t", partitions: 1, replication_factor: 3, assignment: Some([[1, 2, 3]]))],
        producers: [(name: "p", topic: "t", records_per_sec: 200, keys: Sequence("k"))],
        consumer_groups: [(name: "g", topics: ["t"], records_per_sec: 1000, auto_offset_reset: Earliest)],
        timeline: [
            (at_ms: 5000, action: CrashBroker(1)),
            (at_ms: 15000, action: RestartBroker(1)),
            (at_ms: 30000, action: PreferredElection),
        ],
    )"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    let metadata = |sim: &kafkascope_model::sim::Sim| {
        let world = sim.world();
        let c = world
            .get::<Consumer>(world.resource::<Cluster>().consumers[0])
            .expect("consumer");
        (c.metadata.leaders[0], c.metadata.refreshed_ms)
    };
    sim.run_until(29_999);
    let ((leader, epoch), _) = metadata(&sim);
    assert_eq!(leader, Some(2), "broker 2 leads after 1's crash");
    sim.run_until(30_600);
    let ((leader, new_epoch), refreshed_ms) = metadata(&sim);
    assert_eq!(leader, Some(1), "the refusal named broker 1");
    assert_eq!(new_epoch, epoch + 1);
    assert!(refreshed_ms < 30_000, "no Metadata request: {refreshed_ms}");
    no_violations(&Report::of(&sim));
}

/// `ConstrainedAssignmentBuilder` in a cooperative group: a member joins, one partition is
/// revoked from one owner, and the follow-up rebalance gives it to the newcomer; nothing else
/// moves, and the group settles after those two rebalances.
#[test]
fn a_cooperative_group_settles_in_two_rebalances_after_a_join() {
    let scenario = crate::scenario(
        r#"(
        name: "coop-one-join", seed: 31, duration_ms: 60000,
        cluster: (brokers: 3),
        topics: [(name: "clicks", partitions: 6, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "web", topic: "clicks", acks: All, records_per_sec: 600, keys: Random(1000))],
        consumer_groups: [(name: "analytics", topics: ["clicks"], members: 3, assignor: CooperativeSticky, records_per_sec: 400)],
        timeline: [(at_ms: 15000, action: AddConsumer("analytics"))],
    )"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.run_until(14_000);
    let before = Report::of(&sim);
    sim.run_until(60_000);
    let after = Report::of(&sim);
    no_violations(&after);
    assert_eq!(group(&before).rebalances, 1);
    assert_eq!(group(&after).rebalances, 3, "the join and its follow-up");
    let owned = |r: &Report, member: &str| -> Vec<String> {
        group(r).assignment[member]
            .as_array()
            .map(|a| a.iter().map(|p| p.to_string()).collect())
            .unwrap_or_default()
    };
    assert_eq!(owned(&after, "analytics-4").len(), 1);
    let kept: usize = ["analytics-1", "analytics-2", "analytics-3"]
        .iter()
        .map(|m| {
            let now = owned(&after, m);
            owned(&before, m).iter().filter(|p| now.contains(p)).count()
        })
        .sum();
    assert_eq!(kept, 5, "one partition moved");
    assert!(
        group(&after).paused_ms < 5_000,
        "{}",
        group(&after).paused_ms
    );
}

/// `AbstractMembershipManager.transitionToFenced`: a member told it is fenced (here its session
/// expired while its coordinator was cut off) gives up its partitions and joins again with epoch 0
/// in the same step: `HeartbeatRequestManager` resets the heartbeat's state, with no back-off.
#[test]
fn a_fenced_consumer_protocol_member_joins_again_at_once() {
    use kafkascope_model::sim::consumer::{Consumer, MemberState};
    let scenario = crate::scenario(
        r#"(
        name: "fenced", seed: 5, duration_ms: 60000,
        cluster: (brokers: 3, group_consumer_session_timeout_ms: 6000, group_consumer_heartbeat_interval_ms: 1000),
        topics: [(name: "orders", partitions: 2, replication_factor: 3, min_insync_replicas: 1)],
        producers: [(name: "checkout", topic: "orders", acks: One, records_per_sec: 200, keys: Sequence("order-"))],
        consumer_groups: [(name: "billing", topics: ["orders"], members: 1, protocol: Consumer, records_per_sec: 400)],
        timeline: [(at_ms: 10000, action: IsolateBroker(1)), (at_ms: 17000, action: HealBroker(1))],
    )"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    let member = |sim: &mut kafkascope_model::sim::Sim| {
        let world = sim.world_mut();
        let mut query = world.query::<&Consumer>();
        let c = query.iter(world).next().expect("a member");
        (c.generation, c.state)
    };
    let mut rejoined = 0;
    let mut last = member(&mut sim);
    while sim.now_ms() < 60_000 {
        sim.step();
        let now = member(&mut sim);
        if last.0 > 0 && now.0 == 0 {
            assert_eq!(now.1, MemberState::Joining, "at {} ms", sim.now_ms());
            rejoined += 1;
        }
        last = now;
    }
    assert_eq!(rejoined, 1);
}

/// `Partition.fetchRecords` on a leader the controller replaced behind its back: by its own
/// metadata it still leads, so it serves consumers up to its own high watermark, which no
/// follower moves any more, with no error. The consumer learns nothing, asks for no metadata,
/// and stalls there until the zombie learns at the heal.
#[test]
fn a_consumer_behind_a_zombie_leader_stalls_until_the_zombie_learns() {
    use kafkascope_model::sim::consumer::Consumer;
    let scenario = crate::scenario(
        r#"(
        name: "zombie-reads", seed: 5, duration_ms: 80000,
        cluster: (brokers: 3),
        topics: [(name: "orders", partitions: 1, replication_factor: 3, min_insync_replicas: 1, assignment: Some([[1, 2, 3]]))],
        producers: [(name: "checkout", topic: "orders", acks: One, records_per_sec: 200, keys: Sequence("order-"))],
        consumer_groups: [(name: "billing", topics: ["orders"], members: 1, records_per_sec: 400, auto_offset_reset: Earliest)],
        timeline: [(at_ms: 10000, action: CutControllerLink(1)), (at_ms: 60000, action: HealControllerLink(1))],
    )"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    let position = |sim: &mut kafkascope_model::sim::Sim| {
        let world = sim.world_mut();
        let mut query = world.query::<&Consumer>();
        let c = query.iter(world).next().expect("a member");
        (c.assigned[&0].position, c.metadata.leaders[0].0)
    };
    sim.run_until(20_000);
    let stalled = position(&mut sim);
    assert_eq!(stalled.1, Some(1));
    for t in [30_000, 45_000, 59_900] {
        sim.run_until(t);
        assert_eq!(position(&mut sim), stalled, "at {t} ms");
    }
    sim.run_until(80_000);
    let after = position(&mut sim);
    assert_eq!(after.1, Some(2));
    assert!(after.0 > stalled.0 + 3_000, "{after:?}");
    let report = Report::of(&sim);
    no_violations(&report);
    assert_eq!(report.metrics.records_read_from_followers, 0);
}
