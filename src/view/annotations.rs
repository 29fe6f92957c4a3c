//! What a tour's beat draws over the scene, computed headless: callouts with the numbers of the
//! rule the beat is about (the partitioner's arithmetic, timers filling towards Kafka's
//! timeouts, the lag calculation), labels on the logs, the routes it follows. The renderer
//! paints these marks; tests read them.

use bevy::math::{Rect, Vec2};

use super::follow::Trace;
use super::layout::Layout;
use super::log_strip::StripPlace;
use super::snapshot::{PartitionView, ProducerView, Snapshot};
use super::tour::route_line;
use crate::partitioner::{java_string_hash, offsets_partition_for_group};
use crate::scenario::ClusterConfig;
use crate::sim::{EventKind, EventLog};
use crate::tour::{Annotation, Beat, Focus};

/// How a mark is coloured: by meaning, which the palette turns into a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Text,
    Muted,
    /// In sync, done, safe.
    Good,
    /// Out of sync, timing out, lost.
    Bad,
    /// What the beat points at.
    Accent,
    Leader,
    /// Written on a coloured cell.
    OnCell,
}

/// One chip of a set (the ISR).
#[derive(Debug, Clone, PartialEq)]
pub struct Chip {
    pub label: String,
    pub member: bool,
    /// How far it has moved out of the set since it left (0 in, 1 out), or into it since it
    /// joined, over a moment of sim time: the chip is drawn that far below the row.
    pub out: f32,
}

/// A record card in a producer's batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub key: String,
    /// The record the tour follows.
    pub followed: bool,
}

/// A row of a callout.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Text(String, Tone),
    /// A heading within the callout.
    Heading(String),
    /// A timer: `fraction` of the way to its limit (1 and more: run out).
    Bar {
        label: String,
        fraction: f32,
        tone: Tone,
    },
    Chips(String, Vec<Chip>),
    /// Record cards: a partition's batches in the accumulator, with how much of `linger.ms`
    /// the first has waited, or a request's on its way.
    Cards {
        label: String,
        cards: Vec<Card>,
        lingered: Option<f32>,
    },
}

/// Something drawn over the scene.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// A panel of rows, about a part of the scene (its `subject`): beside it, or joined to it
    /// by a leader line where the layout had to move it away.
    Callout {
        /// Names it in `shot --places` ("follower:2").
        id: String,
        rect: Rect,
        title: String,
        rows: Vec<Row>,
        subject: Rect,
        /// It opens its subject up and is drawn over it (a producer's insides).
        over_subject: bool,
    },
    /// A short text at a point (its centre).
    Label {
        at: Vec2,
        text: String,
        size: f32,
        tone: Tone,
    },
    /// A straight line.
    Line { from: Vec2, to: Vec2, tone: Tone },
    /// An outline around a part of the scene.
    Outline { rect: Rect, tone: Tone },
    /// A tinted band: what lies beyond a limit.
    Band { rect: Rect, tone: Tone },
    /// A dot moving along a route, `t` of the way.
    Pulse { from: Vec2, to: Vec2, t: f32 },
}

impl Mark {
    /// The space it takes, so the camera can frame it.
    pub fn rect(&self) -> Rect {
        match self {
            Mark::Callout { rect, .. } | Mark::Outline { rect, .. } | Mark::Band { rect, .. } => {
                *rect
            }
            Mark::Label { at, text, size, .. } => Rect::from_center_half_size(
                *at,
                Vec2::new(text.chars().count() as f32 * size * 0.3, *size * 0.6),
            ),
            Mark::Line { from, to, .. } | Mark::Pulse { from, to, .. } => {
                Rect::from_corners(*from, *to)
            }
        }
    }
}

/// The latest change to a partition's ISR, from the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub at_ms: u64,
    pub removed: Vec<u32>,
    pub added: Vec<u32>,
}

/// What the marks are computed from.
pub struct Context<'a> {
    pub s: &'a Snapshot,
    pub layout: &'a Layout,
    pub cluster: &'a ClusterConfig,
    pub trace: Option<&'a Trace>,
    /// The instant shown, with the fraction of a millisecond the playhead is past it.
    pub display_ms: f64,
    /// For an `IsrTimers` annotation: the last ISR change of its partition, if any.
    pub isr_change: Option<&'a IsrChange>,
    /// The run is one half of a side by side: the camera shows part of its scene, enlarged,
    /// and the callouts keep inside that part.
    pub half: bool,
}

/// How long a chip takes to leave or join the set, in sim time.
const CHIP_MOVE_MS: f64 = 800.0;
/// Callout text sizes, in scene units (the camera's zoom makes them larger on screen).
pub const CALLOUT_TEXT: f32 = 16.0;
pub const CALLOUT_ROW: f32 = 22.0;
const CALLOUT_PAD: f32 = 10.0;
/// A row's text, of the callout's title's size: 14 units, the scene's smallest.
pub const ROW_TEXT: f32 = 0.875;
/// A timer's bar, at the right of its row.
pub const BAR_WIDTH: f32 = 80.0;
/// The producer's insides take more room than its box.
const PRODUCER_CALLOUT_WIDTH: f32 = 430.0;
/// The sender's rows: room for this many requests in flight, so the callout keeps its size.
const SENDER_ROWS: usize = 3;

