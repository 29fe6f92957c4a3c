//! Where everything sits on the scene: producers on the left, the controller above the brokers,
//! the brokers in the middle (each listing its replicas with their log strips), the lag monitor
//! and the consumer groups on the right. Every route a message takes is a straight line between
//! two anchors.
//!
//! The layout fills the area the panels leave, in both dimensions. It is laid out in units the
//! camera maps onto that area at `scale` pixels each: the fewer the brokers and partitions, the
//! larger the scale, so boxes, rows and text grow with the room there is; with many, the brokers
//! reflow into more rows, and only past the smallest readable text do replicas fold into a
//! "+N more" row.

use bevy::math::{Rect, Vec2};

use crate::sim::{Node, Wire};

use super::motion::{motion, placement};
use super::snapshot::Snapshot;

/// Text sizes of the scene, in layout units at text size 1: the smallest is 14 pixels where the
/// scale is 1, which it is at least from a 1920-pixel-wide window.
pub mod text {
    pub const SMALL: f32 = 14.0;
    pub const BODY: f32 = 16.0;
    pub const HEADING: f32 = 18.0;
    pub const TITLE: f32 = 22.0;

    /// About how wide `s` runs at `size`: the scene's font is monospace, 0.6 em a character.
    pub fn width(s: &str, size: f32) -> f32 {
        s.chars().count() as f32 * size * 0.6
    }

    /// How many characters fit in `width` at `size`.
    pub fn chars_in(width: f32, size: f32) -> usize {
        (width / (size * 0.6)).floor().max(0.0) as usize
    }
}

/// The least width a 1920x1080 window leaves the scene beside the details panel at its widest
/// (520), in pixels: from it and wider, the scale never goes below 1, so the smallest text is
/// at least 14 pixels.
pub const FULL_WIDTH: f32 = 1400.0;
/// The talk preset's text, times the reader's: large enough for the back of a room.
pub const TALK_TEXT: f32 = 1.5;
/// The largest share of the window's height a tour's narration takes (it scrolls past it): the
/// scene keeps room enough for its callouts' text to read at 12 px and more.
pub const NARRATION_SHARE: f32 = 0.3;
/// The height of the band over a side-by-side's halves, for the runs' headings (points), and of
/// the lag plot a heading adds for a run with a consumer group (with 6 points around it).
pub const RUN_HEADING: f32 = 64.0;
pub const RUN_PLOT: f32 = 70.0;
/// The share a lab's end takes: its table, how to prevent what it showed, and where next.
pub const LAB_END_SHARE: f32 = 0.5;
/// The most a layout is enlarged (a lone broker does not fill a projector with three cells).
const MAX_SCALE: f32 = 2.5;

const MARGIN: f32 = 20.0;
const GAP: f32 = 16.0;
const PRODUCER_COLUMN: f32 = 200.0;
const GROUP_COLUMN: f32 = 210.0;
const CONTROLLER: Vec2 = Vec2::new(300.0, 90.0);
/// A broker's title line.
pub const BROKER_HEADER: f32 = 40.0;
const BROKER_MIN_WIDTH: f32 = 240.0;
/// A replica row with its name and numbers on a line above its log: as it grows with the room,
/// and the least it may be.
const ROW_NATURAL: f32 = 72.0;
/// A slot is its row less a 5-unit gap: a tall row's slot has room for its lines and its log.
const ROW_TALL_MIN: f32 = super::log_strip::TALL + 5.0;
/// The tallest a row gets.
const ROW_MAX: f32 = 190.0;
/// A short row: the name beside the log.
const ROW_SHORT: f32 = 26.0;
/// A group's member rows: where they start in its box, each one's height, and the room kept
/// below them for where the group commits.
pub const MEMBERS_TOP: f32 = 70.0;
pub const MEMBER_ROW: f32 = 30.0;
const MEMBERS_BOTTOM: f32 = 84.0;
/// A producer's and a group's box: the least and the most of a column's height they take.
const SIDE_BOX_MIN: f32 = 190.0;
const SIDE_BOX_SHARE: f32 = 0.55;

