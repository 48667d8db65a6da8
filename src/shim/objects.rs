//! Fabrics and domains: the provider's objects stay the application's; the
//! shim points their `ops`, `fid.ops` and `mr` at per-object copies of the
//! provider's tables with a few slots replaced. The provider's static
//! tables are never written.
//!
//! `domain->ops` is replaced too, by a copy whose endpoint slots are the
//! shim's, so that the application's endpoints can be hooked for the
//! data-path checks ([`super::ep`]); except on a domain whose provider
//! compares `domain->ops` with its own table: upstream's tcp opens a
//! multiplexed domain for FI_EP_RDM with FI_THREAD_COMPLETION and later
//! tells it apart by that pointer (xnet_domain_multiplexed). There the
//! pointer is left alone and the report says the checks are off.
//!
//! Each copy ends with one extra word, the address of the hook that owns
//! it, so that an entry finds its hook from the object alone, without a
//! lock. Hooks live until the process ends: a call racing a close still
//! reads valid memory.

use super::report::{DomainStats, Kind};
use super::{arm_exit_report, guard, is_internal, next_symbol, state, Mode, MODE};
use crate::abi::domain::{fi_ops_domain, fi_ops_mr, fid_domain, FI_REG_MR};
use crate::abi::errno::{FI_EINVAL, FI_ENOSYS};
use crate::abi::fabric::{
    fi_ep_type, fi_fabric_attr, fi_info, fi_ops, fi_ops_fabric, fi_threading, fid, fid_fabric,
    FI_CLASS_DOMAIN, FI_CLASS_FABRIC, FI_LOCAL_MR, FI_MR_LOCAL,
};
use libc::{c_int, c_void};
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

extern "C" {
    fn oxshim_tr_fabric_close(fid: *mut fid) -> c_int;
    fn oxshim_tr_domain(
        fabric: *mut fid_fabric,
        info: *mut fi_info,
        dom: *mut *mut fid_domain,
        context: *mut c_void,
    ) -> c_int;
    fn oxshim_tr_domain2(
        fabric: *mut fid_fabric,
        info: *mut fi_info,
        dom: *mut *mut fid_domain,
        flags: u64,
        context: *mut c_void,
    ) -> c_int;
    fn oxshim_tr_domain_close(fid: *mut fid) -> c_int;
}

/// A copy of a provider's ops table (`size` first, as every libfabric ops
/// table starts), at least `ours` bytes long, followed by the owner word
/// and any `extra` words (what entry.c reads there).
pub(crate) struct TableCopy {
    words: Box<[usize]>,
}

impl TableCopy {
    /// # Safety
    /// `orig` points to an ops table whose first field is its size in bytes.
    pub(crate) unsafe fn new(orig: *const c_void, ours: usize, owner: usize) -> TableCopy {
        // SAFETY: per the contract.
        unsafe { TableCopy::with_extra(orig, ours, owner, &[]) }
    }

    /// # Safety
    /// As [`TableCopy::new`].
    pub(crate) unsafe fn with_extra(
        orig: *const c_void,
        ours: usize,
        owner: usize,
        extra: &[usize],
    ) -> TableCopy {
        // SAFETY: per the contract, the first word is the table's size.
        let size = unsafe { *(orig as *const usize) };
        let n = size.max(ours).div_ceil(size_of::<usize>());
        let mut words = vec![0usize; n + 1 + extra.len()].into_boxed_slice();
        // SAFETY: the source holds `size` bytes, the destination n words.
        unsafe {
            std::ptr::copy_nonoverlapping(orig as *const u8, words.as_mut_ptr() as *mut u8, size)
        };
        words[n] = owner;
        words[n + 1..].copy_from_slice(extra);
        TableCopy { words }
    }

    pub(crate) fn empty() -> TableCopy {
        TableCopy {
            words: Box::new([]),
        }
    }

    pub(crate) fn ptr<T>(&self) -> *mut T {
        self.words.as_ptr() as *mut T
    }

    /// The provider's size of the table.
    fn size(&self) -> usize {
        self.words[0]
    }

    /// Replaces the slot at byte `offset` if the provider's table has it.
    pub(crate) fn set(&mut self, offset: usize, f: usize) {
        if offset + size_of::<usize>() <= self.size() {
            self.words[offset / size_of::<usize>()] = f;
        }
    }
}

