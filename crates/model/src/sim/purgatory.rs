//! Requests a leader holds until they can finish (`DelayedOperationPurgatory`): acks=all
//! produces waiting for the high watermark (`DelayedProduce`, in `leader.rs`), follower fetches
//! waiting for data (`DelayedFetch`, in `replication.rs`), and consumer fetches waiting for the
//! high watermark (in `reads.rs`). Each is looked at again only when what it waits on changed or
//! its wait ran out.

use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::cluster::{Broker, BrokerViews, Cluster, Partition, Replica};
use super::protocol::{Answers, ConsumerFetch};

/// What the delayed phase's rules borrow for one step. The rules live beside the requests they
/// finish; the changes they watch come from Bevy's change detection since this phase last ran.
#[derive(SystemParam)]
pub(super) struct DelayedPhase<'w, 's> {
    pub(super) runtime: ResMut<'w, Runtime>,
    pub(super) cluster: Res<'w, Cluster>,
    pub(super) brokers: Query<'w, 's, &'static Broker>,
    pub(super) partitions: Query<'w, 's, &'static Partition>,
    pub(super) replicas: Query<'w, 's, &'static Replica>,
    pub(super) changed_partitions: Query<'w, 's, Entity, Changed<Partition>>,
    pub(super) changed_replicas: Query<'w, 's, (Entity, &'static Replica), Changed<Replica>>,
    /// Kept between steps, so that a step allocates little: the requests due now,
    pub(super) due: Local<'s, Vec<u64>>,
    /// consumer fetches arriving now,
    pub(super) arriving: Local<'s, Vec<u64>>,
    /// the partitions touched since the last step, with the broker whose replica changed or
    /// `None` for the partition itself (each rule fills it afresh),
    pub(super) touched: Local<'s, Vec<(Entity, Option<u32>)>>,
    /// a follower fetch's answers,
    pub(super) answers: Local<'s, Answers>,
    /// how far each broker had applied the metadata log when the phase last ran,
    pub(super) applied: Local<'s, Applied>,
    /// and where each replica's log ended.
    pub(super) log_ends: Local<'s, LogEnds>,
}

/// Where each replica's log ended, with its latest epoch, and its high watermark, when the
/// delayed phase last looked.
/// - A replica whose high watermark alone moved since has nothing new for a follower's held
///   fetch: `DelayedFetch.tryComplete` reads a follower's fetch up to the log end, so only new
///   records, a new epoch (a divergence) or a change of leadership can complete it.
/// - A replica whose log only grew has nothing new for a consumer's held fetch: that one waits at
///   or above the high watermark and within the log, so only a new high watermark, a log cut back
///   below it or a change of leadership can complete it.
///
/// A restored checkpoint has other entities: then every replica counts as moved.
#[derive(Default)]
pub(super) struct LogEnds {
    partitions: Vec<Entity>,
    ends: EntityHashMap<ReplicaEnd>,
    /// Scratch: (partition, broker) of the replicas whose log moved since,
    pub(super) moved: Vec<(Entity, Option<u32>)>,
    /// and of those whose high watermark moved or whose log was cut back.
    pub(super) readable: Vec<(Entity, Option<u32>)>,
}

/// A replica's log end offset, how many epochs it holds and the last of them, and its high
/// watermark.
type ReplicaEnd = ((u64, usize, Option<(u32, u64)>), u64);

impl LogEnds {
    /// Notes the log ends and high watermarks of the replicas that changed, and lists in `moved`
    /// those whose log moved and in `readable` those whose high watermark moved or log shrank.
    pub(super) fn update<'a>(
        &mut self,
        cluster: &Cluster,
        changed: impl Iterator<Item = (Entity, &'a Replica)>,
    ) {
        if self.partitions != cluster.partitions {
            self.partitions = cluster.partitions.clone();
            self.ends.clear();
        }
        self.moved.clear();
        self.readable.clear();
        for (entity, replica) in changed {
            let end = (
                replica.log_end_offset(),
                replica.epochs.len(),
                replica.epochs.last().copied(),
            );
            let hw = replica.high_watermark;
            let here = (replica.partition, Some(replica.broker));
            let before = self.ends.insert(entity, (end, hw));
            if before.is_none_or(|(e, _)| e != end) {
                self.moved.push(here);
            }
            if before.is_none_or(|(e, h)| h != hw || end.0 < e.0) {
                self.readable.push(here);
            }
        }
    }
}

/// How far each broker had applied the metadata log when the delayed phase last ran, to find the
/// brokers that learnt something since: a broker that learns it no longer leads a partition
/// looks again at the fetches it holds for it (`ReplicaManager.applyLocalFollowersDelta`, with
/// `completeDelayedOperationsWhenNotPartitionLeader`). A restored checkpoint has other
/// partition entities: then every broker counts as having learnt something.
#[derive(Default)]
pub(super) struct Applied {
    partitions: Vec<Entity>,
    offsets: Vec<u64>,
    /// Scratch: the brokers whose metadata moved since.
    pub(super) moved: Vec<u32>,
}

impl Applied {
    /// Notes the brokers' offsets now and lists in `moved` those that changed since last time.
    pub(super) fn update(&mut self, cluster: &Cluster, views: &BrokerViews) {
        let everything = self.partitions != cluster.partitions;
        if everything {
            self.partitions = cluster.partitions.clone();
        }
        self.offsets.resize(views.len(), u64::MAX);
        self.moved.clear();
        for (id, (view, offset)) in views.iter().zip(&mut self.offsets).enumerate().skip(1) {
            if everything || view.metadata_offset != *offset {
                *offset = view.metadata_offset;
                self.moved.push(id as u32);
            }
        }
    }
}

/// The delayed phase: the held requests that can finish now.
pub(super) fn phase(mut rules: DelayedPhase) {
    let DelayedPhase {
        runtime,
        cluster,
        applied,
        log_ends,
        changed_replicas,
        ..
    } = &mut rules;
    applied.update(cluster, &runtime.views);
    log_ends.update(cluster, changed_replicas.iter());
    rules.complete_delayed_produce();
    rules.complete_delayed_fetches();
    if rules.runtime.wires.any_due::<ConsumerFetch>() {
        rules.serve_consumer_fetches();
    }
}
