//! Paints what a tour's beat draws over the scene (`view::annotations`' marks: callouts, labels,
//! routes, the followed record's outline) and dims the rest of the scene around its focus.

use bevy::prelude::*;
use bevy::sprite::Anchor;

use super::AppSet;
use super::following::Following;
use super::painter::Paint;
use super::playback::{Model, Shown};
use super::tour::TourPlay;
use crate::view::annotations::{
    BAR_WIDTH, CALLOUT_ROW, CALLOUT_TEXT, Context, Drawing, Mark, ROW_TEXT, Row, Tone, drawing,
    isr_change,
};
use crate::view::palette::Palette;
use crate::view::tour::unlit;

/// This frame's drawing of the beat: marks laid out, and what stays lit.
#[derive(Resource, Default)]
pub struct BeatMarks(pub Drawing);

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<BeatMarks>().add_systems(
        Update,
        (marks_of_beat, paint_marks)
            .chain()
            .in_set(AppSet::Scene)
            .after(super::scene::paint_scene::<super::playback::Shown>),
    );
}

pub(super) fn marks_of_beat(
    shown: Res<Shown>,
    model: Res<Model>,
    tour: Option<Res<TourPlay>>,
    following: Res<Following>,
    twin: Option<Res<super::playback::TwinShown>>,
    mut out: ResMut<BeatMarks>,
) {
    let beat = tour.as_ref().map(|t| &t.tour.beats[t.place.beat]);
    let events = &model.sim.world().resource::<crate::sim::Runtime>().events;
    let change = beat.and_then(|b| isr_change(b, events, shown.snapshot.now_ms));
    let ctx = Context {
        s: &shown.snapshot,
        layout: &shown.layout,
        cluster: &model.scenario.cluster,
        trace: following.trace.as_ref(),
        display_ms: shown.display_ms,
        isr_change: change.as_ref(),
        half: twin.is_some(),
    };
    out.0 = drawing(beat, &ctx);
}

fn tone(palette: &Palette, tone: Tone) -> Srgba {
    match tone {
        Tone::Text => palette.text,
        Tone::Muted => palette.muted,
        Tone::Good => palette.in_sync,
        Tone::Bad => palette.out_of_sync,
        Tone::Accent => palette.produce,
        Tone::Leader => palette.leader,
        Tone::OnCell => palette.background,
    }
}

fn paint_marks(
    shown: Res<Shown>,
    marks: Res<BeatMarks>,
    twin: Option<Res<super::playback::TwinShown>>,
    mut paint: ResMut<Paint>,
) {
    let palette = shown.palette();
    let k = shown.layout.text;
    // Side by side, both runs stay lit: they are read against each other.
    let marks = &marks.0;
    if !marks.lit.is_empty() && twin.is_none() {
        // Everything but what the beat is about dims, so the eye goes there.
        let lit: Vec<Rect> = marks.lit.iter().map(|r| r.inflate(6.0)).collect();
        let area = lit
            .iter()
            .fold(shown.layout.bounds(), |a, r| a.union(*r))
            .inflate(4000.0);
        // Blending is linear: a light background washes out more at the same opacity.
        let dim = match shown.theme {
            crate::view::palette::Theme::Dark => 0.7,
            crate::view::palette::Theme::Light => 0.55,
        };
        paint.dim(super::painter::Dim {
            rects: unlit(area, &lit),
            palette,
            alpha: dim,
            z: 7.0,
        });
    }
    for m in &marks.marks {
        paint_mark(&mut paint, &palette, k, m);
    }
}

fn paint_mark(paint: &mut Paint, palette: &Palette, k: f32, mark: &Mark) {
    match mark {
        Mark::Callout {
            rect, title, rows, ..
        } => {
            paint.rect(*rect, palette.panel, 8.0);
            paint.frame(*rect, 2.0, palette.produce, 8.1);
            let x = rect.min.x + 10.0;
            let mut y = rect.min.y + (10.0 + CALLOUT_ROW / 2.0) * k;
            paint.text(
                Vec2::new(x, y),
                title.clone(),
                CALLOUT_TEXT * k,
                palette.text,
                Anchor::CENTER_LEFT,
                8.3,
            );
            y += CALLOUT_ROW * k;
            for row in rows {
                y = paint_row(paint, palette, k, *rect, y, row);
            }
        }
        Mark::Label {
            at,
            text,
            size,
            tone: t,
        } => paint.text(
            *at,
            text.clone(),
            size * k,
            tone(palette, *t),
            Anchor::CENTER,
            8.4,
        ),
        Mark::Line { from, to, tone: t } => paint.line(*from, *to, 2.5, tone(palette, *t), 8.2),
        Mark::Outline { rect, tone: t } => paint.frame(*rect, 2.5, tone(palette, *t), 8.6),
        Mark::Band { rect, tone: t } => paint.rect(*rect, tone(palette, *t).with_alpha(0.3), 3.5),
        Mark::Pulse { from, to, t } => {
            paint.disc(from.lerp(*to, *t), 7.0, palette.produce, 8.5, false);
        }
    }
}

