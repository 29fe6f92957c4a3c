//! `kafkascope shot`: render the scene at a sim time, write it to a PNG and exit. The app is the
//! same; it opens paused at the instant asked for and waits a few frames for the GPU to have
//! everything (pipelines, glyphs) before it takes the picture.
//!
//! With `--places`, it also writes where the scene drew what, in the picture's pixels: each log
//! cell with its state, each high-watermark bar and role mark, each message, each text with what
//! it belongs to and whether it is in the beat's focus, and each callout where the layout pass
//! put it, and the panels' texts with what of each their scrolling areas show. The render tests
//! measure contrast, size and collisions there, on what was drawn.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::sprite::Anchor;
use bevy::text::TextLayoutInfo;
use bevy::window::PrimaryWindow;
use bevy_egui::egui;
use serde::Serialize;

use super::Options;
use super::painter::{to_layout, to_world};
use super::playback::Shown;
use super::scene::{message_at, message_half_size};
use crate::view::annotations::{Drawing, Mark};
use crate::view::log_strip::{Cell, StripPlace, strip};

/// Frames drawn before the picture: pipelines and glyph atlases are ready by then.
const SETTLE_FRAMES: u32 = 20;

pub(super) fn plugin(app: &mut App) {
    // A shot driven by keys waits for beats to play: each frame is a quarter second of wall
    // time, whatever the renderer here manages, so it takes the same steps every time.
    if app
        .world()
        .get_resource::<Options>()
        .is_some_and(|o| o.shot.is_some() && !o.keys.is_empty())
    {
        app.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(
            std::time::Duration::from_millis(250),
        ));
    }
    app.init_resource::<PanelTexts>()
        .init_resource::<Script>()
        .add_systems(
            PreUpdate,
            press_keys
                .after(bevy::input::InputSystems)
                .run_if(|o: Res<Options>| o.shot.is_some() && !o.keys.is_empty()),
        )
        .add_systems(
            PostUpdate,
            read_panel_texts
                .after(bevy_egui::EguiPostUpdateSet::EndPass)
                .before(bevy_egui::EguiPostUpdateSet::ProcessOutput),
        )
        .add_systems(Last, take_shot)
        .add_systems(PreUpdate, click.after(bevy::input::InputSystems));
}

/// The frame at which a shot's `--click` presses the button (released the next): the scene is
/// laid out by then, and the menu it opens has frames to settle before the picture.
const CLICK_FRAME: u32 = SETTLE_FRAMES - 8;

/// A shot's `--click`: the pointer moves there and the left button goes down and up, as a
/// reader's click does, through the same input the window reads.
fn click(
    options: Res<Options>,
    mut frames: Local<u32>,
    mut window: Single<&mut Window, With<PrimaryWindow>>,
    mut buttons: ResMut<ButtonInput<MouseButton>>,
) {
    let Some((x, y)) = options.click else { return };
    *frames += 1;
    if *frames == CLICK_FRAME - 2 {
        window.set_cursor_position(Some(Vec2::new(x, y)));
    } else if *frames == CLICK_FRAME {
        window.set_cursor_position(Some(Vec2::new(x, y)));
        buttons.press(MouseButton::Left);
    } else if *frames == CLICK_FRAME + 1 {
        buttons.release(MouseButton::Left);
    }
}

/// Where a shot's `--keys` are: the next to press, the one held down this frame, and the
/// frames the playback has rested (paused) since.
#[derive(Resource, Default)]
struct Script {
    next: usize,
    down: Option<KeyCode>,
    rest: u32,
}

/// Frames the playback rests before the next key (and before the picture): the scene has
/// settled and the camera has arrived by then.
const REST_FRAMES: u32 = 12;

impl Script {
    /// Every key pressed, and the playback at rest long enough for the picture.
    fn done(&self, keys: usize) -> bool {
        self.next == keys && self.down.is_none() && self.rest >= REST_FRAMES
    }
}

