//! The group coordinator: the leader of the group's `__consumer_offsets` partition
//! (`abs(groupId.hashCode) % offsets.topic.num.partitions`). It runs the classic group protocol
//! (`GroupCoordinator`, `GroupMetadata`): JoinGroup requests wait until every known member has
//! rejoined (or the rebalance timeout, `max.poll.interval.ms`; an empty group first waits
//! `group.initial.rebalance.delay.ms` for more members), the first member to join leads and
//! computes the assignment, SyncGroup hands it out. Members that stop heartbeating for
//! `session.timeout.ms` are removed. Offset commits are records appended to the offsets
//! partition and answered once replicated; a new coordinator loads them from its log. Groups on
//! KIP-848's consumer protocol are run by [`super::consumer_protocol`].

use std::collections::BTreeMap;

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::Wake;
use super::cluster::{Broker, BrokerView, Cluster, CoordinatorRecord, Partition, Record, Replica};
use super::consumer_group::{ConsumerGroup, GroupMember, GroupState, PendingSync, Reconciliation};
use super::consumer_protocol;
use super::events::{EventKind, EventLog};
use super::network::{Network, Node, Wire, WireState};
use super::protocol::{
    GroupError, GroupRequest, GroupRequestBody, GroupResponse, GroupResponseBody,
};
use super::wires::Wires;
use crate::assignor::Member;
use crate::scenario::GroupProtocol;

/// How long the coordinator waits for an offset commit to replicate (`offsets.commit.timeout.ms`).
const OFFSETS_COMMIT_TIMEOUT_MS: u64 = 5_000;
fn respond(
    network: &mut Network,
    now: u64,
    wire: &Wire,
    group: u32,
    member: &str,
    body: GroupResponseBody,
) {
    network.send(
        now,
        wire.to,
        wire.from,
        GroupResponse {
            request: wire.id,
            group,
            member: member.to_string(),
            body,
        },
    );
}

/// The coordinator's write (`CoordinatorRuntime.scheduleWriteOperation`): the operation's effect
/// is in memory at once, and its records go to the end of the offsets partition's log, one per
/// entry of `records` (an offset commit, or `None` for a record of the group's membership). The
/// caller leads the offsets partition. Returns where the coordinator's writes end now (its last
/// written offset, which the operation's answer waits for, even one that wrote nothing) and the
/// high watermark.
fn write_records(
    group: &ConsumerGroup,
    records: &[Option<(u32, u64)>],
    partitions: &Query<&Partition>,
    replicas: &mut Query<&mut Replica>,
    (wake, now): (&mut Wake, u64),
    (cluster, events): (&Cluster, &mut EventLog),
) -> (u64, u64) {
    let offsets = partitions
        .get(group.offsets_partition)
        .expect("offsets partition");
    let leader = offsets.leader_replica().expect("the coordinator leads it");
    let mut log = replicas.get_mut(leader).expect("replica");
    if !records.is_empty() {
        let epoch = offsets.leader_epoch;
        let written = records.iter().map(|offset| {
            let written = CoordinatorRecord {
                group: group.index,
                offset: *offset,
            };
            Record::coordinator(written, epoch)
        });
        if let Some(base_offset) = log.append(written, epoch, &offsets.log, now, now) {
            events.push(
                now,
                EventKind::SegmentRolled {
                    broker: log.broker,
                    topic: cluster.topics[offsets.topic].name.clone(),
                    partition: offsets.index,
                    base_offset,
                },
            );
        }
        // Followers' fetches held at this leader finish once it has appended (`DelayedFetch`):
        // the next step's delayed phase answers them, so it must run.
        wake.at(now + 1);
    }
    (log.log_end_offset(), log.high_watermark)
}

/// Answers a write once the high watermark reaches `ends_at` (`CoordinatorRuntime`'s
/// `DeferredEventQueue`, completed as `onHighWatermarkUpdated` passes it): at once if it already
/// has; otherwise the request waits at the coordinator with its answer, for
/// `offsets.commit.timeout.ms` at most ([`complete_writes`]).
fn answer_when_committed(
    network: &mut Network,
    wires: &mut Wires,
    now: u64,
    wire: &Wire,
    member: &str,
    body: GroupResponseBody,
    (ends_at, high_watermark): (u64, u64),
) {
    let id = wire.id;
    let (_, request) = wires
        .get_mut_of::<GroupRequest>(id)
        .expect("a group request");
    if high_watermark >= ends_at {
        let group = request.group;
        respond(network, now, wire, group, member, body);
        wires.finish(id);
        return;
    }
    request.write_ends_at = Some(ends_at);
    request.answer = Some(Box::new(body));
    wires.hold(id, now + OFFSETS_COMMIT_TIMEOUT_MS);
}

