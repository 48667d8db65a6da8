//! oxshm endpoints (`fi_endpoint`, `fi_endpoint2`): reliable connectionless
//! (FI_EP_RDM) endpoints, their binding to an AV, an EQ, CQs and counters,
//! `fi_enable`, names (`fi_getname`/`fi_setname`), options
//! (`fi_getopt`/`fi_setopt`) and operation flags. The data-transfer tables
//! (msg, rma, tagged, atomic, collective) are fully populated: messages,
//! RMA and atomics go to `ops.rs`, collectives answer -FI_ENOSYS.
//!
//! # Addresses (FI_ADDR_STR)
//!
//! An oxshm endpoint's name, as `fi_getname` returns it and `fi_av_insert`
//! takes it, is the NUL-terminated string
//!
//! ```text
//! fi_oxshm://<pid>/<ep-id>/<nonce>
//! ```
//!
//! - `pid`: decimal, 1..=2147483647, no sign or leading zeros: the process
//!   that owns the endpoint (peers use it to tell whether it is still alive).
//! - `ep-id`: decimal `u32`, no leading zeros: unique among the endpoints
//!   that process opened.
//! - `nonce`: exactly 16 lowercase hex digits, random per endpoint, so that a
//!   later process that reuses the pid (and counts its endpoints from 1
//!   again) never produces a name a peer still holds for the dead one.
//!
//! Only this canonical spelling is accepted, so two addresses are the same
//! endpoint exactly when their strings are equal. A name is at most 49
//! characters; with its NUL it always fits in [`ADDR_MAX`] (64, libfabric's
//! FI_NAME_MAX) bytes. The transport maps an address to the POSIX
//! shared-memory object [`Address::segment_name`]
//! (`/oxshm-<pid>-<ep-id>-<nonce>`).
//!
//! An endpoint gets a fresh name when it opens (or the one in
//! `info->src_addr`); `fi_setname` may replace it before `fi_enable`, with
//! an address of the calling process that no other live endpoint of the
//! process uses (-FI_EADDRINUSE otherwise).
//!
//! # Binding and enabling
//!
//! `fi_ep_bind` takes, before `fi_enable` (-FI_EOPBADSTATE after): one oxshm
//! AV of the endpoint's domain (flags 0; another domain's: -FI_EDOMAIN), one
//! EQ (flags 0), a CQ per direction (FI_TRANSMIT, FI_RECV, with optional
//! FI_SELECTIVE_COMPLETION) and a counter per event (FI_SEND, FI_RECV,
//! FI_READ, FI_WRITE; FI_REMOTE_READ/FI_REMOTE_WRITE need FI_RMA_EVENT).
//! Unknown flag bits, or a CQ binding that names no direction, get
//! -FI_EBADFLAGS (a counter bound with flags 0 counts nothing and is not
//! held, as upstream); a second object for a place already taken, a
//! NULL, foreign or other-class object get -FI_EINVAL. `fi_enable` needs the
//! AV (-FI_ENOAV). The endpoint holds its domain and everything bound to it:
//! their `fi_close` returns -FI_EBUSY until the endpoint is closed.
//!
//! # For the data path and the MR glue
//!
//! - [`ep_from_fid`] checks an incoming `struct fid *` and returns the [`Ep`].
//! - [`Ep::enabled`] is `Some` once `fi_enable` succeeded: the endpoint's
//!   final name and [`Bindings`] (AV, EQ, CQ per direction, counter per
//!   event), frozen and readable without a lock.
//! - [`Ep::hold_mr`] / [`Ep::release_mr`] count MRs bound to the endpoint
//!   (FI_MR_ENDPOINT); `fi_close` of the endpoint fails with -FI_EBUSY while
//!   any is bound (fi_mr(3): close the MR before its endpoint).
//! - [`Ep::limit`] gives the thresholds set with the FI_OPT_MAX_*_SIZE and
//!   FI_OPT_INJECT_*_SIZE options, [`Ep::op_flags`] the default operation
//!   flags (tx/rx_attr op_flags, FI_SETOPSFLAG), [`Ep::min_multi_recv`]
//!   FI_OPT_MIN_MULTI_RECV; `tx_size_left`/`rx_size_left` report the queue
//!   size less the operations in flight and the receives posted.

use super::av::Av;
use super::cntr::Cntr;
use super::cq::Cq;
use super::domain::Domain;
use super::eq::Eq;
use super::object::{from_fid, nosys, slot, slot_ssize, Header, Object};
use super::svc::Name;
use crate::abi::atomic::fi_ops_atomic;
use crate::abi::cm::{fi_ops_cm, fid_mc};
use crate::abi::collective::{fi_msg_collective, fi_ops_collective};
use crate::abi::domain::{fi_datatype_raw, fi_op_raw, fid_domain};
use crate::abi::endpoint::*;
use crate::abi::fabric::*;
use crate::abi::rma::fi_ops_rma;
use crate::abi::tagged::fi_ops_tagged;
use crate::abi::xpu::fid_xpu_ep;
use crate::error::{Error, Result};
use libc::{c_int, c_void, size_t, ssize_t};
use once_cell::sync::Lazy;
use std::collections::BTreeSet;
use std::ffi::CString;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

mod address;
mod cm;
mod ops_ep;
pub use address::*;
pub(super) use cm::copy_out;
use cm::*;
use ops_ep::*;

/// Tag of oxshm endpoints (see [`super::object`]).
pub const TAG_EP: u64 = u64::from_be_bytes(*b"oxEP\0\0\0\0");

/// Bytes that always hold an oxshm address with its NUL (FI_NAME_MAX).
pub const ADDR_MAX: usize = 64;

