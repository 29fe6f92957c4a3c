//! A running simulation: the model's world, stepped to where the caller asks, with the
//! checkpoints that seeking starts from.

use std::collections::VecDeque;

use bevy_app::App;
use bevy_ecs::prelude::*;

use super::{Phases, Runtime, checkpoint, load, plugin, timeline};
use crate::scenario::Scenario;

/// Every despawn leaves Bevy a note per component for `RemovedComponents` readers (the model has
/// none); the notes are kept until the world's trackers are cleared twice, so a run clears them
/// this often (in steps), or its memory would grow with every message ever handled.
const CLEAR_TRACKERS_EVERY: u64 = 1024;

/// A run keeps at most this many checkpoints...
pub const MAX_CHECKPOINTS: usize = 8192;
/// ...taking together about this many bytes at most ([`super::checkpoint::Checkpoint::bytes`]:
/// ten simulated minutes of `large` then keep one every 2 s). Beyond either, every other
/// checkpoint is dropped and the spacing doubles, so a long or large run's memory stays bounded
/// and a seek re-runs at most one (longer) interval.
pub const CHECKPOINT_BYTES: usize = 128 * 1024 * 1024;

/// What an open-ended run's checkpoints may take ([`Sim::set_open_ended`]): such a run plays on
/// for as long as it is left, so its memory must stay flat while it also holds the records of
/// the seekable window. It thins them no further than [`open_ended_max_every_ms`], and says
/// when they are full instead.
pub const OPEN_ENDED_CHECKPOINT_BYTES: usize = 64 * 1024 * 1024;

/// How far back a run can seek: checkpoints older than this before the furthest instant
/// reached are dropped, with the records only they still hold. A long run (a sandbox left
/// playing all day) then keeps its memory flat once its logs' retention and this window are
/// full.
pub const SEEKABLE_MS: u64 = 30 * 60_000;

/// An open-ended run keeps its seeks quick: its checkpoints are at most this many times further
/// apart than its load's spacing ([`checkpoint_every_ms`])...
pub const OPEN_ENDED_THINNING: u64 = 8;

/// ...and a seek re-runs at most this many appends to replicas (records times replication
/// factor, at the producers' starting rates): 8 s of `soak` (2000 records/s at RF 3), 2 s of
/// `large` (5000 at RF 3), each well under 100 ms on the development machine.
pub const OPEN_ENDED_REPLAY_APPENDS: u64 = 48_000;

/// The widest spacing an open-ended run thins its checkpoints to ([`OPEN_ENDED_THINNING`],
/// [`OPEN_ENDED_REPLAY_APPENDS`]).
pub fn open_ended_max_every_ms(scenario: &Scenario) -> u64 {
    let every = checkpoint_every_ms(scenario);
    let appends_per_sec = load_per_sec(scenario, |p| {
        let rf = scenario
            .topic_index(&p.topic)
            .map_or(1, |t| scenario.topics[t].replication_factor);
        u64::from(rf)
    });
    let mut max = every;
    while max * 2 <= every * OPEN_ENDED_THINNING
        && max * 2 * appends_per_sec <= OPEN_ENDED_REPLAY_APPENDS * 1000
    {
        max *= 2;
    }
    max
}

/// The producers' records a second in all, each counted `per_record` times (once for records
/// sent, the replication factor for appends to replicas); at least 1.
fn load_per_sec(
    scenario: &Scenario,
    per_record: impl Fn(&crate::scenario::ProducerConfig) -> u64,
) -> u64 {
    scenario
        .producers
        .iter()
        .map(|p| u64::from(p.records_per_sec) * per_record(p))
        .sum::<u64>()
        .max(1)
}

/// Acknowledged records a run may count: the ledger's places are 32-bit.
const LEDGER_PLACES: usize = u32::MAX as usize - 1_000_000;

/// How far apart the checkpoints that seeking starts from are, for a light load.
pub const CHECKPOINT_EVERY_MS: u64 = 5_000;

/// The checkpoint spacing for a scenario: busier clusters take longer to re-run, so they keep
/// checkpoints closer together (a seek re-runs at most one interval). 500 records/s or fewer get
/// [`CHECKPOINT_EVERY_MS`], 1000 records/s one every 2.5 s, 5000 records/s one every 0.5 s.
pub fn checkpoint_every_ms(scenario: &Scenario) -> u64 {
    let records_per_sec = load_per_sec(scenario, |_| 1);
    let every = CHECKPOINT_EVERY_MS * 500 / records_per_sec.max(500);
    (every / 500 * 500).clamp(500, CHECKPOINT_EVERY_MS)
}

