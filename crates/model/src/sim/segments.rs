//! A replica's log as Kafka lays it out on disk: segments, of which only the newest (the active
//! one) takes appends, and the oldest of which retention deletes, moving the log start offset
//! forward (`UnifiedLog`, `LocalLog`, `LogSegment`). The records themselves stay in the replica's
//! log ([`super::cluster::Replica::log`]); a segment says where its records begin, how many bytes
//! they take and when they were written.

use crate::scenario::{CleanupPolicy, DirtyRatio, TopicConfig};

/// How a topic's log ages: its `segment.*`, `retention.*`, `cleanup.policy` and the cleaner's
/// settings (`LogConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogConfig {
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub segment_bytes: u64,
    pub segment_ms: u64,
    pub cleanup_policy: CleanupPolicy,
    pub min_cleanable_dirty_ratio: DirtyRatio,
    pub min_compaction_lag_ms: u64,
    pub delete_retention_ms: u64,
}

/// Kafka's defaults: 7 days' retention, no size limit, 1 GiB segments rolled weekly, `delete`;
/// a compacted log is cleaned once half of it is dirty, with no lag, and its tombstones are kept
/// a day.
impl Default for LogConfig {
    fn default() -> Self {
        use crate::scenario::defaults;
        LogConfig {
            retention_ms: defaults::retention_ms(),
            retention_bytes: defaults::retention_bytes(),
            segment_bytes: defaults::segment_bytes(),
            segment_ms: defaults::segment_ms(),
            cleanup_policy: CleanupPolicy::Delete,
            min_cleanable_dirty_ratio: defaults::min_cleanable_dirty_ratio(),
            min_compaction_lag_ms: defaults::min_compaction_lag_ms(),
            delete_retention_ms: defaults::delete_retention_ms(),
        }
    }
}

impl LogConfig {
    /// The settings with one changed (`kafka-configs --alter`).
    pub fn with(mut self, setting: crate::scenario::LogSetting) -> LogConfig {
        use crate::scenario::LogSetting::*;
        match setting {
            RetentionMs(v) => self.retention_ms = v,
            RetentionBytes(v) => self.retention_bytes = v,
            SegmentBytes(v) => self.segment_bytes = v,
            SegmentMs(v) => self.segment_ms = v,
            CleanupPolicy(p) => self.cleanup_policy = p,
            MinCleanableDirtyRatio(r) => self.min_cleanable_dirty_ratio = r,
            MinCompactionLagMs(v) => self.min_compaction_lag_ms = v,
            DeleteRetentionMs(v) => self.delete_retention_ms = v,
        }
        self
    }

    pub fn of(topic: &TopicConfig) -> LogConfig {
        LogConfig {
            retention_ms: topic.retention_ms,
            retention_bytes: topic.retention_bytes,
            segment_bytes: topic.segment_bytes,
            segment_ms: topic.segment_ms,
            cleanup_policy: topic.cleanup_policy,
            min_cleanable_dirty_ratio: topic.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: topic.min_compaction_lag_ms,
            delete_retention_ms: topic.delete_retention_ms,
        }
    }
}

/// One segment of a replica's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The offset of its first record.
    pub base_offset: u64,
    /// The bytes of its records (the model counts a record's bytes, not its batch's header).
    pub bytes: u64,
    /// The largest timestamp of the first batch appended to it (`rollingBasedTimestamp`).
    rolling_timestamp: Option<u64>,
    /// The largest timestamp of its records (`maxTimestampSoFar`).
    max_timestamp: Option<u64>,
    /// When it was created: an empty segment's file was last modified then.
    created_ms: u64,
}

impl Segment {
    fn new(base_offset: u64, now: u64) -> Segment {
        Segment {
            base_offset,
            bytes: 0,
            rolling_timestamp: None,
            max_timestamp: None,
            created_ms: now,
        }
    }

    /// `LogSegment.largestTimestamp`: its records' largest timestamp, or for an empty segment the
    /// time its file was last modified.
    pub fn largest_timestamp(&self) -> u64 {
        self.max_timestamp.unwrap_or(self.created_ms)
    }

