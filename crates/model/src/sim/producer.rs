//! The producer: the application's `send()` calls, the partitioner, the record accumulator
//! (`batch.size`, `linger.ms`), the sender that drains ready batches into one ProduceRequest per
//! leader, and what it does with the answers (retries, timeouts, idempotence).
//!
//! This file is what a producer holds (the `Producer` component); its I/O loop is `sender.rs`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bevy_ecs::prelude::*;
use serde::Serialize;

use super::Wake;
use super::clock::SimRng;
use super::cluster::{BrokerId, Cluster};
use super::keys::{self, Key};
use super::ledger::AckLedger;
use super::metadata::ClientMetadata;
use super::protocol::{KafkaError, PendingRecord};
use crate::partitioner::partition_for_key;
use crate::scenario::{Acks, Keys, ProducerConfig};

/// `max.request.size`: the most bytes of batches one ProduceRequest carries.
pub const MAX_REQUEST_SIZE: u32 = 1_048_576;
/// Kafka's retry back-off grows by this factor per attempt (`RETRY_BACKOFF_EXP_BASE`)...
const BACKOFF_BASE: u64 = 2;
/// ...with this much jitter either way, in thousandths (`RETRY_BACKOFF_JITTER` = 0.2).
const BACKOFF_JITTER_PERMILLE: u64 = 200;

/// The name of the producer with scenario index `index` (empty if there is none).
pub fn producer_name(cluster: &Cluster, producers: &Query<&Producer>, index: u32) -> String {
    cluster
        .producers
        .get(index as usize)
        .and_then(|e| producers.get(*e).ok())
        .map(|p| p.name.clone())
        .unwrap_or_default()
}

/// A batch in the accumulator or in flight.
#[derive(Debug, Clone)]
pub struct Batch {
    pub id: u64,
    /// Partition index within the topic.
    pub partition: u32,
    pub records: Vec<PendingRecord>,
    pub bytes: u32,
    pub created_ms: u64,
    /// When its newest record was sent: the largest of their timestamps.
    pub max_timestamp: u64,
    /// Sends so far that failed; 0 for a batch never retried.
    pub attempts: u32,
    /// A retried batch waits until then.
    pub retry_at_ms: u64,
    pub base_sequence: Option<i32>,
    /// The producer epoch its sequence numbers belong to.
    pub producer_epoch: u16,
    /// Renumbered by an epoch bump since it was last sent (`ProducerBatch.sequenceHasBeenReset`).
    pub sequence_reset: bool,
    /// The partition's leader epoch when the producer last looked at the batch, and the attempt
    /// at which it saw that epoch first (`currentLeaderEpoch`, `attemptsWhenLeaderLastChanged`).
    leader_epoch: Option<u32>,
    attempts_at_leader_change: u32,
    /// Given up at `delivery.timeout.ms` while its request was still in flight: failed to the
    /// application, but a late success still tells the producer the leader has its sequences.
    pub expired: bool,
}

impl Batch {
    fn new(id: u64, partition: u32, created_ms: u64) -> Self {
        Batch {
            id,
            partition,
            records: Vec::new(),
            bytes: 0,
            created_ms,
            max_timestamp: created_ms,
            attempts: 0,
            retry_at_ms: 0,
            base_sequence: None,
            producer_epoch: 0,
            sequence_reset: false,
            leader_epoch: None,
            attempts_at_leader_change: 0,
            expired: false,
        }
    }

    /// `ProducerBatch.isFull`: it holds `batch.size` bytes. One that cannot take the next record
    /// is closed when that record comes, which starts a batch behind it.
    pub(super) fn is_full(&self, batch_size: u32) -> bool {
        self.bytes >= batch_size
    }

    fn last_sequence(&self) -> Option<i32> {
        self.base_sequence
            .map(|s| s + self.records.len() as i32 - 1)
    }

    /// `ProducerBatch.maybeUpdateLeaderEpoch`: notes a newer leader epoch of its partition.
    pub(super) fn see_leader_epoch(&mut self, epoch: u32) {
        if self.leader_epoch.is_none_or(|e| e < epoch) {
            self.leader_epoch = Some(epoch);
            self.attempts_at_leader_change = self.attempts;
        }
    }

    /// Whether a retried batch may go now: its back-off passed, or its partition has a new
    /// leader since it failed (KIP-951, `RecordAccumulator.shouldBackoff`).
    pub(super) fn retry_due(&self, now: u64) -> bool {
        let leader_changed = self.attempts >= 1 && self.attempts == self.attempts_at_leader_change;
        leader_changed || now >= self.retry_at_ms
    }
}

/// An idempotent producer's numbering of one partition's batches (`TxnPartitionEntry`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sequences {
    /// The producer epoch the numbers belong to.
    pub(super) epoch: u16,
    /// The base sequence of the next new batch.
    pub(super) next: i32,
    /// The last sequence the leader acknowledged in this epoch (`lastAckedSequence`).
    last_acked: Option<i32>,
    /// A batch sent at least once was given up without an answer, so whether the leader wrote it
    /// is unknown (`partitionsWithUnresolvedSequences`): no new batch goes until that is settled.
    /// The sequence after the last such batch.
    unresolved: Option<i32>,
    /// An epoch bump waits for the sender's next turn (`partitionsToRewriteSequences`).
    bump_requested: bool,
}

