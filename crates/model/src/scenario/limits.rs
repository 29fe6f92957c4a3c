//! Limits that keep a scenario inside the memory of a laptop and of a browser tab, and the
//! estimate of the memory a run's records take.

use super::{Check, ScenarioError};

pub const BROKERS: u32 = 64;
pub const PARTITIONS: u32 = 4_096;
/// Replicas of all topics together (partitions x replication factor): each follower fetches
/// and each leader tracks its followers, so the step's work grows with them.
pub const REPLICAS: u64 = 16_384;
pub const PRODUCERS: usize = 256;
pub const CONSUMERS: u32 = 1_024;
pub const RECORDS_PER_SEC: u32 = 1_000_000;
pub const RECORD_BYTES: u32 = 1_048_576;
pub const BATCH_SIZE: u32 = 16 * 1_048_576;
/// Memory for the records a run keeps: every replica's copy in its log, and each record's
/// entry in the ledger of acknowledged writes, its key, and its copies on the way.
pub const RECORD_MEMORY_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// What one replica's copy of a record costs (the size of `sim::Record`, which `sim` checks
/// when it compiles). Replicas that agree share their copies, so counting one per replica is on
/// the safe side; what it leaves over pays for the checkpoints (`large`: 10 simulated minutes,
/// 3 million records, 297 MB in all).
pub const LOG_RECORD_BYTES: u64 = 24;
/// What a produced record costs besides its log copies: its ledger row (8 bytes, 16 where its
/// key has no compact form, and a share of its run's entry), its queue and wire copies while in
/// flight, and the allocator's share.
pub const PRODUCED_RECORD_BYTES: u64 = 64;
pub const DURATION_MS: u64 = 7 * 24 * 3_600_000;
pub const LATENCY_MS: u64 = 60_000;
/// A record key's bytes (a key, or a `Sequence` prefix): every record keeps its own.
pub const KEY_BYTES: usize = 4_096;
/// The most record bytes a follower's fetch may ask for (`replica.fetch.max.bytes`).
pub const FETCH_BYTES: u64 = 64 * 1_048_576;

/// An estimate of the memory the records of a run take, against [`RECORD_MEMORY_BYTES`].
#[derive(Default)]
pub(super) struct RecordMemory {
    records: u64,
    bytes: u64,
}

impl RecordMemory {
    /// `records` produced to a topic of replication factor `rf`. Keys cost nothing more: a key
    /// made by a rule is a number in the record, and one given as text is kept once.
    pub(super) fn add(&mut self, records: u64, rf: u64) {
        let each = LOG_RECORD_BYTES * rf + PRODUCED_RECORD_BYTES;
        self.records = self.records.saturating_add(records);
        self.bytes = self.bytes.saturating_add(records.saturating_mul(each));
    }
}

/// Why a rate is refused: above [`RECORDS_PER_SEC`].
pub(super) fn rate_too_high(rate: u32) -> Option<String> {
    (rate > RECORDS_PER_SEC).then(|| format!("{rate} records/s: at most {}", RECORDS_PER_SEC))
}

/// Why a key is refused: longer than [`KEY_BYTES`].
pub(super) fn key_too_long(key: &str) -> Option<String> {
    (key.len() > KEY_BYTES).then(|| format!("a key of {} bytes: at most {}", key.len(), KEY_BYTES))
}

/// Why a duration is refused: above [`DURATION_MS`].
pub(super) fn longer_than_a_week(value: u64) -> Option<String> {
    (value > DURATION_MS).then(|| format!("{value} ms: at most {DURATION_MS} ms (a week)"))
}

/// Refuses a run whose consumers or records do not fit, once every section has been counted.
pub(super) fn check_totals(
    check: &Check,
    consumers: u64,
    memory: &RecordMemory,
    until_ms: u64,
) -> Result<(), ScenarioError> {
    let bad = |field: String, message: String| check.bad(field, message);
    if consumers > u64::from(CONSUMERS) {
        return Err(bad(
            "consumer_groups".into(),
            format!("{consumers} consumers in all: at most {}", CONSUMERS),
        ));
    }
    if memory.bytes > RECORD_MEMORY_BYTES {
        const MIB: u64 = 1024 * 1024;
        return Err(bad(
            "producers".into(),
            format!(
                "the producers would make about {} records by {until_ms} ms, which with their copies in every replica take about {} MiB; at most {} MiB fit in memory (lower records_per_sec or duration_ms)",
                memory.records,
                memory.bytes / MIB,
                RECORD_MEMORY_BYTES / MIB
            ),
        ));
    }
    Ok(())
}
