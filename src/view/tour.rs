//! A tour as the window plays it, computed headless: which beat is on and where a reader's keys
//! take it, what a beat frames and lights on the scene, and the rest, which dims.

use bevy::math::{Rect, Vec2};

use super::follow::Trace;
use super::layout::Layout;
use super::log_strip::StripPlace;
use super::snapshot::{PartitionView, Snapshot};
use crate::sim::Node;
use crate::tour::{Beat, Focus, Tour};

/// Where the reader is in a beat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// At the beat's start, paused, waiting for the reader to start it.
    Ready,
    /// Playing towards the beat's next hold, or its end.
    Playing,
    /// Paused at one of the beat's holds (an index into its holds), until the next step.
    Held(usize),
    /// Stopped at its end.
    Ended,
    /// The last beat has ended and the reader moved on: the ways out are shown.
    Finished,
}

/// Where a key or a button takes the tour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Next,
    Previous,
    First,
    Last,
    /// The current beat again, from its start.
    Replay,
    /// Beat `n` (an index).
    Go(usize),
}

/// What the playback does for a step: seek exactly to `at_ms`, then play at `speed` until
/// `stop_ms`, or stay paused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cue {
    pub at_ms: u64,
    pub speed: f64,
    pub stop_ms: u64,
    pub play: bool,
}

/// The reader's place in a tour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The beat on screen (an index).
    pub beat: usize,
    pub stage: Stage,
    /// How many of the beat's holds the playback has gone past.
    pub holds_passed: usize,
}

impl Place {
    /// Opening a tour at a beat: paused at its start, or at its end (as a shot shows it).
    pub fn open(beat: usize, at_end: bool) -> Place {
        Place {
            beat,
            stage: if at_end { Stage::Ended } else { Stage::Ready },
            holds_passed: 0,
        }
    }

    /// The cue that opens the beat, or goes on with it, for the playback: from the beat's start,
    /// the hold it went past last, or its end; until its next hold, or its end.
    pub fn cue(&self, tour: &Tour) -> Cue {
        let b = &tour.beats[self.beat];
        let holds = tour.holds_of(self.beat);
        let hold = |k: usize| holds.get(k).map(|h| h.at_ms);
        let (at_ms, stop_ms) = match self.stage {
            Stage::Ended | Stage::Finished => (b.to_ms, b.to_ms),
            Stage::Held(k) => (hold(k).unwrap_or(b.to_ms), hold(k).unwrap_or(b.to_ms)),
            Stage::Ready | Stage::Playing => (
                self.holds_passed
                    .checked_sub(1)
                    .and_then(hold)
                    .unwrap_or(b.from_ms),
                hold(self.holds_passed).unwrap_or(b.to_ms),
            ),
        };
        Cue {
            at_ms,
            speed: b.speed,
            stop_ms,
            play: self.stage == Stage::Playing,
        }
    }

