//! A counter for hot paths that any thread bumps without a locked
//! instruction.
//!
//! A locked add costs 6-7 ns on the machines this is measured on, and the
//! shim counts every registration libfabric makes itself. (The registry
//! needs no counter at all: its statistics come from the slots'
//! generations.) Here each thread adds to a shard only it writes, with a
//! plain load and store, and readers sum the shards: a reader that
//! happens after the counting threads' increments (a join, a lock, the
//! application's own ordering of its calls) sees all of them, as with one
//! shared atomic.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Shards of a [`Tally`]: the first `SHARDS - 1` threads that count get one
/// each; later threads share the last, counted with a locked add.
pub const SHARDS: usize = 8;

thread_local! {
    /// This thread's shard of every [`Tally`], assigned at its first count.
    static SHARD: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

/// A counter bumped by any thread without a locked instruction.
pub struct Tally {
    shards: [AtomicU64; SHARDS],
}

impl Tally {
    pub const fn new() -> Tally {
        Tally {
            shards: [const { AtomicU64::new(0) }; SHARDS],
        }
    }

    #[inline]
    pub fn bump(&self) {
        let i = SHARD.with(|c| {
            let i = c.get();
            if i != usize::MAX {
                return i;
            }
            let i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed).min(SHARDS - 1);
            c.set(i);
            i
        });
        let s = &self.shards[i];
        if i < SHARDS - 1 {
            // Only this thread writes shard i.
            s.store(s.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        } else {
            s.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The shards, for a counter bumped outside Rust by the same rule
    /// (the shim's C entries: src/shim/entry.c, `count`), whose threads
    /// take their shards from a sequence of their own: such a tally must
    /// never be bumped from Rust too.
    pub fn shards(&self) -> *const AtomicU64 {
        self.shards.as_ptr()
    }

    pub fn sum(&self) -> u64 {
        self.shards.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

impl Default for Tally {
    fn default() -> Tally {
        Tally::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_tally_loses_no_count_across_many_threads() {
        // More threads than shards: the shared last shard is counted too.
        let t = Arc::new(Tally::new());
        let ts: Vec<_> = (0..SHARDS * 2)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        t.bump();
                    }
                })
            })
            .collect();
        for h in ts {
            h.join().unwrap();
        }
        assert_eq!(t.sum(), (SHARDS * 2 * 10_000) as u64);
    }
}
