//! The registration cache of fi_mr(3) (MEMORY REGISTRATION CACHE): it keeps
//! *pinnings* (page ranges a backend made resident and whose frames it
//! recorded), never memory regions. Every registration still gets its own
//! region, key and access rights from the [`Registry`](super::Registry); the
//! cache only spares it the cost of pinning pages that a live or recently
//! released pinning already holds.
//!
//! - A lookup hits a valid pinning that covers the whole range and was made
//!   with at least the rights asked for (a read-only pinning never serves a
//!   registration that needs write access).
//! - Released pinnings stay, unused, in LRU order within `max_count`
//!   entries and `max_size` bytes; the oldest go first. `max_count == 0`
//!   disables caching: every acquire pins, every release unpins.
//! - [`Cache::invalidate`] (what a memory monitor reports) removes unused
//!   pinnings over the range at once and marks used ones stale: a stale
//!   pinning is never served again and goes when its last user releases it.
//!
//! The backend ([`Pinner`]) does the system work (mlock, frame records,
//! monitor subscriptions); it runs under the cache's lock, so a pin and an
//! invalidation of the same range never interleave.

use crate::error::Result;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

/// The system side of a pinning.
pub trait Pinner: Send + Sync {
    /// What one pinning keeps (recorded frames, subscription state).
    type Pin: Send;
    /// Pins `[start, start + len)` (page-aligned), for writing if `write`.
    fn pin(&self, start: u64, len: u64, write: bool) -> Result<Self::Pin>;
    /// Releases a pinning. `release` lists the parts of its range that no
    /// other pinning of this cache covers. A backend whose pinnings are
    /// shared by several caches (several domains pinning the same pages)
    /// counts them itself, across caches (oxshm's does).
    fn unpin(&self, start: u64, len: u64, pin: Self::Pin, release: &[(u64, u64)]);
    /// A pin of `[start, start + len)` failed: undoes whatever it left
    /// behind (a monitor's watch) on `release`, the parts of the range that
    /// no other pinning covers.
    fn abandon(&self, _start: u64, _len: u64, _release: &[(u64, u64)]) {}
    /// Brings the backend's view of memory up to date before a lookup (a
    /// monitor applies the changes it was told of). Runs without the
    /// cache's lock.
    fn sync(&self) {}
    /// Whether a pinning may be served again after this use (false when no
    /// monitor watches its range: it is then used once and released).
    fn cacheable(&self, _pin: &Self::Pin) -> bool {
        true
    }
    /// Whether a cached pinning may be served now (asked before each hit;
    /// false invalidates it).
    fn still_valid(&self, _start: u64, _len: u64, _pin: &Self::Pin) -> bool {
        true
    }
}

/// Limits of the cache (FI_MR_CACHE_MAX_COUNT, FI_MR_CACHE_MAX_SIZE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most unused pinnings kept; 0 disables caching.
    pub max_count: usize,
    /// Most bytes of unused pinnings kept (u64::MAX: unlimited).
    pub max_size: u64,
}

impl Limits {
    /// The manual's defaults: a chosen count, an unlimited size.
    pub const DEFAULT_MAX_COUNT: usize = 1024;

    pub fn enabled(&self) -> bool {
        self.max_count > 0
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_count: Limits::DEFAULT_MAX_COUNT,
            max_size: u64::MAX,
        }
    }
}

/// Cache statistics (FI_OXSHM_STATS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Unused pinnings dropped to stay within the limits.
    pub evictions: u64,
    /// Pinnings a monitor invalidated (used or not).
    pub invalidations: u64,
    /// Pinnings held now (used and unused) and their bytes.
    pub pinned_regions: u64,
    pub pinned_bytes: u64,
}

/// Hashes the cache's u64 ids and keys with one multiply (ids are counters,
/// keys are spread already): SipHash cost more than the rest of a hit.
#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(26);
    }
}

/// A HashMap keyed by u64 ids, hashed with [`IdHasher`].
pub type IdMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<IdHasher>>;

/// An acquired pinning: give it back with [`Cache::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PinId(u64);

