//! Replication, the ISR and acks, with numbers from the report.

use kafkascope_model::partitioner::partition_for_key;
use kafkascope_model::report::Report;
use kafkascope_model::sim::{EventKind, Replica, Sim};

fn isr_events(report: &Report) -> Vec<(u64, &EventKind)> {
    report
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::IsrShrink { .. } | EventKind::IsrExpand { .. }
            )
        })
        .map(|e| (e.at_ms, &e.kind))
        .collect()
}

#[test]
fn a_cut_follower_leaves_the_isr_after_the_lag_time_and_rejoins_after_the_heal() {
    let scenario = crate::built_in("isr-shrink");
    let lag = scenario.cluster.replica_lag_time_max_ms;
    let (cut, heal) = (5_000, 60_000);

    // Not before replica.lag.time.max.ms has passed since the cut.
    let mut sim = Sim::new(&scenario);
    sim.run_until(cut + lag);
    let report = Report::of(&sim);
    assert_eq!(report.partitions[0].isr, vec![1, 2, 3]);
    assert!(isr_events(&report).is_empty());

    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    let events = isr_events(&report);
    assert_eq!(events.len(), 2, "one shrink, one expand: {events:?}");
    let (shrink_at, shrink) = events[0];
    assert_eq!(
        *shrink,
        EventKind::IsrShrink {
            topic: "orders".into(),
            partition: 0,
            isr: vec![1, 2],
            removed: vec![3],
        }
    );
    // The leader checks every lag/2, so the shrink comes within lag/2 of the deadline.
    assert!(shrink_at > cut + lag, "shrink at {shrink_at}");
    assert!(shrink_at <= cut + lag + lag / 2, "shrink at {shrink_at}");

    let (expand_at, expand) = events[1];
    assert!(
        matches!(expand, EventKind::IsrExpand { isr, added, .. } if *isr == vec![1, 2, 3] && *added == vec![3])
    );
    assert!(expand_at > heal, "expand at {expand_at}");
    assert_eq!(report.partitions[0].isr, vec![1, 2, 3]);
    assert_eq!(report.metrics.isr_shrinks, 1);
    assert_eq!(report.metrics.isr_expands, 1);
    // Back in the ISR means caught up: every replica ends with the whole log.
    let leo = report.partitions[0].log_end_offset;
    assert!(
        report.partitions[0]
            .replicas
            .iter()
            .all(|r| r.log_end_offset == leo)
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
}

#[test]
fn the_high_watermark_waits_for_a_lagging_isr_member_until_it_is_dropped() {
    let mut scenario = crate::built_in("isr-shrink");
    // acks=1 keeps records flowing to the leader while the HW stands still.
    scenario.producers[0].acks = kafkascope_model::scenario::Acks::One;
    let mut sim = Sim::new(&scenario);

    sim.run_until(5_100);
    let at_cut = Report::of(&sim).partitions[0].clone();
    sim.run_until(34_000);
    let stalled = Report::of(&sim).partitions[0].clone();
    assert_eq!(stalled.isr, vec![1, 2, 3], "3 is still in the ISR");
    assert_eq!(
        stalled.high_watermark, at_cut.high_watermark,
        "the HW does not move while ISR member 3 is behind"
    );
    let follower_3 = stalled.replicas.iter().find(|r| r.broker == 3).unwrap();
    assert_eq!(stalled.high_watermark, follower_3.log_end_offset);
    assert!(
        stalled.log_end_offset > stalled.high_watermark + 1000,
        "the leader kept appending: LEO {} HW {}",
        stalled.log_end_offset,
        stalled.high_watermark
    );

    sim.run_until(50_000);
    let dropped = Report::of(&sim).partitions[0].clone();
    assert_eq!(dropped.isr, vec![1, 2]);
    let follower_2 = dropped.replicas.iter().find(|r| r.broker == 2).unwrap();
    assert!(
        dropped.high_watermark > stalled.log_end_offset,
        "the HW jumped once 3 was dropped"
    );
    assert!(dropped.high_watermark <= follower_2.log_end_offset);
}

#[test]
fn acks_all_with_an_isr_below_min_insync_replicas_gets_not_enough_replicas() {
    let scenario = crate::built_in("min-isr");
    let mut sim = Sim::new(&scenario);
    sim.run_until(44_000);
    let before = Report::of(&sim);
    assert_eq!(before.partitions[0].isr, vec![1, 2, 3]);
    assert_eq!(
        before.producers[0].stats.errors.get("NOT_ENOUGH_REPLICAS"),
        None
    );

    sim.run_until(74_000);
    let during = Report::of(&sim);
    assert_eq!(
        during.partitions[0].isr,
        vec![1],
        "the ISR is the leader alone"
    );
    let refused = during.producers[0]
        .stats
        .errors
        .get("NOT_ENOUGH_REPLICAS")
        .copied();
    assert!(refused.unwrap_or(0) > 5, "refused: {refused:?}");
    // Refused appends are not appended: the leader's log did not grow while the ISR was {1}.
    let leo_at_shrink = during.partitions[0].log_end_offset;
    sim.run_until(74_900);
    assert_eq!(Report::of(&sim).partitions[0].log_end_offset, leo_at_shrink);

    let end = {
        sim.run_until(scenario.duration_ms);
        Report::of(&sim)
    };
    assert_eq!(
        end.partitions[0].isr,
        vec![1, 2, 3],
        "the followers rejoin after the heal"
    );
    let p = &end.producers[0];
    assert!(
        p.stats.acked > during.producers[0].stats.acked,
        "acks resume"
    );
    assert_eq!(
        p.stats.failed, 0,
        "retries outlast the outage within delivery.timeout.ms"
    );
    assert!(
        end.invariant_violations.is_empty(),
        "{:?}",
        end.invariant_violations
    );
}

#[test]
fn acks_one_is_acknowledged_before_the_followers_have_the_record() {
    let scenario = crate::built_in("acks-one");
    let mut sim = Sim::new(&scenario);
    sim.run_until(5_000);
    assert_eq!(Report::of(&sim).producers[0].stats.acked, 0);
    while Report::of(&sim).producers[0].stats.acked == 0 {
        assert!(sim.now_ms() < 6_000, "acks=1 answers within a round trip");
        sim.step();
    }
    let report = Report::of(&sim);
    let p = &report.partitions[0];
    assert_eq!(p.log_end_offset, 1, "the leader has the record");
    assert_eq!(p.high_watermark, 0, "it is not committed yet");
    for follower in p.replicas.iter().filter(|r| r.broker != 1) {
        assert_eq!(
            follower.log_end_offset, 0,
            "follower {} lacks it",
            follower.broker
        );
    }
    // And a moment later the followers have it and the HW covers it.
    sim.run_until(6_000);
    let p = Report::of(&sim).partitions[0].clone();
    assert_eq!(p.high_watermark, 1);
    assert!(p.replicas.iter().all(|r| r.log_end_offset == 1));
}

#[test]
fn a_follower_learns_the_high_watermark_a_fetch_later_than_the_leader() {
    let scenario = crate::built_in("acks-one");
    let mut sim = Sim::new(&scenario);
    sim.run_until(5_000);
    while Report::of(&sim).partitions[0].high_watermark == 0 {
        assert!(sim.now_ms() < 7_000);
        sim.step();
    }
    let report = Report::of(&sim);
    let leader_hw_at = sim.now_ms();
    assert!(
        report.partitions[0]
            .replicas
            .iter()
            .filter(|r| r.broker != 1)
            .all(|r| r.high_watermark == 0)
    );
    while Report::of(&sim).partitions[0]
        .replicas
        .iter()
        .any(|r| r.high_watermark == 0)
    {
        assert!(sim.now_ms() < 8_000);
        sim.step();
    }
    assert!(sim.now_ms() > leader_hw_at);
}

#[test]
fn keyed_records_land_on_the_partition_kafka_picks() {
    let mut scenario = crate::built_in("quickstart");
    scenario.duration_ms = 2_000;
    let mut sim = Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let world = sim.world_mut();
    let mut replicas = world.query::<&Replica>();
    let mut checked = 0;
    for replica in replicas.iter(world) {
        let partition = world
            .get::<kafkascope_model::sim::Partition>(replica.partition)
            .unwrap();
        for record in &replica.log {
            let key = kafkascope_model::sim::producer::record_key(world, record)
                .expect("quickstart keys its records");
            assert_eq!(partition_for_key(key.as_bytes(), 3), partition.index);
            checked += 1;
        }
    }
    assert!(checked > 1000);
}

/// Keys in the leader logs, and how many appear more than once.
fn duplicate_keys(sim: &mut Sim) -> usize {
    let world = sim.world_mut();
    let mut replicas = world.query::<&Replica>();
    let mut keys: Vec<String> = Vec::new();
    for replica in replicas.iter(world) {
        let partition = world
            .get::<kafkascope_model::sim::Partition>(replica.partition)
            .unwrap();
        if partition.leader == Some(replica.broker) {
            keys.extend(
                replica
                    .log
                    .iter()
                    .map(|r| kafkascope_model::sim::producer::record_key(world, r).unwrap()),
            );
        }
    }
    let total = keys.len();
    keys.sort();
    keys.dedup();
    total - keys.len()
}

#[test]
fn retries_duplicate_records_unless_the_producer_is_idempotent() {
    // Timed-out acks=all requests were appended at the leader; their retries append again unless
    // the leader recognises the producer's sequence numbers.
    for (idempotence, duplicates_expected) in [(None, false), (Some(false), true)] {
        let mut scenario = crate::built_in("isr-shrink");
        scenario.producers[0].enable_idempotence = idempotence;
        let mut sim = Sim::new(&scenario);
        sim.run_until(scenario.duration_ms);
        let report = Report::of(&sim);
        let timeouts = report.producers[0]
            .stats
            .errors
            .get("REQUEST_TIMED_OUT")
            .copied();
        assert!(
            timeouts.unwrap_or(0) > 0,
            "the stall makes requests time out"
        );
        let duplicates = duplicate_keys(&mut sim);
        assert_eq!(
            duplicates > 0,
            duplicates_expected,
            "idempotence {idempotence:?}: {duplicates} duplicates"
        );
        // The report counts what the log holds twice.
        assert_eq!(report.producers[0].duplicate_records, duplicates as u64);
    }
}

#[test]
fn every_built_in_scenario_keeps_the_invariants() {
    for built_in in kafkascope_model::scenario::BUILT_IN {
        let mut scenario = crate::built_in(built_in.name);
        // `large` is checked through its broker crash (60 s) and the elections after it; all of
        // it would take most of this test's time.
        let limit = if built_in.name == "large" {
            70_000
        } else {
            100_000
        };
        scenario.duration_ms = scenario.duration_ms.min(limit);
        let report = crate::run(&scenario);
        assert!(
            report.invariant_violations.is_empty(),
            "{}: {:?}",
            built_in.name,
            report.invariant_violations
        );
        assert!(
            report.producers.iter().all(|p| p.stats.sent > 0),
            "{} produces",
            built_in.name
        );
    }
}

/// A clean leader move under load: the producer's batches already on their way to the old
/// leader come back NOT_LEADER_OR_FOLLOWER once it learns it was replaced, naming the new leader
/// (KIP-951); the producer sends there from then on, retries first. Should a newer batch reach
/// the new leader before a retried one, it gets OUT_OF_ORDER_SEQUENCE_NUMBER for the gap and is
/// retried too.
const PREFERRED_ELECTION_UNDER_LOAD: &str = r#"(
    name: "preferred election under load", seed: 3, duration_ms: 46000,
    cluster: (brokers: 3, network_latency_ms: 10),
    topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 2,
              assignment: Some([[1, 2, 3]]))],
    producers: [(name: "p", topic: "t", acks: All, records_per_sec: 2000, keys: Sequence("k-"),
                 batch_size: 2000)],
    timeline: [
        (at_ms: 5000, action: CrashBroker(1)),
        (at_ms: 20000, action: RestartBroker(1)),
        (at_ms: 40000, action: PreferredElection),
    ],
)"#;