/// Presses a shot's keys through the input the window reads, each once the playback has come
/// to rest (a beat ended or held), as a speaker does.
fn press_keys(
    options: Res<Options>,
    mut frames: Local<u32>,
    mut script: ResMut<Script>,
    playback: Res<super::Playback>,
    mut keys: ResMut<ButtonInput<KeyCode>>,
) {
    *frames += 1;
    if *frames < SETTLE_FRAMES {
        return;
    }
    if let Some(key) = script.down.take() {
        keys.release(key);
        script.rest = 0;
        return;
    }
    script.rest = if playback.paused { script.rest + 1 } else { 0 };
    if script.rest >= REST_FRAMES
        && let Some(&key) = options.keys.get(script.next)
    {
        keys.press(key);
        script.down = Some(key);
        script.next += 1;
    }
}

/// The texts the panels (egui) painted last frame, kept for `--places`.
#[derive(Resource, Default)]
struct PanelTexts(Vec<PanelText>);

/// A text of the panels: the narration, the headings, a lab's table.
#[derive(Serialize, Clone)]
struct PanelText {
    /// The window it is in: `stage`, or `presenter`.
    window: &'static str,
    /// What it shows, a line per row; an elided text ends with its ellipsis.
    text: String,
    /// The font's size in the picture's pixels.
    size: f32,
    /// Where its rows lie, and the part of that its clip (a scrolling area's edge) shows.
    rect: Px,
    visible: Px,
}

/// Reads the texts out of egui's shapes before they are turned into meshes.
fn read_panel_texts(
    options: Res<Options>,
    outputs: Query<(
        &bevy_egui::EguiFullOutput,
        Has<super::presenter::PresenterCamera>,
    )>,
    mut out: ResMut<PanelTexts>,
) {
    if options.places.is_none() {
        return;
    }
    out.0.clear();
    for (full, presenter) in &outputs {
        let Some(full) = full.0.as_ref() else {
            continue;
        };
        let window = if presenter { "presenter" } else { "stage" };
        for clipped in &full.shapes {
            panel_texts(
                &clipped.shape,
                clipped.clip_rect,
                (full.pixels_per_point, window),
                &mut out.0,
            );
        }
    }
}

