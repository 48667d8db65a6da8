//! The pinned registration mode of oxshm (`FI_OXSHM_PIN`): a registration
//! costs and behaves like a NIC's. Its pages are locked (mlock, counted
//! against RLIMIT_MEMLOCK even for privileged processes) and their page
//! frames recorded from /proc/self/pagemap; with `check`, the target also
//! compares the frames before every remote access and refuses one through a
//! stale registration. Pinnings go through the domain's registration cache
//! (`crate::mr::cache`), watched by the process's memory monitor.

use super::monitor;
use crate::error::{Error, Result};
use crate::mr::cache::{Cache, IdMap, Limits, PinId, Pinner};
use crate::mr::chunks::Chunks;
use crate::mr::refs::RangeRefs;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// FI_OXSHM_PIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    Pin,
    Check,
}

/// The mode in force (read once).
pub fn mode() -> Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(|| match crate::param::get(Some(super::NAME), "pin") {
        Ok((_, crate::param::Value::String(s))) => match s.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "no" | "off" => Mode::Off,
            "1" | "yes" | "on" => Mode::Pin,
            "check" => Mode::Check,
            other => {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "FI_OXSHM_PIN=\"{other}\" is not 0, 1 or check; registrations are not pinned"
                );
                Mode::Off
            }
        },
        _ => Mode::Off,
    })
}

pub fn page_size() -> u64 {
    super::mem::page_size() as u64
}

/// `[addr, addr + len)` widened to whole pages.
pub fn page_range(addr: u64, len: u64) -> (u64, u64) {
    let p = page_size();
    let start = addr & !(p - 1);
    let end = addr.saturating_add(len).saturating_add(p - 1) & !(p - 1);
    (start, end - start)
}

/// Bytes pinned by this process's registrations (all domains).
static PINNED: AtomicU64 = AtomicU64::new(0);

fn memlock_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return u64::MAX;
    }
    r.rlim_cur
}

/// The page frames of `[start, start + len)` (page-aligned) as
/// /proc/self/pagemap shows them, 0 for a page not present; None where it
/// hides them (no CAP_SYS_ADMIN), said once in the log.
pub fn frames(start: u64, len: u64) -> Option<Vec<u64>> {
    static FD: OnceLock<Option<std::fs::File>> = OnceLock::new();
    static HIDDEN: AtomicBool = AtomicBool::new(false);
    let f = FD
        .get_or_init(|| std::fs::File::open("/proc/self/pagemap").ok())
        .as_ref()?;
    let p = page_size();
    let n = (len / p) as usize;
    let mut raw = vec![0u8; n * 8];
    use std::os::unix::fs::FileExt;
    f.read_exact_at(&mut raw, start / p * 8).ok()?;
    let mut hidden = false;
    // 0: no page present.
    let pfns: Vec<u64> = raw
        .chunks_exact(8)
        .map(|c| {
            let e = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
            let pfn = e & ((1 << 55) - 1);
            if e & (1 << 63) == 0 {
                0
            } else {
                // A present page without its frame: pagemap hides frames.
                hidden |= pfn == 0;
                pfn
            }
        })
        .collect();
    if hidden {
        if !HIDDEN.swap(true, Ordering::Relaxed) {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "/proc/self/pagemap hides page frames from this process (needs CAP_SYS_ADMIN): frames are not recorded or checked"
            );
        }
        return None;
    }
    Some(pfns)
}

/// What the process's pinnings hold, counted across domains: pages locked,
/// and pages the userfaultfd monitor watches. The kernel counts neither
/// (one munlock or UFFDIO_UNREGISTER undoes every earlier lock or watch of
/// those pages), so a pinning locks and watches its whole range, and its
/// release undoes only the parts no other pinning holds. Held across those
/// system calls, so that a lock and an unlock of the same pages never
/// interleave.
struct Held {
    locked: RangeRefs,
    watched: RangeRefs,
}

static HELD: Mutex<Held> = Mutex::new(Held {
    locked: RangeRefs::new(),
    watched: RangeRefs::new(),
});