impl PinId {
    /// The id as a nonzero number, for a caller to keep in a word.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// The id `raw` came from ([`PinId::raw`]).
    pub fn from_raw(raw: u64) -> PinId {
        PinId(raw)
    }
}

struct Entry<P> {
    start: u64,
    len: u64,
    write: bool,
    users: u32,
    stale: bool,
    /// Position in the LRU list while unused.
    tick: Option<u64>,
    pin: P,
}

impl<P> Entry<P> {
    fn end(&self) -> u64 {
        self.start + self.len
    }
}

struct Inner<P> {
    entries: IdMap<Entry<P>>,
    /// Entries by (start, id): the range lookup.
    by_start: BTreeMap<(u64, u64), ()>,
    /// Unused entries as (tick, id), oldest first. An entry used again
    /// (or removed) leaves its record behind: a record counts only while
    /// its entry's `tick` still equals it. A hit and a release then cost a
    /// field write and a push, not a search tree's removal and insertion;
    /// stale records are skipped by eviction and dropped by [`compact`]
    /// once they outnumber the live ones.
    ///
    /// [`compact`]: Inner::compact
    lru: VecDeque<(u64, u64)>,
    /// Unused entries (live records of `lru`) and their bytes.
    unused: usize,
    unused_bytes: u64,
    /// The longest entry ever held: bounds the backward scan of a lookup.
    max_len: u64,
    next_id: u64,
    /// The entry [`Inner::find`] returned last (0: none).
    last: u64,
    tick: u64,
    stats: CacheStats,
}

/// A registration cache over a [`Pinner`].
pub struct Cache<B: Pinner> {
    backend: B,
    limits: Limits,
    inner: Mutex<Inner<B::Pin>>,
}

