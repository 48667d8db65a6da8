//! The application's memory regions: each registration it makes is handed
//! back as a shim-owned `struct fid_mr` ([`ShimMr`]) whose `mem_desc` and
//! `key` are copies of the provider's (upstream's inline fi_mr_desc and
//! fi_mr_key read them directly) and whose fid ops are the shim's. After
//! close the wrapper stays in quarantine, so a second close or a bind,
//! refresh, enable or fi_control on it is caught, refused with -FI_EINVAL
//! in every mode, and never reaches the provider.
//!
//! Registrations that libfabric makes itself (on its own domains, or on
//! the application's from inside libfabric) go straight to the provider
//! and are only counted.

use super::eq::IN_FLIGHT;
use super::objects::{domain_hook, owner_of, DomainHook, TableCopy};
use super::report::{Kind, MrInfo};
use super::{desc, guard, is_internal, sampled, state, ticks};
use crate::abi::domain::{fi_mr_attr, fi_ops_mr, fid_domain, fid_mr, FI_MR_DMABUF};
use crate::abi::errno::{FI_EINVAL, FI_ENOSYS};
use crate::abi::fabric::{fi_ops, fid, FI_CLASS_DOMAIN, FI_ENABLE, FI_REFRESH};
use libc::{c_char, c_int, c_void, iovec, size_t};
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Closed wrappers kept before the oldest is freed: a double close or a use
/// after close is caught while the wrapper is among the last QUARANTINE
/// closed. 8192 wrappers (about 1 MiB) keep the memory that new wrappers
/// reuse warm in cache.
pub const QUARANTINE: usize = 1 << 13;

/// The wrapper this close will evict from quarantine, as of the last
/// eviction: read without the lock and only prefetched (a stale address is
/// harmless), so that its line is in cache by the time the eviction reads
/// it, after the provider's close. Evicted wrappers are 8192 closes old.
static NEXT_EVICT: AtomicUsize = AtomicUsize::new(0);

/// Starts loading the line at `addr` (none in the first page: nothing to
/// evict yet). A prefetch never faults.
#[inline]
fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    if addr > 4096 {
        // SAFETY: a prefetch hint has no architectural effect.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                addr as *const i8,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// What the application holds for a registration.
#[repr(C)]
pub(crate) struct ShimMr {
    /// The application's view: the provider's desc and key, the shim's ops.
    pub mr: fid_mr,
    pub real: *mut fid_mr,
    pub domain: *const DomainHook,
    pub addr: usize,
    pub len: usize,
    pub access: u64,
    pub reg_site: usize,
    pub closed: AtomicBool,
    /// Index in its domain's live list (changed under the state lock).
    pub slot: AtomicUsize,
    /// Its domain was closed under it: the provider's object is gone.
    pub orphaned: AtomicBool,
    /// Its slot in the desc map ([`super::desc`]) plus one; 0: none.
    pub dslot: AtomicUsize,
}

/// Wrappers are carved from slabs of this many, each at a 128-byte stride
/// (two cache lines of its own).
const SLAB: usize = 256;
const STRIDE: usize = 128;
const _: () = assert!(size_of::<ShimMr>() <= STRIDE);

/// Adds a slab of unused wrappers to `spare`, lowest address on top.
///
/// Until the quarantine is full, every registration needs a wrapper never
/// used before. Allocated one by one, each one's first touch was a page
/// fault shared by 32 wrappers and a malloc: about 120 ns more per
/// registration over tcp;ofi_rxm for the first 8,192 (measured). A slab
/// is mapped with its pages populated, one system call per 256. The
/// wrappers are never freed (a use after close must find one), so slabs
/// are never unmapped. Should the mapping fail, `spare` stays empty and
/// the caller allocates the wrapper alone.
fn refill(spare: &mut Vec<usize>) {
    // SAFETY: an anonymous private mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SLAB * STRIDE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return;
    }
    spare.extend((0..SLAB).rev().map(|i| p as usize + i * STRIDE));
}

