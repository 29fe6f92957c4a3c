//! A tour's contract with its run: what each beat `shows` happens within its span, and what it
//! says is `not_yet` has not happened when it ends. The run is played headless from the start;
//! each expectation gets the instant of the step that made it true (an event's instant, or the
//! step after which a state first holds), and a beat spanning `from_ms..to_ms` shows what became
//! true at an instant in that range: the scene at `to_ms` shows every step before it.

use crate::sim::Sim;
use crate::sim::cluster::{Cluster, Partition, Replica};
use crate::sim::consumer::Consumer;
use crate::sim::consumer_group::ConsumerGroup;
use crate::sim::events::EventKind;
use crate::sim::ledger::AckLedger;
use crate::tour::{Expect, Focus, Hold, Tour};
use crate::view::event_text::describe;
use crate::view::follow::{Picked, resolve};

/// What a broken contract says: the beat (from 1), and what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub beat: usize,
    pub why: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "beat {}: {}", self.beat, self.why)
    }
}

/// Which run of a lab (from 0) an expectation is about, and the expectation itself.
fn in_run(expect: &Expect) -> (usize, &Expect) {
    match expect {
        Expect::Run(n, inner) => (n.saturating_sub(1), inner),
        other => (0, other),
    }
}

/// Checks every beat's contract against the tour's runs. Returns what is broken, in beat order.
pub fn check(tour: &Tour) -> Result<Vec<Broken>, String> {
    let runs = tour.run_scenarios()?;
    let end = tour.beats.iter().map(|b| b.to_ms).max().unwrap_or(0);
    let mut broken = Vec::new();
    for (run, (label, scenario)) in runs.iter().enumerate() {
        let mut expectations: Vec<&Expect> = Vec::new();
        for beat in &tour.beats {
            for expect in beat.shows.iter().chain(&beat.not_yet).chain(&beat.hold_at) {
                let (n, inner) = in_run(expect);
                if n == run && !expectations.contains(&inner) {
                    expectations.push(inner);
                }
            }
        }
        if expectations.is_empty() {
            continue;
        }
        // Every instant at which each expectation happens (a state: the one it first holds).
        let instants = instants(tour, scenario, &expectations, end);
        let when = |e: &Expect| -> Vec<u64> {
            expectations
                .iter()
                .position(|x| *x == e)
                .map_or_else(Vec::new, |i| instants[i].iter().map(|(t, _)| *t).collect())
        };
        let name = if runs.len() > 1 {
            format!(" (run {:?})", label)
        } else {
            String::new()
        };
        for (i, beat) in tour.beats.iter().enumerate() {
            for expect in beat.shows.iter().chain(&beat.hold_at) {
                let (n, inner) = in_run(expect);
                if n != run {
                    continue;
                }
                let at = when(inner);
                if let Some(t) = at.iter().find(|t| (beat.from_ms..beat.to_ms).contains(*t)) {
                    // A moment that matters stays on screen long enough to take in, or is held.
                    let wall_ms = (beat.to_ms - t) as f64 / beat.speed;
                    if is_key_moment(inner)
                        && !beat.hold_at.contains(expect)
                        && wall_ms < MIN_WALL_MS
                    {
                        broken.push(Broken {
                            beat: i + 1,
                            why: format!(
                                "shows {inner:?}{name} for {:.1} s of wall time: hold it (`hold_at`) or give it {:.0} s",
                                wall_ms / 1000.0,
                                MIN_WALL_MS / 1000.0
                            ),
                        });
                    }
                    continue;
                }
                broken.push(Broken {
                    beat: i + 1,
                    why: match at.first() {
                        Some(t) => format!(
                            "shows {inner:?}{name}, which happens at {t} ms, outside {}..{} ms",
                            beat.from_ms, beat.to_ms
                        ),
                        None => format!("shows {inner:?}{name}, which never happens by {end} ms"),
                    },
                });
            }
            for expect in &beat.not_yet {
                let (n, inner) = in_run(expect);
                if n != run {
                    continue;
                }
                if let Some(t) = when(inner).first().filter(|t| **t < beat.to_ms) {
                    broken.push(Broken {
                        beat: i + 1,
                        why: format!(
                            "says {inner:?}{name} has not happened by its end ({} ms), but it did at {t} ms",
                            beat.to_ms
                        ),
                    });
                }
            }
        }
    }
    broken.sort_by_key(|b| b.beat);
    Ok(broken)
}

