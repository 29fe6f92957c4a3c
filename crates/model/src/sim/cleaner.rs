//! The log cleaner: each broker's cleaner thread compacts the logs whose `cleanup.policy` includes
//! `compact` (`LogCleaner`, `LogCleanerManager`). It takes the dirtiest log whose bytes written
//! since its last cleaning are more than `min.cleanable.dirty.ratio` of it, keeps the latest
//! record of each key below the first offset it may not clean (the active segment, the high
//! watermark, `min.compaction.lag.ms`), removes tombstones once `delete.retention.ms` has passed
//! since a cleaning first kept them, and merges the cleaned segments. With nothing dirty enough
//! it sleeps `log.cleaner.backoff.ms`. After each look it also deletes the old segments of its
//! compacted logs, which the retention task leaves to it (`LogManager.cleanupLogs`).
//!
//! A removed record keeps its place in the log, which replicas share: each replica marks what its
//! own cleaner removed ([`Cleaned`]), and what reads its log skips those places, as Kafka's
//! readers find the offsets missing.

use std::collections::HashMap;

use bevy_ecs::prelude::*;

use super::Runtime;
use super::chunked::CHUNK;
use super::clock::Standing;
use super::cluster::{Partition, Record, Replica};
use super::events::EventKind;
use super::keys::Key;
use super::ledger::AckLedger;
use super::retention::{LogManager, task_due};
use super::segments::LogConfig;

/// What compaction removed from one replica's log, and where its cleaner got to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// The first offset not cleaned yet (the `cleaner-offset-checkpoint` file); `None` before
    /// the first cleaning, which starts at the log start.
    checkpoint: Option<u64>,
    /// The offset of the first bit of `words`: a multiple of 64, at or below the log start.
    base: u64,
    /// One bit per offset from `base`, set where a cleaning removed the record.
    words: Vec<u64>,
    /// The tombstones' delete horizons, by the cleaning that first kept them: each entry's
    /// tombstones lie from the previous entry's end up to its own end (Kafka writes the horizon
    /// into each batch, `deleteHorizonMs`, when it first copies it).
    horizons: Vec<(u64, u64)>,
}

