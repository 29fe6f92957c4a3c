//! An append-mostly vector whose clones share all but the newest items: logs and the ledger of
//! acknowledged writes grow all run long, and a checkpoint of the model must not copy them whole.
//! Two vectors that hold the same items (a follower's log and its leader's) can share their
//! sealed chunks too, until a truncation parts them.

use std::sync::Arc;

/// Items are kept in sealed chunks of this many, shared between clones, plus an owned tail.
const CHUNK: usize = 32;

/// Sealed chunks are grouped this many at a time, and groups again this many into a super-group,
/// so that a clone copies a pointer per super-group (131,072 items), not per chunk: a checkpoint
/// of a log of millions of records then costs a kilobyte or two, however long the run.
const GROUP: usize = 64;

/// Chunks in a super-group.
const SUPER: usize = GROUP * GROUP;

type Chunk<T> = Arc<[T]>;
type Group<T> = Arc<[Chunk<T>]>;

#[derive(Debug, Clone)]
pub struct Chunked<T> {
    supers: Vec<Arc<[Group<T>]>>,
    /// The groups after the super-groups (fewer than `GROUP`).
    groups: Vec<Group<T>>,
    /// The sealed chunks after the groups (fewer than `GROUP`).
    sealed: Vec<Chunk<T>>,
    tail: Vec<T>,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            supers: Vec::new(),
            groups: Vec::new(),
            sealed: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl<T: Clone> Chunked<T> {
    /// How many sealed chunks there are, grouped or not.
    fn chunks(&self) -> usize {
        self.supers.len() * SUPER + self.groups.len() * GROUP + self.sealed.len()
    }

    /// Sealed chunk `k`.
    fn chunk(&self, k: usize) -> Option<&Chunk<T>> {
        let in_supers = self.supers.len() * SUPER;
        if k < in_supers {
            return Some(&self.supers[k / SUPER][k % SUPER / GROUP][k % GROUP]);
        }
        let k = k - in_supers;
        let in_groups = self.groups.len() * GROUP;
        if k < in_groups {
            Some(&self.groups[k / GROUP][k % GROUP])
        } else {
            self.sealed.get(k - in_groups)
        }
    }

    /// Puts `chunk` in place of sealed chunk `k`, copying the pointers of the groups that hold
    /// it (the old ones may be shared with clones).
    fn replace_chunk(&mut self, k: usize, chunk: Chunk<T>) {
        let in_supers = self.supers.len() * SUPER;
        if k < in_supers {
            let (s, g) = (k / SUPER, k % SUPER / GROUP);
            let mut group = self.supers[s][g].to_vec();
            group[k % GROUP] = chunk;
            let mut groups = self.supers[s].to_vec();
            groups[g] = group.into();
            self.supers[s] = groups.into();
            return;
        }
        let k = k - in_supers;
        let in_groups = self.groups.len() * GROUP;
        if k < in_groups {
            let mut group = self.groups[k / GROUP].to_vec();
            group[k % GROUP] = chunk;
            self.groups[k / GROUP] = group.into();
        } else {
            self.sealed[k - in_groups] = chunk;
        }
    }

    /// Every sealed chunk, in order.
    fn all_chunks(&self) -> impl DoubleEndedIterator<Item = &Chunk<T>> {
        self.supers
            .iter()
            .flat_map(|s| s.iter())
            .chain(&self.groups)
            .flat_map(|g| g.iter())
            .chain(&self.sealed)
    }

    pub fn len(&self) -> usize {
        self.chunks() * CHUNK + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        let (k, at) = (i / CHUNK, i % CHUNK);
        match self.chunk(k) {
            Some(c) => c.get(at),
            None if k == self.chunks() => self.tail.get(at),
            None => None,
        }
    }

    /// Roughly the bytes a clone costs of its own: the newest items and a pointer per
    /// super-group, per group not in one and per chunk not yet grouped.
    pub fn unshared_bytes(&self) -> usize {
        self.tail.len() * size_of::<T>()
            + (self.supers.len() + self.groups.len() + self.sealed.len()) * size_of::<Chunk<T>>()
    }

    /// How many items are in sealed chunks, which [`Chunked::share_sealed`] can share.
    pub fn sealed_len(&self) -> usize {
        self.chunks() * CHUNK
    }

    /// Takes `other`'s sealed chunks in place of this vector's own from item `from` on, where
    /// they hold the same items: two replicas' logs then keep one copy of the records they agree
    /// on. Returns how many chunks are shared now.
    pub fn share_sealed(&mut self, other: &Chunked<T>, from: usize) -> usize
    where
        T: PartialEq,
    {
        let mut shared = 0;
        for k in (from / CHUNK)..self.chunks().min(other.chunks()) {
            let (Some(mine), Some(theirs)) = (self.chunk(k), other.chunk(k)) else {
                break;
            };
            if Arc::ptr_eq(mine, theirs) {
                shared += 1;
                continue;
            }
            if mine[..] != theirs[..] {
                continue;
            }
            let theirs = Arc::clone(theirs);
            self.replace_chunk(k, theirs);
            shared += 1;
        }
        shared
    }

    pub fn last(&self) -> Option<&T> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn push(&mut self, item: T) {
        self.tail.push(item);
        if self.tail.len() == CHUNK {
            let full = std::mem::replace(&mut self.tail, Vec::with_capacity(CHUNK));
            self.sealed.push(full.into());
            if self.sealed.len() == GROUP {
                let group = std::mem::take(&mut self.sealed);
                self.groups.push(group.into());
                if self.groups.len() == GROUP {
                    let groups = std::mem::take(&mut self.groups);
                    self.supers.push(groups.into());
                }
            }
        }
    }

    /// Keeps the first `len` items.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        let (keep, rest) = (len / CHUNK, len % CHUNK);
        let Some(cut) = self.chunk(keep).cloned() else {
            // Within the tail.
            self.tail.truncate(rest);
            return;
        };
        self.tail = cut[..rest].to_vec();
        // Keep `keep` sealed chunks: the level that holds chunk `keep` is opened up into the
        // levels below it.
        let in_supers = self.supers.len() * SUPER;
        if keep < in_supers {
            let (s, g) = (keep / SUPER, keep % SUPER / GROUP);
            let opened = Arc::clone(&self.supers[s]);
            self.groups = opened[..g].to_vec();
            self.sealed = opened[g][..keep % GROUP].to_vec();
            self.supers.truncate(s);
            return;
        }
        let k = keep - in_supers;
        let g = k / GROUP;
        if g < self.groups.len() {
            self.sealed = self.groups[g][..k % GROUP].to_vec();
            self.groups.truncate(g);
        } else {
            self.sealed.truncate(k - self.groups.len() * GROUP);
        }
    }

