//! Reference counts over address ranges: which parts of a range are held
//! for the first time, and which are no longer held by anyone.
//!
//! The kernel does not count `mlock(2)` or userfaultfd registrations: one
//! `munlock` or `UFFDIO_UNREGISTER` undoes every earlier lock or watch of
//! those pages. Pinnings of two domains (two registration caches), or two
//! overlapping pinnings of one, share pages; the last one to go may undo
//! them, never an earlier one. [`RangeRefs`] keeps the count per maximal
//! run of pages held by the same number of pinnings.

use std::collections::BTreeMap;

/// Disjoint runs `[start, end)` with how many holders each has (never 0).
#[derive(Default, Debug)]
pub struct RangeRefs {
    runs: BTreeMap<u64, (u64, u32)>,
}

impl RangeRefs {
    pub const fn new() -> RangeRefs {
        RangeRefs {
            runs: BTreeMap::new(),
        }
    }

    /// Splits the run that straddles `at`, if any, so that a run starts at
    /// `at`.
    fn split(&mut self, at: u64) {
        let Some((&s, &(e, n))) = self.runs.range(..at).next_back() else {
            return;
        };
        if e > at {
            self.runs.insert(s, (at, n));
            self.runs.insert(at, (e, n));
        }
    }

    /// Merges runs with equal counts that touch, around `[start, end)`.
    fn coalesce(&mut self, start: u64, end: u64) {
        let first = self
            .runs
            .range(..start)
            .next_back()
            .map_or(start, |(&s, _)| s);
        let keys: Vec<u64> = self.runs.range(first..=end).map(|(&s, _)| s).collect();
        let mut prev: Option<(u64, u64, u32)> = None;
        for s in keys {
            let (e, n) = self.runs[&s];
            match prev {
                Some((ps, pe, pn)) if pe == s && pn == n => {
                    self.runs.remove(&s);
                    self.runs.insert(ps, (e, n));
                    prev = Some((ps, e, n));
                }
                _ => prev = Some((s, e, n)),
            }
        }
    }

    /// Splits the runs at both ends of `[start, start + len)`; returns the
    /// end and the starts of the runs now inside (None for an empty range).
    fn cut(&mut self, start: u64, len: u64) -> Option<(u64, Vec<u64>)> {
        if len == 0 {
            return None;
        }
        let end = start.saturating_add(len);
        self.split(start);
        self.split(end);
        Some((end, self.runs.range(start..end).map(|(&s, _)| s).collect()))
    }

    /// Adds a holder of `[start, start + len)`; returns the parts that had
    /// none (now held for the first time), in address order.
    pub fn acquire(&mut self, start: u64, len: u64) -> Vec<(u64, u64)> {
        let Some((end, held)) = self.cut(start, len) else {
            return Vec::new();
        };
        let mut fresh = Vec::new();
        let mut at = start;
        for s in held {
            if s > at {
                fresh.push((at, s - at));
                self.runs.insert(at, (s, 1));
            }
            let r = self.runs.get_mut(&s).expect("listed run");
            r.1 += 1;
            at = r.0;
        }
        if at < end {
            fresh.push((at, end - at));
            self.runs.insert(at, (end, 1));
        }
        self.coalesce(start, end);
        merge_adjacent(fresh)
    }

    /// Removes a holder of `[start, start + len)` (one that
    /// [`RangeRefs::acquire`] added); returns the parts no one holds any
    /// more, in address order. Parts never acquired are ignored.
    pub fn release(&mut self, start: u64, len: u64) -> Vec<(u64, u64)> {
        let Some((end, held)) = self.cut(start, len) else {
            return Vec::new();
        };
        let mut freed = Vec::new();
        for s in held {
            let r = self.runs.get_mut(&s).expect("listed run");
            r.1 -= 1;
            if r.1 == 0 {
                let e = r.0;
                self.runs.remove(&s);
                freed.push((s, e - s));
            }
        }
        self.coalesce(start, end);
        merge_adjacent(freed)
    }

    /// The parts of `[start, start + len)` that no one holds.
    pub fn unheld(&self, start: u64, len: u64) -> Vec<(u64, u64)> {
        let end = start.saturating_add(len);
        let first = self
            .runs
            .range(..start)
            .next_back()
            .filter(|(_, &(e, _))| e > start)
            .map(|(&s, _)| s)
            .unwrap_or(start);
        let held: Vec<(u64, u64)> = self
            .runs
            .range(first..end)
            .map(|(&s, &(e, _))| (s, e))
            .collect();
        super::cache::uncovered(start, end, &held)
    }