extern "C" {
    fn oxshim_tr_mr_reg_int();
    fn oxshim_tr_mr_regv_int();
    fn oxshim_tr_mr_regattr_int();
    fn oxshim_tr_mr_reg(
        fid: *mut fid,
        buf: *const c_void,
        len: size_t,
        access: u64,
        offset: u64,
        requested_key: u64,
        flags: u64,
        mr: *mut *mut fid_mr,
        context: *mut c_void,
    ) -> c_int;
    fn oxshim_tr_mr_regv(
        fid: *mut fid,
        iov: *const iovec,
        count: size_t,
        access: u64,
        offset: u64,
        requested_key: u64,
        flags: u64,
        mr: *mut *mut fid_mr,
        context: *mut c_void,
    ) -> c_int;
    fn oxshim_tr_mr_regattr(
        fid: *mut fid,
        attr: *const fi_mr_attr,
        flags: u64,
        mr: *mut *mut fid_mr,
    ) -> c_int;
    fn oxshim_tr_mr_close(fid: *mut fid) -> c_int;
    fn oxshim_tr_mr_bind(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int;
    fn oxshim_tr_mr_control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int;
}

struct OpsTable(fi_ops);
// SAFETY: the table is never written; it holds only function pointers.
unsafe impl Sync for OpsTable {}

static MR_OPS: OpsTable = OpsTable(fi_ops {
    size: size_of::<fi_ops>(),
    close: Some(oxshim_tr_mr_close),
    bind: Some(oxshim_tr_mr_bind),
    control: Some(oxshim_tr_mr_control),
    ops_open: Some(mr_ops_open),
    tostr: Some(mr_tostr),
    ops_set: Some(mr_ops_set),
});

fn mr_ops_ptr() -> *mut fi_ops {
    &MR_OPS.0 as *const fi_ops as *mut fi_ops
}

/// Whether `fid` is one of the shim's wrappers.
///
/// # Safety
/// `fid` is NULL or points to a readable fid.
pub(crate) unsafe fn is_shim_mr(fid: *const fid) -> bool {
    // SAFETY: per the contract.
    !fid.is_null() && unsafe { (*fid).ops } == mr_ops_ptr()
}

/// Points a domain's copied `mr` table at the shim's registration entries.
/// A domain libfabric opened itself (`internal`: rxm's tcp domain), all of
/// whose calls are libfabric's own, gets entries that only count the
/// registration and forward it (entry.c, `oxshim_tr_mr_*_int`; the copy
/// carries the provider's table and the count, see `objects::hook_domain`).
pub(crate) fn patch_mr_ops(t: &mut TableCopy, internal: bool) {
    let (reg, regv, regattr) = if internal {
        (
            oxshim_tr_mr_reg_int as *const (),
            oxshim_tr_mr_regv_int as *const (),
            oxshim_tr_mr_regattr_int as *const (),
        )
    } else {
        (
            oxshim_tr_mr_reg as *const (),
            oxshim_tr_mr_regv as *const (),
            oxshim_tr_mr_regattr as *const (),
        )
    };
    t.set(offset_of!(fi_ops_mr, reg), reg as usize);
    t.set(offset_of!(fi_ops_mr, regv), regv as usize);
    t.set(offset_of!(fi_ops_mr, regattr), regattr as usize);
}

pub(crate) fn info_of(p: usize) -> MrInfo {
    // SAFETY: live and quarantined wrappers are valid.
    let m = unsafe { &*(p as *const ShimMr) };
    MrInfo {
        addr: m.addr,
        len: m.len,
        access: m.access,
        key: m.mr.key,
        reg_site: m.reg_site,
    }
}

/// A short list of MRs for a log line (the first 8).
pub(crate) fn describe_list(live: &[usize]) -> String {
    let mut s: Vec<String> = live
        .iter()
        .take(8)
        .map(|&p| info_of(p).describe())
        .collect();
    if live.len() > 8 {
        s.push(format!("and {} more", live.len() - 8));
    }
    s.join("; ")
}

/// Marks MRs whose domain the provider closed: their provider objects are
/// gone, so a later close is recorded but not forwarded.
pub(crate) fn orphan(live: &[usize]) {
    for &p in live {
        // SAFETY: live wrappers are valid.
        unsafe { &*(p as *const ShimMr) }
            .orphaned
            .store(true, Ordering::Relaxed);
    }
}

/// The hook of the domain a registration entry was called on (None: not a
/// domain the shim hooked).
///
/// # Safety
/// `fid` is NULL or points to a readable `struct fid`.
#[inline(always)]
unsafe fn app_domain<'a>(fid: *mut fid) -> Option<&'a DomainHook> {
    // The call came through the domain's `mr` table. When that is the
    // shim's copy for an application's domain (its reg slot is ours), the
    // copy's owner word names the hook: two loads instead of the lookup,
    // which stays for anything else (a domain passed through another
    // domain's table, tables already restored).
    // SAFETY: per the contract; a table whose reg slot is the shim's entry
    // is a TableCopy laid out for fi_ops_mr, and hooks are never freed.
    unsafe {
        if !fid.is_null() && (*fid).fclass == FI_CLASS_DOMAIN as usize {
            let t = (*(fid as *const fid_domain)).mr;
            if !t.is_null()
                && (*t).reg.map(|f| f as usize) == Some(oxshim_tr_mr_reg as *const () as usize)
            {
                return Some(
                    &*(owner_of(t as *const c_void, size_of::<fi_ops_mr>()) as *const DomainHook),
                );
            }
        }
        domain_hook(fid as *const fid_domain)
    }
}

/// A registration on an async domain between the provider's call and the
/// wrapper's entry in the translation map ([`super::eq::IN_FLIGHT`]).
struct Pending {
    async_reg: bool,
}

impl Pending {
    #[inline(always)]
    fn new(h: &DomainHook) -> Pending {
        let async_reg = h.async_reg.load(Ordering::Acquire);
        if async_reg {
            IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
        }
        Pending { async_reg }
    }

    /// The application's `*mr` holds the wrapper: events may name it.
    #[inline(always)]
    fn done(&self, real: *mut fid_mr, wrapper: *mut fid_mr) {
        if self.async_reg {
            state().async_mrs.insert(real as usize, wrapper as usize);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.async_reg {
            IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Wraps a registration the provider accepted and records it.
///
/// # Safety
/// `real` is the provider's new MR on `h`'s domain.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn wrap(
    h: &DomainHook,
    real: *mut fid_mr,
    addr: usize,
    len: usize,
    exact: bool,
    access: u64,
    ra: usize,
    ns: Option<u64>,
) -> *mut fid_mr {
    // SAFETY: per the contract.
    let (fclass, context, mem_desc, key) = unsafe {
        (
            (*real).fid.fclass,
            (*real).fid.context,
            (*real).mem_desc,
            (*real).key,
        )
    };
    let value = ShimMr {
        mr: fid_mr {
            fid: fid {
                fclass,
                context,
                ops: mr_ops_ptr(),
            },
            mem_desc,
            key,
        },
        real,
        domain: h,
        addr,
        len,
        access,
        reg_site: ra,
        closed: AtomicBool::new(false),
        slot: AtomicUsize::new(0),
        orphaned: AtomicBool::new(false),
        dslot: AtomicUsize::new(0),
    };
    if !super::unmap::ANY_MR.load(Ordering::Relaxed) {
        super::unmap::ANY_MR.store(true, Ordering::Relaxed);
    }
    let mut st = state();
    if st.spare.is_empty() {
        refill(&mut st.spare);
    }
    let w = match st.spare.pop() {
        // SAFETY: a spare is a slab's unused wrapper or one evicted from
        // quarantine, which nothing references any more.
        Some(p) => unsafe {
            let p = p as *mut ShimMr;
            p.write(value);
            p
        },
        None => Box::into_raw(Box::new(value)),
    };
    let slot = st.report.domains[h.stats].registered(w as usize, len as u64, ns);
    let dslot = desc::insert(
        mem_desc as usize,
        addr,
        len,
        exact,
        access,
        h as *const DomainHook as usize,
        w as usize,
        forget_slot,
    );
    // SAFETY: w is not yet visible to the application.
    unsafe {
        (*w).slot.store(slot, Ordering::Relaxed);
        (*w).dslot
            .store(dslot.map_or(0, |i| i + 1), Ordering::Relaxed);
    }
    w as *mut fid_mr
}

fn refused(h: &DomainHook) {
    state().report.domains[h.stats].refusals += 1;
}

/// domain->mr->reg.
///
/// # Safety
/// As fi_mr_reg on a domain the shim hooked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_mr_reg(
    ra: *mut c_void,
    fid: *mut fid,
    buf: *const c_void,
    len: size_t,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { app_domain(fid) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static.
        let Some(reg) = (unsafe { (*h.orig_mr).reg }) else {
            return -FI_ENOSYS;
        };
        let call = || {
            // SAFETY: forwarded as received.
            unsafe {
                reg(
                    fid,
                    buf,
                    len,
                    access,
                    offset,
                    requested_key,
                    flags,
                    mr,
                    context,
                )
            }
        };
        // SAFETY: `mr` is the caller's output pointer, written by `call`.
        unsafe { register(h, ra, mr, access, call, || (buf as usize, len, true)) }
    })
}

/// The body shared by the reg and regv hooks: libfabric's own calls pass
/// straight through (counted apart); the application's are timed, and the
/// MR the provider registered is handed back wrapped. `span` gives the
/// registered range once the provider accepted it.
///
/// # Safety
/// `mr` is the caller's output pointer, which `call` writes on success.
unsafe fn register(
    h: &DomainHook,
    ra: *mut c_void,
    mr: *mut *mut fid_mr,
    access: u64,
    call: impl Fn() -> c_int,
    span: impl FnOnce() -> (usize, usize, bool),
) -> c_int {
    if h.internal || is_internal(ra as usize) {
        h.internal_regs.bump();
        return call();
    }
    let pending = Pending::new(h);
    let t0 = sampled(&h.reg_calls).then(ticks);
    let rc = call();
    let ns = t0.map(|t| ticks().wrapping_sub(t));
    if rc != 0 || mr.is_null() {
        refused(h);
        return rc;
    }
    let (addr, len, exact) = span();
    // SAFETY: the provider wrote its MR to *mr.
    unsafe {
        let real = *mr;
        *mr = wrap(h, real, addr, len, exact, access, ra as usize, ns);
        pending.done(real, *mr);
    }
    0
}

/// domain->mr->regv.
///
/// # Safety
/// As fi_mr_regv on a domain the shim hooked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_mr_regv(
    ra: *mut c_void,
    fid: *mut fid,
    iov: *const iovec,
    count: size_t,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { app_domain(fid) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static.
        let Some(regv) = (unsafe { (*h.orig_mr).regv }) else {
            return -FI_ENOSYS;
        };
        let call = || {
            // SAFETY: forwarded as received.
            unsafe {
                regv(
                    fid,
                    iov,
                    count,
                    access,
                    offset,
                    requested_key,
                    flags,
                    mr,
                    context,
                )
            }
        };
        // SAFETY: the provider accepted `count` iovs, so they are readable;
        // `mr` is the caller's output pointer, written by `call`.
        unsafe { register(h, ra, mr, access, call, || iov_span(iov, count)) }
    })
}

