//! Playback: runs the model to the instant the transport is at. Pausing, speed and seeking
//! change only where the playhead is; the model itself is always run exactly, step by step, or
//! restored from a checkpoint.

use bevy::prelude::*;

use super::{AppSet, Options};
use crate::scenario::{Action, Scenario};
use crate::sim::Sim;
use crate::view::layout::Layout;
use crate::view::palette::{Palette, Theme};
use crate::view::snapshot::Snapshot;

/// The running model and the scenario it runs.
#[derive(Resource)]
pub struct Model {
    pub sim: Sim,
    pub scenario: Scenario,
}

impl Model {
    /// The run as a scenario file: the set-up, every action given with its instant, as long as
    /// the run has gone, and a description that says what was done.
    pub fn saved(&self) -> Scenario {
        let actions = self.sim.actions();
        let mut scenario = self.scenario.with_actions(actions);
        scenario.duration_ms = scenario.duration_ms.max(self.sim.reached_ms());
        if !actions.is_empty() {
            const LISTED: usize = 8;
            let mut done: Vec<String> = actions
                .iter()
                .take(LISTED)
                .map(|(at, a)| format!("at {}: {a}", crate::view::event_text::clock(*at)))
                .collect();
            if actions.len() > LISTED {
                done.push(format!("{} more", actions.len() - LISTED));
            }
            scenario.description = format!("{}; then {}", scenario.description, done.join("; "));
        }
        scenario
    }

    /// The end of the timeline: the scenario's own, or as far as a sandbox run has gone past it.
    pub fn end_ms(&self) -> u64 {
        self.scenario.duration_ms.max(self.sim.reached_ms())
    }
}

/// The transport.
#[derive(Resource, Debug, Clone)]
pub struct Playback {
    pub paused: bool,
    /// Sim time per wall time, from 1/1000 to 100.
    pub speed: f64,
    /// Sim milliseconds owed to the playhead, below one.
    pub carry_ms: f64,
    /// Advance as if every frame took this long (the frame benchmark: the work of a 60 fps
    /// frame, whatever the renderer here manages).
    pub fixed_frame_ms: Option<f64>,
    /// Run this frame to exactly this instant instead, fraction and all (a render: frame k of a
    /// beat shows k/fps of its wall time, computed from k rather than summed, so none drifts).
    pub frame_target_ms: Option<f64>,
    /// Pause on reaching this instant (a tour's beat ends there).
    pub stop_ms: Option<u64>,
    /// Play goes on past the scenario's `duration_ms` (the sandbox; a tour's run ends there).
    pub open_ended: bool,
    /// Why play stopped by itself, shown beside the clock until it plays again.
    pub halted: Option<String>,
    /// An open-ended run stops when its records take this much memory
    /// ([`crate::scenario::limits::RECORD_MEMORY_BYTES`], the most a scenario may).
    pub memory_cap: u64,
}

pub use super::options::{MAX_SPEED, MIN_SPEED};
pub use crate::view::layout::TALK_TEXT;
/// Where an open-ended run stops: the records' memory a scenario may take.
pub const DEFAULT_MEMORY_CAP: u64 = crate::scenario::limits::RECORD_MEMORY_BYTES;
/// The most sim time one frame runs: beyond it playback slows down rather than stalls.
const MAX_MS_PER_FRAME: f64 = 2_000.0;

/// The second run of a side-by-side: its own model, at the first one's instant, drawn in the
/// right half of the scene. The playback and the user's actions drive both.
#[derive(Resource)]
pub struct Twin {
    pub model: Model,
    /// The runs' labels, left (the main model) then right.
    pub labels: [String; 2],
}

/// What the second run shows: its snapshot and layout, laid out at [`TWIN_ORIGIN`].
#[derive(Resource, Deref, DerefMut)]
pub struct TwinShown(pub Shown);

/// Where the second run's scene lies: far enough that the first run's camera never sees it.
pub const TWIN_ORIGIN: Vec2 = Vec2::new(100_000.0, 0.0);

/// What the playback asks of the model; the overlay, the keyboard and the mouse send these.
#[derive(Message, Debug, Clone)]
pub enum Control {
    /// A scenario in place of the one shown (and of a side-by-side's second run).
    Load(Box<Scenario>),
    /// Runs this scenario beside the one shown, in lock-step from its instant, given the same
    /// actions the one shown was given; the labels name the runs, left then right.
    Compare(Box<Scenario>, [String; 2]),
    /// Back to one run.
    EndCompare,
    /// An action at the playhead; its effect shows at once (the step at the playhead runs).
    Act(Action),
    /// Drops the actions given for instants after the playhead (the sandbox asks first).
    DiscardLater,
    Seek(u64),
    /// Run to the next instant at which anything happens.
    StepForward,
    /// Back one millisecond.
    StepBack,
}

