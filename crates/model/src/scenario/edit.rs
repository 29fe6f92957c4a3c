//! Edits: changes to a scenario's set-up that a running cluster does not take (the broker count,
//! a topic's replication factor, a group's protocol), or that the model takes only from the
//! start. An edited scenario starts its run again. The sandbox's controls, its side-by-side
//! variants and the labs' runs are all edits, and all go through [`Scenario::edited`].

use serde::{Deserialize, Serialize};

use super::{Acks, Assignor, GroupProtocol, Keys, OffsetReset, Scenario};

/// The most brokers, partitions per topic and members per group the sandbox's controls offer:
/// enough to see every rule at work, few enough to read on screen.
pub const MAX_BROKERS: u32 = 12;
pub const MAX_PARTITIONS: u32 = 64;
pub const MAX_MEMBERS: u32 = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Edit {
    /// The broker count (1 to [`MAX_BROKERS`]).
    Brokers(u32),
    /// A rack per broker (`broker.rack`: rack-1, rack-2, ...) or none.
    Racks(bool),
    /// `replica.selector.class`: KIP-392's rack-aware selector or the leader only.
    RackAwareSelector(bool),
    /// A topic's partition count (1 to [`MAX_PARTITIONS`]); fewer than now, too, as the topic is
    /// made anew.
    Partitions(String, u32),
    /// A topic's replication factor, at most the broker count.
    ReplicationFactor(String, u32),
    /// A topic's `min.insync.replicas` from the start (`SetMinIsr` changes it live).
    MinIsr(String, u32),
    /// A topic's `unclean.leader.election.enable` from the start.
    UncleanElection(String, bool),
    /// `eligible.leader.replicas.version` from the start.
    EligibleLeaderReplicas(bool),
    /// A producer's keys.
    Keys(String, Keys),
    /// A producer's `acks` from the start.
    Acks(String, Acks),
    /// A group's `group.protocol`: its protocol's own settings go back to their defaults.
    Protocol(String, GroupProtocol),
    /// A group's assignor; `None` is the protocol's default.
    Assignor(String, Option<Assignor>),
    /// A group commits after each processed batch, or every `auto.commit.interval.ms`.
    CommitAfterEachBatch(String, bool),
    /// A group's `client.rack`.
    GroupRack(String, Option<String>),
    /// A group's members at the start (0 to [`MAX_MEMBERS`]).
    Members(String, u32),
    /// A group's `auto.offset.reset`.
    AutoOffsetReset(String, OffsetReset),
}

impl Edit {
    /// What the control or lab calls it, as a Kafka setting where it is one.
    pub fn describe(&self) -> String {
        match self {
            Edit::Brokers(n) => format!("{n} brokers"),
            Edit::Racks(true) => "a rack per broker (broker.rack)".into(),
            Edit::Racks(false) => "no racks".into(),
            Edit::RackAwareSelector(true) => {
                "replica.selector.class=RackAwareReplicaSelector".into()
            }
            Edit::RackAwareSelector(false) => "replica.selector.class: leader only".into(),
            Edit::Partitions(t, n) => format!("{t}: {n} partitions"),
            Edit::ReplicationFactor(t, n) => format!("{t}: replication factor {n}"),
            Edit::MinIsr(t, n) => format!("{t}: min.insync.replicas={n}"),
            Edit::UncleanElection(t, on) => format!("{t}: unclean.leader.election.enable={on}"),
            Edit::EligibleLeaderReplicas(on) => {
                format!("eligible.leader.replicas.version={}", u8::from(*on))
            }
            Edit::Keys(p, keys) => format!("{p}: keys {}", keys_text(keys)),
            Edit::Acks(p, acks) => format!("{p}: acks={}", acks.as_config()),
            Edit::Protocol(g, p) => format!("{g}: group.protocol={}", p.name()),
            Edit::Assignor(g, Some(a)) => format!("{g}: assignor {}", a.name()),
            Edit::Assignor(g, None) => format!("{g}: the protocol's default assignor"),
            Edit::CommitAfterEachBatch(g, true) => format!("{g}: commit after each batch"),
            Edit::CommitAfterEachBatch(g, false) => format!("{g}: auto-commit"),
            Edit::GroupRack(g, Some(r)) => format!("{g}: client.rack={r}"),
            Edit::GroupRack(g, None) => format!("{g}: no client.rack"),
            Edit::Members(g, n) => format!("{g}: {n} members"),
            Edit::AutoOffsetReset(g, reset) => {
                format!(
                    "{g}: auto.offset.reset={}",
                    format!("{reset:?}").to_lowercase()
                )
            }
        }
    }
}

fn keys_text(keys: &Keys) -> String {
    match keys {
        Keys::None => "none (sticky partitioner)".into(),
        Keys::Sequence(prefix) => format!("{prefix}0, {prefix}1, ..."),
        Keys::Fixed(key) => format!("always {key:?}"),
        Keys::Random(n) => format!("{n} random"),
    }
}

/// The rack names [`Edit::Racks`] gives.
pub fn rack_name(broker: u32) -> String {
    format!("rack-{broker}")
}

