//! Requests a leader holds until they can finish (`DelayedOperationPurgatory`): acks=all
//! produces waiting for the high watermark (`DelayedProduce`, in `leader.rs`), follower fetches
//! waiting for data (`DelayedFetch`, in `replication.rs`), and consumer fetches waiting for the
//! high watermark (in `reads.rs`). Each is looked at again only when what it waits on changed or
//! its wait ran out.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::SimClock;
use super::cluster::{Broker, BrokerViews, Cluster, Partition, Replica};
use super::events::Metrics;
use super::network::Network;
use super::protocol::{Answers, ConsumerFetch};
use super::wires::Wires;

/// What the delayed phase's rules borrow for one step. The rules live beside the requests they
/// finish; the changes they watch come from Bevy's change detection since this phase last ran.
#[derive(SystemParam)]
pub(super) struct DelayedPhase<'w, 's> {
    pub(super) clock: Res<'w, SimClock>,
    pub(super) cluster: Res<'w, Cluster>,
    pub(super) network: ResMut<'w, Network>,
    pub(super) wires: ResMut<'w, Wires>,
    pub(super) metrics: ResMut<'w, Metrics>,
    pub(super) brokers: Query<'w, 's, &'static Broker>,
    /// The brokers as this step's controller phase left them.
    pub(super) views: Res<'w, BrokerViews>,
    pub(super) partitions: Query<'w, 's, &'static Partition>,
    pub(super) replicas: Query<'w, 's, &'static Replica>,
    pub(super) changed_brokers: Query<'w, 's, &'static Broker, Changed<Broker>>,
    pub(super) changed_partitions: Query<'w, 's, Entity, Changed<Partition>>,
    pub(super) changed_replicas: Query<'w, 's, &'static Replica, Changed<Replica>>,
    /// Kept between steps, so that a step allocates little: the requests due now,
    pub(super) due: Local<'s, Vec<u64>>,
    /// consumer fetches arriving now,
    pub(super) arriving: Local<'s, Vec<u64>>,
    /// the partitions touched since the last step (each rule fills it afresh),
    pub(super) touched: Local<'s, Vec<Entity>>,
    /// and a follower fetch's answers.
    pub(super) answers: Local<'s, Answers>,
}

/// The delayed phase: the held requests that can finish now.
pub(super) fn phase(mut rules: DelayedPhase) {
    rules.complete_delayed_produce();
    rules.complete_delayed_fetches();
    if rules.wires.any_due::<ConsumerFetch>() {
        rules.serve_consumer_fetches();
    }
}
