//! The guided walkthrough, headless: its tour file, the story its scenario tells (checked against
//! the scenario's own settings), exact navigation between beats, and following its record.

use kafkascope::report::Report;
use kafkascope::sim::quorum::Controller;
use kafkascope::sim::{Cluster, EventKind, Sim};
use kafkascope::tour::{RecordRef, Tour};
use kafkascope::view::follow::{AckScan, at_offset, resolve, trace};
use kafkascope::view::tour::{Place, Stage, Step};

fn walkthrough() -> (Tour, kafkascope::scenario::Scenario) {
    Tour::built_in("walkthrough").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_walkthrough_has_the_eight_components_in_order() {
    let (tour, scenario) = walkthrough();
    assert_eq!(tour.scenario, "walkthrough");
    let ids: Vec<&str> = tour.beats.iter().map(|b| b.component.id()).collect();
    assert_eq!(
        ids,
        [
            "producer",
            "leader",
            "followers",
            "isr",
            "controller",
            "consumer_group",
            "offset_store",
            "lag_monitor"
        ]
    );
    crate::assert_short_beats(&tour);
    // The scenario ends with the last beat: the sandbox starts a run of its own.
    assert_eq!(tour.beats.last().unwrap().to_ms, scenario.duration_ms);
    assert_eq!(tour.follow, Some(RecordRef::Key("user-7".into())));
    assert!(
        tour.after
            .iter()
            .any(|e| e.scenario.as_deref() == Some("quickstart")),
        "a way to the sandbox"
    );
}

#[test]
fn the_walkthrough_scenario_is_the_one_the_issue_describes() {
    let (_, s) = walkthrough();
    assert_eq!(s.cluster.brokers, 3);
    let t = &s.topics[0];
    assert_eq!(
        (
            t.name.as_str(),
            t.partitions,
            t.replication_factor,
            t.min_insync_replicas
        ),
        ("orders", 3, 3, 2)
    );
    let p = &s.producers[0];
    assert_eq!(p.acks, kafkascope::scenario::Acks::All);
    assert_ne!(
        p.enable_idempotence,
        Some(false),
        "idempotent with acks=all"
    );
    // The fulfilment service starts once the orders are in: two members.
    assert_eq!(s.consumer_groups[0].members, 0);
    assert!(
        s.timeline
            .iter()
            .any(|e| e.action
                == kafkascope::scenario::Action::SetGroupMembers("fulfilment".into(), 2))
    );
}

/// The focused partition's numbers in a report: LEO, HW, committed, lag.
fn orders_2(report: &Report) -> (u64, u64, Option<u64>, Option<u64>) {
    let p = report
        .partitions
        .iter()
        .find(|p| p.topic == "orders" && p.partition == 2)
        .unwrap();
    let o = report.consumer_groups[0]
        .offsets
        .iter()
        .find(|o| o.topic == "orders" && o.partition == 2)
        .unwrap();
    (p.log_end_offset, p.high_watermark, o.committed, o.lag)
}

#[test]
fn the_walkthrough_ends_at_42_42_42_and_no_lag() {
    let (tour, scenario) = walkthrough();
    let mut sim = Sim::new(&scenario);
    sim.run_until(tour.beats[7].to_ms);
    let report = Report::of(&sim);
    assert_eq!(orders_2(&report), (42, 42, Some(42), Some(0)));
    assert_eq!(report.acked_records_lost, 0);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    // The group starts once orders-2 holds all 42 records; it has committed nothing when beat
    // 7 starts, and 42 when it ends.
    let at = |ms: u64| {
        let mut sim = Sim::new(&scenario);
        sim.run_until(ms);
        orders_2(&Report::of(&sim))
    };
    assert_eq!(at(tour.beats[5].from_ms).0, 42);
    assert_eq!(at(tour.beats[6].from_ms).2, None);
    assert_eq!(at(tour.beats[6].to_ms).2, Some(42));
}

#[test]
fn in_beat_5_the_controller_fences_after_the_session_timeout_then_elects() {
    let (tour, scenario) = walkthrough();
    let beat = &tour.beats[4];
    let report = {
        let mut sim = Sim::new(&scenario);
        sim.run_until(beat.to_ms);
        Report::of(&sim)
    };
    let during = |e: &&kafkascope::sim::Event| e.at_ms >= beat.from_ms && e.at_ms < beat.to_ms;
    let events: Vec<_> = report.events.iter().filter(during).collect();
    let crash = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::BrokerCrashed { broker: 3 }))
        .expect("broker 3, orders-2's leader, crashes in beat 5")
        .at_ms;
    let fenced = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::BrokerFenced { broker: 3 }))
        .expect("then it is fenced")
        .at_ms;
    let elected = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::LeaderElected {
                topic,
                partition: 2,
                leader,
                leader_epoch,
                unclean,
                ..
            } if topic == "orders" => Some((e.at_ms, *leader, *leader_epoch, *unclean)),
            _ => None,
        })
        .expect("then orders-2 gets a new leader");
    // The last heartbeat that reached the controller from broker 3, read just before the
    // fencing: the session is counted from it, not from the crash.
    let mut sim = Sim::new(&scenario);
    sim.run_until(fenced);
    let last = {
        let world = sim.world();
        let controller = world.resource::<Cluster>().controller;
        world
            .get::<Controller>(controller)
            .unwrap()
            .last_heartbeat_ms[3]
    };
    let c = &scenario.cluster;
    assert!(
        last <= crash && crash - last <= c.heartbeat_interval_ms,
        "the last heartbeat ({last}) came within an interval before the crash ({crash})"
    );
    // BrokerHeartbeatManager fences a broker silent for longer than broker.session.timeout.ms.
    assert_eq!(fenced, last + c.session_timeout_ms + 1);
    assert!(crash < fenced);
    // The election is at the fencing, of broker 1: the first in-sync replica of [3, 1, 2].
    assert_eq!(elected, (fenced, 1, 1, false));
}

