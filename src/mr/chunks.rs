//! Type-stable storage: an array that grows in chunks and never moves or
//! frees an element while it lives.
//!
//! Readers index it without a lock: a chunk is published once through a
//! [`OnceLock`] and stays put, so a reference to an element is good for the
//! life of the array. That is what lets the registry's readers race with
//! writers on slots that are being reused: they may read stale values, never
//! freed memory.
//!
//! Chunk `0` holds indices `[0, 2^base)`; chunks `1..=fixed-base` double
//! (`[2^(base+j-1), 2^(base+j))`); past `2^fixed` every chunk holds `2^fixed`
//! elements. Doubling keeps a small registry small, the fixed tail bounds the
//! memory allocated ahead of use to one chunk.

use std::sync::OnceLock;

pub(crate) struct Chunks<T> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
    base: u32,
    fixed: u32,
}

impl<T: Default> Chunks<T> {
    /// Storage for indices below `limit`; `base <= fixed`.
    pub(crate) fn new(base: u32, fixed: u32, limit: usize) -> Chunks<T> {
        debug_assert!(base <= fixed && fixed < usize::BITS);
        let last = Self::locate_with(base, fixed, limit.max(1) - 1).0;
        Chunks {
            chunks: (0..=last).map(|_| OnceLock::new()).collect(),
            base,
            fixed,
        }
    }

    fn locate_with(base: u32, fixed: u32, i: usize) -> (usize, usize) {
        if i < 1 << base {
            (0, i)
        } else if i < 1 << fixed {
            let hb = usize::BITS - 1 - i.leading_zeros();
            ((hb - base + 1) as usize, i - (1 << hb))
        } else {
            (
                (fixed - base) as usize + (i >> fixed),
                i & ((1 << fixed) - 1),
            )
        }
    }

    fn chunk_len(&self, c: usize) -> usize {
        let steps = (self.fixed - self.base) as usize;
        if c == 0 {
            1 << self.base
        } else if c <= steps {
            1 << (self.base as usize + c - 1)
        } else {
            1 << self.fixed
        }
    }

    /// The element at `i`, if its chunk exists. Never blocks.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let (c, off) = Self::locate_with(self.base, self.fixed, i);
        self.chunks.get(c)?.get()?.get(off)
    }

    /// The element at `i`, allocating its chunk if needed (writers only:
    /// this may wait for another thread allocating the same chunk). `None`
    /// past the limit given to [`Chunks::new`].
    pub(crate) fn get_or_alloc(&self, i: usize) -> Option<&T> {
        let (c, off) = Self::locate_with(self.base, self.fixed, i);
        let cell = self.chunks.get(c)?;
        let len = self.chunk_len(c);
        cell.get_or_init(|| std::iter::repeat_with(T::default).take(len).collect())
            .get(off)
    }

    /// Elements `[i, i + n)`, if they exist and lie in one chunk. Never
    /// blocks.
    #[inline]
    pub(crate) fn slice(&self, i: usize, n: usize) -> Option<&[T]> {
        let (c, off) = Self::locate_with(self.base, self.fixed, i);
        self.chunks.get(c)?.get()?.get(off..off.checked_add(n)?)
    }

    /// Elements allocated so far (capacity), for memory accounting.
    pub(crate) fn allocated(&self) -> usize {
        (0..self.chunks.len())
            .filter(|&c| self.chunks[c].get().is_some())
            .map(|c| self.chunk_len(c))
            .sum()
    }

    /// Bytes of the chunk table itself.
    pub(crate) fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn indices_map_to_distinct_elements() {
        let c: Chunks<AtomicU64> = Chunks::new(2, 4, 100);
        for i in 0..100 {
            c.get_or_alloc(i)
                .unwrap()
                .store(i as u64, Ordering::Relaxed);
        }
        for i in 0..100 {
            assert_eq!(c.get(i).unwrap().load(Ordering::Relaxed), i as u64);
        }
        assert!(c.get(1 << 20).is_none());
        assert_eq!(c.slice(16, 16).unwrap().len(), 16);
        assert!(c.slice(16, 17).is_none(), "crosses a chunk");
    }

    #[test]
    fn chunk_lengths_cover_every_index_once() {
        let (base, fixed) = (3u32, 6u32);
        let c: Chunks<u8> = Chunks::new(base, fixed, 1000);
        let mut start = 0usize;
        for k in 0..c.chunks.len() {
            let len = c.chunk_len(k);
            assert_eq!(Chunks::<u8>::locate_with(base, fixed, start), (k, 0));
            assert_eq!(
                Chunks::<u8>::locate_with(base, fixed, start + len - 1),
                (k, len - 1)
            );
            start += len;
        }
        assert!(start >= 1000);
    }

    #[test]
    fn get_does_not_allocate() {
        let c: Chunks<u8> = Chunks::new(4, 8, 1 << 12);
        assert!(c.get(0).is_none());
        assert_eq!(c.allocated(), 0);
        c.get_or_alloc(300).unwrap();
        assert_eq!(c.allocated(), 256);
        assert!(c.get(300).is_some() && c.get(0).is_none());
    }
}
