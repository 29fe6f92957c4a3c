//! The ledger of acknowledged writes: every record a producer saw succeed (acknowledged, or sent
//! with acks=0). Which of them a run lost is `loss.rs`.

use bevy_ecs::prelude::*;

use std::ops::Range;

use super::chunked::{CHUNK, Chunked};
use super::keys::Key;
use crate::scenario::Acks;

/// One record a producer was told is written, as the ledger gives it back. Its producer is in
/// its id.
#[derive(Debug, Clone, Copy)]
pub struct AckedRecord {
    pub id: u64,
    /// The offset the leader answered with; [`NO_OFFSET`] for acks=0.
    offset: u64,
    pub key: Key,
    /// Index into `Cluster::partitions`.
    pub partition: u32,
    pub acks: Acks,
}

/// The offset of a record sent with acks=0, which no answer told.
const NO_OFFSET: u64 = u64::MAX;

/// A batch's base offset for acks=0, in its 32 bits.
const NO_BASE_OFFSET: u32 = u32::MAX;

impl AckedRecord {
    /// The offset the leader answered with; `None` for acks=0.
    pub fn offset(&self) -> Option<u64> {
        (self.offset != NO_OFFSET).then_some(self.offset)
    }

    /// The producer's index in the scenario.
    pub fn producer(&self) -> u32 {
        producer_of(self.id)
    }
}

/// What the ledger keeps of each record: 8 bytes, as a long run acknowledges millions. The
/// record's id above [`KEY_BITS`], and its key in the bits below where it fits there
/// ([`Key::compact`]); [`WIDE`] where it does not, the key then being in [`Acked::wide`].
type Row = u64;

/// The bits of a row that hold the key.
const KEY_BITS: u32 = 16;

/// What keeps a row's place once its chunk was let go ([`Acked::vacate_removed`]): its id part
/// is `2^48 - 1`, which no record reaches (the scenario limits keep a producer's send numbers
/// far below `2^40`).
const VACANT: Row = u64::MAX;

/// A row whose key has no compact form.
const WIDE: u16 = u16::MAX - 1;

// A record's id fits the bits above the key, and a log record's id bits: its producer's index,
// then its send number.
const _: () = assert!(
    (crate::scenario::limits::PRODUCERS as u64) << SEND_NUMBER_BITS <= 1 << (u64::BITS - KEY_BITS)
        && (crate::scenario::limits::PRODUCERS as u64) << SEND_NUMBER_BITS
            <= 1 << super::cluster::ID_BITS
);

fn row(id: u64, key: Key) -> Row {
    let compact = key.compact().filter(|c| *c != WIDE).unwrap_or(WIDE);
    (id << KEY_BITS) | u64::from(compact)
}

/// A run of one partition's acknowledged records at consecutive offsets, sent with the same
/// acks: where a batch's records went and how, as the producer's answer said
/// (`ProduceResponse`'s base offset for the batch). A partition's batches from one producer
/// follow one another in its log, so one run stands for many batches. 32-bit indices and
/// offsets: the records' memory cap (`limits::RECORD_MEMORY_BYTES`, a few tens of millions of
/// records) keeps them far from overflowing.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// The index of its first row.
    first: u32,
    /// The offset of its first record; [`NO_BASE_OFFSET`] for acks=0.
    base_offset: u32,
    acks: Acks,
}

/// A count or offset the records' memory cap keeps within 32 bits.
fn narrow(value: u64) -> u32 {
    u32::try_from(value).expect("the records' memory cap keeps the ledger under 2^32 records")
}

/// One partition's acknowledged records, in the order their batches were.
#[derive(Clone, Debug, Default)]
struct Acked {
    rows: Chunked<Row>,
    /// Every row's key from [`Acked::wide_from`] on, once a key with no compact form came.
    wide: Chunked<Key>,
    wide_from: Option<usize>,
    runs: Chunked<Run>,
    /// Some of its records were sent with acks=0.
    acks_zero: bool,
}