/// Default FI_OPT_MIN_MULTI_RECV, as upstream's providers use.
const DEFAULT_MIN_MULTI_RECV: usize = 16384;

// Addresses: ep/address.rs

// ---------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------

/// An object an endpoint is bound to. It is held (its `fi_close` fails with
/// -FI_EBUSY) until the endpoint closes.
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    fid: NonNull<fid>,
    hdr: NonNull<Header>,
    /// The `fi_ep_bind` flags of this binding.
    pub flags: u64,
}

impl Bound {
    /// Holds `obj` for a binding with `flags`.
    pub fn hold<T: Object>(obj: &T, flags: u64) -> Bound {
        obj.header().hold();
        Bound {
            fid: NonNull::from(obj).cast(),
            hdr: NonNull::from(obj.header()),
            flags,
        }
    }

    /// The bound object as a `T`; None when it is another kind of object.
    pub fn get<T: Object>(&self) -> Option<&T> {
        // SAFETY: the object is held by this binding, so it is live and
        // starts with its struct fid.
        let f = unsafe { self.fid.as_ref() };
        // SAFETY: f.ops is the live object's table.
        if f.fclass != T::FCLASS || !unsafe { super::object::ops_are::<T>(f.ops) } {
            return None;
        }
        // SAFETY: class and ops are T's, so the object is a T.
        Some(unsafe { self.fid.cast::<T>().as_ref() })
    }

    /// The bound object's `struct fid`.
    pub fn fid(&self) -> *mut fid {
        self.fid.as_ptr()
    }

    fn release(&self) {
        // SAFETY: held by this binding, so still live.
        unsafe { self.hdr.as_ref().release() };
    }
}

/// What an endpoint is bound to.
#[derive(Clone, Default, Debug)]
pub struct Bindings {
    pub av: Option<Bound>,
    pub eq: Option<Bound>,
    /// Completion queues by direction, as [`CQ_DIRS`] orders them.
    pub cq: [Option<Bound>; 2],
    /// Counters by event, as [`CNTR_EVENTS`] orders them.
    pub cntr: [Option<Bound>; 6],
}

impl Bindings {
    /// The bound AV (an RDM endpoint has one once enabled).
    pub fn av(&self) -> Option<&Av> {
        self.av.as_ref().and_then(|b| b.get::<Av>())
    }

    pub fn eq(&self) -> Option<&Eq> {
        self.eq.as_ref().and_then(|b| b.get::<Eq>())
    }

    /// The CQ bound for FI_TRANSMIT (`recv` false) or FI_RECV.
    pub fn cq(&self, recv: bool) -> Option<&Cq> {
        self.cq[recv as usize].as_ref().and_then(|b| b.get::<Cq>())
    }

    /// The counter bound for event `CNTR_EVENTS[i]`.
    pub fn cntr(&self, i: usize) -> Option<&Cntr> {
        self.cntr.get(i)?.as_ref().and_then(|b| b.get::<Cntr>())
    }

    fn all(&self) -> impl Iterator<Item = &Bound> {
        self.av
            .iter()
            .chain(self.eq.iter())
            .chain(self.cq.iter().flatten())
            .chain(self.cntr.iter().flatten())
    }
}

/// CQ binding directions: the `fi_ep_bind` flag and its name.
pub const CQ_DIRS: [(u64, &str); 2] = [(FI_TRANSMIT, "FI_TRANSMIT"), (FI_RECV, "FI_RECV")];

/// Counter events: the `fi_ep_bind` flag and its name.
pub const CNTR_EVENTS: [(u64, &str); 6] = [
    (FI_SEND, "FI_SEND"),
    (FI_RECV, "FI_RECV"),
    (FI_READ, "FI_READ"),
    (FI_WRITE, "FI_WRITE"),
    (FI_REMOTE_READ, "FI_REMOTE_READ"),
    (FI_REMOTE_WRITE, "FI_REMOTE_WRITE"),
];

/// A place in [`Bindings`] that one CQ or counter binding fills.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Cq(usize),
    Cntr(usize),
}

/// The directions a CQ binding with `flags` fills (fi_endpoint(3)).
pub fn cq_roles(flags: u64) -> Result<Vec<Role>> {
    let known = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
    if flags & !known != 0 {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: CQ flags 0x{:x} are not FI_TRANSMIT, FI_RECV or FI_SELECTIVE_COMPLETION",
            flags & !known
        );
        return Err(Error::BADFLAGS);
    }
    let roles: Vec<Role> = CQ_DIRS
        .iter()
        .enumerate()
        .filter(|(_, (bit, _))| flags & bit != 0)
        .map(|(i, _)| Role::Cq(i))
        .collect();
    if roles.is_empty() {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: a CQ binding needs FI_TRANSMIT and/or FI_RECV (flags 0x{flags:x})"
        );
        return Err(Error::BADFLAGS);
    }
    Ok(roles)
}

/// The events a counter binding with `flags` fills, for an endpoint with
/// capabilities `caps` (remote events need FI_RMA_EVENT).
pub fn cntr_roles(caps: u64, flags: u64) -> Result<Vec<Role>> {
    let known = CNTR_EVENTS.iter().fold(0, |a, (b, _)| a | b);
    if flags == 0 {
        // Upstream binds nothing for an empty set, and programs rely on it
        // (fabtests binds `info->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE)`).
        crate::ox_log!(
            Info,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: counter bound with flags 0 counts no event"
        );
        return Ok(Vec::new());
    }
    if flags & !known != 0 {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: counter flags 0x{flags:x} are not a set of FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE"
        );
        return Err(Error::BADFLAGS);
    }
    if flags & (FI_REMOTE_READ | FI_REMOTE_WRITE) != 0 && caps & FI_RMA_EVENT == 0 {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: FI_REMOTE_READ/FI_REMOTE_WRITE counters need an endpoint opened with FI_RMA_EVENT"
        );
        return Err(Error::INVAL);
    }
    Ok(CNTR_EVENTS
        .iter()
        .enumerate()
        .filter(|(_, (bit, _))| flags & bit != 0)
        .map(|(i, _)| Role::Cntr(i))
        .collect())
}

