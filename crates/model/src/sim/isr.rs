//! The in-sync replica set and the high watermark, as the leader keeps them.
//!
//! - Expand (`Partition.maybeExpandIsr`, called as the leader handles a follower's fetch): a
//!   follower that fetched at or past the leader's high watermark and the start of the leader's
//!   epoch rejoins.
//! - Shrink (`Partition.maybeShrinkIsr`, run every `replica.lag.time.max.ms / 2` by
//!   `ReplicaManager`'s `isr-expiration` task): a follower that is not at the leader's log end and
//!   has not been caught up for `replica.lag.time.max.ms` leaves.
//! - High watermark (`Partition.maybeIncrementLeaderHW`): recomputed after a step's appends,
//!   fetches and ISR changes, for the partitions they touched. Kafka does it on each of those
//!   events; the instants agree except when a caught-up follower outside the ISR stops counting
//!   as its lag time runs out, where the model moves the high watermark at once and Kafka at the
//!   next event.

use std::collections::BTreeSet;

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::clock::Standing;
use super::cluster::{Broker, BrokerView, Cluster, FollowerStates, Partition, Replica};
use super::events::EventKind;
use super::network::{Network, Node};
use super::{SimClock, Wake};

/// The leader's partitions whose leader's process runs (a dead broker does nothing).
fn led_by_live(partition: &Partition, brokers: &[BrokerView]) -> bool {
    partition.leader.is_some_and(|l| brokers[l as usize].alive)
}

/// An ISR change is an AlterPartition request the controller must commit
/// (`AlterPartitionManager`): a leader cut off from the controller cannot change its ISR.
fn can_alter_partition(partition: &Partition, network: &Network) -> bool {
    partition
        .leader
        .is_some_and(|l| !network.is_cut(Node::Broker(l), Node::Controller))
}

/// The ISR check is periodic: the steps between checks skip it.
pub(super) fn isr_check_due(clock: &SimClock, wake: &Wake) -> bool {
    wake.due(Standing::IsrCheck, clock)
}

/// What can move a partition's high watermark: its own state (the followers' fetch offsets, the
/// ISR, the leader), its leader's log, the brokers' states, and time, when a follower outside the
/// ISR stops counting as caught up. A partition none of these touched since the last step keeps
/// its high watermark and is not looked at (debug builds check that it would not move).
#[derive(Default)]
pub(super) struct HighWatermarks {
    /// The partitions' entities when last seen: a restored checkpoint has others, and then every
    /// partition is looked at afresh.
    partitions: Vec<Entity>,
    views: Vec<BrokerView>,
    /// (instant, partition ordinal) at which a follower outside the ISR stops counting as caught
    /// up, and each partition's such instants.
    lapses: BTreeSet<(u64, u32)>,
    lapses_of: Vec<Vec<u64>>,
    /// Scratch: the ordinals to look at this step.
    due: Vec<u32>,
}

/// When each follower outside the ISR that still counts as caught up stops counting.
fn lapses<'a>(
    partition: &'a Partition,
    followers: &'a FollowerStates,
    leader_leo: u64,
    now: u64,
    lag_max: u64,
) -> impl Iterator<Item = u64> + 'a {
    partition
        .assignment
        .iter()
        .zip(&followers.0)
        .filter_map(move |(broker, f)| {
            let t = f.last_caught_up_ms.filter(|t| t + lag_max >= now)?;
            (Some(*broker) != partition.leader
                && !partition.in_isr(*broker)
                && f.log_end_offset < leader_leo)
                .then_some(t + lag_max + 1)
        })
}

/// The ISR phase's rules, with what they borrow for one step.
#[derive(SystemParam)]
pub(super) struct IsrPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    brokers: Query<'w, 's, &'static Broker>,
    /// With what each leader knows of its followers, as the replication phase left it.
    partitions: Query<'w, 's, (Entity, &'static mut Partition, Ref<'static, FollowerStates>)>,
    replicas: Query<'w, 's, &'static mut Replica>,
    watch: Local<'s, HighWatermarks>,
    /// Scratch: (ordinal, entity) of the partitions a follower fetched at this step.
    fetched: Local<'s, Vec<(u32, Entity)>>,
}

/// The ISR phase: expansion, the periodic shrink, and the high watermarks they move.
pub(super) fn phase(mut rules: IsrPhase) {
    rules.expand_isr();
    // The ISR check is periodic: the steps between checks skip it.
    if isr_check_due(&rules.runtime.clock, &rules.runtime.wake) {
        rules.shrink_isr();
    }
    rules.advance_high_watermarks();
}