impl Acked {
    fn add_batch(
        &mut self,
        base_offset: Option<u64>,
        acks: Acks,
        records: impl IntoIterator<Item = (u64, Key)>,
    ) {
        let first = self.rows.len();
        self.acks_zero |= base_offset.is_none();
        for (id, key) in records {
            let row = row(id, key);
            if self.wide_from.is_none() && row as u16 == WIDE {
                self.wide_from = Some(self.rows.len());
                self.wide.start_at(self.rows.len(), &Key::NONE);
            }
            if self.wide_from.is_some() {
                self.wide.push(key);
            }
            self.rows.push(row);
        }
        if self.rows.len() == first {
            return;
        }
        let base_offset = base_offset.map_or(NO_BASE_OFFSET, narrow);
        let continues = self.runs.last().is_some_and(|run| {
            run.acks == acks
                && (base_offset == NO_BASE_OFFSET) == (run.base_offset == NO_BASE_OFFSET)
                && (base_offset == NO_BASE_OFFSET
                    || u64::from(base_offset)
                        == u64::from(run.base_offset) + (first as u64 - u64::from(run.first)))
        });
        if !continues {
            self.runs.push(Run {
                first: narrow(first as u64),
                base_offset,
                acks,
            });
        }
    }

    /// Row `i`'s record, `run` being the run it is in.
    fn record(&self, partition: u32, run: &Run, i: usize) -> Option<AckedRecord> {
        self.rows
            .get(i)
            .and_then(|row| self.record_of(partition, run, i, *row))
    }

    fn record_of(&self, partition: u32, run: &Run, i: usize, row: Row) -> Option<AckedRecord> {
        if row == VACANT {
            return None;
        }
        let key = match row as u16 {
            WIDE => *self.wide.get(i)?,
            compact => Key::from_compact(compact),
        };
        let offset = match run.base_offset {
            NO_BASE_OFFSET => NO_OFFSET,
            base => u64::from(base) + (i as u64 - u64::from(run.first)),
        };
        Some(AckedRecord {
            id: row >> KEY_BITS,
            offset,
            key,
            partition,
            acks: run.acks,
        })
    }

    /// The run row `i` is in: the last starting at or before it.
    fn run_of(&self, i: usize) -> Option<&Run> {
        let (mut lo, mut hi) = (self.runs.front(), self.runs.len());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.runs.get(mid)?.first as usize <= i {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.runs.get(lo)
    }

    fn iter(&self, partition: u32) -> impl Iterator<Item = AckedRecord> + '_ {
        let len = self.rows.len();
        let front = self.rows.front();
        let mut runs = self.runs.iter().peekable();
        std::iter::from_fn(move || {
            let run = runs.next()?;
            let end = runs.peek().map_or(len, |next| next.first as usize);
            Some((run, (run.first as usize).max(front), end))
        })
        .flat_map(move |(run, from, end)| {
            self.rows
                .iter_from(from)
                .take(end.saturating_sub(from))
                .zip(from..)
                .filter_map(move |(row, i)| self.record_of(partition, run, i, *row))
        })
    }

    /// Forgets the oldest records while every replica has deleted them (`log_start`, the
    /// lowest of their log starts) or compaction removed them from every replica
    /// (`removed_everywhere`); it stops at one sent with acks=0, whose offset nobody was told.
    fn forget_expired(&mut self, log_start: u64, removed_everywhere: impl Fn(u64) -> bool) {
        loop {
            let r = self.runs.front();
            let Some(&run) = self.runs.get(r) else {
                return;
            };
            if run.base_offset == NO_BASE_OFFSET {
                return;
            }
            let end = self
                .runs
                .get(r + 1)
                .map_or(self.rows.len() as u64, |next| u64::from(next.first));
            let (first, base) = (u64::from(run.first), u64::from(run.base_offset));
            let deleted = log_start.saturating_sub(base);
            let front = self.rows.front() as u64;
            let mut to = first.saturating_add(deleted).min(end).max(front);
            while to < end && removed_everywhere(base + (to - first)) {
                to += 1;
            }
            if to <= front {
                return;
            }
            self.rows.drop_front(to as usize);
            if self.wide_from.is_some() {
                self.wide.drop_front(to as usize);
            }
            if to < end {
                return;
            }
            self.runs.drop_front(r + 1);
        }
    }

    /// The offset the leader answered row `i` with; `None` for acks=0, or once forgotten.
    fn offset_of(&self, i: usize) -> Option<u64> {
        let run = self.run_of(i)?;
        (i >= self.rows.front() && i < self.rows.len() && run.base_offset != NO_BASE_OFFSET)
            .then(|| u64::from(run.base_offset) + (i as u64 - u64::from(run.first)))
    }

