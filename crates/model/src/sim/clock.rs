//! Sim time and the one random number generator of a run.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// Integer sim time. A step handles the instant `now_ms`, then moves the clock to the next instant
/// at which anything can happen: one millisecond on, or further when every rule says it has
/// nothing to do before then. Skipped instants are those at which no rule could act, so a run
/// gives the same report with skipping on or off (a test checks it).
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    pub now_ms: u64,
    /// The clock never moves past this instant in one step (where the caller wants to stop).
    pub horizon_ms: u64,
    /// Jump over idle instants (on by default; off steps every millisecond).
    pub skip_idle: bool,
    /// Skip the rules gated by the clock's idle checks at steps when nothing is due for them: the
    /// timeline, cut links and dead brokers, the controller and the periodic ISR check (on by
    /// default; off runs them at every step, as a reference for tests).
    pub skip_idle_rules: bool,
}

impl Default for SimClock {
    fn default() -> Self {
        SimClock {
            now_ms: 0,
            horizon_ms: u64::MAX,
            skip_idle: true,
            skip_idle_rules: true,
        }
    }
}

/// The earliest future instant at which some rule has something to do: each rule that runs
/// reports its deadlines here (a message arriving, a timeout, a linger, a periodic check), and the
/// clock's tick adds the timeline's next action.
///
/// Rules that are idle most of the time (the controller, the periodic ISR check) do not run at
/// every step: they keep a standing deadline here, which lasts until they run again, and run only
/// when it is due (the controller also after a timeline action).
#[derive(Debug, Clone, Copy)]
pub struct Wake {
    next_ms: u64,
    standing: [u64; Standing::COUNT],
}

/// The rules that keep a standing deadline in [`Wake`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Heartbeats, their answers, session expiry and leader balancing.
    Controller,
    /// The leader's periodic ISR check.
    IsrCheck,
    /// The brokers' log cleaners' looks.
    Cleaner,
    /// The brokers' retention checks.
    Retention,
}

impl Standing {
    /// How many there are: the last one's index plus one (keep it the last).
    const COUNT: usize = Standing::Retention as usize + 1;
}

impl Default for Wake {
    fn default() -> Self {
        Wake {
            next_ms: u64::MAX,
            // Every standing rule runs at the first step and sets its own deadline.
            standing: [0; Standing::COUNT],
        }
    }
}

impl Wake {
    /// Something is due at `at_ms`, an instant after the current one.
    pub fn at(&mut self, at_ms: u64) {
        self.next_ms = self.next_ms.min(at_ms);
    }

    /// The earliest instant anything asked to be woken at so far.
    pub fn next_ms(&self) -> u64 {
        self.next_ms
    }

    /// Whether a standing rule runs at this step: its deadline is due, or the clock runs every
    /// rule at every step.
    pub fn due(&self, rule: Standing, clock: &SimClock) -> bool {
        !clock.skip_idle_rules || clock.now_ms >= self.standing[rule as usize]
    }

    /// A standing rule starts collecting its next deadline (it is running now).
    pub fn clear(&mut self, rule: Standing) {
        self.standing[rule as usize] = u64::MAX;
    }

    /// A standing rule's deadline: kept until the rule runs again.
    pub fn standing_at(&mut self, rule: Standing, at_ms: u64) {
        let slot = &mut self.standing[rule as usize];
        *slot = (*slot).min(at_ms);
        self.at(at_ms);
    }
}

/// The run's only source of randomness: PCG64, whose output is fixed by its specification on every
/// platform, seeded from the scenario. Ranges are drawn here, not by `rand`'s distributions, so
/// the numbers cannot change with a library version.
#[derive(Clone)]
pub struct SimRng {
    pcg: Pcg64,
    /// Numbers drawn so far: part of the trace digest, so that a run that draws once more or
    /// less than another is caught at the step it happens.
    draws: u64,
}

impl SimRng {
    pub fn new(seed: u64) -> Self {
        SimRng {
            pcg: Pcg64::seed_from_u64(seed),
            draws: 0,
        }
    }

    /// How many numbers have been drawn since the run began.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// A number in `0..n` (Lemire's multiply-shift; `n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.draws += 1;
        ((u128::from(self.pcg.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A factor in `[lo_permille, hi_permille)` thousandths, for jitter.
    pub fn permille(&mut self, lo_permille: u64, hi_permille: u64) -> u64 {
        lo_permille + self.below(hi_permille - lo_permille)
    }
}

/// Moves the clock to the next instant at which anything is due.
pub(super) fn tick(clock: &mut SimClock, wake: &mut Wake, next_action: Option<u64>) {
    if let Some(at) = next_action {
        wake.at(at);
    }
    let next = clock.now_ms + 1;
    clock.now_ms = if clock.skip_idle {
        wake.next_ms.max(next).min(clock.horizon_ms.max(next))
    } else {
        next
    };
    *wake = Wake {
        next_ms: wake.standing.iter().copied().min().unwrap_or(u64::MAX),
        standing: wake.standing,
    };
}