impl Cleaned {
    /// Whether compaction removed the record at `offset`.
    pub fn is_removed(&self, offset: u64) -> bool {
        let Some(i) = offset.checked_sub(self.base) else {
            return false;
        };
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn remove(&mut self, offset: u64) {
        debug_assert!(offset >= self.base);
        let i = offset - self.base;
        let word = (i / 64) as usize;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (i % 64);
    }

    /// Where `n` records from `from` end, at most at `to`, and the runs of offsets among them
    /// whose records compaction removed: what a fetch of `n` records returns.
    pub fn records_from(&self, from: u64, to: u64, n: u64) -> (u64, Vec<std::ops::Range<u64>>) {
        let marked_to = self.base + 64 * self.words.len() as u64;
        let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
        let (mut at, mut left) = (from, n);
        while at < to && (left > 0 || self.is_removed(at)) {
            if at >= marked_to {
                at += to.saturating_sub(at).min(left);
                break;
            }
            if self.is_removed(at) {
                match runs.last_mut() {
                    Some(run) if run.end == at => run.end += 1,
                    _ => runs.push(at..at + 1),
                }
            } else {
                left -= 1;
            }
            at += 1;
        }
        (at, runs)
    }

    /// The runs of offsets from `from` up to `to` whose records compaction removed.
    pub fn removed_runs(&self, from: u64, to: u64) -> Vec<std::ops::Range<u64>> {
        let marked_to = self.base + 64 * self.words.len() as u64;
        let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
        for offset in (from.max(self.base)..to.min(marked_to)).filter(|o| self.is_removed(*o)) {
            match runs.last_mut() {
                Some(run) if run.end == offset => run.end += 1,
                _ => runs.push(offset..offset + 1),
            }
        }
        runs
    }

    /// The first offset its next cleaning looks at as dirty, if it has been cleaned.
    pub fn checkpoint(&self) -> Option<u64> {
        self.checkpoint
    }

    /// The delete horizon of a tombstone at `offset`, once a cleaning has kept it.
    fn horizon(&self, offset: u64) -> Option<u64> {
        let i = self.horizons.partition_point(|(end, _)| *end <= offset);
        self.horizons.get(i).map(|(_, horizon)| *horizon)
    }

    /// The log start moved to `log_start`: nothing below it is marked any more.
    pub fn drop_front(&mut self, log_start: u64) {
        let base = log_start - log_start % 64;
        if base <= self.base {
            return;
        }
        let gone = ((base - self.base) / 64) as usize;
        self.words.drain(..gone.min(self.words.len()));
        self.base = base;
        self.horizons.retain(|(end, _)| *end > log_start);
    }

    /// The log was cut back to `offset` (`LogCleanerManager.maybeTruncateCheckpoint`: the
    /// checkpoint never stays past the log's end).
    pub fn truncate(&mut self, offset: u64) {
        self.checkpoint = self.checkpoint.map(|c| c.min(offset));
        let kept = offset.saturating_sub(self.base);
        self.words.truncate(kept.div_ceil(64) as usize);
        if let Some(last) = self.words.last_mut()
            && !kept.is_multiple_of(64)
        {
            *last &= (1 << (kept % 64)) - 1;
        }
        let i = self.horizons.partition_point(|(end, _)| *end <= offset);
        let start = i.checked_sub(1).map_or(0, |j| self.horizons[j].0);
        self.horizons.truncate(i + usize::from(start < offset));
        if let Some(last) = self.horizons.last_mut() {
            last.0 = last.0.min(offset);
        }
    }

    /// The log starts again at `offset` with nothing in it (a wiped disk, or a follower that
    /// fell behind its leader's log start).
    pub fn start_at(&mut self, offset: u64) {
        *self = Cleaned {
            base: offset - offset % 64,
            ..Cleaned::default()
        };
    }

    /// Whether compaction removed every record of chunk `k` of the log (its offsets from
    /// `k * CHUNK`).
    pub fn removed_chunk(&self, k: usize) -> bool {
        let Some(i) = ((k * CHUNK) as u64).checked_sub(self.base) else {
            return false;
        };
        // The base is a multiple of 64, so a chunk's bits lie in one word.
        let mask = ((1u64 << CHUNK) - 1) << (i % 64);
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & mask == mask)
    }

    /// A follower appended the records from `from` up to `to` of its leader's log: those the
    /// leader's cleaner had removed are not in the batches it fetched, so they are not in its
    /// log either. Returns whether there were any.
    pub fn copy_removed(&mut self, leader: &Cleaned, from: u64, to: u64) -> bool {
        let marked_to = leader.base + 64 * leader.words.len() as u64;
        let mut any = false;
        for offset in (from.max(leader.base)..to.min(marked_to)).filter(|o| leader.is_removed(*o)) {
            if offset >= self.base {
                self.remove(offset);
                any = true;
            }
        }
        any
    }
}

/// The range a log's next cleaning may take, and its bytes (`LogToClean`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToClean {
    pub first_dirty: u64,
    /// The base offset of the first segment it may not clean.
    pub first_uncleanable: u64,
    /// The bytes of the segments below the first dirty offset.
    pub clean_bytes: u64,
    /// The bytes of the segments from the first dirty offset up to the first uncleanable one.
    pub cleanable_bytes: u64,
}

