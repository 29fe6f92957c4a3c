//! The group coordinator's side of KIP-848's consumer group protocol (`GroupMetadataManager`'s
//! consumer-group methods, `ConsumerGroup`, `CurrentAssignmentBuilder`). ConsumerGroupHeartbeat
//! is the only membership request. A change of membership bumps the group epoch; the next
//! heartbeat computes the target assignment for that epoch with the server-side assignor; then
//! each member reconciles on its own, at its own heartbeats: it first revokes what the target
//! takes from it, keeping its member epoch, and only then moves to the target epoch and is given
//! partitions, each once its previous owner has released it. There is no group-wide barrier.
//! Members that stop heartbeating for `group.consumer.session.timeout.ms`, or that do not revoke
//! within their rebalance timeout, are fenced.

use std::collections::{BTreeMap, BTreeSet};

use bevy_ecs::prelude::*;

use super::cluster::{Cluster, Partition};
use super::consumer_group::{
    ConsumerGroup, GroupMember, GroupState, ReconcileState, Reconciliation,
};
use super::events::{EventKind, EventLog};
use super::protocol::{GroupError, GroupResponseBody};
use super::{SimClock, Wake};
use crate::assignor::{self, Member, TopicPartition};

/// `CurrentAssignmentBuilder.build`: the member's next state towards the target. `taken` holds
/// the partitions some member (this one included) has assigned or pending revocation (those
/// whose `currentPartitionEpoch` is not -1); `owned` is what the member reported owning.
pub fn current_assignment_builder(
    member: &Reconciliation,
    target_epoch: u32,
    target: &BTreeSet<u32>,
    taken: &BTreeSet<u32>,
    owned: Option<&BTreeSet<u32>>,
) -> Reconciliation {
    let owns_revoked = |pending: &BTreeSet<u32>| owned.is_none_or(|o| !o.is_disjoint(pending));
    match member.state {
        ReconcileState::Stable if member.member_epoch != target_epoch => compute_next_assignment(
            member,
            member.member_epoch,
            target_epoch,
            target,
            taken,
            owned,
        ),
        ReconcileState::Stable => member.clone(),
        ReconcileState::UnrevokedPartitions if owns_revoked(&member.pending_revocation) => {
            member.clone()
        }
        ReconcileState::UnrevokedPartitions => compute_next_assignment(
            member,
            member.member_epoch + 1,
            target_epoch,
            target,
            taken,
            owned,
        ),
        ReconcileState::UnreleasedPartitions => compute_next_assignment(
            member,
            member.member_epoch,
            target_epoch,
            target,
            taken,
            owned,
        ),
    }
}

/// `CurrentAssignmentBuilder.computeNextAssignment`.
fn compute_next_assignment(
    member: &Reconciliation,
    member_epoch: u32,
    target_epoch: u32,
    target: &BTreeSet<u32>,
    taken: &BTreeSet<u32>,
    owned: Option<&BTreeSet<u32>>,
) -> Reconciliation {
    let kept: BTreeSet<u32> = member.assigned.intersection(target).copied().collect();
    let pending_revocation: BTreeSet<u32> = member.assigned.difference(&kept).copied().collect();
    let wanted: BTreeSet<u32> = target.difference(&kept).copied().collect();
    let unreleased = wanted.iter().any(|p| taken.contains(p));
    let pending_assignment: BTreeSet<u32> = wanted.difference(taken).copied().collect();
    let mut next = member.clone();
    let owns_revoked = owned.is_none_or(|o| !o.is_disjoint(&pending_revocation));
    if !pending_revocation.is_empty() && owns_revoked {
        // Revoke first: the member keeps its epoch until it has given them up.
        next.state = ReconcileState::UnrevokedPartitions;
        next.update_member_epoch(member_epoch);
        next.assigned = kept;
        next.pending_revocation = pending_revocation;
    } else {
        next.state = if unreleased {
            ReconcileState::UnreleasedPartitions
        } else {
            ReconcileState::Stable
        };
        next.update_member_epoch(target_epoch);
        next.assigned = kept.union(&pending_assignment).copied().collect();
        next.pending_revocation = BTreeSet::new();
    }
    next
}

/// The partitions some member has assigned or pending revocation.
fn taken(group: &ConsumerGroup) -> BTreeSet<u32> {
    group
        .members
        .iter()
        .flat_map(|m| {
            m.reconciliation
                .assigned
                .iter()
                .chain(&m.reconciliation.pending_revocation)
        })
        .copied()
        .collect()
}

