//! The scenarios in `scenarios/`, compiled into the binary (the web build has no file system).

use super::Scenario;

/// A built-in scenario: its name, and the RON text compiled into the binary (the web build has no
/// file system).
pub struct BuiltIn {
    pub name: &'static str,
    pub source: &'static str,
}

impl BuiltIn {
    /// The built-in scenario whose `name` field is `name` (which can differ from the file name:
    /// `isr-shrink` is named "ISR shrink"), so that a loaded scenario can be linked to and picked
    /// again by its file name.
    pub fn named(name: &str) -> Option<&'static BuiltIn> {
        static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| {
            BUILT_IN
                .iter()
                .map(|b| Scenario::built_in(b.name).map_or_else(|_| String::new(), |s| s.name))
                .collect()
        });
        BUILT_IN
            .iter()
            .zip(names)
            .find(|(_, n)| *n == name)
            .map(|(b, _)| b)
    }
}

/// The scenarios in `scenarios/`, embedded. `quickstart` comes first: it is the default.
pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "quickstart",
        source: include_str!("../../../../scenarios/quickstart.ron"),
    },
    BuiltIn {
        name: "walkthrough",
        source: include_str!("../../../../scenarios/walkthrough.ron"),
    },
    BuiltIn {
        name: "isr-shrink",
        source: include_str!("../../../../scenarios/isr-shrink.ron"),
    },
    BuiltIn {
        name: "min-isr",
        source: include_str!("../../../../scenarios/min-isr.ron"),
    },
    BuiltIn {
        name: "acks-one",
        source: include_str!("../../../../scenarios/acks-one.ron"),
    },
    BuiltIn {
        name: "isr-then-leader-dies",
        source: include_str!("../../../../scenarios/isr-then-leader-dies.ron"),
    },
    BuiltIn {
        name: "isr-then-leader-wiped",
        source: include_str!("../../../../scenarios/isr-then-leader-wiped.ron"),
    },
    BuiltIn {
        name: "lab-acks-all",
        source: include_str!("../../../../scenarios/lab-acks-all.ron"),
    },
    BuiltIn {
        name: "unclean-election",
        source: include_str!("../../../../scenarios/unclean-election.ron"),
    },
    BuiltIn {
        name: "min-isr-protects",
        source: include_str!("../../../../scenarios/min-isr-protects.ron"),
    },
    BuiltIn {
        name: "idempotence",
        source: include_str!("../../../../scenarios/idempotence.ron"),
    },
    BuiltIn {
        name: "acks-one-crash",
        source: include_str!("../../../../scenarios/acks-one-crash.ron"),
    },
    BuiltIn {
        name: "cut-off-leader-acks-one",
        source: include_str!("../../../../scenarios/cut-off-leader-acks-one.ron"),
    },
    BuiltIn {
        name: "cut-off-leader-acks-all",
        source: include_str!("../../../../scenarios/cut-off-leader-acks-all.ron"),
    },
    BuiltIn {
        name: "clean-failover",
        source: include_str!("../../../../scenarios/clean-failover.ron"),
    },
    BuiltIn {
        name: "consumers",
        source: include_str!("../../../../scenarios/consumers.ron"),
    },
    BuiltIn {
        name: "rebalance-storm",
        source: include_str!("../../../../scenarios/rebalance-storm.ron"),
    },
    BuiltIn {
        name: "rebalance-storm-cooperative",
        source: include_str!("../../../../scenarios/rebalance-storm-cooperative.ron"),
    },
    BuiltIn {
        name: "rebalance-storm-consumer-protocol",
        source: include_str!("../../../../scenarios/rebalance-storm-consumer-protocol.ron"),
    },
    BuiltIn {
        name: "rolling-restart",
        source: include_str!("../../../../scenarios/rolling-restart.ron"),
    },
    BuiltIn {
        name: "rolling-restart-crash",
        source: include_str!("../../../../scenarios/rolling-restart-crash.ron"),
    },
    BuiltIn {
        name: "reassign",
        source: include_str!("../../../../scenarios/reassign.ron"),
    },
    BuiltIn {
        name: "add-partitions",
        source: include_str!("../../../../scenarios/add-partitions.ron"),
    },
    BuiltIn {
        name: "leader-reads",
        source: include_str!("../../../../scenarios/leader-reads.ron"),
    },
    BuiltIn {
        name: "retention",
        source: include_str!("../../../../scenarios/retention.ron"),
    },
    BuiltIn {
        name: "compaction",
        source: include_str!("../../../../scenarios/compaction.ron"),
    },
    BuiltIn {
        name: "soak",
        source: include_str!("../../../../scenarios/soak.ron"),
    },
    BuiltIn {
        name: "throughput",
        source: include_str!("../../../../scenarios/throughput.ron"),
    },
    BuiltIn {
        name: "large",
        source: include_str!("../../../../scenarios/large.ron"),
    },
];
