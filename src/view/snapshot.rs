//! What the scene and the overlay show of the model at one instant, read from the model's world
//! once a frame. The view draws only this: it never holds or changes model entities.

use bevy::prelude::*;

use crate::scenario::GroupProtocol;
use crate::sim::Metrics;
use crate::sim::cluster::{Broker, Cluster, FollowerStates, Partition, Replica};
use crate::sim::consumer::Consumer;
use crate::sim::consumer_group::ConsumerGroup;
use crate::sim::consumer_group::ReconcileState;
use crate::sim::lag::{LagMonitor, owned};
use crate::sim::network::{Node, Wire, WireState};
use crate::sim::producer::Producer;
use crate::sim::protocol::Payload;
use crate::sim::protocol::{GroupResponse, GroupResponseBody};

use super::palette::ReplicaRole;

/// A message's family, which gives its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Produce,
    ProduceResponse,
    /// A follower's fetch to its leader (and the answer).
    Fetch,
    FetchResponse,
    /// A broker's heartbeat to the controller (and the answer).
    Heartbeat,
    HeartbeatResponse,
    /// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit (and the answers).
    Group,
    GroupResponse,
    ConsumerFetch,
    ConsumerFetchResponse,
}

impl MessageKind {
    /// Kafka's name for the request.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Produce => "Produce",
            MessageKind::ProduceResponse => "Produce response",
            MessageKind::Fetch => "Fetch (replica)",
            MessageKind::FetchResponse => "Fetch response (replica)",
            MessageKind::Heartbeat => "BrokerHeartbeat",
            MessageKind::HeartbeatResponse => "BrokerHeartbeat response",
            MessageKind::Group => "Group request",
            MessageKind::GroupResponse => "Group response",
            MessageKind::ConsumerFetch => "Fetch (consumer)",
            MessageKind::ConsumerFetchResponse => "Fetch response (consumer)",
        }
    }

    pub fn is_response(self) -> bool {
        matches!(
            self,
            MessageKind::ProduceResponse
                | MessageKind::FetchResponse
                | MessageKind::HeartbeatResponse
                | MessageKind::GroupResponse
                | MessageKind::ConsumerFetchResponse
        )
    }
}

/// Where a consumer-protocol member's coordinator holds it in reconciling, if anywhere.
fn reconciling(
    group: &ConsumerGroup,
    member: &str,
    name: &dyn Fn(u32) -> String,
) -> Option<Reconciling> {
    let m = group.members.iter().find(|m| m.id == member)?;
    let r = &m.reconciliation;
    match r.state {
        ReconcileState::Stable => None,
        ReconcileState::UnrevokedPartitions => Some(Reconciling::Revoke(
            r.pending_revocation.iter().map(|o| name(*o)).collect(),
        )),
        ReconcileState::UnreleasedPartitions => Some(Reconciling::WaitFor(
            group
                .target
                .get(member)
                .into_iter()
                .flatten()
                .filter(|o| !r.assigned.contains(o))
                .map(|o| name(*o))
                .collect(),
        )),
    }
}

