//! The application's endpoints and the data-path checks.
//!
//! A hooked domain's `ops` copy ([`super::objects`]) sends fi_endpoint,
//! fi_scalable_ep and fi_endpoint2 here. Every endpoint the application
//! opens (libfabric's own, told apart by the caller's object, are left
//! alone) gets per-object copies of its `msg`, `tagged`, `rma` and `atomic`
//! tables whose calls that take a desc are entries of `entry.c`, and of its
//! `fid.ops` whose close is the shim's; a scalable endpoint's `ops` copy
//! hooks its transmit and receive contexts the same way. Each data-path
//! entry asks [`oxshim_rs_dp`] to check the call's local buffers against
//! their descs ([`super::desc`]) and forwards it to the provider's table
//! with the original arguments.
//!
//! The entries find their endpoint through a lock-free open-addressing
//! table keyed by the endpoint's address; hooks are reused only after a
//! quarantine of closed endpoints.

use super::desc::{self, Verdict};
use super::mr::info_of;
use super::objects::{domain_hook, DomainHook, TableCopy};
use super::report::Kind;
use super::{guard, is_internal, state, Mode, MODE};
use crate::abi::atomic::fi_ops_atomic;
use crate::abi::domain::{fi_ops_domain, fid_domain};
use crate::abi::endpoint::{fi_ops_ep, fi_ops_msg, fid_ep};
use crate::abi::errno::{FI_EINVAL, FI_ENOSYS};
use crate::abi::fabric::{
    fi_info, fi_ioc, fi_ops, fi_rx_attr, fi_tx_attr, fid, FI_CLASS_SEP, FI_READ, FI_RECV, FI_SEND,
    FI_WRITE,
};
use crate::abi::rma::fi_ops_rma;
use crate::abi::tagged::fi_ops_tagged;
use libc::{c_char, c_int, c_void, iovec};
use std::ffi::CStr;
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Closed endpoints whose hooks are kept before one is reused.
const EP_QUARANTINE: usize = 256;

macro_rules! entries {
    ($($name:ident),* $(,)?) => {
        // Only their addresses are taken: they go into the copied tables,
        // whose callers use the provider's prototypes (entry.c).
        extern "C" { $(fn $name();)* }
    };
}

entries!(
    oxshim_tr_msg_recv,
    oxshim_tr_msg_recvv,
    oxshim_tr_msg_recvmsg,
    oxshim_tr_msg_send,
    oxshim_tr_msg_sendv,
    oxshim_tr_msg_sendmsg,
    oxshim_tr_msg_senddata,
    oxshim_tr_tagged_recv,
    oxshim_tr_tagged_recvv,
    oxshim_tr_tagged_recvmsg,
    oxshim_tr_tagged_send,
    oxshim_tr_tagged_sendv,
    oxshim_tr_tagged_sendmsg,
    oxshim_tr_tagged_senddata,
    oxshim_tr_rma_read,
    oxshim_tr_rma_readv,
    oxshim_tr_rma_readmsg,
    oxshim_tr_rma_write,
    oxshim_tr_rma_writev,
    oxshim_tr_rma_writemsg,
    oxshim_tr_rma_writedata,
    oxshim_tr_atomic_write,
    oxshim_tr_atomic_writev,
    oxshim_tr_atomic_writemsg,
    oxshim_tr_atomic_readwrite,
    oxshim_tr_atomic_readwritev,
    oxshim_tr_atomic_readwritemsg,
    oxshim_tr_atomic_compwrite,
    oxshim_tr_atomic_compwritev,
    oxshim_tr_atomic_compwritemsg,
    oxshim_tr_dom_endpoint,
    oxshim_tr_dom_scalable_ep,
    oxshim_tr_dom_endpoint2,
    oxshim_tr_ep_close,
);

fn addr(f: unsafe extern "C" fn()) -> usize {
    f as usize
}