/// The model's state, as the report and the scene see it.
fn state(sim: &mut Sim) -> String {
    let snapshot = kafkascope::view::snapshot::Snapshot::of(sim.world_mut());
    format!("{}\n{snapshot:?}", Report::of(sim).to_json())
}

#[test]
fn every_beat_starts_from_the_same_state_forwards_and_back() {
    let (tour, scenario) = walkthrough();
    let mut sim = Sim::new(&scenario);
    let mut place = Place::open(0, false);
    // Plays a cue as the window does: an exact seek, then the beat to its end.
    let play = |sim: &mut Sim, place: &mut Place, step: Step| -> String {
        let cue = place.step(&tour, step).expect("a step moves");
        sim.seek(cue.at_ms);
        let at_start = state(sim);
        sim.run_until(cue.stop_ms);
        place.reached(&tour, sim.now_ms());
        assert_eq!(place.stage, Stage::Ended);
        at_start
    };
    let mut forward = vec![play(&mut sim, &mut place, Step::Next)];
    for _ in 1..tour.beats.len() {
        forward.push(play(&mut sim, &mut place, Step::Next));
    }
    assert_eq!(place.beat, 7);
    // Back to beat 3 (an exact seek to its start, from a checkpoint), then forward again.
    let mut again = Vec::new();
    for _ in 0..5 {
        again.push(play(&mut sim, &mut place, Step::Previous));
    }
    assert_eq!(place.beat, 2);
    assert_eq!(
        again.last(),
        forward.get(2),
        "beat 3's start, reached backwards"
    );
    for (i, expected) in forward.iter().enumerate().take(tour.beats.len()).skip(3) {
        let at_start = play(&mut sim, &mut place, Step::Next);
        assert_eq!(
            at_start,
            *expected,
            "beat {}'s start, the second time",
            i + 1
        );
    }
    // Each beat's start is the state a run straight to it has.
    for (i, beat) in tour.beats.iter().enumerate() {
        let mut straight = Sim::new(&scenario);
        straight.run_until(beat.from_ms);
        assert_eq!(state(&mut straight), forward[i], "beat {}", i + 1);
    }
    // Past the last beat: its end, with the ways out; Previous goes back into it.
    assert!(place.step(&tour, Step::Next).is_some());
    assert_eq!(place.stage, Stage::Finished);
    assert!(place.step(&tour, Step::Next).is_none());
    let back = place.step(&tour, Step::Previous).unwrap();
    assert_eq!((place.beat, back.at_ms), (7, tour.beats[7].from_ms));
}