fn held() -> std::sync::MutexGuard<'static, Held> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one pinning keeps.
pub struct Pinning {
    /// Page frames at pin time (None: pagemap hides them).
    pub frames: Option<Vec<u64>>,
    /// Whether the monitor watches the range (else it is used once).
    watched: bool,
}

/// mlock-based pinning, watched by the process's monitor when caching.
pub struct Backend {
    caching: bool,
}

impl Pinner for Backend {
    type Pin = Pinning;

    fn sync(&self) {
        if self.caching {
            monitor::sync();
        }
    }

    fn pin(&self, start: u64, len: u64, _write: bool) -> Result<Pinning> {
        let limit = memlock_limit();
        let before = PINNED.fetch_add(len, Ordering::Relaxed);
        if before.saturating_add(len) > limit {
            PINNED.fetch_sub(len, Ordering::Relaxed);
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "pinning 0x{start:x}+{len} would exceed RLIMIT_MEMLOCK ({limit} bytes, {before} pinned)"
            );
            return Err(Error::NOMEM);
        }
        // Subscribed before pinning: a change after this point is reported.
        // An imported monitor is called without HELD (it may call back);
        // it gets each pinning's subscription and counts them itself.
        let kind = monitor::kind();
        let uffd = kind == monitor::Kind::Userfaultfd;
        let other = self.caching && !uffd && monitor::subscribe(start, len).is_ok();
        let mut held = held();
        let by_uffd = self.caching && uffd && monitor::subscribe(start, len).is_ok();
        // The system call itself: sanitizers replace mlock(3) with a no-op.
        // SAFETY: mlock only changes the lock state of the range.
        if unsafe { libc::syscall(libc::SYS_mlock, start, len) } != 0 {
            let e = std::io::Error::last_os_error();
            PINNED.fetch_sub(len, Ordering::Relaxed);
            // The watch goes again where no pinning holds it: one left
            // behind would make every unmap of that memory wait for the
            // monitor's thread, whoever owns the memory now.
            if by_uffd {
                for (s, l) in held.watched.unheld(start, len) {
                    monitor::unsubscribe(s, l);
                }
            }
            drop(held);
            if other && kind == monitor::Kind::Imported {
                monitor::unsubscribe(start, len);
            }
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "cannot pin 0x{start:x}+{len}: mlock: {e}"
            );
            return Err(match e.raw_os_error() {
                Some(libc::ENOMEM) => Error::FAULT,
                Some(libc::EPERM) => Error::PERM,
                _ => Error::AGAIN,
            });
        }
        held.locked.acquire(start, len);
        if by_uffd {
            held.watched.acquire(start, len);
        }
        drop(held);
        Ok(Pinning {
            frames: frames(start, len),
            watched: other || by_uffd,
        })
    }

    /// Unlocks and unwatches only what no pinning of the process holds any
    /// more (HELD counts them across domains); the cache's `release`,
    /// which knows only its own pinnings, is not enough.
    fn unpin(&self, start: u64, len: u64, pin: Pinning, _release: &[(u64, u64)]) {
        let kind = monitor::kind();
        if pin.watched && kind == monitor::Kind::Imported {
            monitor::unsubscribe(start, len);
        }
        let mut held = held();
        for (s, l) in held.locked.release(start, len) {
            // SAFETY: munlock only changes the lock state of the range; one
            // already unmapped fails harmlessly.
            unsafe { libc::syscall(libc::SYS_munlock, s, l) };
        }
        if pin.watched && kind == monitor::Kind::Userfaultfd {
            for (s, l) in held.watched.release(start, len) {
                monitor::unsubscribe(s, l);
            }
        }
        drop(held);
        PINNED.fetch_sub(len, Ordering::Relaxed);
    }

    fn cacheable(&self, pin: &Pinning) -> bool {
        pin.watched
    }

    fn still_valid(&self, start: u64, len: u64, _pin: &Pinning) -> bool {
        monitor::valid(start, len)
    }
}