/// The owner word of a table installed by [`TableCopy`].
///
/// # Safety
/// `table` is a TableCopy's table, built with the same `ours`.
pub(crate) unsafe fn owner_of(table: *const c_void, ours: usize) -> usize {
    // SAFETY: per the contract.
    unsafe {
        let size = *(table as *const usize);
        *(table as *const usize).add(size.max(ours).div_ceil(size_of::<usize>()))
    }
}

pub(crate) struct FabricHook {
    fabric: *mut fid_fabric,
    pub(crate) orig_ops: *mut fi_ops_fabric,
    orig_fid_ops: *mut fi_ops,
    ops: TableCopy,
    fid_ops: TableCopy,
}

pub(crate) struct DomainHook {
    pub domain: *mut fid_domain,
    pub orig_mr: *mut fi_ops_mr,
    pub orig_fid_ops: *mut fi_ops,
    pub orig_ops: *mut fi_ops_domain,
    mr_ops: Option<TableCopy>,
    fid_ops: TableCopy,
    /// `domain->ops` with the endpoint slots replaced; None where the
    /// data-path checks are off for this domain.
    ops: Option<TableCopy>,
    /// Local buffers must be registered (FI_MR_LOCAL, or the older
    /// FI_LOCAL_MR mode bit): a transfer without a desc is a misuse.
    pub mr_local: bool,
    /// Descs used on its endpoints that no registration the shim knows has.
    pub unknown_descs: AtomicU64,
    /// Registrations and closes seen, for [`super::sampled`].
    pub reg_calls: AtomicUsize,
    pub close_calls: AtomicUsize,
    /// Opened by libfabric itself: every call on it is passed through.
    pub internal: bool,
    /// The fabric's api_version (which fi_mr_attr fields exist).
    pub api_version: u32,
    /// Index of this domain's record in [`super::report::Report::domains`].
    pub stats: usize,
    /// Registrations that libfabric made on the application's behalf.
    pub internal_regs: crate::tally::Tally,
    /// Bound to an EQ with FI_REG_MR: registrations complete by event.
    pub async_reg: AtomicBool,
}

/// Every installed `fid.ops` copy and its hook, so that an entry reached
/// with some other object (a test calling a domain's `reg` slot with a
/// fabric, or NULL) is told apart without reading past a foreign table.
/// Open addressing keyed by the table's address, never shrunk: a lookup
/// is one or two probes however many objects were hooked (a linear list,
/// before, was searched on every registration and close). A table
/// installed again at an address that held an earlier one (its hook freed
/// and the memory reused) takes the entry over.
const HOOKED_SLOTS: usize = 2048;
/// At most this many tables are entered (half the slots); beyond, lookups
/// trust the table's owner word.
const HOOKED_MAX: usize = HOOKED_SLOTS / 2;
/// A slot being filled: readers probe past it.
const CLAIMED: usize = 1;
static HOOKED: [(AtomicUsize, AtomicUsize); HOOKED_SLOTS] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; HOOKED_SLOTS];
static HOOKED_N: AtomicUsize = AtomicUsize::new(0);

fn hooked_home(table: usize) -> usize {
    ((table as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HOOKED_SLOTS.trailing_zeros()))
        as usize
}

pub(crate) fn register_hook(table: usize, hook: usize) {
    // One writer at a time (callers may hold the state lock, or not).
    static WRITER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _w = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let mut i = hooked_home(table);
    for _ in 0..HOOKED_SLOTS {
        let (t, h) = &HOOKED[i];
        match t.load(Ordering::Acquire) {
            cur if cur == table => {
                h.store(hook, Ordering::Release);
                return;
            }
            0 => {
                if HOOKED_N.fetch_add(1, Ordering::AcqRel) >= HOOKED_MAX {
                    return;
                }
                t.store(CLAIMED, Ordering::Relaxed);
                h.store(hook, Ordering::Relaxed);
                t.store(table, Ordering::Release);
                return;
            }
            _ => i = (i + 1) % HOOKED_SLOTS,
        }
    }
}

/// The hook of the object whose `fid.ops` is `f`'s, if the shim hooked it.
///
/// # Safety
/// `f` is NULL or points to a readable `struct fid`.
unsafe fn find_hook(f: *const fid, fclass: usize, ours: usize) -> Option<usize> {
    if f.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let (class, ops) = unsafe { ((*f).fclass, (*f).ops as usize) };
    if class != fclass {
        return None;
    }
    if HOOKED_N.load(Ordering::Acquire) > HOOKED_MAX {
        // More objects than the list holds: trust the table's owner word.
        // SAFETY: an object of this class reaching a shim entry carries
        // one of the shim's tables.
        return Some(unsafe { owner_of(ops as *const c_void, ours) });
    }
    find_table(ops)
}