impl<B: Pinner> Cache<B> {
    pub fn new(backend: B, limits: Limits) -> Cache<B> {
        Cache {
            backend,
            limits,
            inner: Mutex::new(Inner {
                entries: IdMap::default(),
                by_start: BTreeMap::new(),
                lru: VecDeque::new(),
                unused: 0,
                unused_bytes: 0,
                max_len: 0,
                next_id: 1,
                last: 0,
                tick: 0,
                stats: CacheStats::default(),
            }),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<B::Pin>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pinning of `[start, start + len)` (page-aligned), with write rights
    /// if `write`: a cached one when the cache has one, else a new one.
    /// Returns the pinning and whether it was a hit.
    pub fn acquire(&self, start: u64, len: u64, write: bool) -> Result<(PinId, bool)> {
        if self.limits.enabled() {
            self.backend.sync();
        }
        let mut g = self.lock();
        let end = start.saturating_add(len);
        if self.limits.enabled() {
            while let Some(id) = g.find(start, end, write) {
                let g = &mut *g;
                let e = g.entries.get_mut(&id).expect("indexed entry");
                if self.backend.still_valid(e.start, e.len, &e.pin) {
                    e.users += 1;
                    if e.tick.take().is_some() {
                        g.unused -= 1;
                        g.unused_bytes -= e.len;
                    }
                    g.stats.hits += 1;
                    return Ok((PinId(id), true));
                }
                g.stats.invalidations += 1;
                if e.users == 0 {
                    self.remove(g, id);
                } else {
                    e.stale = true;
                }
            }
        }
        g.stats.misses += 1;
        let pin = match self.backend.pin(start, len, write) {
            Ok(p) => p,
            Err(e) => {
                let others: Vec<(u64, u64)> = g
                    .overlapping(start, end)
                    .into_iter()
                    .map(|o| (g.entries[&o].start, g.entries[&o].end()))
                    .collect();
                self.backend
                    .abandon(start, len, &uncovered(start, end, &others));
                return Err(e);
            }
        };
        let id = g.next_id;
        g.next_id += 1;
        g.max_len = g.max_len.max(len);
        g.by_start.insert((start, id), ());
        let stale = !self.backend.cacheable(&pin);
        g.entries.insert(
            id,
            Entry {
                start,
                len,
                write,
                users: 1,
                stale,
                tick: None,
                pin,
            },
        );
        g.stats.pinned_regions += 1;
        g.stats.pinned_bytes += len;
        Ok((PinId(id), false))
    }

    /// Gives a pinning back: it stays cached (unused, newest in LRU order)
    /// unless it is stale or caching is off; the limits then evict the
    /// oldest unused ones.
    pub fn release(&self, id: PinId) {
        let mut g = self.lock();
        let Some(e) = g.entries.get_mut(&id.0) else {
            return;
        };
        e.users = e.users.saturating_sub(1);
        if e.users > 0 {
            return;
        }
        if e.stale || !self.limits.enabled() {
            self.remove(&mut g, id.0);
            return;
        }
        g.tick += 1;
        let t = g.tick;
        let e = g.entries.get_mut(&id.0).expect("entry");
        e.tick = Some(t);
        let bytes = e.len;
        g.lru.push_back((t, id.0));
        g.unused += 1;
        g.unused_bytes += bytes;
        self.trim(&mut g);
        g.compact();
    }

    /// The monitor reports that `[start, start + len)` no longer maps the
    /// pages it did: every pinning overlapping it is invalidated. Returns how
    /// many.
    pub fn invalidate(&self, start: u64, len: u64) -> usize {
        let mut g = self.lock();
        self.invalidate_locked(&mut g, start, len)
    }

    /// As [`Cache::invalidate`], unless the cache's lock is held (by
    /// another thread, or by this one): then None, and nothing changed. For
    /// monitors that report from inside arbitrary calls.
    pub fn try_invalidate(&self, start: u64, len: u64) -> Option<usize> {
        let mut g = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(self.invalidate_locked(&mut g, start, len))
    }

    fn invalidate_locked(&self, g: &mut Inner<B::Pin>, start: u64, len: u64) -> usize {
        let end = start.saturating_add(len);
        let hit: Vec<u64> = g
            .overlapping(start, end)
            .into_iter()
            .filter(|id| !g.entries[id].stale)
            .collect();
        for &id in &hit {
            g.stats.invalidations += 1;
            let e = g.entries.get_mut(&id).expect("entry");
            if e.users == 0 {
                self.remove(g, id);
            } else {
                e.stale = true;
            }
        }
        hit.len()
    }

    /// Drops every unused pinning (domain close).
    pub fn flush(&self) {
        let mut g = self.lock();
        let ids = g.unused_ids();
        for id in ids {
            self.remove(&mut g, id);
        }
    }

    /// Whether pinning `id` was invalidated while in use.
    pub fn is_stale(&self, id: PinId) -> bool {
        self.lock().entries.get(&id.0).is_none_or(|e| e.stale)
    }

    /// Runs `f` on pinning `id`'s range and backend state.
    pub fn with_pin<R>(&self, id: PinId, f: impl FnOnce(u64, u64, &B::Pin) -> R) -> Option<R> {
        let g = self.lock();
        g.entries.get(&id.0).map(|e| f(e.start, e.len, &e.pin))
    }

    pub fn stats(&self) -> CacheStats {
        self.lock().stats
    }

    /// The unused pinnings, oldest first, as (start, len).
    pub fn lru_ranges(&self) -> Vec<(u64, u64)> {
        let g = self.lock();
        g.unused_ids()
            .iter()
            .map(|id| (g.entries[id].start, g.entries[id].len))
            .collect()
    }

    fn trim(&self, g: &mut Inner<B::Pin>) {
        while g.unused > self.limits.max_count || g.unused_bytes > self.limits.max_size {
            let Some((t, id)) = g.lru.pop_front() else {
                break;
            };
            if !g.live_record(t, id) {
                continue;
            }
            g.stats.evictions += 1;
            self.remove(g, id);
        }
    }

    fn remove(&self, g: &mut Inner<B::Pin>, id: u64) {
        let Some(e) = g.entries.remove(&id) else {
            return;
        };
        g.by_start.remove(&(e.start, id));
        if e.tick.is_some() {
            g.unused -= 1;
            g.unused_bytes -= e.len;
        }
        g.stats.pinned_regions -= 1;
        g.stats.pinned_bytes -= e.len;
        let others: Vec<(u64, u64)> = g
            .overlapping(e.start, e.end())
            .into_iter()
            .map(|o| (g.entries[&o].start, g.entries[&o].end()))
            .collect();
        let release = uncovered(e.start, e.end(), &others);
        self.backend.unpin(e.start, e.len, e.pin, &release);
    }
}

impl<P> Inner<P> {
    /// Whether LRU record (tick `t`, entry `id`) is its entry's current one
    /// (the entry is unused since that release).
    fn live_record(&self, t: u64, id: u64) -> bool {
        self.entries.get(&id).is_some_and(|e| e.tick == Some(t))
    }

    /// The unused entries, oldest first.
    fn unused_ids(&self) -> Vec<u64> {
        self.lru
            .iter()
            .filter(|&&(t, id)| self.live_record(t, id))
            .map(|&(_, id)| id)
            .collect()
    }

    /// Drops the LRU records of entries used again or removed since, once
    /// they are more than the live ones (and a few): amortized, each
    /// release pays for at most one record's removal.
    fn compact(&mut self) {
        if self.lru.len() <= 2 * self.unused + 64 {
            return;
        }
        let mut lru = std::mem::take(&mut self.lru);
        lru.retain(|&(t, id)| self.live_record(t, id));
        self.lru = lru;
    }

    /// Whether entry `e` can serve [start, end) with the rights asked for.
    fn serves(e: &Entry<P>, start: u64, end: u64, write: bool) -> bool {
        !e.stale && e.start <= start && e.end() >= end && (e.write || !write)
    }

    /// A valid entry covering [start, end) with the rights asked for: the
    /// last one served when it still does (a buffer registered again and
    /// again, the common case, costs a hash lookup), else the one found by
    /// a search of the ranges.
    fn find(&mut self, start: u64, end: u64, write: bool) -> Option<u64> {
        if self
            .entries
            .get(&self.last)
            .is_some_and(|e| Self::serves(e, start, end, write))
        {
            return Some(self.last);
        }
        let found = self.search(start, end, write);
        if let Some(id) = found {
            self.last = id;
        }
        found
    }

    fn search(&self, start: u64, end: u64, write: bool) -> Option<u64> {
        let floor = end.saturating_sub(self.max_len);
        for (&(s, id), _) in self.by_start.range(..=(start, u64::MAX)).rev() {
            if s < floor {
                break;
            }
            if Self::serves(&self.entries[&id], start, end, write) {
                return Some(id);
            }
        }
        None
    }

    /// Entries overlapping [start, end).
    fn overlapping(&self, start: u64, end: u64) -> Vec<u64> {
        let floor = start.saturating_sub(self.max_len);
        self.by_start
            .range((floor, 0)..(end, 0))
            .map(|(&(_, id), _)| id)
            .filter(|id| self.entries[id].end() > start)
            .collect()
    }
}

/// The parts of `[start, end)` that none of `covers` (half-open ranges)
/// covers, in address order.
pub fn uncovered(start: u64, end: u64, covers: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut c: Vec<(u64, u64)> = covers
        .iter()
        .map(|&(s, e)| (s.max(start), e.min(end)))
        .filter(|&(s, e)| s < e)
        .collect();
    c.sort_unstable();
    let mut out = Vec::new();
    let mut at = start;
    for (s, e) in c {
        if s > at {
            out.push((at, s - at));
        }
        at = at.max(e);
    }
    if at < end {
        out.push((at, end - at));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::Arc;

    /// (start, len, released parts) of one unpin.
    type Unpin = (u64, u64, Vec<(u64, u64)>);

    /// Records pins and unpins; refuses ranges starting at `refuse`.
    #[derive(Default)]
    struct Log {
        pins: Mutex<Vec<(u64, u64, bool)>>,
        unpins: Mutex<Vec<Unpin>>,
        abandons: Mutex<Vec<Vec<(u64, u64)>>>,
        refuse: u64,
    }

    impl Pinner for Arc<Log> {
        type Pin = u64;
        fn pin(&self, start: u64, len: u64, write: bool) -> Result<u64> {
            if start == self.refuse {
                return Err(Error::NOMEM);
            }
            self.pins.lock().unwrap().push((start, len, write));
            Ok(start ^ len)
        }
        fn unpin(&self, start: u64, len: u64, pin: u64, release: &[(u64, u64)]) {
            assert_eq!(pin, start ^ len);
            self.unpins
                .lock()
                .unwrap()
                .push((start, len, release.to_vec()));
        }
        fn abandon(&self, _start: u64, _len: u64, release: &[(u64, u64)]) {
            self.abandons.lock().unwrap().push(release.to_vec());
        }
    }

    fn cache(count: usize, size: u64) -> (Cache<Arc<Log>>, Arc<Log>) {
        let log = Arc::new(Log {
            refuse: 0xdead_0000,
            ..Log::default()
        });
        let c = Cache::new(
            log.clone(),
            Limits {
                max_count: count,
                max_size: size,
            },
        );
        (c, log)
    }

    const P: u64 = 4096;

    #[test]
    fn hit_inside_live_and_released_pinnings() {
        let (c, log) = cache(8, u64::MAX);
        let (a, hit) = c.acquire(0x10000, 16 * P, true).unwrap();
        assert!(!hit);
        let (b, hit) = c.acquire(0x10000 + P, 2 * P, false).unwrap();
        assert!(hit);
        assert_eq!(a, b);
        c.release(a);
        c.release(b);
        assert_eq!(c.lru_ranges(), vec![(0x10000, 16 * P)]);
        let (d, hit) = c.acquire(0x10000, 16 * P, true).unwrap();
        assert!(hit);
        assert_eq!(d, a);
        assert!(c.lru_ranges().is_empty());
        // Beyond the end: a miss.
        let (e, hit) = c.acquire(0x10000 + 15 * P, 2 * P, false).unwrap();
        assert!(!hit);
        assert_ne!(e, a);
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (2, 2));
        assert_eq!(s.pinned_regions, 2);
        assert_eq!(s.pinned_bytes, 18 * P);
        assert_eq!(log.pins.lock().unwrap().len(), 2);
    }

    #[test]
    fn pinnings_used_again_keep_their_lru_place_honest_and_the_list_short() {
        // Three pinnings released oldest first (a, b, c), then a used and
        // released again many times: its old records must not count, the
        // LRU order becomes b, c, a, and the records stay few.
        let (c, log) = cache(3, u64::MAX);
        let ids: Vec<PinId> = [0x100000, 0x200000, 0x300000]
            .iter()
            .map(|&s| c.acquire(s, P, true).unwrap().0)
            .collect();
        for &id in &ids {
            c.release(id);
        }
        for _ in 0..10_000 {
            let (a, hit) = c.acquire(0x100000, P, true).unwrap();
            assert!(hit);
            assert_eq!(a, ids[0]);
            c.release(a);
        }
        assert_eq!(
            c.lru_ranges(),
            vec![(0x200000, P), (0x300000, P), (0x100000, P)]
        );
        assert!(c.lock().lru.len() <= 2 * 3 + 64 + 1);
        // A fourth evicts the oldest unused one: b, not a.
        let (d, _) = c.acquire(0x400000, P, true).unwrap();
        c.release(d);
        assert_eq!(
            c.lru_ranges(),
            vec![(0x300000, P), (0x100000, P), (0x400000, P)]
        );
        let un: Vec<u64> = log.unpins.lock().unwrap().iter().map(|u| u.0).collect();
        assert_eq!(un, vec![0x200000]);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.evictions), (10_000, 4, 1));
        assert_eq!(s.pinned_regions, 3);
        // In use, a pinning is not evicted whatever its old records say.
        let (a, _) = c.acquire(0x100000, P, true).unwrap();
        for s in [0x500000, 0x600000, 0x700000] {
            let (x, _) = c.acquire(s, P, true).unwrap();
            c.release(x);
        }
        assert_eq!(
            c.lru_ranges(),
            vec![(0x500000, P), (0x600000, P), (0x700000, P)]
        );
        c.release(a);
        assert_eq!(
            c.lru_ranges(),
            vec![(0x600000, P), (0x700000, P), (0x100000, P)]
        );
        c.flush();
        assert!(c.lru_ranges().is_empty());
        assert_eq!(c.stats().pinned_regions, 0);
    }

