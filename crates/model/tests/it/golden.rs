//! The golden reports: every built-in scenario's JSON report, and three scenarios' with two
//! other seeds, byte for byte as committed under `tests/golden/`; and for three scenarios the
//! trace digest of their steps, so that a run that parts from its golden one says when. A change
//! to a rule that changes what a run does shows here, and is committed with the new files
//! (`KAFKASCOPE_BLESS=1 cargo test golden` writes them; say why in the commit).

use std::path::PathBuf;

use kafkascope_model::scenario::{BUILT_IN, Scenario};
use kafkascope_model::sim::Sim;

/// Scenarios also run with two other seeds than their own: those that draw random numbers
/// (random keys, keyless records), so that the seed changes what happens.
const OTHER_SEEDS: &[(&str, [u64; 2])] = &[
    ("throughput", [2, 3]),
    ("rebalance-storm", [2, 3]),
    ("rebalance-storm-cooperative", [2, 3]),
    ("rebalance-storm-consumer-protocol", [2, 3]),
];

/// Scenarios whose steps are traced, up to this sim time (`large` to just after it loses a
/// broker and its partitions elect new leaders).
const TRACED: &[(&str, u64)] = &[
    ("quickstart", 60_000),
    ("unclean-election", 100_000),
    ("rebalance-storm-cooperative", 90_000),
    ("rebalance-storm-consumer-protocol", 90_000),
    ("large", 65_000),
];

/// The digest's interval, in sim ms.
const TRACE_EVERY_MS: u64 = 1000;

fn golden(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(file)
}

/// Compares `actual` with the golden file, or writes it when blessing; on a difference, says
/// where the first one is.
fn check(file: &str, actual: &str) -> Result<(), String> {
    let path = golden(file);
    if std::env::var_os("KAFKASCOPE_BLESS").is_some() {
        std::fs::write(&path, actual).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: {e} (KAFKASCOPE_BLESS=1 writes it)", path.display()))?;
    if expected == actual {
        return Ok(());
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "{file} differs from line {}: expected {:?}, got {:?}",
        line + 1,
        expected.lines().nth(line).unwrap_or("(end)"),
        actual.lines().nth(line).unwrap_or("(end)"),
    ))
}

fn report(scenario: &Scenario) -> String {
    format!("{}\n", crate::run(scenario).to_json())
}

#[test]
fn every_built_in_report_is_as_committed() {
    let mut failures = Vec::new();
    for built_in in BUILT_IN {
        let scenario = crate::built_in(built_in.name);
        if let Err(e) = check(&format!("{}.json", built_in.name), &report(&scenario)) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn reports_with_other_seeds_are_as_committed() {
    let mut failures = Vec::new();
    for (name, seeds) in OTHER_SEEDS {
        for seed in seeds {
            let mut scenario = crate::built_in(name);
            scenario.seed = *seed;
            if let Err(e) = check(&format!("{name}.seed-{seed}.json"), &report(&scenario)) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn traces_are_as_committed() {
    let mut failures = Vec::new();
    for (name, until_ms) in TRACED {
        let scenario = crate::built_in(name);
        let mut sim = Sim::new(&scenario);
        let lines = sim.trace(*until_ms, TRACE_EVERY_MS);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        if let Err(e) = check(&format!("{name}.trace"), &text) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_golden_difference_is_found_and_located() {
    // Random keys: the seed decides every record's partition.
    let scenario = crate::built_in("throughput");
    let mut other = scenario.clone();
    other.seed += 100;
    let text = |s: &Scenario| -> String {
        let mut sim = Sim::new(s);
        sim.trace(3000, TRACE_EVERY_MS)
            .iter()
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_ne!(text(&scenario), text(&other), "the seed changes the trace");
    assert_eq!(
        text(&scenario),
        text(&scenario),
        "the trace is deterministic"
    );
}
