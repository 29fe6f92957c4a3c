//! The app's integration tests: one binary (each test binary links all of Bevy). The model's own
//! are in `crates/model/tests`.

mod cli;
mod labs;
mod render;
mod sandbox;
mod tour;
mod view;
mod web;

use kafkascope::report::Report;
use kafkascope::scenario::Scenario;
use kafkascope::sim::Sim;

/// A built-in scenario.
pub fn built_in(name: &str) -> Scenario {
    Scenario::built_in(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A scenario from RON text.
pub fn scenario(source: &str) -> Scenario {
    Scenario::parse(source, "test.ron").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario to its end.
pub fn run(scenario: &Scenario) -> Report {
    let mut sim = Sim::new(scenario);
    sim.run_until(scenario.duration_ms);
    Report::of(&sim)
}
