//! An append-mostly vector whose clones share its items, the newest included: logs and the ledger
//! of acknowledged writes grow all run long, and a checkpoint of the model must not copy them.
//! Two vectors that hold the same items (a follower's log and its leader's) share their buffers
//! too, until a truncation parts them. The items before its front ([`Chunked::drop_front`]: a log's
//! start, as retention moves it) are no longer read, and the chunks that hold only those are let
//! go: a log that retention keeps short keeps its memory short too, whatever its length.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Items are kept in sealed chunks of this many, shared between clones, plus a tail being filled.
pub const CHUNK: usize = 32;

/// Sealed chunks are grouped this many at a time, and groups again this many into a super-group,
/// so that a clone copies a pointer per super-group (131,072 items), not per chunk: a checkpoint
/// of a log of millions of records then costs a kilobyte or two, however long the run.
const GROUP: usize = 64;

/// Chunks in a super-group.
const SUPER: usize = GROUP * GROUP;

/// The room for one chunk's items. Clones share it whole, the tail being filled included: each
/// slot is written once, in order, by the holder that appends at the buffer's frontier, and no
/// holder looks past its own length. So a clone (a checkpoint) costs no copy of the newest
/// items, and the buffer it shares becomes the sealed chunk once full, with no copy either. A
/// holder that has to write below the frontier (one that was truncated, or a clone that another
/// went on from) copies its items into a buffer of its own first.
struct Buf<T> {
    /// Slots below this are claimed: each is written by its claimer before anyone can read it,
    /// and never changes again.
    written: AtomicUsize,
    slots: [UnsafeCell<MaybeUninit<T>>; CHUNK],
}

// SAFETY: a slot is written only by the one holder whose claim of it (`Buf::append`'s exchange
// of the frontier) succeeded, and read only by holders whose length covers it, which they could
// only reach after that write: the writer's own, and clones made from it later. Slots read and
// the slot written are therefore never the same memory at the same time.
unsafe impl<T: Send> Send for Buf<T> {}
unsafe impl<T: Send + Sync> Sync for Buf<T> {}

impl<T> Buf<T> {
    fn new() -> Arc<Self> {
        Arc::new(Buf {
            written: AtomicUsize::new(0),
            slots: [const { UnsafeCell::new(MaybeUninit::uninit()) }; CHUNK],
        })
    }

    /// Writes `item` into slot `at` if `at` is the frontier, where no holder has written or
    /// looks; gives it back otherwise.
    fn append(&self, at: usize, item: T) -> Result<(), T> {
        if at >= CHUNK {
            return Err(item);
        }
        match self
            .written
            .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: this call alone claimed slot `at`; nobody reads it before the caller
                // counts it in its length, after this write.
                unsafe { (*self.slots[at].get()).write(item) };
                Ok(())
            }
            Err(_) => Err(item),
        }
    }

    /// Its first `len` items.
    ///
    /// # Safety
    /// `len` is at most the length of a holder that appended or was cloned from one that did:
    /// those slots are written and no longer change.
    unsafe fn items(&self, len: usize) -> &[T] {
        debug_assert!(len <= self.written.load(Ordering::Acquire));
        // SAFETY: `UnsafeCell` and `MaybeUninit` have `T`'s layout, and the caller promises the
        // first `len` slots are written and unchanging.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr().cast::<T>(), len) }
    }

    /// A buffer holding copies of `items`, at most a chunk.
    fn copy_of(items: &[T]) -> Arc<Self>
    where
        T: Clone,
    {
        let buf = Self::new();
        for (at, item) in items.iter().enumerate() {
            assert!(buf.append(at, item.clone()).is_ok(), "a new buffer's slot");
        }
        buf
    }
}

impl<T> Drop for Buf<T> {
    fn drop(&mut self) {
        let written = *self.written.get_mut();
        for slot in &mut self.slots[..written] {
            // SAFETY: the slots below the frontier were written, and are dropped once, here.
            unsafe { slot.get_mut().assume_init_drop() };
        }
    }
}

/// A sealed chunk: a full buffer, or `None` once every item in it is before the front.
struct Chunk<T>(Option<Arc<Buf<T>>>);

impl<T> Clone for Chunk<T> {
    fn clone(&self) -> Self {
        Chunk(self.0.clone())
    }
}

impl<T> std::ops::Deref for Chunk<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            // SAFETY: a chunk is sealed only once its holder has written every slot.
            Some(buf) => unsafe { buf.items(CHUNK) },
            None => &[],
        }
    }
}