    #[test]
    fn read_only_pinning_never_serves_write() {
        let (c, _) = cache(8, u64::MAX);
        let (r, _) = c.acquire(0x20000, 4 * P, false).unwrap();
        let (w, hit) = c.acquire(0x20000, 4 * P, true).unwrap();
        assert!(!hit);
        assert_ne!(r, w);
        // The write pinning serves reads.
        c.release(r);
        c.release(w);
        let (x, hit) = c.acquire(0x20000, P, true).unwrap();
        assert!(hit);
        assert_eq!(x, w);
    }

    #[test]
    fn count_limit_evicts_oldest_first() {
        let (c, log) = cache(2, u64::MAX);
        let ids: Vec<PinId> = (0..4)
            .map(|i| c.acquire(0x100000 * (i + 1), P, true).unwrap().0)
            .collect();
        for id in &ids {
            c.release(*id);
        }
        assert_eq!(c.lru_ranges(), vec![(0x300000, P), (0x400000, P)]);
        let un: Vec<u64> = log.unpins.lock().unwrap().iter().map(|u| u.0).collect();
        assert_eq!(un, vec![0x100000, 0x200000]);
        assert_eq!(c.stats().evictions, 2);
        // A hit refreshes: 3 becomes newest, so 4 goes next.
        let (h, hit) = c.acquire(0x300000, P, false).unwrap();
        assert!(hit);
        c.release(h);
        let (n, _) = c.acquire(0x500000, P, true).unwrap();
        c.release(n);
        assert_eq!(c.lru_ranges(), vec![(0x300000, P), (0x500000, P)]);
    }

