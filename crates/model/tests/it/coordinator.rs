//! The group coordinator's writes: every group operation is a write to `__consumer_offsets`
//! whose answer waits for the offsets partition's high watermark, so a stuck offsets partition
//! freezes its groups; and the clients' commit before a revocation, retried until it succeeds.

use kafkascope_model::report::Report;
use kafkascope_model::scenario::{Action, Scenario};
use kafkascope_model::sim::consumer::Consumer;
use kafkascope_model::sim::{EventKind, Sim};

/// A group of two on `clicks`, a third member joining at 21 s, and the group's offsets partition
/// (`__consumer_offsets-10`, led by broker 2) cut from both its followers at 20 s. Its leader
/// shrinks the ISR to itself at the first check 30 s later (`replica.lag.time.max.ms`), and only
/// then does its high watermark move again.
fn stuck_offsets(membership: &str) -> Scenario {
    crate::scenario(&format!(
        r#"(
        name: "stuck-offsets", seed: 31, duration_ms: 90000,
        cluster: (brokers: 3),
        topics: [(name: "clicks", partitions: 6, replication_factor: 3, min_insync_replicas: 1)],
        producers: [(name: "web", topic: "clicks", acks: One, records_per_sec: 600, keys: Random(1000))],
        consumer_groups: [(name: "analytics", topics: ["clicks"], members: 2, {membership}, records_per_sec: 400)],
        timeline: [
            (at_ms: 20000, action: CutLink(2, 1)),
            (at_ms: 20000, action: CutLink(2, 3)),
            (at_ms: 21000, action: AddConsumer("analytics")),
        ],
    )"#
    ))
}

/// When the offsets partition's ISR shrank to its leader, which lets its high watermark move.
fn offsets_unstuck_at(report: &Report) -> u64 {
    report
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::IsrShrink { topic, .. } if topic == "__consumer_offsets" => Some(e.at_ms),
            _ => None,
        })
        .expect("the offsets partition's ISR shrinks")
}

/// `GroupCoordinatorService.consumerGroupHeartbeat` is a write (`scheduleWriteOperation`): the
/// join's records, and every heartbeat behind them, are answered only once committed, so while
/// the offsets partition cannot commit, nobody learns of the new member: the old members keep
/// their partitions and the newcomer gets none. Once it commits again, the group rebalances.
#[test]
fn a_stuck_offsets_partition_freezes_a_consumer_protocol_group() {
    let report = crate::run(&stuck_offsets("protocol: Consumer"));
    crate::consumers::no_violations(&report);
    let unstuck = offsets_unstuck_at(&report);
    assert!((50_000..=61_000).contains(&unstuck), "{unstuck}");
    let reconciled: Vec<u64> = report
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::MemberReconciled { .. }) && e.at_ms > 20_000)
        .map(|e| e.at_ms)
        .collect();
    assert_eq!(reconciled.len(), 3, "{reconciled:?}");
    assert!(
        reconciled.iter().all(|t| *t > unstuck),
        "members reconciled while the offsets partition was stuck: {reconciled:?}, unstuck at {unstuck}"
    );
    let group = &report.consumer_groups[0];
    let assignment = group.assignment.as_object().expect("an assignment");
    assert!(
        assignment
            .values()
            .all(|a| a.as_array().unwrap().len() == 2),
        "{assignment:?}"
    );
}

/// The classic protocol's leader stores the group with its assignment, and the group becomes
/// stable only once that record is committed (`classicGroupSyncToClassicGroup`'s
/// `appendFuture`); heartbeats wait behind it. A write that times out fails with
/// COORDINATOR_NOT_AVAILABLE and the group rebalances again, so no rebalance completes while the
/// offsets partition is stuck.
#[test]
fn a_stuck_offsets_partition_freezes_a_classic_group() {
    let report = crate::run(&stuck_offsets("assignor: CooperativeSticky"));
    crate::consumers::no_violations(&report);
    let unstuck = offsets_unstuck_at(&report);
    let completed: Vec<u64> = report
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RebalanceCompleted { .. }) && e.at_ms > 20_000)
        .map(|e| e.at_ms)
        .collect();
    assert!(!completed.is_empty());
    assert!(
        completed.iter().all(|t| *t > unstuck),
        "{completed:?}, unstuck at {unstuck}"
    );
    let group = &report.consumer_groups[0];
    let assignment = group.assignment.as_object().expect("an assignment");
    assert_eq!(assignment.len(), 3, "{assignment:?}");
    assert!(
        assignment
            .values()
            .all(|a| a.as_array().unwrap().len() == 2),
        "{assignment:?}"
    );
}

fn consumers(sim: &mut Sim) -> Vec<Consumer> {
    let world = sim.world_mut();
    let mut query = world.query::<&Consumer>();
    let mut all: Vec<Consumer> = query.iter(world).cloned().collect();
    all.sort_by_key(|c| c.index);
    all
}

/// `CommitRequestManager.maybeAutoCommitSyncBeforeRevocation`: a member asked to revoke commits
/// first and retries a retriable failure (here COORDINATOR_NOT_AVAILABLE, its commit never
/// committed in `offsets.commit.timeout.ms`) until the rebalance timeout; it gives the partition
/// up only once the commit succeeded, so its next owner starts where it stopped.
#[test]
fn a_commit_before_revocation_is_retried_until_it_succeeds() {
    let mut scenario = stuck_offsets("protocol: Consumer");
    scenario.timeline.clear();
    scenario
        .timeline
        .push(kafkascope_model::scenario::TimelineEntry {
            at_ms: 20_000,
            action: Action::AddConsumer("analytics".into()),
        });
    let mut sim = Sim::new(&scenario);
    sim.run_until(20_000);
    // Run until a member starts revoking for the newcomer, then cut the offsets partition's leader from its
    // followers: the commit it just sent cannot commit.
    let (revoker, revoked) = loop {
        sim.step();
        assert!(sim.now_ms() < 40_000, "no member revoked");
        if let Some(c) = consumers(&mut sim)
            .into_iter()
            .find(|c| !c.revoking.is_empty())
        {
            break (c.index, c.revoking.clone());
        }
    };
    let cut_at = sim.now_ms();
    sim.act(Action::CutLink(2, 1));
    sim.act(Action::CutLink(2, 3));
    // It keeps the partitions it revokes until its commit succeeds.
    let mut processed = 0;
    let gave_up_at = loop {
        sim.step();
        assert!(
            sim.now_ms() < 120_000,
            "the member never gave the partitions up"
        );
        let all = consumers(&mut sim);
        let c = &all[revoker as usize];
        match c.assigned.get(&revoked[0]) {
            Some(p) => processed = p.processed,
            None => break sim.now_ms(),
        }
    };
    // The group's committed offset is where the member stopped.
    let report = Report::of(&sim);
    let partition = &report.partitions[revoked[0] as usize];
    let committed = report.consumer_groups[0]
        .offsets
        .iter()
        .find(|o| o.topic == partition.topic && o.partition == partition.partition)
        .and_then(|o| o.committed);
    assert_eq!(
        committed,
        Some(processed),
        "gave up at {gave_up_at}: {:?}",
        consumers(&mut sim)[revoker as usize]
    );
    sim.run_until(90_000);
    let report = Report::of(&sim);
    let unstuck = offsets_unstuck_at(&report);
    assert!(
        gave_up_at >= unstuck && unstuck > cut_at + 20_000,
        "cut at {cut_at}, gave up at {gave_up_at}, the offsets partition unstuck at {unstuck}"
    );
    crate::consumers::no_violations(&report);
}
