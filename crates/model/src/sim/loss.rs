//! Which acknowledged writes a run lost: the records of the ledger that the log which will serve
//! their partition no longer holds, and why.

use std::collections::{HashMap, HashSet};

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
    // Which partitions have acknowledged records, and whether any was sent with acks=0 (those
    // are looked up by id): each partition's logs are then looked at once, and the ledger,
    // which may hold millions of records, is read once and never copied.
    let mut acked: Vec<Option<bool>> = vec![None; cluster.partitions.len()];
    for (partition, acks_zero) in ledger.partitions() {
        acked[partition as usize] = Some(acks_zero);
    }
    let judges: Vec<Option<Judge>> = acked
        .iter()
        .enumerate()
        .map(|(i, by_id)| {
            let partition = partitions
                .get(cluster.partitions[i])
                .expect("partition entity");
            by_id.map(|by_id| Judge::new(partition, replicas, up, by_id, cluster))
        })
        .collect();
    let mut lost = Vec::new();
    for record in ledger.iter() {
        let Some(judge) = &judges[record.partition as usize] else {
            continue;
        };
        if let Some((state, why)) = judge.judge(&record) {
            let missing = missing(cluster, producers, judge.partition, &record, state, why);
            lost.push((record.partition, missing));
        }
    }
    // Partition by partition, each in the order its records were acknowledged.
    lost.sort_by_key(|(ordinal, _)| *ordinal);
    lost.into_iter().map(|(_, missing)| missing).collect()
}

/// What becomes of a partition's acknowledged records that a log lacks.
struct Judge<'a> {
    partition: &'a Partition,
    way: Way<'a>,
}

enum Way<'a> {
    /// The log of the leader that serves the partition, or of the one the controller will elect.
    Serving { log: Holds<'a>, why: String },
    /// Nobody can be elected now. Each replica, whether it may lead, and its log: one that may
    /// lead, on a broker that is down, gives a record back when the broker returns; one that may
    /// not, only through an unclean election.
    Offline {
        each: Vec<(BrokerId, bool, Holds<'a>)>,
        offline: String,
    },
}

impl<'a> Judge<'a> {
    /// `by_id`: some of its records were sent with acks=0.
    fn new(
        partition: &'a Partition,
        replicas: &'a Query<&Replica>,
        up: &dyn Fn(BrokerId) -> bool,
        by_id: bool,
        cluster: &Cluster,
    ) -> Self {
        let replica = |b: BrokerId| {
            let at = partition.assignment.iter().position(|r| *r == b);
            let entity = partition.replicas[at.expect("an assigned broker")];
            Holds::new(replicas.get(entity).expect("replica entity"), by_id)
        };
        let serving = partition.leader.filter(|l| up(*l));
        let next = match serving {
            Some(leader) => Some((leader, false)),
            None => choose_leader(partition, up, cluster.config.eligible_leader_replicas),
        };
        let offline = match partition.leader {
            Some(leader) => format!("leader {leader} is down: "),
            None => "partition offline: ".to_string(),
        };
        let way = match next {
            Some((leader, unclean)) => {
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
                Way::Serving {
                    log: replica(leader),
                    why,
                }
            }
            None => Way::Offline {
                each: partition
                    .assignment
                    .iter()
                    .map(|b| {
                        let may_lead = partition.in_isr(*b) || partition.elr.contains(b);
                        (*b, may_lead, replica(*b))
                    })
                    .collect(),
                offline,
            },
        };
        Judge { partition, way }
    }

    /// Whether a record is missing, and why; `None` if it is where it should be.
    fn judge(&self, record: &AckedRecord) -> Option<(Missing, String)> {
        let (each, offline) = match &self.way {
            Way::Serving { log, why } => {
                return (!log.has(record) && !log.expired(record))
                    .then(|| (Missing::Lost, why.clone()));
            }
            Way::Offline { each, offline } => (each, offline),
        };
        let down: Vec<String> = each
            .iter()
            .filter(|(_, may_lead, log)| *may_lead && log.has(record))
            .map(|(b, ..)| b.to_string())
            .collect();
        // Retention deleted it from a replica that may lead, or from every replica: once the
        // partition has a leader again, it lies below the log start.
        let expired_on_a_leader = each
            .iter()
            .any(|(_, may_lead, log)| *may_lead && log.expired(record));
        let expired_everywhere = each.iter().all(|(_, _, log)| log.expired(record));
        if down.is_empty() && (expired_on_a_leader || expired_everywhere) {
            return None;
        }
        Some(if !down.is_empty() {
            (
                Missing::Unavailable,
                format!(
                    "{offline}broker {} has it, and is down",
                    down.join(" and broker ")
                ),
            )
        } else if each.iter().any(|(_, _, log)| log.has(record)) {
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
        })
    }
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

/// Whether a replica's log holds an acknowledged record. acks=0 records have no offset: they are
/// looked up by id.
struct Holds<'a> {
    replica: &'a Replica,
    ids: Option<HashSet<u64>>,
    /// For acks=0 records: each producer's first record the log still keeps, by id.
    first_kept: Option<HashMap<u32, u64>>,
}

impl<'a> Holds<'a> {
    fn new(replica: &'a Replica, by_id: bool) -> Self {
        let ids = by_id.then(|| replica.log.iter().map(|r| r.id()).collect());
        let first_kept = (by_id && replica.log_start_offset > 0).then(|| {
            let mut first = HashMap::new();
            // A transaction marker is no record the producer sent.
            for record in replica.log.iter().filter(|r| r.control().is_none()) {
                first.entry(record.producer()).or_insert(record.id());
            }
            first
        });
        Holds {
            replica,
            ids,
            first_kept,
        }
    }

    /// Whether retention deleted it (it lies below the log start) or compaction removed it (its
    /// key has a newer record, or it was a tombstone past its horizon), as configured. An acks=0
    /// record's offset is unknown: it counts as deleted if its producer sent it before the first
    /// of its records the log keeps (or the log keeps none of them), once retention has deleted
    /// anything.
    fn expired(&self, record: &AckedRecord) -> bool {
        match record.offset() {
            Some(offset) => {
                offset < self.replica.log_start_offset || self.replica.cleaned.is_removed(offset)
            }
            None => self.first_kept.as_ref().is_some_and(|first| {
                first
                    .get(&record.producer())
                    .is_none_or(|kept| record.id < *kept)
            }),
        }
    }

    fn has(&self, record: &AckedRecord) -> bool {
        match record.offset() {
            Some(offset) => self
                .replica
                .log
                .get(offset as usize)
                .is_some_and(|r| r.id() == record.id),
            None => self
                .ids
                .as_ref()
                .is_some_and(|ids| ids.contains(&record.id)),
        }
    }
}
