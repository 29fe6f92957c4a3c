//! Kafka's partition assignors. A classic group's leader runs range and round robin exactly as
//! `RangeAssignor` and `RoundRobinAssignor`, sticky and cooperative-sticky keeping what members
//! owned up to their quota, then filling the rest (`AbstractStickyAssignor`,
//! `CooperativeStickyAssignor`). A
//! consumer-protocol group's coordinator runs uniform (`UniformHomogeneousAssignmentBuilder`) or
//! range (the group coordinator's `RangeAssignor`, which assigns as the client's does).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Assignor {
    Range,
    RoundRobin,
    Sticky,
    CooperativeSticky,
    /// The consumer protocol's default server-side assignor.
    Uniform,
}

impl Assignor {
    /// The name in `partition.assignment.strategy` (and on the command line).
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::Sticky => "sticky",
            Assignor::CooperativeSticky => "cooperative-sticky",
            Assignor::Uniform => "uniform",
        }
    }

    pub fn from_name(name: &str) -> Option<Assignor> {
        [
            Assignor::Range,
            Assignor::RoundRobin,
            Assignor::Sticky,
            Assignor::CooperativeSticky,
            Assignor::Uniform,
        ]
        .into_iter()
        .find(|a| a.name() == name)
    }

    /// The cooperative protocol (KIP-429): members keep what they own through a rebalance.
    pub fn cooperative(self) -> bool {
        self == Assignor::CooperativeSticky
    }
}

/// A topic and a partition number.
pub type TopicPartition = (String, u32);

/// One member as the assignor sees it: in the JoinGroup responses the leader gets, or in the
/// coordinator's group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub topics: Vec<String>,
    /// What it owned before this rebalance (sent by sticky and cooperative members); for the
    /// uniform assignor, its part of the previous target assignment.
    pub owned: Vec<TopicPartition>,
}

/// The assignment, by member id; every member appears, partitions sorted.
pub type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// Runs an assignor over topics (name to partition count) and members.
pub fn assign(
    assignor: Assignor,
    topics: &BTreeMap<String, u32>,
    members: &[Member],
) -> Assignment {
    let mut out: Assignment = members.iter().map(|m| (m.id.clone(), Vec::new())).collect();
    match assignor {
        Assignor::Range => range(topics, members, &mut out),
        Assignor::RoundRobin => round_robin(topics, members, &mut out),
        Assignor::Sticky => sticky(topics, members, &mut out),
        Assignor::Uniform => uniform(topics, members, &mut out),
        Assignor::CooperativeSticky => {
            sticky(topics, members, &mut out);
            // `CooperativeStickyAssignor.adjustAssignment`: a partition moving to a new owner is
            // left out this round; its owner revokes it and the follow-up rebalance assigns it.
            let owner: BTreeMap<&TopicPartition, &str> = members
                .iter()
                .flat_map(|m| m.owned.iter().map(move |tp| (tp, m.id.as_str())))
                .collect();
            for (member, partitions) in out.iter_mut() {
                partitions.retain(|tp| owner.get(tp).is_none_or(|o| *o == member));
            }
        }
    }
    for partitions in out.values_mut() {
        partitions.sort();
    }
    out
}

fn sorted_members(members: &[Member]) -> Vec<&Member> {
    let mut sorted: Vec<&Member> = members.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    sorted
}

/// `RangeAssignor`: per topic, partitions in order to the subscribed members sorted by id; each
/// gets `P / C`, the first `P % C` one more, in contiguous blocks.
fn range(topics: &BTreeMap<String, u32>, members: &[Member], out: &mut Assignment) {
    let sorted = sorted_members(members);
    for (topic, &count) in topics {
        let subscribed: Vec<&&Member> =
            sorted.iter().filter(|m| m.topics.contains(topic)).collect();
        if subscribed.is_empty() {
            continue;
        }
        let c = subscribed.len() as u32;
        let (per, extra) = (count / c, count % c);
        for (i, member) in subscribed.iter().enumerate() {
            let i = i as u32;
            let start = per * i + i.min(extra);
            let len = per + u32::from(i < extra);
            let mine = out.get_mut(&member.id).expect("every member has an entry");
            mine.extend((start..start + len).map(|p| (topic.clone(), p)));
        }
    }
}

/// Every partition of the subscribed topics, sorted by topic then partition.
fn all_partitions(topics: &BTreeMap<String, u32>, members: &[Member]) -> Vec<TopicPartition> {
    let subscribed: BTreeSet<&String> = members.iter().flat_map(|m| &m.topics).collect();
    subscribed
        .into_iter()
        .filter_map(|t| topics.get(t).map(|n| (t, *n)))
        .flat_map(|(t, n)| (0..n).map(move |p| (t.clone(), p)))
        .collect()
}