/// A callout's height for its rows.
pub fn callout_height(rows: &[Row], t: f32) -> f32 {
    let rows: f32 = rows
        .iter()
        .map(|r| match r {
            Row::Cards { .. } | Row::Chips(..) => CALLOUT_ROW * 1.5,
            _ => CALLOUT_ROW,
        })
        .sum();
    (CALLOUT_PAD * 2.0 + CALLOUT_ROW + rows) * t
}

/// About how wide a callout's text runs (the scene's monospace font is 0.6 em a character), so
/// a callout is made wide enough for it.
pub fn callout_width(title: &str, rows: &[Row], t: f32) -> f32 {
    let chars = super::layout::text::width;
    let widest = rows
        .iter()
        .map(|r| match r {
            Row::Text(text, _) => chars(text, CALLOUT_TEXT * ROW_TEXT),
            Row::Heading(text) => chars(text, CALLOUT_TEXT * ROW_TEXT),
            Row::Bar { label, .. } => chars(label, CALLOUT_TEXT * ROW_TEXT) + BAR_WIDTH + 16.0,
            Row::Chips(_, chips) => 50.0 + chips.len() as f32 * 38.0,
            Row::Cards { .. } => 0.0,
        })
        .fold(chars(title, CALLOUT_TEXT), f32::max);
    (widest + 2.0 * CALLOUT_PAD + 8.0) * t
}

/// Where a callout would like to be, and what it is about.
struct Spot {
    id: String,
    rect: Rect,
    subject: Rect,
    from_right: bool,
}

/// A callout at its spot, widened for its text: to the right, or (`from_right`) to the left. It
/// is moved inside the layout's area where it would cross its edge (under a broker that reaches
/// the bottom, say), so that its wish is a place the camera need not pull back for; the layout
/// pass (`callout_layout`) then moves it off what it would cover.
fn callout(spot: Spot, title: String, rows: Vec<Row>, layout: &Layout) -> Mark {
    let Spot {
        id,
        rect,
        subject,
        from_right,
    } = spot;
    let extra = (callout_width(&title, &rows, layout.text) - rect.width()).max(0.0);
    let rect = if from_right {
        Rect::new(rect.min.x - extra, rect.min.y, rect.max.x, rect.max.y)
    } else {
        Rect::new(rect.min.x, rect.min.y, rect.max.x + extra, rect.max.y)
    };
    let area = layout.whole().inflate(-4.0);
    let shift = |lo: f32, hi: f32, min: f32, max: f32| {
        if hi - lo > max - min {
            0.0
        } else if lo < min {
            min - lo
        } else if hi > max {
            max - hi
        } else {
            0.0
        }
    };
    let rect = Rect::from_corners(rect.min, rect.max).translate(Vec2::new(
        shift(rect.min.x, rect.max.x, area.min.x, area.max.x),
        shift(rect.min.y, rect.max.y, area.min.y, area.max.y),
    ));
    Mark::Callout {
        id,
        rect,
        title,
        rows,
        subject,
        over_subject: false,
    }
}

impl Context<'_> {
    fn partition(&self, topic: &str, index: u32) -> Option<&PartitionView> {
        self.s.partition(topic, index)
    }

    fn strip(&self, p: &PartitionView, broker: u32) -> Option<StripPlace> {
        let slot = self.layout.replica(p.ordinal, broker)?;
        Some(StripPlace::of(slot.rect, p, self.layout.text))
    }

    fn broker_box(&self, broker: u32) -> Option<Rect> {
        self.layout.broker(broker)
    }

    /// A callout under a broker's box, where the layout pass starts it.
    fn under_broker(&self, id: String, broker: u32, title: String, rows: Vec<Row>) -> Mark {
        let b = self.broker_box(broker).unwrap_or(self.layout.controller);
        let h = callout_height(&rows, self.layout.text);
        let top = b.max.y + 12.0;
        callout(
            Spot {
                id,
                // As wide as its text: narrow callouts find room beside each other.
                rect: Rect::new(b.min.x, top, b.min.x, top + h),
                subject: b,
                from_right: false,
            },
            title,
            rows,
            self.layout,
        )
    }

    /// Where a callout under group `g`'s box starts: below the brokers too, which a callout
    /// wider than the group's box reaches over.
    fn below_group(&self, g: usize) -> f32 {
        let group = self.layout.groups[g];
        self.layout
            .brokers
            .iter()
            .fold(group.max.y, |y, b| y.max(b.max.y))
            + 12.0
    }

    fn now(&self) -> u64 {
        self.s.now_ms.saturating_sub(1)
    }
}