impl Sequences {
    pub(super) fn starting(epoch: u16) -> Self {
        Sequences {
            epoch,
            ..Default::default()
        }
    }

    /// `TransactionManager.isNextSequence`: `sequence` follows the last acknowledged one.
    fn is_next(&self, sequence: i32) -> bool {
        sequence == self.last_acked.map_or(0, |s| s + 1)
    }
}

/// `reconnect.backoff.ms` and `reconnect.backoff.max.ms`: the wait before connecting again to a
/// broker after a connection failed or broke, doubling per failure in a row, with 20% jitter
/// (`ClusterConnectionStates.updateReconnectBackoff`).
const RECONNECT_BACKOFF_MS: u64 = 50;
const RECONNECT_BACKOFF_MAX_MS: u64 = 1_000;
/// `socket.connection.setup.timeout.ms` and its maximum: how long a connection attempt to a
/// broker that does not answer may take, doubling per such failure in a row.
const CONNECTION_SETUP_TIMEOUT_MS: u64 = 10_000;
const CONNECTION_SETUP_TIMEOUT_MAX_MS: u64 = 30_000;

/// Where the producer's connection to a broker stands (`ClusterConnectionStates`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Link {
    /// Open (or never needed yet): requests go at once.
    #[default]
    Ready,
    /// A connection attempt answered at `until_ms`: open if the broker's process takes it.
    Connecting { until_ms: u64 },
    /// Refused or broken: no attempt before `retry_ms` (`isBlackedOut`).
    Disconnected { retry_ms: u64 },
}

/// How a broker answers a connection attempt now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Its process listens.
    Accepting,
    /// Its machine answers, its process is gone or not serving yet: refused at once.
    Refusing,
    /// Nothing answers (a cut link): the attempt times out.
    Unreachable,
}

/// The producer's connection to one broker.
#[derive(Debug, Clone, Copy, Default)]
pub struct Connection {
    pub link: Link,
    /// Failures in a row, for the reconnect back-off (`failedAttempts`).
    failed_attempts: u32,
    /// Attempts in a row that timed out, for the setup timeout (`failedConnectAttempts`).
    failed_setups: u32,
}

/// A ProduceRequest the producer waits an answer for.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub wire_id: u64,
    pub broker: BrokerId,
    pub sent_ms: u64,
    pub batches: Vec<Batch>,
}

/// Counts of what happened to the records the application sent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProducerStats {
    /// Records handed to `send()`.
    pub sent: u64,
    /// Records the producer saw succeed (with acks=0: put on the wire).
    pub acked: u64,
    /// Records given up on (`delivery.timeout.ms` passed).
    pub failed: u64,
    /// Every error the producer received, by Kafka's name; a retried batch can count often.
    pub errors: BTreeMap<String, u64>,
}

#[derive(Clone, Component, Debug)]
pub struct Producer {
    /// Index in the scenario: the producer id on the wire and in records.
    pub index: u32,
    pub name: String,
    pub topic: usize,
    /// The topic's partition entities.
    pub partitions: Vec<Entity>,
    pub config: ProducerConfig,
    pub acks: Acks,
    pub idempotent: bool,
    pub records_per_sec: u32,
    /// When the current rate started, and how many records it has made since.
    pub(super) rate_since_ms: u64,
    pub(super) made_since: u64,
    key_counter: u64,
    /// The texts its keys name: sequences' prefixes, fixed keys, the timeline's keys.
    pub key_names: Vec<Arc<str>>,
    /// Where `key_names` holds the configured prefix or fixed key.
    config_key: usize,
    /// Records asked for by the timeline (`Produce`), sent at the next step.
    pub requested: VecDeque<(Option<String>, u64, bool)>,
    /// The sticky partition for records without a key, and the bytes sent to it.
    sticky: Option<(u32, u64)>,
    /// The accumulator: a queue of batches per partition.
    pub queues: Vec<VecDeque<Batch>>,
    pub in_flight: Vec<InFlight>,
    /// Sequence numbering, per partition.
    pub(super) sequences: Vec<Sequences>,
    /// Some partition's numbering waits to be resolved or bumped.
    unsettled: bool,
    /// Bumped when a leader's view of the sequence numbers can no longer be trusted.
    pub producer_epoch: u16,
    next_batch_id: u64,
    records_made: u64,
    /// Index of the topic's first partition in `Cluster::partitions`.
    /// The ordinal of each of its partitions (in `Cluster::partitions`).
    pub ordinals: Vec<u32>,
    /// Where draining starts for each broker, so partitions take turns (`drainIndex`).
    pub(super) drain_start: BTreeMap<BrokerId, usize>,
    /// Who leads its partitions, as far as it knows: it sends each batch there.
    pub metadata: ClientMetadata,
    /// Its connection to each broker, by broker id.
    pub connections: Vec<Connection>,
    pub stats: ProducerStats,
}

