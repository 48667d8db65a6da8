//! oxshm domains (`fi_domain`): the registration scope, and the parent of
//! endpoints, CQs, counters and AVs (the data-path objects come later).

use super::eq::Eq;
use super::fabric::Fabric;
use super::mr;
use super::object::{from_fid, nosys, slot, Header, Object, TAG_DOMAIN};
use crate::abi::domain::*;
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use crate::mr::{Config, Registry};
use crate::prov::info::MR_BASIC_MAP;
use libc::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

#[repr(C)]
pub struct Domain {
    pub fid: fid_domain,
    pub hdr: Header,
    fabric: *const Fabric,
    /// API version the fabric was opened with.
    pub api_version: u32,
    /// The mr_mode in force, with FI_MR_BASIC spelled out as its bits.
    pub mr_mode: i32,
    pub mr_iov_limit: usize,
    pub registry: Registry,
    /// The MR objects, one per engine slot.
    pub mrs: mr::MrPool,
    /// Opened with FI_HMEM: iface/device are read and HMEM flags allowed.
    pub hmem: bool,
    /// Opened with `auth_key_size == FI_AV_AUTH_KEY`.
    pub av_auth_key: bool,
    /// The domain's authorization key (used when a registration has none).
    pub auth_key: Option<Vec<u8>>,
    /// Opened with FI_THREAD_DOMAIN (and `FI_OXSHM_SERIAL` not 0): the
    /// application's thread takes the per-message locks of the domain's
    /// endpoints and CQs without locked instructions while no progress
    /// thread is busy ([`super::lock::Serial`]).
    pub serial: Option<std::sync::Arc<super::lock::Serial>>,
    /// The registry's digest of `auth_key`, computed once.
    pub auth_digest: Option<u64>,
    /// What every registration's flags start from, given `mr_mode`
    /// (FI_MR_VIRT_ADDR, FI_MR_ENDPOINT).
    pub reg_flags: crate::mr::RegFlags,
    /// Registrations refused before they reached the engine.
    failures: AtomicU64,
    /// EQ bound with fi_domain_bind, and its flags.
    eq: Mutex<Option<(*const Eq, u64)>>,
    /// The bound EQ when its flags include FI_REG_MR (read on every
    /// registration, so kept apart from the mutex).
    reg_mr: AtomicPtr<Eq>,
    /// fi_mr_bind bindings by MR (engine handle: a key reused by a later
    /// registration is another entry), and how many MRs have any (so that
    /// closing an unbound MR takes no lock).
    bindings: Mutex<std::collections::HashMap<crate::mr::Handle, Vec<mr::Bound>>>,
    bound_mrs: std::sync::atomic::AtomicUsize,
    /// Remote accesses verified and not finished (see `xfer.rs`): a region
    /// close waits for them.
    pub active: std::sync::atomic::AtomicUsize,
    /// The transports of this domain's enabled endpoints, which application
    /// calls on its CQs and counters drive.
    xfers: std::sync::RwLock<Vec<std::sync::Arc<super::xfer::Xfer>>>,
    /// `xfers.len()`, read without the lock.
    n_xfers: std::sync::atomic::AtomicUsize,
    /// A copy of `xfers`, written with it under its write lock, that the
    /// application's thread of a serialized domain reads inside a
    /// [`super::lock::Section`] instead of taking the read lock (two
    /// locked instructions on every CQ or counter poll): the list changes
    /// only in fi_enable and fi_close of the domain's endpoints, calls the
    /// application serializes with its polls (FI_THREAD_DOMAIN).
    xfers_serial: std::cell::UnsafeCell<Vec<std::sync::Arc<super::xfer::Xfer>>>,
    /// Pinned mode (FI_OXSHM_PIN): the registration cache and each MR's
    /// pinnings; None when registrations are not pinned.
    pub pins: Option<super::pin::DomainPins>,
    /// The memfd holding the slots of the first regions, which initiators
    /// check direct RMA against (`direct.rs`). Declared after `registry`,
    /// which uses its memory: dropped after it.
    pub table: Option<super::direct::Table>,
}

// SAFETY: #[repr(C)] with fid_domain (which starts with struct fid) first.
unsafe impl Object for Domain {
    const TAG: u64 = TAG_DOMAIN;
    const FCLASS: usize = FI_CLASS_DOMAIN as usize;
    const NAME: &'static str = "domain";
    fn header(&self) -> &Header {
        &self.hdr
    }
    fn fi_ops() -> *mut fi_ops {
        &FI_OPS as *const fi_ops as *mut fi_ops
    }
}