/// One partition as the layout needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Position in `Cluster::partitions`.
    pub ordinal: u32,
    /// Its replicas' brokers, preferred leader first.
    pub brokers: Vec<u32>,
}

/// A replica's row inside its broker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicaSlot {
    pub ordinal: u32,
    pub broker: u32,
    pub rect: Rect,
}

#[derive(Debug, Clone)]
pub struct Layout {
    /// The area laid out, in units from `origin`, y down: what the camera shows whole.
    pub area: Vec2,
    /// Where the area starts: (0, 0), except for a second run drawn beside the first, which is
    /// laid out far from it and shown by a camera of its own.
    pub origin: Vec2,
    /// Pixels per unit on screen (logical pixels, before the display's density).
    pub scale: f32,
    /// Text sizes times this (the reader's text size, the talk preset's).
    pub text: f32,
    pub controller: Rect,
    /// Broker `id` is at `brokers[id - 1]`.
    pub brokers: Vec<Rect>,
    pub producers: Vec<Rect>,
    pub groups: Vec<Rect>,
    /// The lag monitor, above the groups it watches (none without groups).
    pub lag_monitor: Option<Rect>,
    pub replicas: Vec<ReplicaSlot>,
    /// Per broker (by id - 1): replicas not shown row by row, summarised in the last row.
    pub hidden: Vec<u32>,
    /// The members a group's box was sized for: a group that grows past it is laid out anew.
    pub members: usize,
}

/// What a layout is of.
pub struct Content<'a> {
    pub brokers: u32,
    pub partitions: &'a [PartitionInfo],
    pub producers: usize,
    pub groups: usize,
    /// The most members a group's box must have rows for.
    pub members: usize,
}

/// `n` boxes stacked in a column of width `w`, each `h` tall at most, from `top`.
fn stack(x: f32, w: f32, top: f32, bottom: f32, n: usize, h: f32) -> Vec<Rect> {
    if n == 0 {
        return Vec::new();
    }
    let h = ((bottom - top - GAP * (n as f32 - 1.0)) / n as f32).min(h);
    (0..n)
        .map(|i| {
            let y = top + i as f32 * (h + GAP);
            Rect::new(x, y, x + w, y + h)
        })
        .collect()
}

