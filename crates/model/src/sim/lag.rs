//! The lag monitor: for every group and partition, the log end offset, the high watermark, the
//! committed offset and lag = high watermark - committed, as `kafka-consumer-groups --describe`
//! prints them (its LOG-END-OFFSET column is the high watermark), sampled every second for
//! plots; and how long each partition went without a member consuming it.

use bevy_app::App;
use bevy_ecs::prelude::*;

use super::cluster::{Cluster, Partition, Replica};
use super::consumer::Consumer;
use super::group_coordinator::ConsumerGroup;
use super::{SimClock, Wake};

/// How often lag is sampled.
pub const SAMPLE_EVERY_MS: u64 = 1_000;

/// One partition's numbers at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagSample {
    pub at_ms: u64,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    pub committed: Option<u64>,
    /// High watermark - committed (the whole high watermark when nothing is committed).
    pub lag: u64,
}

/// A group's lag history and pause accounting.
#[derive(Debug, Clone, Default)]
pub struct GroupLag {
    /// By the group's partition order: (ordinal, samples). Chunked, so that a checkpoint
    /// shares the history instead of copying it.
    pub series: Vec<(u32, super::chunked::Chunked<LagSample>)>,
    pub max_lag: u64,
    /// Summed over partitions: time with no member consuming.
    pub paused_ms: u64,
    /// Partitions nobody consumed at the last evaluation, and when that was.
    paused_now: u64,
    last_eval_ms: u64,
}

impl GroupLag {
    /// Paused time up to `now`, counting the partitions paused since the last evaluation.
    pub fn paused_until(&self, now: u64) -> u64 {
        self.paused_ms + self.paused_now * (now - self.last_eval_ms)
    }
}

#[derive(Clone, Resource, Debug, Default)]
pub struct LagMonitor {
    /// By group index.
    pub groups: Vec<GroupLag>,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<LagMonitor>();
}

/// The numbers of one partition for one group now.
pub fn lag_now(
    group: &ConsumerGroup,
    ordinal: u32,
    cluster: &Cluster,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    at_ms: u64,
) -> LagSample {
    let partition = partitions
        .get(cluster.partitions[ordinal as usize])
        .expect("partition");
    let leader = partition
        .leader_replica()
        .map(|r| replicas.get(r).expect("replica"));
    let (log_end_offset, high_watermark) =
        leader.map_or((0, 0), |l| (l.log_end_offset(), l.high_watermark));
    let committed = group.committed().get(&ordinal).copied();
    LagSample {
        at_ms,
        log_end_offset,
        high_watermark,
        committed,
        lag: high_watermark.saturating_sub(committed.unwrap_or(0)),
    }
}

/// Counts each group's partitions that no live member consumes, from one pass over the
/// consumers: a count per partition ordinal (kept between steps, so a step allocates nothing),
/// not a search of every consumer for every partition.
pub(super) fn count_paused(
    clock: &SimClock,
    cluster: &Cluster,
    monitor: &mut LagMonitor,
    groups: &Query<&ConsumerGroup>,
    consumers: &Query<&Consumer>,
    owners: &mut Vec<u32>,
) {
    let now = clock.now_ms;
    if monitor.groups.len() < cluster.groups.len() {
        monitor
            .groups
            .resize(cluster.groups.len(), GroupLag::default());
    }
    // Owners by (group, partition ordinal).
    let width = cluster.partitions.len();
    owners.clear();
    owners.resize(width * cluster.groups.len(), 0);
    for c in consumers.iter_many(&cluster.consumers) {
        if !c.alive {
            continue;
        }
        let row = c.group as usize * width;
        for ordinal in c.assigned.keys() {
            owners[row + *ordinal as usize] += 1;
        }
    }
    for (i, &entity) in cluster.groups.iter().enumerate() {
        let group = groups.get(entity).expect("group");
        let row = &owners[group.index as usize * width..][..width];
        let paused = group
            .partitions
            .iter()
            .filter(|o| row[**o as usize] == 0)
            .count() as u64;
        let lag = &mut monitor.groups[i];
        lag.paused_ms = lag.paused_until(now);
        lag.paused_now = paused;
        lag.last_eval_ms = now;
    }
}

pub(super) fn sample_lag(
    clock: &SimClock,
    cluster: &Cluster,
    monitor: &mut LagMonitor,
    wake: &mut Wake,
    groups: &Query<&ConsumerGroup>,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
) {
    let now = clock.now_ms;
    wake.at((now / SAMPLE_EVERY_MS + 1) * SAMPLE_EVERY_MS);
    if !now.is_multiple_of(SAMPLE_EVERY_MS) {
        return;
    }
    for (i, &entity) in cluster.groups.iter().enumerate() {
        let group = groups.get(entity).expect("group");
        let lag = &mut monitor.groups[i];
        if lag.series.is_empty() {
            lag.series = group
                .partitions
                .iter()
                .map(|o| (*o, Default::default()))
                .collect();
        }
        for (ordinal, samples) in &mut lag.series {
            let sample = lag_now(group, *ordinal, cluster, partitions, replicas, now);
            lag.max_lag = lag.max_lag.max(sample.lag);
            samples.push(sample);
        }
    }
}
