//! oxshm memory regions: the fid glue between fi_mr(3) and the registration
//! engine in `crate::mr`. Every call, mr_mode bit and flag of the manual is
//! checked here and turned into an engine [`Request`]; the engine owns keys,
//! ranges, states and sub-region links.

use super::domain::Domain;
use super::object::{from_fid, nosys, slot};
use super::{hmem, mem};
use crate::abi::domain::*;
use crate::abi::eq::{fi_eq_entry, FI_MR_COMPLETE};
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use crate::mr::{Access, Bindings, CheckedIovs, Handle, IovFault, RegFlags, Request, RAW_KEY_SIZE};
use crate::prov::info::version;
use libc::{c_int, c_void, iovec, size_t};
use std::mem::offset_of;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Registration flags of fi_mr(3) FLAGS.
pub const KNOWN_FLAGS: u64 = FI_RMA_EVENT
    | FI_RMA_PMEM
    | FI_HMEM_DEVICE_ONLY
    | FI_HMEM_HOST_ALLOC
    | FI_MR_DMABUF
    | FI_MR_SINGLE_USE
    | FI_AUTH_KEY;

/// Flags only usable on domains opened with FI_HMEM.
const HMEM_FLAGS: u64 = FI_HMEM_DEVICE_ONLY | FI_HMEM_HOST_ALLOC | FI_MR_DMABUF;

/// Bytes of the descriptor fi_mr_get_xpu_desc returns: the region's key.
pub const XPU_DESC_SIZE: usize = 8;

/// An oxshm MR: 48 bytes, in its domain's [`MrPool`], one per engine slot.
/// MRs are never freed before their domain, so a closed MR (fclass set to
/// FI_CLASS_UNSPEC) stays readable and closing it again is refused instead
/// of touching freed memory.
#[repr(C)]
pub struct Mr {
    pub fid: fid_mr,
    /// The engine slot's generation at registration; the slot is the
    /// entry's place in the pool. With them the region is found without a
    /// key lookup ([`Mr::handle`]).
    gen: u64,
}

/// Bytes of one pool chunk; chunks are aligned to their size, so an MR's
/// chunk (and through its header, its domain) is found from its address.
const CHUNK_BYTES: usize = 256 * 1024;
/// Bytes before the first MR of a chunk (the [`ChunkHead`]).
const CHUNK_HEAD: usize = 64;
/// MRs per chunk.
const PER_CHUNK: usize = (CHUNK_BYTES - CHUNK_HEAD) / std::mem::size_of::<Mr>();

#[repr(C)]
struct ChunkHead {
    domain: *const Domain,
    /// The engine slot of the chunk's first entry.
    first: u32,
}

/// The MR objects of one domain, indexed by engine slot: no allocation per
/// registration, O(1) from slot to object and from object to domain.
pub struct MrPool {
    /// Chunk `c`: NULL or a chunk from [`map_chunk`] (the pool owns it),
    /// published once by compare-and-swap.
    chunks: Box<[AtomicPtr<u8>]>,
}

impl MrPool {
    pub fn new(max_regions: usize) -> MrPool {
        let n = max_regions.div_ceil(PER_CHUNK);
        MrPool {
            chunks: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
        }
    }

    /// The object of engine slot `slot` of domain `d`.
    #[inline]
    fn get(&self, d: &Domain, slot: u32) -> Result<*mut Mr> {
        let (c, i) = (slot as usize / PER_CHUNK, slot as usize % PER_CHUNK);
        let cell = self.chunks.get(c).ok_or(Error::NOSPC)?;
        let mut chunk = cell.load(Ordering::Acquire);
        if chunk.is_null() {
            chunk = Self::add_chunk(cell, d, c)?;
        }
        // SAFETY: i < PER_CHUNK, so the entry lies inside the chunk.
        Ok(unsafe { chunk.add(CHUNK_HEAD + i * std::mem::size_of::<Mr>()) } as *mut Mr)
    }

    #[cold]
    fn add_chunk(cell: &AtomicPtr<u8>, d: &Domain, c: usize) -> Result<*mut u8> {
        // Zeroed memory is a closed MR (fclass FI_CLASS_UNSPEC).
        let Some(p) = map_chunk() else {
            crate::ox_log!(Warn, Mr, super::NAME, "out of memory for MR objects");
            return Err(Error::NOMEM);
        };
        let p = p.as_ptr();
        // SAFETY: the chunk starts with its head, and is ours until
        // published.
        unsafe {
            let head = p as *mut ChunkHead;
            (*head).domain = d;
            (*head).first = (c * PER_CHUNK) as u32;
        }
        match cell.compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(p),
            Err(won) => {
                // Another thread published this chunk first; keep its.
                unmap_chunk(p);
                Ok(won)
            }
        }
    }
}

impl Drop for MrPool {
    fn drop(&mut self) {
        for c in self.chunks.iter_mut() {
            let p = std::mem::replace(c.get_mut(), std::ptr::null_mut());
            if !p.is_null() {
                unmap_chunk(p);
            }
        }
    }
}

/// A fresh chunk: anonymous zero pages (no memory is used until an MR is
/// written there), aligned to CHUNK_BYTES by trimming a double-size mapping.
fn map_chunk() -> Option<std::ptr::NonNull<u8>> {
    let len = 2 * CHUNK_BYTES;
    // SAFETY: an anonymous private mapping; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let start = p as usize;
    let aligned = (start + CHUNK_BYTES - 1) & !(CHUNK_BYTES - 1);
    let end = aligned + CHUNK_BYTES;
    // SAFETY: unmapping the parts of our own mapping outside the chunk.
    unsafe {
        if aligned > start {
            libc::munmap(start as *mut c_void, aligned - start);
        }
        if start + len > end {
            libc::munmap(end as *mut c_void, start + len - end);
        }
    }
    std::ptr::NonNull::new(aligned as *mut u8)
}

