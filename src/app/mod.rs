//! The window app: the model of `crate::sim` running in a Bevy window, drawn as a 2D scene with
//! an egui overlay. The model lives in its own world ([`crate::sim::Sim`]); the scene reads a
//! [`Snapshot`](crate::view::snapshot::Snapshot) of it each frame and user actions reach it as the
//! same actions a scenario timeline holds.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy::window::WindowResolution;
use bevy_egui::EguiPlugin;
use bevy_tweening::TweeningPlugin;

use crate::scenario::Scenario;
use crate::view::palette::Theme;

mod frame_bench;
mod input;
mod overlay;
mod painter;
mod playback;
mod scene;
mod shot;
#[cfg(target_arch = "wasm32")]
mod web_page;

pub use frame_bench::{FrameBench, bench_frames, summary};
pub use playback::{Model, Playback};

/// How the app starts.
#[derive(Resource, Debug, Clone)]
pub struct Options {
    pub scenario: Scenario,
    /// Where in sim time to open.
    pub at_ms: u64,
    pub theme: Theme,
    /// The window's size in logical pixels.
    pub size: (u32, u32),
    /// Take a screenshot of the first settled frame into this file, then exit.
    pub shot: Option<PathBuf>,
    /// Sim time per wall time.
    pub speed: f64,
    pub paused: bool,
    /// Multiplies every text size, for projectors.
    pub text_scale: f32,
}

impl Options {
    /// Kafka's messages cross a data centre in about a millisecond: at 1/20 of real time a
    /// request in flight can be followed by eye.
    pub const DEFAULT_SPEED: f64 = 0.05;

    pub fn new(scenario: Scenario) -> Self {
        Options {
            scenario,
            at_ms: 0,
            theme: Theme::Dark,
            size: (1600, 900),
            shot: None,
            speed: Self::DEFAULT_SPEED,
            paused: false,
            text_scale: 1.0,
        }
    }
}

/// The order of the app's own systems within a frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppSet {
    /// Keyboard and mouse become playback changes and model actions.
    Input,
    /// The model runs to the instant the playback is at, and is read into a snapshot.
    Model,
    /// The scene is brought up to date with the snapshot.
    Scene,
    /// Draw commands become sprites and text.
    Paint,
}

/// The app's systems and resources, without windowing: shared by [`run`] and the frame bench.
pub fn plugin(app: &mut App) {
    app.configure_sets(
        Update,
        (AppSet::Input, AppSet::Model, AppSet::Scene, AppSet::Paint).chain(),
    );
    app.add_plugins((
        playback::plugin,
        scene::plugin,
        painter::plugin,
        input::plugin,
        overlay::plugin,
        shot::plugin,
    ));
    #[cfg(target_arch = "wasm32")]
    app.add_plugins(web_page::plugin);
}

/// Opens the window and runs until it is closed (or the screenshot is written).
pub fn run(options: Options) -> AppExit {
    window_app(options).run()
}

fn window_app(options: Options) -> App {
    let mut app = App::new();
    let title = format!("Kafkascope: {}", options.scenario.name);
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title,
                    resolution: WindowResolution::new(options.size.0, options.size.1),
                    canvas: Some("#kafkascope".into()),
                    fit_canvas_to_parent: true,
                    ..default()
                }),
                ..default()
            })
            .set(bevy::log::LogPlugin {
                filter: "wgpu=error,naga=warn,bevy_render=warn,bevy_winit=warn".into(),
                ..default()
            }),
    )
    .add_plugins((EguiPlugin::default(), TweeningPlugin))
    .insert_resource(options)
    .add_plugins(plugin);
    app
}