    /// Lets go of the chunks of rows whose records every replica's cleaner removed, among those
    /// at `offsets` (a chunk of the log every replica emptied). The rows are found from the run
    /// holding `offsets.start`, by its offset: a partition's runs rise in offset as they do in
    /// rows, but for acks settings mixed on one partition or a leader that moved, and rows found
    /// no other way keep their memory.
    fn vacate_removed(&mut self, offsets: Range<u64>, removed_everywhere: impl Fn(u64) -> bool) {
        let (mut lo, mut hi) = (self.runs.front(), self.runs.len());
        if lo == hi {
            return;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match self.runs.get(mid) {
                Some(run) if u64::from(run.base_offset) <= offsets.start => lo = mid,
                _ => hi = mid,
            }
        }
        let Some(&run) = self.runs.get(lo) else {
            return;
        };
        let (first, base) = (u64::from(run.first), u64::from(run.base_offset));
        if run.base_offset == NO_BASE_OFFSET || base > offsets.start {
            return;
        }
        // The rows of those offsets, if they follow one another from there.
        let from = first + (offsets.start - base);
        let to = from + (offsets.end - offsets.start);
        let sealed = self.rows.len() / CHUNK;
        for c in from as usize / CHUNK..(to as usize).div_ceil(CHUNK).min(sealed) {
            let rows = c * CHUNK..(c + 1) * CHUNK;
            if rows.start < self.rows.front()
                || !rows
                    .clone()
                    .all(|i| self.offset_of(i).is_some_and(&removed_everywhere))
            {
                continue;
            }
            self.rows.vacate(c, &VACANT);
            if self.wide_from.is_some_and(|w| w <= rows.start) {
                self.wide.vacate(c, &Key::NONE);
            }
        }
    }

    fn unshared_bytes(&self) -> usize {
        self.rows.unshared_bytes() + self.wide.unshared_bytes() + self.runs.unshared_bytes()
    }
}

/// Every record a producer saw succeed, partition by partition, each in the order their
/// batches were.
#[derive(Clone, Resource, Debug, Default)]
pub struct AckLedger {
    /// By partition index (`Cluster::partitions`).
    partitions: Vec<Acked>,
    /// A broker lost its disk during the run.
    pub disk_lost: bool,
}

impl AckLedger {
    /// A batch to `partition` whose records are `(id, key)`, answered with `base_offset` (none
    /// for acks=0).
    pub fn add_batch(
        &mut self,
        partition: u32,
        base_offset: Option<u64>,
        acks: Acks,
        records: impl IntoIterator<Item = (u64, Key)>,
    ) {
        let p = partition as usize;
        if self.partitions.len() <= p {
            self.partitions.resize_with(p + 1, Acked::default);
        }
        self.partitions[p].add_batch(base_offset, acks, records);
    }

    /// How many of the oldest records it has forgotten.
    pub fn forgotten(&self) -> usize {
        self.partitions.iter().map(|a| a.rows.front()).sum()
    }

    /// How many records it holds, forgotten ones included.
    pub fn len(&self) -> usize {
        self.partitions.iter().map(|a| a.rows.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a producer sent records to `partition` with acks=0: they have no offset, and
    /// are looked for by id.
    pub fn took_acks_zero(&self, partition: u32) -> bool {
        self.partitions
            .get(partition as usize)
            .is_some_and(|a| a.acks_zero)
    }

    /// How many records of `partition` it holds, forgotten ones included.
    pub fn len_of(&self, partition: u32) -> usize {
        self.partitions
            .get(partition as usize)
            .map_or(0, |a| a.rows.len())
    }

    /// The `i`th record acknowledged in `partition`; `None` once forgotten
    /// ([`AckLedger::forget_expired`]).
    pub fn get(&self, partition: u32, i: usize) -> Option<AckedRecord> {
        let acked = self.partitions.get(partition as usize)?;
        acked.record(partition, acked.run_of(i)?, i)
    }

    /// The partitions it holds records of, by index, and whether any of those was sent with
    /// acks=0.
    pub fn partitions(&self) -> impl Iterator<Item = (u32, bool)> + '_ {
        self.partitions
            .iter()
            .zip(0..)
            .filter(|(a, _)| a.rows.len() > a.rows.front())
            .map(|(a, partition)| (partition, a.acks_zero))
    }

    /// Every record not forgotten, partition by partition, each in the order acknowledged.
    pub fn iter(&self) -> impl Iterator<Item = AckedRecord> + '_ {
        self.partitions
            .iter()
            .zip(0..)
            .flat_map(|(acked, partition)| acked.iter(partition))
    }

