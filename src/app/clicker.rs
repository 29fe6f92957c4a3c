//! The speaker's keys beyond stepping, which presentation clickers send too: B and W blank the
//! stage to black or white (the same key again shows it), and a beat's number then Enter jumps
//! to that beat. The keys' meaning is `view::tour`'s, tested headless.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use super::InputSet;
use super::playback::Shown;
use super::tour::{TourControl, TourPlay};
use crate::view::tour::{BeatEntry, Blank};

/// The stage's blanking and the beat number being typed.
#[derive(Resource, Default, Debug)]
pub struct Clicker {
    pub blank: Blank,
    pub entry: BeatEntry,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Clicker>()
        .add_systems(Update, keys.in_set(InputSet::Read))
        .add_systems(
            EguiPrimaryContextPass,
            paint
                .in_set(ClickerSystems)
                .after(super::overlay::OverlaySystems),
        );
}

/// The clicker's painting (the blank, the beat number typed), for ordering against it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClickerSystems;

/// The keypad's digits, 0 to 9, beside the digit row's (`options::DIGIT_KEYS`).
const NUMPAD: [KeyCode; 10] = [
    KeyCode::Numpad0,
    KeyCode::Numpad1,
    KeyCode::Numpad2,
    KeyCode::Numpad3,
    KeyCode::Numpad4,
    KeyCode::Numpad5,
    KeyCode::Numpad6,
    KeyCode::Numpad7,
    KeyCode::Numpad8,
    KeyCode::Numpad9,
];

fn keys(
    keys: Res<ButtonInput<KeyCode>>,
    mut contexts: EguiContexts,
    mut clicker: ResMut<Clicker>,
    tour: Option<Res<TourPlay>>,
    mut steps: MessageWriter<TourControl>,
) {
    if let Ok(ctx) = contexts.ctx_mut()
        && ctx.egui_wants_keyboard_input()
    {
        return;
    }
    if keys.just_pressed(KeyCode::KeyB) {
        clicker.blank = clicker.blank.toggled(Blank::Black);
    }
    if keys.just_pressed(KeyCode::KeyW) {
        clicker.blank = clicker.blank.toggled(Blank::White);
    }
    // Beat numbers mean something only in a tour.
    let Some(tour) = tour else {
        clicker.entry.clear();
        return;
    };
    for (d, (digit, numpad)) in (0u8..).zip(super::options::DIGIT_KEYS.into_iter().zip(NUMPAD)) {
        if keys.any_just_pressed([digit, numpad]) {
            clicker.entry.digit(d);
        }
    }
    if keys.any_just_pressed([KeyCode::Enter, KeyCode::NumpadEnter])
        && let Some(step) = clicker.entry.enter(tour.tour.beats.len())
    {
        steps.write(TourControl::Step(step));
    }
    if keys.just_pressed(KeyCode::Escape) {
        clicker.entry.clear();
    }
}

/// The blank covers everything, panels included; the number being typed shows in the middle,
/// with the beat Enter goes to, so the speaker sees what Enter will do.
fn paint(
    mut contexts: EguiContexts,
    clicker: Res<Clicker>,
    shown: Res<Shown>,
    tour: Option<Res<TourPlay>>,
    presenter: Option<Res<super::presenter::Presenter>>,
) {
    let Ok(ctx) = contexts.ctx_mut() else { return };
    if let Some(typed) = clicker.entry.typed() {
        // In the middle of the window, on the panels' own fill, so that nothing under it hides
        // a digit.
        egui::Area::new(egui::Id::new("beat-entry"))
            .order(egui::Order::Foreground)
            .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
            .interactable(false)
            .show(ctx, |ui| {
                egui::Frame::popup(ui.style()).show(ui, |ui| {
                    ui.label(
                        egui::RichText::new(format!("Beat {typed}"))
                            .size(32.0 * shown.text_scale)
                            .strong(),
                    );
                    let beats = tour.as_ref().map_or(0, |t| t.tour.beats.len());
                    let hint = match clicker.entry.target(beats) {
                        Some(n) => format!("Enter to go to beat {n} of {beats}, Esc to cancel"),
                        None => format!("There is no such beat (1 to {beats}): Esc to cancel"),
                    };
                    ui.label(egui::RichText::new(hint).size(16.0 * shown.text_scale));
                });
            });
    }
    // A page showing the speaker's notes is not the stage: it says the stage is blank instead.
    if presenter.is_some_and(|p| p.in_page()) {
        return;
    }
    let fill = match clicker.blank {
        Blank::Shown => return,
        Blank::Black => egui::Color32::BLACK,
        Blank::White => egui::Color32::WHITE,
    };
    ctx.layer_painter(egui::LayerId::new(
        egui::Order::Debug,
        egui::Id::new("blank"),
    ))
    .rect_filled(ctx.content_rect(), 0.0, fill);
}
