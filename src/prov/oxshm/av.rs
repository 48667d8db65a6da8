//! oxshm address vectors (`fi_av_open`): the peers an endpoint may reach,
//! by oxshm address (FI_ADDR_STR, see [`super::ep`] for the format).
//!
//! - FI_AV_TABLE (and FI_AV_UNSPEC): `fi_addr_t` is the table index; an
//!   insertion takes the lowest free index, so a fresh table numbers its
//!   addresses 0, 1, 2, ... across calls (fi_av(3)).
//! - FI_AV_MAP: `fi_addr_t` is opaque: `generation << 32 | index`, with a
//!   generation (never 0) that changes each time a slot is reused, so a
//!   handle kept after `fi_av_remove` is refused instead of reaching the
//!   peer inserted in its place.
//!
//! Insertion is synchronous (the deprecated FI_EVENT mode is refused);
//! shared (named) AVs are not supported. All operations are thread safe.
//!
//! For the data path: [`Av::peer`] resolves an `fi_addr_t` (a read lock,
//! shared by all readers), [`Av::find`] maps a peer's address back to its
//! `fi_addr_t` (for FI_SOURCE). A [`Peer`] stays valid while an operation
//! holds it, even if the application removes the address meanwhile.

mod cache;

use super::domain::Domain;
use super::ep::{copy_out, name_from_c, Address, ADDR_MAX};
use super::object::{from_fid, nosys, slot, Header, Object};
use super::svc::{self, Name};
use crate::abi::collective::fid_av_set;
use crate::abi::domain::*;
use crate::abi::fabric::*;
use crate::abi::xpu::fid_xpu_ctx;
use crate::error::{Error, Result};
use libc::{c_char, c_int, c_void, size_t};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::CString;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

/// Tag of oxshm address vectors (see [`super::object`]).
pub const TAG_AV: u64 = u64::from_be_bytes(*b"oxAV\0\0\0\0");

/// Most addresses one AV holds (indices fit the low 32 bits of a MAP handle).
pub const MAX_ENTRIES: usize = 1 << 24;

/// Entries reserved up front at most, whatever `attr->count` asks for.
const MAX_RESERVE: usize = 1 << 16;

/// Per-address insertion failures logged one by one before a summary.
const MAX_LOGGED: usize = 8;

/// How an AV hands out `fi_addr_t` values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Map,
    Table,
}

/// One inserted address.
#[derive(Debug)]
pub struct Peer {
    pub addr: Address,
    /// The canonical text, for fi_av_lookup.
    name: CString,
}

impl Peer {
    pub fn name(&self) -> &CString {
        &self.name
    }
}

#[derive(Default)]
struct Slot {
    /// Bumped on every removal; part of a MAP handle.
    generation: u32,
    peer: Option<Arc<Peer>>,
}

#[derive(Default)]
struct Table {
    slots: Vec<Slot>,
    free: BTreeSet<u32>,
    by_addr: HashMap<Address, BTreeSet<u32>, super::xfer::PeerHash>,
    live: usize,
}