#[cfg(test)]
impl<T> Chunk<T> {
    fn ptr_eq(a: &Self, b: &Self) -> bool {
        match (&a.0, &b.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// `GROUP` chunks; empty once all of them are let go.
type Group<T> = Arc<[Chunk<T>]>;

/// The lists of pointers are shared with clones too, and copied by whichever side next changes
/// one: a checkpoint then copies only the lists its log changed since the one before.
#[derive(Clone)]
pub struct Chunked<T> {
    supers: Arc<Vec<Arc<[Group<T>]>>>,
    /// The super-groups before `supers`, let go whole and no longer listed: a day-long ledger
    /// would otherwise list a thousand, and every checkpoint copy the list.
    supers_gone: usize,
    /// The groups after the super-groups (fewer than `GROUP`).
    groups: Arc<Vec<Group<T>>>,
    /// The sealed chunks after the groups (fewer than `GROUP`).
    sealed: Arc<Vec<Chunk<T>>>,
    /// The chunk being filled, shared with clones; `None` until its first item.
    tail: Option<Arc<Buf<T>>>,
    /// How many of the tail's items are this vector's (fewer than `CHUNK`).
    tail_len: usize,
    /// The items before this index are no longer read.
    front: usize,
    /// The sealed chunks before this one are let go: empty groups and super-groups, or `None`.
    freed: usize,
    /// The chunk of placeholders that stands for every chunk vacated ([`Chunked::vacate`]),
    /// made at the first and shared with clones.
    vacant: Option<Arc<Buf<T>>>,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            supers: Default::default(),
            supers_gone: 0,
            groups: Default::default(),
            sealed: Default::default(),
            tail: None,
            tail_len: 0,
            front: 0,
            freed: 0,
            vacant: None,
        }
    }
}

impl<T: Clone + std::fmt::Debug> std::fmt::Debug for Chunked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone> Chunked<T> {
    /// How many sealed chunks there are, grouped or not.
    fn chunks(&self) -> usize {
        self.in_supers() + self.groups.len() * GROUP + self.sealed.len()
    }

    /// The chunks in super-groups, those let go included.
    fn in_supers(&self) -> usize {
        (self.supers_gone + self.supers.len()) * SUPER
    }

    /// Sealed chunk `k`; `None` past them, or where it was let go with its group.
    fn chunk(&self, k: usize) -> Option<&Chunk<T>> {
        let in_supers = self.in_supers();
        if k < in_supers {
            return self
                .supers
                .get((k / SUPER).checked_sub(self.supers_gone)?)?
                .get(k % SUPER / GROUP)?
                .get(k % GROUP);
        }
        let k = k - in_supers;
        let in_groups = self.groups.len() * GROUP;
        if k < in_groups {
            self.groups[k / GROUP].get(k % GROUP)
        } else {
            self.sealed.get(k - in_groups)
        }
    }

    /// The items of sealed chunk `k`, or of the tail after them: empty where they were let go.
    fn piece(&self, k: usize) -> &[T] {
        match self.chunk(k) {
            Some(c) => c,
            None if k == self.chunks() => self.tail(),
            None => &[],
        }
    }

    /// The items after the sealed chunks.
    fn tail(&self) -> &[T] {
        match &self.tail {
            // SAFETY: `tail_len` counts only items this vector appended, or had when cloned.
            Some(buf) => unsafe { buf.items(self.tail_len) },
            None => &[],
        }
    }