static FI_OPS: fi_ops = fi_ops {
    size: std::mem::size_of::<fi_ops>(),
    close: Some(close),
    bind: Some(bind),
    control: Some(control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

static OPS_DOMAIN: fi_ops_domain = fi_ops_domain {
    size: std::mem::size_of::<fi_ops_domain>(),
    av_open: Some(super::av::open),
    cq_open: Some(super::cq::open),
    endpoint: Some(super::ep::endpoint),
    scalable_ep: Some(unsupported::scalable_ep),
    cntr_open: Some(super::cntr::open),
    poll_open: Some(unsupported::poll_open),
    stx_ctx: Some(unsupported::stx_ctx),
    srx_ctx: Some(unsupported::srx_ctx),
    query_atomic: Some(query_atomic),
    query_collective: Some(unsupported::query_collective),
    endpoint2: Some(super::ep::endpoint2),
    xpu_ctx: Some(unsupported::xpu_ctx),
};

static OPS_MR: fi_ops_mr = fi_ops_mr {
    size: std::mem::size_of::<fi_ops_mr>(),
    reg: Some(mr::reg),
    regv: Some(mr::regv),
    regattr: Some(mr::regattr),
};

/// Opens a domain on `fab` for `fi_domain`.
///
/// # Safety
/// `info` points to a valid `fi_info` (current layout).
pub unsafe fn open(
    fab: &Fabric,
    info: *const fi_info,
    context: *mut c_void,
) -> Result<*mut fid_domain> {
    // SAFETY: per the function contract.
    let (attr, caps) = unsafe { ((*info).domain_attr, (*info).caps) };
    let mut hmem = caps & FI_HMEM != 0;
    // SAFETY: threading is in every layout of a non-NULL domain_attr.
    let threading = if attr.is_null() {
        0
    } else {
        unsafe { (*attr).threading }
    };
    let serial = serialized(threading).then(|| {
        crate::ox_log!(
            Info,
            Domain,
            super::NAME,
            "FI_THREAD_DOMAIN: the application's thread takes the domain's locks without locked instructions while no progress thread is busy"
        );
        Default::default()
    });
    let mut av_auth_key = false;
    let mut auth_key = None;
    let (mut mr_mode, iov_limit) = if attr.is_null() {
        (0, super::info::MR_IOV_LIMIT)
    } else {
        // Fields the caller's API version did not have are not read: the
        // domain caps, mode and auth key arrived in 1.5, mr_iov_limit with
        // them (as in the ABI 1.1 layout).
        let v15 = fab.api_version >= crate::prov::info::version(1, 5);
        // SAFETY: a non-NULL domain_attr of a valid fi_info. Each field is
        // read through the raw pointer (no reference to the whole struct),
        // and only if the caller's API version has it.
        let (name, mr_mode) = unsafe { ((*attr).name, (*attr).mr_mode) };
        if !name.is_null() {
            // SAFETY: name is a NUL-terminated string.
            let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
            if name != super::NAME {
                crate::ox_log!(Warn, Domain, super::NAME, "no domain named {name}");
                return Err(Error::NODATA);
            }
        }
        if !v15 {
            (mr_mode, super::info::MR_IOV_LIMIT)
        } else {
            // SAFETY: these fields exist from API 1.5.
            let (dcaps, key, key_size, iov_limit) = unsafe {
                (
                    (*attr).caps,
                    (*attr).auth_key,
                    (*attr).auth_key_size,
                    (*attr).mr_iov_limit,
                )
            };
            hmem |= dcaps & FI_HMEM != 0;
            if key_size == FI_AV_AUTH_KEY {
                av_auth_key = true;
            } else if key_size > 0 && !key.is_null() {
                // SAFETY: auth_key holds auth_key_size bytes (fi_domain(3)).
                auth_key = Some(unsafe { std::slice::from_raw_parts(key, key_size) }.to_vec());
            }
            let limit = if iov_limit == 0 {
                super::info::MR_IOV_LIMIT
            } else {
                iov_limit.min(super::info::MR_IOV_LIMIT)
            };
            (mr_mode, limit)
        }
    };
    // The legacy modes spelled out; the FI_LOCAL_MR mode bit stands for
    // FI_MR_LOCAL with either.
    // SAFETY: per the function contract.
    let local = if unsafe { (*info).mode } & FI_LOCAL_MR != 0 {
        FI_MR_LOCAL
    } else {
        0
    };
    if mr_mode == FI_MR_BASIC {
        mr_mode = MR_BASIC_MAP | local;
    } else if mr_mode == FI_MR_SCALABLE {
        mr_mode = local;
    }
    let required = super::info::mr_required();
    if required & !mr_mode != 0 {
        crate::ox_log!(
            Warn,
            Domain,
            super::NAME,
            "domain requires mr_mode bits 0x{:x} that info->domain_attr->mr_mode lacks",
            required & !mr_mode
        );
        return Err(Error::INVAL);
    }
    let cfg = Config {
        key_size: super::info::MR_KEY_SIZE,
        prov_keys: mr_mode & FI_MR_PROV_KEY != 0,
        // Provider keys' secret: random, never zero.
        secret: Some(super::random_u64() | 1),
        max_regions: super::info::MR_CNT,
        max_iovs: iov_limit,
    };
    // Direct RMA (direct.rs) needs provider keys, which an
    // initiator can decode, and regions reachable through any endpoint.
    let table = (*super::xfer::DIRECT && cfg.prov_keys && mr_mode & FI_MR_ENDPOINT == 0)
        .then(super::direct::Table::create)
        .flatten();
    let registry = match &table {
        Some(t) => {
            let (mem, bytes) = t.slots();
            // SAFETY: the table's slot memory is zeroed, 64-byte aligned
            // (page-aligned), written only by this registry, and mapped
            // until the table drops, after the registry (field order).
            let r = unsafe { Registry::with_config_in(cfg, mem, bytes) }?;
            let (key_size, secret) = r.key_params();
            t.publish(key_size, secret);
            r
        }
        None => Registry::with_config(cfg)?,
    };
    let auth_digest = auth_key.as_deref().map(|k| registry.auth_digest(k));
    let mut reg_flags = crate::mr::RegFlags::empty();
    if mr_mode & FI_MR_VIRT_ADDR != 0 {
        reg_flags |= crate::mr::RegFlags::VIRT_ADDR;
    }
    if mr_mode & FI_MR_ENDPOINT != 0 {
        reg_flags |= crate::mr::RegFlags::DISABLED | crate::mr::RegFlags::NEEDS_EP;
    }
    fab.hdr.hold();
    let d = Box::new(Domain {
        fid: fid_domain {
            fid: fid {
                fclass: FI_CLASS_DOMAIN as usize,
                context,
                ops: Domain::fi_ops(),
            },
            ops: &OPS_DOMAIN as *const fi_ops_domain as *mut fi_ops_domain,
            mr: &OPS_MR as *const fi_ops_mr as *mut fi_ops_mr,
        },
        hdr: Header::new(TAG_DOMAIN),
        fabric: fab,
        api_version: fab.api_version,
        mr_mode,
        mr_iov_limit: iov_limit,
        registry,
        mrs: mr::MrPool::new(super::info::MR_CNT),
        hmem,
        av_auth_key,
        auth_key,
        serial,
        auth_digest,
        reg_flags,
        failures: AtomicU64::new(0),
        eq: Mutex::new(None),
        reg_mr: AtomicPtr::new(std::ptr::null_mut()),
        bindings: Mutex::new(std::collections::HashMap::new()),
        bound_mrs: std::sync::atomic::AtomicUsize::new(0),
        active: std::sync::atomic::AtomicUsize::new(0),
        xfers: std::sync::RwLock::new(Vec::new()),
        n_xfers: std::sync::atomic::AtomicUsize::new(0),
        xfers_serial: std::cell::UnsafeCell::new(Vec::new()),
        pins: super::pin::DomainPins::open(super::info::MR_CNT),
        table,
    });
    Ok(Box::into_raw(d) as *mut fid_domain)
}

/// Whether a domain opened with `threading` is serialized by the
/// application ([`super::lock::Serial`]): FI_THREAD_DOMAIN, where the
/// asymmetric fence is available, unless `FI_OXSHM_SERIAL=0`.
fn serialized(threading: u32) -> bool {
    static ON: once_cell::sync::Lazy<bool> =
        once_cell::sync::Lazy::new(|| std::env::var("FI_OXSHM_SERIAL").map_or(true, |v| v != "0"));
    threading == crate::abi::fabric::fi_threading::FI_THREAD_DOMAIN as u32
        && *ON
        && super::lock::Serial::available()
}

impl Domain {
    /// Records an fi_mr_bind binding of the MR `h`.
    pub fn add_binding(&self, h: crate::mr::Handle, b: mr::Bound) {
        let mut m = self.bindings.lock().unwrap_or_else(|e| e.into_inner());
        let list = m.entry(h).or_default();
        if list.is_empty() {
            self.bound_mrs.fetch_add(1, Ordering::AcqRel);
        }
        list.push(b);
    }

    /// Removes and returns the bindings of the MR `h`.
    #[inline]
    pub fn take_bindings(&self, h: &crate::mr::Handle) -> Vec<mr::Bound> {
        if self.bound_mrs.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        self.take_bindings_slow(h)
    }

    #[cold]
    fn take_bindings_slow(&self, h: &crate::mr::Handle) -> Vec<mr::Bound> {
        let mut m = self.bindings.lock().unwrap_or_else(|e| e.into_inner());
        match m.remove(h) {
            Some(v) => {
                self.bound_mrs.fetch_sub(1, Ordering::AcqRel);
                v
            }
            None => Vec::new(),
        }
    }

    /// Calls `f` with each counter bound to the MR `h` for `flag`
    /// (FI_REMOTE_WRITE or FI_REMOTE_READ) with fi_mr_bind.
    pub fn for_each_mr_cntr(
        &self,
        h: &crate::mr::Handle,
        flag: u64,
        mut f: impl FnMut(&super::cntr::Cntr),
    ) {
        if self.bound_mrs.load(Ordering::Acquire) == 0 {
            return;
        }
        let m = self.bindings.lock().unwrap_or_else(|e| e.into_inner());
        for b in m.get(h).into_iter().flatten() {
            if let mr::Bound::Cntr(c, flags) = b {
                if flags & flag != 0 {
                    // SAFETY: a bound counter stays live while bound.
                    f(unsafe { &**c });
                }
            }
        }
    }

    /// Whether the MR `h` is bound to the endpoint `ep` (FI_MR_ENDPOINT:
    /// such a region is reachable only through its endpoint).
    pub fn mr_bound_to(&self, h: &crate::mr::Handle, ep: *const super::ep::Ep) -> bool {
        let m = self.bindings.lock().unwrap_or_else(|e| e.into_inner());
        m.get(h)
            .into_iter()
            .flatten()
            .any(|b| matches!(b, mr::Bound::Ep(e) if std::ptr::eq(*e, ep)))
    }

    /// Waits until no remote access that verified before now is still
    /// touching memory (after a region closed).
    #[inline]
    pub fn quiesce(&self) {
        // Called after the region's close took its slot with a SeqCst CAS
        // on `seq` (Registry::close_at), and every access enters (a
        // SeqCst increment of `active`) before its verification loads
        // `seq` with SeqCst. In the single order of SeqCst operations,
        // either the access's load follows the CAS (it sees the close and
        // is refused) or its increment precedes this load, which then
        // waits for it. So a plain SeqCst load suffices here: no locked
        // instruction on the close path beyond the CAS itself.
        if self.active.load(Ordering::SeqCst) != 0 {
            self.quiesce_slow();
        }
        // Direct copies by initiators (direct.rs), by the same argument.
        if let Some(t) = &self.table {
            t.quiesce();
        }
    }

    #[cold]
    fn quiesce_slow(&self) {
        let mut spins = 0u32;
        while self.active.load(Ordering::SeqCst) != 0 {
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                // An access may be a shared copy whose initiator died: the
                // peer check (rate-limited) ends it, whichever thread runs.
                if spins % 64 == 0 {
                    // An outsider to the serialization: a region's close
                    // comes from the application, but nothing here needs
                    // its thread to be the domain's (it holds no lock).
                    let _out = self.serial.as_deref().map(super::lock::Serial::exclude);
                    let v = self.xfers.read().unwrap_or_else(|e| e.into_inner());
                    for x in v.iter() {
                        x.maybe_check_peers();
                    }
                }
                std::thread::yield_now();
            }
        }
    }

    pub fn add_xfer(&self, x: &std::sync::Arc<super::xfer::Xfer>) {
        let mut v = self.xfers.write().unwrap_or_else(|e| e.into_inner());
        v.push(std::sync::Arc::clone(x));
        self.set_serial_copy(&v);
        self.n_xfers.store(v.len(), Ordering::Release);
    }

    pub fn remove_xfer(&self, x: &std::sync::Arc<super::xfer::Xfer>) {
        let mut v = self.xfers.write().unwrap_or_else(|e| e.into_inner());
        v.retain(|y| !std::sync::Arc::ptr_eq(x, y));
        self.set_serial_copy(&v);
        self.n_xfers.store(v.len(), Ordering::Release);
    }

    /// Updates `xfers_serial` (the caller holds the write lock).
    fn set_serial_copy(&self, v: &[std::sync::Arc<super::xfer::Xfer>]) {
        if self.serial.is_none() {
            return;
        }
        // SAFETY: the only readers without the write lock are sections of
        // the application's thread ([`Domain::progress_as`]), which this
        // call (fi_enable or fi_close of an endpoint, made by that thread
        // or serialized with it by the application's promise) does not
        // overlap.
        unsafe { *self.xfers_serial.get() = v.to_vec() };
    }

    /// Calls `f` on the transport of each enabled endpoint of the domain
    /// while it returns true; whether all did.
    pub fn all_xfers(&self, mut f: impl FnMut(&super::xfer::Xfer) -> bool) -> bool {
        if self.n_xfers.load(Ordering::Acquire) == 0 {
            return true;
        }
        let v = self.xfers.read().unwrap_or_else(|e| e.into_inner());
        v.iter().all(|x| f(x))
    }

    /// Progress driven by an application call on one of the domain's CQs
    /// or counters that returns at once.
    pub fn progress(&self) {
        self.progress_as(true);
    }

    /// Progress before the application blocks with nothing armed to wake
    /// it (fi_trywait on an object without a wait fd): the progress
    /// threads serve the endpoints from now on.
    pub fn progress_before_wait(&self) {
        self.progress_as(false);
    }

    fn progress_as(&self, polling: bool) {
        if self.n_xfers.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(_s) = self
            .serial
            .as_deref()
            .and_then(super::lock::Serial::section)
        {
            // SAFETY: written only in calls that the application
            // serializes with this one ([`Domain::set_serial_copy`]).
            let v = unsafe { &*self.xfers_serial.get() };
            for x in v.iter() {
                x.progress_app(polling);
            }
            return;
        }
        let v = self.xfers.read().unwrap_or_else(|e| e.into_inner());
        for x in v.iter() {
            x.progress_app(polling);
        }
    }

    /// Counts a registration refused before it reached the engine.
    pub fn count_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes the domain's registration statistics to the log (at close,
    /// with FI_OXSHM_STATS=1).
    fn log_stats(&self) {
        let s = self.registry.stats();
        let msg = format!(
            "domain statistics: {} live MRs ({} bytes), {} registrations, {} closes, {} refused, {} remote accesses denied, {} mapped raw keys, {} bytes of engine state",
            s.live_regions,
            s.live_bytes,
            s.registrations,
            s.closes,
            s.failures + self.failures.load(Ordering::Relaxed),
            s.denied,
            s.mapped_keys,
            s.engine_bytes
        );
        crate::log::write_line(
            super::NAME,
            crate::log::Level::Info,
            "domain",
            "fi_close",
            line!(),
            &msg,
        );
        if let Some(p) = &self.pins {
            let c = p.cache.stats();
            let l = p.cache.limits();
            let msg = format!(
                "registration cache ({} monitor, max_count {}, max_size {}): {} hits, {} misses, {} evictions, {} invalidations, {} pinned regions ({} bytes)",
                super::monitor::kind().name(),
                l.max_count,
                if l.max_size == u64::MAX { "unlimited".to_string() } else { l.max_size.to_string() },
                c.hits,
                c.misses,
                c.evictions,
                c.invalidations,
                c.pinned_regions,
                c.pinned_bytes
            );
            crate::log::write_line(
                super::NAME,
                crate::log::Level::Info,
                "domain",
                "fi_close",
                line!(),
                &msg,
            );
        }
    }

    /// The EQ that asynchronous registrations report to (FI_REG_MR binding).
    pub fn reg_mr_eq(&self) -> Option<&Eq> {
        let p = self.reg_mr.load(Ordering::Acquire);
        // SAFETY: a bound EQ cannot close before the domain releases it.
        (!p.is_null()).then(|| unsafe { &*p })
    }
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let d = unsafe { from_fid::<Domain>(f) }?;
        if !d.registry.is_empty() {
            let live = d.registry.live_regions();
            crate::ox_log!(
                Warn,
                Domain,
                super::NAME,
                "cannot close domain: {} memory region(s) still open",
                live.len()
            );
            for r in live.iter().take(16) {
                crate::ox_log!(
                    Warn,
                    Domain,
                    super::NAME,
                    "  open MR: key 0x{:x}, address 0x{:x}, {} bytes",
                    r.key,
                    d.registry
                        .handle(r.key)
                        .and_then(|h| d.registry.iovs(&h))
                        .ok()
                        .and_then(|v| v.first().map(|iov| iov.0))
                        .unwrap_or(r.base_addr),
                    r.len
                );
            }
            if live.len() > 16 {
                crate::ox_log!(
                    Warn,
                    Domain,
                    super::NAME,
                    "  ... and {} more",
                    live.len() - 16
                );
            }
            return Err(Error::BUSY);
        }
        let mapped = d.registry.mapped_count();
        if mapped != 0 {
            crate::ox_log!(Warn, Domain, super::NAME, "cannot close domain: {mapped} raw key(s) mapped with fi_mr_map_raw are not unmapped");
            return Err(Error::BUSY);
        }
        d.hdr.begin_close("domain")?;
        if stats_enabled() {
            d.log_stats();
        }
        if let Some(p) = &d.pins {
            p.close();
        }
        if let Some((eq, _)) = d.eq.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: the EQ is held by this binding, so it is still live.
            unsafe { (*eq).hdr.release() };
        }
        // SAFETY: the fabric outlives its domains (it cannot close while held).
        unsafe { (*d.fabric).hdr.release() };
        // SAFETY: allocated by `open`; nothing depends on it any more.
        drop(unsafe { Box::from_raw(f as *mut Domain) });
        Ok(0)
    })
}

