//! Kafka's key hashing, bit for bit: the producer's default partitioner and the group
//! coordinator's hash of a group id.

/// Kafka's `Utils.murmur2`: MurmurHash2 over the key's bytes, with Kafka's seed, on wrapping
/// 32-bit arithmetic. Returns the signed value Java computes.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    // The tail falls through from three bytes down to one, as in Kafka's switch.
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's `Utils.toPositive`: clears the sign bit (not `abs`, which overflows on `i32::MIN`).
pub fn to_positive(n: i32) -> u32 {
    (n & 0x7fff_ffff) as u32
}

/// The partition `BuiltInPartitioner.partitionForKey` picks for a key: every partition of the
/// topic counts, available or not.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    debug_assert!(partitions > 0);
    to_positive(murmur2(key)) % partitions
}

/// Java's `String.hashCode` over the string's UTF-16 code units, as the group coordinator uses it.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The `__consumer_offsets` partition that holds a group's commits and whose leader coordinates
/// it (`GroupCoordinator.partitionFor`): `Utils.abs(groupId.hashCode) % partitions`, where Kafka's
/// `abs(Integer.MIN_VALUE)` is 0.
pub fn offsets_partition_for_group(group: &str, partitions: u32) -> u32 {
    let h = java_string_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.unsigned_abs() };
    abs % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_lengths_differ() {
        // One key for each tail length 0..=3 must give four different hashes.
        let hashes: Vec<i32> = ["abcd", "abcde", "abcdef", "abcdefg"]
            .iter()
            .map(|k| murmur2(k.as_bytes()))
            .collect();
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn abs_of_min_is_zero() {
        assert_eq!(to_positive(i32::MIN), 0);
    }
}