    pub fn len(&self) -> usize {
        self.chunks() * CHUNK + self.tail_len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first index still read: none before it is ([`Chunked::drop_front`]).
    pub fn front(&self) -> usize {
        self.front
    }

    /// Item `i`; `None` past the end or before the front.
    pub fn get(&self, i: usize) -> Option<&T> {
        if i < self.front {
            return None;
        }
        self.piece(i / CHUNK).get(i % CHUNK)
    }

    /// The items from index `i` to the end of its chunk (or of the tail): a run in one piece of
    /// memory, which another vector sharing that chunk holds at the same address. Empty past the
    /// end and before the front.
    pub fn run_at(&self, i: usize) -> &[T] {
        if i < self.front {
            return &[];
        }
        let items = self.piece(i / CHUNK);
        &items[(i % CHUNK).min(items.len())..]
    }

    /// Roughly the bytes a clone comes to hold alone: the list of the newest sealed chunks,
    /// which the original copies when it next seals one. The tail is shared, and becomes a
    /// sealed chunk with no copy; the lists of groups change once per `GROUP` chunks.
    pub fn unshared_bytes(&self) -> usize {
        self.sealed.len() * size_of::<Chunk<T>>()
    }

    pub fn last(&self) -> Option<&T> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The items before `front` are no longer read (a log's start moved past them): the chunks
    /// that hold only those are let go, so that they are freed once no clone holds them either.
    /// The front only moves forward, and never past the end. The chunk of the last item is kept,
    /// so that a truncation has an item to copy ([`Chunked::truncate`]).
    pub fn drop_front(&mut self, front: usize) {
        self.front = self.front.max(front.min(self.len()));
        let free_to = self.front.min(self.len().saturating_sub(1)) / CHUNK;
        while self.freed < free_to {
            let k = self.freed;
            let in_supers = self.in_supers();
            if k < in_supers {
                let (s, g) = (k / SUPER - self.supers_gone, k % SUPER / GROUP);
                let supers = Arc::make_mut(&mut self.supers);
                if k.is_multiple_of(SUPER) && k + SUPER <= free_to {
                    self.freed += SUPER;
                } else if k.is_multiple_of(GROUP) && k + GROUP <= free_to {
                    Arc::make_mut(&mut supers[s])[g] = Arc::from([]);
                    self.freed += GROUP;
                } else {
                    Arc::make_mut(&mut Arc::make_mut(&mut supers[s])[g])[k % GROUP] = Chunk(None);
                    self.freed += 1;
                }
                // A super-group let go whole leaves the list (it is always the first listed).
                if self.freed.is_multiple_of(SUPER) {
                    debug_assert_eq!(s, 0);
                    supers.remove(0);
                    self.supers_gone += 1;
                }
                continue;
            }
            let k = k - in_supers;
            let in_groups = self.groups.len() * GROUP;
            if k < in_groups {
                let groups = Arc::make_mut(&mut self.groups);
                if k.is_multiple_of(GROUP) && k + GROUP <= free_to - in_supers {
                    groups[k / GROUP] = Arc::from([]);
                    self.freed += GROUP;
                } else {
                    Arc::make_mut(&mut groups[k / GROUP])[k % GROUP] = Chunk(None);
                    self.freed += 1;
                }
                continue;
            }
            Arc::make_mut(&mut self.sealed)[k - in_groups] = Chunk(None);
            self.freed += 1;
        }
    }

    /// Moves the front past the items from it on that `gone` says are gone: a history kept in
    /// time order forgets what is older than it keeps.
    pub fn drop_front_while(&mut self, gone: impl Fn(&T) -> bool) {
        let mut front = self.front;
        while self.get(front).is_some_and(&gone) {
            front += 1;
        }
        self.drop_front(front);
    }

    /// Makes this vector `len` items long, all of them before its front: a log that starts
    /// again at `len` (a follower that fell behind its leader's log start). The places before
    /// it are copies of `filler`, in the chunk `len` is in only, and never read.
    pub fn start_at(&mut self, len: usize, filler: &T) {
        self.clear();
        let chunks = len / CHUNK;
        self.supers_gone = chunks / SUPER;
        self.groups = Arc::new((0..chunks % SUPER / GROUP).map(|_| Arc::from([])).collect());
        self.sealed = Arc::new((0..chunks % GROUP).map(|_| Chunk(None)).collect());
        let rest = len % CHUNK;
        self.set_tail(
            Some(Buf::copy_of(&vec![filler.clone(); rest])).filter(|_| rest > 0),
            rest,
        );
        self.front = len;
        self.freed = chunks;
    }

    pub fn push(&mut self, item: T) {
        let at = self.tail_len;
        let refused = match &self.tail {
            Some(buf) => buf.append(at, item).err(),
            None => Some(item),
        };
        if let Some(item) = refused {
            // A new chunk, or a buffer whose frontier is past this vector's items (a clone went
            // on from them, or this vector was truncated): fill a buffer of its own.
            let own = Buf::copy_of(self.tail());
            assert!(own.append(at, item).is_ok(), "a new buffer's slot");
            self.tail = Some(own);
        }
        self.tail_len += 1;
        self.seal_if_full();
    }

    /// Seals a full tail, grouping what fills a group.
    fn seal_if_full(&mut self) {
        if self.tail_len < CHUNK {
            return;
        }
        let full = self.tail.take().expect("a tail being filled");
        self.tail_len = 0;
        Arc::make_mut(&mut self.sealed).push(Chunk(Some(full)));
        if self.sealed.len() == GROUP {
            let group = self.sealed.iter().cloned().collect();
            self.sealed = Default::default();
            Arc::make_mut(&mut self.groups).push(group);
            if self.groups.len() == GROUP {
                let groups = self.groups.iter().cloned().collect();
                self.groups = Default::default();
                Arc::make_mut(&mut self.supers).push(groups);
            }
        }
    }

    /// Appends `items`, which `other` holds at the same indices where the two agree: this
    /// vector then takes `other`'s buffers instead of copying them, so a follower's log keeps no
    /// copy of the records its leader holds. Where they do not agree (the leader truncated
    /// since, or this vector's newest chunk is its own), it copies.
    pub fn extend_shared(&mut self, other: &Chunked<T>, mut items: &[T])
    where
        T: PartialEq,
    {
        while !items.is_empty() {
            let (k, at) = (self.chunks(), self.tail_len);
            let (now, rest) = items.split_at(items.len().min(CHUNK - at));
            items = rest;
            let theirs = match other.chunk(k) {
                Some(chunk) => chunk.0.as_ref().map(|buf| (buf, CHUNK)),
                None if k == other.chunks() => other.tail.as_ref().map(|b| (b, other.tail_len)),
                None => None,
            };
            let end = at + now.len();
            let adopted = theirs.filter(|(buf, their_len)| {
                *their_len >= end
                    // What this vector has of the chunk is theirs too.
                    && self.tail.as_ref().is_none_or(|mine| Arc::ptr_eq(mine, buf))
                    // SAFETY: `other` holds `their_len` of them.
                    && unsafe { &buf.items(end)[at..] } == now
            });
            match adopted {
                Some((buf, _)) => {
                    self.tail = Some(Arc::clone(buf));
                    self.tail_len = end;
                    self.seal_if_full();
                }
                None => now.iter().for_each(|item| self.push(item.clone())),
            }
        }
    }

    /// Keeps the first `len` items. Cut before the front, it starts again at `len`
    /// ([`Chunked::start_at`]), filling the places with copies of its last item; it panics if
    /// it holds none (started again at a multiple of `CHUNK` and not appended to since). A log
    /// is never cut there: below its log start it starts again instead (`Replica::truncate_to`).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        if len < self.front {
            // The last item's chunk is never let go: its last item fills the places.
            let filler = self.piece((self.len() - 1) / CHUNK).last().cloned();
            self.start_at(len, &filler.expect("the last item is kept"));
            return;
        }
        let (keep, rest) = (len / CHUNK, len % CHUNK);
        self.freed = self.freed.min(keep);
        let Some(cut) = self.chunk(keep).cloned() else {
            // Within the tail.
            self.set_tail(self.tail.clone(), rest);
            return;
        };
        // The chunk cut into becomes the tail; the next push copies what is kept of it. It is
        // at or after the front, so it was not let go.
        self.set_tail(cut.0, rest);
        // Keep `keep` sealed chunks: the level that holds chunk `keep` is opened up into the
        // levels below it.
        let in_supers = self.in_supers();
        if keep < in_supers {
            // At or after the front, so in a super-group still listed.
            let (s, g) = (keep / SUPER - self.supers_gone, keep % SUPER / GROUP);
            let opened = Arc::clone(&self.supers[s]);
            self.groups = Arc::new(opened[..g].to_vec());
            self.sealed = Arc::new(opened[g][..keep % GROUP].to_vec());
            Arc::make_mut(&mut self.supers).truncate(s);
            return;
        }
        let k = keep - in_supers;
        let g = k / GROUP;
        if g < self.groups.len() {
            self.sealed = Arc::new(self.groups[g][..k % GROUP].to_vec());
            Arc::make_mut(&mut self.groups).truncate(g);
        } else {
            let keep = k - self.groups.len() * GROUP;
            Arc::make_mut(&mut self.sealed).truncate(keep);
        }
    }