/// First address and total length of an iov list, and whether the iovs
/// lie end to end (only then is the span the registered memory).
///
/// # Safety
/// `iov` holds `count` readable entries (or count is 0).
unsafe fn iov_span(iov: *const iovec, count: usize) -> (usize, usize, bool) {
    if iov.is_null() || count == 0 {
        return (0, 0, true);
    }
    // SAFETY: per the contract.
    let v = unsafe { std::slice::from_raw_parts(iov, count) };
    let exact = v
        .windows(2)
        .all(|w| (w[0].iov_base as usize).wrapping_add(w[0].iov_len) == w[1].iov_base as usize);
    (
        v[0].iov_base as usize,
        v.iter().map(|e| e.iov_len).sum(),
        exact,
    )
}

/// domain->mr->regattr; a wrapper given as `base_mr` is unwrapped.
///
/// # Safety
/// As fi_mr_regattr on a domain the shim hooked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_mr_regattr(
    ra: *mut c_void,
    fid: *mut fid,
    attr: *const fi_mr_attr,
    flags: u64,
    mr: *mut *mut fid_mr,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { app_domain(fid) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static.
        let Some(regattr) = (unsafe { (*h.orig_mr).regattr }) else {
            return -FI_ENOSYS;
        };
        if h.internal || is_internal(ra as usize) {
            h.internal_regs.bump();
            // SAFETY: forwarded as received.
            return unsafe { regattr(fid, attr, flags, mr) };
        }
        let mut local;
        let mut pass = attr;
        // base_mr exists from API 2.0 on.
        if !attr.is_null() && h.api_version >= (2 << 16) {
            // SAFETY: an API >= 2.0 caller's fi_mr_attr has base_mr.
            let base = unsafe { (*attr).base_mr };
            // SAFETY: base_mr is NULL or an MR the application holds.
            if unsafe { is_shim_mr(base as *const fid) } {
                // SAFETY: as above: one of the shim's wrappers.
                let b = unsafe { &*(base as *const ShimMr) };
                if b.closed.load(Ordering::Relaxed) {
                    closed_use(b, ra as usize, "fi_mr_regattr(base_mr)");
                    return -FI_EINVAL;
                }
                // SAFETY: the caller's attr is a whole API >= 2.0 fi_mr_attr.
                local = unsafe { std::ptr::read(attr) };
                local.base_mr = b.real;
                pass = &local;
            }
        }
        let pending = Pending::new(h);
        let t0 = sampled(&h.reg_calls).then(ticks);
        // SAFETY: forwarded, with base_mr unwrapped.
        let rc = unsafe { regattr(fid, pass, flags, mr) };
        let ns = t0.map(|t| ticks().wrapping_sub(t));
        if rc != 0 || mr.is_null() {
            refused(h);
            return rc;
        }
        let (addr, len, exact, access) = if attr.is_null() {
            (0, 0, false, 0)
        } else if flags & FI_MR_DMABUF != 0 {
            // SAFETY: the provider accepted attr.
            (0, 0, false, unsafe { (*attr).access })
        } else {
            // SAFETY: the provider accepted attr and its iovs.
            unsafe {
                let (a, l, e) = iov_span((*attr).__anon_mr_iov.mr_iov, (*attr).iov_count);
                (a, l, e, (*attr).access)
            }
        };
        // SAFETY: the provider wrote its MR to *mr.
        unsafe {
            let real = *mr;
            *mr = wrap(h, real, addr, len, exact, access, ra as usize, ns);
            pending.done(real, *mr);
        }
        0
    })
}