impl monitor::Invalidate for Cache<Backend> {
    fn invalidate(&self, start: u64, len: u64) {
        log_invalidated(start, len, Cache::invalidate(self, start, len));
    }

    fn try_invalidate(&self, start: u64, len: u64) -> bool {
        match Cache::try_invalidate(self, start, len) {
            Some(n) => {
                log_invalidated(start, len, n);
                true
            }
            None => false,
        }
    }
}

fn log_invalidated(start: u64, len: u64, n: usize) {
    if n > 0 {
        crate::ox_log!(
            Debug,
            Mr,
            super::NAME,
            "monitor: 0x{start:x}+{len} changed, {n} pinning(s) invalidated"
        );
    }
}

/// A domain's pinned-mode state.
pub struct DomainPins {
    pub mode: Mode,
    pub cache: Arc<Cache<Backend>>,
    /// The pinning of each live MR of one iov, by engine slot (the
    /// registering thread owns the slot until it publishes the MR, the
    /// closing one after its close): its id, [`MANY`], or 0 for none.
    /// A word per slot instead of a locked map: a cache hit's registration
    /// and close take no lock here.
    by_slot: Chunks<AtomicU64, 8, 14>,
    /// The pinnings of live MRs of several iovs (or whose word could not be
    /// allocated), by engine slot.
    many: Mutex<IdMap<Ids>>,
}

/// A word of [`DomainPins::by_slot`]: the MR's pinnings are in `many`.
const MANY: u64 = u64::MAX;

/// The pinnings of one MR: one per iov (one iov allocates nothing).
#[derive(Clone)]
enum Ids {
    One(PinId),
    Many(Vec<PinId>),
}

impl Ids {
    fn as_slice(&self) -> &[PinId] {
        match self {
            Ids::One(id) => std::slice::from_ref(id),
            Ids::Many(v) => v,
        }
    }
}

fn limits() -> Limits {
    let mut l = Limits::default();
    if let Ok((_, crate::param::Value::SizeT(n))) = crate::param::get(None, "mr_cache_max_count") {
        l.max_count = n;
    }
    if let Ok((_, crate::param::Value::SizeT(n))) = crate::param::get(None, "mr_cache_max_size") {
        if n > 0 {
            l.max_size = n as u64;
        }
    }
    l
}

impl DomainPins {
    /// The state of a new domain; None when FI_OXSHM_PIN is off.
    pub fn open(max_regions: usize) -> Option<DomainPins> {
        let mode = mode();
        if mode == Mode::Off {
            return None;
        }
        let mut limits = limits();
        if limits.enabled() && (monitor::kind() == monitor::Kind::None || !monitor::domain_opened())
        {
            limits.max_count = 0;
        }
        let cache = Arc::new(Cache::new(
            Backend {
                caching: limits.enabled(),
            },
            limits,
        ));
        if limits.enabled() {
            let weak: std::sync::Weak<Cache<Backend>> = Arc::downgrade(&cache);
            monitor::add_cache(weak);
        }
        Some(DomainPins {
            mode,
            cache,
            by_slot: Chunks::new(max_regions),
            many: Mutex::new(IdMap::default()),
        })
    }

    /// Pins every iov of a new MR (in engine slot `slot`, which the caller
    /// owns); on failure nothing stays pinned.
    pub fn pin_mr(&self, slot: u32, iovs: &[(u64, u64)], write: bool) -> Result<()> {
        let ids = if let [(addr, len)] = iovs {
            let (s, l) = page_range(*addr, *len);
            Ids::One(self.cache.acquire(s, l, write)?.0)
        } else {
            let mut ids = Vec::with_capacity(iovs.len());
            for &(addr, len) in iovs {
                let (s, l) = page_range(addr, len);
                match self.cache.acquire(s, l, write) {
                    Ok((id, _)) => ids.push(id),
                    Err(e) => {
                        for id in ids {
                            self.cache.release(id);
                        }
                        return Err(e);
                    }
                }
            }
            Ids::Many(ids)
        };
        self.record(slot, ids);
        Ok(())
    }

