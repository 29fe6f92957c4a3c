//! Kafka's partition assignors. A classic group's leader runs range and round robin exactly as
//! `RangeAssignor` and `RoundRobinAssignor`, sticky and cooperative-sticky balanced first, then
//! keeping previous owners (`AbstractStickyAssignor`, `CooperativeStickyAssignor`). A
//! consumer-protocol group's coordinator runs uniform (`UniformHomogeneousAssignmentBuilder`) or
//! range (the group coordinator's `RangeAssignor`, which assigns as the client's does).

use std::collections::{BTreeMap, BTreeSet};

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

/// Sticky: as balanced as possible (no member two partitions ahead of another that could take
/// one), then as few moves as possible from the previous owners.
fn sticky(topics: &BTreeMap<String, u32>, members: &[Member], out: &mut Assignment) {
    let sorted = sorted_members(members);
    let partitions = all_partitions(topics, members);
    let valid: BTreeSet<&TopicPartition> = partitions.iter().collect();
    let can_take = |m: &Member, tp: &TopicPartition| m.topics.contains(&tp.0);

    // Each member keeps what it owned and may still own; a partition claimed twice goes to the
    // first member.
    let mut taken: BTreeSet<TopicPartition> = BTreeSet::new();
    for m in &sorted {
        let mut owned: Vec<TopicPartition> = m
            .owned
            .iter()
            .filter(|tp| valid.contains(tp) && can_take(m, tp) && !taken.contains(*tp))
            .cloned()
            .collect();
        owned.sort();
        owned.dedup();
        taken.extend(owned.iter().cloned());
        *out.get_mut(&m.id).expect("every member has an entry") = owned;
    }

    // Balance: while some member holds two more than another that could take one of its
    // partitions, move its last one.
    loop {
        let mut moved = false;
        for giver in &sorted {
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

    // New and freed partitions, in order, each to the least loaded member that can take it.
    for tp in partitions.iter().filter(|tp| !taken.contains(*tp)) {
        if let Some(m) = sorted
            .iter()
            .filter(|m| can_take(m, tp))
            .min_by_key(|m| (out[&m.id].len(), m.id.clone()))
        {
            out.get_mut(&m.id).unwrap().push(tp.clone());
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