fn stats_enabled() -> bool {
    matches!(
        crate::param::get(Some(super::NAME), "stats"),
        Ok((_, crate::param::Value::Bool(true)))
    )
}

unsafe extern "C" fn control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    slot("fi_control", || {
        // SAFETY: from_fid checks the object.
        let d = unsafe { from_fid::<Domain>(f) }?;
        match command {
            c if c == FI_MAP_RAW_MR as c_int => {
                crate::boundary::nonnull(arg, "fi_mr_map_raw", "map")?;
                // SAFETY: FI_MAP_RAW_MR's argument is a struct fi_mr_map_raw.
                unsafe { mr::map_raw(d, &*(arg as *const fi_mr_map_raw)) }
            }
            c if c == FI_UNMAP_KEY as c_int => {
                crate::boundary::nonnull(arg, "fi_mr_unmap_key", "key")?;
                // SAFETY: FI_UNMAP_KEY's argument is a uint64_t *.
                mr::unmap_key(d, unsafe { *(arg as *const u64) })
            }
            other => {
                crate::ox_log!(
                    Warn,
                    Domain,
                    super::NAME,
                    "control command {other} not supported on a domain"
                );
                Err(Error::NOSYS)
            }
        }
    })
}

unsafe extern "C" fn bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    slot("fi_domain_bind", || {
        // SAFETY: from_fid checks the objects.
        let d = unsafe { from_fid::<Domain>(f) }?;
        let eq = unsafe { from_fid::<Eq>(bfid) }?;
        if flags & !FI_REG_MR != 0 {
            crate::ox_log!(
                Warn,
                Domain,
                super::NAME,
                "fi_domain_bind: unsupported flags 0x{:x}",
                flags & !FI_REG_MR
            );
            return Err(Error::BADFLAGS);
        }
        let mut g = d.eq.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_some() {
            crate::ox_log!(
                Warn,
                Domain,
                super::NAME,
                "domain is already bound to an event queue"
            );
            return Err(Error::BUSY);
        }
        eq.hdr.hold();
        *g = Some((eq as *const Eq, flags));
        if flags & FI_REG_MR != 0 {
            d.reg_mr
                .store(eq as *const Eq as *mut Eq, Ordering::Release);
        }
        Ok(0)
    })
}