fn unmap_chunk(p: *mut u8) {
    // SAFETY: a chunk from map_chunk, no longer referenced.
    unsafe { libc::munmap(p as *mut c_void, CHUNK_BYTES) };
}

/// Checks that `p` is a live oxshm MR.
///
/// # Safety
/// `p` is NULL or points to readable memory that starts with a `struct fid`.
unsafe fn mr_from_fid<'a>(p: *const fid) -> Result<&'a Mr> {
    if p.is_null() {
        crate::ox_log!(Warn, Mr, super::NAME, "memory region is NULL");
        return Err(Error::INVAL);
    }
    // SAFETY: p points to at least a struct fid (contract).
    let (fclass, ops) = unsafe { ((*p).fclass, (*p).ops) };
    if ops != mr_fi_ops() {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "object is not an oxshm memory region"
        );
        return Err(Error::INVAL);
    }
    if fclass != FI_CLASS_MR as usize {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "memory region is closed (or not a memory region: class {fclass})"
        );
        return Err(Error::INVAL);
    }
    // SAFETY: our ops table, so p is an Mr in some domain's pool.
    Ok(unsafe { &*(p as *const Mr) })
}

fn mr_fi_ops() -> *mut fi_ops {
    &FI_OPS as *const fi_ops as *mut fi_ops
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

impl Mr {
    #[inline]
    fn head(&self) -> &ChunkHead {
        let base = (self as *const Mr as usize) & !(CHUNK_BYTES - 1);
        // SAFETY: every Mr lives in a pool chunk, which starts with its
        // head.
        unsafe { &*(base as *const ChunkHead) }
    }

    #[inline]
    fn domain(&self) -> &Domain {
        // SAFETY: a chunk's head names its domain, and a domain cannot
        // close while it has registrations.
        unsafe { &*self.head().domain }
    }

    /// The engine slot: the entry's place in the pool.
    #[inline]
    fn slot(&self) -> u32 {
        let off = (self as *const Mr as usize) & (CHUNK_BYTES - 1);
        self.head().first + ((off - CHUNK_HEAD) / std::mem::size_of::<Mr>()) as u32
    }

    /// The live region this MR registered (`INVAL` once closed).
    #[inline]
    fn handle(&self) -> Result<Handle> {
        self.domain().registry.handle_at(self.slot(), self.gen)
    }

    /// The region's key, for log lines (also under FI_MR_RAW, where
    /// `fid.key` is FI_KEY_NOTAVAIL).
    fn key(&self) -> u64 {
        self.handle().map_or(self.fid.key, |h| h.key())
    }
}

/// Checks a local buffer's descriptor under FI_MR_LOCAL: `desc` must be
/// an MR of domain `d` (what fi_mr_desc returned) whose registration covers
/// `[addr, addr + len)` with the local right `access` (FI_SEND, FI_RECV,
/// FI_READ, FI_WRITE). Zero-length buffers need no descriptor.
///
/// # Safety
/// `desc` is NULL or a value fi_mr_desc returned (possibly of a closed MR).
pub unsafe fn check_local_desc(
    d: &Domain,
    desc: *mut c_void,
    addr: u64,
    len: u64,
    access: crate::mr::Access,
    call: &str,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    if desc.is_null() {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: FI_MR_LOCAL is in force and a local buffer has no descriptor (fi_mr_desc)"
        );
        return Err(Error::INVAL);
    }
    // SAFETY: desc is what fi_mr_desc returned: the MR itself, which the
    // pool keeps readable after its close.
    let mr = unsafe { mr_from_fid(desc as *const fid) }.inspect_err(|_| {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: a local descriptor is not a live oxshm memory region"
        )
    })?;
    if !std::ptr::eq(mr.domain(), d) {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: a local descriptor belongs to another domain"
        );
        return Err(Error::INVAL);
    }
    let end = addr.checked_add(len).ok_or(Error::INVAL)?;
    let Some(region_access) = d.registry.local_cover(mr.slot(), mr.gen, addr, end)? else {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: local buffer 0x{addr:x}+{len} lies outside the registration of its descriptor"
        );
        return Err(Error::INVAL);
    };
    // A registration that names no local right allows them all (fi_mr(3)).
    let local = crate::mr::Access::READ
        | crate::mr::Access::WRITE
        | crate::mr::Access::SEND
        | crate::mr::Access::RECV;
    if region_access.intersects(local) && !region_access.contains(access) {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: the local buffer's registration lacks {access:?}"
        );
        return Err(Error::ACCES);
    }
    Ok(())
}

/// The authorization an application attached to a registration.
enum Auth {
    None,
    Bytes(Vec<u8>),
    /// FI_AV_AUTH_KEY domains: an address (or, with FI_AUTH_KEY, an auth-key
    /// address) in an AV.
    AvAddr(u64),
}

/// (address, length) pieces: one inline (a staged piece of a contiguous
/// buffer: the common case, allocates nothing) or a list.
pub(super) enum Iovs {
    One([(u64, u64); 1]),
    Many(Vec<(u64, u64)>),
}

/// Iov lists this long are read from C without allocating.
const FEW_IOVS: usize = 8;

impl std::ops::Deref for Iovs {
    type Target = [(u64, u64)];
    fn deref(&self) -> &[(u64, u64)] {
        match self {
            Iovs::One(a) => a,
            Iovs::Many(v) => v,
        }
    }
}