/// Paints one row of a callout whose centre line is at `y`; returns the next row's centre.
fn paint_row(paint: &mut Paint, palette: &Palette, k: f32, rect: Rect, y: f32, row: &Row) -> f32 {
    let x = rect.min.x + 10.0;
    let size = CALLOUT_TEXT * k;
    match row {
        Row::Text(text, t) => {
            paint.text(
                Vec2::new(x, y),
                text.clone(),
                size * ROW_TEXT,
                tone(palette, *t),
                Anchor::CENTER_LEFT,
                8.3,
            );
            y + CALLOUT_ROW * k
        }
        Row::Heading(text) => {
            paint.text(
                Vec2::new(x, y + 2.0),
                text.clone(),
                size * ROW_TEXT,
                palette.produce,
                Anchor::CENTER_LEFT,
                8.3,
            );
            y + CALLOUT_ROW * k
        }
        Row::Bar {
            label,
            fraction,
            tone: t,
        } => {
            let bar = Rect::new(
                rect.max.x - (BAR_WIDTH + 12.0) * k,
                y - 5.0 * k,
                rect.max.x - 12.0 * k,
                y + 5.0 * k,
            );
            paint.text(
                Vec2::new(x, y),
                label.clone(),
                size * ROW_TEXT,
                palette.text,
                Anchor::CENTER_LEFT,
                8.3,
            );
            paint.rect(bar, palette.muted.with_alpha(0.35), 8.2);
            let filled = Rect::new(
                bar.min.x,
                bar.min.y,
                bar.min.x + bar.width() * fraction.clamp(0.0, 1.0),
                bar.max.y,
            );
            paint.rect(filled, tone(palette, *t), 8.25);
            y + CALLOUT_ROW * k
        }
        Row::Chips(label, chips) => {
            paint.text(
                Vec2::new(x, y),
                label.clone(),
                size * ROW_TEXT,
                palette.text,
                Anchor::CENTER_LEFT,
                8.3,
            );
            for (i, chip) in chips.iter().enumerate() {
                let cx = x + (50.0 + i as f32 * 38.0) * k;
                let dy = chip.out * 14.0 * k;
                let r = Rect::new(cx, y - 10.0 * k + dy, cx + 30.0 * k, y + 10.0 * k + dy);
                let c = if chip.member {
                    palette.in_sync
                } else {
                    palette.out_of_sync
                };
                let alpha = 1.0 - 0.55 * chip.out;
                paint.rect(r, c.with_alpha(alpha), 8.25);
                paint.text(
                    r.center(),
                    chip.label.clone(),
                    size * ROW_TEXT,
                    palette.background,
                    Anchor::CENTER,
                    8.35,
                );
            }
            y + CALLOUT_ROW * 1.5 * k
        }
        Row::Cards {
            label,
            cards,
            lingered,
        } => {
            paint.text(
                Vec2::new(x, y),
                label.clone(),
                size * ROW_TEXT,
                palette.muted,
                Anchor::CENTER_LEFT,
                8.3,
            );
            let mut cx = x + 86.0 * k;
            for card in cards.iter().take(4) {
                let r = Rect::new(cx, y - 12.0 * k, cx + 64.0 * k, y + 12.0 * k);
                paint.rect(r, palette.produce.with_alpha(0.85), 8.25);
                if card.followed {
                    paint.frame(r.inflate(3.0), 2.5, palette.text, 8.4);
                }
                paint.text(
                    r.center(),
                    card.key.clone(),
                    size * ROW_TEXT,
                    palette.background,
                    Anchor::CENTER,
                    8.35,
                );
                cx += 68.0 * k;
            }
            if cards.len() > 4 {
                paint.text(
                    Vec2::new(cx + 2.0, y),
                    format!("+{}", cards.len() - 4),
                    size * ROW_TEXT,
                    palette.text,
                    Anchor::CENTER_LEFT,
                    8.3,
                );
            }
            if let Some(lingered) = lingered.filter(|_| !cards.is_empty()) {
                // How much of linger.ms the batch has waited: it leaves when this fills.
                let bar = Rect::new(
                    rect.max.x - 40.0 * k,
                    y - 4.0 * k,
                    rect.max.x - 12.0 * k,
                    y + 4.0 * k,
                );
                paint.rect(bar, palette.muted.with_alpha(0.35), 8.2);
                paint.rect(
                    Rect::new(
                        bar.min.x,
                        bar.min.y,
                        bar.min.x + bar.width() * lingered.clamp(0.0, 1.0),
                        bar.max.y,
                    ),
                    palette.produce,
                    8.25,
                );
            }
            y + CALLOUT_ROW * 1.5 * k
        }
    }
}
