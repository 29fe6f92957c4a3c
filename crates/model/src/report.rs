//! The JSON report of a run: the state at the end, the producers' counts, the metrics, the event
//! log and any invariant violated. Field order is fixed, so equal runs give equal bytes.

use std::collections::BTreeMap;

use bevy_ecs::prelude::*;
use serde::Serialize;

use crate::scenario::{GroupProtocol, Scenario, limits};
use crate::sim::cluster::read;
use crate::sim::cluster::{Broker, Cluster, Partition, Replica};
use crate::sim::consumer::Consumer;
use crate::sim::consumer_group::ConsumerGroup;
use crate::sim::invariants::Invariants;
use crate::sim::lag::{LagMonitor, lag_now, owned};
use crate::sim::loss::{LostRecord, Missing, lost_in};
use crate::sim::producer::{Producer, ProducerStats};
use crate::sim::{Event, Metrics, Sim};

/// Runs a scenario headless to `until_ms` (its duration when `None`) and reports what it did;
/// `name` is how the user gave `until_ms`, for the message when it is out of range.
pub fn run(scenario: &Scenario, until_ms: Option<u64>, name: &str) -> Result<Report, String> {
    if let Some(until) = until_ms {
        if until > limits::DURATION_MS {
            return Err(format!(
                "{name} {until}: a run lasts at most {} ms (a week)",
                limits::DURATION_MS
            ));
        }
        scenario
            .validate(&scenario.name, until)
            .map_err(|e| e.to_string())?;
    }
    let mut sim = Sim::new(scenario);
    sim.run_until(until_ms.unwrap_or(scenario.duration_ms));
    Ok(Report::of(&sim))
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: String,
    pub seed: u64,
    pub sim_time_ms: u64,
    pub brokers: Vec<BrokerReport>,
    pub partitions: Vec<PartitionReport>,
    pub producers: Vec<ProducerReport>,
    pub consumer_groups: Vec<GroupReport>,
    pub metrics: Metrics,
    /// Records a producer saw succeed that no replica will ever serve again.
    pub acked_records_lost: u64,
    /// Records a producer saw succeed that only replicas which may not lead still hold: the
    /// partition is offline, and an unclean election would bring them back.
    pub acked_records_unavailable: u64,
    pub lost_records: Vec<LostRecord>,
    pub events: Vec<Event>,
    pub invariant_violations: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    pub name: String,
    /// `group.protocol`: "classic" or "consumer".
    pub protocol: &'static str,
    pub assignor: String,
    /// The generation; in a consumer-protocol group, the group epoch.
    pub generation: u32,
    /// Consumer protocol: the target assignment's epoch and each member's epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs: Option<Epochs>,
    pub rebalances: u64,
    /// Summed over the group's partitions: the time each had no member consuming it.
    pub paused_ms: u64,
    /// The greatest known committed lag of any partition; `null` while none is known.
    pub max_lag: Option<u64>,
    /// The current generation's assignment: {member: ["topic-partition", ...]}.
    pub assignment: serde_json::Value,
    pub offsets: Vec<OffsetReport>,
    /// Times its members' positions were out of range and reset by `auto.offset.reset`. Left
    /// out while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub offset_resets: u64,
    /// The offsets those resets jumped over, which the group will never read: below the log
    /// start retention deleted them, and `latest` skips the rest up to the end. Left out while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub records_skipped: u64,
}

/// A consumer-protocol group's epochs, as `kafka-consumer-groups --describe --members --verbose`
/// shows them.
#[derive(Debug, Clone, Serialize)]
pub struct Epochs {
    pub group_epoch: u32,
    pub target_assignment_epoch: u32,
    /// Each member's epoch, by member id.
    pub members: BTreeMap<String, u32>,
}