/// A registration request as read from C, before any check.
struct Input<'a> {
    iovs: &'a [(u64, u64)],
    dmabuf: Option<fi_mr_dmabuf>,
    access: u64,
    offset: u64,
    requested_key: u64,
    context: *mut c_void,
    auth: Auth,
    iface: u32,
    hmem_data: bool,
    page_size: u64,
    base_mr: *const fid_mr,
    sub_mr_cnt: usize,
    flags: u64,
    /// Whether it came through fi_mr_regattr.
    regattr: bool,
}

impl<'a> Input<'a> {
    #[inline(always)]
    fn new(
        iovs: &'a [(u64, u64)],
        access: u64,
        offset: u64,
        key: u64,
        flags: u64,
        ctx: *mut c_void,
    ) -> Input<'a> {
        Input {
            iovs,
            dmabuf: None,
            access,
            offset,
            requested_key: key,
            context: ctx,
            auth: Auth::None,
            iface: fi_hmem_iface::FI_HMEM_SYSTEM as u32,
            hmem_data: false,
            page_size: 0,
            base_mr: std::ptr::null(),
            sub_mr_cnt: 0,
            flags,
            regattr: false,
        }
    }
}

fn refuse<T>(d: &Domain, err: Error, msg: std::fmt::Arguments) -> Result<T> {
    d.count_failure();
    crate::ox_log!(Warn, Mr, super::NAME, "{msg}");
    Err(err)
}

fn check_flags(d: &Domain, flags: u64) -> Result<()> {
    if flags & !KNOWN_FLAGS != 0 {
        return refuse(
            d,
            Error::BADFLAGS,
            format_args!("unknown registration flags 0x{:x}", flags & !KNOWN_FLAGS),
        );
    }
    if flags & HMEM_FLAGS != 0 && !d.hmem {
        return refuse(
            d,
            Error::BADFLAGS,
            format_args!(
                "flags 0x{:x} need a domain opened with FI_HMEM",
                flags & HMEM_FLAGS
            ),
        );
    }
    if flags & FI_AUTH_KEY != 0 && !d.av_auth_key {
        return refuse(
            d,
            Error::BADFLAGS,
            format_args!("FI_AUTH_KEY needs a domain opened with FI_AV_AUTH_KEY"),
        );
    }
    Ok(())
}

fn check_iovs<'a>(d: &Domain, iovs: &'a [(u64, u64)]) -> Result<CheckedIovs<'a>> {
    d.registry.check_iovs(iovs, true).or_else(|f| {
        let n = iovs.len();
        match f {
            IovFault::Count(_) => refuse(
                d,
                Error::INVAL,
                format_args!("iov_count {n} outside 1..={}", d.mr_iov_limit),
            ),
            IovFault::Empty(i) => refuse(d, Error::INVAL, format_args!("iov {i} has length 0")),
            IovFault::Null(i) => refuse(
                d,
                Error::INVAL,
                format_args!("iov {i}: NULL buffer with length {}", iovs[i].1),
            ),
            IovFault::Wraps(i) => refuse(
                d,
                Error::INVAL,
                format_args!("iov {i} wraps the address space"),
            ),
            IovFault::Total => refuse(
                d,
                Error::INVAL,
                format_args!("the iovs' lengths add up past 2^64"),
            ),
        }
    })
}

fn page_size_ok(p: u64) -> bool {
    if p == 0 {
        return true;
    }
    let base = mem::page_size().max(4096) as u64;
    p == 0 || (p.is_power_of_two() && p >= base && p <= 1 << 30)
}

