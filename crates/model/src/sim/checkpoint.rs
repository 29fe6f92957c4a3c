//! Checkpoints of the whole model, for exact seeking: a copy of every simulation entity and
//! resource at one instant. Restoring one and running on gives the same run as never having left
//! (a test checks it). Logs, the ledger, the event log and the lag series share their records
//! with the checkpoint, the newest included, so a checkpoint costs the components and resources
//! themselves: about 270 KB for `large`'s 12 brokers, 198 replicas and 24 consumers.

use std::sync::Arc;

use bevy_ecs::change_detection::Tick;
use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::prelude::*;

use super::clock::{SimClock, SimRng, Wake};
use super::cluster::{Broker, BrokerViews, Cluster, FollowerStates, Partition, Replica};
use super::consumer::Consumer;
use super::consumer_group::ConsumerGroup;
use super::events::{EventLog, Metrics};
use super::invariants::Invariants;
use super::lag::LagMonitor;
use super::ledger::AckLedger;
use super::metadata::ClientMetadata;
use super::network::Network;
use super::producer::Producer;
use super::protocol::Payload;
use super::quorum::Controller;
use super::runtime::Runtime;
use super::timeline::Timeline;
use super::wires::Wires;

/// Points an entity reference of a checkpoint at the entity restored in its place.
trait Remap {
    fn remap(&mut self, map: &EntityHashMap<Entity>);
}

fn remap(e: &mut Entity, map: &EntityHashMap<Entity>) {
    *e = map.get(e).copied().unwrap_or(*e);
}

macro_rules! no_entities {
    ($($t:ty),*) => {
        $(impl Remap for $t {
            fn remap(&mut self, _: &EntityHashMap<Entity>) {}
        })*
    };
}

no_entities!(Name, Broker, Consumer, BrokerViews, FollowerStates);

impl Remap for Controller {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        self.reassigning.iter_mut().for_each(|e| remap(e, map));
        self.new_brokers.iter_mut().for_each(|e| remap(e, map));
        for (_, created) in &mut self.requested_partitions {
            created.iter_mut().for_each(|e| remap(e, map));
        }
        for request in &mut self.requested {
            remap(&mut request.partition, map);
            request.added.iter_mut().for_each(|(_, e)| remap(e, map));
        }
    }
}

impl Remap for Partition {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        self.replicas.iter_mut().for_each(|e| remap(e, map));
    }
}

impl Remap for Replica {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        remap(&mut self.partition, map);
    }
}

impl Remap for Producer {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        self.partitions.iter_mut().for_each(|e| remap(e, map));
    }
}

impl Remap for ConsumerGroup {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        remap(&mut self.offsets_partition, map);
    }
}

impl Remap for Wires {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        self.remap_watched(|e| map.get(&e).copied().unwrap_or(e));
        for payload in self.payloads_mut() {
            match payload {
                Payload::Produce(request) => request
                    .batches
                    .iter_mut()
                    .for_each(|b| remap(&mut b.partition, map)),
                Payload::ProduceResponse(response) => response
                    .results
                    .iter_mut()
                    .for_each(|r| remap(&mut r.partition, map)),
                Payload::Fetch(request) => {
                    for p in &mut request.partitions {
                        remap(&mut p.partition, map);
                        remap(&mut p.replica, map);
                    }
                }
                Payload::FetchResponse(response) => {
                    for p in &mut response.partitions {
                        remap(&mut p.partition, map);
                        remap(&mut p.replica, map);
                    }
                }
                Payload::ConsumerFetch(fetch) => {
                    remap(&mut fetch.consumer, map);
                    remap(&mut fetch.partition, map);
                    remap(&mut fetch.replica, map);
                }
                Payload::ConsumerFetchResponse(response) => {
                    remap(&mut response.consumer, map);
                    remap(&mut response.partition, map);
                }
                Payload::Heartbeat(_)
                | Payload::HeartbeatResponse(_)
                | Payload::Group(_)
                | Payload::GroupResponse(_) => {}
            }
        }
    }
}

impl Remap for Cluster {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        let lists = [
            &mut self.brokers,
            &mut self.partitions,
            &mut self.producers,
            &mut self.groups,
            &mut self.consumers,
        ];
        for list in lists {
            list.iter_mut().for_each(|e| remap(e, map));
        }
        for topic in &mut self.topics {
            topic.partitions.iter_mut().for_each(|e| remap(e, map));
        }
        remap(&mut self.controller, map);
    }
}

