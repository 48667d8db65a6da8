//! Type-stable storage: an array that grows in chunks and never moves or
//! frees an element while it lives.
//!
//! Readers index it without a lock: a chunk is published once through a
//! [`OnceLock`] and stays put, so a reference to an element is good for the
//! life of the array. That is what lets the registry's readers race with
//! writers on slots that are being reused: they may read stale values, never
//! freed memory.
//!
//! Chunk `0` holds indices `[0, 2^BASE)`; chunks `1..=FIXED-BASE` double
//! (`[2^(BASE+j-1), 2^(BASE+j))`); past `2^FIXED` every chunk holds `2^FIXED`
//! elements. Doubling keeps a small registry small, the fixed tail bounds the
//! memory allocated ahead of use to one chunk.

use std::sync::OnceLock;

/// A value written often, kept off the cache lines that readers use (128
/// bytes: x86's adjacent-line prefetcher pulls lines in pairs).
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

pub(crate) struct Chunks<T, const BASE: u32, const FIXED: u32> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
}

impl<T: Default, const BASE: u32, const FIXED: u32> Chunks<T, BASE, FIXED> {
    const OK: () = assert!(BASE <= FIXED && FIXED < usize::BITS);

    /// Storage for indices below `limit` (at least).
    pub(crate) fn new(limit: usize) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::OK;
        let last = Self::locate(limit.max(1) - 1).0;
        Chunks {
            chunks: (0..=last).map(|_| OnceLock::new()).collect(),
        }
    }

    #[inline(always)]
    fn locate(i: usize) -> (usize, usize) {
        if i < 1 << BASE {
            (0, i)
        } else if i < 1 << FIXED {
            let hb = usize::BITS - 1 - i.leading_zeros();
            ((hb - BASE + 1) as usize, i - (1 << hb))
        } else {
            (
                (FIXED - BASE) as usize + (i >> FIXED),
                i & ((1 << FIXED) - 1),
            )
        }
    }

    fn chunk_len(c: usize) -> usize {
        let steps = (FIXED - BASE) as usize;
        if c == 0 {
            1 << BASE
        } else if c <= steps {
            1 << (BASE as usize + c - 1)
        } else {
            1 << FIXED
        }
    }

    /// The element at `i`, if its chunk exists. Never blocks.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let (c, off) = Self::locate(i);
        self.chunks.get(c)?.get()?.get(off)
    }

    /// Elements `[i, i + n)`, if they exist and lie in one chunk. Never
    /// blocks.
    #[inline]
    pub(crate) fn slice(&self, i: usize, n: usize) -> Option<&[T]> {
        let (c, off) = Self::locate(i);
        self.chunks.get(c)?.get()?.get(off..off.checked_add(n)?)
    }

    /// The element at `i`, allocating its chunk if needed (writers only:
    /// this may wait for another thread allocating the same chunk). `None`
    /// past the limit given to [`Chunks::new`].
    pub(crate) fn get_or_alloc(&self, i: usize) -> Option<&T> {
        let (c, off) = Self::locate(i);
        let cell = self.chunks.get(c)?;
        cell.get_or_init(|| {
            std::iter::repeat_with(T::default)
                .take(Self::chunk_len(c))
                .collect()
        })
        .get(off)
    }

    /// Elements allocated so far (capacity), for memory accounting.
    pub(crate) fn allocated(&self) -> usize {
        (0..self.chunks.len())
            .filter(|&c| self.chunks[c].get().is_some())
            .map(Self::chunk_len)
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
        let c: Chunks<AtomicU64, 2, 4> = Chunks::new(100);
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
        type C = Chunks<u8, 3, 6>;
        let c: C = Chunks::new(1000);
        let mut start = 0usize;
        for k in 0..c.chunks.len() {
            let len = C::chunk_len(k);
            assert_eq!(C::locate(start), (k, 0));
            assert_eq!(C::locate(start + len - 1), (k, len - 1));
            start += len;
        }
        assert!(start >= 1000);
    }

    #[test]
    fn get_does_not_allocate() {
        let c: Chunks<u8, 4, 8> = Chunks::new(1 << 12);
        assert!(c.get(0).is_none());
        assert_eq!(c.allocated(), 0);
        c.get_or_alloc(300).unwrap();
        assert_eq!(c.allocated(), 256);
        assert!(c.get(300).is_some() && c.get(0).is_none());
    }
}