    /// The hold the beat is paused at, if it is.
    pub fn hold<'a>(&self, tour: &'a Tour) -> Option<&'a crate::tour::Hold> {
        match self.stage {
            Stage::Held(k) => tour.holds_of(self.beat).get(k),
            _ => None,
        }
    }

    /// Takes a step: the new place, and what the playback must do for it (`None`: nothing).
    /// Every beat is reached by an exact seek to its start, backwards as well as forwards, so a
    /// beat always starts from the same state.
    pub fn step(&mut self, tour: &Tour, step: Step) -> Option<Cue> {
        let last = tour.beats.len() - 1;
        let to = match (step, self.stage) {
            // On the first beat's start screen only Next (Start) starts.
            (Step::Previous | Step::First, Stage::Ready) if self.beat == 0 => return None,
            // Next at a hold goes on with the beat, from there.
            (Step::Next, Stage::Held(k)) => {
                self.stage = Stage::Playing;
                self.holds_passed = k + 1;
                return Some(self.cue(tour));
            }
            (Step::Next, Stage::Ready) => self.beat,
            (Step::Next, Stage::Finished) => return None,
            (Step::Next, _) if self.beat == last => {
                // Past the last beat: its end, with the ways out.
                self.stage = Stage::Finished;
                return Some(self.cue(tour));
            }
            (Step::Next, _) => self.beat + 1,
            (Step::Previous, Stage::Finished) => last,
            (Step::Previous, _) => self.beat.saturating_sub(1),
            (Step::First, _) => 0,
            (Step::Last, _) => last,
            (Step::Replay, Stage::Finished) => last,
            (Step::Replay, _) => self.beat,
            (Step::Go(n), _) => n.min(last),
        };
        *self = Place {
            beat: to,
            stage: Stage::Playing,
            holds_passed: 0,
        };
        Some(self.cue(tour))
    }

    /// The playhead reached `now_ms`: a playing beat pauses at its next hold, and ends at its
    /// end.
    pub fn reached(&mut self, tour: &Tour, now_ms: u64) {
        if self.stage != Stage::Playing {
            return;
        }
        match tour.holds_of(self.beat).get(self.holds_passed) {
            Some(hold) if now_ms >= hold.at_ms => self.stage = Stage::Held(self.holds_passed),
            Some(_) => {}
            None if now_ms >= tour.beats[self.beat].to_ms => self.stage = Stage::Ended,
            None => {}
        }
    }
}

/// A beat number being typed (a speaker's keypad, or a clicker that sends digits): Enter jumps
/// to that beat.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BeatEntry {
    digits: String,
}

impl BeatEntry {
    /// The most digits kept: no tour has a thousand beats.
    const MAX_DIGITS: usize = 3;

    /// A digit key (0 to 9).
    pub fn digit(&mut self, d: u8) {
        if d <= 9 && self.digits.len() < Self::MAX_DIGITS {
            self.digits.push(char::from(b'0' + d));
        }
    }

    /// What has been typed so far, if anything.
    pub fn typed(&self) -> Option<&str> {
        (!self.digits.is_empty()).then_some(self.digits.as_str())
    }

    pub fn clear(&mut self) {
        self.digits.clear();
    }

    /// The beat Enter would go to, counted from 1: the one typed, or the last past the last; 0
    /// or nothing typed is none.
    pub fn target(&self, beats: usize) -> Option<usize> {
        let n: usize = self.digits.parse().ok()?;
        (n >= 1 && beats >= 1).then(|| n.min(beats))
    }

    /// Enter: the step to [`BeatEntry::target`], and the typing is done.
    pub fn enter(&mut self, beats: usize) -> Option<Step> {
        let to = self.target(beats);
        self.clear();
        to.map(|n| Step::Go(n - 1))
    }
}

/// The stage blanked by the speaker (B: black, W: white), as presentation tools do, so that the
/// room looks at the speaker.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Blank {
    #[default]
    Shown,
    Black,
    White,
}

impl Blank {
    /// The key for `to` pressed: blanks to it, or shows the stage again if it was already so.
    pub fn toggled(self, to: Blank) -> Blank {
        if self == to { Blank::Shown } else { to }
    }
}

