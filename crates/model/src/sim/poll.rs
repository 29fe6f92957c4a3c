//! A consumer's loop (`ClassicKafkaConsumer.poll`, and the consumer protocol's
//! `ConsumerMembershipManager`): it takes the group coordinator's answers and the fetched
//! records, hands the application what it polls and lets it process them, and sends what is due:
//! joins, syncs and heartbeats, commits, fetches. What a member holds is the `Consumer`
//! component, in `consumer.rs`.

use std::collections::BTreeMap;

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::cluster::{Broker, Cluster, Partition, Replica};
use super::consumer_group::{ConsumerGroup, GroupState};
use super::events::{EventKind, ResetReason};
use super::invariants::Invariants;
use super::metadata::Refresh;
use super::network::Node;
use super::protocol::{
    ConsumerFetch, ConsumerFetchResponse, GroupError, GroupRequest, GroupRequestBody,
    GroupResponse, GroupResponseBody, KafkaError,
};
use crate::assignor::{self, Assignor, TopicPartition};
use crate::scenario::{GroupProtocol, OffsetReset};

use super::consumer::*;

/// Where a partition starts for a member that just got it: the group's committed offset, else
/// `auto.offset.reset` (the offsets lookups are read straight from the model); `None` when that
/// is `none`.
fn start_offset(group: &ConsumerGroup, ordinal: u32, leader: LogBounds) -> Option<u64> {
    match group.offset_fetch(ordinal) {
        Some(o) => Some(o),
        None => reset_offset(group, leader),
    }
}

/// Where `auto.offset.reset` moves a member: the leader's log start (`earliest`, ListOffsets'
/// EARLIEST_TIMESTAMP) or its high watermark (`latest`: a read_uncommitted consumer's end);
/// nowhere with `none`, where `poll()` throws instead (`SubscriptionState.resetInitializingPositions`,
/// `FetchCollector` on OFFSET_OUT_OF_RANGE).
fn reset_offset(group: &ConsumerGroup, leader: LogBounds) -> Option<u64> {
    match group.config.auto_offset_reset {
        OffsetReset::Earliest => Some(leader.log_start),
        OffsetReset::Latest => Some(leader.high_watermark),
        OffsetReset::None => None,
    }
}

/// What a consumer's offset lookups (ListOffsets) find on a partition's leader.
#[derive(Debug, Clone, Copy, Default)]
struct LogBounds {
    log_start: u64,
    high_watermark: u64,
}

impl LogBounds {
    fn of(replica: &Replica) -> LogBounds {
        LogBounds {
            log_start: replica.log_start_offset,
            high_watermark: replica.high_watermark,
        }
    }
}

/// The log start and high watermark of a partition's leader, by ordinal (0 while it has none).
fn leader_bounds(
    cluster: &Cluster,
    partitions: &Query<&Partition>,
    replicas: &Query<&Replica>,
    ordinal: u32,
) -> LogBounds {
    partitions
        .get(cluster.partitions[ordinal as usize])
        .ok()
        .and_then(|p| p.leader_replica())
        .map_or(LogBounds::default(), |r| {
            LogBounds::of(replicas.get(r).expect("replica"))
        })
}

/// `ConsumerCoordinator.onJoinComplete`, inside a poll: partitions no longer assigned are given
/// up with what was fetched from them (a cooperative member then rejoins, so the follow-up
/// rebalance can hand them to their new owner), and new ones start at the group's committed
/// offset (`refreshCommittedOffsetsIfNeeded`). Returns whether it took partitions.
fn on_join_complete(
    c: &mut Consumer,
    assignment: Vec<u32>,
    group: &ConsumerGroup,
    leader: &impl Fn(u32) -> LogBounds,
) -> bool {
    let before = c.assigned.len();
    c.assigned.retain(|o, _| assignment.contains(o));
    let revoked = c.assigned.len() < before;
    let assigned = &c.assigned;
    c.buffered.retain(|o| assigned.contains_key(o));
    if revoked && group.config.assignor().cooperative() {
        c.rejoin_requested = true;
    }
    let took = assignment.iter().any(|o| !c.assigned.contains_key(o));
    c.last_assignment.clone_from(&assignment);
    for o in assignment {
        if c.assigned.contains_key(&o) {
            continue;
        }
        // With `auto.offset.reset=none` and no committed offset, `poll()` throws: the partition
        // is never taken up, and the application stops at its next step.
        let Some(start) = start_offset(group, o, leader(o)) else {
            c.failed
                .get_or_insert((ConsumerError::NoOffsetForPartition, o));
            continue;
        };
        c.assigned.insert(
            o,
            Progress {
                position: start,
                handed: start,
                processed: start,
                fetch_in_flight: None,
                fetch_sent_ms: 0,
                committed_sent: group.offset_fetch(o),
                from_leader: false,
            },
        );
    }
    took
}

