//! The ledger of acknowledged writes: every record a producer saw succeed (acknowledged, or sent
//! with acks=0). Which of them a run lost is `loss.rs`.

use bevy_ecs::prelude::*;

use crate::scenario::Acks;

/// One record a producer was told is written, as the ledger gives it back. Its producer is in
/// its id.
#[derive(Debug, Clone, Copy)]
pub struct AckedRecord {
    pub id: u64,
    /// The offset the leader answered with; [`NO_OFFSET`] for acks=0.
    offset: u64,
    pub key: super::keys::Key,
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

/// What the ledger keeps of each record: 16 bytes, as a long run acknowledges millions.
#[derive(Debug, Clone, Copy)]
struct Row {
    id: u64,
    key: super::keys::Key,
}

/// What it keeps once per batch: where the batch went and how, as the producer's answer said
/// (`ProduceResponse`'s base offset for the batch). A busy cluster's batches often hold one
/// record each (`large`: 5000 records/s over 64 partitions, `linger.ms` 5), so this is kept as
/// small as the row: 32-bit indices and offsets, which the records' memory cap
/// (`limits::RECORD_MEMORY_BYTES`, a few tens of millions of records) keeps far from overflowing.
#[derive(Debug, Clone, Copy)]
struct AckedBatch {
    /// The index of its first row.
    first: u32,
    /// The offset of its first record; [`NO_BASE_OFFSET`] for acks=0.
    base_offset: u32,
    partition: u16,
    acks: Acks,
}

// Every partition's index fits the batch's 16 bits, `__consumer_offsets`' own included.
const _: () = assert!(crate::scenario::limits::PARTITIONS < u16::MAX as u32 / 2);

impl AckedBatch {
    fn record(&self, row: &Row, index: u64) -> AckedRecord {
        let offset = match self.base_offset {
            NO_BASE_OFFSET => NO_OFFSET,
            base => u64::from(base) + (index - u64::from(self.first)),
        };
        AckedRecord {
            id: row.id,
            offset,
            key: row.key,
            partition: u32::from(self.partition),
            acks: self.acks,
        }
    }
}

/// A count or offset the records' memory cap keeps within 32 bits.
fn narrow(value: u64) -> u32 {
    u32::try_from(value).expect("the records' memory cap keeps the ledger under 2^32 records")
}

/// Every record a producer saw succeed, in the order their batches did.
#[derive(Clone, Resource, Debug, Default)]
pub struct AckLedger {
    rows: super::chunked::Chunked<Row>,
    batches: super::chunked::Chunked<AckedBatch>,
    /// A broker lost its disk during the run.
    pub disk_lost: bool,
}

// The ledger holds a row per acknowledged record and one per batch: keep them small.
const _: () = assert!(size_of::<Row>() == 16 && size_of::<AckedBatch>() == 12);

impl AckLedger {
    /// A batch to `partition` whose records are `(id, key)`, answered with `base_offset` (none
    /// for acks=0).
    pub fn add_batch(
        &mut self,
        partition: u32,
        base_offset: Option<u64>,
        acks: Acks,
        records: impl IntoIterator<Item = (u64, super::keys::Key)>,
    ) {
        let first = self.rows.len();
        self.rows
            .extend(records.into_iter().map(|(id, key)| Row { id, key }));
        if self.rows.len() > first {
            self.batches.push(AckedBatch {
                first: narrow(first as u64),
                base_offset: base_offset.map_or(NO_BASE_OFFSET, narrow),
                partition: u16::try_from(partition).expect("a partition's index fits 16 bits"),
                acks,
            });
        }
    }

    /// How many of the oldest records it has forgotten.
    pub fn forgotten(&self) -> usize {
        self.rows.front()
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `i`th record acknowledged; `None` once forgotten ([`AckLedger::forget_expired`]).
    pub fn get(&self, i: usize) -> Option<AckedRecord> {
        let row = self.rows.get(i)?;
        // The last batch starting at or before `i`.
        let (mut lo, mut hi) = (self.batches.front(), self.batches.len());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if u64::from(self.batches.get(mid)?.first) <= i as u64 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(self.batches.get(lo)?.record(row, i as u64))
    }

    /// Every record not forgotten, in order.
    pub fn iter(&self) -> impl Iterator<Item = AckedRecord> + '_ {
        let mut batches = self.batches.iter().peekable();
        let mut batch = None;
        let front = self.rows.front() as u64;
        self.rows.iter().zip(front..).map(move |(row, i)| {
            while let Some(next) = batches.next_if(|b| u64::from(b.first) <= i) {
                batch = Some(next);
            }
            batch.expect("every row is in a batch").record(row, i)
        })
    }

