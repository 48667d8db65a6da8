//! Type-stable storage: an array that grows in chunks and never moves or
//! frees an element while it lives.
//!
//! Readers index it without a lock: a chunk is published once (a pointer
//! set by compare-and-swap, read with one acquire load) and stays put, so a
//! reference to an element is good for the life of the array. That is what lets the registry's readers race with
//! writers on slots that are being reused: they may read stale values, never
//! freed memory.
//!
//! Chunk `0` holds indices `[0, 2^BASE)`; chunks `1..=FIXED-BASE` double
//! (`[2^(BASE+j-1), 2^(BASE+j))`); past `2^FIXED` every chunk holds `2^FIXED`
//! elements. Doubling keeps a small registry small, the fixed tail bounds the
//! memory allocated ahead of use to one chunk.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

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
    /// Chunk `c`: NULL, or the first of `chunk_len(c)` elements (a leaked
    /// `Box<[T]>`, freed on drop).
    chunks: Box<[AtomicPtr<T>]>,
    /// The array owns its elements (and is `Send`/`Sync` as they are).
    _own: PhantomData<Box<[T]>>,
}

impl<T, const BASE: u32, const FIXED: u32> Chunks<T, BASE, FIXED> {
    const OK: () = assert!(BASE <= FIXED && FIXED < usize::BITS);

    /// Storage for indices below `limit` (at least).
    pub(crate) fn new(limit: usize) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::OK;
        let last = Self::locate(limit.max(1) - 1).0;
        Chunks {
            chunks: (0..=last)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            _own: PhantomData,
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
        let p = self.chunks.get(c)?.load(Ordering::Acquire);
        // SAFETY: a published chunk holds chunk_len(c) elements, and
        // locate() keeps off below that; chunks live as long as self.
        (!p.is_null()).then(|| unsafe { &*p.add(off) })
    }

    /// Elements `[i, i + n)`, if they exist and lie in one chunk. Never
    /// blocks.
    #[inline]
    pub(crate) fn slice(&self, i: usize, n: usize) -> Option<&[T]> {
        let (c, off) = Self::locate(i);
        let p = self.chunks.get(c)?.load(Ordering::Acquire);
        if p.is_null() || off.checked_add(n)? > Self::chunk_len(c) {
            return None;
        }
        // SAFETY: as in get(), and off + n is within the chunk.
        Some(unsafe { std::slice::from_raw_parts(p.add(off), n) })
    }

    /// The element at `i`, allocating its chunk if needed (writers only:
    /// this may wait for another thread allocating the same chunk). `None`
    /// past the limit given to [`Chunks::new`].
    pub(crate) fn get_or_alloc(&self, i: usize) -> Option<&T>
    where
        T: Default,
    {
        let (c, off) = Self::locate(i);
        let cell = self.chunks.get(c)?;
        let mut p = cell.load(Ordering::Acquire);
        if p.is_null() {
            let fresh: Box<[T]> = std::iter::repeat_with(T::default)
                .take(Self::chunk_len(c))
                .collect();
            let fresh = Box::into_raw(fresh) as *mut T;
            p = match cell.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => fresh,
                Err(won) => {
                    // Another writer published this chunk first.
                    // SAFETY: `fresh` is ours alone, chunk_len(c) long.
                    drop(unsafe { Self::reclaim(fresh, c) });
                    won
                }
            };
        }
        // SAFETY: as in get().
        Some(unsafe { &*p.add(off) })
    }

    /// The box of chunk `c` whose first element is `p`.
    ///
    /// # Safety
    /// `p` came from `Box::into_raw` of a `Box<[T]>` of `chunk_len(c)`
    /// elements, and nothing else owns it.
    unsafe fn reclaim(p: *mut T, c: usize) -> Box<[T]> {
        // SAFETY: per the contract.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, Self::chunk_len(c))) }
    }

    /// Elements allocated so far (capacity), for memory accounting.
    pub(crate) fn allocated(&self) -> usize {
        (0..self.chunks.len())
            .filter(|&c| !self.chunks[c].load(Ordering::Relaxed).is_null())
            .map(Self::chunk_len)
            .sum()
    }

    /// Bytes of the chunk table itself.
    pub(crate) fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.chunks)
    }
}

impl<T, const BASE: u32, const FIXED: u32> Drop for Chunks<T, BASE, FIXED> {
    fn drop(&mut self) {
        for (c, cell) in self.chunks.iter_mut().enumerate() {
            let p = *cell.get_mut();
            if !p.is_null() {
                // SAFETY: a published chunk, owned here.
                drop(unsafe { Self::reclaim(p, c) });
            }
        }
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
