//! The free spill areas of a segment: producers take one as they claim a
//! position for a spilled message ([`super::Segment::claim`]), the owner
//! gives it back once it has handled the message ([`super::Segment::recv`]).
//!
//! The lowest free area is taken, so while the owner keeps up the same few
//! areas go round, whose lines the producer wrote a message or two before
//! and the owner has just read. With one area per position a producer
//! wrote into lines last touched a lap earlier, and its copy of each 4 KiB
//! message took 1.6 times as long: on the AMD EPYC host of 2026-12-07, a
//! two-process C stream of 4 KiB messages through 16 or 128 areas taken in
//! turn copied in 1110-1240 TSC ticks per message (7.1-8.6 GB/s end to
//! end), through the last area given back in 500-680 (11.4-13.8 GB/s), as
//! upstream shm takes its inject buffers (a stack). In fabtests'
//! `fi_rdm_bw -S 4096` the sender's copy took 754-842 ticks with one area
//! per position, 552-561 with this, and 515-550 in upstream 2.1.0.
//!
//! Fabtests, against one area per position (state-matched pairs, medians
//! of the per-pair ratios): `fi_rdm_bw` 4 KiB 1.17-1.28x, 8 KiB 1.07x,
//! 2 KiB 0.99x, 1 KiB 0.92-0.94x (1.57x upstream 2.1.0 there);
//! `fi_rdm_tagged_bw` 4 KiB 1.20-1.30x; `fi_rdm_pingpong` 4 KiB 0.955x the
//! latency; `fi_rma_bw -o writedata` 4 KiB 0.90x (0.86x upstream's, 0.93x
//! before), whose injecting side pays for the words below and gains
//! little on its copy.
//!
//! Two words per [`GROUP`] areas, the producers' on one line and the
//! owner's on another, each with one kind of writer: producers flip an
//! area's bit in `spill_taken` (a compare-and-swap among themselves) to
//! take it, the owner flips its bit in `spill_given` (a plain store: it is
//! the only writer) to give it back; an area is free when its two bits are
//! equal. So giving back never waits for the producers' line, as an atomic
//! operation on a word both write would, and the owner gives areas back in
//! batches ([`Batch`]). The owner only gives back areas that are taken, so
//! an area a taker saw free stays free until taken. A taker's
//! compare-and-swap must fail if any area of the group was taken since it
//! looked: the upper half of its word counts the group's takes. Without
//! the count, a take, a give-back and a take of the same area in between
//! left the bits as the taker saw them, its swap succeeded, and two
//! messages shared one area (the 60 s data-path stress read corrupted
//! writes and messages). Giving back releases and taking acquires, so that
//! the owner's reads of a message happen before the next producer's writes
//! into its area.

use super::{Header, SPILL_AREAS};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Areas per word: the low half of a word of `spill_taken` has a bit
/// each, the high half counts the group's takes.
pub(super) const GROUP: usize = 32;
/// Words of `spill_taken` and of `spill_given`.
pub(super) const GROUPS: usize = SPILL_AREAS / GROUP;
const BITS: u64 = (1 << GROUP) - 1;
const TAKE: u64 = 1 << GROUP;

/// Takes the lowest free area; None when every area is in use.
#[inline(always)]
pub(super) fn take(h: &Header) -> Option<u32> {
    for k in 0..GROUPS {
        let mut t = h.spill_taken[k].load(Ordering::Relaxed);
        loop {
            match try_take(h, k, t, h.spill_given[k].load(Ordering::Acquire)) {
                Ok(Some(i)) => return Some(i),
                Ok(None) => break,
                Err(now) => t = now,
            }
        }
    }
    None
}

/// One try at taking the lowest area of group `k` that is free by the
/// group's words as read (`taken`, `given`): the area, None when none is,
/// or the producers' word as it is now when another take came first.
#[inline(always)]
fn try_take(h: &Header, k: usize, taken: u64, given: u64) -> Result<Option<u32>, u64> {
    let free = !(taken ^ given) & BITS;
    if free == 0 {
        return Ok(None);
    }
    let bit = free.trailing_zeros();
    let new = (taken ^ 1 << bit).wrapping_add(TAKE);
    h.spill_taken[k]
        .compare_exchange_weak(taken, new, Ordering::Acquire, Ordering::Relaxed)
        .map(|_| Some((k * GROUP) as u32 + bit))
}