/// The latest change to the ISR of the partition a beat's `IsrTimers` annotation is about, up to
/// `now_ms` (the snapshot's instant), read backwards from the newest event.
pub fn isr_change(beat: &Beat, events: &EventLog, now_ms: u64) -> Option<IsrChange> {
    let (topic, partition) = beat.annotations.iter().find_map(|a| match a {
        Annotation::IsrTimers(t, p) => Some((t, *p)),
        _ => None,
    })?;
    let now_ms = now_ms.saturating_sub(1);
    events.events.iter().rev().find_map(|e| {
        if e.at_ms > now_ms {
            return None;
        }
        match &e.kind {
            EventKind::IsrShrink {
                topic: t,
                partition: p,
                removed,
                ..
            } if t == topic && *p == partition => Some(IsrChange {
                at_ms: e.at_ms,
                removed: removed.clone(),
                added: Vec::new(),
            }),
            EventKind::IsrExpand {
                topic: t,
                partition: p,
                added,
                ..
            } if t == topic && *p == partition => Some(IsrChange {
                at_ms: e.at_ms,
                removed: Vec::new(),
                added: added.clone(),
            }),
            _ => None,
        }
    })
}

/// What a beat draws over the scene, laid out.
#[derive(Debug, Default)]
pub struct Drawing {
    pub marks: Vec<Mark>,
    /// The parts of the scene kept lit while the rest dims (empty: nothing dims).
    pub lit: Vec<Rect>,
    /// The parts the beat frames, each whole.
    pub framed: Vec<Rect>,
    /// The parts it highlights.
    pub highlighted: Vec<Rect>,
}

impl Drawing {
    /// What the beat frames: the union of its parts, or `None` to frame the whole scene.
    pub fn framing(&self) -> Option<Rect> {
        self.framed.iter().copied().reduce(|a, b| a.union(b))
    }

    /// The callouts' rectangles: the camera frames them with the beat's focus.
    pub fn callouts(&self) -> impl Iterator<Item = Rect> + '_ {
        self.marks.iter().filter_map(|m| match m {
            Mark::Callout { rect, .. } => Some(*rect),
            _ => None,
        })
    }
}

