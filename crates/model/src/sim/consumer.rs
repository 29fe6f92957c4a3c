//! The consumer: joins its group, heartbeats, fetches its partitions from the leader (or a
//! follower in its rack, KIP-392), and runs the application's loop: `poll()` hands out up to
//! `max.poll.records` of the fetched records, the application processes them at its own rate,
//! then polls again. Everything that changes the assignment or commits happens inside a poll, as
//! in `ClassicKafkaConsumer.poll`. Eager members give up every partition when a rebalance starts;
//! cooperative members (KIP-429) give up only the partitions that move, then rejoin for the
//! second rebalance. Members of consumer-protocol groups (KIP-848) heartbeat with
//! ConsumerGroupHeartbeat alone and reconcile each assignment they are sent on their own
//! (`ConsumerMembershipManager`): commit, revoke what they lose, take what they gain, and
//! acknowledge with a heartbeat at once.
//!
//! This file is what a member holds (the `Consumer` component); its loop is `poll.rs`.

use std::collections::{BTreeMap, VecDeque};

use bevy_ecs::prelude::*;

use super::metadata::ClientMetadata;

/// `retry.backoff.ms` of the consumer: the pause before asking again when there is no
/// coordinator or leader to ask.
pub(super) const RETRY_BACKOFF_MS: u64 = 100;
/// The consumer's `request.timeout.ms`: a request unanswered this long is given up.
const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// A JoinGroup may wait at the coordinator for the whole rebalance timeout, so the client gives
/// it this much more (`AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE`).
const JOIN_GROUP_TIMEOUT_LAPSE_MS: u64 = 5_000;

/// How long the client waits for a JoinGroup: `max(request.timeout.ms, rebalance timeout + 5 s)`
/// (`AbstractCoordinator.sendJoinGroupRequest`); a consumer's rebalance timeout is its
/// `max.poll.interval.ms`.
fn join_group_timeout_ms(max_poll_interval_ms: u64) -> u64 {
    REQUEST_TIMEOUT_MS.max(max_poll_interval_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// Needs to (re)join.
    Unjoined,
    /// JoinGroup sent.
    Joining,
    /// SyncGroup sent.
    Syncing,
    Stable,
}

/// A consumer's progress on one partition.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    /// Next offset to fetch: the end of what was fetched.
    pub position: u64,
    /// Next offset a poll hands out: the consumer's position in Kafka's sense. Records from here
    /// to `position` wait in the fetch buffer.
    pub handed: u64,
    /// Next offset to process; what a commit records.
    pub processed: u64,
    /// Wire id of the fetch in flight.
    pub fetch_in_flight: Option<u64>,
    pub fetch_sent_ms: u64,
    /// Processed up to here when last committed.
    pub committed_sent: Option<u64>,
    /// The next fetch goes to the leader: a follower it read from (KIP-392) answered
    /// OFFSET_OUT_OF_RANGE, and the consumer cleared its preferred read replica
    /// (`SubscriptionState.clearPreferredReadReplica`).
    pub from_leader: bool,
}

/// What `poll()` throws when `auto.offset.reset` is `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerError {
    /// No committed offset to start from.
    NoOffsetForPartition,
    /// The position is out of range (below the log start, or past the end).
    OffsetOutOfRange,
}

impl ConsumerError {
    /// The exception's name, as the application sees it.
    pub fn name(self) -> &'static str {
        match self {
            ConsumerError::NoOffsetForPartition => "NoOffsetForPartitionException",
            ConsumerError::OffsetOutOfRange => "OffsetOutOfRangeException",
        }
    }

    /// Short enough for a member's row in the scene.
    pub fn short_name(self) -> &'static str {
        match self {
            ConsumerError::NoOffsetForPartition => "NoOffset",
            ConsumerError::OffsetOutOfRange => "OffsetOutOfRange",
        }
    }
}

