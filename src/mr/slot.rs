//! Region slots: 64 bytes of atomics per region, type-stable, recycled
//! through a lock-free free list, and through one slot kept per thread that
//! a close followed by a registration reuses without a locked instruction
//! ([`Slots`]).
//!
//! A slot is one cache line. Readers take a seqlock-style snapshot: load
//! `seq` (acquire), load the fields, fence (acquire), load `seq` again; equal
//! values mean the fields belong to the generation in `seq`. Writers own a
//! slot while it is not `READY` (after popping it from the free list, or
//! after the close CAS took it away from readers), and fence (release)
//! before writing its fields, so a reader that sees any new field value also
//! sees the changed `seq`. No reader ever waits for a writer.
//!
//! `seq`: bit 0 `READY` (published), bit 1 `ENABLED`, bit 2 `CONSUMED`,
//! bits 3-4 bindings, bits 5-23 the number of live sub-regions, bits 24-63
//! the generation (40 bits; it grows on every close, so a (slot,
//! generation) pair is live again only after 2^40 reuses of the slot, as
//! often as a provider key can repeat). All of a region's state changes are
//! one CAS on `seq`: close (only with no sub-regions), enable, bind,
//! consume, and adding or removing a sub-region. A reader whose snapshot
//! raced any of them retries.
//!
//! `meta` (written only while the slot is not `READY`): bits 0-7 access
//! (`Access` bits 6..13, shifted down by 6), 8-15 `RegFlags`, 16-19 iface,
//! 20-25 log2(page size) + 1 (0 = none), 26 has an auth key.
//!
//! `links`: bits 0-24 parent slot + 1 (0 = none), 25-39 iov count (0 or 1:
//! the single iov is `base`/`len` itself), 40-63 iov block index. While the
//! slot is free, `links` holds the next free slot + 1 in its low 32 bits
//! and, in its high 32 bits, the iov block the slot keeps for its next
//! region ([`parked_word`]; 0: none).

use super::chunks::{Chunks, Padded};
use super::region::{Access, Bindings, RegFlags};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

pub(crate) const READY: u64 = 1 << 0;
pub(crate) const ENABLED: u64 = 1 << 1;
pub(crate) const CONSUMED: u64 = 1 << 2;
pub(crate) const BIND_SHIFT: u32 = 3;
pub(crate) const CHILD_ONE: u64 = 1 << 5;
pub(crate) const CHILD_MASK: u64 = ((1 << 19) - 1) << 5;
pub(crate) const GEN_SHIFT: u32 = 24;
pub(crate) const GEN_MASK: u64 = (1 << 40) - 1;

pub(crate) const META_AUTH: u64 = 1 << 26;

pub(crate) const PARENT_MASK: u64 = (1 << 25) - 1;
pub(crate) const IOVS_SHIFT: u32 = 25;
pub(crate) const IOVS_MASK: u64 = (1 << 15) - 1;
pub(crate) const BLOCK_SHIFT: u32 = 40;

