//! Where everything sits on the scene: producers on the left, the controller above the brokers,
//! the brokers in the middle (each listing its replicas with their log strips), consumer groups on
//! the right. Every route a message takes is a straight line between two anchors. The layout fits
//! 1 to 12 brokers; replicas that do not fit in their broker are counted in one summary row.

use bevy::math::{Rect, Vec2};

use crate::sim::{Node, Wire};

use super::motion::{motion, placement};
use super::snapshot::Snapshot;

/// The scene's logical size; the camera scales it to the window.
pub const SCENE: Vec2 = Vec2::new(1600.0, 900.0);
const MARGIN: f32 = 24.0;
const SIDE_COLUMN: f32 = 230.0;
const CONTROLLER_HEIGHT: f32 = 76.0;
const BROKER_HEADER: f32 = 40.0;
/// Height of one replica row (its label and log strip).
pub const ROW: f32 = 22.0;
/// The tallest a replica row gets.
pub const MAX_ROW: f32 = 72.0;
const GAP: f32 = 18.0;

/// One partition as the layout needs it.
#[derive(Debug, Clone)]
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
}

/// `n` boxes stacked in a column, each at most `max_height` tall.
fn stack(x: f32, top: f32, bottom: f32, n: usize, max_height: f32) -> Vec<Rect> {
    if n == 0 {
        return Vec::new();
    }
    let h = ((bottom - top - GAP * (n as f32 - 1.0)) / n as f32).min(max_height);
    (0..n)
        .map(|i| {
            let y = top + i as f32 * (h + GAP);
            Rect::new(x, y, x + SIDE_COLUMN, y + h)
        })
        .collect()
}

impl Layout {
    /// Lays out `brokers` brokers (1 to 12), the given partitions, producers and groups. Y grows
    /// downward from the top-left corner of the scene.
    pub fn new(
        brokers: u32,
        partitions: &[PartitionInfo],
        producers: usize,
        groups: usize,
    ) -> Layout {
        let n = brokers.max(1) as usize;
        let middle_left = MARGIN + SIDE_COLUMN + 2.0 * GAP;
        let middle_right = SCENE.x - MARGIN - SIDE_COLUMN - 2.0 * GAP;
        let controller_w = 260.0f32.min(middle_right - middle_left);
        let cx = (middle_left + middle_right) / 2.0;
        let controller = Rect::new(
            cx - controller_w / 2.0,
            MARGIN,
            cx + controller_w / 2.0,
            MARGIN + CONTROLLER_HEIGHT,
        );

        // Brokers in one row up to 6, else in two rows.
        let rows = if n <= 6 { 1 } else { 2 };
        let cols = n.div_ceil(rows);
        let top = controller.max.y + 2.0 * GAP;
        let bottom = SCENE.y - MARGIN;
        let w = (middle_right - middle_left - GAP * (cols as f32 - 1.0)) / cols as f32;
        let most = (1..=n as u32)
            .map(|b| partitions.iter().filter(|p| p.brokers.contains(&b)).count())
            .max()
            .unwrap_or(0)
            .max(1);
        // No taller than their replicas need: the routes between brokers stay near the logs.
        let h = ((bottom - top - GAP * (rows as f32 - 1.0)) / rows as f32)
            .min(BROKER_HEADER + most as f32 * MAX_ROW + 40.0);
        let broker_rects: Vec<Rect> = (0..n)
            .map(|i| {
                let (r, c) = (i / cols, i % cols);
                let x = middle_left + c as f32 * (w + GAP);
                let y = top + r as f32 * (h + GAP);
                Rect::new(x, y, x + w, y + h)
            })
            .collect();

        // Each broker lists its replicas in partition order.
        let mut replicas = Vec::new();
        let mut hidden = vec![0u32; n];
        for (i, rect) in broker_rects.iter().enumerate() {
            let broker = i as u32 + 1;
            let mine: Vec<u32> = partitions
                .iter()
                .filter(|p| p.brokers.contains(&broker))
                .map(|p| p.ordinal)
                .collect();
            let fit = ((rect.height() - BROKER_HEADER - 6.0) / ROW)
                .floor()
                .max(1.0) as usize;
            let shown = if mine.len() > fit {
                fit - 1
            } else {
                mine.len()
            };
            hidden[i] = (mine.len() - shown) as u32;
            // Few replicas get taller rows: room for their names and numbers above the log.
            let row =
                ((rect.height() - BROKER_HEADER - 6.0) / shown.max(1) as f32).clamp(ROW, MAX_ROW);
            for (i, ordinal) in mine.iter().take(shown).enumerate() {
                let y = rect.min.y + BROKER_HEADER + i as f32 * row;
                replicas.push(ReplicaSlot {
                    ordinal: *ordinal,
                    broker,
                    rect: Rect::new(rect.min.x + 8.0, y, rect.max.x - 8.0, y + row - 4.0),
                });
            }
        }

        let mut layout = Layout {
            controller,
            brokers: broker_rects,
            producers: stack(MARGIN, top, bottom, producers, 190.0),
            groups: stack(SCENE.x - MARGIN - SIDE_COLUMN, top, bottom, groups, 300.0),
            lag_monitor: (groups > 0).then(|| {
                Rect::new(
                    SCENE.x - MARGIN - SIDE_COLUMN,
                    MARGIN,
                    SCENE.x - MARGIN,
                    MARGIN + CONTROLLER_HEIGHT,
                )
            }),
            replicas,
            hidden,
        };
        // A small cluster sits in the middle of the scene, not at its top.
        let used = layout
            .brokers
            .iter()
            .chain(&layout.producers)
            .chain(&layout.groups)
            .map(|r| r.max.y)
            .fold(0.0, f32::max);
        layout.shift_down(((bottom - used) / 2.0).max(0.0));
        layout
    }