fn panel_texts(
    shape: &egui::Shape,
    clip: egui::Rect,
    (ppp, window): (f32, &'static str),
    out: &mut Vec<PanelText>,
) {
    match shape {
        egui::Shape::Vec(shapes) => {
            for s in shapes {
                panel_texts(s, clip, (ppp, window), out);
            }
        }
        egui::Shape::Text(t) => {
            let g = &t.galley;
            let text: Vec<String> = g
                .rows
                .iter()
                .map(|r| r.row.glyphs.iter().map(|c| c.chr).collect())
                .collect();
            let text = text.join("\n");
            if text.trim().is_empty() {
                return;
            }
            // The rows' own extent: a galley's rect may start at its layout's left, before a
            // centred or indented text.
            let rect = g
                .rows
                .iter()
                .map(|r| r.rect_without_leading_space())
                .reduce(|a, b| a.union(b))
                .unwrap_or(g.rect);
            // Turned about its position (a plot's axis label reads upwards).
            let rot = egui::emath::Rot2::from_angle(t.angle);
            let rect = egui::Rect::from_points(
                &[
                    rect.left_top(),
                    rect.right_top(),
                    rect.left_bottom(),
                    rect.right_bottom(),
                ]
                .map(|c| t.pos + rot * c.to_vec2()),
            );
            let px = |r: egui::Rect| [r.min.x * ppp, r.min.y * ppp, r.max.x * ppp, r.max.y * ppp];
            out.push(PanelText {
                window,
                text,
                size: g
                    .job
                    .sections
                    .first()
                    .map_or(f32::NAN, |s| s.format.font_id.size * ppp),
                rect: px(rect),
                visible: px(rect.intersect(clip)),
            });
        }
        _ => {}
    }
}

/// A rectangle in the picture's pixels: left, top, right, bottom.
type Px = [f32; 4];

/// Where the scene drew what, in the picture's pixels.
#[derive(Serialize)]
struct Places {
    /// The part of the window the scene's camera draws into: what the panels leave.
    scene: Px,
    rows: Vec<RowPlace>,
    messages: Vec<MessagePlace>,
    texts: Vec<TextPlace>,
    /// Where the layout pass put the beat's callouts.
    callouts: Vec<CalloutPlace>,
    /// The components' boxes: each broker's.
    boxes: Vec<BoxPlace>,
    /// The panels' texts (the narration, the headings, a lab's table), above the scene, and
    /// the presenter view's.
    panel_texts: Vec<PanelText>,
    /// The instant the model is at, and a tour's place: what the picture is of.
    now_ms: u64,
    tour: Option<TourPlace>,
    /// The model's state there, as `kafkascope run` reports it.
    report: serde_json::Value,
}

#[derive(Serialize)]
struct TourPlace {
    /// The beat's number, from 1.
    beat: usize,
    /// `Ready`, `Playing`, `Held(0)`, `Ended` or `Finished`.
    stage: String,
}

#[derive(Serialize)]
struct BoxPlace {
    /// `broker:<id>`.
    owner: String,
    rect: Px,
}

#[derive(Serialize)]
struct CalloutPlace {
    id: String,
    rect: Px,
}

/// A replica's row: its background, the mark of its role, its cells and its high watermark.
#[derive(Serialize)]
struct RowPlace {
    partition: String,
    broker: u32,
    role: String,
    rect: Px,
    role_mark: Px,
    cells: Vec<CellPlace>,
    high_watermark: Option<Px>,
}

#[derive(Serialize)]
struct CellPlace {
    offset: u64,
    state: &'static str,
    rect: Px,
}

#[derive(Serialize)]
struct MessagePlace {
    kind: &'static str,
    rect: Px,
    /// Below 1 while it fades in or out at its ends.
    alpha: f32,
}

#[derive(Serialize)]
struct TextPlace {
    text: String,
    /// The font's size in the picture's pixels.
    size: f32,
    rect: Px,
    /// What it belongs to: `callout:<id>`, a component (`broker:1`, `controller`,
    /// `producer:<name>`, `group:<name>`, `lag-monitor`), or `scene`.
    owner: String,
    /// It lies in what the beat frames or highlights, or in a callout.
    focus: bool,
}

fn take_shot(
    mut commands: Commands,
    options: Res<Options>,
    (mut frames, mut taken): (Local<u32>, Local<bool>),
    (shown, marks, panel_texts): (
        Res<Shown>,
        Res<super::annotations::BeatMarks>,
        Res<PanelTexts>,
    ),
    (model, tour, script): (
        Res<super::Model>,
        Option<Res<super::tour::TourPlay>>,
        Res<Script>,
    ),
    (window, cameras): (Single<&Window, With<PrimaryWindow>>, SceneCamera),
    texts: TextQuery,
) {
    let Some(path) = options.shot.clone() else {
        return;
    };
    // Once: after the settling frames, or where the keys led.
    if *taken {
        return;
    }
    *frames += 1;
    let due = if options.keys.is_empty() {
        *frames == SETTLE_FRAMES
    } else {
        script.done(options.keys.len())
    };
    if !due {
        return;
    }
    *taken = true;
    if let Some(places_path) = &options.places {
        let report = serde_json::from_str(&crate::report::Report::of(&model.sim).to_json())
            .unwrap_or_default();
        let camera = cameras.iter().next();
        let written = camera
            .map(|(camera, at)| Places {
                panel_texts: panel_texts.0.clone(),
                now_ms: model.sim.now_ms(),
                tour: tour.as_ref().map(|t| TourPlace {
                    beat: t.place.beat + 1,
                    stage: format!("{:?}", t.place.stage),
                }),
                report,
                ..places(&shown, &marks.0, camera, at, window.scale_factor(), &texts)
            })
            .ok_or_else(|| "no scene camera".to_string())
            .and_then(|p| serde_json::to_string_pretty(&p).map_err(|e| e.to_string()))
            .and_then(|json| std::fs::write(places_path, json).map_err(|e| e.to_string()));
        if let Err(e) = written {
            error!(
                "the places could not be written to {}: {e}",
                places_path.display()
            );
        }
    }
    let mut save = save_to_disk(path.clone());
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>| {
            save(captured);
            if path.is_file() {
                exit.write(AppExit::Success);
            } else {
                error!("the screenshot could not be written to {}", path.display());
                exit.write(AppExit::from_code(1));
            }
        },
    );
}

