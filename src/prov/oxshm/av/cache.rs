//! The data path's view of an AV without its lock.
//!
//! Every send turns its `fi_addr_t` into an address, and every message
//! received with a source turns the sender's address back into an
//! `fi_addr_t`. Through the AV's `RwLock` each lookup costs two locked
//! instructions (take and release the read side) and a hash probe. These
//! two small direct-mapped caches answer the repeated lookups with plain
//! loads instead.
//!
//! - Each entry is a seqlock: a reader loads the sequence, the fields and
//!   the sequence again, and uses the fields only if the sequence was even
//!   and unchanged. A filler takes the entry by moving its sequence from
//!   even to odd (a compare-exchange, on a miss only) and skips the fill
//!   when another thread holds it.
//! - Each entry carries the AV's version at the time of its lookup. The
//!   AV bumps its version whenever it takes its write lock (insert or
//!   remove), before it changes anything, so an entry filled from an older
//!   table never matches again. A lookup racing an insert or a remove of
//!   the same address may see either side, as through the lock.
//! - Misses go to the locked table and fill the entry, answers of "not in
//!   the AV" included.

use super::super::ep::Address;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Entries of each cache (a power of two).
const ENTRIES: usize = 64;

/// One entry: a key, an answer and the AV version they belong to.
#[derive(Default)]
struct Entry {
    seq: AtomicU32,
    version: AtomicU64,
    key: [AtomicU64; 2],
    value: [AtomicU64; 2],
}

impl Entry {
    /// The value stored for `key` under `version`, if any.
    #[inline(always)]
    fn get(&self, key: [u64; 2], version: u64) -> Option<[u64; 2]> {
        let s = self.seq.load(Ordering::Acquire);
        if s & 1 != 0 {
            return None;
        }
        let v = self.version.load(Ordering::Relaxed);
        let k = [
            self.key[0].load(Ordering::Relaxed),
            self.key[1].load(Ordering::Relaxed),
        ];
        let x = [
            self.value[0].load(Ordering::Relaxed),
            self.value[1].load(Ordering::Relaxed),
        ];
        // Orders the loads above before the second look at the sequence.
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != s || v != version || k != key {
            return None;
        }
        Some(x)
    }

