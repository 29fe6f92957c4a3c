//! The scene's camera: it frames what the layout uses, or, in a tour, what the beat is about,
//! and moves between framings smoothly (bevy_tweening), snapping after a jump.

use std::time::Duration;

use bevy::camera::ScalingMode;
use bevy::prelude::*;
use bevy_tweening::{Lens, Tween, TweenAnim};

use super::AppSet;
use super::painter::to_world;
use super::playback::DEFAULT_AREA;
use super::playback::{Shown, TwinShown};
use super::presenter::PreviewShown;
use super::tour::TourPlay;
use crate::view::tour::{framed_parts, view_of};

/// How long the camera takes to move to a new framing (wall time).
const MOVE: Duration = Duration::from_millis(900);

/// The part of the scene (layout coordinates) the camera shows now.
#[derive(Component, Debug, Clone, Copy)]
pub struct Framing {
    pub rect: Rect,
    /// Where it is heading, and the layout it last snapped to.
    target: Rect,
    layout: Option<u64>,
}

/// Moves a framing between two rectangles, corner by corner.
struct FramingLens {
    start: Rect,
    end: Rect,
}

impl Lens<Framing> for FramingLens {
    fn lerp(&mut self, mut target: Mut<'_, Framing>, ratio: f32) {
        target.rect = Rect::from_corners(
            self.start.min.lerp(self.end.min, ratio),
            self.start.max.lerp(self.end.max, ratio),
        );
    }
}

/// The camera of the run shown (order 0: it clears the window).
#[derive(Component)]
pub struct SceneCamera;

/// The camera of a side-by-side's second run, in the right half (order 1, drawn over the first
/// camera's clear; egui's is order 2). Inactive without a second run.
#[derive(Component)]
pub struct TwinCamera;

/// The presenter view's thumbnail camera: the next beat's first frame, whole, drawn into an
/// image the presenter window shows. Inactive without a preview.
#[derive(Component)]
pub struct PreviewCamera;

/// A preview camera drawing into `image`.
pub(super) fn preview_camera(image: Handle<Image>) -> impl Bundle {
    let whole = Rect::from_corners(Vec2::ZERO, DEFAULT_AREA);
    (
        PreviewCamera,
        framing_camera(whole),
        Camera {
            order: -1,
            is_active: false,
            ..default()
        },
        bevy::camera::RenderTarget::Image(image.into()),
    )
}

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_cameras).add_systems(
        Update,
        (frame, frame_twin, frame_preview, apply)
            .chain()
            .in_set(AppSet::Scene)
            .after(super::annotations::marks_of_beat)
            .after(bevy_tweening::AnimationSystem::AnimationUpdate),
    );
}

fn framing_camera(whole: Rect) -> (Camera2d, Projection, Framing) {
    (
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin {
                min_width: whole.width(),
                min_height: whole.height(),
            },
            ..OrthographicProjection::default_2d()
        }),
        Framing {
            rect: whole,
            target: whole,
            layout: None,
        },
    )
}

fn spawn_cameras(mut commands: Commands) {
    let whole = Rect::from_corners(Vec2::ZERO, DEFAULT_AREA);
    commands.spawn((SceneCamera, framing_camera(whole)));
    commands.spawn((
        TwinCamera,
        framing_camera(whole),
        Camera {
            order: 1,
            clear_color: ClearColorConfig::None,
            is_active: false,
            ..default()
        },
    ));
}