impl Layout {
    /// Lays out `content` to fill `area` (logical pixels) with text `text` times its size.
    pub fn new(content: &Content, area: Vec2, text: f32) -> Layout {
        let t = text.max(0.5);
        let n = content.brokers.max(1) as usize;
        let per_broker: Vec<usize> = (1..=n as u32)
            .map(|b| {
                content
                    .partitions
                    .iter()
                    .filter(|p| p.brokers.contains(&b))
                    .count()
            })
            .collect();
        let most = per_broker.iter().copied().max().unwrap_or(0).max(1);
        let side = |on: bool, w: f32| if on { w * t + 2.0 * GAP } else { 0.0 };
        let sides =
            side(content.producers > 0, PRODUCER_COLUMN) + side(content.groups > 0, GROUP_COLUMN);
        // The size the content takes with its rows at their natural height, for `rows` rows of
        // brokers: the scale is how many times that fits the area.
        let natural = |rows: usize| {
            let cols = n.div_ceil(rows) as f32;
            let w = 2.0 * MARGIN + sides + cols * BROKER_MIN_WIDTH * t + (cols - 1.0) * GAP;
            let broker_h = (BROKER_HEADER + most as f32 * ROW_NATURAL + 12.0) * t;
            let h = 2.0 * MARGIN
                + CONTROLLER.y * t
                + 2.0 * GAP
                + rows as f32 * broker_h
                + (rows as f32 - 1.0) * GAP;
            Vec2::new(w, h)
        };
        // The least scale keeps the smallest text as large as it is at 1x in a window this
        // wide: larger text (the talk preset, the reader's) shrinks back towards it before
        // replicas fold away, and the camera enlarges what a beat frames.
        let floor = (area.x / FULL_WIDTH).min(1.0) / t.max(1.0);
        let scale_of = |rows: usize| {
            let size = natural(rows);
            (area.x / size.x)
                .min(area.y / size.y)
                .clamp(floor, MAX_SCALE)
        };
        // How well `rows` rows of brokers fit at their scale: 1 or more when each broker is at
        // least its least width and has room for a replica row and the "+N more" one.
        let roomy = |rows: usize| {
            let size = area / scale_of(rows);
            let cols = n.div_ceil(rows) as f32;
            let w = (size.x - 2.0 * MARGIN - sides - (cols - 1.0) * GAP) / cols;
            let h = (size.y - 2.0 * MARGIN - CONTROLLER.y * t - 2.0 * GAP) / rows as f32
                - (rows as f32 - 1.0) / rows as f32 * GAP;
            let least_h = (BROKER_HEADER + 2.0 * ROW_SHORT + 12.0) * t;
            (w / (BROKER_MIN_WIDTH * t)).min(h / least_h)
        };
        // The broker rows: the fewest that leave each broker wide enough to read (its replicas
        // folding into "+N more" before text shrinks), unless more rows are what bring the text
        // up to its full size. One row reads best: the brokers' routes to each other stay clear
        // of the boxes.
        let fits: Vec<usize> = (1..=n).filter(|r| roomy(*r) >= 1.0).collect();
        let rows = if fits.is_empty() {
            (1..=n)
                .reduce(|a, b| if roomy(b) > roomy(a) { b } else { a })
                .unwrap_or(1)
        } else {
            fits.iter()
                .copied()
                .reduce(|a, b| {
                    if scale_of(a) < 1.0 && scale_of(b) > scale_of(a) * 1.25 {
                        b
                    } else {
                        a
                    }
                })
                .unwrap_or(1)
        };
        let scale = scale_of(rows);
        let size = area / scale;
        let mut layout = Layout::fill(content, size, t, rows, &per_broker);
        layout.scale = scale;
        layout
    }

