//! Keyboard shortcuts and the mouse: what the pointer is over (for the explanations) and which
//! broker was clicked (for its menu). Both become playback changes or model actions.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::window::{MonitorSelection, PrimaryWindow, WindowMode};
use bevy_egui::EguiContexts;

use super::InputSet;
use super::following::Following;
use super::painter::{to_layout, to_world};
use super::playback::{Control, MAX_SPEED, MIN_SPEED, Playback, Shown};
use super::tour::{TourControl, TourPlay};
use crate::view::follow::at_offset;
use crate::view::hit::hit;
use crate::view::log_strip::StripPlace;
use crate::view::palette::Theme;
use crate::view::tour::Step;

pub use crate::view::explain::Target;

#[derive(Resource, Default, Debug)]
pub struct Pointer {
    pub hover: Option<Target>,
    /// The broker whose menu is open, and where its box lies on screen (logical pixels): the
    /// menu opens beside it.
    pub menu: Option<(u32, Rect)>,
    pub show_help: bool,
    /// Whether the user asked to show or hide the details panel; `None` follows the window's width.
    pub details: Option<bool>,
    /// Whether the details panel shows now.
    pub details_shown: bool,
    /// The Terminal panel (Kafka's tools at the playhead) is open.
    pub terminal: bool,
    /// The talk panel (beats marked while playing, saved as a tour) is open.
    pub talk: bool,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Pointer>()
        .add_systems(Update, (keyboard, mouse).in_set(InputSet::Read));
}

/// The speeds one click or key away: a tenth of real time to follow a request by eye, real time
/// (a crashed broker is fenced in broker.session.timeout.ms, 9 s), and faster to see minutes
/// pass.
pub const SPEED_PRESETS: [f64; 4] = [0.1, 1.0, 10.0, 100.0];

/// The next preset above `speed` (`up`), or below it.
pub fn speed_preset(speed: f64, up: bool) -> f64 {
    let next = if up {
        SPEED_PRESETS.iter().find(|p| **p > speed * 1.0001)
    } else {
        SPEED_PRESETS.iter().rev().find(|p| **p < speed / 1.0001)
    };
    next.copied().unwrap_or(speed)
}

/// A speed as the bar writes it: "1/20" below real time, "10.0" above.
pub fn speed_name(speed: f64) -> String {
    if speed < 1.0 {
        format!("1/{:.0}", 1.0 / speed)
    } else {
        format!("{speed:.1}")
    }
}

/// The speeds + and - step through: a log scale from 1/1000 to 100.
pub fn speed_step(speed: f64, up: bool) -> f64 {
    let steps_per_decade = 4.0;
    let k = (speed.log10() * steps_per_decade).round() + if up { 1.0 } else { -1.0 };
    10f64.powf(k / steps_per_decade).clamp(MIN_SPEED, MAX_SPEED)
}

/// What the reader's input asks for: the playback's controls and the tour's steps.
#[derive(SystemParam)]
pub(super) struct Requests<'w> {
    pub(super) controls: MessageWriter<'w, Control>,
    pub(super) steps: MessageWriter<'w, TourControl>,
}

/// What a key sets at once: the playback, the panels shown, the look, the notes and the
/// window's mode.
#[derive(SystemParam)]
pub(super) struct Switches<'w, 's> {
    playback: ResMut<'w, Playback>,
    pointer: ResMut<'w, Pointer>,
    shown: ResMut<'w, Shown>,
    why: ResMut<'w, super::why_notes::WhyNotes>,
    window: Single<'w, 's, &'static mut Window, With<PrimaryWindow>>,
}

