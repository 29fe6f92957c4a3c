//! A step runs its phases in one fixed order on one thread, each phase one system whose
//! parameters Bevy has checked for conflicts, so a run cannot depend on scheduling.

use bevy_app::App;
use kafkascope_model::report::Report;
use kafkascope_model::sim::{self, Phase, Phases};

#[test]
fn a_step_runs_every_phase_in_order() {
    let mut app = App::empty();
    app.add_plugins(sim::plugin);
    // Building the phases initializes their systems: one with conflicting parameters panics.
    let phases = Phases::new(app.world_mut());
    let order: Vec<Phase> = phases.order().collect();
    // Actions and faults come first, so every rule of the step sees them; the brokers' side
    // before the clients', whose requests then wait a step; the lag monitor after the consumers
    // it measures; retention and the cleaner act only on what the step's high watermarks have
    // passed; the checks see the whole step; the clock moves last.
    use Phase::*;
    let expected = [
        Timeline,
        Network,
        Controller,
        Replication,
        Append,
        Isr,
        Retention,
        Cleaner,
        Delayed,
        Groups,
        Consumers,
        Lag,
        Producers,
        Checks,
        Clock,
    ];
    assert_eq!(order, expected);
}

#[test]
fn a_cluster_without_topics_runs() {
    // Brokers only: nothing to follow, fetch or consume, and no rule may assume there is.
    let report = crate::run(&crate::scenario(
        r#"(name: "bare", cluster: (brokers: 3), duration_ms: 5000)"#,
    ));
    assert_eq!(report.sim_time_ms, 5000);
    assert!(report.partitions.is_empty());
    assert!(report.invariant_violations.is_empty());
}

#[test]
fn same_scenario_same_report() {
    let scenario = crate::built_in("quickstart");
    let a = crate::run(&scenario).to_json();
    let b = crate::run(&scenario).to_json();
    assert_eq!(a, b);
}

#[test]
fn the_seed_drives_randomness() {
    let mut scenario = crate::built_in("throughput");
    scenario.duration_ms = 3000;
    let a = crate::run(&scenario);
    scenario.seed += 1;
    let b = crate::run(&scenario);
    let leos = |r: &kafkascope_model::report::Report| {
        r.partitions
            .iter()
            .map(|p| p.log_end_offset)
            .collect::<Vec<_>>()
    };
    assert_ne!(leos(&a), leos(&b), "random keys differ with the seed");
    assert_eq!(
        a.producers[0].stats.sent, b.producers[0].stats.sent,
        "but the load is the same"
    );
}

#[test]
fn skipping_idle_instants_and_rules_changes_nothing() {
    // The clock jumps over instants at which no rule can act, and the timeline, fault handling,
    // the controller and the ISR check skip steps at which nothing is due for them. Stepping
    // every millisecond, and then also running those rules at every step, must give the same
    // run, byte for byte.
    for built_in in kafkascope_model::scenario::BUILT_IN {
        let mut scenario = crate::built_in(built_in.name);
        scenario.duration_ms = scenario.duration_ms.min(80_000);
        let skipping = crate::run(&scenario).to_json();
        for every_rule in [false, true] {
            let mut sim = kafkascope_model::sim::Sim::new(&scenario);
            sim.set_skip_idle(false);
            sim.set_skip_idle_rules(!every_rule);
            sim.run_until(scenario.duration_ms);
            assert!(
                skipping == Report::of(&sim).to_json(),
                "{}: the reports differ (idle rules run too: {every_rule})",
                built_in.name
            );
        }
    }
}

/// The same with the clock jumping over idle instants: a rule that skips the steps at which
/// nothing is due for it (the controller between its deadlines, the periodic ISR check, a broker
/// whose fetchers are all in flight or backing off) must still ask the clock for every instant it
/// would have asked for at every step, so that the run steps the same instants and sends the same
/// messages. In the run below, a slow coordinator leaves long idle stretches that only a request's
/// timeout ends.
#[test]
fn skipping_idle_rules_steps_the_same_instants() {
    let late_answer = crate::consumers::late_join_answer();
    let built_in = kafkascope_model::scenario::BUILT_IN
        .iter()
        .map(|b| crate::built_in(b.name));
    for mut scenario in built_in.chain([late_answer]) {
        scenario.duration_ms = scenario.duration_ms.min(80_000);
        let trace = |every_rule: bool| {
            let mut sim = kafkascope_model::sim::Sim::new(&scenario);
            sim.set_skip_idle_rules(!every_rule);
            let lines = sim.trace(scenario.duration_ms, 1_000);
            (lines, Report::of(&sim).to_json())
        };
        let (skipping, report) = trace(false);
        let (every, every_report) = trace(true);
        if let Some((a, b)) = skipping.iter().zip(&every).find(|(a, b)| a != b) {
            panic!("{}: the runs part by {a} (every rule: {b})", scenario.name);
        }
        assert!(
            report == every_report,
            "{}: the reports differ",
            scenario.name
        );
    }
}

#[test]
fn seeking_keeps_how_the_clock_steps() {
    // Restoring a checkpoint restores the model, not the run's settings.
    let scenario = crate::built_in("clean-failover");
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.set_skip_idle(false);
    sim.set_skip_idle_rules(false);
    sim.run_until(12_000);
    sim.seek(3_000);
    let clock = sim
        .world()
        .resource::<kafkascope_model::sim::Runtime>()
        .clock;
    assert!(!clock.skip_idle && !clock.skip_idle_rules);
    assert_eq!(clock.now_ms, 3_000);
}