/// A producer puts back area `i`, which it took and did not use.
#[inline(always)]
pub(super) fn untake(h: &Header, i: u32) {
    let i = i as usize % SPILL_AREAS;
    h.spill_taken[i / GROUP].fetch_xor(1 << (i % GROUP), Ordering::Release);
}

/// The owner gives back the areas of `bits` in group `k`, every one
/// taken. Owner side only.
#[inline(always)]
fn give(h: &Header, k: usize, bits: u64) {
    let w = &h.spill_given[k];
    w.store(w.load(Ordering::Relaxed) ^ bits, Ordering::Release);
}

/// The owner gives back area `i` at once (a dead producer's). Owner side
/// only.
pub(super) fn give_back(h: &Header, i: u32) {
    let i = i as usize % SPILL_AREAS;
    give(h, i / GROUP, 1 << (i % GROUP));
}

/// Bytes of handled messages after which the owner gives their areas
/// back ([`Batch`]).
pub(super) const BATCH_BYTES: usize = 8192;

/// The areas an owner has handled the messages of and not yet given back:
/// given back together, for as many messages as fill [`BATCH_BYTES`], and
/// whenever the owner finds its ring empty. So a producer finds the
/// owner's line changed once a batch, not once a message: given back one
/// by one (through one word that both sides wrote atomically), 1 KiB
/// messages ran at 0.89x of one area per position. Owner side only (one
/// consumer at a time).
#[derive(Default)]
pub(super) struct Batch {
    areas: [AtomicU64; GROUPS],
    bytes: AtomicUsize,
}

impl Batch {
    /// Area `i` held a message of `len` bytes, now handled.
    #[inline(always)]
    pub(super) fn add(&self, h: &Header, i: u32, len: usize) {
        let i = i as usize % SPILL_AREAS;
        let w = &self.areas[i / GROUP];
        w.store(
            w.load(Ordering::Relaxed) | 1 << (i % GROUP),
            Ordering::Relaxed,
        );
        let bytes = self.bytes.load(Ordering::Relaxed) + len.max(1);
        self.bytes.store(bytes, Ordering::Relaxed);
        if bytes >= BATCH_BYTES {
            self.flush(h);
        }
    }