fn leader_log(sim: &mut Sim) -> Vec<kafkascope_model::sim::Record> {
    let world = sim.world_mut();
    let partition = world
        .query::<&kafkascope_model::sim::Partition>()
        .single(world)
        .expect("one partition")
        .clone();
    let leader = partition.leader_replica().expect("a leader");
    let replica = world.get::<Replica>(leader).expect("replica");
    replica.log.iter().cloned().collect()
}

fn producer_epoch(sim: &mut Sim) -> u16 {
    let world = sim.world_mut();
    world
        .query::<&kafkascope_model::sim::producer::Producer>()
        .single(world)
        .expect("one producer")
        .producer_epoch
}

#[test]
fn an_idempotent_producer_keeps_send_order_through_a_leader_move() {
    let scenario = crate::scenario(PREFERRED_ELECTION_UNDER_LOAD);
    let mut sim = Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    let errors = &report.producers[0].stats.errors;
    assert!(
        errors.get("NOT_LEADER_OR_FOLLOWER").is_some_and(|n| *n > 0),
        "{errors:?}"
    );
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    // The refused batches only waited behind the retried ones: no sequence was lost, so the
    // producer kept its epoch (`TransactionManager.canRetry`).
    assert_eq!(producer_epoch(&mut sim), 0);
    let ids: Vec<u64> = leader_log(&mut sim).iter().map(|r| r.id()).collect();
    assert!(ids.len() > 50_000);
    let out_of_order = ids.windows(2).filter(|w| w[1] <= w[0]).count();
    assert_eq!(out_of_order, 0, "records out of send order or repeated");
}