/// One line of `kafka-consumer-groups --describe`.
#[derive(Debug, Clone, Serialize)]
pub struct OffsetReport {
    pub topic: String,
    pub partition: u32,
    pub committed: Option<u64>,
    /// The leader's log end offset.
    pub log_end_offset: u64,
    pub high_watermark: u64,
    /// High watermark - committed; `null` while nothing is committed ("-" in
    /// `kafka-consumer-groups`).
    pub lag: Option<u64>,
    /// High watermark - the owning member's position (the consumer's `records-lag`); `null`
    /// while no live member owns the partition.
    pub consumer_lag: Option<u64>,
    /// The greatest known committed lag, sampled every second.
    pub max_lag: Option<u64>,
    /// The time no live member consumed the partition, counted from the first instant at which
    /// every partition of the group was consumed.
    pub paused_ms: u64,
    /// How many such intervals there were.
    pub pauses: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BrokerReport {
    pub id: u32,
    /// `online`, `crashed` or `fenced`.
    pub state: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartitionReport {
    pub topic: String,
    pub partition: u32,
    pub leader: Option<u32>,
    pub leader_epoch: u32,
    pub isr: Vec<u32>,
    /// Eligible leader replicas (KIP-966), when the cluster uses them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub elr: Vec<u32>,
    /// The leader's (0 when there is none).
    pub high_watermark: u64,
    /// The leader's (0 when there is none): below it every transaction is decided, and
    /// read_committed consumers read no further (`UnifiedLog.lastStableOffset`). The high
    /// watermark when no transaction is open.
    pub last_stable_offset: u64,
    /// The leader's (0 when there is none).
    pub log_end_offset: u64,
    /// The leader's: below it retention deleted the records. Left out while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_start_offset: u64,
    pub replicas: Vec<ReplicaReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReplicaReport {
    pub broker: u32,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    /// Left out while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_start_offset: u64,
    /// Given for the partition, as its leader's.
    #[serde(skip)]
    pub last_stable_offset: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize)]
pub struct ProducerReport {
    pub name: String,
    pub acks: String,
    pub idempotent: bool,
    #[serde(flatten)]
    pub stats: ProducerStats,
    /// Records still in the accumulator or in flight.
    pub pending: u64,
    /// Records its retries put in a leader's log a second time (an earlier attempt had been
    /// appended, its answer lost). An idempotent producer's leaders recognise a retried batch by
    /// its sequence numbers, unless an epoch bump (KIP-360) renumbered it.
    pub duplicate_records: u64,
}

impl Report {
    /// The report of a run as it stands.
    pub fn of(sim: &Sim) -> Report {
        let world = sim.world();
        let cluster = world.resource::<Cluster>();
        let partition_entities = cluster.partitions.clone();
        let producer_entities = cluster.producers.clone();
        let topic_names: Vec<String> = cluster.topics.iter().map(|t| t.name.clone()).collect();
        let (scenario, seed) = (cluster.scenario.clone(), cluster.seed);

        let partitions = partition_entities
            .iter()
            .map(|e| {
                let p = world.get::<Partition>(*e).expect("partition");
                let replicas: Vec<ReplicaReport> = p
                    .replicas
                    .iter()
                    .map(|r| {
                        let r = world.get::<Replica>(*r).expect("replica");
                        ReplicaReport {
                            broker: r.broker,
                            log_end_offset: r.log_end_offset(),
                            high_watermark: r.high_watermark,
                            log_start_offset: r.log_start_offset,
                            last_stable_offset: r.last_stable_offset(),
                        }
                    })
                    .collect();
                let leader = p
                    .leader
                    .and_then(|b| replicas.iter().find(|r| r.broker == b));
                PartitionReport {
                    topic: topic_names[p.topic].clone(),
                    partition: p.index,
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    isr: p.isr.clone(),
                    elr: p.elr.clone(),
                    high_watermark: leader.map_or(0, |r| r.high_watermark),
                    last_stable_offset: leader.map_or(0, |r| r.last_stable_offset),
                    log_end_offset: leader.map_or(0, |r| r.log_end_offset),
                    log_start_offset: leader.map_or(0, |r| r.log_start_offset),
                    replicas,
                }
            })
            .collect();
        let runtime = world.resource::<crate::sim::Runtime>();
        let producers: Vec<ProducerReport> = producer_entities
            .iter()
            .map(|e| {
                let p = world.get::<Producer>(*e).expect("producer");
                ProducerReport {
                    name: p.name.clone(),
                    acks: p.acks.as_config().to_string(),
                    idempotent: p.idempotent,
                    stats: p.stats.clone(),
                    pending: p.pending(),
                    duplicate_records: runtime
                        .metrics
                        .duplicates_by_producer
                        .get(p.index as usize)
                        .copied()
                        .unwrap_or(0),
                }
            })
            .collect();
        let now = runtime.clock.now_ms;
        let mut metrics = runtime.metrics.clone();
        let mut brokers = Vec::new();
        let broker_entities = world.resource::<Cluster>().brokers.clone();
        for e in broker_entities {
            let b = world.get::<Broker>(e).expect("broker");
            brokers.push(BrokerReport {
                id: b.id,
                state: b.state().to_string(),
            });
        }
        for e in &partition_entities {
            let partition = world.get::<Partition>(*e).expect("partition");
            if let Some(since) = partition.offline_since_ms {
                metrics.offline_partition_ms += now - since;
            }
            if let Some(since) = partition.dead_leader_since_ms {
                metrics.dead_leader_ms += now - since;
            }
        }
        let lost = lost_in(world);
        let consumer_groups = {
            let cluster = world.resource::<Cluster>();
            let monitor = world.resource::<LagMonitor>();
            let mut groups = read::<&ConsumerGroup>(world);
            let groups = groups.query(world);
            let mut partitions = read::<&Partition>(world);
            let partitions = partitions.query(world);
            let mut replicas = read::<&Replica>(world);
            let replicas = replicas.query(world);
            let mut consumers = read::<&Consumer>(world);
            // Each owned partition's position, by (group, ordinal), for the consumer's own lag.
            let positions: BTreeMap<(u32, u32), u64> =
                owned(consumers.query(world).iter_many(&cluster.consumers))
                    .map(|(group, ordinal, position)| ((group, ordinal), position))
                    .collect();
            cluster
                .groups
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let group = groups.get(*e).expect("group");
                    let (offset_resets, records_skipped) = consumers
                        .query(world)
                        .iter_many(&cluster.consumers)
                        .filter(|c| c.group == group.index)
                        .fold((0, 0), |(resets, skipped), c| {
                            (resets + c.offset_resets, skipped + c.records_skipped)
                        });
                    let lag = monitor.groups.get(i).cloned().unwrap_or_default();
                    let offsets: Vec<OffsetReport> = group
                        .partitions
                        .iter()
                        .enumerate()
                        .map(|(k, o)| {
                            let history = lag.partitions.get(k);
                            let position = positions.get(&(group.index, *o)).copied();
                            let s =
                                lag_now(group, *o, cluster, &partitions, &replicas, now, position);
                            let p = partitions
                                .get(cluster.partitions[*o as usize])
                                .expect("partition");
                            OffsetReport {
                                topic: cluster.topics[p.topic].name.clone(),
                                partition: p.index,
                                committed: s.committed,
                                log_end_offset: s.log_end_offset,
                                high_watermark: s.high_watermark,
                                lag: s.lag,
                                consumer_lag: s.consumer_lag,
                                max_lag: history.and_then(|h| h.max_lag).max(s.lag),
                                paused_ms: history.map_or(0, |h| h.paused_until(now)),
                                pauses: history.map_or(0, |h| h.pauses),
                            }
                        })
                        .collect();
                    let consumer_protocol = group.config.protocol == GroupProtocol::Consumer;
                    let assignment = if consumer_protocol {
                        // The members' current assignments, as the coordinator holds them.
                        group
                            .members
                            .iter()
                            .map(|m| {
                                let tps = m
                                    .reconciliation
                                    .assigned
                                    .iter()
                                    .map(|o| cluster.topic_partition(&partitions, *o))
                                    .collect();
                                (m.id.clone(), tps)
                            })
                            .collect()
                    } else {
                        group.assignment.clone()
                    };
                    GroupReport {
                        name: group.name.clone(),
                        protocol: group.config.protocol.name(),
                        assignor: group.config.assignor().name().to_string(),
                        generation: group.generation,
                        epochs: consumer_protocol.then(|| Epochs {
                            group_epoch: group.generation,
                            target_assignment_epoch: group.assignment_epoch,
                            members: group
                                .members
                                .iter()
                                .map(|m| (m.id.clone(), m.reconciliation.member_epoch))
                                .collect(),
                        }),
                        rebalances: group.rebalances,
                        paused_ms: offsets.iter().map(|o| o.paused_ms).sum(),
                        max_lag: offsets.iter().filter_map(|o| o.max_lag).max(),
                        assignment: crate::assignor::to_json(&assignment),
                        offsets,
                        offset_resets,
                        records_skipped,
                    }
                })
                .collect::<Vec<_>>()
        };
        Report {
            scenario,
            seed,
            sim_time_ms: now,
            brokers,
            partitions,
            producers,
            consumer_groups,
            metrics,
            acked_records_lost: lost.iter().filter(|r| r.state == Missing::Lost).count() as u64,
            acked_records_unavailable: lost
                .iter()
                .filter(|r| r.state == Missing::Unavailable)
                .count() as u64,
            lost_records: lost,
            events: world
                .resource::<crate::sim::Runtime>()
                .events
                .events
                .iter()
                .cloned()
                .collect(),
            invariant_violations: world.resource::<Invariants>().violations.clone(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    pub fn partition(&self, topic: &str, partition: u32) -> Option<&PartitionReport> {
        self.partitions
            .iter()
            .find(|p| p.topic == topic && p.partition == partition)
    }

    pub fn producer(&self, name: &str) -> Option<&ProducerReport> {
        self.producers.iter().find(|p| p.name == name)
    }
}
