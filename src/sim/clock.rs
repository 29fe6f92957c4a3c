//! Sim time and the one random number generator of a run.

use bevy::prelude::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::{SimSet, SimStep};

/// Integer sim time. A step handles the instant `now_ms`, then moves it one millisecond on.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct SimClock {
    pub now_ms: u64,
}

/// The run's only source of randomness: PCG64, whose output is fixed by its specification on every
/// platform, seeded from the scenario. Ranges are drawn here, not by `rand`'s distributions, so
/// the numbers cannot change with a library version.
#[derive(Resource)]
pub struct SimRng(Pcg64);

impl SimRng {
    pub fn new(seed: u64) -> Self {
        SimRng(Pcg64::seed_from_u64(seed))
    }

    /// A number in `0..n` (Lemire's multiply-shift; `n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A factor in `[lo_permille, hi_permille)` thousandths, for jitter.
    pub fn permille(&mut self, lo_permille: u64, hi_permille: u64) -> u64 {
        lo_permille + self.below(hi_permille - lo_permille)
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<SimClock>()
        .insert_resource(SimRng::new(0))
        .add_systems(SimStep, tick.in_set(SimSet::Clock));
}

pub(super) fn tick(mut clock: ResMut<SimClock>) {
    clock.now_ms += 1;
}
