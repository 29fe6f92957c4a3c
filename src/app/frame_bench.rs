//! The per-frame benchmark: the CPU time the app's own systems take each frame (the model's
//! steps, the scene, the overlay), measured inside the running app. Rendering itself is not
//! counted: it is the GPU's and the driver's. Each frame moves the playhead by a sixtieth of a
//! second of real time, so the model does a 60 fps frame's work however fast this machine's
//! renderer draws.

use std::sync::{Arc, Mutex};

use bevy::platform::time::Instant;
use bevy::prelude::*;
use bevy_egui::EguiPrimaryContextPass;

use super::{AppSet, Options};

/// Present when the app runs as a benchmark: collects timings, then exits.
#[derive(Resource, Debug, Default, Clone)]
pub struct FrameBench {
    /// Frames to measure (after the first ones, which load and warm up).
    pub frames: usize,
    pub model_us: Vec<f64>,
    pub view_us: Vec<f64>,
    pub overlay_us: Vec<f64>,
    started: Option<Instant>,
    frame: usize,
    /// The sim time when measuring started and ended.
    pub sim_start_ms: u64,
    pub sim_end_ms: u64,
    /// Where the timings go when the app exits (running the app consumes its world).
    out: Arc<Mutex<Vec<FrameBench>>>,
}

const WARM_UP: usize = 30;

impl FrameBench {
    pub fn new(frames: usize) -> Self {
        FrameBench {
            frames,
            ..default()
        }
    }

    fn start(&mut self) {
        self.started = Some(Instant::now());
    }

    fn stop(&mut self) -> Option<f64> {
        let t = self.started.take()?.elapsed().as_secs_f64() * 1e6;
        (self.frame >= WARM_UP).then_some(t)
    }
}

/// Mean and 95th percentile of a series, in milliseconds.
pub fn summary(us: &[f64]) -> (f64, f64) {
    if us.is_empty() {
        return (0.0, 0.0);
    }
    let mut sorted = us.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    let p95 = sorted[((sorted.len() as f64 * 0.95) as usize).min(sorted.len() - 1)];
    (mean / 1000.0, p95 / 1000.0)
}

pub(super) fn plugin(app: &mut App) {
    app.add_systems(PostStartup, |mut playback: ResMut<super::Playback>| {
        playback.fixed_frame_ms = Some(1000.0 / 60.0)
    })
    // A tour measured goes on past each hold and to its next beat as each ends, as a reader
    // pressing Next would.
    .add_systems(
        Update,
        (|tour: Option<Res<super::tour::TourPlay>>,
          mut steps: MessageWriter<super::tour::TourControl>| {
            use crate::view::tour::Stage;
            if tour.is_some_and(|t| matches!(t.place.stage, Stage::Ended | Stage::Held(_))) {
                steps.write(super::tour::TourControl::Step(
                    crate::view::tour::Step::Next,
                ));
            }
        })
        .in_set(super::InputSet::Read),
    )
    .add_systems(
        Update,
        (
            (|mut b: ResMut<FrameBench>| b.start())
                .after(AppSet::Input)
                .before(AppSet::Model),
            (|mut b: ResMut<FrameBench>| {
                if let Some(t) = b.stop() {
                    b.model_us.push(t);
                }
                b.start();
            })
            .after(AppSet::Model)
            .before(AppSet::Scene),
            (|mut b: ResMut<FrameBench>| {
                if let Some(t) = b.stop() {
                    b.view_us.push(t);
                }
            })
            .after(AppSet::Paint),
        )
            .run_if(resource_exists::<FrameBench>),
    )
    .add_systems(
        EguiPrimaryContextPass,
        (
            (|mut b: ResMut<FrameBench>| b.start()).before(super::overlay::OverlaySystems),
            (|mut b: ResMut<FrameBench>,
              model: Res<super::Model>,
              mut exit: MessageWriter<AppExit>| {
                if b.frame == WARM_UP {
                    b.sim_start_ms = model.sim.now_ms();
                }
                b.sim_end_ms = model.sim.now_ms();
                if let Some(t) = b.stop() {
                    b.overlay_us.push(t);
                }
                b.frame += 1;
                if b.overlay_us.len() == b.frames {
                    let done = b.clone();
                    b.out.lock().expect("one writer").push(done);
                    exit.write(AppExit::Success);
                }
            })
            .after(super::overlay::OverlaySystems),
        )
            .run_if(resource_exists::<FrameBench>),
    );
}

/// Runs the app on a scenario at `speed` (a tour at its beat's speed) and returns the timings.
pub fn bench_frames(mut options: Options, frames: usize, speed: f64) -> FrameBench {
    if options.tour.is_none() {
        options.speed = speed;
    }
    options.paused = false;
    options.shot = None;
    let mut app = super::window_app(options);
    let bench = FrameBench::new(frames);
    let out = bench.out.clone();
    app.insert_resource(bench);
    app.add_plugins(plugin);
    app.run();
    out.lock()
        .expect("the app has exited")
        .pop()
        .unwrap_or_default()
}
