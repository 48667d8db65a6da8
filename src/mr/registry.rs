//! The regions of one domain: registration, close, enable and bindings,
//! keys, statistics.
//!
//! `register` and `close` are O(1): a slot from a lock-free free list, a
//! key from the slot (provider keys) or from the requested-key index, and a
//! handful of atomic stores. Nothing here blocks a reader; see `verify.rs`
//! for the read path and `slot.rs` for the protocol between the two.

use super::index::Index;
use super::iov::{self, IovPool, MAX_IOVS};
use super::key::{splitmix, KeyCodec};
use super::region::{Access, Bindings, Handle, RegFlags, RegionInfo, Request};
use super::slot::*;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The key value that means "no key" (`FI_KEY_NOTAVAIL`); never issued,
/// never accepted as a requested key.
pub const KEY_NOTAVAIL: u64 = u64::MAX;

/// A `sub_mr_cnt` hint larger than this reserves only this much.
const RESERVE_MAX: usize = 1 << 16;

/// How a registry is set up; see [`Registry::with_config`].
#[derive(Clone, Debug)]
pub struct Config {
    /// `mr_key_size`: 1..=8 bytes.
    pub key_size: usize,
    /// Keys are chosen by the engine (`FI_MR_PROV_KEY`); otherwise every
    /// registration brings its requested key.
    pub prov_keys: bool,
    /// Secret for key permutation, index hashing and auth digests; `None`
    /// draws one from the standard library's per-process random state.
    pub secret: Option<u64>,
    /// Most live regions (at most what the key size allows).
    pub max_regions: usize,
    /// Most iovs per region (`mr_iov_limit`), at most [`MAX_IOVS`].
    pub max_iovs: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            key_size: 8,
            prov_keys: true,
            secret: None,
            max_regions: usize::MAX,
            max_iovs: MAX_IOVS,
        }
    }
}

/// Counters of one registry (relaxed: each is exact, together they are a
/// near-simultaneous view).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Registrations minus closes.
    pub live_regions: usize,
    /// Bytes of the live regions, summed over them when asked (a counter
    /// would add two atomic read-modify-writes to every register/close
    /// pair, a quarter of its cost).
    pub live_bytes: u64,
    pub registrations: u64,
    pub closes: u64,
    /// Registrations refused.
    pub failures: u64,
    /// Verifications refused.
    pub denied: u64,
    /// Raw keys mapped and not yet unmapped.
    pub mapped_keys: usize,
    /// Memory the engine holds for this registry (slots, iov pool, index).
    pub engine_bytes: usize,
}

/// Registrations and closes are not counted as they happen: every close
/// moves its slot to the next generation, so the closes are the sum of the
/// slots' generations (less the generations a provider-key registration
/// skipped, counted here), and the registrations are the closes plus the
/// live slots ([`Registry::tally`]). The register/close pair pays nothing
/// for its statistics.
#[derive(Default)]
#[repr(align(128))]
struct Counters {
    /// Generations skipped by registrations (a key that would have been
    /// `FI_KEY_NOTAVAIL`): rare.
    skipped: AtomicU64,
    failures: AtomicU64,
    denied: AtomicU64,
}

/// What is wrong with a request's iovs ([`Registry::check_iovs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IovFault {
    /// No iovs, or more than the registry's `max_iovs`: the count.
    Count(usize),
    /// Iov `i` has length 0.
    Empty(usize),
    /// Iov `i` starts at address 0.
    Null(usize),
    /// Iov `i` wraps the address space.
    Wraps(usize),
    /// The lengths' sum overflows.
    Total,
}

/// A request's iovs that [`Registry::check_iovs`] accepted, and their
/// total length.
#[derive(Clone, Copy, Debug)]
pub struct CheckedIovs<'a> {
    iovs: &'a [(u64, u64)],
    total: u64,
}

/// A consistent copy of a slot's words.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snap {
    pub seq: u64,
    pub key: u64,
    pub base: u64,
    pub len: u64,
    pub meta: u64,
    pub links: u64,
    pub context: u64,
    pub auth: u64,
}