#[test]
fn a_tour_opens_ready_at_its_beat_and_a_shot_at_the_beats_end() {
    let (tour, _) = walkthrough();
    let mut place = Place::open(2, false);
    let cue = place.cue(&tour);
    assert_eq!((cue.at_ms, cue.play), (tour.beats[2].from_ms, false));
    // Next on a beat that is ready plays it, from its start.
    let cue = place.step(&tour, Step::Next).unwrap();
    assert_eq!(
        (place.beat, cue.at_ms, cue.play),
        (2, tour.beats[2].from_ms, true)
    );
    assert_eq!(cue.speed, tour.beats[2].speed);
    assert_eq!(cue.stop_ms, tour.beats[2].to_ms);
    let shot = Place::open(4, true);
    assert_eq!(shot.cue(&tour).at_ms, tour.beats[4].to_ms);
    let mut p = Place::open(5, false);
    p.step(&tour, Step::First);
    assert_eq!(p.beat, 0);
    p.step(&tour, Step::Last);
    assert_eq!(p.beat, 7);
    p.step(&tour, Step::Go(3));
    assert_eq!((p.beat, p.stage), (3, Stage::Playing));
}

#[test]
fn the_tours_record_is_followed_from_its_batch_to_its_committed_offset() {
    let (tour, scenario) = walkthrough();
    let record = tour.follow.clone().unwrap();
    let orders_2 = |sim: &Sim| {
        let c = sim.world().resource::<Cluster>();
        let t = c.topics.iter().find(|t| t.name == "orders").unwrap();
        sim.world()
            .get::<kafkascope::sim::Partition>(t.partitions[2])
            .unwrap()
            .ordinal
    };
    let at = |ms: u64| {
        let mut sim = Sim::new(&scenario);
        sim.run_until(ms);
        sim
    };
    // Before the application sends it, nothing to follow.
    assert_eq!(resolve(at(2666).world(), &record), None);
    // In its batch: made at 2.666 s, it waits for linger.ms.
    let mut sim = at(2667);
    let picked = resolve(sim.world(), &record).expect("user-7 is in its producer");
    let mut acks = AckScan::default();
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert_eq!(t.key.as_deref(), Some("user-7"));
    assert_eq!((t.topic.as_str(), t.partition), ("orders", 2));
    let math = t.partitioner.unwrap();
    assert_eq!(
        (math.murmur2 as u32, math.positive, math.partition),
        (0x2987_fe7c, 696_778_364, 2)
    );
    assert!(t.in_batch && t.wires.is_empty() && t.offset.is_none() && !t.acked);
    // On the wire: the ProduceRequest that carries it left at 2.671 s.
    let mut sim = at(2672);
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert!(!t.in_batch && t.wires.len() == 1 && t.replicas.is_empty());
    // In the leader's log at offset 4, then in the followers' too.
    let mut sim = at(2673);
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert_eq!((t.offset, t.replicas.clone()), (Some(4), vec![3]));
    assert!(!t.committed && !t.acked);
    assert_eq!(
        at_offset(sim.world(), orders_2(&sim), 4).map(|p| p.id),
        Some(picked.id),
        "a click on its cell picks the same record"
    );
    let mut sim = at(2674);
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert_eq!(t.replicas, vec![3, 1, 2]);
    // Committed once the high watermark passes it; acknowledged once the answer is back.
    let mut sim = at(2676);
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert!(t.committed && t.acked);
    assert_eq!(t.groups.len(), 1, "fulfilment reads orders");
    assert!(t.groups.iter().all(|g| !g.consumed && !g.committed));
    // By the end, the group has consumed and committed it, and it survived the crash of the
    // leader it was written to: broker 3's copy is still there, with 1's and 2's.
    let mut sim = at(scenario.duration_ms);
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert_eq!(t.groups.len(), 1);
    assert!(t.groups.iter().all(|g| g.consumed && g.committed));
    assert_eq!(t.replicas, vec![3, 1, 2]);
    // Seeking back before it was acknowledged: the scan of the ledger starts again; before it
    // was made, there is nothing to show.
    let mut sim = at(2673);
    assert!(!trace(sim.world_mut(), picked, &mut acks).unwrap().acked);
    let mut sim = at(2000);
    assert_eq!(trace(sim.world_mut(), picked, &mut acks), None);
}