impl Producer {
    pub fn new(
        index: u32,
        config: &ProducerConfig,
        topic: usize,
        partitions: Vec<Entity>,
        ordinals: Vec<u32>,
    ) -> Self {
        let n = partitions.len();
        let mut producer = Producer {
            index,
            name: config.name.clone(),
            topic,
            partitions,
            config: config.clone(),
            acks: config.acks,
            idempotent: false,
            records_per_sec: config.records_per_sec,
            rate_since_ms: 0,
            made_since: 0,
            key_counter: 0,
            key_names: Vec::new(),
            config_key: 0,
            requested: VecDeque::new(),
            sticky: None,
            queues: vec![VecDeque::new(); n],
            in_flight: Vec::new(),
            sequences: vec![Sequences::default(); n],
            unsettled: false,
            producer_epoch: 0,
            next_batch_id: 0,
            records_made: 0,
            ordinals,
            drain_start: BTreeMap::new(),
            metadata: ClientMetadata {
                leaders: vec![(None, 0); n].into(),
                ..ClientMetadata::default()
            },
            connections: Vec::new(),
            stats: ProducerStats::default(),
        };
        // The configured prefix or fixed key is name 0, where a key's bits can always name it.
        if let Keys::Sequence(name) | Keys::Fixed(name) = &config.keys {
            producer.key_names.push(Arc::from(name.as_str()));
        }
        producer.set_acks(config.acks);
        producer
    }

    /// Restarts the producer with other acks. Idempotence follows Kafka 3.0+'s default: on with
    /// acks=all unless the config turns it off.
    pub fn set_acks(&mut self, acks: Acks) {
        self.acks = acks;
        self.config.acks = acks;
        self.idempotent = acks == Acks::All && self.config.enable_idempotence != Some(false);
    }

    /// Restarts the producer with another config (`SetProducer`, checked by
    /// `ProducerSettings::applied_to`): batches made from now on take it. A sequence with a new
    /// prefix counts from 0 again. Refused when the producer's table of key names is full.
    pub fn reconfigure(&mut self, config: ProducerConfig) -> Result<(), String> {
        if let Keys::Sequence(name) | Keys::Fixed(name) = &config.keys
            && config.keys != self.config.keys
        {
            let index = keys::intern(&mut self.key_names, name);
            if index >= keys::MAX_NAMES {
                self.key_names.truncate(keys::MAX_NAMES);
                return Err(format!(
                    "the producer already has {} key names",
                    keys::MAX_NAMES
                ));
            }
            if !matches!(&self.config.keys, Keys::Sequence(old) if old == name) {
                self.key_counter = 0;
            }
            self.config_key = index;
        }
        let acks = config.acks;
        self.config = config;
        self.set_acks(acks);
        Ok(())
    }

    /// A partition of its topic it learnt of from a Metadata answer (`AddPartitions`): keyed
    /// records map by the new count from now on.
    pub fn learn_partition(
        &mut self,
        entity: Entity,
        ordinal: u32,
        leader: (Option<BrokerId>, u32),
    ) {
        self.partitions.push(entity);
        self.ordinals.push(ordinal);
        self.queues.push(VecDeque::new());
        self.sequences.push(Sequences::default());
        std::sync::Arc::make_mut(&mut self.metadata.leaders).push(leader);
    }

    pub fn set_rate(&mut self, now: u64, records_per_sec: u32) {
        self.records_per_sec = records_per_sec;
        self.rate_since_ms = now;
        self.made_since = 0;
    }

    /// Records waiting in the accumulator or in flight.
    pub fn pending(&self) -> u64 {
        let queued: usize = self.queues.iter().flatten().map(|b| b.records.len()).sum();
        let flying: usize = self
            .in_flight
            .iter()
            .flat_map(|f| &f.batches)
            .filter(|b| !b.expired)
            .map(|b| b.records.len())
            .sum();
        (queued + flying) as u64
    }

    pub(super) fn next_key(&mut self, rng: &mut SimRng) -> Key {
        match &self.config.keys {
            Keys::None => Key::NONE,
            Keys::Fixed(_) => Key::named(self.config_key),
            Keys::Sequence(_) => {
                let key = Key::sequence(self.config_key, self.key_counter);
                self.key_counter += 1;
                key
            }
            Keys::Random(n) => Key::random(rng.below(u64::from(*n))),
        }
    }

    /// A key's text, as the application gave it to `send()`.
    pub fn key_text(&self, key: Key) -> Option<String> {
        key.text(&self.key_names)
    }

    /// Whether a key's text is `text`.
    pub fn key_is(&self, key: Key, text: &str) -> bool {
        key.is(&self.key_names, text)
    }

    /// The partitioner (`BuiltInPartitioner`): murmur2 of the key over all partitions; without a
    /// key, the sticky partition. `text` is a buffer to write the key's text in.
    pub(super) fn choose_partition(
        &mut self,
        key: Key,
        text: &mut String,
        available: &[bool],
        rng: &mut SimRng,
    ) -> u32 {
        if key.write(&self.key_names, text) {
            return partition_for_key(text.as_bytes(), self.partitions.len() as u32);
        }
        match self.sticky {
            Some((p, _)) => p,
            None => self.next_sticky(available, rng),
        }
    }