    /// Releases the pinnings of a closed MR (in engine slot `slot`, which
    /// the caller owns).
    pub fn unpin_mr(&self, slot: u32) {
        let ids = self.take(slot);
        for &id in ids.iter().flat_map(|i| i.as_slice()) {
            self.cache.release(id);
        }
    }

    fn many(&self) -> std::sync::MutexGuard<'_, IdMap<Ids>> {
        self.many.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, slot: u32, ids: Ids) {
        match (ids, self.by_slot.get_or_alloc(slot as usize)) {
            (Ids::One(id), Some(w)) => w.store(id.raw(), Ordering::Release),
            (ids, w) => {
                self.many().insert(u64::from(slot), ids);
                if let Some(w) = w {
                    w.store(MANY, Ordering::Release);
                }
            }
        }
    }

    /// Takes the pinnings of slot `slot` out of the records (its owner
    /// alone writes its word: a load and a store, no locked exchange).
    fn take(&self, slot: u32) -> Option<Ids> {
        let Some(w) = self.by_slot.get(slot as usize) else {
            return self.many().remove(&u64::from(slot));
        };
        let v = w.load(Ordering::Acquire);
        if v != 0 {
            w.store(0, Ordering::Release);
        }
        match v {
            0 => None,
            MANY => self.many().remove(&u64::from(slot)),
            id => Some(Ids::One(PinId::from_raw(id))),
        }
    }

    /// The pinnings of slot `slot` now.
    fn peek(&self, slot: u32) -> Option<Ids> {
        match self
            .by_slot
            .get(slot as usize)
            .map(|w| w.load(Ordering::Acquire))
        {
            Some(0) => None,
            Some(MANY) | None => self.many().get(&u64::from(slot)).cloned(),
            Some(id) => Some(Ids::One(PinId::from_raw(id))),
        }
    }

    /// FI_OXSHM_PIN=check: whether the pages of `[addr, addr + len)` in the
    /// MR of engine slot `slot` still have the frames recorded when it was
    /// pinned. Pages whose frames cannot be read are not checked.
    pub fn frames_match(&self, slot: u32, addr: u64, len: u64) -> bool {
        let Some(ids) = self.peek(slot) else {
            return true;
        };
        let (s, l) = page_range(addr, len);
        let p = page_size();
        let Some(now) = frames(s, l) else {
            return true;
        };
        for &id in ids.as_slice() {
            let ok = self.cache.with_pin(id, |ps, pl, pin| {
                let Some(rec) = pin.frames.as_ref() else {
                    return true;
                };
                let (lo, hi) = (s.max(ps), (s + l).min(ps + pl));
                let mut a = lo;
                while a < hi {
                    let was = rec[((a - ps) / p) as usize];
                    let is = now[((a - s) / p) as usize];
                    if was != 0 && was != is {
                        return false;
                    }
                    a += p;
                }
                true
            });
            if ok == Some(false) {
                return false;
            }
        }
        true
    }

    /// FI_OXSHM_PIN=check: whether an access to `pieces` of the MR of engine
    /// slot `slot` would touch pages that no longer have the frames recorded
    /// at registration.
    pub fn stale(&self, slot: u32, pieces: &[(u64, u64)]) -> bool {
        self.checks_frames() && pieces.iter().any(|&(a, l)| !self.frames_match(slot, a, l))
    }

    /// FI_OXSHM_PIN=check: every remote access is checked against the
    /// frames recorded at registration.
    pub fn checks_frames(&self) -> bool {
        self.mode == Mode::Check
    }

    pub fn close(&self) {
        if self.cache.limits().enabled() {
            // Changes still queued count as invalidations, not as pinnings
            // flushed unused.
            monitor::sync();
        }
        self.cache.flush();
        if self.cache.limits().enabled() {
            monitor::domain_closed();
        }
    }
}
