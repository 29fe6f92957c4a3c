//! What the sandbox does to a run, through the model's one path for it (`Sim::act`, which the
//! window's controls call): saved and loaded again it runs the same, and no sequence of changes
//! breaks the model.

use kafkascope_model::report::Report;
use kafkascope_model::scenario::{Acks, Action, Keys, ProducerSettings, Scenario, Stop};
use kafkascope_model::sim::{Sim, SimRng};

/// Runs `scenario` to its end, giving each action at its instant as the sandbox does.
fn run_acting(scenario: &Scenario, actions: &[(u64, Action)]) -> (Report, Vec<(u64, Action)>) {
    let mut sim = Sim::new(scenario);
    for (at, action) in actions {
        sim.run_until(*at);
        sim.act(action.clone());
    }
    sim.run_until(scenario.duration_ms);
    (Report::of(&sim), sim.actions().to_vec())
}

#[test]
fn a_saved_sandbox_run_loads_as_the_same_run() {
    let scenario = crate::built_in("quickstart");
    let topic = scenario.producers[0].topic.clone();
    let producer = scenario.producers[0].name.clone();
    let actions = vec![
        (3_000, Action::ControlledShutdown(2)),
        (3_000, Action::SetMinIsr(topic.clone(), 2)),
        (
            6_000,
            Action::SetProducer(
                producer,
                ProducerSettings {
                    linger_ms: Some(20),
                    keys: Some(Keys::Random(40)),
                    ..ProducerSettings::default()
                },
            ),
        ),
        (8_000, Action::RestartBroker(2)),
        (9_000, Action::AddPartitions(topic.clone(), 6)),
        (12_000, Action::Reassign(topic, 0, vec![3, 1])),
    ];
    let (report, given) = run_acting(&scenario, &actions);
    assert_eq!(given, actions);
    let saved = scenario.with_actions(&given).to_ron();
    let loaded = Scenario::parse(&saved, "saved.ron").unwrap_or_else(|e| panic!("{e}\n{saved}"));
    let again = crate::run(&loaded);
    assert_eq!(report.to_json(), again.to_json());
    // The file says what was done.
    assert!(saved.contains("ControlledShutdown(2)"), "{saved}");
    assert!(saved.contains("linger_ms: 20"), "{saved}");
}

/// One control of the sandbox, drawn at random: every action a control sends, with values in
/// and out of range.
fn any_action(rng: &mut SimRng) -> Action {
    let broker = |rng: &mut SimRng| 1 + rng.below(5) as u32;
    let topic = |rng: &mut SimRng| if rng.below(8) == 0 { "nope" } else { "t" }.to_string();
    let producer = |rng: &mut SimRng| if rng.below(8) == 0 { "nope" } else { "p" }.to_string();
    let group = |rng: &mut SimRng| if rng.below(8) == 0 { "nope" } else { "g" }.to_string();
    match rng.below(26) {
        0 => Action::CrashBroker(broker(rng)),
        1 => Action::RestartBroker(broker(rng)),
        2 => Action::WipeBroker(broker(rng)),
        3 => Action::ControlledShutdown(broker(rng)),
        4 => Action::IsolateBroker(broker(rng)),
        5 => Action::HealBroker(broker(rng)),
        6 => Action::CutControllerLink(broker(rng)),
        7 => Action::HealControllerLink(broker(rng)),
        8 => Action::SlowBroker(broker(rng), rng.below(200)),
        9 => Action::RollingRestart(if rng.below(2) == 0 {
            Stop::Controlled
        } else {
            Stop::Crash
        }),
        10 => Action::AddBroker,
        11 => Action::AddPartitions(topic(rng), rng.below(8) as u32),
        12 => {
            let n = rng.below(4);
            Action::Reassign(
                topic(rng),
                rng.below(4) as u32,
                (0..n).map(|_| broker(rng)).collect(),
            )
        }
        13 => Action::SetMinIsr(topic(rng), rng.below(5) as u32),
        14 => Action::SetUncleanElection(topic(rng), rng.below(2) == 0),
        15 => Action::SetEligibleLeaderReplicas(rng.below(2) == 0),
        16 => Action::PreferredElection,
        17 => Action::SetGroupMembers(group(rng), rng.below(6) as u32),
        18 => Action::AddConsumer(group(rng)),
        19 => Action::RemoveConsumer(group(rng)),
        20 => Action::CrashConsumer(group(rng)),
        21 => Action::SetConsumerRate(group(rng), rng.below(2000) as u32),
        22 => Action::SetAcks(
            producer(rng),
            [Acks::Zero, Acks::One, Acks::All][rng.below(3) as usize],
        ),
        23 => Action::SetRate(producer(rng), rng.below(3000) as u32),
        24 => Action::SetProducer(
            producer(rng),
            ProducerSettings {
                acks: (rng.below(2) == 0)
                    .then(|| [Acks::Zero, Acks::One, Acks::All][rng.below(3) as usize]),
                linger_ms: (rng.below(2) == 0).then(|| rng.below(200)),
                batch_size: (rng.below(2) == 0).then(|| rng.below(40_000) as u32),
                enable_idempotence: (rng.below(3) == 0).then(|| match rng.below(3) {
                    0 => None,
                    1 => Some(true),
                    _ => Some(false),
                }),
                keys: (rng.below(3) == 0).then(|| Keys::Random(rng.below(20) as u32)),
                records_per_sec: (rng.below(3) == 0).then(|| rng.below(2000) as u32),
            },
        ),
        _ => Action::Produce(
            producer(rng),
            Some(format!("k{}", rng.below(9))),
            1 + rng.below(50),
        ),
    }
}