#[test]
fn a_retry_to_a_new_leader_does_not_wait_its_back_off() {
    // KIP-951: a batch whose partition got a new leader since it failed is retried at once.
    let source = PREFERRED_ELECTION_UNDER_LOAD.replace(
        "batch_size: 2000",
        "batch_size: 2000, retry_backoff_ms: 20000, retry_backoff_max_ms: 20000",
    );
    let scenario = crate::scenario(&source);
    let mut sim = Sim::new(&scenario);
    sim.run_until(40_000);
    let before = Report::of(&sim).producers[0].stats.acked;
    sim.run_until(41_000);
    let report = Report::of(&sim);
    let stats = &report.producers[0].stats;
    let not_leader = stats
        .errors
        .get("NOT_LEADER_OR_FOLLOWER")
        .copied()
        .unwrap_or(0);
    assert!(not_leader > 0);
    // Each batch holds 20 records (2000 bytes of 100-byte records). With the 20 s back-off the
    // batches the old leader refused would wait until 60 s, and the partition's batches behind
    // them with them.
    assert!(
        stats.acked >= before + 20 * not_leader,
        "acked {before} at 40 s, {} at 41 s, {not_leader} batches refused",
        stats.acked
    );
}

#[test]
fn a_leader_without_the_producers_state_takes_its_next_sequence() {
    // Broker 2 never gets a record (its link to leader 1 is cut from the start) and is elected
    // uncleanly when 1 dies. It has no state for the producer, so it takes the producer's next
    // batch whatever its sequence (`ProducerAppendInfo.checkSequence`): no error, no epoch bump.
    let scenario = crate::scenario(
        r#"(name: "x", duration_ms: 90000, cluster: (brokers: 2),
            topics: [(name: "t", partitions: 1, replication_factor: 2, min_insync_replicas: 1,
                      assignment: Some([[1, 2]]), unclean_leader_election: true)],
            producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Sequence("k"))],
            timeline: [(at_ms: 0, action: CutLink(1, 2)), (at_ms: 60000, action: CrashBroker(1))])"#,
    );
    let mut sim = Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let report = Report::of(&sim);
    assert_eq!(report.partitions[0].leader, Some(2));
    let errors = &report.producers[0].stats.errors;
    assert!(
        !errors.contains_key("OUT_OF_ORDER_SEQUENCE_NUMBER"),
        "{errors:?}"
    );
    assert_eq!(producer_epoch(&mut sim), 0);
    let log = leader_log(&mut sim);
    let first = log[0].sequence().expect("an idempotent producer's");
    assert!(first > 3000, "first sequence {first}");
    assert!(
        log.windows(2)
            .all(|w| w[1].sequence() == w[0].sequence().map(|s| s + 1))
    );
}