fn register(d: &Domain, input: &Input, out: *mut *mut fid_mr) -> Result<i32> {
    if out.is_null() {
        return refuse(d, Error::INVAL, format_args!("mr is NULL"));
    }
    check_flags(d, input.flags)?;
    if d.av_auth_key && !input.regattr {
        return refuse(
            d,
            Error::NOSYS,
            format_args!("domains opened with FI_AV_AUTH_KEY register through fi_mr_regattr only"),
        );
    }
    if input.access & !Access::all().bits() != 0 {
        return refuse(
            d,
            Error::INVAL,
            format_args!(
                "unknown access bits 0x{:x}",
                input.access & !Access::all().bits()
            ),
        );
    }
    let access = Access::from_bits_truncate(input.access);
    if input.offset != 0 {
        return refuse(
            d,
            Error::INVAL,
            format_args!("offset must be 0 (got {})", input.offset),
        );
    }
    if input.hmem_data {
        return refuse(d, Error::INVAL, format_args!("hmem_data must be NULL"));
    }
    let mut iovs = input.iovs;
    let db_iov;
    if let Some(db) = input.dmabuf {
        if !input.base_mr.is_null() {
            return refuse(
                d,
                Error::INVAL,
                format_args!("base_mr must be NULL with FI_MR_DMABUF"),
            );
        }
        mem::check_dmabuf(db.fd, db.offset, db.len).inspect_err(|_| d.count_failure())?;
        if db.base_addr.is_null() {
            return refuse(
                d,
                Error::INVAL,
                format_args!(
                    "dmabuf base_addr is NULL: oxshm moves only memory mapped into the process"
                ),
            );
        }
        let Some(start) = (db.base_addr as u64).checked_add(db.offset) else {
            return refuse(
                d,
                Error::INVAL,
                format_args!("dmabuf base_addr + offset overflows"),
            );
        };
        db_iov = [(start, db.len as u64)];
        iovs = &db_iov;
    }
    let checked = check_iovs(d, iovs)?;
    let mut iface = fi_hmem_iface::FI_HMEM_SYSTEM as u32;
    let mut page_size = input.page_size;
    let parent = if input.base_mr.is_null() {
        if d.hmem && input.iface != fi_hmem_iface::FI_HMEM_SYSTEM as u32 {
            hmem::check_iface(input.iface).inspect_err(|_| d.count_failure())?;
            iface = input.iface;
        }
        if !page_size_ok(page_size) {
            return refuse(
                d,
                Error::INVAL,
                format_args!("page_size {page_size} is not a page size this system supports"),
            );
        }
        None
    } else {
        // SAFETY: from_fid checks the object.
        let base = unsafe { mr_from_fid(input.base_mr as *const fid) }
            .inspect_err(|_| d.count_failure())?;
        if !std::ptr::eq(base.domain(), d) {
            return refuse(
                d,
                Error::INVAL,
                format_args!("base_mr belongs to another domain"),
            );
        }
        // iface, device, hmem_data and page_size come from the base.
        page_size = 0;
        Some(base.handle()?)
    };
    if d.mr_mode & FI_MR_ALLOCATED != 0 {
        for &(base, len) in iovs {
            if !mem::range_mapped(base as usize, len as usize) {
                return refuse(
                    d,
                    Error::FAULT,
                    format_args!("FI_MR_ALLOCATED: 0x{base:x}+{len} is not backed by mapped pages"),
                );
            }
        }
    }
    let auth = match &input.auth {
        Auth::None => d.auth_digest,
        Auth::Bytes(b) => Some(d.registry.auth_digest(b)),
        Auth::AvAddr(a) => Some(*a),
    };
    let mut flags = d.reg_flags;
    if input.flags != 0 {
        if input.flags & FI_RMA_EVENT != 0 {
            flags |= RegFlags::RMA_EVENT;
            if d.mr_mode & FI_MR_RMA_EVENT != 0 {
                flags |= RegFlags::DISABLED;
            }
        }
        if input.flags & FI_MR_SINGLE_USE != 0 {
            flags |= RegFlags::SINGLE_USE;
        }
        if input.flags & FI_RMA_PMEM != 0 {
            flags |= RegFlags::PMEM;
        }
    }
    let req = Request {
        iovs,
        access,
        flags,
        requested_key: input.requested_key,
        context: 0,
        auth,
        parent,
        sub_mr_cnt: input.sub_mr_cnt,
        iface: iface.min(15) as u8,
        page_size,
    };
    let h = match d.registry.register_checked(&req, checked) {
        Ok(h) => h,
        Err(e) => {
            let what = match e {
                Error::NOKEY => format!("requested key 0x{:x} is in use", input.requested_key),
                Error::KEYREJECTED => {
                    format!("requested key 0x{:x} cannot be used", input.requested_key)
                }
                Error::NOSPC => "the domain's registration limit is reached".to_string(),
                _ => format!("registration refused: {e}"),
            };
            crate::ox_log!(Warn, Mr, super::NAME, "{what}");
            return Err(e);
        }
    };
    // Memory peers copy to and from goes on huge pages where it is
    // resident (mem::collapse_resident says why), before any pinning.
    if *mem::THP
        && req.parent.is_none()
        && input.dmabuf.is_none()
        && iface == fi_hmem_iface::FI_HMEM_SYSTEM as u32
        && access.intersects(Access::REMOTE_READ | Access::REMOTE_WRITE)
    {
        // No whole huge page in a shorter one (or none at all): no call.
        let huge = mem::thp_bytes() as u64;
        for &(base, len) in iovs.iter().filter(|&&(_, len)| huge != 0 && len >= huge) {
            let Some(c) = mem::collapse_registered(base as usize, len as usize) else {
                continue;
            };
            if c.blocks != 0 {
                crate::ox_log!(
                    Debug,
                    Mr,
                    super::NAME,
                    "0x{base:x}+{len}: {} huge-page blocks ({} with a present page), {} already huge, {} resident in small pages, {} collapsed",
                    c.blocks,
                    c.looked,
                    c.huge,
                    c.resident,
                    c.collapsed
                );
            }
        }
    }
    // Pinned mode: system memory of a region of its own (a sub-region's
    // bytes are its base's) is pinned, through the cache.
    if let Some(pins) = d
        .pins
        .as_ref()
        .filter(|_| req.parent.is_none() && iface == fi_hmem_iface::FI_HMEM_SYSTEM as u32)
    {
        if let Err(e) = pins.pin_mr(h.slot(), iovs, needs_write(access)) {
            d.count_failure();
            let _ = d.registry.close(&h);
            return Err(e);
        }
    }
    let mr = match d.mrs.get(d, h.slot()) {
        Ok(p) => p,
        Err(e) => {
            if let Some(pins) = &d.pins {
                pins.unpin_mr(h.slot());
            }
            let _ = d.registry.close(&h);
            return Err(e);
        }
    };
    // SAFETY: the engine gave this thread the slot, so its pool entry is ours
    // to fill until *out is written; fclass goes last, publishing it.
    unsafe {
        (*mr).gen = h.gen();
        (*mr).fid.key = if d.mr_mode & FI_MR_RAW != 0 {
            FI_KEY_NOTAVAIL
        } else {
            h.key()
        };
        (*mr).fid.mem_desc = mr as *mut c_void;
        (*mr).fid.fid.context = input.context;
        (*mr).fid.fid.ops = mr_fi_ops();
        std::ptr::write_volatile(&mut (*mr).fid.fid.fclass, FI_CLASS_MR as usize);
        // Written before any completion event can be read.
        *out = mr as *mut fid_mr;
    }
    if let Some(eq) = d.reg_mr_eq() {
        let entry = fi_eq_entry {
            fid: mr as *mut fid,
            context: input.context,
            data: 0,
        };
        // SAFETY: viewing a plain-data struct as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                &entry as *const fi_eq_entry as *const u8,
                std::mem::size_of::<fi_eq_entry>(),
            )
        };
        if let Err(e) = eq.push(FI_MR_COMPLETE as u32, bytes) {
            crate::ox_log!(Warn, Mr, super::NAME, "FI_MR_COMPLETE event lost: {e}");
        }
    }
    Ok(0)
}