/// `AbstractMembershipManager.maybeReconcile`, inside a poll, as when the application's
/// rebalance listener runs there: the member commits what it consumed
/// (`maybeAutoCommitSyncBeforeRevocation`) and waits for the answer, pausing the partitions it
/// loses, and commits again after a retriable failure until its rebalance timeout runs out; then
/// it revokes them, takes the new ones from the group's committed offsets, and acknowledges with
/// a heartbeat at once (ACKNOWLEDGING). Returns whether it took partitions.
fn reconcile(
    c: &mut Consumer,
    group: &ConsumerGroup,
    leader: &impl Fn(u32) -> LogBounds,
    now: u64,
    may_send: bool,
    mut commit: impl FnMut(&mut Consumer),
) -> bool {
    let Some(target) = c.target_assignment.clone() else {
        return false;
    };
    if c.assigned.len() == target.len() && target.iter().all(|o| c.assigned.contains_key(o)) {
        c.target_assignment = None;
        return false;
    }
    match c.prepare_until_ms {
        None => {
            // A commit already on its way is answered first.
            if c.commit_in_flight.is_some() {
                return false;
            }
            c.prepare_until_ms = Some(now + group.config.max_poll_interval_ms);
            c.revoking = c
                .assigned
                .keys()
                .filter(|o| !target.contains(o))
                .copied()
                .collect();
            c.commit_failed = false;
            commit(c);
            if c.commit_in_flight.is_some() {
                return false;
            }
        }
        Some(until) if now < until => {
            if c.commit_in_flight.is_some() {
                return false;
            }
            if c.commit_failed {
                if !may_send {
                    return false;
                }
                c.commit_failed = false;
                commit(c);
                if c.commit_in_flight.is_some() {
                    return false;
                }
            }
        }
        // The rebalance timeout ran out: it reconciles without the commit.
        Some(_) => {}
    }
    c.prepare_until_ms = None;
    c.revoking.clear();
    let took = on_join_complete(c, target, group, leader);
    c.rejoin_requested = false;
    c.target_assignment = None;
    c.heartbeat_now = true;
    took
}

/// What the ownership check needs of a member.
struct Membership<'a> {
    member_id: &'a str,
    generation: u32,
    taken_up: bool,
}

/// Whether the coordinator lets the member consume a partition, where it can tell: a
/// consumer-protocol member's assigned and pending-revocation partitions; a classic member's part
/// of the assignment once it is stable at the group's generation and has taken it up. A member
/// the coordinator no longer counts is not judged: it learns so at its next request.
fn coordinator_allows(
    member: &Membership,
    group: &ConsumerGroup,
    ordinal: u32,
    (topic, index): (&str, u32),
) -> bool {
    let Some(m) = group.members.iter().find(|m| m.id == member.member_id) else {
        return true;
    };
    match group.config.protocol {
        GroupProtocol::Consumer => {
            let r = &m.reconciliation;
            r.assigned.contains(&ordinal) || r.pending_revocation.contains(&ordinal)
        }
        GroupProtocol::Classic => {
            member.generation != group.generation
                || group.state != GroupState::Stable
                || !member.taken_up
                || group
                    .assignment
                    .get(member.member_id)
                    .is_some_and(|a| a.iter().any(|(t, i)| *i == index && t == topic))
        }
    }
}

/// The consumers' rules, with what they borrow for one step.
#[derive(SystemParam)]
pub(super) struct ConsumersPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    invariants: ResMut<'w, Invariants>,
    brokers: Query<'w, 's, &'static Broker>,
    partitions: Query<'w, 's, &'static Partition>,
    replicas: Query<'w, 's, &'static Replica>,
    groups: Query<'w, 's, &'static ConsumerGroup>,
    consumers: Query<'w, 's, &'static mut Consumer>,
    /// The responses arriving now, kept between steps.
    due: Local<'s, Vec<u64>>,
}

/// The consumers' phase: group responses, fetched records, processing, requests.
pub(super) fn phase(mut rules: ConsumersPhase) {
    rules.handle_group_responses();
    rules.handle_fetch_responses();
    rules.process_records();
    rules.send_requests();
}

