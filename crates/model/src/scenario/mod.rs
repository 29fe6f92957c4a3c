//! Scenario files: the cluster, its topics and clients, and a timeline of actions, read from RON.
//!
//! Every field a file leaves out takes Kafka's default (named next to it). Unknown fields are
//! errors, and a scenario that could not exist is refused with the field that is wrong.

use serde::{Deserialize, Serialize};

mod built_in;
mod clients;
mod cluster;
pub(crate) mod defaults;
mod edit;
mod file;
pub mod limits;
mod summary;
mod timeline;
mod topics;

pub use built_in::{BUILT_IN, BuiltIn};
pub use clients::{
    Acks, ConsumerGroupConfig, GroupProtocol, Keys, OffsetReset, ProducerConfig, ProducerSettings,
};
pub use cluster::ClusterConfig;
use cluster::{given, present};
pub use edit::{Edit, MAX_BROKERS, MAX_MEMBERS, MAX_PARTITIONS, rack_name};
pub use file::{ScenarioError, parse_ron, read_named_file};
pub use summary::{ProducerSummary, Summary, TopicSummary};
pub use timeline::{Action, LogSetting, Stop, TimelineEntry, reassignment_refusal};
pub use topics::{
    CleanupPolicy, DirtyRatio, MIN_SEGMENT_BYTES, TopicConfig, rack_unaware_assignment,
};

pub use crate::assignor::Assignor;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// One line for `kafkascope list` and the scenario picker.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "defaults::duration_ms")]
    pub duration_ms: u64,
    #[serde(default)]
    pub cluster: ClusterConfig,
    #[serde(default)]
    pub topics: Vec<TopicConfig>,
    #[serde(default)]
    pub producers: Vec<ProducerConfig>,
    #[serde(default)]
    pub consumer_groups: Vec<ConsumerGroupConfig>,
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
}

/// Builds the refusals of one scenario: the origin (a path or a built-in's name) names it.
pub(crate) struct Check<'a> {
    origin: &'a str,
}

impl Check<'_> {
    pub(crate) fn bad(&self, field: String, message: String) -> ScenarioError {
        ScenarioError::Invalid {
            origin: self.origin.to_string(),
            field,
            message,
        }
    }

    /// Refuses a duration above [`limits::DURATION_MS`].
    pub(crate) fn at_most_a_week(&self, field: String, value: u64) -> Result<(), ScenarioError> {
        match limits::longer_than_a_week(value) {
            Some(why) => Err(self.bad(field, why)),
            None => Ok(()),
        }
    }
}

impl Scenario {
    /// Reads and checks a scenario. `origin` names it in messages (a path, or a built-in's name).
    pub fn parse(source: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = parse_ron(source, origin)?;
        scenario.validate(origin, scenario.duration_ms)?;
        Ok(scenario)
    }

    /// A scenario from a file path, or a built-in one by name.
    pub fn load(name: &str) -> Result<Scenario, ScenarioError> {
        match read_named_file(name, Scenario::built_in(name).is_ok(), "scenario")? {
            Some(source) => Scenario::parse(&source, name),
            None => Scenario::built_in(name),
        }
    }

    /// A built-in scenario by name.
    pub fn built_in(name: &str) -> Result<Scenario, ScenarioError> {
        let built_in =
            BUILT_IN
                .iter()
                .find(|b| b.name == name)
                .ok_or_else(|| ScenarioError::NotFound {
                    name: name.to_string(),
                })?;
        Scenario::parse(built_in.source, &format!("scenarios/{}.ron", built_in.name))
    }

    /// This scenario with `actions` (given while it ran, the sandbox's) added to its timeline
    /// after its own: loaded again, it runs exactly as the run that was given them, since actions
    /// of one instant apply in timeline order and the sandbox's came after the file's.
    pub fn with_actions(&self, actions: &[(u64, Action)]) -> Scenario {
        let mut scenario = self.clone();
        scenario
            .timeline
            .extend(actions.iter().map(|(at_ms, action)| TimelineEntry {
                at_ms: *at_ms,
                action: action.clone(),
            }));
        // A sandbox run goes on past its end: the file runs as long as its last action.
        let last = actions.iter().map(|(at, _)| *at).max().unwrap_or(0);
        scenario.duration_ms = scenario.duration_ms.max(last);
        scenario
    }

    /// The scenario as a RON file that [`Scenario::parse`] reads back.
    pub fn to_ron(&self) -> String {
        let config = ron::ser::PrettyConfig::new()
            .depth_limit(3)
            .struct_names(false)
            .separate_tuple_members(false);
        ron::ser::to_string_pretty(self, config).expect("a scenario always serializes")
    }

    pub fn topic_index(&self, name: &str) -> Option<usize> {
        self.topics.iter().position(|t| t.name == name)
    }

    pub fn producer_index(&self, name: &str) -> Option<usize> {
        self.producers.iter().position(|p| p.name == name)
    }

    /// Refuses a scenario that cannot exist, naming the field. `until_ms` is how far it will run
    /// (its duration, or more from the command line), for the memory estimate. Each section
    /// checks itself; the limits on the whole come last.
    pub fn validate(&self, origin: &str, until_ms: u64) -> Result<(), ScenarioError> {
        let check = Check { origin };
        self.cluster.validate(&check)?;
        if self.duration_ms == 0 || self.duration_ms > limits::DURATION_MS {
            return Err(check.bad(
                "duration_ms".into(),
                format!(
                    "{} ms: a run lasts 1 ms to {} ms (a week)",
                    self.duration_ms,
                    limits::DURATION_MS
                ),
            ));
        }
        topics::validate(self, &check)?;
        let mut memory = clients::validate_producers(self, &check, until_ms)?;
        let mut consumers = clients::validate_groups(self, &check)?;
        timeline::validate(self, &check, until_ms, &mut memory, &mut consumers)?;
        limits::check_totals(&check, consumers, &memory, until_ms)
    }
}
