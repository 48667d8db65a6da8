//! The requested-key index: application key -> slot, for registries that
//! honour requested keys (no `FI_MR_PROV_KEY`). Safe Rust: no epoch, no
//! `unsafe`.
//!
//! An open-addressing table (linear probing) of `AtomicU64` keys and
//! `AtomicU32` slot numbers. Readers never lock: they probe the current
//! table and the registry then checks the slot they found (it must be live
//! with this very key). A reader that raced a rebuild may find another
//! key's slot or none; either fails that check, and counts as a miss only
//! once [`Index::unchanged`] says no rebuild intervened (the reader
//! otherwise probes again), so a live key is never reported missing. Writers (insert, remove) take a
//! mutex held for O(1) work, except when a table fills up and is rebuilt
//! (O(n), amortised O(1)); provider-key registries never touch it.
//!
//! Entries: `key == EMPTY` (u64::MAX, which is `FI_KEY_NOTAVAIL` and never a
//! key) ends a probe chain; `slot == TOMB` marks a removed key. Entries are
//! never set back to EMPTY in a table that readers may use, so a live key's
//! chain is never broken, and a live key is always the first entry with that
//! key in its chain (insert reuses the first tombstone before it).
//!
//! Tables are type-stable: one pair (A/B) per power-of-two size, allocated
//! when first needed and kept until the index is dropped. A rebuild fills
//! the table that is not current, then publishes it by bumping `current`
//! (version, size class, A/B). A reader that loaded an older version re-checks
//! `current` after a miss and starts over if it moved, because the table it
//! read may have been cleared for reuse under it (the writer fences before
//! clearing, so such a reader is certain to see the new version).

use super::chunks::Padded;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

const EMPTY: u64 = u64::MAX;
const TOMB: u32 = u32::MAX;
/// log2 of the smallest table.
const MIN_BITS: u32 = 4;
/// Size classes: enough for 2^24 live keys at a load of 3/4.
const CLASSES: usize = 22;

struct Table {
    keys: Box<[AtomicU64]>,
    slots: Box<[AtomicU32]>,
    bits: u32,
}

impl Table {
    fn new(bits: u32) -> Table {
        let n = 1usize << bits;
        Table {
            keys: (0..n).map(|_| AtomicU64::new(EMPTY)).collect(),
            slots: (0..n).map(|_| AtomicU32::new(TOMB)).collect(),
            bits,
        }
    }

    fn cap(&self) -> usize {
        self.keys.len()
    }
}

struct Writer {
    /// Live keys and used entries (live + tombstones) of the current table.
    live: usize,
    used: usize,
}

pub(crate) struct Index {
    tables: Box<[[OnceLock<Table>; 2]]>,
    /// `version << 8 | class << 1 | ab`.
    current: AtomicU64,
    seed: (u64, u64),
    writer: Padded<Mutex<Writer>>,
}

fn class_of(cur: u64) -> usize {
    ((cur >> 1) & 0x7f) as usize
}

impl Index {
    pub(crate) fn new(secret: u64) -> Index {
        let mut st = secret ^ 0x6a09_e667_f3bc_c908;
        let seed = (
            super::key::splitmix(&mut st),
            super::key::splitmix(&mut st) | 1,
        );
        let tables: Box<[[OnceLock<Table>; 2]]> = (0..CLASSES)
            .map(|_| [OnceLock::new(), OnceLock::new()])
            .collect();
        let _ = tables[0][0].set(Table::new(MIN_BITS));
        Index {
            tables,
            current: AtomicU64::new(1 << 8),
            seed,
            writer: Padded(Mutex::new(Writer { live: 0, used: 0 })),
        }
    }

    #[inline]
    fn hash(&self, key: u64, bits: u32) -> usize {
        let x = (key ^ self.seed.0).wrapping_mul(self.seed.1);
        let x = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (x >> (64 - bits)) as usize
    }

    #[inline]
    fn table(&self, cur: u64) -> Option<&Table> {
        self.tables
            .get(class_of(cur))?
            .get((cur & 1) as usize)?
            .get()
    }

    /// Probes the current table. Returns the slot found (to be checked by
    /// the caller) and the table version to pass to [`Index::unchanged`].
    #[inline]
    pub(crate) fn lookup(&self, key: u64) -> (Option<u32>, u64) {
        let cur = self.current.load(Ordering::Acquire);
        let Some(t) = self.table(cur) else {
            return (None, cur);
        };
        let mask = t.cap() - 1;
        let mut i = self.hash(key, t.bits);
        for _ in 0..t.cap() {
            let k = t.keys[i].load(Ordering::Acquire);
            if k == key {
                let s = t.slots[i].load(Ordering::Acquire);
                return (if s == TOMB { None } else { Some(s) }, cur);
            }
            if k == EMPTY {
                break;
            }
            i = (i + 1) & mask;
        }
        (None, cur)
    }