/// The second run's camera frames what the first's does where their scenes are laid out alike,
/// so that the halves compare place for place, else what the beat frames in its own run. It
/// works only while there is a second run.
fn frame_twin(
    mut commands: Commands,
    main: Res<Shown>,
    marks: Res<super::annotations::BeatMarks>,
    twin: Option<Res<TwinShown>>,
    tour: Option<Res<TourPlay>>,
    options: Res<super::Options>,
    mut cameras: Query<(Entity, &mut Framing, &mut Camera), With<TwinCamera>>,
) {
    for (e, mut framing, mut camera) in &mut cameras {
        // Written only when it changes: a write marks the camera changed for the renderer.
        if camera.is_active != twin.is_some() {
            camera.is_active = twin.is_some();
        }
        let Some(twin) = twin.as_deref() else {
            continue;
        };
        let shown = &twin.0;
        let to = if shown.layout.boxes().eq(main.layout.boxes()) {
            target(&main, true, &marks)
        } else {
            let beat = tour.as_ref().map(|t| &t.tour.beats[t.place.beat]);
            let focus = beat
                .map_or_else(Vec::new, |b| {
                    framed_parts(b, &shown.snapshot, &shown.layout, None)
                })
                .into_iter()
                .reduce(|a, b| a.union(b));
            view_of(focus, &[], &shown.layout, true)
        };
        let shot = options.shot.is_some();
        move_to(&mut commands, e, &mut framing, to, shown, shot);
    }
}

/// The preview shows its whole layout, snapped: it is a still of a beat's start.
fn frame_preview(
    preview: Option<Res<PreviewShown>>,
    mut cameras: Query<(&mut Framing, &mut Camera), With<PreviewCamera>>,
) {
    for (mut framing, mut camera) in &mut cameras {
        if camera.is_active != preview.is_some() {
            camera.is_active = preview.is_some();
        }
        let Some(shown) = preview.as_deref() else {
            continue;
        };
        let to = view_of(None, &[], &shown.layout, false);
        if framing.rect != to {
            *framing = Framing {
                rect: to,
                target: to,
                layout: Some(shown.layout_version),
            };
        }
    }
}

/// What to frame now: the beat's focus and its marks, as this frame's drawing found them, or
/// the whole layout; side by side, at a size that reads.
fn target(shown: &Shown, side_by_side: bool, marks: &super::annotations::BeatMarks) -> Rect {
    let drawing = &marks.0;
    let callouts: Vec<Rect> = drawing.callouts().collect();
    view_of(drawing.framing(), &callouts, &shown.layout, side_by_side)
}

fn frame(
    mut commands: Commands,
    shown: Res<Shown>,
    marks: Res<super::annotations::BeatMarks>,
    options: Res<super::Options>,
    twin: Option<Res<TwinShown>>,
    mut cameras: Query<(Entity, &mut Framing), With<SceneCamera>>,
) {
    let to = target(&shown, twin.is_some(), &marks);
    for (e, mut framing) in &mut cameras {
        move_to(
            &mut commands,
            e,
            &mut framing,
            to,
            &shown,
            options.shot.is_some(),
        );
    }
}

/// Sends a camera to frame `to`. A new layout (a scenario loaded, the first frame) snaps; so
/// does a shot, which must show the framing it asks for. Going from beat to beat moves the
/// camera.
fn move_to(
    commands: &mut Commands,
    e: Entity,
    framing: &mut Framing,
    to: Rect,
    shown: &Shown,
    shot: bool,
) {
    let snap = framing.layout != Some(shown.layout_version) || shot;
    let moved = (framing.target.min - to.min).length() + (framing.target.max - to.max).length();
    if snap {
        if framing.rect != to || framing.layout != Some(shown.layout_version) {
            commands.entity(e).remove::<TweenAnim>();
            *framing = Framing {
                rect: to,
                target: to,
                layout: Some(shown.layout_version),
            };
        }
    } else if moved > 2.0 {
        framing.target = to;
        let tween = Tween::new(
            EaseFunction::CubicInOut,
            MOVE,
            FramingLens {
                start: framing.rect,
                end: to,
            },
        );
        commands.entity(e).insert(TweenAnim::new(tween));
    }
}

fn apply(mut cameras: Query<(&Framing, &mut Projection, &mut Transform), Changed<Framing>>) {
    for (framing, mut projection, mut transform) in &mut cameras {
        if let Projection::Orthographic(o) = &mut *projection {
            o.scaling_mode = ScalingMode::AutoMin {
                min_width: framing.rect.width(),
                min_height: framing.rect.height(),
            };
        }
        transform.translation = to_world(framing.rect.center()).extend(transform.translation.z);
    }
}