#[test]
fn a_gap_at_a_new_leader_bumps_the_producer_epoch() {
    // The unclean leader lacks the producer's last acknowledged records: its next batch is the
    // one after the last acknowledged and is refused, so the producer bumps its epoch and
    // numbers from 0 again (KIP-360).
    let mut sim = Sim::new(&crate::built_in("unclean-election"));
    sim.run_until(100_000);
    let report = Report::of(&sim);
    assert!(
        report.producers[0]
            .stats
            .errors
            .contains_key("OUT_OF_ORDER_SEQUENCE_NUMBER")
    );
    assert_eq!(producer_epoch(&mut sim), 1);
    let log = leader_log(&mut sim);
    let first_of_epoch_1 = log
        .iter()
        .find(|r| r.producer_epoch() == 1)
        .expect("epoch 1 records");
    assert_eq!(first_of_epoch_1.sequence(), Some(0));
}

#[test]
fn a_follower_outside_the_isr_when_a_leader_takes_over_has_never_caught_up() {
    // `Replica.resetReplicaState` sets a follower's last caught-up time to the election's time if
    // it is in the ISR, else to 0: on Kafka's wall clock, long ago. Sim time starts at 0, so that
    // "never" must not read as "at the start of the run", or for the first replica.lag.time.max.ms
    // an out-of-sync follower would count as caught up and hold the high watermark back.
    use kafkascope_model::sim::cluster::FollowerState;
    let lag = 30_000;
    let outside = FollowerState::reset(false, 5_000);
    assert!(!outside.is_caught_up(100, 5_000, lag));
    let inside = FollowerState::reset(true, 5_000);
    assert!(inside.is_caught_up(100, 5_000 + lag, lag));
    assert!(!inside.is_caught_up(100, 5_001 + lag, lag));
}