/// A run of the walkthrough to `ms`.
fn walkthrough_at(ms: u64) -> Sim {
    let (_, scenario) = walkthrough();
    let mut sim = Sim::new(&scenario);
    sim.run_until(ms);
    sim
}

/// The keys in orders-2's leader log, by offset.
fn leader_keys(sim: &Sim) -> Vec<Option<String>> {
    let world = sim.world();
    let cluster = world.resource::<Cluster>();
    let t = cluster.topics.iter().find(|t| t.name == "orders").unwrap();
    let p = world
        .get::<kafkascope::sim::Partition>(t.partitions[2])
        .unwrap();
    let leader = world
        .get::<kafkascope::sim::Replica>(p.leader_replica().unwrap())
        .unwrap();
    leader
        .log
        .iter()
        .map(|r| kafkascope::sim::producer::record_key(world, r))
        .collect()
}

#[test]
fn the_narrations_numbers_are_the_models() {
    let (tour, _) = walkthrough();
    let b = |n: usize| &tour.beats[n - 1];
    // Beat 2: the batch of user-7, user-9 and user-3 lands at offsets 4, 5 and 6; the log end
    // offset goes from 4 to 7.
    let before = leader_keys(&walkthrough_at(b(2).from_ms));
    assert_eq!(before.len(), 4);
    let after = leader_keys(&walkthrough_at(b(2).to_ms));
    let keys: Vec<&str> = after[4..].iter().map(|k| k.as_deref().unwrap()).collect();
    assert_eq!(keys, ["user-7", "user-9", "user-3"]);
    // Beat 3: the leader's high watermark reaches 7 before the producer hears back (acks=all),
    // and the followers learn it by the beat's end.
    let report_at = |ms: u64| Report::of(&walkthrough_at(ms));
    let hw = |r: &Report, broker: u32| {
        let p = r
            .partitions
            .iter()
            .find(|p| p.topic == "orders" && p.partition == 2)
            .unwrap();
        p.replicas
            .iter()
            .find(|x| x.broker == broker)
            .unwrap()
            .high_watermark
    };
    let acked = |r: &Report| r.producers[0].stats.acked;
    let first_hw_7 = (b(3).from_ms..b(3).to_ms)
        .find(|ms| hw(&report_at(*ms), 3) >= 7)
        .expect("the leader's high watermark reaches 7 in beat 3");
    let first_ack = (b(3).from_ms..b(3).to_ms)
        .find(|ms| acked(&report_at(*ms)) > acked(&report_at(b(3).from_ms)))
        .expect("the producer is answered in beat 3");
    assert!(first_hw_7 < first_ack, "{first_hw_7} before {first_ack}");
    let end = report_at(b(3).to_ms);
    assert!(hw(&end, 1) >= 7 && hw(&end, 2) >= 7);
    // Beat 4: follower 2 leaves orders-2's ISR, and rejoins after the link heals (16.5 s),
    // within the beat.
    let report = report_at(b(4).to_ms);
    let in_beat = |at: u64| (b(4).from_ms..b(4).to_ms).contains(&at);
    let shrink = report.events.iter().find(|e| {
        matches!(&e.kind, EventKind::IsrShrink { topic, partition: 2, removed, .. }
            if topic == "orders" && removed == &[2])
    });
    let expand = report.events.iter().find(|e| {
        matches!(&e.kind, EventKind::IsrExpand { topic, partition: 2, added, .. }
            if topic == "orders" && added == &[2])
    });
    let (shrink, expand) = (shrink.unwrap().at_ms, expand.unwrap().at_ms);
    assert!(in_beat(shrink) && in_beat(expand) && shrink < 16_500 && 16_500 < expand);
    // Beat 6: the range assignor gives orders-2 to fulfilment-2, which fetches it from broker 1.
    let report = report_at(b(6).to_ms);
    assert_eq!(
        report.consumer_groups[0].assignment["fulfilment-2"],
        serde_json::json!(["orders-2"])
    );
    let p = report
        .partitions
        .iter()
        .find(|p| p.topic == "orders" && p.partition == 2)
        .unwrap();
    assert_eq!(p.leader, Some(1));
    // Beat 7: fulfilment commits to __consumer_offsets-12, led by broker 1, and commits 42 for
    // orders-2 within the beat.
    let offsets = report
        .partitions
        .iter()
        .find(|p| p.topic == "__consumer_offsets")
        .unwrap();
    assert_eq!((offsets.partition, offsets.leader), (12, Some(1)));
    let committed = |ms: u64| orders_2(&report_at(ms)).2;
    assert!(committed(b(7).from_ms) < Some(42));
    assert_eq!(committed(b(7).to_ms), Some(42));
}