/// Whether a registration lets anything write into its memory (the network
/// for FI_READ/FI_RECV results, peers for FI_REMOTE_WRITE; a registration
/// naming no local right allows them all): its pinning must be writable.
fn needs_write(access: Access) -> bool {
    let local = Access::READ | Access::WRITE | Access::SEND | Access::RECV;
    access.intersects(Access::REMOTE_WRITE | Access::READ | Access::RECV)
        || !access.intersects(local)
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: mr_from_fid checks the object.
        let mr = unsafe { mr_from_fid(f) }?;
        let d = mr.domain();
        // The engine arbitrates concurrent closes and refuses while
        // sub-regions of this one are live. The teardown runs while the slot
        // (and so this pool entry) is still ours: once the engine frees the
        // slot, another thread may register into it.
        // Bindings go after the accesses that verified before the close have
        // finished (quiesce), so that counters bound to the region count
        // every access the region accepted; they are keyed by handle, so a
        // region that reuses the key meanwhile has its own.
        let (slot, gen) = (mr.slot(), mr.gen);
        d.registry
            .close_at(slot, gen, || {
                // SAFETY: this thread owns the closed slot's entry; the pool
                // keeps it readable for stale pointers.
                unsafe {
                    std::ptr::write_volatile(
                        &mut (*(f as *mut Mr)).fid.fid.fclass,
                        FI_CLASS_UNSPEC as usize,
                    )
                };
            })
            .inspect(|h| {
                d.quiesce();
                release_bindings(d, h);
                if let Some(pins) = &d.pins {
                    pins.unpin_mr(h.slot());
                }
            })
            .inspect_err(|e| {
                if *e == Error::BUSY {
                    let key = mr.key();
                    crate::ox_log!(
                        Warn,
                        Mr,
                        super::NAME,
                        "cannot close MR 0x{key:x}: sub-regions of it are still open"
                    );
                }
            })?;
        Ok(0)
    })
}

/// What an MR is bound to (fi_mr_bind); each holds a reference, so the
/// counter or endpoint cannot close before the MR.
pub enum Bound {
    /// The counter and the events it counts (FI_REMOTE_WRITE, FI_REMOTE_READ).
    Cntr(*const super::cntr::Cntr, u64),
    Ep(*const super::ep::Ep),
}

// SAFETY: the pointers are to objects that stay live while bound (they hold
// a reference), and are only used to release that reference.
unsafe impl Send for Bound {}

/// Releases the references an MR's bindings hold (at its close).
fn release_bindings(d: &Domain, h: &Handle) {
    for b in d.take_bindings(h) {
        match b {
            // SAFETY: a bound counter or endpoint cannot close while bound.
            Bound::Cntr(c, _) => unsafe { (*c).hdr.release() },
            Bound::Ep(e) => unsafe { (*e).release_mr() },
        }
    }
}

unsafe extern "C" fn bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    slot("fi_mr_bind", || {
        // SAFETY: mr_from_fid checks the object.
        let mr = unsafe { mr_from_fid(f) }?;
        let d = mr.domain();
        crate::boundary::nonnull(bfid, "fi_mr_bind", "bfid")?;
        // SAFETY: bfid is non-NULL and starts with a struct fid.
        let class = unsafe { (*bfid).fclass } as c_int;
        let h = mr.handle()?;
        if class == FI_CLASS_CNTR as c_int {
            if flags == 0 || flags & !(FI_REMOTE_WRITE | FI_REMOTE_READ) != 0 {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "counter bindings take FI_REMOTE_WRITE (got 0x{flags:x})"
                );
                return Err(Error::INVAL);
            }
            // SAFETY: cntr_from_fid checks the object.
            let c = unsafe { super::cntr::cntr_from_fid(bfid) }?;
            if !std::ptr::eq(c.domain(), d) {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "the counter belongs to another domain"
                );
                return Err(Error::DOMAIN);
            }
            // FI_MR_RMA_EVENT: a region that will count remote accesses
            // says so at registration (fi_mr(3)).
            if d.mr_mode & FI_MR_RMA_EVENT != 0
                && !d.registry.region(&h)?.flags.contains(RegFlags::RMA_EVENT)
            {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "fi_mr_bind on MR 0x{:x}: under FI_MR_RMA_EVENT a counter binds only to a region registered with FI_RMA_EVENT",
                    mr.key()
                );
                return Err(Error::INVAL);
            }
            d.registry.bind(&h, Bindings::COUNTER).inspect_err(|e| {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "fi_mr_bind on MR 0x{:x}: {e} (bindings come before fi_mr_enable)",
                    mr.key()
                );
            })?;
            c.hdr.hold();
            d.add_binding(h, Bound::Cntr(c, flags));
            Ok(0)
        } else if class == FI_CLASS_EP as c_int {
            if flags != 0 {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "endpoint bindings take flags 0 (got 0x{flags:x})"
                );
                return Err(Error::INVAL);
            }
            // SAFETY: ep_from_fid checks the object.
            let e = unsafe { super::ep::ep_from_fid(bfid) }?;
            if !std::ptr::eq(e.domain(), d) {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "the endpoint belongs to another domain"
                );
                return Err(Error::DOMAIN);
            }
            d.registry.bind(&h, Bindings::ENDPOINT).inspect_err(|e| {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "fi_mr_bind on MR 0x{:x}: {e} (bindings come before fi_mr_enable)",
                    mr.key()
                );
            })?;
            e.hold_mr();
            d.add_binding(h, Bound::Ep(e));
            Ok(0)
        } else {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "an MR binds to a counter or an endpoint, not an object of class {class}"
            );
            Err(Error::INVAL)
        }
    })
}

