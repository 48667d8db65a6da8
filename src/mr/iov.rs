//! Where the iov lists of multi-iov regions live: a type-stable pool of
//! `AtomicU64` pairs in power-of-two blocks, one lock-free free list per
//! block size.
//!
//! A region of `n > 1` iovs owns one block of `2^ceil(log2 n)` pairs. What a
//! pair holds depends on the addressing mode (see [`crate::mr::verify`]).
//! Blocks are never returned to the allocator, only to their free list, so
//! a reader racing with a close reads stale pairs at worst; the slot's
//! seqlock tells it to retry. Writers fence (release) before they fill a
//! block, as for slots.

use super::chunks::{Chunks, Padded};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Most iovs one region may have (Linux's `IOV_MAX`).
pub const MAX_IOVS: usize = 1024;
/// Blocks per size class (the slot's block field has 24 bits).
const MAX_BLOCKS: usize = 1 << 24;
const CLASSES: usize = MAX_IOVS.trailing_zeros() as usize + 1;

struct Class {
    // 4,096 words (32 KiB) first, then doubling: a block (at most 2,048
    // words) never straddles two chunks.
    words: Chunks<AtomicU64, 12, 40>,
    /// log2 of the words per block.
    shift: u32,
    free: Padded<FreeList>,
}

#[derive(Default)]
struct FreeList {
    /// `tag << 32 | (block + 1)`; the next free block + 1 is in word 0.
    head: AtomicU64,
    fresh: AtomicUsize,
}

pub(crate) struct IovPool {
    classes: Vec<Class>,
}

/// Size class (log2 of pairs per block) of a list of `n >= 2` iovs.
pub(crate) fn class_of(n: usize) -> usize {
    n.next_power_of_two().trailing_zeros() as usize
}

impl IovPool {
    pub(crate) fn new() -> IovPool {
        IovPool {
            classes: (0..CLASSES)
                .map(|c| Class {
                    words: Chunks::new(MAX_BLOCKS << (c + 1)),
                    shift: c as u32 + 1,
                    free: Padded::default(),
                })
                .collect(),
        }
    }

    /// A block for `n` iovs (`2 <= n <= MAX_IOVS`), owned by the caller.
    pub(crate) fn alloc(&self, n: usize) -> Option<u32> {
        let cl = self.classes.get(class_of(n))?;
        let mut h = cl.free.head.load(Ordering::Acquire);
        loop {
            let top = h as u32;
            if top == 0 {
                let b = cl.free.fresh.fetch_add(1, Ordering::Relaxed);
                if b >= MAX_BLOCKS {
                    cl.free.fresh.fetch_sub(1, Ordering::Relaxed);
                    return None;
                }
                let last = ((b + 1) << cl.shift) - 1;
                cl.words.get_or_alloc(last)?;
                return Some(b as u32);
            }
            let next = cl
                .words
                .get(((top - 1) as usize) << cl.shift)
                .map_or(0, |w| w.load(Ordering::Relaxed) & 0xffff_ffff);
            let new = (((h >> 32) + 1) << 32) | next;
            match cl
                .free
                .head
                .compare_exchange_weak(h, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(top - 1),
                Err(cur) => h = cur,
            }
        }
    }

    /// Returns a block that no live region refers to.
    pub(crate) fn free(&self, n: usize, block: u32) {
        let Some(cl) = self.classes.get(class_of(n)) else {
            return;
        };
        let Some(w0) = cl.words.get((block as usize) << cl.shift) else {
            return;
        };
        let mut h = cl.free.head.load(Ordering::Relaxed);
        loop {
            w0.store(h & 0xffff_ffff, Ordering::Relaxed);
            let new = (((h >> 32) + 1) << 32) | (u64::from(block) + 1);
            match cl
                .free
                .head
                .compare_exchange_weak(h, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(cur) => h = cur,
            }
        }
    }

    /// The words of the block holding `n` iovs: pair `i` is words `2i`,
    /// `2i + 1`. `None` for a block that was never allocated (a torn read).
    #[inline(always)]
    pub(crate) fn words(&self, n: usize, block: u32) -> Option<&[AtomicU64]> {
        let cl = self.classes.get(class_of(n))?;
        let all = cl
            .words
            .slice((block as usize) << cl.shift, 1 << cl.shift)?;
        all.get(..2 * n)
    }

    pub(crate) fn allocated_bytes(&self) -> usize {
        self.classes
            .iter()
            .map(|c| c.words.allocated() * 8 + c.words.table_bytes())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(2), 1);
        assert_eq!(class_of(3), 2);
        assert_eq!(class_of(4), 2);
        assert_eq!(class_of(5), 3);
        assert_eq!(class_of(MAX_IOVS), CLASSES - 1);
    }

    #[test]
    fn blocks_are_disjoint_and_recycled() {
        let p = IovPool::new();
        let a = p.alloc(3).unwrap();
        let b = p.alloc(4).unwrap();
        assert_ne!(a, b);
        for (i, w) in p.words(3, a).unwrap().iter().enumerate() {
            w.store(i as u64, Ordering::Relaxed);
        }
        for w in p.words(4, b).unwrap() {
            w.store(99, Ordering::Relaxed);
        }
        assert_eq!(p.words(3, a).unwrap().len(), 6);
        assert_eq!(p.words(3, a).unwrap()[5].load(Ordering::Relaxed), 5);
        p.free(3, a);
        assert_eq!(p.alloc(4), Some(a), "same class, LIFO");
        let big = p.alloc(MAX_IOVS).unwrap();
        assert_eq!(p.words(MAX_IOVS, big).unwrap().len(), 2 * MAX_IOVS);
        assert!(p.alloc(MAX_IOVS + 1).is_none());
        assert!(p.words(4, 1 << 20).is_none());
    }
}