    /// Makes the tail `len` items of `buf`, letting go of an empty one.
    fn set_tail(&mut self, buf: Option<Arc<Buf<T>>>, len: usize) {
        self.tail = buf.filter(|_| len > 0);
        self.tail_len = len;
    }

    pub fn clear(&mut self) {
        *self = Chunked {
            vacant: self.vacant.take(),
            ..Chunked::default()
        };
    }

    /// No item of sealed chunk `k` will be read again for what it holds (compaction removed
    /// every one): the chunk is let go, freed once no clone holds it either, and a shared chunk
    /// of copies of `placeholder` keeps the places, so that every later item keeps its index.
    /// Does nothing to the tail, to a chunk before the front, or to one vacated already; says
    /// whether it vacated it.
    pub fn vacate(&mut self, k: usize, placeholder: &T) -> bool {
        let vacant = self
            .vacant
            .get_or_insert_with(|| Buf::copy_of(&vec![placeholder.clone(); CHUNK]))
            .clone();
        let held = |chunk: &Chunk<T>| chunk.0.as_ref().is_some_and(|b| !Arc::ptr_eq(b, &vacant));
        if k < self.freed || !self.chunk(k).is_some_and(held) {
            return false;
        }
        let in_supers = self.in_supers();
        let chunk = if k < in_supers {
            let s = k / SUPER - self.supers_gone;
            let group = &mut Arc::make_mut(&mut self.supers)[s];
            &mut Arc::make_mut(&mut Arc::make_mut(group)[k % SUPER / GROUP])[k % GROUP]
        } else if k - in_supers < self.groups.len() * GROUP {
            let k = k - in_supers;
            &mut Arc::make_mut(&mut Arc::make_mut(&mut self.groups)[k / GROUP])[k % GROUP]
        } else {
            let k = k - in_supers - self.groups.len() * GROUP;
            &mut Arc::make_mut(&mut self.sealed)[k]
        };
        *chunk = Chunk(Some(vacant));
        true
    }