impl Scenario {
    /// This scenario with `edit` made, or why it cannot be: a refusal names the setting, with
    /// Kafka's reason where Kafka has one. The result passes [`Scenario::validate`].
    pub fn edited(&self, edit: &Edit) -> Result<Scenario, String> {
        let mut s = self.clone();
        let topic = |s: &mut Scenario, name: &str| -> Result<usize, String> {
            s.topic_index(name)
                .ok_or_else(|| format!("no topic named {name:?}"))
        };
        let group = |s: &Scenario, name: &str| -> Result<usize, String> {
            s.consumer_groups
                .iter()
                .position(|g| g.name == name)
                .ok_or_else(|| format!("no consumer group named {name:?}"))
        };
        let producer = |s: &Scenario, name: &str| -> Result<usize, String> {
            s.producer_index(name)
                .ok_or_else(|| format!("no producer named {name:?}"))
        };
        match edit {
            Edit::Brokers(n) => {
                if !(1..=MAX_BROKERS).contains(n) {
                    return Err(format!("{n} brokers: the sandbox has 1 to {MAX_BROKERS}"));
                }
                if let Some(t) = s.topics.iter().find(|t| t.replication_factor > *n) {
                    return Err(format!(
                        "{n} brokers cannot hold topic {}'s {} replicas: lower its replication factor first",
                        t.name, t.replication_factor
                    ));
                }
                s.cluster.brokers = *n;
                // The brokers kept keep their racks; a new one gets a rack of its own.
                if let Some(racks) = s.cluster.broker_racks.as_mut() {
                    racks.truncate(*n as usize);
                    let have = racks.len() as u32;
                    racks.extend((have + 1..=*n).map(rack_name));
                }
                // Replicas are placed anew, as Kafka places a new topic's.
                for t in &mut s.topics {
                    t.assignment = None;
                }
            }
            Edit::Racks(on) => {
                s.cluster.broker_racks =
                    on.then(|| (1..=s.cluster.brokers).map(rack_name).collect());
                for t in &mut s.topics {
                    t.assignment = None;
                }
                // A consumer's rack that no broker has any more is cleared.
                let known = s.cluster.broker_racks.clone().unwrap_or_default();
                for g in &mut s.consumer_groups {
                    if g.rack.as_ref().is_some_and(|r| !known.contains(r)) {
                        g.rack = None;
                    }
                }
            }
            Edit::RackAwareSelector(on) => s.cluster.rack_aware_replica_selector = *on,
            Edit::Partitions(name, n) => {
                let t = topic(&mut s, name)?;
                if !(1..=MAX_PARTITIONS).contains(n) {
                    return Err(format!(
                        "{n} partitions: the sandbox gives a topic 1 to {MAX_PARTITIONS}"
                    ));
                }
                s.topics[t].partitions = *n;
                s.topics[t].assignment = None;
            }
            Edit::ReplicationFactor(name, n) => {
                let t = topic(&mut s, name)?;
                if *n == 0 {
                    return Err("a topic has at least one replica".into());
                }
                if *n > s.cluster.brokers {
                    // `StripedReplicaPlacer.throwInvalidReplicationFactorIfTooFewBrokers`, as
                    // `ReplicationControlManager.createTopic` reports it.
                    return Err(format!(
                        "Unable to replicate the partition {n} time(s): The target replication factor of {n} cannot be reached because only {} broker(s) are registered.",
                        s.cluster.brokers
                    ));
                }
                s.topics[t].replication_factor = *n;
                s.topics[t].assignment = None;
            }
            Edit::MinIsr(name, n) => {
                let t = topic(&mut s, name)?;
                s.topics[t].min_insync_replicas = *n;
            }
            Edit::UncleanElection(name, on) => {
                let t = topic(&mut s, name)?;
                s.topics[t].unclean_leader_election = *on;
            }
            Edit::EligibleLeaderReplicas(on) => s.cluster.eligible_leader_replicas = *on,
            Edit::Keys(name, keys) => {
                let p = producer(&s, name)?;
                s.producers[p].keys = keys.clone();
            }
            Edit::Acks(name, acks) => {
                let p = producer(&s, name)?;
                s.producers[p].acks = *acks;
            }
            Edit::Protocol(name, protocol) => {
                let g = group(&s, name)?;
                let g = &mut s.consumer_groups[g];
                g.protocol = *protocol;
                g.assignor = None;
                g.session_timeout_ms = None;
                g.heartbeat_interval_ms = None;
                g.static_members = false;
            }
            Edit::Assignor(name, assignor) => {
                let g = group(&s, name)?;
                s.consumer_groups[g].assignor = *assignor;
            }
            Edit::CommitAfterEachBatch(name, on) => {
                let g = group(&s, name)?;
                s.consumer_groups[g].commit_after_each_batch = *on;
            }
            Edit::GroupRack(name, rack) => {
                let g = group(&s, name)?;
                s.consumer_groups[g].rack = rack.clone();
            }
            Edit::AutoOffsetReset(name, reset) => {
                let g = group(&s, name)?;
                s.consumer_groups[g].auto_offset_reset = *reset;
            }
            Edit::Members(name, n) => {
                let g = group(&s, name)?;
                if *n > MAX_MEMBERS {
                    return Err(format!(
                        "{n} members: the sandbox gives a group 0 to {MAX_MEMBERS}"
                    ));
                }
                s.consumer_groups[g].members = *n;
            }
        }
        // The description said what the set-up was: it says what it is now.
        s.description = format!(
            "{} (set up anew: {})",
            super::Summary::of(&s),
            edit.describe()
        );
        s.validate(&s.name.clone(), s.duration_ms)
            .map_err(|e| match e {
                super::ScenarioError::Invalid { field, message, .. } => {
                    format!("{field}: {message}")
                }
                other => other.to_string(),
            })?;
        Ok(s)
    }
}