    /// Gives every area of the batch back.
    #[inline(always)]
    pub(super) fn flush(&self, h: &Header) {
        if self.bytes.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.bytes.store(0, Ordering::Relaxed);
        for (k, w) in self.areas.iter().enumerate() {
            let v = w.load(Ordering::Relaxed);
            if v != 0 {
                w.store(0, Ordering::Relaxed);
                give(h, k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, AtomicU32};

    fn header() -> Box<Header> {
        // SAFETY: Header is atomics and bytes, for which zero is valid: a
        // new segment's header, every area free.
        unsafe { Box::new(std::mem::zeroed()) }
    }

    #[test]
    fn the_lowest_free_area_is_the_next_one_taken() {
        let h = header();
        let all: Vec<u32> = std::iter::from_fn(|| take(&h)).collect();
        assert_eq!(all, (0..SPILL_AREAS as u32).collect::<Vec<_>>());
        assert_eq!(take(&h), None);
        give_back(&h, 70);
        give_back(&h, 3);
        assert_eq!(take(&h), Some(3));
        give_back(&h, 9);
        assert_eq!(take(&h), Some(9));
        assert_eq!(take(&h), Some(70));
        assert_eq!(take(&h), None);
        // Put back unused by its taker: free again.
        untake(&h, 70);
        assert_eq!(take(&h), Some(70));
        // Given back one at a time, one area goes round.
        for _ in 0..10 {
            give_back(&h, 0);
            assert_eq!(take(&h), Some(0));
        }
    }

    #[test]
    fn a_take_that_looked_before_another_take_and_give_back_of_the_area_fails() {
        let h = header();
        // A producer looks: area 0 free.
        let (t, g) = (
            h.spill_taken[0].load(Ordering::Relaxed),
            h.spill_given[0].load(Ordering::Relaxed),
        );
        // Before its swap, another takes area 0, the owner gives it back,
        // and a third takes it again: its bit is as the first one saw it.
        assert_eq!(take(&h), Some(0));
        give_back(&h, 0);
        assert_eq!(take(&h), Some(0));
        assert_eq!(h.spill_taken[0].load(Ordering::Relaxed) & BITS, t & BITS);
        // The first one's swap must fail: area 0 is in use.
        assert!(try_take(&h, 0, t, g).is_err());
        // Looking again, it takes the next area.
        assert_eq!(take(&h), Some(1));
    }

    #[test]
    fn an_owners_batch_goes_back_at_its_bytes_or_when_flushed() {
        let h = header();
        let taken: Vec<u32> = std::iter::from_fn(|| take(&h)).collect();
        assert_eq!(taken.len(), SPILL_AREAS);
        let b = Batch::default();
        // Under BATCH_BYTES: held back.
        b.add(&h, 5, BATCH_BYTES / 2);
        b.add(&h, 70, BATCH_BYTES / 2 - 1);
        assert_eq!(take(&h), None);
        // The message that fills the batch gives back all three.
        b.add(&h, 9, 1);
        assert_eq!(take(&h), Some(5));
        assert_eq!(take(&h), Some(9));
        assert_eq!(take(&h), Some(70));
        assert_eq!(take(&h), None);
        // An empty message counts: a flush gives it back.
        b.add(&h, 100, 0);
        assert_eq!(take(&h), None);
        b.flush(&h);
        assert_eq!(take(&h), Some(100));
        b.flush(&h);
        assert_eq!(take(&h), None);
        // A long message goes back at once.
        b.add(&h, 3, BATCH_BYTES);
        assert_eq!(take(&h), Some(3));
    }

    #[test]
    fn producers_and_an_owner_at_once_never_hand_out_one_area_twice() {
        let h = header();
        let held: Vec<AtomicU32> = (0..SPILL_AREAS).map(|_| AtomicU32::new(0)).collect();
        let twice = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        // Producers hand what they take to the owner, as messages; the
        // owner gives it back (in batches).
        let (to_owner, inbox) = std::sync::mpsc::channel::<u32>();
        std::thread::scope(|s| {
            let mut producers = Vec::new();
            for t in 0..3 {
                let to_owner = to_owner.clone();
                let (h, held, twice) = (&h, &held, &twice);
                producers.push(s.spawn(move || {
                    for round in 0..30_000 {
                        let Some(i) = take(h) else {
                            std::hint::spin_loop();
                            continue;
                        };
                        if held[i as usize].fetch_add(1, Ordering::SeqCst) != 0 {
                            twice.store(true, Ordering::SeqCst);
                        }
                        if (round + t) % 7 == 0 {
                            // Not used after all.
                            held[i as usize].fetch_sub(1, Ordering::SeqCst);
                            untake(h, i);
                        } else {
                            to_owner.send(i).unwrap();
                        }
                    }
                }));
            }
            drop(to_owner);
            let (h, held, done) = (&h, &held, &done);
            let owner = s.spawn(move || {
                let b = Batch::default();
                for (n, i) in inbox.iter().enumerate() {
                    held[i as usize].fetch_sub(1, Ordering::SeqCst);
                    b.add(h, i, 1000 + n % 3000);
                }
                b.flush(h);
                done.store(true, Ordering::SeqCst);
            });
            for p in producers {
                p.join().unwrap();
            }
            owner.join().unwrap();
        });
        assert!(done.load(Ordering::SeqCst));
        assert!(
            !twice.load(Ordering::SeqCst),
            "an area was handed out twice"
        );
        // Every area is back, once.
        let all: HashSet<u32> = std::iter::from_fn(|| take(&h)).collect();
        assert_eq!(all.len(), SPILL_AREAS);
    }
}