    pub fn clear(&mut self) {
        self.supers.clear();
        self.groups.clear();
        self.sealed.clear();
        self.tail.clear();
    }

    /// The items from index `from` on.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> {
        let first = from / CHUNK;
        let skip = from % CHUNK;
        let chunks = self.chunks();
        self.all_chunks()
            .skip(first)
            .map(|c| &c[..])
            .chain(std::iter::once(&self.tail[..]).filter(move |_| first <= chunks))
            .flatten()
            .skip(skip)
    }

    /// All items, from either end.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.all_chunks()
            .map(|c| &c[..])
            .chain(std::iter::once(&self.tail[..]))
            .flatten()
    }
}

impl<'a, T: Clone> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = Box<dyn Iterator<Item = &'a T> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl<T: Clone> Extend<T> for Chunked<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Truncates both to `len`, checks they agree, and pushes a 7 onto both.
    fn truncate_and_push<T>(c: &mut Chunked<T>, v: &mut Vec<T>, len: usize)
    where
        T: Clone + PartialEq + std::fmt::Debug + From<u8>,
    {
        c.truncate(len);
        v.truncate(len);
        assert!(c.iter().eq(v.iter()), "truncate {len}");
        assert_eq!(c.len(), v.len());
        c.push(T::from(7));
        v.push(T::from(7));
        assert_eq!(c.last(), Some(&T::from(7)));
    }

    #[test]
    fn behaves_like_a_vec() {
        let mut c = Chunked::default();
        let mut v = Vec::new();
        for i in 0..(3 * CHUNK + 17) {
            c.push(i);
            v.push(i);
        }
        assert_eq!(c.len(), v.len());
        assert!(c.iter().eq(v.iter()));
        assert!(c.iter().rev().eq(v.iter().rev()));
        for from in [
            0,
            1,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK,
            3 * CHUNK + 16,
            3 * CHUNK + 17,
            5 * CHUNK,
        ] {
            assert!(c.iter_from(from).eq(v.iter().skip(from)), "from {from}");
        }
        let shared = c.clone();
        for len in [3 * CHUNK + 5, 2 * CHUNK + 3, 2 * CHUNK, 7, 0] {
            c.truncate(len);
            v.truncate(len);
            assert!(c.iter().eq(v.iter()), "truncate {len}");
            assert_eq!(c.get(len.saturating_sub(1)), v.get(len.saturating_sub(1)));
            c.push(99);
            v.push(99);
        }
        assert_eq!(shared.len(), 3 * CHUNK + 17, "a clone is untouched");
        assert_eq!(shared.get(2 * CHUNK + 3), Some(&(2 * CHUNK + 3)));
    }

    #[test]
    fn equal_sealed_chunks_are_shared_and_others_kept() {
        let mut leader: Chunked<usize> = Chunked::default();
        let mut follower: Chunked<usize> = Chunked::default();
        for i in 0..(3 * CHUNK + 5) {
            leader.push(i);
            // The follower's second chunk holds other items.
            follower.push(if (CHUNK..2 * CHUNK).contains(&i) {
                i + 1000
            } else {
                i
            });
        }
        assert_eq!(follower.share_sealed(&leader, 0), 2);
        assert!(Arc::ptr_eq(
            follower.chunk(0).unwrap(),
            leader.chunk(0).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            follower.chunk(1).unwrap(),
            leader.chunk(1).unwrap()
        ));
        assert!(Arc::ptr_eq(
            follower.chunk(2).unwrap(),
            leader.chunk(2).unwrap()
        ));
        assert_eq!(
            follower.get(CHUNK),
            Some(&(CHUNK + 1000)),
            "its own items stay"
        );
        assert_eq!(follower.len(), 3 * CHUNK + 5);
        // Truncating one leaves the other as it was.
        follower.truncate(CHUNK / 2);
        assert_eq!(leader.len(), 3 * CHUNK + 5);
        assert!(leader.iter().copied().eq(0..3 * CHUNK + 5));
        assert_eq!(follower.share_sealed(&leader, CHUNK), 0, "from an item on");
    }

    #[test]
    fn groups_of_chunks_behave_like_a_vec() {
        let n = 2 * GROUP * CHUNK + 3 * CHUNK + 9;
        let mut c: Chunked<usize> = (0..n).fold(Chunked::default(), |mut c, i| {
            c.push(i);
            c
        });
        let mut v: Vec<usize> = (0..n).collect();
        assert_eq!(c.groups.len(), 2);
        assert!(c.iter().eq(v.iter()) && c.iter().rev().eq(v.iter().rev()));
        for from in [
            0,
            GROUP * CHUNK - 1,
            GROUP * CHUNK,
            GROUP * CHUNK + 70,
            n - 1,
            n,
            n + 5,
        ] {
            assert!(c.iter_from(from).eq(v.iter().skip(from)), "from {from}");
        }
        let kept = c.clone();
        for len in [
            n - 3,
            2 * GROUP * CHUNK + 1,
            GROUP * CHUNK + 5 * CHUNK + 3,
            GROUP * CHUNK,
            100,
        ] {
            truncate_and_push(&mut c, &mut v, len);
        }
        assert!(kept.iter().copied().eq(0..n), "a clone is untouched");
        // A follower whose append completes a group shares the chunk that completed it.
        let mut leader: Chunked<usize> = Chunked::default();
        let mut follower: Chunked<usize> = Chunked::default();
        for i in 0..GROUP * CHUNK {
            leader.push(i);
            follower.push(i);
        }
        let from = (GROUP - 1) * CHUNK;
        assert_eq!(follower.share_sealed(&leader, from), 1);
        assert!(Arc::ptr_eq(
            follower.chunk(GROUP - 1).unwrap(),
            leader.chunk(GROUP - 1).unwrap()
        ));
        assert!(follower.iter().eq(leader.iter()));
    }

    #[test]
    fn super_groups_behave_like_a_vec_and_keep_clones_small() {
        let n = 2 * SUPER * CHUNK + 3 * GROUP * CHUNK + 5 * CHUNK + 9;
        let mut c: Chunked<u32> = Chunked::default();
        c.extend(0..n as u32);
        let mut v: Vec<u32> = (0..n as u32).collect();
        assert_eq!((c.supers.len(), c.groups.len(), c.sealed.len()), (2, 3, 5));
        // A clone copies a pointer per level's entry, not per group of the whole vector.
        assert_eq!(
            c.unshared_bytes(),
            9 * size_of::<u32>() + 10 * size_of::<Chunk<u32>>()
        );
        assert!(c.iter().eq(v.iter()) && c.iter().rev().eq(v.iter().rev()));
        for i in [
            0,
            SUPER * CHUNK - 1,
            SUPER * CHUNK,
            2 * SUPER * CHUNK + 1,
            n - 1,
        ] {
            assert_eq!(c.get(i), v.get(i), "get {i}");
        }
        for from in [SUPER * CHUNK + 77, 2 * SUPER * CHUNK + GROUP * CHUNK, n] {
            assert!(c.iter_from(from).eq(v.iter().skip(from)), "from {from}");
        }
        let kept = c.clone();
        // Into the groups, into the second super-group, at its start, into the first.
        for len in [
            2 * SUPER * CHUNK + GROUP * CHUNK + 3,
            SUPER * CHUNK + 5 * GROUP * CHUNK + 7 * CHUNK + 1,
            SUPER * CHUNK,
            SUPER * CHUNK - 1,
            3 * GROUP * CHUNK + 2 * CHUNK,
        ] {
            truncate_and_push(&mut c, &mut v, len);
        }
        assert!(kept.iter().copied().eq(0..n as u32), "a clone is untouched");
        // A chunk inside a super-group that differs is shared with an equal one, and the
        // clone it was shared with is untouched.
        let mut follower = kept.clone();
        let k = SUPER + 3 * GROUP + 2;
        let equal = follower.chunk(k).unwrap().to_vec();
        let mut differing = follower.chunk(k + 1).unwrap().to_vec();
        differing[0] += 1;
        follower.replace_chunk(k, equal.into());
        follower.replace_chunk(k + 1, differing.into());
        assert!(!Arc::ptr_eq(
            follower.chunk(k).unwrap(),
            kept.chunk(k).unwrap()
        ));
        assert_eq!(
            follower.share_sealed(&kept, k * CHUNK),
            kept.chunks() - k - 1
        );
        assert!(Arc::ptr_eq(
            follower.chunk(k).unwrap(),
            kept.chunk(k).unwrap()
        ));
        assert_eq!(
            follower.get((k + 1) * CHUNK),
            Some(&((k + 1) as u32 * CHUNK as u32 + 1))
        );
        assert!(
            kept.iter().copied().eq(0..n as u32),
            "what it shared with is untouched"
        );
    }
}