/// The model as last read, where it sits on screen and how it looks.
#[derive(Resource)]
pub struct Shown {
    pub snapshot: Snapshot,
    pub layout: Layout,
    /// The instant drawn, with the fraction of a millisecond the playhead is past it.
    pub display_ms: f64,
    /// Bumped when the model jumps (load, seek): the scene snaps instead of animating.
    pub jumps: u64,
    /// Changes, to a number no other layout had, when the layout is made anew (a scenario
    /// loaded, the scene's area or text size changed): the scene rebuilds.
    pub layout_version: u64,
    /// The area the panels leave the scene, in logical pixels: the layout fills it.
    pub area: Vec2,
    pub theme: Theme,
    /// The reader's text size (times the default).
    pub text_scale: f32,
    /// The talk preset is on: the light theme, text 1.5 times larger, only the narration and
    /// the lag monitor panels.
    pub talk: bool,
    /// The theme before the talk preset, to go back to.
    theme_before_talk: Theme,
    /// Acknowledged records the cluster no longer has, and the event count it was computed at.
    pub lost: Vec<crate::sim::loss::LostRecord>,
    lost_at_events: Option<usize>,
    /// How many of `lost` are unavailable rather than lost, counted with it.
    unavailable: usize,
    /// The broker count and the replica sets' version the layout was made for.
    placed: (usize, u64),
    /// Where the layout lies ([`TWIN_ORIGIN`] for a side-by-side's second run).
    origin: Vec2,
}

impl Shown {
    pub fn new(snapshot: Snapshot, theme: Theme, text_scale: f32) -> Self {
        let area = DEFAULT_AREA;
        Shown {
            placed: (snapshot.brokers.len(), snapshot.assignments_version),
            layout: Layout::of(&snapshot, area, text_scale),
            area,
            display_ms: snapshot.now_ms.saturating_sub(1) as f64,
            snapshot,
            jumps: 0,
            layout_version: 0,
            theme,
            text_scale,
            talk: false,
            theme_before_talk: theme,
            lost: Vec::new(),
            lost_at_events: None,
            unavailable: 0,
            origin: Vec2::ZERO,
        }
    }

    /// A side-by-side's second run, looking as `main` does, in the same area.
    pub fn beside(snapshot: Snapshot, main: &Shown) -> Self {
        Shown::placed(snapshot, main, TWIN_ORIGIN, main.area)
    }

    /// Another run's picture looking as `main` does, laid out at `origin` in `area`.
    pub fn placed(snapshot: Snapshot, main: &Shown, origin: Vec2, area: Vec2) -> Self {
        let mut shown = Shown::new(snapshot, main.theme, main.text_scale);
        shown.look_like(main);
        shown.origin = origin;
        shown.area = area;
        shown.relayout();
        shown
    }

    /// Lays the scene out anew for the snapshot (a new cluster, moved replicas).
    pub fn relayout(&mut self) {
        self.layout = Layout::of(&self.snapshot, self.area, self.text_factor()).at(self.origin);
        // Unique over every Shown, so that a new second run never passes for the last one.
        static VERSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        self.layout_version = VERSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.placed = (
            self.snapshot.brokers.len(),
            self.snapshot.assignments_version,
        );
    }

    /// Takes the look (theme, text size, talk preset) of `main`.
    pub fn look_like(&mut self, main: &Shown) {
        self.theme = main.theme;
        self.text_scale = main.text_scale;
        self.talk = main.talk;
        self.theme_before_talk = main.theme_before_talk;
    }

    pub fn palette(&self) -> Palette {
        Palette::of(self.theme)
    }

    /// Acknowledged records (lost, unavailable): gone for good, or held only by replicas that
    /// cannot lead now (down, or out of sync).
    pub fn missing(&self) -> (usize, usize) {
        (self.lost.len() - self.unavailable, self.unavailable)
    }

    /// How much larger than the default every text is: the reader's size, and the talk preset's.
    pub fn text_factor(&self) -> f32 {
        self.text_scale * if self.talk { TALK_TEXT } else { 1.0 }
    }