    /// Fills an area of `size` units: boxes take the room there is.
    fn fill(content: &Content, size: Vec2, t: f32, rows: usize, per_broker: &[usize]) -> Layout {
        let n = per_broker.len();
        let producer_w = PRODUCER_COLUMN * t;
        let group_w = GROUP_COLUMN * t;
        let left = MARGIN
            + if content.producers > 0 {
                producer_w + 2.0 * GAP
            } else {
                0.0
            };
        let right = size.x
            - MARGIN
            - if content.groups > 0 {
                group_w + 2.0 * GAP
            } else {
                0.0
            };
        let controller_size = CONTROLLER * t;
        let cx = (left + right) / 2.0;
        let controller = Rect::from_center_size(
            Vec2::new(cx, MARGIN + controller_size.y / 2.0),
            Vec2::new(controller_size.x.min(right - left), controller_size.y),
        );
        let top = controller.max.y + 2.0 * GAP;
        let bottom = size.y - MARGIN;
        let cols = n.div_ceil(rows);
        let w = (right - left - GAP * (cols as f32 - 1.0)) / cols as f32;
        let h = (bottom - top - GAP * (rows as f32 - 1.0)) / rows as f32;
        let brokers: Vec<Rect> = (0..n)
            .map(|i| {
                let (r, c) = (i / cols, i % cols);
                let x = left + c as f32 * (w + GAP);
                let y = top + r as f32 * (h + GAP);
                Rect::new(x, y, x + w, y + h)
            })
            .collect();

        // Each broker lists its replicas in partition order, as tall as the room lets them be.
        let mut replicas = Vec::new();
        let mut hidden = vec![0u32; n];
        for (i, rect) in brokers.iter().enumerate() {
            let broker = i as u32 + 1;
            let mine: Vec<u32> = content
                .partitions
                .iter()
                .filter(|p| p.brokers.contains(&broker))
                .map(|p| p.ordinal)
                .collect();
            let room = rect.height() - BROKER_HEADER * t - 8.0;
            let tall = room / mine.len().max(1) as f32 >= ROW_TALL_MIN * t;
            let least = if tall { ROW_TALL_MIN } else { ROW_SHORT } * t;
            let fit = ((room / least).floor() as usize).max(1);
            let shown = if mine.len() > fit {
                fit - 1
            } else {
                mine.len()
            };
            hidden[i] = (mine.len() - shown) as u32;
            // A row is kept free below the shown ones for the count of the rest.
            let slots = shown + usize::from(shown < mine.len());
            let row = (room / slots.max(1) as f32).clamp(least, ROW_MAX * t);
            for (j, ordinal) in mine.iter().take(shown).enumerate() {
                let y = rect.min.y + BROKER_HEADER * t + j as f32 * row;
                replicas.push(ReplicaSlot {
                    ordinal: *ordinal,
                    broker,
                    rect: Rect::new(rect.min.x + 8.0, y, rect.max.x - 8.0, y + row - 5.0),
                });
            }
        }

        // Producers and groups take up to a share of their column, and at least what they need.
        let column_h = bottom - top;
        let side_h = (column_h * SIDE_BOX_SHARE).max(SIDE_BOX_MIN * t);
        let group_x = size.x - MARGIN - group_w;
        // A group's box has a row for each member, as far as its column allows.
        let members_h = (MEMBERS_TOP + content.members as f32 * MEMBER_ROW + MEMBERS_BOTTOM) * t;
        Layout {
            area: size,
            origin: Vec2::ZERO,
            scale: 1.0,
            text: t,
            controller,
            brokers,
            producers: stack(MARGIN, producer_w, top, bottom, content.producers, side_h),
            groups: stack(
                group_x,
                group_w,
                top,
                bottom,
                content.groups,
                side_h.max(300.0 * t).max(members_h),
            ),
            lag_monitor: (content.groups > 0).then(|| {
                Rect::new(
                    group_x,
                    controller.min.y,
                    group_x + group_w,
                    controller.max.y,
                )
            }),
            replicas,
            hidden,
            members: content.members,
        }
    }

    /// The layout of what a snapshot shows, in `area`: every topic's partitions, and of
    /// `__consumer_offsets` only those a group commits to (the other fifty-odd would only
    /// repeat them).
    pub fn of(snapshot: &Snapshot, area: Vec2, text: f32) -> Layout {
        let partitions: Vec<PartitionInfo> = snapshot
            .partitions
            .iter()
            .filter(|p| {
                !p.internal
                    || snapshot
                        .groups
                        .iter()
                        .any(|g| g.offsets_partition == p.ordinal)
            })
            .map(|p| PartitionInfo {
                ordinal: p.ordinal,
                brokers: p.assignment.clone(),
            })
            .collect();
        Layout::new(
            &Content {
                brokers: snapshot.brokers.len() as u32,
                partitions: &partitions,
                producers: snapshot.producers.len(),
                groups: snapshot.groups.len(),
                // Room for two more than the most there are, so that a joining member seldom
                // lays the scene out again.
                members: snapshot.most_members() + 2,
            },
            area,
            text,
        )
    }

    /// The whole area, where it lies.
    pub fn whole(&self) -> Rect {
        Rect::from_corners(self.origin, self.origin + self.area)
    }

    /// The same layout moved to start at `origin`.
    pub fn at(mut self, origin: Vec2) -> Layout {
        let by = origin - self.origin;
        let shift = |r: &mut Rect| {
            r.min += by;
            r.max += by;
        };
        shift(&mut self.controller);
        self.brokers.iter_mut().for_each(shift);
        self.producers.iter_mut().for_each(shift);
        self.groups.iter_mut().for_each(shift);
        if let Some(r) = self.lag_monitor.as_mut() {
            shift(r);
        }
        self.replicas
            .iter_mut()
            .for_each(|slot| shift(&mut slot.rect));
        self.origin = origin;
        self
    }