/// Fills `roles` of `b` with `obj` (held once per role), or changes nothing
/// when one of them is taken: an endpoint has one CQ per direction and one
/// counter per event (fi_endpoint(3)).
pub fn attach<T: Object>(b: &mut Bindings, roles: &[Role], obj: &T, flags: u64) -> Result<()> {
    for r in roles {
        let (taken, what) = match *r {
            Role::Cq(i) => (b.cq[i].is_some(), CQ_DIRS[i].1),
            Role::Cntr(i) => (b.cntr[i].is_some(), CNTR_EVENTS[i].1),
        };
        if taken {
            crate::ox_log!(
                Warn,
                EpCtrl,
                super::NAME,
                "fi_ep_bind: the endpoint already has a {} for {what}",
                T::NAME
            );
            return Err(Error::INVAL);
        }
    }
    for r in roles {
        let slot = match *r {
            Role::Cq(i) => &mut b.cq[i],
            Role::Cntr(i) => &mut b.cntr[i],
        };
        *slot = Some(Bound::hold(obj, flags));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The endpoint object
// ---------------------------------------------------------------------------

/// An enabled endpoint's frozen state: nothing here changes after
/// `fi_enable`, so the data path reads it without a lock.
#[derive(Debug)]
pub struct Enabled {
    pub name: Address,
    pub bindings: Bindings,
}

struct State {
    name: Address,
    /// The service this endpoint publishes once enabled ([`super::svc`]).
    service: Option<String>,
    /// Its directory entry, withdrawn when the endpoint closes.
    published: Option<super::svc::Published>,
    enabled: bool,
    bind: Bindings,
}

/// Sizes an endpoint option may lower: FI_OPT_MAX_*_SIZE, FI_OPT_INJECT_*_SIZE.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Limit {
    MaxMsg = 0,
    MaxTagged,
    MaxRma,
    MaxAtomic,
    InjectMsg,
    InjectTagged,
    InjectRma,
    InjectAtomic,
}

#[repr(C)]
pub struct Ep {
    pub fid: fid_ep,
    pub hdr: Header,
    domain: *const Domain,
    /// Capabilities the endpoint was opened with.
    pub caps: u64,
    /// `ep_attr->auth_key`, when the application gave one.
    pub auth_key: Option<Vec<u8>>,
    /// Transmit and receive queue depths (tx_attr/rx_attr size).
    pub tx_size: usize,
    pub rx_size: usize,
    tx_op_flags: AtomicU64,
    rx_op_flags: AtomicU64,
    min_multi_recv: AtomicUsize,
    hmem_p2p: AtomicI32,
    cuda_api_permitted: AtomicBool,
    limits: [AtomicUsize; 8],
    /// Provider ceilings of `limits`.
    ceilings: [usize; 8],
    /// MRs bound to this endpoint (FI_MR_ENDPOINT).
    mrs: AtomicUsize,
    state: Mutex<State>,
    enabled: OnceLock<Enabled>,
    /// The data path, from `fi_enable` to `fi_close`.
    xfer: OnceLock<std::sync::Arc<super::xfer::Xfer>>,
}

// SAFETY: #[repr(C)] with fid_ep (which starts with struct fid) first.
unsafe impl Object for Ep {
    const TAG: u64 = TAG_EP;
    const FCLASS: usize = FI_CLASS_EP as usize;
    const NAME: &'static str = "endpoint";
    fn header(&self) -> &Header {
        &self.hdr
    }
    fn fi_ops() -> *mut fi_ops {
        &FI_OPS as *const fi_ops as *mut fi_ops
    }
}

/// Checks that `p` is a live oxshm endpoint and returns it (for the MR glue
/// and the data path).
///
/// # Safety
/// `p` is NULL or points to readable memory that starts with a `struct fid`.
pub unsafe fn ep_from_fid<'a>(p: *const fid) -> Result<&'a Ep> {
    // SAFETY: same contract.
    unsafe { from_fid::<Ep>(p) }
}

impl Ep {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn domain(&self) -> &Domain {
        // SAFETY: the domain cannot close while this endpoint holds it.
        unsafe { &*self.domain }
    }

    /// The endpoint's current name.
    pub fn name(&self) -> Address {
        match self.enabled.get() {
            Some(e) => e.name,
            None => self.lock().name,
        }
    }

    /// The frozen state once `fi_enable` succeeded.
    pub fn enabled(&self) -> Option<&Enabled> {
        self.enabled.get()
    }

    /// The data path of an enabled endpoint; -FI_EOPBADSTATE before
    /// `fi_enable`.
    pub fn xfer(&self, call: &str) -> Result<&super::xfer::Xfer> {
        match self.xfer.get() {
            Some(x) => Ok(x),
            None => {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::NAME,
                    "{call}: the endpoint is not enabled (fi_enable)"
                );
                Err(Error::OPBADSTATE)
            }
        }
    }

    /// Default operation flags for transmit (`FI_TRANSMIT`) or receive.
    pub fn op_flags(&self, recv: bool) -> u64 {
        if recv {
            self.rx_op_flags.load(Ordering::Acquire)
        } else {
            self.tx_op_flags.load(Ordering::Acquire)
        }
    }

    pub fn min_multi_recv(&self) -> usize {
        self.min_multi_recv.load(Ordering::Acquire)
    }

    pub fn limit(&self, l: Limit) -> usize {
        self.limits[l as usize].load(Ordering::Acquire)
    }

    /// Records one more MR bound to this endpoint.
    pub fn hold_mr(&self) {
        self.mrs.fetch_add(1, Ordering::AcqRel);
    }

    /// Records that a bound MR went away (closed or unbound).
    pub fn release_mr(&self) {
        self.mrs.fetch_sub(1, Ordering::AcqRel);
    }

    pub fn bound_mrs(&self) -> usize {
        self.mrs.load(Ordering::Acquire)
    }

    fn enable(&self) -> Result<i32> {
        let mut st = self.lock();
        if st.enabled {
            return Ok(0);
        }
        if st.bind.av.is_none() {
            crate::ox_log!(
                Warn,
                EpCtrl,
                super::NAME,
                "fi_enable: an FI_EP_RDM endpoint needs an address vector bound first (fi_ep_bind)"
            );
            return Err(Error::NOAV);
        }
        let _ = self.enabled.set(Enabled {
            name: st.name,
            bindings: st.bind.clone(),
        });
        let x = super::xfer::Xfer::start(self, st.name)?;
        // Published once the inbox exists: an entry without one is stale.
        if let Some(svc) = st.service.clone() {
            match super::svc::publish(&svc, st.name) {
                Ok(p) => st.published = Some(p),
                Err(e) => {
                    x.stop();
                    return Err(e);
                }
            }
        }
        let _ = self.xfer.set(x);
        st.enabled = true;
        Ok(0)
    }

    fn refuse_if_enabled(&self, st: &State, what: &str) -> Result<()> {
        if st.enabled {
            crate::ox_log!(
                Warn,
                EpCtrl,
                super::NAME,
                "{what}: the endpoint is already enabled"
            );
            return Err(Error::OPBADSTATE);
        }
        Ok(())
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

static OPS_EP: fi_ops_ep = fi_ops_ep {
    size: std::mem::size_of::<fi_ops_ep>(),
    cancel: Some(cancel),
    getopt: Some(getopt),
    setopt: Some(setopt),
    tx_ctx: Some(tx_ctx),
    rx_ctx: Some(rx_ctx),
    rx_size_left: Some(rx_size_left),
    tx_size_left: Some(tx_size_left),
    export_xpu: Some(export_xpu),
};

static OPS_CM: fi_ops_cm = fi_ops_cm {
    size: std::mem::size_of::<fi_ops_cm>(),
    setname: Some(setname),
    getname: Some(getname),
    getpeer: Some(getpeer),
    connect: Some(connect),
    listen: Some(listen),
    accept: Some(accept),
    reject: Some(reject),
    shutdown: Some(shutdown),
    join: Some(join),
};

// ---------------------------------------------------------------------------
// fi_endpoint
// ---------------------------------------------------------------------------

/// What `fi_endpoint` takes from `struct fi_info`.
struct Config {
    caps: u64,
    name: Option<Address>,
    service: Option<String>,
    tx_op_flags: u64,
    rx_op_flags: u64,
    tx_size: usize,
    rx_size: usize,
    max_msg_size: usize,
    inject_size: usize,
    auth_key: Option<Vec<u8>>,
}

/// Operation flags an endpoint may default to (FI_SETOPSFLAG, op_flags).
const TX_OP_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE
    | FI_FENCE;
const RX_OP_FLAGS: u64 = FI_COMPLETION | FI_MULTI_RECV;

fn no_data(what: std::fmt::Arguments<'_>) -> Error {
    crate::ox_log!(Warn, EpCtrl, super::NAME, "fi_endpoint: {what}");
    Error::NODATA
}

fn check_op_flags(flags: u64, allowed: u64, dir: &str) -> Result<()> {
    if flags & !allowed != 0 {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "{dir} operation flags 0x{:x} are not supported",
            flags & !allowed
        );
        return Err(Error::BADFLAGS);
    }
    Ok(())
}

impl Config {
    /// Checks `info` against what oxshm offers (-FI_ENODATA for a request it
    /// cannot meet, as upstream's ofi_check_info) and reads it. Reads only
    /// fields libfabric 1.0 already had.
    ///
    /// # Safety
    /// `info` is a valid `fi_info`; its attribute pointers are NULL or valid.
    unsafe fn from_info(info: &fi_info, api_version: u32) -> Result<Config> {
        let offer = super::info::offers(api_version).remove(0);
        let (Some(otx), Some(orx), Some(oep)) = (offer.tx, offer.rx, offer.ep) else {
            return Err(Error::OTHER);
        };
        let caps = if info.caps == 0 {
            offer.caps
        } else {
            info.caps
        };
        if caps & !offer.caps != 0 {
            return Err(no_data(format_args!(
                "capabilities 0x{:x} are not offered by oxshm",
                caps & !offer.caps
            )));
        }
        let fmt = info.addr_format as c_int;
        if fmt != FI_FORMAT_UNSPEC && fmt != FI_ADDR_STR {
            return Err(no_data(format_args!(
                "address format {fmt} is not FI_ADDR_STR"
            )));
        }
        let (name, service) = if info.src_addr.is_null() || info.src_addrlen == 0 {
            (None, None)
        } else {
            // SAFETY: src_addr holds src_addrlen bytes (fi_getinfo(3)).
            match unsafe { name_from_c(info.src_addr, info.src_addrlen) } {
                Ok(Name::Endpoint(a)) => {
                    check_own(&a)?;
                    (Some(a), None)
                }
                // A host name: a fresh endpoint name, publishing the
                // service if there is one.
                Ok(Name::Host { service, .. }) => (None, service),
                Err(why) => {
                    crate::ox_log!(
                        Warn,
                        EpCtrl,
                        super::NAME,
                        "fi_endpoint: info->src_addr is not an oxshm address: {why}"
                    );
                    return Err(Error::INVAL);
                }
            }
        };
        let mut c = Config {
            caps,
            name,
            service,
            tx_op_flags: 0,
            rx_op_flags: 0,
            tx_size: otx.size,
            rx_size: orx.size,
            max_msg_size: oep.max_msg_size,
            inject_size: otx.inject_size,
            auth_key: None,
        };
        if !info.tx_attr.is_null() {
            // SAFETY: a non-NULL tx_attr of a valid fi_info.
            let t = unsafe { &*info.tx_attr };
            if t.caps & !offer.caps != 0 {
                return Err(no_data(format_args!(
                    "tx_attr capabilities 0x{:x} are not offered",
                    t.caps & !offer.caps
                )));
            }
            if t.size > otx.size || t.inject_size > otx.inject_size {
                return Err(no_data(format_args!(
                    "tx_attr size {} / inject_size {} exceed oxshm's {} / {}",
                    t.size, t.inject_size, otx.size, otx.inject_size
                )));
            }
            if t.iov_limit > otx.iov_limit || t.rma_iov_limit > otx.rma_iov_limit {
                return Err(no_data(format_args!(
                    "tx_attr iov_limit {} / rma_iov_limit {} exceed oxshm's {} / {}",
                    t.iov_limit, t.rma_iov_limit, otx.iov_limit, otx.rma_iov_limit
                )));
            }
            check_op_flags(t.op_flags, TX_OP_FLAGS, "tx_attr")?;
            c.tx_op_flags = t.op_flags;
            if t.size != 0 {
                c.tx_size = t.size;
            }
        }
        if !info.rx_attr.is_null() {
            // SAFETY: a non-NULL rx_attr of a valid fi_info.
            let r = unsafe { &*info.rx_attr };
            if r.caps & !offer.caps != 0 {
                return Err(no_data(format_args!(
                    "rx_attr capabilities 0x{:x} are not offered",
                    r.caps & !offer.caps
                )));
            }
            if r.size > orx.size || r.iov_limit > orx.iov_limit {
                return Err(no_data(format_args!(
                    "rx_attr size {} / iov_limit {} exceed oxshm's {} / {}",
                    r.size, r.iov_limit, orx.size, orx.iov_limit
                )));
            }
            check_op_flags(r.op_flags, RX_OP_FLAGS, "rx_attr")?;
            c.rx_op_flags = r.op_flags;
            if r.size != 0 {
                c.rx_size = r.size;
            }
        }
        if !info.ep_attr.is_null() {
            // SAFETY: a non-NULL ep_attr of a valid fi_info.
            let e = unsafe { &*info.ep_attr };
            let t = e.r#type;
            if t != fi_ep_type::FI_EP_UNSPEC as u32 && t != fi_ep_type::FI_EP_RDM as u32 {
                return Err(no_data(format_args!("endpoint type {t} is not FI_EP_RDM")));
            }
            let p = e.protocol as c_int;
            if p != FI_PROTO_UNSPEC && p != FI_PROTO_SHM {
                return Err(no_data(format_args!("protocol {p} is not FI_PROTO_SHM")));
            }
            if e.max_msg_size > oep.max_msg_size {
                return Err(no_data(format_args!(
                    "max_msg_size {} exceeds oxshm's {}",
                    e.max_msg_size, oep.max_msg_size
                )));
            }
            if e.max_msg_size != 0 {
                c.max_msg_size = e.max_msg_size;
            }
            if e.tx_ctx_cnt > 1 || e.rx_ctx_cnt > 1 {
                return Err(no_data(format_args!(
                    "tx_ctx_cnt {} / rx_ctx_cnt {}: oxshm has no scalable or shared contexts",
                    e.tx_ctx_cnt, e.rx_ctx_cnt
                )));
            }
            if e.auth_key_size > 0 && e.auth_key_size != FI_AV_AUTH_KEY && !e.auth_key.is_null() {
                // SAFETY: auth_key holds auth_key_size bytes (fi_endpoint(3)).
                c.auth_key = Some(
                    unsafe { std::slice::from_raw_parts(e.auth_key, e.auth_key_size) }.to_vec(),
                );
            }
        }
        Ok(c)
    }
}

fn open(d: &Domain, c: Config, context: *mut c_void) -> Result<*mut fid_ep> {
    let name = match c.name {
        Some(a) => {
            names::claim(a)?;
            a
        }
        None => names::fresh(),
    };
    let ceilings = [
        c.max_msg_size,
        c.max_msg_size,
        c.max_msg_size,
        c.max_msg_size,
        c.inject_size,
        c.inject_size,
        c.inject_size,
        c.inject_size,
    ];
    d.hdr.hold();
    let ep = Box::new(Ep {
        fid: fid_ep {
            fid: fid {
                fclass: FI_CLASS_EP as usize,
                context,
                ops: Ep::fi_ops(),
            },
            ops: &OPS_EP as *const fi_ops_ep as *mut fi_ops_ep,
            cm: &OPS_CM as *const fi_ops_cm as *mut fi_ops_cm,
            msg: &data::OPS_MSG as *const fi_ops_msg as *mut fi_ops_msg,
            rma: &data::OPS_RMA as *const fi_ops_rma as *mut fi_ops_rma,
            tagged: &data::OPS_TAGGED as *const fi_ops_tagged as *mut fi_ops_tagged,
            atomic: &data::OPS_ATOMIC as *const fi_ops_atomic as *mut fi_ops_atomic,
            collective: &data::OPS_COLLECTIVE as *const fi_ops_collective as *mut fi_ops_collective,
        },
        hdr: Header::new(TAG_EP),
        domain: d,
        caps: c.caps,
        auth_key: c.auth_key,
        tx_size: c.tx_size,
        rx_size: c.rx_size,
        tx_op_flags: AtomicU64::new(c.tx_op_flags),
        rx_op_flags: AtomicU64::new(c.rx_op_flags),
        min_multi_recv: AtomicUsize::new(DEFAULT_MIN_MULTI_RECV),
        hmem_p2p: AtomicI32::new(FI_HMEM_P2P_ENABLED),
        cuda_api_permitted: AtomicBool::new(true),
        limits: ceilings.map(AtomicUsize::new),
        ceilings,
        mrs: AtomicUsize::new(0),
        state: Mutex::new(State {
            name,
            service: c.service,
            published: None,
            enabled: false,
            bind: Bindings::default(),
        }),
        enabled: OnceLock::new(),
        xfer: OnceLock::new(),
    });
    Ok(Box::into_raw(ep) as *mut fid_ep)
}

/// `fi_endpoint` (domain slot).
///
/// # Safety
/// C contract of fi_endpoint(3); every pointer is checked before use.
pub unsafe extern "C" fn endpoint(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    // SAFETY: arguments forwarded unchanged; endpoint2 checks them.
    unsafe { endpoint2(domain, info, ep, 0, context) }
}

/// `fi_endpoint2` (domain slot): as `fi_endpoint`; `flags` must be 0 (oxshm
/// has no peer-provider endpoints).
///
/// # Safety
/// C contract of fi_endpoint(3); every pointer is checked before use.
pub unsafe extern "C" fn endpoint2(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    slot("fi_endpoint", || {
        // SAFETY: from_fid checks the object.
        let d = unsafe { from_fid::<Domain>(domain as *const fid) }?;
        if flags != 0 {
            crate::ox_log!(
                Warn,
                EpCtrl,
                super::NAME,
                "fi_endpoint2: flags 0x{flags:x} not supported"
            );
            return Err(Error::BADFLAGS);
        }
        crate::boundary::nonnull(ep, "fi_endpoint", "ep")?;
        crate::boundary::nonnull(info, "fi_endpoint", "info")?;
        // SAFETY: info checked non-NULL; from_info reads 1.0 fields only.
        let c = unsafe { Config::from_info(&*info, d.api_version) }?;
        let e = open(d, c, context)?;
        // SAFETY: ep checked non-NULL; written last, on success.
        unsafe { *ep = e };
        Ok(0)
    })
}

// ---------------------------------------------------------------------------
// struct fi_ops
// ---------------------------------------------------------------------------

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        let mrs = ep.bound_mrs();
        if mrs != 0 {
            crate::ox_log!(
                Warn,
                EpCtrl,
                super::NAME,
                "cannot close endpoint {}: {mrs} memory region(s) bound to it are still open (close them first)",
                ep.name()
            );
            return Err(Error::BUSY);
        }
        ep.hdr.begin_close("endpoint")?;
        if let Some(x) = ep.xfer.get() {
            x.stop();
        }
        let mut st = ep.lock();
        for b in st.bind.all() {
            b.release();
        }
        names::release(st.name);
        let published = st.published.take();
        drop(st);
        drop(published);
        ep.domain().hdr.release();
        // SAFETY: allocated by `open`; nothing depends on it any more.
        drop(unsafe { Box::from_raw(f as *mut Ep) });
        Ok(0)
    })
}

