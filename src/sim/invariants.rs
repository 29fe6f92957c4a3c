//! Kafka's invariants, checked after every step. A violation is a bug in the model (or, in later
//! labs, the very point being shown); each kind is reported once per partition and replica.

use std::collections::BTreeSet;

use bevy::prelude::*;

use super::cluster::{Cluster, Partition, Replica};
use super::{SimClock, SimSet, SimStep};

/// At most this many violations are kept.
const KEEP: usize = 100;

#[derive(Resource, Debug, Default)]
pub struct Invariants {
    pub violations: Vec<String>,
    /// How many were found, kept or not.
    pub count: u64,
    /// Kinds already reported, so a lasting violation is listed once.
    seen: BTreeSet<(&'static str, usize, u32)>,
    /// Each partition's leader epoch and high watermark at the last check.
    leader_hw: Vec<Option<(u32, u64)>>,
}

impl Invariants {
    pub fn new(partitions: usize) -> Self {
        Invariants {
            leader_hw: vec![None; partitions],
            ..default()
        }
    }

    fn report(&mut self, kind: &'static str, partition: usize, broker: u32, message: String) {
        self.count += 1;
        if self.seen.insert((kind, partition, broker)) && self.violations.len() < KEEP {
            self.violations.push(message);
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Invariants>()
        .add_systems(SimStep, check.in_set(SimSet::Invariants));
}

fn check(
    clock: Res<SimClock>,
    cluster: Res<Cluster>,
    mut invariants: ResMut<Invariants>,
    partitions: Query<&Partition>,
    replicas: Query<&Replica>,
) {
    let now = clock.now_ms;
    for (i, &entity) in cluster.partitions.iter().enumerate() {
        let partition = partitions.get(entity).expect("partition entity");
        let name = || {
            format!(
                "{}-{}",
                cluster.topics[partition.topic].name, partition.index
            )
        };
        for replica in partition
            .replicas
            .iter()
            .map(|e| replicas.get(*e).expect("replica"))
        {
            if replica.high_watermark > replica.log_end_offset() {
                invariants.report(
                    "hw-above-leo",
                    i,
                    replica.broker,
                    format!(
                        "{now} ms: {} on broker {}: high watermark {} above log end offset {}",
                        name(),
                        replica.broker,
                        replica.high_watermark,
                        replica.log_end_offset()
                    ),
                );
            }
        }
        for broker in &partition.isr {
            if !partition.assignment.contains(broker) {
                invariants.report(
                    "isr-outside-replicas",
                    i,
                    *broker,
                    format!("{now} ms: {}: ISR member {broker} is not a replica", name()),
                );
            }
        }
        let current = partition.leader_replica().map(|e| {
            let leader = replicas.get(e).expect("replica");
            (partition.leader_epoch, leader.high_watermark)
        });
        if let (Some((epoch, hw)), Some((last_epoch, last_hw))) = (current, invariants.leader_hw[i])
        {
            if epoch == last_epoch && hw < last_hw {
                invariants.report(
                    "leader-hw-backwards",
                    i,
                    partition.leader.unwrap_or(0),
                    format!(
                        "{now} ms: {}: the leader's high watermark moved back from {last_hw} to {hw} in epoch {epoch}",
                        name()
                    ),
                );
            }
        }
        if current.is_some() {
            invariants.leader_hw[i] = current;
        }
    }
}