/// The rectangles of the scene a focus names, at this instant (a leader is wherever leadership
/// is now; the record wherever it is).
pub fn focus_rects(
    focus: &Focus,
    s: &Snapshot,
    layout: &Layout,
    trace: Option<&Trace>,
    display_ms: f64,
) -> Vec<Rect> {
    let partition = |topic: &str, index: u32| s.partition(topic, index);
    let rows = |p: &PartitionView, keep: &dyn Fn(u32) -> bool| -> Vec<Rect> {
        p.assignment
            .iter()
            .filter(|b| keep(**b))
            .filter_map(|b| layout.replica(p.ordinal, *b))
            .map(|slot| slot.rect)
            .collect()
    };
    let group = |name: &str| s.groups.iter().position(|g| g.name == name);
    match focus {
        Focus::Producer(name) => s
            .producers
            .iter()
            .position(|p| p.name == *name)
            .and_then(|i| layout.producers.get(i).copied())
            .into_iter()
            .collect(),
        Focus::Controller => vec![layout.controller],
        Focus::Broker(b) => layout.broker(*b).into_iter().collect(),
        Focus::Partition(t, i) => partition(t, *i).map_or_else(Vec::new, |p| rows(p, &|_| true)),
        Focus::Leader(t, i) => partition(t, *i).map_or_else(Vec::new, |p| match p.leader {
            Some(leader) => layout.broker(leader).into_iter().collect(),
            None => rows(p, &|_| true),
        }),
        Focus::Followers(t, i) => {
            partition(t, *i).map_or_else(Vec::new, |p| rows(p, &|b| Some(b) != p.leader))
        }
        Focus::Group(name) => group(name)
            .and_then(|g| layout.groups.get(g).copied())
            .into_iter()
            .collect(),
        Focus::OffsetsPartition(name) => group(name)
            .and_then(|g| s.partitions.get(s.groups[g].offsets_partition as usize))
            .map_or_else(Vec::new, |p| rows(p, &|_| true)),
        Focus::LagMonitor => layout.lag_monitor.into_iter().collect(),
        Focus::Record => {
            trace.map_or_else(Vec::new, |t| record_rects(t, s, layout, display_ms, true))
        }
        Focus::Route(a, b) => {
            let ends = [a, b].map(|f| {
                focus_rects(f, s, layout, trace, display_ms)
                    .into_iter()
                    .reduce(|x, y| x.union(y))
            });
            match ends {
                [Some(x), Some(y)] => vec![x.union(y)],
                [Some(x), None] | [None, Some(x)] => vec![x],
                [None, None] => Vec::new(),
            }
        }
    }
}

/// Where a followed record is drawn: its cells in the logs that hold it, the messages carrying
/// it, the members that fetched it, and (with `producer`) its producer's box while it waits in a
/// batch there.
pub fn record_rects(
    t: &Trace,
    s: &Snapshot,
    layout: &Layout,
    display_ms: f64,
    producer: bool,
) -> Vec<Rect> {
    let mut rects = Vec::new();
    if let (Some(offset), Some(p)) = (t.offset, s.partitions.get(t.ordinal as usize)) {
        for broker in &t.replicas {
            if let Some(slot) = layout.replica(t.ordinal, *broker)
                && let Some(cell) = StripPlace::of(slot.rect, p, layout.text).cell_of(offset)
            {
                rects.push(cell);
            }
        }
    }
    for m in s.messages.iter().filter(|m| t.wires.contains(&m.wire.id)) {
        if let Some((at, _)) = layout.message_at(s, &m.wire, display_ms) {
            rects.push(Rect::from_center_half_size(at, Vec2::splat(10.0)));
        }
    }
    if producer
        && t.in_batch
        && let Some(i) = s.producers.iter().position(|p| p.name == t.producer)
        && let Some(r) = layout.producers.get(i)
    {
        rects.push(*r);
    }
    for c in &t.fetched_by {
        if let Some((g, i)) = s.member_of(*c)
            && let Some(r) = layout.member(g, i)
        {
            rects.push(r);
        }
    }
    rects
}

/// The rectangles a focus names, a route as its two ends' (`focus_rects` gives a route the
/// band between them).
pub fn focus_parts(
    focus: &Focus,
    s: &Snapshot,
    layout: &Layout,
    trace: Option<&Trace>,
    display_ms: f64,
) -> Vec<Rect> {
    match focus {
        Focus::Route(a, b) => {
            let mut out = focus_parts(a, s, layout, trace, display_ms);
            out.extend(focus_parts(b, s, layout, trace, display_ms));
            out
        }
        f => focus_rects(f, s, layout, trace, display_ms),
    }
}

