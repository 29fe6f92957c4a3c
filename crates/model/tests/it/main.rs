//! The model's integration tests: one binary, which links no window, renderer or UI crate.

mod compaction;
mod connections;
mod consumers;
mod controller;
mod coordinator;
mod faults;
mod golden;
mod idempotence;
mod operations;
mod partitioner;
mod replication;
mod retention;
mod sandbox;
mod scenario;
mod schedule;

use kafkascope_model::report::Report;
use kafkascope_model::scenario::Scenario;
use kafkascope_model::sim::Sim;

/// A built-in scenario.
pub fn built_in(name: &str) -> Scenario {
    Scenario::built_in(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A built-in scenario's RON text.
pub fn built_in_source(name: &str) -> &'static str {
    kafkascope_model::scenario::BUILT_IN
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no built-in scenario {name}"))
        .source
}

/// A scenario from RON text.
pub fn scenario(source: &str) -> Scenario {
    Scenario::parse(source, "test.ron").unwrap_or_else(|e| panic!("{e}"))
}

/// The actions a run refused: (instant, action, why).
pub fn refusals(report: &Report) -> Vec<(u64, String, String)> {
    report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            kafkascope_model::sim::EventKind::ActionRefused { action, why } => {
                Some((e.at_ms, action.clone(), why.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Runs a scenario to its end.
pub fn run(scenario: &Scenario) -> Report {
    let mut sim = Sim::new(scenario);
    sim.run_until(scenario.duration_ms);
    Report::of(&sim)
}