/// The `fi_ops_domain.query_atomic` slot (`fi_query_atomic`): whether
/// oxshm's endpoints execute `op` on `datatype`, as fi_atomicvalid (flags
/// 0), fi_fetch_atomicvalid (FI_FETCH_ATOMIC) or fi_compare_atomicvalid
/// (FI_COMPARE_ATOMIC) would answer; on success `*attr` gets the element
/// size and the most elements of one operation. A NULL `attr` asks only
/// whether the pair is supported, as upstream's providers allow.
///
/// Returns 0, -FI_EOPNOTSUPP for an unsupported pair or for FI_TAGGED
/// (no atomics to tagged receive buffers), -FI_EBADFLAGS for both kind
/// flags or an unknown flag, -FI_EINVAL for a foreign domain.
unsafe extern "C" fn query_atomic(
    d: *mut fid_domain,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    attr: *mut crate::abi::atomic::fi_atomic_attr,
    flags: u64,
) -> c_int {
    use super::atomics::Kind;
    use crate::abi::atomic::{FI_COMPARE_ATOMIC, FI_FETCH_ATOMIC};
    slot("fi_query_atomic", || {
        // SAFETY: from_fid checks the object.
        unsafe { from_fid::<Domain>(d as *const fid) }?;
        let refuse = |why: &str, e: Error| {
            crate::ox_log!(Info, Domain, super::NAME, "fi_query_atomic: {why}");
            Err(e)
        };
        if flags & FI_TAGGED != 0 {
            return refuse("no atomics to tagged buffers (FI_TAGGED)", Error::OPNOTSUPP);
        }
        let kind = match flags {
            0 => Kind::Base,
            FI_FETCH_ATOMIC => Kind::Fetch,
            FI_COMPARE_ATOMIC => Kind::Compare,
            f if f == FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC => {
                return refuse("FI_FETCH_ATOMIC with FI_COMPARE_ATOMIC", Error::BADFLAGS)
            }
            f => return refuse(&format!("unknown flags 0x{f:x}"), Error::BADFLAGS),
        };
        let (Some(size), Some(count)) = (
            super::atomics::elem_size(datatype),
            super::ops::max_count(kind, datatype, op),
        ) else {
            return refuse(
                &format!("datatype {datatype} with operation {op} is not supported"),
                Error::OPNOTSUPP,
            );
        };
        if !attr.is_null() {
            // SAFETY: a non-NULL attr points to the caller's fi_atomic_attr.
            unsafe { *attr = crate::abi::atomic::fi_atomic_attr { count, size } };
        }
        Ok(0)
    })
}