#[derive(Default)]
#[repr(C, align(64))]
pub(crate) struct Slot {
    pub seq: AtomicU64,
    pub key: AtomicU64,
    pub base: AtomicU64,
    pub len: AtomicU64,
    pub meta: AtomicU64,
    pub links: AtomicU64,
    pub context: AtomicU64,
    pub auth: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

#[inline]
pub(crate) fn gen_of(seq: u64) -> u64 {
    seq >> GEN_SHIFT
}

/// The `seq` of the next generation, not `READY`.
#[inline]
pub(crate) fn next_gen(seq: u64) -> u64 {
    ((gen_of(seq) + 1) & GEN_MASK) << GEN_SHIFT
}

#[inline]
pub(crate) fn children_of(seq: u64) -> u32 {
    ((seq & CHILD_MASK) >> 5) as u32
}

#[inline]
pub(crate) fn bindings_of(seq: u64) -> Bindings {
    Bindings::from_bits_truncate((seq >> BIND_SHIFT) as u8)
}

/// The `meta` word of a new region.
pub(crate) fn meta_word(
    access: Access,
    flags: RegFlags,
    iface: u8,
    page_shift: Option<u32>,
    auth: bool,
) -> u64 {
    ((access.bits() >> 6) & 0xff)
        | (u64::from(flags.bits()) << 8)
        | (u64::from(iface & 0xf) << 16)
        | (page_shift.map_or(0, |s| u64::from(s) + 1) << 20)
        | if auth { META_AUTH } else { 0 }
}

#[inline]
pub(crate) fn meta_access(meta: u64) -> Access {
    Access::from_bits_truncate((meta & 0xff) << 6)
}

#[inline]
pub(crate) fn meta_flags(meta: u64) -> RegFlags {
    RegFlags::from_bits_truncate((meta >> 8) as u8)
}

pub(crate) fn meta_iface(meta: u64) -> u8 {
    ((meta >> 16) & 0xf) as u8
}

pub(crate) fn meta_page_size(meta: u64) -> u64 {
    match (meta >> 20) & 0x3f {
        0 => 0,
        s => 1 << (s - 1),
    }
}

/// Bits of `meta` a sub-region inherits from its base (iface, page size).
pub(crate) const META_INHERIT: u64 = (0xf << 16) | (0x3f << 20);

pub(crate) fn links_word(parent: Option<u32>, iovs: usize, block: u32) -> u64 {
    parent.map_or(0, |p| u64::from(p) + 1)
        | ((iovs as u64 & IOVS_MASK) << IOVS_SHIFT)
        | (u64::from(block) << BLOCK_SHIFT)
}

#[inline]
pub(crate) fn links_parent(links: u64) -> Option<u32> {
    match links & PARENT_MASK {
        0 => None,
        p => Some((p - 1) as u32),
    }
}

#[inline]
pub(crate) fn links_iovs(links: u64) -> usize {
    ((links >> IOVS_SHIFT) & IOVS_MASK) as usize
}

#[inline]
pub(crate) fn links_block(links: u64) -> u32 {
    (links >> BLOCK_SHIFT) as u32
}

/// The high half of a free slot's `links`: the iov block of size class
/// `class` ([`crate::mr::iov`]) that the slot's last region used, kept for
/// the slot's next region (a register/close pair of the same shape then
/// takes no block from the pool's free list and returns none to it).
pub(crate) fn parked_word(class: usize, block: u32) -> u32 {
    (1 << 31) | ((class as u32 & 0x7f) << 24) | (block & 0xff_ffff)
}

/// The (class, block) of a parked word, if it holds one.
pub(crate) fn parked_block(word: u32) -> Option<(usize, u32)> {
    (word != 0).then_some((((word >> 24) & 0x7f) as usize, word & 0xff_ffff))
}

/// The slots of one registry and their free list (a Treiber stack whose
/// head carries an ABA tag: `tag << 32 | (index + 1)`).
///
/// A thread that closes a region keeps its slot for its own next
/// registration in the same registry, in an entry of [`Slots::kept`] that
/// only it reads and writes: a close followed by a registration, the
/// common pattern, then takes no locked instruction for the slot (the
/// stack's pop and push are one CAS each, about 5 ns apiece where it was
/// measured: together a quarter of a 43 ns register/close pair). The stack
/// lacks the kept slots:
/// - at most one per thread that registers in the registry, and only while
///   its entry is its own (the entries are [`KEPT`], taken by the first
///   thread that maps to each, for the registry's life): a registry at its
///   region limit can refuse a registration (FI_ENOSPC) while another
///   thread keeps a slot;
/// - a thread that exits keeping a slot leaves it in its entry, for a
///   thread later given the same thread pointer (the C library reuses
///   them): at most [`KEPT`] slots of a registry stay unused so.
pub(crate) struct Slots {
    /// 256 slots (16 KiB) first, doubling to chunks of 16,384 (1 MiB).
    slots: Chunks<Slot, 8, 14>,
    limit: usize,
    free: Padded<FreeList>,
    /// The kept slots, an entry per thread (by [`thread_word`]).
    kept: [Padded<Kept>; KEPT],
}

#[derive(Default)]
struct FreeList {
    head: AtomicU64,
    /// Slots handed out so far from fresh storage.
    fresh: AtomicUsize,
}

/// Entries of [`Slots::kept`]: `2^KEPT_BITS`.
const KEPT_BITS: u32 = 4;
const KEPT: usize = 1 << KEPT_BITS;

/// A thread's kept slot in one registry.
#[derive(Default)]
struct Kept {
    /// The thread that owns the entry ([`thread_word`]; 0: none yet).
    owner: AtomicU64,
    /// Its kept slot's index plus one (0: none). Read and written by the
    /// owner alone.
    idx: AtomicU32,
}

/// A word that tells live threads apart: the thread pointer, which the
/// x86-64 TLS ABI keeps at `%fs:0` (one load, where the thread-local
/// storage of a shared library costs a call).
#[inline(always)]
pub(crate) fn thread_word() -> u64 {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tp: u64;
        // SAFETY: reads the thread control block's self pointer, which the
        // x86-64 psABI places at %fs:0 in every thread.
        unsafe {
            core::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) tp,
                options(nostack, readonly, preserves_flags)
            )
        };
        tp
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        // SAFETY: pthread_self has no preconditions.
        (unsafe { libc::pthread_self() }) as u64
    }
}

