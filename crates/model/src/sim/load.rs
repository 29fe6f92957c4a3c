//! Building the model's world from a scenario: its entities (brokers, partitions and their
//! replicas, producers, the controller, consumer groups and their members) and resources, at sim
//! time 0.

use bevy_ecs::prelude::*;

use super::Runtime;
use super::cluster::{
    Broker, BrokerId, Cluster, FollowerStates, OFFSETS_TOPIC, Partition, Replica, Topic,
    TopicSettings,
};
use super::invariants::Invariants;
use super::network::Network;
use super::producer::Producer;
use super::segments::LogConfig;
use crate::scenario::{Scenario, TopicConfig};

/// Spawns the scenario's brokers, partitions, replicas and producers and sets the run's seed.
pub fn load(world: &mut World, scenario: &Scenario) {
    // Every model component, so that the report and the view can query a world they only
    // borrow, whatever this scenario spawns.
    world.register_component::<Broker>();
    world.register_component::<Partition>();
    world.register_component::<Replica>();
    world.register_component::<Producer>();
    world.register_component::<super::quorum::Controller>();
    world.register_component::<super::consumer_group::ConsumerGroup>();
    world.register_component::<super::consumer::Consumer>();
    world.insert_resource(Runtime::new(Network::new(&scenario.cluster), scenario.seed));
    world.insert_resource(super::ledger::AckLedger::default());

    let brokers: Vec<Entity> = (1..=scenario.cluster.brokers)
        .map(|id| {
            world
                .spawn((Name::new(format!("broker {id}")), Broker::new(id)))
                .id()
        })
        .collect();
    let controller = world
        .spawn((
            Name::new("controller"),
            super::quorum::Controller::new(&scenario.cluster),
        ))
        .id();

    let mut topics = Vec::new();
    let mut all_partitions: Vec<Entity> = Vec::new();
    for (t, config) in scenario.topics.iter().enumerate() {
        let mut partitions = Vec::new();
        for (p, assignment) in scenario.assignment(config).into_iter().enumerate() {
            let ordinal = (all_partitions.len() + partitions.len()) as u32;
            let partition = spawn_partition(world, config, t, p as u32, ordinal, assignment);
            partitions.push(partition);
        }
        all_partitions.extend(partitions.iter().copied());
        topics.push(Topic {
            name: config.name.clone(),
            partitions,
            replication_factor: config.replication_factor,
            min_insync_replicas: config.min_insync_replicas,
        });
    }

    // `__consumer_offsets`: only the partitions that coordinate a group are simulated; they are
    // replicated like any other (`offsets.topic.replication.factor`, capped by the brokers).
    let offsets_rf = scenario
        .cluster
        .offsets_topic_replication_factor
        .min(scenario.cluster.brokers);
    let offsets_config = crate::scenario::TopicConfig {
        name: OFFSETS_TOPIC.to_string(),
        partitions: scenario.cluster.offsets_topic_partitions,
        replication_factor: offsets_rf,
        min_insync_replicas: 1,
        assignment: None,
        unclean_leader_election: false,
        // `offsets.retention.*` expire a group's offsets, not segments: the topic is compacted.
        retention_ms: LogConfig::default().retention_ms,
        retention_bytes: LogConfig::default().retention_bytes,
        segment_bytes: scenario.cluster.offsets_topic_segment_bytes,
        segment_ms: LogConfig::default().segment_ms,
        cleanup_policy: crate::scenario::CleanupPolicy::Compact,
        min_cleanable_dirty_ratio: LogConfig::default().min_cleanable_dirty_ratio,
        min_compaction_lag_ms: LogConfig::default().min_compaction_lag_ms,
        delete_retention_ms: LogConfig::default().delete_retention_ms,
    };
    let offsets_assignment = scenario.assignment(&offsets_config);
    let mut offsets_partitions: Vec<(u32, Entity)> = Vec::new();
    let mut group_offsets = Vec::new();
    for g in &scenario.consumer_groups {
        let p = crate::partitioner::offsets_partition_for_group(
            &g.name,
            scenario.cluster.offsets_topic_partitions,
        );
        let entity = match offsets_partitions.iter().find(|(q, _)| *q == p) {
            Some((_, e)) => *e,
            None => {
                let ordinal = (all_partitions.len() + offsets_partitions.len()) as u32;
                let assignment = offsets_assignment[p as usize].clone();
                let partition =
                    spawn_partition(world, &offsets_config, topics.len(), p, ordinal, assignment);
                offsets_partitions.push((p, partition));
                partition
            }
        };
        group_offsets.push(entity);
    }
    let user_partitions = all_partitions.clone();
    if !offsets_partitions.is_empty() {
        all_partitions.extend(offsets_partitions.iter().map(|(_, e)| *e));
        topics.push(Topic {
            name: OFFSETS_TOPIC.to_string(),
            partitions: offsets_partitions.iter().map(|(_, e)| *e).collect(),
            replication_factor: offsets_rf,
            min_insync_replicas: 1,
        });
    }

    let mut groups = Vec::new();
    let mut consumers = Vec::new();
    for (i, g) in scenario.consumer_groups.iter().enumerate() {
        let ordinals: Vec<u32> = g
            .topics
            .iter()
            .flat_map(|t| {
                let topic = scenario.topic_index(t).expect("validated");
                topics[topic].partitions.clone()
            })
            .map(|e| {
                user_partitions
                    .iter()
                    .position(|p| *p == e)
                    .expect("listed") as u32
            })
            .collect();
        groups.push(
            world
                .spawn((
                    Name::new(format!("group {}", g.name)),
                    super::consumer_group::ConsumerGroup::new(
                        i as u32,
                        g,
                        ordinals,
                        group_offsets[i],
                    ),
                ))
                .id(),
        );
        for n in 1..=g.members {
            let index = consumers.len() as u32;
            let mut consumer = super::consumer::Consumer::new(index, i as u32, n, g, 0);
            // Its first Metadata answer: every partition led by its first replica.
            consumer.metadata.leaders = all_partitions
                .iter()
                .map(|p| {
                    let p = world.get::<Partition>(*p).expect("partition");
                    (p.leader, p.leader_epoch)
                })
                .collect::<Vec<_>>()
                .into();
            consumer.metadata.wanted = false;
            consumers.push(
                world
                    .spawn((Name::new(format!("consumer {}-{n}", g.name)), consumer))
                    .id(),
            );
        }
    }

    let producers: Vec<Entity> = scenario
        .producers
        .iter()
        .enumerate()
        .map(|(i, config)| {
            let topic = scenario.topic_index(&config.topic).expect("validated");
            let partitions = topics[topic].partitions.clone();
            let ordinals = partitions
                .iter()
                .map(|e| {
                    all_partitions
                        .iter()
                        .position(|p| p == e)
                        .expect("the topic's partitions are listed") as u32
                })
                .collect();
            // Its first Metadata answer: every partition led by its first replica.
            let leaders: Vec<_> = partitions
                .iter()
                .map(|p| {
                    let p = world.get::<Partition>(*p).expect("partition");
                    (p.leader, p.leader_epoch)
                })
                .collect();
            let mut producer = Producer::new(i as u32, config, topic, partitions, ordinals);
            producer.metadata.leaders = leaders.into();
            world
                .spawn((Name::new(format!("producer {}", config.name)), producer))
                .id()
        })
        .collect();

    let invariants = Invariants::new(all_partitions.len());
    world.insert_resource(invariants);
    world.insert_resource(super::timeline::Timeline::new(scenario));
    world.insert_resource(Cluster {
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        config: scenario.cluster.clone(),
        brokers,
        controller,
        topics,
        partitions: all_partitions,
        producers,
        groups,
        consumers,
        assignments_version: 0,
    });
}

/// Spawns one partition of a topic and a replica entity on each of its brokers; the first
/// replica of the assignment leads, all are in sync, at epoch 0.
fn spawn_partition(
    world: &mut World,
    config: &TopicConfig,
    topic: usize,
    index: u32,
    ordinal: u32,
    assignment: Vec<BrokerId>,
) -> Entity {
    let name = &config.name;
    let assignment_len = assignment.len();
    let partition = world.spawn_empty().id();
    let replicas: Vec<Entity> = assignment
        .iter()
        .map(|b| {
            world
                .spawn((
                    Name::new(format!("{name}-{index} on broker {b}")),
                    Replica::new(partition, *b),
                ))
                .id()
        })
        .collect();
    world.entity_mut(partition).insert((
        Name::new(format!("{name}-{index}")),
        Partition::new(
            topic,
            index,
            ordinal,
            assignment,
            replicas,
            TopicSettings {
                min_insync_replicas: config.min_insync_replicas,
                unclean_leader_election: config.unclean_leader_election,
                log: super::segments::LogConfig::of(config),
            },
            0,
        ),
        FollowerStates::new(assignment_len, 0),
    ));
    partition
}