/// Everything a beat draws: its annotations' marks, the outline of the tour's record, its
/// routes, laid out so that no callout covers another, what the beat frames or highlights, or
/// a mark; and what stays lit.
pub fn drawing(beat: Option<&Beat>, ctx: &Context) -> Drawing {
    let Some(beat) = beat else {
        return Drawing::default();
    };
    let mut out = Vec::new();
    for a in &beat.annotations {
        annotate(a, ctx, &mut out);
    }
    if let Some(t) = ctx.trace {
        for rect in super::tour::record_rects(t, ctx.s, ctx.layout, ctx.display_ms, false) {
            out.push(Mark::Outline {
                rect: rect.inflate(2.5),
                tone: Tone::Accent,
            });
        }
    }
    let framed = super::tour::framed_parts(beat, ctx.s, ctx.layout, ctx.trace);
    let highlighted: Vec<Rect> = beat
        .highlight
        .iter()
        .flat_map(|f| super::tour::focus_parts(f, ctx.s, ctx.layout, ctx.trace, ctx.display_ms))
        .collect();
    let marked: Vec<Rect> = out
        .iter()
        .filter(|m| {
            !matches!(
                m,
                Mark::Callout { .. } | Mark::Line { .. } | Mark::Pulse { .. }
            )
        })
        .map(Mark::rect)
        .collect();
    let l = ctx.layout;
    // A box's title line costs a callout twice its box's room: what a box is stays in view.
    let titles = l.boxes().map(|b| {
        Rect::new(
            b.min.x,
            b.min.y,
            b.max.x,
            b.min.y + super::layout::BROKER_HEADER * l.text,
        )
    });
    let keep_clear: Vec<Rect> = framed
        .iter()
        .chain(&highlighted)
        .chain(&marked)
        .copied()
        .collect();
    let avoid: Vec<Rect> = l.boxes().chain(titles).collect();
    // Side by side the camera shows what the beat frames, enlarged: the callouts go inside it.
    let focus = framed.iter().copied().reduce(|a, b| a.union(b));
    let room = super::tour::callout_room(focus, l, ctx.half);
    super::callout_layout::lay_out(
        &mut out,
        &super::callout_layout::Room {
            area: room.inflate(-4.0),
            keep_clear: &keep_clear,
            avoid: &avoid,
        },
    );
    for a in &beat.annotations {
        if let Annotation::Lag(g, ..) = a {
            lag_route(g, ctx, &mut out);
        }
    }
    let mut lit = Vec::new();
    if !(beat.frame.is_empty() && beat.highlight.is_empty()) {
        for f in beat.frame.iter().chain(&beat.highlight) {
            // A route is drawn as a line above the dimmed scene, rather than lit as a band.
            if let Focus::Route(a, b) = f {
                if let Some((from, to)) = route_line(a, b, ctx.s, ctx.layout) {
                    out.push(Mark::Line {
                        from,
                        to,
                        tone: Tone::Accent,
                    });
                }
                continue;
            }
            lit.extend(super::tour::focus_rects(
                f,
                ctx.s,
                ctx.layout,
                ctx.trace,
                ctx.display_ms,
            ));
        }
        // Callouts and outlines stay lit; the other marks are drawn above the dim.
        lit.extend(
            out.iter()
                .filter(|m| matches!(m, Mark::Callout { .. } | Mark::Outline { .. }))
                .map(Mark::rect),
        );
    }
    Drawing {
        marks: out,
        lit,
        framed,
        highlighted,
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn annotate(a: &Annotation, ctx: &Context, out: &mut Vec<Mark>) {
    match a {
        Annotation::ProducerInternals(name) => producer_internals(name, ctx, out),
        Annotation::LogEndOffset(t, i) => {
            let Some(p) = ctx.partition(t, *i) else {
                return;
            };
            let Some(leader) = p.leader_replica() else {
                return;
            };
            let Some(strip) = ctx.strip(p, leader.broker) else {
                return;
            };
            // The offsets on the line above the leader's cells, as many as there is room for at
            // the smallest text, and the log end offset where the log ends.
            let size = super::layout::text::SMALL;
            let digits = leader.log_end_offset.max(1).ilog10() as f32 + 1.0;
            let every =
                ((digits * size * 0.6 * ctx.layout.text + 4.0) / strip.cell_w).ceil() as u64;
            for i in 0..strip.cells {
                let offset = strip.first + i as u64;
                if offset >= leader.log_end_offset {
                    break;
                }
                let c = strip.cell(i);
                // Clear of the role and numbers written at the line's right end.
                if !offset.is_multiple_of(every.max(1))
                    || c.max.x > strip.rect.max.x - 240.0 * ctx.layout.text
                {
                    continue;
                }
                out.push(Mark::Label {
                    at: Vec2::new(c.center().x, c.min.y - 9.0 * ctx.layout.text),
                    text: offset.to_string(),
                    size,
                    tone: Tone::Text,
                });
            }
            if let Some(x) = strip.offset_x(leader.log_end_offset) {
                out.push(Mark::Line {
                    from: Vec2::new(x + 1.0, strip.rect.min.y - 2.0),
                    to: Vec2::new(x + 1.0, strip.rect.max.y + 2.0),
                    tone: Tone::Accent,
                });
            }
            out.push(ctx.under_broker(
                format!("leader:{}", p.name()),
                leader.broker,
                format!("Leader of {}: broker {}", p.name(), leader.broker),
                vec![
                    Row::Text(
                        format!("log end offset (LEO) {}", leader.log_end_offset),
                        Tone::Accent,
                    ),
                    Row::Text(
                        format!("the next record gets offset {}", leader.log_end_offset),
                        Tone::Muted,
                    ),
                ],
            ));
        }
        Annotation::FetchOffsets(t, i) => {
            let Some(p) = ctx.partition(t, *i) else {
                return;
            };
            for r in p.replicas.iter().filter(|r| Some(r.broker) != p.leader) {
                out.push(ctx.under_broker(
                    format!("follower:{}:{}", p.name(), r.broker),
                    r.broker,
                    format!("Follower {}", r.broker),
                    vec![
                        Row::Text(
                            format!("fetches from offset {}", r.log_end_offset),
                            Tone::Accent,
                        ),
                        Row::Text(
                            format!("(its log end offset; high watermark {})", r.high_watermark),
                            Tone::Muted,
                        ),
                    ],
                ));
            }
        }
        Annotation::HighWatermark(t, i) => {
            let Some(p) = ctx.partition(t, *i) else {
                return;
            };
            for r in &p.replicas {
                let Some(strip) = ctx.strip(p, r.broker) else {
                    continue;
                };
                // The bar itself, drawn over in the accent colour (its number is on the row).
                if let Some(x) = strip.offset_x(r.high_watermark) {
                    out.push(Mark::Line {
                        from: Vec2::new(x, strip.rect.min.y - 4.0),
                        to: Vec2::new(x, strip.rect.max.y + 4.0),
                        tone: Tone::Accent,
                    });
                }
            }
        }
        Annotation::IsrTimers(t, i) => isr_timers(t, *i, ctx, out),
        Annotation::HeartbeatTimers => heartbeat_timers(ctx, out),
        Annotation::LeaderEpoch(t, i) => {
            let Some(p) = ctx.partition(t, *i) else {
                return;
            };
            let rows = vec![
                Row::Text(format!("leader epoch {}", p.leader_epoch), Tone::Accent),
                Row::Text(
                    match p.leader {
                        Some(l) => format!("leader: broker {l}, ISR {:?}", p.isr),
                        None => "no leader: offline".into(),
                    },
                    Tone::Text,
                ),
            ];
            // Under the leader the election chose: the epoch is its term. Without one, beside
            // the controller that decided.
            match p.leader {
                Some(leader) => out.push(ctx.under_broker(
                    format!("epoch:{}", p.name()),
                    leader,
                    p.name(),
                    rows,
                )),
                None => {
                    let c = ctx.layout.controller;
                    let h = callout_height(&rows, ctx.layout.text);
                    out.push(callout(
                        Spot {
                            id: format!("epoch:{}", p.name()),
                            rect: Rect::new(c.min.x - 292.0, c.max.y - h, c.min.x - 12.0, c.max.y),
                            subject: c,
                            from_right: true,
                        },
                        p.name(),
                        rows,
                        ctx.layout,
                    ));
                }
            }
        }
        Annotation::ReadLimit(t, i) => read_limit(t, *i, ctx, out),
        Annotation::OffsetsPartition(g) => offsets_partition(g, ctx, out),
        Annotation::Lag(g, t, i) => lag(g, t, *i, ctx, out),
        Annotation::Note(focus, text) => {
            let rects =
                super::tour::focus_rects(focus, ctx.s, ctx.layout, ctx.trace, ctx.display_ms);
            if let Some(r) = rects.into_iter().reduce(|a, b| a.union(b)) {
                let rows = vec![Row::Text(text.clone(), Tone::Text)];
                let h = callout_height(&rows, ctx.layout.text);
                let w = (text.chars().count() as f32 * CALLOUT_TEXT * 0.55 + 24.0).max(160.0);
                out.push(callout(
                    Spot {
                        id: format!("note:{}", text.chars().take(24).collect::<String>()),
                        rect: Rect::new(r.min.x, r.max.y + 10.0, r.min.x + w, r.max.y + 10.0 + h),
                        subject: r,
                        from_right: false,
                    },
                    String::new(),
                    rows,
                    ctx.layout,
                ));
            }
        }
    }
}

fn producer_internals(name: &str, ctx: &Context, out: &mut Vec<Mark>) {
    let Some(i) = ctx.s.producers.iter().position(|p| p.name == name) else {
        return;
    };
    let (p, r) = (&ctx.s.producers[i], ctx.layout.producers[i]);
    let mut rows = vec![Row::Heading("Partitioner".into())];
    let followed = ctx.trace.filter(|t| t.producer == p.name);
    match followed.and_then(|t| Some((t.key.as_deref()?, t.partitioner?))) {
        Some((key, math)) => {
            for line in math.lines(key) {
                rows.push(Row::Text(line, Tone::Text));
            }
            rows.push(Row::Text(
                format!("key {key:?} goes to {}-{}", p.topic, math.partition),
                Tone::Accent,
            ));
        }
        None => rows.push(Row::Text(
            "(murmur2(key) & 0x7fffffff) % partitions".into(),
            Tone::Muted,
        )),
    }
    rows.push(Row::Heading(format!(
        "Accumulator: linger.ms {}, batch.size {}",
        p.linger_ms, p.batch_size
    )));
    rows.extend(accumulator(p, followed, ctx));
    rows.push(Row::Heading("Sender: ProduceRequests in flight".into()));
    // A fixed number of rows, so the callout keeps its size as requests come and go.
    for i in 0..SENDER_ROWS {
        let row = match p.in_flight.get(i) {
            Some(f) => Row::Cards {
                label: format!("acks={} to {}", p.acks, f.broker),
                cards: cards(f.batches.iter(), followed),
                lingered: None,
            },
            None => Row::Cards {
                label: if i == 0 { "none".into() } else { String::new() },
                cards: Vec::new(),
                lingered: None,
            },
        };
        rows.push(row);
    }
    let h = callout_height(&rows, ctx.layout.text);
    let top = r.center().y - h / 2.0;
    // Over the producer's box, reaching left of it, so the requests still leave from its right
    // edge.
    let mut opened = callout(
        Spot {
            id: format!("producer:{}", p.name),
            rect: Rect::new(
                r.max.x - PRODUCER_CALLOUT_WIDTH * ctx.layout.text,
                top,
                r.max.x,
                top + h,
            ),
            subject: r,
            from_right: true,
        },
        format!("Producer {}, opened up", p.name),
        rows,
        ctx.layout,
    );
    // It opens the producer's box up: drawn over it.
    if let Mark::Callout { over_subject, .. } = &mut opened {
        *over_subject = true;
    }
    out.push(opened);
}

/// A card for each record of some batches, the followed one marked.
fn cards<'a>(
    batches: impl Iterator<Item = &'a super::snapshot::BatchView>,
    followed: Option<&Trace>,
) -> Vec<Card> {
    batches
        .flat_map(|b| &b.records)
        .map(|r| Card {
            key: r.key.as_deref().unwrap_or("(no key)").to_string(),
            followed: followed.is_some_and(|t| t.id == r.id),
        })
        .collect()
}

/// One row per partition: the cards of its batches, the first of which is drained next.
fn accumulator(p: &ProducerView, followed: Option<&Trace>, ctx: &Context) -> Vec<Row> {
    let now = ctx.now();
    (0..p.partitions)
        .map(|partition| {
            let batches: Vec<_> = p
                .batches
                .iter()
                .filter(|b| b.partition == partition)
                .collect();
            let cards = cards(batches.iter().copied(), followed);
            let lingered = batches
                .first()
                .map(|b| now.saturating_sub(b.created_ms) as f32 / p.linger_ms.max(1) as f32);
            Row::Cards {
                label: format!("{}-{partition}", p.topic),
                cards,
                lingered,
            }
        })
        .collect()
}

fn isr_timers(topic: &str, index: u32, ctx: &Context, out: &mut Vec<Mark>) {
    let Some(p) = ctx.partition(topic, index) else {
        return;
    };
    let now = ctx.now();
    let lag_max = ctx.cluster.replica_lag_time_max_ms;
    for f in &p.followers {
        let in_isr = p.isr.contains(&f.broker);
        let since = f.last_caught_up_ms.map(|t| now.saturating_sub(t));
        let (label, fraction) = match since {
            Some(ms) => (
                format!("caught up {} ago", seconds(ms)),
                ms as f32 / lag_max as f32,
            ),
            None => ("never caught up with this leader".into(), 1.0),
        };
        let tone = if !in_isr {
            Tone::Bad
        } else if fraction > 0.5 {
            Tone::Accent
        } else {
            Tone::Good
        };
        out.push(ctx.under_broker(
            format!("follower:{}:{}", p.name(), f.broker),
            f.broker,
            format!(
                "Follower {}: {}",
                f.broker,
                if in_isr {
                    "in the ISR"
                } else {
                    "out of the ISR"
                }
            ),
            vec![
                Row::Bar {
                    label,
                    fraction,
                    tone,
                },
                Row::Text(
                    format!("replica.lag.time.max.ms {}", seconds(lag_max)),
                    Tone::Muted,
                ),
            ],
        ));
    }
    // The ISR as a set of chips, the leader's: a chip slides out when its replica leaves.
    let moving = |b: u32| -> f32 {
        let Some(change) = ctx.isr_change else {
            return 0.0;
        };
        let t = ((ctx.display_ms - change.at_ms as f64) / CHIP_MOVE_MS).clamp(0.0, 1.0) as f32;
        if change.removed.contains(&b) {
            t
        } else if change.added.contains(&b) {
            1.0 - t
        } else {
            0.0
        }
    };
    let chips = p
        .assignment
        .iter()
        .map(|b| {
            let member = p.isr.contains(b);
            let out = moving(*b);
            Chip {
                label: format!("{b}"),
                member,
                out: if member || out > 0.0 { out } else { 1.0 },
            }
        })
        .collect();
    if let Some(leader) = p.leader {
        out.push(ctx.under_broker(
            format!("isr:{}", p.name()),
            leader,
            format!("{} leader: broker {leader}", p.name()),
            vec![
                Row::Chips("ISR".into(), chips),
                Row::Text(
                    format!(
                        "high watermark {}, LEO {}",
                        p.leader_replica().map_or(0, |r| r.high_watermark),
                        p.leader_replica().map_or(0, |r| r.log_end_offset)
                    ),
                    Tone::Text,
                ),
            ],
        ));
    }
}

fn heartbeat_timers(ctx: &Context, out: &mut Vec<Mark>) {
    let now = ctx.now();
    let session = ctx.cluster.session_timeout_ms;
    let mut rows = Vec::new();
    for b in &ctx.s.brokers {
        let last = ctx.s.last_heartbeat_ms.get(b.id as usize).copied();
        let (label, fraction, tone) = if b.fenced {
            (format!("broker {}: fenced", b.id), 1.0, Tone::Bad)
        } else {
            let since = last.map_or(0, |t| now.saturating_sub(t));
            let f = since as f32 / session as f32;
            (
                format!("broker {}: last heartbeat {} ago", b.id, seconds(since)),
                f,
                if b.alive && f < 0.5 {
                    Tone::Good
                } else {
                    Tone::Bad
                },
            )
        };
        rows.push(Row::Bar {
            label,
            fraction,
            tone,
        });
    }
    rows.push(Row::Text(
        format!("broker.session.timeout.ms = {}", seconds(session)),
        Tone::Muted,
    ));
    // Beside the controller, rising above it, clear of the brokers below: on its right unless
    // the lag monitor is there, else on its left.
    let c = ctx.layout.controller;
    let t = ctx.layout.text;
    let title = "Time since each heartbeat".to_string();
    let h = callout_height(&rows, t);
    let w = callout_width(&title, &rows, t).max(380.0 * t);
    let right = Rect::new(c.max.x + 12.0, c.max.y - h, c.max.x + 12.0 + w, c.max.y);
    let clear = ctx
        .layout
        .lag_monitor
        .is_none_or(|m| m.intersect(right).is_empty());
    let rect = if clear {
        right
    } else {
        Rect::new(c.min.x - 12.0 - w, c.max.y - h, c.min.x - 12.0, c.max.y)
    };
    out.push(callout(
        Spot {
            id: "heartbeats".into(),
            rect,
            subject: c,
            from_right: !clear,
        },
        title,
        rows,
        ctx.layout,
    ));
}

fn read_limit(topic: &str, index: u32, ctx: &Context, out: &mut Vec<Mark>) {
    let Some(p) = ctx.partition(topic, index) else {
        return;
    };
    let Some(leader) = p.leader_replica() else {
        return;
    };
    let Some(strip) = ctx.strip(p, leader.broker) else {
        return;
    };
    let hw = leader.high_watermark;
    out.push(ctx.under_broker(
        format!("read-limit:{}", p.name()),
        leader.broker,
        format!("The read limit of {}", p.name()),
        vec![
            Row::Text(format!("consumers read below HW {hw}"), Tone::Accent),
            Row::Text(
                match leader.log_end_offset - hw {
                    0 => "every record of its log is below it".to_string(),
                    n => format!("{n} above it: not yet known to be on every ISR member"),
                },
                Tone::Muted,
            ),
        ],
    ));
    if let Some(x) = strip.offset_x(hw) {
        out.push(Mark::Line {
            from: Vec2::new(x, strip.rect.min.y - 4.0),
            to: Vec2::new(x, strip.rect.max.y + 4.0),
            tone: Tone::Accent,
        });
        if leader.log_end_offset > hw
            && let Some(end) = strip.offset_x(leader.log_end_offset)
        {
            out.push(Mark::Band {
                rect: Rect::new(x + 1.0, strip.rect.min.y, end + 1.0, strip.rect.max.y),
                tone: Tone::Bad,
            });
        }
    }
    // Each member reading the partition: where it reads from, and how far it may.
    for (gi, g) in ctx.s.groups.iter().enumerate() {
        for (mi, m) in g.members.iter().enumerate() {
            let Some((_, position, _)) = m.progress.iter().find(|(o, _, _)| *o == p.ordinal) else {
                continue;
            };
            let Some(r) = ctx.layout.member(gi, mi) else {
                continue;
            };
            // With KIP-392's rack-aware selector a member in a rack may read from a follower.
            let from = if ctx.cluster.rack_aware_replica_selector {
                format!(
                    "fetches from broker {}, the leader, or an in-sync follower in its rack",
                    leader.broker
                )
            } else {
                format!("fetches from broker {}, the leader", leader.broker)
            };
            let rows = vec![
                Row::Text(from, Tone::Text),
                Row::Text(
                    format!("position {position}; may read offsets below {hw}"),
                    Tone::Accent,
                ),
            ];
            let h = callout_height(&rows, ctx.layout.text);
            let gr = ctx.layout.groups[gi];
            let top = ctx.below_group(gi);
            out.push(callout(
                Spot {
                    id: format!("reader:{}", m.name),
                    rect: Rect::new(gr.max.x - 380.0, top, gr.max.x, top + h),
                    subject: r,
                    from_right: true,
                },
                format!("{} reads {}", m.name, p.name()),
                rows,
                ctx.layout,
            ));
            out.push(Mark::Outline {
                rect: r.inflate(2.0),
                tone: Tone::Accent,
            });
        }
    }
}

fn offsets_partition(group: &str, ctx: &Context, out: &mut Vec<Mark>) {
    let Some((gi, g)) = ctx
        .s
        .groups
        .iter()
        .enumerate()
        .find(|(_, g)| g.name == group)
    else {
        return;
    };
    let n = ctx.cluster.offsets_topic_partitions;
    let hash = java_string_hash(group);
    let partition = offsets_partition_for_group(group, n);
    let leader = ctx
        .s
        .partitions
        .get(g.offsets_partition as usize)
        .and_then(|p| p.leader);
    // Few rows, so that it finds room above a cluster whose boxes fill the scene's height.
    let mut rows = vec![
        Row::Text(format!("hash(\"{group}\") = {hash}"), Tone::Text),
        Row::Text(
            match leader {
                Some(l) => format!("abs({hash}) % {n} = {partition}: leader broker {l}"),
                None => format!("abs({hash}) % {n} = {partition}: no leader"),
            },
            Tone::Accent,
        ),
    ];
    // The committed offsets, three partitions a row.
    for chunk in g.offsets.chunks(3) {
        let parts: Vec<String> = chunk
            .iter()
            .map(|o| {
                format!(
                    "{} {}",
                    o.partition,
                    o.committed.map_or("-".into(), |c| c.to_string())
                )
            })
            .collect();
        rows.push(Row::Text(
            format!("committed: {}", parts.join(", ")),
            Tone::Text,
        ));
    }
    let r = ctx.layout.groups[gi];
    let h = callout_height(&rows, ctx.layout.text);
    let top = ctx.below_group(gi);
    out.push(callout(
        Spot {
            id: format!("offsets:{group}"),
            rect: Rect::new(r.min.x - 60.0, top, r.max.x, top + h),
            subject: r,
            from_right: true,
        },
        format!("{group} commits to __consumer_offsets-{partition}"),
        rows,
        ctx.layout,
    ));
    if let Some(p) = ctx.s.partitions.get(g.offsets_partition as usize) {
        for b in &p.assignment {
            if let Some(slot) = ctx.layout.replica(p.ordinal, *b) {
                out.push(Mark::Outline {
                    rect: slot.rect.inflate(2.0),
                    tone: Tone::Accent,
                });
            }
        }
    }
}

/// `kafka-consumer-groups --describe`'s columns and arithmetic, for one partition of a group.
pub fn lag_line(log_end: u64, committed: Option<u64>) -> String {
    match committed {
        // Signed, as the tool prints it: a committed offset past a truncated log's end gives a
        // negative lag (`ConsumerGroupCommand`'s `getLag`).
        Some(c) => format!(
            "LOG-END-OFFSET {log_end} - CURRENT-OFFSET {c} = LAG {}",
            i128::from(log_end) - i128::from(c)
        ),
        None => format!("LOG-END-OFFSET {log_end} - CURRENT-OFFSET - = LAG -"),
    }
}

fn lag(group: &str, topic: &str, index: u32, ctx: &Context, out: &mut Vec<Mark>) {
    let Some(g) = ctx.s.groups.iter().find(|g| g.name == group) else {
        return;
    };
    let Some(monitor) = ctx.layout.lag_monitor else {
        return;
    };
    let name = format!("{topic}-{index}");
    let Some(o) = g.offsets.iter().find(|o| o.partition == name) else {
        return;
    };
    let rows = vec![
        Row::Text(format!("TOPIC {topic}  PARTITION {index}"), Tone::Muted),
        Row::Text(lag_line(o.high_watermark, o.committed), Tone::Accent),
        Row::Text(
            format!(
                "LOG-END-OFFSET is the high watermark ({}), the end a consumer can read",
                o.high_watermark
            ),
            Tone::Muted,
        ),
    ];
    let h = callout_height(&rows, ctx.layout.text);
    // What the monitor prints, under its box, reaching left.
    let top = monitor.max.y + 12.0;
    out.push(callout(
        Spot {
            id: lag_id(group),
            rect: Rect::new(monitor.max.x - 600.0, top, monitor.max.x, top + h),
            subject: monitor,
            from_right: true,
        },
        format!("Lag monitor: kafka-consumer-groups --describe --group {group}"),
        rows,
        ctx.layout,
    ));
}

fn lag_id(group: &str) -> String {
    format!("lag:{group}")
}

/// The committed offset's way to the lag callout, where the layout put it: from the group's
/// coordinator.
fn lag_route(group: &str, ctx: &Context, out: &mut Vec<Mark>) {
    let id = lag_id(group);
    let Some(opened) = out.iter().find_map(|m| match m {
        Mark::Callout { id: i, rect, .. } if *i == id => Some(*rect),
        _ => None,
    }) else {
        return;
    };
    let route = route_line(
        &Focus::OffsetsPartition(group.into()),
        &Focus::LagMonitor,
        ctx.s,
        ctx.layout,
    );
    if let Some((from, _)) = route {
        let to = from.clamp(opened.min, opened.max);
        out.push(Mark::Line {
            from,
            to,
            tone: Tone::Accent,
        });
        // A pulse every second of sim time, as the monitor asks again.
        let t = (ctx.display_ms.rem_euclid(1000.0) / 1000.0) as f32;
        out.push(Mark::Pulse { from, to, t });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lag_line_is_kafka_consumer_groups_arithmetic() {
        assert_eq!(
            lag_line(42, Some(42)),
            "LOG-END-OFFSET 42 - CURRENT-OFFSET 42 = LAG 0"
        );
        assert_eq!(
            lag_line(50, Some(42)),
            "LOG-END-OFFSET 50 - CURRENT-OFFSET 42 = LAG 8"
        );
        assert_eq!(
            lag_line(5, Some(7)),
            "LOG-END-OFFSET 5 - CURRENT-OFFSET 7 = LAG -2"
        );
        assert_eq!(
            lag_line(7, None),
            "LOG-END-OFFSET 7 - CURRENT-OFFSET - = LAG -"
        );
    }
}