    /// A text size of `text` (the scene's sizes) for this layout.
    pub fn font(&self, size: f32) -> f32 {
        size * self.text
    }

    pub fn anchor(&self, node: Node) -> Option<Vec2> {
        let rect = match node {
            Node::Broker(b) => self.brokers.get(b as usize - 1)?,
            Node::Controller => &self.controller,
            Node::Producer(p) => self.producers.get(p as usize)?,
            // Consumers are drawn inside their group's box; the caller maps them to a group.
            Node::Consumer(_) => return None,
        };
        Some(rect.center())
    }

    /// The box of broker `id`.
    pub fn broker(&self, id: u32) -> Option<Rect> {
        self.brokers.get((id as usize).checked_sub(1)?).copied()
    }

    /// Everything the scene draws boxes for, together: what the camera frames by default.
    pub fn bounds(&self) -> Rect {
        self.boxes().fold(self.controller, |a, b| a.union(b))
    }

    /// Every box the scene draws: brokers, producers, groups, the lag monitor, the controller.
    pub fn boxes(&self) -> impl Iterator<Item = Rect> + '_ {
        self.brokers
            .iter()
            .chain(&self.producers)
            .chain(&self.groups)
            .chain(&self.lag_monitor)
            .chain([&self.controller])
            .copied()
    }

    /// Where a message leaves or reaches `node` when its other end is `peer`: every route is a
    /// straight line between two of these.
    pub fn route_end(&self, s: &Snapshot, node: Node, peer: Node) -> Option<Vec2> {
        match node {
            Node::Broker(b) => {
                let r = self.brokers.get(b.checked_sub(1)? as usize)?;
                // Clients' requests reach the box's edge just under its header, clear of the
                // broker's title on the left and its state on the right.
                let under_header = r.min.y + BROKER_HEADER * self.text + 6.0 * self.text;
                Some(match peer {
                    Node::Controller => Vec2::new(r.center().x, r.min.y),
                    Node::Producer(_) => Vec2::new(r.min.x, under_header),
                    Node::Consumer(_) => Vec2::new(r.max.x, under_header),
                    Node::Broker(o) => {
                        let other = self.brokers.get(o.checked_sub(1)? as usize)?;
                        let dx = (other.center().x - r.center().x).signum() * r.width() * 0.3;
                        // A broker in the row below or above is reached across the gap between
                        // them, not through either box.
                        let y = if other.min.y >= r.max.y {
                            r.max.y
                        } else if other.max.y <= r.min.y {
                            r.min.y
                        } else {
                            r.max.y - 8.0
                        };
                        Vec2::new(r.center().x + dx, y)
                    }
                })
            }
            Node::Controller => {
                let c = self.controller;
                let toward = self.route_end(s, peer, Node::Controller)?;
                Some(Vec2::new(
                    toward.x.clamp(c.min.x + 10.0, c.max.x - 10.0),
                    c.max.y,
                ))
            }
            Node::Producer(p) => {
                let r = self.producers.get(p as usize)?;
                Some(Vec2::new(r.max.x, r.center().y))
            }
            Node::Consumer(c) => {
                let (g, i) = s.member_of(c)?;
                let r = self.member(g, i)?;
                Some(Vec2::new(r.min.x, r.center().y))
            }
        }
    }

    /// Where a message is drawn at `display_ms` (fractional sim time), and how opaque; `None`
    /// when it is not on screen.
    pub fn message_at(&self, s: &Snapshot, wire: &Wire, display_ms: f64) -> Option<(Vec2, f32)> {
        let from = self.route_end(s, wire.from, wire.to)?;
        let to = self.route_end(s, wire.to, wire.from)?;
        placement(from, to, motion(wire, display_ms))
    }

    /// A member's row in its group's box, if there is room for it.
    pub fn member(&self, group: usize, index: usize) -> Option<Rect> {
        let g = self.groups.get(group)?;
        let t = self.text;
        let top = g.min.y + MEMBERS_TOP * t + index as f32 * MEMBER_ROW * t;
        let bottom = top + (MEMBER_ROW - 2.0) * t;
        (bottom <= g.max.y - MEMBERS_BOTTOM * t)
            .then(|| Rect::new(g.min.x + 6.0, top, g.max.x - 6.0, bottom))
    }

    /// The row of a replica, if it is shown one by one.
    pub fn replica(&self, ordinal: u32, broker: u32) -> Option<&ReplicaSlot> {
        self.replicas
            .iter()
            .find(|s| s.ordinal == ordinal && s.broker == broker)
    }
}

