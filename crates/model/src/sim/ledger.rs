//! The ledger of acknowledged writes: every record a producer saw succeed (acknowledged, or sent
//! with acks=0), and the check of which of them a partition has lost.

use std::collections::HashSet;

use bevy_ecs::prelude::*;
use serde::Serialize;

use super::cluster::{Cluster, Partition, Replica};
use super::producer::{Producer, producer_name};
use crate::scenario::Acks;

/// One record a producer was told is written, in 32 bytes: a long run acknowledges millions.
/// Its producer is in its id.
#[derive(Debug, Clone)]
pub struct AckedRecord {
    pub id: u64,
    /// The offset the leader answered with; [`NO_OFFSET`] for acks=0.
    offset: u64,
    pub key: super::keys::Key,
    /// Index into `Cluster::partitions`.
    pub partition: u32,
    pub acks: Acks,
}

/// The offset of a record sent with acks=0, which no answer told.
const NO_OFFSET: u64 = u64::MAX;

impl AckedRecord {
    pub fn new(
        id: u64,
        partition: u32,
        offset: Option<u64>,
        key: super::keys::Key,
        acks: Acks,
    ) -> Self {
        AckedRecord {
            id,
            offset: offset.unwrap_or(NO_OFFSET),
            key,
            partition,
            acks,
        }
    }

    /// The offset the leader answered with; `None` for acks=0.
    pub fn offset(&self) -> Option<u64> {
        (self.offset != NO_OFFSET).then_some(self.offset)
    }

    /// The producer's index in the scenario.
    pub fn producer(&self) -> u32 {
        super::producer::producer_of(self.id)
    }
}

#[derive(Clone, Resource, Debug, Default)]
pub struct AckLedger {
    pub records: super::chunked::Chunked<AckedRecord>,
    /// A broker lost its disk during the run.
    pub disk_lost: bool,
}

/// An acknowledged record that is gone.
#[derive(Debug, Clone, Serialize)]
pub struct LostRecord {
    pub topic: String,
    pub partition: u32,
    pub offset: Option<u64>,
    pub key: Option<String>,
    pub producer: String,
    pub why: String,
    #[serde(skip)]
    pub acks: Acks,
    /// Which `send()` made it.
    #[serde(skip)]
    pub id: u64,
}

/// [`lost_records`] for a whole world, outside the schedule: what the report and the window show.
/// It reads every acknowledged record, so callers run it once, not every step or frame.
pub fn lost_in(world: &World) -> Vec<LostRecord> {
    let mut producers = read::<&Producer>(world);
    let mut partitions = read::<&Partition>(world);
    let mut replicas = read::<&Replica>(world);
    lost_records(
        world.resource::<AckLedger>(),
        world.resource::<Cluster>(),
        &producers.query(world),
        &partitions.query(world),
        &replicas.query(world),
    )
}

/// A query of the model's world read from outside the schedule (`load` registers every model
/// component, so the query can be made from a shared borrow).
pub fn read<D: bevy_ecs::query::QueryData>(world: &World) -> QueryState<D> {
    world
        .try_query::<D>()
        .expect("the model's components are registered when it loads")
}

/// The acknowledged records absent from the log of their partition's current leader, or, for a
/// partition without a leader, from every replica that could still lead it (its ISR and ELR, and
/// with unclean election any replica).
pub fn lost_records(
    ledger: &AckLedger,
    cluster: &Cluster,
    producers: &Query<&Producer>,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
) -> Vec<LostRecord> {
    let mut lost = Vec::new();
    // Records per partition, to look at each partition's logs once.
    let mut by_partition: Vec<Vec<&AckedRecord>> = vec![Vec::new(); cluster.partitions.len()];
    for record in &ledger.records {
        by_partition[record.partition as usize].push(record);
    }
    for (i, records) in by_partition.into_iter().enumerate() {
        if records.is_empty() {
            continue;
        }
        let partition = partitions
            .get(cluster.partitions[i])
            .expect("partition entity");
        let holders: Vec<&Replica> = match partition.leader {
            Some(leader) => vec![
                replicas
                    .get(partition.replica_on(leader).expect("leader is a replica"))
                    .expect("replica entity"),
            ],
            None => partition
                .assignment
                .iter()
                .zip(&partition.replicas)
                .filter(|(b, _)| {
                    partition.in_isr(**b)
                        || partition.elr.contains(b)
                        || partition.unclean_leader_election
                })
                .map(|(_, r)| replicas.get(*r).expect("replica entity"))
                .collect(),
        };
        // acks=0 records have no offset: look them up by id.
        let ids: Option<HashSet<u64>> = records.iter().any(|r| r.offset().is_none()).then(|| {
            holders
                .iter()
                .flat_map(|h| h.log.iter().map(|r| r.id))
                .collect()
        });
        let has = |record: &AckedRecord| match record.offset() {
            Some(offset) => holders.iter().any(|h| {
                h.log
                    .get(offset as usize)
                    .is_some_and(|r| r.id == record.id)
            }),
            None => ids.as_ref().is_some_and(|ids| ids.contains(&record.id)),
        };
        let why = match partition.leader {
            Some(leader) => format!(
                "not in the log of leader {leader} (epoch {}{})",
                partition.leader_epoch,
                if partition.elected_uncleanly {
                    ", elected uncleanly"
                } else {
                    ""
                }
            ),
            None => "partition offline: no replica that could lead has it".to_string(),
        };
        for record in records.into_iter().filter(|r| !has(r)) {
            lost.push(LostRecord {
                topic: cluster.topics[partition.topic].name.clone(),
                partition: partition.index,
                offset: record.offset(),
                key: cluster
                    .producers
                    .get(record.producer() as usize)
                    .and_then(|e| producers.get(*e).ok())
                    .and_then(|p| p.key_text(record.key)),
                producer: producer_name(cluster, producers, record.producer()),
                why: why.clone(),
                acks: record.acks,
                id: record.id,
            });
        }
    }
    lost
}

// The ledger holds a row per acknowledged record: keep it small.
const _: () = assert!(size_of::<AckedRecord>() == 32);
