//! The consumer: joins its group, heartbeats, fetches its partitions from the leader (or a
//! follower in its rack, KIP-392), processes records at its own rate and commits the next offset
//! to read. Eager members give up every partition when a rebalance starts; cooperative members
//! (KIP-429) give up only the partitions that move, then rejoin for the second rebalance.

use std::collections::BTreeMap;

use bevy_ecs::prelude::*;

use super::cluster::{Broker, Cluster, Partition, Replica, broker_views};
use super::group_coordinator::ConsumerGroup;
use super::invariants::Invariants;
use super::network::{Network, Node, Wire};
use super::protocol::{
    ConsumerFetch, ConsumerFetchResponse, GroupError, GroupRequest, GroupRequestBody,
    GroupResponse, GroupResponseBody, KafkaError,
};
use super::wires::Wires;
use super::{SimClock, Wake};
use crate::assignor::{self, TopicPartition};
use crate::scenario::OffsetReset;

/// `retry.backoff.ms` of the consumer: the pause before asking again when there is no
/// coordinator or leader to ask.
const RETRY_BACKOFF_MS: u64 = 100;
/// The consumer's `request.timeout.ms`: a request unanswered this long is given up.
const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// A JoinGroup may wait at the coordinator for the whole rebalance timeout, so the client gives
/// it this much more (`AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE`).
const JOIN_GROUP_TIMEOUT_LAPSE_MS: u64 = 5_000;

/// How long the client waits for a JoinGroup: `max(request.timeout.ms, rebalance timeout + 5 s)`
/// (`AbstractCoordinator.sendJoinGroupRequest`); a consumer's rebalance timeout is its
/// `max.poll.interval.ms`.
fn join_group_timeout_ms(max_poll_interval_ms: u64) -> u64 {
    REQUEST_TIMEOUT_MS.max(max_poll_interval_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// Needs to (re)join.
    Unjoined,
    /// JoinGroup sent.
    Joining,
    /// SyncGroup sent.
    Syncing,
    Stable,
}

/// A consumer's progress on one partition.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    /// Next offset to fetch.
    pub position: u64,
    /// Next offset to process; what a commit records.
    pub processed: u64,
    /// Wire id of the fetch in flight.
    pub fetch_in_flight: Option<u64>,
    pub fetch_sent_ms: u64,
    /// Processed up to here when last committed.
    pub committed_sent: Option<u64>,
}

#[derive(Clone, Component, Debug)]
pub struct Consumer {
    /// Index in `Cluster::consumers`: its node on the wire.
    pub index: u32,
    pub group: u32,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub alive: bool,
    /// Sends LeaveGroup and stops.
    pub leaving: bool,
    pub state: MemberState,
    pub generation: u32,
    pub records_per_sec: u32,
    /// Partitions it consumes now, by ordinal.
    pub assigned: BTreeMap<u32, Progress>,
    /// Thousandths of a record it may process.
    budget_milli: u64,
    last_process_ms: u64,
    pub next_heartbeat_ms: u64,
    pub next_commit_ms: u64,
    /// The group request it waits an answer for (join, sync, leave).
    pub request_in_flight: Option<u64>,
    heartbeat_in_flight: Option<u64>,
    commit_in_flight: Option<u64>,
    /// When the join/sync/leave, heartbeat and commit in flight were sent.
    sent_ms: [u64; 3],
    /// Wait before asking again (no coordinator, an error).
    retry_at_ms: u64,
    /// Records processed in all.
    pub processed_total: u64,
    /// Since when it has had fetched records left to process: the time since its last `poll()`
    /// that returned nothing new to do.
    pub busy_since_ms: Option<u64>,
}

impl Consumer {
    pub fn new(
        index: u32,
        group: u32,
        number: u32,
        config: &crate::scenario::ConsumerGroupConfig,
        now: u64,
    ) -> Self {
        Consumer {
            index,
            group,
            member_id: format!("{}-{number}", config.name),
            instance_id: config
                .static_members
                .then(|| format!("{}-instance-{number}", config.name)),
            alive: true,
            leaving: false,
            state: MemberState::Unjoined,
            generation: 0,
            records_per_sec: config.records_per_sec,
            assigned: BTreeMap::new(),
            budget_milli: 0,
            last_process_ms: now,
            next_heartbeat_ms: 0,
            next_commit_ms: now + config.auto_commit_interval_ms,
            request_in_flight: None,
            heartbeat_in_flight: None,
            commit_in_flight: None,
            sent_ms: [0; 3],
            retry_at_ms: 0,
            processed_total: 0,
            busy_since_ms: None,
        }
    }