fn no_flags(flags: u64, what: &str) -> Result<()> {
    if flags != 0 {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: binding {what} takes flags 0 (got 0x{flags:x})"
        );
        return Err(Error::BADFLAGS);
    }
    Ok(())
}

/// Fails with -FI_EDOMAIN unless `other` is the endpoint's own domain.
fn same_domain(ep: &Ep, other: *const Domain, what: &str) -> Result<()> {
    if other != ep.domain {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "fi_ep_bind: the {what} belongs to another domain"
        );
        return Err(Error::DOMAIN);
    }
    Ok(())
}

unsafe extern "C" fn bind(f: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
    slot("fi_ep_bind", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        crate::boundary::nonnull(bfid, "fi_ep_bind", "bfid")?;
        // SAFETY: bfid is non-NULL and starts with a struct fid.
        let class = unsafe { (*bfid).fclass } as c_int;
        let mut st = ep.lock();
        ep.refuse_if_enabled(&st, "fi_ep_bind")?;
        match class {
            c if c == FI_CLASS_AV => {
                // SAFETY: from_fid checks the object.
                let av = unsafe { from_fid::<Av>(bfid) }?;
                no_flags(flags, "an address vector")?;
                same_domain(ep, av.domain(), "address vector")?;
                if st.bind.av.is_some() {
                    crate::ox_log!(
                        Warn,
                        EpCtrl,
                        super::NAME,
                        "fi_ep_bind: the endpoint already has an address vector"
                    );
                    return Err(Error::INVAL);
                }
                st.bind.av = Some(Bound::hold(av, 0));
            }
            c if c == FI_CLASS_EQ => {
                // SAFETY: from_fid checks the object.
                let eq = unsafe { from_fid::<Eq>(bfid) }?;
                no_flags(flags, "an event queue")?;
                if st.bind.eq.is_some() {
                    crate::ox_log!(
                        Warn,
                        EpCtrl,
                        super::NAME,
                        "fi_ep_bind: the endpoint already has an event queue"
                    );
                    return Err(Error::INVAL);
                }
                st.bind.eq = Some(Bound::hold(eq, 0));
            }
            c if c == FI_CLASS_CQ || c == FI_CLASS_CNTR => {
                bind_cq_or_cntr(ep, &mut st.bind, bfid, class, flags)?;
            }
            c if c == FI_CLASS_MR => {
                crate::ox_log!(
                    Warn,
                    EpCtrl,
                    super::NAME,
                    "fi_ep_bind: bind memory regions with fi_mr_bind(mr, &ep->fid, 0)"
                );
                return Err(Error::INVAL);
            }
            other => {
                crate::ox_log!(
                    Warn,
                    EpCtrl,
                    super::NAME,
                    "fi_ep_bind: an endpoint binds an AV, EQ, CQ or counter, not class {other}"
                );
                return Err(Error::INVAL);
            }
        }
        Ok(0)
    })
}