pub(super) fn keyboard(
    keys: Res<ButtonInput<KeyCode>>,
    mut contexts: EguiContexts,
    tour: Option<Res<TourPlay>>,
    requests: Requests,
    switches: Switches,
) {
    if let Ok(ctx) = contexts.ctx_mut()
        && ctx.egui_wants_keyboard_input()
    {
        return;
    }
    let Requests {
        mut controls,
        mut steps,
    } = requests;
    let Switches {
        mut playback,
        mut pointer,
        mut shown,
        mut why,
        mut window,
    } = switches;
    let shift = keys.any_pressed([KeyCode::ShiftLeft, KeyCode::ShiftRight]);
    if tour.is_some() {
        // A reader's keys and a speaker's clicker (which sends PageDown and PageUp): beat by beat.
        let step = if keys.any_just_pressed([
            KeyCode::ArrowRight,
            KeyCode::PageDown,
            KeyCode::Space,
            KeyCode::Period,
        ]) {
            Some(if shift && keys.just_pressed(KeyCode::Space) {
                Step::Previous
            } else {
                Step::Next
            })
        } else if keys.any_just_pressed([KeyCode::ArrowLeft, KeyCode::PageUp, KeyCode::Backspace]) {
            Some(Step::Previous)
        } else if keys.just_pressed(KeyCode::Home) {
            Some(Step::First)
        } else if keys.just_pressed(KeyCode::End) {
            Some(Step::Last)
        } else if keys.just_pressed(KeyCode::KeyR) {
            Some(Step::Replay)
        } else {
            None
        };
        if let Some(step) = step {
            steps.write(TourControl::Step(step));
        }
        if keys.just_pressed(KeyCode::KeyN) {
            steps.write(TourControl::WholeText);
        }
        if keys.just_pressed(KeyCode::KeyK) {
            playback.paused = !playback.paused;
        }
    } else {
        if keys.just_pressed(KeyCode::Space) {
            playback.paused = !playback.paused;
        }
        if keys.just_pressed(KeyCode::ArrowRight) {
            controls.write(Control::StepForward);
        }
        if keys.just_pressed(KeyCode::ArrowLeft) {
            controls.write(Control::StepBack);
        }
        if keys.just_pressed(KeyCode::Home) {
            controls.write(Control::Seek(0));
        }
    }
    if keys.any_just_pressed([KeyCode::NumpadAdd]) || (keys.just_pressed(KeyCode::Equal)) {
        playback.speed = speed_step(playback.speed, true);
    }
    if keys.any_just_pressed([KeyCode::Minus, KeyCode::NumpadSubtract]) {
        playback.speed = speed_step(playback.speed, false);
    }
    // The presets: ] and [ (digits are kept for jumping to a beat).
    if keys.just_pressed(KeyCode::BracketRight) {
        playback.speed = speed_preset(playback.speed, true);
    }
    if keys.just_pressed(KeyCode::BracketLeft) {
        playback.speed = speed_preset(playback.speed, false);
    }
    if keys.just_pressed(KeyCode::Slash) && shift || keys.just_pressed(KeyCode::F1) {
        pointer.show_help = !pointer.show_help;
    }
    if keys.just_pressed(KeyCode::KeyT) {
        shown.theme = match shown.theme {
            Theme::Dark => Theme::Light,
            Theme::Light => Theme::Dark,
        };
    }
    if keys.just_pressed(KeyCode::KeyD) {
        pointer.details = Some(!pointer.details_shown);
    }
    if keys.just_pressed(KeyCode::KeyH) {
        why.hidden = !why.hidden;
    }
    if keys.just_pressed(KeyCode::Backquote) {
        pointer.terminal = !pointer.terminal;
    }
    if keys.just_pressed(KeyCode::KeyP) {
        let on = !shown.talk;
        shown.set_talk(on);
    }
    if keys.just_pressed(KeyCode::KeyF) {
        window.mode = match window.mode {
            WindowMode::Windowed => WindowMode::BorderlessFullscreen(MonitorSelection::Current),
            _ => WindowMode::Windowed,
        };
    }
    if keys.just_pressed(KeyCode::Escape) {
        pointer.menu = None;
        pointer.show_help = false;
        // As everywhere else, Esc leaves full screen.
        if window.mode != WindowMode::Windowed {
            window.mode = WindowMode::Windowed;
        }
    }
}