fn closed_use(m: &ShimMr, at: usize, call: &str) {
    // SAFETY: wrappers point at hooks, which are never freed.
    let dom = unsafe { &*m.domain }.stats;
    let info = MrInfo {
        addr: m.addr,
        len: m.len,
        access: m.access,
        key: m.mr.key,
        reg_site: m.reg_site,
    };
    let kind = if call == "fi_close" {
        Kind::DoubleClose
    } else {
        Kind::ClosedMrUse
    };
    state()
        .report
        .finding(kind, at, dom, Some(info), format!("{call} on a closed MR"));
}

/// The wrapper behind an MR fid the shim handed out; None when `fid` is
/// NULL or another object (an entry of MR_OPS called with a foreign fid).
///
/// # Safety
/// `fid` is NULL or points to a readable `struct fid`.
unsafe fn wrapper<'a>(fid: *mut fid) -> Option<&'a ShimMr> {
    // SAFETY: per the contract; a fid with MR_OPS is a wrapper, live or
    // in quarantine.
    unsafe { is_shim_mr(fid).then(|| &*(fid as *const ShimMr)) }
}

/// A closed wrapper whose desc slot [`desc::insert`] gave to a new
/// registration with the same desc.
fn forget_slot(w: usize) {
    if w != 0 {
        // SAFETY: wrappers are never freed.
        unsafe { &*(w as *const ShimMr) }
            .dslot
            .store(0, Ordering::Relaxed);
    }
}