/// CQ (`class` FI_CLASS_CQ) and counter (FI_CLASS_CNTR) bindings: checks
/// the flags, then accepts an oxshm [`Cq`] or [`Cntr`] for the directions or
/// events they name. The data path reads them back with
/// `bindings.cq[i].get::<Cq>()` / `bindings.cntr[i].get::<Cntr>()`.
/// Both must belong to the endpoint's domain (-FI_EDOMAIN otherwise).
fn bind_cq_or_cntr(
    ep: &Ep,
    b: &mut Bindings,
    bfid: *mut fid,
    class: c_int,
    flags: u64,
) -> Result<()> {
    if class == FI_CLASS_CQ {
        // SAFETY: from_fid checks the object.
        let cq = unsafe { from_fid::<Cq>(bfid) }?;
        same_domain(ep, cq.domain(), "completion queue")?;
        let roles = cq_roles(flags)?;
        attach(b, &roles, cq, flags)
    } else {
        // SAFETY: from_fid checks the object.
        let cntr = unsafe { from_fid::<Cntr>(bfid) }?;
        same_domain(ep, cntr.domain(), "counter")?;
        let roles = cntr_roles(ep.caps, flags)?;
        attach(b, &roles, cntr, flags)
    }
}

/// The direction an FI_GETOPSFLAG/FI_SETOPSFLAG argument names: true for
/// FI_RECV, false for FI_TRANSMIT; exactly one must be set.
fn ops_direction(flags: u64) -> Result<bool> {
    match (flags & FI_TRANSMIT != 0, flags & FI_RECV != 0) {
        (true, false) => Ok(false),
        (false, true) => Ok(true),
        _ => {
            crate::ox_log!(
                Warn,
                EpCtrl,
                super::NAME,
                "operation flags 0x{flags:x} must name FI_TRANSMIT or FI_RECV (not both)"
            );
            Err(Error::INVAL)
        }
    }
}