    /// After a record without a key went to the sticky partition: it changes once `batch.size`
    /// bytes went to it and its last batch is full, or at twice `batch.size` whatever the batch
    /// (`BuiltInPartitioner.updatePartitionInfo`, `RecordAccumulator.allBatchesFull`).
    pub(super) fn after_keyless_record(&mut self, available: &[bool], rng: &mut SimRng) {
        let batch_size = self.config.batch_size;
        let Some((p, sent)) = &mut self.sticky else {
            return;
        };
        *sent += u64::from(self.config.record_bytes);
        let full = self.queues[*p as usize]
            .back()
            .is_none_or(|b| b.is_full(batch_size));
        let batch_size = u64::from(batch_size);
        if (*sent >= batch_size && full) || *sent >= 2 * batch_size {
            self.next_sticky(available, rng);
        }
    }

    /// `BuiltInPartitioner.nextPartition`: drawn among partitions that have a leader, weighted
    /// toward shorter queues (adaptive partitioning, KIP-794).
    fn next_sticky(&mut self, available: &[bool], rng: &mut SimRng) -> u32 {
        let n = self.partitions.len() as u32;
        let candidates: Vec<u32> = (0..n).filter(|p| available[*p as usize]).collect();
        let candidates = if candidates.is_empty() {
            (0..n).collect()
        } else {
            candidates
        };
        let max_queue = candidates
            .iter()
            .map(|p| self.queues[*p as usize].len())
            .max()
            .unwrap_or(0);
        let weights: Vec<u64> = candidates
            .iter()
            .map(|p| (max_queue + 1 - self.queues[*p as usize].len()) as u64)
            .collect();
        let mut draw = rng.below(weights.iter().sum());
        let mut chosen = candidates[0];
        for (p, w) in candidates.iter().zip(&weights) {
            if draw < *w {
                chosen = *p;
                break;
            }
            draw -= w;
        }
        self.sticky = Some((chosen, 0));
        chosen
    }

    /// `RecordAccumulator.append`: into the partition's last batch if it fits, else a new one.
    pub(super) fn append(&mut self, now: u64, partition: u32, key: Key, tombstone: bool) {
        let bytes = self.config.record_bytes;
        let batch_size = self.config.batch_size;
        let id = self.next_batch_id;
        let queue = &mut self.queues[partition as usize];
        let fits = queue.back().is_some_and(|b| {
            b.attempts == 0 && b.base_sequence.is_none() && b.bytes + bytes <= batch_size
        });
        if !fits {
            self.next_batch_id += 1;
            queue.push_back(Batch::new(id, partition, now));
        }
        let batch = queue.back_mut().expect("just ensured");
        let every = u64::from(self.config.tombstone_every);
        batch.records.push(PendingRecord {
            id: super::ledger::record_id(self.index, self.records_made),
            key,
            bytes,
            tombstone: tombstone || (every > 0 && (self.records_made + 1).is_multiple_of(every)),
        });
        self.records_made += 1;
        batch.bytes += bytes;
        batch.max_timestamp = now;
        self.stats.sent += 1;
    }

    /// `retry.backoff.ms` doubled per earlier attempt, with 20% jitter, capped at
    /// `retry.backoff.max.ms`.
    fn retry_backoff(&self, attempts: u32, rng: &mut SimRng) -> u64 {
        let (base, max) = (
            self.config.retry_backoff_ms,
            self.config.retry_backoff_max_ms,
        );
        if max <= base {
            return base;
        }
        exponential_backoff(base, max, attempts.saturating_sub(1), rng)
    }

    fn delivery_expired(&self, batch: &Batch, now: u64) -> bool {
        now >= batch.created_ms + self.config.delivery_timeout_ms
    }