    /// The items from index `from` on, or from the front if that is later.
    pub fn iter_from(&self, from: usize) -> impl DoubleEndedIterator<Item = &T> {
        let from = from.max(self.front);
        let (first, skip) = (from / CHUNK, from % CHUNK);
        // Straight to the first chunk wanted: a log's newest records are read far more often
        // than its oldest, and stepping over every chunk before them grew with the log.
        (first..=self.chunks()).flat_map(move |k| {
            let items = self.piece(k);
            if k == first {
                &items[skip.min(items.len())..]
            } else {
                items
            }
        })
    }

    /// All items from the front, from either end.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.iter_from(0)
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

    /// A clone shares the chunk being filled, which becomes the sealed chunk with no copy; each
    /// side then goes on without touching what the other sees.
    #[test]
    fn clones_share_the_tail_and_go_on_apart() {
        let mut c: Chunked<usize> = Chunked::default();
        c.extend(0..CHUNK + 5);
        let kept = c.clone();
        let shared = |a: &Chunked<usize>, b: &Chunked<usize>| {
            Arc::ptr_eq(a.tail.as_ref().unwrap(), b.tail.as_ref().unwrap())
        };
        assert!(shared(&c, &kept), "a clone copies no items");
        c.extend(CHUNK + 5..2 * CHUNK + 3);
        assert!(
            Arc::ptr_eq(
                c.chunk(1).unwrap().0.as_ref().unwrap(),
                kept.tail.as_ref().unwrap()
            ),
            "the shared tail became the sealed chunk"
        );
        assert!(
            kept.iter().copied().eq(0..CHUNK + 5),
            "the clone sees its own items"
        );
        // The clone goes on from its own length: it copies its items first.
        let mut other = kept.clone();
        other.push(1000);
        assert!(other.iter().copied().eq((0..CHUNK + 5).chain([1000])));
        assert!(!shared(&other, &kept));
        assert!(
            c.iter().copied().eq(0..2 * CHUNK + 3),
            "the first is untouched"
        );
        assert!(kept.iter().copied().eq(0..CHUNK + 5));
        // Truncated within the tail and pushed on, it leaves a clone's items as they were.
        let before = c.clone();
        c.truncate(2 * CHUNK + 1);
        c.push(7);
        assert!(c.iter().copied().eq((0..2 * CHUNK + 1).chain([7])));
        assert!(before.iter().copied().eq(0..2 * CHUNK + 3));
        // Truncated into a sealed chunk, it copies from it on its next push.
        c.truncate(CHUNK / 2);
        c.push(8);
        assert!(c.iter().copied().eq((0..CHUNK / 2).chain([8])));
        assert!(before.iter().copied().eq(0..2 * CHUNK + 3));
        assert!(kept.iter().copied().eq(0..CHUNK + 5));
    }

