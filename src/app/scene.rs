//! The scene: the controller, brokers with their replicas' logs, producers, consumer groups and
//! every message on the wire, drawn from the snapshot. Replica and broker colours, and the
//! leader's badge, are retained sprites animated with bevy_tweening when the state changes; the
//! rest is painted anew each frame.

use std::marker::PhantomData;
use std::time::Duration;

use bevy::ecs::schedule::ScheduleConfigs;
use bevy::ecs::system::ScheduleSystem;
use bevy::prelude::*;
use bevy::sprite::Anchor;
use bevy_tweening::lens::{SpriteColorLens, TransformPositionLens};
use bevy_tweening::{Tween, TweenAnim};

use super::AppSet;
use super::painter::{Paint, to_world};
use super::playback::{Shown, TwinShown};
use super::presenter::PreviewShown;
use crate::sim::network::{Node, WireState};
use crate::view::layout::{BROKER_HEADER, Layout, MEMBER_ROW, MEMBERS_TOP, text};
use crate::view::log_strip::{Cell, StripPlace, beyond, epoch_starts, segment_starts, strip};
use crate::view::palette::{Palette, ReplicaRole};
use crate::view::snapshot::{MessageKind, MessageView, PartitionView, Reconciling, ReplicaView};

/// How long a state change takes on screen (wall time).
const CHANGE: Duration = Duration::from_millis(450);

/// Where a scene's picture comes from: the run shown, or a side-by-side's second run. Each
/// side keeps its own retained sprites.
pub trait Side: Resource {
    fn shown(&self) -> &Shown;
    /// Draws the record the reader follows (the first run only).
    const FOLLOWS: bool;
}

impl Side for Shown {
    fn shown(&self) -> &Shown {
        self
    }
    const FOLLOWS: bool = true;
}

impl Side for TwinShown {
    fn shown(&self) -> &Shown {
        &self.0
    }
    const FOLLOWS: bool = false;
}

impl Side for PreviewShown {
    fn shown(&self) -> &Shown {
        &self.0
    }
    const FOLLOWS: bool = false;
}

/// Marks what the scene spawned for one layout of side `S`; all of it goes when the layout
/// changes.
#[derive(Component)]
struct SceneItem<S: Side>(PhantomData<S>);

impl<S: Side> SceneItem<S> {
    fn new() -> Self {
        SceneItem(PhantomData)
    }
}

/// A replica row's background: its colour says the replica's role.
#[derive(Component)]
struct RowBackground {
    ordinal: u32,
    broker: u32,
    role: Option<ReplicaRole>,
    /// Its log end offset last frame: a drop is a truncation, which the row flashes for.
    log_end: u64,
}

/// A consumer's row in its group's box; it flashes when the member's partitions change.
#[derive(Component)]
struct MemberRow {
    group: usize,
    index: usize,
    assigned: Option<Vec<String>>,
}

/// A broker's box: its colour says whether it runs.
#[derive(Component)]
struct BrokerBox {
    id: u32,
    state: &'static str,
}

/// The badge beside a partition's leader replica; it moves when leadership does.
#[derive(Component)]
struct LeaderBadge {
    ordinal: u32,
    leader: Option<u32>,
}

#[derive(Resource)]
struct Built<S: Side> {
    /// The layout version and theme the retained items were made for (none yet: `None`), and
    /// the jump count they last snapped at.
    made_for: Option<(u64, crate::view::palette::Theme)>,
    jumps: u64,
    side: PhantomData<S>,
}