impl Snap {
    #[inline(always)]
    pub(crate) fn load(s: &Slot, seq: u64) -> Snap {
        Snap {
            seq,
            key: s.key.load(Ordering::Relaxed),
            base: s.base.load(Ordering::Relaxed),
            len: s.len.load(Ordering::Relaxed),
            meta: s.meta.load(Ordering::Relaxed),
            links: s.links.load(Ordering::Relaxed),
            context: s.context.load(Ordering::Relaxed),
            auth: s.auth.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn flags(&self) -> RegFlags {
        meta_flags(self.meta)
    }
}

/// The memory regions of one domain.
pub struct Registry {
    pub(crate) slots: Slots,
    pub(crate) codec: KeyCodec,
    /// Requested-key registries only.
    pub(crate) index: Option<Index>,
    pub(crate) pool: IovPool,
    max_iovs: usize,
    secret: u64,
    counters: Counters,
    pub(crate) mapped: Mutex<HashMap<u64, usize>>,
    pub(crate) mapped_total: AtomicUsize,
}

/// The byte ranges `[start, end)` of a region in virtual memory.
pub(crate) type Ranges = Vec<(u64, u64)>;

/// Sorts and merges `[start, end)` ranges (overlapping or adjacent ones
/// become one).
pub(crate) fn merge(mut r: Ranges) -> Ranges {
    r.sort_unstable();
    let mut out: Ranges = Vec::with_capacity(r.len());
    for (s, e) in r {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// As [`merge`], for `iovs.len() <= buf.len()` (base, length) pieces, into
/// `buf`: returns how many merged ranges lead it.
pub(crate) fn merge_small(buf: &mut [(u64, u64)], iovs: &[(u64, u64)]) -> usize {
    let r = &mut buf[..iovs.len()];
    // Pieces in address order with gaps between them, the common case,
    // are already merged.
    let mut merged = true;
    let mut prev_end = 0;
    for (i, (d, &(b, l))) in r.iter_mut().zip(iovs).enumerate() {
        *d = (b, b + l);
        merged &= i == 0 || b > prev_end;
        prev_end = b + l;
    }
    if merged {
        return r.len();
    }
    r.sort_unstable();
    let mut n = 0;
    for i in 0..r.len() {
        let (s, e) = r[i];
        if n > 0 && s <= r[n - 1].1 {
            r[n - 1].1 = r[n - 1].1.max(e);
        } else {
            r[n] = (s, e);
            n += 1;
        }
    }
    n
}

/// Whether `[s, e)` lies inside one of the merged ranges `m`.
pub(crate) fn covered(m: &[(u64, u64)], s: u64, e: u64) -> bool {
    let i = m.partition_point(|r| r.0 <= s);
    i > 0 && e <= m[i - 1].1
}

impl Registry {
    /// A registry; `Error::INVAL` for a key size outside 1..=8 or an iov
    /// limit outside 1..=[`MAX_IOVS`].
    pub fn with_config(cfg: Config) -> Result<Registry> {
        Self::build(cfg, None)
    }

    /// As [`Registry::with_config`], with the slots of the first `bytes /
    /// 64` regions in `mem`: memory the caller shares with other processes
    /// so that they can check accesses to those regions themselves
    /// ([`super::remote::RemoteSlots`]).
    ///
    /// # Safety
    /// `mem` is 64-byte aligned, zeroed and `bytes` long; it stays mapped,
    /// and nothing in this process writes it but the registry, for as long
    /// as the registry lives.
    pub unsafe fn with_config_in(cfg: Config, mem: *mut u8, bytes: usize) -> Result<Registry> {
        if mem.is_null() || mem as usize % 64 != 0 {
            return Err(Error::INVAL);
        }
        Self::build(cfg, Some((mem, bytes / 64)))
    }

    /// The key size and secret another process needs to decode this
    /// registry's provider keys ([`super::remote::RemoteSlots::new`]).
    pub fn key_params(&self) -> (usize, u64) {
        (self.codec.key_size(), self.secret)
    }

    fn build(cfg: Config, mem: Option<(*mut u8, usize)>) -> Result<Registry> {
        if !(1..=8).contains(&cfg.key_size) || !(1..=MAX_IOVS).contains(&cfg.max_iovs) {
            return Err(Error::INVAL);
        }
        let secret = cfg
            .secret
            .unwrap_or_else(|| std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64));
        let codec = KeyCodec::new(cfg.key_size, secret);
        let limit = cfg.max_regions.min(1 << codec.slot_bits()).max(1);
        Ok(Registry {
            slots: match mem {
                // SAFETY: with_config_in's contract.
                Some((p, n)) => unsafe { Slots::new_in(limit, p, n) },
                None => Slots::new(limit),
            },
            index: (!cfg.prov_keys).then(|| Index::new(secret)),
            codec,
            pool: IovPool::new(),
            max_iovs: cfg.max_iovs,
            secret,
            counters: Counters::default(),
            mapped: Mutex::new(HashMap::new()),
            mapped_total: AtomicUsize::new(0),
        })
    }

    /// Whether keys are chosen by the engine.
    pub fn prov_keys(&self) -> bool {
        self.index.is_none()
    }

    /// Largest key value of this key size.
    pub fn max_key(&self) -> u64 {
        self.codec.max_key()
    }

    /// Generation bits carried by a provider key: a stale key can match a
    /// region again only after its slot was reused 2^this times.
    pub fn generation_bits(&self) -> u32 {
        self.codec.gen_bits()
    }

    /// Most live regions.
    pub fn capacity(&self) -> usize {
        self.slots.limit()
    }

    pub fn max_iovs(&self) -> usize {
        self.max_iovs
    }

    /// A 64-bit digest of an authorization key given as bytes, to pass as
    /// [`Request::auth`] and to `verify`. Keyed with this registry's secret.
    pub fn auth_digest(&self, bytes: &[u8]) -> u64 {
        let mut st = self.secret ^ 0xa076_1d64_78bd_642f;
        let mut h = splitmix(&mut st) ^ bytes.len() as u64;
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            st ^= u64::from_le_bytes(w) ^ h;
            h = splitmix(&mut st);
        }
        h
    }

    #[inline(always)]
    pub(crate) fn slot(&self, i: u32) -> Option<&Slot> {
        self.slots.get(i)
    }

    /// A validated snapshot of slot `i`, if it holds a live region.
    pub(crate) fn snapshot(&self, i: u32) -> Option<Snap> {
        let s = self.slot(i)?;
        loop {
            let seq = s.seq.load(Ordering::Acquire);
            if seq & READY == 0 {
                return None;
            }
            let snap = Snap::load(s, seq);
            fence(Ordering::Acquire);
            if s.seq.load(Ordering::Relaxed) == seq {
                return Some(snap);
            }
        }
    }

    /// Snapshot of the live region `h` names; `Error::INVAL` if it is gone.
    fn live(&self, h: &Handle) -> Result<Snap> {
        match self.snapshot(h.slot) {
            Some(s) if gen_of(s.seq) == h.gen && s.key == h.key => Ok(s),
            _ => Err(Error::INVAL),
        }
    }

    /// The handle of the live region in `slot` at generation `gen` (what a
    /// provider that keeps [`Handle::slot`] and [`Handle::gen`] holds):
    /// `INVAL` once that region is closed.
    #[inline]
    pub fn handle_at(&self, slot: u32, gen: u64) -> Result<Handle> {
        match self.snapshot(slot) {
            Some(s) if gen_of(s.seq) == gen => Ok(Handle {
                slot,
                gen,
                key: s.key,
            }),
            _ => Err(Error::INVAL),
        }
    }

    /// The handle of the live region with key `key`.
    pub fn handle(&self, key: u64) -> Result<Handle> {
        self.find_live(key)
            .map(|(slot, s)| Handle {
                slot,
                gen: gen_of(s.seq),
                key,
            })
            .ok_or(Error::INVAL)
    }

    /// The slot and a snapshot of the live region with key `key`. The
    /// index may hand a reader that raced a rebuild another key's slot
    /// (index.rs): a slot whose region has another key is a miss, which
    /// counts only once the index is seen unchanged.
    pub(crate) fn find_live(&self, key: u64) -> Option<(u32, Snap)> {
        let live = |slot: u32| {
            self.snapshot(slot)
                .filter(|s| s.key == key)
                .map(|s| (slot, s))
        };
        match &self.index {
            None => self.codec.decode(key).and_then(|(slot, _)| live(slot)),
            Some(ix) => loop {
                let (found, v) = ix.lookup(key);
                if let Some(hit) = found.and_then(live) {
                    return Some(hit);
                }
                if ix.unchanged(v) {
                    return None;
                }
            },
        }
    }

    /// Registers a region. Errors: `INVAL` for a malformed request (no iovs
    /// or more than `max_iovs`, a zero-length or wrapping iov, a bad page
    /// size or iface, a dead parent, a sub-region outside its base or with
    /// rights its base lacks); `KEYREJECTED` for a requested key that is
    /// `FI_KEY_NOTAVAIL` or too large for the key size; `NOKEY` for a
    /// requested key in use; `NOSPC` when every slot is taken.
    pub fn register(&self, req: &Request) -> Result<Handle> {
        match self.check_iovs(req.iovs, false) {
            Ok(c) => self.register_checked(req, c),
            Err(_) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                Err(Error::INVAL)
            }
        }
    }

    /// Checks a request's iovs as [`Registry::register`] does (and, with
    /// `refuse_null`, refuses an iov at address 0), saying which one is
    /// wrong: a provider logs that, then registers with
    /// [`Registry::register_checked`] without a second pass over them.
    /// Counts nothing.
    #[inline]
    pub fn check_iovs<'a>(
        &self,
        iovs: &'a [(u64, u64)],
        refuse_null: bool,
    ) -> std::result::Result<CheckedIovs<'a>, IovFault> {
        if iovs.is_empty() || iovs.len() > self.max_iovs {
            return Err(IovFault::Count(iovs.len()));
        }
        let mut total: u64 = 0;
        for (i, &(base, len)) in iovs.iter().enumerate() {
            if len == 0 {
                return Err(IovFault::Empty(i));
            }
            if refuse_null && base == 0 {
                return Err(IovFault::Null(i));
            }
            if base.checked_add(len).is_none() {
                return Err(IovFault::Wraps(i));
            }
            total = total.checked_add(len).ok_or(IovFault::Total)?;
        }
        Ok(CheckedIovs { iovs, total })
    }

    /// [`Registry::register`] for a request whose iovs `c` checked (they
    /// must be `req.iovs`: other iovs are `INVAL`).
    #[inline]
    pub fn register_checked(&self, req: &Request, c: CheckedIovs<'_>) -> Result<Handle> {
        let r = if std::ptr::eq(req.iovs, c.iovs) {
            self.register_inner(req, c.total)
        } else {
            Err(Error::INVAL)
        };
        if r.is_err() {
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    #[inline(always)]
    fn register_inner(&self, req: &Request, total: u64) -> Result<Handle> {
        if req.iface > 0xf || (req.page_size != 0 && !req.page_size.is_power_of_two()) {
            return Err(Error::INVAL);
        }
        if self.index.is_some()
            && (req.requested_key == KEY_NOTAVAIL || req.requested_key > self.max_key())
        {
            return Err(Error::KEYREJECTED);
        }
        let mut meta = meta_word(
            req.access,
            req.flags,
            req.iface,
            (req.page_size != 0).then(|| req.page_size.trailing_zeros()),
            req.auth.is_some(),
        );
        let parent = match req.parent {
            Some(p) => {
                let pmeta = self.adopt(&p, req)?;
                meta = (meta & !META_INHERIT) | (pmeta & META_INHERIT);
                Some(p.slot)
            }
            None => None,
        };
        let r = if req.iovs.len() == 1 {
            self.place(req, parent, req.iovs[0].0, total, meta, 0, |_| {})
        } else {
            self.place_multi(req, parent, total, meta)
        };
        if r.is_err() {
            if let Some(p) = parent.and_then(|p| self.slot(p)) {
                p.seq.fetch_sub(CHILD_ONE, Ordering::AcqRel);
            }
        }
        if r.is_ok() && req.sub_mr_cnt > 0 {
            self.reserve(req.sub_mr_cnt);
        }
        r
    }

    /// [`Registry::place`] for a request of several iovs: the ranges (merged
    /// under `VIRT_ADDR`, offsets otherwise) the pool will hold.
    #[inline(always)]
    fn place_multi(
        &self,
        req: &Request,
        parent: Option<u32>,
        total: u64,
        meta: u64,
    ) -> Result<Handle> {
        // What the slot and the pool will hold (see verify.rs): the merged
        // ranges under VIRT_ADDR (merged on the stack for short lists, which
        // then allocate nothing), (address, end offset) pairs otherwise.
        if !req.flags.contains(RegFlags::VIRT_ADDR) {
            let n = req.iovs.len();
            return self.place(req, parent, req.iovs[0].0, total, meta, n, |w| {
                let mut end = 0;
                for (p, &(b, l)) in w.chunks_exact(2).zip(req.iovs) {
                    end += l;
                    p[0].store(b, Ordering::Relaxed);
                    p[1].store(end, Ordering::Relaxed);
                }
            });
        }
        const SMALL_IOVS: usize = 8;
        let mut small = [(0u64, 0u64); SMALL_IOVS];
        let heap: Ranges;
        let merged: &[(u64, u64)] = if req.iovs.len() <= SMALL_IOVS {
            let m = merge_small(&mut small, req.iovs);
            &small[..m]
        } else {
            heap = merge(req.iovs.iter().map(|&(b, l)| (b, b + l)).collect());
            &heap
        };
        let bytes = merged.iter().map(|r| r.1 - r.0).sum();
        // One merged range is a contiguous region: no pairs.
        let n = if merged.len() > 1 { merged.len() } else { 0 };
        self.place(req, parent, merged[0].0, bytes, meta, n, |w| {
            for (p, &(a, b)) in w.chunks_exact(2).zip(merged) {
                p[0].store(a, Ordering::Relaxed);
                p[1].store(b, Ordering::Relaxed);
            }
        })
    }

    /// Checks a sub-region against its base and counts it as the base's
    /// child (in the base's `seq`, so that the base cannot close meanwhile).
    /// Returns the base's meta word.
    fn adopt(&self, p: &Handle, req: &Request) -> Result<u64> {
        let (snap, ranges) = self.ranges(p.slot).ok_or(Error::INVAL)?;
        if gen_of(snap.seq) != p.gen || snap.key != p.key {
            return Err(Error::INVAL);
        }
        if !meta_access(snap.meta).contains(req.access) {
            return Err(Error::INVAL);
        }
        let m = merge(ranges);
        if !req.iovs.iter().all(|&(b, l)| covered(&m, b, b + l)) {
            return Err(Error::INVAL);
        }
        let ps = self.slot(p.slot).ok_or(Error::INVAL)?;
        // Same generation as the snapshot: its meta and ranges still hold.
        let mut cur = snap.seq;
        loop {
            if cur & READY == 0 || gen_of(cur) != p.gen {
                return Err(Error::INVAL);
            }
            if cur & CHILD_MASK == CHILD_MASK {
                return Err(Error::NOSPC);
            }
            match ps.seq.compare_exchange_weak(
                cur,
                cur + CHILD_ONE,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(snap.meta),
                Err(v) => cur = v,
            }
        }
    }

    /// A validated snapshot of slot `i` and the region's virtual ranges.
    pub(crate) fn ranges(&self, i: u32) -> Option<(Snap, Ranges)> {
        let s = self.slot(i)?;
        loop {
            let seq = s.seq.load(Ordering::Acquire);
            if seq & READY == 0 {
                return None;
            }
            let snap = Snap::load(s, seq);
            let r = self.read_ranges(&snap);
            fence(Ordering::Acquire);
            if s.seq.load(Ordering::Relaxed) == seq {
                return r.map(|r| (snap, r));
            }
        }
    }

    /// The region's ranges `[start, end)` from a snapshot (inside its read
    /// window; may be garbage until the snapshot is validated).
    fn read_ranges(&self, snap: &Snap) -> Option<Ranges> {
        let n = links_iovs(snap.links);
        if n <= 1 {
            return Some(vec![(snap.base, snap.base.checked_add(snap.len)?)]);
        }
        let w = self.pool.words(n, links_block(snap.links))?;
        let virt = snap.flags().contains(RegFlags::VIRT_ADDR);
        let mut prev = 0u64;
        let mut out = Vec::with_capacity(n);
        for p in w.chunks_exact(2) {
            let (a, b) = (p[0].load(Ordering::Relaxed), p[1].load(Ordering::Relaxed));
            if virt {
                out.push((a, b));
            } else {
                out.push((a, a.checked_add(b.checked_sub(prev)?)?));
                prev = b;
            }
        }
        Some(out)
    }

    /// Takes a slot, fills it and publishes it. Inlined into both callers
    /// (a call here cost a tenth of a register/close pair).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn place(
        &self,
        req: &Request,
        parent: Option<u32>,
        base: u64,
        len: u64,
        meta: u64,
        n: usize,
        pairs: impl FnOnce(&[AtomicU64]),
    ) -> Result<Handle> {
        let (idx, slot) = self.slots.pop_slot().ok_or(Error::NOSPC)?;
        // The block the slot's last region left parked, reused when it is
        // of the size class this one needs and returned to the pool if not.
        let parked = parked_block((slot.links.load(Ordering::Relaxed) >> 32) as u32);
        let reuse = parked.filter(|&(c, _)| n > 1 && c == iov::class_of(n));
        if let (Some((c, b)), None) = (parked, reuse) {
            self.pool.free(1 << c, b);
        }
        let block = match reuse {
            Some((_, b)) => b,
            None if n > 1 => match self.pool.alloc(n) {
                Some(b) => b,
                None => {
                    self.slots.push_slot(idx, slot, 0);
                    return Err(Error::NOSPC);
                }
            },
            None => 0,
        };
        let mut gen = gen_of(slot.seq.load(Ordering::Relaxed));
        let key = if self.index.is_some() {
            req.requested_key
        } else {
            loop {
                let k = self.codec.encode(idx, gen);
                if k != KEY_NOTAVAIL {
                    break k;
                }
                gen = (gen + 1) & GEN_MASK;
                self.counters.skipped.fetch_add(1, Ordering::Relaxed);
            }
        };
        // Readers that raced with the slot's last close must see its new
        // generation before any new field value (slot.rs).
        fence(Ordering::Release);
        if n > 1 {
            pairs(self.pool.words(n, block).expect("allocated block"));
        }
        slot.key.store(key, Ordering::Relaxed);
        slot.base.store(base, Ordering::Relaxed);
        slot.len.store(len, Ordering::Relaxed);
        slot.meta.store(meta, Ordering::Relaxed);
        slot.links
            .store(links_word(parent, n.max(1), block), Ordering::Relaxed);
        slot.context.store(req.context, Ordering::Relaxed);
        slot.auth.store(req.auth.unwrap_or(0), Ordering::Relaxed);
        if let Some(ix) = &self.index {
            if !ix.insert(key, idx) {
                slot.seq.store(gen << GEN_SHIFT, Ordering::Relaxed);
                let keep = if n > 1 {
                    parked_word(iov::class_of(n), block)
                } else {
                    0
                };
                self.slots.push_slot(idx, slot, keep);
                return Err(Error::NOKEY);
            }
        }
        let enabled = if req.flags.contains(RegFlags::DISABLED) {
            0
        } else {
            ENABLED
        };
        slot.seq
            .store((gen << GEN_SHIFT) | READY | enabled, Ordering::Release);
        Ok(Handle {
            slot: idx,
            gen,
            key,
        })
    }

    /// Closes a region. Errors: `INVAL` for a handle whose region is gone
    /// (or being closed by another thread); `BUSY` while it has live
    /// sub-regions. On error nothing changes.
    pub fn close(&self, h: &Handle) -> Result<()> {
        self.close_at(h.slot, h.gen, || {}).map(|_| ())
    }

    /// As [`Registry::close`], for the region in `slot` at generation
    /// `gen`, running `teardown` once the region is closed but before its
    /// slot can be handed to another registration (the caller's per-slot
    /// state, a provider's MR object, is still its own there); returns its
    /// handle (with its key), now stale.
    pub fn close_at(&self, slot_ix: u32, gen: u64, teardown: impl FnOnce()) -> Result<Handle> {
        let slot = self.slot(slot_ix).ok_or(Error::INVAL)?;
        // One CAS takes the slot from readers, unless sub-regions live
        // (they count in `seq`, so none can be added meanwhile).
        let mut s = slot.seq.load(Ordering::Acquire);
        loop {
            if s & READY == 0 || gen_of(s) != gen {
                return Err(Error::INVAL);
            }
            if s & CHILD_MASK != 0 {
                return Err(Error::BUSY);
            }
            // SeqCst: see the verifier's first load of `seq` (verify.rs).
            match slot.seq.compare_exchange_weak(
                s,
                next_gen(s),
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(v) => s = v,
            }
        }
        let key = slot.key.load(Ordering::Relaxed);
        let links = slot.links.load(Ordering::Relaxed);
        if let Some(ix) = &self.index {
            ix.remove(key);
        }
        // A multi-iov region's block stays with the slot (slot.rs).
        let n = links_iovs(links);
        let keep = if n > 1 {
            parked_word(iov::class_of(n), links_block(links))
        } else {
            0
        };
        if let Some(p) = links_parent(links).and_then(|p| self.slot(p)) {
            p.seq.fetch_sub(CHILD_ONE, Ordering::AcqRel);
        }
        teardown();
        self.slots.push_slot(slot_ix, slot, keep);
        Ok(Handle {
            slot: slot_ix,
            gen,
            key,
        })
    }

    /// Moves `seq` of a live region from `s` to `f(s)` atomically; `f`
    /// returns `Ok(None)` for "nothing to do".
    fn update_seq(&self, h: &Handle, f: impl Fn(u64, &Snap) -> Result<Option<u64>>) -> Result<()> {
        let slot = self.slot(h.slot).ok_or(Error::INVAL)?;
        loop {
            let snap = self.live(h)?;
            let Some(next) = f(snap.seq, &snap)? else {
                return Ok(());
            };
            if slot
                .seq
                .compare_exchange(snap.seq, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Ok(());
            }
        }
    }

    /// Enables a region created with [`RegFlags::DISABLED`] (`fi_mr_enable`;
    /// enabling an enabled region does nothing). Errors: `INVAL` for a dead
    /// handle; `OPBADSTATE` for a [`RegFlags::NEEDS_EP`] region with no
    /// endpoint bound.
    pub fn enable(&self, h: &Handle) -> Result<()> {
        self.update_seq(h, |s, snap| {
            if s & ENABLED != 0 {
                return Ok(None);
            }
            if snap.flags().contains(RegFlags::NEEDS_EP)
                && !bindings_of(s).contains(Bindings::ENDPOINT)
            {
                return Err(Error::OPBADSTATE);
            }
            Ok(Some(s | ENABLED))
        })
    }

    /// Records a binding (`fi_mr_bind`); the provider keeps the bound object
    /// itself. Errors: `INVAL` for a dead handle; `OPBADSTATE` once a region
    /// that was created disabled has been enabled.
    pub fn bind(&self, h: &Handle, b: Bindings) -> Result<()> {
        self.update_seq(h, |s, snap| {
            if snap.flags().contains(RegFlags::DISABLED) && s & ENABLED != 0 {
                return Err(Error::OPBADSTATE);
            }
            Ok(Some(s | (u64::from(b.bits()) << BIND_SHIFT)))
        })
    }

    /// A snapshot of a live region; `INVAL` if it is gone.
    pub fn region(&self, h: &Handle) -> Result<RegionInfo> {
        Ok(self.info(h.slot, &self.live(h)?))
    }

    fn info(&self, slot: u32, s: &Snap) -> RegionInfo {
        let flags = s.flags();
        RegionInfo {
            key: s.key,
            slot,
            access: meta_access(s.meta),
            flags,
            bindings: bindings_of(s.seq),
            enabled: s.seq & ENABLED != 0,
            consumed: s.seq & CONSUMED != 0,
            context: s.context,
            base_addr: if flags.contains(RegFlags::VIRT_ADDR) {
                s.base
            } else {
                0
            },
            len: s.len,
            iov_count: links_iovs(s.links),
            parent: links_parent(s.links),
            children: children_of(s.seq),
            iface: meta_iface(s.meta),
            page_size: meta_page_size(s.meta),
            has_auth: s.meta & META_AUTH != 0,
        }
    }

    /// The region's iovs as `(address, length)`: as registered without
    /// VIRT_ADDR; sorted and merged with it.
    pub fn iovs(&self, h: &Handle) -> Result<Vec<(u64, u64)>> {
        let (snap, r) = self.ranges(h.slot).ok_or(Error::INVAL)?;
        if gen_of(snap.seq) != h.gen {
            return Err(Error::INVAL);
        }
        Ok(r.into_iter().map(|(s, e)| (s, e - s)).collect())
    }

    /// Whether the live region in `slot` at generation `gen` covers the
    /// local buffer `[addr, end)`
    /// with one of its ranges: `Some(its access)` if it does, `None` if not;
    /// `INVAL` once it is closed. One snapshot; a single-iov region is
    /// checked without allocating (the FI_MR_LOCAL data path).
    pub fn local_cover(&self, slot: u32, gen: u64, addr: u64, end: u64) -> Result<Option<Access>> {
        let s = self.slot(slot).ok_or(Error::INVAL)?;
        loop {
            let seq = s.seq.load(Ordering::Acquire);
            if seq & READY == 0 || gen_of(seq) != gen {
                return Err(Error::INVAL);
            }
            let snap = Snap::load(s, seq);
            let inside = |a: u64, e: u64| addr >= a && end <= e;
            let covered = if links_iovs(snap.links) <= 1 {
                inside(snap.base, snap.base.saturating_add(snap.len))
            } else {
                self.read_ranges(&snap)
                    .is_some_and(|r| r.iter().any(|&(a, e)| inside(a, e)))
            };
            fence(Ordering::Acquire);
            if s.seq.load(Ordering::Relaxed) == seq {
                return Ok(covered.then(|| meta_access(snap.meta)));
            }
        }
    }

    /// Every live region (for the log at domain close). O(slots ever used).
    pub fn live_regions(&self) -> Vec<RegionInfo> {
        (0..self.slots.high_water() as u32)
            .filter_map(|i| self.snapshot(i).map(|s| self.info(i, &s)))
            .collect()
    }

    /// Reserves room for `n` more regions (`sub_mr_cnt`, or a domain's
    /// expected `mr_cnt`); a hint, capped.
    pub fn reserve(&self, n: usize) {
        let n = n.min(RESERVE_MAX);
        self.slots.reserve(n);
        if let Some(ix) = &self.index {
            ix.reserve(n);
        }
    }

    /// Live regions, closes and the live regions' bytes, from the slots:
    /// O(slots ever used). Exact when nothing registers or closes
    /// meanwhile; otherwise each slot is counted as the scan found it.
    fn tally(&self) -> (usize, u64, u64) {
        let (mut live, mut gens, mut bytes) = (0usize, 0u64, 0u64);
        for i in 0..self.slots.high_water() as u32 {
            let Some(s) = self.slot(i) else { continue };
            gens += gen_of(s.seq.load(Ordering::Acquire));
            if let Some(snap) = self.snapshot(i) {
                live += 1;
                bytes += snap.len;
            }
        }
        let closes = gens.saturating_sub(self.counters.skipped.load(Ordering::Relaxed));
        (live, closes, bytes)
    }

    /// The counters; O(slots ever used).
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let (live, closes, live_bytes) = self.tally();
        Stats {
            live_regions: live,
            live_bytes,
            registrations: closes + live as u64,
            closes,
            failures: c.failures.load(Ordering::Relaxed),
            denied: c.denied.load(Ordering::Relaxed),
            mapped_keys: self.mapped_total.load(Ordering::Relaxed),
            engine_bytes: self.slots.allocated_bytes()
                + self.pool.allocated_bytes()
                + self.index.as_ref().map_or(0, |i| i.allocated_bytes()),
        }
    }

    pub(crate) fn count_denied(&self) {
        self.counters.denied.fetch_add(1, Ordering::Relaxed);
    }

    /// Live regions; O(slots ever used).
    pub fn len(&self) -> usize {
        self.tally().0
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