    /// Settles a batch the leader answered: acknowledged, put back at the head of its queue in
    /// sequence order for a retry (`reenqueue`, `insertInSequenceOrder`), or given up
    /// (`Sender.completeBatch`).
    pub(super) fn complete(
        &mut self,
        mut batch: Batch,
        result: Result<u64, KafkaError>,
        now: u64,
        rng: &mut SimRng,
        ledger: &mut AckLedger,
    ) {
        let p = batch.partition as usize;
        if batch.expired {
            // `Sender.completeBatch` after `getExpiredInflightBatches`: the application was told
            // already; a success still moves the last acknowledged sequence
            // (`TransactionManager.handleCompletedBatch`), a failure changes nothing.
            let sequences = &mut self.sequences[p];
            if let (Ok(_), Some(last)) = (result, batch.last_sequence())
                && batch.producer_epoch == sequences.epoch
            {
                sequences.last_acked = Some(sequences.last_acked.map_or(last, |l| l.max(last)));
            }
            return;
        }
        match result {
            Ok(base) => {
                let sequences = &mut self.sequences[p];
                if let Some(last) = batch.last_sequence()
                    && batch.producer_epoch == sequences.epoch
                {
                    sequences.last_acked = Some(sequences.last_acked.map_or(last, |l| l.max(last)));
                }
                self.stats.acked += batch.records.len() as u64;
                self.record_acked(&batch, Some(base), ledger);
            }
            Err(error) => {
                *self
                    .stats
                    .errors
                    .entry(error.name().to_string())
                    .or_default() += 1;
                // Its metadata may be stale (`Sender.completeBatch`: an
                // `InvalidMetadataException`, which NETWORK_EXCEPTION is; a timed-out request
                // drops the connection, `NetworkClient.handleTimedOutRequests`).
                if matches!(
                    error,
                    KafkaError::NotLeaderOrFollower
                        | KafkaError::NetworkException
                        | KafkaError::RequestTimedOut
                ) {
                    self.metadata.wanted = true;
                }
                if !self.delivery_expired(&batch, now) && self.can_retry(&batch, error) {
                    batch.attempts += 1;
                    batch.retry_at_ms = now + self.retry_backoff(batch.attempts, rng);
                    let queue = &mut self.queues[p];
                    let at = match batch.base_sequence {
                        Some(seq) => queue
                            .iter()
                            .position(|b| b.base_sequence.is_none_or(|s| s > seq))
                            .unwrap_or(queue.len()),
                        None => 0,
                    };
                    queue.insert(at, batch);
                } else {
                    self.stats.failed += batch.records.len() as u64;
                    // A numbered batch given up leaves a gap the leader would refuse: numbering
                    // starts again (`TransactionManager.handleFailedBatch`).
                    if batch.base_sequence.is_some() {
                        self.request_bump(p);
                    }
                }
            }
        }
    }

    /// `TransactionManager.canRetry`. An idempotent producer retries OUT_OF_ORDER_SEQUENCE_NUMBER
    /// always, and asks for an epoch bump, which numbers the partition's outstanding batches from
    /// 0 again (KIP-360), when the gap is real: with no batch unresolved, the refused batch is
    /// the very next one after the last acknowledged and was not renumbered (the leader lost the
    /// producer's earlier records: an unclean election, a lost disk); with one unresolved, it is
    /// the batch right after the one given up (`isNextSequenceForUnresolvedPartition`). A batch
    /// behind another failed one just waits its turn.
    fn can_retry(&mut self, batch: &Batch, error: KafkaError) -> bool {
        let (true, Some(sequence)) = (self.idempotent, batch.base_sequence) else {
            return error.retriable();
        };
        if error != KafkaError::OutOfOrderSequenceNumber {
            return error.retriable();
        }
        let p = batch.partition as usize;
        let sequences = &self.sequences[p];
        let gap = match sequences.unresolved {
            None => !batch.sequence_reset && sequences.is_next(sequence),
            Some(next) => sequence == next,
        };
        if gap {
            self.request_bump(p);
        }
        true
    }

    /// Asks for an epoch bump of a partition's numbering at the sender's next turn.
    fn request_bump(&mut self, p: usize) {
        self.sequences[p].bump_requested = true;
        self.unsettled = true;
    }

    /// Marks a partition's numbering unknown until its outstanding batches settle.
    fn mark_unresolved(&mut self, p: usize, next: i32) {
        let unresolved = &mut self.sequences[p].unresolved;
        *unresolved = Some(unresolved.map_or(next, |n| n.max(next)));
        self.unsettled = true;
    }

    /// The sender's turn starts by settling the numbering: a partition whose unanswered batches
    /// are all gone is resolved if the leader acknowledged up to the next sequence, or else gets
    /// an epoch bump (`maybeResolveSequences`); then the epoch is bumped once for every partition
    /// that asked, and each of those numbers its outstanding batches from 0 in their order
    /// (`bumpIdempotentProducerEpoch`, `startSequencesAtBeginning`).
    pub(super) fn settle_sequences(&mut self) {
        if !self.unsettled {
            return;
        }
        for p in 0..self.sequences.len() {
            let sequences = self.sequences[p];
            if sequences.unresolved.is_some() && self.outstanding(p as u32).next().is_none() {
                self.sequences[p].unresolved = None;
                if !sequences.is_next(sequences.next) {
                    self.sequences[p].bump_requested = true;
                }
            }
        }
        self.unsettled = self.sequences.iter().any(|s| s.unresolved.is_some());
        if !self.sequences.iter().any(|s| s.bump_requested) {
            return;
        }
        // At `Short.MAX_VALUE` Kafka's producer takes a new producer id with epoch 0
        // (`TransactionManager.bumpIdempotentProducerEpoch`); the model's producer keeps its id,
        // and its epoch stays there (32,767 bumps are out of any run's reach).
        self.producer_epoch = (self.producer_epoch + 1).min(super::cluster::MAX_PRODUCER_EPOCH);
        let epoch = self.producer_epoch;
        for p in 0..self.sequences.len() {
            if !self.sequences[p].bump_requested {
                continue;
            }
            let mut batches: Vec<&mut Batch> = self.outstanding_mut(p as u32).collect();
            batches.sort_by_key(|b| b.base_sequence);
            let mut next = 0;
            for batch in batches {
                batch.base_sequence = Some(next);
                batch.producer_epoch = epoch;
                batch.sequence_reset = true;
                next += batch.records.len() as i32;
            }
            self.sequences[p] = Sequences {
                next,
                ..Sequences::starting(epoch)
            };
        }
    }