impl<S: Side> Default for Built<S> {
    fn default() -> Self {
        Built {
            made_for: None,
            jumps: 0,
            side: PhantomData,
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Built<Shown>>()
        .init_resource::<Built<TwinShown>>()
        .init_resource::<Built<PreviewShown>>()
        .add_systems(
            Update,
            (side::<Shown>(), side::<TwinShown>(), side::<PreviewShown>())
                .chain()
                .in_set(AppSet::Scene),
        );
}

/// Side `S`'s systems: its retained sprites made and animated, its scene painted, while it
/// exists; its sprites cleared when it goes.
fn side<S: Side>() -> ScheduleConfigs<ScheduleSystem> {
    (
        (rebuild::<S>, animate_state::<S>, paint_scene::<S>)
            .chain()
            .run_if(resource_exists::<S>),
        clear_side::<S>.run_if(resource_removed::<S>),
    )
        .chain()
        .into_configs()
}

/// A side-by-side ended, or the presenter's preview closed: that side's sprites go (the run
/// shown never goes).
fn clear_side<S: Side>(
    mut commands: Commands,
    mut built: ResMut<Built<S>>,
    items: Query<Entity, With<SceneItem<S>>>,
) {
    for e in &items {
        commands.entity(e).despawn();
    }
    *built = Built::default();
}

/// A tall row's segments, once its log has more than one or retention has deleted some: a block
/// per segment, newest on the right, under the row's name. The active segment (still taking
/// appends) is outlined, the ones it closed are filled, and left of them faint blocks stand for
/// what retention deleted, so the log start moving shows as blocks going faint from the left.
fn segment_bar(
    paint: &mut Paint,
    palette: &Palette,
    r: &ReplicaView,
    (row, strip_rect): (Rect, Rect),
    scale: f32,
    now_ms: u64,
) {
    if r.segment_starts.len() < 2 && r.log_start_offset == 0 {
        return;
    }
    // Centred between the name's line and the numbers' line over the log, however tall the row.
    let (above, below) = (row.min.y + 22.0 * scale, strip_rect.min.y - 18.0 * scale);
    let h = ((below - above) * 0.6).min(16.0 * scale);
    if h < 10.0 * scale {
        return;
    }
    let top = (above + below - h) / 2.0;
    let slot = 18.0 * scale;
    // Room on the left for the log start's label, when retention moved it.
    let label = (r.log_start_offset > 0).then(|| format!("start {}", r.log_start_offset));
    let label_w = label
        .as_ref()
        .map_or(0.0, |l| text::width(l, text::SMALL * scale) + 6.0);
    let slots = ((strip_rect.width() - label_w + 3.0) / slot)
        .floor()
        .max(3.0) as usize;
    let deleted = if r.log_start_offset > 0 {
        2.min(slots / 3)
    } else {
        0
    };
    let kept = r.segment_starts.len().min(slots - deleted);
    let role_c = srgba(palette.replica(r.role));
    let block = |i: usize| {
        let x = strip_rect.max.x - (slots - i) as f32 * slot + 3.0;
        Rect::new(x, top, x + slot - 3.0, top + h)
    };
    let first = slots - kept - deleted;
    for i in first..first + deleted {
        paint.rect(block(i), with_alpha(palette.muted, 0.3), 2.0);
    }
    // The segment retention deleted last fades out, over FADE_MS of simulated time.
    const FADE_MS: u64 = 3_000;
    if deleted > 0
        && let Some(age) = r.segments_deleted_ms.map(|at| now_ms.saturating_sub(at))
        && age < FADE_MS
    {
        let left = 1.0 - age as f32 / FADE_MS as f32;
        paint.rect(
            block(first + deleted - 1),
            with_alpha(palette.replica(r.role), left),
            2.01,
        );
    }
    for (k, i) in (first + deleted..slots).enumerate() {
        let active = k + 1 == kept;
        if active {
            paint.frame(block(i), 2.0, role_c, 2.0);
        } else {
            paint.rect(block(i), role_c, 2.0);
        }
    }
    // The log start: the edge between what is gone and what is kept, and its offset.
    if deleted > 0 {
        let x = block(first + deleted).min.x - 1.5;
        paint.rect(
            Rect::new(x - 1.0, top - 3.0 * scale, x + 1.0, top + h + 3.0 * scale),
            srgba(palette.text),
            2.2,
        );
        if let Some(label) = label
            && block(first).min.x - strip_rect.min.x >= label_w
        {
            paint.text(
                Vec2::new(block(first).min.x - 6.0, top + h / 2.0),
                label,
                text::SMALL * scale,
                palette.readable(palette.muted),
                Anchor::CENTER_RIGHT,
                5.0,
            );
        }
    }
}

fn srgba(c: Srgba) -> Color {
    Color::Srgba(c)
}

fn with_alpha(c: Srgba, a: f32) -> Color {
    Color::Srgba(c.with_alpha(a))
}

/// A replica row's colour: its role's, seen as the ring around the row (the row itself is the
/// panel's colour, so its cells and text keep their contrast).
fn row_color(palette: &Palette, role: ReplicaRole) -> Color {
    srgba(palette.replica(role))
}

/// How thick the role's ring around a replica row is.
const ROW_RING: f32 = 2.0;

fn member_color(palette: &Palette) -> Color {
    with_alpha(palette.group, 0.14)
}

/// A flash from `flash` back to `rest`: truncations and reassignments draw the eye.
fn flash(commands: &mut Commands, e: Entity, flash: Color, rest: Color) {
    let tween = Tween::new(
        EaseFunction::QuadraticOut,
        CHANGE / 3,
        SpriteColorLens {
            start: rest,
            end: flash,
        },
    )
    .then(Tween::new(
        EaseFunction::QuadraticIn,
        CHANGE * 3,
        SpriteColorLens {
            start: flash,
            end: rest,
        },
    ));
    commands.entity(e).insert(TweenAnim::new(tween));
}

fn broker_color(palette: &Palette, state: &str) -> Color {
    match state {
        // Still serving while its leaderships move.
        "online" | "shutting down" => srgba(palette.panel),
        _ => with_alpha(palette.offline, 0.35),
    }
}

fn rect_sprite(rect: Rect, color: Color, z: f32) -> (Sprite, Transform) {
    (
        Sprite {
            color,
            custom_size: Some(rect.size()),
            ..default()
        },
        Transform::from_translation(to_world(rect.center()).extend(z)),
    )
}

/// Where a partition's leader badge sits: left of its leader's row.
fn badge_position(layout: &Layout, ordinal: u32, leader: Option<u32>) -> Option<Vec3> {
    let slot = layout.replica(ordinal, leader?)?;
    Some(to_world(Vec2::new(slot.rect.min.x + 4.0, slot.rect.center().y)).extend(4.0))
}

/// The leader badge's size: as tall as the row, less a margin.
fn badge_size(layout: &Layout) -> Vec2 {
    let h = layout
        .replicas
        .first()
        .map_or(17.0, |s| s.rect.height() - 4.0);
    Vec2::new(5.0, h)
}

fn rebuild<S: Side>(
    mut commands: Commands,
    side: Res<S>,
    mut built: ResMut<Built<S>>,
    items: Query<Entity, With<SceneItem<S>>>,
    mut clear: ResMut<ClearColor>,
) {
    let shown = side.shown();
    let s = &shown.snapshot;
    let wanted = (shown.layout_version, shown.theme);
    if built.made_for == Some(wanted) {
        return;
    }
    for e in &items {
        commands.entity(e).despawn();
    }
    let palette = shown.palette();
    clear.0 = srgba(palette.background);
    let layout = &shown.layout;
    for (i, rect) in layout.brokers.iter().enumerate() {
        let b = &s.brokers[i];
        commands.spawn((
            SceneItem::<S>::new(),
            BrokerBox {
                id: b.id,
                state: b.state,
            },
            rect_sprite(*rect, broker_color(&palette, b.state), 0.0),
        ));
    }
    for slot in &layout.replicas {
        let p = &s.partitions[slot.ordinal as usize];
        let replica = p.replicas.iter().find(|r| r.broker == slot.broker);
        let role = replica.map(|r| r.role);
        commands.spawn((
            SceneItem::<S>::new(),
            RowBackground {
                ordinal: slot.ordinal,
                broker: slot.broker,
                role,
                log_end: replica.map_or(0, |r| r.log_end_offset),
            },
            rect_sprite(
                slot.rect,
                role.map_or(Color::NONE, |r| row_color(&palette, r)),
                1.0,
            ),
        ));
    }
    for group in 0..layout.groups.len() {
        let assigned = |index: usize| {
            s.groups[group]
                .members
                .get(index)
                .map(|m| m.assigned.clone())
        };
        let mut index = 0;
        while let Some(rect) = layout.member(group, index) {
            commands.spawn((
                SceneItem::<S>::new(),
                MemberRow {
                    group,
                    index,
                    assigned: assigned(index),
                },
                rect_sprite(rect, member_color(&palette), 1.0),
                if assigned(index).is_some() {
                    Visibility::Inherited
                } else {
                    Visibility::Hidden
                },
            ));
            index += 1;
        }
    }
    let mut badged = Vec::new();
    for slot in &layout.replicas {
        if badged.contains(&slot.ordinal) {
            continue;
        }
        badged.push(slot.ordinal);
        let leader = s.partitions[slot.ordinal as usize].leader;
        let at = badge_position(layout, slot.ordinal, leader);
        commands.spawn((
            SceneItem::<S>::new(),
            LeaderBadge {
                ordinal: slot.ordinal,
                leader,
            },
            Sprite {
                color: srgba(palette.leader),
                custom_size: Some(badge_size(layout)),
                ..default()
            },
            Transform::from_translation(at.unwrap_or(Vec3::new(0.0, 0.0, -10.0))),
            if at.is_some() {
                Visibility::Inherited
            } else {
                Visibility::Hidden
            },
        ));
    }
    *built = Built {
        made_for: Some(wanted),
        jumps: shown.jumps,
        side: PhantomData,
    };
}

/// Starts a colour change on a sprite: a tween while playing, at once after a jump.
fn change_color(commands: &mut Commands, e: Entity, sprite: &mut Sprite, to: Color, snap: bool) {
    if snap {
        commands.entity(e).remove::<TweenAnim>();
        sprite.color = to;
    } else {
        let tween = Tween::new(
            EaseFunction::QuadraticInOut,
            CHANGE,
            SpriteColorLens {
                start: sprite.color,
                end: to,
            },
        );
        commands.entity(e).insert(TweenAnim::new(tween));
    }
}

fn animate_state<S: Side>(
    mut commands: Commands,
    side: Res<S>,
    mut built: ResMut<Built<S>>,
    mut rows: Query<
        (Entity, &mut RowBackground, &mut Sprite),
        (Without<LeaderBadge>, Without<MemberRow>, With<SceneItem<S>>),
    >,
    mut boxes: Query<
        (Entity, &mut BrokerBox, &mut Sprite),
        (
            Without<RowBackground>,
            Without<LeaderBadge>,
            With<SceneItem<S>>,
        ),
    >,
    mut badges: Query<
        (Entity, &mut LeaderBadge, &mut Transform, &mut Visibility),
        (Without<MemberRow>, With<SceneItem<S>>),
    >,
    mut members: Query<
        (Entity, &mut MemberRow, &mut Visibility),
        (Without<LeaderBadge>, With<SceneItem<S>>),
    >,
) {
    let shown = side.shown();
    let s = &shown.snapshot;
    let palette = shown.palette();
    let snap = built.jumps != shown.jumps;
    built.jumps = shown.jumps;
    for (e, mut row, mut sprite) in &mut rows {
        let replica = s.partitions[row.ordinal as usize]
            .replicas
            .iter()
            .find(|r| r.broker == row.broker);
        let role = replica.map(|r| r.role);
        let log_end = replica.map_or(0, |r| r.log_end_offset);
        let truncated = log_end < row.log_end && !snap;
        row.log_end = log_end;
        let to = role.map_or(Color::NONE, |r| row_color(&palette, r));
        if truncated {
            row.role = role;
            flash(&mut commands, e, with_alpha(palette.lost, 0.85), to);
        } else if role != row.role {
            row.role = role;
            change_color(&mut commands, e, &mut sprite, to, snap);
        }
    }
    for (e, mut row, mut visibility) in &mut members {
        let assigned = s
            .groups
            .get(row.group)
            .and_then(|g| g.members.get(row.index))
            .map(|m| m.assigned.clone());
        visibility.set_if_neq(if assigned.is_some() {
            Visibility::Inherited
        } else {
            Visibility::Hidden
        });
        if assigned != row.assigned {
            let moved = row.assigned.is_some() && assigned.is_some() && !snap;
            row.assigned = assigned;
            if moved {
                flash(
                    &mut commands,
                    e,
                    with_alpha(palette.group, 0.7),
                    member_color(&palette),
                );
            }
        }
    }
    for (e, mut b, mut sprite) in &mut boxes {
        let Some(view) = s.broker(b.id) else { continue };
        if view.state != b.state {
            b.state = view.state;
            change_color(
                &mut commands,
                e,
                &mut sprite,
                broker_color(&palette, view.state),
                snap,
            );
        }
    }
    for (e, mut badge, mut transform, mut visibility) in &mut badges {
        let leader = s.partitions[badge.ordinal as usize].leader;
        if leader == badge.leader {
            continue;
        }
        badge.leader = leader;
        match badge_position(&shown.layout, badge.ordinal, leader) {
            None => *visibility = Visibility::Hidden,
            Some(to) => {
                let was_hidden = *visibility == Visibility::Hidden;
                *visibility = Visibility::Inherited;
                if snap || was_hidden {
                    commands.entity(e).remove::<TweenAnim>();
                    transform.translation = to;
                } else {
                    let tween = Tween::new(
                        EaseFunction::CubicInOut,
                        CHANGE * 2,
                        TransformPositionLens {
                            start: transform.translation,
                            end: to,
                        },
                    );
                    commands.entity(e).insert(TweenAnim::new(tween));
                }
            }
        }
    }
}

/// Where a message on the wire is drawn at the instant shown (layout coordinates), and how
/// opaque; `None` when it is not on screen.
pub fn message_at(shown: &Shown, m: &MessageView) -> Option<(Vec2, f32)> {
    shown
        .layout
        .message_at(&shown.snapshot, &m.wire, shown.display_ms)
}

/// Half the size of a message's mark: a card for records, a disc for the rest, smaller while a
/// broker holds it.
pub fn message_half_size(m: &MessageView, t: f32) -> Vec2 {
    if m.records > 0 {
        Vec2::new(9.0, 6.5) * t
    } else if matches!(m.wire.state, WireState::Held { .. }) {
        Vec2::splat(5.0 * t)
    } else {
        Vec2::splat(8.0 * t)
    }
}

fn message_color(palette: &Palette, kind: MessageKind) -> Srgba {
    match kind {
        MessageKind::Produce | MessageKind::ProduceResponse => palette.produce,
        MessageKind::Fetch
        | MessageKind::FetchResponse
        | MessageKind::ConsumerFetch
        | MessageKind::ConsumerFetchResponse => palette.fetch,
        MessageKind::Heartbeat | MessageKind::HeartbeatResponse => palette.heartbeat,
        MessageKind::Group | MessageKind::GroupResponse => palette.group,
    }
}

/// The short tag drawn in a replica row.
fn role_tag(role: ReplicaRole, epoch: u32) -> String {
    match role {
        ReplicaRole::Leader => format!("leader e{epoch}"),
        ReplicaRole::InSync => "in ISR".into(),
        ReplicaRole::OutOfSync => "out of ISR".into(),
        ReplicaRole::Offline => "offline".into(),
    }
}

fn paint_partition_row(
    paint: &mut Paint,
    palette: &Palette,
    scale: f32,
    rect: Rect,
    p: &PartitionView,
    broker: u32,
    now_ms: u64,
) {
    let Some(r) = p.replicas.iter().find(|r| r.broker == broker) else {
        return;
    };
    let text = srgba(palette.text);
    paint.rect(rect.inflate(-ROW_RING), srgba(palette.panel), 1.5);
    // A solid bar in the role's colour on the row's left edge; the leader's is its badge, which
    // moves when leadership does.
    if r.role != ReplicaRole::Leader {
        paint.rect(
            Rect::new(
                rect.min.x + 1.5,
                rect.min.y + 2.0,
                rect.min.x + 6.5,
                rect.max.y - 2.0,
            ),
            srgba(palette.replica(r.role)),
            4.0,
        );
    }
    let name = if p.internal {
        format!("__consumer_offsets-{}", p.index)
    } else {
        p.name()
    };
    let place = StripPlace::of(rect, p, scale);
    // How wide the numbers on the line above the log are, for the epochs' labels to keep clear.
    let mut numbers_w = 0.0;
    if place.tall {
        let y = place.text_y(rect, scale);
        let size = if p.internal { text::SMALL } else { text::BODY };
        let name_line = name.clone();
        paint.text(
            Vec2::new(rect.min.x + 10.0, y),
            name,
            size * scale,
            text,
            Anchor::CENTER_LEFT,
            5.0,
        );
        // The role beside the name if there is room, else before the numbers on the line above
        // the log, else left to the ring's colour and the explanation under the pointer.
        let color = palette.readable(if r.truncates_to.is_some() {
            palette.lost
        } else {
            palette.replica(r.role)
        });
        let width = |s: &str, size: f32| text::width(s, size * scale);
        let room = rect.width() - 16.0 - 12.0;
        // A replaced leader that has not learnt so (a zombie) still leads, in its old epoch.
        let tag = match r.stale_leader {
            Some(epoch) => format!("zombie e{epoch}"),
            None => role_tag(r.role, p.leader_epoch),
        };
        let numbers = match r.truncates_to {
            Some(to) => vec![
                format!("LEO {}: truncates to {to}", r.log_end_offset),
                format!("truncates to {to}"),
            ],
            // The log start once retention moved it, where there is room (a short row, as the
            // talk preset's, has no segment bar to say it).
            None => [
                // How far its cleaner got, on a compacted log it has cleaned.
                r.cleaned_to.map(|to| {
                    format!(
                        "cleaned to {to}  HW {}  LEO {}",
                        r.high_watermark, r.log_end_offset
                    )
                }),
                (r.log_start_offset > 0).then(|| {
                    format!(
                        "start {}  HW {}  LEO {}",
                        r.log_start_offset, r.high_watermark, r.log_end_offset
                    )
                }),
                (r.log_start_offset > 0).then(|| {
                    format!(
                        "start {} HW {} LEO {}",
                        r.log_start_offset, r.high_watermark, r.log_end_offset
                    )
                }),
                Some(format!("HW {}  LEO {}", r.high_watermark, r.log_end_offset)),
                Some(format!("HW {} LEO {}", r.high_watermark, r.log_end_offset)),
            ]
            .into_iter()
            .flatten()
            .collect(),
        };
        let numbers = first_fitting(&numbers, room, text::SMALL * scale);
        let numbers = if width(&name_line, size) + width(&tag, text::SMALL) <= room {
            paint.text(
                Vec2::new(rect.max.x - 6.0, y),
                tag,
                text::SMALL * scale,
                color,
                Anchor::CENTER_RIGHT,
                5.0,
            );
            numbers
        } else if width(&tag, text::SMALL) + width(&numbers, text::SMALL) <= room {
            format!("{tag}  {numbers}")
        } else {
            numbers
        };
        numbers_w = width(&numbers, text::SMALL);
        paint.text(
            Vec2::new(rect.max.x - 6.0, place.rect.min.y - 9.0 * scale),
            fit(&numbers, room, text::SMALL * scale),
            text::SMALL * scale,
            color,
            Anchor::CENTER_RIGHT,
            5.0,
        );
    } else {
        let short = if p.internal {
            format!("__co-{}", p.index)
        } else {
            name
        };
        paint.text(
            Vec2::new(rect.min.x + 10.0, rect.center().y),
            short,
            text::SMALL * scale,
            text,
            Anchor::CENTER_LEFT,
            5.0,
        );
    }
    let (first, cells, strip_rect) = (place.first, place.cells, place.rect);
    let st = strip(
        first,
        cells,
        (r.log_start_offset, r.log_end_offset),
        r.high_watermark,
        r.truncates_to,
        &r.cleaned,
    );
    let role_c = palette.replica(r.role);
    // Each state has its own form, not only its own tint: committed cells are filled, uncommitted
    // ones outlined, missing ones empty slots, diverged ones struck out, compacted ones low stubs.
    for (i, cell) in st.cells.iter().enumerate() {
        let c = place.cell(i);
        match cell {
            Cell::Committed => paint.rect(c, srgba(role_c), 2.0),
            Cell::Uncommitted => paint.frame(c, 2.0, srgba(role_c), 2.0),
            Cell::Missing => paint.frame(c, 1.0, srgba(palette.muted), 2.0),
            // Gone: a faint shadow where the segment was, with no outline.
            Cell::Deleted => paint.rect(c, with_alpha(palette.muted, 0.25), 2.0),
            // Compacted away: the offset stays, the record is gone. A low stub in the replica's
            // colour keeps the place in the row of records.
            Cell::Cleaned => {
                let h = (c.height() * 0.22).max(2.0);
                paint.rect(
                    Rect::new(c.min.x, c.max.y - h, c.max.x, c.max.y),
                    with_alpha(palette.replica(r.role), 0.55),
                    2.0,
                );
            }
            Cell::Diverged => {
                paint.frame(c, 2.0, srgba(palette.lost), 2.0);
                let y = c.center().y;
                paint.rect(
                    Rect::new(c.min.x, y - 1.0, c.max.x, y + 1.0),
                    srgba(palette.lost),
                    2.1,
                );
            }
        }
    }
    // Where its segments start inside the window: a tick over the boundary, as a segment is what
    // retention deletes whole.
    for at in segment_starts(&r.segment_starts, r.log_start_offset, first, cells) {
        let x = place.boundary_x(at);
        paint.rect(
            Rect::new(
                x - 1.0,
                strip_rect.min.y - 4.0 * scale,
                x + 1.0,
                strip_rect.min.y,
            ),
            srgba(palette.muted),
            3.05,
        );
    }
    if place.tall {
        segment_bar(paint, palette, r, (rect, strip_rect), scale, now_ms);
    }
    // Where leader epochs start inside the window: the boundaries a truncation goes back to.
    for (epoch, at) in epoch_starts(&r.epochs, first, cells) {
        let x = place.boundary_x(at);
        paint.rect(
            Rect::new(
                x - 1.5,
                strip_rect.min.y - 5.0,
                x + 1.5,
                strip_rect.max.y + 2.0,
            ),
            srgba(palette.heartbeat),
            3.1,
        );
        if place.tall {
            // Right of its boundary, else left of it, clear of the numbers on the same line.
            let label = format!("e{epoch}");
            let w = text::width(&label, text::SMALL * scale);
            let numbers_from = rect.max.x - 6.0 - numbers_w;
            let (at, anchor) = if x + 3.0 + w < numbers_from - 4.0 {
                (x + 3.0, Anchor::CENTER_LEFT)
            } else {
                (x - 3.0, Anchor::CENTER_RIGHT)
            };
            let clear = match anchor {
                Anchor::CENTER_LEFT => true,
                _ => at < numbers_from - 4.0 && at - w > rect.min.x + 8.0,
            };
            if clear {
                paint.text(
                    Vec2::new(at, strip_rect.min.y - 9.0 * scale),
                    label,
                    text::SMALL * scale,
                    palette.readable(palette.heartbeat),
                    anchor,
                    5.0,
                );
            } else {
                // No room on the line: a flag on the boundary, over the top of the epoch's
                // first cells.
                let size = text::SMALL * scale;
                let flag = Rect::new(
                    x + 1.5,
                    strip_rect.min.y,
                    x + 4.0 + w + 3.0,
                    strip_rect.min.y + size + 2.0,
                );
                paint.rect(flag, srgba(palette.panel), 4.4);
                paint.text(
                    Vec2::new(x + 4.0, flag.center().y),
                    label,
                    size,
                    palette.readable(palette.heartbeat),
                    Anchor::CENTER_LEFT,
                    5.0,
                );
            }
        }
    }
    if let Some(at) = st.high_watermark_at {
        paint.rect(place.watermark_bar(at), text, 3.0);
    }
    // A log that ends outside the window says how far.
    if let Some(d) = beyond(first, cells, r.log_end_offset) {
        let (label, anchor, x) = if d > 0 {
            (
                format!("+{d} ->"),
                Anchor::CENTER_RIGHT,
                strip_rect.max.x - 2.0,
            )
        } else {
            (
                format!("<- {}", -d),
                Anchor::CENTER_LEFT,
                strip_rect.min.x + 2.0,
            )
        };
        let size = text::SMALL * scale;
        let w = text::width(&label, size) + 6.0;
        let back = if d > 0 {
            Rect::new(x - w, strip_rect.min.y, x + 2.0, strip_rect.max.y)
        } else {
            Rect::new(x - 2.0, strip_rect.min.y, x + w, strip_rect.max.y)
        };
        paint.rect(back, srgba(palette.panel), 4.5);
        paint.text(
            Vec2::new(x + if d > 0 { -3.0 } else { 3.0 }, strip_rect.center().y),
            label,
            size,
            text,
            anchor,
            5.0,
        );
    }
}

/// Where a message's label goes: above the message, or below it where only that is clear of
/// the boxes (a message leaving a broker at its foot), or, where the label would sit on a box's
/// title line (a message meeting a broker at its corner), above the box.
fn message_label_at(layout: &Layout, message: Vec2, label: &str) -> Vec2 {
    let t = layout.text;
    let size = Vec2::new(text::width(label, text::SMALL * t), text::SMALL * t * 1.3);
    let (above, below) = (
        message + Vec2::new(0.0, -20.0 * t),
        message + Vec2::new(0.0, 20.0 * t),
    );
    let clear = |at: Vec2| {
        let r = Rect::from_center_size(at, size);
        layout.boxes().all(|b| r.intersect(b).is_empty())
    };
    if clear(above) {
        return above;
    }
    if clear(below) {
        return below;
    }
    let rect = Rect::from_center_size(above, size);
    let titled = layout.boxes().find(|b| {
        let title = Rect::new(b.min.x, b.min.y, b.max.x, b.min.y + BROKER_HEADER * t);
        !rect.intersect(title).is_empty()
    });
    match titled {
        Some(b) => Vec2::new(above.x, b.min.y - size.y / 2.0 - 2.0),
        None => above,
    }
}

pub(super) fn paint_scene<S: Side>(
    side: Res<S>,
    following: Res<super::following::Following>,
    mut paint: ResMut<Paint>,
) {
    let shown = side.shown();
    let s = &shown.snapshot;
    let layout = &shown.layout;
    let palette = shown.palette();
    let t = layout.text;
    let header = BROKER_HEADER * t;
    let text = srgba(palette.text);
    let muted = srgba(palette.muted);

    // The controller.
    let c = layout.controller;
    paint.rect(c, srgba(palette.panel), 0.0);
    paint.frame(c, 2.0, srgba(palette.heartbeat), 0.5);
    paint.text(
        Vec2::new(c.center().x, c.min.y + 22.0 * t),
        "KRaft controller",
        text::TITLE * t,
        text,
        Anchor::CENTER,
        5.0,
    );
    let ids = |wanted: fn(&crate::view::snapshot::BrokerView) -> bool| -> String {
        let ids: Vec<String> = s
            .brokers
            .iter()
            .filter(|b| wanted(b))
            .map(|b| b.id.to_string())
            .collect();
        ids.join(", ")
    };
    // What the controller knows: fenced brokers, and restarted ones it has not registered yet.
    let fenced = ids(|b| b.fenced);
    let starting = ids(|b| b.state == "starting");
    let mut status: Vec<String> = Vec::new();
    if !fenced.is_empty() {
        status.push(format!("fenced: broker {fenced}"));
    }
    if !starting.is_empty() {
        status.push(format!("registering: broker {starting}"));
    }
    paint.text(
        Vec2::new(c.center().x, c.min.y + 52.0 * t),
        if status.is_empty() {
            "all brokers registered, unfenced".to_string()
        } else {
            status.join("; ")
        },
        text::SMALL * t,
        if status.is_empty() {
            muted
        } else {
            srgba(palette.readable(palette.out_of_sync))
        },
        Anchor::CENTER,
        5.0,
    );

    // Brokers and their replicas.
    for (i, r) in layout.brokers.iter().enumerate() {
        let Some(b) = s.brokers.get(i) else { continue };
        let state_color = match b.state {
            "online" if b.isolated => srgba(palette.out_of_sync),
            "online" => with_alpha(palette.muted, 0.6),
            "fenced" | "shutting down" => srgba(palette.out_of_sync),
            _ => srgba(palette.offline),
        };
        paint.frame(*r, 2.0, state_color, 0.5);
        // Narrow boxes (many brokers) drop the word "online" and shrink the title.
        let narrow = r.width() < 200.0 * t;
        paint.text(
            Vec2::new(r.min.x + 8.0, r.min.y + header / 2.0),
            format!("Broker {}", b.id),
            if narrow { text::HEADING } else { text::TITLE } * t,
            text,
            Anchor::CENTER_LEFT,
            5.0,
        );
        let state = match (b.state, b.isolated) {
            ("online", true) => "ISOLATED".to_string(),
            ("online", false) if narrow => String::new(),
            // A running broker's rack says more than "online" where racks matter (follower
            // fetching, rack-aware placement); any other state is said instead.
            ("online", false) => b
                .rack
                .as_ref()
                .map_or_else(|| "online".to_string(), |rack| format!("rack {rack}")),
            // Kafka's PENDING_CONTROLLED_SHUTDOWN, in a word that fits beside the title.
            ("shutting down", _) => "STOPPING".to_string(),
            (other, _) => other.to_uppercase(),
        };
        paint.text(
            Vec2::new(r.max.x - 6.0, r.min.y + header / 2.0),
            state,
            if narrow { text::SMALL } else { text::BODY } * t,
            // A down broker's box is tinted, and its frame has the state's hue: its word is in
            // the text's own colour, to read on the tint.
            match (b.state, b.isolated) {
                ("online", false) => muted,
                ("online", true) | ("shutting down", _) => {
                    srgba(palette.readable(palette.out_of_sync))
                }
                _ => text,
            },
            Anchor::CENTER_RIGHT,
            5.0,
        );
        let hidden = layout.hidden.get(i).copied().unwrap_or(0);
        if hidden > 0 {
            // In the row kept free for it, below the last replica shown.
            let last = layout
                .replicas
                .iter()
                .filter(|s| s.broker == b.id)
                .map(|s| s.rect.max.y)
                .fold(r.min.y + header, f32::max);
            paint.text(
                Vec2::new(r.center().x, last + 11.0 * t),
                format!("+{hidden} more replicas"),
                text::SMALL * t,
                muted,
                Anchor::CENTER,
                5.0,
            );
        }
    }
    for slot in &layout.replicas {
        let p = &s.partitions[slot.ordinal as usize];
        paint_partition_row(&mut paint, &palette, t, slot.rect, p, slot.broker, s.now_ms);
    }

    // Cut links, each label clear of the others.
    let mut cut_labels: Vec<Rect> = Vec::new();
    for (a, b) in &s.cut_links {
        let (Some(pa), Some(pb)) = (
            layout.route_end(s, Node::Broker(*a), Node::Broker(*b)),
            layout.route_end(s, Node::Broker(*b), Node::Broker(*a)),
        ) else {
            continue;
        };
        let (pa, pb) = (pa + Vec2::Y * 4.0, pb + Vec2::Y * 4.0);
        paint.line(pa, pb, 3.0, with_alpha(palette.lost, 0.9), 4.5);
        let label = format!("link {a}-{b} cut");
        let size = Vec2::new(text::width(&label, text::BODY * t), text::BODY * t * 1.3);
        let at = crate::view::layout::clear_spot(layout, pa, pb, size, &cut_labels);
        cut_labels.push(Rect::from_center_size(at, size));
        paint.text(
            at,
            label,
            text::BODY * t,
            srgba(palette.readable(palette.lost)),
            Anchor::CENTER,
            5.0,
        );
    }

    // Producers.
    for (i, r) in layout.producers.iter().enumerate() {
        let Some(p) = s.producers.get(i) else {
            continue;
        };
        paint.rect(*r, srgba(palette.panel), 0.0);
        paint.frame(*r, 2.0, srgba(palette.produce), 0.5);
        let bad = srgba(palette.readable(palette.lost));
        // Ranked: a short card (several producers at a small size, the talk preset) drops the
        // highest first; what went wrong stays with the acks.
        let mut lines = vec![
            (0, (format!("Producer {}", p.name), text::HEADING, text)),
            (
                1,
                (
                    format!("to {}, acks={}", p.topic, p.acks),
                    text::SMALL,
                    muted,
                ),
            ),
            (
                4,
                (
                    format!("{} records/s", p.records_per_sec),
                    text::SMALL,
                    muted,
                ),
            ),
            (
                2,
                (
                    if p.idempotent {
                        "idempotent"
                    } else {
                        "not idempotent"
                    }
                    .to_string(),
                    text::SMALL,
                    muted,
                ),
            ),
            (2, (format!("sent {}", p.sent), text::SMALL, text)),
            (2, (format!("acked {}", p.acked), text::SMALL, text)),
            (
                3,
                (
                    format!("failed {}  pending {}", p.failed, p.pending),
                    text::SMALL,
                    if p.failed > 0 { bad } else { muted },
                ),
            ),
        ];
        if p.duplicates > 0 {
            let line = format!("written twice {}", p.duplicates);
            lines.push((1, (line, text::SMALL, bad)));
        }
        if let Some(broker) = p.answers_lost {
            // The broker where the card has room for it.
            let full = format!("answers from broker {broker} lost");
            let fits = text::width(&full, text::SMALL * t) <= r.width() - 20.0;
            let line = if fits { full } else { "answers lost".into() };
            lines.push((1, (line, text::SMALL, bad)));
        }
        let lines = crate::view::layout::card_lines(lines, r.height(), 22.0 * t, 26.0 * t, 8.0 * t);
        for (j, (line, size, color)) in lines.into_iter().enumerate() {
            let y = r.min.y + (22.0 + j as f32 * 26.0) * t;
            paint.text(
                Vec2::new(r.min.x + 10.0, y),
                line,
                size * t,
                color,
                Anchor::CENTER_LEFT,
                5.0,
            );
        }
    }

    // Consumer groups.
    for (gi, r) in layout.groups.iter().enumerate() {
        let Some(g) = s.groups.get(gi) else { continue };
        paint.rect(*r, srgba(palette.panel), 0.0);
        paint.frame(*r, 2.0, srgba(palette.group), 0.5);
        paint.text(
            Vec2::new(r.min.x + 10.0, r.min.y + 22.0 * t),
            format!("Group {}", g.name),
            text::HEADING * t,
            text,
            Anchor::CENTER_LEFT,
            5.0,
        );
        let lag = crate::view::snapshot::or_dash(g.lag());
        // A consumer-protocol group shows its epoch and its target assignment's, which trails
        // it while Assigning.
        let epochs = match g.target_epoch {
            Some(target) if target != g.generation => {
                format!("epoch {}, target {target}", g.generation)
            }
            Some(_) => format!("epoch {}", g.generation),
            None => format!("gen {}", g.generation),
        };
        // Behind the log start: retention deleted records it has not read, said before all else.
        let behind = g.offsets.iter().any(|o| o.behind_log_start);
        let status = if behind {
            vec![
                format!("{}, behind the log start", g.state),
                "behind the log start".to_string(),
                "behind log start".to_string(),
            ]
        } else {
            vec![
                format!("{}, {epochs}, lag {}", g.state, lag),
                format!("{}, {epochs}", g.state),
                format!("{}, lag {}", g.state, lag),
            ]
        };
        paint.text(
            Vec2::new(r.min.x + 10.0, r.min.y + 50.0 * t),
            first_fitting(&status, r.width() - 20.0, text::SMALL * t),
            text::SMALL * t,
            if g.state == "Stable" && !behind {
                muted
            } else {
                srgba(palette.readable(palette.out_of_sync))
            },
            Anchor::CENTER_LEFT,
            5.0,
        );
        let mut drawn = 0;
        for (mi, m) in g.members.iter().enumerate() {
            let Some(mr) = layout.member(gi, mi) else {
                break;
            };
            drawn += 1;
            // "p0,1" for partitions 0 and 1 of the group's topic.
            let owned = if m.assigned.is_empty() {
                "none".to_string()
            } else {
                let ordinals: Vec<&str> = m
                    .assigned
                    .iter()
                    .map(|a| a.rsplit('-').next().unwrap_or(a))
                    .collect();
                format!("p{}", ordinals.join(","))
            };
            // A consumer-protocol member reconciles on its own: its epoch says how far it is, and
            // its coordinator may hold it until it gives partitions up or others release theirs.
            let short = |names: &[String]| -> String {
                let ordinals: Vec<&str> = names
                    .iter()
                    .map(|a| a.rsplit('-').next().unwrap_or(a))
                    .collect();
                format!("p{}", ordinals.join(","))
            };
            let epoch = if g.target_epoch.is_some() && m.alive {
                format!(" e{}", m.epoch)
            } else {
                String::new()
            };
            let pending = match &m.reconciling {
                Some(Reconciling::Revoke(p)) => format!(", revoking {}", short(p)),
                Some(Reconciling::WaitFor(p)) => format!(", awaits {}", short(p)),
                None => String::new(),
            };
            paint.text(
                Vec2::new(mr.min.x + 6.0, mr.center().y),
                {
                    // In a narrow box, members go by their number in the group ("#5").
                    let dead = match (m.alive, m.failed) {
                        (true, _) => String::new(),
                        // `auto.offset.reset=none`: what `poll()` threw.
                        (false, Some(error)) => format!(" ({error})"),
                        (false, None) => " (dead)".to_string(),
                    };
                    let number = m
                        .name
                        .strip_prefix(&format!("{}-", g.name))
                        .map_or_else(|| short_member(&m.name), |n| format!("#{n}"));
                    first_fitting(
                        &[
                            format!("{}{dead}{epoch}: {owned}{pending}", short_member(&m.name)),
                            format!("{number}{dead}{epoch}: {owned}{pending}"),
                            format!("{number}{dead}{epoch}: {owned}"),
                        ],
                        mr.width() - 10.0,
                        text::SMALL * t,
                    )
                },
                text::SMALL * t,
                if m.alive {
                    text
                } else {
                    srgba(palette.readable(palette.offline))
                },
                Anchor::CENTER_LEFT,
                5.0,
            );
        }
        if drawn < g.members.len() {
            // Where the next member's row would be, under the group's title and status.
            let below = r.min.y + (MEMBERS_TOP + drawn as f32 * MEMBER_ROW + 10.0) * t;
            paint.text(
                Vec2::new(r.min.x + 12.0, below),
                format!("+{} more members", g.members.len() - drawn),
                text::SMALL * t,
                muted,
                Anchor::CENTER_LEFT,
                5.0,
            );
        }
        let committed_to = s
            .partitions
            .get(g.offsets_partition as usize)
            .and_then(|p| p.leader.map(|l| (p.index, l)));
        if let Some((index, leader)) = committed_to {
            paint.text(
                Vec2::new(r.min.x + 10.0, r.max.y - 36.0 * t),
                format!(
                    "commits offsets to\n__consumer_offsets-{index}\n(leader: broker {leader})"
                ),
                text::SMALL * t,
                muted,
                Anchor::CENTER_LEFT,
                5.0,
            );
        }
    }

    // Messages on the wire.
    for m in &s.messages {
        let Some((at, alpha)) = message_at(shown, m) else {
            continue;
        };
        let lost = matches!(m.wire.state, WireState::Lost { .. });
        let color = if lost {
            palette.lost
        } else {
            message_color(&palette, m.kind)
        };
        let z = 6.0 + (m.wire.id % 1000) as f32 * 1e-4;
        let mark = Rect::from_center_half_size(at, message_half_size(m, t));
        if m.records > 0 {
            // Records on their way: a card, a stack of them for a batch.
            let card = mark;
            if m.records > 1 {
                paint.rect(
                    card.translate(Vec2::new(3.0, -3.0)),
                    with_alpha(color, alpha * 0.6),
                    z,
                );
            }
            paint.rect(card, with_alpha(color, alpha), z + 5e-5);
        } else {
            paint.disc(
                at,
                mark.half_size().x,
                with_alpha(color, alpha),
                z,
                m.kind.is_response(),
            );
        }
        // A consumer-protocol heartbeat answer that hands a member its assignment says so.
        if let Some((epoch, assignment)) = &m.assignment {
            let parts: Vec<String> = assignment
                .iter()
                .filter_map(|o| s.partitions.get(*o as usize))
                .map(|p| p.index.to_string())
                .collect();
            let owned = if parts.is_empty() {
                "none".to_string()
            } else {
                format!("p{}", parts.join(","))
            };
            paint.text(
                at + Vec2::new(0.0, -16.0 * t),
                format!("e{epoch}: {owned}"),
                text::SMALL * t,
                with_alpha(palette.text, alpha),
                Anchor::CENTER,
                8.4,
            );
        }
        // The message carrying the followed record says what it is.
        if S::FOLLOWS
            && following
                .trace
                .as_ref()
                .is_some_and(|t| t.wires.contains(&m.wire.id))
        {
            let name = match (m.kind, m.acks) {
                (MessageKind::Produce, Some(acks)) => format!("ProduceRequest acks={acks}"),
                (kind, _) => kind.name().to_string(),
            };
            let label = format!(
                "{name}: {} record{}",
                m.records,
                if m.records == 1 { "" } else { "s" }
            );
            paint.text(
                message_label_at(layout, at, &label),
                label,
                text::SMALL * t,
                text,
                Anchor::CENTER,
                8.45,
            );
        }
    }

    // The lag monitor: each group's lag, as kafka-consumer-groups sums it.
    if let Some(r) = layout.lag_monitor {
        paint.rect(r, srgba(palette.panel), 0.0);
        paint.frame(r, 2.0, srgba(palette.group), 0.5);
        paint.text(
            Vec2::new(r.min.x + 10.0, r.min.y + 20.0 * t),
            "Lag monitor",
            text::HEADING * t,
            text,
            Anchor::CENTER_LEFT,
            5.0,
        );
        // As many groups as the box has room for, two lines each where it has two (else the
        // committed lag alone); the last line counts the rest.
        let line = 17.0 * t;
        let lines = (((r.height() - 42.0 * t - 8.0 * t) / line).floor() as usize + 1).max(1);
        let per_group = if lines >= 2 { 2 } else { 1 };
        let shown = if s.groups.len() * per_group > lines {
            (lines.saturating_sub(1) / per_group)
                .max(1)
                .min(s.groups.len())
        } else {
            s.groups.len()
        };
        let y = |i: usize| r.min.y + 42.0 * t + i as f32 * line;
        for (i, g) in s.groups.iter().take(shown).enumerate() {
            // The committed lag (what kafka-consumer-groups prints), then the members' own: in a
            // rebalance the first climbs for every protocol, the second only where members stop.
            let lag = crate::view::snapshot::or_dash(g.lag());
            let own = crate::view::snapshot::or_dash(g.consumer_lag());
            let paused = match g.paused() {
                0 => String::new(),
                n => format!(", {n} paused"),
            };
            let quiet = g.lag().unwrap_or(0) == 0 && g.paused() == 0;
            paint.text(
                Vec2::new(r.min.x + 10.0, y(per_group * i)),
                fit(
                    &format!("{}: lag {lag}", g.name),
                    r.width() - 20.0,
                    text::SMALL * t,
                ),
                text::SMALL * t,
                if quiet { muted } else { text },
                Anchor::CENTER_LEFT,
                5.0,
            );
            if per_group < 2 {
                continue;
            }
            paint.text(
                Vec2::new(r.min.x + 10.0, y(2 * i + 1)),
                first_fitting(
                    &[
                        format!("consumer lag {own}{paused}"),
                        format!("own lag {own}{paused}"),
                    ],
                    r.width() - 20.0,
                    text::SMALL * t,
                ),
                text::SMALL * t,
                if g.paused() > 0 {
                    srgba(palette.readable(palette.out_of_sync))
                } else {
                    muted
                },
                Anchor::CENTER_LEFT,
                5.0,
            );
        }
        if shown < s.groups.len() {
            paint.text(
                Vec2::new(r.min.x + 10.0, y(per_group * shown)),
                format!("+{} more groups", s.groups.len() - shown),
                text::SMALL * t,
                muted,
                Anchor::CENTER_LEFT,
                5.0,
            );
        }
    }
}

/// Fits a line of the scene's monospace text to a width: whole words are left out from the
/// end, and the cut is marked ("..."), never a word cut in two (hovering shows the whole line).
fn fit(text: &str, width: f32, size: f32) -> String {
    let chars = text::chars_in(width, size).max(3);
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let mut out = String::new();
    for word in text.split_inclusive([' ', ',']) {
        if out.chars().count() + word.chars().count() + 3 > chars {
            break;
        }
        out.push_str(word);
    }
    format!("{}...", out.trim_end_matches([' ', ',']))
}

/// The first of `lines` (fullest first) that fits `width`, or the last one fitted.
fn first_fitting(lines: &[String], width: f32, size: f32) -> String {
    let chars = text::chars_in(width, size);
    lines
        .iter()
        .find(|l| l.chars().count() <= chars)
        .cloned()
        .unwrap_or_else(|| fit(lines.last().map_or("", |l| l), width, size))
}

/// Member ids are long (`consumer-fulfilment-1-7f3a...`): the scene shows their first parts.
fn short_member(id: &str) -> String {
    let parts: Vec<&str> = id.split('-').collect();
    if parts.len() > 3 {
        parts[..3].join("-")
    } else {
        id.to_string()
    }
}