    /// `LogSegment.shouldRoll` (the indexes never fill in the model): the append of
    /// `messages_bytes` would take it past `segment.bytes`, or it holds records and the appended
    /// ones are `segment.ms` newer than its first batch (`timeWaitedForRoll`; no
    /// `segment.jitter.ms`).
    fn should_roll(
        &self,
        config: &LogConfig,
        now: u64,
        max_timestamp: u64,
        messages_bytes: u64,
    ) -> bool {
        let waited = match self.rolling_timestamp {
            Some(first) => max_timestamp.saturating_sub(first),
            None => now.saturating_sub(self.created_ms),
        };
        let reached_roll_ms = waited > config.segment_ms;
        self.bytes > config.segment_bytes.saturating_sub(messages_bytes)
            || (self.bytes > 0 && reached_roll_ms)
    }
}

/// A replica's segments, oldest first; the last is the active one. There is always one. With
/// them, when retention last deleted some (the view fades what went).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segments(Vec<Segment>, Option<u64>);

impl Default for Segments {
    fn default() -> Self {
        Segments(vec![Segment::new(0, 0)], None)
    }
}

/// What a retention check deleted from one log: the log start offset before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    pub segments: usize,
    pub from: u64,
    pub to: u64,
}

impl Segments {
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Segment> + ExactSizeIterator {
        self.0.iter()
    }

