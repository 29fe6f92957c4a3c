//! Where a message is drawn at a sim time: the model gives each message the instant it left and
//! the instant it arrives, so any instant (paused, slowed, sought) has one exact position.

use bevy::math::Vec2;

use crate::sim::{Wire, WireState};

/// A message's state at one instant, as drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Motion {
    /// On its way: `t` from 0 (sender) to 1 (receiver).
    Travelling { t: f32 },
    /// Parked at the receiver (a produce waiting for acks=all, a fetch waiting for data).
    Waiting,
    /// Dropped on a cut link at `t` of the way; fades out until it would have arrived.
    Falling { t: f32, fade: f32 },
    /// Not on screen (not yet sent, or done).
    Gone,
}

/// The motion of a message at `now_ms` (fractional, for smooth animation between steps).
pub fn motion(wire: &Wire, now_ms: f64) -> Motion {
    let sent = wire.sent_ms as f64;
    let arrive = wire.arrive_ms as f64;
    let along = |at: f64| ((at - sent) / (arrive - sent).max(1.0)).clamp(0.0, 1.0) as f32;
    if now_ms < sent {
        return Motion::Gone;
    }
    match wire.state {
        WireState::Held { .. } => Motion::Waiting,
        WireState::Lost { at_ms } => {
            if now_ms >= arrive {
                Motion::Gone
            } else {
                let lost_at = at_ms as f64;
                let fade =
                    ((now_ms - lost_at) / (arrive - lost_at).max(1.0)).clamp(0.0, 1.0) as f32;
                Motion::Falling {
                    t: along(lost_at),
                    fade,
                }
            }
        }
        WireState::InFlight if now_ms > arrive => Motion::Gone,
        WireState::InFlight => Motion::Travelling { t: along(now_ms) },
    }
}

/// The point and opacity to draw a message at, between its sender's and receiver's anchors.
pub fn placement(from: Vec2, to: Vec2, motion: Motion) -> Option<(Vec2, f32)> {
    match motion {
        Motion::Travelling { t } => Some((from.lerp(to, t), 1.0)),
        Motion::Waiting => Some((to, 1.0)),
        Motion::Falling { t, fade } => Some((from.lerp(to, t), 1.0 - fade)),
        Motion::Gone => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Node;

    fn wire(state: WireState) -> Wire {
        Wire {
            id: 1,
            from: Node::Broker(1),
            to: Node::Broker(2),
            sent_ms: 100,
            arrive_ms: 110,
            state,
        }
    }

    #[test]
    fn a_message_moves_from_sender_to_receiver_over_its_latency() {
        let w = wire(WireState::InFlight);
        assert_eq!(motion(&w, 99.0), Motion::Gone);
        assert_eq!(motion(&w, 100.0), Motion::Travelling { t: 0.0 });
        assert_eq!(motion(&w, 105.0), Motion::Travelling { t: 0.5 });
        assert_eq!(motion(&w, 110.0), Motion::Travelling { t: 1.0 });
        let (at, alpha) = placement(Vec2::ZERO, Vec2::new(100.0, 0.0), motion(&w, 102.5)).unwrap();
        assert_eq!((at, alpha), (Vec2::new(25.0, 0.0), 1.0));
    }

    #[test]
    fn held_and_lost_messages() {
        let held = wire(WireState::Held { until_ms: 600 });
        assert_eq!(
            placement(Vec2::ZERO, Vec2::ONE, motion(&held, 300.0)),
            Some((Vec2::ONE, 1.0))
        );
        let lost = wire(WireState::Lost { at_ms: 104 });
        let Motion::Falling { t, fade } = motion(&lost, 107.0) else {
            panic!("a lost message falls where it was lost");
        };
        assert!((t - 0.4).abs() < 1e-6);
        assert!((fade - 0.5).abs() < 1e-6);
        assert_eq!(motion(&lost, 110.0), Motion::Gone);
    }
}