/// Roughly what a value holds on the heap: what a checkpoint's copy of it costs beyond its own
/// size, and what the checkpoints' budget ([`super::CHECKPOINT_BYTES`]) counts. Counted where it
/// grows with the cluster, the load or the run; names and the vectors that stay a few entries
/// long are left out.
pub(super) trait HeapBytes {
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// What the allocator takes for an allocation besides the bytes asked for, roughly.
const PER_ALLOCATION: usize = 16;

/// An allocation of `capacity` items of `T`, if any.
fn allocation<T>(capacity: usize) -> usize {
    match capacity {
        0 => 0,
        n => n * size_of::<T>() + PER_ALLOCATION,
    }
}

pub(super) fn vec_bytes<T>(v: &Vec<T>) -> usize {
    allocation::<T>(v.capacity())
}

pub(super) fn deque_bytes<T>(v: &std::collections::VecDeque<T>) -> usize {
    allocation::<T>(v.capacity())
}

/// A B-tree map of `len` entries: nodes of up to 11, about two-thirds full.
pub(super) fn map_bytes<K, V>(len: usize) -> usize {
    const ENTRIES: usize = 11;
    match len {
        0 => 0,
        n => n.div_ceil(7) * (ENTRIES * size_of::<(K, V)>() + 16 + PER_ALLOCATION),
    }
}

impl HeapBytes for Name {}
impl HeapBytes for Broker {}
impl HeapBytes for BrokerViews {}
impl HeapBytes for SimClock {}
impl HeapBytes for SimRng {}
impl HeapBytes for Wake {}
impl HeapBytes for Metrics {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.duplicates_by_producer)
    }
}
impl HeapBytes for Network {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.dropped_answers) + vec_bytes(&self.hung)
    }
}

impl HeapBytes for Controller {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.last_heartbeat_ms)
            + vec_bytes(&self.reported_offset)
            + vec_bytes(&self.controlled_shutdown_offset)
            + deque_bytes(&self.metadata.deliveries)
            + vec_bytes(&self.metadata.slow_deliveries)
    }
}

impl HeapBytes for Partition {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.assignment)
            + vec_bytes(&self.replicas)
            + vec_bytes(&self.isr)
            + vec_bytes(&self.elr)
            + vec_bytes(&self.history)
    }
}

impl HeapBytes for FollowerStates {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.0)
    }
}

impl HeapBytes for Replica {
    fn heap_bytes(&self) -> usize {
        self.log.unshared_bytes()
            + self.segments.len() * size_of::<super::segments::Segment>()
            + vec_bytes(&self.epochs)
            + vec_bytes(&self.producer_batches)
            + vec_bytes(&self.txns)
            + self
                .producer_batches
                .iter()
                .map(|(_, b)| deque_bytes(b))
                .sum::<usize>()
    }
}

impl HeapBytes for ClientMetadata {
    /// Its leaders are shared with the checkpoint before, unless they changed since.
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl HeapBytes for Producer {
    fn heap_bytes(&self) -> usize {
        let batches = self
            .queues
            .iter()
            .flatten()
            .chain(self.in_flight.iter().flat_map(|f| &f.batches));
        vec_bytes(&self.partitions)
            + vec_bytes(&self.queues)
            + self.queues.iter().map(deque_bytes).sum::<usize>()
            + vec_bytes(&self.in_flight)
            + self
                .in_flight
                .iter()
                .map(|f| vec_bytes(&f.batches))
                .sum::<usize>()
            + batches.map(|b| vec_bytes(&b.records)).sum::<usize>()
            + vec_bytes(&self.sequences)
            + vec_bytes(&self.ordinals)
            + vec_bytes(&self.connections)
            + self.metadata.heap_bytes()
    }
}

impl HeapBytes for ConsumerGroup {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.partitions)
            + vec_bytes(&self.members)
            + self
                .members
                .iter()
                .map(|m| vec_bytes(&m.owned))
                .sum::<usize>()
            + map_bytes::<u32, u64>(self.committed().len())
            + map_bytes::<u32, u64>(self.latest.len())
    }
}

impl HeapBytes for Consumer {
    fn heap_bytes(&self) -> usize {
        map_bytes::<u32, super::consumer::Progress>(self.assigned.len())
            + vec_bytes(&self.last_assignment)
            + deque_bytes(&self.buffered)
            + deque_bytes(&self.in_hand)
            + vec_bytes(&self.revoking)
            + self.metadata.heap_bytes()
    }
}