#[derive(Clone, Component, Debug)]
pub struct Consumer {
    /// Index in `Cluster::consumers`: its node on the wire.
    pub index: u32,
    pub group: u32,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub alive: bool,
    /// Sends LeaveGroup and stops.
    pub leaving: bool,
    pub state: MemberState,
    pub generation: u32,
    /// Asked to rejoin (REBALANCE_IN_PROGRESS, or a cooperative revocation) while stable: the
    /// JoinGroup goes out at the next poll (`AbstractCoordinator.requestRejoin`).
    pub rejoin_requested: bool,
    /// The assignment a SyncGroup brought, applied at the next poll
    /// (`ConsumerCoordinator.onJoinComplete`), as ordinals.
    pub(super) pending_assignment: Option<Vec<u32>>,
    /// The assignment its last SyncGroup gave, which an eager sticky member still reports when it
    /// rejoins having revoked everything (`StickyAssignor.memberAssignment`, sent as user data).
    pub(super) last_assignment: Vec<u32>,
    /// As a classic group's leader: how many partitions its subscribed topics had when it last
    /// assigned them (`ConsumerCoordinator.assignmentSnapshot`). A Metadata answer with more asks
    /// for a rebalance (`rejoinNeededOrPending`).
    pub(super) assigned_partitions: Option<u32>,
    pub records_per_sec: u32,
    /// Partitions it consumes now, by ordinal.
    pub assigned: BTreeMap<u32, Progress>,
    /// Partitions with fetched records not handed out yet, in the order their fetches completed
    /// (`FetchBuffer`'s completed fetches).
    pub(super) buffered: VecDeque<u32>,
    /// What the last poll returned and the application has yet to process: (ordinal, end
    /// offset), in the order `FetchCollector.collectFetch` drained them.
    pub in_hand: VecDeque<(u32, u64)>,
    /// Offsets in what it fetched and has not processed yet that hold no record: compaction
    /// removed them. By partition ordinal, oldest first; usually none.
    pub(super) gaps: Vec<(u32, std::ops::Range<u64>)>,
    /// With `auto.offset.reset=none`, the exception `poll()` threw, and for which partition: the
    /// application stops.
    pub failed: Option<(ConsumerError, u32)>,
    /// Times its position was out of range and reset by `auto.offset.reset`.
    pub offset_resets: u64,
    /// Offsets those resets jumped over: records it will never read (for `latest`, records that
    /// may still exist among them).
    pub records_skipped: u64,
    /// Thousandths of a record it may process.
    pub(super) budget_milli: u64,
    pub(super) last_process_ms: u64,
    pub next_heartbeat_ms: u64,
    pub next_commit_ms: u64,
    /// The group request it waits an answer for (join, sync, leave).
    pub request_in_flight: Option<u64>,
    pub(super) heartbeat_in_flight: Option<u64>,
    pub(super) commit_in_flight: Option<u64>,
    /// When the join/sync/leave, heartbeat and commit in flight were sent.
    pub(super) sent_ms: [u64; 3],
    /// The generation the heartbeat and the commit in flight were sent with: an error about a
    /// generation the member has since left behind is ignored (`generationUnchanged`).
    pub(super) sent_generation: [u32; 2],
    /// Wait before asking again (no coordinator, an error).
    pub(super) retry_at_ms: u64,
    /// Consumer protocol: the heartbeat interval the coordinator sets.
    pub heartbeat_interval_ms: u64,
    /// Consumer protocol: the assignment the coordinator last sent, until it is reconciled
    /// (`AbstractMembershipManager.currentTargetAssignment`).
    pub target_assignment: Option<Vec<u32>>,
    /// Consumer protocol: partitions being revoked; they are neither fetched nor handed out
    /// (`markPendingRevocationToPauseFetching`).
    pub revoking: Vec<u32>,
    /// The commit that must succeed before the assignment changes was sent, and is retried on a
    /// retriable error until then: a classic member's before it rejoins (`onJoinPrepare`'s
    /// `joinPrepareTimer`), a consumer-protocol member's before it reconciles
    /// (`maybeAutoCommitSyncBeforeRevocation`'s deadline). Both are the rebalance timeout.
    pub(super) prepare_until_ms: Option<u64>,
    /// The last commit failed with a retriable error (the coordinator moved or could not write
    /// it, the request timed out; in the consumer protocol also STALE_MEMBER_EPOCH).
    pub(super) commit_failed: bool,
    /// Consumer protocol: the last heartbeat failed, so the next is a full request
    /// (`AbstractHeartbeatRequestManager.resetHeartbeatState`).
    pub(super) heartbeat_full: bool,
    /// Consumer protocol: a heartbeat goes out at once, to join or to acknowledge a reconciled
    /// assignment (`shouldHeartbeatNow`: JOINING, ACKNOWLEDGING).
    pub heartbeat_now: bool,
    /// Who leads each partition (by ordinal), as far as it knows: it fetches there.
    pub metadata: ClientMetadata,
    /// Records processed in all.
    pub processed_total: u64,
    /// When the application last called `poll()`: it is in a poll whenever it has nothing in
    /// hand. `max.poll.interval.ms` counts from here.
    pub last_poll_ms: u64,
}

