//! Checkpoints of the whole model, for exact seeking: a copy of every simulation entity and
//! resource at one instant. Restoring one and running on gives the same run as never having left
//! (a test checks it). Logs and the ledger share their older chunks with the checkpoint, so a
//! checkpoint costs little more than the newest records.

use std::collections::BTreeMap;

use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::prelude::*;

use super::clock::{SimClock, SimRng, Wake};
use super::cluster::{Broker, BrokerViews, Cluster, Partition, Replica};
use super::consumer::Consumer;
use super::consumer_group::ConsumerGroup;
use super::events::{EventLog, Metrics};
use super::invariants::Invariants;
use super::lag::LagMonitor;
use super::ledger::AckLedger;
use super::network::Network;
use super::producer::Producer;
use super::protocol::Payload;
use super::protocol::PendingRecord;
use super::quorum::Controller;
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

no_entities!(Name, Broker, Consumer, BrokerViews);

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

/// Declares the components and resources a checkpoint holds, once.
macro_rules! model_state {
    (components { $($c:ident: $ct:ty),* $(,)? } resources { $($r:ident: $rt:ty),* $(,)? }) => {
        /// One entity's components, boxed: an entity has one or two of them, and unboxed every
        /// entry would take the room of all of them.
        #[derive(Clone, Default)]
        struct Parts {
            $($c: Option<Box<$ct>>,)*
        }

        #[derive(Clone)]
        struct Resources {
            $($r: $rt,)*
        }

        impl Parts {
            /// The bytes of the components it holds.
            fn boxed_bytes(&self) -> usize {
                0 $(+ self.$c.as_ref().map_or(0, |_| size_of::<$ct>()))*
            }
        }

        fn capture_entities(world: &mut World) -> BTreeMap<Entity, Parts> {
            let mut entities: BTreeMap<Entity, Parts> = BTreeMap::new();
            $(
                let mut query = world.query::<(Entity, &$ct)>();
                for (entity, component) in query.iter(world) {
                    entities.entry(entity).or_default().$c = Some(Box::new(component.clone()));
                }
            )*
            entities
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

        fn capture_resources(world: &World) -> Resources {
            Resources {
                $($r: world.resource::<$rt>().clone(),)*
            }
        }

        fn spawn_parts(world: &mut World, entity: Entity, parts: &Parts, map: &EntityHashMap<Entity>) {
            let mut target = world.entity_mut(entity);
            $(
                if let Some(component) = &parts.$c {
                    let mut component = (**component).clone();
                    component.remap(map);
                    target.insert(component);
                }
            )*
        }

        /// Every type a checkpoint holds.
        #[cfg(test)]
        fn checkpointed_types() -> Vec<std::any::TypeId> {
            vec![$(std::any::TypeId::of::<$ct>(),)* $(std::any::TypeId::of::<$rt>(),)*]
        }

        fn insert_resources(world: &mut World, resources: &Resources, map: &EntityHashMap<Entity>) {
            $(
                let mut resource = resources.$r.clone();
                resource.remap(map);
                world.insert_resource(resource);
            )*
        }
    };
}

no_entities!(
    SimClock, SimRng, Wake, EventLog, Metrics, Network, AckLedger, Timeline, LagMonitor
);

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
        replica: Replica,
        producer: Producer,
        group: ConsumerGroup,
        consumer: Consumer,
    }
    resources {
        clock: SimClock,
        rng: SimRng,
        wake: Wake,
        events: EventLog,
        metrics: Metrics,
        network: Network,
        wires: Wires,
        ledger: AckLedger,
        timeline: Timeline,
        invariants: Invariants,
        lag: LagMonitor,
        cluster: Cluster,
        views: BrokerViews,
    }
}

/// An estimate of a checkpoint's memory: each entity's entry and components, and what grows
/// with the load (the newest records of logs and the ledger, the producers' waiting records, the
/// newest events). Other vectors inside components are small and left out.
fn approx_bytes(entities: &BTreeMap<Entity, Parts>, resources: &Resources) -> usize {
    const MAP_ENTRY: usize = size_of::<Entity>() + size_of::<Parts>() + 16;
    let mut bytes = size_of::<Resources>()
        + resources.ledger.unshared_bytes()
        + resources.wires.approx_bytes()
        + resources.events.events.unshared_bytes();
    for group in &resources.lag.groups {
        bytes += group
            .partitions
            .iter()
            .map(|p| p.samples.unshared_bytes())
            .sum::<usize>();
    }
    for parts in entities.values() {
        bytes += MAP_ENTRY + parts.boxed_bytes();
        if let Some(replica) = &parts.replica {
            bytes += replica.log.unshared_bytes();
        }
        if let Some(producer) = &parts.producer {
            bytes += producer.pending() as usize * size_of::<PendingRecord>();
        }
    }
    bytes
}

/// The model at one instant.
#[derive(Clone)]
pub struct Checkpoint {
    pub at_ms: u64,
    entities: BTreeMap<Entity, Parts>,
    resources: Resources,
    /// Roughly what it costs in memory.
    pub bytes: usize,
}

impl Checkpoint {
    pub fn capture(world: &mut World) -> Checkpoint {
        let entities = capture_entities(world);
        let resources = capture_resources(world);
        let bytes = approx_bytes(&entities, &resources);
        Checkpoint {
            at_ms: world.resource::<SimClock>().now_ms,
            entities,
            resources,
            bytes,
        }
    }

    /// Replaces every simulation entity and resource of the world with the checkpoint's. How the
    /// clock steps (skipping idle instants and rules) is a setting of the run, not model state,
    /// and stays as it is.
    pub fn restore(&self, world: &mut World) {
        let settings = world.get_resource::<SimClock>().copied();
        for entity in model_entities(world) {
            world.despawn(entity);
        }
        let map: EntityHashMap<Entity> = self
            .entities
            .keys()
            .map(|old| (*old, world.spawn_empty().id()))
            .collect();
        for (old, parts) in &self.entities {
            spawn_parts(world, map[old], parts, &map);
        }
        insert_resources(world, &self.resources, &map);
        if let Some(settings) = settings {
            let mut clock = world.resource_mut::<SimClock>();
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