impl ToClean {
    /// `LogCleanerManager.cleanableOffsets`, then `LogToClean`: from the checkpoint (or the log
    /// start, if it lies outside the log) up to the first offset the cleaner may not clean: the
    /// high watermark (the last stable offset), the active segment, and the first segment with
    /// a record newer than `min.compaction.lag.ms`. The range ends at a segment's base offset
    /// (`calculateCleanableBytes`).
    pub fn of(replica: &Replica, config: &LogConfig, now: u64) -> ToClean {
        let (log_start, log_end) = (replica.log_start_offset, replica.log_end_offset());
        let first_dirty = replica
            .cleaned
            .checkpoint
            .filter(|c| (log_start..=log_end).contains(c))
            .unwrap_or(log_start);
        let segments = &replica.segments;
        let lag = config.min_compaction_lag_ms;
        let too_recent = (lag > 0)
            .then(|| {
                segments
                    .closed_from(first_dirty)
                    .iter()
                    .find(|s| s.largest_timestamp().saturating_add(lag) > now)
                    .map(|s| s.base_offset)
            })
            .flatten();
        let uncleanable = [
            Some(replica.high_watermark),
            Some(segments.active().base_offset),
            too_recent,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(log_end)
        .max(first_dirty);
        let first_uncleanable = segments
            .closed_from(uncleanable)
            .first()
            .unwrap_or(segments.active())
            .base_offset;
        let bytes = |from, to| {
            segments
                .overlapping(from, to)
                .iter()
                .map(|s| s.bytes)
                .sum::<u64>()
        };
        ToClean {
            first_dirty,
            first_uncleanable,
            clean_bytes: bytes(0, first_dirty),
            cleanable_bytes: bytes(first_dirty.min(first_uncleanable), first_uncleanable),
        }
    }

    /// `LogCleanerManager.grabFilthiestCompactedLog`: a log with bytes whose dirty share passes
    /// `min.cleanable.dirty.ratio` (`max.compaction.lag.ms` is not modelled: it is off by
    /// default).
    pub fn cleanable(&self, config: &LogConfig) -> bool {
        let total = self.clean_bytes + self.cleanable_bytes;
        total > 0
            && config
                .min_cleanable_dirty_ratio
                .exceeded_by(self.cleanable_bytes, total)
    }

    /// Whether this log is dirtier than `other` (`LogToClean.compare`).
    fn dirtier_than(&self, other: &ToClean) -> bool {
        u128::from(self.cleanable_bytes) * u128::from(other.clean_bytes + other.cleanable_bytes)
            > u128::from(other.cleanable_bytes)
                * u128::from(self.clean_bytes + self.cleanable_bytes)
    }
}

/// What one cleaning of a log did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cleaning {
    /// The offsets it cleaned: from the log start up to the first it left dirty.
    pub from: u64,
    pub to: u64,
    /// Records it removed: older records of a key, and tombstones past their horizon.
    pub removed: u64,
    pub tombstones_removed: u64,
}

/// `Cleaner.doClean` on one replica's log: the latest offset of each key in the dirty range
/// (`buildOffsetMap`), then every record below the range's last one kept only if it is its key's
/// latest, and a tombstone only until its delete horizon (`shouldRetainRecord`); a tombstone kept
/// for the first time gets its horizon, `delete.retention.ms` from now (`MemoryRecords.filterTo`).
/// The segments are regrouped by size and hold only what was kept. The checkpoint moves to the
/// first offset left dirty.
pub fn clean(replica: &mut Replica, to_clean: &ToClean, config: &LogConfig, now: u64) -> Cleaning {
    let Replica {
        log,
        cleaned,
        segments,
        log_start_offset,
        ..
    } = replica;
    let log_start = *log_start_offset;
    let (first_dirty, first_uncleanable) = (to_clean.first_dirty, to_clean.first_uncleanable);
    let mut latest: HashMap<Key, u64> = HashMap::new();
    let mut last = None;
    for (offset, record) in
        (first_dirty..first_uncleanable).zip(log.iter_from(first_dirty as usize))
    {
        if cleaned.is_removed(offset) {
            continue;
        }
        if !record.key.is_none() {
            latest.insert(record.key, offset);
        }
        last = Some(offset);
    }
    let Some(last) = last else {
        // Nothing dirty to map: the checkpoint moves past the range.
        cleaned.checkpoint = Some(first_uncleanable);
        return Cleaning {
            from: log_start,
            to: first_uncleanable,
            removed: 0,
            tombstones_removed: 0,
        };
    };
    let end = last + 1;
    let (mut removed, mut tombstones_removed) = (0, 0);
    let mut remove = Vec::new();
    for (offset, record) in (log_start..end).zip(log.iter_from(log_start as usize)) {
        if cleaned.is_removed(offset) {
            continue;
        }
        // A record without a key is invalid in a compacted log (a broker refuses it).
        let is_latest =
            !record.key.is_none() && latest.get(&record.key).is_none_or(|found| offset >= *found);
        let keep = is_latest
            && (!record.is_tombstone() || cleaned.horizon(offset).is_none_or(|h| now < h));
        if !keep {
            remove.push(offset);
            removed += 1;
            if is_latest {
                tombstones_removed += 1;
            }
        }
    }
    for offset in remove {
        cleaned.remove(offset);
    }
    // The tombstones this cleaning kept for the first time: those past the last horizon's end.
    let horizon_end = cleaned.horizons.last().map_or(0, |(e, _)| *e);
    if end > horizon_end {
        cleaned
            .horizons
            .push((end, now.saturating_add(config.delete_retention_ms)));
    }
    // Horizons already passed remove their tombstones alike: they merge into one.
    while cleaned.horizons.len() > 1 && cleaned.horizons[0].1.max(cleaned.horizons[1].1) <= now {
        cleaned.horizons.remove(0);
    }
    cleaned.checkpoint = Some(end);
    let (log, cleaned) = (&*log, &*cleaned);
    segments.replace_cleaned(end, config.segment_bytes, |from, to| {
        (from..to)
            .zip(log.iter_from(from as usize))
            .filter(|(o, _)| !cleaned.is_removed(*o))
            .map(|(_, r)| u64::from(r.bytes()))
            .sum()
    });
    Cleaning {
        from: log_start,
        to: end,
        removed,
        tombstones_removed,
    }
}

