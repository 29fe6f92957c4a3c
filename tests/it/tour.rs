//! The guided walkthrough, headless: its tour file, the story its scenario tells (checked against
//! the scenario's own settings), exact navigation between beats, and following its record.

use kafkascope::report::Report;
use kafkascope::sim::controller::Controller;
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
    for (i, beat) in tour.beats.iter().enumerate() {
        // Two to four short sentences.
        // Sentences end with a full stop and a space (not the dots of replica.lag.time.max.ms).
        let sentences = format!("{} ", beat.narration)
            .split(". ")
            .filter(|s| !s.trim().is_empty())
            .count();
        assert!(
            (2..=4).contains(&sentences),
            "beat {}: {sentences} sentences",
            i + 1
        );
        assert!(!beat.watch_for.is_empty(), "beat {}", i + 1);
        if i > 0 {
            assert!(beat.from_ms >= tour.beats[i - 1].to_ms, "beat {}", i + 1);
        }
    }
    // The scenario ends with the last beat: the sandbox starts a run of its own.
    assert_eq!(tour.beats.last().unwrap().to_ms, scenario.duration_ms);
    assert_eq!(tour.follow, Some(RecordRef::Key("user-7".into())));
    assert!(
        tour.after.iter().any(|e| e.scenario == "quickstart"),
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
    assert_eq!(s.consumer_groups[0].members, 2);
}

/// The focused partition's numbers in a report: LEO, HW, committed, lag.
fn orders_2(report: &Report) -> (u64, u64, Option<u64>, u64) {
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
    let report = sim.report();
    assert_eq!(orders_2(&report), (42, 42, Some(42), 0));
    assert_eq!(report.acked_records_lost, 0);
    assert!(
        report.invariant_violations.is_empty(),
        "{:?}",
        report.invariant_violations
    );
    // The focused partition gets its 42nd record in beat 6 (the one the consumer is served
    // there), and no more after it.
    let leo_at = |ms: u64| {
        let mut sim = Sim::new(&scenario);
        sim.run_until(ms);
        orders_2(&sim.report()).0
    };
    assert_eq!(leo_at(tour.beats[5].from_ms), 41);
    assert_eq!(leo_at(tour.beats[5].to_ms), 42);
}

#[test]
fn in_beat_5_the_controller_fences_after_the_session_timeout_then_elects() {
    let (tour, scenario) = walkthrough();
    let beat = &tour.beats[4];
    let report = {
        let mut sim = Sim::new(&scenario);
        sim.run_until(beat.to_ms);
        sim.report()
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
    format!("{}\n{snapshot:?}", sim.report().to_json())
}

#[test]
fn every_beat_starts_from_the_same_state_forwards_and_back() {
    let (tour, scenario) = walkthrough();
    let mut sim = Sim::new(&scenario);
    let mut place = Place::open(0, false);
    // Plays a cue as the window does: an exact seek, then the beat to its end.
    let mut play = |sim: &mut Sim, place: &mut Place, step: Step| -> String {
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
    for i in 3..tour.beats.len() {
        let at_start = play(&mut sim, &mut place, Step::Next);
        assert_eq!(
            at_start,
            forward[i],
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
    assert!(t.groups.iter().all(|g| !g.consumed && !g.committed));
    // By the end, the group has consumed and committed it, and it survived the crash of the
    // leader it was written to: broker 3's copy is still there, with 1's and 2's.
    let mut sim = at(scenario.duration_ms);
    let t = trace(sim.world_mut(), picked, &mut acks).unwrap();
    assert!(t.groups.iter().all(|g| g.consumed && g.committed));
    assert_eq!(t.replicas, vec![3, 1, 2]);
    // Seeking back before it was acknowledged: the scan of the ledger starts again.
    let mut sim = at(2673);
    assert!(!trace(sim.world_mut(), picked, &mut acks).unwrap().acked);
}

#[test]
fn a_bad_tour_is_refused_with_the_field() {
    for (source, says) in [
        (
            "(name: \"t\", title: \"t\", scenario: \"quickstart\", beats: [])",
            "beats",
        ),
        (
            "(name: \"t\", title: \"t\", scenario: \"no-such\", beats: [])",
            "scenario",
        ),
        (
            r#"(name: "t", title: "t", scenario: "quickstart", beats: [
               (title: "a", component: producer, narration: "n.", from_ms: 10, to_ms: 5, speed: 1.0)])"#,
            "beats[0].to_ms",
        ),
        (
            r#"(name: "t", title: "t", scenario: "quickstart", beats: [
               (title: "a", component: producer, narration: "n.", from_ms: 0, to_ms: 5, speed: 1.0),
               (title: "b", component: leader, narration: "n.", from_ms: 3, to_ms: 9, speed: 1.0)])"#,
            "beats[1].from_ms",
        ),
        (
            r#"(name: "t", title: "t", scenario: "quickstart", beats: [
               (title: "a", component: producer, narration: "n.", from_ms: 0, to_ms: 5, speed: 1.0,
                frame: [Partition("orders", 9)])])"#,
            "beats[0].frame[0]",
        ),
        (
            r#"(name: "t", title: "t", scenario: "quickstart", beats: [
               (title: "a", component: producer, narration: "n.", from_ms: 0, to_ms: 5, speed: 1000.0)])"#,
            "beats[0].speed",
        ),
        (
            r#"(name: "t", title: "t", scenario: "quickstart", beats: [
               (title: "a", component: producer, narration: "n.", from_ms: 0, to_ms: 5, speed: 1.0,
                highlight: [Record])])"#,
            "follow",
        ),
        (
            "(name: \"t\", title: \"t\", scenario: \"quickstart\", bests: [])",
            "test.ron:1:",
        ),
    ] {
        let message = match Tour::parse(source, "test.ron") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{source}: accepted"),
        };
        assert!(message.contains(says), "{source}: {message}");
    }
}