#[derive(Debug, Clone)]
pub struct MessageView {
    pub wire: Wire,
    pub kind: MessageKind,
    /// Set for group requests: JoinGroup, OffsetCommit...
    pub detail: Option<&'static str>,
    /// Records it carries (a produce request's batches, a fetch response's records): drawn as
    /// a card with their count.
    pub records: u32,
    /// A produce request's `acks`.
    pub acks: Option<&'static str>,
    /// A ConsumerGroupHeartbeat response that carries an assignment: the member epoch and the
    /// partitions, by ordinal.
    pub assignment: Option<(i32, Vec<u32>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BrokerView {
    pub id: u32,
    pub alive: bool,
    pub fenced: bool,
    /// `online`, `starting`, `crashed`, `stopped`, `shutting down` or `fenced`.
    pub state: &'static str,
    pub isolated: bool,
    /// Its link to the controller is cut.
    pub controller_cut: bool,
    /// Extra delay on every message to or from it, in ms.
    pub slowed_ms: u64,
    /// `broker.rack`, where the brokers have racks.
    pub rack: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaView {
    pub broker: u32,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    /// Below it retention deleted the records.
    pub log_start_offset: u64,
    /// Where its segments begin, oldest first (the first at or below the log start).
    pub segment_starts: Vec<u64>,
    /// When retention last deleted some of its segments.
    pub segments_deleted_ms: Option<u64>,
    /// The runs of offsets near its log end whose records its cleaner removed (compaction), as
    /// far back as a strip can show.
    pub cleaned: Vec<std::ops::Range<u64>>,
    /// Where its cleaner got to: the first offset it has not cleaned (the cleaner's checkpoint),
    /// once it has cleaned anything.
    pub cleaned_to: Option<u64>,
    pub role: ReplicaRole,
    /// Its broker runs.
    pub alive: bool,
    /// Its leader epoch history: (epoch, start offset), oldest first.
    pub epochs: Vec<(u32, u64)>,
    /// Where its next fetch from the leader would cut its log (KIP-279), if its log diverges from
    /// the leader's: it holds records the leader does not.
    pub truncates_to: Option<u64>,
    /// The epoch it still leads in by its own metadata, after the controller replaced it: a leader
    /// cut off from the controller that has not learnt so.
    pub stale_leader: Option<u32>,
}

/// What a partition's leader knows of one follower, from its fetches
/// (`Partition.updateFollowerFetchState`).
#[derive(Debug, Clone, PartialEq)]
pub struct FollowerView {
    pub broker: u32,
    /// The offset its last fetch asked from: its log end offset, as the leader knows it.
    pub fetch_offset: u64,
    /// When it was last caught up with the leader (`lastCaughtUpTimeMs`), if ever.
    pub last_caught_up_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartitionView {
    pub ordinal: u32,
    pub topic: String,
    pub index: u32,
    pub leader: Option<u32>,
    pub leader_epoch: u32,
    pub isr: Vec<u32>,
    pub assignment: Vec<u32>,
    pub min_insync_replicas: u32,
    /// The topic's `segment.*`, `retention.*` and `cleanup.policy`.
    pub log: crate::sim::segments::LogConfig,
    pub replicas: Vec<ReplicaView>,
    /// The leader's view of its followers, in assignment order (none without a leader).
    pub followers: Vec<FollowerView>,
    /// The internal offsets topic.
    pub internal: bool,
    /// Since when its leader, as the controller sees it, has been down or cut off.
    pub dead_leader_since_ms: Option<u64>,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election: bool,
    /// Eligible leader replicas (KIP-966): empty while the feature is off.
    pub elr: Vec<u32>,
    /// A reassignment under way: the replicas it adds, and those it removes.
    pub reassigning: Option<(Vec<u32>, Vec<u32>)>,
}

impl Snapshot {
    /// `Metrics::dead_leader_ms` with the stalls still going on.
    pub fn dead_leader_ms(&self) -> u64 {
        self.metrics.dead_leader_ms
            + self
                .partitions
                .iter()
                .filter_map(|p| p.dead_leader_since_ms)
                .map(|since| self.now_ms.saturating_sub(since))
                .sum::<u64>()
    }
}

impl PartitionView {
    pub fn name(&self) -> String {
        format!("{}-{}", self.topic, self.index)
    }

    pub fn leader_replica(&self) -> Option<&ReplicaView> {
        let leader = self.leader?;
        self.replicas.iter().find(|r| r.broker == leader)
    }

    /// Fewer replicas in sync than assigned (Kafka's UnderReplicatedPartitions counts these).
    pub fn under_replicated(&self) -> bool {
        self.leader.is_some() && self.isr.len() < self.assignment.len()
    }

    /// In sync replicas below `min.insync.replicas`: acks=all produce fails.
    pub fn under_min_isr(&self) -> bool {
        self.leader.is_some() && (self.isr.len() as u32) < self.min_insync_replicas
    }
}

/// A record waiting in a producer's batch, as its card shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CardView {
    pub id: u64,
    pub key: Option<String>,
}

/// A batch in the producer's accumulator.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchView {
    /// The partition's index in the topic.
    pub partition: u32,
    pub records: Vec<CardView>,
    pub bytes: u32,
    pub created_ms: u64,
    /// Sent before and waiting to be sent again.
    pub retry: bool,
}

impl BatchView {
    fn of(b: &crate::sim::producer::Batch, producer: &Producer) -> BatchView {
        BatchView {
            partition: b.partition,
            records: b
                .records
                .iter()
                .map(|r| CardView {
                    id: r.id,
                    key: producer.key_text(r.key),
                })
                .collect(),
            bytes: b.bytes,
            created_ms: b.created_ms,
            retry: b.attempts > 0,
        }
    }
}

/// A ProduceRequest the producer waits an answer for.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestView {
    pub wire_id: u64,
    pub broker: u32,
    pub sent_ms: u64,
    pub batches: Vec<BatchView>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProducerView {
    pub name: String,
    pub topic: String,
    /// The topic's partition count (what the partitioner divides by).
    pub partitions: u32,
    pub acks: &'static str,
    pub idempotent: bool,
    pub records_per_sec: u32,
    pub linger_ms: u64,
    pub batch_size: u32,
    pub request_timeout_ms: u64,
    /// How it picks its records' keys.
    pub keys: crate::scenario::Keys,
    /// When it next refreshes its metadata at the latest (`metadata.max.age.ms` after the last
    /// answer): partitions added since are used from then on.
    pub metadata_refresh_ms: u64,
    pub sent: u64,
    pub acked: u64,
    pub failed: u64,
    pub pending: u64,
    /// Records its retries put in a leader's log a second time.
    pub duplicates: u64,
    /// A broker whose answers to it are being lost: its connection there hangs
    /// (`DropResponses`), until it closes it.
    pub answers_lost: Option<u32>,
    /// The accumulator: each partition's batches, oldest first.
    pub batches: Vec<BatchView>,
    /// The sender's requests in flight.
    pub in_flight: Vec<RequestView>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemberView {
    pub name: String,
    /// Index in the cluster's consumers: the node of its messages.
    pub node: u32,
    pub alive: bool,
    /// With `auto.offset.reset=none`, what stopped it: "OffsetOutOfRange" or "NoOffset".
    pub failed: Option<&'static str>,
    /// Its generation, or in a consumer-protocol group its member epoch, as it knows it.
    pub epoch: u32,
    /// Partitions it consumes now, by name.
    pub assigned: Vec<String>,
    /// Consumer protocol: where its coordinator holds it in reconciling, by partition name.
    pub reconciling: Option<Reconciling>,
    /// Per partition it consumes: (ordinal, next offset to fetch, next offset to process).
    pub progress: Vec<(u32, u64, u64)>,
}

/// A consumer-protocol member between two epochs, as its coordinator sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciling {
    /// It must give these up before it moves to the next epoch.
    Revoke(Vec<String>),
    /// It waits for these, which another member has yet to release.
    WaitFor(Vec<String>),
}

/// One line of `kafka-consumer-groups --describe`.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetRow {
    pub ordinal: u32,
    pub partition: String,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    pub committed: Option<u64>,
    /// High watermark - committed, as `kafka-consumer-groups` computes it; unknown ("-") while
    /// nothing is committed.
    pub lag: Option<u64>,
    /// High watermark - the owner's position (the consumer's `records-lag`); unknown while no
    /// live member owns the partition.
    pub consumer_lag: Option<u64>,
    /// No live member consumes it now (after the group's start-up).
    pub paused: bool,
    /// Its committed offset, or its owner's position, is below the leader's log start: retention
    /// deleted records the group has not read.
    pub behind_log_start: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupView {
    pub name: String,
    pub state: &'static str,
    /// The generation; in a consumer-protocol group, the group epoch.
    pub generation: u32,
    /// Consumer protocol: the target assignment's epoch.
    pub target_epoch: Option<u32>,
    pub rebalances: u64,
    /// The records a second each member processes (the newest member's rate: `SetConsumerRate`
    /// sets every member's).
    pub records_per_sec: u32,
    /// The `__consumer_offsets` partition its coordinator writes commits to.
    pub offsets_partition: u32,
    pub members: Vec<MemberView>,
    pub offsets: Vec<OffsetRow>,
    /// `group.protocol`: "classic" or "consumer".
    pub protocol: &'static str,
    /// The assignor's name (`partition.assignment.strategy`, `group.remote.assignor`).
    pub assignor: &'static str,
    /// The broker that coordinates it: the leader of its `__consumer_offsets` partition.
    pub coordinator: Option<u32>,
    /// The members as the coordinator describes them (DescribeGroups, ConsumerGroupDescribe).
    pub described: Vec<DescribedMember>,
}

/// A member as its coordinator describes it to `kafka-consumer-groups`.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    /// The partitions (ordinals) the coordinator says it has: a classic group's only while it is
    /// Stable (`ClassicGroup.describe` sends no assignment otherwise).
    pub assigned: Vec<u32>,
    /// Consumer protocol: its member epoch, and its target assignment's partitions.
    pub epoch: Option<u32>,
    pub target: Vec<u32>,
}

impl GroupView {
    /// "generation 5", or a consumer-protocol group's "group epoch 13, target assignment epoch
    /// 12".
    pub fn epochs(&self) -> String {
        match self.target_epoch {
            Some(target) => format!(
                "group epoch {}, target assignment epoch {target}",
                self.generation
            ),
            None => format!("generation {}", self.generation),
        }
    }

