//! The step schedule is single-threaded and every pair of systems that touch the same data is
//! ordered, so a run cannot depend on scheduling.

use bevy::prelude::*;
use kafkascope::sim::{self, SimStep};

#[test]
fn the_step_schedule_has_no_ambiguity() {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, sim::plugin));
    let world = app.world_mut();
    let mut schedule = world
        .resource_mut::<Schedules>()
        .remove(SimStep)
        .expect("the model adds its schedule");
    schedule
        .initialize(world)
        .expect("the schedule builds with ambiguity detection set to error");
    let conflicts = &schedule.graph().conflicting_systems().0;
    assert!(
        conflicts.is_empty(),
        "unordered conflicting systems: {}",
        conflicts.len()
    );
    assert!(
        schedule.systems_len() > 10,
        "the model's systems are in the schedule"
    );
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
    let leos = |r: &kafkascope::report::Report| {
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
fn skipping_idle_instants_changes_nothing() {
    // The clock jumps over instants at which no rule can act; stepping every millisecond must
    // give the same run, byte for byte.
    for built_in in kafkascope::scenario::BUILT_IN {
        let mut scenario = crate::built_in(built_in.name);
        scenario.duration_ms = scenario.duration_ms.min(80_000);
        let skipping = crate::run(&scenario).to_json();
        let mut sim = kafkascope::sim::Sim::new(&scenario);
        sim.set_skip_idle(false);
        sim.run_until(scenario.duration_ms);
        let every_ms = sim.report().to_json();
        assert!(
            skipping == every_ms,
            "{}: the reports differ",
            built_in.name
        );
    }
}