/// Points a domain's copied `ops` at the shim's endpoint entries.
pub(crate) fn patch_domain_ops(t: &mut TableCopy) {
    t.set(
        offset_of!(fi_ops_domain, endpoint),
        addr(oxshim_tr_dom_endpoint),
    );
    t.set(
        offset_of!(fi_ops_domain, scalable_ep),
        addr(oxshim_tr_dom_scalable_ep),
    );
    t.set(
        offset_of!(fi_ops_domain, endpoint2),
        addr(oxshim_tr_dom_endpoint2),
    );
}

/// One hooked endpoint. The head is read by entry.c (`struct oxshim_ep`):
/// the provider's tables, where the entries forward. What a data-path
/// check reads (`ep`, `domain`, `mr_local`) shares that first cache line,
/// so a checked call touches the hook's one line and the desc's slot.
#[repr(C, align(64))]
pub struct EpHook {
    pub msg: *mut fi_ops_msg,
    pub tagged: *mut fi_ops_tagged,
    pub rma: *mut fi_ops_rma,
    pub atomic: *mut fi_ops_atomic,
    pub(crate) ep: *mut fid_ep,
    pub(crate) domain: *const DomainHook,
    /// The domain's [`DomainHook::mr_local`].
    mr_local: bool,
    pub(crate) ops: *mut fi_ops_ep,
    pub(crate) fid_ops: *mut fi_ops,
    copies: Copies,
}

const _: () = assert!(std::mem::offset_of!(EpHook, mr_local) < 64);

#[derive(Default)]
struct Copies {
    msg: Option<TableCopy>,
    tagged: Option<TableCopy>,
    rma: Option<TableCopy>,
    atomic: Option<TableCopy>,
    ops: Option<TableCopy>,
    fid_ops: Option<TableCopy>,
}

impl EpHook {
    fn domain(&self) -> &DomainHook {
        // SAFETY: domain hooks are never freed.
        unsafe { &*self.domain }
    }
}

// ------------------------------------------------ endpoint lookup table --

const EP_BITS: u32 = 16;
const EP_SLOTS: usize = 1 << EP_BITS;
const EP_PROBE: usize = 64;
const TOMB: usize = usize::MAX;

struct EpSlot {
    ep: AtomicUsize,
    hook: AtomicUsize,
}

static EPS: [EpSlot; EP_SLOTS] = [const {
    EpSlot {
        ep: AtomicUsize::new(0),
        hook: AtomicUsize::new(0),
    }
}; EP_SLOTS];

#[inline]
fn ep_home(ep: usize) -> usize {
    (((ep >> 4) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - EP_BITS)) as usize
}

/// The hook of an endpoint the shim hooked. Lock-free.
#[inline]
fn ep_find<'a>(ep: *const fid_ep) -> Option<&'a EpHook> {
    let key = ep as usize;
    if key == 0 {
        return None;
    }
    let h = ep_home(key);
    for i in 0..EP_PROBE {
        let s = &EPS[(h + i) & (EP_SLOTS - 1)];
        let k = s.ep.load(Ordering::Acquire);
        if k == key {
            let p = s.hook.load(Ordering::Relaxed);
            // SAFETY: hooks are never freed; one reused for another
            // endpoint is told apart by its `ep`.
            let hook = unsafe { &*(p as *const EpHook) };
            return (hook.ep as usize == key).then_some(hook);
        }
        if k == 0 {
            return None;
        }
    }
    None
}

/// Enters an endpoint (the caller holds the state lock); false: no room.
fn ep_insert(ep: usize, hook: usize) -> bool {
    let h = ep_home(ep);
    for i in 0..EP_PROBE {
        let s = &EPS[(h + i) & (EP_SLOTS - 1)];
        let k = s.ep.load(Ordering::Relaxed);
        if k == 0 || k == TOMB {
            s.hook.store(hook, Ordering::Relaxed);
            s.ep.store(ep, Ordering::Release);
            return true;
        }
    }
    false
}

fn ep_remove_locked(ep: usize) {
    let _st = state();
    ep_remove(ep);
}

/// Removes an endpoint (the caller holds the state lock).
fn ep_remove(ep: usize) {
    let h = ep_home(ep);
    for i in 0..EP_PROBE {
        let s = &EPS[(h + i) & (EP_SLOTS - 1)];
        let k = s.ep.load(Ordering::Relaxed);
        if k == ep {
            s.ep.store(TOMB, Ordering::Release);
            return;
        }
        if k == 0 {
            return;
        }
    }
}

