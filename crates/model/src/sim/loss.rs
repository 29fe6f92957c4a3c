//! Which acknowledged writes a run lost: the records of the ledger that the log which will serve
//! their partition no longer holds, and why.

use std::collections::HashSet;

use bevy_ecs::prelude::*;
use serde::Serialize;

use super::cluster::{Broker, BrokerId, Cluster, Partition, Replica, read};
use super::controller::choose_leader;
use super::ledger::{AckLedger, AckedRecord};
use super::producer::{Producer, producer_name};
use crate::scenario::Acks;

/// Whether a missing acknowledged record can come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Missing {
    /// No replica will ever serve it again.
    Lost,
    /// Nobody can lead the partition now or once its down leader is fenced, but a replica holds
    /// it: an in-sync replica on a broker that is down (it comes back when the broker does), or
    /// one that may not lead (out of the ISR and ELR, unclean election off: only an unclean
    /// election would bring it back).
    Unavailable,
}

/// An acknowledged record that is gone, or out of reach.
#[derive(Debug, Clone, Serialize)]
pub struct LostRecord {
    pub topic: String,
    pub partition: u32,
    pub offset: Option<u64>,
    pub key: Option<String>,
    pub producer: String,
    pub state: Missing,
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
    let mut brokers = read::<&Broker>(world);
    let running: HashSet<BrokerId> = brokers
        .query(world)
        .iter()
        .filter(|b| b.alive || b.starting)
        .map(|b| b.id)
        .collect();
    lost_records(
        world.resource::<AckLedger>(),
        world.resource::<Cluster>(),
        &producers.query(world),
        &partitions.query(world),
        &replicas.query(world),
        &|b| running.contains(&b),
    )
}

/// The acknowledged records absent from the log that will serve their partition: its leader's,
/// or, where the leader is down or there is none, the log of the replica the controller will
/// elect (`choose_leader`, with the brokers `up` says run as the ones it may elect). A crashed
/// leader cannot take its leadership back: its new incarnation may not register while the old
/// session is valid (`ClusterControlManager.registerBroker`), so it is fenced first, and the
/// replica elected then is the log every other replica truncates to. Where nobody can be
/// elected, records another replica still holds (one on a broker that is down, or one that may
/// not lead) are unavailable; the others are lost.
pub fn lost_records(
    ledger: &AckLedger,
    cluster: &Cluster,
    producers: &Query<&Producer>,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    up: &dyn Fn(BrokerId) -> bool,
) -> Vec<LostRecord> {
    let mut lost = Vec::new();
    // Records per partition, to look at each partition's logs once.
    let mut by_partition: Vec<Vec<AckedRecord>> = vec![Vec::new(); cluster.partitions.len()];
    for record in ledger.iter() {
        by_partition[record.partition as usize].push(record);
    }
    let elr_enabled = cluster.config.eligible_leader_replicas;
    for (i, records) in by_partition.into_iter().enumerate() {
        if records.is_empty() {
            continue;
        }
        let partition = partitions
            .get(cluster.partitions[i])
            .expect("partition entity");
        let replica = |b: BrokerId| {
            let at = partition.assignment.iter().position(|r| *r == b);
            let entity = partition.replicas[at.expect("an assigned broker")];
            replicas.get(entity).expect("replica entity")
        };
        let serving = partition.leader.filter(|l| up(*l));
        let next = match serving {
            Some(leader) => Some((leader, false)),
            None => choose_leader(partition, up, elr_enabled),
        };
        let offline = match partition.leader {
            Some(leader) => format!("leader {leader} is down: "),
            None => "partition offline: ".to_string(),
        };
        if let Some((leader, unclean)) = next {
            let has = holds(&records, replica(leader));
            let why = match serving {
                Some(_) => format!(
                    "not in the log of leader {leader} (epoch {}{})",
                    partition.leader_epoch,
                    if partition.elected_uncleanly {
                        ", elected uncleanly"
                    } else {
                        ""
                    }
                ),
                None => format!(
                    "{offline}broker {leader} lacks it, and the controller elects broker {leader}{}{}",
                    if unclean { " uncleanly" } else { "" },
                    match partition.leader {
                        Some(down) => format!(" once it fences broker {down}"),
                        None => String::new(),
                    }
                ),
            };
            for record in records.iter().filter(|r| !has(r)) {
                lost.push(missing(
                    cluster,
                    producers,
                    partition,
                    record,
                    Missing::Lost,
                    why.clone(),
                ));
            }
            continue;
        }
        // Nobody can be elected now. Each replica, and whether it holds a record: one that may
        // lead, on a broker that is down, gives it back when the broker returns; one that may
        // not, only through an unclean election.
        let each: Vec<(BrokerId, bool, _)> = partition
            .assignment
            .iter()
            .map(|b| {
                let may_lead = partition.in_isr(*b) || partition.elr.contains(b);
                (*b, may_lead, holds(&records, replica(*b)))
            })
            .collect();
        for record in &records {
            let down: Vec<String> = each
                .iter()
                .filter(|(_, may_lead, held)| *may_lead && held(record))
                .map(|(b, ..)| b.to_string())
                .collect();
            let (state, why) = if !down.is_empty() {
                (
                    Missing::Unavailable,
                    format!(
                        "{offline}broker {} has it, and is down",
                        down.join(" and broker ")
                    ),
                )
            } else if each.iter().any(|(_, _, held)| held(record)) {
                (
                    Missing::Unavailable,
                    format!(
                        "{offline}only out-of-sync replicas, which may not lead with unclean \
                         election off, have it"
                    ),
                )
            } else {
                (
                    Missing::Lost,
                    format!("{offline}no replica that could lead has it"),
                )
            };
            lost.push(missing(cluster, producers, partition, record, state, why));
        }
    }
    lost
}

fn missing(
    cluster: &Cluster,
    producers: &Query<&Producer>,
    partition: &Partition,
    record: &AckedRecord,
    state: Missing,
    why: String,
) -> LostRecord {
    LostRecord {
        topic: cluster.topics[partition.topic].name.clone(),
        partition: partition.index,
        offset: record.offset(),
        key: cluster
            .producers
            .get(record.producer() as usize)
            .and_then(|e| producers.get(*e).ok())
            .and_then(|p| p.key_text(record.key)),
        producer: producer_name(cluster, producers, record.producer()),
        state,
        why,
        acks: record.acks,
        id: record.id,
    }
}

/// Whether `replica` holds an acknowledged record. acks=0 records have no offset: they are looked
/// up by id.
fn holds<'a>(records: &[AckedRecord], replica: &'a Replica) -> impl Fn(&AckedRecord) -> bool + 'a {
    let ids: Option<HashSet<u64>> = records
        .iter()
        .any(|r| r.offset().is_none())
        .then(|| replica.log.iter().map(|r| r.id).collect());
    move |record: &AckedRecord| match record.offset() {
        Some(offset) => replica
            .log
            .get(offset as usize)
            .is_some_and(|r| r.id == record.id),
        None => ids.as_ref().is_some_and(|ids| ids.contains(&record.id)),
    }
}