impl Table {
    fn insert(&mut self, addr: Address) -> Result<u32> {
        let index = match self.free.pop_first() {
            Some(i) => i,
            None => {
                if self.slots.len() >= MAX_ENTRIES {
                    return Err(Error::NOSPC);
                }
                self.slots.push(Slot {
                    generation: 1,
                    peer: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[index as usize].peer = Some(Arc::new(Peer {
            addr,
            name: addr.to_cstring(),
        }));
        self.by_addr.entry(addr).or_default().insert(index);
        self.live += 1;
        Ok(index)
    }

    fn remove(&mut self, index: u32) {
        let s = &mut self.slots[index as usize];
        let Some(peer) = s.peer.take() else {
            return;
        };
        // Generations stay in 1..=i32::MAX: a MAP handle is then never
        // FI_ADDR_NOTAVAIL and never looks like a table index.
        s.generation = if s.generation >= i32::MAX as u32 {
            1
        } else {
            s.generation + 1
        };
        if let Some(set) = self.by_addr.get_mut(&peer.addr) {
            set.remove(&index);
            if set.is_empty() {
                self.by_addr.remove(&peer.addr);
            }
        }
        self.free.insert(index);
        self.live -= 1;
    }
}

#[repr(C)]
pub struct Av {
    pub fid: fid_av,
    pub hdr: Header,
    domain: *const Domain,
    pub kind: Kind,
    table: RwLock<Table>,
    /// Lock-free answers to the data path's lookups.
    cache: cache::Cache,
}

// SAFETY: #[repr(C)] with fid_av (which starts with struct fid) first.
unsafe impl Object for Av {
    const TAG: u64 = TAG_AV;
    const FCLASS: usize = FI_CLASS_AV as usize;
    const NAME: &'static str = "address vector";
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
    control: Some(nosys::control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

static OPS_AV: fi_ops_av = fi_ops_av {
    size: std::mem::size_of::<fi_ops_av>(),
    insert: Some(insert),
    insertsvc: Some(insertsvc),
    insertsym: Some(insertsym),
    remove: Some(remove),
    lookup: Some(lookup),
    straddr: Some(straddr),
    av_set: Some(av_set),
    insert_auth_key: Some(insert_auth_key),
    lookup_auth_key: Some(lookup_auth_key),
    set_user_id: Some(set_user_id),
    lookup2: Some(lookup2),
};

impl Av {
    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The table, to change: every cached lookup is stale from here on.
    fn write(&self) -> RwLockWriteGuard<'_, Table> {
        let t = self.table.write().unwrap_or_else(|e| e.into_inner());
        self.cache.invalidate();
        t
    }

    pub fn domain(&self) -> &Domain {
        // SAFETY: the domain cannot close while this AV holds it.
        unsafe { &*self.domain }
    }

    /// Addresses currently inserted.
    pub fn len(&self) -> usize {
        self.read().live
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn handle(&self, index: u32, generation: u32) -> fi_addr_t {
        match self.kind {
            Kind::Table => index as fi_addr_t,
            Kind::Map => (generation as fi_addr_t) << 32 | index as fi_addr_t,
        }
    }

    /// The live slot index `fi_addr` names, if any.
    fn index(&self, t: &Table, fi_addr: fi_addr_t) -> Option<u32> {
        let (index, generation) = match self.kind {
            Kind::Table => (u32::try_from(fi_addr).ok()?, None),
            Kind::Map => ((fi_addr & 0xffff_ffff) as u32, Some((fi_addr >> 32) as u32)),
        };
        let s = t.slots.get(index as usize)?;
        s.peer.as_ref()?;
        match generation {
            Some(g) if g != s.generation => None,
            _ => Some(index),
        }
    }

    /// The peer behind `fi_addr`, or None for a handle this AV did not give
    /// out or that was removed.
    pub fn peer(&self, fi_addr: fi_addr_t) -> Option<Arc<Peer>> {
        let t = self.read();
        let i = self.index(&t, fi_addr)?;
        t.slots[i as usize].peer.clone()
    }

    /// The version of the AV's table: it changes before any mapping
    /// does, and is never 0 ([`cache::Cache::invalidate`]). A lookup made
    /// under a version still current is still right.
    #[inline(always)]
    pub fn version(&self) -> u64 {
        self.cache.version()
    }

    /// The address `fi_addr` names, without taking a hold on its entry
    /// (the data path only needs the address itself).
    /// Repeated lookups are answered from the cache, without the lock,
    /// inlined into the data path. Both ways meet on the address packed
    /// in a `u128` (0: absent), which stays in registers: an
    /// `Option<Address>` they met on went through the stack, stored in
    /// three pieces and loaded in one, a stall per send (15% of
    /// `post_small`'s samples in `fi_rdm_bw -S 64`).
    #[inline(always)]
    pub fn addr_of(&self, fi_addr: fi_addr_t) -> Option<Address> {
        let v = self.cache.version();
        let p = match self.cache.addr_packed(fi_addr, v) {
            Some(p) => p,
            None => self.addr_of_slow(fi_addr, v),
        };
        (p != 0).then(|| cache::unpack(p))
    }

    /// The locked lookup; the address packed (0: absent).
    #[inline(never)]
    fn addr_of_slow(&self, fi_addr: fi_addr_t, v: u64) -> u128 {
        let r = {
            let t = self.read();
            self.index(&t, fi_addr)
                .and_then(|i| t.slots[i as usize].peer.as_ref().map(|p| p.addr))
        };
        self.cache.put_addr(fi_addr, v, r);
        r.as_ref().map_or(0, cache::pack)
    }

    /// The `fi_addr_t` under which `addr` is inserted (the lowest, if it was
    /// inserted more than once). Repeated lookups are answered from the
    /// cache, without the lock.
    #[inline(always)]
    pub fn find(&self, addr: &Address) -> Option<fi_addr_t> {
        let v = self.cache.version();
        if let Some(hit) = self.cache.find(addr, v) {
            return hit;
        }
        self.find_slow(addr, v)
    }

    #[inline(never)]
    fn find_slow(&self, addr: &Address, v: u64) -> Option<fi_addr_t> {
        let r = {
            let t = self.read();
            t.by_addr
                .get(addr)
                .and_then(|l| l.first())
                .map(|&i| self.handle(i, t.slots[i as usize].generation))
        };
        self.cache.put_find(addr, v, r);
        r
    }

    /// Inserts `addrs` in order under one lock; `Err` entries stay errors.
    fn insert_all(
        &self,
        addrs: Vec<std::result::Result<Address, Error>>,
    ) -> Vec<Result<fi_addr_t>> {
        let mut t = self.write();
        addrs
            .into_iter()
            .map(|a| {
                let i = t.insert(a?)?;
                Ok(self.handle(i, t.slots[i as usize].generation))
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// fi_av_open and struct fi_ops
// ---------------------------------------------------------------------------

/// `fi_av_open` (domain slot). FI_AV_UNSPEC opens a table and reports
/// FI_AV_TABLE back through `attr->type`.
///
/// # Safety
/// C contract of fi_av(3); every pointer is checked before use.
pub unsafe extern "C" fn open(
    domain: *mut fid_domain,
    attr: *mut fi_av_attr,
    av: *mut *mut fid_av,
    context: *mut c_void,
) -> c_int {
    slot("fi_av_open", || {
        // SAFETY: from_fid checks the object.
        let d = unsafe { from_fid::<Domain>(domain as *const fid) }?;
        crate::boundary::nonnull(attr, "fi_av_open", "attr")?;
        crate::boundary::nonnull(av, "fi_av_open", "av")?;
        // SAFETY: attr checked non-NULL; every field is from libfabric 1.0.
        let a = unsafe { *attr };
        let kind = match fi_av_type::from_raw(a.r#type) {
            Some(fi_av_type::FI_AV_MAP) => Kind::Map,
            Some(fi_av_type::FI_AV_TABLE | fi_av_type::FI_AV_UNSPEC) => Kind::Table,
            None => {
                crate::ox_log!(Warn, Av, super::NAME, "AV type {} is not valid", a.r#type);
                return Err(Error::INVAL);
            }
        };
        if a.rx_ctx_bits != 0 {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "rx_ctx_bits {} given, but oxshm has no scalable endpoints",
                a.rx_ctx_bits
            );
            return Err(Error::INVAL);
        }
        if a.flags & FI_EVENT != 0 {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "FI_EVENT (asynchronous insertion, deprecated) is not supported"
            );
            return Err(Error::BADFLAGS);
        }
        let known = FI_READ | FI_SYMMETRIC;
        if a.flags & !known != 0 {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "AV flags 0x{:x} are not supported",
                a.flags & !known
            );
            return Err(Error::BADFLAGS);
        }
        if !a.name.is_null() {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "shared (named) AVs are not supported"
            );
            return Err(Error::NOSYS);
        }
        if a.flags & FI_READ != 0 {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "FI_READ opens an existing named AV; no name was given"
            );
            return Err(Error::INVAL);
        }
        let mut table = Table::default();
        table.slots.reserve(a.count.min(MAX_RESERVE));
        d.hdr.hold();
        let obj = Box::new(Av {
            fid: fid_av {
                fid: fid {
                    fclass: FI_CLASS_AV as usize,
                    context,
                    ops: Av::fi_ops(),
                },
                ops: &OPS_AV as *const fi_ops_av as *mut fi_ops_av,
            },
            hdr: Header::new(TAG_AV),
            domain: d,
            kind,
            table: RwLock::new(table),
            cache: cache::Cache::default(),
        });
        // SAFETY: attr and av checked non-NULL; written last, on success.
        unsafe {
            if kind == Kind::Table {
                (*attr).r#type = fi_av_type::FI_AV_TABLE as fi_av_type_raw;
            }
            *av = Box::into_raw(obj) as *mut fid_av;
        }
        Ok(0)
    })
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let av = unsafe { from_fid::<Av>(f) }?;
        av.hdr.begin_close("address vector")?;
        av.domain().hdr.release();
        // SAFETY: allocated by `open`; nothing depends on it any more.
        drop(unsafe { Box::from_raw(f as *mut Av) });
        Ok(0)
    })
}

/// fi_av_bind (deprecated): only for FI_EVENT AVs, which oxshm refuses.
unsafe extern "C" fn bind(f: *mut fid, _: *mut fid, _: u64) -> c_int {
    av_nosys(f, "fi_av_bind", "deprecated, and oxshm AVs are synchronous")
}

fn av_nosys(f: *const fid, call: &str, why: &str) -> c_int {
    slot(call, || {
        // SAFETY: from_fid checks the object.
        unsafe { from_fid::<Av>(f) }?;
        crate::ox_log!(Warn, Av, super::NAME, "{call}: {why}");
        Err(Error::NOSYS)
    })
}

// ---------------------------------------------------------------------------
// struct fi_ops_av
// ---------------------------------------------------------------------------

/// Checks the flags of an insertion call.
fn insert_flags(flags: u64, call: &str) -> Result<()> {
    if flags & (FI_AV_USER_ID | FI_AUTH_KEY) != 0 {
        crate::ox_log!(
            Warn,
            Av,
            super::NAME,
            "{call}: FI_AV_USER_ID and FI_AUTH_KEY insertions are not supported"
        );
        return Err(Error::BADFLAGS);
    }
    // FI_MORE is a hint; FI_FIREWALL_ADDR changes nothing on one host.
    let known = FI_MORE | FI_SYNC_ERR | FI_FIREWALL_ADDR;
    if flags & !known != 0 {
        crate::ox_log!(
            Warn,
            Av,
            super::NAME,
            "{call}: flags 0x{:x} are not supported",
            flags & !known
        );
        return Err(Error::BADFLAGS);
    }
    Ok(())
}

/// An address read for insertion, or why it cannot be inserted.
type Parsed = std::result::Result<Address, (Error, String)>;

/// Resolves a parsed name to an endpoint: a host name with a service is
/// looked up in the service directory ([`super::svc`]), waiting until
/// `deadline` for it to be published (-FI_EADDRNOTAVAIL after).
fn resolve(name: std::result::Result<Name, String>, deadline: Instant) -> Parsed {
    let name = name.map_err(|why| (Error::INVAL, why))?;
    let wait = deadline.saturating_duration_since(Instant::now());
    svc::to_endpoint(&name, wait).map_err(|why| {
        let code = if name.service().is_some() {
            Error::ADDRNOTAVAIL
        } else {
            Error::INVAL
        };
        (code, why)
    })
}

/// Parses the C string at `p` as an oxshm address and resolves it.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn read_address(p: *const c_char, deadline: Instant) -> Parsed {
    if p.is_null() {
        return Err((Error::INVAL, "the address is NULL".to_string()));
    }
    // SAFETY: p is a C string; strnlen reads no further than its NUL.
    let n = unsafe { libc::strnlen(p, ADDR_MAX) };
    // SAFETY: n readable bytes, plus the NUL when n < ADDR_MAX.
    let name = unsafe { name_from_c(p as *const c_void, if n < ADDR_MAX { n + 1 } else { n }) };
    resolve(name, deadline)
}

/// Whether an insert's `addr` holds the names themselves rather than an
/// array of pointers to them. fi_av(3) passes FI_ADDR_STR addresses as
/// strings; programs written for upstream's shm pass the bytes
/// fi_getname returned (names back to back), others an array of `char *`.
/// The two cannot be confused: the 8 bytes "fi_oxshm" read as a pointer
/// are not a canonical x86-64 (or AArch64) user address.
///
/// # Safety
/// `addr` holds at least 8 readable bytes.
unsafe fn names_inline(addr: *const u8) -> bool {
    // SAFETY: per the function contract.
    let head = unsafe { std::slice::from_raw_parts(addr, 8) };
    head == &Address::PREFIX.as_bytes()[..8]
}

/// Parses `count` NUL-terminated names stored back to back at `p` (NUL
/// padding between them, as fixed-size name slots have, is skipped).
///
/// # Safety
/// `p` holds `count` NUL-terminated names, each followed by at most
/// ADDR_MAX bytes of NUL padding.
unsafe fn read_inline(mut p: *const c_char, count: usize, deadline: Instant) -> Vec<Parsed> {
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        if i > 0 {
            // Skip padding up to the next name (bounded by a name slot).
            let mut skipped = 0;
            // SAFETY: per the function contract.
            while unsafe { *p } == 0 && skipped < ADDR_MAX {
                // SAFETY: within the padding.
                p = unsafe { p.add(1) };
                skipped += 1;
            }
        }
        // SAFETY: a NUL-terminated name.
        out.push(unsafe { read_address(p, deadline) });
        // SAFETY: past this name and its NUL.
        p = unsafe { p.add(libc::strnlen(p, ADDR_MAX) + 1) };
    }
    out
}

/// Runs one insertion call over `count` parsed addresses: inserts the good
/// ones, writes `fi_addr[i]` (FI_ADDR_NOTAVAIL for failures) and, with
/// FI_SYNC_ERR, `context[i]` (0 or a positive FI_E* code). Returns how many
/// were inserted.
///
/// # Safety
/// `fi_addr` is NULL or holds `count` writable entries; with FI_SYNC_ERR,
/// `context` holds `count` writable ints.
unsafe fn finish_insert(
    av: &Av,
    call: &str,
    parsed: Vec<Parsed>,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> Result<i32> {
    let mut failed = 0;
    let addrs = parsed
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.map_err(|(code, why)| {
                if failed < MAX_LOGGED {
                    crate::ox_log!(Warn, Av, super::NAME, "{call}: address {i}: {why}");
                }
                failed += 1;
                code
            })
        })
        .collect::<Vec<_>>();
    let results = av.insert_all(addrs);
    let full = results
        .iter()
        .filter(|r| matches!(r, Err(e) if *e == Error::NOSPC))
        .count();
    if full > 0 {
        crate::ox_log!(
            Warn,
            Av,
            super::NAME,
            "{call}: {full} address(es) not inserted: the AV holds {MAX_ENTRIES} at most"
        );
    }
    if failed > MAX_LOGGED {
        crate::ox_log!(
            Warn,
            Av,
            super::NAME,
            "{call}: ... {} more invalid address(es)",
            failed - MAX_LOGGED
        );
    }
    let sync_err = if flags & FI_SYNC_ERR != 0 {
        context as *mut c_int
    } else {
        std::ptr::null_mut()
    };
    let mut inserted = 0;
    for (i, r) in results.iter().enumerate() {
        // SAFETY: both arrays hold `count` entries (contract).
        unsafe {
            if !fi_addr.is_null() {
                *fi_addr.add(i) = *r.as_ref().unwrap_or(&FI_ADDR_NOTAVAIL);
            }
            if !sync_err.is_null() {
                *sync_err.add(i) = r.as_ref().err().map_or(0, |e| e.0);
            }
        }
        inserted += r.is_ok() as i32;
    }
    Ok(inserted)
}

/// Checks what an insertion call needs before anything is parsed.
fn check_insert_args(
    av: &Av,
    call: &str,
    count: usize,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> Result<()> {
    insert_flags(flags, call)?;
    if count > i32::MAX as usize {
        crate::ox_log!(Warn, Av, super::NAME, "{call}: count {count} is too large");
        return Err(Error::INVAL);
    }
    if count > 0 && fi_addr.is_null() && av.kind == Kind::Map {
        crate::ox_log!(
            Warn,
            Av,
            super::NAME,
            "{call}: fi_addr is NULL, but FI_AV_MAP handles can only be learned from it"
        );
        return Err(Error::INVAL);
    }
    if count > 0 && flags & FI_SYNC_ERR != 0 && context.is_null() {
        crate::ox_log!(
            Warn,
            Av,
            super::NAME,
            "{call}: FI_SYNC_ERR needs context to point to {count} ints"
        );
        return Err(Error::INVAL);
    }
    Ok(())
}

/// Inserts `count` addresses (`addr` is an array of `char *`, FI_ADDR_STR).
unsafe extern "C" fn insert(
    avp: *mut fid_av,
    addr: *const c_void,
    count: size_t,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    slot("fi_av_insert", || {
        // SAFETY: from_fid checks the object.
        let av = unsafe { from_fid::<Av>(avp as *const fid) }?;
        check_insert_args(av, "fi_av_insert", count, fi_addr, flags, context)?;
        if count == 0 {
            return Ok(0);
        }
        crate::boundary::nonnull(addr, "fi_av_insert", "addr")?;
        // One wait for the whole call, however many services it names.
        let deadline = Instant::now() + svc::wait_limit();
        // SAFETY: either form holds at least 8 readable bytes (a pointer,
        // or a name of at least 11 characters).
        let parsed = if unsafe { names_inline(addr as *const u8) } {
            // SAFETY: addr holds `count` NUL-terminated names back to back.
            unsafe { read_inline(addr as *const c_char, count, deadline) }
        } else {
            let strings = addr as *const *const c_char;
            (0..count)
                // SAFETY: addr holds `count` string pointers (fi_av(3), FI_ADDR_STR).
                .map(|i| unsafe { read_address(*strings.add(i), deadline) })
                .collect()
        };
        // SAFETY: output arrays per fi_av(3), checked in check_insert_args.
        unsafe { finish_insert(av, "fi_av_insert", parsed, fi_addr, flags, context) }
    })
}

/// Inserts one address given as `node` and `service`: a host and the
/// service an endpoint publishes on it ([`super::svc`]), or a whole
/// FI_ADDR_STR oxshm address as `node` with `service` NULL.
unsafe extern "C" fn insertsvc(
    avp: *mut fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    slot("fi_av_insertsvc", || {
        // SAFETY: from_fid checks the object.
        let av = unsafe { from_fid::<Av>(avp as *const fid) }?;
        check_insert_args(av, "fi_av_insertsvc", 1, fi_addr, flags, context)?;
        crate::boundary::nonnull(node, "fi_av_insertsvc", "node")?;
        let text = |p: *const c_char| {
            // SAFETY: node and service are NULL or C strings (fi_av(3)).
            (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy())
        };
        let (n, s) = (text(node), text(service));
        let name = Name::from_node_service(n.as_deref(), s.as_deref())
            .and_then(|text| Name::parse(&text))
            .map_err(|why| {
                crate::ox_log!(Warn, Av, super::NAME, "fi_av_insertsvc: {why}");
                Error::INVAL
            })?;
        let parsed = vec![resolve(Ok(name), Instant::now() + svc::wait_limit())];
        // SAFETY: output arrays of one entry, checked in check_insert_args.
        unsafe { finish_insert(av, "fi_av_insertsvc", parsed, fi_addr, flags, context) }
    })
}

unsafe extern "C" fn insertsym(
    avp: *mut fid_av,
    _: *const c_char,
    _: size_t,
    _: *const c_char,
    _: size_t,
    _: *mut fi_addr_t,
    _: u64,
    _: *mut c_void,
) -> c_int {
    av_nosys(
        avp as *const fid,
        "fi_av_insertsym",
        "oxshm addresses have no numeric node/service ranges",
    )
}

/// Removes `count` handles; all or nothing: an unknown or repeated handle
/// makes the call -FI_EINVAL and removes none.
unsafe extern "C" fn remove(
    avp: *mut fid_av,
    fi_addr: *mut fi_addr_t,
    count: size_t,
    flags: u64,
) -> c_int {
    slot("fi_av_remove", || {
        // SAFETY: from_fid checks the object.
        let av = unsafe { from_fid::<Av>(avp as *const fid) }?;
        if flags != 0 {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "fi_av_remove: flags 0x{flags:x} are not supported"
            );
            return Err(Error::BADFLAGS);
        }
        if count == 0 {
            return Ok(0);
        }
        crate::boundary::nonnull(fi_addr, "fi_av_remove", "fi_addr")?;
        // SAFETY: fi_addr holds `count` handles (fi_av(3)).
        let handles = unsafe { std::slice::from_raw_parts(fi_addr, count) };
        let mut t = av.write();
        let mut seen = HashSet::with_capacity(count);
        let mut indices = Vec::with_capacity(count);
        for (i, &h) in handles.iter().enumerate() {
            match av.index(&t, h) {
                Some(x) if seen.insert(x) => indices.push(x),
                _ => {
                    crate::ox_log!(
                        Warn,
                        Av,
                        super::NAME,
                        "fi_av_remove: fi_addr[{i}] = 0x{h:x} is not in the AV (nothing removed)"
                    );
                    return Err(Error::INVAL);
                }
            }
        }
        for x in indices {
            t.remove(x);
        }
        Ok(0)
    })
}

/// Copies the address behind `fi_addr` with its NUL into `addr` (room for
/// `*addrlen` bytes). -FI_ETOOSMALL with `*addrlen` set to the size needed
/// (and `addr` untouched) when it does not fit.
unsafe extern "C" fn lookup(
    avp: *mut fid_av,
    fi_addr: fi_addr_t,
    addr: *mut c_void,
    addrlen: *mut size_t,
) -> c_int {
    slot("fi_av_lookup", || {
        // SAFETY: from_fid checks the object.
        let av = unsafe { from_fid::<Av>(avp as *const fid) }?;
        crate::boundary::nonnull(addrlen, "fi_av_lookup", "addrlen")?;
        let Some(peer) = av.peer(fi_addr) else {
            crate::ox_log!(
                Warn,
                Av,
                super::NAME,
                "fi_av_lookup: 0x{fi_addr:x} is not in the AV"
            );
            return Err(Error::INVAL);
        };
        // SAFETY: the caller's buffer of *addrlen bytes (fi_av(3)).
        unsafe {
            copy_out(
                peer.name.as_bytes_with_nul(),
                addr,
                addrlen,
                "fi_av_lookup",
                crate::log::Subsys::Av,
            )
        }
    })
}

/// Longest string fi_av_straddr reads from `addr`.
const STRADDR_MAX: usize = 4096;

/// Prints `addr` (a string; it need not be inserted, nor valid) into `buf`,
/// truncated to `*len - 1` characters and NUL-terminated like upstream's
/// ofi_straddr; `*len` becomes the size needed. Returns `buf`, or NULL for
/// a bad AV, `addr` or `len`.
unsafe extern "C" fn straddr(
    avp: *mut fid_av,
    addr: *const c_void,
    buf: *mut c_char,
    len: *mut size_t,
) -> *const c_char {
    crate::boundary::guard_or("fi_av_straddr", std::ptr::null(), || {
        // SAFETY: from_fid checks the object.
        unsafe { from_fid::<Av>(avp as *const fid) }?;
        crate::boundary::nonnull(addr, "fi_av_straddr", "addr")?;
        crate::boundary::nonnull(len, "fi_av_straddr", "len")?;
        // SAFETY: addr is a C string (FI_ADDR_STR); strnlen stops at its NUL.
        let n = unsafe { libc::strnlen(addr as *const c_char, STRADDR_MAX) };
        // SAFETY: len is a size_t * (fi_av(3)).
        let room = if buf.is_null() { 0 } else { unsafe { *len } };
        if room > 0 {
            let k = n.min(room - 1);
            // SAFETY: buf holds `room` writable bytes; addr has n >= k bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(addr as *const c_char, buf, k);
                *buf.add(k) = 0;
            }
        }
        // SAFETY: as above.
        unsafe { *len = n + 1 };
        Ok(buf as *const c_char)
    })
}