/// The hook that installed the table at `table`, if the shim did (None,
/// too, once more tables were installed than the map holds).
pub(crate) fn find_table(table: usize) -> Option<usize> {
    let mut i = hooked_home(table);
    for _ in 0..HOOKED_SLOTS {
        let (t, h) = &HOOKED[i];
        match t.load(Ordering::Acquire) {
            0 => return None,
            cur if cur == table => return Some(h.load(Ordering::Acquire)),
            _ => i = (i + 1) % HOOKED_SLOTS,
        }
    }
    None
}

/// The hook of a domain whose tables the shim installed; None for NULL, an
/// object that is not a domain, or a domain the shim did not hook.
///
/// # Safety
/// `dom` is NULL or points to a readable `struct fid`.
pub(crate) unsafe fn domain_hook<'a>(dom: *const fid_domain) -> Option<&'a DomainHook> {
    // SAFETY: per the contract; hooks are never freed.
    unsafe {
        find_hook(
            dom as *const fid,
            FI_CLASS_DOMAIN as usize,
            size_of::<fi_ops>(),
        )
        .map(|h| &*(h as *const DomainHook))
    }
}

type FabricFn =
    unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type Fabric2Fn =
    unsafe extern "C" fn(*mut fi_info, *mut *mut fid_fabric, u64, *mut c_void) -> c_int;

// SAFETY (all three): the symbols have these signatures at these versions.
static REAL_FABRIC_1_0: Lazy<Option<FabricFn>> = Lazy::new(|| {
    next_symbol(c"fi_fabric", c"FABRIC_1.0")
        .map(|p| unsafe { std::mem::transmute::<*mut c_void, FabricFn>(p) })
});
static REAL_FABRIC_1_1: Lazy<Option<FabricFn>> = Lazy::new(|| {
    next_symbol(c"fi_fabric", c"FABRIC_1.1")
        .map(|p| unsafe { std::mem::transmute::<*mut c_void, FabricFn>(p) })
});
static REAL_FABRIC2: Lazy<Option<Fabric2Fn>> = Lazy::new(|| {
    next_symbol(c"fi_fabric2", c"FABRIC_1.8")
        .map(|p| unsafe { std::mem::transmute::<*mut c_void, Fabric2Fn>(p) })
});

/// fi_fabric@FABRIC_1.0 / @FABRIC_1.1 (from entry.c).
///
/// # Safety
/// As fi_fabric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_fabric(
    _ra: *mut c_void,
    abi_1_0: c_int,
    attr: *mut fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    guard(|| {
        let real = if abi_1_0 != 0 {
            *REAL_FABRIC_1_0
        } else {
            *REAL_FABRIC_1_1
        };
        let Some(real) = real else { return -FI_ENOSYS };
        // SAFETY: forwarded as received.
        let rc = unsafe { real(attr, fabric, context) };
        if rc == 0 && *MODE != Mode::Off && !fabric.is_null() {
            // SAFETY: the provider wrote an open fabric.
            unsafe { hook_fabric(*fabric) };
        }
        rc
    })
}

/// fi_fabric2@FABRIC_1.8 (from entry.c).
///
/// # Safety
/// As fi_fabric2.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_fabric2(
    _ra: *mut c_void,
    info: *mut fi_info,
    fabric: *mut *mut fid_fabric,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard(|| {
        let Some(real) = *REAL_FABRIC2 else {
            return -FI_ENOSYS;
        };
        // SAFETY: forwarded as received.
        let rc = unsafe { real(info, fabric, flags, context) };
        if rc == 0 && *MODE != Mode::Off && !fabric.is_null() {
            // SAFETY: the provider wrote an open fabric.
            unsafe { hook_fabric(*fabric) };
        }
        rc
    })
}

