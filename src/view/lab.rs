//! A lab's closing table: the Kafka metrics of each of its runs just before the decisive moment
//! ("was") and after it ("now"), read from the model. Each run is the lab's scenario with its
//! edits, run headless from the start: the table is the same whatever the reader did.

use std::collections::{BTreeMap, BTreeSet};

use kafkascope_model::report::Report;

use crate::scenario::Scenario;
use crate::sim::Sim;
use crate::tour::{Lab, LabMetric};
use crate::view::snapshot::Snapshot;

/// One row: a metric, with (was, now) for each run.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: LabMetric,
    pub values: Vec<(u64, u64)>,
}

/// The table: a column per run.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub runs: Vec<String>,
    pub was_ms: u64,
    pub now_ms: u64,
    pub rows: Vec<Row>,
}

impl Table {
    /// The table as text, columns aligned: what `kafkascope tour NAME --table` prints.
    pub fn to_text(&self) -> String {
        let mut lines = vec![
            std::iter::once(format!(
                "at {:.1} s → {:.1} s",
                self.was_ms as f64 / 1000.0,
                self.now_ms as f64 / 1000.0
            ))
            .chain(self.runs.iter().cloned())
            .collect::<Vec<_>>(),
        ];
        for row in &self.rows {
            lines.push(
                std::iter::once(row.metric.name())
                    .chain(row.values.iter().map(|(was, now)| {
                        format!("{} → {}", row.metric.format(*was), row.metric.format(*now))
                    }))
                    .collect(),
            );
        }
        let columns = lines[0].len();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                lines
                    .iter()
                    .map(|l| l[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        lines
            .iter()
            .map(|l| {
                l.iter()
                    .zip(&widths)
                    .map(|(cell, w)| format!("{cell:<w$}"))
                    .collect::<Vec<_>>()
                    .join("   ")
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The (was, now) of a metric in the run labelled `run`.
    pub fn get(&self, metric: &LabMetric, run: usize) -> Option<(u64, u64)> {
        self.rows
            .iter()
            .find(|r| &r.metric == metric)
            .and_then(|r| r.values.get(run).copied())
    }
}

/// Runs each of the lab's runs to `was_ms` and `now_ms` and reads its metrics there.
pub fn table(lab: &Lab, base: &Scenario) -> Result<Table, String> {
    let mut columns = Vec::new();
    for (_, scenario) in lab.run_scenarios(base)? {
        let mut sim = Sim::new(&scenario);
        sim.run_until(lab.was_ms);
        let was = read(&mut sim, &lab.metrics);
        sim.run_until(lab.now_ms);
        let now = read(&mut sim, &lab.metrics);
        columns.push((was, now));
    }
    let rows = lab
        .metrics
        .iter()
        .enumerate()
        .map(|(i, metric)| Row {
            metric: metric.clone(),
            values: columns.iter().map(|(was, now)| (was[i], now[i])).collect(),
        })
        .collect();
    Ok(Table {
        runs: lab.runs.iter().map(|r| r.label.clone()).collect(),
        was_ms: lab.was_ms,
        now_ms: lab.now_ms,
        rows,
    })
}

/// Every metric's value at the model's instant.
fn read(sim: &mut Sim, metrics: &[LabMetric]) -> Vec<u64> {
    let snapshot = Snapshot::of(sim.world_mut());
    let report = Report::of(sim);
    metrics
        .iter()
        .map(|m| value(m, &snapshot, &report, sim))
        .collect()
}

fn value(metric: &LabMetric, s: &Snapshot, r: &Report, sim: &Sim) -> u64 {
    let group = |name: &str| r.consumer_groups.iter().find(|g| g.name == name);
    let producer = |name: &str| r.producers.iter().find(|p| p.name == name);
    match metric {
        LabMetric::UnderReplicatedPartitions => s.under_replicated() as u64,
        LabMetric::UnderMinIsrPartitionCount => s.under_min_isr() as u64,
        LabMetric::OfflinePartitionsCount => s.offline() as u64,
        LabMetric::OfflineTime => r.metrics.offline_partition_ms,
        LabMetric::DeadLeaderTime => s.dead_leader_ms(),
        LabMetric::AckedLost => r.acked_records_lost,
        LabMetric::AckedUnavailable => r.acked_records_unavailable,
        LabMetric::Acked(p) => producer(p).map_or(0, |p| p.stats.acked),
        LabMetric::Failed(p) => producer(p).map_or(0, |p| p.stats.failed),
        LabMetric::Errors(p, error) => {
            producer(p).map_or(0, |p| p.stats.errors.get(error).copied().unwrap_or(0))
        }
        LabMetric::LeaderElections => r.metrics.leader_elections,
        LabMetric::UncleanLeaderElections => r.metrics.unclean_leader_elections,
        LabMetric::RecordsTruncated => r.metrics.records_truncated,
        LabMetric::ReadFromFollowers => r.metrics.records_read_from_followers,
        LabMetric::Rebalances(g) => group(g).map_or(0, |g| g.rebalances),
        LabMetric::PausedTime(g) => group(g).map_or(0, |g| g.paused_ms),
        LabMetric::Pauses(g) => group(g).map_or(0, |g| g.offsets.iter().map(|o| o.pauses).sum()),
        LabMetric::MaxLag(g) => group(g).and_then(|g| g.max_lag).unwrap_or(0),
        LabMetric::Lag(g) => group(g).map_or(0, |g| g.offsets.iter().filter_map(|o| o.lag).sum()),
        LabMetric::OffsetResets(g) => group(g).map_or(0, |g| g.offset_resets),
        LabMetric::RecordsSkipped(g) => group(g).map_or(0, |g| g.records_skipped),
        LabMetric::KeysSplit(topic) => keys_split(sim, topic),
    }
}

/// Keys whose records sit in more than one partition of `topic` (in the leaders' logs): their
/// order is no longer one log's order.
fn keys_split(sim: &Sim, topic: &str) -> u64 {
    use crate::sim::producer::Producer;
    use crate::sim::{Cluster, Partition, Replica};
    let world = sim.world();
    let cluster = world.resource::<Cluster>();
    let Some(t) = cluster.topics.iter().find(|t| t.name == topic) else {
        return 0;
    };
    let mut homes: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for &entity in &t.partitions {
        let Some(p) = world.get::<Partition>(entity) else {
            continue;
        };
        let Some(replica) = p.leader_replica().and_then(|r| world.get::<Replica>(r)) else {
            continue;
        };
        for record in replica.log.iter_from(0) {
            let key = cluster
                .producers
                .get(record.producer() as usize)
                .and_then(|e| world.get::<Producer>(*e))
                .and_then(|producer| producer.key_text(record.key));
            if let Some(key) = key {
                homes.entry(key).or_default().insert(p.index);
            }
        }
    }
    homes.values().filter(|parts| parts.len() > 1).count() as u64
}

impl LabMetric {
    /// The row's name: Kafka's metric name where Kafka has one.
    pub fn name(&self) -> String {
        match self {
            LabMetric::UnderReplicatedPartitions => "UnderReplicatedPartitions".into(),
            LabMetric::UnderMinIsrPartitionCount => "UnderMinIsrPartitionCount".into(),
            LabMetric::OfflinePartitionsCount => "OfflinePartitionsCount".into(),
            LabMetric::OfflineTime => "Time partitions were offline".into(),
            LabMetric::DeadLeaderTime => "Time led by a dead leader".into(),
            LabMetric::AckedLost => "Acknowledged records lost".into(),
            LabMetric::AckedUnavailable => "Acknowledged records unavailable".into(),
            LabMetric::Acked(p) => format!("Records acknowledged to {p}"),
            LabMetric::Failed(p) => format!("Records {p} gave up on"),
            LabMetric::Errors(p, e) => format!("{e} errors to {p}"),
            LabMetric::LeaderElections => "Leader elections".into(),
            LabMetric::UncleanLeaderElections => "Unclean leader elections".into(),
            LabMetric::RecordsTruncated => "Records truncated".into(),
            LabMetric::ReadFromFollowers => "Records consumers read from followers".into(),
            LabMetric::Rebalances(g) => format!("Rebalances of {g}"),
            LabMetric::PausedTime(g) => format!("Partition time {g} did not consume"),
            LabMetric::Pauses(g) => format!("Partition pauses in {g}"),
            LabMetric::MaxLag(g) => format!("Largest lag of {g} (records)"),
            LabMetric::Lag(g) => format!("Lag of {g} now (records)"),
            LabMetric::OffsetResets(g) => format!("Offset resets in {g}"),
            LabMetric::RecordsSkipped(g) => format!("Records {g} skipped, never read"),
            LabMetric::KeysSplit(t) => format!("Keys in two partitions of {t}"),
        }
    }

    /// Whether more of it is worse: the table marks it when it grew.
    pub fn is_cost(&self) -> bool {
        !matches!(
            self,
            LabMetric::Acked(_) | LabMetric::ReadFromFollowers | LabMetric::LeaderElections
        )
    }

    /// A value as the table writes it: times in seconds.
    pub fn format(&self, value: u64) -> String {
        match self {
            LabMetric::OfflineTime | LabMetric::DeadLeaderTime | LabMetric::PausedTime(_) => {
                format!("{:.1} s", value as f64 / 1000.0)
            }
            _ => value.to_string(),
        }
    }
}