unsafe extern "C" fn av_set(
    avp: *mut fid_av,
    _: *mut fi_av_set_attr,
    _: *mut *mut fid_av_set,
    _: *mut c_void,
) -> c_int {
    av_nosys(avp as *const fid, "fi_av_set", "oxshm has no collectives")
}

unsafe extern "C" fn insert_auth_key(
    avp: *mut fid_av,
    _: *const c_void,
    _: size_t,
    _: *mut fi_addr_t,
    _: u64,
) -> c_int {
    av_nosys(
        avp as *const fid,
        "fi_av_insert_auth_key",
        "AV authorization keys are not supported",
    )
}

unsafe extern "C" fn lookup_auth_key(
    avp: *mut fid_av,
    _: fi_addr_t,
    _: *mut c_void,
    _: *mut size_t,
) -> c_int {
    av_nosys(
        avp as *const fid,
        "fi_av_lookup_auth_key",
        "AV authorization keys are not supported",
    )
}

unsafe extern "C" fn set_user_id(avp: *mut fid_av, _: fi_addr_t, _: fi_addr_t, _: u64) -> c_int {
    av_nosys(
        avp as *const fid,
        "fi_av_set_user_id",
        "FI_AV_USER_ID is not supported",
    )
}

unsafe extern "C" fn lookup2(
    avp: *mut fid_av,
    _: fi_addr_t,
    _: *mut c_void,
    _: *mut size_t,
    _: u64,
    _: *mut fid_xpu_ctx,
) -> c_int {
    av_nosys(
        avp as *const fid,
        "fi_av_lookup2",
        "oxshm has no XPU support",
    )
}