    /// A partition's numbered batches not yet settled: in flight or queued for a retry
    /// (`TxnPartitionEntry.inflightBatchesBySequence`).
    fn outstanding(&self, partition: u32) -> impl Iterator<Item = &Batch> {
        let flying = self.in_flight.iter().flat_map(|f| &f.batches);
        flying
            .chain(&self.queues[partition as usize])
            .filter(move |b| b.partition == partition && b.base_sequence.is_some() && !b.expired)
    }

    fn outstanding_mut(&mut self, partition: u32) -> impl Iterator<Item = &mut Batch> {
        let flying = self.in_flight.iter_mut().flat_map(|f| &mut f.batches);
        flying
            .chain(&mut self.queues[partition as usize])
            .filter(move |b| b.partition == partition && b.base_sequence.is_some() && !b.expired)
    }

    /// `RecordAccumulator.shouldStopDrainBatchesForPartition`: whether a partition's first batch
    /// must wait so that sequences reach the leader in order. A retry goes only as its
    /// partition's first outstanding batch; a new batch waits while the partition's numbering is
    /// unresolved, or still in an older epoch with batches of it outstanding.
    pub(super) fn holds_back(&self, head: &Batch) -> bool {
        let p = head.partition;
        match head.base_sequence {
            Some(seq) => self
                .outstanding(p)
                .any(|b| b.base_sequence.is_some_and(|s| s < seq)),
            None if self.idempotent => {
                let sequences = &self.sequences[p as usize];
                sequences.unresolved.is_some()
                    || (sequences.epoch != self.producer_epoch
                        && self.outstanding(p).next().is_some())
            }
            None => false,
        }
    }

    /// Writes a batch the producer saw succeed into the ledger of acknowledged records.
    pub(super) fn record_acked(&self, batch: &Batch, base: Option<u64>, ledger: &mut AckLedger) {
        let partition = self.ordinals[batch.partition as usize];
        let records = batch.records.iter().map(|r| (r.id, r.key));
        ledger.add_batch(partition, base, self.acks, records);
    }

    /// Its connection to a broker.
    pub fn connection(&mut self, broker: BrokerId) -> &mut Connection {
        let i = broker as usize;
        if self.connections.len() <= i {
            self.connections.resize(i + 1, Connection::default());
        }
        &mut self.connections[i]
    }

    /// The connection to a broker is gone: the broker's process reset it, a request timed out
    /// (`NetworkClient.handleTimedOutRequests` closes it), or an attempt failed. Every request in
    /// flight on it fails with `error` (`cancelInFlightRequests`: REQUEST_TIMED_OUT after a
    /// timeout, else NETWORK_EXCEPTION), the producer asks for metadata
    /// (`DefaultMetadataUpdater.handleServerDisconnect`), and it connects again only after the
    /// reconnect back-off (`ClusterConnectionStates.disconnected`).
    /// Returns the wire ids of the requests it cancelled.
    pub fn disconnected(
        &mut self,
        broker: BrokerId,
        error: KafkaError,
        now: u64,
        rng: &mut SimRng,
        ledger: &mut AckLedger,
    ) -> Vec<u64> {
        let cancelled: Vec<InFlight> = self
            .in_flight
            .extract_if(.., |f| f.broker == broker)
            .collect();
        let ids = cancelled.iter().map(|r| r.wire_id).collect();
        for request in cancelled {
            for batch in request.batches {
                self.complete(batch, Err(error), now, rng, ledger);
            }
        }
        self.metadata.wanted = true;
        let connection = self.connection(broker);
        let backoff = exponential_backoff(
            RECONNECT_BACKOFF_MS,
            RECONNECT_BACKOFF_MAX_MS,
            connection.failed_attempts,
            rng,
        );
        connection.failed_attempts += 1;
        connection.link = Link::Disconnected {
            retry_ms: now + backoff,
        };
        ids
    }

    /// A request on the connection to `broker` met a reset (its process is gone) or a close: the
    /// connection breaks, unless an earlier request of the same step broke it already.
    pub fn connection_broke(
        &mut self,
        broker: BrokerId,
        wire_id: u64,
        now: u64,
        rng: &mut SimRng,
        ledger: &mut AckLedger,
    ) {
        let open = self.connection(broker).link == Link::Ready;
        if open || self.in_flight.iter().any(|f| f.wire_id == wire_id) {
            self.disconnected(broker, KafkaError::NetworkException, now, rng, ledger);
        }
    }