// ----------------------------------------------------- hooking endpoints --

/// Hooks an endpoint the application just opened on `dom`.
///
/// # Safety
/// `ep` is an open endpoint (or scalable endpoint, or context) that the
/// shim has not hooked.
unsafe fn hook_ep(ep: *mut fid_ep, dom: &DomainHook) {
    if ep.is_null() {
        return;
    }
    let mut st = state();
    let p = match st.ep_spare.pop() {
        Some(p) => p as *mut EpHook,
        None => Box::into_raw(Box::new(EpHook {
            msg: std::ptr::null_mut(),
            tagged: std::ptr::null_mut(),
            rma: std::ptr::null_mut(),
            atomic: std::ptr::null_mut(),
            ops: std::ptr::null_mut(),
            fid_ops: std::ptr::null_mut(),
            ep: std::ptr::null_mut(),
            domain: dom,
            mr_local: dom.mr_local,
            copies: Copies::default(),
        })),
    };
    let owner = p as usize;
    // SAFETY: an open endpoint's fields are readable; each non-NULL
    // table is the provider's, starting with its size.
    let hook = unsafe {
        let e = &*ep;
        let copy = |t: *mut c_void, ours: usize| {
            (!t.is_null()).then(|| TableCopy::new(t as *const c_void, ours, owner))
        };
        let mut c = Copies {
            msg: copy(e.msg as _, size_of::<fi_ops_msg>()),
            tagged: copy(e.tagged as _, size_of::<fi_ops_tagged>()),
            rma: copy(e.rma as _, size_of::<fi_ops_rma>()),
            atomic: copy(e.atomic as _, size_of::<fi_ops_atomic>()),
            ops: if e.fid.fclass == FI_CLASS_SEP as usize {
                copy(e.ops as _, size_of::<fi_ops_ep>())
            } else {
                None
            },
            fid_ops: copy(e.fid.ops as _, size_of::<fi_ops>()),
        };
        patch(&mut c);
        EpHook {
            msg: e.msg,
            tagged: e.tagged,
            rma: e.rma,
            atomic: e.atomic,
            ops: e.ops,
            fid_ops: e.fid.ops,
            ep,
            domain: dom,
            mr_local: dom.mr_local,
            copies: c,
        }
    };
    // SAFETY: p is a hook nothing refers to (new, or past quarantine);
    // the old value's tables are dropped.
    drop(unsafe { std::ptr::replace(p, hook) });
    if !ep_insert(ep as usize, owner) {
        static FULL: std::sync::Once = std::sync::Once::new();
        FULL.call_once(|| {
            eprintln!("oxshim: more than {EP_SLOTS} endpoints: later ones are not checked")
        });
        st.ep_spare.push(owner);
        return;
    }
    st.report.domains[dom.stats].endpoints += 1;
    // SAFETY: the copies live as long as the hook.
    unsafe { install(&*p) };
}