    #[test]
    fn size_limit_counts_unused_bytes() {
        let (c, _) = cache(100, 3 * P);
        let (a, _) = c.acquire(0x100000, 2 * P, true).unwrap();
        let (b, _) = c.acquire(0x200000, 2 * P, true).unwrap();
        c.release(a);
        c.release(b);
        assert_eq!(c.lru_ranges(), vec![(0x200000, 2 * P)]);
        // A pinning bigger than the limit is not kept at all.
        let (d, _) = c.acquire(0x300000, 4 * P, true).unwrap();
        c.release(d);
        assert!(c.lru_ranges().is_empty());
        assert_eq!(c.stats().pinned_regions, 0);
    }

    #[test]
    fn count_zero_disables() {
        let (c, log) = cache(0, u64::MAX);
        let (a, _) = c.acquire(0x100000, P, true).unwrap();
        let (b, hit) = c.acquire(0x100000, P, true).unwrap();
        assert!(!hit);
        c.release(a);
        c.release(b);
        assert_eq!(log.unpins.lock().unwrap().len(), 2);
        assert_eq!(c.stats().pinned_regions, 0);
        assert_eq!(c.stats().hits, 0);
    }

    #[test]
    fn invalidated_pinning_is_never_served() {
        let (c, _) = cache(8, u64::MAX);
        let (a, _) = c.acquire(0x100000, 4 * P, true).unwrap();
        let (u, _) = c.acquire(0x200000, 4 * P, true).unwrap();
        c.release(u);
        assert_eq!(c.invalidate(0x100000 + P, 1), 1);
        assert_eq!(c.invalidate(0x200000 + 3 * P, P), 1);
        assert!(c.is_stale(a));
        assert_eq!(c.stats().pinned_regions, 1);
        let (b, hit) = c.acquire(0x100000, 4 * P, true).unwrap();
        assert!(!hit);
        assert_ne!(a, b);
        c.release(a);
        assert_eq!(c.stats().pinned_regions, 1);
        assert_eq!(c.stats().invalidations, 2);
        // Invalidating again does not count the stale one twice.
        let (_, hit) = c.acquire(0x200000, P, true).unwrap();
        assert!(!hit);
    }