    /// `NetworkClient.ready`: whether a request may go to `broker` now. A disconnected broker
    /// past its back-off gets a connection attempt (`initiateConnect`), answered a round trip
    /// later, or after the setup timeout where nothing answers; one that is then refused counts
    /// as a failure, and the producer waits again.
    pub(super) fn ready_to_send(
        &mut self,
        broker: BrokerId,
        now: u64,
        reach: Reach,
        round_trip_ms: u64,
        rng: &mut SimRng,
        ledger: &mut AckLedger,
    ) -> bool {
        let connection = *self.connection(broker);
        match connection.link {
            Link::Ready => true,
            Link::Disconnected { retry_ms } if now >= retry_ms => {
                let took = if reach == Reach::Unreachable {
                    let timeout = exponential_backoff(
                        CONNECTION_SETUP_TIMEOUT_MS,
                        CONNECTION_SETUP_TIMEOUT_MAX_MS,
                        connection.failed_setups,
                        rng,
                    );
                    self.connection(broker).failed_setups += 1;
                    timeout
                } else {
                    round_trip_ms
                };
                self.connection(broker).link = Link::Connecting {
                    until_ms: now + took.max(1),
                };
                false
            }
            Link::Connecting { until_ms } if now >= until_ms => {
                if reach == Reach::Accepting {
                    // `ClusterConnectionStates.ready` forgets the failures.
                    *self.connection(broker) = Connection::default();
                    true
                } else {
                    self.disconnected(broker, KafkaError::NetworkException, now, rng, ledger);
                    false
                }
            }
            Link::Disconnected { .. } | Link::Connecting { .. } => false,
        }
    }
}

/// `ExponentialBackoff.backoff(attempts)`: `base` doubled per attempt before, capped at `max`,
/// with 20% jitter either way.
fn exponential_backoff(base: u64, max: u64, attempts: u32, rng: &mut SimRng) -> u64 {
    let term = base
        .saturating_mul(BACKOFF_BASE.saturating_pow(attempts.min(32)))
        .min(max);
    let jittered =
        term * rng.permille(
            1000 - BACKOFF_JITTER_PERMILLE,
            1000 + BACKOFF_JITTER_PERMILLE,
        ) / 1000;
    jittered.min(max)
}

impl Producer {
    /// A request unanswered after `request.timeout.ms` closes its connection, failing every
    /// request on it with REQUEST_TIMED_OUT (`NetworkClient.handleTimedOutRequests`), in send
    /// order; a batch older than `delivery.timeout.ms` is given up, queued or in flight
    /// (`RecordAccumulator.expiredBatches`, `Sender.getExpiredInflightBatches`). Returns the
    /// wire ids of the requests cancelled, each with the broker whose connection it closed.
    pub(super) fn expire(
        &mut self,
        now: u64,
        rng: &mut SimRng,
        ledger: &mut AckLedger,
    ) -> Vec<(u64, BrokerId)> {
        let timeout = self.config.request_timeout_ms;
        let mut cancelled = Vec::new();
        while let Some(broker) = self
            .in_flight
            .iter()
            .find(|f| now >= f.sent_ms + timeout)
            .map(|f| f.broker)
        {
            let ids = self.disconnected(broker, KafkaError::RequestTimedOut, now, rng, ledger);
            cancelled.extend(ids.into_iter().map(|id| (id, broker)));
        }
        let delivery = self.config.delivery_timeout_ms;
        let mut given_up = 0u64;
        let mut unresolved = Vec::new();
        let mut give_up = |b: &mut Batch| {
            let expired = !b.expired && now >= b.created_ms + delivery;
            if expired {
                given_up += b.records.len() as u64;
                // A numbered batch sent before may or may not be in the log: its partition's
                // numbering is unknown until the batches after it settle (`Sender.sendProducerData`
                // marks it unresolved when the batch was in retry).
                if let (Some(last), true) = (b.last_sequence(), b.attempts > 0) {
                    unresolved.push((b.partition, last + 1));
                }
            }
            expired
        };
        for queue in &mut self.queues {
            queue.retain_mut(|b| !give_up(b));
        }
        // One in flight stays there, failed, for the answer that may still come
        // (`Sender.getExpiredInflightBatches`).
        for request in &mut self.in_flight {
            for batch in &mut request.batches {
                if give_up(batch) {
                    batch.expired = true;
                }
            }
        }
        self.stats.failed += given_up;
        for (p, next) in unresolved {
            self.mark_unresolved(p as usize, next);
        }
        cancelled
    }
}

/// Scratch for drawing a step's keys: the keys, whether each is new, and a key's text.
pub(super) type KeyScratch = (Vec<(Key, bool)>, Vec<bool>, String);

impl Producer {
    /// Reports the producer's next deadline: its next record, a linger or retry back-off ending,
    /// a request or a batch timing out.
    pub(super) fn wake(&self, now: u64, wake: &mut Wake) {
        let mut at = |t: u64| {
            if t > now {
                wake.at(t);
            }
        };
        let rate = u64::from(self.records_per_sec);
        if rate > 0 {
            // The first instant t with (t - since + 1) * rate / 1000 > made so far.
            let needed = (self.made_since + 1) * 1000;
            at(self.rate_since_ms + needed.div_ceil(rate) - 1);
        }
        let delivery = self.config.delivery_timeout_ms;
        for queue in &self.queues {
            if let Some(head) = queue.front() {
                at(if head.attempts > 0 {
                    head.retry_at_ms
                } else {
                    head.created_ms + self.config.linger_ms
                });
            }
            for batch in queue {
                at(batch.created_ms + delivery);
            }
        }
        for request in &self.in_flight {
            at(request.sent_ms + self.config.request_timeout_ms);
            for batch in request.batches.iter().filter(|b| !b.expired) {
                at(batch.created_ms + delivery);
            }
        }
        if self.queues.iter().any(|q| !q.is_empty()) {
            for connection in &self.connections {
                match connection.link {
                    Link::Ready => {}
                    Link::Connecting { until_ms: t } | Link::Disconnected { retry_ms: t } => at(t),
                }
            }
        }
    }
}