    /// Forgets the oldest records while every replica of their partition has deleted them:
    /// `log_starts` gives, by partition index, the lowest log start offset of its replicas.
    /// Retention deleted them as configured, so they are neither lost nor unavailable, and a
    /// long run's ledger keeps only what its logs keep. It stops at the first record still held
    /// somewhere, and at one sent with acks=0, whose offset nobody was told.
    pub fn forget_expired(&mut self, log_starts: &[u64]) {
        loop {
            let b = self.batches.front();
            let Some(&batch) = self.batches.get(b) else {
                return;
            };
            if batch.base_offset == NO_BASE_OFFSET {
                return;
            }
            let end = self
                .batches
                .get(b + 1)
                .map_or(self.rows.len() as u64, |next| u64::from(next.first));
            let log_start = log_starts
                .get(usize::from(batch.partition))
                .copied()
                .unwrap_or(0);
            let deleted = log_start.saturating_sub(u64::from(batch.base_offset));
            let expired_to = u64::from(batch.first).saturating_add(deleted).min(end);
            if expired_to <= self.rows.front() as u64 {
                return;
            }
            self.rows.drop_front(expired_to as usize);
            if expired_to < end {
                return;
            }
            self.batches.drop_front(b + 1);
        }
    }

    /// The ids of the records from the `from`th on.
    pub fn ids_from(&self, from: usize) -> impl Iterator<Item = u64> + '_ {
        self.rows.iter_from(from).map(|r| r.id)
    }

    /// Roughly the bytes a clone costs of its own (see [`super::chunked::Chunked`]).
    pub fn unshared_bytes(&self) -> usize {
        self.rows.unshared_bytes() + self.batches.unshared_bytes()
    }
}

/// A record's id holds its producer's index above this many bits and its send number below.
const SEND_NUMBER_BITS: u32 = 40;

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
    use crate::sim::keys::Key;

    /// Batches of three records to partitions 0 and 1 in turn, answered at offsets 0, 3, 6...
    /// of each, then one acks=0 batch to partition 0.
    fn ledger() -> AckLedger {
        let mut ledger = AckLedger::default();
        let key = Key::NONE;
        for n in 0..20u64 {
            let (partition, base) = ((n % 2) as u32, n / 2 * 3);
            let ids = (0..3).map(|i| (n * 3 + i, key));
            ledger.add_batch(partition, Some(base), Acks::All, ids);
        }
        ledger.add_batch(0, None, Acks::Zero, [(1000, key)]);
        ledger
    }

    #[test]
    fn forgets_the_records_every_replica_deleted_from_the_oldest_on() {
        let mut ledger = ledger();
        // Partition 1 keeps everything: nothing goes past its first batch.
        ledger.forget_expired(&[30, 0]);
        assert_eq!(ledger.iter().next().map(|r| r.id), Some(3));
        assert_eq!(ledger.get(2).map(|r| r.id), None);
        assert_eq!(
            ledger.get(3).map(|r| (r.partition, r.offset())),
            Some((1, Some(0)))
        );
        // Partition 1 deleted its first four records: its first batch goes, and one record of
        // its second; partition 0's second batch, below 30, goes between them.
        ledger.forget_expired(&[30, 4]);
        let kept: Vec<_> = ledger
            .iter()
            .take(3)
            .map(|r| (r.partition, r.offset()))
            .collect();
        assert_eq!(kept, [(1, Some(4)), (1, Some(5)), (0, Some(6))]);
        assert_eq!(ledger.len(), 61, "its places stay");
        assert_eq!(ledger.get(60).map(|r| r.id), Some(1000));
        // A record sent with acks=0 has no offset to judge by: the ledger keeps it.
        ledger.forget_expired(&[u64::MAX, u64::MAX]);
        let ids: Vec<u64> = ledger.iter().map(|r| r.id).collect();
        assert_eq!(ids, [1000]);
    }
}