fn patch(c: &mut Copies) {
    if let Some(t) = c.msg.as_mut() {
        t.set(offset_of!(fi_ops_msg, recv), addr(oxshim_tr_msg_recv));
        t.set(offset_of!(fi_ops_msg, recvv), addr(oxshim_tr_msg_recvv));
        t.set(offset_of!(fi_ops_msg, recvmsg), addr(oxshim_tr_msg_recvmsg));
        t.set(offset_of!(fi_ops_msg, send), addr(oxshim_tr_msg_send));
        t.set(offset_of!(fi_ops_msg, sendv), addr(oxshim_tr_msg_sendv));
        t.set(offset_of!(fi_ops_msg, sendmsg), addr(oxshim_tr_msg_sendmsg));
        t.set(
            offset_of!(fi_ops_msg, senddata),
            addr(oxshim_tr_msg_senddata),
        );
    }
    if let Some(t) = c.tagged.as_mut() {
        t.set(offset_of!(fi_ops_tagged, recv), addr(oxshim_tr_tagged_recv));
        t.set(
            offset_of!(fi_ops_tagged, recvv),
            addr(oxshim_tr_tagged_recvv),
        );
        t.set(
            offset_of!(fi_ops_tagged, recvmsg),
            addr(oxshim_tr_tagged_recvmsg),
        );
        t.set(offset_of!(fi_ops_tagged, send), addr(oxshim_tr_tagged_send));
        t.set(
            offset_of!(fi_ops_tagged, sendv),
            addr(oxshim_tr_tagged_sendv),
        );
        t.set(
            offset_of!(fi_ops_tagged, sendmsg),
            addr(oxshim_tr_tagged_sendmsg),
        );
        t.set(
            offset_of!(fi_ops_tagged, senddata),
            addr(oxshim_tr_tagged_senddata),
        );
    }
    if let Some(t) = c.rma.as_mut() {
        t.set(offset_of!(fi_ops_rma, read), addr(oxshim_tr_rma_read));
        t.set(offset_of!(fi_ops_rma, readv), addr(oxshim_tr_rma_readv));
        t.set(offset_of!(fi_ops_rma, readmsg), addr(oxshim_tr_rma_readmsg));
        t.set(offset_of!(fi_ops_rma, write), addr(oxshim_tr_rma_write));
        t.set(offset_of!(fi_ops_rma, writev), addr(oxshim_tr_rma_writev));
        t.set(
            offset_of!(fi_ops_rma, writemsg),
            addr(oxshim_tr_rma_writemsg),
        );
        t.set(
            offset_of!(fi_ops_rma, writedata),
            addr(oxshim_tr_rma_writedata),
        );
    }
    if let Some(t) = c.atomic.as_mut() {
        t.set(
            offset_of!(fi_ops_atomic, write),
            addr(oxshim_tr_atomic_write),
        );
        t.set(
            offset_of!(fi_ops_atomic, writev),
            addr(oxshim_tr_atomic_writev),
        );
        t.set(
            offset_of!(fi_ops_atomic, writemsg),
            addr(oxshim_tr_atomic_writemsg),
        );
        t.set(
            offset_of!(fi_ops_atomic, readwrite),
            addr(oxshim_tr_atomic_readwrite),
        );
        t.set(
            offset_of!(fi_ops_atomic, readwritev),
            addr(oxshim_tr_atomic_readwritev),
        );
        t.set(
            offset_of!(fi_ops_atomic, readwritemsg),
            addr(oxshim_tr_atomic_readwritemsg),
        );
        t.set(
            offset_of!(fi_ops_atomic, compwrite),
            addr(oxshim_tr_atomic_compwrite),
        );
        t.set(
            offset_of!(fi_ops_atomic, compwritev),
            addr(oxshim_tr_atomic_compwritev),
        );
        t.set(
            offset_of!(fi_ops_atomic, compwritemsg),
            addr(oxshim_tr_atomic_compwritemsg),
        );
    }
    if let Some(t) = c.ops.as_mut() {
        t.set(
            offset_of!(fi_ops_ep, tx_ctx),
            sep_tx_ctx as *const () as usize,
        );
        t.set(
            offset_of!(fi_ops_ep, rx_ctx),
            sep_rx_ctx as *const () as usize,
        );
    }
    if let Some(t) = c.fid_ops.as_mut() {
        t.set(offset_of!(fi_ops, close), addr(oxshim_tr_ep_close));
    }
}

/// Points the endpoint at the hook's copies.
///
/// # Safety
/// `h.ep` is open.
unsafe fn install(h: &EpHook) {
    // SAFETY: per the contract; the copies live as long as the hook.
    unsafe {
        let e = &mut *h.ep;
        let c = &h.copies;
        if let Some(t) = &c.msg {
            e.msg = t.ptr();
        }
        if let Some(t) = &c.tagged {
            e.tagged = t.ptr();
        }
        if let Some(t) = &c.rma {
            e.rma = t.ptr();
        }
        if let Some(t) = &c.atomic {
            e.atomic = t.ptr();
        }
        if let Some(t) = &c.ops {
            e.ops = t.ptr();
        }
        if let Some(t) = &c.fid_ops {
            e.fid.ops = t.ptr();
        }
    }
}