impl HeapBytes for Runtime {
    fn heap_bytes(&self) -> usize {
        let Runtime {
            clock,
            wake,
            rng,
            network,
            wires,
            events,
            metrics,
            views,
        } = self;
        clock.heap_bytes()
            + wake.heap_bytes()
            + rng.heap_bytes()
            + network.heap_bytes()
            + wires.heap_bytes()
            + events.heap_bytes()
            + metrics.heap_bytes()
            + views.heap_bytes()
    }
}

impl HeapBytes for Wires {
    fn heap_bytes(&self) -> usize {
        self.approx_bytes()
    }
}

impl HeapBytes for AckLedger {
    fn heap_bytes(&self) -> usize {
        self.unshared_bytes()
    }
}

impl HeapBytes for EventLog {
    fn heap_bytes(&self) -> usize {
        self.events.unshared_bytes()
    }
}

impl HeapBytes for LagMonitor {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.groups)
            + self
                .groups
                .iter()
                .map(|g| {
                    vec_bytes(&g.partitions)
                        + g.partitions
                            .iter()
                            .map(|p| p.samples.unshared_bytes())
                            .sum::<usize>()
                })
                .sum::<usize>()
    }
}

impl HeapBytes for Cluster {
    fn heap_bytes(&self) -> usize {
        vec_bytes(&self.brokers)
            + vec_bytes(&self.partitions)
            + vec_bytes(&self.producers)
            + vec_bytes(&self.groups)
            + vec_bytes(&self.consumers)
    }
}

/// `entity`'s component in a list in entity order.
fn find<T>(list: &[(Entity, Arc<T>)], entity: Entity) -> Option<&Arc<T>> {
    let i = list.binary_search_by_key(&entity, |(e, _)| *e).ok()?;
    Some(&list[i].1)
}

/// The bytes of the components in `list` that `before` does not share, with what they hold.
fn own_bytes<T: HeapBytes>(
    list: &[(Entity, Arc<T>)],
    before: Option<&[(Entity, Arc<T>)]>,
) -> usize {
    list.iter()
        .filter(|(entity, component)| {
            before
                .and_then(|b| find(b, *entity))
                .is_none_or(|earlier| !Arc::ptr_eq(earlier, component))
        })
        .map(|(_, component)| size_of::<T>() + PER_ALLOCATION + component.heap_bytes())
        .sum()
}

/// Declares the components and resources a checkpoint holds, once.
macro_rules! model_state {
    (components { $($c:ident: $ct:ty),* $(,)? } resources { $($r:ident: $rt:ty),* $(,)? }) => {
        /// Each kind of component, with the entities that have it, in entity order: one vector
        /// a kind. A component that did not change since the checkpoint before is that
        /// checkpoint's own copy, shared.
        #[derive(Clone, Default)]
        struct Components {
            $($c: Vec<(Entity, Arc<$ct>)>,)*
        }

        #[derive(Clone)]
        struct Resources {
            $($r: $rt,)*
        }

        impl Components {
            /// Copies the world's components, sharing those unchanged since `before` was taken
            /// (at the tick given) from the same run; `now` is the world's change tick.
            fn capture(world: &mut World, before: Option<(&Components, Tick)>, now: Tick) -> Self {
                let mut components = Components::default();
                $(
                    let mut query = world.query::<(Entity, Ref<$ct>)>();
                    let earlier = before.map(|(b, since)| (&b.$c, since));
                    components.$c = query
                        .iter(world)
                        .map(|(entity, component)| {
                            let kept = earlier
                                .filter(|(_, since)| !component.last_changed().is_newer_than(*since, now))
                                .and_then(|(list, _)| find(list, entity).cloned());
                            (entity, kept.unwrap_or_else(|| Arc::new((*component).clone())))
                        })
                        .collect();
                    components.$c.sort_unstable_by_key(|(e, _)| *e);
                )*
                components
            }

            /// Every entity that has any of them, in order.
            fn entities(&self) -> Vec<Entity> {
                let mut entities = Vec::new();
                $(entities.extend(self.$c.iter().map(|(e, _)| *e));)*
                entities.sort_unstable();
                entities.dedup();
                entities
            }

            /// Roughly the memory they take beyond what they share with `before`: the vectors,
            /// and each component of their own with what it holds.
            fn bytes(&self, before: Option<&Components>) -> usize {
                0 $(+ self.$c.capacity() * size_of::<(Entity, Arc<$ct>)>()
                    + own_bytes(&self.$c, before.map(|b| &b.$c[..])))*
            }

            /// Inserts the components into the entities restored in their entities' place: entity
            /// by entity, in order, each one's components in the order declared, as the world
            /// held them, so that queries meet them in the same order.
            fn insert(&self, world: &mut World, map: &EntityHashMap<Entity>) {
                $(let mut $c = self.$c.iter().peekable();)*
                for old in self.entities() {
                    let mut target = world.entity_mut(map[&old]);
                    $(
                        if let Some((_, component)) = $c.next_if(|(e, _)| *e == old) {
                            let mut component = (**component).clone();
                            component.remap(map);
                            target.insert(component);
                        }
                    )*
                }
            }
        }

        fn model_entities(world: &mut World) -> Vec<Entity> {
            let mut entities: Vec<Entity> = Vec::new();
            $(
                let mut query = world.query_filtered::<Entity, With<$ct>>();
                entities.extend(query.iter(world));
            )*
            entities.sort_unstable();
            entities.dedup();
            entities
        }

        impl Resources {
            fn capture(world: &World) -> Self {
                Resources {
                    $($r: world.resource::<$rt>().clone(),)*
                }
            }

            /// Roughly the memory they take of their own.
            fn bytes(&self) -> usize {
                size_of::<Self>() $(+ self.$r.heap_bytes())*
            }

            fn insert(&self, world: &mut World, map: &EntityHashMap<Entity>) {
                $(
                    let mut resource = self.$r.clone();
                    resource.remap(map);
                    world.insert_resource(resource);
                )*
            }
        }

        /// Every type a checkpoint holds.
        #[cfg(test)]
        fn checkpointed_types() -> Vec<std::any::TypeId> {
            vec![$(std::any::TypeId::of::<$ct>(),)* $(std::any::TypeId::of::<$rt>(),)*]
        }
    };
}