#[cfg(test)]
mod tests {
    use super::super::ep::tests::{close_fid, Res};
    use super::*;
    use std::ptr::{null, null_mut};

    const EINVAL: c_int = -libc::EINVAL;

    fn addr(ep_id: u32) -> Address {
        Address {
            pid: 77,
            ep_id,
            nonce: 0xfeed_0000_0000_0000 | ep_id as u64,
        }
    }

    fn av_ref<'a>(av: *mut fid_av) -> &'a Av {
        // SAFETY: test AVs are live oxshm AVs.
        unsafe { from_fid::<Av>(av as *const fid) }.unwrap()
    }

    /// fi_av_insert of `names` (C strings); returns (rc, fi_addr, sync_err).
    fn insert_names(
        av: *mut fid_av,
        names: &[Option<&CString>],
        flags: u64,
    ) -> (c_int, Vec<fi_addr_t>, Vec<c_int>) {
        let ptrs: Vec<*const c_char> = names
            .iter()
            .map(|n| n.map_or(null(), |c| c.as_ptr()))
            .collect();
        let mut out = vec![0xdead_u64; names.len()];
        let mut errs = vec![-1; names.len()];
        // SAFETY: arrays of names.len() entries.
        let rc = unsafe {
            insert(
                av,
                ptrs.as_ptr() as *const c_void,
                names.len(),
                out.as_mut_ptr(),
                flags,
                errs.as_mut_ptr() as *mut c_void,
            )
        };
        (rc, out, errs)
    }

