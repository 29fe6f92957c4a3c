//! The lag monitor: for every group and partition, the log end offset, the high watermark, the
//! committed offset and lag = high watermark - committed, as `kafka-consumer-groups --describe`
//! prints them (its LOG-END-OFFSET column is the high watermark), sampled every second for
//! plots; and how long each partition went without a member consuming it.

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::cluster::{Cluster, Partition, Replica};
use super::consumer::Consumer;
use super::consumer_group::ConsumerGroup;

/// How often lag is sampled.
pub const SAMPLE_EVERY_MS: u64 = 1_000;

/// One partition's numbers at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagSample {
    pub at_ms: u64,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    pub committed: Option<u64>,
    /// High watermark - committed: unknown (`None`, "-" in `kafka-consumer-groups`) while
    /// nothing is committed.
    pub lag: Option<u64>,
    /// The owner's own lag, high watermark - its position (the consumer's `records-lag`
    /// metric, `FetchCollector.fetchRecords`): unknown while no live member owns the partition.
    pub consumer_lag: Option<u64>,
}

/// One partition of a group: its lag history and its pauses.
#[derive(Debug, Clone, Default)]
pub struct PartitionLag {
    pub ordinal: u32,
    /// Chunked, so that a checkpoint shares the history instead of copying it; the samples
    /// older than the seekable window ([`super::SEEKABLE_MS`]) are forgotten.
    pub samples: super::chunked::Chunked<LagSample>,
    /// The greatest known committed lag sampled.
    pub max_lag: Option<u64>,
    /// Intervals with no live member consuming it, counted once the group first had every
    /// partition consumed.
    pub pauses: u64,
    /// Paused time of the intervals that ended.
    paused_ms: u64,
    /// Since when it is paused, if it is.
    paused_since: Option<u64>,
}

impl PartitionLag {
    /// Paused time up to `now`.
    pub fn paused_until(&self, now: u64) -> u64 {
        self.paused_ms + self.paused_since.map_or(0, |t| now - t)
    }

    /// Whether no live member consumes it now (after start-up).
    pub fn is_paused(&self) -> bool {
        self.paused_since.is_some()
    }
}

/// A group's lag history and pause accounting.
#[derive(Debug, Clone, Default)]
pub struct GroupLag {
    /// In the group's partition order.
    pub partitions: Vec<PartitionLag>,
    /// The first instant at which every partition had a consuming owner: pauses count from
    /// there, so start-up is left out for every protocol.
    counting_since: Option<u64>,
}

#[derive(Clone, Resource, Debug, Default)]
pub struct LagMonitor {
    /// By group index.
    pub groups: Vec<GroupLag>,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<LagMonitor>();
}

/// The numbers of one partition for one group now; `position` is its owner's, if it has one.
pub fn lag_now(
    group: &ConsumerGroup,
    ordinal: u32,
    cluster: &Cluster,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    at_ms: u64,
    position: Option<u64>,
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
        lag: committed.map(|c| high_watermark.saturating_sub(c)),
        consumer_lag: position.map(|p| high_watermark.saturating_sub(p)),
    }
}

/// Each group partition's owner now, from one pass over the consumers: how many live members
/// own it and the position of the last of them, by (group, partition ordinal), kept between steps
/// so a step allocates nothing.
#[derive(Debug, Default)]
pub struct Owners {
    width: usize,
    rows: Vec<(u32, u64)>,
}

/// What the live members own: (group, partition ordinal, the owner's position), the position
/// being the next offset a poll hands out. The lag monitor, the report and the view all read
/// ownership from here.
pub fn owned<'a>(
    consumers: impl IntoIterator<Item = &'a Consumer>,
) -> impl Iterator<Item = (u32, u32, u64)> {
    consumers
        .into_iter()
        .filter(|c| c.alive)
        .flat_map(|c| c.assigned.iter().map(|(o, p)| (c.group, *o, p.handed)))
}

impl Owners {
    fn count(&mut self, cluster: &Cluster, consumers: &Query<&Consumer>) {
        self.width = cluster.partitions.len();
        self.rows.clear();
        self.rows.resize(self.width * cluster.groups.len(), (0, 0));
        for (group, ordinal, position) in owned(consumers.iter_many(&cluster.consumers)) {
            let slot = &mut self.rows[group as usize * self.width + ordinal as usize];
            slot.0 += 1;
            slot.1 = position;
        }
    }

