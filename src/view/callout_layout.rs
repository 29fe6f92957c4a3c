//! The callouts' layout pass: each callout starts where its annotation would like it (under its
//! broker, beside the controller) and is moved to the nearest place where it covers no other
//! callout, nothing the beat frames or highlights, and no mark of the beat, inside the scene's
//! area. Among free places it prefers those off the scene's other boxes. A callout moved away
//! from its subject gets a leader line to it.

use bevy::math::{Rect, Vec2};

use super::annotations::{Mark, Tone};

/// Room kept between a callout and what it must not touch.
const GAP: f32 = 6.0;
/// How far a callout may be from its subject before it needs a leader line.
const NEAR: f32 = 24.0;
/// The step of the search for a free place, in layout units.
const STEP: f32 = 12.0;

/// What the callouts are laid out in, and around.
pub struct Room<'a> {
    /// The scene's area: a callout lies inside it where it finds a free place there, else
    /// beyond its edge, where the camera pulls back to show it.
    pub area: Rect,
    /// What no callout may cover: the framed and highlighted parts, the beat's other marks.
    pub keep_clear: &'a [Rect],
    /// What a callout covers only where nothing else is free: the scene's other boxes.
    pub avoid: &'a [Rect],
}

fn overlaps(a: Rect, b: Rect) -> bool {
    a.min.x < b.max.x && b.min.x < a.max.x && a.min.y < b.max.y && b.min.y < a.max.y
}

fn overlap_area(a: Rect, b: Rect) -> f32 {
    let i = a.intersect(b);
    if i.is_empty() {
        0.0
    } else {
        i.width() * i.height()
    }
}

/// The distance between two rectangles (0 where they touch or overlap).
pub fn gap(a: Rect, b: Rect) -> f32 {
    let dx = (b.min.x - a.max.x).max(a.min.x - b.max.x).max(0.0);
    let dy = (b.min.y - a.max.y).max(a.min.y - b.max.y).max(0.0);
    Vec2::new(dx, dy).length()
}

/// Lays out the callouts among `marks`, in order (the first keeps its place most easily), and
/// adds a leader line for each callout moved away from its subject.
pub fn lay_out(marks: &mut Vec<Mark>, room: &Room) {
    let mut placed: Vec<Rect> = Vec::new();
    let mut leaders = Vec::new();
    for mark in marks.iter_mut() {
        let Mark::Callout {
            rect,
            subject,
            over_subject,
            ..
        } = mark
        else {
            continue;
        };
        let clear: Vec<Rect> = room
            .keep_clear
            .iter()
            .copied()
            // A callout opening its subject up is drawn over it, and over what lies in it.
            .filter(|r| !(*over_subject && subject.inflate(1.0).contains(r.center())))
            .chain(placed.iter().copied())
            .collect();
        *rect = place(*rect, *subject, *over_subject, &clear, room);
        placed.push(*rect);
        if !*over_subject && gap(*rect, *subject) > NEAR {
            // From the callout's edge nearest the subject, to the subject's nearest point.
            let from = subject.center().clamp(rect.min, rect.max);
            let to = from.clamp(subject.min, subject.max);
            leaders.push(Mark::Line {
                from,
                to,
                tone: Tone::Accent,
            });
        }
    }
    marks.extend(leaders);
}

