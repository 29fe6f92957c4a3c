//! The sandbox's controls, driven as the Operations panel drives them: each change goes through
//! `control_for` (which refuses an impossible set-up) and `app::apply` (which the window's
//! playback runs), side-by-side runs included. Thousands of random changes, in and out of range:
//! nothing panics and no invariant breaks in either run.

use kafkascope::app::{Applied, Change, Control, Model, Playback, Twin, apply, control_for, play};
use kafkascope::report::Report;
use kafkascope::scenario::{
    Acks, Action, Assignor, Edit, GroupProtocol, Keys, ProducerSettings, Stop,
};
use kafkascope::sim::{Sim, SimRng};

/// A change the panel or the broker menu can make.
fn any_change(rng: &mut SimRng) -> Change {
    let broker = |rng: &mut SimRng| 1 + rng.below(5) as u32;
    let name =
        |rng: &mut SimRng, real: &str| if rng.below(10) == 0 { "nope" } else { real }.to_string();
    let edit = |rng: &mut SimRng| match rng.below(14) {
        11 => Edit::EligibleLeaderReplicas(rng.below(2) == 0),
        12 => Edit::Acks(
            name(rng, "p"),
            [Acks::Zero, Acks::One, Acks::All][rng.below(3) as usize],
        ),
        13 => Edit::Keys(name(rng, "p"), Keys::Random(rng.below(50) as u32)),
        0 => Edit::Brokers(rng.below(15) as u32),
        1 => Edit::Racks(rng.below(2) == 0),
        2 => Edit::RackAwareSelector(rng.below(2) == 0),
        3 => Edit::Partitions(name(rng, "t"), rng.below(70) as u32),
        4 => Edit::ReplicationFactor(name(rng, "t"), rng.below(6) as u32),
        5 => Edit::MinIsr(name(rng, "t"), rng.below(5) as u32),
        6 => Edit::UncleanElection(name(rng, "t"), rng.below(2) == 0),
        7 => Edit::Protocol(
            name(rng, "g"),
            [GroupProtocol::Classic, GroupProtocol::Consumer][rng.below(2) as usize],
        ),
        8 => Edit::Assignor(
            name(rng, "g"),
            [
                None,
                Some(Assignor::Range),
                Some(Assignor::CooperativeSticky),
                Some(Assignor::Uniform),
                Some(Assignor::Sticky),
            ][rng.below(5) as usize],
        ),
        9 => Edit::GroupRack(
            name(rng, "g"),
            [None, Some("rack-2"), Some("x")][rng.below(3) as usize].map(str::to_string),
        ),
        _ => Edit::Members(name(rng, "g"), rng.below(40) as u32),
    };
    match rng.below(40) {
        0 => Change::Restart(edit(rng)),
        1 => Change::Compare(edit(rng)),
        2 => Change::EndCompare,
        3 => Change::Restart(Edit::CommitAfterEachBatch(
            name(rng, "g"),
            rng.below(2) == 0,
        )),
        n => Change::Act(match n % 18 {
            0 => Action::CrashBroker(broker(rng)),
            1 => Action::RestartBroker(broker(rng)),
            2 => Action::ControlledShutdown(broker(rng)),
            3 => Action::IsolateBroker(broker(rng)),
            4 => Action::HealBroker(broker(rng)),
            5 => Action::CutControllerLink(broker(rng)),
            6 => Action::SlowBroker(broker(rng), rng.below(100)),
            7 => Action::RollingRestart(if rng.below(2) == 0 {
                Stop::Controlled
            } else {
                Stop::Crash
            }),
            8 => Action::AddBroker,
            9 => Action::AddPartitions(name(rng, "t"), rng.below(8) as u32),
            10 => Action::Reassign(
                name(rng, "t"),
                rng.below(4) as u32,
                (0..rng.below(4)).map(|_| broker(rng)).collect(),
            ),
            11 => Action::SetMinIsr(name(rng, "t"), rng.below(5) as u32),
            12 => Action::SetUncleanElection(name(rng, "t"), rng.below(2) == 0),
            13 => Action::PreferredElection,
            14 => Action::SetGroupMembers(name(rng, "g"), rng.below(8) as u32),
            15 => Action::SetConsumerRate(name(rng, "g"), rng.below(2000) as u32),
            16 => Action::WipeBroker(broker(rng)),
            _ => Action::SetProducer(
                name(rng, "p"),
                ProducerSettings {
                    acks: (rng.below(2) == 0)
                        .then(|| [Acks::Zero, Acks::One, Acks::All][rng.below(3) as usize]),
                    keys: (rng.below(2) == 0).then(|| {
                        [
                            Keys::None,
                            Keys::Random(1000),
                            Keys::Fixed("hot".into()),
                            Keys::Sequence("key-".into()),
                        ][rng.below(4) as usize]
                            .clone()
                    }),
                    ..ProducerSettings::default()
                },
            ),
        }),
    }
}