/// Domain slots for objects that arrive with the oxshm data path: each
/// validates its domain and answers -FI_ENOSYS with a log line.
mod unsupported {
    use super::*;
    use crate::abi::endpoint::{fid_ep, fid_stx};
    use crate::abi::eq::{fi_poll_attr, fid_poll};
    use crate::abi::xpu::{fi_xpu_attr, fid_xpu_ctx};

    fn nosys(domain: *mut fid_domain, what: &str) -> c_int {
        slot(what, || {
            // SAFETY: from_fid checks the object.
            unsafe { from_fid::<Domain>(domain as *const fid) }?;
            crate::ox_log!(
                Warn,
                Domain,
                super::super::NAME,
                "{what}: not supported by oxshm yet"
            );
            Err(Error::NOSYS)
        })
    }

    pub unsafe extern "C" fn scalable_ep(
        d: *mut fid_domain,
        _: *mut fi_info,
        _: *mut *mut fid_ep,
        _: *mut c_void,
    ) -> c_int {
        nosys(d, "fi_scalable_ep")
    }
    pub unsafe extern "C" fn poll_open(
        d: *mut fid_domain,
        _: *mut fi_poll_attr,
        _: *mut *mut fid_poll,
    ) -> c_int {
        nosys(d, "fi_poll_open")
    }
    pub unsafe extern "C" fn stx_ctx(
        d: *mut fid_domain,
        _: *mut fi_tx_attr,
        _: *mut *mut fid_stx,
        _: *mut c_void,
    ) -> c_int {
        nosys(d, "fi_stx_context")
    }
    pub unsafe extern "C" fn srx_ctx(
        d: *mut fid_domain,
        _: *mut fi_rx_attr,
        _: *mut *mut fid_ep,
        _: *mut c_void,
    ) -> c_int {
        nosys(d, "fi_srx_context")
    }
    pub unsafe extern "C" fn query_collective(
        d: *mut fid_domain,
        _: crate::abi::domain::fi_collective_op_raw,
        _: *mut crate::abi::collective::fi_collective_attr,
        _: u64,
    ) -> c_int {
        nosys(d, "fi_query_collective")
    }
    pub unsafe extern "C" fn xpu_ctx(
        d: *mut fid_domain,
        _: *mut fi_xpu_attr,
        _: *mut *mut fid_xpu_ctx,
        _: *mut c_void,
    ) -> c_int {
        nosys(d, "fi_xpu_ctx")
    }
}