/// What a consumer-protocol heartbeat may change, which the coordinator writes as records: the
/// group's epochs and members, the member's assignment.
fn membership(group: &ConsumerGroup, member: &str) -> (u32, u32, usize, Option<Reconciliation>) {
    (
        group.generation,
        group.assignment_epoch,
        group.members.len(),
        group
            .members
            .iter()
            .find(|m| m.id == member)
            .map(|m| m.reconciliation.clone()),
    )
}

/// The coordinator broker of a group now: the offsets partition's leader, once it knows it leads
/// (it becomes coordinator as it becomes leader, `GroupCoordinator.onElection`).
fn coordinator(
    group: &ConsumerGroup,
    partitions: &Query<&Partition>,
    brokers: &[BrokerView],
) -> Option<u32> {
    partitions
        .get(group.offsets_partition)
        .ok()
        .and_then(|p| p.acting_leader(brokers))
}

/// Answers every SyncGroup of the group that waits at the coordinator.
fn release_syncs(
    network: &mut Network,
    now: u64,
    group: &ConsumerGroup,
    wires: &mut Wires,
    answer: impl Fn(&ConsumerGroup, &str) -> GroupResponseBody,
) {
    let mut waiting = Vec::new();
    wires.held::<GroupRequest>(&mut waiting);
    for id in waiting {
        let (wire, request) = wires.get_of::<GroupRequest>(id).expect("a group request");
        if request.group != group.index
            || !matches!(request.body, GroupRequestBody::SyncGroup { .. })
        {
            continue;
        }
        let body = answer(group, &request.member);
        respond(network, now, wire, group.index, &request.member, body);
        wires.finish(id);
    }
}

/// The group coordinators' rules, with what they borrow for one step. Each broker acts as
/// coordinator by its own metadata.
#[derive(SystemParam)]
pub(super) struct GroupsPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    brokers: Query<'w, 's, &'static Broker>,
    partitions: Query<'w, 's, &'static Partition>,
    replicas: Query<'w, 's, &'static mut Replica>,
    groups: Query<'w, 's, &'static mut ConsumerGroup>,
    /// The requests due now, kept between steps.
    due: Local<'s, Vec<u64>>,
}

/// The group coordinators' phase: joins, syncs, heartbeats, sessions, offset commits.
pub(super) fn phase(mut rules: GroupsPhase) {
    rules.follow_offsets_partitions();
    rules.handle_group_requests();
    rules.complete_joins();
    rules.expire_sessions();
    rules.complete_writes();
}