unsafe extern "C" fn control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    slot("fi_control", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        match command {
            c if c == FI_ENABLE => ep.enable(),
            c if c == FI_GETOPSFLAG => {
                crate::boundary::nonnull(arg, "fi_control", "arg")?;
                // SAFETY: FI_GETOPSFLAG's argument is a uint64_t *.
                let flags = unsafe { *(arg as *const u64) };
                let recv = ops_direction(flags)?;
                // SAFETY: as above; written on success.
                unsafe { *(arg as *mut u64) = ep.op_flags(recv) };
                Ok(0)
            }
            c if c == FI_SETOPSFLAG => {
                crate::boundary::nonnull(arg, "fi_control", "arg")?;
                // SAFETY: FI_SETOPSFLAG's argument is a uint64_t *.
                let flags = unsafe { *(arg as *const u64) };
                let recv = ops_direction(flags)?;
                let (dir, allowed, slot) = if recv {
                    (FI_RECV, RX_OP_FLAGS, &ep.rx_op_flags)
                } else {
                    (FI_TRANSMIT, TX_OP_FLAGS, &ep.tx_op_flags)
                };
                let value = flags & !dir;
                check_op_flags(value, allowed, if recv { "receive" } else { "transmit" })?;
                slot.store(value, Ordering::Release);
                Ok(0)
            }
            other => {
                crate::ox_log!(
                    Warn,
                    EpCtrl,
                    super::NAME,
                    "control command {other} not supported on an endpoint"
                );
                Err(Error::NOSYS)
            }
        }
    })
}