    #[test]
    fn refused_pin_changes_nothing() {
        let (c, _) = cache(8, u64::MAX);
        assert_eq!(c.acquire(0xdead_0000, P, true), Err(Error::NOMEM));
        assert_eq!(c.stats().pinned_regions, 0);
    }

    #[test]
    fn refused_pin_abandons_only_uncovered_parts() {
        let (c, log) = cache(8, u64::MAX);
        let (a, _) = c.acquire(0xdead_0000 + P, P, true).unwrap();
        assert!(c.acquire(0xdead_0000, 4 * P, true).is_err());
        assert_eq!(
            *log.abandons.lock().unwrap(),
            vec![vec![(0xdead_0000, P), (0xdead_0000 + 2 * P, 2 * P)]]
        );
        c.release(a);
    }

    #[test]
    fn try_invalidate_leaves_a_busy_cache_alone() {
        let (c, _) = cache(8, u64::MAX);
        let (a, _) = c.acquire(0x100000, 4 * P, true).unwrap();
        c.release(a);
        // The lock is held (here by this very thread): nothing changes.
        assert_eq!(
            c.with_pin(a, |_, _, _| c.try_invalidate(0x100000, P)),
            Some(None)
        );
        assert_eq!(c.stats().pinned_regions, 1);
        assert_eq!(c.try_invalidate(0x100000, P), Some(1));
        assert_eq!(c.stats().pinned_regions, 0);
    }

