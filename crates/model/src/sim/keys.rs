//! Record keys in eight bytes. A log holds millions of records, and most keys are made by a rule
//! (`Sequence("order-")` numbers them, `Random(n)` draws a number): a record keeps the rule's
//! number, not the text, and the text is written out again when something shows or reports it.
//! Keys given as text (a fixed key, the timeline's `Produce`) and the sequences' prefixes are
//! kept once each, in the producer's table of names.

use std::fmt::Write as _;
use std::sync::Arc;

/// A record's key: a rule and its number, a name from the producer's table, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key(u64);

const TAG_SHIFT: u32 = 62;
const SEQUENCE: u64 = 0;
const RANDOM: u64 = 1;
const NAMED: u64 = 2;
/// Tag 3 is `Key::NONE`'s (every bit set), and a coordinator's: the group's index above
/// [`PARTITION_BITS`], and the partition's ordinal plus one below (0 for none).
const COORDINATOR: u64 = 3;
const PARTITION_BITS: u32 = 33;
const GROUP_MASK: u64 = (1 << (TAG_SHIFT - PARTITION_BITS)) - 1;
/// A sequence's number takes the low bits; the name of its prefix the bits above.
const NUMBER_BITS: u32 = 48;
const NUMBER_MASK: u64 = (1 << NUMBER_BITS) - 1;
/// The most names a producer's table holds: the prefix's index must fit in its bits.
pub const MAX_NAMES: usize = 1 << (TAG_SHIFT - NUMBER_BITS);

/// A compact key (16 bits): `Random` numbers below this, then names, then no key at the top.
const COMPACT_NAMED: u64 = 1 << 15;
/// The names a compact key can hold; the two values above them are kept for no key and for
/// the ledger's own use.
const COMPACT_NAMES: u64 = (1 << 15) - 2;
const COMPACT_NONE: u16 = u16::MAX;

impl Key {
    pub const NONE: Key = Key(u64::MAX);

    /// `{prefix}{n}`, the prefix being name `prefix` of the producer's table.
    pub fn sequence(prefix: usize, n: u64) -> Key {
        debug_assert!(prefix < MAX_NAMES && n <= NUMBER_MASK);
        Key((SEQUENCE << TAG_SHIFT) | ((prefix as u64) << NUMBER_BITS) | (n & NUMBER_MASK))
    }

    /// `key-{n}`, as `Random` keys are named.
    pub fn random(n: u64) -> Key {
        Key((RANDOM << TAG_SHIFT) | (n & ((1 << TAG_SHIFT) - 1)))
    }

    /// Name `index` of the producer's table.
    pub fn named(index: usize) -> Key {
        Key((NAMED << TAG_SHIFT) | index as u64)
    }

    /// The key of a record a group's coordinator writes to `__consumer_offsets`: the group,
    /// and the partition whose offset it commits, or none for the group's own metadata
    /// (Kafka's `OffsetCommitKey` and `GroupMetadataKey`). It has no text of its own.
    pub fn coordinator(group: u32, partition: Option<u32>) -> Key {
        let group = u64::from(group);
        debug_assert!(group < GROUP_MASK);
        let partition = partition.map_or(0, |p| u64::from(p) + 1);
        Key((COORDINATOR << TAG_SHIFT) | (group << PARTITION_BITS) | partition)
    }

    /// The key of a transaction marker, the control record a transaction coordinator has each
    /// partition leader write when the transaction ends (`ControlRecordType.COMMIT` or
    /// `ABORT`). It has no text of its own; its group is one no coordinator's key uses.
    pub fn marker(commit: bool) -> Key {
        let kind = if commit { 1 } else { 2 };
        Key((COORDINATOR << TAG_SHIFT) | (GROUP_MASK << PARTITION_BITS) | kind)
    }

    /// Whether a marker's key commits (`Some(true)`) or aborts (`Some(false)`); `None` for any
    /// other key.
    pub fn marker_of(self) -> Option<bool> {
        if self.tag() != COORDINATOR || self.payload() >> PARTITION_BITS != GROUP_MASK {
            return None;
        }
        match self.payload() & ((1 << PARTITION_BITS) - 1) {
            1 => Some(true),
            2 => Some(false),
            _ => None,
        }
    }

    /// The group and partition of a coordinator's key.
    pub fn coordinator_of(self) -> Option<(u32, Option<u32>)> {
        if self.tag() != COORDINATOR || self.is_none() || self.marker_of().is_some() {
            return None;
        }
        let partition = self.payload() & ((1 << PARTITION_BITS) - 1);
        let group = (self.payload() >> PARTITION_BITS) as u32;
        Some((group, partition.checked_sub(1).map(|p| p as u32)))
    }

    /// The key in 16 bits, where it fits: no key, a `Random` key below 2^15, or one of the
    /// first names of the producer's table. The ledger keeps one per acknowledged record.
    pub fn compact(self) -> Option<u16> {
        match self.tag() {
            _ if self.is_none() => Some(COMPACT_NONE),
            RANDOM if self.payload() < COMPACT_NAMED => Some(self.payload() as u16),
            NAMED if self.payload() < COMPACT_NAMES => {
                Some(COMPACT_NAMED as u16 | self.payload() as u16)
            }
            _ => None,
        }
    }

