//! Colours: the Okabe-Ito palette, safe for the common colour-vision deficiencies, in a dark theme
//! for screens and a light one for projectors (which wash out dark ones).

use bevy::color::{LinearRgba, Mix, Srgba};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    Dark,
    Light,
}

/// Every colour the scene and the overlay use, by meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Palette {
    pub background: Srgba,
    pub panel: Srgba,
    pub text: Srgba,
    pub muted: Srgba,
    /// A partition's leader replica.
    pub leader: Srgba,
    /// A follower in the ISR.
    pub in_sync: Srgba,
    /// A follower out of the ISR.
    pub out_of_sync: Srgba,
    /// A partition with no leader, a crashed or fenced broker.
    pub offline: Srgba,
    pub produce: Srgba,
    pub fetch: Srgba,
    pub heartbeat: Srgba,
    pub group: Srgba,
    /// A message dropped on a cut link.
    pub lost: Srgba,
}

fn hex(rgb: u32) -> Srgba {
    Srgba::rgb_u8((rgb >> 16) as u8, (rgb >> 8) as u8, rgb as u8)
}

impl Palette {
    pub fn of(theme: Theme) -> Palette {
        // Okabe & Ito, "Color Universal Design": orange E69F00, sky blue 56B4E9, bluish green
        // 009E73, yellow F0E442, blue 0072B2, vermillion D55E00, reddish purple CC79A7.
        match theme {
            Theme::Dark => Palette {
                background: hex(0x12161c),
                panel: hex(0x1e242c),
                text: hex(0xeef1f4),
                muted: hex(0x8a94a0),
                leader: hex(0x56b4e9),
                in_sync: hex(0x009e73),
                out_of_sync: hex(0xd55e00),
                offline: hex(0x7b8290),
                produce: hex(0xe69f00),
                fetch: hex(0x56b4e9),
                heartbeat: hex(0xcc79a7),
                group: hex(0xf0e442),
                lost: hex(0xd55e00),
            },
            Theme::Light => Palette {
                background: hex(0xfafaf7),
                panel: hex(0xeceae4),
                text: hex(0x101418),
                muted: hex(0x5b6470),
                leader: hex(0x0072b2),
                in_sync: hex(0x007a59),
                out_of_sync: hex(0xc04f00),
                offline: hex(0x737883),
                produce: hex(0x9c6a00),
                fetch: hex(0x0072b2),
                heartbeat: hex(0xa3487f),
                group: hex(0x7a6f00),
                lost: hex(0xc04f00),
            },
        }
    }

    /// A colour for text: `c` moved a third of the way to the text colour, which keeps its hue
    /// and reads at 4.5:1 or better on the background and the panels (a test measures it).
    pub fn readable(&self, c: Srgba) -> Srgba {
        c.mix(&self.text, 0.35)
    }

    /// The colour of a replica by its role.
    pub fn replica(&self, role: ReplicaRole) -> Srgba {
        match role {
            ReplicaRole::Leader => self.leader,
            ReplicaRole::InSync => self.in_sync,
            ReplicaRole::OutOfSync => self.out_of_sync,
            ReplicaRole::Offline => self.offline,
        }
    }
}

/// What a replica is, as the scene tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaRole {
    Leader,
    InSync,
    OutOfSync,
    /// On a crashed broker, or of a partition without a leader.
    Offline,
}

impl ReplicaRole {
    /// The role of the replica on `broker` given the partition's leader and ISR and whether its
    /// broker runs.
    pub fn of(broker: u32, leader: Option<u32>, isr: &[u32], alive: bool) -> ReplicaRole {
        if !alive || leader.is_none() {
            ReplicaRole::Offline
        } else if leader == Some(broker) {
            ReplicaRole::Leader
        } else if isr.contains(&broker) {
            ReplicaRole::InSync
        } else {
            ReplicaRole::OutOfSync
        }
    }
}

