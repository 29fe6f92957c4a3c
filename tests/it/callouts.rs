//! The callouts' layout, headless, for every beat of every built-in tour and lab: at the window
//! sizes people use, with the talk preset on and off, no callout covers another, a framed part,
//! a highlighted one or a mark of the beat; every callout and every framed part is inside what
//! the camera shows; a callout away from its subject has a leader line to it. (The theme changes
//! colours only: the layout takes none.)

use bevy::math::{Rect, Vec2};
use kafkascope::sim::{Runtime, Sim};
use kafkascope::tour::Focus;
use kafkascope::tour::Tour;
use kafkascope::view::annotations::{Context, Drawing, Mark, drawing, isr_change};
use kafkascope::view::callout_layout::gap;
use kafkascope::view::follow::{AckScan, resolve, trace};
use kafkascope::view::layout::{
    BROKER_HEADER, Layout, NARRATION_SHARE, RUN_HEADING, RUN_PLOT, TALK_TEXT,
};
use kafkascope::view::snapshot::Snapshot;
use kafkascope::view::tour::{focus_parts, view_of};

/// Window sizes, in logical pixels.
const WINDOWS: [(f32, f32); 4] = [
    (1280.0, 720.0),
    (1600.0, 900.0),
    (1920.0, 1080.0),
    (3840.0, 2160.0),
];

/// The scene's area in a window: what the transport bar, the timeline and the narration leave
/// (the talk preset shows the narration alone), with the narration at its shortest and at the
/// most it may take. In the overlay's points, which the text factor makes larger.
fn scene_areas(window: (f32, f32), talk: bool, halves: Option<bool>) -> Vec<Vec2> {
    let k = if talk { TALK_TEXT } else { 1.0 };
    let bars = if talk { 0.0 } else { (40.0 + 54.0) * k };
    let (w, h) = window;
    // Side by side (`halves`, with lag plots or not), each run has half the width, under a
    // band for the runs' headings.
    let (w, band) = match halves {
        Some(plots) => (
            (w - 4.0 * k) / 2.0,
            (RUN_HEADING + if plots { RUN_PLOT + 6.0 } else { 0.0 }) * k,
        ),
        None => (w, 0.0),
    };
    // The talk preset's narration is its title and a line; its whole text takes at most the
    // share.
    [if talk { 80.0 } else { 110.0 } * k, h * NARRATION_SHARE]
        .into_iter()
        .map(|narration| Vec2::new(w, h - bars - band - narration))
        .collect()
}

fn overlaps(a: Rect, b: Rect) -> bool {
    a.min.x < b.max.x - 0.5
        && b.min.x < a.max.x - 0.5
        && a.min.y < b.max.y - 0.5
        && b.min.y < a.max.y - 0.5
}

fn inside(outer: Rect, r: Rect) -> bool {
    r.min.x >= outer.min.x - 0.5
        && r.min.y >= outer.min.y - 0.5
        && r.max.x <= outer.max.x + 0.5
        && r.max.y <= outer.max.y + 0.5
}

/// The smallest text a callout writes, on screen: its rows' size in the layout, times the
/// camera's zoom (the scene's pixels over the framing's units).
const CALLOUT_ROW_TEXT: f32 =
    kafkascope::view::annotations::CALLOUT_TEXT * kafkascope::view::annotations::ROW_TEXT;
/// The least a callout's text may be on screen, in pixels: where a beat's callouts find no
/// room inside the scene the camera pulls back, but never below this.
const LEAST_TEXT_PX: f32 = 12.0;

/// What is wrong with a beat's drawing, in words, for a scene of `pixels` whose layout has
/// text factor `text`.
fn collisions(d: &Drawing, layout: &Layout, half: bool, pixels: Vec2, text: f32) -> Vec<String> {
    let whole = layout.whole();
    let mut wrong = Vec::new();
    let callouts: Vec<(&str, Rect, Rect, bool)> = d
        .marks
        .iter()
        .filter_map(|m| match m {
            Mark::Callout {
                id,
                rect,
                subject,
                over_subject,
                ..
            } => Some((id.as_str(), *rect, *subject, *over_subject)),
            _ => None,
        })
        .collect();
    let marked: Vec<Rect> = d
        .marks
        .iter()
        .filter(|m| {
            matches!(
                m,
                Mark::Label { .. } | Mark::Outline { .. } | Mark::Band { .. }
            )
        })
        .map(Mark::rect)
        .collect();
    let focus = d.framed.iter().copied().reduce(|a, b| a.union(b));
    let callout_rects: Vec<Rect> = d.callouts().collect();
    let shown = view_of(focus, &callout_rects, layout, half);
    let zoom = (pixels.x / shown.width()).min(pixels.y / shown.height());
    let px = CALLOUT_ROW_TEXT * text * zoom;
    if !callouts.is_empty() && px < LEAST_TEXT_PX - 0.05 {
        wrong.push(format!("callout text {px:.1} px on screen"));
    }
    for (i, (id, rect, subject, over)) in callouts.iter().enumerate() {
        for (other, r, _, _) in &callouts[i + 1..] {
            if overlaps(*rect, *r) {
                wrong.push(format!("callout {id} covers callout {other}"));
            }
        }
        let own = |r: &Rect| *over && inside(subject.inflate(1.0), *r);
        for f in d.framed.iter().filter(|r| !own(r)) {
            if overlaps(*rect, *f) {
                wrong.push(format!("callout {id} covers the framed {f:?}"));
            }
        }
        for h in d.highlighted.iter().chain(&marked).filter(|r| !own(r)) {
            if overlaps(*rect, *h) {
                wrong.push(format!(
                    "callout {id} covers the highlighted or marked {h:?}"
                ));
            }
        }
        if !inside(shown, *rect) {
            wrong.push(format!(
                "callout {id} {rect:?} is outside the view {shown:?}"
            ));
        }
        if !over && gap(*rect, *subject) > 24.0 {
            let led = d.marks.iter().any(|m| match m {
                Mark::Line { from, to, .. } => {
                    inside(rect.inflate(1.0), Rect::from_center_size(*from, Vec2::ZERO))
                        && inside(
                            subject.inflate(1.0),
                            Rect::from_center_size(*to, Vec2::ZERO),
                        )
                }
                _ => false,
            });
            if !led {
                wrong.push(format!(
                    "callout {id} is away from its subject with no leader line"
                ));
            }
        }
    }
    // Side by side the view is enlarged until text reads. Where the framed parts do not fit it
    // together, each shows its title line (inside its border), as far as the view is wide.
    let together = focus
        .is_none_or(|u| u.width() <= shown.width() + 0.5 && u.height() <= shown.height() + 0.5);
    for f in &d.framed {
        let title = Rect::new(
            f.min.x + 8.0,
            f.min.y,
            (f.max.x - 8.0).min(f.min.x + 8.0 + shown.width()),
            f.min.y + BROKER_HEADER * text,
        );
        let seen = if half && !together { title } else { *f };
        if !inside(shown, seen) || !inside(whole, seen) {
            wrong.push(format!("the framed {f:?} is outside the view {shown:?}"));
        }
    }
    wrong
}