    #[test]
    fn table_takes_the_lowest_free_index() {
        let mut t = Table::default();
        assert_eq!(t.insert(addr(1)).unwrap(), 0);
        assert_eq!(t.insert(addr(2)).unwrap(), 1);
        assert_eq!(t.insert(addr(3)).unwrap(), 2);
        t.remove(1);
        t.remove(0);
        assert_eq!(t.live, 1);
        assert_eq!(t.insert(addr(4)).unwrap(), 0);
        assert_eq!(t.insert(addr(5)).unwrap(), 1);
        assert_eq!(t.insert(addr(6)).unwrap(), 3);
        assert_eq!(t.slots[0].generation, 2);
        assert!(!t.by_addr.contains_key(&addr(1)));
    }

    #[test]
    fn map_handles_carry_a_generation() {
        let r = Res::new();
        let avp = r.av(fi_av_type::FI_AV_MAP);
        let av = av_ref(avp);
        let a = addr(1).to_cstring();
        let (rc, h, _) = insert_names(avp, &[Some(&a)], 0);
        assert_eq!(rc, 1);
        assert_eq!(h[0], 1 << 32);
        assert_eq!(av.peer(h[0]).unwrap().addr, addr(1));
        assert_eq!(av.find(&addr(1)), Some(h[0]));
        // An index alone is not a MAP handle.
        assert!(av.peer(0).is_none());
        let mut hs = h.clone();
        // SAFETY: one handle.
        assert_eq!(unsafe { remove(avp, hs.as_mut_ptr(), 1, 0) }, 0);
        let (_, h2, _) = insert_names(avp, &[Some(&a)], 0);
        assert_eq!(h2[0], 2 << 32);
        // The stale handle no longer reaches anything.
        assert!(av.peer(h[0]).is_none());
        // SAFETY: one stale handle.
        assert_eq!(unsafe { remove(avp, hs.as_mut_ptr(), 1, 0) }, EINVAL);
        // MAP insertions need somewhere to put the handles.
        let p = a.as_ptr();
        // SAFETY: one name, no output array.
        let rc = unsafe {
            insert(
                avp,
                &p as *const *const c_char as *const c_void,
                1,
                null_mut(),
                0,
                null_mut(),
            )
        };
        assert_eq!(rc, EINVAL);
        assert_eq!(av.len(), 1);
        // SAFETY: a live AV.
        assert_eq!(unsafe { close_fid(avp as *mut fid) }, 0);
    }

