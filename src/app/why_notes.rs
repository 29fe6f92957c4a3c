//! The scene's "why" notes ([`crate::view::why`]) beside the things they are about: a crashed
//! broker's fencing time, a new partition's countdown, a zombie leader, a refused write, a group
//! that cannot commit, a producer waiting out a hung connection. H hides and shows them; the sandbox shows them, a tour only when it asks.

use bevy::prelude::*;
use bevy_egui::egui;

use super::AppSet;
use super::painter::to_world;
use super::playback::{Model, Shown};
use super::tour::TourPlay;
use crate::view::explain::Target;
use crate::view::why::{Note, notes};

/// The height of a box's title row at text size 1: a note starts below it.
const TITLE_ROW: f32 = 36.0;

/// The notes now, each with where its thing lies on screen (logical pixels) below its title.
#[derive(Resource, Default)]
pub struct WhyNotes {
    /// The reader hid them (H).
    pub hidden: bool,
    pub notes: Vec<Note>,
    pub placed: Vec<(Rect, String)>,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<WhyNotes>().add_systems(
        Update,
        place
            .in_set(AppSet::Scene)
            .after(super::playback::read_model),
    );
}

/// Where a note's thing lies in the layout.
fn target_rect(shown: &Shown, target: Target) -> Option<Rect> {
    let layout = &shown.layout;
    match target {
        Target::Broker(b) => layout.broker(b),
        Target::Replica { ordinal, broker } => layout.replica(ordinal, broker).map(|s| s.rect),
        Target::Group(g) => layout.groups.get(g).copied(),
        Target::Producer(p) => layout.producers.get(p).copied(),
        _ => None,
    }
}

fn place(
    shown: Res<Shown>,
    model: Res<Model>,
    tour: Option<Res<TourPlay>>,
    camera: Single<(&Camera, &GlobalTransform), With<super::camera::SceneCamera>>,
    mut why: ResMut<WhyNotes>,
) {
    why.placed.clear();
    // The talk preset keeps the stage to what the tour says: it shows them when the tour asks.
    let asked = match &tour {
        Some(t) => t.tour.why_notes,
        None => !shown.talk,
    };
    if why.hidden || !asked {
        why.notes.clear();
        return;
    }
    why.notes = notes(&shown.snapshot, &model.scenario.cluster);
    let (camera, transform) = *camera;
    let on_screen = |p: Vec2| {
        camera
            .world_to_viewport(transform, to_world(p).extend(0.0))
            .ok()
    };
    // A note goes under its thing's title row, which grows with the scene's text.
    let title_row = TITLE_ROW * shown.layout.text;
    let placed: Vec<(Rect, String)> = why
        .notes
        .iter()
        .filter_map(|n| {
            let r = target_rect(&shown, n.target)?;
            let below_title = Vec2::new(r.min.x, (r.min.y + title_row).min(r.max.y));
            let (a, b) = (on_screen(below_title)?, on_screen(r.max)?);
            Some((Rect::from_corners(a, b), n.text.clone()))
        })
        .collect();
    why.placed = placed;
}

/// Paints the notes: each a small framed text at the top left of its thing, lifted above any
/// note already there.
pub(super) fn paint(ctx: &egui::Context, why: &WhyNotes, warn: egui::Color32) {
    let zoom = ctx.zoom_factor();
    let mut taken: Vec<egui::Rect> = Vec::new();
    for (i, (r, text)) in why.placed.iter().enumerate() {
        // Under the thing's title row, over its top left.
        let mut at = egui::pos2(r.min.x / zoom + 6.0, r.min.y / zoom);
        // Below the notes already placed where this one would go.
        for t in &taken {
            if (t.left() - at.x).abs() < 200.0 && t.top() <= at.y + 1.0 && t.bottom() > at.y {
                at.y = t.bottom() + 2.0;
            }
        }
        let width = (r.width() / zoom).clamp(150.0, 260.0);
        let response = egui::Area::new(egui::Id::new(("why note", i)))
            .order(egui::Order::Middle)
            .fixed_pos(at)
            .interactable(false)
            .constrain(true)
            .show(ctx, |ui| {
                egui::Frame::popup(ui.style())
                    .stroke(egui::Stroke::new(1.5, warn))
                    .inner_margin(egui::Margin::symmetric(6, 3))
                    .show(ui, |ui| {
                        ui.set_max_width(width);
                        ui.label(egui::RichText::new(text).color(warn));
                    });
            });
        taken.push(response.response.rect);
    }
}