    /// Whether no rebuild was published since `lookup` returned `version`:
    /// then a miss is a real miss.
    #[inline]
    pub(crate) fn unchanged(&self, version: u64) -> bool {
        fence(Ordering::Acquire);
        self.current.load(Ordering::Relaxed) == version
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `key -> slot`; `false` if `key` is already present.
    pub(crate) fn insert(&self, key: u64, slot: u32) -> bool {
        let mut w = self.lock();
        self.grow_for(&mut w, 1);
        let cur = self.current.load(Ordering::Relaxed);
        let t = self.table(cur).expect("current table exists");
        let mask = t.cap() - 1;
        let mut i = self.hash(key, t.bits);
        let mut reuse = None;
        for _ in 0..t.cap() {
            let k = t.keys[i].load(Ordering::Relaxed);
            let s = t.slots[i].load(Ordering::Relaxed);
            if k == key && s != TOMB {
                return false;
            }
            if k == EMPTY || k == key {
                break;
            }
            if s == TOMB && reuse.is_none() {
                reuse = Some(i);
            }
            i = (i + 1) & mask;
        }
        let at = reuse.unwrap_or(i);
        let fresh = t.keys[at].load(Ordering::Relaxed) == EMPTY;
        // Slot first: a reader that sees the key sees its slot.
        t.slots[at].store(slot, Ordering::Release);
        t.keys[at].store(key, Ordering::Release);
        w.live += 1;
        if fresh {
            w.used += 1;
        }
        true
    }

    /// Removes `key`; `false` if it was not present.
    pub(crate) fn remove(&self, key: u64) -> bool {
        let mut w = self.lock();
        let cur = self.current.load(Ordering::Relaxed);
        let t = self.table(cur).expect("current table exists");
        let mask = t.cap() - 1;
        let mut i = self.hash(key, t.bits);
        for _ in 0..t.cap() {
            let k = t.keys[i].load(Ordering::Relaxed);
            if k == key {
                if t.slots[i].load(Ordering::Relaxed) == TOMB {
                    return false;
                }
                t.slots[i].store(TOMB, Ordering::Release);
                w.live -= 1;
                return true;
            }
            if k == EMPTY {
                return false;
            }
            i = (i + 1) & mask;
        }
        false
    }

    /// Makes room for `n` more keys without a rebuild.
    pub(crate) fn reserve(&self, n: usize) {
        let mut w = self.lock();
        self.grow_for(&mut w, n);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().live
    }

    /// Rebuilds if `n` more entries would take the table past 3/4 full.
    fn grow_for(&self, w: &mut Writer, n: usize) {
        let cur = self.current.load(Ordering::Relaxed);
        let t = self.table(cur).expect("current table exists");
        if (w.used + n) * 4 <= t.cap() * 3 {
            return;
        }
        // After a rebuild the table is at most half full.
        let need = (w.live + n).saturating_mul(2).max(1 << MIN_BITS);
        let bits = need.next_power_of_two().trailing_zeros();
        let class = ((bits - MIN_BITS) as usize).min(CLASSES - 1);
        let ab = if class == class_of(cur) {
            1 - (cur & 1) as usize
        } else {
            0
        };
        // Readers of an older version may still probe the table about to be
        // cleared: they must see the version that retired it (see above).
        fence(Ordering::Release);
        let new = self.tables[class][ab].get_or_init(|| Table::new(MIN_BITS + class as u32));
        for (k, s) in new.keys.iter().zip(new.slots.iter()) {
            k.store(EMPTY, Ordering::Relaxed);
            s.store(TOMB, Ordering::Relaxed);
        }
        let mask = new.cap() - 1;
        let mut live = 0;
        for (k, s) in t.keys.iter().zip(t.slots.iter()) {
            let (k, s) = (k.load(Ordering::Relaxed), s.load(Ordering::Relaxed));
            if k == EMPTY || s == TOMB {
                continue;
            }
            let mut i = self.hash(k, new.bits);
            while new.keys[i].load(Ordering::Relaxed) != EMPTY {
                i = (i + 1) & mask;
            }
            new.slots[i].store(s, Ordering::Relaxed);
            new.keys[i].store(k, Ordering::Relaxed);
            live += 1;
        }
        w.live = live;
        w.used = live;
        let version = (cur >> 8) + 1;
        self.current.store(
            (version << 8) | ((class as u64) << 1) | ab as u64,
            Ordering::Release,
        );
    }

    /// Bytes of all tables allocated.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.tables
            .iter()
            .flatten()
            .filter_map(|t| t.get())
            .map(|t| t.cap() * 12)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn insert_lookup_remove() {
        let ix = Index::new(3);
        assert!(ix.insert(10, 1));
        assert!(!ix.insert(10, 2));
        assert_eq!(ix.lookup(10).0, Some(1));
        assert_eq!(ix.lookup(11).0, None);
        assert!(ix.remove(10));
        assert!(!ix.remove(10));
        assert_eq!(ix.lookup(10).0, None);
        assert!(ix.insert(10, 3));
        assert_eq!(ix.lookup(10).0, Some(3));
        assert_eq!(ix.len(), 1);
        // Any value but EMPTY is a key, including u64::MAX - 1 and 0.
        assert!(ix.insert(u64::MAX - 1, 4) && ix.insert(0, 5));
        assert_eq!(ix.lookup(u64::MAX - 1).0, Some(4));
        assert_eq!(ix.lookup(0).0, Some(5));
    }

    #[test]
    fn grows_and_compacts_tombstones() {
        let ix = Index::new(9);
        for k in 0..10_000u64 {
            assert!(ix.insert(k * 7919, k as u32));
        }
        for k in 0..10_000u64 {
            assert_eq!(ix.lookup(k * 7919).0, Some(k as u32));
        }
        let v = ix.lookup(0).1;
        // Churn: tombstones force same-size rebuilds, memory stays bounded.
        for round in 0..20u64 {
            for k in 0..10_000u64 {
                assert!(ix.remove(k * 7919 + round));
                assert!(ix.insert(k * 7919 + round + 1, k as u32));
            }
        }
        assert!(!ix.unchanged(v));
        assert_eq!(ix.len(), 10_000);
        for k in 0..10_000u64 {
            assert_eq!(ix.lookup(k * 7919 + 20).0, Some(k as u32));
        }
        assert!(
            ix.allocated_bytes() < 4 * 32768 * 12,
            "{}",
            ix.allocated_bytes()
        );
    }

    #[test]
    fn readers_do_not_wait_for_a_writer() {
        let ix = Index::new(5);
        assert!(ix.insert(7, 70));
        let guard = ix.lock();
        let found = std::thread::scope(|s| s.spawn(|| ix.lookup(7).0).join().unwrap());
        drop(guard);
        assert_eq!(found, Some(70));
    }

    #[test]
    fn a_key_live_throughout_is_found_across_rebuilds() {
        let ix = Index::new(6);
        assert!(ix.insert(u64::MAX - 1, 1234));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for round in 0..300u64 {
                    for k in 0..64 {
                        assert!(ix.insert((round << 8) | k, k as u32));
                    }
                    for k in 0..64 {
                        assert!(ix.remove((round << 8) | k));
                    }
                }
                stop.store(true, Ordering::Relaxed);
            });
            while !stop.load(Ordering::Relaxed) {
                loop {
                    let (found, v) = ix.lookup(u64::MAX - 1);
                    if found == Some(1234) {
                        break;
                    }
                    // A miss or a wrong slot only while a rebuild moved
                    // the table under the reader.
                    assert!(!ix.unchanged(v), "lost a live key: {found:?}");
                }
            }
        });
        assert_eq!(ix.lookup(u64::MAX - 1).0, Some(1234));
        assert!(
            ix.current.load(Ordering::Relaxed) >> 8 > 100,
            "rebuilds happened"
        );
    }

    proptest::proptest! {
        #[test]
        fn matches_a_hash_map(ops in proptest::collection::vec((0u8..3, 0u64..64), 1..400)) {
            let ix = Index::new(1);
            let mut model: HashMap<u64, u32> = HashMap::new();
            for (n, (op, k)) in ops.into_iter().enumerate() {
                match op {
                    0 => {
                        let fresh = !model.contains_key(&k);
                        proptest::prop_assert_eq!(ix.insert(k, n as u32), fresh);
                        model.entry(k).or_insert(n as u32);
                    }
                    1 => proptest::prop_assert_eq!(ix.remove(k), model.remove(&k).is_some()),
                    _ => proptest::prop_assert_eq!(ix.lookup(k).0, model.get(&k).copied()),
                }
            }
            proptest::prop_assert_eq!(ix.len(), model.len());
        }
    }
}