impl IsrPhase<'_, '_> {
    fn expand_isr(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            fetched,
            ..
        } = self;
        let Runtime {
            clock,
            wake,
            events,
            metrics,
            network,
            views,
            ..
        } = &mut **runtime;
        let replicas = &replicas.as_readonly();
        let views = views.checked(brokers.iter());
        // Only a partition a follower fetched now can take it back: its states changed since the
        // phase last ran. In partition order, so that the events keep the order they had when
        // every partition was looked at.
        fetched.clear();
        fetched.extend(
            partitions
                .iter()
                .filter(|(_, _, f)| {
                    f.is_changed() && f.0.iter().any(|f| f.fetched_at(clock.now_ms))
                })
                .map(|(entity, p, _)| (p.ordinal, entity)),
        );
        fetched.sort_unstable();
        for &(_, entity) in fetched.iter() {
            let (_, mut partition, states) = partitions.get_mut(entity).expect("partition entity");
            if !can_alter_partition(&partition, network) {
                continue;
            }
            let Some(leader) = partition.leader_replica() else {
                continue;
            };
            let leader = replicas.get(leader).expect("replica entity");
            let epoch_start = leader
                .epoch_start(partition.leader_epoch)
                .unwrap_or(leader.log_end_offset());
            let joining: Vec<u32> = partition
                .assignment
                .iter()
                .zip(&states.0)
                .filter(|(b, f)| {
                    !partition.in_isr(**b)
                        && views[**b as usize].eligible
                        && f.fetched_at(clock.now_ms)
                        && f.log_end_offset >= leader.high_watermark
                        && f.log_end_offset >= epoch_start
                })
                .map(|(b, _)| *b)
                .collect();
            if joining.is_empty() {
                continue;
            }
            partition.isr.extend(&joining);
            partition.sort_isr();
            // The controller takes the AlterPartition and may complete a reassignment.
            if partition.reassignment.is_some() {
                wake.standing_at(Standing::Controller, clock.now_ms + 1);
            }
            partition.elr.retain(|b| !joining.contains(b));
            // KIP-966: with the ISR back at min.insync.replicas, the ELR is no longer needed.
            if partition.isr.len() >= partition.effective_min_isr() {
                partition.elr.clear();
            }
            metrics.isr_expands += 1;
            events.push(
                clock.now_ms,
                EventKind::IsrExpand {
                    topic: cluster.topics[partition.topic].name.clone(),
                    partition: partition.index,
                    isr: partition.isr.clone(),
                    added: joining,
                },
            );
        }
    }

    fn shrink_isr(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            ..
        } = self;
        let Runtime {
            clock,
            events,
            metrics,
            network,
            wake,
            views,
            ..
        } = &mut **runtime;
        let replicas = &replicas.as_readonly();
        let lag_max = cluster.config.replica_lag_time_max_ms;
        let period = lag_max / 2;
        let now = clock.now_ms;
        wake.clear(Standing::IsrCheck);
        wake.standing_at(Standing::IsrCheck, (now / period + 1) * period);
        if now == 0 || !now.is_multiple_of(period) {
            return;
        }
        let views = views.checked(brokers.iter());
        for &entity in &cluster.partitions {
            let (_, mut partition, states) = partitions.get_mut(entity).expect("partition entity");
            if !led_by_live(&partition, views) || !can_alter_partition(&partition, network) {
                continue;
            }
            let (Some(leader_id), Some(leader)) = (partition.leader, partition.leader_replica())
            else {
                continue;
            };
            let leader_leo = replicas
                .get(leader)
                .expect("replica entity")
                .log_end_offset();
            let out_of_sync: Vec<u32> = partition
                .assignment
                .iter()
                .zip(&states.0)
                .filter(|(b, f)| {
                    **b != leader_id
                        && partition.in_isr(**b)
                        && !f.is_caught_up(leader_leo, now, lag_max)
                })
                .map(|(b, _)| *b)
                .collect();
            if out_of_sync.is_empty() {
                continue;
            }
            partition.isr.retain(|b| !out_of_sync.contains(b));
            // KIP-966: members that leave while the ISR is below min.insync.replicas stay electable.
            if cluster.config.eligible_leader_replicas
                && partition.isr.len() < partition.effective_min_isr()
            {
                partition.elr.extend(&out_of_sync);
                partition.elr.sort_unstable();
            }
            metrics.isr_shrinks += 1;
            events.push(
                now,
                EventKind::IsrShrink {
                    topic: cluster.topics[partition.topic].name.clone(),
                    partition: partition.index,
                    isr: partition.isr.clone(),
                    removed: out_of_sync,
                },
            );
        }
    }

    fn advance_high_watermarks(&mut self) {
        let Self {
            runtime,
            cluster,
            brokers,
            partitions,
            replicas,
            watch,
            ..
        } = self;
        let Runtime {
            clock, wake, views, ..
        } = &mut **runtime;
        let watch = &mut **watch;
        let now = clock.now_ms;
        let lag_max = cluster.config.replica_lag_time_max_ms;
        let views = views.checked(brokers.iter());
        let everything = watch.partitions != cluster.partitions || *watch.views != **views;
        if watch.partitions != cluster.partitions {
            watch.partitions = cluster.partitions.clone();
            watch.lapses.clear();
            watch.lapses_of = vec![Vec::new(); cluster.partitions.len()];
        }
        if *watch.views != **views {
            watch.views = views.to_vec();
        }
        watch.due.clear();
        if everything {
            watch.due.extend(0..cluster.partitions.len() as u32);
        } else {
            // Changed since the phase last ran (looking through `iter_mut` marks nothing).
            watch.due.extend(
                partitions
                    .iter_mut()
                    .filter(|(_, p, f)| p.is_changed() || f.is_changed())
                    .map(|(_, p, _)| p.ordinal),
            );
            for replica in replicas.iter_mut().filter(|r| r.is_changed()) {
                let (_, partition, _) =
                    partitions.get(replica.partition).expect("partition entity");
                watch.due.push(partition.ordinal);
            }
            while let Some(&(at, ordinal)) = watch.lapses.first()
                && at <= now
            {
                watch.lapses.pop_first();
                watch.due.push(ordinal);
            }
            watch.due.sort_unstable();
            watch.due.dedup();
        }
        #[cfg(debug_assertions)]
        let mut looked = vec![everything; cluster.partitions.len()];
        for &ordinal in &watch.due {
            #[cfg(debug_assertions)]
            {
                looked[ordinal as usize] = true;
            }
            let (_, partition, states) = partitions
                .get(cluster.partitions[ordinal as usize])
                .expect("partition entity");
            for at in watch.lapses_of[ordinal as usize].drain(..) {
                watch.lapses.remove(&(at, ordinal));
            }
            let Some(leader) = partition
                .leader_replica()
                .filter(|_| led_by_live(partition, views))
            else {
                continue;
            };
            let mut leader = replicas.get_mut(leader).expect("replica entity");
            // Read first: only a real change marks the replica changed.
            if let Some(hw) = partition.next_leader_hw(&states, &leader, views, now, lag_max) {
                leader.high_watermark = hw;
            }
            // A follower outside the ISR holds the high watermark back only while it is caught up
            // within the lag time: when that runs out, the high watermark may move with no message.
            let leader_leo = leader.log_end_offset();
            for at in lapses(partition, &states, leader_leo, now, lag_max) {
                watch.lapses.insert((at, ordinal));
                watch.lapses_of[ordinal as usize].push(at);
            }
        }
        if let Some(&(at, _)) = watch.lapses.first() {
            wake.at(at);
        }
        #[cfg(debug_assertions)]
        for (ordinal, &entity) in cluster.partitions.iter().enumerate() {
            if looked[ordinal] {
                continue;
            }
            let (_, partition, states) = partitions.get(entity).expect("partition entity");
            let Some(leader) = partition
                .leader_replica()
                .filter(|_| led_by_live(partition, views))
            else {
                continue;
            };
            let leader = replicas.get(leader).expect("replica entity");
            debug_assert_eq!(
                partition.next_leader_hw(&states, leader, views, now, lag_max),
                None,
                "partition {ordinal}'s high watermark moved unwatched"
            );
            let mut expected: Vec<u64> =
                lapses(partition, &states, leader.log_end_offset(), now, lag_max).collect();
            let mut kept = watch.lapses_of[ordinal].clone();
            expected.sort_unstable();
            kept.sort_unstable();
            debug_assert_eq!(expected, kept, "partition {ordinal}'s lapses");
        }
    }
}