/// Reads `count` iovs from C into `few` (up to [`FEW_IOVS`], the common
/// case: nothing is allocated) or `many`.
///
/// # Safety
/// `iov` is NULL or holds `count` readable iovecs.
#[inline(always)]
unsafe fn read_iovs<'a>(
    d: &Domain,
    iov: *const iovec,
    count: usize,
    few: &'a mut [(u64, u64); FEW_IOVS],
    many: &'a mut Vec<(u64, u64)>,
) -> Result<&'a [(u64, u64)]> {
    if count == 0 {
        return refuse(d, Error::INVAL, format_args!("iov_count is 0"));
    }
    if iov.is_null() {
        return refuse(
            d,
            Error::INVAL,
            format_args!("iov is NULL with count {count}"),
        );
    }
    if count > d.mr_iov_limit {
        return refuse(
            d,
            Error::INVAL,
            format_args!("iov_count {count} exceeds mr_iov_limit {}", d.mr_iov_limit),
        );
    }
    // SAFETY: per the function contract.
    let s = unsafe { std::slice::from_raw_parts(iov, count) };
    if s.len() <= FEW_IOVS {
        for (d, v) in few.iter_mut().zip(s) {
            *d = (v.iov_base as u64, v.iov_len as u64);
        }
        return Ok(&few[..s.len()]);
    }
    *many = s
        .iter()
        .map(|v| (v.iov_base as u64, v.iov_len as u64))
        .collect();
    Ok(many)
}

fn domain_of<'a>(fid: *mut fid) -> Result<&'a Domain> {
    // SAFETY: from_fid checks the object.
    unsafe { from_fid::<Domain>(fid) }
}

/// The `fi_ops_mr.reg` slot.
///
/// # Safety
/// `fid` is any object (checked); other pointers as fi_mr_reg(3).
pub unsafe extern "C" fn reg(
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
    slot("fi_mr_reg", || {
        let d = domain_of(fid)?;
        let one = [(buf as u64, len as u64)];
        let input = Input::new(&one, access, offset, requested_key, flags, context);
        register(d, &input, mr)
    })
}

/// The `fi_ops_mr.regv` slot.
///
/// # Safety
/// `fid` is any object (checked); other pointers as fi_mr_regv(3).
pub unsafe extern "C" fn regv(
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
    slot("fi_mr_regv", || {
        let d = domain_of(fid)?;
        // SAFETY: iov holds count entries (fi_mr_regv(3)).
        let (mut few, mut many) = ([(0, 0); FEW_IOVS], Vec::new());
        let iovs = unsafe { read_iovs(d, iov, count, &mut few, &mut many) }?;
        let input = Input::new(iovs, access, offset, requested_key, flags, context);
        register(d, &input, mr)
    })
}

/// How many bytes of `struct fi_mr_attr` exist at an API version: later
/// fields are never read for an application built against older headers.
pub fn mr_attr_len(api_version: u32) -> usize {
    if api_version < version(1, 5) {
        offset_of!(fi_mr_attr, auth_key_size)
    } else if api_version < version(1, 10) {
        offset_of!(fi_mr_attr, iface)
    } else if api_version < version(1, 19) {
        offset_of!(fi_mr_attr, hmem_data)
    } else if api_version < version(1, 22) {
        offset_of!(fi_mr_attr, page_size)
    } else if api_version < version(2, 0) {
        offset_of!(fi_mr_attr, base_mr)
    } else {
        std::mem::size_of::<fi_mr_attr>()
    }
}

/// The `fi_ops_mr.regattr` slot.
///
/// # Safety
/// `fid` is any object (checked); `attr` as fi_mr_regattr(3), read only as
/// far as the domain's API version defines it.
pub unsafe extern "C" fn regattr(
    fid: *mut fid,
    attr: *const fi_mr_attr,
    flags: u64,
    mr: *mut *mut fid_mr,
) -> c_int {
    slot("fi_mr_regattr", || {
        let d = domain_of(fid)?;
        if attr.is_null() {
            return refuse(d, Error::INVAL, format_args!("attr is NULL"));
        }
        let limit = mr_attr_len(d.api_version);
        // A copy of the application's prefix; later fields stay zero.
        // SAFETY: attr holds at least `limit` bytes for this API version,
        // and every field of fi_mr_attr is valid when zeroed.
        let a: fi_mr_attr = unsafe {
            let mut a: fi_mr_attr = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(
                attr as *const u8,
                &mut a as *mut fi_mr_attr as *mut u8,
                limit,
            );
            a
        };
        let (mut few, mut many) = ([(0, 0); FEW_IOVS], Vec::new());
        let mut input = Input::new(&[], a.access, a.offset, a.requested_key, flags, a.context);
        input.regattr = true;
        input.hmem_data = !a.hmem_data.is_null();
        input.page_size = a.page_size as u64;
        input.base_mr = a.base_mr;
        input.sub_mr_cnt = a.sub_mr_cnt;
        // iface and device mean something only with FI_HMEM (fi_mr(3)).
        if d.hmem && limit > offset_of!(fi_mr_attr, iface) {
            input.iface = a.iface;
        }
        if flags & FI_MR_DMABUF != 0 {
            // Dmabuf registrations exist from API 1.20.
            if d.api_version < version(1, 20) {
                return refuse(
                    d,
                    Error::BADFLAGS,
                    format_args!("FI_MR_DMABUF needs API 1.20 or later"),
                );
            }
            check_flags(d, flags)?;
            // SAFETY: with FI_MR_DMABUF the union holds a dmabuf pointer.
            let db = unsafe { a.__anon_mr_iov.dmabuf };
            if db.is_null() {
                return refuse(
                    d,
                    Error::INVAL,
                    format_args!("FI_MR_DMABUF with a NULL dmabuf"),
                );
            }
            // SAFETY: a non-NULL dmabuf points to a struct fi_mr_dmabuf.
            input.dmabuf = Some(unsafe { std::ptr::read(db) });
            input.iovs = &[(1, 1)];
        } else {
            // SAFETY: without FI_MR_DMABUF the union holds the iov pointer,
            // which holds iov_count entries.
            input.iovs =
                unsafe { read_iovs(d, a.__anon_mr_iov.mr_iov, a.iov_count, &mut few, &mut many) }?;
        }
        input.auth = read_auth(d, &a)?;
        register(d, &input, mr)
    })
}

