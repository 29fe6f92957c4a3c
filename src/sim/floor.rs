//! The least a step can cost in this architecture: a Bevy schedule that runs as many systems as
//! the model runs at a step, of which three spawn a load's messages as `Wire` entities and
//! despawn them when they arrive, and the others are rules that find nothing to do. The benchmark
//! sets a run's speed against it, so what Kafka's rules themselves cost is plain to see.

use bevy::ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};
use bevy::prelude::*;

use super::network::{Node, Wire, WireState};

#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
struct FloorStep;

#[derive(Resource)]
struct Pace {
    now_ms: u64,
    /// Messages sent per thousand steps.
    per_mille: u64,
}

/// Sends this step's share of the messages, spread evenly over the steps, to arrive at the next.
fn send(pace: Res<Pace>, mut commands: Commands) {
    let due = |step: u64| step * pace.per_mille / 1000;
    let now = pace.now_ms;
    for _ in due(now)..due(now + 1) {
        commands.spawn(Wire {
            id: now,
            from: Node::Broker(1),
            to: Node::Broker(2),
            sent_ms: now,
            arrive_ms: now + 1,
            state: WireState::InFlight,
        });
    }
}

/// Despawns what arrives now, as the model's receivers do once they have handled it.
fn receive(pace: Res<Pace>, messages: Query<(Entity, &Wire)>, mut commands: Commands) {
    for (entity, wire) in &messages {
        if wire.arrives_now(pace.now_ms) {
            commands.entity(entity).despawn();
        }
    }
}

fn tick(mut pace: ResMut<Pace>) {
    pace.now_ms += 1;
}

#[derive(Resource, Default)]
struct Tally(u64);

/// A rule at a step when nothing is due for it: it reads the clock and the messages, finds none
/// of its own, and changes nothing. The model's rules take more parameters than this.
fn idle_rule(pace: Res<Pace>, messages: Query<&Wire>, mut tally: ResMut<Tally>) {
    for wire in &messages {
        if wire.sent_ms > pace.now_ms {
            tally.0 += 1;
        }
    }
}

/// The systems that handle the messages: `receive`, `send` and `tick`.
pub const MESSAGE_SYSTEMS: usize = 3;

/// Wall-clock microseconds per step of the floor schedule over `steps` steps: `systems` systems
/// (at least [`MESSAGE_SYSTEMS`]), with `messages_per_step` messages sent (and as many handled) at
/// each.
pub fn micros_per_step(systems: usize, messages_per_step: f64, steps: u64) -> f64 {
    let mut world = World::new();
    world.insert_resource(Pace {
        now_ms: 0,
        per_mille: (messages_per_step * 1000.0).round() as u64,
    });
    world.init_resource::<Tally>();
    let mut schedule = Schedule::new(FloorStep);
    schedule.set_executor(SingleThreadedExecutor::new());
    schedule.add_systems((receive, send, tick).chain());
    for _ in MESSAGE_SYSTEMS..systems {
        schedule.add_systems(idle_rule.before(receive));
    }
    // The first runs build the schedule and the messages' table.
    for _ in 0..100 {
        schedule.run(&mut world);
    }
    let started = bevy::platform::time::Instant::now();
    for _ in 0..steps {
        schedule.run(&mut world);
    }
    started.elapsed().as_secs_f64() * 1e6 / steps.max(1) as f64
}
