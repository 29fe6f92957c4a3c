//! Following one record through the cluster: where it is at an instant (in its producer's
//! batch, on the wire, in each replica's log, fetched by a consumer) and what its card says of
//! it (its key and the partitioner's numbers, its offset, whether it was acknowledged, whether it
//! is committed, which groups consumed and committed it). Read from the model's world, never
//! written.

use bevy::prelude::*;

use crate::partitioner::{murmur2, to_positive};
use crate::sim::cluster::{Cluster, Partition, Record, Replica};
use crate::sim::consumer::Consumer;
use crate::sim::consumer_group::ConsumerGroup;
use crate::sim::ledger::{AckLedger, AckedRecord};
use crate::sim::producer::Producer;
use crate::sim::protocol::Payload;
use crate::tour::RecordRef;

/// A record picked to follow: its id (which `send()` made it), and its partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub id: u64,
    /// Its partition's ordinal in the cluster.
    pub partition: u32,
    /// Where it was last seen in a log: looked at first, before the logs are searched.
    pub offset: Option<u64>,
}

/// The partitioner's arithmetic for a key (`BuiltInPartitioner.partitionForKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionerMath {
    /// `Utils.murmur2` of the key's bytes, as the signed int Java computes.
    pub murmur2: i32,
    /// `Utils.toPositive`: the sign bit cleared.
    pub positive: u32,
    pub partitions: u32,
    pub partition: u32,
}

impl PartitionerMath {
    pub fn of(key: &str, partitions: u32) -> PartitionerMath {
        let h = murmur2(key.as_bytes());
        let positive = to_positive(h);
        PartitionerMath {
            murmur2: h,
            positive,
            partitions,
            partition: positive % partitions.max(1),
        }
    }

    /// The three lines the producer's partitioner shows.
    pub fn lines(&self, key: &str) -> [String; 3] {
        [
            format!("murmur2(\"{key}\") = 0x{:08x}", self.murmur2 as u32),
            format!(
                "0x{:08x} & 0x7fffffff = {}",
                self.murmur2 as u32, self.positive
            ),
            format!(
                "{} % {} = {}",
                self.positive, self.partitions, self.partition
            ),
        ]
    }
}

/// What one group has done with the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupProgress {
    pub group: String,
    /// A member has processed it.
    pub consumed: bool,
    /// The group's committed offset is past it.
    pub committed: bool,
}

/// Where a record is at one instant, and what is known of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub id: u64,
    pub key: Option<String>,
    pub producer: String,
    pub topic: String,
    /// Its partition's index in the topic, and ordinal in the cluster.
    pub partition: u32,
    pub ordinal: u32,
    /// Why that partition: the partitioner's numbers, for a keyed record.
    pub partitioner: Option<PartitionerMath>,
    /// Its offset in the leader's log, once appended.
    pub offset: Option<u64>,
    /// Waiting in its producer's accumulator.
    pub in_batch: bool,
    /// Messages on the wire that carry it, by wire id.
    pub wires: Vec<u64>,
    /// The brokers whose log holds it.
    pub replicas: Vec<u32>,
    /// Members that fetched it and have not processed it yet, by consumer index.
    pub fetched_by: Vec<u32>,
    /// The producer was told it is written.
    pub acked: bool,
    /// Acknowledged, and now in no log: lost (its offset is the one the leader answered).
    pub lost: bool,
    /// In no log because retention deleted it: below the leader's log start, as configured.
    pub expired: bool,
    /// In no log because compaction removed it, as configured: a newer record has its key (or
    /// it was a tombstone past `delete.retention.ms`).
    pub compacted: bool,
    /// Below the leader's high watermark.
    pub committed: bool,
    pub groups: Vec<GroupProgress>,
}