#[cfg(test)]
mod tests {
    use super::super::ep::tests::Res;
    use super::*;
    use crate::abi::atomic::{fi_atomic_attr, FI_COMPARE_ATOMIC, FI_FETCH_ATOMIC};
    use std::ptr::null_mut;

    /// fi_query_atomic on `d`: the return code and what it wrote.
    fn query(
        d: *mut fid_domain,
        dt: fi_datatype,
        op: fi_op,
        flags: u64,
    ) -> (c_int, fi_atomic_attr) {
        let mut attr = fi_atomic_attr {
            count: 12345,
            size: 678,
        };
        // SAFETY: attr is a live fi_atomic_attr; d is checked by the slot.
        let rc = unsafe { query_atomic(d, dt as u32, op as u32, &mut attr, flags) };
        (rc, attr)
    }

    #[test]
    fn query_atomic_answers_as_the_valid_calls() {
        use fi_datatype::*;
        use fi_op::*;
        let r = Res::new();
        let d = r.domain;
        let attr = |count, size| fi_atomic_attr { count, size };
        let untouched = attr(12345, 678);
        let ok = |dt, op, flags, count, size| {
            assert_eq!(
                query(d, dt, op, flags),
                (0, attr(count, size)),
                "{dt:?} {op:?} 0x{flags:x}"
            );
        };
        ok(FI_UINT64, FI_SUM, 0, 32, 8);
        ok(FI_INT128, FI_SUM, 0, 16, 16);
        ok(FI_UINT128, FI_MIN, 0, 16, 16);
        ok(FI_INT128, FI_BXOR, FI_FETCH_ATOMIC, 16, 16);
        ok(FI_UINT128, FI_ATOMIC_READ, FI_FETCH_ATOMIC, 16, 16);
        ok(FI_INT128, FI_CSWAP_LT, FI_COMPARE_ATOMIC, 16, 16);
        ok(FI_UINT128, FI_MSWAP, FI_COMPARE_ATOMIC, 16, 16);
        ok(FI_DOUBLE_COMPLEX, FI_PROD, 0, 16, 16);
        if cfg!(target_arch = "x86_64") {
            ok(FI_LONG_DOUBLE, FI_MAX, 0, 16, 16);
            ok(FI_LONG_DOUBLE_COMPLEX, FI_CSWAP, FI_COMPARE_ATOMIC, 8, 32);
        }
        let no = |dt, op, flags, err: Error| {
            assert_eq!(
                query(d, dt, op, flags),
                (err.code(), untouched),
                "{dt:?} {op:?} 0x{flags:x}"
            );
        };
        let nope = Error::OPNOTSUPP;
        // An operation of another kind, a pair no kind has.
        no(FI_INT128, FI_ATOMIC_READ, 0, nope);
        no(FI_INT128, FI_CSWAP, FI_FETCH_ATOMIC, nope);
        no(FI_UINT128, FI_SUM, FI_COMPARE_ATOMIC, nope);
        no(FI_DOUBLE, FI_BOR, 0, nope);
        no(FI_LONG_DOUBLE, FI_MSWAP, FI_COMPARE_ATOMIC, nope);
        no(FI_FLOAT16, FI_SUM, 0, nope);
        no(FI_UINT64, FI_SUM, FI_TAGGED, nope);
        no(FI_UINT64, FI_SUM, FI_TAGGED | FI_FETCH_ATOMIC, nope);
        let both = FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC;
        no(FI_UINT64, FI_CSWAP, both, Error::BADFLAGS);
        no(FI_UINT64, FI_SUM, 1 << 40, Error::BADFLAGS);
        // A NULL attr only asks.
        // SAFETY: d is live; a NULL attr is not written.
        unsafe {
            let (dt, sum, read) = (FI_INT128 as u32, FI_SUM as u32, FI_ATOMIC_READ as u32);
            assert_eq!(query_atomic(d, dt, sum, null_mut(), 0), 0);
            assert_eq!(query_atomic(d, dt, read, null_mut(), 0), nope.code());
        }
        // Not a domain.
        assert_eq!(
            query(null_mut(), FI_UINT64, FI_SUM, 0),
            (Error::INVAL.code(), untouched)
        );
        let fabric = r.fabric as *mut fid_domain;
        assert_eq!(
            query(fabric, FI_UINT64, FI_SUM, 0),
            (Error::INVAL.code(), untouched)
        );
    }
}
