//! The scene's camera: it frames what the layout uses, or, in a tour, what the beat is about,
//! and moves between framings smoothly (bevy_tweening), snapping after a jump.

use std::time::Duration;

use bevy::camera::ScalingMode;
use bevy::prelude::*;
use bevy_tweening::{Lens, Tween, TweenAnim};

use super::AppSet;
use super::painter::to_world;
use super::playback::Shown;
use super::tour::{Following, TourPlay};
use crate::view::layout::SCENE;

/// How long the camera takes to move to a new framing (wall time).
const MOVE: Duration = Duration::from_millis(900);
/// The smallest part of the scene a framing shows, so a small focus is not blown up past
/// reading: about a third of the scene's width.
const MIN_FRAME: Vec2 = Vec2::new(560.0, 315.0);
/// Room around what is framed.
const MARGIN: f32 = 28.0;

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

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_camera).add_systems(
        Update,
        (frame, apply)
            .chain()
            .in_set(AppSet::Scene)
            .after(super::annotations::marks_of_beat)
            .after(bevy_tweening::AnimationSystem::AnimationUpdate),
    );
}

fn spawn_camera(mut commands: Commands) {
    let whole = Rect::from_corners(Vec2::ZERO, SCENE);
    commands.spawn((
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin {
                min_width: SCENE.x,
                min_height: SCENE.y,
            },
            ..OrthographicProjection::default_2d()
        }),
        Framing {
            rect: whole,
            target: whole,
            layout: None,
        },
    ));
}

/// What to frame now: the beat's focus and its marks, or the whole layout.
fn target(
    shown: &Shown,
    tour: Option<&TourPlay>,
    following: &Following,
    marks: &super::annotations::BeatMarks,
) -> Rect {
    let whole = shown.layout.bounds();
    let focus = tour.and_then(|t| {
        let beat = &t.tour.beats[t.place.beat];
        crate::view::tour::framing(
            beat,
            &shown.snapshot,
            &shown.layout,
            following.trace.as_ref(),
        )
    });
    let Some(focus) = focus else {
        return whole.inflate(24.0);
    };
    let with_marks = marks
        .callouts()
        .fold(focus, |a, r| a.union(r))
        .inflate(MARGIN);
    let size = with_marks.size().max(MIN_FRAME);
    Rect::from_center_size(with_marks.center(), size)
}

fn frame(
    mut commands: Commands,
    shown: Res<Shown>,
    tour: Option<Res<TourPlay>>,
    following: Res<Following>,
    marks: Res<super::annotations::BeatMarks>,
    options: Res<super::Options>,
    mut cameras: Query<(Entity, &mut Framing)>,
) {
    let to = target(&shown, tour.as_deref(), &following, &marks);
    for (e, mut framing) in &mut cameras {
        // A new layout (a scenario loaded, the first frame) snaps; so does a shot, which must
        // show the framing it asks for. Going from beat to beat moves the camera.
        let snap = framing.layout != Some(shown.layout_version) || options.shot.is_some();
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
