//! What each thing on screen is and why it is there: the explanation shown when the pointer is
//! over it, written with the scenario's own settings and the model's numbers at that instant.

use crate::scenario::ClusterConfig;
use crate::view::event_text::clock;
use crate::view::palette::ReplicaRole;
use crate::view::snapshot::{MessageKind, Snapshot};

/// A thing on screen the pointer can be over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Controller,
    Broker(u32),
    Replica {
        ordinal: u32,
        broker: u32,
    },
    Producer(usize),
    Group(usize),
    Member {
        group: usize,
        index: usize,
    },
    /// A message on the wire, by its index in the snapshot.
    Message(usize),
    LagMonitor,
}

/// What the thing under the pointer is (a title) and why it is there (a paragraph), with the
/// scenario's own settings; `None` for a target the snapshot does not hold.
pub fn explain(s: &Snapshot, config: &ClusterConfig, target: Target) -> Option<(String, String)> {
    Some(match target {
        Target::Controller => (
            "KRaft controller".into(),
            format!(
                "The active controller keeps the cluster's metadata. Every broker sends it a \
                 heartbeat (broker.heartbeat.interval.ms, {}); a broker silent for \
                 broker.session.timeout.ms ({}) is fenced, and each partition it led gets a new \
                 leader chosen from its ISR.",
                clock(config.heartbeat_interval_ms),
                clock(config.session_timeout_ms)
            ),
        ),
        Target::Broker(b) => {
            let state = s.broker(b).map_or("", |b| b.state);
            (
                format!("Broker {b} ({state})"),
                "A broker stores one replica of each partition assigned to it. A leader replica \
                 takes produce requests and serves fetches; a follower fetches from its leader to \
                 stay in the ISR. Click a log's cell to follow its record; click elsewhere for \
                 crash, restart, wipe and isolate."
                    .into(),
            )
        }
        Target::Replica { ordinal, broker } => {
            let p = s.partitions.get(ordinal as usize)?;
            let r = p.replicas.iter().find(|r| r.broker == broker);
            let role = r.map_or(String::new(), |r| match r.role {
                _ if r.stale_leader.is_some() => format!(
                    "a zombie leader, replaced but unaware: cut off from the controller, it \
                     still takes itself for the leader of epoch {} and appends what producers \
                     send it, but its followers now fetch from broker {}. acks=1 writes it \
                     acknowledges are lost when it learns and truncates; acks=all writes time out",
                    r.stale_leader.unwrap_or_default(),
                    p.leader.map_or("-".to_string(), |l| l.to_string())
                ),
                ReplicaRole::Leader => {
                    "the leader: producers write here, followers fetch from here".into()
                }
                ReplicaRole::InSync => {
                    "a follower in the ISR: it has every committed record".into()
                }
                ReplicaRole::OutOfSync => format!(
                    "a follower out of the ISR: it was not caught up within \
                     replica.lag.time.max.ms ({}), so acks=all no longer waits for it",
                    clock(config.replica_lag_time_max_ms)
                ),
                ReplicaRole::Offline => {
                    "offline: its broker is down or the partition has no leader".into()
                }
            });
            let name = if p.internal {
                format!("__consumer_offsets-{}", p.index)
            } else {
                p.name()
            };
            (
                format!("{name} on broker {broker}"),
                format!(
                    "This replica is {role}.\nLog end offset (LEO) {}, high watermark (HW) {}; \
                     leader epoch {}, ISR {:?}, min.insync.replicas {}.\nEach cell is one offset: \
                     solid cells are committed (below the HW, readable by consumers), pale ones \
                     are written here but not yet on every ISR member.{}{}",
                    r.map_or(0, |r| r.log_end_offset),
                    r.map_or(0, |r| r.high_watermark),
                    p.leader_epoch,
                    p.isr,
                    p.min_insync_replicas,
                    if p.internal {
                        "\n__consumer_offsets holds the groups' committed offsets."
                    } else {
                        ""
                    },
                    if p.log.cleanup_policy.compacts() {
                        "\nThe topic is compacted: this broker's log cleaner keeps the latest \
                         record of each key. Low stubs are offsets whose record it removed; the \
                         offsets stay, and readers pass over them."
                    } else {
                        ""
                    }
                ),
            )
        }
        Target::Producer(i) => {
            let name = s.producers.get(i).map_or("", |p| p.name.as_str());
            (
                format!("Producer {name}"),
                "The producer picks a partition for each record (murmur2 of the key, or sticky \
                 without one), gathers records per partition into batches (batch.size, \
                 linger.ms) and sends each batch to that partition's leader. With acks=all the \
                 leader answers once every ISR member has the batch; with acks=1 at once."
                    .into(),
            )
        }
        Target::Group(g) => {
            let g = s.groups.get(g)?;
            let lag = crate::view::snapshot::or_dash(g.lag());
            (
                format!("Consumer group {}", g.name),
                // The whole status line, which the scene abbreviates when its box is narrow.
                format!(
                    "{}, {}, {} rebalances, lag {lag}. The members share the topic's \
                     partitions: each partition is read by one member. The group coordinator, the \
                     leader of the group's __consumer_offsets partition, {} and stores the offsets \
                     the members commit.",
                    g.state,
                    g.epochs(),
                    g.rebalances,
                    if g.target_epoch.is_some() {
                        "assigns the partitions itself (the consumer protocol, KIP-848): each \
                         member reconciles on its own at its heartbeats, giving partitions up \
                         before it is given new ones,"
                    } else {
                        "runs rebalances"
                    }
                ),
            )
        }
        Target::Message(i) => {
            let m = s.messages.get(i)?;
            let name = m.detail.unwrap_or(m.kind.name());
            let why = match m.kind {
                MessageKind::Produce => {
                    "A batch of records for one partition, sent to its leader. The leader appends \
                     it and answers at once (acks=0/1) or when every ISR member has it (acks=all)."
                }
                MessageKind::ProduceResponse if m.detail.is_some() => {
                    "An acks=0 request gets no answer: on an error (a broker that no longer \
                     leads, say) the broker closes the connection instead, so the producer \
                     asks for metadata and finds the new leader."
                }
                MessageKind::ProduceResponse => {
                    "The leader's answer: the batch's base offset, or an error such as \
                     NOT_ENOUGH_REPLICAS or NOT_LEADER_OR_FOLLOWER."
                }
                MessageKind::Fetch => &format!(
                    "A follower asks its leader for records from its log end offset; that offset \
                     tells the leader how far the follower has got. The leader may hold it up to \
                     replica.fetch.wait.max.ms ({}) until there is data.",
                    clock(config.replica_fetch_wait_max_ms)
                ),
                MessageKind::FetchResponse => {
                    "Records for the follower, and the leader's high watermark: followers learn \
                     the HW one fetch after it moves."
                }
                MessageKind::Heartbeat | MessageKind::HeartbeatResponse => {
                    "A broker tells the controller it is alive; one that misses heartbeats for \
                     broker.session.timeout.ms is fenced. A restarted broker first registers; \
                     while its old session is still valid the controller refuses it \
                     (DUPLICATE_BROKER_REGISTRATION) and it tries again with back-off."
                }
                MessageKind::Group | MessageKind::GroupResponse
                    if m.assignment.is_some() || m.detail == Some("ConsumerGroupHeartbeat") =>
                {
                    "The consumer protocol's heartbeat (KIP-848): the member reports its epoch \
                     and the partitions it owns; the answer brings its epoch and, when it \
                     changed, its assignment, which the member reconciles on its own: it gives \
                     up what it loses before it is given what others release."
                }
                MessageKind::Group | MessageKind::GroupResponse => {
                    "Between a consumer and its group coordinator: joining, syncing the \
                     assignment, heartbeats and committing offsets to __consumer_offsets."
                }
                MessageKind::ConsumerFetch | MessageKind::ConsumerFetchResponse => {
                    "A consumer fetches records from a partition's leader; it reads only up to \
                     the high watermark."
                }
            };
            let state = match m.wire.state {
                crate::sim::WireState::InFlight => String::new(),
                crate::sim::WireState::Held { until_ms } => {
                    format!(
                        "\nHeld at the receiver until {} at the latest.",
                        clock(until_ms)
                    )
                }
                crate::sim::WireState::Lost { at_ms } => {
                    format!("\nLost on a cut link at {}.", clock(at_ms))
                }
            };
            (
                format!(
                    "{name}: {} to {}",
                    node_name(s, m.wire.from),
                    node_name(s, m.wire.to)
                ),
                format!(
                    "{why}\nSent at {}, arrives at {}.{state}",
                    clock(m.wire.sent_ms),
                    clock(m.wire.arrive_ms)
                ),
            )
        }
        Target::LagMonitor => {
            // Every group's total, including those the scene's box has no room for.
            let totals: Vec<String> = s
                .groups
                .iter()
                .map(|g| {
                    format!(
                        "{} {} committed, {} its members' own",
                        g.name,
                        crate::view::snapshot::or_dash(g.lag()),
                        crate::view::snapshot::or_dash(g.consumer_lag())
                    )
                })
                .collect();
            (
                "Lag monitor".into(),
                format!(
                    "Lag now: {}. How far each group is behind, as kafka-consumer-groups \
                     --describe prints it: LAG = LOG-END-OFFSET - CURRENT-OFFSET, where the log \
                     end is the partition's high watermark (the end a consumer can read) and the \
                     current offset is the group's committed offset, read from its coordinator \
                     (\"-\" until the group commits one). Beside it, the members' own lag: the \
                     high watermark less each owner's position (the consumer's records-lag \
                     metric). Only a stable member commits, so committed lag climbs in every \
                     rebalance; the members' own lag shows whether they kept consuming.",
                    if totals.is_empty() {
                        "no group".to_string()
                    } else {
                        totals.join(", ")
                    }
                ),
            )
        }
        Target::Member { group, index } => {
            let m = s.groups.get(group).and_then(|g| g.members.get(index))?;
            (
                m.name.clone(),
                format!(
                    "A consumer of the group, {}. It reads {} from their leaders, processes the \
                     records and commits its position (enable.auto.commit, every \
                     auto.commit.interval.ms).",
                    if m.alive {
                        "running"
                    } else {
                        "dead: its session will time out"
                    },
                    if m.assigned.is_empty() {
                        "no partition now".to_string()
                    } else {
                        m.assigned.join(", ")
                    }
                ),
            )
        }
    })
}

fn node_name(s: &Snapshot, node: crate::sim::Node) -> String {
    use crate::sim::Node;
    match node {
        Node::Broker(b) => format!("broker {b}"),
        Node::Controller => "the controller".into(),
        Node::Producer(p) => s.producers.get(p as usize).map_or_else(
            || format!("producer {p}"),
            |p| format!("producer {}", p.name),
        ),
        Node::Consumer(c) => s
            .member_of(c)
            .and_then(|(g, i)| s.groups[g].members.get(i))
            .map_or_else(|| format!("consumer {c}"), |m| m.name.clone()),
    }
}