/// The stage's scene camera, whose view the places are measured in.
type SceneCamera<'w, 's> =
    Query<'w, 's, (&'static Camera, &'static GlobalTransform), With<super::camera::SceneCamera>>;

type TextQuery<'w, 's> = Query<
    'w,
    's,
    (
        &'static Text2d,
        &'static TextFont,
        &'static TextLayoutInfo,
        &'static Anchor,
        &'static GlobalTransform,
        &'static InheritedVisibility,
    ),
>;

fn places(
    shown: &Shown,
    drawing: &Drawing,
    camera: &Camera,
    at: &GlobalTransform,
    scale_factor: f32,
    texts: &TextQuery,
) -> Places {
    // World to the picture's physical pixels.
    let world_px = |p: Vec2| {
        camera
            .world_to_viewport(at, p.extend(0.0))
            .map_or(Vec2::NAN, |v| v * scale_factor)
    };
    let world_rect = |r: Rect| {
        let (a, b) = (world_px(r.min), world_px(r.max));
        [a.x.min(b.x), a.y.min(b.y), a.x.max(b.x), a.y.max(b.y)]
    };
    let layout_rect = |r: Rect| world_rect(Rect::from_corners(to_world(r.min), to_world(r.max)));
    let scene = camera.physical_viewport_rect().map_or([0.0; 4], |r| {
        [
            r.min.x as f32,
            r.min.y as f32,
            r.max.x as f32,
            r.max.y as f32,
        ]
    });
    let s = &shown.snapshot;
    let layout = &shown.layout;

    let mut rows = Vec::new();
    for slot in &layout.replicas {
        let Some(p) = s.partitions.get(slot.ordinal as usize) else {
            continue;
        };
        let Some(r) = p.replicas.iter().find(|r| r.broker == slot.broker) else {
            continue;
        };
        let place = StripPlace::of(slot.rect, p, layout.text);
        let st = strip(
            place.first,
            place.cells,
            (r.log_start_offset, r.log_end_offset),
            r.high_watermark,
            r.truncates_to,
            &r.cleaned,
        );
        let rect = slot.rect;
        rows.push(RowPlace {
            partition: if p.internal {
                format!("__consumer_offsets-{}", p.index)
            } else {
                p.name()
            },
            broker: slot.broker,
            role: format!("{:?}", r.role),
            rect: layout_rect(rect),
            role_mark: layout_rect(Rect::new(
                rect.min.x + 1.5,
                rect.min.y + 2.0,
                rect.min.x + 6.5,
                rect.max.y - 2.0,
            )),
            cells: st
                .cells
                .iter()
                .enumerate()
                .map(|(i, cell)| CellPlace {
                    offset: place.first + i as u64,
                    state: match cell {
                        Cell::Committed => "committed",
                        Cell::Uncommitted => "uncommitted",
                        Cell::Missing => "missing",
                        Cell::Diverged => "diverged",
                        Cell::Deleted => "deleted",
                        Cell::Cleaned => "cleaned",
                    },
                    rect: layout_rect(place.cell(i)),
                })
                .collect(),
            high_watermark: st
                .high_watermark_at
                .map(|i| layout_rect(place.watermark_bar(i))),
        });
    }

    let messages = s
        .messages
        .iter()
        .filter_map(|m| {
            let (center, alpha) = message_at(shown, m)?;
            let half = message_half_size(m, layout.text);
            Some(MessagePlace {
                kind: m.kind.name(),
                rect: layout_rect(Rect::from_center_half_size(center, half)),
                alpha,
            })
        })
        .collect();

    // A world unit's width in the picture's pixels, for the fonts' sizes.
    let unit = (world_px(Vec2::X) - world_px(Vec2::ZERO)).x;
    let texts = texts
        .iter()
        .filter(|(text, .., visible)| visible.get() && !text.0.trim().is_empty())
        .map(|(text, font, info, anchor, transform, _)| {
            let size = match font.font_size {
                bevy::text::FontSize::Px(px) => px,
                _ => f32::NAN,
            };
            // The anchor is where on its box the text's position is, from -0.5 to 0.5.
            let center = transform.translation().truncate() - anchor.as_vec() * info.size;
            let z = transform.translation().z;
            let (owner, focus) = owner(shown, drawing, to_layout(center), z);
            TextPlace {
                text: text.0.clone(),
                size: size * unit,
                rect: world_rect(Rect::from_center_size(center, info.size)),
                owner,
                focus,
            }
        })
        .collect();
    let callouts = drawing
        .marks
        .iter()
        .filter_map(|m| match m {
            Mark::Callout { id, rect, .. } => Some(CalloutPlace {
                id: id.clone(),
                rect: layout_rect(*rect),
            }),
            _ => None,
        })
        .collect();

    let boxes = layout
        .brokers
        .iter()
        .enumerate()
        .map(|(i, r)| BoxPlace {
            owner: format!("broker:{}", i + 1),
            rect: layout_rect(*r),
        })
        .collect();
    Places {
        scene,
        rows,
        messages,
        texts,
        callouts,
        boxes,
        panel_texts: Vec::new(),
        now_ms: 0,
        tour: None,
        report: serde_json::Value::Null,
    }
}