/// Whether a record was acknowledged, read from the ledger of acknowledged writes a little at a
/// time: the ledger only grows as a run goes on, so each look reads only what is new since the
/// last one (a seek back, which shortens it, starts again).
#[derive(Debug, Clone, Copy, Default)]
pub struct AckScan {
    id: Option<(u32, u64)>,
    scanned: usize,
    found_at: Option<usize>,
}

impl AckScan {
    /// The ledger's entry for `id`, sent to `partition`, if it is there now.
    pub fn entry(&mut self, ledger: &AckLedger, partition: u32, id: u64) -> Option<AckedRecord> {
        if self.acked(ledger, partition, id) {
            self.found_at.and_then(|i| ledger.get(partition, i))
        } else {
            None
        }
    }

    /// Whether `id`, sent to `partition`, is in the ledger now.
    pub fn acked(&mut self, ledger: &AckLedger, partition: u32, id: u64) -> bool {
        let len = ledger.len_of(partition);
        if self.id != Some((partition, id)) {
            *self = AckScan {
                id: Some((partition, id)),
                ..AckScan::default()
            };
        }
        if self.found_at.is_some_and(|at| at < len) {
            return true;
        }
        self.found_at = None;
        self.scanned = self.scanned.min(len);
        if let Some(i) = ledger
            .ids_from(partition, self.scanned)
            .position(|acked| acked == id)
        {
            self.found_at = Some(self.scanned + i);
        }
        self.scanned = len;
        self.found_at.is_some()
    }
}

/// The record at `offset` of the partition with ordinal `ordinal`, in the log of its leader (or,
/// without one, of the first replica that has it).
pub fn at_offset(world: &World, ordinal: u32, offset: u64) -> Option<Picked> {
    let cluster = world.resource::<Cluster>();
    let p = world.get::<Partition>(*cluster.partitions.get(ordinal as usize)?)?;
    let leader = p.leader_replica().into_iter();
    let rest = p.replicas.iter().copied();
    leader.chain(rest).find_map(|e| {
        let record = world.get::<Replica>(e)?.log.get(offset as usize)?;
        // The coordinator's records have no producer: nothing to follow.
        (record.written().is_none()).then_some(Picked {
            id: record.id(),
            partition: ordinal,
            offset: Some(offset),
        })
    })
}

/// The record a tour names, once it exists: in a log, or still in its producer.
pub fn resolve(world: &World, record: &RecordRef) -> Option<Picked> {
    let cluster = world.resource::<Cluster>();
    match record {
        RecordRef::Offset(topic, partition, offset) => {
            let t = cluster.topics.iter().find(|t| t.name == *topic)?;
            let p = world.get::<Partition>(*t.partitions.get(*partition as usize)?)?;
            at_offset(world, p.ordinal, *offset)
        }
        RecordRef::Key(key) => {
            // In scenario order, the first producer that has sent it: a keyed record's partition
            // is fixed by the key, so only that partition's logs need a look.
            cluster.producers.iter().find_map(|e| {
                let producer = world.get::<Producer>(*e)?;
                let index = crate::partitioner::partition_for_key(
                    key.as_bytes(),
                    producer.partitions.len() as u32,
                );
                let partition = world.get::<Partition>(producer.partitions[index as usize])?;
                let first_in = |e: &Entity| {
                    world
                        .get::<Replica>(*e)?
                        .log
                        .iter()
                        .zip(0u64..)
                        .find(|(r, _)| {
                            r.producer() == producer.index && producer.key_is(r.key, key)
                        })
                        .map(|(r, offset)| (r.id(), Some(offset)))
                };
                let in_log = partition
                    .leader_replica()
                    .iter()
                    .chain(&partition.replicas)
                    .find_map(first_in);
                let in_producer = || {
                    let batches = producer
                        .queues
                        .iter()
                        .flatten()
                        .chain(producer.in_flight.iter().flat_map(|f| &f.batches));
                    batches
                        .flat_map(|b| &b.records)
                        .filter(|r| producer.key_is(r.key, key))
                        .map(|r| (r.id, None))
                        .min()
                };
                in_log.or_else(in_producer).map(|(id, offset)| Picked {
                    id,
                    partition: partition.ordinal,
                    offset,
                })
            })
        }
    }
}