/// Where to write a label of `size` about the line from `a` to `b` (a cut link): by the line,
/// near its middle, on no broker's title or row (where HW and LEO are written) and no other
/// box, nor on the labels `taken` already. Where every place by the line is on one (a short line
/// between boxes stacked close), the nearest clear place around its middle inside the area; the
/// middle where there is none.
pub fn clear_spot(layout: &Layout, a: Vec2, b: Vec2, size: Vec2, taken: &[Rect]) -> Vec2 {
    // A broker's title line and its rows (where HW and LEO are), and every other box whole.
    let headers = layout.brokers.iter().map(|b| {
        Rect::new(
            b.min.x,
            b.min.y,
            b.max.x,
            b.min.y + BROKER_HEADER * layout.text,
        )
    });
    let boxes: Vec<Rect> = headers
        .chain(layout.replicas.iter().map(|s| s.rect))
        .chain(layout.producers.iter().copied())
        .chain(layout.groups.iter().copied())
        .chain(layout.lag_monitor)
        .chain([layout.controller])
        .chain(taken.iter().copied())
        .collect();
    let half = size / 2.0;
    let offsets = [
        Vec2::new(0.0, half.y + 4.0),
        Vec2::new(0.0, -half.y - 4.0),
        Vec2::new(half.x + 8.0, 0.0),
        Vec2::new(-half.x - 8.0, 0.0),
    ];
    let by_the_line = [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9]
        .into_iter()
        .flat_map(|f| offsets.map(|o| a.lerp(b, f) + o));
    // Rings around the middle, a label's height apart, each tried from the right round.
    let middle = a.lerp(b, 0.5);
    let around = (1..=16).flat_map(move |k| {
        let reach = Vec2::new(half.x + 8.0, half.y + 4.0) + Vec2::splat(k as f32 * size.y);
        (0..16).map(move |i| {
            let angle = i as f32 * std::f32::consts::TAU / 16.0;
            middle + Vec2::new(angle.cos(), angle.sin()) * reach
        })
    });
    let area = Rect::from_corners(layout.origin, layout.origin + layout.area);
    by_the_line
        .chain(around)
        .find(|at| {
            let r = Rect::from_center_half_size(*at, half);
            area.contains(r.min)
                && area.contains(r.max)
                && boxes.iter().all(|b| b.intersect(r).is_empty())
        })
        .unwrap_or(middle + Vec2::Y * (half.y + 4.0))
}