fn read_auth(d: &Domain, a: &fi_mr_attr) -> Result<Auth> {
    if d.api_version < version(1, 5) {
        return Ok(Auth::None);
    }
    if d.av_auth_key && a.auth_key_size != std::mem::size_of::<fi_mr_auth_key>() {
        return refuse(
            d,
            Error::INVAL,
            format_args!(
                "FI_AV_AUTH_KEY domain: auth_key_size must be {} (got {})",
                std::mem::size_of::<fi_mr_auth_key>(),
                a.auth_key_size
            ),
        );
    }
    if a.auth_key_size == 0 {
        return Ok(Auth::None);
    }
    if a.auth_key.is_null() {
        return refuse(
            d,
            Error::INVAL,
            format_args!("auth_key is NULL with auth_key_size {}", a.auth_key_size),
        );
    }
    if d.av_auth_key {
        if a.auth_key_size != std::mem::size_of::<fi_mr_auth_key>() {
            return refuse(
                d,
                Error::INVAL,
                format_args!(
                    "FI_AV_AUTH_KEY domain: auth_key_size must be {} (got {})",
                    std::mem::size_of::<fi_mr_auth_key>(),
                    a.auth_key_size
                ),
            );
        }
        // SAFETY: auth_key points to a struct fi_mr_auth_key (size checked).
        let k = unsafe { std::ptr::read_unaligned(a.auth_key as *const fi_mr_auth_key) };
        if !k.av.is_null() {
            return refuse(
                d,
                Error::INVAL,
                format_args!("auth_key->av is not an oxshm address vector"),
            );
        }
        return Ok(Auth::AvAddr(k.src_addr));
    }
    if a.auth_key_size > 4096 {
        return refuse(
            d,
            Error::INVAL,
            format_args!("auth_key_size {} is implausible", a.auth_key_size),
        );
    }
    // SAFETY: auth_key holds auth_key_size bytes (fi_mr(3)).
    let bytes = unsafe { std::slice::from_raw_parts(a.auth_key, a.auth_key_size) }.to_vec();
    Ok(Auth::Bytes(bytes))
}

unsafe extern "C" fn control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    slot("fi_control", || {
        // SAFETY: from_fid checks the object.
        let mr = unsafe { mr_from_fid(f) }?;
        match command {
            c if c == FI_GET_RAW_MR as c_int => {
                crate::boundary::nonnull(arg, "fi_mr_raw_attr", "attr")?;
                // SAFETY: FI_GET_RAW_MR's argument is a struct fi_mr_raw_attr.
                unsafe { raw_attr(mr, &*(arg as *const fi_mr_raw_attr)) }
            }
            c if c == FI_ENABLE as c_int => {
                let h = mr.handle()?;
                mr.domain().registry.enable(&h).inspect_err(|e| {
                    crate::ox_log!(
                        Warn,
                        Mr,
                        super::NAME,
                        "fi_mr_enable on MR 0x{:x}: {e}",
                        mr.key()
                    );
                })?;
                Ok(0)
            }
            c if c == FI_REFRESH as c_int => {
                crate::boundary::nonnull(arg, "fi_mr_refresh", "modify")?;
                // SAFETY: FI_REFRESH's argument is a struct fi_mr_modify.
                unsafe { refresh(mr, &*(arg as *const fi_mr_modify)) }
            }
            c if c == FI_GET_MR_XPU_DESC as c_int => {
                crate::boundary::nonnull(arg, "fi_mr_get_xpu_desc", "desc")?;
                // SAFETY: FI_GET_MR_XPU_DESC's argument is a fi_mr_xpu_desc.
                unsafe { xpu_desc(mr, &*(arg as *const fi_mr_xpu_desc)) }
            }
            other => {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "control command {other} not supported on an MR"
                );
                Err(Error::NOSYS)
            }
        }
    })
}