/// Gives the endpoint its provider's tables back: each pointer that
/// still names the shim's copy (a provider that changed one since, at
/// enable say, keeps its own).
///
/// # Safety
/// `h.ep` is open.
unsafe fn uninstall(h: &EpHook) {
    fn back<T>(slot: &mut *mut T, copy: &Option<TableCopy>, orig: *mut T) {
        if copy.as_ref().is_some_and(|t| *slot == t.ptr::<T>()) {
            *slot = orig;
        }
    }
    // SAFETY: per the contract.
    unsafe {
        let e = &mut *h.ep;
        let c = &h.copies;
        back(&mut e.msg, &c.msg, h.msg);
        back(&mut e.tagged, &c.tagged, h.tagged);
        back(&mut e.rma, &c.rma, h.rma);
        back(&mut e.atomic, &c.atomic, h.atomic);
        back(&mut e.ops, &c.ops, h.ops);
        back(&mut e.fid.ops, &c.fid_ops, h.fid_ops);
    }
}

/// domain->ops->endpoint (which 0), ->scalable_ep (1), ->endpoint2 (2).
///
/// # Safety
/// As fi_endpoint, fi_scalable_ep, fi_endpoint2 on a domain the shim hooked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_dom_endpoint(
    ra: *mut c_void,
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    flags: u64,
    context: *mut c_void,
    which: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { domain_hook(domain) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static; a slot is called only
        // when the shim installed its entry there, within the size.
        let rc = unsafe {
            let o = &*h.orig_ops;
            match which {
                0 => match o.endpoint {
                    Some(f) => f(domain, info, ep, context),
                    None => return -FI_ENOSYS,
                },
                1 => match o.scalable_ep {
                    Some(f) => f(domain, info, ep, context),
                    None => return -FI_ENOSYS,
                },
                _ => match o.endpoint2 {
                    Some(f) => f(domain, info, ep, flags, context),
                    None => return -FI_ENOSYS,
                },
            }
        };
        if rc == 0 && !ep.is_null() && !is_internal(ra as usize) {
            // SAFETY: the provider wrote an open endpoint.
            unsafe { hook_ep(*ep, h) };
        }
        rc
    })
}

/// A scalable endpoint's tx or rx context, opened by `open` (the
/// provider's slot), is hooked like an endpoint of the same domain.
fn sep_ctx(
    sep: *mut fid_ep,
    out: *mut *mut fid_ep,
    open: impl FnOnce(&fi_ops_ep) -> Option<c_int>,
) -> c_int {
    guard(|| {
        let Some(h) = ep_find(sep) else {
            return -FI_EINVAL;
        };
        if h.ops.is_null() {
            return -FI_ENOSYS;
        }
        // SAFETY: the provider's table (checked non-NULL), read only.
        let Some(rc) = open(unsafe { &*h.ops }) else {
            return -FI_ENOSYS;
        };
        if rc == 0 && !out.is_null() {
            // SAFETY: the provider wrote an open context.
            unsafe { hook_ep(*out, h.domain()) };
        }
        rc
    })
}

unsafe extern "C" fn sep_tx_ctx(
    sep: *mut fid_ep,
    index: c_int,
    attr: *mut fi_tx_attr,
    tx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    sep_ctx(sep, tx_ep, |o| {
        // SAFETY: forwarded as received to the provider's slot.
        o.tx_ctx
            .map(|f| unsafe { f(sep, index, attr, tx_ep, context) })
    })
}

unsafe extern "C" fn sep_rx_ctx(
    sep: *mut fid_ep,
    index: c_int,
    attr: *mut fi_rx_attr,
    rx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    sep_ctx(sep, rx_ep, |o| {
        // SAFETY: forwarded as received to the provider's slot.
        o.rx_ctx
            .map(|f| unsafe { f(sep, index, attr, rx_ep, context) })
    })
}