/// `RoundRobinAssignor`: all partitions sorted, dealt in turn to the members sorted by id,
/// skipping members not subscribed to the partition's topic.
fn round_robin(topics: &BTreeMap<String, u32>, members: &[Member], out: &mut Assignment) {
    let sorted = sorted_members(members);
    if sorted.is_empty() {
        return;
    }
    let mut next = 0;
    for tp in all_partitions(topics, members) {
        if !sorted.iter().any(|m| m.topics.contains(&tp.0)) {
            continue;
        }
        while !sorted[next % sorted.len()].topics.contains(&tp.0) {
            next += 1;
        }
        out.get_mut(&sorted[next % sorted.len()].id)
            .expect("every member has an entry")
            .push(tp);
        next += 1;
    }
}

/// `AbstractStickyAssignor.assignPartitions`: every member keeps what it owned up to its quota,
/// then the rest are dealt to the members below it. With identical subscriptions (every group in
/// the model) that is `ConstrainedAssignmentBuilder`; otherwise a simpler stand-in for
/// `GeneralAssignmentBuilder` with its order of steps: keep, place the unowned, then balance.
fn sticky(topics: &BTreeMap<String, u32>, members: &[Member], out: &mut Assignment) {
    let sorted = sorted_members(members);
    let partitions = all_partitions(topics, members);
    let valid: BTreeSet<&TopicPartition> = partitions.iter().collect();

    // What each member owned and may still own; a partition claimed twice goes to the first
    // member. (Kafka weighs the claimants' generations, `allSubscriptionsEqual`; the model's
    // members only claim what their current generation gave them.)
    let mut taken: BTreeSet<&TopicPartition> = BTreeSet::new();
    let owned: Vec<Vec<TopicPartition>> = sorted
        .iter()
        .map(|m| {
            let mut mine: Vec<TopicPartition> = Vec::new();
            for tp in &m.owned {
                if valid.contains(tp) && m.topics.contains(&tp.0) && taken.insert(tp) {
                    mine.push(tp.clone());
                }
            }
            mine
        })
        .collect();

    let all_equal = sorted.windows(2).all(|w| {
        let (a, b): (BTreeSet<&String>, BTreeSet<&String>) =
            (w[0].topics.iter().collect(), w[1].topics.iter().collect());
        a == b
    });
    if all_equal {
        constrained(&partitions, &sorted, owned, out);
    } else {
        general(&partitions, &sorted, owned, out);
    }
}

/// `ConstrainedAssignmentBuilder`: P partitions over M members give a minimum quota of P / M and
/// a maximum one more, which P % M members may reach.
fn constrained(
    partitions: &[TopicPartition],
    sorted: &[&Member],
    owned: Vec<Vec<TopicPartition>>,
    out: &mut Assignment,
) {
    if sorted.is_empty() {
        return;
    }
    let (min_quota, expected_over) = (
        partitions.len() / sorted.len(),
        partitions.len() % sorted.len(),
    );
    let max_quota = min_quota + usize::from(expected_over > 0);
    let mut over = 0;
    let mut under_min: Vec<&str> = Vec::new();
    let mut at_min: VecDeque<&str> = VecDeque::new();
    let mut assigned: BTreeSet<TopicPartition> = BTreeSet::new();

    // `assignOwnedPartitions`: each member keeps its owned partitions, sorted by partition then
    // topic, up to the quota it can still have; the rest may be revoked.
    for (m, mut mine) in sorted.iter().zip(owned) {
        mine.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        if mine.len() < min_quota {
            under_min.push(&m.id);
        } else if mine.len() >= max_quota && over < expected_over {
            over += 1;
            if over == expected_over {
                at_min.clear();
            }
            mine.truncate(max_quota);
        } else {
            mine.truncate(min_quota);
            if over < expected_over {
                at_min.push_back(&m.id);
            }
        }
        assigned.extend(mine.iter().cloned());
        *out.get_mut(&m.id).expect("every member has an entry") = mine;
    }
    under_min.sort();
    at_min.make_contiguous().sort();

    // `assignRoundRobin`: the unassigned partitions in order, dealt in turn to the members below
    // the minimum quota; once none is, one more each to members at it, up to the maximum.
    let mut cursor = 0;
    for tp in partitions.iter().filter(|tp| !assigned.contains(*tp)) {
        let (member, from_under) = if cursor < under_min.len() {
            cursor += 1;
            (under_min[cursor - 1], true)
        } else if !under_min.is_empty() {
            cursor = 1;
            (under_min[0], true)
        } else if let Some(m) = at_min.pop_front() {
            (m, false)
        } else {
            // Kafka throws here ("No more unfilled consumers"); the quotas make it unreachable.
            break;
        };
        let mine = out.get_mut(member).expect("every member has an entry");
        mine.push(tp.clone());
        if mine.len() == min_quota && from_under {
            cursor -= 1;
            under_min.remove(cursor);
            at_min.push_back(member);
        }
    }
}