    /// The key [`Key::compact`] gave `compact` for.
    pub fn from_compact(compact: u16) -> Key {
        let c = u64::from(compact);
        if compact == COMPACT_NONE {
            Key::NONE
        } else if c < COMPACT_NAMED {
            Key::random(c)
        } else {
            Key::named((c - COMPACT_NAMED) as usize)
        }
    }

    pub fn is_none(self) -> bool {
        self == Key::NONE
    }

    fn tag(self) -> u64 {
        self.0 >> TAG_SHIFT
    }

    fn payload(self) -> u64 {
        self.0 & ((1 << TAG_SHIFT) - 1)
    }

    /// Writes the key's text into `out` (cleared first); false for no key.
    pub fn write(self, names: &[Arc<str>], out: &mut String) -> bool {
        out.clear();
        match self.tag() {
            SEQUENCE => {
                let prefix = (self.payload() >> NUMBER_BITS) as usize;
                out.push_str(&names[prefix]);
                let _ = write!(out, "{}", self.payload() & NUMBER_MASK);
            }
            RANDOM => {
                let _ = write!(out, "key-{}", self.payload());
            }
            NAMED => out.push_str(&names[self.payload() as usize]),
            _ => return false,
        }
        true
    }

    /// The key's text, or `None` for no key.
    pub fn text(self, names: &[Arc<str>]) -> Option<String> {
        let mut out = String::new();
        self.write(names, &mut out).then_some(out)
    }

    /// Whether the key's text is `text`, without writing it out.
    pub fn is(self, names: &[Arc<str>], text: &str) -> bool {
        // The decimal digits of `n`, exactly as `{n}` writes them.
        let number_is = |digits: &str, n: u64| {
            !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits.len() == 1 || !digits.starts_with('0'))
                && digits.parse::<u64>() == Ok(n)
        };
        match self.tag() {
            SEQUENCE => {
                let prefix = (self.payload() >> NUMBER_BITS) as usize;
                text.strip_prefix(&*names[prefix])
                    .is_some_and(|d| number_is(d, self.payload() & NUMBER_MASK))
            }
            RANDOM => text
                .strip_prefix("key-")
                .is_some_and(|d| number_is(d, self.payload())),
            NAMED => &*names[self.payload() as usize] == text,
            _ => false,
        }
    }
}

/// The index of `name` in a table of names, added if new.
pub fn intern(names: &mut Vec<Arc<str>>, name: &str) -> usize {
    match names.iter().position(|n| &**n == name) {
        Some(i) => i,
        None => {
            names.push(Arc::from(name));
            names.len() - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_write_the_text_they_were_made_from() {
        let mut names = Vec::new();
        let order = intern(&mut names, "order-");
        let fixed = intern(&mut names, "user-7");
        assert_eq!(intern(&mut names, "order-"), order, "a name is kept once");
        let cases = [
            (Key::sequence(order, 0), "order-0"),
            (Key::sequence(order, 1_234_567), "order-1234567"),
            (Key::random(99_999), "key-99999"),
            (Key::named(fixed), "user-7"),
        ];
        for (key, text) in cases {
            assert_eq!(key.text(&names).as_deref(), Some(text));
            assert!(key.is(&names, text), "{text}");
            assert!(!key.is(&names, &format!("{text}0")), "{text}0");
        }
        assert!(
            !Key::sequence(order, 5).is(&names, "order-05"),
            "no leading zeros"
        );
        assert!(!Key::sequence(order, 5).is(&names, "order-+5"));
        assert!(!Key::random(5).is(&names, "order-5"));
        assert_eq!(Key::NONE.text(&names), None);
        assert!(!Key::NONE.is(&names, ""));
        assert!(Key::NONE.is_none() && !Key::random(0).is_none());
        // A marker is neither no key nor a coordinator's, and has no text.
        for commit in [true, false] {
            let marker = Key::marker(commit);
            assert_eq!(marker.marker_of(), Some(commit));
            assert!(!marker.is_none() && marker.coordinator_of().is_none());
            assert_eq!(marker.text(&names), None);
        }
        assert_eq!(Key::NONE.marker_of(), None);
        assert_eq!(Key::coordinator(7, Some(3)).marker_of(), None);
        assert_eq!(Key::random(1).marker_of(), None);
        for (group, partition) in [(0, None), (0, Some(0)), (7, Some(u32::MAX)), (1000, None)] {
            let key = Key::coordinator(group, partition);
            assert_eq!(key.coordinator_of(), Some((group, partition)));
            assert!(!key.is_none() && key.text(&names).is_none());
        }
        assert_eq!(Key::NONE.coordinator_of(), None);
        for key in [
            Key::NONE,
            Key::random(0),
            Key::random((1 << 15) - 1),
            Key::named(0),
        ]
        .into_iter()
        .chain([Key::named((1 << 15) - 3)])
        {
            let compact = key.compact().expect("fits");
            assert!(compact < u16::MAX - 1 || key.is_none(), "{key:?}");
            assert_eq!(Key::from_compact(compact), key);
        }
        for key in [
            Key::random(1 << 15),
            Key::named((1 << 15) - 2),
            Key::sequence(0, 0),
            Key::coordinator(0, None),
        ] {
            assert_eq!(key.compact(), None, "{key:?}");
        }
        assert_eq!(Key::random(3).coordinator_of(), None);
    }
}