/// Where `picked` is now. `None` if its partition or producer is not in this world, or if the
/// record is nowhere and was never acknowledged: not made yet (after a seek back), or made and
/// failed.
pub fn trace(world: &mut World, picked: Picked, acks: &mut AckScan) -> Option<Trace> {
    let world = &*world;
    let on_wire = &world.resource::<crate::sim::Runtime>().wires;
    let cluster = world.resource::<Cluster>();
    let partition_entity = *cluster.partitions.get(picked.partition as usize)?;
    let partition = world.get::<Partition>(partition_entity)?;
    let topic = cluster.topics.get(partition.topic)?;
    let producer_index = crate::sim::ledger::producer_of(picked.id);
    let producer = world.get::<Producer>(*cluster.producers.get(producer_index as usize)?)?;

    let in_batch_record = producer
        .queues
        .iter()
        .flatten()
        .flat_map(|b| &b.records)
        .find(|r| r.id == picked.id);
    let in_flight_record = producer
        .in_flight
        .iter()
        .flat_map(|f| &f.batches)
        .flat_map(|b| &b.records)
        .find(|r| r.id == picked.id);

    // Its offset: where the leader's log holds it, else any replica's; where it was last seen
    // first, since a record keeps its offset unless a truncation took it.
    let holds = |e: &Entity| -> Option<(u32, u64, &Record)> {
        let replica = world.get::<Replica>(*e)?;
        let hinted = picked
            .offset
            .and_then(|o| Some((o, replica.log.get(o as usize)?)))
            .filter(|(_, r)| r.id() == picked.id);
        let (offset, record) = hinted.or_else(|| {
            let leo = replica.log_end_offset();
            let mut newest_first = (0..leo).rev().zip(replica.log.iter().rev());
            newest_first.find(|(_, r)| r.id() == picked.id)
        })?;
        // A place its cleaner emptied holds no record any more.
        (!replica.cleaned.is_removed(offset)).then_some((replica.broker, offset, record))
    };
    let leader_copy = partition.leader_replica().as_ref().and_then(holds);
    let any_copy = leader_copy.or_else(|| partition.replicas.iter().find_map(holds));
    let offset = any_copy.map(|(_, o, _)| o);
    let key = any_copy
        .map(|(_, _, r)| r.key)
        .or(in_batch_record.map(|r| r.key))
        .or(in_flight_record.map(|r| r.key))
        .and_then(|k| producer.key_text(k));
    let replicas = partition
        .replicas
        .iter()
        .filter_map(|e| {
            let replica = world.get::<Replica>(*e)?;
            let at = replica.log.get(offset? as usize)?;
            (at.id() == picked.id && !replica.cleaned.is_removed(offset?)).then_some(replica.broker)
        })
        .collect();

    let mut wires: Vec<u64> = Vec::new();
    for message in on_wire.iter() {
        let carries = match &message.payload {
            Payload::Produce(request) => request
                .batches
                .iter()
                .any(|b| b.records.iter().any(|r| r.id == picked.id)),
            Payload::FetchResponse(response) => {
                response.records.iter().any(|r| r.id() == picked.id)
            }
            Payload::ConsumerFetchResponse(response) => offset.is_some_and(|offset| {
                response.partition == partition_entity
                    && (response.from..response.from + response.count).contains(&offset)
            }),
            _ => false,
        };
        if carries {
            wires.push(message.wire.id);
        }
    }

    let consumers: Vec<&Consumer> = cluster
        .consumers
        .iter()
        .filter_map(|e| world.get::<Consumer>(*e))
        .collect();
    let fetched_by = match offset {
        None => Vec::new(),
        Some(offset) => consumers
            .iter()
            .filter(|c| {
                c.alive
                    && c.assigned
                        .get(&picked.partition)
                        .is_some_and(|p| p.processed <= offset && offset < p.position)
            })
            .map(|c| c.index)
            .collect(),
    };
    let groups = cluster
        .groups
        .iter()
        .filter_map(|e| world.get::<ConsumerGroup>(*e))
        .filter(|g| g.partitions.contains(&picked.partition))
        .map(|g| {
            let past = |next: u64| offset.is_some_and(|o| next > o);
            GroupProgress {
                group: g.name.clone(),
                consumed: consumers.iter().any(|c| {
                    c.group == g.index
                        && c.assigned
                            .get(&picked.partition)
                            .is_some_and(|p| past(p.processed))
                }) || g
                    .committed()
                    .get(&picked.partition)
                    .is_some_and(|c| past(*c)),
                committed: g
                    .committed()
                    .get(&picked.partition)
                    .is_some_and(|c| past(*c)),
            }
        })
        .collect();
    let committed = match (offset, partition.leader_replica()) {
        (Some(offset), Some(leader)) => world
            .get::<Replica>(leader)
            .is_some_and(|r| offset < r.high_watermark),
        _ => false,
    };
    // An acknowledged record that is nowhere now was lost: the ledger still has its key.
    let ledger = world.resource::<AckLedger>();
    let entry = acks.entry(ledger, picked.partition, picked.id);
    let nowhere = in_batch_record.is_none()
        && in_flight_record.is_none()
        && offset.is_none()
        && wires.is_empty();
    // Below the leader's log start it expired as configured, whether or not the ledger has
    // forgotten it yet.
    let leader = partition
        .leader_replica()
        .and_then(|r| world.get::<Replica>(r));
    let log_start = leader.map_or(0, |r| r.log_start_offset);
    let last_offset = entry.and_then(|e| e.offset()).or(picked.offset);
    let expired = nowhere && last_offset.is_some_and(|o| o < log_start);
    // Or the leader's cleaner removed it: its key has a newer record, or it was a tombstone past
    // `delete.retention.ms`.
    let compacted = nowhere
        && !expired
        && last_offset.is_some_and(|o| leader.is_some_and(|r| r.cleaned.is_removed(o)));
    if nowhere && entry.is_none() && !expired && !compacted {
        return None;
    }
    let key = key.or_else(|| entry.and_then(|e| producer.key_text(e.key)));
    let lost = nowhere && entry.is_some() && !expired && !compacted;
    let offset = offset.or_else(|| last_offset.filter(|_| lost || expired || compacted));
    Some(Trace {
        id: picked.id,
        partitioner: key
            .as_deref()
            .map(|k| PartitionerMath::of(k, topic.partitions.len() as u32)),
        key,
        producer: producer.name.clone(),
        topic: topic.name.clone(),
        partition: partition.index,
        ordinal: picked.partition,
        offset,
        in_batch: in_batch_record.is_some(),
        wires,
        replicas,
        fetched_by,
        acked: entry.is_some(),
        lost,
        expired,
        compacted,
        committed,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partitioner_shows_kafkas_numbers() {
        // Kafka's UtilsTest.testMurmur2: "foobar" hashes to -790332482; with 12 partitions it
        // goes to partition 6.
        let m = PartitionerMath::of("foobar", 12);
        assert_eq!(m.murmur2, -790_332_482);
        assert_eq!(m.positive, (-790_332_482i32 & 0x7fff_ffff) as u32);
        assert_eq!(m.partition, 6);
        let [hash, positive, modulo] = PartitionerMath::of("user-7", 3).lines("user-7");
        assert_eq!(hash, "murmur2(\"user-7\") = 0x2987fe7c");
        assert_eq!(positive, "0x2987fe7c & 0x7fffffff = 696778364");
        assert_eq!(modulo, "696778364 % 3 = 2");
    }
}