    /// The connection to a broker broke or a request timed out: forget it, and start over where
    /// it was a step of joining.
    pub fn request_failed(&mut self, wire_id: u64, now: u64) {
        if self.request_in_flight == Some(wire_id) {
            self.request_in_flight = None;
            if matches!(self.state, MemberState::Joining | MemberState::Syncing) {
                self.state = MemberState::Unjoined;
            }
            if self.leaving {
                self.alive = false;
            }
        }
        if self.heartbeat_in_flight == Some(wire_id) {
            self.heartbeat_in_flight = None;
        }
        if self.commit_in_flight == Some(wire_id) {
            self.commit_in_flight = None;
        }
        for p in self.assigned.values_mut() {
            if p.fetch_in_flight == Some(wire_id) {
                p.fetch_in_flight = None;
            }
        }
        self.retry_at_ms = now + RETRY_BACKOFF_MS;
    }

    /// Gives up requests older than their timeout; returns when the next one would expire.
    fn expire_requests(&mut self, now: u64, max_poll_interval_ms: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut expired = Vec::new();
        let group_timeout = if self.state == MemberState::Joining {
            join_group_timeout_ms(max_poll_interval_ms)
        } else {
            REQUEST_TIMEOUT_MS
        };
        let slots = [
            (self.request_in_flight, group_timeout),
            (self.heartbeat_in_flight, REQUEST_TIMEOUT_MS),
            (self.commit_in_flight, REQUEST_TIMEOUT_MS),
        ];
        for ((id, timeout), sent) in slots.iter().zip(self.sent_ms) {
            if let Some(id) = id {
                if now >= sent + timeout {
                    expired.push(*id);
                } else {
                    next = Some(next.map_or(sent + timeout, |n| n.min(sent + timeout)));
                }
            }
        }
        for p in self.assigned.values() {
            if let Some(id) = p.fetch_in_flight {
                if now >= p.fetch_sent_ms + REQUEST_TIMEOUT_MS {
                    expired.push(id);
                } else {
                    let t = p.fetch_sent_ms + REQUEST_TIMEOUT_MS;
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
        }
        for id in expired {
            self.request_failed(id, now);
        }
        next
    }

    /// Offsets processed since the last commit, as (ordinal, next offset to read).
    fn uncommitted(&self) -> Vec<(u32, u64)> {
        self.assigned
            .iter()
            .filter(|(_, p)| p.committed_sent != Some(p.processed))
            .map(|(o, p)| (*o, p.processed))
            .collect()
    }
}

fn topic_partition(
    cluster: &Cluster,
    partitions: &Query<&Partition>,
    ordinal: u32,
) -> TopicPartition {
    let p = partitions
        .get(cluster.partitions[ordinal as usize])
        .expect("partition");
    (cluster.topics[p.topic].name.clone(), p.index)
}

fn ordinal_of(cluster: &Cluster, tp: &TopicPartition) -> Option<u32> {
    let topic = cluster.topics.iter().find(|t| t.name == tp.0)?;
    let entity = *topic.partitions.get(tp.1 as usize)?;
    cluster
        .partitions
        .iter()
        .position(|e| *e == entity)
        .map(|i| i as u32)
}

/// Where a partition starts for a member that just got it: the group's committed offset, else
/// `auto.offset.reset` (the offsets lookups are read straight from the model).
fn start_offset(group: &ConsumerGroup, ordinal: u32, leader_hw: u64) -> u64 {
    match group.committed().get(&ordinal) {
        Some(o) => *o,
        None => match group.config.auto_offset_reset {
            OffsetReset::Earliest => 0,
            OffsetReset::Latest => leader_hw,
        },
    }
}

fn leader_hw(
    cluster: &Cluster,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    ordinal: u32,
) -> u64 {
    partitions
        .get(cluster.partitions[ordinal as usize])
        .ok()
        .and_then(|p| p.leader_replica())
        .map_or(0, |r| replicas.get(r).expect("replica").high_watermark)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn handle_group_responses(
    clock: &SimClock,
    cluster: &Cluster,
    network: &mut Network,
    wires: &mut Wires,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    groups: &Query<&ConsumerGroup>,
    consumers: &mut Query<&mut Consumer>,
    due: &mut Vec<u64>,
) {
    let now = clock.now_ms;
    wires.arriving::<GroupResponse>(due);
    for &id in due.iter() {
        wires.finish(id);
        let (wire, response) = wires.get_of::<GroupResponse>(id).expect("a group response");
        let Node::Consumer(index) = wire.to else {
            unreachable!("group responses go to consumers")
        };
        let mut consumer = consumers
            .get_mut(cluster.consumers[index as usize])
            .expect("consumer entity");
        if !consumer.alive {
            continue;
        }
        let group = groups
            .get(cluster.groups[consumer.group as usize])
            .expect("group");
        // A response answers one request: one given up (timed out, its connection broken) or
        // replaced has no handler left, and is dropped (`NetworkClient`'s correlation ids).
        // Wire ids are unique, so the request's slot is whichever holds its id.
        let awaited = Some(response.request);
        if ![
            consumer.request_in_flight,
            consumer.heartbeat_in_flight,
            consumer.commit_in_flight,
        ]
        .contains(&awaited)
        {
            continue;
        }
        match &response.body {
            GroupResponseBody::JoinGroup {
                generation,
                leader,
                members,
            } => {
                consumer.request_in_flight = None;
                consumer.generation = *generation;
                // The leader runs the assignor over the members' subscriptions.
                let assignment =
                    (*leader == consumer.member_id && !members.is_empty()).then(|| {
                        let topics: BTreeMap<String, u32> = group
                            .config
                            .topics
                            .iter()
                            .filter_map(|t| {
                                cluster
                                    .topics
                                    .iter()
                                    .find(|x| &x.name == t)
                                    .map(|x| (t.clone(), x.partitions.len() as u32))
                            })
                            .collect();
                        assignor::assign(group.config.assignor, &topics, members)
                    });
                let Some(coordinator) = wire_from_broker(wire) else {
                    continue;
                };
                let request = GroupRequest {
                    group: consumer.group,
                    member: consumer.member_id.clone(),
                    body: GroupRequestBody::SyncGroup {
                        generation: *generation,
                        assignment,
                    },
                    commit_ends_at: None,
                };
                let from = Node::Consumer(index);
                let request = network.send(now, from, Node::Broker(coordinator), request);
                consumer.request_in_flight = Some(request.id);
                consumer.sent_ms[0] = now;
                consumer.state = MemberState::Syncing;
            }
            GroupResponseBody::SyncGroup {
                generation,
                assignment,
            } => {
                consumer.request_in_flight = None;
                consumer.generation = *generation;
                consumer.state = MemberState::Stable;
                consumer.next_heartbeat_ms = now + group.config.heartbeat_interval_ms;
                let new: Vec<u32> = assignment
                    .iter()
                    .filter_map(|tp| ordinal_of(cluster, tp))
                    .collect();
                // Cooperative: what moved away is given up now, and the member rejoins so the
                // follow-up rebalance can hand it to its new owner.
                let revoked: Vec<u32> = consumer
                    .assigned
                    .keys()
                    .filter(|o| !new.contains(o))
                    .copied()
                    .collect();
                for o in &revoked {
                    consumer.assigned.remove(o);
                }
                if !revoked.is_empty() && group.config.assignor.cooperative() {
                    consumer.state = MemberState::Unjoined;
                }
                for o in new {
                    consumer.assigned.entry(o).or_insert_with(|| {
                        let start =
                            start_offset(group, o, leader_hw(cluster, partitions, replicas, o));
                        Progress {
                            position: start,
                            processed: start,
                            fetch_in_flight: None,
                            fetch_sent_ms: 0,
                            committed_sent: group.committed().get(&o).copied(),
                        }
                    });
                }
            }
            GroupResponseBody::Heartbeat => consumer.heartbeat_in_flight = None,
            GroupResponseBody::LeaveGroup => {
                consumer.request_in_flight = None;
                if consumer.leaving {
                    consumer.alive = false;
                } else {
                    // Left after a poll timeout: join again as a new member.
                    consumer.state = MemberState::Unjoined;
                    consumer.generation = 0;
                }
            }
            GroupResponseBody::OffsetCommit { offsets } => {
                consumer.commit_in_flight = None;
                for (o, offset) in offsets {
                    if let Some(p) = consumer.assigned.get_mut(o) {
                        p.committed_sent =
                            Some(p.committed_sent.map_or(*offset, |c| c.max(*offset)));
                    }
                }
            }
            GroupResponseBody::Error { request, error } => {
                match *request {
                    "Heartbeat" => consumer.heartbeat_in_flight = None,
                    "OffsetCommit" => consumer.commit_in_flight = None,
                    _ => consumer.request_in_flight = None,
                }
                match error {
                    GroupError::NotCoordinator => {
                        consumer.retry_at_ms = now + RETRY_BACKOFF_MS;
                        if matches!(*request, "JoinGroup" | "SyncGroup") {
                            consumer.state = MemberState::Unjoined;
                        }
                    }
                    GroupError::RebalanceInProgress | GroupError::IllegalGeneration => {
                        consumer.state = MemberState::Unjoined;
                    }
                    GroupError::UnknownMemberId => {
                        consumer.state = MemberState::Unjoined;
                        consumer.generation = 0;
                    }
                }
            }
        }
    }
}

fn wire_from_broker(wire: &Wire) -> Option<u32> {
    match wire.from {
        Node::Broker(b) => Some(b),
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn handle_fetch_responses(
    clock: &SimClock,
    cluster: &Cluster,
    invariants: &mut Invariants,
    wires: &mut Wires,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    groups: &Query<&ConsumerGroup>,
    consumers: &mut Query<&mut Consumer>,
    due: &mut Vec<u64>,
) {
    let now = clock.now_ms;
    wires.arriving::<ConsumerFetchResponse>(due);
    for &id in due.iter() {
        wires.finish(id);
        let (_, response) = wires
            .get_of::<ConsumerFetchResponse>(id)
            .expect("a consumer fetch response");
        let mut consumer = consumers
            .get_mut(response.consumer)
            .expect("consumer entity");
        let partition = partitions.get(response.partition).expect("partition");
        let ordinal = partition.ordinal;
        let group = groups
            .get(cluster.groups[consumer.group as usize])
            .expect("group");
        let member_id = consumer.member_id.clone();
        let Some(progress) = consumer.assigned.get_mut(&ordinal) else {
            continue;
        };
        if progress.fetch_in_flight != Some(response.request) {
            continue;
        }
        progress.fetch_in_flight = None;
        match response.error {
            Some(KafkaError::OffsetOutOfRange) => {
                let hw = partition
                    .leader_replica()
                    .map_or(0, |r| replicas.get(r).expect("replica").high_watermark);
                let reset = match group.config.auto_offset_reset {
                    OffsetReset::Earliest => 0,
                    OffsetReset::Latest => hw,
                };
                progress.position = reset;
                progress.processed = reset;
            }
            Some(_) => {}
            None => {
                let end = response.from + response.count;
                // An empty answer is fine: a new leader's high watermark can trail the position
                // the consumer reached on the old one until its followers fetch again.
                if response.count > 0 && end > response.high_watermark {
                    invariants.report(
                        "read-above-hw",
                        ordinal as usize,
                        0,
                        format!(
                            "{now} ms: {} received offset {} at or above the high watermark {} of the replica it fetched from",
                            member_id,
                            end - 1,
                            response.high_watermark
                        ),
                    );
                }
                if response.from == progress.position {
                    progress.position = end;
                }
            }
        }
    }
}

/// Each member processes its fetched records at its rate, partition by partition; with
/// `commit_after_each_batch` it commits as soon as a fetched batch is done.
pub(super) fn process_records(
    clock: &SimClock,
    cluster: &Cluster,
    wake: &mut Wake,
    groups: &Query<&ConsumerGroup>,
    consumers: &mut Query<&mut Consumer>,
) {
    let now = clock.now_ms;
    for &entity in &cluster.consumers {
        // A consumer added this step is spawned at its end.
        let Ok(mut c) = consumers.get_mut(entity) else {
            continue;
        };
        if !c.alive {
            continue;
        }
        let elapsed = now - c.last_process_ms;
        c.last_process_ms = now;
        let buffered: u64 = c.assigned.values().map(|p| p.position - p.processed).sum();
        if buffered == 0 {
            c.budget_milli = 0;
            c.busy_since_ms = None;
            continue;
        }
        c.busy_since_ms.get_or_insert(now);
        if c.records_per_sec == 0 {
            continue;
        }
        let rate = u64::from(c.records_per_sec);
        c.budget_milli += elapsed * rate;
        let mut can = c.budget_milli / 1000;
        c.budget_milli %= 1000;
        let mut done = 0;
        for p in c.assigned.values_mut() {
            let n = (p.position - p.processed).min(can);
            p.processed += n;
            can -= n;
            done += n;
        }
        c.processed_total += done;
        let group = groups.get(cluster.groups[c.group as usize]).expect("group");
        if group.config.commit_after_each_batch && done > 0 {
            c.next_commit_ms = now;
        }
        if buffered > done {
            // The next whole record.
            wake.at(now + (1000 - c.budget_milli).div_ceil(rate));
        }
    }
}

/// Joins, heartbeats, commits and fetches, each when due.
#[allow(clippy::too_many_arguments)]
pub(super) fn send_requests(
    clock: &SimClock,
    cluster: &Cluster,
    network: &mut Network,
    wake: &mut Wake,
    brokers: &Query<&Broker>,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    groups: &Query<&ConsumerGroup>,
    consumers: &mut Query<&mut Consumer>,
) {
    let now = clock.now_ms;
    let views = broker_views(brokers.iter());
    let racks = &cluster.config.broker_racks;
    for &entity in &cluster.consumers {
        // A consumer added this step is spawned at its end.
        let Ok(mut c) = consumers.get_mut(entity) else {
            continue;
        };
        if !c.alive {
            continue;
        }
        let group = groups.get(cluster.groups[c.group as usize]).expect("group");
        let config = &group.config;
        let node = Node::Consumer(c.index);
        let coordinator = partitions
            .get(group.offsets_partition)
            .ok()
            .and_then(|p| p.leader);
        let mut send_group = |c: &mut Consumer, body: GroupRequestBody| -> Option<u64> {
            let broker = coordinator?;
            let request = GroupRequest {
                group: c.group,
                member: c.member_id.clone(),
                body,
                commit_ends_at: None,
            };
            Some(network.send(now, node, Node::Broker(broker), request).id)
        };
        if let Some(t) = c.expire_requests(now, config.max_poll_interval_ms) {
            wake.at(t);
        }
        if now < c.retry_at_ms {
            wake.at(c.retry_at_ms);
            continue;
        }
        let auto_commit_due = now >= c.next_commit_ms;
        let commit_now =
            |c: &mut Consumer,
             send: &mut dyn FnMut(&mut Consumer, GroupRequestBody) -> Option<u64>| {
                let offsets = c.uncommitted();
                if offsets.is_empty() || c.commit_in_flight.is_some() || c.generation == 0 {
                    return;
                }
                let generation = c.generation;
                c.commit_in_flight = send(
                    c,
                    GroupRequestBody::OffsetCommit {
                        generation,
                        offsets,
                    },
                );
                c.sent_ms[2] = now;
            };
        if c.leaving {
            if c.request_in_flight.is_none() {
                // `KafkaConsumer.close`: commit, then leave (static members do not send
                // LeaveGroup, KIP-345).
                commit_now(&mut c, &mut send_group);
                if c.instance_id.is_some() {
                    c.alive = false;
                } else {
                    c.request_in_flight = send_group(&mut c, GroupRequestBody::LeaveGroup);
                    c.sent_ms[0] = now;
                    if c.request_in_flight.is_none() {
                        c.alive = false;
                    }
                }
                c.assigned.clear();
            }
            continue;
        }
        match c.state {
            MemberState::Unjoined if c.request_in_flight.is_none() => {
                // `ConsumerCoordinator.onJoinPrepare`: with auto-commit, both protocols commit
                // what was consumed before rejoining; eager then gives up every partition.
                commit_now(&mut c, &mut send_group);
                if !config.assignor.cooperative() {
                    c.assigned.clear();
                }
                let owned: Vec<TopicPartition> = c
                    .assigned
                    .keys()
                    .map(|o| topic_partition(cluster, partitions, *o))
                    .collect();
                let body = GroupRequestBody::JoinGroup {
                    instance_id: c.instance_id.clone(),
                    topics: config.topics.clone(),
                    owned,
                };
                match send_group(&mut c, body) {
                    Some(id) => {
                        c.request_in_flight = Some(id);
                        c.sent_ms[0] = now;
                        c.state = MemberState::Joining;
                    }
                    None => {
                        c.retry_at_ms = now + RETRY_BACKOFF_MS;
                        wake.at(c.retry_at_ms);
                    }
                }
            }
            MemberState::Stable
                if c.busy_since_ms
                    .is_some_and(|t| now > t + config.max_poll_interval_ms)
                    && c.request_in_flight.is_none() =>
            {
                // `max.poll.interval.ms` passed without a poll: the consumer's heartbeat thread
                // leaves the group (static members only stop heartbeating), its partitions go to
                // others and what it had fetched is dropped; it joins again afterwards.
                c.assigned.clear();
                c.busy_since_ms = None;
                if c.instance_id.is_some() {
                    c.state = MemberState::Unjoined;
                } else {
                    c.request_in_flight = send_group(&mut c, GroupRequestBody::LeaveGroup);
                    c.sent_ms[0] = now;
                    c.state = MemberState::Unjoined;
                }
            }
            MemberState::Stable => {
                if let Some(t) = c.busy_since_ms {
                    wake.at(t + config.max_poll_interval_ms + 1);
                }
                if now >= c.next_heartbeat_ms && c.heartbeat_in_flight.is_none() {
                    let generation = c.generation;
                    c.heartbeat_in_flight =
                        send_group(&mut c, GroupRequestBody::Heartbeat { generation });
                    c.sent_ms[1] = now;
                    c.next_heartbeat_ms = now + config.heartbeat_interval_ms;
                }
                wake.at(c.next_heartbeat_ms);
                if auto_commit_due {
                    commit_now(&mut c, &mut send_group);
                    c.next_commit_ms = now + config.auto_commit_interval_ms;
                }
                wake.at(c.next_commit_ms);
            }
            _ => {}
        }
        // Fetch each owned partition whose fetched records are all processed, in every state of
        // membership: `ClassicKafkaConsumer.poll` updates the assignment without waiting for a
        // rebalance to complete (`updateAssignmentMetadataIfNeeded`), so a cooperative member
        // goes on fetching and processing what it owns while it rejoins (KIP-429). An eager
        // member owns nothing then: it gave up every partition before it rejoined.
        for (&o, progress) in c.assigned.iter_mut() {
            if progress.fetch_in_flight.is_some() || progress.processed < progress.position {
                continue;
            }
            let partition = partitions
                .get(cluster.partitions[o as usize])
                .expect("partition");
            let Some(leader) = partition.leader else {
                wake.at(now + RETRY_BACKOFF_MS);
                continue;
            };
            // KIP-392: the most caught-up in-sync replica in the consumer's rack, when the
            // brokers select replicas by rack.
            let in_rack = |b: u32| {
                racks
                    .as_ref()
                    .zip(config.rack.as_ref())
                    .is_some_and(|(r, mine)| r.get(b as usize - 1) == Some(mine))
            };
            let mut serving = leader;
            if cluster.config.rack_aware_replica_selector
                && !in_rack(leader)
                && let Some(b) = partition
                    .isr
                    .iter()
                    .filter(|b| in_rack(**b) && views[**b as usize].alive)
                    .max_by_key(|b| {
                        let r = partition.replica_on(**b).expect("ISR member is a replica");
                        (
                            replicas.get(r).expect("replica").log_end_offset(),
                            std::cmp::Reverse(**b),
                        )
                    })
            {
                serving = *b;
            }
            let replica = partition.replica_on(serving).expect("a replica");
            let fetch = ConsumerFetch {
                consumer: entity,
                partition: cluster.partitions[o as usize],
                replica,
                offset: progress.position,
                max_records: config.max_poll_records,
            };
            let wire = network.send(now, node, Node::Broker(serving), fetch);
            progress.fetch_in_flight = Some(wire.id);
            progress.fetch_sent_ms = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `AbstractCoordinator.sendJoinGroupRequest`: the rebalance timeout plus 5 s, or the request
    /// timeout where that is longer.
    #[test]
    fn a_join_group_waits_the_rebalance_timeout_and_five_seconds() {
        assert_eq!(join_group_timeout_ms(300_000), 305_000);
        assert_eq!(join_group_timeout_ms(60_000), 65_000);
        assert_eq!(join_group_timeout_ms(10_000), REQUEST_TIMEOUT_MS);
    }
}
