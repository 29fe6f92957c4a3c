//! An append-mostly vector whose clones share all but the newest items: logs and the ledger of
//! acknowledged writes grow all run long, and a checkpoint of the model must not copy them whole.
//! Two vectors that hold the same items (a follower's log and its leader's) can share their
//! sealed chunks too, until a truncation parts them.

use std::sync::Arc;

/// Items are kept in sealed chunks of this many, shared between clones, plus an owned tail.
const CHUNK: usize = 64;

#[derive(Debug, Clone)]
pub struct Chunked<T> {
    sealed: Vec<Arc<[T]>>,
    tail: Vec<T>,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            sealed: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl<T: Clone> Chunked<T> {
    pub fn len(&self) -> usize {
        self.sealed.len() * CHUNK + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        let (chunk, at) = (i / CHUNK, i % CHUNK);
        match self.sealed.get(chunk) {
            Some(c) => c.get(at),
            None if chunk == self.sealed.len() => self.tail.get(at),
            None => None,
        }
    }

    /// Roughly the bytes a clone costs of its own: the newest items and a pointer per chunk.
    pub fn unshared_bytes(&self) -> usize {
        self.tail.len() * size_of::<T>() + self.sealed.len() * size_of::<Arc<[T]>>()
    }

    /// How many items are in sealed chunks, which [`Chunked::share_sealed`] can share.
    pub fn sealed_len(&self) -> usize {
        self.sealed.len() * CHUNK
    }

    /// Takes `other`'s sealed chunks in place of this vector's own from item `from` on, where
    /// they hold the same items: two replicas' logs then keep one copy of the records they agree
    /// on. Returns how many chunks are shared now.
    pub fn share_sealed(&mut self, other: &Chunked<T>, from: usize) -> usize
    where
        T: PartialEq,
    {
        let mut shared = 0;
        let end = self.sealed.len().min(other.sealed.len());
        for k in (from / CHUNK)..end {
            let (mine, theirs) = (&self.sealed[k], &other.sealed[k]);
            if Arc::ptr_eq(mine, theirs) {
                shared += 1;
            } else if mine[..] == theirs[..] {
                self.sealed[k] = Arc::clone(theirs);
                shared += 1;
            }
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
        }
    }

    /// Keeps the first `len` items.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        let (chunks, rest) = (len / CHUNK, len % CHUNK);
        if chunks < self.sealed.len() {
            self.tail = self.sealed[chunks][..rest].to_vec();
            self.sealed.truncate(chunks);
        } else {
            self.tail.truncate(rest);
        }
    }

    pub fn clear(&mut self) {
        self.sealed.clear();
        self.tail.clear();
    }

    /// The items from index `from` on.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> {
        let first = from / CHUNK;
        let skip = from % CHUNK;
        self.sealed
            .iter()
            .skip(first)
            .map(|c| &c[..])
            .chain(std::iter::once(&self.tail[..]).filter(move |_| first <= self.sealed.len()))
            .flatten()
            .skip(skip)
    }

    /// All items, from either end.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.sealed
            .iter()
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
        assert!(Arc::ptr_eq(&follower.sealed[0], &leader.sealed[0]));
        assert!(!Arc::ptr_eq(&follower.sealed[1], &leader.sealed[1]));
        assert!(Arc::ptr_eq(&follower.sealed[2], &leader.sealed[2]));
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
}