/// A record's key as text, written out by the producer that made it (outside the schedule: the
/// view, reports, tests).
pub fn record_key(world: &World, record: &super::cluster::Record) -> Option<String> {
    let cluster = world.get_resource::<Cluster>()?;
    let producer = world.get::<Producer>(*cluster.producers.get(record.producer() as usize)?)?;
    producer.key_text(record.key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idempotent producer of one partition, with a batch of `records` records numbered from
    /// `base` in flight to broker 1.
    fn producer_with_batch_in_flight(base: i32, records: usize) -> Producer {
        let scenario = crate::scenario::Scenario::parse(
            r#"(name: "p", topics: [(name: "t", partitions: 1)],
                producers: [(name: "p", topic: "t", acks: All)])"#,
            "test.ron",
        )
        .expect("a scenario");
        let mut p = Producer::new(
            0,
            &scenario.producers[0],
            0,
            vec![Entity::PLACEHOLDER],
            vec![0],
        );
        let mut batch = Batch::new(0, 0, 0);
        batch.records = (0..records)
            .map(|i| PendingRecord {
                id: i as u64,
                key: Key::NONE,
                bytes: 100,
                tombstone: false,
            })
            .collect();
        batch.base_sequence = Some(base);
        batch.attempts = 1;
        p.sequences[0] = Sequences {
            next: base + records as i32,
            last_acked: base.checked_sub(1),
            ..Sequences::default()
        };
        p.in_flight.push(InFlight {
            wire_id: 7,
            broker: 1,
            sent_ms: 0,
            batches: vec![batch],
        });
        p
    }

    /// `Sender.getExpiredInflightBatches` fails a batch at `delivery.timeout.ms` while its
    /// request is in flight; when the leader's success comes after, `Sender.completeBatch` still
    /// records its last sequence (`TransactionManager.handleCompletedBatch`), so the numbering
    /// resolves without an epoch bump (`maybeResolveSequences` finds the next sequence acked).
    #[test]
    fn a_late_success_for_an_expired_batch_still_acknowledges_its_sequences() {
        let mut p = producer_with_batch_in_flight(0, 10);
        let mut rng = SimRng::new(1);
        let mut ledger = AckLedger::default();
        let delivery = p.config.delivery_timeout_ms;
        // Sent again a second before its delivery timeout, after a retry.
        p.in_flight[0].sent_ms = delivery - 1_000;
        p.expire(delivery, &mut rng, &mut ledger);
        assert_eq!(p.stats.failed, 10);
        assert_eq!(p.sequences[0].unresolved, Some(10));
        let batch = p.in_flight.remove(0).batches.remove(0);
        p.complete(batch, Ok(0), delivery + 5, &mut rng, &mut ledger);
        assert_eq!(p.stats.acked, 0, "the application was told it failed");
        assert_eq!(ledger.iter().count(), 0);
        p.settle_sequences();
        assert_eq!(p.producer_epoch, 0, "no bump: the leader has the sequences");
        assert_eq!(p.sequences[0].unresolved, None);
    }

    /// `TransactionManager.canRetry` with a batch unresolved: OUT_OF_ORDER_SEQUENCE_NUMBER for
    /// the batch right after the one given up is a real gap and bumps the epoch; for another,
    /// the producer retries and waits for the numbering to resolve.
    #[test]
    fn out_of_order_right_after_an_unresolved_batch_bumps_the_epoch() {
        let mut p = producer_with_batch_in_flight(20, 5);
        p.mark_unresolved(0, 20);
        let mut after = Batch::new(1, 0, 0);
        after.base_sequence = Some(20);
        assert!(p.can_retry(&after, KafkaError::OutOfOrderSequenceNumber));
        assert!(p.sequences[0].bump_requested);

        let mut p = producer_with_batch_in_flight(20, 5);
        p.mark_unresolved(0, 15);
        assert!(p.can_retry(&after, KafkaError::OutOfOrderSequenceNumber));
        assert!(
            !p.sequences[0].bump_requested,
            "not the batch after the unresolved one"
        );

        // With nothing unresolved, only the next batch after the last acknowledged one, not
        // renumbered, is a gap.
        let mut p = producer_with_batch_in_flight(20, 5);
        assert!(p.can_retry(&after, KafkaError::OutOfOrderSequenceNumber));
        assert!(p.sequences[0].bump_requested);
        let mut p = producer_with_batch_in_flight(20, 5);
        after.sequence_reset = true;
        assert!(p.can_retry(&after, KafkaError::OutOfOrderSequenceNumber));
        assert!(!p.sequences[0].bump_requested);
    }
}