/// The ledger lets go of its rows of the records in `vacated` (chunks of a log one replica just
/// vacated) where every replica of the partition removed them too.
fn forget_removed(
    partition: &Partition,
    vacated: &[usize],
    replicas: &Query<&Replica>,
    ledger: &mut AckLedger,
) {
    if vacated.is_empty() {
        return;
    }
    let logs = super::retention::logs_of(partition, replicas);
    for &k in vacated {
        if logs.iter().all(|r| r.cleaned.removed_chunk(k)) {
            let offsets = (k * CHUNK) as u64..((k + 1) * CHUNK) as u64;
            ledger.vacate_removed(partition.ordinal, offsets, |o| removed_everywhere(&logs, o));
        }
    }
}

/// Whether every one of a partition's replicas (`logs`) had compaction remove `offset`.
pub(super) fn removed_everywhere(logs: &[&Replica], offset: u64) -> bool {
    logs.iter().all(|r| r.cleaned.is_removed(offset))
}

// A chunk's removal bits lie in one word of `Cleaned::words`.
const _: () = assert!(64 % CHUNK == 0);

/// The memory of the records a cleaning removed goes wherever a whole chunk of the log's places
/// is removed (from `from` to `to`): the chunk is vacated ([`super::chunked::Chunked::vacate`]),
/// and freed once no other replica or checkpoint holds it. The places stay, removed. Returns the
/// chunks it vacated.
pub fn vacate_removed(replica: &mut Replica, from: u64, to: u64) -> Vec<usize> {
    let placeholder = Record::placeholder();
    ((from as usize).div_ceil(CHUNK)..to as usize / CHUNK)
        .filter(|k| replica.cleaned.removed_chunk(*k) && replica.log.vacate(*k, &placeholder))
        .collect()
}

/// The cleaner phase: each broker whose cleaner is due cleans its dirtiest compacted logs and
/// deletes their old segments; the ledger forgets what no replica keeps any more. Its rules'
/// context is the log manager's, which the retention phase shares.
pub(super) fn phase(mut rules: LogManager) {
    if rules.clean_logs() {
        rules.forget_expired();
    }
}

