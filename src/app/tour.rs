//! A tour in the window: the reader's place in it, the keys and buttons that move it, and the
//! playback each beat sets (an exact seek to its start, its own speed, a stop at its end). The
//! places and steps are `view::tour`'s, tested headless; this plugin only applies them.

use bevy::prelude::*;

use super::AppSet;
use super::following::Following;
use super::playback::{Control, Model, Playback, Shown};
use crate::scenario::Scenario;
use crate::tour::Tour;
use crate::view::follow::{resolve, trace};
use crate::view::tour::{Cue, Place, Stage, Step};

/// The tour being told.
#[derive(Resource)]
pub struct TourPlay {
    pub tour: Tour,
    pub place: Place,
    /// A lab's closing table, counted when the reader reaches it.
    pub table: Option<Result<crate::view::lab::Table, String>>,
    /// The reader reached the table: it is counted the frame after, once "Counting" shows.
    counting: bool,
    /// The talk preset shows the beat's whole narration, not its title and one line (N).
    pub whole_text: bool,
    /// The presenter view is open: the speaker has the text there, and the stage shows the
    /// beat's title only.
    pub presenter: bool,
}

impl TourPlay {
    /// The tour, with its holds found in its run (a tour whose run cannot be played has none).
    pub fn new(tour: Tour, place: Place) -> Self {
        let tour = match tour.clone().with_holds() {
            Ok(held) => held,
            Err(e) => {
                warn!("{}: no holds: {e}", tour.name);
                tour
            }
        };
        TourPlay {
            tour,
            place,
            table: None,
            counting: false,
            whole_text: false,
            presenter: false,
        }
    }
}

/// What the tour's keys and buttons ask for.
#[derive(Message, Debug, Clone)]
pub enum TourControl {
    Step(Step),
    /// A step another page of the same talk took (the web's notes view and its stage keep in
    /// step): taken here too, and not told on.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    Mirror(Step),
    /// Leave the tour for the sandbox, on this scenario.
    Leave(Box<Scenario>),
    /// Open a tour (from the sandbox) at its first beat.
    Open(Box<Tour>, Box<Scenario>),
    /// Show or hide the beat's whole narration under the talk preset's one line.
    WholeText,
}

pub(super) fn plugin(app: &mut App) {
    app.add_message::<TourControl>()
        .init_resource::<Following>()
        .add_systems(Startup, open)
        .add_systems(Update, steer.in_set(super::InputSet::Steer))
        .add_systems(
            Update,
            (track, follow)
                .chain()
                .in_set(AppSet::Model)
                .after(super::playback::read_model),
        );
}

/// Sets the playback for a cue.
pub(super) fn cue(playback: &mut Playback, controls: &mut MessageWriter<Control>, cue: Cue) {
    controls.write(Control::Seek(cue.at_ms));
    playback.speed = cue.speed;
    playback.stop_ms = Some(cue.stop_ms);
    playback.open_ended = false;
    playback.paused = !cue.play;
    playback.carry_ms = 0.0;
}

fn open(
    mut commands: Commands,
    options: Res<super::Options>,
    mut playback: ResMut<Playback>,
    mut controls: MessageWriter<Control>,
) {
    let Some(open) = &options.tour else { return };
    compare_runs(&open.tour, &mut controls);
    let mut place = Place::open(open.beat, open.at_end);
    if open.finished {
        place.stage = Stage::Finished;
    }
    // Opened unpaused (the frame benchmark), the beat plays at once.
    if !options.paused && !open.at_end {
        place.stage = Stage::Playing;
    }
    let play = TourPlay::new(open.tour.clone(), place);
    let c = place.cue(&play.tour);
    playback.speed = c.speed;
    playback.stop_ms = Some(c.stop_ms);
    playback.open_ended = false;
    playback.paused = !c.play;
    commands.insert_resource(play);
}