/// Copies the provider's desc and key again (bind and enable may set
/// them); a new desc moves the registration in the desc map.
fn resync(m: &ShimMr) {
    let w = m as *const ShimMr as *mut ShimMr;
    // SAFETY: the provider's MR is open; the application reads these
    // fields only between its own calls.
    let (old, new) = unsafe {
        let old = (*w).mr.mem_desc;
        (*w).mr.mem_desc = (*m.real).mem_desc;
        (*w).mr.key = (*m.real).key;
        (old, (*w).mr.mem_desc)
    };
    if old != new {
        let _st = state();
        let s = m.dslot.swap(0, Ordering::Relaxed);
        let exact = s == 0 || desc::exact(s - 1);
        if s != 0 {
            desc::remove(s - 1);
        }
        let slot = desc::insert(
            new as usize,
            m.addr,
            m.len,
            exact,
            m.access,
            m.domain as usize,
            w as usize,
            forget_slot,
        );
        m.dslot.store(slot.map_or(0, |i| i + 1), Ordering::Relaxed);
    }
}

/// mr->fid.ops->close.
///
/// # Safety
/// `fid` is one of the shim's wrappers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_mr_close(ra: *mut c_void, fid: *mut fid) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(m) = (unsafe { wrapper(fid) }) else {
            return -FI_EINVAL;
        };
        if m.closed.swap(true, Ordering::AcqRel) {
            closed_use(m, ra as usize, "fi_close");
            return -FI_EINVAL;
        }
        // Both lines of the wrapper: the eviction reads its dslot, and the
        // next registration rewrites it whole.
        let next = NEXT_EVICT.load(Ordering::Relaxed);
        prefetch(next);
        prefetch(next + offset_of!(ShimMr, dslot));
        // SAFETY: wrappers point at hooks, which are never freed.
        let t0 = sampled(&unsafe { &*m.domain }.close_calls).then(ticks);
        if !m.orphaned.load(Ordering::Relaxed) {
            // SAFETY: the provider's MR is open and its table static.
            let rc = unsafe {
                match (*(*m.real).fid.ops).close {
                    Some(close) => close(&mut (*m.real).fid),
                    None => -FI_ENOSYS,
                }
            };
            if rc != 0 {
                m.closed.store(false, Ordering::Release);
                return rc;
            }
        }
        let ns = t0.map(|t| ticks().wrapping_sub(t));
        // SAFETY: wrappers point at hooks, which are never freed.
        let dom = unsafe { &*m.domain }.stats;
        let mut st = state();
        if !st.async_mrs.is_empty() {
            st.async_mrs.remove(&(m.real as usize));
        }
        let moved =
            st.report.domains[dom].closed_mr(m.slot.load(Ordering::Relaxed), m.len as u64, ns);
        if let Some(p) = moved {
            // SAFETY: live wrappers are valid; slots change under the lock.
            unsafe { &*(p as *const ShimMr) }
                .slot
                .store(m.slot.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        let s = m.dslot.load(Ordering::Relaxed);
        if s != 0 {
            desc::set_closed(s - 1);
        }
        st.quarantine.push_back(fid as usize);
        if st.quarantine.len() > QUARANTINE {
            if let Some(old) = st.quarantine.pop_front() {
                // SAFETY: quarantined wrappers are valid; their dslot
                // changes only under the state lock, which is held.
                let d = &unsafe { &*(old as *const ShimMr) }.dslot;
                let s = d.load(Ordering::Relaxed);
                d.store(0, Ordering::Relaxed);
                if s != 0 {
                    desc::remove(s - 1);
                }
                st.spare.push(old);
            }
            NEXT_EVICT.store(
                st.quarantine.front().copied().unwrap_or(0),
                Ordering::Relaxed,
            );
        }
        0
    })
}