    /// Lays the scene out anew for its area and text size, if either changed.
    pub fn fit(&mut self, area: Vec2) {
        let text = self.text_factor();
        if (area - self.area).abs().max_element() < 0.5 && self.layout.text == text {
            return;
        }
        self.area = area;
        self.relayout();
    }

    /// The reader's own theme: the one the talk preset gives back (the web page's link keeps it).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub fn own_theme(&self) -> Theme {
        if self.talk {
            self.theme_before_talk
        } else {
            self.theme
        }
    }

    /// Turns the talk preset on or off; off gives back the theme it replaced.
    pub fn set_talk(&mut self, on: bool) {
        if on == self.talk {
            return;
        }
        if on {
            self.theme_before_talk = self.theme;
            self.theme = Theme::Light;
        } else {
            self.theme = self.theme_before_talk;
        }
        self.talk = on;
    }
}

pub(super) fn plugin(app: &mut App) {
    app.add_message::<Control>()
        .add_systems(PreStartup, setup)
        .add_systems(
            Update,
            (apply_controls, advance, read_model)
                .chain()
                .in_set(AppSet::Model),
        );
}

/// The area a layout fills before the window says how large the scene is (and headless).
pub const DEFAULT_AREA: Vec2 = Vec2::new(1600.0, 900.0);

fn setup(mut commands: Commands, options: Res<Options>) {
    let mut sim = Sim::new(&options.scenario);
    sim.seek(options.at_ms.min(options.scenario.duration_ms));
    let snapshot = Snapshot::of(sim.world_mut());
    let mut shown = Shown::new(snapshot, options.theme, options.text_scale);
    shown.set_talk(options.talk);
    commands.insert_resource(shown);
    commands.insert_resource(Model {
        sim,
        scenario: options.scenario.clone(),
    });
    commands.insert_resource(Playback {
        paused: options.paused || options.shot.is_some(),
        speed: options.speed.clamp(MIN_SPEED, MAX_SPEED),
        carry_ms: 0.0,
        fixed_frame_ms: None,
        frame_target_ms: None,
        stop_ms: None,
        open_ended: true,
        halted: None,
        memory_cap: DEFAULT_MEMORY_CAP,
    });
}

/// What applying a control did, for the window to follow.
pub enum Applied {
    /// The model ran on or took an action; `jumped`: the first run, the second, were restored
    /// to an instant rather than run to it.
    Moved { jumped: bool, twin_jumped: bool },
    /// A new scenario: a new cluster to lay out, and no second run.
    Loaded,
    /// A side-by-side begins with this second run.
    Compare(Box<Twin>),
    /// Back to one run.
    EndCompare,
}

/// Applies a control to the model and a side-by-side's second run: the one way the overlay,
/// the keyboard, the tours and the tests change them.
pub fn apply(control: &Control, model: &mut Model, twin: Option<&mut Twin>) -> Applied {
    let duration = model.scenario.duration_ms;
    let (jumped, twin_jumped) = match control {
        Control::Load(scenario) => {
            *model = Model {
                sim: Sim::new(scenario),
                scenario: (**scenario).clone(),
            };
            return Applied::Loaded;
        }
        Control::Compare(scenario, labels) => {
            // The actions go to the second run as they went to the first.
            let mut sim = Sim::new(scenario);
            for (at, action) in model.sim.actions() {
                sim.run_until(*at);
                sim.act(action.clone());
            }
            sim.seek(model.sim.now_ms());
            return Applied::Compare(Box::new(Twin {
                model: Model {
                    sim,
                    scenario: (**scenario).clone(),
                },
                labels: labels.clone(),
            }));
        }
        Control::EndCompare => return Applied::EndCompare,
        Control::Act(action) => {
            // Applied at the playhead: the step there runs, so the scene shows it at once
            // (the playhead moves on by that millisecond).
            let now = model.sim.now_ms();
            model.sim.act(action.clone());
            model.sim.run_until(now + 1);
            let mut twin = twin;
            if let Some(t) = twin.as_deref_mut() {
                t.model.sim.act(action.clone());
            }
            (false, follow_main(model, twin, false))
        }
        Control::DiscardLater => {
            model.sim.discard_later_actions();
            if let Some(t) = twin {
                t.model.sim.discard_later_actions();
            }
            (false, false)
        }
        Control::Seek(at) => {
            model.sim.seek((*at).min(model.end_ms()));
            (true, follow_main(model, twin, true))
        }
        Control::StepForward => {
            let now = model.sim.now_ms();
            // Past the scenario's end, as far as an open-ended run may go (`play`'s caps).
            if now < duration || full(model, DEFAULT_MEMORY_CAP).is_none() {
                model.sim.step();
                let after = model.sim.now_ms();
                model.sim.seek(after);
            }
            (false, follow_main(model, twin, false))
        }
        Control::StepBack => {
            let now = model.sim.now_ms();
            model.sim.seek(now.saturating_sub(1));
            (true, follow_main(model, twin, true))
        }
    };
    Applied::Moved {
        jumped,
        twin_jumped,
    }
}

