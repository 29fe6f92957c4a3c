//! Kafka's own murmur2 vectors (`UtilsTest.testMurmur2`) and the partitions they give.

use kafkascope_model::partitioner::{murmur2, offsets_partition_for_group, partition_for_key};

/// Key, Kafka's murmur2 (signed), partition of 3, 6 and 12.
const VECTORS: &[(&str, i32, u32, u32, u32)] = &[
    ("21", -973932308, 0, 0, 0),
    ("foobar", -790332482, 0, 0, 6),
    ("a-little-bit-long-string", -985981536, 2, 2, 8),
    ("a-little-bit-longer-string", -1486304829, 2, 5, 11),
    (
        "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
        -58897971,
        2,
        5,
        5,
    ),
    ("abc", 479470107, 0, 3, 3),
];

#[test]
fn murmur2_matches_kafkas_vectors() {
    for (key, hash, ..) in VECTORS {
        assert_eq!(murmur2(key.as_bytes()), *hash, "murmur2({key:?})");
    }
}

#[test]
fn partitions_match_kafka() {
    for (key, _, p3, p6, p12) in VECTORS {
        assert_eq!(partition_for_key(key.as_bytes(), 3), *p3, "{key:?} of 3");
        assert_eq!(partition_for_key(key.as_bytes(), 6), *p6, "{key:?} of 6");
        assert_eq!(partition_for_key(key.as_bytes(), 12), *p12, "{key:?} of 12");
    }
}

#[test]
fn group_coordinator_partition() {
    // The reference's example: "my-group" hashes to -1906497762, partition 12 of 50.
    assert_eq!(
        kafkascope_model::partitioner::java_string_hash("my-group"),
        -1906497762
    );
    assert_eq!(offsets_partition_for_group("my-group", 50), 12);
}
