//! An immediate-mode painter over retained sprites: the scene pushes rectangles, discs and text
//! in layout coordinates each frame, and this plugin keeps a pool of sprite and text entities in
//! step with them, so nothing is spawned per frame once the pools are big enough.

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use bevy::sprite::Anchor;

use super::AppSet;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Rect,
    Disc,
    Ring,
}

#[derive(Debug, Clone, Copy)]
pub struct Quad {
    /// Layout coordinates: origin top left, y down.
    pub rect: Rect,
    pub color: Color,
    pub z: f32,
    pub shape: Shape,
}

#[derive(Debug, Clone)]
pub struct Label {
    /// Layout coordinates of the anchor point.
    pub at: Vec2,
    pub text: String,
    pub size: f32,
    pub color: Color,
    pub anchor: Anchor,
    pub z: f32,
}

/// This frame's drawing.
#[derive(Resource, Default)]
pub struct Paint {
    pub quads: Vec<Quad>,
    pub labels: Vec<Label>,
    /// Where the scene is dimmed this frame.
    pub dim: Option<Dim>,
}

/// A translucent layer of the background over the parts of the scene a beat is not about. The
/// text under it is drawn over it instead, in a colour as faint as the layer makes the fills but
/// never under 3:1 against them, so that dimmed HW and LEO stay readable.
pub struct Dim {
    pub rects: Vec<Rect>,
    pub palette: crate::view::palette::Palette,
    /// The layer's opacity.
    pub alpha: f32,
    pub z: f32,
}

/// The least contrast of dimmed text against the dimmed fills under it: 3:1 and a margin for
/// the rendering's rounding and antialiasing.
pub const DIMMED_TEXT_CONTRAST: f32 = 3.5;

impl Paint {
    pub fn rect(&mut self, rect: Rect, color: impl Into<Color>, z: f32) {
        self.quads.push(Quad {
            rect,
            color: color.into(),
            z,
            shape: Shape::Rect,
        });
    }

    /// A rectangle's outline, `width` thick, inside it.
    pub fn frame(&mut self, rect: Rect, width: f32, color: impl Into<Color>, z: f32) {
        let c = color.into();
        let (a, b) = (rect.min, rect.max);
        self.rect(Rect::new(a.x, a.y, b.x, a.y + width), c, z);
        self.rect(Rect::new(a.x, b.y - width, b.x, b.y), c, z);
        self.rect(Rect::new(a.x, a.y, a.x + width, b.y), c, z);
        self.rect(Rect::new(b.x - width, a.y, b.x, b.y), c, z);
    }

    pub fn disc(&mut self, center: Vec2, radius: f32, color: impl Into<Color>, z: f32, ring: bool) {
        self.quads.push(Quad {
            rect: Rect::from_center_half_size(center, Vec2::splat(radius)),
            color: color.into(),
            z,
            shape: if ring { Shape::Ring } else { Shape::Disc },
        });
    }

    /// A straight line `width` thick from `a` to `b`, as a rotated rectangle.
    pub fn line(&mut self, a: Vec2, b: Vec2, width: f32, color: impl Into<Color>, z: f32) {
        // Kept axis-aligned when it is; other lines are approximated by a run of short dashes.
        let c = color.into();
        let d = b - a;
        if d.x.abs() < 0.5 || d.y.abs() < 0.5 {
            self.rect(Rect::from_corners(a, b).inflate(width / 2.0), c, z);
            return;
        }
        let steps = (d.length() / 6.0).ceil().max(1.0) as usize;
        for i in 0..steps {
            let p = a + d * ((i as f32 + 0.5) / steps as f32);
            self.rect(
                Rect::from_center_half_size(p, Vec2::splat(width / 2.0)),
                c,
                z,
            );
        }
    }

    /// Dims `rects` (see `Dim`).
    pub fn dim(&mut self, dim: Dim) {
        for r in &dim.rects {
            self.rect(*r, dim.palette.background.with_alpha(dim.alpha), dim.z);
        }
        self.dim = Some(dim);
    }

    /// Lifts the labels under the dimming layer over it, in their dimmed colours.
    fn lift_dimmed_text(&mut self) {
        let Some(dim) = self.dim.take() else { return };
        for l in &mut self.labels {
            if l.z < dim.z && dim.rects.iter().any(|r| r.contains(l.at)) {
                let c =
                    dim.palette
                        .dimmed_text(l.color.to_srgba(), dim.alpha, DIMMED_TEXT_CONTRAST);
                l.color = c.into();
                l.z = dim.z + 0.01;
            }
        }
    }