impl Slots {
    pub(crate) fn new(limit: usize) -> Slots {
        Slots {
            slots: Chunks::new(limit),
            limit,
            free: Padded::default(),
            kept: Default::default(),
        }
    }

    /// As [`Slots::new`], with slots `[0, n)` (as far as whole chunks
    /// reach) at `mem + 64 * index`.
    ///
    /// # Safety
    /// As [`Chunks::new_in`]: `mem` is 64-byte aligned, zeroed, `64 * n`
    /// bytes, mapped while the slots live.
    pub(crate) unsafe fn new_in(limit: usize, mem: *mut u8, n: usize) -> Slots {
        Slots {
            // SAFETY: per the contract; an all-zero Slot is Slot::default().
            slots: unsafe { Chunks::new_in(limit, mem as *mut Slot, n) },
            limit,
            free: Padded::default(),
            kept: Default::default(),
        }
    }

    #[inline(always)]
    pub(crate) fn get(&self, i: u32) -> Option<&Slot> {
        self.slots.get(i as usize)
    }

    /// A free slot, owned by the caller until it publishes or pushes it.
    #[cfg(test)]
    pub(crate) fn pop(&self) -> Option<u32> {
        self.pop_slot().map(|(i, _)| i)
    }

    /// A free slot and its index, owned by the caller until it publishes
    /// or pushes it.
    #[inline(always)]
    pub(crate) fn pop_slot(&self) -> Option<(u32, &Slot)> {
        if let Some(i) = self.take_kept() {
            return self.get(i).map(|s| (i, s));
        }
        let mut h = self.free.head.load(Ordering::Acquire);
        loop {
            let top = h as u32;
            if top == 0 {
                return self.fresh();
            }
            // A stale `next` (the slot was popped and reused meanwhile) is
            // harmless: the tag makes the CAS fail.
            let slot = self.get(top - 1);
            let next = slot.map_or(0, |s| s.links.load(Ordering::Relaxed) & 0xffff_ffff);
            let new = (((h >> 32) + 1) << 32) | next;
            match self
                .free
                .head
                .compare_exchange_weak(h, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return slot.map(|s| (top - 1, s)),
                Err(cur) => h = cur,
            }
        }
    }