/// WCAG contrast ratio of two colours (1 to 21).
pub fn contrast(a: Srgba, b: Srgba) -> f32 {
    fn luminance(c: Srgba) -> f32 {
        let lin = |v: f32| {
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(c.red) + 0.7152 * lin(c.green) + 0.0722 * lin(c.blue)
    }
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// `c` a share `by` of the way to `to`, mixed as the renderer blends a translucent layer: in
/// linear light. Keeps `c`'s alpha.
pub fn blend(c: Srgba, to: Srgba, by: f32) -> Srgba {
    let (a, b) = (LinearRgba::from(c), LinearRgba::from(to));
    let mix = |x: f32, y: f32| x + (y - x) * by;
    let mut out = Srgba::from(LinearRgba::rgb(
        mix(a.red, b.red),
        mix(a.green, b.green),
        mix(a.blue, b.blue),
    ));
    out.alpha = c.alpha;
    out
}

impl Palette {
    /// The colour of `text` in a part of the scene dimmed by a layer of the background at
    /// `dim`: as far towards the background as the layer takes the fills under it, but no
    /// further than keeps `least` contrast with them (the panels' and the background's).
    pub fn dimmed_text(&self, text: Srgba, dim: f32, least: f32) -> Srgba {
        let fills = [blend(self.panel, self.background, dim), self.background];
        let reads = |by: f32| {
            let t = blend(text, self.background, by);
            fills.iter().all(|f| contrast(t, *f) >= least)
        };
        if reads(dim) {
            return blend(text, self.background, dim);
        }
        if !reads(0.0) {
            return text;
        }
        // The furthest share that still reads, by halving.
        let (mut lo, mut hi) = (0.0, dim);
        for _ in 0..16 {
            let mid = (lo + hi) / 2.0;
            if reads(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        blend(text, self.background, lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_told_apart_and_readable_in_both_themes() {
        for theme in [Theme::Dark, Theme::Light] {
            let p = Palette::of(theme);
            let roles = [p.leader, p.in_sync, p.out_of_sync, p.offline];
            for (i, a) in roles.iter().enumerate() {
                for b in &roles[i + 1..] {
                    assert_ne!(a, b, "{theme:?}");
                }
                assert!(
                    contrast(*a, p.background) >= 3.0,
                    "{theme:?}: {a:?} on background"
                );
            }
            assert!(contrast(p.text, p.background) >= 7.0, "{theme:?}: text");
        }
    }

    #[test]
    fn dimmed_text_keeps_three_to_one_on_dimmed_fills() {
        for theme in [Theme::Dark, Theme::Light] {
            let p = Palette::of(theme);
            for dim in [0.3, 0.55, 0.7] {
                let fills = [
                    blend(p.panel, p.background, dim),
                    blend(p.background, p.background, dim),
                ];
                for text in [p.text, p.muted, p.leader, p.in_sync, p.produce] {
                    let t = p.dimmed_text(text, dim, 3.0);
                    for f in fills {
                        let c = contrast(t, f);
                        assert!(c >= 2.99, "{theme:?} {dim}: {text:?} reads at {c:.2}");
                    }
                    // Dimmed, it is fainter than it was: nearer the background.
                    assert!(
                        contrast(t, p.background) <= contrast(text, p.background) + 1e-3,
                        "{theme:?} {dim}: {text:?} got stronger"
                    );
                }
            }
        }
    }

    #[test]
    fn role_of_a_replica() {
        assert_eq!(
            ReplicaRole::of(1, Some(1), &[1, 2], true),
            ReplicaRole::Leader
        );
        assert_eq!(
            ReplicaRole::of(2, Some(1), &[1, 2], true),
            ReplicaRole::InSync
        );
        assert_eq!(
            ReplicaRole::of(3, Some(1), &[1, 2], true),
            ReplicaRole::OutOfSync
        );
        assert_eq!(ReplicaRole::of(1, None, &[1], true), ReplicaRole::Offline);
        assert_eq!(
            ReplicaRole::of(2, Some(1), &[1, 2], false),
            ReplicaRole::Offline
        );
    }
}