fn apply_controls(
    mut commands: Commands,
    mut controls: MessageReader<Control>,
    mut model: ResMut<Model>,
    mut playback: ResMut<Playback>,
    mut shown: ResMut<Shown>,
    mut twin: Option<ResMut<Twin>>,
    mut twin_shown: Option<ResMut<TwinShown>>,
) {
    // A second run begun this frame: the frame's later controls reach it before it is stored.
    let mut fresh: Option<(Twin, TwinShown)> = None;
    for control in controls.read() {
        if !matches!(
            control,
            Control::Act(_) | Control::Compare(..) | Control::EndCompare
        ) {
            playback.carry_ms = 0.0;
        }
        if matches!(control, Control::StepForward | Control::StepBack) {
            playback.paused = true;
        }
        let second = match fresh.as_mut() {
            Some((t, _)) => Some(t),
            None => twin.as_deref_mut(),
        };
        match apply(control, &mut model, second) {
            Applied::Moved {
                jumped,
                twin_jumped,
            } => {
                shown.jumps += u64::from(jumped);
                let second = match fresh.as_mut() {
                    Some((_, s)) => Some(s),
                    None => twin_shown.as_deref_mut(),
                };
                if let Some(s) = second {
                    s.jumps += u64::from(twin_jumped);
                }
            }
            Applied::Loaded => {
                shown.jumps += 1;
                // A new cluster (a run's own changes, added brokers or moved replicas, are laid
                // out again as the snapshot is read).
                shown.snapshot = Snapshot::of(model.sim.world_mut());
                shown.relayout();
                fresh = None;
                end_compare(&mut commands, &mut twin, &mut twin_shown);
            }
            Applied::Compare(mut new) => {
                let beside = Shown::beside(Snapshot::of(new.model.sim.world_mut()), &shown);
                match (&mut twin, &mut twin_shown) {
                    (Some(t), Some(s)) => {
                        **t = *new;
                        s.0 = beside;
                    }
                    _ => fresh = Some((*new, TwinShown(beside))),
                }
            }
            Applied::EndCompare => {
                fresh = None;
                end_compare(&mut commands, &mut twin, &mut twin_shown);
            }
        }
    }
    if let Some((t, s)) = fresh {
        commands.insert_resource(t);
        commands.insert_resource(s);
    }
}

fn end_compare(
    commands: &mut Commands,
    twin: &mut Option<ResMut<Twin>>,
    twin_shown: &mut Option<ResMut<TwinShown>>,
) {
    if twin.is_some() || twin_shown.is_some() {
        commands.remove_resource::<Twin>();
        commands.remove_resource::<TwinShown>();
        *twin = None;
        *twin_shown = None;
    }
}

/// Brings the second run to the first one's instant: by running on, or by a seek (`jump`, or
/// when it is ahead). Says whether it jumped.
fn follow_main(model: &Model, twin: Option<&mut Twin>, jump: bool) -> bool {
    let Some(t) = twin else { return false };
    let at = model.sim.now_ms();
    if jump || at < t.model.sim.now_ms() {
        t.model.sim.seek(at);
        true
    } else {
        t.model.sim.run_until(at);
        false
    }
}

fn advance(
    time: Res<Time>,
    mut model: ResMut<Model>,
    mut playback: ResMut<Playback>,
    mut twin: Option<ResMut<Twin>>,
    twin_shown: Option<ResMut<TwinShown>>,
) {
    let frame_ms = playback
        .fixed_frame_ms
        .unwrap_or(time.delta_secs_f64() * 1000.0);
    play(&mut model, &mut playback, frame_ms);
    if follow_main(&model, twin.as_deref_mut(), false)
        && let Some(mut s) = twin_shown
    {
        s.jumps += 1;
    }
}