    #[test]
    fn open_checks_its_attributes() {
        let r = Res::new();
        let open_with = |a: &mut fi_av_attr| {
            let mut av = null_mut();
            // SAFETY: valid pointers.
            let rc = unsafe { open(r.domain, a, &mut av, null_mut()) };
            (rc, av)
        };
        // SAFETY: all-zero is a valid fi_av_attr.
        let mut a: fi_av_attr = unsafe { std::mem::zeroed() };
        let (rc, av) = open_with(&mut a);
        assert_eq!(rc, 0);
        assert_eq!(a.r#type, fi_av_type::FI_AV_TABLE as u32);
        assert_eq!(av_ref(av).kind, Kind::Table);
        // The AV holds its domain.
        assert_eq!(r.domain().hdr.refs(), 1);
        // SAFETY: the live domain, then the live AV.
        unsafe {
            assert_eq!(close_fid(r.domain as *mut fid), -libc::EBUSY);
            assert_eq!(close_fid(av as *mut fid), 0);
        }
        for (t, flags, named, rc) in [
            (7, 0, false, EINVAL),
            (2, FI_EVENT, false, -(Error::BADFLAGS.0)),
            (2, 1 << 3, false, -(Error::BADFLAGS.0)),
            (2, FI_READ, false, EINVAL),
            (2, FI_READ, true, -libc::ENOSYS),
            (2, 0, true, -libc::ENOSYS),
        ] {
            a.r#type = t;
            a.flags = flags;
            a.name = if named { c"shared".as_ptr() } else { null() };
            let (got, av) = open_with(&mut a);
            assert_eq!(got, rc, "type {t} flags 0x{flags:x} named {named}");
            assert!(av.is_null());
        }
        a.name = null();
        a.flags = FI_SYMMETRIC;
        a.r#type = fi_av_type::FI_AV_MAP as u32;
        a.count = usize::MAX;
        let (rc, av) = open_with(&mut a);
        assert_eq!(rc, 0);
        assert_eq!(a.r#type, fi_av_type::FI_AV_MAP as u32);
        // SAFETY: the live AV; its deprecated bind is refused.
        unsafe {
            assert_eq!(bind(av as *mut fid, null_mut(), 0), -libc::ENOSYS);
            assert_eq!(close_fid(av as *mut fid), 0);
            let mut out = null_mut();
            assert_eq!(open(r.domain, null_mut(), &mut out, null_mut()), EINVAL);
            assert_eq!(open(null_mut(), &mut a, &mut out, null_mut()), EINVAL);
            assert_eq!(open(r.domain, &mut a, null_mut(), null_mut()), EINVAL);
        }
    }

    #[test]
    fn insert_reports_each_address() {
        let r = Res::new();
        let avp = r.av(fi_av_type::FI_AV_TABLE);
        let good = [addr(1).to_cstring(), addr(2).to_cstring()];
        let bad = CString::new("fi_oxshm://1/2/3").unwrap();
        let (rc, h, errs) = insert_names(
            avp,
            &[Some(&good[0]), Some(&bad), None, Some(&good[1])],
            FI_SYNC_ERR,
        );
        assert_eq!(rc, 2);
        assert_eq!(h, vec![0, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 1]);
        assert_eq!(errs, vec![0, libc::EINVAL, libc::EINVAL, 0]);
        // Without FI_SYNC_ERR the context array is not touched.
        let (rc, h, errs) = insert_names(avp, &[Some(&bad), Some(&good[0])], 0);
        assert_eq!((rc, h), (1, vec![FI_ADDR_NOTAVAIL, 2]));
        assert_eq!(errs, vec![-1, -1]);
        // Whole-call refusals write nothing.
        let (rc, h, _) = insert_names(avp, &[Some(&good[0])], FI_AV_USER_ID);
        assert_eq!((rc, h[0]), (-(Error::BADFLAGS.0), 0xdead));
        let (rc, _, _) = insert_names(avp, &[Some(&good[0])], 1 << 3);
        assert_eq!(rc, -(Error::BADFLAGS.0));
        // SAFETY: FI_SYNC_ERR with no context array; NULL addr with count 1.
        unsafe {
            let p = good[0].as_ptr();
            let pp = &p as *const *const c_char as *const c_void;
            assert_eq!(
                insert(avp, pp, 1, null_mut(), FI_SYNC_ERR, null_mut()),
                EINVAL
            );
            assert_eq!(insert(avp, null(), 1, null_mut(), 0, null_mut()), EINVAL);
            assert_eq!(insert(avp, null(), 0, null_mut(), 0, null_mut()), 0);
            // A table needs no output array.
            assert_eq!(insert(avp, pp, 1, null_mut(), FI_MORE, null_mut()), 1);
        }
        let av = av_ref(avp);
        assert_eq!(av.len(), 4);
        // Duplicates are separate entries; find gives the lowest.
        assert_eq!(av.find(&addr(1)), Some(0));
        // SAFETY: a live AV.
        assert_eq!(unsafe { close_fid(avp as *mut fid) }, 0);
    }

    #[test]
    fn insertsvc_takes_a_whole_address_or_node_and_service() {
        let r = Res::new();
        let avp = r.av(fi_av_type::FI_AV_TABLE);
        let a = addr(9).to_cstring();
        let mut h = 0u64;
        // SAFETY: C strings and one output entry.
        unsafe {
            assert_eq!(insertsvc(avp, a.as_ptr(), null(), &mut h, 0, null_mut()), 1);
            assert_eq!(h, 0);
            assert_eq!(
                insertsvc(avp, a.as_ptr(), c"1".as_ptr(), &mut h, 0, null_mut()),
                EINVAL
            );
            assert_eq!(
                insertsvc(avp, null(), null(), &mut h, 0, null_mut()),
                EINVAL
            );
            // This host without a service names no endpoint.
            assert_eq!(
                insertsvc(avp, c"localhost".as_ptr(), null(), &mut h, 0, null_mut()),
                0
            );
            assert_eq!(h, FI_ADDR_NOTAVAIL);
            // Another host is refused outright.
            assert_eq!(
                insertsvc(
                    avp,
                    c"host.invalid".as_ptr(),
                    c"1".as_ptr(),
                    &mut h,
                    0,
                    null_mut()
                ),
                EINVAL
            );
            assert_eq!(
                insertsym(avp, null(), 1, null(), 1, null_mut(), 0, null_mut()),
                -libc::ENOSYS
            );
            assert_eq!(close_fid(avp as *mut fid), 0);
        }
    }

    #[test]
    fn remove_is_all_or_nothing() {
        let r = Res::new();
        let avp = r.av(fi_av_type::FI_AV_TABLE);
        let names: Vec<CString> = (1..=3).map(|i| addr(i).to_cstring()).collect();
        let refs: Vec<Option<&CString>> = names.iter().map(Some).collect();
        assert_eq!(insert_names(avp, &refs, 0).0, 3);
        let av = av_ref(avp);
        // SAFETY: arrays of the counts passed.
        unsafe {
            let mut bad = [0u64, 5];
            assert_eq!(remove(avp, bad.as_mut_ptr(), 2, 0), EINVAL);
            let mut twice = [1u64, 1];
            assert_eq!(remove(avp, twice.as_mut_ptr(), 2, 0), EINVAL);
            assert_eq!(av.len(), 3);
            let mut one = [1u64];
            assert_eq!(
                remove(avp, one.as_mut_ptr(), 1, FI_AUTH_KEY),
                -(Error::BADFLAGS.0)
            );
            assert_eq!(remove(avp, one.as_mut_ptr(), 1, 0), 0);
            assert_eq!(remove(avp, null_mut(), 1, 0), EINVAL);
            assert_eq!(remove(avp, null_mut(), 0, 0), 0);
            assert_eq!(av.len(), 2);
            assert!(av.peer(1).is_none());
            assert_eq!(av.peer(2).unwrap().addr, addr(3));
            assert_eq!(close_fid(avp as *mut fid), 0);
        }
    }

    #[test]
    fn lookup_and_straddr() {
        let r = Res::new();
        let avp = r.av(fi_av_type::FI_AV_TABLE);
        let a = addr(12).to_cstring();
        assert_eq!(insert_names(avp, &[Some(&a)], 0).0, 1);
        let want = a.as_bytes_with_nul();
        let mut buf = [b'#'; 80];
        // SAFETY: buffers of the sizes passed.
        unsafe {
            let mut len = 4usize;
            let p = buf.as_mut_ptr() as *mut c_void;
            assert_eq!(lookup(avp, 0, p, &mut len), -(Error::TOOSMALL.0));
            assert_eq!((len, buf[0]), (want.len(), b'#'));
            let mut len = buf.len();
            assert_eq!(lookup(avp, 0, p, &mut len), 0);
            assert_eq!(&buf[..len], want);
            assert_eq!(lookup(avp, 1, p, &mut len), EINVAL);
            assert_eq!(lookup(avp, FI_ADDR_NOTAVAIL, p, &mut len), EINVAL);
            assert_eq!(lookup(avp, 0, p, null_mut()), EINVAL);
            let mut len = 0usize;
            assert_eq!(lookup(avp, 0, null_mut(), &mut len), -(Error::TOOSMALL.0));

            let b = buf.as_mut_ptr() as *mut c_char;
            let src = a.as_ptr() as *const c_void;
            let mut len = 10usize;
            assert_eq!(straddr(avp, src, b, &mut len), b as *const c_char);
            assert_eq!(len, want.len());
            assert_eq!(std::ffi::CStr::from_ptr(b).to_bytes(), &want[..9]);
            let mut len = buf.len();
            assert_eq!(
                straddr(avp, c"anything".as_ptr() as *const c_void, b, &mut len),
                b as *const c_char
            );
            assert_eq!(
                (len, std::ffi::CStr::from_ptr(b).to_bytes()),
                (9, &b"anything"[..])
            );
            let mut len = 0usize;
            assert_eq!(straddr(avp, src, null_mut(), &mut len), null());
            assert_eq!(len, want.len());
            assert_eq!(straddr(avp, null(), b, &mut len), null());
            assert_eq!(straddr(avp, src, b, null_mut()), null());
            assert_eq!(straddr(null_mut(), src, b, &mut len), null());
            assert_eq!(lookup2(avp, 0, p, &mut len, 0, null_mut()), -libc::ENOSYS);
            assert_eq!(set_user_id(avp, 0, 0, 0), -libc::ENOSYS);
            assert_eq!(close_fid(avp as *mut fid), 0);
        }
    }

    #[test]
    fn every_table_slot_is_set() {
        let words = std::mem::size_of::<fi_ops_av>() / 8 - 1;
        let p = &OPS_AV as *const fi_ops_av as *const usize;
        // SAFETY: fi_ops_av is a size_t and `words` fn pointers.
        assert!((1..=words).all(|i| unsafe { *p.add(i) } != 0));
    }
}