/// mr->fid.ops->bind.
///
/// # Safety
/// `fid` is one of the shim's wrappers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_mr_bind(
    ra: *mut c_void,
    fid: *mut fid,
    bfid: *mut fid,
    flags: u64,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(m) = (unsafe { wrapper(fid) }) else {
            return -FI_EINVAL;
        };
        if m.closed.load(Ordering::Acquire) {
            closed_use(m, ra as usize, "fi_mr_bind");
            return -FI_EINVAL;
        }
        // SAFETY: a wrapper given as the bound object is unwrapped.
        let bfid = unsafe {
            match wrapper(bfid) {
                Some(b) => &mut (*b.real).fid,
                None => bfid,
            }
        };
        // SAFETY: the provider's MR is open and its table static.
        let rc = unsafe {
            match (*(*m.real).fid.ops).bind {
                Some(bind) => bind(&mut (*m.real).fid, bfid, flags),
                None => -FI_ENOSYS,
            }
        };
        if rc == 0 {
            resync(m);
        }
        rc
    })
}

/// mr->fid.ops->control (fi_mr_enable, fi_mr_refresh, FI_GET_RAW_MR, ...).
///
/// # Safety
/// `fid` is one of the shim's wrappers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_mr_control(
    ra: *mut c_void,
    fid: *mut fid,
    command: c_int,
    arg: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(m) = (unsafe { wrapper(fid) }) else {
            return -FI_EINVAL;
        };
        if m.closed.load(Ordering::Acquire) {
            let call = match command {
                FI_ENABLE => "fi_mr_enable",
                FI_REFRESH => "fi_mr_refresh",
                _ => "fi_control",
            };
            closed_use(m, ra as usize, call);
            return -FI_EINVAL;
        }
        // SAFETY: the provider's MR is open and its table static.
        let rc = unsafe {
            match (*(*m.real).fid.ops).control {
                Some(control) => control(&mut (*m.real).fid, command, arg),
                None => -FI_ENOSYS,
            }
        };
        if rc == 0 {
            resync(m);
        }
        rc
    })
}