    pub fn text(
        &mut self,
        at: Vec2,
        text: impl Into<String>,
        size: f32,
        color: impl Into<Color>,
        anchor: Anchor,
        z: f32,
    ) {
        self.labels.push(Label {
            at,
            text: text.into(),
            size,
            color: color.into(),
            anchor,
            z,
        });
    }
}

/// Layout coordinates (origin top left, y down) to world coordinates (y up).
pub fn to_world(p: Vec2) -> Vec2 {
    Vec2::new(p.x, -p.y)
}

/// World coordinates back to layout coordinates.
pub fn to_layout(p: Vec2) -> Vec2 {
    Vec2::new(p.x, -p.y)
}

#[derive(Resource)]
struct Images {
    disc: Handle<Image>,
    ring: Handle<Image>,
}

#[derive(Resource, Default)]
struct Pools {
    quads: Vec<Entity>,
    labels: Vec<Entity>,
}

#[derive(Component)]
struct Pooled;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Paint>()
        .init_resource::<Pools>()
        .add_systems(Startup, make_images)
        .add_systems(Update, flush.in_set(AppSet::Paint));
}

/// A white disc or ring with a soft edge, tinted per sprite.
fn round_image(ring: bool) -> Image {
    const N: u32 = 64;
    let mut data = Vec::with_capacity((N * N * 4) as usize);
    let r = N as f32 / 2.0;
    for y in 0..N {
        for x in 0..N {
            let d = Vec2::new(x as f32 + 0.5 - r, y as f32 + 0.5 - r).length();
            let outer = (r - d).clamp(0.0, 1.0);
            let inner = if ring {
                (d - (r - 12.0)).clamp(0.0, 1.0)
            } else {
                1.0
            };
            let a = (outer * inner * 255.0) as u8;
            data.extend_from_slice(&[255, 255, 255, a]);
        }
    }
    Image::new(
        Extent3d {
            width: N,
            height: N,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    )
}

fn make_images(mut commands: Commands, mut images: ResMut<Assets<Image>>) {
    commands.insert_resource(Images {
        disc: images.add(round_image(false)),
        ring: images.add(round_image(true)),
    });
}

fn flush(
    mut commands: Commands,
    mut paint: ResMut<Paint>,
    mut pools: ResMut<Pools>,
    images: Option<Res<Images>>,
    mut sprites: Query<(&mut Sprite, &mut Transform, &mut Visibility), Without<Text2d>>,
    mut texts: Query<
        (
            &mut Text2d,
            &mut TextFont,
            &mut TextColor,
            &mut Anchor,
            &mut Transform,
            &mut Visibility,
        ),
        Without<Sprite>,
    >,
) {
    let Some(images) = images else { return };
    let paint = &mut *paint;
    paint.lift_dimmed_text();
    while pools.quads.len() < paint.quads.len() {
        let e = commands.spawn((Pooled, Sprite::default())).id();
        pools.quads.push(e);
    }
    while pools.labels.len() < paint.labels.len() {
        let e = commands.spawn((Pooled, Text2d::default())).id();
        pools.labels.push(e);
    }
    for (i, e) in pools.quads.iter().enumerate() {
        let Ok((mut sprite, mut transform, mut visibility)) = sprites.get_mut(*e) else {
            continue;
        };
        let Some(q) = paint.quads.get(i) else {
            visibility.set_if_neq(Visibility::Hidden);
            continue;
        };
        visibility.set_if_neq(Visibility::Inherited);
        let image = match q.shape {
            Shape::Rect => Handle::default(),
            Shape::Disc => images.disc.clone(),
            Shape::Ring => images.ring.clone(),
        };
        if sprite.image != image {
            sprite.image = image;
        }
        sprite.color = q.color;
        sprite.custom_size = Some(q.rect.size());
        let c = to_world(q.rect.center());
        transform.translation = c.extend(q.z);
    }
    for (i, e) in pools.labels.iter().enumerate() {
        let Ok((mut text, mut font, mut color, mut anchor, mut transform, mut visibility)) =
            texts.get_mut(*e)
        else {
            continue;
        };
        let Some(l) = paint.labels.get_mut(i) else {
            visibility.set_if_neq(Visibility::Hidden);
            continue;
        };
        visibility.set_if_neq(Visibility::Inherited);
        if text.0 != l.text {
            text.0 = std::mem::take(&mut l.text);
        }
        let size = bevy::text::FontSize::Px(l.size);
        if font.font_size != size {
            font.font_size = size;
        }
        color.set_if_neq(TextColor(l.color));
        anchor.set_if_neq(l.anchor);
        let at = to_world(l.at);
        transform.translation = at.extend(l.z);
    }
    paint.quads.clear();
    paint.labels.clear();
}