fn steer(
    mut commands: Commands,
    mut requests: MessageReader<TourControl>,
    mut tour: Option<ResMut<TourPlay>>,
    mut playback: ResMut<Playback>,
    mut controls: MessageWriter<Control>,
    mut following: ResMut<Following>,
) {
    for request in requests.read() {
        match request {
            TourControl::Step(step) | TourControl::Mirror(step) => {
                let Some(tour) = tour.as_deref_mut() else {
                    continue;
                };
                let TourPlay { tour, place, .. } = tour;
                if let Some(c) = place.step(tour, *step) {
                    cue(&mut playback, &mut controls, c);
                }
            }
            TourControl::WholeText => {
                if let Some(tour) = tour.as_deref_mut() {
                    tour.whole_text = !tour.whole_text;
                }
            }
            TourControl::Leave(scenario) => {
                commands.remove_resource::<TourPlay>();
                *following = Following::default();
                playback.stop_ms = None;
                playback.open_ended = true;
                playback.speed = super::Options::DEFAULT_SPEED;
                playback.paused = false;
                controls.write(Control::Load(scenario.clone()));
            }
            TourControl::Open(t, scenario) => {
                let place = Place::open(0, false);
                let play = TourPlay::new((**t).clone(), place);
                let c = place.cue(&play.tour);
                *following = Following::default();
                controls.write(Control::Load(scenario.clone()));
                cue(&mut playback, &mut controls, c);
                commands.insert_resource(play);
                compare_runs(t, &mut controls);
            }
        }
    }
}

/// A lab of two runs or more plays its first two side by side.
fn compare_runs(tour: &Tour, controls: &mut MessageWriter<Control>) {
    if tour.lab.as_ref().is_some_and(|l| l.runs.len() >= 2)
        && let Ok(runs) = tour.run_scenarios()
    {
        controls.write(Control::Compare(
            Box::new(runs[1].1.clone()),
            [runs[0].0.clone(), runs[1].0.clone()],
        ));
    }
}

/// A playing beat ends where the playback stopped; a lab's table is counted once its end is
/// reached.
fn track(model: Res<Model>, tour: Option<ResMut<TourPlay>>) {
    if let Some(mut tour) = tour {
        let now = model.sim.now_ms();
        let TourPlay {
            tour,
            place,
            table,
            counting,
            ..
        } = &mut *tour;
        place.reached(tour, now);
        if place.stage == Stage::Finished
            && table.is_none()
            && let Some(lab) = &tour.lab
        {
            // Running the lab's runs takes a moment: the panel says so first.
            if !*counting {
                *counting = true;
                return;
            }
            *table = Some(
                tour.base_scenario()
                    .map_err(|e| e.to_string())
                    .and_then(|base| crate::view::lab::table(lab, &base)),
            );
        }
    }
}

/// Finds the tour's record once it exists, and where the followed record is now.
fn follow(
    mut model: ResMut<Model>,
    shown: Res<Shown>,
    tour: Option<Res<TourPlay>>,
    mut following: ResMut<Following>,
) {
    if following.layout_version != shown.layout_version {
        *following = Following {
            layout_version: shown.layout_version,
            ..Following::default()
        };
    }
    let now = model.sim.now_ms();
    let world = model.sim.world_mut();
    if following.picked.is_none()
        && following.looked_at_ms != Some(now)
        && let Some(record) = tour.as_ref().and_then(|t| t.tour.follow.as_ref())
    {
        following.picked = resolve(world, record);
        following.looked_at_ms = Some(now);
    }
    let Some(picked) = following.picked else {
        following.trace = None;
        return;
    };
    let Following {
        trace: t,
        acks,
        picked: p,
        ..
    } = &mut *following;
    *t = trace(world, picked, acks);
    // Where it was seen is where to look first next time.
    if let (Some(p), Some(offset)) = (p.as_mut(), t.as_ref().and_then(|t| t.offset)) {
        p.offset = Some(offset);
    }
}