/// The instants at which each expectation happens in the run, up to `end_ms`, in order: every
/// one of an event's, with the event log's words for it, and the first of a state's.
fn instants(
    tour: &Tour,
    scenario: &crate::scenario::Scenario,
    expectations: &[&Expect],
    end_ms: u64,
) -> Vec<Vec<(u64, Option<String>)>> {
    let mut sim = Sim::new(scenario);
    let mut at: Vec<Vec<(u64, Option<String>)>> = vec![Vec::new(); expectations.len()];
    let mut record: Option<Picked> = None;
    let states: Vec<usize> = (0..expectations.len())
        .filter(|i| !is_event(expectations[*i]))
        .collect();
    while sim.now_ms() < end_ms {
        let now = sim.now_ms();
        sim.step();
        if states.iter().all(|i| !at[*i].is_empty()) {
            // Only events are left: the event log answers them at the end.
            sim.run_until(end_ms);
            break;
        }
        let world = sim.world();
        if record.is_none_or(|r| r.offset.is_none())
            && let Some(follow) = &tour.follow
        {
            record = resolve(world, follow);
        }
        for &i in &states {
            if at[i].is_empty() && state_holds(world, expectations[i], record) {
                at[i].push((now, None));
            }
        }
    }
    let events = &sim.world().resource::<crate::sim::Runtime>().events.events;
    for (i, expect) in expectations.iter().enumerate() {
        if is_event(expect) {
            at[i] = events
                .iter()
                .filter(|e| e.at_ms < end_ms && matches_event(expect, &e.kind))
                .map(|e| (e.at_ms, Some(describe(&e.kind).1)))
                .collect();
        }
    }
    at
}

/// Each beat's holds: the first instant within the beat at which each of its `hold_at` happens,
/// shown from the instant after (the scene at an instant shows every step before it), in order.
pub fn holds(tour: &Tour) -> Result<Vec<Vec<Hold>>, String> {
    let runs = tour.run_scenarios()?;
    let end = tour.beats.iter().map(|b| b.to_ms).max().unwrap_or(0);
    let mut holds: Vec<Vec<Hold>> = vec![Vec::new(); tour.beats.len()];
    for (run, (_, scenario)) in runs.iter().enumerate() {
        let expectations: Vec<&Expect> = tour
            .beats
            .iter()
            .flat_map(|b| &b.hold_at)
            .map(in_run)
            .filter(|(n, _)| *n == run)
            .map(|(_, e)| e)
            .collect();
        if expectations.is_empty() {
            continue;
        }
        let instants = instants(tour, scenario, &expectations, end);
        for (i, beat) in tour.beats.iter().enumerate() {
            for expect in beat.hold_at.iter().map(in_run).filter(|(n, _)| *n == run) {
                let k = expectations
                    .iter()
                    .position(|e| *e == expect.1)
                    .expect("listed above");
                if let Some((t, why)) = instants[k]
                    .iter()
                    .find(|(t, _)| (beat.from_ms..beat.to_ms).contains(t))
                {
                    holds[i].push(Hold {
                        at_ms: t + 1,
                        why: why.clone().unwrap_or_else(|| format!("{:?}", expect.1)),
                    });
                }
            }
            // Moments of one instant make one hold, which says them all.
            holds[i].sort_by_key(|h| h.at_ms);
            holds[i].dedup_by(|later, kept| {
                let same = later.at_ms == kept.at_ms;
                if same && !kept.why.contains(&later.why) {
                    kept.why = format!("{}; {}", kept.why, later.why);
                }
                same
            });
        }
    }
    Ok(holds)
}

/// The least wall time a moment that matters stays on screen unless the beat holds at it.
const MIN_WALL_MS: f64 = 3_000.0;

/// The moments a reader must see: an ISR shrinking, a broker fenced, a leader elected, a disk
/// lost, an offset committed.
fn is_key_moment(expect: &Expect) -> bool {
    matches!(
        expect,
        Expect::IsrShrink(..)
            | Expect::Fenced(_)
            | Expect::Elected(..)
            | Expect::UncleanElection(..)
            | Expect::Wiped(_)
            | Expect::Committed(..)
    )
}

fn is_event(expect: &Expect) -> bool {
    !matches!(
        expect,
        Expect::Fetched(..)
            | Expect::HighWatermark(..)
            | Expect::Acknowledged(..)
            | Expect::Consumed(..)
            | Expect::Committed(..)
            | Expect::ReadFromFollowers
    )
}