/// The instants of a beat worth looking at: its start, middle, end and holds.
fn instants(tour: &Tour, beat: usize) -> Vec<u64> {
    let b = &tour.beats[beat];
    let mut at = vec![b.from_ms, (b.from_ms + b.to_ms) / 2, b.to_ms];
    at.extend(tour.holds_of(beat).iter().map(|h| h.at_ms));
    at.sort_unstable();
    at.dedup();
    at
}

#[test]
fn no_callout_collides_at_any_beat_size_or_preset() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for built_in in kafkascope::tour::BUILT_IN_TOURS {
        let (tour, scenario) = Tour::built_in(built_in.name).unwrap_or_else(|e| panic!("{e}"));
        let tour = tour.with_holds().unwrap();
        // A lab shows its runs side by side, with lag plots where they have consumer groups.
        let halves = tour
            .lab
            .as_ref()
            .filter(|l| l.runs.len() > 1)
            .map(|_| !scenario.consumer_groups.is_empty());
        let mut sim = Sim::new(&scenario);
        let mut acks = AckScan::default();
        let mut picked = None;
        let mut moments: Vec<(u64, usize)> = (0..tour.beats.len())
            .flat_map(|b| instants(&tour, b).into_iter().map(move |t| (t, b)))
            .collect();
        moments.sort_unstable();
        for (at, beat) in moments {
            sim.run_until(at);
            if picked.is_none()
                && let Some(record) = &tour.follow
            {
                picked = resolve(sim.world(), record);
            }
            let followed = picked.and_then(|p| trace(sim.world_mut(), p, &mut acks));
            let snapshot = Snapshot::of(sim.world_mut());
            let beat_ = &tour.beats[beat];
            let change = isr_change(
                beat_,
                &sim.world().resource::<Runtime>().events,
                snapshot.now_ms,
            );
            for window in WINDOWS {
                for talk in [false, true] {
                    for area in scene_areas(window, talk, halves) {
                        let text = if talk { TALK_TEXT } else { 1.0 };
                        let layout = Layout::of(&snapshot, area, text);
                        let ctx = Context {
                            s: &snapshot,
                            layout: &layout,
                            cluster: &scenario.cluster,
                            trace: followed.as_ref(),
                            display_ms: snapshot.now_ms as f64,
                            isr_change: change.as_ref(),
                            half: halves.is_some(),
                        };
                        let d = drawing(Some(beat_), &ctx);
                        checked += 1;
                        // Everything a beat frames is drawn, so the camera can frame it (a
                        // replica folded into "+N more" has no row to frame).
                        for f in &beat_.frame {
                            let parts = focus_parts(
                                f,
                                &snapshot,
                                &layout,
                                followed.as_ref(),
                                snapshot.now_ms as f64,
                            );
                            if parts.is_empty() && !matches!(f, Focus::Record) {
                                wrong.push(format!(
                                    "{} beat {} at {at} ms, {}x{}: {f:?} is framed but not drawn",
                                    built_in.name,
                                    beat + 1,
                                    window.0,
                                    window.1
                                ));
                            }
                        }
                        for w in collisions(&d, &layout, halves.is_some(), area, text) {
                            wrong.push(format!(
                                "{} beat {} at {at} ms, {}x{} scene {:.0}x{:.0}{}: {w}",
                                built_in.name,
                                beat + 1,
                                window.0,
                                window.1,
                                area.x,
                                area.y,
                                if talk { ", talk" } else { "" }
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 500, "{checked} layouts checked");
    assert!(
        wrong.is_empty(),
        "{} collisions, the first:\n{}",
        wrong.len(),
        wrong
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