unsafe extern "C" fn mr_ops_open(
    fid: *mut fid,
    name: *const c_char,
    flags: u64,
    ops: *mut *mut c_void,
    context: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: only reached through MR_OPS.
        let Some(m) = (unsafe { wrapper(fid) }) else {
            return -FI_EINVAL;
        };
        if m.closed.load(Ordering::Acquire) {
            closed_use(m, 0, "fi_open_ops");
            return -FI_EINVAL;
        }
        // SAFETY: the provider's MR is open and its table static.
        unsafe {
            match (*(*m.real).fid.ops).ops_open {
                Some(f) => f(&mut (*m.real).fid, name, flags, ops, context),
                None => -FI_ENOSYS,
            }
        }
    })
}

unsafe extern "C" fn mr_tostr(fid: *const fid, buf: *mut c_char, len: size_t) -> c_int {
    guard(|| {
        // SAFETY: only reached through MR_OPS.
        let Some(m) = (unsafe { wrapper(fid as *mut fid) }) else {
            return -FI_EINVAL;
        };
        if m.closed.load(Ordering::Acquire) {
            return -FI_EINVAL;
        }
        // SAFETY: the provider's MR is open and its table static.
        unsafe {
            match (*(*m.real).fid.ops).tostr {
                Some(f) => f(&(*m.real).fid, buf, len),
                None => -FI_ENOSYS,
            }
        }
    })
}

unsafe extern "C" fn mr_ops_set(
    fid: *mut fid,
    name: *const c_char,
    flags: u64,
    ops: *mut c_void,
    context: *mut c_void,
) -> c_int {
    guard(|| {
        // SAFETY: only reached through MR_OPS.
        let Some(m) = (unsafe { wrapper(fid) }) else {
            return -FI_EINVAL;
        };
        if m.closed.load(Ordering::Acquire) {
            return -FI_EINVAL;
        }
        // SAFETY: the provider's MR is open; ops_set lies past `size` in
        // tables older than 1.12, so the size is checked first.
        unsafe {
            let t = (*m.real).fid.ops;
            if (*t).size < size_of::<fi_ops>() {
                return -FI_ENOSYS;
            }
            match (*t).ops_set {
                Some(f) => f(&mut (*m.real).fid, name, flags, ops, context),
                None => -FI_ENOSYS,
            }
        }
    })
}
