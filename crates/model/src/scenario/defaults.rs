//! Kafka's defaults for the fields a file leaves out.

use super::{Acks, Keys, OffsetReset};
pub(super) fn duration_ms() -> u64 {
    60_000
}
pub(super) fn brokers() -> u32 {
    3
}
pub(super) fn one() -> u32 {
    1
}
pub(super) fn replica_lag_time_max_ms() -> u64 {
    30_000
}
pub(super) fn network_latency_ms() -> u64 {
    1
}
pub(super) fn replica_fetch_wait_max_ms() -> u64 {
    500
}
pub(super) fn replica_fetch_max_bytes() -> u64 {
    1_048_576
}
pub(super) fn replica_fetch_backoff_ms() -> u64 {
    1_000
}
pub(super) fn heartbeat_interval_ms() -> u64 {
    2_000
}
pub(super) fn session_timeout_ms() -> u64 {
    9_000
}
pub(super) fn leader_imbalance_check_interval_ms() -> u64 {
    300_000
}
pub(super) fn yes() -> bool {
    true
}
pub(super) fn offsets_topic_partitions() -> u32 {
    50
}
pub(super) fn offsets_topic_replication_factor() -> u32 {
    3
}
pub(super) fn group_initial_rebalance_delay_ms() -> u64 {
    3_000
}
pub(super) fn group_consumer_heartbeat_interval_ms() -> u64 {
    5_000
}
pub(super) fn group_consumer_session_timeout_ms() -> u64 {
    45_000
}
pub(super) fn consumer_records_per_sec() -> u32 {
    1_000
}
pub(super) fn auto_commit_interval_ms() -> u64 {
    5_000
}
pub(super) fn consumer_session_timeout_ms() -> u64 {
    45_000
}
pub(super) fn consumer_heartbeat_interval_ms() -> u64 {
    3_000
}
pub(super) fn max_poll_interval_ms() -> u64 {
    300_000
}
pub(super) fn max_poll_records() -> u32 {
    500
}
pub(super) fn auto_offset_reset() -> OffsetReset {
    OffsetReset::Latest
}
pub(super) fn acks() -> Acks {
    Acks::All
}
pub(super) fn keys() -> Keys {
    Keys::None
}
pub(super) fn linger_ms() -> u64 {
    5
}
pub(super) fn batch_size() -> u32 {
    16_384
}
pub(super) fn record_bytes() -> u32 {
    100
}
pub(super) fn request_timeout_ms() -> u64 {
    30_000
}
pub(super) fn replica_socket_timeout_ms() -> u64 {
    30_000
}
pub(super) fn delivery_timeout_ms() -> u64 {
    120_000
}
pub(super) fn retry_backoff_ms() -> u64 {
    100
}
pub(super) fn retry_backoff_max_ms() -> u64 {
    1_000
}
pub(super) fn metadata_max_age_ms() -> u64 {
    300_000
}
pub(super) fn max_in_flight() -> u32 {
    5
}
pub(crate) fn retention_ms() -> i64 {
    604_800_000
}
pub(crate) fn retention_bytes() -> i64 {
    -1
}
pub(crate) fn segment_bytes() -> u64 {
    1_073_741_824
}
pub(crate) fn segment_ms() -> u64 {
    604_800_000
}
/// `offsets.topic.segment.bytes` (`GroupCoordinatorConfig.OFFSETS_TOPIC_SEGMENT_BYTES_DEFAULT`).
pub(super) fn offsets_topic_segment_bytes() -> u64 {
    104_857_600
}
/// `log.cleaner.backoff.ms` (`CleanerConfig.LOG_CLEANER_BACKOFF_MS`).
pub(super) fn log_cleaner_backoff_ms() -> u64 {
    15_000
}
/// `min.cleanable.dirty.ratio` (`LogConfig.DEFAULT_MIN_CLEANABLE_DIRTY_RATIO`).
pub(crate) fn min_cleanable_dirty_ratio() -> super::DirtyRatio {
    super::DirtyRatio::from_millionths(500_000)
}
/// `min.compaction.lag.ms` (`LogConfig.DEFAULT_MIN_COMPACTION_LAG_MS`).
pub(crate) fn min_compaction_lag_ms() -> u64 {
    0
}
/// `delete.retention.ms` (`LogConfig.DEFAULT_DELETE_RETENTION_MS`: a day).
pub(crate) fn delete_retention_ms() -> u64 {
    86_400_000
}
pub(super) fn log_retention_check_interval_ms() -> u64 {
    300_000
}
