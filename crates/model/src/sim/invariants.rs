//! Kafka's invariants, checked after every step (on what changed in it). A violation is a bug in
//! the model; each kind is reported once per partition and broker.

use std::collections::BTreeSet;

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::cluster::{Broker, Cluster, Partition, Record, Replica};
use super::consumer::Consumer;
use super::consumer_group::ConsumerGroup;
use super::events::{EventKind, Metrics};
use super::ledger::{AckLedger, send_number};
use super::loss::{Missing, lost_records};
use super::producer::{Producer, producer_name};
use crate::scenario::{Acks, GroupProtocol};

/// At most this many violations are kept.
const KEEP: usize = 100;

/// What the checker remembers of each partition from the previous step.
#[derive(Debug, Clone, Default)]
struct Seen {
    leader: Option<u32>,
    epoch: u32,
    leader_hw: Option<u64>,
    /// ISR and ELR: who could be elected cleanly.
    electable: Vec<u32>,
}

/// How far back the send-order check looks in a new leader's log for each producer's last record.
const ORDER_LOOKBACK: u64 = 4096;

/// What the send-order check knows of one partition's leader log.
#[derive(Debug, Clone, Default)]
struct Order {
    /// The leader replica whose log was checked, and up to which offset.
    replica: Option<Entity>,
    checked: u64,
    /// Each idempotent producer's last record there: (producer, producer epoch, record id).
    last: Vec<(u32, u16, u64)>,
}

impl Order {
    /// Notes a record; returns the id of the producer's later record it follows, if it does.
    fn see(&mut self, record: &Record) -> Option<u64> {
        record.sequence()?;
        let (producer, epoch) = (record.producer(), record.producer_epoch());
        let Some(last) = self.last.iter_mut().find(|l| l.0 == producer) else {
            self.last.push((producer, epoch, record.id()));
            return None;
        };
        let out_of_order = (last.1 == epoch && record.id() <= last.2).then_some(last.2);
        *last = (producer, epoch, record.id());
        out_of_order
    }
}

/// How far each replica's log is known to hold the current leader's records.
#[derive(Debug, Clone, Default)]
struct Agreed {
    /// The leader epoch those offsets are relative to.
    epoch: u32,
    /// Per replica, in assignment order: the offset below which its records are the leader's.
    upto: Vec<u64>,
}

#[derive(Clone, Resource, Debug, Default)]
pub struct Invariants {
    pub violations: Vec<String>,
    /// How many were found, kept or not.
    pub count: u64,
    reported: BTreeSet<(&'static str, usize, u32)>,
    partitions: Vec<Seen>,
    order: Vec<Order>,
    agreed: Vec<Agreed>,
    /// Elections and truncations seen at the last loss check.
    last_changes: (u64, u64),
    /// Each group's committed offsets at the last check, and how many writes they had seen.
    committed: Vec<(u64, std::collections::BTreeMap<u32, u64>)>,
    /// Groups in which a member took partitions this step: their owners are checked.
    owners_changed: Vec<u32>,
    /// (group, partition ordinal) whose committed offset may go back once: a member reset its
    /// position after OFFSET_OUT_OF_RANGE.
    committed_may_go_back: BTreeSet<(u32, u32)>,
    /// Each group's loads by a coordinator at the last check.
    committed_loads: Vec<u64>,
    /// The records appended twice at the last check (`Metrics::duplicate_records`).
    duplicates_seen: u64,
}

impl super::checkpoint::HeapBytes for Invariants {
    fn heap_bytes(&self) -> usize {
        use super::checkpoint::{map_bytes, vec_bytes};
        vec_bytes(&self.violations)
            + vec_bytes(&self.partitions)
            + self
                .partitions
                .iter()
                .map(|p| vec_bytes(&p.electable))
                .sum::<usize>()
            + vec_bytes(&self.order)
            + self.order.iter().map(|o| vec_bytes(&o.last)).sum::<usize>()
            + vec_bytes(&self.agreed)
            + self
                .agreed
                .iter()
                .map(|a| vec_bytes(&a.upto))
                .sum::<usize>()
            + vec_bytes(&self.committed)
            + self
                .committed
                .iter()
                .map(|(_, c)| map_bytes::<u32, u64>(c.len()))
                .sum::<usize>()
    }
}

impl Invariants {
    pub fn new(partitions: usize) -> Self {
        Invariants {
            partitions: vec![Seen::default(); partitions],
            order: vec![Order::default(); partitions],
            agreed: vec![Agreed::default(); partitions],
            ..Default::default()
        }
    }