/// A running simulation of one scenario: the world of a headless Bevy app with the model plugin,
/// and the checkpoints taken as it ran, for seeking. It owns its world, so the window app holds it
/// as a resource and the view reads it without ever sharing entities with the scene.
pub struct Sim {
    world: World,
    /// The step's systems, which run on `world`.
    phases: Phases,
    /// The checkpoints kept, oldest first: the `k`th is at `(first + k) x every_ms`.
    checkpoints: VecDeque<checkpoint::Checkpoint>,
    /// The index of the oldest kept: those before it left the seekable window.
    first: usize,
    /// Actions given while running (the sandbox), with their instants: seeking back replays them.
    actions: Vec<(u64, crate::scenario::Action)>,
    /// Sim time between checkpoints.
    every_ms: u64,
    /// The widest spacing an open-ended run thins to ([`open_ended_max_every_ms`]).
    open_ended_max_every_ms: u64,
    /// The furthest instant the run has been to.
    reached_ms: u64,
    /// An open-ended run: its checkpoints keep their spacing, so that every seek stays quick.
    open_ended: bool,
    /// Counts restores: a checkpoint shares unchanged components only with one of the same run.
    run: u64,
}

impl Sim {
    /// Builds the cluster a scenario describes, at sim time 0, seeded with the scenario's seed.
    pub fn new(scenario: &Scenario) -> Sim {
        let mut app = App::empty();
        app.add_plugins(plugin);
        load::load(app.world_mut(), scenario);
        // Only the step's phases ever run: the app's own loop and its schedules are unused.
        let mut world = std::mem::take(app.world_mut());
        let phases = Phases::new(&mut world);
        let every_ms = checkpoint_every_ms(scenario);
        let mut sim = Sim {
            world,
            phases,
            checkpoints: VecDeque::new(),
            first: 0,
            actions: Vec::new(),
            every_ms,
            open_ended_max_every_ms: open_ended_max_every_ms(scenario),
            reached_ms: 0,
            open_ended: false,
            run: 0,
        };
        sim.checkpoint_if_due();
        sim
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    pub fn now_ms(&self) -> u64 {
        self.world().resource::<Runtime>().clock.now_ms
    }

    /// Runs one step: the current instant, after which the clock moves to the next instant at
    /// which anything happens.
    pub fn step(&mut self) {
        self.step_once();
        self.world.clear_trackers();
    }

    fn step_once(&mut self) {
        // The systems are outside the world, where its periodic check of change ticks would find
        // them: hand them the check.
        if let Some(check) = self.world.check_change_ticks() {
            self.phases.check_change_ticks(check);
        }
        self.phases.run(&mut self.world);
    }

    /// Steps every millisecond instead of jumping over idle ones (the reports are the same).
    pub fn set_skip_idle(&mut self, skip: bool) {
        self.world_mut().resource_mut::<Runtime>().clock.skip_idle = skip;
    }

    /// Runs the timeline, fault handling, the controller and the ISR check at every step instead
    /// of only when something is due for them (the reports are the same).
    pub fn set_skip_idle_rules(&mut self, skip: bool) {
        self.world_mut()
            .resource_mut::<Runtime>()
            .clock
            .skip_idle_rules = skip;
    }

    /// Runs every step before `until_ms`; afterwards the clock reads `until_ms`. Returns how many
    /// steps ran (instants at which something could happen). Takes a checkpoint at every
    /// multiple of the checkpoint interval it passes for the first time.
    pub fn run_until(&mut self, until_ms: u64) -> u64 {
        let mut steps = 0;
        while self.now_ms() < until_ms {
            let next_checkpoint = (self.now_ms() / self.every_ms + 1) * self.every_ms;
            steps += self.run_steps_until(until_ms.min(next_checkpoint));
            self.checkpoint_if_due();
        }
        self.reached_ms = self.reached_ms.max(self.now_ms());
        steps
    }

    /// The furthest instant the run has been to: a sandbox run may go on past its scenario's
    /// `duration_ms`, and seeks back and forth within what it has run.
    pub fn reached_ms(&self) -> u64 {
        self.reached_ms
    }

    /// About what the run's records take in memory: every replica's copy and each produced
    /// record's own share (`scenario::limits`, the estimate a scenario is checked against), less
    /// what retention freed before the oldest checkpoint kept (which holds what it had).
    pub fn record_bytes(&self) -> u64 {
        use crate::scenario::limits::{LOG_RECORD_BYTES, PRODUCED_RECORD_BYTES};
        let m = &self.world.resource::<Runtime>().metrics;
        let (log_freed, rows_freed) = self.checkpoints.front().map_or((0, 0), |c| c.freed);
        (m.records_appended + m.records_replicated).saturating_sub(log_freed) * LOG_RECORD_BYTES
            + m.records_appended.saturating_sub(rows_freed) * PRODUCED_RECORD_BYTES
    }

    /// Whether the ledger of acknowledged records is out of places: a run stops there.
    pub fn ledger_full(&self) -> bool {
        self.world.resource::<super::ledger::AckLedger>().len() >= LEDGER_PLACES
    }

    /// What retention has freed so far: log records (counted per replica) and ledger rows.
    fn freed(&mut self) -> (u64, u64) {
        let mut replicas = self.world.query::<&super::Replica>();
        let logs = replicas
            .iter(&self.world)
            .map(|r| r.log.front() as u64)
            .sum();
        let rows = self
            .world
            .resource::<super::ledger::AckLedger>()
            .forgotten();
        (logs, rows as u64)
    }

    /// The earliest instant a seek can reach: the oldest checkpoint kept.
    pub fn seekable_from_ms(&self) -> u64 {
        self.first as u64 * self.every_ms
    }

    fn run_steps_until(&mut self, until_ms: u64) -> u64 {
        self.world.resource_mut::<Runtime>().clock.horizon_ms = until_ms;
        let mut steps = 0;
        while self.now_ms() < until_ms {
            self.step_once();
            steps += 1;
            if steps % CLEAR_TRACKERS_EVERY == 0 {
                self.world.clear_trackers();
            }
        }
        self.world.clear_trackers();
        steps
    }

    /// Takes a checkpoint when the clock sits on a checkpoint instant not yet saved, then thins
    /// the checkpoints while they are too many or too big.
    fn checkpoint_if_due(&mut self) {
        let now = self.now_ms();
        let next = (self.first + self.checkpoints.len()) as u64 * self.every_ms;
        if now != next {
            return;
        }
        let freed = self.freed();
        let mut checkpoint =
            checkpoint::Checkpoint::capture(&mut self.world, self.run, self.checkpoints.back());
        checkpoint.freed = freed;
        self.checkpoints.push_back(checkpoint);
        // Out of the seekable window: the one left first holds alone what it shared.
        let window_starts = now.saturating_sub(SEEKABLE_MS);
        let mut dropped = false;
        while self.checkpoints.len() > 1 && self.seekable_from_ms() < window_starts {
            self.checkpoints.pop_front();
            self.first += 1;
            dropped = true;
        }
        if dropped && let Some(oldest) = self.checkpoints.front_mut() {
            oldest.count_bytes(None);
        }
        while self.checkpoints.len() > 1 && self.over_budget() {
            if self.open_ended && self.every_ms >= self.open_ended_max_every_ms {
                // It keeps its seeks quick: it is full, and its player stops.
                break;
            }
            // Checkpoint i is at i x every_ms: keeping those of even index keeps that true at
            // twice the spacing.
            let first = self.first;
            let mut kept: Vec<checkpoint::Checkpoint> = std::mem::take(&mut self.checkpoints)
                .into_iter()
                .enumerate()
                .filter(|(k, _)| (first + k).is_multiple_of(2))
                .map(|(_, c)| c)
                .collect();
            // Each now holds alone what it shared with the one dropped before it.
            for i in 0..kept.len() {
                let (before, rest) = kept.split_at_mut(i);
                rest[0].count_bytes(before.last());
            }
            self.checkpoints = kept.into();
            self.first = first.div_ceil(2);
            self.every_ms *= 2;
        }
    }

    fn over_budget(&self) -> bool {
        let budget = if self.open_ended {
            OPEN_ENDED_CHECKPOINT_BYTES
        } else {
            CHECKPOINT_BYTES
        };
        self.checkpoints.len() > MAX_CHECKPOINTS || self.checkpoint_bytes() > budget
    }

    /// Makes this an open-ended run (the sandbox's, which plays on past the scenario's end) or
    /// a bounded one. A bounded run thins its checkpoints as far as its length needs. An
    /// open-ended one keeps the spacing [`checkpoint_every_ms`] chose for its load, so that a
    /// seek never re-runs more than that; when they fill their memory,
    /// [`Sim::checkpoints_full`] says so, and its player stops.
    pub fn set_open_ended(&mut self, open_ended: bool) {
        self.open_ended = open_ended;
    }

    /// Whether an open-ended run's checkpoints have filled their memory: running on would leave
    /// them over budget or their seeks slower.
    pub fn checkpoints_full(&self) -> bool {
        self.open_ended && self.over_budget()
    }

    /// About what the checkpoints take in memory.
    pub fn checkpoint_bytes(&self) -> usize {
        self.checkpoints.iter().map(|c| c.bytes).sum()
    }

    /// How many checkpoints there are, and how far apart (ms).
    pub fn checkpoint_spacing(&self) -> (usize, u64) {
        (self.checkpoints.len(), self.every_ms)
    }

    /// Puts the model in its exact state at `at_ms`, forward or back: from the latest checkpoint
    /// at or before it (taking the missing ones on the way), or by running on from now. An
    /// instant before the seekable window ([`Sim::seekable_from_ms`]) goes to the window's start.
    pub fn seek(&mut self, at_ms: u64) {
        let at_ms = at_ms.max(self.seekable_from_ms());
        let now = self.now_ms();
        let index = (at_ms / self.every_ms) as usize;
        let from_checkpoint = index.clamp(self.first, self.last_index());
        let checkpoint_ms = from_checkpoint as u64 * self.every_ms;
        if !(now <= at_ms && now >= checkpoint_ms) {
            self.restore(from_checkpoint);
        }
        self.run_until(at_ms);
    }

    /// The index of the newest checkpoint kept.
    fn last_index(&self) -> usize {
        self.first + self.checkpoints.len().saturating_sub(1)
    }

    /// Keeps the checkpoints up to index `index`.
    fn keep_checkpoints_to(&mut self, index: usize) {
        self.checkpoints
            .truncate((index + 1).saturating_sub(self.first).max(1));
    }

    fn restore(&mut self, index: usize) {
        let checkpoint_ms = index as u64 * self.every_ms;
        self.checkpoints[index - self.first].restore(&mut self.world);
        self.run += 1;
        // The checkpoint's timeline may lack actions given since, or hold some now discarded:
        // it takes those still to come from the list.
        self.world
            .resource_mut::<timeline::Timeline>()
            .replace_given(self.actions.iter().filter(|(at, _)| *at >= checkpoint_ms));
    }

    /// Applies an action now, as a scenario timeline would: the sandbox's way to change the
    /// cluster. Seeking back to before it and forward again replays it; checkpoints after it
    /// were taken without it and are dropped. Actions already given for later instants (the
    /// playhead was moved back) are kept and replay after it, in order: each is applied, or
    /// refused with Kafka's reason, when the run reaches it, as a scenario's timeline would be.
    pub fn act(&mut self, action: crate::scenario::Action) {
        let now = self.now_ms();
        self.keep_checkpoints_to((now / self.every_ms) as usize);
        // After those at this instant and before later ones: the order the timeline keeps.
        let at = self.actions.partition_point(|(t, _)| *t <= now);
        self.actions.insert(at, (now, action.clone()));
        // The timeline already holds the later actions (a seek back gave them again): this one
        // goes before them.
        self.world
            .resource_mut::<timeline::Timeline>()
            .push(now, action);
    }

    /// Actions given for instants after now, which [`Sim::act`] keeps.
    pub fn actions_after_now(&self) -> usize {
        let now = self.now_ms();
        self.actions.len() - self.actions.partition_point(|(t, _)| *t < now)
    }

    /// Drops the actions given for instants from now on (an explicit choice: the sandbox asks
    /// first), and returns how many: the run from now goes on without them.
    pub fn discard_later_actions(&mut self) -> usize {
        let now = self.now_ms();
        let kept = self.actions.partition_point(|(t, _)| *t < now);
        let dropped = self.actions.len() - kept;
        if dropped > 0 {
            self.actions.truncate(kept);
            self.keep_checkpoints_to((now / self.every_ms) as usize);
            // The timeline holds them: start again from the checkpoint, without them.
            self.restore(self.last_index());
            self.run_until(now);
        }
        dropped
    }

    /// Actions given with [`Sim::act`], with their instants.
    pub fn actions(&self) -> &[(u64, crate::scenario::Action)] {
        &self.actions
    }
}