/// Validates the endpoint, logs why, and answers -FI_ENOSYS.
fn ep_nosys(f: *const fid, call: &str, why: &str) -> c_int {
    slot(call, || {
        // SAFETY: from_fid checks the object.
        unsafe { from_fid::<Ep>(f) }?;
        crate::ox_log!(Warn, EpCtrl, super::NAME, "{call}: {why}");
        Err(Error::NOSYS)
    })
}

// ---------------------------------------------------------------------------
// Data-transfer tables: messages, RMA and atomics in `ops.rs`; collectives -FI_ENOSYS
// ---------------------------------------------------------------------------

mod data {
    use super::*;
    use crate::prov::oxshm::ops;

    /// Validates the endpoint and answers -FI_ENOSYS with the reason.
    fn nosys(ep: *mut fid_ep, call: &str) -> isize {
        slot_ssize(call, || {
            // SAFETY: from_fid checks the object.
            unsafe { from_fid::<Ep>(ep as *const fid) }?;
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "{call}: oxshm has no collectives (FI_COLLECTIVE is not offered)"
            );
            Err(Error::NOSYS)
        })
    }

    /// `name = "fi_call" (argument types after the endpoint) -> return type;`
    macro_rules! nosys_ops {
        ($( $name:ident = $call:literal ( $($arg:ty),* ) -> $ret:ty; )+) => {
            $(
                unsafe extern "C" fn $name(ep: *mut fid_ep $(, _: $arg)*) -> $ret {
                    nosys(ep, $call) as $ret
                }
            )+
        };
    }

    type Addr = fi_addr_t;
    type Ctx = *mut c_void;
    type Desc = *mut c_void;
    type Descs = *mut *mut c_void;
    type Buf = *const c_void;
    type MutBuf = *mut c_void;
    type Dt = fi_datatype_raw;
    type Op = fi_op_raw;
    type MutIoc = *mut fi_ioc;

    nosys_ops! {
        coll_barrier = "fi_barrier" (Addr, Ctx) -> ssize_t;
        coll_broadcast = "fi_broadcast" (MutBuf, size_t, Desc, Addr, Addr, Dt, u64, Ctx) -> ssize_t;
        coll_alltoall = "fi_alltoall"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Dt, u64, Ctx) -> ssize_t;
        coll_allreduce = "fi_allreduce"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Dt, Op, u64, Ctx) -> ssize_t;
        coll_allgather = "fi_allgather"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Dt, u64, Ctx) -> ssize_t;
        coll_reduce_scatter = "fi_reduce_scatter"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Dt, Op, u64, Ctx) -> ssize_t;
        coll_reduce = "fi_reduce"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Addr, Dt, Op, u64, Ctx) -> ssize_t;
        coll_scatter = "fi_scatter"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Addr, Dt, u64, Ctx) -> ssize_t;
        coll_gather = "fi_gather"
            (Buf, size_t, Desc, MutBuf, Desc, Addr, Addr, Dt, u64, Ctx) -> ssize_t;
        coll_msg = "fi_collective_msg"
            (*const fi_msg_collective, MutIoc, Descs, size_t, u64) -> ssize_t;
        coll_barrier2 = "fi_barrier2" (Addr, u64, Ctx) -> ssize_t;
    }

    pub static OPS_MSG: fi_ops_msg = fi_ops_msg {
        size: std::mem::size_of::<fi_ops_msg>(),
        recv: Some(ops::msg_recv),
        recvv: Some(ops::msg_recvv),
        recvmsg: Some(ops::msg_recvmsg),
        send: Some(ops::msg_send),
        sendv: Some(ops::msg_sendv),
        sendmsg: Some(ops::msg_sendmsg),
        inject: Some(ops::msg_inject),
        senddata: Some(ops::msg_senddata),
        injectdata: Some(ops::msg_injectdata),
    };

    pub static OPS_RMA: fi_ops_rma = fi_ops_rma {
        size: std::mem::size_of::<fi_ops_rma>(),
        read: Some(ops::rma_read),
        readv: Some(ops::rma_readv),
        readmsg: Some(ops::rma_readmsg),
        write: Some(ops::rma_write),
        writev: Some(ops::rma_writev),
        writemsg: Some(ops::rma_writemsg),
        inject: Some(ops::rma_inject),
        writedata: Some(ops::rma_writedata),
        injectdata: Some(ops::rma_injectdata),
    };

    pub static OPS_TAGGED: fi_ops_tagged = fi_ops_tagged {
        size: std::mem::size_of::<fi_ops_tagged>(),
        recv: Some(ops::tagged_recv),
        recvv: Some(ops::tagged_recvv),
        recvmsg: Some(ops::tagged_recvmsg),
        send: Some(ops::tagged_send),
        sendv: Some(ops::tagged_sendv),
        sendmsg: Some(ops::tagged_sendmsg),
        inject: Some(ops::tagged_inject),
        senddata: Some(ops::tagged_senddata),
        injectdata: Some(ops::tagged_injectdata),
    };

    pub static OPS_ATOMIC: fi_ops_atomic = fi_ops_atomic {
        size: std::mem::size_of::<fi_ops_atomic>(),
        write: Some(ops::atomic_write),
        writev: Some(ops::atomic_writev),
        writemsg: Some(ops::atomic_writemsg),
        inject: Some(ops::atomic_inject),
        readwrite: Some(ops::atomic_readwrite),
        readwritev: Some(ops::atomic_readwritev),
        readwritemsg: Some(ops::atomic_readwritemsg),
        compwrite: Some(ops::atomic_compwrite),
        compwritev: Some(ops::atomic_compwritev),
        compwritemsg: Some(ops::atomic_compwritemsg),
        writevalid: Some(ops::atomic_writevalid),
        readwritevalid: Some(ops::atomic_readwritevalid),
        compwritevalid: Some(ops::atomic_compwritevalid),
    };

    pub static OPS_COLLECTIVE: fi_ops_collective = fi_ops_collective {
        size: std::mem::size_of::<fi_ops_collective>(),
        barrier: Some(coll_barrier),
        broadcast: Some(coll_broadcast),
        alltoall: Some(coll_alltoall),
        allreduce: Some(coll_allreduce),
        allgather: Some(coll_allgather),
        reduce_scatter: Some(coll_reduce_scatter),
        reduce: Some(coll_reduce),
        scatter: Some(coll_scatter),
        gather: Some(coll_gather),
        msg: Some(coll_msg),
        barrier2: Some(coll_barrier2),
    };
}

#[cfg(test)]
pub(super) mod tests;
