//! The app's integration tests: one binary (each test binary links all of Bevy). The model's own
//! are in `crates/model/tests`.

mod callouts;
mod cli;
mod describe;
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

/// Every beat of a tour tells two to four short sentences (ended by ". ", not the dots of a
/// setting's name) and says what to watch for.
pub fn assert_short_beats(tour: &kafkascope::tour::Tour) {
    for (i, beat) in tour.beats.iter().enumerate() {
        let sentences = format!("{} ", beat.narration)
            .split(". ")
            .filter(|s| !s.trim().is_empty())
            .count();
        assert!(
            (2..=4).contains(&sentences),
            "{} beat {}: {sentences} sentences",
            tour.name,
            i + 1
        );
        assert!(!beat.watch_for.is_empty(), "{} beat {}", tour.name, i + 1);
    }
}

/// Runs a scenario to its end.
pub fn run(scenario: &Scenario) -> Report {
    let mut sim = Sim::new(scenario);
    sim.run_until(scenario.duration_ms);
    Report::of(&sim)
}