no_entities!(
    SimClock, SimRng, Wake, EventLog, Metrics, Network, AckLedger, Timeline, LagMonitor
);

impl Remap for Runtime {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        let Runtime {
            clock,
            wake,
            rng,
            network,
            wires,
            events,
            metrics,
            views,
        } = self;
        clock.remap(map);
        wake.remap(map);
        rng.remap(map);
        network.remap(map);
        wires.remap(map);
        events.remap(map);
        metrics.remap(map);
        views.remap(map);
    }
}

impl Remap for Invariants {
    fn remap(&mut self, map: &EntityHashMap<Entity>) {
        self.entities_mut(|e| remap(e, map));
    }
}

model_state! {
    components {
        name: Name,
        broker: Broker,
        controller: Controller,
        partition: Partition,
        followers: FollowerStates,
        replica: Replica,
        producer: Producer,
        group: ConsumerGroup,
        consumer: Consumer,
    }
    resources {
        runtime: Runtime,
        ledger: AckLedger,
        timeline: Timeline,
        invariants: Invariants,
        lag: LagMonitor,
        cluster: Cluster,
    }
}

/// The model at one instant.
#[derive(Clone)]
pub struct Checkpoint {
    pub at_ms: u64,
    components: Components,
    resources: Resources,
    /// The run it was taken from (a restore starts another) and the world's change tick then:
    /// the next checkpoint of the same run shares what did not change since.
    taken: (u64, Tick),
    /// Roughly what it costs in memory beyond what it shares with the checkpoint before it
    /// ([`HeapBytes`]).
    pub bytes: usize,
    /// What retention had freed when it was taken: log records (per replica) and ledger rows.
    pub freed: (u64, u64),
}

/// A checkpoint shares an unchanged component with one taken at most this many change ticks
/// before (a few million steps): older ticks are clamped by Bevy, and could hide a change.
const SHARE_WITHIN_TICKS: u32 = 1 << 30;

impl Checkpoint {
    /// The model now, from run `run`, sharing what did not change with `before` (the newest
    /// checkpoint kept).
    pub fn capture(world: &mut World, run: u64, before: Option<&Checkpoint>) -> Checkpoint {
        // Changes from here on get later ticks than the one this checkpoint notes.
        let tick = world.increment_change_tick();
        let now = world.change_tick();
        let before = before.filter(|b| {
            b.taken.0 == run && now.get().wrapping_sub(b.taken.1.get()) < SHARE_WITHIN_TICKS
        });
        let components =
            Components::capture(world, before.map(|b| (&b.components, b.taken.1)), now);
        let resources = Resources::capture(world);
        let mut checkpoint = Checkpoint {
            at_ms: world.resource::<Runtime>().clock.now_ms,
            components,
            resources,
            taken: (run, tick),
            bytes: 0,
            freed: (0, 0),
        };
        checkpoint.count_bytes(before);
        checkpoint
    }