/// ep->fid.ops->close: the provider's tables are put back and the close
/// forwarded; a close that fails leaves the endpoint hooked.
///
/// # Safety
/// `fid` is an endpoint the shim hooked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_ep_close(_ra: *mut c_void, fid: *mut fid) -> c_int {
    guard(|| {
        let ep = fid as *mut fid_ep;
        let Some(h) = ep_find(ep) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static.
        let Some(close) = (unsafe { (*h.fid_ops).close }) else {
            return -FI_ENOSYS;
        };
        // Out of the table first: once closed, the address may be reused
        // by an endpoint another thread opens.
        ep_remove_locked(ep as usize);
        // SAFETY: restore, forward, reinstall if the provider keeps it.
        let rc = unsafe {
            uninstall(h);
            close(fid)
        };
        let mut st = state();
        if rc != 0 {
            // SAFETY: the endpoint is still open.
            unsafe { install(h) };
            ep_insert(ep as usize, h as *const EpHook as usize);
            return rc;
        }
        st.ep_quarantine.push_back(h as *const EpHook as usize);
        if st.ep_quarantine.len() > EP_QUARANTINE {
            if let Some(old) = st.ep_quarantine.pop_front() {
                st.ep_spare.push(old);
            }
        }
        rc
    })
}

// ------------------------------------------------------------ data path --

/// The most iovs of one call that the shim reads.
const MAX_IOV: usize = 256;

const SEG_BUF: u16 = 0;
const SEG_IOV: u16 = 1;
const SEG_IOC: u16 = 2;
const SEG_ELEMS: u16 = 3;

/// The local buffers of a call, as entry.c describes them (`struct
/// oxshim_seg`).
#[repr(C)]
pub struct Seg {
    ptr: *const c_void,
    n: usize,
    desc: *mut c_void,
    access: u64,
    kind: u16,
    inject: u16,
    datatype: u32,
}

/// Checks the local buffers of a data-path call on `ep`; returns the
/// endpoint's hook (whose provider tables the entry forwards to), or NULL
/// when the call is refused: an endpoint the shim does not know, or a
/// misuse in strict mode.
///
/// # Safety
/// `segs` holds `n` segments whose pointers are the caller's arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_dp(
    ra: *mut c_void,
    ep: *mut fid_ep,
    call: *const c_char,
    segs: *const Seg,
    n: usize,
) -> *const EpHook {
    let Some(h) = ep_find(ep) else {
        return std::ptr::null();
    };
    // SAFETY: per the contract.
    let ok = catch_unwind(AssertUnwindSafe(|| unsafe {
        check_segs(h, ra as usize, call, segs, n)
    }))
    .unwrap_or(true);
    if ok || *MODE != Mode::Strict {
        h
    } else {
        std::ptr::null()
    }
}

/// The common case of a data-path call with one local buffer (the plain
/// forms: fi_recv, fi_send, fi_read, fi_write and the like): the
/// endpoint's hook when the shim hooked the endpoint and the buffer passes
/// with nothing to record, else NULL, and the entry then takes the whole
/// path through [`oxshim_rs_dp`], which checks again and records what it
/// finds. It only reads; a panic (none is known) answers NULL too.
///
/// `hint` is the owner word of the table the call came through when that
/// table is one of the shim's copies (entry.c checks that its slot is the
/// entry itself), else NULL. A hook is trusted only for the endpoint it
/// holds; anything else takes the lookup ([`ep_find`]).
///
/// # Safety
/// `hint` is NULL or a hook's address (a table copy's owner word).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_dp1(
    hint: *const EpHook,
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    d: *mut c_void,
    need: u64,
) -> *const EpHook {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a table copy's owner word is a hook, and hooks are never
        // freed (one reused for another endpoint holds that one's `ep`).
        let hinted = (!hint.is_null()).then(|| unsafe { &*hint });
        match hinted.filter(|h| h.ep == ep).or_else(|| ep_find(ep)) {
            Some(h) if passes(h, buf as usize, len, d, need, false) => h as *const EpHook,
            _ => std::ptr::null(),
        }
    }))
    .unwrap_or(std::ptr::null())
}