/// The lowest layer a callout's text is painted on.
const CALLOUT_LAYER: f32 = 8.0;

/// What a text at `at` (layout coordinates) belongs to, and whether it is in the beat's focus:
/// the topmost callout holding it, else the component whose box holds it.
fn owner(shown: &Shown, drawing: &Drawing, at: Vec2, z: f32) -> (String, bool) {
    // Callouts are painted above the scene (`annotations`' layers from 8): a text below them
    // under a callout is the scene's, covered.
    let callout = drawing.marks.iter().rev().find_map(|m| match m {
        Mark::Callout { id, rect, .. } if z >= CALLOUT_LAYER && rect.contains(at) => Some(id),
        _ => None,
    });
    if let Some(id) = callout {
        return (format!("callout:{id}"), true);
    }
    // A beat that frames and highlights nothing is about the whole scene.
    let focus = (drawing.framed.is_empty() && drawing.highlighted.is_empty())
        || drawing
            .framed
            .iter()
            .chain(&drawing.highlighted)
            .any(|r| r.contains(at));
    let s = &shown.snapshot;
    let l = &shown.layout;
    let named = |rects: &[Rect], name: &dyn Fn(usize) -> Option<String>| {
        rects.iter().position(|r| r.contains(at)).and_then(name)
    };
    let owner = named(&l.brokers, &|i| {
        s.brokers.get(i).map(|b| format!("broker:{}", b.id))
    })
    .or_else(|| {
        named(&l.producers, &|i| {
            s.producers.get(i).map(|p| format!("producer:{}", p.name))
        })
    })
    .or_else(|| {
        named(&l.groups, &|i| {
            s.groups.get(i).map(|g| format!("group:{}", g.name))
        })
    })
    .or_else(|| l.controller.contains(at).then(|| "controller".to_string()))
    .or_else(|| {
        l.lag_monitor
            .filter(|r| r.contains(at))
            .map(|_| "lag-monitor".to_string())
    })
    .unwrap_or_else(|| "scene".to_string());
    (owner, focus)
}