/// `GroupMetadataManager.updateTargetAssignment`: the server-side assignor over the members,
/// each with its part of the previous target assignment (`TargetAssignmentBuilder`).
fn update_target_assignment(
    group: &mut ConsumerGroup,
    cluster: &Cluster,
    partitions: &Query<&Partition>,
) {
    let names: Vec<(u32, TopicPartition)> = group
        .partitions
        .iter()
        .map(|&o| (o, cluster.topic_partition(partitions, o)))
        .collect();
    let name_of: BTreeMap<u32, &TopicPartition> = names.iter().map(|(o, tp)| (*o, tp)).collect();
    let ordinal_of: BTreeMap<&TopicPartition, u32> = names.iter().map(|(o, tp)| (tp, *o)).collect();
    let mut topics: BTreeMap<String, u32> = BTreeMap::new();
    for (_, (topic, _)) in &names {
        *topics.entry(topic.clone()).or_default() += 1;
    }
    let members: Vec<Member> = group
        .members
        .iter()
        .map(|m| Member {
            id: m.id.clone(),
            topics: m.topics.clone(),
            owned: group
                .target
                .get(&m.id)
                .into_iter()
                .flatten()
                .filter_map(|o| name_of.get(o).map(|tp| (*tp).clone()))
                .collect(),
        })
        .collect();
    let assignment = assignor::assign(group.config.assignor(), &topics, &members);
    group.target = assignment
        .into_iter()
        .map(|(id, tps)| {
            let ordinals = tps
                .iter()
                .filter_map(|tp| ordinal_of.get(tp).copied())
                .collect();
            (id, ordinals)
        })
        .collect();
    group.assignment_epoch = group.generation;
}

/// `ConsumerGroup.maybeUpdateGroupState`.
pub(super) fn update_state(group: &mut ConsumerGroup) {
    group.state = if group.members.is_empty() {
        GroupState::Empty
    } else if group.generation > group.assignment_epoch {
        GroupState::Assigning
    } else if group
        .members
        .iter()
        .any(|m| !m.reconciliation.is_reconciled_to(group.assignment_epoch))
    {
        GroupState::Reconciling
    } else {
        GroupState::Stable
    };
}

/// A membership change bumps the group epoch (`consumerGroupHeartbeat`, `consumerGroupFenceMember`),
/// which Kafka counts as a rebalance.
pub(super) fn bump_group_epoch(
    group: &mut ConsumerGroup,
    now: u64,
    events: &mut EventLog,
    reason: String,
) {
    group.generation += 1;
    group.rebalances += 1;
    events.push(
        now,
        EventKind::GroupEpochBumped {
            group: group.name.clone(),
            epoch: group.generation,
            reason,
        },
    );
}

/// `GroupMetadataManager.consumerGroupFenceMember`: the member is removed with its target
/// assignment, and the group epoch is bumped; the next heartbeat computes the new target.
pub(super) fn fence_member(
    group: &mut ConsumerGroup,
    index: usize,
    now: u64,
    events: &mut EventLog,
    why: &str,
) {
    let member = group.members.remove(index);
    group.target.remove(&member.id);
    bump_group_epoch(group, now, events, format!("{} {why}", member.id));
    update_state(group);
}

/// A ConsumerGroupHeartbeat request, as the coordinator handles it.
pub(super) struct Heartbeat<'a> {
    pub member: &'a str,
    pub member_epoch: i32,
    pub topics: &'a [String],
    pub owned: &'a [u32],
    pub rebalance_timeout_ms: u64,
    pub full: bool,
}