    #[test]
    fn unpin_releases_only_uncovered_parts() {
        let (c, log) = cache(0, u64::MAX);
        let (a, _) = c.acquire(0x100000, 4 * P, true).unwrap();
        let (b, _) = c.acquire(0x100000 + 2 * P, 4 * P, true).unwrap();
        c.release(a);
        assert_eq!(log.unpins.lock().unwrap()[0].2, vec![(0x100000, 2 * P)]);
        c.release(b);
        assert_eq!(
            log.unpins.lock().unwrap()[1].2,
            vec![(0x100000 + 2 * P, 4 * P)]
        );
    }

    #[test]
    fn uncovered_parts() {
        assert_eq!(uncovered(0, 10, &[]), vec![(0, 10)]);
        assert_eq!(
            uncovered(0, 10, &[(2, 4), (3, 6), (8, 20)]),
            vec![(0, 2), (6, 2)]
        );
        assert_eq!(uncovered(5, 10, &[(0, 100)]), vec![]);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Against a model: a hit always covers the range with enough
            /// rights, the unused list stays within the limits, and pinned
            /// counters match the entries held.
            #[test]
            fn model(ops in proptest::collection::vec((0u8..4, 0u64..16, 1u64..4, any::<bool>()), 1..80),
                     count in 0usize..4, size in 1u64..12) {
                let (c, _) = cache(count, size * P);
                let mut held: Vec<(PinId, u64, u64, bool)> = Vec::new();
                for (op, page, pages, write) in ops {
                    let (s, l) = (page * P, pages * P);
                    match op {
                        0 | 1 => {
                            let (id, hit) = c.acquire(s, l, write).unwrap();
                            if hit {
                                let ok = c.with_pin(id, |ps, pl, _| ps <= s && ps + pl >= s + l).unwrap();
                                prop_assert!(ok);
                            }
                            held.push((id, s, l, write));
                        }
                        2 => if !held.is_empty() {
                            let (id, ..) = held.remove((page as usize) % held.len());
                            c.release(id);
                        },
                        _ => { c.invalidate(s, l); }
                    }
                    let lru = c.lru_ranges();
                    prop_assert!(lru.len() <= count);
                    prop_assert!(lru.iter().map(|r| r.1).sum::<u64>() <= size * P);
                }
                for (id, ..) in held { c.release(id); }
                c.flush();
                prop_assert_eq!(c.stats().pinned_regions, 0);
                prop_assert_eq!(c.stats().pinned_bytes, 0);
            }
        }
    }
}