    /// Stores `value` for `key` as looked up under `version`, unless
    /// another thread is filling this entry.
    fn put(&self, key: [u64; 2], version: u64, value: [u64; 2]) {
        let s = self.seq.load(Ordering::Relaxed);
        if s & 1 != 0
            || self
                .seq
                .compare_exchange(s, s.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        self.version.store(version, Ordering::Relaxed);
        self.key[0].store(key[0], Ordering::Relaxed);
        self.key[1].store(key[1], Ordering::Relaxed);
        self.value[0].store(value[0], Ordering::Relaxed);
        self.value[1].store(value[1], Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

fn addr_words(a: &Address) -> [u64; 2] {
    [(u64::from(a.pid) << 32) | u64::from(a.ep_id), a.nonce]
}

/// An address as one `u128`, never 0 (its pid is not 0).
pub(super) fn pack(a: &Address) -> u128 {
    pack_words(addr_words(a))
}

#[inline(always)]
fn pack_words(w: [u64; 2]) -> u128 {
    (u128::from(w[0]) << 64) | u128::from(w[1])
}

#[inline(always)]
pub(super) fn unpack(p: u128) -> Address {
    addr_of_words([(p >> 64) as u64, p as u64])
}

fn addr_of_words(w: [u64; 2]) -> Address {
    Address {
        pid: (w[0] >> 32) as u32,
        ep_id: w[0] as u32,
        nonce: w[1],
    }
}

/// Both directions of an AV's lookups, and the version they are valid for.
pub(super) struct Cache {
    /// Bumped by every taking of the AV's write lock.
    version: AtomicU64,
    /// fi_addr_t -> address (`[0, ABSENT]`: not in the AV).
    forward: [Entry; ENTRIES],
    /// address -> fi_addr_t (`[0, 1]`: not in the AV).
    reverse: [Entry; ENTRIES],
}

impl Default for Cache {
    fn default() -> Cache {
        Cache {
            // Entries start at version 0, which is never current: an
            // entry nobody filled answers nothing (not even fi_addr 0).
            version: AtomicU64::new(1),
            forward: std::array::from_fn(|_| Entry::default()),
            reverse: std::array::from_fn(|_| Entry::default()),
        }
    }
}

/// An answer of the forward cache that says "not in the AV".
const ABSENT: u64 = 1;

impl Cache {
    /// Called with the AV's write lock held, before the table changes.
    pub(super) fn invalidate(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// The version to tag a lookup with: read before the locked lookup.
    #[inline]
    pub(super) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The address `fi_addr` names, if cached: `Some(None)` when it was
    /// found not to be in the AV ([`Cache::addr_packed`], unpacked).
    #[cfg(test)]
    pub(super) fn addr_of(&self, fi_addr: u64, version: u64) -> Option<Option<Address>> {
        self.addr_packed(fi_addr, version)
            .map(|p| (p != 0).then(|| unpack(p)))
    }

    /// The address `fi_addr` names, if cached, packed in one `u128` (0:
    /// found not to be in the AV), which stays in registers through the
    /// merge with [`Av::addr_of`]'s locked path.
    #[inline(always)]
    pub(super) fn addr_packed(&self, fi_addr: u64, version: u64) -> Option<u128> {
        let e = &self.forward[(fi_addr as usize) & (ENTRIES - 1)];
        let x = e.get([fi_addr, 0], version)?;
        // A first word of 0 is pid 0, never an endpoint's.
        if x[0] == 0 && x[1] == ABSENT {
            return Some(0);
        }
        Some(pack_words(x))
    }

    pub(super) fn put_addr(&self, fi_addr: u64, version: u64, a: Option<Address>) {
        let value = match a {
            Some(a) => addr_words(&a),
            None => [0, ABSENT],
        };
        self.forward[(fi_addr as usize) & (ENTRIES - 1)].put([fi_addr, 0], version, value);
    }

    fn reverse_entry(&self, a: &Address) -> &Entry {
        let w = addr_words(a);
        let h = (w[0] ^ w[1]).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        &self.reverse[h as usize & (ENTRIES - 1)]
    }

    /// The fi_addr_t `a` is inserted under, if cached: `Some(None)` when
    /// it was found not to be in the AV.
    #[inline(always)]
    pub(super) fn find(&self, a: &Address, version: u64) -> Option<Option<u64>> {
        let x = self.reverse_entry(a).get(addr_words(a), version)?;
        Some((x[1] == 0).then_some(x[0]))
    }

    pub(super) fn put_find(&self, a: &Address, version: u64, f: Option<u64>) {
        let value = match f {
            Some(f) => [f, 0],
            None => [0, 1],
        };
        self.reverse_entry(a).put(addr_words(a), version, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(i: u32) -> Address {
        Address {
            pid: 1000 + i,
            ep_id: i,
            nonce: 0xfeed_0000 + u64::from(i),
        }
    }

    #[test]
    fn packed_addresses_round_trip_and_are_never_zero() {
        for x in [
            a(0),
            Address {
                pid: 1,
                ep_id: 0,
                nonce: 0,
            },
            Address {
                pid: u32::MAX,
                ep_id: u32::MAX,
                nonce: u64::MAX,
            },
            Address {
                pid: 7,
                ep_id: 0x8000_0000,
                nonce: 1 << 63,
            },
        ] {
            let p = pack(&x);
            assert_ne!(p, 0, "{x:?}");
            assert_eq!(unpack(p), x);
        }
    }

    #[test]
    fn answers_only_what_was_put_under_the_current_version() {
        let c = Cache::default();
        let v = c.version();
        assert_eq!(c.addr_of(0, v), None, "an entry nobody filled");
        assert_eq!(
            c.find(
                &Address {
                    pid: 0,
                    ep_id: 0,
                    nonce: 0
                },
                v
            ),
            None
        );
        assert_eq!(c.addr_of(3, v), None);
        c.put_addr(3, v, Some(a(3)));
        assert_eq!(c.addr_of(3, v), Some(Some(a(3))));
        // Another fi_addr on the same entry is not this one.
        assert_eq!(c.addr_of(3 + ENTRIES as u64, v), None);
        c.put_addr(9, v, None);
        assert_eq!(c.addr_of(9, v), Some(None));
        c.put_find(&a(3), v, Some(3));
        c.put_find(&a(4), v, None);
        assert_eq!(c.find(&a(3), v), Some(Some(3)));
        assert_eq!(c.find(&a(4), v), Some(None));
        assert_eq!(c.find(&a(5), v), None);
        // A change to the AV makes every entry stale.
        c.invalidate();
        let v2 = c.version();
        assert_ne!(v, v2);
        assert_eq!(c.addr_of(3, v2), None);
        assert_eq!(c.find(&a(3), v2), None);
    }

    #[test]
    fn a_reader_never_sees_a_torn_entry() {
        let c = Cache::default();
        let v = c.version();
        let stop = std::sync::atomic::AtomicBool::new(false);
        /// Stops the writers however the reader leaves (a failed
        /// assertion included), so that a failure is reported, not hung.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let (c, stop) = (&c, &stop);
                s.spawn(move || {
                    let mut i = 0u32;
                    while !stop.load(Ordering::Relaxed) {
                        // Two keys on one entry, each with its own answer.
                        let k = u64::from(t) * ENTRIES as u64;
                        c.put_addr(k, v, Some(a(t * 7 + (i & 1))));
                        i = i.wrapping_add(1);
                    }
                });
            }
            let _stop = Stop(&stop);
            for _ in 0..200_000 {
                for t in 0..2u32 {
                    if let Some(got) = c.addr_of(u64::from(t) * ENTRIES as u64, v) {
                        let got = got.expect("present");
                        assert!(got == a(t * 7) || got == a(t * 7 + 1), "{got:?}");
                    }
                }
            }
        });
    }
}