/// fi_mr_raw_attr: the raw key and base address of any MR.
///
/// # Safety
/// The attr's pointers are NULL or writable as fi_mr_raw_attr(3) says.
unsafe fn raw_attr(mr: &Mr, a: &fi_mr_raw_attr) -> Result<i32> {
    if a.flags != 0 {
        crate::ox_log!(Warn, Mr, super::NAME, "fi_mr_raw_attr: flags must be 0");
        return Err(Error::BADFLAGS);
    }
    crate::boundary::nonnull(a.key_size, "fi_mr_raw_attr", "key_size")?;
    crate::boundary::nonnull(a.base_addr, "fi_mr_raw_attr", "base_addr")?;
    let raw = mr.domain().registry.raw_attr(&mr.handle()?)?;
    // SAFETY: key_size is writable; raw_key holds *key_size bytes.
    unsafe {
        if *a.key_size < RAW_KEY_SIZE || a.raw_key.is_null() {
            *a.key_size = RAW_KEY_SIZE;
            return Err(Error::TOOSMALL);
        }
        std::ptr::copy_nonoverlapping(raw.as_bytes().as_ptr(), a.raw_key, RAW_KEY_SIZE);
        *a.key_size = RAW_KEY_SIZE;
        *a.base_addr = raw.base_addr;
    }
    Ok(0)
}

/// fi_mr_refresh: checks that each given range (or, with none, the whole
/// region) is still inside the region and backed by mapped pages.
///
/// # Safety
/// The modify's attr holds `iov_count` iovs at `mr_iov`.
unsafe fn refresh(mr: &Mr, m: &fi_mr_modify) -> Result<i32> {
    if m.flags != 0 {
        crate::ox_log!(Warn, Mr, super::NAME, "fi_mr_refresh: flags must be 0");
        return Err(Error::BADFLAGS);
    }
    let d = mr.domain();
    let h = mr.handle()?;
    let region = d.registry.iovs(&h)?;
    // SAFETY: per the function contract.
    let ranges: Vec<(u64, u64)> = if m.attr.iov_count == 0 {
        region.clone()
    } else {
        let (mut few, mut many) = ([(0, 0); FEW_IOVS], Vec::new());
        unsafe {
            read_iovs(
                d,
                m.attr.__anon_mr_iov.mr_iov,
                m.attr.iov_count,
                &mut few,
                &mut many,
            )
        }?
        .to_vec()
    };
    for &(base, len) in &ranges {
        let inside = region
            .iter()
            .any(|&(b, l)| base >= b && base.saturating_add(len) <= b + l);
        if !inside {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "fi_mr_refresh: 0x{base:x}+{len} is not part of MR 0x{:x}",
                mr.key()
            );
            return Err(Error::INVAL);
        }
        if !mem::range_mapped(base as usize, len as usize) {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "fi_mr_refresh: 0x{base:x}+{len} is no longer mapped"
            );
            return Err(Error::FAULT);
        }
    }
    Ok(0)
}

/// fi_mr_get_xpu_desc: the region's descriptor bytes (its 64-bit key). An
/// XPU context is required with FI_XPU; oxshm has no XPU contexts.
///
/// # Safety
/// `len` is NULL or writable; `buf` holds `*len` bytes.
unsafe fn xpu_desc(mr: &Mr, x: &fi_mr_xpu_desc) -> Result<i32> {
    if x.flags & FI_XPU != 0 || !x.ctx.is_null() {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "fi_mr_get_xpu_desc: oxshm has no XPU contexts; the one given is invalid"
        );
        return Err(Error::INVAL);
    }
    if x.flags & !FI_XPU != 0 {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "fi_mr_get_xpu_desc: unknown flags 0x{:x}",
            x.flags
        );
        return Err(Error::BADFLAGS);
    }
    crate::boundary::nonnull(x.len, "fi_mr_get_xpu_desc", "len")?;
    // SAFETY: len is writable; buf holds *len bytes when non-NULL.
    unsafe {
        if *x.len < XPU_DESC_SIZE || x.buf.is_null() {
            *x.len = XPU_DESC_SIZE;
            return Err(Error::TOOSMALL);
        }
        std::ptr::copy_nonoverlapping(
            mr.handle()?.key().to_ne_bytes().as_ptr(),
            x.buf as *mut u8,
            XPU_DESC_SIZE,
        );
        *x.len = XPU_DESC_SIZE;
    }
    Ok(0)
}

/// Domain control FI_MAP_RAW_MR: a raw key from a peer -> a 64-bit key.
///
/// # Safety
/// `m`'s pointers as fi_mr_map_raw(3).
pub unsafe fn map_raw(d: &Domain, m: &fi_mr_map_raw) -> Result<i32> {
    if m.flags != 0 {
        crate::ox_log!(Warn, Mr, super::NAME, "fi_mr_map_raw: flags must be 0");
        return Err(Error::BADFLAGS);
    }
    crate::boundary::nonnull(m.raw_key, "fi_mr_map_raw", "raw_key")?;
    crate::boundary::nonnull(m.key, "fi_mr_map_raw", "key")?;
    if m.key_size != RAW_KEY_SIZE {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "fi_mr_map_raw: raw keys are {RAW_KEY_SIZE} bytes (got {})",
            m.key_size
        );
        return Err(Error::INVAL);
    }
    // SAFETY: raw_key holds key_size bytes.
    let bytes = unsafe { std::slice::from_raw_parts(m.raw_key, m.key_size) };
    let key = d.registry.map_raw(bytes, m.base_addr).inspect_err(|e| {
        crate::ox_log!(Warn, Mr, super::NAME, "fi_mr_map_raw: raw key refused: {e}");
    })?;
    // SAFETY: key checked non-NULL; written on success only.
    unsafe { *m.key = key };
    Ok(0)
}

/// Domain control FI_UNMAP_KEY.
pub fn unmap_key(d: &Domain, key: u64) -> Result<i32> {
    d.registry.unmap_key(key).inspect_err(|_| {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "fi_mr_unmap_key: key 0x{key:x} is not mapped"
        );
    })?;
    Ok(0)
}