    /// Forgets the oldest records of each partition while every replica of it has deleted
    /// them: `log_starts` gives, by partition index, the lowest log start offset of its
    /// replicas, and `removed_everywhere` whether compaction removed a partition's offset from
    /// every replica. Retention deleted them, or compaction removed them, as configured, so
    /// they are neither lost nor unavailable, and a long run's ledger keeps only what its logs
    /// keep.
    pub fn forget_expired(
        &mut self,
        log_starts: &[u64],
        removed_everywhere: impl Fn(u32, u64) -> bool,
    ) {
        for ((acked, log_start), partition) in self.partitions.iter_mut().zip(log_starts).zip(0..) {
            acked.forget_expired(*log_start, |offset| removed_everywhere(partition, offset));
        }
    }

    /// Lets go of the rows of `partition`'s records at `offsets` (a chunk of its log that every
    /// replica's cleaner emptied) where `removed_everywhere` says every replica removed them:
    /// their memory goes, and they are never judged, as a forgotten one is not.
    pub fn vacate_removed(
        &mut self,
        partition: u32,
        offsets: Range<u64>,
        removed_everywhere: impl Fn(u64) -> bool,
    ) {
        if let Some(acked) = self.partitions.get_mut(partition as usize) {
            acked.vacate_removed(offsets, removed_everywhere);
        }
    }

    /// The ids of `partition`'s records from its `from`th on.
    pub fn ids_from(&self, partition: u32, from: usize) -> impl Iterator<Item = u64> + '_ {
        self.partitions
            .get(partition as usize)
            .into_iter()
            .flat_map(move |a| a.rows.iter_from(from).map(|row| row >> KEY_BITS))
    }

    /// Roughly the bytes a clone costs of its own (see [`Chunked`]).
    pub fn unshared_bytes(&self) -> usize {
        size_of::<Acked>() * self.partitions.len()
            + self
                .partitions
                .iter()
                .map(Acked::unshared_bytes)
                .sum::<usize>()
    }
}

/// A record's id holds its producer's index above this many bits and its send number below.
pub(super) const SEND_NUMBER_BITS: u32 = 40;

/// The record's place in its producer's `send()` calls, from 0.
pub fn send_number(record_id: u64) -> u64 {
    record_id & ((1 << SEND_NUMBER_BITS) - 1)
}

/// The index of the producer that made a record.
pub fn producer_of(record_id: u64) -> u32 {
    (record_id >> SEND_NUMBER_BITS) as u32
}