/// `GroupMetadataManager.consumerGroupHeartbeat` (and `consumerGroupLeave` for epoch -1).
pub(super) fn consumer_group_heartbeat(
    group: &mut ConsumerGroup,
    request: &Heartbeat,
    now: u64,
    cluster: &Cluster,
    partitions: &Query<&Partition>,
    events: &mut EventLog,
) -> Result<GroupResponseBody, GroupError> {
    let interval = cluster.config.group_consumer_heartbeat_interval_ms;
    let index = group.members.iter().position(|m| m.id == request.member);
    if request.member_epoch < 0 {
        // The member leaves (`consumerGroupLeave`).
        if let Some(i) = index {
            fence_member(group, i, now, events, "left the group");
        }
        return Ok(GroupResponseBody::ConsumerGroupHeartbeat {
            member_epoch: request.member_epoch,
            heartbeat_interval_ms: interval,
            assignment: None,
        });
    }
    let received = request.member_epoch as u32;
    let owned: BTreeSet<u32> = request.owned.iter().copied().collect();
    let index = match index {
        None if received == 0 => {
            group.members.push(GroupMember::new(
                request.member.to_string(),
                None,
                request.topics.to_vec(),
                now,
            ));
            bump_group_epoch(group, now, events, format!("{} joined", request.member));
            group.members.len() - 1
        }
        None => return Err(GroupError::UnknownMemberId),
        Some(i) => {
            // `throwIfConsumerGroupMemberEpochIsInvalid`: a member ahead of the coordinator, or
            // behind it other than by the one epoch whose response may have been lost, is fenced.
            // A join (epoch 0) is always let in: a fenced member, or one whose join's answer
            // failed, rejoins under its own member id (KAFKA-19233).
            let r = &group.members[i].reconciliation;
            if received == 0 {
                i
            } else if received > r.member_epoch
                || (received < r.member_epoch
                    && (received != r.previous_member_epoch || !owned.is_subset(&r.assigned)))
            {
                return Err(GroupError::FencedMemberEpoch);
            } else {
                i
            }
        }
    };
    group.members[index].reconciliation.rebalance_timeout_ms = request.rebalance_timeout_ms;
    if group.generation > group.assignment_epoch {
        update_target_assignment(group, cluster, partitions);
    }
    let target_epoch = group.assignment_epoch;
    let before = group.members[index].reconciliation.clone();
    if !before.is_reconciled_to(target_epoch) {
        let target = group
            .target
            .get(request.member)
            .cloned()
            .unwrap_or_default();
        let taken = taken(group);
        let mut next =
            current_assignment_builder(&before, target_epoch, &target, &taken, Some(&owned));
        if next != before {
            // The rebalance timeout runs while the member is asked to revoke
            // (`scheduleConsumerGroupRebalanceTimeout`), and is cancelled otherwise.
            next.revoke_deadline = (next.state == ReconcileState::UnrevokedPartitions)
                .then(|| (now + next.rebalance_timeout_ms, next.member_epoch));
            if next.is_reconciled_to(target_epoch) {
                events.push(
                    now,
                    EventKind::MemberReconciled {
                        group: group.name.clone(),
                        member: request.member.to_string(),
                        epoch: target_epoch,
                    },
                );
            }
            group.members[index].reconciliation = next;
        }
    }
    // `scheduleConsumerGroupSessionTimeout`: every heartbeat restarts the session.
    group.members[index].last_heartbeat_ms = now;
    update_state(group);
    let member = &group.members[index].reconciliation;
    // The assignment goes back to a full request (a join, or the first heartbeat after a failed
    // one) and whenever it changed.
    let changed = member.assigned != before.assigned;
    let full = received == 0 || request.full;
    Ok(GroupResponseBody::ConsumerGroupHeartbeat {
        member_epoch: member.member_epoch as i32,
        heartbeat_interval_ms: interval,
        assignment: (full || changed).then(|| member.assigned.iter().copied().collect()),
    })
}