    /// Each item written is dropped once, however its buffer was shared, copied or cut.
    #[test]
    fn items_are_dropped_once() {
        let token = Arc::new(());
        {
            let mut c: Chunked<Arc<()>> = Chunked::default();
            for _ in 0..2 * CHUNK + 7 {
                c.push(Arc::clone(&token));
            }
            let mut d = c.clone();
            d.truncate(CHUNK + 3);
            d.push(Arc::clone(&token));
            c.push(Arc::clone(&token));
            // Both sealed chunks, the first's tail, and the second's copy of its 3 and its push.
            assert_eq!(Arc::strong_count(&token), 1 + 2 * CHUNK + 8 + 4);
            c.clear();
            // The second keeps the first chunk and its own buffer.
            assert_eq!(Arc::strong_count(&token), 1 + CHUNK + 4);
        }
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A follower appending what its leader holds takes the leader's buffers, the one being
    /// filled included; where they part, it copies, and neither sees the other's items.
    #[test]
    fn a_follower_takes_its_leaders_buffers_where_they_agree() {
        let mut leader: Chunked<usize> = Chunked::default();
        let mut follower: Chunked<usize> = Chunked::default();
        leader.extend(0..3 * CHUNK + 5);
        let items: Vec<usize> = (0..3 * CHUNK + 5).collect();
        // In uneven pieces, as fetches bring them.
        for piece in [
            &items[..7],
            &items[7..CHUNK + 1],
            &items[CHUNK + 1..3 * CHUNK + 2],
        ] {
            follower.extend_shared(&leader, piece);
        }
        for k in 0..3 {
            assert!(Chunk::ptr_eq(
                follower.chunk(k).unwrap(),
                leader.chunk(k).unwrap()
            ));
        }
        assert!(Arc::ptr_eq(
            follower.tail.as_ref().unwrap(),
            leader.tail.as_ref().unwrap()
        ));
        assert!(follower.iter().copied().eq(0..3 * CHUNK + 2));
        // The leader goes on in the shared buffer; the follower sees only its own items.
        leader.push(3 * CHUNK + 5);
        assert_eq!(follower.len(), 3 * CHUNK + 2);
        // The follower becomes the leader and appends its own: it copies, and the old
        // leader's items stay.
        follower.push(1000);
        assert!(
            follower
                .iter()
                .copied()
                .eq((0..3 * CHUNK + 2).chain([1000]))
        );
        assert!(leader.iter().copied().eq(0..3 * CHUNK + 6));
        // The old leader truncates to where they agree and follows: what the two disagree on
        // in this chunk is copied, and the next chunk is shared again.
        leader.truncate(3 * CHUNK + 2);
        let mut more: Vec<usize> = vec![1000];
        more.extend(3 * CHUNK + 3..4 * CHUNK + 4);
        follower.extend(more.iter().copied().skip(1));
        leader.extend_shared(&follower, &more);
        assert!(leader.iter().eq(follower.iter()));
        assert!(!Chunk::ptr_eq(
            leader.chunk(3).unwrap(),
            follower.chunk(3).unwrap()
        ));
        assert!(Arc::ptr_eq(
            leader.tail.as_ref().unwrap(),
            follower.tail.as_ref().unwrap()
        ));
        // Items that differ from the other's are copied, never taken.
        let mut other: Chunked<usize> = Chunked::default();
        other.extend_shared(&follower, &[5, 6, 7]);
        assert!(other.iter().copied().eq([5, 6, 7]));
        assert!(!Arc::ptr_eq(
            other.tail.as_ref().unwrap(),
            follower.chunk(0).unwrap().0.as_ref().unwrap()
        ));
    }

    #[test]
    fn runs_end_with_their_chunk_and_shared_ones_lie_at_one_address() {
        let mut leader: Chunked<usize> = Chunked::default();
        leader.extend(0..2 * CHUNK + 5);
        assert_eq!(leader.run_at(3), &(3..CHUNK).collect::<Vec<_>>()[..]);
        assert_eq!(
            leader.run_at(2 * CHUNK + 1),
            &[2 * CHUNK + 1, 2 * CHUNK + 2, 2 * CHUNK + 3, 2 * CHUNK + 4]
        );
        assert!(leader.run_at(2 * CHUNK + 5).is_empty());
        assert!(leader.run_at(10 * CHUNK).is_empty());
        let items: Vec<usize> = (0..2 * CHUNK + 3).collect();
        let mut follower: Chunked<usize> = Chunked::default();
        follower.extend_shared(&leader, &items);
        for i in [0, CHUNK + 7, 2 * CHUNK + 1] {
            let (l, f) = (leader.run_at(i), follower.run_at(i));
            assert!(std::ptr::eq(l.as_ptr(), f.as_ptr()));
            assert_eq!(f.len(), l.len().min(2 * CHUNK + 3 - i));
        }
        // Copied items lie elsewhere.
        let mut copy: Chunked<usize> = Chunked::default();
        copy.extend(0..2 * CHUNK + 5);
        assert!(!std::ptr::eq(
            copy.run_at(1).as_ptr(),
            leader.run_at(1).as_ptr()
        ));
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
        // A follower whose own partial chunk completes a group keeps that chunk (its items are
        // not the leader's buffer), and takes the leader's from the next chunk on.
        let mut leader: Chunked<usize> = Chunked::default();
        let mut follower: Chunked<usize> = Chunked::default();
        leader.extend(0..GROUP * CHUNK + 3);
        let items: Vec<usize> = (0..GROUP * CHUNK + 3).collect();
        follower.extend(items[..(GROUP - 1) * CHUNK + 4].iter().copied());
        follower.extend_shared(&leader, &items[(GROUP - 1) * CHUNK + 4..]);
        assert_eq!(follower.groups.len(), 1);
        assert!(
            !Chunk::ptr_eq(
                follower.chunk(GROUP - 1).unwrap(),
                leader.chunk(GROUP - 1).unwrap()
            ),
            "its own chunk stays its own"
        );
        assert!(follower.iter().eq(leader.iter()));
        assert!(Arc::ptr_eq(
            follower.tail.as_ref().unwrap(),
            leader.tail.as_ref().unwrap()
        ));
    }

    #[test]
    fn super_groups_behave_like_a_vec_and_keep_clones_small() {
        let n = 2 * SUPER * CHUNK + 3 * GROUP * CHUNK + 5 * CHUNK + 9;
        let mut c: Chunked<u32> = Chunked::default();
        c.extend(0..n as u32);
        let mut v: Vec<u32> = (0..n as u32).collect();
        assert_eq!((c.supers.len(), c.groups.len(), c.sealed.len()), (2, 3, 5));
        // A clone shares every list; what it comes to hold alone is the newest chunks' list.
        assert_eq!(c.unshared_bytes(), 5 * size_of::<Chunk<u32>>());
        let clone = c.clone();
        assert!(Arc::ptr_eq(&clone.sealed, &c.sealed) && Arc::ptr_eq(&clone.groups, &c.groups));
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
        // A follower takes the chunks of a super-group.
        let mut follower: Chunked<u32> = Chunked::default();
        let items: Vec<u32> = kept.iter().copied().collect();
        follower.extend_shared(&kept, &items);
        let k = SUPER + 3 * GROUP + 2;
        assert!(Chunk::ptr_eq(
            follower.chunk(k).unwrap(),
            kept.chunk(k).unwrap()
        ));
        assert!(follower.iter().eq(kept.iter()));
    }

    /// Past the front nothing is read, and the chunks wholly before it are let go: a clone made
    /// earlier keeps them until it is dropped, and then they are freed.
    #[test]
    fn a_dropped_front_is_not_read_and_its_chunks_are_freed() {
        let token = Arc::new(());
        // Over a super-group and a group, so that every level lets go of chunks.
        let len = SUPER * CHUNK + 3 * GROUP * CHUNK + 5 * CHUNK + 9;
        let mut c: Chunked<(usize, Arc<()>)> = Chunked::default();
        c.extend((0..len).map(|i| (i, Arc::clone(&token))));
        let earlier = c.clone();
        let count = || Arc::strong_count(&token) - 1;
        for front in [
            7,
            CHUNK,
            GROUP * CHUNK + 1,
            SUPER * CHUNK + 2 * GROUP * CHUNK + 3,
            SUPER * CHUNK + 3 * GROUP * CHUNK + 4 * CHUNK,
            len - 2,
        ] {
            c.drop_front(front);
            assert_eq!(c.front(), front);
            assert_eq!(c.len(), len, "the places stay where they were");
            assert_eq!(c.get(front - 1).map(|x| x.0), None, "front {front}");
            assert_eq!(c.get(front).map(|x| x.0), Some(front));
            assert!(c.iter().map(|x| x.0).eq(front..len), "front {front}");
            assert!(c.iter().rev().map(|x| x.0).eq((front..len).rev()));
            assert!(c.iter_from(0).map(|x| x.0).eq(front..len));
            assert!(c.run_at(front - 1).is_empty());
            assert!(
                earlier.iter().map(|x| x.0).eq(0..len),
                "a clone sees it all"
            );
        }
        assert_eq!(count(), len, "the clone holds every item");
        assert_eq!(
            (c.supers_gone, c.supers.len()),
            (1, 0),
            "a super-group let go leaves the list"
        );
        drop(earlier);
        // Only the last two items' chunk is left.
        assert_eq!(count(), len % CHUNK);
        // The front never moves back, and goes no further than the end.
        c.drop_front(3);
        assert_eq!(c.front(), len - 2);
        c.drop_front(len + 10);
        assert_eq!(c.front(), len);
        assert_eq!(c.iter().count(), 0);
        // It goes on from where it was.
        c.push((len, Arc::clone(&token)));
        assert_eq!(c.last().map(|x| x.0), Some(len));
        assert!(c.iter().map(|x| x.0).eq([len]));
    }

    /// A vacated chunk's places hold the placeholder, every other item keeps its index, and
    /// the chunk is freed once the clones made before let it go; the tail is never vacated.
    #[test]
    fn a_vacated_chunk_keeps_its_places_and_is_freed() {
        let token = Arc::new(());
        let len = SUPER * CHUNK + 2 * GROUP * CHUNK + 3 * CHUNK + 7;
        let mut c: Chunked<(usize, Arc<()>)> = Chunked::default();
        c.extend((0..len).map(|i| (i, Arc::clone(&token))));
        let earlier = c.clone();
        let count = || Arc::strong_count(&token) - 1;
        let placeholder = (usize::MAX, Arc::new(()));
        // One chunk at each level, then the tail, one again, and one before the front.
        let vacated = [1, SUPER + GROUP + 2, SUPER + 2 * GROUP + 1];
        for k in vacated {
            c.vacate(k, &placeholder);
        }
        c.vacate(SUPER + 2 * GROUP + 3, &placeholder);
        c.vacate(1, &placeholder);
        c.drop_front(CHUNK * 5);
        c.vacate(2, &placeholder);
        assert_eq!(c.len(), len);
        let expected = |i: usize| {
            if vacated.contains(&(i / CHUNK)) {
                usize::MAX
            } else {
                i
            }
        };
        assert!(c.iter().map(|x| x.0).eq((CHUNK * 5..len).map(expected)));
        assert_eq!(c.get(len - 1).map(|x| x.0), Some(len - 1), "the tail stays");
        assert!(
            earlier.iter().map(|x| x.0).eq(0..len),
            "a clone sees it all"
        );
        assert_eq!(
            Arc::strong_count(&placeholder.1),
            1 + CHUNK,
            "one placeholder chunk"
        );
        drop(earlier);
        assert_eq!(count(), len - CHUNK * 5 - 2 * CHUNK);
        // A follower that appends a vacated chunk takes it as it is.
        let mut leader: Chunked<usize> = Chunked::default();
        leader.extend(0..3 * CHUNK + 1);
        leader.vacate(1, &usize::MAX);
        let items: Vec<usize> = leader.iter().copied().collect();
        let mut follower: Chunked<usize> = Chunked::default();
        follower.extend_shared(&leader, &items);
        assert!(follower.iter().eq(leader.iter()));
        assert!(std::ptr::eq(
            follower.run_at(CHUNK).as_ptr(),
            leader.run_at(CHUNK).as_ptr()
        ));
    }

    /// A vector started again at an offset holds nothing before it, and goes on from it; one
    /// cut before its front starts again where it was cut.
    #[test]
    fn starts_again_at_an_offset() {
        for at in [0, 5, CHUNK, GROUP * CHUNK + 3, SUPER * CHUNK + CHUNK + 1] {
            let mut c: Chunked<usize> = Chunked::default();
            c.extend(0..10);
            c.start_at(at, &usize::MAX);
            assert_eq!((c.len(), c.front()), (at, at));
            assert_eq!(c.iter().count(), 0);
            c.extend(at..at + 2 * CHUNK);
            assert!(c.iter().copied().eq(at..at + 2 * CHUNK), "at {at}");
            assert_eq!(c.get(at + 1), Some(&(at + 1)));
            if at > 0 {
                assert_eq!(c.get(at - 1), None);
            }
        }
        let mut c: Chunked<usize> = Chunked::default();
        c.extend(0..5 * CHUNK);
        c.drop_front(3 * CHUNK + 2);
        c.truncate(CHUNK + 1);
        assert_eq!((c.len(), c.front()), (CHUNK + 1, CHUNK + 1));
        c.push(70);
        assert!(c.iter().copied().eq([70]));
        // Cut after the front, it keeps what it had there.
        c.extend(71..80);
        c.truncate(CHUNK + 5);
        assert!(c.iter().copied().eq(70..74));
    }
}