#[test]
fn a_bad_tour_is_refused_with_the_field() {
    let tour = |beats: &str, rest: &str| {
        format!(r#"(name: "t", title: "t", scenario: "quickstart", beats: [{beats}]{rest})"#)
    };
    let beat =
        |fields: &str| format!(r#"(title: "a", component: producer, narration: "n.", {fields})"#);
    let one = |fields: &str| tour(&beat(fields), "");
    let ok = "from_ms: 0, to_ms: 5, speed: 1.0";
    for (source, says) in [
        (tour("", ""), "test.ron: beats: "),
        (
            tour(&beat(ok), "").replace("quickstart", "no-such"),
            "test.ron: scenario: ",
        ),
        (
            one("from_ms: 10, to_ms: 5, speed: 1.0"),
            "test.ron: beats[0].to_ms: ",
        ),
        (
            one("from_ms: 0, to_ms: 999999, speed: 1.0"),
            "test.ron: beats[0].to_ms: ",
        ),
        (
            tour(
                &format!("{}, {}", beat(ok), beat("from_ms: 3, to_ms: 9, speed: 1.0")),
                "",
            ),
            "test.ron: beats[1].from_ms: ",
        ),
        (
            one(&format!("{ok}, frame: [Partition(\"orders\", 9)]")),
            "test.ron: beats[0].frame[0]: ",
        ),
        (
            one("from_ms: 0, to_ms: 5, speed: 1000.0"),
            "test.ron: beats[0].speed: ",
        ),
        (
            one("from_ms: 0, to_ms: 5, speed: NaN"),
            "test.ron: beats[0].speed: ",
        ),
        (
            one(&format!("{ok}, highlight: [Record]")),
            "test.ron: beats[0].highlight[0]: ",
        ),
        (
            tour(
                &beat(ok),
                r#", after: [(label: "x", about: "y", scenario: Some("no-such"))]"#,
            ),
            "test.ron: after[0].scenario: ",
        ),
        (
            tour(
                &beat(ok),
                r#", after: [(label: "x", about: "y", tour: Some("no-such"))]"#,
            ),
            "test.ron: after[0].tour: ",
        ),
        (
            tour(&beat(ok), r#", after: [(label: "x", about: "y")]"#),
            "test.ron: after[0]: ",
        ),
        (
            tour(
                &beat(ok),
                r#", lab: Some((runs: [], was_ms: 0, now_ms: 5, metrics: [AckedLost], prevent: ["x"]))"#,
            ),
            "test.ron: lab.runs: ",
        ),
        (
            tour(
                &beat(ok),
                r#", lab: Some((runs: [(label: "a", edits: [ReplicationFactor("orders", 9)])],
                    was_ms: 0, now_ms: 5, metrics: [AckedLost], prevent: ["x"]))"#,
            ),
            "test.ron: lab.runs[0].edits: ",
        ),
        (
            tour(
                &beat(ok),
                r#", lab: Some((runs: [(label: "a")], was_ms: 0, now_ms: 5,
                    metrics: [Rebalances("no-such")], prevent: ["x"]))"#,
            ),
            "test.ron: lab.metrics[0]: ",
        ),
        (
            tour(
                &beat(ok),
                r#", lab: Some((runs: [(label: "a")], was_ms: 5, now_ms: 5, metrics: [AckedLost], prevent: ["x"]))"#,
            ),
            "test.ron: lab.was_ms: ",
        ),
        (tour(&beat(ok), ", bests: []"), "test.ron:1:"),
    ] {
        let message = match Tour::parse(&source, "test.ron") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{source}: accepted"),
        };
        assert!(message.contains(says), "{source}: {message}");
    }
    // The same beats, well formed, are a tour.
    assert!(Tour::parse(&tour(&beat(ok), ""), "test.ron").is_ok());
}