/// The general case, for members with different subscriptions: keep what is owned, give each
/// unowned partition to the least loaded member that can take it, then balance (no member two
/// partitions ahead of another that could take one of its partitions).
fn general(
    partitions: &[TopicPartition],
    sorted: &[&Member],
    owned: Vec<Vec<TopicPartition>>,
    out: &mut Assignment,
) {
    let can_take = |m: &Member, tp: &TopicPartition| m.topics.contains(&tp.0);
    let mut assigned: BTreeSet<TopicPartition> = BTreeSet::new();
    for (m, mine) in sorted.iter().zip(owned) {
        assigned.extend(mine.iter().cloned());
        *out.get_mut(&m.id).expect("every member has an entry") = mine;
    }
    for tp in partitions.iter().filter(|tp| !assigned.contains(*tp)) {
        if let Some(m) = sorted
            .iter()
            .filter(|m| can_take(m, tp))
            .min_by_key(|m| (out[&m.id].len(), m.id.clone()))
        {
            out.get_mut(&m.id).unwrap().push(tp.clone());
        }
    }
    loop {
        let mut moved = false;
        for giver in sorted {
            let giver_len = out[&giver.id].len();
            let receiver = sorted
                .iter()
                .filter(|r| r.id != giver.id && out[&r.id].len() + 1 < giver_len)
                .filter(|r| out[&giver.id].iter().any(|tp| can_take(r, tp)))
                .min_by_key(|r| (out[&r.id].len(), r.id.clone()));
            if let Some(receiver) = receiver {
                let pos = out[&giver.id]
                    .iter()
                    .rposition(|tp| can_take(receiver, tp))
                    .expect("checked above");
                let tp = out.get_mut(&giver.id).unwrap().remove(pos);
                out.get_mut(&receiver.id).unwrap().push(tp);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}

/// `UniformHomogeneousAssignmentBuilder`: with P partitions and M members, each member's quota
/// is P / M, one more for the first P % M members (in member order). Each member keeps its part
/// of the previous target assignment up to its quota, topic by topic in order; what it had beyond
/// its quota, then the partitions nobody had, go in order to the members still below their quota.
/// Kafka iterates topics in its topic-id set's order and members in its map's; here both are in
/// name order.
fn uniform(topics: &BTreeMap<String, u32>, members: &[Member], out: &mut Assignment) {
    let sorted = sorted_members(members);
    if sorted.is_empty() {
        return;
    }
    let partitions = all_partitions(topics, members);
    let valid: BTreeSet<&TopicPartition> = partitions.iter().collect();
    let had: BTreeSet<&TopicPartition> = sorted
        .iter()
        .flat_map(|m| &m.owned)
        .filter(|tp| valid.contains(tp))
        .collect();
    // Partitions nobody had come first (`build` lists them), then what members give back
    // (`maybeRevokePartitions` appends it).
    let mut unassigned: Vec<TopicPartition> = partitions
        .iter()
        .filter(|tp| !had.contains(tp))
        .cloned()
        .collect();
    let (min_quota, mut extra) = (
        partitions.len() / sorted.len(),
        partitions.len() % sorted.len(),
    );
    let mut unfilled: Vec<(&str, usize)> = Vec::new();
    for m in &sorted {
        let mut quota = min_quota;
        if extra > 0 {
            quota += 1;
            extra -= 1;
        }
        let mut owned: Vec<&TopicPartition> =
            m.owned.iter().filter(|tp| valid.contains(tp)).collect();
        owned.sort();
        let mine = out.get_mut(&m.id).expect("every member has an entry");
        for topic in owned.iter().map(|tp| &tp.0).collect::<BTreeSet<_>>() {
            let of_topic: Vec<&TopicPartition> =
                owned.iter().copied().filter(|tp| &tp.0 == topic).collect();
            if of_topic.len() <= quota {
                quota -= of_topic.len();
                mine.extend(of_topic.into_iter().cloned());
            } else {
                let (kept, given_back) = of_topic.split_at(quota);
                quota = 0;
                mine.extend(kept.iter().copied().cloned());
                unassigned.extend(given_back.iter().copied().cloned());
            }
        }
        if quota > 0 {
            unfilled.push((&m.id, quota));
        }
    }
    let mut next = unassigned.into_iter();
    for (id, quota) in unfilled {
        out.get_mut(id)
            .expect("every member has an entry")
            .extend(next.by_ref().take(quota));
    }
}

/// The assignment as `{member: ["topic-partition", ...]}`.
pub fn to_json(assignment: &Assignment) -> serde_json::Value {
    serde_json::Value::Object(
        assignment
            .iter()
            .map(|(m, tps)| {
                (
                    m.clone(),
                    serde_json::Value::Array(
                        tps.iter()
                            .map(|(t, p)| serde_json::Value::String(format!("{t}-{p}")))
                            .collect(),
                    ),
                )
            })
            .collect(),
    )
}