/// # Safety
/// As [`oxshim_rs_dp`].
#[inline]
unsafe fn check_segs(
    h: &EpHook,
    ra: usize,
    call: *const c_char,
    segs: *const Seg,
    n: usize,
) -> bool {
    let mut ok = true;
    for i in 0..n {
        // SAFETY: per the contract.
        let s = unsafe { &*segs.add(i) };
        let inject = s.inject != 0;
        match s.kind {
            SEG_BUF => ok &= check(h, ra, call, s.ptr as usize, s.n, s.desc, s.access, inject),
            SEG_ELEMS => {
                let (len, _) = elems(s.n, s.datatype);
                ok &= check(h, ra, call, s.ptr as usize, len, s.desc, s.access, inject);
            }
            // A count past any provider's iov_limit is the provider's to
            // refuse; the shim does not read that far into the array.
            SEG_IOV | SEG_IOC if s.n > 0 && s.n <= MAX_IOV && !s.ptr.is_null() => {
                let descs = s.desc as *const *mut c_void;
                for j in 0..s.n {
                    // SAFETY: the caller passes `n` entries, and as many
                    // descs unless the desc array is NULL.
                    let (addr, len, d) = unsafe {
                        let d = if descs.is_null() {
                            std::ptr::null_mut()
                        } else {
                            *descs.add(j)
                        };
                        if s.kind == SEG_IOV {
                            let v = &*(s.ptr as *const iovec).add(j);
                            (v.iov_base as usize, v.iov_len, d)
                        } else {
                            let v = &*(s.ptr as *const fi_ioc).add(j);
                            (v.addr as usize, elems(v.count, s.datatype).0, d)
                        }
                    };
                    ok &= check(h, ra, call, addr, len, d, s.access, inject);
                }
            }
            _ => {}
        }
    }
    ok
}

/// Bytes of `count` elements of `datatype` (an unknown datatype counts one
/// byte each: only the start is then checked), and whether it is known.
fn elems(count: usize, datatype: u32) -> (usize, bool) {
    match desc::datatype_size(datatype) {
        Some(sz) => (count.saturating_mul(sz), true),
        None => (count.min(1), false),
    }
}

fn need_name(need: u64) -> &'static str {
    match need {
        FI_SEND => "FI_SEND",
        FI_RECV => "FI_RECV",
        FI_READ => "FI_READ",
        FI_WRITE => "FI_WRITE",
        _ => "?",
    }
}

fn call_name(call: *const c_char) -> String {
    if call.is_null() {
        return "?".into();
    }
    // SAFETY: entry.c passes string literals.
    unsafe { CStr::from_ptr(call) }
        .to_string_lossy()
        .into_owned()
}

/// Whether one local buffer and its desc pass with nothing to record:
/// the common case, which only reads.
///
/// The local access rights of an MR govern local transfers only where the
/// domain requires local registration (FI_MR_LOCAL): elsewhere a desc is a
/// hint the provider may ignore, and fabtests itself passes the desc of an
/// FI_REMOTE_WRITE-only region to its sends. A desc of a closed MR, of
/// another domain's MR or one too short is a finding either way.
#[inline(always)]
fn passes(h: &EpHook, addr: usize, len: usize, d: *mut c_void, need: u64, inject: bool) -> bool {
    if len == 0 {
        return true;
    }
    let mr_local = h.mr_local;
    if d.is_null() {
        return inject || !mr_local;
    }
    let need = if mr_local { need } else { 0 };
    desc::fits(d as usize, h.domain as usize, addr, len, need)
}

/// One local buffer and its desc; false: a finding was recorded.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn check(
    h: &EpHook,
    ra: usize,
    call: *const c_char,
    addr: usize,
    len: usize,
    d: *mut c_void,
    need: u64,
    inject: bool,
) -> bool {
    passes(h, addr, len, d, need, inject) || diagnose(h, ra, call, addr, len, d, need)
}

