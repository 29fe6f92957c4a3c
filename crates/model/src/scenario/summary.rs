//! A cluster in one line ("3 brokers, topic orders (3 partitions, RF 3, min.insync.replicas 2),
//! producer checkout (keyed, acks=all, 200 records/s), group fulfilment (2 consumers)"): from a
//! scenario's set-up, or from a running cluster as it is now.

use std::fmt;

/// What the line says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    pub brokers: u32,
    /// Brokers not running now.
    pub down: Vec<u32>,
    pub topics: Vec<TopicSummary>,
    pub producers: Vec<ProducerSummary>,
    /// Each group's name and member count.
    pub groups: Vec<(String, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSummary {
    pub name: String,
    pub partitions: u32,
    pub replication_factor: u32,
    pub min_insync_replicas: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerSummary {
    pub name: String,
    pub keyed: bool,
    /// `acks` as its config reads: "0", "1", "all".
    pub acks: String,
    pub records_per_sec: u32,
}

impl Summary {
    /// A scenario's set-up, before its timeline runs.
    pub fn of(scenario: &super::Scenario) -> Summary {
        Summary {
            brokers: scenario.cluster.brokers,
            down: Vec::new(),
            topics: scenario
                .topics
                .iter()
                .map(|t| TopicSummary {
                    name: t.name.clone(),
                    partitions: t.partitions,
                    replication_factor: t.replication_factor,
                    min_insync_replicas: t.min_insync_replicas,
                })
                .collect(),
            producers: scenario
                .producers
                .iter()
                .map(|p| ProducerSummary {
                    name: p.name.clone(),
                    keyed: p.keys != super::Keys::None,
                    acks: p.acks.as_config().to_string(),
                    records_per_sec: p.records_per_sec,
                })
                .collect(),
            groups: scenario
                .consumer_groups
                .iter()
                .map(|g| (g.name.clone(), g.members))
                .collect(),
        }
    }
}

fn count(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let mut parts = vec![count(self.brokers, "broker", "brokers")];
        if !self.down.is_empty() {
            let ids: Vec<String> = self.down.iter().map(u32::to_string).collect();
            parts[0] += &format!(" ({} down)", ids.join(", "));
        }
        for t in &self.topics {
            parts.push(format!(
                "topic {} ({}, RF {}, min.insync.replicas {})",
                t.name,
                count(t.partitions, "partition", "partitions"),
                t.replication_factor,
                t.min_insync_replicas
            ));
        }
        for p in &self.producers {
            let keyed = if p.keyed { "keyed" } else { "unkeyed" };
            parts.push(format!(
                "producer {} ({keyed}, acks={}, {} records/s)",
                p.name, p.acks, p.records_per_sec
            ));
        }
        for (name, members) in &self.groups {
            parts.push(format!(
                "group {name} ({})",
                count(*members, "consumer", "consumers")
            ));
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quickstart_set_up_reads_as_its_description_does() {
        let s = super::super::Scenario::built_in("quickstart").unwrap();
        assert_eq!(
            Summary::of(&s).to_string(),
            "3 brokers, topic orders (3 partitions, RF 3, min.insync.replicas 2), producer checkout (keyed, acks=all, 200 records/s), group fulfilment (2 consumers)"
        );
    }
}