/// Every invariant the model checks holds in `sim`.
fn assert_sound(sim: &Sim, what: &str) {
    let report = Report::of(sim);
    assert!(
        report.invariant_violations.is_empty(),
        "{what}: {:?}",
        report.invariant_violations
    );
}

/// The sandbox driven at random as a reader drives it, through the controls' one path
/// (`control_for`, then `apply`, as the broker menu, the Operations panel, the keys and the
/// timeline send them): actions, set-up changes, side-by-side runs, play, seeks, steps and
/// "discard what came after". 10^4 steps over several seeds: nothing panics, no invariant
/// breaks in either run, and no action given is ever dropped but by the discard the reader
/// confirmed.
#[test]
fn random_sandbox_controls_never_break_either_run() {
    const STEPS_PER_SEED: usize = 1_700;
    let base = crate::scenario(
        r#"(
        name: "sandbox", duration_ms: 30000,
        cluster: (brokers: 3, session_timeout_ms: 6000, heartbeat_interval_ms: 1000),
        topics: [(name: "t", partitions: 3, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 100, keys: Random(100))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: 80)],
    )"#,
    );
    let (mut steps, mut changes, mut refused, mut restarts, mut compared, mut discarded) =
        (0, 0, 0, 0, 0, 0);
    let mut past_the_end = false;
    for seed in 0..6 {
        let mut rng = SimRng::new(seed + 11);
        let mut scenario = base.clone();
        scenario.seed = seed;
        let mut model = Model {
            sim: Sim::new(&scenario),
            scenario,
        };
        let mut twin: Option<Twin> = None;
        let mut playback = sandbox_playback(1.0);
        for _ in 0..STEPS_PER_SEED {
            steps += 1;
            let given = model.sim.actions().len();
            // What the reader does: mostly play and act, now and then the rest.
            let control = match rng.below(10) {
                0..=3 => {
                    let change = any_change(&mut rng);
                    changes += 1;
                    match control_for(&change, &model.scenario, model.sim.actions()) {
                        Ok(control) => control,
                        Err(why) => {
                            // Refused with a reason, before anything changed.
                            assert!(!why.is_empty());
                            refused += 1;
                            continue;
                        }
                    }
                }
                4 => {
                    let at = model.sim.now_ms();
                    Control::Seek(at.saturating_sub(rng.below(5_000)))
                }
                5 => Control::Seek(rng.below(model.end_ms() + 1)),
                6 => [Control::StepForward, Control::StepBack][rng.below(2) as usize].clone(),
                7 => Control::DiscardLater,
                _ => {
                    // Play a few frames at one of the speed presets.
                    playback.paused = false;
                    // 100x now and then: enough to pass the scenario's end.
                    playback.speed = [0.1, 1.0, 10.0, 10.0, 10.0, 100.0][rng.below(6) as usize];
                    for _ in 0..1 + rng.below(6) {
                        kafkascope::app::play(&mut model, &mut playback, 1000.0 / 60.0);
                    }
                    if let Some(t) = twin.as_mut() {
                        apply(&Control::Seek(model.sim.now_ms()), &mut model, Some(t));
                    }
                    assert!(!playback.paused, "the sandbox never stops on its own here");
                    past_the_end |= model.sim.now_ms() > model.scenario.duration_ms;
                    continue;
                }
            };
            let later = model.sim.actions_after_now();
            let kind = std::mem::discriminant(&control);
            match apply(&control, &mut model, twin.as_mut()) {
                Applied::Loaded => {
                    restarts += 1;
                    twin = None;
                    continue;
                }
                Applied::Compare(new) => {
                    compared += 1;
                    twin = Some(*new);
                }
                Applied::EndCompare => twin = None,
                Applied::Moved { .. } => {}
            }
            // No action is lost: an action adds one, a discard drops exactly those after the
            // playhead, and nothing else changes the list.
            let now_given = model.sim.actions().len();
            if kind == std::mem::discriminant(&Control::Act(Action::AddBroker)) {
                assert_eq!(now_given, given + 1, "an action was dropped");
            } else if kind == std::mem::discriminant(&Control::DiscardLater) {
                assert_eq!(
                    now_given,
                    given - later,
                    "the discard dropped the wrong ones"
                );
                discarded += later;
            } else {
                assert_eq!(now_given, given, "{control:?} changed the actions");
            }
            if let Some(t) = &twin {
                assert_eq!(
                    t.model.sim.now_ms(),
                    model.sim.now_ms(),
                    "the second run keeps the first one's instant"
                );
                assert_eq!(t.model.sim.actions(), model.sim.actions());
            }
        }
        assert_sound(&model.sim, &format!("seed {seed}"));
        if let Some(t) = &twin {
            assert_sound(&t.model.sim, &format!("seed {seed}, second run"));
        }
    }
    assert!(steps >= 10_000, "{steps} steps");
    assert!(changes >= 3_000, "{changes} changes");
    assert!(
        restarts > 10 && compared > 10 && discarded > 10,
        "{restarts} restarts, {compared} side by side, {discarded} discarded"
    );
    assert!(refused > 10, "{refused} refused");
    assert!(past_the_end, "the runs went past their scenario's end");
}