    /// How many live members of the group own the partition.
    pub fn owners(&self, group: u32, ordinal: u32) -> u32 {
        self.rows[group as usize * self.width + ordinal as usize].0
    }

    /// The position of the partition's owner in the group, if it has one.
    pub fn position(&self, group: u32, ordinal: u32) -> Option<u64> {
        let (n, position) = self.rows[group as usize * self.width + ordinal as usize];
        (n > 0).then_some(position)
    }
}

/// The lag monitor's rules, with what they read and keep for one step.
#[derive(SystemParam)]
pub(super) struct LagPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    monitor: ResMut<'w, LagMonitor>,
    partitions: Query<'w, 's, &'static Partition>,
    replicas: Query<'w, 's, &'static Replica>,
    groups: Query<'w, 's, &'static ConsumerGroup>,
    consumers: Query<'w, 's, &'static Consumer>,
    /// How many members own each partition, kept between steps.
    owners: Local<'s, Owners>,
}

/// The lag monitor's phase, after the consumers': which partitions nobody consumes, and each
/// group's lag when a sample is due.
pub(super) fn phase(mut rules: LagPhase) {
    rules.count_paused();
    rules.sample_lag();
}

impl LagPhase<'_, '_> {
    /// A partition is paused while no live member of the group owns it: unassigned, revoked (an
    /// eager member gives up everything before it rejoins), not yet taken up by its new owner, or
    /// its owner dead. Counted per partition once every partition of the group was consumed.
    fn count_paused(&mut self) {
        let Self {
            runtime,
            cluster,
            monitor,
            groups,
            consumers,
            owners,
            ..
        } = self;
        let Runtime { clock, .. } = &mut **runtime;
        let consumers = &consumers.as_readonly();
        let now = clock.now_ms;
        if monitor.groups.len() < cluster.groups.len() {
            monitor
                .groups
                .resize(cluster.groups.len(), GroupLag::default());
        }
        owners.count(cluster, consumers);
        for (i, &entity) in cluster.groups.iter().enumerate() {
            let group = groups.get(entity).expect("group");
            let lag = &mut monitor.groups[i];
            // A group's partitions only grow (`AddPartitions`): what was counted is kept.
            if lag.partitions.len() != group.partitions.len() {
                let known = lag.partitions.len();
                lag.partitions
                    .extend(group.partitions[known..].iter().map(|o| PartitionLag {
                        ordinal: *o,
                        paused_since: lag.counting_since.map(|_| now),
                        pauses: u64::from(lag.counting_since.is_some()),
                        ..Default::default()
                    }));
            }
            let consumed = |o: u32| owners.owners(group.index, o) > 0;
            if lag.counting_since.is_none() {
                if group.partitions.iter().all(|o| consumed(*o)) {
                    lag.counting_since = Some(now);
                }
                continue;
            }
            for p in &mut lag.partitions {
                match (p.paused_since, consumed(p.ordinal)) {
                    (None, false) => {
                        p.paused_since = Some(now);
                        p.pauses += 1;
                    }
                    (Some(since), true) => {
                        p.paused_ms += now - since;
                        p.paused_since = None;
                    }
                    _ => {}
                }
            }
        }
    }

    fn sample_lag(&mut self) {
        let Self {
            runtime,
            cluster,
            monitor,
            groups,
            partitions,
            replicas,
            owners,
            ..
        } = self;
        let Runtime { clock, wake, .. } = &mut **runtime;
        let now = clock.now_ms;
        wake.at((now / SAMPLE_EVERY_MS + 1) * SAMPLE_EVERY_MS);
        if !now.is_multiple_of(SAMPLE_EVERY_MS) {
            return;
        }
        for (i, &entity) in cluster.groups.iter().enumerate() {
            let group = groups.get(entity).expect("group");
            for p in &mut monitor.groups[i].partitions {
                let position = owners.position(group.index, p.ordinal);
                let sample = lag_now(
                    group, p.ordinal, cluster, partitions, replicas, now, position,
                );
                p.max_lag = p.max_lag.max(sample.lag);
                p.samples.push(sample);
                let window_starts = now.saturating_sub(super::SEEKABLE_MS);
                p.samples.drop_front_while(|s| s.at_ms < window_starts);
            }
        }
    }
}