impl ConsumersPhase<'_, '_> {
    fn handle_group_responses(&mut self) {
        let Self {
            runtime,
            cluster,
            groups,
            consumers,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wires,
            ..
        } = &mut **runtime;
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
                            consumer.assigned_partitions = Some(topics.values().sum());
                            assignor::assign(group.config.assignor(), &topics, members)
                        });
                    let Some(coordinator) = wire.from.broker() else {
                        continue;
                    };
                    let request = GroupRequest {
                        group: consumer.group,
                        member: consumer.member_id.clone(),
                        body: GroupRequestBody::SyncGroup {
                            generation: *generation,
                            assignment,
                        },
                        write_ends_at: None,
                        answer: None,
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
                    // Stable from here, heartbeating again; the assignment itself is taken up at the
                    // next poll (`AbstractCoordinator.joinGroupIfNeeded` calls `onJoinComplete`).
                    consumer.request_in_flight = None;
                    consumer.generation = *generation;
                    consumer.state = MemberState::Stable;
                    consumer.next_heartbeat_ms = now + group.config.heartbeat_interval_ms();
                    consumer.pending_assignment = Some(
                        assignment
                            .iter()
                            .filter_map(|tp| cluster.ordinal_of(tp))
                            .collect(),
                    );
                }
                GroupResponseBody::Heartbeat => consumer.heartbeat_in_flight = None,
                GroupResponseBody::ConsumerGroupHeartbeat { .. }
                    if consumer.request_in_flight == awaited =>
                {
                    // The answer to a leave (epoch -1).
                    consumer.request_in_flight = None;
                    if consumer.leaving {
                        consumer.alive = false;
                    }
                }
                GroupResponseBody::ConsumerGroupHeartbeat {
                    member_epoch,
                    heartbeat_interval_ms,
                    assignment,
                } => {
                    // `ConsumerMembershipManager.onHeartbeatSuccess`: the epoch and interval are
                    // taken as sent; a new assignment is reconciled at the next poll.
                    consumer.heartbeat_in_flight = None;
                    consumer.heartbeat_full = false;
                    if !matches!(consumer.state, MemberState::Joining | MemberState::Stable) {
                        continue;
                    }
                    consumer.state = MemberState::Stable;
                    consumer.generation = *member_epoch as u32;
                    consumer.heartbeat_interval_ms = *heartbeat_interval_ms;
                    if let Some(assignment) = assignment {
                        consumer.target_assignment = Some(assignment.clone());
                    }
                }
                GroupResponseBody::LeaveGroup => {
                    consumer.request_in_flight = None;
                    if consumer.leaving {
                        consumer.alive = false;
                    } else {
                        // Left after a poll timeout: join again as a new member.
                        consumer.reset_generation();
                    }
                }
                GroupResponseBody::OffsetCommit { offsets } => {
                    consumer.commit_in_flight = None;
                    consumer.commit_failed = false;
                    for (o, offset) in offsets {
                        if let Some(p) = consumer.assigned.get_mut(o) {
                            p.committed_sent =
                                Some(p.committed_sent.map_or(*offset, |c| c.max(*offset)));
                        }
                    }
                }
                GroupResponseBody::Error { request, error } => {
                    let sent_generation = match *request {
                        "Heartbeat" | "ConsumerGroupHeartbeat"
                            if consumer.heartbeat_in_flight == awaited =>
                        {
                            consumer.heartbeat_in_flight = None;
                            consumer.heartbeat_full = true;
                            Some(consumer.sent_generation[0])
                        }
                        "OffsetCommit" => {
                            consumer.commit_in_flight = None;
                            Some(consumer.sent_generation[1])
                        }
                        _ => {
                            consumer.request_in_flight = None;
                            // A closing consumer does not ask again: `close` leaves whatever the
                            // answer (`maybeLeaveGroup`).
                            if consumer.leaving {
                                consumer.alive = false;
                                continue;
                            }
                            None
                        }
                    };
                    if *request == "OffsetCommit" {
                        // `ConsumerCoordinator.OffsetCommitResponseHandler`, `CommitRequestManager`:
                        // a moved or unavailable coordinator is retriable, and so is a stale member
                        // epoch in the consumer protocol (`isStaleEpochErrorAndValidEpochAvailable`).
                        consumer.commit_failed = match error {
                            GroupError::NotCoordinator | GroupError::CoordinatorNotAvailable => {
                                true
                            }
                            GroupError::StaleMemberEpoch => {
                                group.config.protocol == GroupProtocol::Consumer
                            }
                            _ => false,
                        };
                    }
                    let joining = matches!(*request, "JoinGroup" | "SyncGroup");
                    match error {
                        GroupError::NotCoordinator | GroupError::CoordinatorNotAvailable => {
                            consumer.retry_at_ms = now + RETRY_BACKOFF_MS;
                            if joining || consumer.state == MemberState::Joining {
                                consumer.state = MemberState::Unjoined;
                            }
                        }
                        // `AbstractMembershipManager.transitionToFenced`: the partitions are lost,
                        // without a commit, and the member joins again with epoch 0 at its next poll
                        // (the rebalance listener's `onPartitionsLost` runs there first), with no
                        // back-off: `HeartbeatRequestManager` resets the heartbeat's state.
                        GroupError::FencedMemberEpoch | GroupError::UnknownMemberId
                            if group.config.protocol == GroupProtocol::Consumer =>
                        {
                            if *request == "ConsumerGroupHeartbeat"
                                && sent_generation.is_none_or(|g| g == consumer.generation)
                            {
                                consumer.drop_partitions();
                                consumer.reset_generation();
                            }
                        }
                        // A commit with an old member epoch is dropped; the next one carries the
                        // current epoch.
                        GroupError::StaleMemberEpoch | GroupError::FencedMemberEpoch => {}
                        // A stable member is only asked to rejoin: it finishes what it has in hand
                        // and sends the JoinGroup at its next poll (`HeartbeatResponseHandler`,
                        // `OffsetCommitResponseHandler`: `requestRejoin`).
                        GroupError::RebalanceInProgress if !joining => {
                            if consumer.state == MemberState::Stable {
                                consumer.rejoin_requested = true;
                            }
                        }
                        GroupError::RebalanceInProgress => consumer.state = MemberState::Unjoined,
                        // An answer about a generation the member has since left is ignored
                        // (`generationUnchanged`); otherwise the generation is reset and the member
                        // rejoins from scratch (`resetStateOnResponseError`).
                        GroupError::IllegalGeneration | GroupError::UnknownMemberId => {
                            if sent_generation.is_none_or(|g| g == consumer.generation) {
                                consumer.reset_generation();
                            }
                        }
                    }
                }
            }
        }
    }

    fn handle_fetch_responses(&mut self) {
        let Self {
            runtime,
            cluster,
            invariants,
            partitions,
            replicas,
            groups,
            consumers,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            events,
            wires,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        wires.arriving::<ConsumerFetchResponse>(due);
        for &id in due.iter() {
            wires.finish(id);
            let (wire, response) = wires
                .get_of::<ConsumerFetchResponse>(id)
                .expect("a consumer fetch response");
            let served_by = match wire.from {
                Node::Broker(b) => Some(b),
                _ => None,
            };
            let mut consumer = consumers
                .get_mut(response.consumer)
                .expect("consumer entity");
            let partition = partitions.get(response.partition).expect("partition");
            let ordinal = partition.ordinal;
            let group = groups
                .get(cluster.groups[consumer.group as usize])
                .expect("group");
            let member_id = consumer.member_id.clone();
            let consumer = &mut *consumer;
            let Some(progress) = consumer.assigned.get_mut(&ordinal) else {
                continue;
            };
            if progress.fetch_in_flight != Some(response.request) {
                continue;
            }
            progress.fetch_in_flight = None;
            match response.error {
                // From a follower (KIP-392), the consumer clears its preferred read replica and
                // asks the leader next: only the leader's answer resets the position
                // (`FetchCollector.handleInitializeErrors`).
                Some(KafkaError::OffsetOutOfRange)
                    if served_by != consumer.metadata.leaders[ordinal as usize].0 =>
                {
                    progress.from_leader = true;
                }
                Some(KafkaError::OffsetOutOfRange) => {
                    let leader = partition
                        .leader_replica()
                        .map_or(LogBounds::default(), |r| {
                            LogBounds::of(replicas.get(r).expect("replica"))
                        });
                    // Below the log start, retention deleted what it asked for; otherwise it was
                    // past the end of a truncated log.
                    let reason = if progress.position < response.log_start_offset {
                        ResetReason::BelowLogStart
                    } else {
                        ResetReason::PastLogEnd
                    };
                    let Some(reset) = reset_offset(group, leader) else {
                        consumer.failed = Some((ConsumerError::OffsetOutOfRange, ordinal));
                        continue;
                    };
                    events.push(
                        now,
                        EventKind::OffsetReset {
                            group: group.name.clone(),
                            member: member_id.clone(),
                            topic: cluster.topics[partition.topic].name.clone(),
                            partition: partition.index,
                            from: progress.position,
                            to: reset,
                            reason,
                        },
                    );
                    // Its next commit may take the group's committed offset back: Kafka lets it
                    // (`Fetcher.handleOffsetOutOfRange`, then `auto.offset.reset`).
                    invariants.allow_committed_back(group.index, ordinal);
                    let skipped = reset.saturating_sub(progress.position);
                    progress.position = reset;
                    progress.handed = reset;
                    progress.processed = reset;
                    // What the application still holds of this partition lay past the log's new
                    // end; it is set aside with the reset.
                    consumer.in_hand.retain(|(o, _)| *o != ordinal);
                    consumer.gaps.retain(|(o, _)| *o != ordinal);
                    consumer.offset_resets += 1;
                    consumer.records_skipped += skipped;
                }
                // KIP-951: the leader the broker named is taken at once; with none named, the
                // consumer asks for metadata.
                Some(KafkaError::NotLeaderOrFollower) => match response.current_leader {
                    Some((leader, epoch)) => {
                        consumer.metadata.take_hint(ordinal as usize, leader, epoch)
                    }
                    None => consumer.metadata.wanted = true,
                },
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
                    // A position below the log start (a committed offset retention passed) is
                    // reset before anything is read from it.
                    if response.count > 0 && response.from < response.log_start_offset {
                        invariants.report(
                            "read-below-log-start",
                            ordinal as usize,
                            0,
                            format!(
                                "{now} ms: {} received offset {} below the log start {} of the replica it fetched from",
                                member_id, response.from, response.log_start_offset
                            ),
                        );
                    }
                    if response.from == progress.position && response.count > 0 {
                        progress.position = end;
                        consumer
                            .gaps
                            .extend(response.removed.iter().map(|r| (ordinal, r.clone())));
                        // A partition is fetched only once its buffer is drained, so it is not in
                        // the queue yet.
                        consumer.buffered.push_back(ordinal);
                    }
                }
            }
        }
    }

    /// Each member's application processes what its last poll returned, at its rate and in the
    /// order the poll returned it; with `commit_after_each_batch` it commits once the batch is done.
    fn process_records(&mut self) {
        let Self {
            runtime,
            cluster,
            groups,
            consumers,
            ..
        } = self;
        let Runtime { clock, wake, .. } = &mut **runtime;
        let now = clock.now_ms;
        for &entity in &cluster.consumers {
            // A consumer added this step is spawned at its end.
            let Ok(mut c) = consumers.get_mut(entity) else {
                continue;
            };
            if !c.alive {
                continue;
            }
            let c = &mut *c;
            let elapsed = now - c.last_process_ms;
            c.last_process_ms = now;
            if c.in_hand.is_empty() || c.records_per_sec == 0 {
                c.budget_milli = 0;
                continue;
            }
            let rate = u64::from(c.records_per_sec);
            c.budget_milli += elapsed * rate;
            let mut can = c.budget_milli / 1000;
            c.budget_milli %= 1000;
            let mut done = 0;
            while can > 0 {
                let Some(&(ordinal, end)) = c.in_hand.front() else {
                    break;
                };
                if let Some(p) = c.assigned.get_mut(&ordinal) {
                    let (to, n) = super::consumer::span(&c.gaps, ordinal, p.processed..end, can);
                    p.processed = p.processed.max(to);
                    can -= n;
                    done += n;
                    if p.processed < end {
                        continue;
                    }
                    if !c.gaps.is_empty() {
                        let processed = p.processed;
                        c.gaps.retain(|(o, g)| *o != ordinal || g.end > processed);
                    }
                }
                c.in_hand.pop_front();
            }
            c.processed_total += done;
            if c.in_hand.is_empty() {
                // The batch is done: the application polls again now.
                c.budget_milli = 0;
                let group = groups.get(cluster.groups[c.group as usize]).expect("group");
                if group.config.commit_after_each_batch && done > 0 {
                    c.next_commit_ms = now;
                }
            } else {
                // The next whole record.
                wake.at(now + (1000 - c.budget_milli).div_ceil(rate));
            }
        }
    }

    /// Joins, heartbeats, commits and fetches, each when due.
    fn send_requests(&mut self) {
        let Self {
            runtime,
            cluster,
            invariants,
            brokers,
            partitions,
            replicas,
            groups,
            consumers,
            ..
        } = self;
        let Runtime {
            clock,
            network,
            wake,
            views,
            events,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let views = views.checked(brokers.iter());
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
            // `poll()` threw (`auto.offset.reset=none`): the application stops, sending nothing
            // more, as in a crash; its coordinator drops it when its session runs out.
            if let Some((error, ordinal)) = c.failed {
                c.alive = false;
                let partition = partitions
                    .get(cluster.partitions[ordinal as usize])
                    .expect("partition entity");
                events.push(
                    now,
                    EventKind::ConsumerFailed {
                        group: group.name.clone(),
                        member: c.member_id.clone(),
                        topic: cluster.topics[partition.topic].name.clone(),
                        partition: partition.index,
                        error: error.name().to_string(),
                    },
                );
                continue;
            }
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
                    write_ends_at: None,
                    answer: None,
                };
                Some(network.send(now, node, Node::Broker(broker), request).id)
            };
            if let Some(t) = c.expire_requests(now, config.max_poll_interval_ms) {
                wake.at(t);
            }
            // After a failed request or NOT_COORDINATOR the member sends nothing for a while; what
            // happens inside the client alone (a poll, processing) goes on.
            let may_send = now >= c.retry_at_ms;
            if !may_send {
                wake.at(c.retry_at_ms);
            }
            let commit_now = |c: &mut Consumer,
                              send: &mut dyn FnMut(
                &mut Consumer,
                GroupRequestBody,
            ) -> Option<u64>| {
                let offsets = c.uncommitted();
                let Some(generation) = c.stable_generation() else {
                    return;
                };
                if offsets.is_empty() || c.commit_in_flight.is_some() {
                    return;
                }
                c.commit_in_flight = send(
                    c,
                    GroupRequestBody::OffsetCommit {
                        generation,
                        offsets,
                    },
                );
                c.sent_ms[2] = now;
                c.sent_generation[1] = generation;
            };
            let consumer_protocol = config.protocol == GroupProtocol::Consumer;
            // A consumer-protocol member leaves with a heartbeat of epoch -1 (`leaveGroupEpoch`).
            let leave = |c: &Consumer| {
                if consumer_protocol {
                    GroupRequestBody::ConsumerGroupHeartbeat {
                        member_epoch: -1,
                        topics: config.topics.clone(),
                        owned: Vec::new(),
                        rebalance_timeout_ms: config.max_poll_interval_ms,
                        full: true,
                    }
                } else {
                    debug_assert!(c.instance_id.is_none(), "static members send no LeaveGroup");
                    GroupRequestBody::LeaveGroup
                }
            };
            if c.leaving {
                // `KafkaConsumer.close`: commit, then leave at once, even in the middle of a
                // rebalance, whose JoinGroup or SyncGroup is abandoned (`maybeLeaveGroup`). Static
                // members send no LeaveGroup (KIP-345). A LeaveGroup already on its way (after a
                // poll timeout) is waited for.
                let leave_sent = c.request_in_flight.is_some() && c.state == MemberState::Unjoined;
                if may_send && !leave_sent {
                    commit_now(&mut c, &mut send_group);
                    if c.instance_id.is_some() {
                        c.alive = false;
                    } else {
                        let body = leave(&c);
                        c.request_in_flight = send_group(&mut c, body);
                        c.sent_ms[0] = now;
                        c.state = MemberState::Unjoined;
                        if c.request_in_flight.is_none() {
                            c.alive = false;
                        }
                    }
                    c.drop_partitions();
                }
                continue;
            }
            // The application is inside `poll()` whenever it has nothing in hand; everything that
            // changes the assignment happens there (`ClassicKafkaConsumer.poll`).
            let polling = c.in_hand.is_empty();
            let mut took = false;
            if polling && consumer_protocol {
                c.last_poll_ms = now;
                if c.target_assignment.is_some() {
                    took = reconcile(
                        &mut c,
                        group,
                        &|o| leader_bounds(cluster, partitions, replicas, o),
                        now,
                        may_send,
                        |c| commit_now(c, &mut send_group),
                    );
                }
            } else if polling {
                c.last_poll_ms = now;
                if let Some(assignment) = c.pending_assignment.take() {
                    took = on_join_complete(&mut c, assignment, group, &|o| {
                        leader_bounds(cluster, partitions, replicas, o)
                    });
                }
                if c.rejoin_requested
                    && c.state == MemberState::Stable
                    && c.request_in_flight.is_none()
                    && may_send
                {
                    // `ConsumerCoordinator.onJoinPrepare`: with auto-commit, both protocols commit
                    // what was consumed before rejoining, and wait for the answer (so the next owner
                    // starts where this one stopped) while still stable and heartbeating; polls go
                    // on meanwhile. A retriable failure is committed again, after the back-off,
                    // until the rebalance timeout (`joinPrepareTimer`); then it rejoins anyway.
                    // A commit already on its way is answered first.
                    if c.commit_in_flight.is_none() {
                        match c.prepare_until_ms {
                            None => {
                                c.prepare_until_ms = Some(now + config.max_poll_interval_ms);
                                c.commit_failed = false;
                                commit_now(&mut c, &mut send_group);
                            }
                            Some(until) if c.commit_failed && now < until => {
                                c.commit_failed = false;
                                commit_now(&mut c, &mut send_group);
                            }
                            Some(_) => {}
                        }
                    }
                    let expired = c.prepare_until_ms.is_some_and(|until| now >= until);
                    if c.prepare_until_ms.is_some() && (c.commit_in_flight.is_none() || expired) {
                        c.prepare_until_ms = None;
                        c.rejoin_requested = false;
                        c.state = MemberState::Unjoined;
                    }
                }
            }
            match c.state {
                MemberState::Unjoined
                    if consumer_protocol
                        && polling
                        && may_send
                        && c.request_in_flight.is_none()
                        && c.heartbeat_in_flight.is_none() =>
                {
                    // Joins with epoch 0, owning nothing (`transitionToJoining`).
                    c.drop_partitions();
                    let body = GroupRequestBody::ConsumerGroupHeartbeat {
                        member_epoch: 0,
                        topics: config.topics.clone(),
                        owned: Vec::new(),
                        rebalance_timeout_ms: config.max_poll_interval_ms,
                        full: true,
                    };
                    match send_group(&mut c, body) {
                        Some(id) => {
                            c.heartbeat_in_flight = Some(id);
                            c.sent_ms[1] = now;
                            c.sent_generation[0] = 0;
                            c.state = MemberState::Joining;
                        }
                        None => {
                            c.retry_at_ms = now + RETRY_BACKOFF_MS;
                            wake.at(c.retry_at_ms);
                        }
                    }
                }
                MemberState::Unjoined
                    if !consumer_protocol
                        && polling
                        && may_send
                        && c.request_in_flight.is_none() =>
                {
                    // Eager members give up every partition before rejoining, and so does any member
                    // whose generation was reset: its partitions are lost (`onJoinPrepare`).
                    if c.generation == 0 || !config.assignor().cooperative() {
                        c.drop_partitions();
                    }
                    // A member whose generation was reset claims nothing: the model's members claim
                    // only what their current generation gave them.
                    let claimed = match config.assignor() {
                        Assignor::Sticky if c.generation > 0 => c.last_assignment.clone(),
                        _ => c.assigned.keys().copied().collect(),
                    };
                    let owned: Vec<TopicPartition> = claimed
                        .iter()
                        .map(|o| cluster.topic_partition(partitions, *o))
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
                    if !polling
                        && now > c.last_poll_ms + config.max_poll_interval_ms
                        && c.request_in_flight.is_none() =>
                {
                    // `max.poll.interval.ms` passed without a poll: the heartbeat thread leaves the
                    // group (static members only stop heartbeating) and resets the generation; the
                    // partitions go to others, what the member held of them is dropped, and it joins
                    // again at its next poll.
                    c.drop_partitions();
                    c.reset_generation();
                    if c.instance_id.is_none() {
                        let body = leave(&c);
                        c.request_in_flight = send_group(&mut c, body);
                        c.sent_ms[0] = now;
                    }
                }
                MemberState::Stable if consumer_protocol => {
                    if !polling {
                        wake.at(c.last_poll_ms + config.max_poll_interval_ms + 1);
                    }
                    // The heartbeat carries what the member owns now: the coordinator reads a
                    // revocation from it (`ConsumerHeartbeatRequestManager`).
                    if may_send
                        && (now >= c.next_heartbeat_ms || c.heartbeat_now)
                        && c.heartbeat_in_flight.is_none()
                    {
                        let generation = c.generation;
                        let body = GroupRequestBody::ConsumerGroupHeartbeat {
                            member_epoch: generation as i32,
                            topics: config.topics.clone(),
                            owned: c.assigned.keys().copied().collect(),
                            rebalance_timeout_ms: config.max_poll_interval_ms,
                            full: c.heartbeat_full,
                        };
                        c.heartbeat_in_flight = send_group(&mut c, body);
                        c.sent_ms[1] = now;
                        c.sent_generation[0] = generation;
                        c.next_heartbeat_ms = now + c.heartbeat_interval_ms;
                        c.heartbeat_now = false;
                    }
                    wake.at(c.next_heartbeat_ms);
                    if polling && may_send && now >= c.next_commit_ms {
                        commit_now(&mut c, &mut send_group);
                        c.next_commit_ms = now + config.auto_commit_interval_ms;
                    }
                    wake.at(c.next_commit_ms);
                }
                MemberState::Stable => {
                    if !polling {
                        wake.at(c.last_poll_ms + config.max_poll_interval_ms + 1);
                    }
                    if may_send && now >= c.next_heartbeat_ms && c.heartbeat_in_flight.is_none() {
                        let generation = c.generation;
                        c.heartbeat_in_flight =
                            send_group(&mut c, GroupRequestBody::Heartbeat { generation });
                        c.sent_ms[1] = now;
                        c.sent_generation[0] = generation;
                        c.next_heartbeat_ms = now + config.heartbeat_interval_ms();
                    }
                    wake.at(c.next_heartbeat_ms);
                    // Auto-commit runs inside a poll (`ConsumerCoordinator.poll`,
                    // `maybeAutoCommitOffsetsAsync`), of what earlier polls returned.
                    if polling && may_send && now >= c.next_commit_ms {
                        commit_now(&mut c, &mut send_group);
                        c.next_commit_ms = now + config.auto_commit_interval_ms;
                    }
                    wake.at(c.next_commit_ms);
                }
                _ => {}
            }
            // Partitions are taken only here, inside a poll: the owners are checked when some were.
            if took {
                invariants.owners_changed(c.group);
            }
            if polling && c.collect(config.max_poll_records) > 0 && c.records_per_sec > 0 {
                wake.at(now + 1000u64.div_ceil(u64::from(c.records_per_sec)));
            }
            if !may_send {
                continue;
            }
            // Fetch each owned partition whose fetched records are all handed out, in every state of
            // membership (`AbstractFetch.fetchablePartitions` skips buffered ones): `ClassicKafkaConsumer.poll` updates the assignment without waiting for a
            // rebalance to complete (`updateAssignmentMetadataIfNeeded`), so a cooperative member
            // goes on fetching and processing what it owns while it rejoins (KIP-429). An eager
            // member owns nothing then: it gave up every partition before it rejoined.
            let c = &mut *c;
            // Its Metadata requests (`ConsumerMetadata`): a consumer does not keep its requests in
            // flight by broker, so the least loaded broker is the lowest id it reaches.
            if c.metadata.leaders.len() != cluster.partitions.len() {
                c.metadata.leaders = vec![(None, 0); cluster.partitions.len()].into();
                c.metadata.wanted = true;
            }
            let refresh = Refresh {
                now,
                round_trip_ms: 2 * cluster.config.network_latency_ms,
                backoff_ms: RETRY_BACKOFF_MS,
                max_age_ms: config.metadata_max_age_ms,
                node,
                network,
                brokers: views,
            };
            wake.at(c
                .metadata
                .refresh(&refresh, |_| 0, partitions.iter_many(&cluster.partitions)));
            // A classic group's leader that learns of partitions added to its topics since it
            // assigned them asks for a rebalance (`ConsumerCoordinator.rejoinNeededOrPending`).
            if c.metadata.refreshed_ms == now
                && let Some(assigned) = c.assigned_partitions
            {
                let seen = c.metadata.answered_offset;
                let known: u32 = config
                    .topics
                    .iter()
                    .filter_map(|t| cluster.topics.iter().find(|x| x.name == *t))
                    .map(|t| {
                        partitions
                            .iter_many(&t.partitions)
                            .filter(|p| p.known_at(seen))
                            .count() as u32
                    })
                    .sum();
                if known > assigned && c.state == MemberState::Stable {
                    c.assigned_partitions = None;
                    c.rejoin_requested = true;
                }
            }
            // Field by field: the loop below borrows the partitions mutably.
            let member = Membership {
                member_id: &c.member_id,
                generation: c.generation,
                taken_up: c.pending_assignment.is_none() && c.state == MemberState::Stable,
            };
            let c_group = c.group;
            let revoking = &c.revoking;
            for (&o, progress) in c.assigned.iter_mut() {
                if progress.fetch_in_flight.is_some()
                    || progress.handed < progress.position
                    || revoking.contains(&o)
                {
                    continue;
                }
                let partition = partitions
                    .get(cluster.partitions[o as usize])
                    .expect("partition");
                let Some(leader) = c.metadata.leaders[o as usize].0 else {
                    c.metadata.wanted = true;
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
                    && !std::mem::take(&mut progress.from_leader)
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
                let name = (
                    cluster.topics[partition.topic].name.as_str(),
                    partition.index,
                );
                if !coordinator_allows(&member, group, o, name) {
                    invariants.report(
                        "fetch-unowned",
                        o as usize,
                        c_group,
                        format!(
                            "{now} ms: {} fetches {}, which its coordinator has not assigned to it",
                            member.member_id,
                            cluster.partition_name(partition)
                        ),
                    );
                }
                // Its metadata may name a leader a reassignment has since removed.
                let Some(replica) = partition.replica_on(serving) else {
                    c.metadata.wanted = true;
                    wake.at(now + RETRY_BACKOFF_MS);
                    continue;
                };
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
}