/// The id of a producer's `send_number`th record.
pub fn record_id(producer: u32, send_number: u64) -> u64 {
    (u64::from(producer) << SEND_NUMBER_BITS) | send_number
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches of three records to partitions 0 and 1 in turn, answered at offsets 0, 3, 6...
    /// of each, then one acks=0 batch to partition 0.
    fn ledger() -> AckLedger {
        let mut ledger = AckLedger::default();
        for n in 0..20u64 {
            let (partition, base) = ((n % 2) as u32, n / 2 * 3);
            let ids = (0..3).map(|i| (n * 3 + i, Key::random(n)));
            ledger.add_batch(partition, Some(base), Acks::All, ids);
        }
        ledger.add_batch(0, None, Acks::Zero, [(1000, Key::NONE)]);
        ledger
    }

    #[test]
    fn forgets_each_partitions_records_every_replica_deleted_from_the_oldest_on() {
        let mut ledger = ledger();
        // Partition 0's first 30 records are gone everywhere; partition 1 keeps everything.
        ledger.forget_expired(&[30, 0], |_, _| false);
        assert_eq!(ledger.get(0, 29).map(|r| r.id), None);
        let kept: Vec<_> = ledger
            .iter()
            .take(3)
            .map(|r| (r.partition, r.id, r.offset()))
            .collect();
        assert_eq!(kept, [(0, 1000, None), (1, 3, Some(0)), (1, 4, Some(1))]);
        // Partition 1 deleted its first four records: its first batch goes, and one record of
        // its second.
        ledger.forget_expired(&[30, 4], |_, _| false);
        let kept: Vec<_> = ledger
            .iter()
            .skip(1)
            .take(2)
            .map(|r| (r.partition, r.id, r.offset()))
            .collect();
        assert_eq!(kept, [(1, 10, Some(4)), (1, 11, Some(5))]);
        assert_eq!(
            (ledger.len(), ledger.forgotten()),
            (61, 34),
            "its places stay"
        );
        assert_eq!(ledger.get(0, 30).map(|r| r.id), Some(1000));
        // A record sent with acks=0 has no offset to judge by: the ledger keeps it.
        ledger.forget_expired(&[u64::MAX, u64::MAX], |_, _| false);
        let ids: Vec<u64> = ledger.iter().map(|r| r.id).collect();
        assert_eq!(ids, [1000]);
    }

    #[test]
    fn rows_of_records_removed_everywhere_are_let_go_a_chunk_at_a_time() {
        let mut ledger = AckLedger::default();
        for n in 0..10u64 {
            let ids = (0..10).map(|i| (n * 10 + i, Key::random(i)));
            ledger.add_batch(0, Some(n * 10), Acks::All, ids);
        }
        // Offsets 30 to 69 are removed everywhere: only the rows of 32 to 63 fill a chunk.
        let removed = |o: u64| (30..70).contains(&o);
        ledger.vacate_removed(0, 32..64, removed);
        ledger.vacate_removed(0, 0..32, removed);
        let held: Vec<u64> = ledger.iter().map(|r| r.id).collect();
        assert_eq!(held, (0..32).chain(64..100).collect::<Vec<_>>());
        assert_eq!(ledger.get(0, 40).map(|r| r.id), None);
        assert_eq!(ledger.get(0, 64).map(|r| r.offset()), Some(Some(64)));
        // The places stay where they were.
        assert_eq!(ledger.len(), 100);
        assert_eq!(ledger.ids_from(0, 0).nth(64), Some(64));
        assert_eq!(ledger.ids_from(0, 0).position(|id| id == 40), None);
        // Forgetting from the front passes over the rows let go.
        ledger.forget_expired(&[30], |_, o| removed(o));
        assert_eq!(ledger.iter().next().map(|r| r.id), Some(70));
    }

    #[test]
    fn each_record_keeps_its_offset_acks_and_key_across_runs() {
        let mut ledger = ledger();
        // Not where partition 1's last batch ended: a run of its own. Then another acks.
        ledger.add_batch(1, Some(100), Acks::All, [(500, Key::random(7))]);
        ledger.add_batch(1, Some(101), Acks::One, [(501, Key::named(2))]);
        // A key with no compact form: this partition's keys are kept whole from here on.
        let wide = Key::sequence(0, 1 << 40);
        ledger.add_batch(1, Some(102), Acks::One, [(502, wide), (503, Key::NONE)]);
        let tail: Vec<_> = (28..34)
            .filter_map(|i| ledger.get(1, i))
            .map(|r| (r.id, r.offset(), r.acks, r.key))
            .collect();
        assert_eq!(
            tail,
            [
                (58, Some(28), Acks::All, Key::random(19)),
                (59, Some(29), Acks::All, Key::random(19)),
                (500, Some(100), Acks::All, Key::random(7)),
                (501, Some(101), Acks::One, Key::named(2)),
                (502, Some(102), Acks::One, wide),
                (503, Some(103), Acks::One, Key::NONE),
            ]
        );
        let by_iter: Vec<_> = ledger.iter().filter(|r| r.partition == 1).collect();
        assert_eq!(by_iter.len(), 34);
        assert_eq!(by_iter[32].key, wide);
        let ids: Vec<u64> = ledger.ids_from(1, 31).collect();
        assert_eq!(ids, [501, 502, 503]);
        // Forgetting past the wide key keeps what follows it readable.
        ledger.forget_expired(&[0, 103], |_, _| false);
        let left: Vec<_> = ledger
            .iter()
            .filter(|r| r.partition == 1)
            .map(|r| (r.id, r.key))
            .collect();
        assert_eq!(left, [(503, Key::NONE)]);
    }
}