#[test]
fn an_impossible_set_up_is_refused_with_kafkas_reason() {
    let scenario = crate::built_in("quickstart");
    let refused =
        |edit: Edit| control_for(&Change::Restart(edit), &scenario, &[]).expect_err("refused");
    let brokers = scenario.cluster.brokers;
    let rf = refused(Edit::ReplicationFactor(
        scenario.topics[0].name.clone(),
        brokers + 1,
    ));
    assert_eq!(
        rf,
        format!(
            "Unable to replicate the partition {} time(s): The target replication factor of {} cannot be reached because only {brokers} broker(s) are registered.",
            brokers + 1,
            brokers + 1
        )
    );
    assert!(refused(Edit::Brokers(13)).contains("1 to 12"));
    assert!(refused(Edit::Partitions(scenario.topics[0].name.clone(), 65)).contains("1 to 64"));
    let fewer = refused(Edit::Brokers(1));
    assert!(
        fewer.contains("lower its replication factor first"),
        "{fewer}"
    );
}

#[test]
fn a_restart_replays_what_was_done_and_a_side_by_side_run_takes_the_same_actions() {
    let scenario = crate::built_in("quickstart");
    let mut model = Model {
        sim: Sim::new(&scenario),
        scenario: scenario.clone(),
    };
    model.sim.run_until(5_000);
    let crash = Control::Act(Action::CrashBroker(2));
    apply(&crash, &mut model, None);
    model.sim.run_until(8_000);
    let topic = scenario.topics[0].name.clone();
    let edit = Edit::MinIsr(topic.clone(), 1);
    let Applied::Compare(twin) = apply(
        &control_for(
            &Change::Compare(edit.clone()),
            &model.scenario,
            model.sim.actions(),
        )
        .expect("a valid edit"),
        &mut model,
        None,
    ) else {
        panic!("a side-by-side run begins");
    };
    let mut twin = *twin;
    assert_eq!(twin.labels[1], edit.describe());
    assert_eq!(twin.model.sim.now_ms(), 8_000);
    // The crash given before the comparison was given to the second run too.
    assert_eq!(twin.model.sim.actions(), model.sim.actions());
    let restart = Control::Act(Action::RestartBroker(2));
    apply(&restart, &mut model, Some(&mut twin));
    apply(&Control::Seek(20_000), &mut model, Some(&mut twin));
    assert_eq!(twin.model.sim.now_ms(), 20_000);
    assert_eq!(twin.model.sim.actions(), model.sim.actions());
    // An action taken in the past goes before the later ones, in both runs alike.
    apply(&Control::Seek(6_000), &mut model, Some(&mut twin));
    apply(
        &Control::Act(Action::CrashBroker(3)),
        &mut model,
        Some(&mut twin),
    );
    assert_eq!(twin.model.sim.actions(), model.sim.actions());
    let brokers_state = |sim: &Sim| {
        Report::of(sim)
            .brokers
            .iter()
            .map(|b| b.state.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(brokers_state(&twin.model.sim), brokers_state(&model.sim));
    // Restarted with the edit, the run replays the actions from 0 s, in their order.
    let restart = control_for(&Change::Restart(edit), &model.scenario, model.sim.actions())
        .expect("a valid edit");
    assert!(matches!(
        apply(&restart, &mut model, Some(&mut twin)),
        Applied::Loaded
    ));
    assert_eq!(model.sim.now_ms(), 0);
    assert!(model.scenario.topics[0].min_insync_replicas == 1);
    let replayed: Vec<&Action> = model.scenario.timeline.iter().map(|e| &e.action).collect();
    assert_eq!(
        replayed,
        [
            &Action::CrashBroker(2),
            &Action::CrashBroker(3),
            &Action::RestartBroker(2)
        ],
        "{replayed:?}"
    );
}

/// The sandbox's playback: open-ended, at `speed`.
fn sandbox_playback(speed: f64) -> Playback {
    Playback {
        paused: false,
        speed,
        carry_ms: 0.0,
        fixed_frame_ms: None,
        frame_target_ms: None,
        stop_ms: None,
        open_ended: true,
        halted: None,
        memory_cap: kafkascope::scenario::limits::RECORD_MEMORY_BYTES,
    }
}

/// An action given while paused is applied at the playhead: what the scene reads next shows
/// it, without pressing Play.
#[test]
fn an_action_given_while_paused_shows_at_once() {
    let scenario = crate::built_in("quickstart");
    let mut model = Model {
        sim: Sim::new(&scenario),
        scenario,
    };
    model.sim.run_until(12_000);
    apply(&Control::Act(Action::CrashBroker(2)), &mut model, None);
    let s = kafkascope::view::snapshot::Snapshot::of(model.sim.world_mut());
    assert_eq!(s.now_ms, 12_001, "the step at the playhead ran");
    let b2 = s.broker(2).expect("broker 2");
    assert!(!b2.alive, "{b2:?}");
    assert_eq!(model.sim.actions(), &[(12_000, Action::CrashBroker(2))]);
}

/// The sandbox plays on past its scenario's `duration_ms`, the timeline growing; a tour's run
/// stops there; an open-ended run stops, and says why, when its records fill the memory cap.
#[test]
fn the_sandbox_plays_on_past_the_end_until_the_memory_cap() {
    let scenario = crate::built_in("quickstart");
    let duration = scenario.duration_ms;
    let mut model = Model {
        sim: Sim::new(&scenario),
        scenario: scenario.clone(),
    };
    let mut playback = sandbox_playback(100.0);
    while model.sim.now_ms() < duration + 20_000 {
        play(&mut model, &mut playback, 1000.0 / 60.0);
        assert!(!playback.paused, "paused at {}", model.sim.now_ms());
    }
    assert_eq!(model.end_ms(), model.sim.now_ms());
    // Seeking back and forth stays within what the run has reached.
    apply(&Control::Seek(u64::MAX), &mut model, None);
    assert_eq!(model.sim.now_ms(), model.end_ms());
    apply(&Control::Seek(duration + 5_000), &mut model, None);
    assert_eq!(model.sim.now_ms(), duration + 5_000);
    // An action past the end is saved with a duration that holds it.
    apply(&Control::Act(Action::CrashBroker(3)), &mut model, None);
    let saved = model.saved();
    assert!(saved.duration_ms >= duration + 20_000);
    assert!(
        saved
            .description
            .contains("then at 65.000 s: crash broker 3"),
        "{}",
        saved.description
    );
    let again = kafkascope::scenario::Scenario::parse(&saved.to_ron(), "saved.ron")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.timeline.len(), 1);

    // A tour's run ends at its scenario's end.
    let mut tour = Model {
        sim: Sim::new(&scenario),
        scenario: scenario.clone(),
    };
    let mut playback = sandbox_playback(100.0);
    playback.open_ended = false;
    for _ in 0..1_000 {
        play(&mut tour, &mut playback, 1000.0 / 60.0);
    }
    assert!(playback.paused);
    assert_eq!(tour.sim.now_ms(), duration);

    // The memory cap, made small: the run stops and says so.
    let mut capped = Model {
        sim: Sim::new(&scenario),
        scenario,
    };
    let mut playback = sandbox_playback(100.0);
    capped.sim.run_until(10_000);
    playback.memory_cap = capped.sim.record_bytes() * 2;
    for _ in 0..10_000 {
        play(&mut capped, &mut playback, 1000.0 / 60.0);
        if playback.paused {
            break;
        }
    }
    assert!(playback.paused);
    let why = playback.halted.clone().expect("why it stopped");
    assert!(why.contains("the most a scenario may"), "{why}");
    assert!(capped.sim.record_bytes() >= playback.memory_cap);
    // Play again does not run on.
    playback.paused = false;
    let at = capped.sim.now_ms();
    play(&mut capped, &mut playback, 1000.0 / 60.0);
    assert!(playback.paused && capped.sim.now_ms() == at);
}

/// A speaker marks three beats while playing the sandbox (one framing a broker, one following a
/// record, one with no line, after a broker was crashed live and past the scenario's end), saves
/// the talk, opens it again as a tour file and plays it through: every beat is the run's own
/// state at its end, the live action included.
#[test]
fn a_talk_marked_in_the_sandbox_saves_reopens_and_plays_through() {
    use kafkascope::talk::{Draft, Moment};
    use kafkascope::tour::{Focus, RecordRef, Tour};
    let scenario = crate::built_in("quickstart");
    let duration = scenario.duration_ms;
    let mut model = Model {
        sim: Sim::new(&scenario),
        scenario,
    };
    let mut playback = sandbox_playback(10.0);
    let play_to = |model: &mut Model, playback: &mut Playback, at: u64| {
        while model.sim.now_ms() < at {
            play(model, playback, 1000.0 / 60.0);
        }
    };
    let events = |model: &Model| -> Vec<kafkascope::sim::Event> {
        let log = &model
            .sim
            .world()
            .resource::<kafkascope::sim::Runtime>()
            .events;
        log.events.iter().cloned().collect()
    };
    let mut draft = Draft::new(0);
    play_to(&mut model, &mut playback, 8_000);
    let first_end = model.sim.now_ms();
    let moment = |model: &Model| Moment {
        now_ms: model.sim.now_ms(),
        speed: 10.0,
        ..Moment::default()
    };
    draft
        .mark(
            Moment {
                frame: vec![Focus::Broker(2)],
                title: "Steady state".into(),
                line: "Three brokers share the load.".into(),
                ..moment(&model)
            },
            &events(&model),
        )
        .expect("a beat from 0 to the playhead");
    // Marking again at the same instant is refused: the beat would be empty.
    assert!(draft.mark(moment(&model), &events(&model)).is_err());
    apply(&Control::Act(Action::CrashBroker(1)), &mut model, None);
    play_to(&mut model, &mut playback, 30_000);
    let s = kafkascope::view::snapshot::Snapshot::of(model.sim.world_mut());
    let p = s
        .partitions
        .iter()
        .find(|p| !p.internal && p.replicas.iter().any(|r| r.log_end_offset > 3))
        .expect("a partition with records");
    let record = RecordRef::Offset(p.topic.clone(), p.index, 2);
    draft
        .mark(
            Moment {
                follow: Some(record.clone()),
                title: "A broker goes".into(),
                line: "Broker 1 crashes; the controller moves its leaders.".into(),
                ..moment(&model)
            },
            &events(&model),
        )
        .expect("the second beat");
    play_to(&mut model, &mut playback, duration + 10_000);
    draft
        .mark(moment(&model), &events(&model))
        .expect("the third beat, past the scenario's end");
    let ends: Vec<u64> = draft.beats.iter().map(|b| b.to_ms).collect();
    assert_eq!(draft.beats[0].from_ms, 0);
    assert_eq!(draft.beats[1].from_ms, first_end);

    let dir = std::env::temp_dir().join(format!("kafkascope-talk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (tour_path, scenario_path) = draft
        .save(&dir.join("my-talk.ron"), &model.saved())
        .expect("saved");
    assert_eq!(scenario_path, dir.join("my-talk-scenario.ron"));
    // Opened as `kafkascope tour FILE.ron` opens it, from anywhere: its run is found beside it.
    let (tour, run) = Tour::load(tour_path.to_str().unwrap()).expect("the saved tour loads");
    assert_eq!(tour.beats.len(), 3);
    assert_eq!(tour.beats[0].title, "Steady state");
    assert_eq!(tour.beats[0].frame, vec![Focus::Broker(2)]);
    assert_eq!(tour.beats[0].highlight, vec![Focus::Broker(2)]);
    assert_eq!(tour.beats[1].highlight, vec![Focus::Record]);
    assert_eq!(tour.follow, Some(record));
    assert_eq!(tour.beats[2].title, "Beat 3");
    // The beat marked without a line says what happened in its span.
    assert!(
        tour.beats[2].narration.starts_with("From 30."),
        "{}",
        tour.beats[2].narration
    );
    assert_eq!(tour.beats.iter().map(|b| b.to_ms).collect::<Vec<_>>(), ends);
    assert!(run.duration_ms >= ends[2], "the run lasts to the last mark");
    assert!(
        run.timeline
            .iter()
            .any(|t| t.action == Action::CrashBroker(1)),
        "the live action is in the saved run"
    );
    assert!(
        kafkascope::view::contract::check(&tour)
            .expect("checked")
            .is_empty()
    );
    // Played through beat by beat as the window plays a tour (an exact seek to each start,
    // then on to its end), each beat ends on the sandbox run's own state.
    let mut played = Sim::new(&run);
    for b in &tour.beats {
        played.seek(b.from_ms);
        played.run_until(b.to_ms);
        model.sim.seek(b.to_ms);
        assert_eq!(
            Report::of(&played).to_json(),
            Report::of(&model.sim).to_json(),
            "{} ends elsewhere than the run did",
            b.title
        );
    }
    played.seek(tour.beats[1].to_ms);
    assert!(
        kafkascope::view::follow::resolve(played.world(), tour.follow.as_ref().unwrap()).is_some(),
        "the followed record is there"
    );
    let _ = std::fs::remove_dir_all(dir);
}