    /// Where messages to and from a node start and end.
    fn shift_down(&mut self, dy: f32) {
        let d = Vec2::new(0.0, dy);
        let shift = |r: &mut Rect| {
            r.min += d;
            r.max += d;
        };
        shift(&mut self.controller);
        self.lag_monitor.iter_mut().for_each(shift);
        self.brokers.iter_mut().for_each(shift);
        self.producers.iter_mut().for_each(shift);
        self.groups.iter_mut().for_each(shift);
        self.replicas.iter_mut().for_each(|s| shift(&mut s.rect));
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
        self.brokers
            .iter()
            .chain(&self.producers)
            .chain(&self.groups)
            .chain(&self.lag_monitor)
            .fold(self.controller, |a, b| a.union(*b))
    }

    /// Where a message leaves or reaches `node` when its other end is `peer`: every route is a
    /// straight line between two of these.
    pub fn route_end(&self, s: &Snapshot, node: Node, peer: Node) -> Option<Vec2> {
        match node {
            Node::Broker(b) => {
                let r = self.brokers.get(b.checked_sub(1)? as usize)?;
                let header = r.min.y + BROKER_HEADER / 2.0;
                Some(match peer {
                    Node::Controller => Vec2::new(r.center().x, r.min.y),
                    Node::Producer(_) => Vec2::new(r.min.x + 6.0, header),
                    Node::Consumer(_) => Vec2::new(r.max.x - 6.0, header),
                    Node::Broker(o) => {
                        let other = self.brokers.get(o.checked_sub(1)? as usize)?;
                        let dx = (other.center().x - r.center().x).signum() * r.width() * 0.3;
                        Vec2::new(r.center().x + dx, r.max.y - 8.0)
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
        let top = g.min.y + 66.0 + index as f32 * 28.0;
        (top + 26.0 <= g.max.y - 80.0)
            .then(|| Rect::new(g.min.x + 6.0, top, g.max.x - 6.0, top + 26.0))
    }

    /// The row of a replica, if it is shown one by one.
    pub fn replica(&self, ordinal: u32, broker: u32) -> Option<&ReplicaSlot> {
        self.replicas
            .iter()
            .find(|s| s.ordinal == ordinal && s.broker == broker)
    }
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

    fn inside(inner: &Rect, outer: &Rect) -> bool {
        inner.min.x >= outer.min.x
            && inner.min.y >= outer.min.y
            && inner.max.x <= outer.max.x
            && inner.max.y <= outer.max.y
    }

    #[test]
    fn every_broker_count_fits_without_overlap() {
        let scene = Rect::new(0.0, 0.0, SCENE.x, SCENE.y);
        for n in 1..=12 {
            let layout = Layout::new(n, &partitions(6, n, n.min(3)), 2, 2);
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

    #[test]
    fn replicas_sit_in_their_broker_and_the_rest_is_counted() {
        // 64 partitions at RF 3 on 3 brokers: 64 replicas each, more than fit.
        let layout = Layout::new(3, &partitions(64, 3, 3), 1, 1);
        for slot in &layout.replicas {
            assert!(inside(
                &slot.rect,
                &layout.brokers[slot.broker as usize - 1]
            ));
        }
        for b in 1..=3u32 {
            let shown = layout.replicas.iter().filter(|s| s.broker == b).count() as u32;
            assert_eq!(shown + layout.hidden[b as usize - 1], 64);
            assert!(layout.hidden[b as usize - 1] > 0);
        }
        // A small cluster shows every replica.
        let small = Layout::new(3, &partitions(3, 3, 3), 1, 1);
        assert_eq!(small.replicas.len(), 9);
        assert!(small.hidden.iter().all(|h| *h == 0));
        assert!(small.replica(2, 1).is_some());
    }

    #[test]
    fn anchors_of_every_node() {
        let layout = Layout::new(4, &partitions(4, 4, 3), 2, 1);
        let a = layout.anchor(Node::Producer(0)).unwrap();
        let b = layout.anchor(Node::Broker(4)).unwrap();
        let c = layout.anchor(Node::Controller).unwrap();
        assert!(a.x < b.x, "producers are left of brokers");
        assert!(c.y < b.y, "the controller is above the brokers");
        assert!(layout.anchor(Node::Broker(5)).is_none());
    }
}