/// Every built-in tour and lab does what its beats say they show, when they say it, and nothing
/// a beat says comes later has happened by its end.
#[test]
fn every_built_in_tour_keeps_its_contract() {
    for built_in in kafkascope::tour::BUILT_IN_TOURS {
        let (tour, _) = Tour::built_in(built_in.name).unwrap_or_else(|e| panic!("{e}"));
        let broken = kafkascope::view::contract::check(&tour).unwrap();
        assert!(broken.is_empty(), "{}: {broken:?}", built_in.name);
        assert!(
            tour.beats.iter().any(|b| !b.shows.is_empty()),
            "{}: its decisive moment is in a contract",
            built_in.name
        );
    }
}

/// A beat cut a millisecond too late shows what the next one says is still to come: the check
/// names the beat and the expectation.
#[test]
fn a_beat_that_shows_the_next_beats_moment_breaks_its_contract() {
    let (mut tour, _) = walkthrough();
    tour.beats[1].to_ms += 1;
    tour.beats[2].from_ms += 1;
    let broken = kafkascope::view::contract::check(&tour).unwrap();
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert_eq!(broken[0].beat, 2);
    assert!(
        broken[0]
            .why
            .contains("Fetched(Followers(\"orders\", 2), Record)")
    );
    assert!(broken[0].why.contains("has not happened by its end"));
    assert_eq!(broken[1].beat, 3);
    assert!(broken[1].why.contains("outside"));
}

/// Beat 4 pauses the moment follower 2 leaves the ISR, with the link still cut and follower 2
/// out; the next step goes on to the rejoin. Replaying the beat reaches the same hold.
#[test]
fn a_beat_pauses_at_its_hold_and_goes_on_with_the_next_step() {
    let (tour, scenario) = walkthrough();
    let tour = tour.with_holds().unwrap();
    let beat = &tour.beats[3];
    let holds = tour.holds_of(3).to_vec();
    assert_eq!(holds.len(), 1, "{holds:?}");
    assert!(holds[0].why.contains("ISR shrinks"), "{}", holds[0].why);
    let mut sim = Sim::new(&scenario);
    let mut place = Place::open(3, false);
    let play = |sim: &mut Sim, place: &mut Place, step: Step| {
        let cue = place.step(&tour, step).expect("a step moves");
        sim.seek(cue.at_ms);
        sim.run_until(cue.stop_ms);
        place.reached(&tour, sim.now_ms());
        cue
    };
    for _ in 0..2 {
        let cue = play(&mut sim, &mut place, Step::Replay);
        assert_eq!((cue.at_ms, cue.stop_ms), (beat.from_ms, holds[0].at_ms));
        assert_eq!(place.stage, Stage::Held(0));
        let report = Report::of(&sim);
        let p = report
            .partitions
            .iter()
            .find(|p| p.topic == "orders" && p.partition == 2)
            .unwrap();
        assert_eq!(p.isr, [3, 1], "follower 2 is out at the hold");
        assert!(
            report
                .events
                .iter()
                .any(|e| matches!(e.kind, EventKind::LinkCut { .. }))
        );
        assert!(
            !report
                .events
                .iter()
                .any(|e| matches!(e.kind, EventKind::LinkHealed { .. }))
        );
        let cue = play(&mut sim, &mut place, Step::Next);
        assert_eq!(
            (cue.at_ms, cue.stop_ms, cue.play),
            (holds[0].at_ms, beat.to_ms, true)
        );
        assert_eq!(place.stage, Stage::Ended);
    }
}