/// # Safety
/// `fab` is an open fabric that the shim has not hooked.
unsafe fn hook_fabric(fab: *mut fid_fabric) {
    if fab.is_null() {
        return;
    }
    arm_exit_report();
    let mut hook = Box::new(FabricHook {
        fabric: fab,
        // SAFETY: an open fabric's fields are readable.
        orig_ops: unsafe { (*fab).ops },
        orig_fid_ops: unsafe { (*fab).fid.ops },
        ops: TableCopy {
            words: Box::new([]),
        },
        fid_ops: TableCopy {
            words: Box::new([]),
        },
    });
    let owner = &*hook as *const FabricHook as usize;
    // SAFETY: both are the provider's ops tables.
    unsafe {
        hook.ops = TableCopy::new(
            hook.orig_ops as *const c_void,
            size_of::<fi_ops_fabric>(),
            owner,
        );
        hook.fid_ops = TableCopy::new(
            hook.orig_fid_ops as *const c_void,
            size_of::<fi_ops>(),
            owner,
        );
    }
    hook.ops.set(
        offset_of!(fi_ops_fabric, domain),
        oxshim_tr_domain as *const () as usize,
    );
    hook.ops.set(
        offset_of!(fi_ops_fabric, domain2),
        oxshim_tr_domain2 as *const () as usize,
    );
    hook.fid_ops.set(
        offset_of!(fi_ops, close),
        oxshim_tr_fabric_close as *const () as usize,
    );
    hook.ops.set(
        offset_of!(fi_ops_fabric, eq_open),
        super::eq::fabric_eq_open as *const () as usize,
    );
    register_hook(hook.fid_ops.ptr::<fi_ops>() as usize, owner);
    // SAFETY: the copies live as long as the hook, which is never freed.
    unsafe { install_fabric(&hook) };
    state().fabrics.push(hook);
}

/// # Safety
/// `h.fabric` is open.
unsafe fn install_fabric(h: &FabricHook) {
    // SAFETY: per the contract.
    unsafe {
        (*h.fabric).ops = h.ops.ptr();
        (*h.fabric).fid.ops = h.fid_ops.ptr();
    }
}

/// The hook of a fabric the shim hooked (None otherwise).
///
/// # Safety
/// `fabric` is NULL or points to a readable `struct fid`.
pub(crate) unsafe fn fabric_hook<'a>(fabric: *const fid_fabric) -> Option<&'a FabricHook> {
    // SAFETY: per the contract; hooks are never freed.
    unsafe {
        find_hook(
            fabric as *const fid,
            FI_CLASS_FABRIC as usize,
            size_of::<fi_ops>(),
        )
        .map(|h| &*(h as *const FabricHook))
    }
}

/// fabric->fid.ops->close.
///
/// # Safety
/// `fid` is a fabric hooked by the shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_fabric_close(_ra: *mut c_void, fid: *mut fid) -> c_int {
    guard(|| {
        let fab = fid as *mut fid_fabric;
        // SAFETY: per the contract.
        let Some(h) = (unsafe { fabric_hook(fab) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static.
        let Some(close) = (unsafe { (*h.orig_fid_ops).close }) else {
            return -FI_ENOSYS;
        };
        // SAFETY: restore, forward, reinstall if the provider keeps it.
        unsafe {
            (*fab).ops = h.orig_ops;
            (*fab).fid.ops = h.orig_fid_ops;
            let rc = close(fid);
            if rc != 0 {
                install_fabric(h);
            }
            rc
        }
    })
}

/// fabric->ops->domain and ->domain2.
///
/// # Safety
/// As fi_domain / fi_domain2 on a fabric hooked by the shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_domain(
    ra: *mut c_void,
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    dom: *mut *mut fid_domain,
    flags: u64,
    context: *mut c_void,
    v2: c_int,
) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { fabric_hook(fabric) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static; domain2 is read only
        // when its size covers it (the entry is installed only then).
        let rc = unsafe {
            if v2 != 0 {
                match (*h.orig_ops).domain2 {
                    Some(f) => f(fabric, info, dom, flags, context),
                    None => return -FI_ENOSYS,
                }
            } else {
                match (*h.orig_ops).domain {
                    Some(f) => f(fabric, info, dom, context),
                    None => return -FI_ENOSYS,
                }
            }
        };
        if rc == 0 && !dom.is_null() {
            let internal = is_internal(ra as usize);
            // SAFETY: the provider wrote an open domain; info is the
            // application's (or libfabric's) valid fi_info.
            unsafe { hook_domain(*dom, info, internal, (*fabric).api_version) };
        }
        rc
    })
}