/// The parts a beat frames, each whole: a replica's row with its broker's box, so its broker is
/// named on screen; a route as its two ends.
pub fn framed_parts(
    beat: &Beat,
    s: &Snapshot,
    layout: &Layout,
    trace: Option<&Trace>,
) -> Vec<Rect> {
    let mut out: Vec<Rect> = Vec::new();
    for f in &beat.frame {
        for r in focus_parts(f, s, layout, trace, s.now_ms as f64) {
            let r = layout
                .brokers
                .iter()
                .find(|b| b.contains(r.center()))
                .map_or(r, |b| r.union(*b));
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// The smallest share of the scene's area a framing shows, so a small focus is not blown up
/// past reading.
const MIN_FRAME: f32 = 0.36;
/// Room around what is framed.
const MARGIN: f32 = 28.0;

/// What the camera shows of a scene whose area is `whole`, for a beat framing `focus` with
/// these callouts: all of them and a margin, at the area's shape. The layout keeps a margin of
/// its own at the area's edge, and room beyond it is void: the framing stays inside the area,
/// or inside it and the callouts where one is larger than the room the area has.
pub fn camera_frame(focus: Rect, callouts: impl Iterator<Item = Rect>, whole: Rect) -> Rect {
    let (with_marks, bound) = callouts.fold((focus, whole), |(a, w), r| (a.union(r), w.union(r)));
    let with_marks = with_marks.inflate(MARGIN);
    let inside = with_marks.intersect(bound);
    let with_marks = if inside.is_empty() {
        with_marks
    } else {
        inside
    };
    inward(
        with_marks,
        with_marks.size().max(whole.size() * MIN_FRAME),
        bound,
        whole.width() / whole.height().max(1.0),
    )
}

/// Side by side, the smallest text of each half reads at this size (pixels) or larger.
pub const HALF_TEXT: f32 = 12.0;

/// What the camera shows of a run's scene: what the beat frames (`focus`) with its callouts,
/// or, with nothing framed, the whole scene. Side by side (`half`), each run has half the room,
/// and a whole scene there may draw its text small: the framing is then enlarged until the
/// layout's smallest text reads at `HALF_TEXT`, the callouts are laid out inside it
/// (`callout_room`), and the rest goes off screen.
pub fn view_of(focus: Option<Rect>, callouts: &[Rect], layout: &Layout, half: bool) -> Rect {
    let whole = layout.whole();
    let zoom = half_zoom(layout, half);
    let callouts = if zoom > 1.0 { &[][..] } else { callouts };
    let frame = match focus {
        Some(f) => camera_frame(f, callouts.iter().copied(), whole),
        None => whole,
    };
    if !half {
        return frame;
    }
    enlarged(frame, focus, callouts, whole, zoom)
}

/// Where a beat's callouts may go: the whole scene, or, in a half enlarged to read, its view.
pub fn callout_room(focus: Option<Rect>, layout: &Layout, half: bool) -> Rect {
    if half_zoom(layout, half) > 1.0 {
        view_of(focus, &[], layout, true).intersect(layout.whole())
    } else {
        layout.whole()
    }
}

/// How many times the whole scene a half must be enlarged for its text to read (1 or less:
/// it reads already).
fn half_zoom(layout: &Layout, half: bool) -> f32 {
    if !half {
        return 1.0;
    }
    let least = super::layout::text::SMALL * layout.text * layout.scale;
    HALF_TEXT / least.max(f32::EPSILON)
}

/// `frame` made small enough that what it shows is at least `zoom` times larger than the whole
/// scene, or left as it is where it is already. It covers the focus and its callouts where they fit,
/// else the focus, and a focus taller than it keeps its top, where its title is, in view.
fn enlarged(frame: Rect, focus: Option<Rect>, callouts: &[Rect], whole: Rect, zoom: f32) -> Rect {
    // A framing larger than the scene (callouts beyond its edge) is fine while text reads.
    let most = whole.size() / zoom.max(f32::EPSILON);
    let over = (frame.width() / most.x).max(frame.height() / most.y);
    if over <= 1.0 {
        return frame;
    }
    let size = frame.size() / over;
    let subject = callouts
        .iter()
        .fold(focus, |a, c| Some(a.map_or(*c, |a| a.union(*c))));
    let half = size / 2.0;
    // Along an axis, from the middle of what the beat showed, moved as little as keeps the
    // span `lo..hi` in view with a margin, or without one where only that fits; a span larger
    // than the view shows from its start (`from_start`: its top, where a title is), or about
    // its middle.
    let place = |c: f32, lo: f32, hi: f32, h: f32, from_start: bool| {
        if hi - lo + 2.0 * MARGIN <= 2.0 * h {
            c.clamp(hi + MARGIN - h, lo - MARGIN + h)
        } else if hi - lo <= 2.0 * h || !from_start {
            (lo + hi) / 2.0
        } else {
            lo - 6.0 + h
        }
    };
    let c = frame.center();
    let centre = match (subject, focus) {
        (Some(s), _) if s.width() <= size.x && s.height() <= size.y => Vec2::new(
            place(c.x, s.min.x, s.max.x, half.x, false),
            place(c.y, s.min.y, s.max.y, half.y, true),
        ),
        (_, Some(f)) => Vec2::new(
            place(c.x, f.min.x, f.max.x, half.x, false),
            place(c.y, f.min.y, f.max.y, half.y, true),
        ),
        _ => c,
    };
    let aspect = whole.width() / whole.height().max(1.0);
    inward(
        Rect::from_center_size(centre, Vec2::ZERO),
        size,
        whole,
        aspect,
    )
}

/// A framing of `size` around `focus`, at the viewport's shape (`aspect`: the camera shows that
/// much anyway), moved inward where it would cross the area's edge: the view then shows more of
/// the cluster, not the void beyond it. A framing larger than the area keeps the area in view.
fn inward(focus: Rect, size: Vec2, whole: Rect, aspect: f32) -> Rect {
    let size = Vec2::new(size.x.max(size.y * aspect), size.y.max(size.x / aspect));
    let half = size / 2.0;
    let axis = |c: f32, lo: f32, hi: f32, h: f32| {
        let (a, b) = (lo + h, hi - h);
        c.clamp(a.min(b), a.max(b))
    };
    let c = focus.center();
    let center = Vec2::new(
        axis(c.x, whole.min.x, whole.max.x, half.x),
        axis(c.y, whole.min.y, whole.max.y, half.y),
    );
    Rect::from_center_size(center, size)
}

/// The parts of `area` outside every rectangle in `lit`, as rectangles: the scene dims them.
/// Cuts `area` into a grid along the lit rectangles' edges and keeps the cells no lit
/// rectangle covers, joining neighbours along each row.
pub fn unlit(area: Rect, lit: &[Rect]) -> Vec<Rect> {
    let lit: Vec<Rect> = lit
        .iter()
        .map(|r| r.intersect(area))
        .filter(|r| !r.is_empty())
        .collect();
    if lit.is_empty() {
        return vec![area];
    }
    let mut xs: Vec<f32> = vec![area.min.x, area.max.x];
    let mut ys: Vec<f32> = vec![area.min.y, area.max.y];
    for r in &lit {
        xs.extend([r.min.x, r.max.x]);
        ys.extend([r.min.y, r.max.y]);
    }
    for v in [&mut xs, &mut ys] {
        v.sort_by(f32::total_cmp);
        v.dedup();
    }
    let mut out = Vec::new();
    for y in ys.windows(2) {
        let mut run: Option<Rect> = None;
        for x in xs.windows(2) {
            let cell = Rect::new(x[0], y[0], x[1], y[1]);
            let covered = lit.iter().any(|r| r.contains(cell.center()));
            match (&mut run, covered) {
                (Some(r), false) => r.max.x = cell.max.x,
                (None, false) => run = Some(cell),
                (Some(_), true) => out.extend(run.take()),
                (None, true) => {}
            }
        }
        out.extend(run);
    }
    out
}

/// The line a route's focus draws: between the anchors messages use when both ends are nodes,
/// else between the nearest points of the two parts' boxes.
pub fn route_line(a: &Focus, b: &Focus, s: &Snapshot, layout: &Layout) -> Option<(Vec2, Vec2)> {
    let node = |f: &Focus| -> Option<Node> {
        match f {
            Focus::Producer(name) => s
                .producers
                .iter()
                .position(|p| p.name == *name)
                .map(|i| Node::Producer(i as u32)),
            Focus::Controller => Some(Node::Controller),
            Focus::Broker(b) => Some(Node::Broker(*b)),
            Focus::Leader(t, i) => s.partition(t, *i)?.leader.map(Node::Broker),
            Focus::OffsetsPartition(g) => {
                let g = s.groups.iter().find(|x| x.name == *g)?;
                s.partitions
                    .get(g.offsets_partition as usize)?
                    .leader
                    .map(Node::Broker)
            }
            _ => None,
        }
    };
    if let (Some(na), Some(nb)) = (node(a), node(b)) {
        return Some((layout.route_end(s, na, nb)?, layout.route_end(s, nb, na)?));
    }
    // A node's box (a broker for a partition's leader), or the part's own.
    let area = |f: &Focus| -> Option<Rect> {
        match node(f) {
            Some(Node::Broker(b)) => layout.broker(b),
            _ => focus_rects(f, s, layout, None, s.now_ms as f64)
                .into_iter()
                .reduce(|x, y| x.union(y)),
        }
    };
    let (ra, rb) = (area(a)?, area(b)?);
    let nearest = |r: Rect, to: Vec2| to.clamp(r.min, r.max);
    let from = nearest(ra, rb.center());
    Some((from, nearest(rb, from)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(r: &[Rect]) -> f32 {
        r.iter().map(|r| r.width() * r.height()).sum()
    }

    #[test]
    fn the_unlit_parts_cover_the_rest_exactly() {
        let scene = Rect::new(0.0, 0.0, 100.0, 50.0);
        assert_eq!(unlit(scene, &[]), vec![scene]);
        let lit = [
            Rect::new(10.0, 10.0, 30.0, 20.0),
            Rect::new(60.0, 5.0, 90.0, 45.0),
        ];
        let dim = unlit(scene, &lit);
        // Nothing lit is dimmed, nothing overlaps, and together they are the whole scene.
        for d in &dim {
            for l in &lit {
                assert!(d.intersect(*l).is_empty(), "{d:?} dims {l:?}");
            }
        }
        for (i, a) in dim.iter().enumerate() {
            for b in &dim[i + 1..] {
                assert!(a.intersect(*b).is_empty());
            }
        }
        assert!((area(&dim) + area(&lit) - 100.0 * 50.0).abs() < 1e-3);
        // A lit rectangle past the edge counts only inside.
        let dim = unlit(scene, &[Rect::new(-10.0, -10.0, 50.0, 100.0)]);
        assert!((area(&dim) - 50.0 * 50.0).abs() < 1e-3);
    }

    #[test]
    fn a_half_zooms_until_its_smallest_text_reads_and_keeps_a_tall_focus_top() {
        // Half of a 1280-pixel window: 14-unit text drawn at 0.45 pixels a unit is 6.3 pixels,
        // and 12 pixels needs the framing 1.9 times smaller.
        let whole = Rect::new(0.0, 0.0, 1400.0, 640.0);
        let zoom = 12.0 / (14.0 * 0.45);
        let enlarged_by = |f: Rect| whole.width() / f.width();
        let f = enlarged(whole, None, &[], whole, zoom);
        assert!((enlarged_by(f) - zoom).abs() < 0.01, "{}", enlarged_by(f));
        assert_eq!(f.center(), whole.center());
        // A group's box at the right, taller than the framing: its top and its width stay in
        // view, inside the scene.
        let group = Rect::new(1150.0, 150.0, 1380.0, 600.0);
        let frame = camera_frame(group, std::iter::empty(), whole);
        let f = enlarged(frame, Some(group), &[], whole, zoom);
        assert!(enlarged_by(f) >= zoom - 0.01, "{}", enlarged_by(f));
        assert!(f.min.y <= group.min.y && f.max.y < group.max.y, "{f:?}");
        assert!(f.min.x <= group.min.x && f.max.x >= group.max.x, "{f:?}");
        assert!(f.max.x <= whole.max.x + 0.01 && f.min.y >= whole.min.y - 0.01);
        // A small focus with a callout beside it: both stay in view.
        let row = Rect::new(600.0, 300.0, 800.0, 340.0);
        let callout = Rect::new(820.0, 250.0, 1000.0, 300.0);
        let frame = camera_frame(row, [callout].into_iter(), whole);
        let f = enlarged(frame, Some(row), &[callout], whole, zoom);
        assert!(f.contains(row.min) && f.contains(row.max), "{f:?}");
        assert!(f.contains(callout.min) && f.contains(callout.max), "{f:?}");
        // Text that already reads: the framing is the beat's own.
        assert_eq!(enlarged(frame, Some(row), &[callout], whole, 0.8), frame);
    }

    #[test]
    fn a_framing_near_the_edge_moves_inward_and_keeps_its_focus() {
        let whole = Rect::new(0.0, 0.0, 1600.0, 900.0);
        // A framing wider than its focus at the left edge: it takes the area's shape and starts
        // at the area's edge, not before it.
        let focus = Rect::new(20.0, 300.0, 420.0, 500.0);
        let f = inward(focus, Vec2::new(800.0, 300.0), whole, 16.0 / 9.0);
        assert_eq!(f.min.x, 0.0);
        assert!((f.width() / f.height() - 16.0 / 9.0).abs() < 1e-3);
        assert!(f.contains(focus.min) && f.contains(focus.max));
        assert!(f.min.y >= 0.0 && f.max.y <= 900.0);
        // In the middle it stays centred on its focus.
        let middle = Rect::new(700.0, 400.0, 900.0, 500.0);
        let f = inward(middle, Vec2::new(400.0, 225.0), whole, 16.0 / 9.0);
        assert_eq!(f.center(), middle.center());
        // Larger than the area: the area stays in view, reaching toward the focus.
        let wide = Rect::new(-100.0, 0.0, 1600.0, 900.0);
        let f = inward(wide, Vec2::new(1800.0, 900.0), whole, 16.0 / 9.0);
        assert!(f.min.x <= -100.0 && f.max.x >= 1600.0);
    }

    #[test]
    fn a_typed_number_and_enter_jump_to_that_beat() {
        let mut entry = BeatEntry::default();
        assert_eq!(entry.enter(8), None, "Enter alone jumps nowhere");
        entry.digit(5);
        assert_eq!(entry.typed(), Some("5"));
        assert_eq!(entry.target(8), Some(5));
        assert_eq!(entry.target(3), Some(3), "the last, past it");
        assert_eq!(entry.enter(8), Some(Step::Go(4)), "beat 5 is the fifth");
        assert_eq!(entry.typed(), None, "Enter ends the typing");
        entry.digit(1);
        entry.digit(2);
        assert_eq!(
            entry.enter(8),
            Some(Step::Go(7)),
            "past the last is the last"
        );
        entry.digit(0);
        assert_eq!(entry.enter(8), None, "there is no beat 0");
        for _ in 0..5 {
            entry.digit(9);
        }
        assert_eq!(entry.typed(), Some("999"));
        entry.clear();
        assert_eq!(entry.typed(), None);
    }

    #[test]
    fn b_and_w_blank_the_stage_and_the_same_key_shows_it_again() {
        let blank = Blank::Shown.toggled(Blank::Black);
        assert_eq!(blank, Blank::Black);
        assert_eq!(
            blank.toggled(Blank::White),
            Blank::White,
            "W turns black to white"
        );
        assert_eq!(blank.toggled(Blank::Black), Blank::Shown);
        assert_eq!(Blank::White.toggled(Blank::White), Blank::Shown);
    }
}