fn matches_event(expect: &Expect, kind: &EventKind) -> bool {
    match (expect, kind) {
        (
            Expect::IsrShrink(t, p),
            EventKind::IsrShrink {
                topic, partition, ..
            },
        )
        | (
            Expect::IsrExpand(t, p),
            EventKind::IsrExpand {
                topic, partition, ..
            },
        )
        | (
            Expect::Elected(t, p),
            EventKind::LeaderElected {
                topic, partition, ..
            },
        ) => t == topic && p == partition,
        (
            Expect::UncleanElection(t, p),
            EventKind::LeaderElected {
                topic,
                partition,
                unclean,
                ..
            },
        ) => *unclean && t == topic && p == partition,
        (Expect::LinkCut(x, y), EventKind::LinkCut { a, b }) => {
            (x, y) == (a, b) || (x, y) == (b, a)
        }
        (Expect::Crashed(x), EventKind::BrokerCrashed { broker })
        | (Expect::Wiped(x), EventKind::BrokerWiped { broker })
        | (Expect::Fenced(x), EventKind::BrokerFenced { broker })
        | (Expect::Stopped(x), EventKind::BrokerShutDown { broker }) => x == broker,
        (Expect::Rebalanced(g), EventKind::RebalanceCompleted { group, .. })
        | (Expect::Rebalanced(g), EventKind::GroupEpochBumped { group, .. }) => g == group,
        (Expect::PartitionsAdded(t), EventKind::PartitionsCreated { topic, .. })
        | (Expect::SegmentsDeleted(t), EventKind::SegmentsDeleted { topic, .. }) => t == topic,
        (Expect::OffsetReset(g), EventKind::OffsetReset { group, .. }) => g == group,
        _ => false,
    }
}

/// Whether a state expectation about the tour's record holds now.
fn state_holds(world: &bevy::prelude::World, expect: &Expect, record: Option<Picked>) -> bool {
    if *expect == Expect::ReadFromFollowers {
        return world
            .resource::<crate::sim::Runtime>()
            .metrics
            .records_read_from_followers
            > 0;
    }
    let Some(Picked {
        id,
        partition,
        offset,
    }) = record
    else {
        return false;
    };
    let cluster = world.resource::<Cluster>();
    let Some(p) = cluster
        .partitions
        .get(partition as usize)
        .and_then(|e| world.get::<Partition>(*e))
    else {
        return false;
    };
    let has = |entity: bevy::prelude::Entity| {
        offset.is_some_and(|o| {
            world
                .get::<Replica>(entity)
                .and_then(|r| r.log.get(o as usize))
                .is_some_and(|r| r.id() == id)
        })
    };
    match expect {
        Expect::Fetched(place, _) => {
            let replicas: Vec<bevy::prelude::Entity> = match place {
                Focus::Leader(..) => p.leader_replica().into_iter().collect(),
                Focus::Followers(..) => p
                    .assignment
                    .iter()
                    .zip(&p.replicas)
                    .filter(|(b, _)| p.leader != Some(**b))
                    .map(|(_, e)| *e)
                    .collect(),
                _ => p.replicas.clone(),
            };
            !replicas.is_empty() && replicas.into_iter().all(has)
        }
        Expect::HighWatermark(_) => {
            let hw = p
                .leader_replica()
                .and_then(|e| world.get::<Replica>(e))
                .map(|r| r.high_watermark);
            matches!((offset, hw), (Some(o), Some(hw)) if hw > o)
        }
        Expect::Acknowledged(_) => world
            .resource::<AckLedger>()
            .ids_from(partition, 0)
            .any(|acked| acked == id),
        Expect::Consumed(Focus::Group(group), _) => {
            let Some(o) = offset else { return false };
            let index = cluster.groups.iter().position(|e| {
                world
                    .get::<ConsumerGroup>(*e)
                    .is_some_and(|g| &g.name == group)
            });
            cluster.consumers.iter().any(|e| {
                world.get::<Consumer>(*e).is_some_and(|c| {
                    Some(c.group as usize) == index
                        && c.assigned.get(&partition).is_some_and(|a| a.position > o)
                })
            })
        }
        Expect::Committed(Focus::Group(group), _) => {
            let Some(o) = offset else { return false };
            cluster.groups.iter().any(|e| {
                world.get::<ConsumerGroup>(*e).is_some_and(|g| {
                    &g.name == group && g.committed().get(&partition).is_some_and(|c| *c > o)
                })
            })
        }
        _ => false,
    }
}

/// Where a tour's record went: its key, and its topic, partition and offset in the log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Followed {
    pub key: Option<String>,
    pub topic: String,
    pub partition: u32,
    pub offset: u64,
}

/// Plays the tour's first run until its record is in a log, and says where.
pub fn followed(tour: &Tour) -> Result<Option<Followed>, String> {
    let Some(follow) = &tour.follow else {
        return Ok(None);
    };
    let (_, scenario) = tour.run_scenarios()?.into_iter().next().ok_or("no run")?;
    let end = tour.beats.iter().map(|b| b.to_ms).max().unwrap_or(0);
    let mut sim = Sim::new(&scenario);
    while sim.now_ms() < end {
        sim.step();
        let world = sim.world_mut();
        if let Some(picked) = resolve(world, follow)
            && let Some(offset) = picked.offset
        {
            let mut acks = crate::view::follow::AckScan::default();
            let trace = crate::view::follow::trace(world, picked, &mut acks);
            return Ok(trace.map(|t| Followed {
                key: t.key,
                topic: t.topic,
                partition: t.partition,
                offset,
            }));
        }
    }
    Ok(None)
}