/// A buffer that did not pass at first sight: judged again with every
/// registration of its desc ranked, and the finding recorded (a writer
/// that was changing the desc's slot may have made a good one look bad:
/// then it passes now).
#[cold]
#[inline(never)]
fn diagnose(
    h: &EpHook,
    ra: usize,
    call: *const c_char,
    addr: usize,
    len: usize,
    d: *mut c_void,
    need: u64,
) -> bool {
    if d.is_null() {
        missing(h, ra, call, addr, len, need);
        return false;
    }
    let need = if h.domain().mr_local { need } else { 0 };
    match desc::judge(d as usize, h.domain as usize, addr, len, need) {
        Verdict::Ok => true,
        Verdict::Unknown => {
            h.domain().unknown_descs.fetch_add(1, Ordering::Relaxed);
            true
        }
        Verdict::Bad(kind, v, n) => {
            bad(h, ra, call, addr, len, d, need, kind, v, n);
            false
        }
    }
}

#[cold]
#[inline(never)]
fn missing(h: &EpHook, ra: usize, call: *const c_char, addr: usize, len: usize, need: u64) {
    let what = format!(
        "{}: no desc for the {len} bytes at {addr:#x} (FI_MR_LOCAL: local buffers must be registered, {} needed)",
        call_name(call),
        need_name(need)
    );
    state()
        .report
        .finding(Kind::DescMissing, ra, h.domain().stats, None, what);
}

#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn bad(
    h: &EpHook,
    ra: usize,
    call: *const c_char,
    addr: usize,
    len: usize,
    d: *mut c_void,
    need: u64,
    kind: Kind,
    v: desc::View,
    n: usize,
) {
    let why = match kind {
        Kind::DescRange => format!(
            "its MR covers {:#x}..{:#x}",
            v.addr,
            v.addr.wrapping_add(v.len)
        ),
        Kind::DescAccess => format!("its MR lacks {}", need_name(need)),
        Kind::DescForeignDomain => "its MR belongs to another domain".into(),
        Kind::DescClosedMr => "its MR was closed".into(),
        _ => String::new(),
    };
    let more = if n > 1 {
        format!(" ({n} MRs share this desc; none fits)")
    } else {
        String::new()
    };
    let what = format!(
        "{}: desc {:#x} for the {len} bytes at {addr:#x} ({} needed): {why}{more}",
        call_name(call),
        d as usize,
        need_name(need)
    );
    let info = (v.mr != 0).then(|| info_of(v.mr));
    state()
        .report
        .finding(kind, ra, h.domain().stats, info, what);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook_for(ep: *mut fid_ep) -> EpHook {
        EpHook {
            msg: std::ptr::null_mut(),
            tagged: std::ptr::null_mut(),
            rma: std::ptr::null_mut(),
            atomic: std::ptr::null_mut(),
            ep,
            domain: std::ptr::null(),
            mr_local: true,
            ops: std::ptr::null_mut(),
            fid_ops: std::ptr::null_mut(),
            copies: Copies::default(),
        }
    }

    /// A table's owner word is trusted only for the endpoint its hook
    /// holds: a hook that holds another endpoint (reused, or reached
    /// through another endpoint's table) sends the call to the lookup,
    /// which knows neither endpoint here, so the call takes the whole path.
    #[test]
    fn a_hint_counts_only_for_its_own_endpoint() {
        let (mut a, mut b) = (0u64, 0u64);
        let (ea, eb) = (
            &mut a as *mut u64 as *mut fid_ep,
            &mut b as *mut u64 as *mut fid_ep,
        );
        let h = hook_for(ea);
        let buf = [0u8; 8];
        // An empty buffer passes whatever its desc: only the endpoint
        // decides here.
        // SAFETY: the hint is a hook that outlives the calls.
        let own = unsafe {
            oxshim_rs_dp1(
                &h,
                ea,
                buf.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                FI_RECV,
            )
        };
        assert_eq!(own, &h as *const EpHook);
        // SAFETY: as above.
        let other = unsafe {
            oxshim_rs_dp1(
                &h,
                eb,
                buf.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                FI_RECV,
            )
        };
        assert!(other.is_null());
        // SAFETY: a NULL hint.
        let none = unsafe {
            oxshim_rs_dp1(
                std::ptr::null(),
                ea,
                buf.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                FI_RECV,
            )
        };
        assert!(none.is_null());
    }
}