    /// This thread's entry of [`Slots::kept`], if it owns it (or can
    /// take it, with `take`).
    #[inline(always)]
    fn my_kept(&self, take: bool) -> Option<&Kept> {
        let me = thread_word();
        // Fibonacci hashing: the product's top bits pick the entry.
        let e = &self.kept[(me.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - KEPT_BITS)) as usize];
        let owner = e.owner.load(Ordering::Relaxed);
        if owner == me || (take && owner == 0 && Self::claim(e, me)) {
            Some(e)
        } else {
            None
        }
    }

    #[cold]
    #[inline(never)]
    fn claim(e: &Kept, me: u64) -> bool {
        e.owner
            .compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// The slot this thread kept from its last push in this registry.
    #[inline(always)]
    fn take_kept(&self) -> Option<u32> {
        let e = self.my_kept(false)?;
        let i = e.idx.load(Ordering::Relaxed);
        if i == 0 {
            return None;
        }
        e.idx.store(0, Ordering::Relaxed);
        Some(i - 1)
    }

    /// Keeps free slot `i` for this thread's next pop in this registry.
    /// Returns the slot the caller pushes on the stack instead: none, or
    /// the one the thread kept before (so that one thread's pops stay in
    /// LIFO order), or `i` itself when the thread has no entry.
    #[inline(always)]
    fn keep(&self, i: u32) -> Option<u32> {
        let Some(e) = self.my_kept(true) else {
            return Some(i);
        };
        let old = e.idx.load(Ordering::Relaxed);
        e.idx.store(i + 1, Ordering::Relaxed);
        old.checked_sub(1)
    }

    #[cold]
    #[inline(never)]
    fn fresh(&self) -> Option<(u32, &Slot)> {
        let i = self.free.fresh.fetch_add(1, Ordering::Relaxed);
        if i >= self.limit {
            self.free.fresh.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let slot = self.slots.get_or_alloc(i)?;
        Some((i as u32, slot))
    }

    /// Returns a slot that nobody can reach any more.
    #[cfg(test)]
    pub(crate) fn push(&self, i: u32) {
        if let Some(slot) = self.get(i) {
            self.push_slot(i, slot, 0);
        }
    }

    /// Returns slot `i` (`slot`), which nobody can reach any more, keeping
    /// `parked` ([`parked_word`]) with it.
    #[inline]
    pub(crate) fn push_slot(&self, i: u32, slot: &Slot, parked: u32) {
        // The parked word stays in the slot however it is kept; the low
        // half (the next free slot) is the stack's.
        slot.links.store(u64::from(parked) << 32, Ordering::Relaxed);
        if let Some(j) = self.keep(i) {
            if let Some(s) = self.get(j) {
                self.push_stack(j, s);
            }
        }
    }

    /// Pushes free slot `i` (`slot`) on the stack, with the parked word its
    /// `links` holds.
    fn push_stack(&self, i: u32, slot: &Slot) {
        let parked = slot.links.load(Ordering::Relaxed) >> 32;
        let mut h = self.free.head.load(Ordering::Relaxed);
        loop {
            slot.links
                .store((parked << 32) | (h & 0xffff_ffff), Ordering::Relaxed);
            let new = (((h >> 32) + 1) << 32) | (u64::from(i) + 1);
            match self
                .free
                .head
                .compare_exchange_weak(h, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(cur) => h = cur,
            }
        }
    }

    /// Allocates ahead so that `n` more fresh slots exist.
    pub(crate) fn reserve(&self, n: usize) {
        let from = self.free.fresh.load(Ordering::Relaxed);
        let to = from.saturating_add(n).min(self.limit);
        let mut i = from;
        while i < to {
            if self.slots.get_or_alloc(i).is_none() {
                break;
            }
            i += 256;
        }
        if to > from {
            self.slots.get_or_alloc(to - 1);
        }
    }

    /// Slots ever handed out (an upper bound on live slot indices).
    pub(crate) fn high_water(&self) -> usize {
        self.free.fresh.load(Ordering::Relaxed).min(self.limit)
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn allocated_bytes(&self) -> usize {
        self.slots.allocated() * std::mem::size_of::<Slot>() + self.slots.table_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn word_layouts_round_trip() {
        let a = Access::REMOTE_READ | Access::COLLECTIVE | Access::SEND;
        let f = RegFlags::VIRT_ADDR | RegFlags::PMEM;
        let m = meta_word(a, f, 5, Some(21), true);
        assert_eq!(meta_access(m), a);
        assert_eq!(meta_flags(m), f);
        assert_eq!(meta_iface(m), 5);
        assert_eq!(meta_page_size(m), 1 << 21);
        assert_ne!(m & META_AUTH, 0);
        assert_eq!(m >> 32, 0);
        let seq = (GEN_MASK << GEN_SHIFT) | CHILD_MASK | READY;
        assert_eq!(gen_of(seq), GEN_MASK);
        assert_eq!(children_of(seq), (1 << 19) - 1);
        assert_eq!(next_gen(seq), 0, "the generation wraps at 2^40");
        assert_eq!(gen_of(next_gen(7 << GEN_SHIFT | CHILD_ONE | READY)), 8);
        assert_eq!(meta_page_size(meta_word(a, f, 0, None, false)), 0);
        assert_eq!(
            meta_access(meta_word(Access::all(), f, 0, None, false)),
            Access::all()
        );
        let l = links_word(Some((1 << 24) - 1), 1024, (1 << 24) - 1);
        assert_eq!(links_parent(l), Some((1 << 24) - 1));
        assert_eq!(links_iovs(l), 1024);
        assert_eq!(links_block(l), (1 << 24) - 1);
        assert_eq!(links_parent(links_word(None, 1, 0)), None);
    }

    #[test]
    fn free_list_is_lifo_and_bounded() {
        let s = Slots::new(3);
        let a = s.pop().unwrap();
        let b = s.pop().unwrap();
        let c = s.pop().unwrap();
        assert_eq!(s.pop(), None);
        assert_eq!(HashSet::from([a, b, c]).len(), 3);
        s.push(b);
        s.push(a);
        assert_eq!(s.pop(), Some(a));
        assert_eq!(s.pop(), Some(b));
        assert_eq!(s.pop(), None);
        assert_eq!(s.high_water(), 3);
    }

    /// The slots kept in `s`'s entries.
    fn kept(s: &Slots) -> Vec<u32> {
        s.kept
            .iter()
            .filter_map(|e| e.idx.load(Ordering::Relaxed).checked_sub(1))
            .collect()
    }

    #[test]
    fn a_thread_keeps_the_slot_it_freed_and_no_other_thread_gets_it() {
        let s = Slots::new(4);
        let a = s.pop().unwrap();
        s.push(a);
        assert_eq!(
            s.free.head.load(Ordering::Relaxed) as u32,
            0,
            "kept, not stacked"
        );
        assert_eq!(kept(&s), vec![a]);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let b = s.pop().unwrap();
                assert_ne!(b, a, "another thread's kept slot is not handed out");
                s.push(b);
                assert_eq!(s.pop(), Some(b));
                s.push(b);
            });
        });
        // The other thread kept its slot in an entry of its own, or pushed
        // it on the stack where its entry was this thread's.
        let theirs = kept(&s).into_iter().filter(|&i| i != a).count();
        assert_eq!(s.pop(), Some(a), "this thread's kept slot first");
        let stacked = std::iter::from_fn(|| s.pop()).take(4).count();
        assert_eq!(
            theirs + stacked,
            3,
            "every slot is kept, stacked or fresh once"
        );
        assert!(s.high_water() <= 4);
    }

    #[test]
    fn a_thread_keeps_one_slot_in_each_registry() {
        let (x, y) = (Slots::new(8), Slots::new(8));
        let a = x.pop().unwrap();
        let b = y.pop().unwrap();
        x.push(a);
        y.push(b);
        assert_eq!((kept(&x), kept(&y)), (vec![a], vec![b]));
        assert_eq!(y.pop(), Some(b));
        assert_eq!(x.pop(), Some(a));
        assert!(kept(&x).is_empty() && kept(&y).is_empty());
    }

    #[test]
    fn a_slot_kept_by_an_exited_thread_is_not_handed_out_and_is_counted() {
        let s = Slots::new(64);
        let mut held = Vec::new();
        std::thread::scope(|sc| {
            for _ in 0..8 {
                sc.spawn(|| {
                    let i = s.pop().unwrap();
                    s.push(i);
                });
            }
        });
        while let Some(i) = s.pop() {
            held.push(i);
        }
        let k = kept(&s);
        assert!(k.len() <= KEPT);
        for i in &k {
            assert!(!held.contains(i), "kept slot {i} handed out");
        }
        assert_eq!(held.len() + k.len(), 64);
    }

    #[test]
    fn one_thread_pops_in_lifo_order_across_its_kept_slot_and_the_stack() {
        let s = Slots::new(8);
        let v: Vec<u32> = (0..5).map(|_| s.pop().unwrap()).collect();
        for &i in &v {
            s.push(i);
        }
        let back: Vec<u32> = (0..5).map(|_| s.pop().unwrap()).collect();
        assert_eq!(back, v.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!(s.high_water(), 5);
    }

    #[test]
    fn free_list_under_contention_never_hands_out_twice() {
        let s = Slots::new(64);
        let held: Vec<u32> = (0..64).map(|_| s.pop().unwrap()).collect();
        for &i in &held {
            s.push(i);
        }
        let owner: Vec<AtomicU64> = (0..64).map(|_| AtomicU64::new(0)).collect();
        std::thread::scope(|sc| {
            for t in 1..=4u64 {
                let (s, owner) = (&s, &owner);
                sc.spawn(move || {
                    for _ in 0..20_000 {
                        let mut mine = Vec::new();
                        for _ in 0..3 {
                            if let Some(i) = s.pop() {
                                let prev = owner[i as usize].swap(t, Ordering::SeqCst);
                                assert_eq!(prev, 0, "slot {i} handed out twice");
                                mine.push(i);
                            }
                        }
                        for i in mine {
                            owner[i as usize].store(0, Ordering::SeqCst);
                            s.push(i);
                        }
                    }
                });
            }
        });
        let mut all = HashSet::new();
        while let Some(i) = s.pop() {
            assert!(all.insert(i));
        }
        // The workers exited keeping a slot each, in the entries they owned.
        for i in kept(&s) {
            assert!(all.insert(i), "kept slot {i} also handed out");
        }
        assert_eq!(all.len(), 64);
    }
}
