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
    /// `Box<[T]>`, freed on drop, or a part of `flat`).
    chunks: Box<[AtomicPtr<T>]>,
    /// Storage given by the creator for the first `flat_len` elements
    /// ([`Chunks::new_in`]): the chunks that lie wholly inside it are
    /// placed there, at their index, instead of allocated.
    flat: *mut T,
    flat_len: usize,
    /// The array owns its elements (and is `Send`/`Sync` as they are).
    _own: PhantomData<Box<[T]>>,
}

// SAFETY: `flat` is storage the array uses as it uses its own chunks
// (new_in's contract): the array is Send and Sync as its elements are.
unsafe impl<T: Send + Sync, const BASE: u32, const FIXED: u32> Send for Chunks<T, BASE, FIXED> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync, const BASE: u32, const FIXED: u32> Sync for Chunks<T, BASE, FIXED> {}

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
            flat: std::ptr::null_mut(),
            flat_len: 0,
            _own: PhantomData,
        }
    }

    /// As [`Chunks::new`], with the elements `[0, flat_len)` (as far as
    /// whole chunks reach) at `flat + index`: another process that maps
    /// the same memory finds element `i` there.
    ///
    /// # Safety
    /// `flat` points to `flat_len` elements' worth of zeroed memory,
    /// aligned for `T`, that stays mapped (and is not otherwise written
    /// from this process) while the array lives; all-zero bytes are a
    /// valid `T` equal to `T::default()`.
    pub(crate) unsafe fn new_in(limit: usize, flat: *mut T, flat_len: usize) -> Self {
        let mut c = Self::new(limit);
        c.flat = flat;
        c.flat_len = flat_len;
        c
    }

    /// The first index of chunk `c`.
    fn chunk_start(c: usize) -> usize {
        let steps = (FIXED - BASE) as usize;
        if c == 0 {
            0
        } else if c <= steps {
            1 << (BASE as usize + c - 1)
        } else {
            (c - steps) << FIXED
        }
    }

    /// Whether chunk `c` lives in the creator's storage.
    fn in_flat(&self, c: usize) -> bool {
        !self.flat.is_null() && Self::chunk_start(c) + Self::chunk_len(c) <= self.flat_len
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
        // Publishes `fresh` as chunk c, or returns the chunk another
        // writer published first.
        let publish = |fresh: *mut T| {
            cell.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
        };
        if p.is_null() && self.in_flat(c) {
            // SAFETY: the chunk lies inside `flat` (new_in's contract);
            // every writer publishes the same pointer.
            let fresh = unsafe { self.flat.add(Self::chunk_start(c)) };
            p = match publish(fresh) {
                Ok(_) => fresh,
                Err(won) => won,
            };
        }
        if p.is_null() {
            let fresh: Box<[T]> = std::iter::repeat_with(T::default)
                .take(Self::chunk_len(c))
                .collect();
            let fresh = Box::into_raw(fresh) as *mut T;
            p = match publish(fresh) {
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
        let flat: Vec<bool> = (0..self.chunks.len()).map(|c| self.in_flat(c)).collect();
        for (c, cell) in self.chunks.iter_mut().enumerate() {
            let p = *cell.get_mut();
            if !p.is_null() && !flat[c] {
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
    fn chunks_inside_given_storage_are_placed_at_their_index() {
        // 40 elements given: chunks [0,4) [4,8) [8,16) [16,32) fit, the
        // chunk [32,64) does not and is allocated.
        let mut flat = vec![0u64; 40];
        let base = flat.as_mut_ptr() as *mut AtomicU64;
        // SAFETY: 40 zeroed u64s, alive until the end of the test.
        let c: Chunks<AtomicU64, 2, 6> = unsafe { Chunks::new_in(100, base, 40) };
        for i in 0..100 {
            c.get_or_alloc(i)
                .unwrap()
                .store(i as u64 + 1, Ordering::Relaxed);
        }
        for (i, &x) in flat[..32].iter().enumerate() {
            assert_eq!(x, i as u64 + 1, "element {i} in the given storage");
        }
        assert!(
            flat[32..].iter().all(|&x| x == 0),
            "[32, 64) is its own chunk"
        );
        for i in 0..100 {
            assert_eq!(c.get(i).unwrap().load(Ordering::Relaxed), i as u64 + 1);
        }
        drop(c);
        assert_eq!(flat[5], 6, "the given storage is not freed");
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
