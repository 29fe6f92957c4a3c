//! The ledger of acknowledged writes: every record a producer saw succeed (acknowledged, or sent
//! with acks=0). Which of them a run lost is `loss.rs`.

use bevy_ecs::prelude::*;

use crate::scenario::Acks;

/// One record a producer was told is written, in 32 bytes: a long run acknowledges millions.
/// Its producer is in its id.
#[derive(Debug, Clone)]
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

impl AckedRecord {
    pub fn new(
        id: u64,
        partition: u32,
        offset: Option<u64>,
        key: super::keys::Key,
        acks: Acks,
    ) -> Self {
        AckedRecord {
            id,
            offset: offset.unwrap_or(NO_OFFSET),
            key,
            partition,
            acks,
        }
    }

    /// The offset the leader answered with; `None` for acks=0.
    pub fn offset(&self) -> Option<u64> {
        (self.offset != NO_OFFSET).then_some(self.offset)
    }

    /// The producer's index in the scenario.
    pub fn producer(&self) -> u32 {
        producer_of(self.id)
    }
}

#[derive(Clone, Resource, Debug, Default)]
pub struct AckLedger {
    pub records: super::chunked::Chunked<AckedRecord>,
    /// A broker lost its disk during the run.
    pub disk_lost: bool,
}

// The ledger holds a row per acknowledged record: keep it small.
const _: () = assert!(size_of::<AckedRecord>() == 32);

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