    /// When retention last deleted segments of this log.
    pub fn last_deleted_ms(&self) -> Option<u64> {
        self.1
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The segment `offset` lies in (the oldest for an offset below it).
    pub fn holding(&self, offset: u64) -> &Segment {
        let i = self.0.partition_point(|s| s.base_offset <= offset);
        &self.0[i.saturating_sub(1)]
    }

    pub fn active(&self) -> &Segment {
        self.0.last().expect("a log has an active segment")
    }

    /// The bytes of every segment (`UnifiedLog.size`).
    pub fn size(&self) -> u64 {
        self.0.iter().map(|s| s.bytes).sum()
    }

    /// `UnifiedLog.maybeRoll`, then `LogSegment.append`: records of `bytes` bytes, the largest of
    /// whose timestamps is `max_timestamp`, appended at `first_offset`. Returns the new active
    /// segment's base offset if it rolled.
    pub fn append(
        &mut self,
        config: &LogConfig,
        now: u64,
        first_offset: u64,
        max_timestamp: u64,
        bytes: u64,
    ) -> Option<u64> {
        let rolled = self
            .active()
            .should_roll(config, now, max_timestamp, bytes)
            .then(|| self.roll(first_offset, now));
        let active = self.0.last_mut().expect("a log has an active segment");
        if active.bytes == 0 {
            active.rolling_timestamp = Some(max_timestamp);
        }
        active.bytes += bytes;
        active.max_timestamp = Some(
            active
                .max_timestamp
                .map_or(max_timestamp, |t| t.max(max_timestamp)),
        );
        rolled
    }

    /// `LocalLog.roll`: a new active segment from `at` (an empty active segment already there is
    /// replaced). Returns its base offset.
    pub fn roll(&mut self, at: u64, now: u64) -> u64 {
        if self.active().bytes == 0 {
            self.0.pop();
        }
        self.0.push(Segment::new(at, now));
        at
    }

    /// `LocalLog.truncateTo`: the segments that begin above `offset` go, and the one holding it
    /// keeps the bytes below it, which `bytes_between` counts. Its largest timestamp stays what it was: the
    /// model keeps no timestamp per record (Kafka reads it back from the time index).
    pub fn truncate_to(&mut self, offset: u64, now: u64, bytes_between: impl Fn(u64, u64) -> u64) {
        if offset < self.0[0].base_offset {
            self.truncate_fully_and_start_at(offset, now);
            return;
        }
        while self.0.len() > 1 && self.active().base_offset > offset {
            self.0.pop();
        }
        let active = self.0.last_mut().expect("a log has an active segment");
        active.bytes = bytes_between(active.base_offset, offset);
        if active.bytes == 0 {
            active.rolling_timestamp = None;
            active.max_timestamp = None;
            active.created_ms = now;
        }
    }

    /// `UnifiedLog.truncateFullyAndStartAt`: every segment goes, and an empty one starts at
    /// `offset`.
    pub fn truncate_fully_and_start_at(&mut self, offset: u64, now: u64) {
        self.0.clear();
        self.0.push(Segment::new(offset, now));
    }

    /// `UnifiedLog.deleteOldSegments` with the topic's `cleanup.policy` including `delete`: the
    /// segments wholly below the log start offset, then those over `retention.bytes`, then those
    /// older than `retention.ms`, each pass deleting the oldest segments while its rule holds
    /// ([`Segments::deletable`]). `log_start` moves to the first offset kept. Returns what went,
    /// if anything did.
    pub fn delete_old_segments(
        &mut self,
        config: &LogConfig,
        now: u64,
        log_start: &mut u64,
        high_watermark: u64,
        log_end: u64,
    ) -> Option<Deleted> {
        let before = *log_start;
        let mut deleted = 0;
        // `deleteLogStartOffsetBreachedSegments`: runs whatever the policy.
        let start = *log_start;
        let n = self.deletable(high_watermark, log_end, |_, next| {
            next.is_some_and(|n| n.base_offset <= start)
        });
        deleted += self.delete_segments(n, now, log_start, log_end);
        if config.cleanup_policy.deletes() {
            // `deleteRetentionSizeBreachedSegments`.
            let size = self.size();
            if config.retention_bytes >= 0 && size >= config.retention_bytes as u64 {
                let mut diff = size - config.retention_bytes as u64;
                let n = self.deletable(high_watermark, log_end, |segment, _| {
                    let delete = diff >= segment.bytes;
                    if delete {
                        diff -= segment.bytes;
                    }
                    delete
                });
                deleted += self.delete_segments(n, now, log_start, log_end);
            }
            // `deleteRetentionMsBreachedSegments`.
            if config.retention_ms >= 0 {
                let retention = config.retention_ms as u64;
                let n = self.deletable(high_watermark, log_end, |segment, _| {
                    now.saturating_sub(segment.largest_timestamp()) > retention
                });
                deleted += self.delete_segments(n, now, log_start, log_end);
            }
        }
        (deleted > 0).then_some(Deleted {
            segments: deleted,
            from: before,
            to: *log_start,
        })
    }

    /// `LocalLog.segments(from, to)`: the segments that hold any offset from `from` up to `to`
    /// (the one `from` lies in, then every one that begins before `to`).
    pub fn overlapping(&self, from: u64, to: u64) -> &[Segment] {
        if from >= to {
            return &[];
        }
        let first = self
            .0
            .partition_point(|s| s.base_offset <= from)
            .saturating_sub(1);
        let end = self.0.partition_point(|s| s.base_offset < to);
        &self.0[first..end.max(first)]
    }

    /// The closed segments from the one `from` lies in (`UnifiedLog.nonActiveLogSegmentsFrom`).
    pub fn closed_from(&self, from: u64) -> &[Segment] {
        let first = self
            .0
            .partition_point(|s| s.base_offset <= from)
            .saturating_sub(1);
        &self.0[first..self.0.len() - 1]
    }

    /// `Cleaner.groupSegmentsBySize` over the segments that begin before `end`, then the
    /// replacement of each group by one cleaned segment (`Cleaner.cleanSegments`,
    /// `UnifiedLog.replaceSegments`): consecutive segments are grouped while their bytes before
    /// cleaning stay within `segment.bytes` (the indexes' own limits never bind in the model),
    /// and each group becomes one segment at its first one's base offset, holding the bytes
    /// `kept(from, to)` counts as kept, last modified when its last segment was. Its largest
    /// timestamp is the group's: the model keeps no timestamp per record.
    pub fn replace_cleaned(
        &mut self,
        end: u64,
        segment_bytes: u64,
        kept: impl Fn(u64, u64) -> u64,
    ) {
        let cleaned = self.0.partition_point(|s| s.base_offset < end);
        let upper = |segments: &[Segment], i: usize| segments.get(i).map_or(end, |s| s.base_offset);
        let mut out: Vec<Segment> = Vec::with_capacity(self.0.len());
        let mut i = 0;
        while i < cleaned {
            let mut group = self.0[i];
            let mut bytes = group.bytes;
            let mut j = i + 1;
            while j < cleaned && bytes + self.0[j].bytes <= segment_bytes {
                let next = self.0[j];
                bytes += next.bytes;
                group.max_timestamp = group.max_timestamp.max(next.max_timestamp);
                group.created_ms = next.created_ms;
                j += 1;
            }
            group.bytes = kept(group.base_offset, upper(&self.0, j));
            out.push(group);
            i = j;
        }
        out.extend_from_slice(&self.0[cleaned..]);
        self.0 = out;
    }

    /// `UnifiedLog.deletableSegments`: how many of the oldest segments `predicate` says may go,
    /// stopping at the first it keeps. A segment goes only once the high watermark has passed
    /// all of it, so the log start never passes the high watermark; an empty active segment
    /// never goes.
    fn deletable(
        &self,
        high_watermark: u64,
        log_end: u64,
        mut predicate: impl FnMut(&Segment, Option<&Segment>) -> bool,
    ) -> usize {
        let mut n = 0;
        for (i, segment) in self.0.iter().enumerate() {
            let next = self.0.get(i + 1);
            let last_and_empty = next.is_none() && segment.bytes == 0;
            let upper_bound = next.map_or(log_end, |n| n.base_offset);
            if high_watermark >= upper_bound && predicate(segment, next) && !last_and_empty {
                n += 1;
            } else {
                break;
            }
        }
        n
    }

    /// `UnifiedLog.deleteSegments`: the `n` oldest segments go; deleting them all rolls a new
    /// active segment first, as a log always has one. The log start moves to the first segment
    /// kept (`incrementStartOffset`, `SegmentDeletion`). Returns `n`.
    fn delete_segments(&mut self, n: usize, now: u64, log_start: &mut u64, log_end: u64) -> usize {
        if n == 0 {
            return 0;
        }
        if n == self.0.len() {
            self.roll(log_end, now);
        }
        self.0.drain(..n);
        *log_start = (*log_start).max(self.0[0].base_offset);
        self.1 = Some(now);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(retention_ms: i64, retention_bytes: i64, segment_bytes: u64) -> LogConfig {
        LogConfig {
            retention_ms,
            retention_bytes,
            segment_bytes,
            segment_ms: 604_800_000,
            cleanup_policy: CleanupPolicy::Delete,
            ..LogConfig::default()
        }
    }

    /// Appends `n` records of 100 bytes, one a millisecond from `at`, one per batch.
    fn append(segments: &mut Segments, config: &LogConfig, from: u64, n: u64, at: u64) -> Vec<u64> {
        (0..n)
            .filter_map(|i| segments.append(config, at + i, from + i, at + i, 100))
            .collect()
    }

    #[test]
    fn the_active_segment_rolls_before_an_append_would_pass_segment_bytes() {
        let config = config(-1, -1, 250);
        let mut segments = Segments::default();
        // Two 100-byte records fit in 250 bytes; a third would pass it.
        let rolled = append(&mut segments, &config, 0, 7, 0);
        assert_eq!(rolled, vec![2, 4, 6]);
        let bases: Vec<u64> = segments.iter().map(|s| s.base_offset).collect();
        assert_eq!(bases, vec![0, 2, 4, 6]);
        assert_eq!(segments.size(), 700);
        assert_eq!(segments.active().bytes, 100);
    }

    #[test]
    fn the_active_segment_rolls_once_its_records_span_segment_ms() {
        let config = LogConfig {
            segment_ms: 10,
            ..config(-1, -1, 1 << 30)
        };
        let mut segments = Segments::default();
        // The first batch's timestamp is 0: a record 11 ms newer rolls (strictly more than 10).
        let rolled = append(&mut segments, &config, 0, 12, 0);
        assert_eq!(rolled, vec![11]);
        assert_eq!(segments.active().base_offset, 11);
    }

    #[test]
    fn retention_ms_deletes_the_segments_whose_newest_record_is_older_than_it() {
        let config = config(1_000, -1, 250);
        let mut segments = Segments::default();
        // Segments [0, 1] (newest at 1 ms), [2, 3] (3 ms), [4, 5] (5 ms), [6] (6 ms).
        append(&mut segments, &config, 0, 7, 0);
        let mut log_start = 0;
        // At 1005 ms the first two are more than 1000 ms old; [4, 5]'s newest is exactly 1000 ms
        // old, which is not more.
        let deleted = segments.delete_old_segments(&config, 1_005, &mut log_start, 7, 7);
        assert_eq!(
            deleted,
            Some(Deleted {
                segments: 2,
                from: 0,
                to: 4
            })
        );
        assert_eq!(log_start, 4);
        assert_eq!(segments.iter().next().unwrap().base_offset, 4);
    }

    #[test]
    fn nothing_the_high_watermark_has_not_passed_is_deleted() {
        let config = config(0, -1, 250);
        let mut segments = Segments::default();
        append(&mut segments, &config, 0, 7, 0);
        let mut log_start = 0;
        // The high watermark at 3 has passed only the first segment, [0, 1].
        let deleted = segments.delete_old_segments(&config, 10_000, &mut log_start, 3, 7);
        assert_eq!(deleted.map(|d| d.to), Some(2));
        assert_eq!(log_start, 2);
        // The high watermark at the log end lets every segment go, the active one included: a new
        // empty one is rolled at the log end first.
        let deleted = segments.delete_old_segments(&config, 10_000, &mut log_start, 7, 7);
        assert_eq!(deleted.map(|d| (d.segments, d.to)), Some((3, 7)));
        assert_eq!(segments.len(), 1);
        assert_eq!(segments.active().base_offset, 7);
        assert_eq!(segments.active().bytes, 0);
        // An empty active segment is never deleted.
        assert_eq!(
            segments.delete_old_segments(&config, 20_000, &mut log_start, 7, 7),
            None
        );
    }

    #[test]
    fn retention_bytes_deletes_the_oldest_segments_until_the_log_fits() {
        let config = config(-1, 350, 250);
        let mut segments = Segments::default();
        append(&mut segments, &config, 0, 7, 0);
        // 700 bytes against 350: of the excess of 350, the first segment (200) leaves 150, too
        // little for the next (200), which stays.
        let mut log_start = 0;
        let deleted = segments.delete_old_segments(&config, 0, &mut log_start, 7, 7);
        assert_eq!(deleted.map(|d| (d.segments, d.to)), Some((1, 2)));
        assert_eq!(segments.size(), 500);
    }

    #[test]
    fn compact_alone_deletes_nothing_by_retention() {
        let config = LogConfig {
            cleanup_policy: CleanupPolicy::Compact,
            ..config(0, 0, 250)
        };
        let mut segments = Segments::default();
        append(&mut segments, &config, 0, 7, 0);
        let mut log_start = 0;
        assert_eq!(
            segments.delete_old_segments(&config, 10_000, &mut log_start, 7, 7),
            None
        );
        // Segments wholly below a log start moved by other means go whatever the policy.
        log_start = 4;
        let deleted = segments.delete_old_segments(&config, 10_000, &mut log_start, 7, 7);
        assert_eq!(deleted.map(|d| (d.segments, d.from, d.to)), Some((2, 4, 4)));
    }

    #[test]
    fn truncation_drops_the_segments_above_and_recounts_the_one_it_lands_in() {
        let config = config(-1, -1, 250);
        let mut segments = Segments::default();
        append(&mut segments, &config, 0, 7, 0);
        segments.truncate_to(3, 50, |from, to| (to - from) * 100);
        let bases: Vec<u64> = segments.iter().map(|s| s.base_offset).collect();
        assert_eq!(bases, vec![0, 2]);
        assert_eq!(segments.active().bytes, 100);
        // Cut back to a segment's base, the segment stays, empty, and starts afresh.
        segments.truncate_to(2, 60, |from, to| (to - from) * 100);
        assert_eq!(segments.active().bytes, 0);
        assert_eq!(segments.active().largest_timestamp(), 60);
    }
}
