//! A digest of what a run does, step by step: at every step the instant, the random numbers drawn
//! so far and every message on the wire (its id, kind, ends, times and state). Two runs with the
//! same digests stepped the same instants and sent the same messages; where they part, the first
//! differing line names the interval of the first step that differs. The golden tests keep one
//! per scenario beside its report, so a change to how the model is built that changes what it does
//! is caught, and located.

use bevy_ecs::prelude::*;

use super::Runtime;
use super::Sim;
use super::network::{Node, WireState};

/// FNV-1a, 64 bits: portable and fixed by its definition.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const START: Fnv = Fnv(0xcbf2_9ce4_8422_2325);

    fn word(&mut self, word: u64) {
        for byte in word.to_le_bytes() {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// One line of a trace: the digest of every step up to `until_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceLine {
    pub until_ms: u64,
    /// Steps run since the run began.
    pub steps: u64,
    /// Random numbers drawn since the run began.
    pub draws: u64,
    pub digest: u64,
}

impl std::fmt::Display for TraceLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ms: {} steps, {} draws, {:016x}",
            self.until_ms, self.steps, self.draws, self.digest
        )
    }
}

fn node(n: Node) -> u64 {
    match n {
        Node::Broker(b) => u64::from(b),
        Node::Producer(p) => (1 << 32) | u64::from(p),
        Node::Controller => 2 << 32,
        Node::Consumer(c) => (3 << 32) | u64::from(c),
    }
}

fn state(s: WireState) -> [u64; 2] {
    match s {
        WireState::InFlight => [0, 0],
        WireState::Lost { at_ms } => [1, at_ms],
        WireState::Held { until_ms } => [2, until_ms],
    }
}

/// Folds the state of the world after a step into the digest.
fn fold_step(world: &World, hash: &mut Fnv) {
    let runtime = world.resource::<Runtime>();
    hash.word(runtime.clock.now_ms);
    hash.word(runtime.rng.draws());
    let wires = &runtime.wires;
    hash.word(wires.len() as u64);
    // In send order, as rows are kept.
    for message in wires.iter() {
        let w = &message.wire;
        let [s, at] = state(w.state);
        let words = [
            w.id,
            message.payload.kind() as u64,
            node(w.from),
            node(w.to),
            w.sent_ms,
            w.arrive_ms,
            s,
            at,
        ];
        for word in words {
            hash.word(word);
        }
    }
}

impl Sim {
    /// Runs step by step to `until_ms` and gives the digest of the steps at every multiple of
    /// `every_ms` (and at the end). Stepping one step at a time may jump over checkpoint
    /// instants that [`Sim::run_until`] stops at, so the stepped instants are this function's
    /// own, the same from run to run.
    pub fn trace(&mut self, until_ms: u64, every_ms: u64) -> Vec<TraceLine> {
        let mut lines = Vec::new();
        let mut hash = Fnv::START;
        let mut steps = 0;
        let mut next_line = every_ms;
        while self.now_ms() < until_ms {
            self.step();
            steps += 1;
            fold_step(self.world(), &mut hash);
            let now = self.now_ms();
            if now >= next_line || now >= until_ms {
                lines.push(TraceLine {
                    until_ms: now,
                    steps,
                    draws: self.world().resource::<Runtime>().rng.draws(),
                    digest: hash.0,
                });
                next_line = (now / every_ms + 1) * every_ms;
            }
        }
        lines
    }
}