    /// How many holders the byte at `at` has.
    pub fn count(&self, at: u64) -> u32 {
        self.runs
            .range(..=at)
            .next_back()
            .filter(|(_, &(e, _))| e > at)
            .map_or(0, |(_, &(_, n))| n)
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

fn merge_adjacent(v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, l) in v {
        match out.last_mut() {
            Some((ps, pl)) if *ps + *pl == s => *pl += l,
            _ => out.push((s, l)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: u64 = 4096;

    #[test]
    fn a_lone_range_is_fresh_then_freed() {
        let mut r = RangeRefs::new();
        assert_eq!(r.acquire(P, 4 * P), vec![(P, 4 * P)]);
        assert_eq!(r.count(P), 1);
        assert_eq!(r.release(P, 4 * P), vec![(P, 4 * P)]);
        assert!(r.is_empty());
    }

    #[test]
    fn overlapping_holders_free_only_what_no_one_else_holds() {
        // Two domains pin overlapping ranges: [1, 5) and [3, 8) pages.
        let mut r = RangeRefs::new();
        assert_eq!(r.acquire(P, 4 * P), vec![(P, 4 * P)]);
        assert_eq!(r.acquire(3 * P, 5 * P), vec![(5 * P, 3 * P)]);
        assert_eq!(r.unheld(0, 10 * P), vec![(0, P), (8 * P, 2 * P)]);
        // The first goes: only [1, 3) is free; [3, 5) is the second's.
        assert_eq!(r.release(P, 4 * P), vec![(P, 2 * P)]);
        assert_eq!(r.count(4 * P), 1);
        assert_eq!(r.release(3 * P, 5 * P), vec![(3 * P, 5 * P)]);
        assert!(r.is_empty());
    }

    #[test]
    fn the_same_range_held_twice_is_freed_by_the_second_release() {
        let mut r = RangeRefs::new();
        assert_eq!(r.acquire(0, P), vec![(0, P)]);
        assert_eq!(r.acquire(0, P), vec![]);
        assert_eq!(r.release(0, P), vec![]);
        assert_eq!(r.release(0, P), vec![(0, P)]);
    }

    #[test]
    fn a_release_of_what_was_never_held_changes_nothing() {
        let mut r = RangeRefs::new();
        r.acquire(0, P);
        assert_eq!(r.release(2 * P, P), vec![]);
        assert_eq!(r.count(0), 1);
    }

    proptest! {
        /// Against a per-page model: random acquires and releases of
        /// earlier acquisitions report exactly the pages whose count moves
        /// between 0 and 1.
        #[test]
        fn matches_a_page_model(ops in proptest::collection::vec((0u64..32, 1u64..8, any::<bool>()), 1..60)) {
            let mut r = RangeRefs::new();
            let mut model = [0u32; 40];
            let mut held: Vec<(u64, u64)> = Vec::new();
            for (s, l, rel) in ops {
                if rel && !held.is_empty() {
                    let (s, l) = held.remove((s as usize) % held.len());
                    let freed = r.release(s * P, l * P);
                    let mut want = Vec::new();
                    for p in s..s + l {
                        model[p as usize] -= 1;
                        if model[p as usize] == 0 {
                            want.push((p * P, P));
                        }
                    }
                    prop_assert_eq!(freed, merge_adjacent(want));
                } else {
                    let fresh = r.acquire(s * P, l * P);
                    let mut want = Vec::new();
                    for p in s..s + l {
                        if model[p as usize] == 0 {
                            want.push((p * P, P));
                        }
                        model[p as usize] += 1;
                    }
                    held.push((s, l));
                    prop_assert_eq!(fresh, merge_adjacent(want));
                }
                for p in 0..40u64 {
                    prop_assert_eq!(r.count(p * P), model[p as usize]);
                }
                let unheld: Vec<(u64, u64)> = merge_adjacent(
                    (0..40u64).filter(|&p| model[p as usize] == 0).map(|p| (p * P, P)).collect(),
                );
                prop_assert_eq!(r.unheld(0, 40 * P), unheld);
            }
        }
    }
}