/// The mouse on screen: its buttons, the window's cursor, the scene's camera that maps it onto
/// the scene, and egui, whose panels may have it.
#[derive(SystemParam)]
struct Mouse<'w, 's> {
    buttons: Res<'w, ButtonInput<MouseButton>>,
    window: Single<'w, 's, &'static Window, With<PrimaryWindow>>,
    camera: Single<
        'w,
        's,
        (&'static Camera, &'static GlobalTransform),
        With<super::camera::SceneCamera>,
    >,
    contexts: EguiContexts<'w, 's>,
}

fn mouse(
    on_screen: Mouse,
    shown: Res<Shown>,
    model: Res<super::playback::Model>,
    tour: Option<Res<TourPlay>>,
    mut following: ResMut<Following>,
    mut pointer: ResMut<Pointer>,
) {
    let Mouse {
        buttons,
        window,
        camera,
        mut contexts,
    } = on_screen;
    let over_ui = contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.egui_wants_pointer_input() || ctx.is_pointer_over_egui());
    let (camera, transform) = *camera;
    let at = window
        .cursor_position()
        .and_then(|p| camera.viewport_to_world_2d(transform, p).ok())
        .map(to_layout);
    pointer.hover = if over_ui {
        None
    } else {
        at.and_then(|p| hit(&shown.snapshot, &shown.layout, shown.display_ms, p))
    };
    if buttons.just_pressed(MouseButton::Left) && !over_ui {
        // A log's cell picks its record to follow; the rest of a broker opens its menu.
        let cell = match (pointer.hover, at) {
            (Some(Target::Replica { ordinal, broker }), Some(at)) => shown
                .layout
                .replica(ordinal, broker)
                .zip(shown.snapshot.partitions.get(ordinal as usize))
                .and_then(|(slot, p)| StripPlace::of(slot.rect, p, shown.layout.text).offset_at(at))
                .map(|offset| (ordinal, offset)),
            _ => None,
        };
        let picked =
            cell.and_then(|(ordinal, offset)| at_offset(model.sim.world(), ordinal, offset));
        if let Some(picked) = picked {
            *following = Following::pick(picked, shown.layout_version);
            pointer.menu = None;
        } else {
            // A tour's beats are its scenario's run: breaking the cluster is the sandbox's.
            pointer.menu = match pointer.hover {
                Some(Target::Broker(b)) | Some(Target::Replica { broker: b, .. })
                    if tour.is_none() =>
                {
                    // The broker's box on screen: the layout's rectangle through the camera.
                    let on_screen = |p: Vec2| {
                        camera
                            .world_to_viewport(transform, to_world(p).extend(0.0))
                            .ok()
                    };
                    shown.layout.broker(b).and_then(|r| {
                        let (a, c) = (on_screen(r.min)?, on_screen(r.max)?);
                        Some((b, Rect::from_corners(a, c)))
                    })
                }
                _ => None,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_steps_are_a_log_scale_within_bounds() {
        assert!((speed_step(1.0, true) - 10f64.powf(0.25)).abs() < 1e-9);
        assert!((speed_step(1.0, false) - 10f64.powf(-0.25)).abs() < 1e-9);
        assert_eq!(speed_step(MAX_SPEED, true), MAX_SPEED);
        assert_eq!(speed_step(MIN_SPEED, false), MIN_SPEED);
    }

    #[test]
    fn speed_presets_go_up_and_down_from_anywhere() {
        assert_eq!(speed_preset(1.0, true), 10.0);
        assert_eq!(speed_preset(1.0, false), 0.1);
        assert_eq!(speed_preset(0.05, true), 0.1);
        assert_eq!(speed_preset(3.0, false), 1.0);
        assert_eq!(speed_preset(100.0, true), 100.0);
        assert_eq!(speed_preset(0.1, false), 0.1);
    }
}