impl Consumer {
    pub fn new(
        index: u32,
        group: u32,
        number: u32,
        config: &crate::scenario::ConsumerGroupConfig,
        now: u64,
    ) -> Self {
        Consumer {
            index,
            group,
            member_id: format!("{}-{number}", config.name),
            instance_id: config
                .static_members
                .then(|| format!("{}-instance-{number}", config.name)),
            alive: true,
            leaving: false,
            state: MemberState::Unjoined,
            generation: 0,
            rejoin_requested: false,
            pending_assignment: None,
            last_assignment: Vec::new(),
            assigned_partitions: None,
            records_per_sec: config.records_per_sec,
            assigned: BTreeMap::new(),
            buffered: VecDeque::new(),
            in_hand: VecDeque::new(),
            gaps: Vec::new(),
            failed: None,
            offset_resets: 0,
            records_skipped: 0,
            budget_milli: 0,
            last_process_ms: now,
            next_heartbeat_ms: 0,
            next_commit_ms: now + config.auto_commit_interval_ms,
            request_in_flight: None,
            heartbeat_in_flight: None,
            commit_in_flight: None,
            sent_ms: [0; 3],
            sent_generation: [0; 2],
            retry_at_ms: 0,
            heartbeat_interval_ms: config.heartbeat_interval_ms(),
            target_assignment: None,
            revoking: Vec::new(),
            prepare_until_ms: None,
            commit_failed: false,
            heartbeat_full: false,
            heartbeat_now: false,
            // Its first Metadata request goes out at once.
            metadata: ClientMetadata {
                wanted: true,
                ..ClientMetadata::default()
            },
            processed_total: 0,
            last_poll_ms: now,
        }
    }

    /// The connection to a broker broke or a request timed out: forget it, and start over where
    /// it was a step of joining.
    pub fn request_failed(&mut self, wire_id: u64, now: u64) {
        if self.request_in_flight == Some(wire_id) {
            self.request_in_flight = None;
            if matches!(self.state, MemberState::Joining | MemberState::Syncing) {
                self.state = MemberState::Unjoined;
            }
            if self.leaving {
                self.alive = false;
            }
        }
        if self.heartbeat_in_flight == Some(wire_id) {
            self.heartbeat_in_flight = None;
            self.heartbeat_full = true;
            // A consumer-protocol join goes out again.
            if self.state == MemberState::Joining {
                self.state = MemberState::Unjoined;
            }
        }
        if self.commit_in_flight == Some(wire_id) {
            self.commit_in_flight = None;
            self.commit_failed = true;
        }
        for p in self.assigned.values_mut() {
            if p.fetch_in_flight == Some(wire_id) {
                p.fetch_in_flight = None;
                // The connection broke or timed out: its metadata may be stale.
                self.metadata.wanted = true;
            }
        }
        self.retry_at_ms = now + RETRY_BACKOFF_MS;
    }