/// Members silent for `group.consumer.session.timeout.ms`, and members that did not revoke
/// within their rebalance timeout while still in the same epoch, are fenced.
pub(super) fn expire_members(
    clock: &SimClock,
    cluster: &Cluster,
    events: &mut EventLog,
    wake: &mut Wake,
    group: &mut ConsumerGroup,
) {
    let now = clock.now_ms;
    let session = cluster.config.group_consumer_session_timeout_ms;
    let mut i = 0;
    while i < group.members.len() {
        let m = &group.members[i];
        let session_deadline = m.last_heartbeat_ms + session;
        let revoke = m
            .reconciliation
            .revoke_deadline
            .filter(|(_, epoch)| *epoch == m.reconciliation.member_epoch);
        if now > session_deadline {
            fence_member(group, i, now, events, "fenced: its session expired");
            continue;
        }
        if let Some((deadline, _)) = revoke
            && now >= deadline
        {
            fence_member(
                group,
                i,
                now,
                events,
                "fenced: it did not revoke within its rebalance timeout",
            );
            continue;
        }
        wake.at(session_deadline + 1);
        if let Some((deadline, _)) = revoke {
            wake.at(deadline);
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's `CurrentAssignmentBuilderTest` cases use two topics; here topic 1's partition p is
    /// ordinal p and topic 2's is 10 + p.
    fn set(t1: &[u32], t2: &[u32]) -> BTreeSet<u32> {
        t1.iter()
            .copied()
            .chain(t2.iter().map(|p| 10 + p))
            .collect()
    }

    fn member(
        state: ReconcileState,
        (epoch, previous): (u32, u32),
        assigned: BTreeSet<u32>,
        pending_revocation: BTreeSet<u32>,
    ) -> Reconciliation {
        Reconciliation {
            member_epoch: epoch,
            previous_member_epoch: previous,
            state,
            assigned,
            pending_revocation,
            ..Reconciliation::default()
        }
    }

    /// Nothing is owned by anyone (`currentPartitionEpoch` is -1 everywhere).
    fn none() -> BTreeSet<u32> {
        BTreeSet::new()
    }

    #[test]
    fn stable_to_unrevoked_partitions() {
        let m = member(
            ReconcileState::Stable,
            (10, 10),
            set(&[1, 2, 3], &[4, 5, 6]),
            none(),
        );
        let next = current_assignment_builder(&m, 11, &set(&[2, 3, 4], &[5, 6, 7]), &none(), None);
        let expected = member(
            ReconcileState::UnrevokedPartitions,
            (10, 10),
            set(&[2, 3], &[5, 6]),
            set(&[1], &[4]),
        );
        assert_eq!(next, expected);
    }

    #[test]
    fn remains_in_unrevoked_partitions_while_it_reports_a_revoked_one() {
        let m = member(
            ReconcileState::UnrevokedPartitions,
            (10, 10),
            set(&[2, 3], &[5, 6]),
            set(&[1], &[4]),
        );
        let target = set(&[3], &[6]);
        for owned in [
            None,
            Some(set(&[1, 2, 3], &[5, 6])),
            Some(set(&[2, 3], &[4, 5, 6])),
        ] {
            let next = current_assignment_builder(&m, 12, &target, &none(), owned.as_ref());
            assert_eq!(next, m, "owned {owned:?}");
        }
    }

    #[test]
    fn unrevoked_partitions_to_stable() {
        let m = member(
            ReconcileState::UnrevokedPartitions,
            (10, 10),
            set(&[2, 3], &[5, 6]),
            set(&[1], &[4]),
        );
        let owned = set(&[2, 3], &[5, 6]);
        let next = current_assignment_builder(&m, 11, &owned, &none(), Some(&owned));
        assert_eq!(
            next,
            member(ReconcileState::Stable, (11, 10), owned.clone(), none())
        );
    }

    #[test]
    fn unrevoked_partitions_to_unreleased_partitions() {
        let m = member(
            ReconcileState::UnrevokedPartitions,
            (11, 10),
            set(&[2, 3], &[5, 6]),
            none(),
        );
        let target = set(&[2, 3, 4], &[5, 6, 7]);
        // Every partition is still someone's (`currentPartitionEpoch` is 10 everywhere).
        let taken = set(&[1, 2, 3, 4, 5, 6, 7], &[1, 2, 3, 4, 5, 6, 7]);
        let next =
            current_assignment_builder(&m, 11, &target, &taken, Some(&set(&[2, 3], &[5, 6])));
        let expected = member(
            ReconcileState::UnreleasedPartitions,
            (11, 11),
            set(&[2, 3], &[5, 6]),
            none(),
        );
        assert_eq!(next, expected);
    }

    #[test]
    fn unreleased_partitions_to_stable() {
        let m = member(
            ReconcileState::UnreleasedPartitions,
            (11, 11),
            set(&[2, 3], &[5, 6]),
            none(),
        );
        let taken = set(&[1, 2, 3, 4, 5, 6, 7], &[1, 2, 3, 4, 5, 6, 7]);
        let next = current_assignment_builder(&m, 12, &set(&[2, 3], &[5, 6]), &taken, None);
        let expected = member(
            ReconcileState::Stable,
            (12, 11),
            set(&[2, 3], &[5, 6]),
            none(),
        );
        assert_eq!(next, expected);
    }
}