/// The best place for a callout wanting `want`: free of `clear`, inside the area where it fits,
/// near its wish and its subject, off the boxes to avoid. Where no place is free it keeps its
/// wish (a test finds it).
fn place(want: Rect, subject: Rect, over_subject: bool, clear: &[Rect], room: &Room) -> Rect {
    let size = want.size();
    // Where a callout may go: the area, and a callout's size beyond each of its edges.
    let area = room.area;
    let reach = Rect::from_corners(area.min - size - GAP, area.max + size + GAP);
    // Where the area is smaller than the callout, it starts at the area's edge.
    let fits = |lo: f32, hi: f32, len: f32, at: f32| {
        if hi - lo < len {
            lo
        } else {
            at.clamp(lo, hi - len)
        }
    };
    let at = |min: Vec2| {
        Vec2::new(
            fits(reach.min.x, reach.max.x, size.x, min.x),
            fits(reach.min.y, reach.max.y, size.y, min.y),
        )
    };
    let rect_at = |min: Vec2| Rect::from_corners(at(min), at(min) + size);
    // How far it reaches out of the area.
    let out = |r: Rect| {
        let o = (area.min - r.min).max(Vec2::ZERO) + (r.max - area.max).max(Vec2::ZERO);
        o.x + o.y
    };
    let free = |r: Rect| clear.iter().all(|c| !overlaps(r.inflate(GAP), *c));
    let cost = |r: Rect| {
        let covered: f32 = room.avoid.iter().map(|a| overlap_area(r, *a)).sum();
        let near = if over_subject { 0.0 } else { gap(r, subject) };
        let beyond = match out(r) {
            0.0 => 0.0,
            o => 4000.0 + o * 8.0,
        };
        (r.min - want.min).length() + near + covered / (size.x * size.y).max(1.0) * 2000.0 + beyond
    };
    // Beside the subject first: under, over, right, left, at either end or the middle.
    let s = subject;
    let mut wishes = vec![want.min];
    for y in [s.max.y + 12.0, s.min.y - 12.0 - size.y] {
        for x in [s.min.x, s.max.x - size.x, s.center().x - size.x / 2.0] {
            wishes.push(Vec2::new(x, y));
        }
    }
    for x in [s.max.x + 12.0, s.min.x - 12.0 - size.x] {
        for y in [s.min.y, s.max.y - size.y, s.center().y - size.y / 2.0] {
            wishes.push(Vec2::new(x, y));
        }
    }
    let best = |candidates: &mut dyn Iterator<Item = Rect>| {
        candidates
            .filter(|r| free(*r))
            .map(|r| (cost(r), r))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    let mut found = best(&mut wishes.iter().map(|w| rect_at(*w)));
    // Then rings of places around the wish, further and further; a few rings past the first
    // with a free place, so that a place off the other boxes can win over the nearest.
    if found.is_none_or(|(c, _)| c > STEP * 4.0) {
        // Free places inside the area come first: the search goes on past the first ring with
        // one only while those found lie beyond the area.
        let rings = (reach.size().max_element() / STEP).ceil() as i32;
        let mut first_free = None;
        for ring in 1..=rings {
            if first_free.is_some_and(|f| ring > f + 4) {
                break;
            }
            let d = ring as f32 * STEP;
            // Far rings are walked in larger strides: a far place is a last resort.
            let stride = (ring / 8).max(1) as usize;
            let mut candidates = (-ring..=ring).step_by(stride).flat_map(|i| {
                let i = i as f32 * STEP;
                [
                    Vec2::new(i, -d),
                    Vec2::new(i, d),
                    Vec2::new(-d, i),
                    Vec2::new(d, i),
                ]
                .map(|offset| rect_at(want.min + offset))
            });
            if let Some((c, r)) = best(&mut candidates) {
                if out(r) == 0.0 {
                    first_free.get_or_insert(ring);
                }
                if found.is_none_or(|(b, _)| c < b) {
                    found = Some((c, r));
                }
            }
        }
    }
    found.map_or_else(|| rect_at(want.min), |(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callout(id: &str, rect: Rect, subject: Rect) -> Mark {
        Mark::Callout {
            id: id.into(),
            rect,
            title: String::new(),
            rows: Vec::new(),
            subject,
            over_subject: false,
        }
    }

    fn rects(marks: &[Mark]) -> Vec<Rect> {
        marks
            .iter()
            .filter_map(|m| match m {
                Mark::Callout { rect, .. } => Some(*rect),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn two_callouts_wishing_for_one_place_share_the_room_and_keep_off_what_is_framed() {
        let area = Rect::new(0.0, 0.0, 1600.0, 900.0);
        let broker = Rect::new(100.0, 100.0, 500.0, 400.0);
        let framed = [broker, Rect::new(520.0, 100.0, 920.0, 400.0)];
        let want = Rect::new(100.0, 412.0, 500.0, 500.0);
        let mut marks = vec![callout("a", want, broker), callout("b", want, broker)];
        lay_out(
            &mut marks,
            &Room {
                area,
                keep_clear: &framed,
                avoid: &[],
            },
        );
        let r = rects(&marks);
        // The first keeps its wish; the second is beside it, off both.
        assert_eq!(r[0], want);
        assert!(!overlaps(r[0], r[1]), "{r:?}");
        for f in framed {
            assert!(r.iter().all(|c| !overlaps(*c, f)), "{r:?} covers {f:?}");
        }
        assert!(
            r.iter()
                .all(|c| area.contains(c.min) && area.contains(c.max))
        );
    }

    #[test]
    fn a_callout_moved_away_from_its_subject_gets_a_leader_line() {
        let area = Rect::new(0.0, 0.0, 1000.0, 600.0);
        let subject = Rect::new(400.0, 200.0, 600.0, 300.0);
        // Everything around the subject is taken but the far right.
        let clear = [
            subject,
            Rect::new(0.0, 0.0, 1000.0, 190.0),
            Rect::new(0.0, 310.0, 1000.0, 600.0),
            Rect::new(0.0, 0.0, 390.0, 600.0),
            Rect::new(610.0, 0.0, 780.0, 600.0),
        ];
        let mut marks = vec![callout("c", Rect::new(400.0, 312.0, 600.0, 400.0), subject)];
        lay_out(
            &mut marks,
            &Room {
                area,
                keep_clear: &clear,
                avoid: &[],
            },
        );
        let r = rects(&marks)[0];
        assert!(r.min.x >= 780.0, "{r:?}");
        let line = marks.iter().find_map(|m| match m {
            Mark::Line { from, to, .. } => Some((*from, *to)),
            _ => None,
        });
        let (from, to) = line.expect("a leader line");
        assert!(r.inflate(0.5).contains(from) && subject.inflate(0.5).contains(to));
    }

    #[test]
    fn a_place_off_the_other_boxes_wins_over_the_nearest() {
        let area = Rect::new(0.0, 0.0, 1600.0, 900.0);
        let subject = Rect::new(100.0, 100.0, 500.0, 400.0);
        let other = Rect::new(0.0, 410.0, 800.0, 700.0);
        let mut marks = vec![callout("c", Rect::new(100.0, 412.0, 500.0, 500.0), subject)];
        lay_out(
            &mut marks,
            &Room {
                area,
                keep_clear: &[subject],
                avoid: &[other],
            },
        );
        let r = rects(&marks)[0];
        assert!(!overlaps(r, other), "{r:?}");
    }
}
