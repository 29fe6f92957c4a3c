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
use crate::tour::{Annotation, Focus};

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
    /// A panel of rows.
    Callout {
        rect: Rect,
        title: String,
        rows: Vec<Row>,
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
}

/// How long a chip takes to leave or join the set, in sim time.
const CHIP_MOVE_MS: f64 = 800.0;
/// Callout text sizes, in scene units (the camera's zoom makes them larger on screen).
pub const CALLOUT_TEXT: f32 = 16.0;
pub const CALLOUT_ROW: f32 = 22.0;
const CALLOUT_PAD: f32 = 10.0;
/// A row's text, of the callout's title's size: 14 units, the scene's smallest.
pub const ROW_TEXT: f32 = 0.875;
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
            Row::Bar { label, .. } => chars(label, CALLOUT_TEXT * ROW_TEXT) + 120.0,
            Row::Chips(_, chips) => 50.0 + chips.len() as f32 * 38.0,
            Row::Cards { .. } => 0.0,
        })
        .fold(chars(title, CALLOUT_TEXT), f32::max);
    (widest + 2.0 * CALLOUT_PAD + 8.0) * t
}

/// A callout at `rect`, widened for its text: to the right, or (`from_right`) to the left. It is
/// moved inside the layout's area where it would cross its edge (under a broker that reaches
/// the bottom, say), so that the camera need not pull back from the cluster to show it.
fn callout(rect: Rect, title: String, rows: Vec<Row>, from_right: bool, layout: &Layout) -> Mark {
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
    Mark::Callout { rect, title, rows }
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

    /// A callout under a broker's box, `slot` places down (several annotations stack).
    fn under_broker(&self, broker: u32, slot: usize, title: String, rows: Vec<Row>) -> Mark {
        let b = self.broker_box(broker).unwrap_or(self.layout.controller);
        let h = callout_height(&rows, self.layout.text);
        let top = b.max.y + 12.0 + slot as f32 * (h + 8.0);
        callout(
            Rect::new(b.min.x, top, b.max.x, top + h),
            title,
            rows,
            false,
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

/// Everything a beat's annotations draw, and the outline of the tour's record.
pub fn marks(annotations: &[Annotation], ctx: &Context) -> Vec<Mark> {
    let mut out = Vec::new();
    for a in annotations {
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
    out
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
                leader.broker,
                0,
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
                    r.broker,
                    0,
                    format!("Follower on broker {}", r.broker),
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
                Some(leader) => out.push(ctx.under_broker(leader, 0, p.name(), rows)),
                None => {
                    let c = ctx.layout.controller;
                    let h = callout_height(&rows, ctx.layout.text);
                    out.push(callout(
                        Rect::new(c.min.x - 292.0, c.max.y - h, c.min.x - 12.0, c.max.y),
                        p.name(),
                        rows,
                        true,
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
                    Rect::new(r.min.x, r.max.y + 10.0, r.min.x + w, r.max.y + 10.0 + h),
                    String::new(),
                    rows,
                    false,
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
    out.push(callout(
        Rect::new(
            r.max.x - PRODUCER_CALLOUT_WIDTH * ctx.layout.text,
            top,
            r.max.x,
            top + h,
        ),
        format!("Producer {}, opened up", p.name),
        rows,
        true,
        ctx.layout,
    ));
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
                format!("last caught up {} ago", seconds(ms)),
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
            f.broker,
            0,
            format!(
                "Follower on broker {}: {}",
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
                    format!("replica.lag.time.max.ms = {}", seconds(lag_max)),
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
            leader,
            0,
            format!("Leader of {}: broker {leader}", p.name()),
            vec![
                Row::Chips("ISR".into(), chips),
                Row::Text(
                    format!(
                        "high watermark {}; log end offset {}",
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
    out.push(callout(rect, title, rows, !clear, ctx.layout));
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
        leader.broker,
        0,
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
                Rect::new(gr.max.x - 380.0, top, gr.max.x, top + h),
                format!("{} reads {}", m.name, p.name()),
                rows,
                true,
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
    let mut rows = vec![
        Row::Text(format!("hash(\"{group}\") = {hash}"), Tone::Text),
        Row::Text(format!("abs({hash}) % {n} = {partition}"), Tone::Text),
        Row::Text(
            match leader {
                Some(l) => format!("__consumer_offsets-{partition}: leader broker {l}"),
                None => format!("__consumer_offsets-{partition}: no leader"),
            },
            Tone::Accent,
        ),
        Row::Heading("Committed".into()),
    ];
    for o in &g.offsets {
        rows.push(Row::Text(
            format!(
                "{}: {}",
                o.partition,
                o.committed.map_or("none yet".into(), |c| c.to_string())
            ),
            Tone::Text,
        ));
    }
    let r = ctx.layout.groups[gi];
    let h = callout_height(&rows, ctx.layout.text);
    let top = ctx.below_group(gi);
    out.push(callout(
        Rect::new(r.min.x - 60.0, top, r.max.x, top + h),
        format!("Where {group} commits"),
        rows,
        true,
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
    // The monitor opened up: over its box, reaching left.
    let opened = Rect::new(
        monitor.max.x - 600.0,
        monitor.min.y,
        monitor.max.x,
        monitor.min.y + h,
    );
    let opened = callout(
        opened,
        format!("Lag monitor: kafka-consumer-groups --describe --group {group}"),
        rows,
        true,
        ctx.layout,
    );
    let opened_rect = opened.rect();
    out.push(opened);
    // The committed offset's way to the monitor: from the group's coordinator.
    let route = route_line(
        &Focus::OffsetsPartition(group.into()),
        &Focus::LagMonitor,
        ctx.s,
        ctx.layout,
    );
    if let Some((from, _)) = route {
        let to = from.clamp(opened_rect.min, opened_rect.max);
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