/// The lines a card of `height` (lines `line_h` apart, the first `first` below its top, `margin`
/// kept at its foot) has room for: where there are more, those of the lowest rank, in their
/// order. A short card keeps what matters and drops the rest, instead of cutting the bottom off.
pub fn card_lines<T>(
    lines: Vec<(u8, T)>,
    height: f32,
    first: f32,
    line_h: f32,
    margin: f32,
) -> Vec<T> {
    let room = if height - margin < first {
        0
    } else {
        ((height - margin - first) / line_h).floor() as usize + 1
    };
    let mut ranked: Vec<(u8, usize, T)> = lines
        .into_iter()
        .enumerate()
        .map(|(i, (rank, line))| (rank, i, line))
        .collect();
    ranked.sort_by_key(|&(rank, i, _)| (rank, i));
    ranked.truncate(room);
    ranked.sort_by_key(|&(_, i, _)| i);
    ranked.into_iter().map(|(_, _, line)| line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partitions(count: u32, brokers: u32, rf: u32) -> Vec<PartitionInfo> {
        (0..count)
            .map(|p| PartitionInfo {
                ordinal: p,
                brokers: (0..rf).map(|r| (p + r) % brokers + 1).collect(),
            })
            .collect()
    }

    fn layout(brokers: u32, parts: &[PartitionInfo], clients: usize, area: Vec2) -> Layout {
        Layout::new(
            &Content {
                brokers,
                partitions: parts,
                producers: clients,
                groups: clients,
                members: 3,
            },
            area,
            1.0,
        )
    }

    fn inside(inner: &Rect, outer: &Rect) -> bool {
        inner.min.x >= outer.min.x - 0.01
            && inner.min.y >= outer.min.y - 0.01
            && inner.max.x <= outer.max.x + 0.01
            && inner.max.y <= outer.max.y + 0.01
    }

    #[test]
    fn every_broker_count_fits_without_overlap() {
        for area in [Vec2::new(1600.0, 900.0), Vec2::new(800.0, 360.0)] {
            for n in 1..=12 {
                let layout = layout(n, &partitions(6, n, n.min(3)), 2, area);
                let scene = Rect::from_corners(Vec2::ZERO, layout.area);
                assert_eq!(layout.brokers.len(), n as usize);
                let boxes: Vec<&Rect> = layout
                    .brokers
                    .iter()
                    .chain(&layout.producers)
                    .chain(&layout.groups)
                    .chain(&layout.lag_monitor)
                    .chain(std::iter::once(&layout.controller))
                    .collect();
                for (i, a) in boxes.iter().enumerate() {
                    assert!(inside(a, &scene), "{n} brokers: {a:?} leaves the scene");
                    assert!(
                        a.width() > 60.0 && a.height() > 40.0,
                        "{n} brokers: {a:?} too small"
                    );
                    for b in &boxes[i + 1..] {
                        assert!(
                            a.intersect(**b).is_empty(),
                            "{n} brokers: {a:?} overlaps {b:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn replicas_sit_in_their_broker_and_the_rest_is_counted() {
        // 64 partitions at RF 3 on 3 brokers: 64 replicas each, more than fit.
        let big = layout(3, &partitions(64, 3, 3), 1, Vec2::new(1600.0, 900.0));
        for slot in &big.replicas {
            assert!(inside(&slot.rect, &big.brokers[slot.broker as usize - 1]));
        }
        for b in 1..=3u32 {
            let shown = big.replicas.iter().filter(|s| s.broker == b).count() as u32;
            assert_eq!(shown + big.hidden[b as usize - 1], 64);
            assert!(big.hidden[b as usize - 1] > 0);
        }
        // A small cluster shows every replica.
        let small = layout(3, &partitions(3, 3, 3), 1, Vec2::new(1600.0, 900.0));
        assert_eq!(small.replicas.len(), 9);
        assert!(small.hidden.iter().all(|h| *h == 0));
        assert!(small.replica(2, 1).is_some());
    }

    #[test]
    fn a_small_cluster_is_drawn_larger_and_a_large_one_reflows() {
        let area = Vec2::new(1540.0, 1000.0);
        let small = layout(3, &partitions(3, 3, 3), 1, area);
        // Larger than the smallest readable size, and filling the area's width.
        assert!(small.scale > 1.0, "scale {}", small.scale);
        assert!((small.area.x * small.scale - area.x).abs() < 0.5);
        // Twelve brokers go into rows rather than shrink the text below its least.
        let large = layout(12, &partitions(64, 12, 3), 2, area);
        assert!(large.scale >= 1.0, "scale {}", large.scale);
        let rows: std::collections::BTreeSet<i32> =
            large.brokers.iter().map(|b| b.min.y as i32).collect();
        assert!(rows.len() >= 2, "{} rows of brokers", rows.len());
        // From a window narrower than a 1920-pixel one, the least scale is in proportion.
        let narrow = layout(12, &partitions(64, 12, 3), 2, Vec2::new(770.0, 500.0));
        assert!(narrow.scale >= 0.5 - 1e-6);
    }

    #[test]
    fn anchors_of_every_node() {
        let layout = layout(4, &partitions(4, 4, 3), 2, Vec2::new(1600.0, 900.0));
        let a = layout.anchor(Node::Producer(0)).unwrap();
        let b = layout.anchor(Node::Broker(4)).unwrap();
        let c = layout.anchor(Node::Controller).unwrap();
        assert!(a.x < b.x, "producers are left of brokers");
        assert!(c.y < b.y, "the controller is above the brokers");
        assert!(layout.anchor(Node::Broker(5)).is_none());
    }

    /// Broker 3 stacked right under broker 1, as the talk preset lays out three brokers: the
    /// cut link between them is a few units long, and every place by it is on a broker's title
    /// or row. The label goes to the nearest clear place instead of over broker 3's title.
    #[test]
    fn a_cut_links_label_between_stacked_brokers_finds_a_clear_place() {
        let broker = |x: f32, y: f32| Rect::new(x, y, x + 410.0, y + 230.0);
        let (b1, b2, b3) = (
            broker(410.0, 215.0),
            broker(840.0, 215.0),
            broker(410.0, 465.0),
        );
        let row = |b: Rect| Rect::new(b.min.x + 8.0, b.min.y + 70.0, b.max.x - 8.0, b.max.y - 10.0);
        let slot = |broker, r| ReplicaSlot {
            ordinal: 0,
            broker,
            rect: r,
        };
        let layout = Layout {
            area: Vec2::new(1280.0, 720.0),
            origin: Vec2::ZERO,
            scale: 1.0,
            text: 1.0,
            controller: Rect::new(570.0, 20.0, 1090.0, 180.0),
            brokers: vec![b1, b2, b3],
            producers: vec![Rect::new(20.0, 215.0, 370.0, 545.0)],
            groups: Vec::new(),
            lag_monitor: None,
            replicas: vec![slot(1, row(b1)), slot(2, row(b2)), slot(3, row(b3))],
            hidden: vec![0; 3],
            members: 0,
        };
        let (a, b) = (Vec2::new(740.0, 445.0), Vec2::new(740.0, 465.0));
        let size = Vec2::new(200.0, 26.0);
        let at = clear_spot(&layout, a, b, size, &[]);
        let label = Rect::from_center_size(at, size);
        let header = |b: Rect| Rect::new(b.min.x, b.min.y, b.max.x, b.min.y + BROKER_HEADER);
        for taken in [b1, b2, b3]
            .map(header)
            .into_iter()
            .chain(layout.replicas.iter().map(|s| s.rect))
        {
            assert!(taken.intersect(label).is_empty(), "{label:?} on {taken:?}");
        }
        assert!(label.min.cmpge(Vec2::ZERO).all() && label.max.cmple(layout.area).all());
        // Near the line still: within a few labels' heights of its middle.
        assert!(at.distance(a.lerp(b, 0.5)) < 8.0 * size.y, "{at}");
    }

    #[test]
    fn a_short_card_keeps_its_most_important_lines_in_order() {
        let lines = vec![
            (0, "title"),
            (5, "rate"),
            (2, "sent"),
            (3, "failed"),
            (4, "idempotent"),
        ];
        // Room for all: 22 + 4 * 26 = 126 below the top, 8 kept at the foot.
        assert_eq!(
            card_lines(lines.clone(), 134.0, 22.0, 26.0, 8.0),
            vec!["title", "rate", "sent", "failed", "idempotent"]
        );
        // Room for three: the two of the highest rank go, the rest keep their order.
        assert_eq!(
            card_lines(lines.clone(), 90.0, 22.0, 26.0, 8.0),
            vec!["title", "sent", "failed"]
        );
        assert!(card_lines(lines, 20.0, 22.0, 26.0, 8.0).is_empty());
    }
}