/// Plays one frame of `frame_ms` wall time: runs the model on by that times the speed, to the
/// end of a tour's beat or its scenario, or, in the sandbox, on past the scenario's end until
/// its records fill the memory cap.
pub fn play(model: &mut Model, playback: &mut Playback, frame_ms: f64) {
    if playback.paused {
        return;
    }
    playback.halted = None;
    model.sim.set_open_ended(playback.open_ended);
    if playback.open_ended
        && let Some(why) = full(model, playback.memory_cap)
    {
        playback.paused = true;
        playback.halted = Some(why);
        return;
    }
    let scenario_end = if playback.open_ended {
        u64::MAX
    } else {
        model.scenario.duration_ms
    };
    let end = playback
        .stop_ms
        .filter(|s| *s > model.sim.now_ms())
        .unwrap_or(u64::MAX)
        .min(scenario_end);
    let now = model.sim.now_ms();
    let target = match playback.frame_target_ms.take() {
        Some(at) if at >= now as f64 => {
            playback.carry_ms = at.fract();
            at.floor() as u64
        }
        Some(_) => now,
        None => {
            let owed = (playback.carry_ms + frame_ms * playback.speed).min(MAX_MS_PER_FRAME);
            let whole = owed.floor();
            playback.carry_ms = owed - whole;
            now + whole as u64
        }
    }
    .min(end);
    model.sim.run_until(target);
    if target >= end {
        playback.paused = true;
        playback.carry_ms = 0.0;
    }
}

/// Why an open-ended run stops: its records filled the memory a scenario may take, or its
/// checkpoints filled theirs at the spacing that keeps seeking quick.
pub fn full(model: &Model, cap: u64) -> Option<String> {
    let at = crate::view::event_text::clock(model.sim.now_ms());
    // Only the seekable window is kept: a long run's earlier instants are gone.
    let back = if model.sim.seekable_from_ms() > 0 {
        format!(
            "Seek back to see any instant since {} again.",
            crate::view::event_text::clock(model.sim.seekable_from_ms())
        )
    } else {
        "Seek back to see any instant again.".to_string()
    };
    if model.sim.record_bytes() >= cap {
        return Some(format!(
            "Stopped at {at}: the run's records take about {} MiB, the most a scenario may ({} MiB with every replica's copy). {back}",
            model.sim.record_bytes() >> 20,
            cap >> 20
        ));
    }
    if model.sim.ledger_full() {
        return Some(format!(
            "Stopped at {at}: the run has acknowledged as many records as its ledger can count. {back}"
        ));
    }
    model.sim.checkpoints_full().then(|| {
        let (count, every_ms) = model.sim.checkpoint_spacing();
        format!(
            "Stopped at {at}: the {count} checkpoints that keep seeking quick (one every {}) take about {} MiB, the most a run may. {back}",
            crate::view::why::span(every_ms),
            model.sim.checkpoint_bytes() >> 20
        )
    })
}

pub(super) fn read_model(
    mut model: ResMut<Model>,
    playback: Res<Playback>,
    mut shown: ResMut<Shown>,
    twin: Option<ResMut<Twin>>,
    twin_shown: Option<ResMut<TwinShown>>,
) {
    read(&mut model, &playback, &mut shown);
    if let (Some(mut twin), Some(mut twin_shown)) = (twin, twin_shown) {
        twin_shown.look_like(&shown);
        let area = shown.area;
        twin_shown.fit(area);
        read(&mut twin.model, &playback, &mut twin_shown);
    }
}

fn read(model: &mut Model, playback: &Playback, shown: &mut Shown) {
    let snapshot = Snapshot::of(model.sim.world_mut());
    // Steps before `now_ms` have run: the picture is of the instant before it, plus the
    // fraction of a millisecond the playhead has moved on.
    shown.display_ms = snapshot.now_ms.saturating_sub(1) as f64 + playback.carry_ms;
    // A reassignment moves replicas between brokers: the scene is laid out for the new ones.
    let placed = (snapshot.brokers.len(), snapshot.assignments_version);
    shown.snapshot = snapshot;
    // So does a group grown past the rows its box has.
    if placed != shown.placed || shown.snapshot.most_members() > shown.layout.members {
        shown.relayout();
    }
    // Records are lost only by what the event log records (truncations, wipes, elections).
    let events = model
        .sim
        .world()
        .resource::<crate::sim::Runtime>()
        .events
        .events
        .len();
    if shown.lost_at_events != Some(events) {
        shown.lost = crate::sim::loss::lost_in(model.sim.world());
        shown.unavailable = shown
            .lost
            .iter()
            .filter(|l| l.state == crate::sim::loss::Missing::Unavailable)
            .count();
        shown.lost_at_events = Some(events);
    }
}