#[test]
fn the_invariants_notice_an_in_sync_follower_holding_other_records_than_the_leader() {
    // The committed-records check can fail: swap a record a follower holds above the high
    // watermark for another one, and the check reports it once the high watermark passes it.
    let scenario = crate::built_in("isr-shrink");
    let mut sim = Sim::new(&scenario);
    sim.run_until(2_000);
    // An instant when broker 2 has fetched records the leader has not yet committed.
    let ahead = |sim: &mut Sim| -> Option<u64> {
        let world = sim.world_mut();
        let mut replicas = world.query::<&Replica>();
        let hw = replicas.iter(world).find(|r| r.broker == 1)?.high_watermark;
        let follower = replicas.iter(world).find(|r| r.broker == 2)?;
        (follower.log_end_offset() > hw).then_some(hw)
    };
    let mut hw = None;
    for _ in 0..2_000 {
        hw = ahead(&mut sim);
        if hw.is_some() {
            break;
        }
        sim.step();
    }
    let hw = hw.expect("broker 2 gets ahead of the high watermark between fetches");
    let world = sim.world_mut();
    let mut replicas = world.query::<&mut Replica>();
    for mut follower in replicas.iter_mut(world) {
        if follower.broker != 2 {
            continue;
        }
        let mut records: Vec<_> = follower.log.iter_from(hw as usize).cloned().collect();
        records[0] = records[0].renumbered(records[0].id() + 1_000_000);
        follower.truncate_to(hw, 0);
        let log = kafkascope_model::sim::segments::LogConfig::default();
        let epoch = follower.epochs.last().map_or(0, |e| e.0);
        follower.append(records, epoch, &log, 0, 0);
    }
    sim.run_until(4_000);
    let violations = Report::of(&sim).invariant_violations;
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].contains(&"in-sync broker 2 holds record #1000".to_string())
            && violations[0].contains(&format!("at offset {hw}")),
        "{violations:?}"
    );
}
