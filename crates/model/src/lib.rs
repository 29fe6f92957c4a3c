//! Kafkascope's model of Apache Kafka, without a window: [`sim`] is the model (a Bevy ECS world
//! stepped phase by phase), [`scenario`] reads scenario files, [`report`] writes what a run did,
//! [`partitioner`] is Kafka's key hashing and [`assignor`] its partition assignors.
//!
//! # Architecture
//!
//! The model is a Bevy ECS world that no window ever touches. Brokers, partitions, replicas,
//! producers, consumers, consumer groups and the controller are entities with components
//! ([`sim::cluster`], and each part's own file); the messages on the wire are rows of
//! [`sim::Wires`], read by wire id. Time is whole milliseconds ([`sim::SimClock`]) and every random
//! draw comes from the run's one seeded generator ([`sim::SimRng`]), so a scenario and a seed give
//! the same run, byte for byte, natively and in the browser.
//!
//! ## A step, phase by phase
//!
//! A step is one simulated instant. [`sim::Phases`] runs one system per [`sim::Phase`], in this
//! order, on one thread, skipping a phase with nothing due (`sim/mod.rs` is that schedule):
//!
//! | phase | what it does | context and system in | rules in |
//! |---|---|---|---|
//! | `Timeline` | the scenario's actions due now | `sim/timeline.rs`, `Targets` | `sim/timeline.rs` |
//! | `Network` | cut links lose what is on them; dead brokers refuse what reaches them | `sim/faults.rs`, `NetworkPhase` | `sim/faults.rs`, `sim/network.rs` |
//! | `Controller` | heartbeats, sessions, fencing, leader elections, the metadata it publishes | `sim/controller.rs`, `ControllerPhase` | `sim/controller.rs` |
//! | `Replication` | followers fetch from their log end offset; leaders answer | `sim/replication.rs`, `ReplicationPhase` | `sim/replication.rs` |
//! | `Append` | leaders append produce requests; acks=0 and acks=1 answers | `sim/leader.rs`, `AppendPhase` | `sim/leader.rs` |
//! | `Isr` | ISR expansion and the periodic shrink; high watermarks | `sim/isr.rs`, `IsrPhase` | `sim/isr.rs` |
//! | `Retention` | each broker's retention check: segments deleted, log starts moved, their records freed; the ledger forgets what every replica deleted | `sim/retention.rs`, `LogManager` | `sim/segments.rs`, `sim/ledger.rs` |
//! | `Cleaner` | each broker's log cleaner: compacted logs keep the latest record of each key, and their old segments are deleted | `sim/cleaner.rs`, `LogManager` (shared with `Retention`) | `sim/cleaner.rs`, `sim/segments.rs` |
//! | `Delayed` | requests held at a leader (acks=all, fetches waiting for data) that can finish | `sim/purgatory.rs`, `DelayedPhase` | `sim/leader.rs`, `sim/replication.rs`, `sim/reads.rs` |
//! | `Groups` | group coordinators: joins, syncs, heartbeats, sessions, commits | `sim/group_coordinator.rs`, `GroupsPhase` | `sim/group_coordinator.rs` (KIP-848's protocol in `sim/consumer_protocol.rs`) |
//! | `Consumers` | consumers: responses, fetched records, processing, requests | `sim/poll.rs`, `ConsumersPhase` | `sim/poll.rs` |
//! | `Lag` | the lag monitor: partitions nobody consumes, each group's lag | `sim/lag.rs`, `LagPhase` | `sim/lag.rs` |
//! | `Producers` | responses, timeouts, the accumulator and the sender | `sim/sender.rs`, `ProducersPhase` | `sim/sender.rs` |
//! | `Checks` | Kafka's invariants, on what changed | `sim/invariants.rs`, `ChecksPhase` | `sim/invariants.rs` |
//! | `Clock` | the wire as the next step sees it, and the clock on to the next instant | `sim/mod.rs` | `sim/clock.rs`, `sim/wires.rs` |
//!
//! A phase's context is a `#[derive(SystemParam)]` struct that borrows, for one step, the
//! resources, queries and scratch (`Local`) its rules use; the rules are its methods, so none
//! takes its parameters one by one. What nearly every phase needs (the clock and its deadlines,
//! the generator, the network and its wire, the event log, the metrics and the brokers' views)
//! is one resource, [`sim::Runtime`]: a system fetches each of its resources at every run, at
//! about 70 instructions each in Bevy 0.19. A phase whose rules live in several files (`Delayed`) has
//! `impl` blocks of its context in each.
//!
//! What a phase sends arrives at a later step. A phase touches only what is due: messages by
//! their arrival, deadlines through [`sim::Wake`], requests parked in a partition's purgatory
//! on their broker, never a scan of everything at every step. Bevy's change detection says what
//! changed, so what changes at every fetch (a leader's view of its followers, `FollowerStates`)
//! is a component apart from what rarely does (the `Partition`): a rule watching one is not woken
//! by the other.
//!
//! What the phases share, in files that import no rule file (so that the imports in `sim/` run
//! one way): `sim/cluster.rs` (brokers, partitions, replicas, records), `sim/producer.rs` and
//! `sim/consumer.rs` (the clients' components), `sim/consumer_group.rs` (a group at its
//! coordinator), `sim/quorum.rs` (the controller's state and metadata log), `sim/protocol.rs`
//! (payloads and Kafka's error codes), `sim/network.rs` and `sim/wires.rs` (sending, and the
//! messages on the wire), `sim/metadata.rs` (what clients know of the cluster),
//! `sim/events.rs` (the event log and the counters behind Kafka's metrics), `sim/ledger.rs`
//! (every acknowledged write), `sim/chunked.rs` (logs shared between replicas and checkpoints),
//! `sim/keys.rs`. `sim/loss.rs` says which acknowledged writes a run lost, electing leaders as
//! the controller would.
//! `sim/run.rs` is [`sim::Sim`]: it builds the world from a scenario (`sim/load.rs`), steps it,
//! and seeks exactly by restoring a checkpoint (`sim/checkpoint.rs`) and running on.
//!
//! ## Adding a rule
//!
//! 1. Find the rule in Kafka's source and name the function after Kafka's own (for example
//!    `maybe_shrink_isr`, after `Partition.maybeShrinkIsr`), with a comment that cites the class
//!    and method.
//! 2. Put it in the file of the part of Kafka it belongs to, as a method of that phase's context
//!    (add what it borrows to the context's fields), and call it from the phase's system beside
//!    the context, in the order Kafka applies it. A rule that waits for an instant
//!    asks [`sim::Wake`] for it rather than looking at every step.
//! 3. New state is a component or a resource; `sim/checkpoint.rs`'s test fails until it is in a
//!    checkpoint, which exact seeking needs.
//! 4. Test it with Kafka's own numbers, state its default and any simplification in
//!    `docs/model.md`, and expect the golden reports (`tests/golden/`) to change only when the
//!    rule is meant to change what a run does.

pub mod assignor;
pub mod partitioner;
pub mod report;
pub mod scenario;
pub mod sim;
