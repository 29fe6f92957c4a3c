//! What is under the pointer: the part of the scene at a point, computed from the snapshot and
//! the layout alone (headless geometry; the window's pointer and the tests ask it alike).

use bevy::math::Vec2;

use super::explain::Target;
use super::layout::Layout;
use super::snapshot::Snapshot;

/// What is at a point of the scene (layout coordinates).
pub fn hit(s: &Snapshot, layout: &Layout, display_ms: f64, at: Vec2) -> Option<Target> {
    // Messages are drawn on top: the nearest one within a few pixels wins.
    let nearest = s
        .messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, layout.message_at(s, &m.wire, display_ms)?.0.distance(at))))
        .filter(|(_, d)| *d <= 10.0)
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((i, _)) = nearest {
        return Some(Target::Message(i));
    }
    if let Some(slot) = layout.replicas.iter().find(|s| s.rect.contains(at)) {
        return Some(Target::Replica {
            ordinal: slot.ordinal,
            broker: slot.broker,
        });
    }
    if let Some(i) = layout.brokers.iter().position(|r| r.contains(at)) {
        return Some(Target::Broker(i as u32 + 1));
    }
    if layout.controller.contains(at) {
        return Some(Target::Controller);
    }
    if layout.lag_monitor.is_some_and(|r| r.contains(at)) {
        return Some(Target::LagMonitor);
    }
    if let Some(i) = layout.producers.iter().position(|r| r.contains(at)) {
        return Some(Target::Producer(i));
    }
    for (g, r) in layout.groups.iter().enumerate() {
        if !r.contains(at) {
            continue;
        }
        let members = s.groups.get(g).map_or(0, |g| g.members.len());
        for index in 0..members {
            if layout.member(g, index).is_some_and(|m| m.contains(at)) {
                return Some(Target::Member { group: g, index });
            }
        }
        return Some(Target::Group(g));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::sim::Sim;

    /// A scenario's picture at an instant: its snapshot, its layout, the instant drawn.
    fn shown(name: &str, at_ms: u64) -> (Snapshot, Layout, f64) {
        let mut sim = Sim::new(&Scenario::built_in(name).unwrap());
        sim.run_until(at_ms);
        let s = Snapshot::of(sim.world_mut());
        let layout = Layout::of(&s, Vec2::new(1600.0, 900.0), 1.0);
        (s, layout, (at_ms - 1) as f64)
    }

    #[test]
    fn the_pointer_finds_what_is_under_it() {
        let (s, layout, ms) = shown("quickstart", 12_000);
        let hit = |at| hit(&s, &layout, ms, at);
        assert_eq!(hit(layout.controller.center()), Some(Target::Controller));
        let slot = layout.replicas[0];
        assert_eq!(
            hit(slot.rect.center()),
            Some(Target::Replica {
                ordinal: slot.ordinal,
                broker: slot.broker
            })
        );
        let b = layout.brokers[1];
        assert_eq!(
            hit(Vec2::new(b.center().x, b.max.y - 2.0)),
            Some(Target::Broker(2))
        );
        assert_eq!(hit(layout.producers[0].center()), Some(Target::Producer(0)));
        assert_eq!(hit(Vec2::new(1.0, 1.0)), None);
    }

    #[test]
    fn a_message_on_the_wire_is_found_where_it_is_drawn() {
        let (s, layout, ms) = shown("quickstart", 12_000);
        let (i, at) = s
            .messages
            .iter()
            .enumerate()
            .find_map(|(i, m)| Some((i, layout.message_at(&s, &m.wire, ms)?.0)))
            .expect("a message is drawn");
        let Some(Target::Message(found)) = hit(&s, &layout, ms, at + Vec2::new(3.0, 0.0)) else {
            panic!("no message found at {at}");
        };
        // Messages can overlap: the one found sits exactly as close.
        assert!(found == i || s.messages[found].wire.to == s.messages[i].wire.to);
    }
}