#[test]
fn seeking_back_and_forth_gives_the_exact_state() {
    // A run straight to an instant, and runs that got there by restoring checkpoints, report the
    // same bytes.
    for name in [
        "clean-failover",
        "unclean-election",
        "rebalance-storm-cooperative",
        "compaction",
    ] {
        let scenario = crate::built_in(name);
        for at in [0, 12_345, 37_001] {
            let mut straight = kafkascope_model::sim::Sim::new(&scenario);
            straight.run_until(at);
            let expected = Report::of(&straight).to_json();

            let mut seeking = kafkascope_model::sim::Sim::new(&scenario);
            seeking.run_until(scenario.duration_ms.min(60_000));
            seeking.seek(at);
            assert_eq!(seeking.now_ms(), at);
            assert!(
                Report::of(&seeking).to_json() == expected,
                "{name}: seek back to {at}"
            );
            // And on from there, the same as a run that never went back.
            seeking.seek(at + 3_000);
            straight.run_until(at + 3_000);
            assert!(
                Report::of(&seeking).to_json() == Report::of(&straight).to_json(),
                "{name}: on from {at}"
            );
        }
    }
}

/// Bevy keeps a note of every despawned message's components for `RemovedComponents` readers until
/// the world's trackers are cleared twice; a run must clear them, or its memory grows with every
/// message it ever handled (about 4.5 notes a millisecond under `throughput`).
#[test]
fn a_long_run_forgets_the_messages_it_despawned() {
    let notes = |sim: &sim::Sim| -> usize {
        sim.world()
            .removed_components()
            .iter()
            .map(|(_, messages)| messages.len())
            .sum()
    };
    let mut sim = sim::Sim::new(&crate::built_in("throughput"));
    sim.run_until(20_000);
    // Without clearing: about 90,000. The run clears every 1024 steps, so at most the notes of
    // the last 1024 steps are left.
    let after_run = notes(&sim);
    assert!(after_run < 20_000, "{after_run} removal notes kept");
    // Stepping one instant at a time (the window app) clears after every step.
    for _ in 0..2_000 {
        sim.step();
    }
    let after_steps = notes(&sim);
    assert!(after_steps < 100, "{after_steps} removal notes kept");
}

#[test]
fn a_long_run_keeps_its_last_30_minutes_seekable_and_still_seeks_exactly() {
    // A day at 5 s apart would be 17,280 checkpoints; only the last 30 minutes' are kept, and
    // seeking within them still gives the exact state. Earlier instants go to the window's start.
    let scenario = crate::scenario(
        r#"(name: "x", duration_ms: 86400000, topics: [(name: "t", partitions: 3)],
            producers: [(name: "p", topic: "t", records_per_sec: 1, keys: Sequence("k"))])"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.run_until(scenario.duration_ms);
    let (count, every) = sim.checkpoint_spacing();
    assert_eq!(every, sim::CHECKPOINT_EVERY_MS);
    assert_eq!(count as u64, sim::SEEKABLE_MS / every + 1);
    let from = sim.seekable_from_ms();
    assert_eq!(from, scenario.duration_ms - sim::SEEKABLE_MS);
    assert!(sim.checkpoint_bytes() < sim::CHECKPOINT_BYTES);

    let at = from + 123_457;
    sim.seek(at);
    let mut straight = kafkascope_model::sim::Sim::new(&scenario);
    straight.run_until(at);
    assert!(Report::of(&sim).to_json() == Report::of(&straight).to_json());
    sim.seek(1_000);
    assert_eq!(sim.now_ms(), from, "before the window: its start");
}

#[test]
fn an_open_ended_run_keeps_its_last_30_minutes_seekable() {
    // The sandbox plays on past the scenario's end, for as long as it is left playing.
    let scenario = crate::scenario(
        r#"(name: "x", duration_ms: 60000, topics: [(name: "t", partitions: 3)],
            producers: [(name: "p", topic: "t", records_per_sec: 1, keys: Sequence("k"))])"#,
    );
    let mut sim = kafkascope_model::sim::Sim::new(&scenario);
    sim.set_open_ended(true);
    let (_, every) = sim.checkpoint_spacing();
    assert_eq!(every, sim::CHECKPOINT_EVERY_MS, "a light load");
    // Past 30 minutes, the window keeps the count at 361 (one every 5 s): never over the count
    // budget, so never thinned.
    sim.run_until(3 * sim::SEEKABLE_MS);
    assert_eq!(
        sim.checkpoint_spacing(),
        ((sim::SEEKABLE_MS / every + 1) as usize, every)
    );
    assert!(!sim.checkpoints_full());
    assert_eq!(sim.seekable_from_ms(), 2 * sim::SEEKABLE_MS);

    // Seeking anywhere within the window still gives the exact state.
    let at = 2 * sim::SEEKABLE_MS + 98_765;
    sim.seek(at);
    let mut straight = kafkascope_model::sim::Sim::new(&scenario);
    straight.run_until(at);
    assert!(Report::of(&sim).to_json() == Report::of(&straight).to_json());
}

#[test]
fn an_open_ended_run_thins_no_further_than_a_quick_seek_allows() {
    // At most 8 times the load's spacing, and at most 48,000 appends to replicas re-run.
    let max = |name: &str| sim::open_ended_max_every_ms(&crate::built_in(name));
    for (name, every, why) in [
        (
            "soak",
            8_000,
            "2000 records/s at RF 3: 1 s, thinned 8 times",
        ),
        (
            "large",
            2_000,
            "5000 records/s at RF 3: 0.5 s, thinned 4 times",
        ),
        (
            "throughput",
            10_000,
            "1000 records/s at RF 3: 2.5 s, thinned 4 times",
        ),
        ("quickstart", 8 * sim::CHECKPOINT_EVERY_MS, "a light load"),
    ] {
        assert_eq!(max(name), every, "{name}: {why}");
    }
}
