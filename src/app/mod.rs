//! The window app: the model of `crate::sim` running in a Bevy window, drawn as a 2D scene with
//! an egui overlay. The model lives in its own world ([`crate::sim::Sim`]); the scene reads a
//! [`Snapshot`](crate::view::snapshot::Snapshot) of it each frame and user actions reach it as the
//! same actions a scenario timeline holds.

use bevy::prelude::*;
use bevy::window::WindowResolution;
use bevy_egui::EguiPlugin;
use bevy_tweening::TweeningPlugin;

mod annotations;
mod camera;
mod clicker;
mod following;
mod frame_bench;
mod input;
pub mod link;
mod narration;
mod operations;
pub mod options;
mod overlay;
mod painter;
mod playback;
mod presenter;
#[cfg(not(target_arch = "wasm32"))]
pub mod render;
mod scene;
mod shot;
mod talk;
mod terminal;
mod tour;
#[cfg(target_arch = "wasm32")]
mod web_page;
mod why_notes;

pub use frame_bench::{FrameBench, bench_frames, summary};
pub use operations::{Change, control_for};
pub use options::Options;
pub use playback::{Applied, Control, Model, Playback, Twin, apply, full, play};
pub use terminal::command_lines as terminal_commands;

/// Within [`AppSet::Input`]: keys, the pointer, a deck or another page ask for steps, then the
/// tour takes them.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputSet {
    /// Keys and clicks (and a render's or a page's requests) become requests.
    Read,
    /// The tour takes the steps asked for.
    Steer,
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
    )
    .configure_sets(
        Update,
        (InputSet::Read, InputSet::Steer)
            .chain()
            .in_set(AppSet::Input),
    );
    app.add_plugins((
        playback::plugin,
        scene::plugin,
        painter::plugin,
        input::plugin,
        overlay::plugin,
        shot::plugin,
        tour::plugin,
    ))
    .add_plugins((
        camera::plugin,
        annotations::plugin,
        operations::plugin,
        terminal::plugin,
        why_notes::plugin,
        clicker::plugin,
        presenter::plugin,
        talk::plugin,
    ));
    #[cfg(target_arch = "wasm32")]
    app.add_plugins(web_page::plugin);
}

/// Opens the window and runs until it is closed (or the screenshot is written).
pub fn run(options: Options) -> AppExit {
    window_app(options).run()
}

fn window_app(options: Options) -> App {
    window_app_with(options, false)
}

/// The window app; `exact` (a render) makes the window exactly `options.size` pixels whatever
/// the screen's scale, and draws frames as fast as it can rather than at the screen's rate.
fn window_app_with(options: Options, exact: bool) -> App {
    let mut app = App::new();
    let title = format!("Kafkascope: {}", options.scenario.name);
    let mut resolution = WindowResolution::new(options.size.0, options.size.1);
    if exact {
        resolution = resolution.with_scale_factor_override(1.0);
    }
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                // The presenter's window may close; the stage's ends the app.
                exit_condition: bevy::window::ExitCondition::OnPrimaryClosed,
                primary_window: Some(Window {
                    title,
                    resolution,
                    present_mode: if exact {
                        bevy::window::PresentMode::AutoNoVsync
                    } else {
                        default()
                    },
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