impl GroupsPhase<'_, '_> {
    /// The coordinator's committed state, as Kafka's coordinator runtime keeps it. A broker that
    /// learns it leads a group's offsets partition becomes its coordinator and replays its whole copy
    /// of the log (`GroupMetadataManager.loadGroupsAndOffsets`, `CoordinatorLoaderImpl`): every commit
    /// record is in the latest state members read. What it serves as committed follows the offsets
    /// partition's high watermark (`CoordinatorRuntime.onHighWatermarkUpdated`,
    /// `OffsetMetadataManager.fetchOffsets` as of the last committed offset): a commit record counts
    /// once the high watermark passes it, in log order, so one above it is never served and nothing
    /// needs reverting when a new leader's log lacks it. Requests held at an old coordinator are
    /// told NOT_COORDINATOR.
    fn follow_offsets_partitions(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            groups,
            ..
        } = self;
        let Runtime { views, .. } = &mut **runtime;
        let views = views.checked(brokers.iter());
        let brokers: &[BrokerView] = views;
        let replicas = &replicas.as_readonly();
        for &entity in &cluster.groups {
            let mut group = groups.get_mut(entity).expect("group entity");
            let offsets = partitions
                .get(group.offsets_partition)
                .expect("offsets partition");
            if offsets.leader.is_none() {
                group.loaded_epoch = offsets.leader_epoch;
                continue;
            }
            let Some(leader) = offsets
                .acting_leader(brokers)
                .and_then(|b| offsets.replica_on(b))
            else {
                continue;
            };
            let leader = replicas.get(leader).expect("replica");
            let index = group.index;
            // A record's (partition, offset) if it commits this group's offset.
            let of_group = |r: &Record| {
                r.written()
                    .filter(|c| c.group == index)
                    .and_then(|c| c.offset)
            };
            if offsets.leader_epoch != group.loaded_epoch {
                group.loaded_epoch = offsets.leader_epoch;
                // A new coordinator loads what the log holds: compaction removed older commits.
                let front = leader.log.front() as u64;
                group.latest = (front..)
                    .zip(leader.log.iter())
                    .filter(|(o, _)| !leader.cleaned.is_removed(*o))
                    .filter_map(|(_, r)| of_group(r))
                    .collect();
                group.load_committed(BTreeMap::new());
                group.loads += 1;
                group.applied_to = 0;
            }
            let (from, to) = (group.applied_to, leader.high_watermark);
            if to <= from {
                continue;
            }
            for (partition, offset) in leader
                .log
                .iter_from(from as usize)
                .take((to - from) as usize)
                .filter_map(of_group)
            {
                group.commit(partition, offset);
            }
            group.applied_to = to;
        }
    }

    fn handle_group_requests(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            groups,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            events,
            wires,
            wake,
            views,
            ..
        } = &mut **runtime;
        let views = views.checked(brokers.iter());
        let brokers: &[BrokerView] = views;
        let now = clock.now_ms;
        let initial_delay = cluster.config.group_initial_rebalance_delay_ms;
        wires.arriving::<GroupRequest>(due);
        for &id in due.iter() {
            // A copy: handling it may hold or answer other requests of the group.
            let (&wire, request) = wires.get_of::<GroupRequest>(id).expect("a group request");
            let request = request.clone();
            let mut group = groups
                .get_mut(cluster.groups[request.group as usize])
                .expect("group entity");
            let g = request.group;
            let member = request.member.clone();
            let name = request.body.name();
            let error = |network: &mut Network, wire: &Wire, error| {
                respond(
                    network,
                    now,
                    wire,
                    g,
                    &member,
                    GroupResponseBody::Error {
                        request: name,
                        error,
                    },
                );
            };
            if coordinator(&group, partitions, brokers)
                != Some(match wire.to {
                    Node::Broker(b) => b,
                    _ => unreachable!("group requests go to brokers"),
                })
            {
                error(network, &wire, GroupError::NotCoordinator);
                wires.finish(id);
                continue;
            }
            let known = group.member(&member);
            match &request.body {
                GroupRequestBody::JoinGroup {
                    instance_id,
                    topics,
                    owned,
                } => {
                    // A static member coming back under a new member id takes its old place without a
                    // rebalance (KIP-345).
                    let static_slot = instance_id.as_ref().and_then(|i| {
                        group
                            .members
                            .iter()
                            .position(|m| m.instance_id.as_ref() == Some(i))
                    });
                    if let (Some(slot), GroupState::Stable) = (static_slot, group.state) {
                        let old = std::mem::replace(&mut group.members[slot].id, member.clone());
                        group.members[slot].last_heartbeat_ms = now;
                        if let Some(a) = group.assignment.remove(&old) {
                            group.assignment.insert(member.clone(), a);
                        }
                        if group.leader.as_ref() == Some(&old) {
                            group.leader = Some(member.clone());
                        }
                        let body = GroupResponseBody::JoinGroup {
                            generation: group.generation,
                            leader: group.leader.clone().unwrap_or_default(),
                            members: Vec::new(),
                        };
                        respond(network, now, &wire, g, &member, body);
                        wires.finish(id);
                        continue;
                    }
                    if let Some(slot) = static_slot {
                        group.members[slot].id = member.clone();
                    }
                    match group.member(&member) {
                        Some(i) => {
                            let m = &mut group.members[i];
                            m.joined = true;
                            m.owned = owned.clone();
                            m.topics = topics.clone();
                            m.last_heartbeat_ms = now;
                        }
                        None => {
                            let mut joining = GroupMember::new(
                                member.clone(),
                                instance_id.clone(),
                                topics.clone(),
                                now,
                            );
                            joining.owned = owned.clone();
                            group.members.push(joining);
                            // A new member during the initial delay extends it (`InitialDelayedJoin`).
                            if group.state == GroupState::PreparingRebalance
                                && group.initial_delay_until_ms > now
                            {
                                group.initial_delay_until_ms = now + initial_delay;
                            }
                        }
                    }
                    group.start_rebalance(now, events, initial_delay);
                    if let Some(i) = group.member(&member) {
                        group.members[i].joined = true;
                    }
                    // The JoinGroup waits at the coordinator until the join phase completes.
                    wires.hold(id, group.join_deadline_ms);
                }
                GroupRequestBody::SyncGroup {
                    generation,
                    assignment,
                } => {
                    if known.is_none() {
                        error(network, &wire, GroupError::UnknownMemberId);
                        wires.finish(id);
                    } else if *generation != group.generation {
                        error(network, &wire, GroupError::IllegalGeneration);
                        wires.finish(id);
                    } else {
                        match group.state {
                            // A consumer-protocol group's states never meet a SyncGroup.
                            GroupState::PreparingRebalance
                            | GroupState::Empty
                            | GroupState::Assigning
                            | GroupState::Reconciling => {
                                error(network, &wire, GroupError::RebalanceInProgress);
                                wires.finish(id);
                            }
                            GroupState::Stable => {
                                let body = group.sync_body(&member);
                                respond(network, now, &wire, g, &member, body);
                                wires.finish(id);
                            }
                            GroupState::CompletingRebalance => {
                                // Every SyncGroup waits until the leader's assignment is stored: the
                                // leader's writes the group with it, and the group is stable once that
                                // record is committed ([`complete_writes`]).
                                if let Some(assignment) = assignment
                                    && group.pending_sync.is_none()
                                {
                                    let (ends_at, _) = write_records(
                                        &group,
                                        &[None],
                                        partitions,
                                        replicas,
                                        (wake, now),
                                        (cluster, events),
                                    );
                                    group.pending_sync = Some(PendingSync {
                                        generation: group.generation,
                                        assignment: assignment.clone(),
                                        ends_at,
                                        deadline_ms: now + OFFSETS_COMMIT_TIMEOUT_MS,
                                    });
                                }
                                if let Some(i) = known {
                                    group.members[i].awaiting_sync = true;
                                }
                                wires.hold(id, now + group.config.session_timeout_ms());
                            }
                        }
                    }
                }
                GroupRequestBody::Heartbeat { generation } => {
                    // `validateClassicGroupHeartbeat`: an unknown member or another generation is
                    // refused at once, and refreshes no session.
                    let i = match known {
                        None => Err(GroupError::UnknownMemberId),
                        Some(_) if *generation != group.generation => {
                            Err(GroupError::IllegalGeneration)
                        }
                        Some(i) => Ok(i),
                    };
                    let i = match i {
                        Ok(i) => i,
                        Err(e) => {
                            error(network, &wire, e);
                            wires.finish(id);
                            continue;
                        }
                    };
                    // `classicGroupHeartbeatToClassicGroup`: the session starts again, and the answer
                    // (REBALANCE_IN_PROGRESS while members must rejoin) writes nothing but waits
                    // behind the coordinator's pending writes.
                    group.members[i].last_heartbeat_ms = now;
                    let body = if group.state == GroupState::PreparingRebalance {
                        GroupResponseBody::Error {
                            request: name,
                            error: GroupError::RebalanceInProgress,
                        }
                    } else {
                        GroupResponseBody::Heartbeat
                    };
                    let written = write_records(
                        &group,
                        &[],
                        partitions,
                        replicas,
                        (wake, now),
                        (cluster, events),
                    );
                    answer_when_committed(network, wires, now, &wire, &member, body, written);
                }
                GroupRequestBody::ConsumerGroupHeartbeat {
                    member_epoch,
                    topics,
                    owned,
                    rebalance_timeout_ms,
                    full,
                } => {
                    let heartbeat = consumer_protocol::Heartbeat {
                        member: &member,
                        member_epoch: *member_epoch,
                        topics,
                        owned,
                        rebalance_timeout_ms: *rebalance_timeout_ms,
                        full: *full,
                    };
                    let before = membership(&group, &member);
                    match consumer_protocol::consumer_group_heartbeat(
                        &mut group, &heartbeat, now, cluster, partitions, events,
                    ) {
                        // A change of the group is written as records; either way the answer waits
                        // for the coordinator's writes to commit.
                        Ok(body) => {
                            let changed = membership(&group, &member) != before;
                            let records: &[Option<(u32, u64)>] =
                                if changed { &[None] } else { &[] };
                            let written = write_records(
                                &group,
                                records,
                                partitions,
                                replicas,
                                (wake, now),
                                (cluster, events),
                            );
                            answer_when_committed(
                                network, wires, now, &wire, &member, body, written,
                            );
                        }
                        Err(e) => {
                            error(network, &wire, e);
                            wires.finish(id);
                        }
                    }
                }
                GroupRequestBody::LeaveGroup => {
                    if let Some(i) = known {
                        group.members.remove(i);
                        group.assignment.remove(&member);
                        if group.members.is_empty() {
                            group.state = GroupState::Empty;
                            group.leader = None;
                        } else {
                            group.start_rebalance(now, events, initial_delay);
                        }
                    }
                    // A write operation too (`classicGroupLeave`): its answer waits behind the
                    // coordinator's pending writes.
                    let written = write_records(
                        &group,
                        &[],
                        partitions,
                        replicas,
                        (wake, now),
                        (cluster, events),
                    );
                    let body = GroupResponseBody::LeaveGroup;
                    answer_when_committed(network, wires, now, &wire, &member, body, written);
                }
                GroupRequestBody::OffsetCommit {
                    generation,
                    offsets,
                } => {
                    let reject = match (known, group.config.protocol) {
                        (None, _) => Some(GroupError::UnknownMemberId),
                        // `ConsumerGroup.validateOffsetCommit`: the member's own epoch, whatever
                        // the group's state.
                        (Some(i), GroupProtocol::Consumer) => (*generation
                            != group.members[i].reconciliation.member_epoch)
                            .then_some(GroupError::StaleMemberEpoch),
                        (Some(_), GroupProtocol::Classic) => {
                            if *generation != group.generation {
                                Some(GroupError::IllegalGeneration)
                            } else if group.state == GroupState::CompletingRebalance {
                                Some(GroupError::RebalanceInProgress)
                            } else {
                                None
                            }
                        }
                    };
                    if let Some(e) = reject {
                        error(network, &wire, e);
                        wires.finish(id);
                        continue;
                    }
                    if let (Some(i), GroupProtocol::Classic) = (known, group.config.protocol) {
                        group.members[i].last_heartbeat_ms = now;
                    }
                    // The commit is a record in the offsets partition, acknowledged once replicated.
                    let records: Vec<Option<(u32, u64)>> =
                        offsets.iter().map(|o| Some(*o)).collect();
                    let written = write_records(
                        &group,
                        &records,
                        partitions,
                        replicas,
                        (wake, now),
                        (cluster, events),
                    );
                    for (partition, offset) in offsets {
                        group.latest.insert(*partition, *offset);
                    }
                    let body = GroupResponseBody::OffsetCommit {
                        offsets: offsets.clone(),
                    };
                    answer_when_committed(network, wires, now, &wire, &member, body, written);
                }
            }
        }
    }

    /// The join phase ends once every member has rejoined (after an empty group's initial delay), or
    /// at the rebalance timeout, which removes the members that did not: a new generation, the
    /// leader (the current one if it rejoined, else the first to join) gets the members'
    /// subscriptions.
    fn complete_joins(&mut self) {
        let Self {
            runtime,
            cluster,
            groups,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            wires,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        for &entity in &cluster.groups {
            let mut group = groups.get_mut(entity).expect("group entity");
            if group.state != GroupState::PreparingRebalance {
                continue;
            }
            let all_joined = group.members.iter().all(|m| m.joined);
            let ready = (all_joined && now >= group.initial_delay_until_ms)
                || now >= group.join_deadline_ms;
            if !ready {
                wake.at(if all_joined {
                    group.initial_delay_until_ms
                } else {
                    group.join_deadline_ms
                });
                continue;
            }
            group.members.retain(|m| m.joined);
            // Every member's heartbeat deadline starts again, and no member is new any more
            // (`GroupMetadataManager.completeClassicGroupJoin`).
            for m in &mut group.members {
                m.last_heartbeat_ms = now;
                m.is_new = false;
            }
            if group.members.is_empty() {
                group.state = GroupState::Empty;
                group.leader = None;
                continue;
            }
            group.generation += 1;
            let leader_rejoined = group
                .leader
                .as_ref()
                .is_some_and(|l| group.members.iter().any(|m| &m.id == l));
            if !leader_rejoined {
                group.leader = Some(group.members[0].id.clone());
            }
            group.state = GroupState::CompletingRebalance;
            let leader = group.leader.clone().expect("set above");
            let members: Vec<Member> = group
                .members
                .iter()
                .map(|m| Member {
                    id: m.id.clone(),
                    topics: m.topics.clone(),
                    owned: m.owned.clone(),
                })
                .collect();
            wires.held::<GroupRequest>(due);
            due.retain(|id| {
                let (_, r) = wires.get_of::<GroupRequest>(*id).expect("a group request");
                r.group == group.index && matches!(r.body, GroupRequestBody::JoinGroup { .. })
            });
            for &id in due.iter() {
                let (wire, request) = wires.get_of::<GroupRequest>(id).expect("a group request");
                let body = GroupResponseBody::JoinGroup {
                    generation: group.generation,
                    leader: leader.clone(),
                    members: if request.member == leader {
                        members.clone()
                    } else {
                        Vec::new()
                    },
                };
                respond(network, now, wire, group.index, &request.member, body);
                wires.finish(id);
            }
        }
    }

    /// Members silent for `session.timeout.ms` are removed, and the group rebalances
    /// (`GroupMetadataManager.expireClassicGroupMemberHeartbeat`). Members waiting in a join or a
    /// sync are exempt; a new member is removed once its JoinGroup has waited
    /// [`NEW_MEMBER_JOIN_TIMEOUT_MS`].
    fn expire_sessions(&mut self) {
        let Self {
            runtime,
            cluster,
            groups,
            ..
        } = self;
        let Runtime {
            clock,
            events,
            wake,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        for &entity in &cluster.groups {
            let mut group = groups.get_mut(entity).expect("group entity");
            if group.config.protocol == GroupProtocol::Consumer {
                consumer_protocol::expire_members(clock, cluster, events, wake, &mut group);
                continue;
            }
            let session = group.config.session_timeout_ms();
            let before = group.members.len();
            let state = group.state;
            let expired = |m: &GroupMember| {
                now > m.heartbeat_deadline_ms(session) && !m.has_satisfied_heartbeat(state)
            };
            let gone: Vec<String> = group
                .members
                .iter()
                .filter(|m| expired(m))
                .map(|m| m.id.clone())
                .collect();
            for id in &gone {
                group.assignment.remove(id);
            }
            group.members.retain(|m| !expired(m));
            for m in &group.members {
                // An exempt member's deadline has passed: it is looked at again when the join or
                // sync it waits in ends, which wakes the model itself.
                let deadline = m.heartbeat_deadline_ms(session) + 1;
                if deadline > now {
                    wake.at(deadline);
                }
            }
            if group.members.len() < before {
                if group.members.is_empty() {
                    group.state = GroupState::Empty;
                    group.leader = None;
                } else {
                    group.start_rebalance(
                        now,
                        events,
                        cluster.config.group_initial_rebalance_delay_ms,
                    );
                }
                // A join phase that waited only for the removed members completes at the next step.
                wake.at(now + 1);
            }
        }
    }

    /// Writes whose answers wait at the coordinator: each is answered once the offsets partition's
    /// high watermark covers the coordinator's writes up to it, and fails with
    /// COORDINATOR_NOT_AVAILABLE after `offsets.commit.timeout.ms`
    /// (`CoordinatorOperationExceptionHelper`: REQUEST_TIMED_OUT), its effect kept, or with
    /// NOT_COORDINATOR where its broker no longer leads the offsets partition. A classic leader's
    /// stored assignment makes its group stable, or, failing, resets it and rebalances again.
    fn complete_writes(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            groups,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            events,
            wires,
            views,
            ..
        } = &mut **runtime;
        let views = views.checked(brokers.iter());
        let brokers: &[BrokerView] = views;
        let replicas = &replicas.as_readonly();
        let now = clock.now_ms;
        // The offsets partition's high watermark at a broker, if it leads it (and so coordinates).
        let high_watermark = |group: &ConsumerGroup, at: Option<u32>| {
            let offsets = partitions
                .get(group.offsets_partition)
                .expect("offsets partition");
            offsets
                .leader_replica()
                .filter(|_| at.is_some() && offsets.acting_leader(brokers) == at)
                .map(|e| replicas.get(e).expect("replica").high_watermark)
        };
        for &entity in &cluster.groups {
            let mut group = groups.get_mut(entity).expect("group entity");
            let Some(pending) = group.pending_sync.as_ref() else {
                continue;
            };
            if group.state != GroupState::CompletingRebalance
                || pending.generation != group.generation
            {
                // Another member joined meanwhile: the stored assignment is of no use
                // (`appendFuture` checks the state and generation).
                group.pending_sync = None;
                continue;
            }
            let hw = high_watermark(&group, coordinator(&group, partitions, brokers));
            let failed = match hw {
                Some(hw) if hw >= pending.ends_at => None,
                Some(_) if now < pending.deadline_ms => continue,
                Some(_) => Some(GroupError::CoordinatorNotAvailable),
                None => Some(GroupError::NotCoordinator),
            };
            let pending = group.pending_sync.take().expect("looked at above");
            match failed {
                None => {
                    // `setAndPropagateAssignment`: each member waiting is answered and starts its
                    // session again.
                    group.assignment = pending.assignment;
                    group.state = GroupState::Stable;
                    events.push(
                        now,
                        EventKind::RebalanceCompleted {
                            group: group.name.clone(),
                            generation: group.generation,
                        },
                    );
                    release_syncs(network, now, &group, wires, |group, member| {
                        group.sync_body(member)
                    });
                    for m in &mut group.members {
                        if m.awaiting_sync {
                            m.last_heartbeat_ms = now;
                        }
                        m.awaiting_sync = false;
                    }
                }
                Some(error) => {
                    // `resetAndPropagateAssignmentWithError`, then `maybePrepareRebalanceOrCompleteJoin`.
                    group.assignment.clear();
                    release_syncs(network, now, &group, wires, |_, _| {
                        GroupResponseBody::Error {
                            request: "SyncGroup",
                            error,
                        }
                    });
                    group.start_rebalance(
                        now,
                        events,
                        cluster.config.group_initial_rebalance_delay_ms,
                    );
                }
            }
        }
        wires.held::<GroupRequest>(due);
        for &id in due.iter() {
            let (wire, request) = wires.get_of::<GroupRequest>(id).expect("a group request");
            let group = groups
                .get(cluster.groups[request.group as usize])
                .expect("group entity");
            let Some(ends_at) = request.write_ends_at else {
                // A SyncGroup waiting for an assignment the group no longer expects
                // (`prepareRebalance` while completing one answers them REBALANCE_IN_PROGRESS).
                if matches!(request.body, GroupRequestBody::SyncGroup { .. })
                    && group.state != GroupState::CompletingRebalance
                {
                    let body = GroupResponseBody::Error {
                        request: "SyncGroup",
                        error: GroupError::RebalanceInProgress,
                    };
                    respond(network, now, wire, request.group, &request.member, body);
                    wires.finish(id);
                }
                continue;
            };
            let at = match wire.to {
                Node::Broker(b) => Some(b),
                _ => None,
            };
            let body = match high_watermark(group, at) {
                None => GroupResponseBody::Error {
                    request: request.body.name(),
                    error: GroupError::NotCoordinator,
                },
                Some(hw) if hw >= ends_at => {
                    *request.answer.clone().expect("a held write's answer")
                }
                Some(_) if matches!(wire.state, WireState::Held { until_ms } if now >= until_ms) => {
                    GroupResponseBody::Error {
                        request: request.body.name(),
                        error: GroupError::CoordinatorNotAvailable,
                    }
                }
                Some(_) => continue,
            };
            respond(network, now, wire, request.group, &request.member, body);
            wires.finish(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(is_new: bool, joined: bool, awaiting_sync: bool) -> GroupMember {
        GroupMember {
            id: "m".into(),
            instance_id: None,
            topics: Vec::new(),
            owned: Vec::new(),
            last_heartbeat_ms: 1_000,
            joined,
            is_new,
            awaiting_sync,
            reconciliation: Reconciliation::default(),
        }
    }

    /// `ClassicGroupMemberTest.testHasHeartbeatSatisfied`'s cases: a member waiting in a join or
    /// a sync needs no heartbeat, unless it is new.
    #[test]
    fn waiting_members_satisfy_their_heartbeat_unless_new() {
        use GroupState::*;
        assert!(!member(false, false, false).has_satisfied_heartbeat(Stable));
        assert!(member(false, true, false).has_satisfied_heartbeat(PreparingRebalance));
        assert!(member(false, false, true).has_satisfied_heartbeat(CompletingRebalance));
        assert!(!member(true, true, false).has_satisfied_heartbeat(PreparingRebalance));
        // Joined in an earlier rebalance, not waiting in this one.
        assert!(!member(false, true, false).has_satisfied_heartbeat(Stable));
    }

    /// `validateClassicGroupHeartbeat` runs before the state is looked at: a heartbeat of another
    /// generation is ILLEGAL_GENERATION even while the group rebalances, and starts no session
    /// again; one of the current generation then is REBALANCE_IN_PROGRESS, and does.
    #[test]
    fn a_heartbeat_of_another_generation_is_refused_before_the_rebalance_is_told() {
        use crate::sim::Sim;
        use crate::sim::protocol::OnWire;
        let scenario = crate::scenario::Scenario::parse(
            r#"(name: "hb", duration_ms: 20000, topics: [(name: "t", partitions: 2)],
                consumer_groups: [(name: "g", topics: ["t"], members: 1)])"#,
            "test.ron",
        )
        .expect("a scenario");
        let mut sim = Sim::new(&scenario);
        sim.run_until(10_000);
        let group_of = |sim: &mut Sim| {
            let world = sim.world_mut();
            let entity = world.resource::<Cluster>().groups[0];
            world.get::<ConsumerGroup>(entity).expect("group").clone()
        };
        let group = group_of(&mut sim);
        assert_eq!(group.state, GroupState::Stable);
        let world = sim.world_mut();
        let entity = world.resource::<Cluster>().groups[0];
        world
            .get_mut::<ConsumerGroup>(entity)
            .expect("group")
            .start_rebalance(10_000, &mut EventLog::default(), 0);
        let offsets = world
            .get::<Partition>(group.offsets_partition)
            .expect("offsets partition");
        let coordinator = offsets.leader.expect("a coordinator");
        let member = group.members[0].id.clone();
        let before = group.members[0].last_heartbeat_ms;
        let ask = |sim: &mut Sim, generation: u32| {
            let now = sim.now_ms();
            let request = GroupRequest {
                group: 0,
                member: member.clone(),
                body: GroupRequestBody::Heartbeat { generation },
                write_ends_at: None,
                answer: None,
            };
            let id = sim
                .world_mut()
                .resource_mut::<Runtime>()
                .network
                .send(now, Node::Consumer(0), Node::Broker(coordinator), request)
                .id;
            for _ in 0..100 {
                sim.step();
                let wires = &sim.world().resource::<Runtime>().wires;
                if let Some(answer) = wires
                    .iter()
                    .filter_map(|m| GroupResponse::of(&m.payload))
                    .find(|r| r.request == id)
                {
                    return answer.body.clone();
                }
            }
            panic!("no answer");
        };
        let answer = ask(&mut sim, group.generation - 1);
        assert!(
            matches!(
                answer,
                GroupResponseBody::Error {
                    error: GroupError::IllegalGeneration,
                    ..
                }
            ),
            "{answer:?}"
        );
        let refreshed = |sim: &mut Sim| {
            group_of(sim)
                .members
                .iter()
                .find(|m| m.id == member)
                .map(|m| m.last_heartbeat_ms)
        };
        assert_eq!(refreshed(&mut sim), Some(before));
        let answer = ask(&mut sim, group.generation);
        assert!(
            matches!(
                answer,
                GroupResponseBody::Error {
                    error: GroupError::RebalanceInProgress,
                    ..
                }
            ),
            "{answer:?}"
        );
        assert!(refreshed(&mut sim) > Some(before));
    }

    /// A new member's JoinGroup may wait 5 minutes before the member is removed; any other
    /// member is removed a session after its last heartbeat.
    #[test]
    fn a_new_member_is_given_the_new_member_join_timeout() {
        assert_eq!(
            member(true, true, false).heartbeat_deadline_ms(45_000),
            301_000
        );
        assert_eq!(
            member(false, true, false).heartbeat_deadline_ms(45_000),
            46_000
        );
    }
}