    /// The committed lag summed over the partitions that have one; `None` ("-") while no
    /// partition has a committed offset.
    pub fn lag(&self) -> Option<u64> {
        self.offsets
            .iter()
            .filter_map(|o| o.lag)
            .reduce(|a, b| a + b)
    }

    /// The members' own lag summed over the partitions that have a live owner.
    pub fn consumer_lag(&self) -> Option<u64> {
        self.offsets
            .iter()
            .filter_map(|o| o.consumer_lag)
            .reduce(|a, b| a + b)
    }

    /// How many partitions no live member consumes now.
    pub fn paused(&self) -> usize {
        self.offsets.iter().filter(|o| o.paused).count()
    }
}

/// A group's members as its coordinator describes them: a classic group's assignment only while
/// it is Stable (`ClassicGroup.describe`); a consumer-protocol member's assigned partitions and
/// target (`ConsumerGroupMember.asConsumerGroupDescribeMember`).
fn described(g: &ConsumerGroup, cluster: &Cluster) -> Vec<DescribedMember> {
    use crate::sim::consumer_group::GroupState;
    let consumer = g.config.protocol == GroupProtocol::Consumer;
    g.members
        .iter()
        .map(|m| {
            let (assigned, epoch, target) = if consumer {
                let r = &m.reconciliation;
                let target = g
                    .target
                    .get(&m.id)
                    .map_or_else(Vec::new, |t| t.iter().copied().collect());
                (
                    r.assigned.iter().copied().collect(),
                    Some(r.member_epoch),
                    target,
                )
            } else if g.state == GroupState::Stable {
                let assigned = g.assignment.get(&m.id).map_or_else(Vec::new, |tps| {
                    tps.iter().filter_map(|tp| cluster.ordinal_of(tp)).collect()
                });
                (assigned, None, Vec::new())
            } else {
                (Vec::new(), None, Vec::new())
            };
            DescribedMember {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                assigned,
                epoch,
                target,
            }
        })
        .collect()
}

/// "-" for a value not known, as `kafka-consumer-groups` prints it.
pub fn or_dash(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// Everything drawn at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub now_ms: u64,
    pub scenario: String,
    pub brokers: Vec<BrokerView>,
    pub partitions: Vec<PartitionView>,
    pub producers: Vec<ProducerView>,
    pub groups: Vec<GroupView>,
    pub messages: Vec<MessageView>,
    pub metrics: Metrics,
    /// Eligible leader replicas (KIP-966) are on.
    pub eligible_leader_replicas: bool,
    /// Counts the changes of replica sets and partitions (`Cluster::assignments_version`).
    pub assignments_version: u64,
    pub cut_links: Vec<(u32, u32)>,
    /// `offsets.topic.num.partitions`: the model holds only the ones its groups use.
    pub offsets_topic_partitions: u32,
    /// When each broker's last heartbeat reached the controller, by broker id (index 0 unused).
    pub last_heartbeat_ms: Vec<u64>,
}

/// A message's kind and detail, the records it carries, and a produce request's acks.
type Kind = (MessageKind, Option<&'static str>, u32, Option<&'static str>);

fn message_kind(payload: &Payload) -> Kind {
    let (kind, detail) = match payload {
        Payload::Produce(r) => {
            let records = r.batches.iter().map(|b| b.records.len() as u32).sum();
            return (
                MessageKind::Produce,
                None,
                records,
                Some(r.acks.as_config()),
            );
        }
        Payload::ProduceResponse(r) => (
            MessageKind::ProduceResponse,
            r.closed.then_some("Connection closed"),
        ),
        Payload::Fetch(_) => (MessageKind::Fetch, None),
        Payload::FetchResponse(r) => {
            let records = r.records.len() as u32;
            return (MessageKind::FetchResponse, None, records, None);
        }
        Payload::ConsumerFetchResponse(r) => {
            return (
                MessageKind::ConsumerFetchResponse,
                None,
                r.count as u32,
                None,
            );
        }
        Payload::Heartbeat(h) => (
            MessageKind::Heartbeat,
            h.registration.then_some("BrokerRegistration"),
        ),
        Payload::HeartbeatResponse(r) => (
            MessageKind::HeartbeatResponse,
            r.refused.then_some("DUPLICATE_BROKER_REGISTRATION"),
        ),
        Payload::Group(r) => (MessageKind::Group, Some(r.body.name())),
        Payload::GroupResponse(_) => (MessageKind::GroupResponse, None),
        Payload::ConsumerFetch(_) => (MessageKind::ConsumerFetch, None),
    };
    (kind, detail, 0, None)
}

impl Snapshot {
    /// Reads the model. Needs `&mut` only to look the messages up by their component.
    pub fn of(world: &mut World) -> Snapshot {
        // Rows are kept in send order.
        let messages = world
            .resource::<crate::sim::Runtime>()
            .wires
            .iter()
            .map(|message| {
                let (kind, detail, records, acks) = message_kind(&message.payload);
                let assignment = match &message.payload {
                    Payload::GroupResponse(r) => match &**r {
                        GroupResponse {
                            body:
                                GroupResponseBody::ConsumerGroupHeartbeat {
                                    member_epoch,
                                    assignment: Some(assignment),
                                    ..
                                },
                            ..
                        } => Some((*member_epoch, assignment.clone())),
                        _ => None,
                    },
                    _ => None,
                };
                MessageView {
                    wire: message.wire,
                    kind,
                    detail,
                    records,
                    acks,
                    assignment,
                }
            })
            .collect();

        let cluster = world.resource::<Cluster>();
        let network = &world.resource::<crate::sim::Runtime>().network;
        let brokers: Vec<BrokerView> = cluster
            .brokers
            .iter()
            .map(|e| {
                let b = world.get::<Broker>(*e).expect("broker");
                BrokerView {
                    id: b.id,
                    alive: b.alive,
                    fenced: b.fenced,
                    state: b.state(),
                    isolated: network.isolated.contains(&b.id),
                    controller_cut: network.controller_cut.contains(&b.id),
                    slowed_ms: network.extra_ms.get(b.id as usize).copied().unwrap_or(0),
                    rack: cluster
                        .config
                        .broker_racks
                        .as_ref()
                        .and_then(|racks| racks.get(b.id as usize - 1).cloned()),
                }
            })
            .collect();
        let alive = |id: u32| brokers.iter().any(|b| b.id == id && b.alive);
        let topic_name = |t: usize| cluster.topics[t].name.clone();
        let partitions: Vec<PartitionView> = cluster
            .partitions
            .iter()
            .map(|e| {
                let p = world.get::<Partition>(*e).expect("partition");
                let leader = p
                    .leader_replica()
                    .map(|e| world.get::<Replica>(e).expect("replica"));
                let replicas = p
                    .replicas
                    .iter()
                    .map(|r| {
                        let r = world.get::<Replica>(*r).expect("replica");
                        let is_leader = p.leader == Some(r.broker);
                        let seen = cluster
                            .brokers
                            .get(r.broker as usize - 1)
                            .and_then(|b| world.get::<Broker>(*b))
                            .map_or(0, |b| b.metadata_offset);
                        ReplicaView {
                            broker: r.broker,
                            log_end_offset: r.log_end_offset(),
                            high_watermark: r.high_watermark,
                            log_start_offset: r.log_start_offset,
                            segment_starts: r.segments.iter().map(|s| s.base_offset).collect(),
                            segments_deleted_ms: r.segments.last_deleted_ms(),
                            cleaned_to: r.cleaned.checkpoint(),
                            cleaned: r.cleaned.removed_runs(
                                r.log_end_offset()
                                    .saturating_sub(super::log_strip::STRIP_REACH),
                                r.log_end_offset(),
                            ),
                            role: ReplicaRole::of(r.broker, p.leader, &p.isr, alive(r.broker)),
                            alive: alive(r.broker),
                            epochs: r.epochs.clone(),
                            truncates_to: leader
                                .filter(|_| !is_leader)
                                .and_then(|l| crate::sim::replication::truncation_point(l, r)),
                            stale_leader: p
                                .leads_as_seen(r.broker, seen)
                                .filter(|e| *e < p.leader_epoch && alive(r.broker)),
                        }
                    })
                    .collect();
                let states = world.get::<FollowerStates>(*e).expect("partition");
                let followers = match p.leader {
                    None => Vec::new(),
                    Some(leader) => p
                        .assignment
                        .iter()
                        .zip(&states.0)
                        .filter(|(b, _)| **b != leader)
                        .map(|(b, f)| FollowerView {
                            broker: *b,
                            fetch_offset: f.log_end_offset,
                            last_caught_up_ms: f.last_caught_up_ms,
                        })
                        .collect(),
                };
                PartitionView {
                    ordinal: p.ordinal,
                    topic: topic_name(p.topic),
                    index: p.index,
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    isr: p.isr.clone(),
                    assignment: p.assignment.clone(),
                    min_insync_replicas: p.min_insync_replicas,
                    log: p.log,
                    replicas,
                    followers,
                    internal: cluster.topics[p.topic].name == crate::sim::cluster::OFFSETS_TOPIC,
                    dead_leader_since_ms: p.dead_leader_since_ms,
                    unclean_leader_election: p.unclean_leader_election,
                    elr: p.elr.clone(),
                    reassigning: p
                        .reassignment
                        .as_ref()
                        .map(|r| (r.adding.clone(), r.removing.clone())),
                }
            })
            .collect();
        let runtime = world.resource::<crate::sim::Runtime>();
        let producers = cluster
            .producers
            .iter()
            .map(|e| {
                let p = world.get::<Producer>(*e).expect("producer");
                let batches = p
                    .queues
                    .iter()
                    .flatten()
                    .map(|b| BatchView::of(b, p))
                    .collect();
                let in_flight = p
                    .in_flight
                    .iter()
                    .map(|f| RequestView {
                        wire_id: f.wire_id,
                        broker: f.broker,
                        sent_ms: f.sent_ms,
                        batches: f.batches.iter().map(|b| BatchView::of(b, p)).collect(),
                    })
                    .collect();
                ProducerView {
                    name: p.name.clone(),
                    topic: topic_name(p.topic),
                    partitions: p.partitions.len() as u32,
                    acks: p.acks.as_config(),
                    idempotent: p.idempotent,
                    records_per_sec: p.records_per_sec,
                    linger_ms: p.config.linger_ms,
                    batch_size: p.config.batch_size,
                    request_timeout_ms: p.config.request_timeout_ms,
                    keys: p.config.keys.clone(),
                    metadata_refresh_ms: p.metadata.refreshed_ms + p.config.metadata_max_age_ms,
                    sent: p.stats.sent,
                    acked: p.stats.acked,
                    failed: p.stats.failed,
                    pending: p.pending(),
                    duplicates: runtime
                        .metrics
                        .duplicates_by_producer
                        .get(p.index as usize)
                        .copied()
                        .unwrap_or(0),
                    answers_lost: runtime
                        .network
                        .hung
                        .iter()
                        .find(|&&(producer, _)| producer == p.index)
                        .map(|&(_, broker)| broker),
                    batches,
                    in_flight,
                }
            })
            .collect();
        let part_name = |ordinal: u32| {
            partitions
                .get(ordinal as usize)
                .map_or_else(|| ordinal.to_string(), PartitionView::name)
        };
        let consumers: Vec<&Consumer> = cluster
            .consumers
            .iter()
            .map(|e| world.get::<Consumer>(*e).expect("consumer"))
            .collect();
        let groups = cluster
            .groups
            .iter()
            .map(|e| {
                let g = world.get::<ConsumerGroup>(*e).expect("group");
                let members = consumers
                    .iter()
                    .filter(|c| c.group == g.index)
                    .map(|c| MemberView {
                        name: c.member_id.clone(),
                        node: c.index,
                        alive: c.alive,
                        failed: c.failed.map(|(error, _)| error.short_name()),
                        epoch: c.generation,
                        assigned: c.assigned.keys().map(|o| part_name(*o)).collect(),
                        reconciling: reconciling(g, &c.member_id, &part_name),
                        progress: c
                            .assigned
                            .iter()
                            .map(|(o, p)| (*o, p.position, p.processed))
                            .collect(),
                    })
                    .collect();
                let history = world
                    .get_resource::<LagMonitor>()
                    .and_then(|m| m.groups.get(g.index as usize));
                let offsets = g
                    .partitions
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        let position = owned(consumers.iter().copied())
                            .find(|(group, ordinal, _)| (*group, ordinal) == (g.index, o))
                            .map(|(.., position)| position);
                        let p = &partitions[*o as usize];
                        let (log_end_offset, high_watermark, log_start) =
                            p.leader_replica().map_or((0, 0, 0), |r| {
                                (r.log_end_offset, r.high_watermark, r.log_start_offset)
                            });
                        let committed = g.committed().get(o).copied();
                        let behind_log_start = committed
                            .into_iter()
                            .chain(position)
                            .any(|at| at < log_start);
                        OffsetRow {
                            ordinal: *o,
                            partition: p.name(),
                            log_end_offset,
                            high_watermark,
                            committed,
                            // As kafka-consumer-groups computes it: the end a consumer can read
                            // (the high watermark) less the committed offset.
                            lag: committed.map(|c| high_watermark.saturating_sub(c)),
                            consumer_lag: position.map(|p| high_watermark.saturating_sub(p)),
                            paused: history
                                .and_then(|h| h.partitions.get(k))
                                .is_some_and(|p| p.is_paused()),
                            behind_log_start,
                        }
                    })
                    .collect();
                GroupView {
                    name: g.name.clone(),
                    state: g.state.name(),
                    generation: g.generation,
                    target_epoch: (g.config.protocol == GroupProtocol::Consumer)
                        .then_some(g.assignment_epoch),
                    rebalances: g.rebalances,
                    records_per_sec: consumers
                        .iter()
                        .filter(|c| c.group == g.index)
                        .map(|c| c.records_per_sec)
                        .next_back()
                        .unwrap_or(g.config.records_per_sec),
                    offsets_partition: world
                        .get::<Partition>(g.offsets_partition)
                        .map_or(0, |p| p.ordinal),
                    members,
                    offsets,
                    protocol: g.config.protocol.name(),
                    assignor: g.config.assignor().name(),
                    coordinator: world
                        .get::<Partition>(g.offsets_partition)
                        .and_then(|p| p.leader),
                    described: described(g, cluster),
                }
            })
            .collect();
        Snapshot {
            now_ms: world.resource::<crate::sim::Runtime>().clock.now_ms,
            scenario: cluster.scenario.clone(),
            brokers,
            partitions,
            producers,
            groups,
            messages,
            metrics: world.resource::<crate::sim::Runtime>().metrics.clone(),
            eligible_leader_replicas: cluster.config.eligible_leader_replicas,
            offsets_topic_partitions: cluster.config.offsets_topic_partitions,
            assignments_version: cluster.assignments_version,
            cut_links: network.cut.iter().copied().collect(),
            last_heartbeat_ms: world
                .get::<crate::sim::quorum::Controller>(cluster.controller)
                .map_or_else(Vec::new, |c| c.last_heartbeat_ms.clone()),
        }
    }

    pub fn group(&self, name: &str) -> Option<&GroupView> {
        self.groups.iter().find(|g| g.name == name)
    }

    pub fn broker(&self, id: u32) -> Option<&BrokerView> {
        self.brokers.iter().find(|b| b.id == id)
    }

    /// A topic's partition by its index.
    pub fn partition(&self, topic: &str, index: u32) -> Option<&PartitionView> {
        self.partitions
            .iter()
            .find(|p| p.topic == topic && p.index == index)
    }

    /// Partitions with fewer in-sync replicas than assigned (UnderReplicatedPartitions).
    pub fn under_replicated(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.under_replicated())
            .count()
    }

    /// The cluster as it is now, in one line: its brokers (those down named), topics, producers
    /// and groups, as a scenario's description gives its set-up.
    pub fn summary(&self) -> crate::scenario::Summary {
        use crate::scenario::{ProducerSummary, Summary, TopicSummary};
        let mut topics: Vec<TopicSummary> = Vec::new();
        for p in self.partitions.iter().filter(|p| !p.internal) {
            match topics.iter_mut().find(|t| t.name == p.topic) {
                Some(t) => t.partitions += 1,
                None => topics.push(TopicSummary {
                    name: p.topic.clone(),
                    partitions: 1,
                    replication_factor: p.assignment.len() as u32,
                    min_insync_replicas: p.min_insync_replicas,
                }),
            }
        }
        Summary {
            brokers: self.brokers.len() as u32,
            down: self
                .brokers
                .iter()
                .filter(|b| !b.alive)
                .map(|b| b.id)
                .collect(),
            topics,
            producers: self
                .producers
                .iter()
                .map(|p| ProducerSummary {
                    name: p.name.clone(),
                    keyed: p.keys != crate::scenario::Keys::None,
                    acks: p.acks.to_string(),
                    records_per_sec: p.records_per_sec,
                })
                .collect(),
            groups: self
                .groups
                .iter()
                .map(|g| {
                    let alive = g.members.iter().filter(|m| m.alive).count() as u32;
                    (g.name.clone(), alive)
                })
                .collect(),
        }
    }

    /// The most members (rows, the dead ones' included) any group shows.
    pub fn most_members(&self) -> usize {
        self.groups
            .iter()
            .map(|g| g.members.len())
            .max()
            .unwrap_or(0)
    }

    /// Partitions without a leader (OfflinePartitionsCount).
    pub fn offline(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.leader.is_none())
            .count()
    }

    /// Partitions whose ISR is below min.insync.replicas (UnderMinIsrPartitionCount).
    pub fn under_min_isr(&self) -> usize {
        self.partitions.iter().filter(|p| p.under_min_isr()).count()
    }

    /// Partitions whose leader is not the first replica assigned (a preferred election would
    /// move them back).
    pub fn not_on_preferred_leader(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.leader.is_some() && p.leader != p.assignment.first().copied())
            .count()
    }

    /// Dropped on a cut link (it fades where it was lost).
    pub fn is_lost(message: &MessageView) -> bool {
        matches!(message.wire.state, WireState::Lost { .. })
    }

    /// The consumer group and member position of a consumer node.
    pub fn member_of(&self, node: u32) -> Option<(usize, usize)> {
        self.groups.iter().enumerate().find_map(|(g, group)| {
            group
                .members
                .iter()
                .position(|m| m.node == node)
                .map(|i| (g, i))
        })
    }
}

/// The consumer node a message travels to or from, if either end is a consumer.
pub fn consumer_end(wire: &Wire) -> Option<u32> {
    match (wire.from, wire.to) {
        (Node::Consumer(c), _) | (_, Node::Consumer(c)) => Some(c),
        _ => None,
    }
}
