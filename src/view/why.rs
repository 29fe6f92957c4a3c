//! Kafka's surprises, said where they happen: one table of short "why" notes, each about a
//! thing on screen, found in the model's state at an instant. The scene shows them beside the
//! thing; the explanation under the pointer ends with the same words.
//!
//! Each rule names where Kafka does it.

use crate::scenario::ClusterConfig;
use crate::view::event_text::clock;
use crate::view::explain::Target;
use crate::view::snapshot::Snapshot;

/// A note: what it is about, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub target: Target,
    pub text: String,
}

/// A span of time as a countdown reads: "4 min 12 s", "9.0 s".
pub fn span(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// Every note that holds at the snapshot's instant.
pub fn notes(s: &Snapshot, config: &ClusterConfig) -> Vec<Note> {
    let now = s.now_ms;
    let mut notes = Vec::new();
    let session = config.session_timeout_ms;
    for b in &s.brokers {
        let last = s
            .last_heartbeat_ms
            .get(b.id as usize - 1)
            .copied()
            .unwrap_or(0);
        let expires = last + session;
        let target = Target::Broker(b.id);
        if !b.alive && b.state != "starting" && !b.fenced && expires > now {
            // `BrokerHeartbeatManager`: the controller fences a broker whose session expired.
            notes.push(Note {
                target,
                text: format!(
                    "fenced at {}: broker.session.timeout.ms ({}) after its last heartbeat; until then its partitions keep it as leader",
                    clock(expires),
                    span(session)
                ),
            });
        } else if b.state == "starting" && !b.fenced && expires > now {
            // `ClusterControlManager.registerBroker`: a new incarnation is refused while the
            // old registration's session is valid (DuplicateBrokerRegistrationException).
            notes.push(Note {
                target,
                text: format!(
                    "cannot register until its old session expires at {} (DuplicateBrokerRegistrationException)",
                    clock(expires)
                ),
            });
        }
    }
    for p in s.partitions.iter().filter(|p| !p.internal) {
        for r in &p.replicas {
            if r.stale_leader.is_some() {
                // A leader cut off from the controller learns of its replacement only when it
                // next hears from it (`Partition.makeFollower` then truncates).
                notes.push(Note {
                    target: Target::Replica {
                        ordinal: p.ordinal,
                        broker: r.broker,
                    },
                    text: "a zombie leader: still taking acks=1 writes; they will be truncated"
                        .into(),
                });
            }
        }
        let Some(leader) = p.leader else { continue };
        let target = Target::Replica {
            ordinal: p.ordinal,
            broker: leader,
        };
        let isr = p.isr.len() as u32;
        let refused = s
            .producers
            .iter()
            .any(|pr| pr.topic == p.topic && pr.acks == "all");
        if refused && isr < p.min_insync_replicas {
            // `Partition.appendRecordsToLeader` refuses acks=all below min.insync.replicas.
            notes.push(Note {
                target,
                text: format!(
                    "acks=all writes refused: NOT_ENOUGH_REPLICAS, ISR {isr} < min.insync.replicas {}",
                    p.min_insync_replicas
                ),
            });
        }
        for pr in s.producers.iter().filter(|pr| pr.topic == p.topic) {
            if p.index >= pr.partitions && pr.metadata_refresh_ms > now {
                // The producer partitions by the count its metadata gives (`Metadata`,
                // refreshed every metadata.max.age.ms): a new partition waits for it.
                notes.push(Note {
                    target,
                    text: format!(
                        "no records from {} until it refreshes its metadata: {} (metadata.max.age.ms)",
                        pr.name,
                        span(pr.metadata_refresh_ms - now)
                    ),
                });
            }
        }
    }
    for (i, pr) in s.producers.iter().enumerate() {
        let Some(broker) = pr.answers_lost else {
            continue;
        };
        // `NetworkClient.handleTimedOutRequests`: the oldest request unanswered for
        // request.timeout.ms closes the connection, and every request on it is retried.
        let oldest = pr
            .in_flight
            .iter()
            .filter(|r| r.broker == broker)
            .map(|r| r.sent_ms)
            .min();
        if let Some(sent) = oldest
            && sent + pr.request_timeout_ms > now
        {
            notes.push(Note {
                target: Target::Producer(i),
                text: format!(
                    "no answers from broker {broker} until request.timeout.ms ({}) closes the connection at {}; then it retries",
                    span(pr.request_timeout_ms),
                    clock(sent + pr.request_timeout_ms)
                ),
            });
        }
    }
    for (i, g) in s.groups.iter().enumerate() {
        if g.protocol == "classic"
            && matches!(g.state, "PreparingRebalance" | "CompletingRebalance")
        {
            // `ClassicGroup.validateOffsetCommit`: commits are refused while the group rebalances.
            notes.push(Note {
                target: Target::Group(i),
                text: format!(
                    "{}: no commits until it is Stable again (REBALANCE_IN_PROGRESS); every member has stopped",
                    g.state
                ),
            });
        }
    }
    notes
}

/// The notes about one thing, one a line (for the explanation under the pointer).
pub fn about(notes: &[Note], target: Target) -> Option<String> {
    let lines: Vec<&str> = notes
        .iter()
        .filter(|n| n.target == target)
        .map(|n| n.text.as_str())
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Action, Scenario};
    use crate::sim::Sim;

    fn at(name: &str, actions: &[(u64, Action)], ms: u64) -> (Snapshot, ClusterConfig) {
        let scenario = Scenario::built_in(name).unwrap();
        let mut sim = Sim::new(&scenario);
        for (t, a) in actions {
            sim.run_until(*t);
            sim.act(a.clone());
        }
        sim.run_until(ms);
        (Snapshot::of(sim.world_mut()), scenario.cluster.clone())
    }

    #[test]
    fn a_crashed_broker_says_when_it_will_be_fenced_and_then_says_nothing() {
        let (s, config) = at("quickstart", &[(20_000, Action::CrashBroker(2))], 21_000);
        let n = notes(&s, &config);
        let text = about(&n, Target::Broker(2)).expect("a note on broker 2");
        let last = s.last_heartbeat_ms[1];
        assert!(
            text.starts_with(&format!(
                "fenced at {}",
                clock(last + config.session_timeout_ms)
            )),
            "{text}"
        );
        assert!(text.contains("broker.session.timeout.ms (9.0 s)"), "{text}");
        let (s, config) = at("quickstart", &[(20_000, Action::CrashBroker(2))], 40_000);
        assert_eq!(about(&notes(&s, &config), Target::Broker(2)), None);
    }

    #[test]
    fn a_new_partition_counts_down_to_the_producers_metadata_refresh() {
        let (s, config) = at(
            "quickstart",
            &[(20_000, Action::AddPartitions("orders".into(), 4))],
            30_000,
        );
        let n = notes(&s, &config);
        let p = s.partition("orders", 3).expect("orders-3");
        let text = about(
            &n,
            Target::Replica {
                ordinal: p.ordinal,
                broker: p.leader.unwrap(),
            },
        )
        .expect("a note on orders-3");
        assert!(text.contains("until it refreshes its metadata"), "{text}");
        assert!(text.contains("min"), "{text}");
        // The old partitions say nothing.
        let p0 = s.partition("orders", 0).unwrap();
        let t0 = Target::Replica {
            ordinal: p0.ordinal,
            broker: p0.leader.unwrap(),
        };
        assert_eq!(about(&n, t0), None);
    }

    #[test]
    fn spans_read_as_a_countdown() {
        assert_eq!(span(252_000), "4 min 12 s");
        assert_eq!(span(9_000), "9.0 s");
    }

    #[test]
    fn a_producer_whose_connection_hangs_says_when_its_requests_time_out() {
        let note = |ms: u64| {
            let (s, config) = at("idempotence", &[], ms);
            notes(&s, &config)
                .into_iter()
                .find(|n| n.target == Target::Producer(0))
        };
        assert_eq!(note(4_000), None, "before the answers are lost");
        // Its first request whose answer was lost left at 5.0xx s.
        let text = note(20_000)
            .expect("a note while the connection hangs")
            .text;
        assert!(text.contains("broker 1"), "{text}");
        assert!(text.contains("closes the connection at 35."), "{text}");
        assert_eq!(note(36_000), None, "after the timeout closed it");
    }
}