    /// Makes room for partitions added since (`AddPartitions`).
    pub fn fit(&mut self, partitions: usize) {
        if self.partitions.len() < partitions {
            self.partitions.resize(partitions, Seen::default());
            self.order.resize(partitions, Order::default());
            self.agreed.resize(partitions, Agreed::default());
        }
    }

    /// Each replica entity the checks remember (a restored checkpoint points them at the entities
    /// restored in their place).
    pub fn entities_mut(&mut self, mut f: impl FnMut(&mut Entity)) {
        for order in &mut self.order {
            if let Some(e) = &mut order.replica {
                f(e);
            }
        }
    }

    /// Records a violation (kept once per kind, partition and broker).
    /// A member's position was reset after OFFSET_OUT_OF_RANGE (its partition's log was
    /// truncated below it): the group's committed offset of the partition may go back once.
    pub fn allow_committed_back(&mut self, group: u32, partition: u32) {
        self.committed_may_go_back.insert((group, partition));
    }

    /// A member of the group took partitions: the group's owners are checked at the step's end.
    pub fn owners_changed(&mut self, group: u32) {
        if !self.owners_changed.contains(&group) {
            self.owners_changed.push(group);
        }
    }

    pub fn report(&mut self, kind: &'static str, partition: usize, broker: u32, message: String) {
        self.count += 1;
        if self.reported.insert((kind, partition, broker)) && self.violations.len() < KEEP {
            self.violations.push(message);
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Invariants>();
}

/// A replica's transactions agree with its log: each starts with a transactional record of its
/// producer, and one that ended ends with that producer's marker saying how. A transaction state
/// that a truncation left wrong would hold read_committed readers back at a last stable offset
/// of no open transaction, or let them past an open one. (The last stable offset never passes
/// the high watermark: it is the lower of the two.)
fn txns_disagree(replica: &Replica) -> Option<String> {
    if replica.txns.is_empty() {
        return None;
    }
    // What the log holds at an offset: `Some(None)` below its start, where nothing is left to
    // compare; `None` at or past its end, where no transaction can be.
    let leo = replica.log_end_offset();
    let at = |o: u64| {
        (o < leo).then(|| {
            (o >= replica.log_start_offset)
                .then(|| replica.log.get(o as usize))
                .flatten()
        })
    };
    let mut open: Vec<u32> = replica
        .txns
        .iter()
        .filter(|t| t.end.is_none())
        .map(|t| t.producer)
        .collect();
    open.sort_unstable();
    if let Some(w) = open.windows(2).find(|w| w[0] == w[1]) {
        return Some(format!("producer {} has two transactions open", w[0]));
    }
    for txn in &replica.txns {
        let starts = at(txn.first_offset).is_some_and(|r| {
            r.is_none_or(|r| {
                r.is_transactional() && r.control().is_none() && r.producer() == txn.producer
            })
        });
        let ends = txn.end.is_none_or(|(end, commit)| {
            end > txn.first_offset
                && at(end).is_some_and(|r| {
                    r.is_none_or(|r| r.control() == Some(commit) && r.producer() == txn.producer)
                })
        });
        if !(starts && ends) {
            return Some(format!(
                "its transaction of producer {} from offset {} (ended: {:?}) is not what its log holds",
                txn.producer, txn.first_offset, txn.end
            ));
        }
    }
    None
}

/// The leader epoch cache agrees with the log (`LeaderEpochFileCache`): the first and the last
/// record of each epoch's range (from its start to the next epoch's) are of that epoch, as far as
/// the record's epoch mark tells ([`Record::epoch_mark`]: its epoch's low bits).
/// Truncation to a divergence point reads the cache, so a cache that has lost an epoch, or its
/// real start, truncates too little. Looks only at the ranges' edges.
fn epoch_cache_disagrees(replica: &Replica) -> Option<String> {
    let leo = replica.log_end_offset();
    let mark_at = |o: u64| replica.log.get(o as usize).map(Record::epoch_mark);
    let epochs = &replica.epochs;
    for (i, &(epoch, start)) in epochs.iter().enumerate() {
        let end = epochs.get(i + 1).map_or(leo, |next| next.1).min(leo);
        if start >= end {
            continue;
        }
        // A place compaction emptied holds no record to ask.
        for offset in [start, end - 1]
            .into_iter()
            .filter(|o| !replica.cleaned.is_removed(*o))
        {
            let found = mark_at(offset);
            if found != Some(Record::epoch_mark_of(epoch)) {
                return Some(format!(
                    "the epoch cache puts offset {offset} in epoch {epoch}, the log in one \
                     whose mark is {found:?}"
                ));
            }
        }
    }
    None
}

/// Committed means the same everywhere: every running in-sync follower holds the leader's records
/// below the leader's high watermark (`Partition.maybeIncrementLeaderHW` moves it only over
/// records every ISR member has). Each record is compared once per follower, as the high
/// watermark passes it; across a leader change what was compared carries over (two logs that
/// agree with the old leader's agree with each other), cut back where a log got shorter.
fn check_committed_agree(
    invariants: &mut Invariants,
    now: u64,
    cluster: &Cluster,
    partition: &Partition,
    replicas: &Query<&Replica>,
    views: &[super::cluster::BrokerView],
) {
    let i = partition.ordinal as usize;
    // Each replica looked up once: on the stack for up to eight, as a partition has three or so.
    let mut few = [None; 8];
    let many: Vec<Option<&Replica>>;
    let logs: &[Option<&Replica>] = if partition.replicas.len() <= few.len() {
        for (slot, &r) in few.iter_mut().zip(&partition.replicas) {
            *slot = replicas.get(r).ok();
        }
        &few[..partition.replicas.len()]
    } else {
        many = partition
            .replicas
            .iter()
            .map(|&r| replicas.get(r).ok())
            .collect();
        &many
    };
    let log = |k: usize| logs[k].expect("replica entity");
    let log_end = |k: usize| log(k).log_end_offset();
    let agreed = &mut invariants.agreed[i];
    if agreed.upto.len() != partition.assignment.len() {
        *agreed = Agreed {
            epoch: partition.leader_epoch,
            upto: vec![0; partition.assignment.len()],
        };
    }
    // A truncated or wiped log agrees only as far as it still goes.
    for (k, upto) in agreed.upto.iter_mut().enumerate() {
        *upto = (*upto).min(log_end(k));
    }
    let new_leader = partition.leader.and_then(|b| partition.position(b));
    if agreed.epoch != partition.leader_epoch {
        let carried = new_leader.map_or(0, |k| agreed.upto[k]);
        for upto in &mut agreed.upto {
            *upto = (*upto).min(carried);
        }
        agreed.epoch = partition.leader_epoch;
    }
    let Some(leader_k) = new_leader else {
        return;
    };
    // The leader agrees with itself.
    agreed.upto[leader_k] = log_end(leader_k);
    let leader = log(leader_k);
    let hw = leader.high_watermark;
    let mut found = Vec::new();
    for (k, &broker) in partition.assignment.iter().enumerate() {
        if k == leader_k || !partition.in_isr(broker) || !views[broker as usize].alive {
            continue;
        }
        let follower = log(k);
        let from = agreed.upto[k];
        let to = hw.min(follower.log_end_offset());
        if from >= to {
            continue;
        }
        // Run by run of shared memory: a follower that appended its leader's chunk holds the
        // same records at the same address, and needs no comparing.
        let mut at = from;
        while at < to {
            let l = leader.log.run_at(at as usize);
            let f = follower.log.run_at(at as usize);
            let n = l.len().min(f.len()).min((to - at) as usize);
            if n == 0 {
                break;
            }
            let (l, f) = (&l[..n], &f[..n]);
            // Each replica's cleaner removes on its own: a place either emptied is not compared.
            let kept = |o: u64| !leader.cleaned.is_removed(o) && !follower.cleaned.is_removed(o);
            if !std::ptr::eq(l, f)
                && let Some(j) = l
                    .iter()
                    .zip(f)
                    .zip(at..)
                    .position(|((l, f), o)| l.id() != f.id() && kept(o))
            {
                found.push((broker, at + j as u64, l[j].id(), f[j].id()));
                break;
            }
            at += n as u64;
        }
        agreed.upto[k] = to;
    }
    if found.is_empty() {
        return;
    }
    let name = cluster.partition_name(partition);
    for (broker, offset, leader_id, follower_id) in found {
        invariants.report(
            "committed-differs",
            i,
            broker,
            format!(
                "{now} ms: {name}: in-sync broker {broker} holds record #{} at offset {offset}, below the high watermark {hw}, where leader {} holds #{}",
                send_number(follower_id),
                partition.leader.unwrap_or(0),
                send_number(leader_id)
            ),
        );
    }
}

/// An idempotent producer's records of one epoch are in its leader's log in the order it sent
/// them, once each: Kafka's ordering guarantee with up to 5 requests in flight. Checked on what
/// each leader appends; a new leader's log is read back a little to find where each producer was.
fn check_send_order(
    invariants: &mut Invariants,
    now: u64,
    cluster: &Cluster,
    partition: &Partition,
    producers: &Query<&Producer>,
    leader: Entity,
    replica: &Replica,
) {
    let i = partition.ordinal as usize;
    let leo = replica.log_end_offset();
    let order = &mut invariants.order[i];
    if order.replica != Some(leader) || leo < order.checked {
        // A new leader (or a truncated log): read its latest records to learn where each
        // producer is, without judging them.
        *order = Order {
            replica: Some(leader),
            checked: leo,
            last: Vec::new(),
        };
        let from = leo.saturating_sub(ORDER_LOOKBACK) as usize;
        for record in replica.log.iter_from(from) {
            if !record.is_placeholder() {
                order.see(record);
            }
        }
        return;
    }
    if leo == order.checked {
        return;
    }
    let mut found = Vec::new();
    // Retention may have moved the log start past where the check had reached.
    let checked = order.checked.max(replica.log.front() as u64);
    for (offset, record) in (checked..).zip(replica.log.iter_from(checked as usize)) {
        if record.is_placeholder() {
            continue;
        }
        if let Some(later) = order.see(record) {
            found.push((record.producer(), offset, record.id(), later));
        }
    }
    order.checked = leo;
    if found.is_empty() {
        return;
    }
    let partition = cluster.partition_name(partition);
    for (producer, offset, id, later) in found {
        let name = producer_name(cluster, producers, producer);
        invariants.report(
            "send-order",
            i,
            replica.broker,
            format!(
                "{now} ms: {partition} on broker {}: producer {name}'s record #{} is at offset {offset}, after its record #{} sent later (idempotence keeps send order)",
                replica.broker,
                send_number(id),
                send_number(later)
            ),
        );
    }
}

/// Only an election or a truncation can lose an acknowledged record: the loss check skips the
/// steps without one.
pub(super) fn elections_or_truncations(metrics: &Metrics, invariants: &Invariants) -> bool {
    (metrics.leader_elections, metrics.records_truncated) != invariants.last_changes
}

/// The checks of Kafka's invariants, with what they read for one step.
#[derive(SystemParam)]
pub(super) struct ChecksPhase<'w, 's> {
    runtime: Res<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    ledger: Res<'w, AckLedger>,
    invariants: ResMut<'w, Invariants>,
    brokers: Query<'w, 's, &'static Broker>,
    partitions: Query<'w, 's, &'static Partition>,
    replicas: Query<'w, 's, &'static Replica>,
    producers: Query<'w, 's, &'static Producer>,
    changed_partitions: Query<'w, 's, Entity, Changed<Partition>>,
    changed_replicas: Query<'w, 's, &'static Replica, Changed<Replica>>,
    groups: Query<'w, 's, &'static ConsumerGroup>,
    consumers: Query<'w, 's, &'static Consumer>,
    /// The partitions touched since the last step, kept between steps.
    touched: Local<'s, Vec<Entity>>,
}

/// The checks' phase: what changed this step, the acknowledged records after an election or a
/// truncation, and the groups' offsets and owners.
pub(super) fn phase(mut rules: ChecksPhase) {
    let partitions = rules.cluster.partitions.len();
    rules.invariants.fit(partitions);
    rules.check();
    if rules.runtime.metrics.duplicate_records != rules.invariants.duplicates_seen {
        rules.check_idempotent_duplicates();
    }
    if elections_or_truncations(&rules.runtime.metrics, &rules.invariants) {
        rules.check_no_safe_loss();
    }
    if !rules.cluster.groups.is_empty() {
        rules.check_committed_offsets();
        rules.check_single_owner();
    }
}

impl ChecksPhase<'_, '_> {
    /// An idempotent producer's batch is never in a leader's log twice within one producer
    /// epoch: the leader recognises a retry by its sequence numbers (`ProducerStateManager`). Read
    /// from the log at both copies of each batch appended again at this step. A batch renumbered
    /// in a new epoch (KIP-360) may be written again, as in Kafka.
    fn check_idempotent_duplicates(&mut self) {
        let Self {
            runtime,
            cluster,
            invariants,
            partitions,
            replicas,
            ..
        } = self;
        let Runtime {
            clock,
            events,
            metrics,
            ..
        } = &**runtime;
        let now = clock.now_ms;
        invariants.duplicates_seen = metrics.duplicate_records;
        let appended_now = events.events.iter().rev().take_while(|e| e.at_ms == now);
        for event in appended_now {
            let EventKind::DuplicateAppended {
                producer,
                topic,
                partition,
                broker,
                offset,
                first_offset,
                ..
            } = &event.kind
            else {
                continue;
            };
            let Some(entity) = cluster
                .topics
                .iter()
                .find(|t| t.name == *topic)
                .and_then(|t| t.partitions.get(*partition as usize))
            else {
                continue;
            };
            let p = partitions.get(*entity).expect("partition entity");
            let Some(replica) = p.replica_on(*broker).and_then(|r| replicas.get(r).ok()) else {
                continue;
            };
            let at = |o: u64| replica.log.get(o as usize).copied();
            let (Some(copy), Some(first)) = (at(*offset), at(*first_offset)) else {
                continue;
            };
            let same_batch = copy.id() == first.id();
            if same_batch
                && copy.sequence().is_some()
                && copy.producer_epoch() == first.producer_epoch()
            {
                invariants.report(
                    "idempotent-duplicate",
                    p.ordinal as usize,
                    *broker,
                    format!(
                        "{now} ms: {} on broker {broker}: producer {producer}'s batch at offset {offset} repeats the one at {first_offset} in producer epoch {} (an idempotent producer never writes a batch twice)",
                        cluster.partition_name(p),
                        copy.producer_epoch()
                    ),
                );
            }
        }
    }

    fn check(&mut self) {
        let Self {
            runtime,
            cluster,
            invariants,
            changed_partitions,
            changed_replicas,
            brokers,
            partitions,
            replicas,
            producers,
            touched,
            ..
        } = self;
        let Runtime { clock, views, .. } = &**runtime;
        let now = clock.now_ms;
        let views = views.checked(brokers.iter());
        let name = |p: &Partition| cluster.partition_name(p);
        touched.clear();
        touched.extend(changed_partitions.iter());
        for replica in changed_replicas {
            touched.push(replica.partition);
            if replica.log_start_offset > replica.high_watermark {
                let p = partitions.get(replica.partition).expect("partition entity");
                invariants.report(
                    "log-start-above-hw",
                    p.ordinal as usize,
                    replica.broker,
                    format!(
                        "{now} ms: {} on broker {}: log start offset {} above the high watermark {}",
                        name(p),
                        replica.broker,
                        replica.log_start_offset,
                        replica.high_watermark
                    ),
                );
            }
            if replica.high_watermark > replica.log_end_offset() {
                let p = partitions.get(replica.partition).expect("partition entity");
                invariants.report(
                    "hw-above-leo",
                    p.ordinal as usize,
                    replica.broker,
                    format!(
                        "{now} ms: {} on broker {}: high watermark {} above log end offset {}",
                        name(p),
                        replica.broker,
                        replica.high_watermark,
                        replica.log_end_offset()
                    ),
                );
            }
            // What a replica keeps beside its log agrees with its log.
            let beside_log: [(&str, fn(&Replica) -> Option<String>); 2] = [
                ("epoch-cache-off-log", epoch_cache_disagrees),
                ("txns-off-log", txns_disagree),
            ];
            for (kind, disagrees) in beside_log {
                if let Some(why) = disagrees(replica) {
                    let p = partitions.get(replica.partition).expect("partition entity");
                    invariants.report(
                        kind,
                        p.ordinal as usize,
                        replica.broker,
                        format!("{now} ms: {} on broker {}: {why}", name(p), replica.broker),
                    );
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for &entity in touched.iter() {
            let p = partitions.get(entity).expect("partition entity");
            let i = p.ordinal as usize;
            for broker in p.isr.iter().chain(&p.elr) {
                if !p.assignment.contains(broker) {
                    invariants.report(
                        "isr-outside-replicas",
                        i,
                        *broker,
                        format!(
                            "{now} ms: {}: ISR or ELR member {broker} is not a replica",
                            name(p)
                        ),
                    );
                }
            }
            // Taken out and put back, so that the step allocates nothing for it.
            let mut seen = std::mem::take(&mut invariants.partitions[i]);
            if p.leader_epoch < seen.epoch {
                invariants.report(
                    "epoch-backwards",
                    i,
                    0,
                    format!(
                        "{now} ms: {}: leader epoch went back from {} to {}",
                        name(p),
                        seen.epoch,
                        p.leader_epoch
                    ),
                );
            }
            if p.leader_epoch == seen.epoch && p.leader != seen.leader && seen.leader.is_some() {
                invariants.report(
                    "two-leaders-one-epoch",
                    i,
                    p.leader.unwrap_or(0),
                    format!(
                        "{now} ms: {}: brokers {:?} and {:?} both led in epoch {}",
                        name(p),
                        seen.leader,
                        p.leader,
                        p.leader_epoch
                    ),
                );
            }
            if let Some(leader) = p.leader
                && p.leader_epoch != seen.epoch
                && !p.elected_uncleanly
                && !seen.electable.contains(&leader)
            {
                invariants.report(
                "clean-leader-outside-isr",
                i,
                leader,
                format!(
                    "{now} ms: {}: broker {leader} was elected cleanly in epoch {} without being in the ISR {:?}",
                    name(p),
                    p.leader_epoch,
                    seen.electable
                ),
            );
            }
            // A dead leader's process keeps nothing in memory (and a wiped one has no disk either).
            let leader_hw = p
                .leader_replica()
                .filter(|_| p.leader.is_some_and(|l| views[l as usize].alive))
                .map(|e| replicas.get(e).expect("replica").high_watermark);
            if let (Some(hw), Some(last)) = (leader_hw, seen.leader_hw)
                && p.leader_epoch == seen.epoch
                && hw < last
            {
                invariants.report(
                "leader-hw-backwards",
                i,
                p.leader.unwrap_or(0),
                format!(
                    "{now} ms: {}: the leader's high watermark moved back from {last} to {hw} in epoch {}",
                    name(p),
                    p.leader_epoch
                ),
            );
            }
            seen.leader = p.leader;
            seen.epoch = p.leader_epoch;
            seen.leader_hw = leader_hw;
            seen.electable.clear();
            seen.electable.extend(p.isr.iter().chain(&p.elr));
            invariants.partitions[i] = seen;
            check_committed_agree(invariants, now, cluster, p, replicas, views);
            if let Some(leader) = p.leader_replica() {
                let replica = replicas.get(leader).expect("replica entity");
                check_send_order(invariants, now, cluster, p, producers, leader, replica);
            }
        }
    }

    /// With acks=all, `min.insync.replicas` >= 2, unclean election off and no disk lost, Kafka loses
    /// no acknowledged record. Checked whenever a leader changed or a log was truncated.
    fn check_no_safe_loss(&mut self) {
        let Self {
            runtime,
            cluster,
            ledger,
            invariants,
            partitions,
            replicas,
            producers,
            ..
        } = self;
        let Runtime { clock, metrics, .. } = &**runtime;
        let changes = (metrics.leader_elections, metrics.records_truncated);
        if changes == invariants.last_changes || ledger.disk_lost {
            return;
        }
        invariants.last_changes = changes;
        // A replica on a broker that is down still holds what it had: not a loss.
        let lost = lost_records(ledger, cluster, producers, partitions, replicas, &|_| true);
        for record in lost.iter().filter(|r| r.acks == Acks::All) {
            let entity = cluster
                .topics
                .iter()
                .find(|t| t.name == record.topic)
                .map(|t| t.partitions[record.partition as usize]);
            let Some(p) = entity.and_then(|e| partitions.get(e).ok()) else {
                continue;
            };
            // Offline with the record still on a replica that may not lead (unavailable, not lost):
            // KIP-966 takes a replica that shut down uncleanly out of the ELR, as it may have lost
            // what it had not flushed. Kafka keeps such a partition offline rather than risk a loss;
            // the record comes back only with an unclean election, and its safety is not promised.
            if record.state == Missing::Unavailable {
                continue;
            }
            if p.effective_min_isr() >= 2 && !p.unclean_leader_election {
                invariants.report(
                "safe-write-lost",
                p.ordinal as usize,
                0,
                format!(
                    "{} ms: {}-{}: acknowledged record at offset {:?} lost with acks=all, min.insync.replicas {} and clean elections ({})",
                    clock.now_ms, record.topic, record.partition, record.offset, p.min_insync_replicas, record.why
                ),
            );
            }
        }
    }

    /// A group's committed offset of a partition never goes backward, except once after a member
    /// reset its position on OFFSET_OUT_OF_RANGE (the consumers in the model never seek; Kafka lets a
    /// reset commit take the offset back), and when a new coordinator loads the group: it serves
    /// the offsets as of its own high watermark, which may trail the old leader's by a fetch
    /// (`CoordinatorLoaderImpl` sets the last committed offset to it) until its followers fetch.
    fn check_committed_offsets(&mut self) {
        let Self {
            runtime,
            cluster,
            invariants,
            groups,
            ..
        } = self;
        let Runtime { clock, .. } = &**runtime;
        if invariants.committed.len() < cluster.groups.len() {
            invariants
                .committed
                .resize(cluster.groups.len(), Default::default());
        }
        for group in groups {
            let g = group.index as usize;
            // Only a write can move a committed offset.
            if invariants.committed[g].0 == group.committed_writes() {
                continue;
            }
            if invariants.committed_loads.len() <= g {
                invariants.committed_loads.resize(g + 1, 0);
            }
            let loaded =
                std::mem::replace(&mut invariants.committed_loads[g], group.loads) != group.loads;
            for (ordinal, offset) in group.committed() {
                let before = invariants.committed[g].1.get(ordinal).copied();
                if let Some(before) = before.filter(|b| offset < b) {
                    if loaded
                        || invariants
                            .committed_may_go_back
                            .remove(&(group.index, *ordinal))
                    {
                        continue;
                    }
                    invariants.report(
                    "committed-backwards",
                    *ordinal as usize,
                    group.index,
                    format!(
                        "{} ms: group {}: the committed offset of partition #{ordinal} went back from {before} to {offset}",
                        clock.now_ms, group.name
                    ),
                );
                }
            }
            let (writes, saved) = &mut invariants.committed[g];
            *writes = group.committed_writes();
            // In place when the partitions are the same ones, as they nearly always are.
            if saved.keys().eq(group.committed().keys()) {
                for (saved, offset) in saved.values_mut().zip(group.committed().values()) {
                    *saved = *offset;
                }
            } else {
                *saved = group.committed().clone();
            }
        }
    }

    /// Within a group, a partition has at most one owner among the members its coordinator counts;
    /// a classic member counts only at the group's generation. A member the coordinator removed may
    /// go on holding partitions until it learns so, as in Kafka: its commits are then refused
    /// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID), so it is left out.
    fn check_single_owner(&mut self) {
        let Self {
            runtime,
            cluster,
            invariants,
            groups,
            consumers,
            ..
        } = self;
        let Runtime { clock, .. } = &**runtime;
        let changed = std::mem::take(&mut invariants.owners_changed);
        for g in changed {
            let group = groups
                .get(cluster.groups[g as usize])
                .expect("group entity");
            let classic = group.config.protocol == GroupProtocol::Classic;
            let mut owner: std::collections::BTreeMap<u32, &str> = Default::default();
            for c in consumers.iter_many(&cluster.consumers) {
                let counted = c.alive
                    && c.group == g
                    && group.members.iter().any(|m| m.id == c.member_id)
                    && (!classic || c.generation == group.generation);
                if !counted {
                    continue;
                }
                for o in c.assigned.keys() {
                    if let Some(other) = owner.insert(*o, &c.member_id) {
                        invariants.report(
                            "two-owners",
                            *o as usize,
                            g,
                            format!(
                                "{} ms: group {}: partition #{o} is owned by both {other} and {}",
                                clock.now_ms, group.name, c.member_id
                            ),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Producer `producer`'s `send`th record, alone in its batch.
    fn record(producer: u32, producer_epoch: u16, send: u64, sequence: i32) -> Record {
        let id = crate::sim::ledger::record_id(producer, send);
        let sequence = (sequence >= 0).then_some(sequence);
        let key = crate::sim::keys::Key::NONE;
        Record::produced(id, key, 0, sequence, producer_epoch, 0, 100)
    }

    #[test]
    fn a_transaction_state_that_differs_from_the_log_is_found() {
        use super::super::cluster::Txn;
        use super::super::segments::LogConfig;
        let config = LogConfig::default();
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        let produced = |send: u64| {
            Record::produced(
                super::super::ledger::record_id(2, send),
                super::super::keys::Key::NONE,
                0,
                Some(send as i32),
                0,
                0,
                10,
            )
            .in_transaction()
        };
        replica.append([produced(0), produced(1)], 0, &config, 0, 0);
        replica.append([Record::marker(2, 0, false, 0)], 0, &config, 0, 0);
        replica.high_watermark = 3;
        assert_eq!(txns_disagree(&replica), None);
        // A marker remembered as a commit where the log aborted.
        let kept = replica.txns.clone();
        replica.txns[0].end = Some((2, true));
        assert!(txns_disagree(&replica).is_some());
        // A transaction said to start where its producer wrote nothing transactional.
        replica.txns = kept;
        replica.txns.push(Txn {
            producer: 5,
            first_offset: 1,
            end: None,
        });
        assert!(txns_disagree(&replica).is_some());
        // Two open at once for one producer.
        replica.txns.pop();
        replica.txns.push(Txn {
            producer: 2,
            first_offset: 0,
            end: None,
        });
        replica.txns.push(Txn {
            producer: 2,
            first_offset: 1,
            end: None,
        });
        assert!(txns_disagree(&replica).is_some_and(|why| why.contains("two transactions")));
        replica.txns.truncate(1);
        // One left past the log's end by a truncation that forgot it.
        replica.txns.push(Txn {
            producer: 2,
            first_offset: 3,
            end: None,
        });
        assert!(txns_disagree(&replica).is_some());
    }

    #[test]
    fn the_send_order_check_finds_a_record_behind_a_later_one_of_its_epoch() {
        let mut order = Order::default();
        assert_eq!(order.see(&record(0, 0, 10, 0)), None);
        assert_eq!(
            order.see(&record(1, 0, 5, 0)),
            None,
            "other producers keep their own order"
        );
        assert_eq!(order.see(&record(0, 0, 11, 1)), None);
        assert_eq!(
            order.see(&record(0, 0, 9, 2)),
            Some(11),
            "sent before its predecessor"
        );
        assert_eq!(order.see(&record(0, 0, 9, 3)), Some(9), "written twice");
        // A new epoch may repeat what the old one wrote (its answer was lost before the bump).
        assert_eq!(order.see(&record(0, 1, 8, 0)), None);
        // Records without a sequence (no idempotence) have no order to keep.
        assert_eq!(order.see(&record(0, 1, 1, -1)), None);
    }
}