/// Thousands of changes through `Sim::act`, with seeks back and forth between them: the model
/// refuses what cannot apply and never panics, and no invariant breaks.
#[test]
fn random_sandbox_changes_never_break_the_model() {
    let base = crate::scenario(
        r#"(
        name: "sandbox", duration_ms: 120000,
        cluster: (brokers: 3, session_timeout_ms: 6000, heartbeat_interval_ms: 1000),
        topics: [(name: "t", partitions: 3, replication_factor: 3, min_insync_replicas: 2)],
        producers: [(name: "p", topic: "t", acks: All, records_per_sec: 200, keys: Random(100))],
        consumer_groups: [(name: "g", topics: ["t"], members: 2, records_per_sec: 150)],
    )"#,
    );
    let mut acted = 0;
    for seed in 0..6 {
        let mut scenario = base.clone();
        scenario.seed = seed;
        if seed % 2 == 1 {
            scenario.consumer_groups[0].protocol =
                kafkascope_model::scenario::GroupProtocol::Consumer;
        }
        let mut rng = SimRng::new(seed + 77);
        let mut sim = Sim::new(&scenario);
        while sim.now_ms() < scenario.duration_ms - 1_000 {
            let now = sim.now_ms();
            match rng.below(20) {
                // Seeking back replays what was given; it must not break anything either.
                0 => sim.seek(now.saturating_sub(rng.below(2_000))),
                _ => {
                    sim.act(any_action(&mut rng));
                    acted += 1;
                }
            }
            sim.run_until(sim.now_ms() + 1 + rng.below(400));
        }
        sim.run_until(scenario.duration_ms);
        let report = Report::of(&sim);
        assert!(
            report.invariant_violations.is_empty(),
            "seed {seed}: {:?}",
            report.invariant_violations
        );
    }
    assert!(acted > 1_000, "{acted} changes");
}

/// The refusals in a run's event log, with their instants.
fn refusals(sim: &Sim) -> Vec<(u64, String, String)> {
    crate::refusals(&Report::of(sim))
}

/// An action given at an earlier instant than those already taken is inserted: the later ones
/// stay and replay in order, and one that can no longer apply is refused with Kafka's reason.
/// Only the explicit discard drops them.
#[test]
fn an_earlier_action_keeps_the_later_ones_and_they_replay_in_order() {
    let scenario = crate::built_in("quickstart");
    let topic = scenario.producers[0].topic.clone();
    let producer = scenario.producers[0].name.clone();
    let mut sim = Sim::new(&scenario);
    sim.run_until(20_000);
    sim.act(Action::AddPartitions(topic.clone(), 4));
    sim.run_until(40_000);
    sim.act(Action::ControlledShutdown(2));
    sim.run_until(45_000);
    // Back to 15.8 s: the two later actions are still to come.
    sim.seek(15_800);
    assert_eq!(sim.actions_after_now(), 2);
    let acks_one = Action::SetProducer(
        producer,
        ProducerSettings {
            acks: Some(Acks::One),
            enable_idempotence: Some(None),
            ..ProducerSettings::default()
        },
    );
    sim.act(acks_one.clone());
    sim.seek(10_000);
    sim.act(Action::CrashBroker(2));
    let expected = vec![
        (10_000, Action::CrashBroker(2)),
        (15_800, acks_one),
        (20_000, Action::AddPartitions(topic, 4)),
        (40_000, Action::ControlledShutdown(2)),
    ];
    assert_eq!(sim.actions(), expected.as_slice());
    sim.run_until(scenario.duration_ms);
    // Broker 2 crashed at 10 s and was never restarted: its shutdown at 40 s is refused.
    let refused = refusals(&sim);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, 40_000);
    assert!(
        refused[0].2.contains("broker 2 is not running"),
        "{refused:?}"
    );
    // The run is the one a scenario file with those four actions gives.
    let report = Report::of(&sim);
    assert_eq!(
        report
            .partitions
            .iter()
            .filter(|p| !p.topic.starts_with("__"))
            .count(),
        4
    );
    let saved = scenario.with_actions(sim.actions()).to_ron();
    let loaded = Scenario::parse(&saved, "saved.ron").unwrap();
    assert_eq!(report.to_json(), crate::run(&loaded).to_json());

    // Discarding what came after 30 s keeps the first three.
    sim.seek(30_000);
    assert_eq!(sim.actions_after_now(), 1);
    assert_eq!(sim.discard_later_actions(), 1);
    assert_eq!(sim.actions(), &expected[..3]);
    sim.run_until(scenario.duration_ms);
    assert!(refusals(&sim).is_empty(), "{:?}", refusals(&sim));
    let saved = scenario.with_actions(sim.actions()).to_ron();
    let loaded = Scenario::parse(&saved, "saved.ron").unwrap();
    assert_eq!(Report::of(&sim).to_json(), crate::run(&loaded).to_json());
}