impl LogManager<'_, '_> {
    /// `CleanerThread.doWork` on each broker whose cleaner is due, in broker order: clean the
    /// filthiest log (`cleanFilthiestLog`), then delete the compacted logs' old segments
    /// (`deletableLogs`), again until no log is dirty enough; then sleep for the backoff. The
    /// model cleans at once, so the whole round is one instant. Returns whether a log start
    /// moved or a cleaning removed records: what the ledger may forget.
    fn clean_logs(&mut self) -> bool {
        let Self {
            runtime,
            cluster,
            ledger,
            brokers,
            partitions,
            replicas,
        } = self;
        let Runtime {
            clock,
            events,
            wake,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        let backoff = cluster.config.log_cleaner_backoff_ms;
        let mut gone = false;
        wake.clear(Standing::Cleaner);
        for &entity in &cluster.brokers {
            let mut broker = brokers.get_mut(entity).expect("broker entity");
            let next = broker.next_cleaner_check_ms;
            if !task_due(&broker, next, (wake, Standing::Cleaner), now) {
                continue;
            }
            let id = broker.id;
            // The broker's compacted logs, in partition order.
            let logs: Vec<(&Partition, Entity)> = partitions
                .iter_many(&cluster.partitions)
                .filter(|p| p.log.cleanup_policy.compacts())
                .filter_map(|p| Some((p, p.replica_on(id)?)))
                .collect();
            if logs.is_empty() {
                // No compacted log here: the cleaner's looks find nothing, and need no step.
                broker.next_cleaner_check_ms = now + backoff;
                continue;
            }
            // The model cleans at once: each log is cleaned at most once a look.
            let mut done = vec![false; logs.len()];
            loop {
                let mut filthiest: Option<(usize, ToClean)> = None;
                for (i, (partition, replica)) in logs.iter().enumerate() {
                    if done[i] {
                        continue;
                    }
                    let replica = replicas.get(*replica).expect("replica entity");
                    let to_clean = ToClean::of(replica, &partition.log, now);
                    if to_clean.cleanable(&partition.log)
                        && filthiest
                            .as_ref()
                            .is_none_or(|(_, f)| to_clean.dirtier_than(f))
                    {
                        filthiest = Some((i, to_clean));
                    }
                }
                if let Some((i, to_clean)) = filthiest {
                    done[i] = true;
                    let (partition, replica) = logs[i];
                    // The ledger finds a record sent with acks=0 by its id, anywhere in the
                    // log: a partition that took one keeps its removed records' memory.
                    let vacates = !ledger.took_acks_zero(partition.ordinal);
                    let (cleaning, vacated) = {
                        let mut replica = replicas.get_mut(replica).expect("replica entity");
                        let cleaning = clean(&mut replica, &to_clean, &partition.log, now);
                        let vacated = if vacates {
                            vacate_removed(&mut replica, cleaning.from, cleaning.to)
                        } else {
                            Vec::new()
                        };
                        (cleaning, vacated)
                    };
                    gone |= cleaning.removed > 0;
                    forget_removed(partition, &vacated, &replicas.as_readonly(), ledger);
                    events.push(
                        now,
                        EventKind::LogCleaned {
                            broker: id,
                            topic: cluster.topics[partition.topic].name.clone(),
                            partition: partition.index,
                            from_offset: cleaning.from,
                            to_offset: cleaning.to,
                            records_removed: cleaning.removed,
                            tombstones_removed: cleaning.tombstones_removed,
                        },
                    );
                }
                for (partition, replica) in &logs {
                    let mut replica = replicas.get_mut(*replica).expect("replica entity");
                    gone |= super::retention::delete_old_segments(
                        &mut replica,
                        partition,
                        id,
                        (cluster, events),
                        now,
                    );
                }
                if filthiest.is_none() {
                    break;
                }
            }
            broker.next_cleaner_check_ms = now + backoff;
            wake.standing_at(Standing::Cleaner, broker.next_cleaner_check_ms);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::CleanupPolicy;
    use crate::sim::Record;

    /// A compacted topic's settings with segments of three 100-byte records.
    fn compacted() -> LogConfig {
        LogConfig {
            cleanup_policy: CleanupPolicy::Compact,
            segment_bytes: 300,
            delete_retention_ms: 1_000,
            ..LogConfig::default()
        }
    }

    /// Appends one record a batch, at `now`, keyed by letter (`~` before it: a tombstone); the
    /// high watermark follows the log end.
    fn append(replica: &mut Replica, config: &LogConfig, keys: &str, now: u64) {
        for key in keys.split(' ') {
            let (tombstone, key) = match key.strip_prefix('~') {
                Some(k) => (true, k),
                None => (false, key),
            };
            let id = replica.log_end_offset();
            let record = Record::produced(
                id,
                Key::named(usize::from(key.as_bytes()[0] - b'a')),
                0,
                None,
                0,
                0,
                100,
            );
            let record = if tombstone {
                record.tombstone()
            } else {
                record
            };
            replica.append([record], 0, config, now, now);
        }
        replica.high_watermark = replica.log_end_offset();
    }

    /// The offsets the log still holds, each with its key's letter.
    fn kept(replica: &Replica) -> Vec<(u64, char)> {
        (0..replica.log_end_offset())
            .filter(|o| !replica.cleaned.is_removed(*o))
            .map(|o| {
                let key = replica.log.get(o as usize).expect("a record").key;
                let letter = (0..26).find(|i| Key::named(*i) == key).expect("a letter");
                (o, (b'a' + letter as u8) as char)
            })
            .collect()
    }

    fn segments(replica: &Replica) -> Vec<(u64, u64)> {
        replica
            .segments
            .iter()
            .map(|s| (s.base_offset, s.bytes))
            .collect()
    }

    #[test]
    fn compaction_keeps_the_latest_record_of_each_key_below_the_active_segment() {
        let config = compacted();
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        // Segments [0 a, 1 b, 2 a], [3 c, 4 b, 5 a], and the active one from 6.
        append(&mut replica, &config, "a b a c b a c", 0);
        let to_clean = ToClean::of(&replica, &config, 0);
        assert_eq!(
            (to_clean.first_dirty, to_clean.first_uncleanable),
            (0, 6),
            "the active segment is never cleaned"
        );
        assert!(to_clean.cleanable(&config), "all 600 bytes are dirty");
        let cleaning = clean(&mut replica, &to_clean, &config, 0);
        assert_eq!((cleaning.to, cleaning.removed), (6, 3));
        assert_eq!(kept(&replica), [(3, 'c'), (4, 'b'), (5, 'a'), (6, 'c')]);
        // Too big to merge (300 + 300 bytes before cleaning): each keeps its kept records' bytes.
        assert_eq!(segments(&replica), [(0, 0), (3, 300), (6, 100)]);
        assert_eq!(replica.cleaned.checkpoint(), Some(6));

        // Segment [6 c, 7 a, 8 a] closes: 300 dirty bytes against 300 clean ones is a ratio of
        // 0.5, which does not pass `min.cleanable.dirty.ratio` (it must be more).
        append(&mut replica, &config, "a a d", 10);
        let to_clean = ToClean::of(&replica, &config, 10);
        assert_eq!((to_clean.clean_bytes, to_clean.cleanable_bytes), (300, 300));
        assert!(!to_clean.cleanable(&config));
        // One more closed segment, [9 d, 10 a, 11 a]: 600 of 900 bytes are dirty.
        append(&mut replica, &config, "a a b", 20);
        let to_clean = ToClean::of(&replica, &config, 20);
        assert_eq!((to_clean.first_dirty, to_clean.first_uncleanable), (6, 12));
        assert!(to_clean.cleanable(&config));
        clean(&mut replica, &to_clean, &config, 20);
        // b's latest below 12 is 4, from the clean part: the dirty part has no b, so it stays.
        assert_eq!(
            kept(&replica),
            [(4, 'b'), (6, 'c'), (9, 'd'), (11, 'a'), (12, 'b')]
        );
        // `groupSegmentsBySize` by the bytes before cleaning: [0] (0) and [3] (300) fit in 300
        // and merge; [6] and [9] (300 each) stay alone.
        assert_eq!(
            segments(&replica),
            [(0, 100), (6, 100), (9, 200), (12, 100)]
        );
    }

    #[test]
    fn a_tombstone_outlives_the_cleaning_that_first_kept_it_by_delete_retention_ms() {
        let config = compacted();
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        // a is written, then deleted; b stays.
        append(&mut replica, &config, "a b ~a c", 0);
        let first = ToClean::of(&replica, &config, 100);
        let cleaning = clean(&mut replica, &first, &config, 100);
        // The tombstone is a's latest: it stays, with a horizon 1 s after this cleaning.
        assert_eq!((cleaning.removed, cleaning.tombstones_removed), (1, 0));
        assert_eq!(kept(&replica), [(1, 'b'), (2, 'a'), (3, 'c')]);
        // A cleaning before the horizon keeps it; one after removes it.
        for (now, kept_tombstone) in [(1_099, true), (1_100, false)] {
            append(&mut replica, &config, "c c c c c c", now);
            let to_clean = ToClean::of(&replica, &config, now);
            assert!(to_clean.cleanable(&config));
            let cleaning = clean(&mut replica, &to_clean, &config, now);
            assert_eq!(
                kept(&replica).contains(&(2, 'a')),
                kept_tombstone,
                "at {now} ms: {cleaning:?}"
            );
        }
    }

    #[test]
    fn min_compaction_lag_ms_keeps_recent_segments_dirty() {
        let config = LogConfig {
            min_compaction_lag_ms: 1_000,
            ..compacted()
        };
        let mut replica = Replica::new(Entity::PLACEHOLDER, 1);
        append(&mut replica, &config, "a a a", 0);
        append(&mut replica, &config, "a a a", 500);
        append(&mut replica, &config, "a", 900);
        // At 1000 ms only the first segment's newest record (0 ms) is 1000 ms old or more.
        let to_clean = ToClean::of(&replica, &config, 1_000);
        assert_eq!(to_clean.first_uncleanable, 3);
        // And none is before then.
        assert_eq!(ToClean::of(&replica, &config, 999).first_uncleanable, 0);
        // Nor past the high watermark.
        replica.high_watermark = 2;
        assert_eq!(ToClean::of(&replica, &config, 5_000).first_uncleanable, 0);
    }

    #[test]
    fn a_fetch_of_n_records_passes_over_removed_offsets() {
        let mut cleaned = Cleaned::default();
        for offset in [2, 3, 4, 6, 7] {
            cleaned.remove(offset);
        }
        assert_eq!(cleaned.records_from(0, 100, 3), (8, vec![2..5, 6..8]));
        let first_run = vec![std::ops::Range { start: 2, end: 5 }];
        assert_eq!(cleaned.records_from(0, 100, 2), (5, first_run.clone()));
        assert_eq!(cleaned.records_from(0, 5, 10), (5, first_run));
        // Past the marks, offsets are records.
        assert_eq!(cleaned.records_from(8, 100, 10), (18, vec![]));
        assert_eq!(cleaned.records_from(60, 100, 10), (70, vec![]));
    }

    #[test]
    fn removed_offsets_follow_the_log_start_and_truncation() {
        let mut cleaned = Cleaned::default();
        for offset in [3, 70, 130] {
            cleaned.remove(offset);
        }
        assert_eq!(cleaned.removed_runs(0, 200).len(), 3);
        assert_eq!(cleaned.removed_runs(0, 100), [3..4, 70..71]);
        cleaned.drop_front(100);
        // Offset 70 lies in the word kept for 64..128, below the log start but never read.
        assert!(cleaned.is_removed(130) && !cleaned.is_removed(3));
        cleaned.checkpoint = Some(140);
        cleaned.truncate(120);
        assert_eq!(cleaned.checkpoint(), Some(120));
        assert!(!cleaned.is_removed(130));
        assert!(cleaned.is_removed(70));
    }

    #[test]
    fn a_tombstone_horizon_belongs_to_the_cleaning_that_first_kept_it() {
        let mut cleaned = Cleaned {
            horizons: vec![(10, 1_000), (20, 5_000)],
            ..Cleaned::default()
        };
        assert_eq!(cleaned.horizon(9), Some(1_000));
        assert_eq!(cleaned.horizon(10), Some(5_000));
        assert_eq!(cleaned.horizon(20), None);
        cleaned.truncate(15);
        assert_eq!(cleaned.horizons, vec![(10, 1_000), (15, 5_000)]);
        cleaned.truncate(10);
        assert_eq!(cleaned.horizons, vec![(10, 1_000)]);
    }
}