    /// Gives up requests older than their timeout; returns when the next one would expire.
    pub(super) fn expire_requests(&mut self, now: u64, max_poll_interval_ms: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut expired = Vec::new();
        let group_timeout = if self.state == MemberState::Joining {
            join_group_timeout_ms(max_poll_interval_ms)
        } else {
            REQUEST_TIMEOUT_MS
        };
        let slots = [
            (self.request_in_flight, group_timeout),
            (self.heartbeat_in_flight, REQUEST_TIMEOUT_MS),
            (self.commit_in_flight, REQUEST_TIMEOUT_MS),
        ];
        for ((id, timeout), sent) in slots.iter().zip(self.sent_ms) {
            if let Some(id) = id {
                if now >= sent + timeout {
                    expired.push(*id);
                } else {
                    next = Some(next.map_or(sent + timeout, |n| n.min(sent + timeout)));
                }
            }
        }
        for p in self.assigned.values() {
            if let Some(id) = p.fetch_in_flight {
                if now >= p.fetch_sent_ms + REQUEST_TIMEOUT_MS {
                    expired.push(id);
                } else {
                    let t = p.fetch_sent_ms + REQUEST_TIMEOUT_MS;
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
        }
        for id in expired {
            self.request_failed(id, now);
        }
        next
    }

    /// Offsets processed since the last commit, as (ordinal, next offset to read).
    pub(super) fn uncommitted(&self) -> Vec<(u32, u64)> {
        self.assigned
            .iter()
            .filter(|(_, p)| p.committed_sent != Some(p.processed))
            .map(|(o, p)| (*o, p.processed))
            .collect()
    }

    /// The generation a commit may carry: only a stable member commits
    /// (`ConsumerCoordinator.sendOffsetCommitRequest`, `generationIfStable`).
    pub(super) fn stable_generation(&self) -> Option<u32> {
        (self.state == MemberState::Stable && self.generation > 0).then_some(self.generation)
    }

    /// Forgets the generation and rejoins as from scratch (`resetStateOnResponseError`,
    /// `resetGenerationOnLeaveGroup`): at the next poll it has lost every partition.
    pub(super) fn reset_generation(&mut self) {
        self.generation = 0;
        self.state = MemberState::Unjoined;
        self.rejoin_requested = false;
        self.pending_assignment = None;
        self.target_assignment = None;
        self.heartbeat_now = false;
    }

    /// Gives up every partition and what was fetched or handed out from them.
    pub(super) fn drop_partitions(&mut self) {
        self.assigned.clear();
        self.buffered.clear();
        self.in_hand.clear();
        self.gaps.clear();
        self.revoking.clear();
        self.prepare_until_ms = None;
    }

    /// `FetchCollector.collectFetch`: up to `max.poll.records` records, taken from the
    /// completed fetches in the order they arrived, each drained before the next; one left
    /// part-drained goes on at the next poll. Returns how many were handed out.
    pub(super) fn collect(&mut self, max_poll_records: u32) -> u64 {
        let max = u64::from(max_poll_records);
        let mut remaining = max;
        while remaining > 0 {
            let Some(&ordinal) = self.buffered.front() else {
                break;
            };
            let Some(p) = self
                .assigned
                .get_mut(&ordinal)
                .filter(|_| !self.revoking.contains(&ordinal))
            else {
                self.buffered.pop_front();
                continue;
            };
            let (end, n) = span(&self.gaps, ordinal, p.handed..p.position, remaining);
            if end > p.handed {
                p.handed = end;
                remaining -= n;
                self.in_hand.push_back((ordinal, p.handed));
            }
            if p.handed == p.position {
                self.buffered.pop_front();
            }
        }
        max - remaining
    }
}

/// Where `n` records from `offsets.start` end on partition `ordinal`, passing over the `gaps`
/// compaction left (offsets with no record), at most at `offsets.end`; and how many records that
/// is.
pub(super) fn span(
    gaps: &[(u32, std::ops::Range<u64>)],
    ordinal: u32,
    offsets: std::ops::Range<u64>,
    n: u64,
) -> (u64, u64) {
    let (mut at, to, mut left) = (offsets.start, offsets.end, n);
    for (_, gap) in gaps.iter().filter(|(o, _)| *o == ordinal) {
        if gap.end <= at {
            continue;
        }
        if left == 0 {
            break;
        }
        let start = gap.start.max(at);
        if start >= to {
            break;
        }
        let k = (start - at).min(left);
        at += k;
        left -= k;
        if at < start {
            return (at, n);
        }
        // A record's place compaction emptied takes nothing to read.
        at = gap.end.min(to);
    }
    let k = to.saturating_sub(at).min(left);
    (at + k, n - left + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_of_records_passes_over_the_offsets_compaction_emptied() {
        let gaps = [(0, 2..5), (1, 0..100), (0, 6..8)];
        // Offsets 0 1 [2 3 4] 5 [6 7] 8 9 of partition 0: the first three records end at 6, and
        // the empty places right after the third are passed over too.
        assert_eq!(span(&gaps, 0, 0..10, 3), (8, 3));
        assert_eq!(span(&gaps, 0, 0..10, 2), (5, 2));
        assert_eq!(span(&gaps, 0, 0..10, 10), (10, 5));
        assert_eq!(span(&gaps, 0, 3..4, 10), (4, 0));
        // Without gaps, offsets are records.
        assert_eq!(span(&gaps, 2, 5..10, 3), (8, 3));
    }

    /// `AbstractCoordinator.sendJoinGroupRequest`: the rebalance timeout plus 5 s, or the request
    /// timeout where that is longer.
    fn consumer() -> Consumer {
        let scenario = crate::scenario::Scenario::parse(
            r#"(name: "c", topics: [(name: "t", partitions: 2)],
                consumer_groups: [(name: "g", topics: ["t"])])"#,
            "test.ron",
        )
        .expect("a scenario");
        Consumer::new(0, 0, 1, &scenario.consumer_groups[0], 0)
    }

    /// `FetchCollector.collectFetch`: a poll drains the completed fetches in the order they
    /// arrived, each before the next, up to `max.poll.records`; the one it leaves part-drained is
    /// first at the next poll.
    #[test]
    fn a_poll_drains_completed_fetches_in_arrival_order_up_to_max_poll_records() {
        let mut c = consumer();
        for (ordinal, fetched) in [(0, 300), (1, 700)] {
            c.assigned.insert(
                ordinal,
                Progress {
                    position: fetched,
                    ..Progress::default()
                },
            );
        }
        // Partition 1's fetch completed first.
        c.buffered.extend([1, 0]);
        assert_eq!(c.collect(500), 500);
        assert_eq!(c.in_hand.drain(..).collect::<Vec<_>>(), [(1, 500)]);
        assert_eq!(c.collect(500), 500);
        assert_eq!(
            c.in_hand.drain(..).collect::<Vec<_>>(),
            [(1, 700), (0, 300)]
        );
        assert_eq!(c.collect(500), 0, "nothing left to hand out");
        assert!(c.buffered.is_empty());
        assert_eq!((c.assigned[&0].handed, c.assigned[&1].handed), (300, 700));
    }

    #[test]
    fn a_join_group_waits_the_rebalance_timeout_and_five_seconds() {
        assert_eq!(join_group_timeout_ms(300_000), 305_000);
        assert_eq!(join_group_timeout_ms(60_000), 65_000);
        assert_eq!(join_group_timeout_ms(10_000), REQUEST_TIMEOUT_MS);
    }
}