    /// Counts its memory again, beside the checkpoint now before it (after thinning dropped the
    /// one it shared with, it holds those components alone, or with a later one).
    pub fn count_bytes(&mut self, before: Option<&Checkpoint>) {
        self.bytes = size_of::<Checkpoint>()
            + self.components.bytes(before.map(|b| &b.components))
            + self.resources.bytes();
    }

    /// Replaces every simulation entity and resource of the world with the checkpoint's. How the
    /// clock steps (skipping idle instants and rules) is a setting of the run, not model state,
    /// and stays as it is.
    pub fn restore(&self, world: &mut World) {
        let settings = world.get_resource::<Runtime>().map(|r| r.clock);
        for entity in model_entities(world) {
            world.despawn(entity);
        }
        let map: EntityHashMap<Entity> = self
            .components
            .entities()
            .into_iter()
            .map(|old| (old, world.spawn_empty().id()))
            .collect();
        self.components.insert(world, &map);
        self.resources.insert(world, &map);
        if let Some(settings) = settings {
            let clock = &mut world.resource_mut::<Runtime>().clock;
            clock.skip_idle = settings.skip_idle;
            clock.skip_idle_rules = settings.skip_idle_rules;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::sim::Sim;

    /// A checkpoint shares the components that did not change since the one before (the
    /// replicas of a topic nobody writes to), copies those that did (the replicas records went
    /// to), counts only what it copied, and restores to the same state either way.
    #[test]
    fn unchanged_components_are_shared_with_the_checkpoint_before() {
        let scenario = Scenario::parse(
            r#"(name: "x", duration_ms: 60000,
                topics: [(name: "busy", partitions: 2), (name: "idle", partitions: 6)],
                producers: [(name: "p", topic: "busy", records_per_sec: 100, keys: Sequence("k"))])"#,
            "test",
        )
        .expect("a valid scenario");
        let mut sim = Sim::new(&scenario);
        sim.run_until(20_000);
        let first = Checkpoint::capture(sim.world_mut(), 0, None);
        sim.run_until(25_000);
        let second = Checkpoint::capture(sim.world_mut(), 0, Some(&first));
        let elsewhere = Checkpoint::capture(sim.world_mut(), 1, Some(&first));
        let shared = |a: &Checkpoint, b: &Checkpoint| {
            a.components
                .replica
                .iter()
                .zip(&b.components.replica)
                .filter(|((_, x), (_, y))| Arc::ptr_eq(x, y))
                .count()
        };
        let replicas = first.components.replica.len();
        let kept = shared(&first, &second);
        assert_eq!(
            (kept, replicas),
            (6, 8),
            "the idle topic's replicas are shared, the busy one's copied"
        );
        assert_eq!(shared(&first, &elsewhere), 0, "only within one run");
        // It counts no shared replica, name or broker.
        assert!(
            first.bytes >= second.bytes + 6 * size_of::<Replica>(),
            "{} against {}",
            second.bytes,
            first.bytes
        );
        // What was shared is what the world held: restoring gives the same report.
        let report = |sim: &Sim| crate::report::Report::of(sim).to_json();
        let straight = report(&sim);
        second.restore(sim.world_mut());
        assert!(report(&sim) == straight);
    }

    /// A component or resource of the model that checkpoints left out would make seeking back
    /// silently lose it. Every type of this crate that the world knows, after a run that uses
    /// groups, faults and the timeline, must be one a checkpoint holds.
    #[test]
    fn every_model_component_and_resource_is_checkpointed() {
        let scenario = Scenario::built_in("rebalance-storm").expect("built in");
        let mut sim = Sim::new(&scenario);
        sim.run_until(5_000);
        let held = checkpointed_types();
        let crate_prefix = concat!(env!("CARGO_CRATE_NAME"), "::");
        let model_types: Vec<_> = sim
            .world()
            .components()
            .iter_registered()
            .filter(|info| info.name().to_string().starts_with(crate_prefix))
            .collect();
        let missing: Vec<String> = model_types
            .iter()
            .filter(|info| info.type_id().is_some_and(|id| !held.contains(&id)))
            .map(|info| info.name().to_string())
            .collect();
        assert!(
            missing.is_empty(),
            "not in a checkpoint (add them to `model_state!`): {missing:?}"
        );
        // The check sees the model's types at all: it would pass vacuously otherwise.
        let seen = model_types.len();
        assert!(
            seen >= held.len() - 1,
            "only {seen} of the model's types seen"
        );
    }
}