fn c_text(p: *const libc::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libfabric's strings are NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// # Safety
/// `dom` is open and not hooked; `info` is NULL or a valid fi_info.
unsafe fn hook_domain(
    dom: *mut fid_domain,
    info: *const fi_info,
    internal: bool,
    api_version: u32,
) {
    if dom.is_null() {
        return;
    }
    // SAFETY: the attributes, where present, are the provider's valid ones.
    let (provider, name, mr_mode, mode, ep_type, threading) = unsafe {
        let fa = if info.is_null() {
            std::ptr::null_mut()
        } else {
            (*info).fabric_attr
        };
        let da = if info.is_null() {
            std::ptr::null_mut()
        } else {
            (*info).domain_attr
        };
        (
            if fa.is_null() {
                String::new()
            } else {
                c_text((*fa).prov_name)
            },
            if da.is_null() {
                String::new()
            } else {
                c_text((*da).name)
            },
            if da.is_null() { 0 } else { (*da).mr_mode },
            if info.is_null() { 0 } else { (*info).mode },
            if info.is_null() || (*info).ep_attr.is_null() {
                u32::MAX
            } else {
                (*(*info).ep_attr).r#type
            },
            if da.is_null() {
                u32::MAX
            } else {
                (*da).threading
            },
        )
    };
    let datapath_off = datapath_off(internal, &provider, ep_type, threading);
    let mut st = state();
    let stats = st.report.domains.len();
    let mut stats_rec = DomainStats::new(provider, name, internal, mr_mode);
    stats_rec.datapath_off = datapath_off.clone();
    st.report.domains.push(stats_rec);
    // SAFETY: an open domain's fields are readable.
    let (orig_mr, orig_fid_ops, orig_ops) = unsafe { ((*dom).mr, (*dom).fid.ops, (*dom).ops) };
    let mut hook = Box::new(DomainHook {
        domain: dom,
        orig_mr,
        orig_fid_ops,
        orig_ops,
        mr_ops: None,
        fid_ops: TableCopy {
            words: Box::new([]),
        },
        ops: None,
        mr_local: mr_mode & FI_MR_LOCAL != 0 || mode & FI_LOCAL_MR != 0,
        unknown_descs: AtomicU64::new(0),
        reg_calls: AtomicUsize::new(0),
        close_calls: AtomicUsize::new(0),
        internal,
        api_version,
        stats,
        internal_regs: crate::tally::Tally::new(),
        async_reg: AtomicBool::new(false),
    });
    let owner = &*hook as *const DomainHook as usize;
    // SAFETY: both are the provider's ops tables.
    unsafe {
        hook.fid_ops = TableCopy::new(orig_fid_ops as *const c_void, size_of::<fi_ops>(), owner);
        if !orig_mr.is_null() {
            // A domain libfabric opened itself gets entries that count its
            // registrations and forward them without a call into Rust: they
            // find the provider's table and the count after the owner word.
            let extra = [orig_mr as usize, hook.internal_regs.shards() as usize];
            hook.mr_ops = Some(TableCopy::with_extra(
                orig_mr as *const c_void,
                size_of::<fi_ops_mr>(),
                owner,
                if internal { &extra } else { &[] },
            ));
        }
        if datapath_off.is_none() && !orig_ops.is_null() {
            let mut t =
                TableCopy::new(orig_ops as *const c_void, size_of::<fi_ops_domain>(), owner);
            super::ep::patch_domain_ops(&mut t);
            hook.ops = Some(t);
        }
    }
    hook.fid_ops.set(
        offset_of!(fi_ops, close),
        oxshim_tr_domain_close as *const () as usize,
    );
    hook.fid_ops
        .set(offset_of!(fi_ops, bind), domain_bind as *const () as usize);
    if let Some(t) = hook.mr_ops.as_mut() {
        super::mr::patch_mr_ops(t, internal);
    }
    register_hook(hook.fid_ops.ptr::<fi_ops>() as usize, owner);
    // SAFETY: the copies live as long as the hook, which is never freed.
    unsafe { install_domain(&hook) };
    st.domains.push(hook);
}

/// # Safety
/// `h.domain` is open.
unsafe fn install_domain(h: &DomainHook) {
    // SAFETY: per the contract.
    unsafe {
        (*h.domain).fid.ops = h.fid_ops.ptr();
        if let Some(t) = &h.mr_ops {
            (*h.domain).mr = t.ptr();
        }
        if let Some(t) = &h.ops {
            (*h.domain).ops = t.ptr();
        }
    }
}

/// Why the data-path checks are off on a domain (None: they are on).
fn datapath_off(internal: bool, provider: &str, ep_type: u32, threading: u32) -> Option<String> {
    static LOGGED: std::sync::Once = std::sync::Once::new();
    if internal {
        return Some("libfabric's own domain".into());
    }
    if !*DATAPATH {
        return Some("OXSHIM_DATAPATH=0".into());
    }
    if provider == "tcp"
        && ep_type == fi_ep_type::FI_EP_RDM as u32
        && threading == fi_threading::FI_THREAD_COMPLETION as u32
    {
        let why = "tcp opens a multiplexed domain for FI_EP_RDM with FI_THREAD_COMPLETION and \
                   compares domain->ops with its own table, which the shim therefore leaves alone";
        LOGGED.call_once(|| eprintln!("oxshim: data-path checks off for a tcp domain: {why}"));
        return Some(why.into());
    }
    None
}

/// `OXSHIM_DATAPATH=0` turns the data-path checks off (no endpoint is
/// hooked, `domain->ops` is left alone).
pub(crate) static DATAPATH: Lazy<bool> =
    Lazy::new(|| std::env::var("OXSHIM_DATAPATH").map_or(true, |v| v != "0"));

/// domain->fid.ops->close: lists the MRs still open, restores the
/// provider's tables, forwards, and passes the provider's answer back.
///
/// # Safety
/// `fid` is a domain hooked by the shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxshim_rs_domain_close(ra: *mut c_void, fid: *mut fid) -> c_int {
    guard(|| {
        let dom = fid as *mut fid_domain;
        // SAFETY: per the contract.
        let Some(h) = (unsafe { domain_hook(dom) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static.
        let Some(close) = (unsafe { (*h.orig_fid_ops).close }) else {
            return -FI_ENOSYS;
        };
        let live: Vec<usize> = {
            let mut st = state();
            let live = st.report.domains[h.stats].live.clone();
            if !live.is_empty() && !h.internal {
                let list = super::mr::describe_list(&live);
                let what = format!("fi_close(domain) with {} live MRs: {list}", live.len());
                st.report
                    .finding(Kind::DomainCloseLive, ra as usize, h.stats, None, what);
            }
            live
        };
        // SAFETY: restore, forward, reinstall if the provider keeps it.
        let rc = unsafe {
            (*dom).mr = h.orig_mr;
            (*dom).fid.ops = h.orig_fid_ops;
            if h.ops.is_some() {
                (*dom).ops = h.orig_ops;
            }
            let rc = close(fid);
            if rc != 0 {
                install_domain(h);
            }
            rc
        };
        if rc == 0 {
            state().report.domains[h.stats].closed = true;
            super::mr::orphan(&live);
        }
        rc
    })
}

/// domain->fid.ops->bind: forwarded; an EQ bound with FI_REG_MR makes the
/// domain's registrations complete by event ([`super::eq`]).
///
/// # Safety
/// As fi_domain_bind on a domain the shim hooked.
unsafe extern "C" fn domain_bind(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { domain_hook(fid as *const fid_domain) }) else {
            return -FI_EINVAL;
        };
        // SAFETY: the provider's table is static; forwarded as received.
        let rc = unsafe {
            match (*h.orig_fid_ops).bind {
                Some(f) => f(fid, bfid, flags),
                None => return -FI_ENOSYS,
            }
        };
        if rc == 0 && flags & FI_REG_MR != 0 {
            h.async_reg.store(true, Ordering::Release);
        }
        rc
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooked_tables_are_found_and_a_reused_address_takes_the_entry_over() {
        // Addresses no real table has (the test's own), spread and packed.
        let base = 0x7000_0000_0000usize;
        for i in 0..300 {
            register_hook(base + i * 64, 1000 + i);
        }
        for i in 0..300 {
            assert_eq!(find_table(base + i * 64), Some(1000 + i));
        }
        assert_eq!(find_table(base + 300 * 64), None);
        register_hook(base + 5 * 64, 77);
        assert_eq!(find_table(base + 5 * 64), Some(77));
        assert_eq!(find_table(base + 6 * 64), Some(1006));
    }

    #[test]
    fn datapath_off_where_tcp_compares_domain_ops() {
        let rdm = fi_ep_type::FI_EP_RDM as u32;
        let msg = fi_ep_type::FI_EP_MSG as u32;
        let completion = fi_threading::FI_THREAD_COMPLETION as u32;
        let domain = fi_threading::FI_THREAD_DOMAIN as u32;
        assert!(datapath_off(false, "tcp", rdm, completion).is_some());
        assert!(datapath_off(false, "tcp", rdm, domain).is_none());
        assert!(datapath_off(false, "tcp", msg, completion).is_none());
        assert!(datapath_off(false, "tcp;ofi_rxm", rdm, completion).is_none());
        assert!(datapath_off(false, "oxshm", rdm, completion).is_none());
        assert!(datapath_off(true, "oxshm", rdm, domain).is_some());
    }
}
