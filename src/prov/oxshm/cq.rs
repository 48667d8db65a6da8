//! oxshm completion queues (`fi_cq_open`): a bounded, ordered queue of
//! completions and error completions that the data path fills through
//! [`Cq::push`] / [`Cq::push_err`] and the application drains with
//! fi_cq_read(3) and friends, in the format it chose at open.
//!
//! Blocking reads first poll for a short, adaptive while ([`Spin`]),
//! driving progress as fi_cq_read does, then sleep in poll(2) on a private
//! [`WaitFd`]: its eventfd is set by whoever queues a completion while a
//! reader sleeps, and its wake-up sockets by the sender of the next message
//! to one of the domain's endpoints, which the woken reader then handles
//! itself. With FI_WAIT_FD the CQ also keeps a public wait fd whose eventfd
//! is readable while anything is queued (or a fi_cq_signal is pending),
//! for `FI_GETWAIT`, fi_trywait and poll(2). FI_WAIT_UNSPEC and
//! FI_WAIT_YIELD have no public fd, so pushing a completion costs no system
//! call unless a reader sleeps.

use super::domain::Domain;
use super::object::{from_fid, nosys, slot, slot_ssize, Header, Object};
use crate::abi::domain::fid_domain;
use crate::abi::eq::*;
use crate::abi::fabric::*;
use crate::abi::xpu::fid_xpu_cq;
use crate::error::{Error, Result};
use crate::prov::info::version;
use libc::{c_char, c_int, c_void, size_t, ssize_t};
use std::collections::VecDeque;
use std::mem::offset_of;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

mod wait;
pub use wait::{deadline, EventFd, Spin, WaitFd, WaitObj};

/// Tag of live oxshm CQs.
pub const TAG_CQ: u64 = u64::from_be_bytes(*b"oxCQ\0\0\0\0");

/// Entries a CQ holds when `attr->size` is 0.
pub const DEFAULT_SIZE: usize = 1024;
/// Largest `attr->size` accepted (entries are allocated as they arrive).
pub const MAX_SIZE: usize = 1 << 22;

/// One successful completion, as the data path reports it. Pointers are the
/// application's own values (`op_context`, the receive buffer) and are never
/// dereferenced by the CQ.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    /// Source address for fi_cq_readfrom; FI_ADDR_NOTAVAIL when unknown.
    pub src: fi_addr_t,
}

impl Default for Completion {
    fn default() -> Completion {
        Completion {
            context: std::ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: std::ptr::null_mut(),
            data: 0,
            tag: 0,
            src: FI_ADDR_NOTAVAIL,
        }
    }
}

// SAFETY: the pointers are opaque application values that are only copied
// back to the application, never dereferenced.
unsafe impl Send for Completion {}

/// One failed operation, as the data path reports it (fi_cq_readerr(3)).
#[derive(Clone, Debug)]
pub struct ErrCompletion {
    pub context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    /// Bytes that did not fit (truncated receives).
    pub olen: usize,
    /// Positive FI_E* code (FI_EACCES, FI_EINVAL, FI_ETRUNC, ...).
    pub err: i32,
    /// Provider error, turned into text by fi_cq_strerror.
    pub prov_errno: i32,
    /// Provider error data, copied out by fi_cq_readerr.
    pub err_data: Vec<u8>,
    pub src: fi_addr_t,
}

impl Default for ErrCompletion {
    fn default() -> ErrCompletion {
        ErrCompletion {
            context: std::ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: std::ptr::null_mut(),
            data: 0,
            tag: 0,
            olen: 0,
            err: Error::OTHER.0,
            prov_errno: 0,
            err_data: Vec::new(),
            src: FI_ADDR_NOTAVAIL,
        }
    }
}

// SAFETY: as for Completion.
unsafe impl Send for ErrCompletion {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overrun {
    No,
    /// Completions were lost; reported through readerr once the queue drains.
    Pending {
        lost: u64,
    },
    /// The FI_EOVERRUN entry was read: the CQ is dead.
    Reported,
}

struct Queues {
    /// Successful completions with their arrival number.
    ok: VecDeque<(u64, Completion)>,
    /// Error completions with their arrival number.
    errs: VecDeque<(u64, ErrCompletion)>,
    next_seq: u64,
    /// err_data of the last error read, valid until the next readerr.
    last_err_data: Vec<u8>,
    overrun: Overrun,
    /// fi_cq_signal was called and no read has consumed it yet.
    signal: bool,
    /// Whether the eventfd is currently set.
    fd_set: bool,
    /// Whether the sleepers' eventfd is set.
    sleep_set: bool,
    /// Threads blocked in sread (close refuses while any are).
    waiters: usize,
    /// When a thread last woke the sleepers (for [`Spin::slept`]).
    woken_at: Option<Instant>,
    /// Reads under way whose progress may push completions that they will
    /// take themselves: the eventfd is not set meanwhile, which saves a
    /// write and a read of it per completion ([`FdHold`]).
    fd_holds: usize,
    /// The queues have held more than the CQ's size (logged once).
    past_size: bool,
}

/// Defers setting the eventfd of a CQ while the holder drives progress;
/// the holder syncs the fd with the queue once it has read.
struct FdHold<'a>(&'a Cq);

impl<'a> FdHold<'a> {
    fn new(cq: &'a Cq) -> FdHold<'a> {
        cq.lock().fd_holds += 1;
        FdHold(cq)
    }
}

impl Drop for FdHold<'_> {
    fn drop(&mut self) {
        self.0.lock().fd_holds -= 1;
    }
}

impl Queues {
    fn len(&self) -> usize {
        self.ok.len() + self.errs.len()
    }

    /// Whether a read would return something other than -FI_EAGAIN.
    fn readable(&self) -> bool {
        !self.ok.is_empty() || !self.errs.is_empty() || self.overrun != Overrun::No
    }
}

#[repr(C)]
pub struct Cq {
    pub fid: fid_cq,
    pub hdr: Header,
    domain: *const Domain,
    api_version: u32,
    format: fi_cq_format,
    size: usize,
    wait: WaitObj,
    wait_cond: fi_cq_wait_cond,
    /// The public wait fd (FI_WAIT_FD).
    wfd: Option<WaitFd>,
    /// What blocked readers sleep on, made at the first sleep.
    sleeper: OnceLock<WaitFd>,
    q: super::lock::Lock<Queues>,
    /// Whether a read could find anything (entries, an error, the overrun
    /// report, a signal) or the eventfd is set: brought up to date each
    /// time the queues are unlocked ([`QGuard`]), so that a read of an
    /// idle CQ takes no lock.
    busy_hint: AtomicBool,
    spin: Spin,
    /// The application's array of the read under way, in a domain the
    /// application serializes ([`Direct`]).
    direct: std::cell::UnsafeCell<Direct>,
}

/// Where a read of a serialized domain's CQ (FI_THREAD_DOMAIN) takes the
/// completions that its own progress pass makes: written straight into
/// the application's array, in place of queuing each one and taking it
/// back out under the lock again. Set by the reading thread for the pass
/// while the queues are empty, and used by pushes that take the queues'
/// lock through the serialization: those come from the application's
/// thread, which by its promise is the reader (an outsider's push, or any
/// push once the queues hold an entry, an error or an overrun, is queued:
/// completions stay in order). Touched by the application's thread only.
struct Direct {
    buf: *mut c_void,
    /// Room in `buf` (0: no read under way).
    count: usize,
    src: *mut fi_addr_t,
    /// Entries written.
    n: usize,
}

impl Direct {
    const NONE: Direct = Direct {
        buf: std::ptr::null_mut(),
        count: 0,
        src: std::ptr::null_mut(),
        n: 0,
    };
}

/// Ends a read's [`Direct`] however its progress pass ends (a panic
/// caught at the ABI boundary included): no push may write into the
/// array after the read returned.
struct DirectRead<'a>(&'a Cq);

impl DirectRead<'_> {
    /// Entries written so far.
    fn written(&self) -> usize {
        // SAFETY: the application's thread's own field ([`Direct`]).
        unsafe { (*self.0.direct.get()).n }
    }
}

impl Drop for DirectRead<'_> {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { *self.0.direct.get() = Direct::NONE };
    }
}

/// The locked queues of a CQ; unlocking updates [`Cq::busy_hint`].
struct QGuard<'a> {
    g: super::lock::LockGuard<'a, Queues>,
    hint: &'a AtomicBool,
}

impl std::ops::Deref for QGuard<'_> {
    type Target = Queues;
    fn deref(&self) -> &Queues {
        &self.g
    }
}

impl std::ops::DerefMut for QGuard<'_> {
    fn deref_mut(&mut self) -> &mut Queues {
        &mut self.g
    }
}

impl Drop for QGuard<'_> {
    fn drop(&mut self) {
        let q = &self.g;
        let busy = q.readable() || q.signal || q.fd_set;
        if self.hint.load(Ordering::Relaxed) != busy {
            self.hint.store(busy, Ordering::Release);
        }
    }
}

// SAFETY: the domain pointer is only used to release the CQ's hold at close
// (the domain cannot close first); completions hold opaque application
// pointers; all mutable state is behind the mutex.
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

// SAFETY: #[repr(C)] with fid_cq (which starts with struct fid) first.
unsafe impl Object for Cq {
    const TAG: u64 = TAG_CQ;
    const FCLASS: usize = FI_CLASS_CQ as usize;
    const NAME: &'static str = "completion queue";
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
    bind: Some(nosys::bind),
    control: Some(control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

static OPS_CQ: fi_ops_cq = fi_ops_cq {
    size: std::mem::size_of::<fi_ops_cq>(),
    read: Some(read),
    readfrom: Some(readfrom),
    readerr: Some(readerr),
    sread: Some(sread),
    sreadfrom: Some(sreadfrom),
    signal: Some(signal),
    strerror: Some(strerror),
    export_xpu: Some(export_xpu),
};

/// Checks that `p` is a live oxshm CQ (for fi_ep_bind and friends).
///
/// # Safety
/// `p` is NULL or points to readable memory that starts with a `struct fid`.
pub unsafe fn cq_from_fid(p: *const fid) -> Result<&'static Cq> {
    // SAFETY: per the function contract.
    unsafe { from_fid::<Cq>(p) }
}

/// Bytes of `struct fi_cq_attr` at an API version (`xpu_ctx` is 2.7's).
pub fn cq_attr_len(api_version: u32) -> usize {
    if api_version < version(2, 7) {
        offset_of!(fi_cq_attr, xpu_ctx)
    } else {
        std::mem::size_of::<fi_cq_attr>()
    }
}

/// Bytes of `struct fi_cq_err_entry` at an API version: `err_data_size`
/// arrived in 1.5 and `src_addr` in 1.20.
pub fn cq_err_entry_len(api_version: u32) -> usize {
    if api_version < version(1, 5) {
        offset_of!(fi_cq_err_entry, err_data_size)
    } else if api_version < version(1, 20) {
        offset_of!(fi_cq_err_entry, src_addr)
    } else {
        std::mem::size_of::<fi_cq_err_entry>()
    }
}

/// Bytes of one entry of `format` in the application's buffer.
pub fn entry_size(format: fi_cq_format) -> usize {
    match format {
        fi_cq_format::FI_CQ_FORMAT_UNSPEC | fi_cq_format::FI_CQ_FORMAT_CONTEXT => {
            std::mem::size_of::<fi_cq_entry>()
        }
        fi_cq_format::FI_CQ_FORMAT_MSG => std::mem::size_of::<fi_cq_msg_entry>(),
        fi_cq_format::FI_CQ_FORMAT_DATA => std::mem::size_of::<fi_cq_data_entry>(),
        fi_cq_format::FI_CQ_FORMAT_TAGGED => std::mem::size_of::<fi_cq_tagged_entry>(),
    }
}

/// The validated attributes of a CQ.
struct Attr {
    size: usize,
    format: fi_cq_format,
    wait: WaitObj,
    wait_cond: fi_cq_wait_cond,
}

fn check_attr(api_version: u32, a: &fi_cq_attr) -> Result<Attr> {
    let xpu = if api_version >= version(2, 7) {
        FI_XPU
    } else {
        0
    };
    if a.flags & xpu != 0 {
        crate::ox_log!(
            Warn,
            Cq,
            super::NAME,
            "FI_XPU completion queues are not supported"
        );
        return Err(Error::NOSYS);
    }
    if a.flags & !FI_AFFINITY != 0 {
        crate::ox_log!(
            Warn,
            Cq,
            super::NAME,
            "unsupported CQ flags 0x{:x} (only FI_AFFINITY)",
            a.flags & !FI_AFFINITY
        );
        return Err(Error::BADFLAGS);
    }
    let size = match a.size {
        0 => DEFAULT_SIZE,
        n if n > MAX_SIZE => {
            crate::ox_log!(
                Warn,
                Cq,
                super::NAME,
                "CQ size {n} exceeds the maximum of {MAX_SIZE}"
            );
            return Err(Error::INVAL);
        }
        n => n,
    };
    let format = match fi_cq_format::from_raw(a.format) {
        Some(fi_cq_format::FI_CQ_FORMAT_UNSPEC) => fi_cq_format::FI_CQ_FORMAT_CONTEXT,
        Some(f) => f,
        None => {
            crate::ox_log!(Warn, Cq, super::NAME, "unknown CQ format {}", a.format);
            return Err(Error::INVAL);
        }
    };
    let wait = WaitObj::from_raw(a.wait_obj, "fi_cq_open")?;
    // wait_cond means nothing without a wait object (fi_cq(3)).
    let wait_cond = if wait == WaitObj::None {
        fi_cq_wait_cond::FI_CQ_COND_NONE
    } else {
        match fi_cq_wait_cond::from_raw(a.wait_cond) {
            Some(c) => c,
            None => {
                crate::ox_log!(
                    Warn,
                    Cq,
                    super::NAME,
                    "unknown CQ wait condition {}",
                    a.wait_cond
                );
                return Err(Error::INVAL);
            }
        }
    };
    Ok(Attr {
        size,
        format,
        wait,
        wait_cond,
    })
}

/// The `fi_ops_domain.cq_open` slot.
///
/// # Safety
/// `domain` is any object (checked); `attr` is NULL or holds a
/// `struct fi_cq_attr` of the domain's API version; `cq` is NULL or writable.
pub unsafe extern "C" fn open(
    domain: *mut fid_domain,
    attr: *mut fi_cq_attr,
    cq: *mut *mut fid_cq,
    context: *mut c_void,
) -> c_int {
    slot("fi_cq_open", || {
        // SAFETY: from_fid checks the object.
        let d = unsafe { from_fid::<Domain>(domain as *const fid) }?;
        crate::boundary::nonnull(attr, "fi_cq_open", "attr")?;
        crate::boundary::nonnull(cq, "fi_cq_open", "cq")?;
        // A copy of the application's prefix; later fields stay zero.
        // SAFETY: attr holds at least cq_attr_len bytes for this API
        // version, and every field of fi_cq_attr is valid when zeroed.
        let a: fi_cq_attr = unsafe {
            let mut a: fi_cq_attr = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(
                attr as *const u8,
                &mut a as *mut fi_cq_attr as *mut u8,
                cq_attr_len(d.api_version),
            );
            a
        };
        let at = check_attr(d.api_version, &a)?;
        let wfd = match at.wait {
            WaitObj::Fd => Some(WaitFd::new("fi_cq_open")?),
            _ => None,
        };
        d.hdr.hold();
        let c = Box::new(Cq {
            fid: fid_cq {
                fid: fid {
                    fclass: FI_CLASS_CQ as usize,
                    context,
                    ops: Cq::fi_ops(),
                },
                ops: &OPS_CQ as *const fi_ops_cq as *mut fi_ops_cq,
            },
            hdr: Header::new(TAG_CQ),
            domain: d,
            api_version: d.api_version,
            format: at.format,
            size: at.size,
            wait: at.wait,
            wait_cond: at.wait_cond,
            wfd,
            q: super::lock::Lock::serialized(
                Queues {
                    ok: VecDeque::with_capacity(at.size.min(DEFAULT_SIZE)),
                    errs: VecDeque::new(),
                    next_seq: 0,
                    last_err_data: Vec::new(),
                    overrun: Overrun::No,
                    signal: false,
                    fd_set: false,
                    sleep_set: false,
                    waiters: 0,
                    woken_at: None,
                    fd_holds: 0,
                    past_size: false,
                },
                d.serial.as_ref(),
            ),
            sleeper: OnceLock::new(),
            busy_hint: AtomicBool::new(false),
            spin: Spin::default(),
            direct: std::cell::UnsafeCell::new(Direct::NONE),
        });
        // SAFETY: cq checked non-NULL; written last, on success.
        unsafe { *cq = Box::into_raw(c) as *mut fid_cq };
        Ok(0)
    })
}

impl Cq {
    /// The domain the CQ was opened on.
    pub fn domain(&self) -> &Domain {
        // SAFETY: a domain cannot close while its CQs are open.
        unsafe { &*self.domain }
    }

    fn lock(&self) -> QGuard<'_> {
        QGuard {
            g: self.q.lock(),
            hint: &self.busy_hint,
        }
    }

    /// The entry format reads use (FI_CQ_FORMAT_UNSPEC reads as CONTEXT).
    pub fn format(&self) -> fi_cq_format {
        self.format
    }

    /// The size the CQ was opened with (it holds more rather than lose a
    /// completion).
    pub fn capacity(&self) -> usize {
        self.size
    }

    /// Entries (completions and errors) waiting to be read.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a read would return something (entries, an error, or the
    /// overrun report).
    pub fn has_entries(&self) -> bool {
        self.lock().readable()
    }

    /// Whether the eventfd is readable: entries, or a pending signal.
    fn busy(&self) -> bool {
        let q = self.lock();
        q.readable() || q.signal
    }

    /// fi_trywait on this CQ: drives progress, then -FI_EAGAIN if a read
    /// would not block (or a fi_cq_signal is pending) or a message waits in
    /// an endpoint's inbox, else arms the endpoints' wake-up sockets that
    /// the wait fd watches ([`WaitFd::prepare`]), so that the next message
    /// makes the fd readable, and returns Ok.
    pub fn trywait(&self) -> Result<()> {
        if self.wfd.is_some() {
            // A completion this progress queues is reported by -FI_EAGAIN
            // and taken by the read that follows it: the eventfd need not
            // flip for it (the next push or read syncs it).
            let _hold = FdHold::new(self);
            self.domain().progress();
        } else {
            self.domain().progress();
        }
        if self.busy() {
            return Err(Error::AGAIN);
        }
        let ready = match &self.wfd {
            Some(w) => w.prepare(self.domain(), |x| x.reports_tx_to(self)),
            // No wait fd to arm: the progress threads take the inboxes.
            None => {
                self.domain().progress_before_wait();
                true
            }
        };
        if !ready || self.busy() {
            return Err(Error::AGAIN);
        }
        Ok(())
    }

    /// Keeps the eventfd readable exactly while a read would not block
    /// (but for the moments an [`FdHold`] defers setting it).
    fn sync_fd(&self, q: &mut Queues) {
        let Some(fd) = &self.wfd else { return };
        let want = q.readable() || q.signal;
        if want && !q.fd_set && q.fd_holds == 0 {
            fd.set();
            q.fd_set = true;
        } else if !want && q.fd_set {
            fd.clear();
            q.fd_set = false;
        }
    }

    /// Signals the wait objects after the queue changed; drops the lock.
    fn wake(&self, mut q: QGuard<'_>) {
        self.sync_fd(&mut q);
        if q.waiters > 0 && !q.sleep_set {
            if let Some(s) = self.sleeper.get() {
                q.woken_at = Some(Instant::now());
                s.set();
                q.sleep_set = true;
            }
        }
    }

    /// The fd blocked readers sleep on.
    fn sleeper(&self) -> Result<&WaitFd> {
        if let Some(s) = self.sleeper.get() {
            return Ok(s);
        }
        let s = WaitFd::new("fi_cq_sread")?;
        // Another reader may have made one meanwhile: it is kept.
        Ok(self.sleeper.get_or_init(|| s))
    }

    /// Refuses a push once the CQ is overrun; notes (once) that it holds
    /// more than its size.
    fn check_room(&self, q: &mut Queues) -> Result<()> {
        match q.overrun {
            Overrun::No => {}
            Overrun::Pending { ref mut lost } => {
                *lost += 1;
                return Err(Error::OVERRUN);
            }
            Overrun::Reported => return Err(Error::OVERRUN),
        }
        // A completion is never dropped for want of room: the operation is
        // over, and nothing else would tell the application. The queue
        // grows past the size it was opened with, and says so once.
        if q.len() >= self.size && !q.past_size {
            q.past_size = true;
            crate::ox_log!(
                Warn,
                Cq,
                super::NAME,
                "completion queue of {} entries is full: later completions are kept beyond its size (open it larger, or read it sooner)",
                self.size
            );
        }
        Ok(())
    }

    /// Queues one entry (successful or error) under the next sequence
    /// number, which keeps both queues in arrival order, and wakes waiters.
    fn enqueue(&self, put: impl FnOnce(&mut Queues, u64)) -> Result<()> {
        self.enqueue_locked(self.lock(), put)
    }

    /// [`Cq::enqueue`] with the queues locked already. Inlined, so that
    /// what `put` queues is written straight from its caller's registers
    /// ([`Cq::push`]).
    #[inline(always)]
    fn enqueue_locked(&self, mut q: QGuard<'_>, put: impl FnOnce(&mut Queues, u64)) -> Result<()> {
        self.check_room(&mut q)?;
        let seq = q.next_seq;
        q.next_seq += 1;
        put(&mut q, seq);
        self.wake(q);
        Ok(())
    }

    /// Queues a successful completion. Thread-safe. A full CQ takes it
    /// beyond its size (logged once); fails with `Error::OVERRUN` only once
    /// the CQ has been overrun ([`Cq::record_overrun`]).
    ///
    /// Inlined into the data path's few callers, which build `c` in place
    /// of the call: its fields go from registers to the reader's array or
    /// the queue. Not inlined, `c` was built on the caller's stack with
    /// 8-byte stores and moved into the queue with 16-byte loads right
    /// after, each waiting for the stores it spans to land (a quarter of
    /// `push`'s samples at the receiver of `fi_rdm_bw -S 64`, `perf
    /// record`).
    ///
    /// The direct write takes the queues' lock without a [`QGuard`]: it
    /// leaves the queues as they were, so [`Cq::busy_hint`] needs no
    /// update when it drops.
    #[inline(always)]
    pub fn push(&self, c: Completion) -> Result<()> {
        let g = self.q.lock();
        if g.serialized() && g.ok.is_empty() && g.errs.is_empty() && g.overrun == Overrun::No {
            // SAFETY: a lock taken through the serialization: this is the
            // application's thread, whose field it is ([`Direct`]).
            let d = unsafe { &mut *self.direct.get() };
            if d.n < d.count {
                // SAFETY: the reader's array holds d.count entries of the
                // CQ's format, and d.src as many addresses if not NULL
                // (fi_cq_read(3)); the read has not returned (DirectRead).
                unsafe {
                    self.write_entry(d.buf, d.n, &c);
                    if !d.src.is_null() {
                        d.src.add(d.n).write_unaligned(c.src);
                    }
                }
                d.n += 1;
                return Ok(());
            }
        }
        let q = QGuard {
            g,
            hint: &self.busy_hint,
        };
        self.enqueue_locked(q, |q, seq| q.ok.push_back((seq, c)))
    }

    /// Queues an error completion, in order with the successful ones: reads
    /// return the completions queued before it, then -FI_EAVAIL until
    /// fi_cq_readerr takes it. Fails as [`Cq::push`].
    pub fn push_err(&self, e: ErrCompletion) -> Result<()> {
        self.enqueue(|q, seq| q.errs.push_back((seq, e)))
    }

    /// Records that a completion was lost for want of room (fi_cq(3)
    /// "overrun"): the entries already queued stay readable, then reads
    /// return -FI_EAVAIL and fi_cq_readerr an FI_EOVERRUN entry, after which
    /// the CQ returns -FI_EOVERRUN and accepts nothing more.
    pub fn record_overrun(&self) {
        let mut q = self.lock();
        match q.overrun {
            Overrun::No => {
                crate::ox_log!(
                    Warn,
                    Cq,
                    super::NAME,
                    "completion queue overrun ({} entries): completions are being lost",
                    self.size
                );
                q.overrun = Overrun::Pending { lost: 1 };
            }
            Overrun::Pending { ref mut lost } => *lost += 1,
            Overrun::Reported => {}
        }
        self.wake(q);
    }

    /// Copies one completion into slot `i` of the application's array.
    ///
    /// # Safety
    /// `buf` holds at least `i + 1` entries of the CQ's format.
    #[inline(always)]
    unsafe fn write_entry(&self, buf: *mut c_void, i: usize, c: &Completion) {
        // SAFETY: per the function contract; unaligned writes tolerate any
        // buffer the application passes.
        unsafe {
            match self.format {
                fi_cq_format::FI_CQ_FORMAT_UNSPEC | fi_cq_format::FI_CQ_FORMAT_CONTEXT => (buf
                    as *mut fi_cq_entry)
                    .add(i)
                    .write_unaligned(fi_cq_entry {
                        op_context: c.context,
                    }),
                fi_cq_format::FI_CQ_FORMAT_MSG => (buf as *mut fi_cq_msg_entry)
                    .add(i)
                    .write_unaligned(fi_cq_msg_entry {
                        op_context: c.context,
                        flags: c.flags,
                        len: c.len,
                    }),
                fi_cq_format::FI_CQ_FORMAT_DATA => (buf as *mut fi_cq_data_entry)
                    .add(i)
                    .write_unaligned(fi_cq_data_entry {
                        op_context: c.context,
                        flags: c.flags,
                        len: c.len,
                        buf: c.buf,
                        data: c.data,
                    }),
                fi_cq_format::FI_CQ_FORMAT_TAGGED => (buf as *mut fi_cq_tagged_entry)
                    .add(i)
                    .write_unaligned(fi_cq_tagged_entry {
                        op_context: c.context,
                        flags: c.flags,
                        len: c.len,
                        buf: c.buf,
                        data: c.data,
                        tag: c.tag,
                    }),
            }
        }
    }

    /// Moves up to `count` completions that precede the first error into
    /// `buf` (and their sources into `src`, when not NULL).
    ///
    /// # Safety
    /// `buf` holds `count` entries of the CQ's format (or `count` is 0);
    /// `src` is NULL or holds `count` addresses.
    unsafe fn read_locked(
        &self,
        q: &mut Queues,
        buf: *mut c_void,
        count: usize,
        src: *mut fi_addr_t,
    ) -> Result<isize> {
        let limit = q.errs.front().map_or(u64::MAX, |e| e.0);
        let mut n = 0;
        while n < count {
            match q.ok.front() {
                Some((seq, c)) if *seq < limit => {
                    // SAFETY: n < count entries fit (function contract).
                    unsafe {
                        self.write_entry(buf, n, c);
                        if !src.is_null() {
                            src.add(n).write_unaligned(c.src);
                        }
                    }
                    q.ok.pop_front();
                    n += 1;
                }
                _ => break,
            }
        }
        if n > 0 {
            q.signal = false;
            self.sync_fd(q);
            return Ok(n as isize);
        }
        let head_ok = q.ok.front().is_some_and(|(seq, _)| *seq < limit);
        if count == 0 && head_ok {
            // A zero-count read is a progress call (as in libfabric's util
            // CQ): 0 says that completions are waiting.
            return Ok(0);
        }
        if !q.errs.is_empty() {
            return Err(Error::AVAIL);
        }
        match q.overrun {
            Overrun::Pending { .. } => Err(Error::AVAIL),
            Overrun::Reported => Err(Error::OVERRUN),
            Overrun::No => {
                q.signal = false;
                self.sync_fd(q);
                Err(Error::AGAIN)
            }
        }
    }

    /// The outcome of a blocking read, if it is over: the wait condition
    /// holds, an error or a signal arrived, or the deadline passed.
    ///
    /// # Safety
    /// As [`Cq::read_locked`].
    unsafe fn sread_outcome(
        &self,
        q: &mut Queues,
        threshold: usize,
        deadline: Option<Instant>,
        out: (*mut c_void, usize, *mut fi_addr_t),
    ) -> Option<Result<isize>> {
        let (buf, count, src) = out;
        if !q.errs.is_empty() || q.overrun != Overrun::No || q.ok.len() >= threshold {
            // SAFETY: per the function contract.
            return Some(unsafe { self.read_locked(q, buf, count, src) });
        }
        let expired = deadline.is_some_and(|d| Instant::now() >= d);
        if !q.signal && !expired {
            return None;
        }
        q.signal = false;
        if q.ok.is_empty() {
            self.sync_fd(q);
            return Some(Err(Error::AGAIN));
        }
        // Fewer than the threshold: the condition is only a hint.
        // SAFETY: per the function contract.
        Some(unsafe { self.read_locked(q, buf, count, src) })
    }

    /// Blocks until the wait condition holds, a signal or an error arrives,
    /// or the timeout passes, then reads. Polls first (driving progress),
    /// then sleeps until a completion is queued or a message arrives, and
    /// drives progress itself after each wake-up.
    ///
    /// # Safety
    /// As [`Cq::read_locked`].
    unsafe fn sread_impl(
        &self,
        buf: *mut c_void,
        count: usize,
        src: *mut fi_addr_t,
        cond: *const c_void,
        timeout: c_int,
    ) -> Result<isize> {
        if self.wait == WaitObj::None {
            crate::ox_log!(
                Warn,
                Cq,
                super::NAME,
                "fi_cq_sread on a CQ opened with FI_WAIT_NONE"
            );
            return Err(Error::NOSYS);
        }
        // As libfabric's verbs, sockets and psm providers read it, the
        // threshold is the value of `cond` itself, not a pointee.
        let threshold = match self.wait_cond {
            fi_cq_wait_cond::FI_CQ_COND_THRESHOLD => cond as usize,
            fi_cq_wait_cond::FI_CQ_COND_NONE => 1,
        };
        let threshold = threshold.min(count).min(self.size).max(1);
        let start = Instant::now();
        let deadline = deadline(timeout);
        let out = (buf, count, src);
        let polled = self.spin.poll(deadline, || {
            self.domain().progress();
            let mut q = self.lock();
            // SAFETY: per the function contract.
            unsafe { self.sread_outcome(&mut q, threshold, deadline, out) }
        });
        if let Some(r) = polled {
            return r;
        }
        let sleeper = self.sleeper()?;
        let mut woke = None;
        loop {
            let mut q = self.lock();
            // Cleared before the queue is looked at: a completion queued
            // after the look sets it again.
            if q.sleep_set {
                sleeper.clear();
                q.sleep_set = false;
            }
            // SAFETY: per the function contract.
            if let Some(r) = unsafe { self.sread_outcome(&mut q, threshold, deadline, out) } {
                let event = q.woken_at.take().or(woke).unwrap_or_else(Instant::now);
                drop(q);
                self.spin.slept(event.saturating_duration_since(start));
                return r;
            }
            q.waiters += 1;
            q.woken_at = None;
            drop(q);
            let waiting = Sleeping(self);
            if sleeper.prepare(self.domain(), |x| x.reports_tx_to(self)) {
                sleeper.sleep(deadline);
                woke = Some(Instant::now());
            }
            drop(waiting);
            // Woken by a message, the reader handles it itself.
            self.domain().progress();
        }
    }
}

/// Counts a reader out of the sleepers however its sleep ends.
struct Sleeping<'a>(&'a Cq);

impl Drop for Sleeping<'_> {
    fn drop(&mut self) {
        self.0.lock().waiters -= 1;
    }
}

fn check_buf(buf: *mut c_void, count: usize, func: &str) -> Result<()> {
    if count > 0 && buf.is_null() {
        crate::ox_log!(
            Warn,
            Cq,
            super::NAME,
            "{func}: buf is NULL with count {count}"
        );
        return Err(Error::INVAL);
    }
    Ok(())
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let cq = unsafe { from_fid::<Cq>(f) }?;
        let waiters = cq.lock().waiters;
        if waiters > 0 {
            crate::ox_log!(
                Warn,
                Cq,
                super::NAME,
                "cannot close completion queue: {waiters} thread(s) blocked in fi_cq_sread (fi_cq_signal them first)"
            );
            return Err(Error::BUSY);
        }
        cq.hdr.begin_close("completion queue")?;
        // SAFETY: the domain outlives its CQs (it cannot close while held).
        unsafe { (*cq.domain).hdr.release() };
        // SAFETY: allocated by `open`; no dependants remain. Dropping closes
        // the eventfd.
        drop(unsafe { Box::from_raw(f as *mut Cq) });
        Ok(0)
    })
}

unsafe extern "C" fn control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    slot("fi_control", || {
        // SAFETY: from_fid checks the object.
        let cq = unsafe { from_fid::<Cq>(f) }?;
        match command {
            FI_GETWAIT => {
                let Some(fd) = &cq.wfd else {
                    crate::ox_log!(
                        Warn,
                        Cq,
                        super::NAME,
                        "FI_GETWAIT: this CQ has no fd (open it with FI_WAIT_FD)"
                    );
                    return Err(Error::NODATA);
                };
                crate::boundary::nonnull(arg, "fi_control", "arg")?;
                // SAFETY: FI_GETWAIT's argument is an int * for fd objects.
                unsafe { *(arg as *mut c_int) = fd.raw() };
                Ok(0)
            }
            FI_GETWAITOBJ => {
                crate::boundary::nonnull(arg, "fi_control", "arg")?;
                // SAFETY: FI_GETWAITOBJ's argument is an enum fi_wait_obj *.
                unsafe { *(arg as *mut u32) = cq.wait.raw() as u32 };
                Ok(0)
            }
            other => {
                crate::ox_log!(
                    Warn,
                    Cq,
                    super::NAME,
                    "control command {other} not supported on a CQ"
                );
                Err(Error::NOSYS)
            }
        }
    })
}

unsafe extern "C" fn read(cq: *mut fid_cq, buf: *mut c_void, count: size_t) -> ssize_t {
    // SAFETY: same contract as readfrom, without source addresses.
    unsafe { readfrom(cq, buf, count, std::ptr::null_mut()) }
}

unsafe extern "C" fn readfrom(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: size_t,
    src_addr: *mut fi_addr_t,
) -> ssize_t {
    slot_ssize("fi_cq_read", || {
        // SAFETY: from_fid checks the object.
        let c = unsafe { from_fid::<Cq>(cq as *const fid) }?;
        check_buf(buf, count, "fi_cq_read")?;
        // Completions enough for the whole read are already queued: they
        // are returned without a progress pass (an application that reads
        // one entry per call pays for one pass per batch the pass queued,
        // not one per entry); the next read that finds fewer progresses.
        if count > 0 && c.busy_hint.load(Ordering::Acquire) {
            let mut q = c.lock();
            if q.errs.is_empty() && q.ok.len() >= count {
                // SAFETY: as below.
                let r = unsafe { c.read_locked(&mut q, buf, count, src_addr) };
                c.sync_fd(&mut q);
                super::xfer::note_queued_read();
                return r;
            }
        }
        if c.wfd.is_some() {
            // What this progress completes is read below: the eventfd
            // need not flip for it.
            let _hold = FdHold::new(c);
            c.domain().progress();
        } else {
            // Queues empty (nothing readable, no signal):
            // what the pass completes may go straight into `buf`.
            let direct = (count > 0 && c.q.is_serialized() && !c.busy_hint.load(Ordering::Acquire))
                .then(|| {
                    // SAFETY: the application's thread's own field ([`Direct`]);
                    // `buf` holds `count` entries, `src_addr` (if not NULL)
                    // `count` addresses (fi_cq_readfrom(3)).
                    unsafe {
                        *c.direct.get() = Direct {
                            buf,
                            count,
                            src: src_addr,
                            n: 0,
                        }
                    };
                    DirectRead(c)
                });
            c.domain().progress();
            let n = direct.as_ref().map_or(0, DirectRead::written);
            drop(direct);
            // Nothing (more) to read, nothing to clear: no lock.
            if !c.busy_hint.load(Ordering::Acquire) {
                return if n > 0 {
                    Ok(n as isize)
                } else {
                    Err(Error::AGAIN)
                };
            }
            if n > 0 {
                // Whatever else came (a signal, entries after the array
                // filled) is for the next read; a signal is consumed by
                // this one, as by a read of queued entries.
                c.lock().signal = false;
                return Ok(n as isize);
            }
        }
        let mut q = c.lock();
        // SAFETY: buf holds count entries and src_addr (if any) count
        // addresses (fi_cq_read(3)).
        let r = unsafe { c.read_locked(&mut q, buf, count, src_addr) };
        c.sync_fd(&mut q);
        r
    })
}

unsafe extern "C" fn sread(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: size_t,
    cond: *const c_void,
    timeout: c_int,
) -> ssize_t {
    // SAFETY: same contract as sreadfrom, without source addresses.
    unsafe { sreadfrom(cq, buf, count, std::ptr::null_mut(), cond, timeout) }
}

unsafe extern "C" fn sreadfrom(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: size_t,
    src_addr: *mut fi_addr_t,
    cond: *const c_void,
    timeout: c_int,
) -> ssize_t {
    slot_ssize("fi_cq_sread", || {
        // SAFETY: from_fid checks the object.
        let c = unsafe { from_fid::<Cq>(cq as *const fid) }?;
        check_buf(buf, count, "fi_cq_sread")?;
        // SAFETY: as readfrom.
        unsafe { c.sread_impl(buf, count, src_addr, cond, timeout) }
    })
}

/// An error completion as `struct fi_cq_err_entry`, without err_data.
fn err_entry(e: &ErrCompletion) -> fi_cq_err_entry {
    fi_cq_err_entry {
        op_context: e.context,
        flags: e.flags,
        len: e.len,
        buf: e.buf,
        data: e.data,
        tag: e.tag,
        olen: e.olen,
        err: e.err,
        prov_errno: e.prov_errno,
        err_data: std::ptr::null_mut(),
        err_data_size: 0,
        src_addr: e.src,
    }
}

unsafe extern "C" fn readerr(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> ssize_t {
    slot_ssize("fi_cq_readerr", || {
        // SAFETY: from_fid checks the object.
        let c = unsafe { from_fid::<Cq>(cq as *const fid) }?;
        crate::boundary::nonnull(buf, "fi_cq_readerr", "buf")?;
        if flags & !FI_PEEK != 0 {
            crate::ox_log!(
                Warn,
                Cq,
                super::NAME,
                "fi_cq_readerr: unsupported flags 0x{:x}",
                flags & !FI_PEEK
            );
            return Err(Error::BADFLAGS);
        }
        let peek = flags & FI_PEEK != 0;
        let mut q = c.lock();
        let (mut out, err_data, overrun) = match (q.errs.front(), q.overrun) {
            (Some((_, e)), _) => (err_entry(e), e.err_data.clone(), false),
            (None, Overrun::Pending { lost }) if q.ok.is_empty() => {
                let e = ErrCompletion {
                    err: Error::OVERRUN.0,
                    prov_errno: Error::OVERRUN.0,
                    olen: lost as usize,
                    ..ErrCompletion::default()
                };
                (err_entry(&e), Vec::new(), true)
            }
            _ => return Err(Error::AGAIN),
        };
        let len = cq_err_entry_len(c.api_version);
        // SAFETY: buf points to a writable fi_cq_err_entry of this API
        // version (fi_cq_readerr(3)); err_data_size exists from 1.5.
        let (user_buf, user_len) = unsafe {
            if c.api_version >= version(1, 5) {
                ((*buf).err_data, (*buf).err_data_size)
            } else {
                (std::ptr::null_mut(), 0)
            }
        };
        if !user_buf.is_null() && user_len > 0 {
            let n = user_len.min(err_data.len());
            // SAFETY: the caller's err_data holds user_len >= n bytes.
            unsafe { std::ptr::copy_nonoverlapping(err_data.as_ptr(), user_buf as *mut u8, n) };
            out.err_data = user_buf;
            out.err_data_size = n;
        } else if !err_data.is_empty() {
            q.last_err_data = err_data;
            out.err_data = q.last_err_data.as_mut_ptr() as *mut c_void;
            out.err_data_size = q.last_err_data.len();
        }
        // SAFETY: as above; only the first `len` bytes, the struct of this
        // API version, are written.
        unsafe {
            std::ptr::copy_nonoverlapping(
                &out as *const fi_cq_err_entry as *const u8,
                buf as *mut u8,
                len,
            )
        };
        if !peek {
            if overrun {
                q.overrun = Overrun::Reported;
            } else {
                q.errs.pop_front();
            }
            q.signal = false;
            c.sync_fd(&mut q);
        }
        Ok(1)
    })
}

unsafe extern "C" fn signal(cq: *mut fid_cq) -> c_int {
    slot("fi_cq_signal", || {
        // SAFETY: from_fid checks the object.
        let c = unsafe { from_fid::<Cq>(cq as *const fid) }?;
        if c.wait == WaitObj::None {
            crate::ox_log!(
                Warn,
                Cq,
                super::NAME,
                "fi_cq_signal on a CQ opened with FI_WAIT_NONE"
            );
            return Err(Error::NOSYS);
        }
        // Called to wake a thread asleep in fi_cq_sread: from another
        // thread, outside the application's serialization of the domain.
        let _out = c.domain().serial.as_ref().map(|s| s.exclude());
        let mut q = c.lock();
        q.signal = true;
        c.wake(q);
        Ok(0)
    })
}

unsafe extern "C" fn strerror(
    cq: *mut fid_cq,
    prov_errno: c_int,
    _err_data: *const c_void,
    buf: *mut c_char,
    len: size_t,
) -> *const c_char {
    crate::boundary::guard_or("fi_cq_strerror", std::ptr::null(), || {
        // SAFETY: from_fid checks the object; a bad CQ still gets a message.
        let _ = unsafe { from_fid::<Cq>(cq as *const fid) };
        let msg = crate::errstr::strerror_cstr(prov_errno.saturating_abs());
        if !buf.is_null() && len > 0 {
            // SAFETY: buf holds len writable bytes; msg is NUL-terminated.
            unsafe {
                let n = libc::strlen(msg).min(len - 1);
                std::ptr::copy_nonoverlapping(msg, buf, n);
                *buf.add(n) = 0;
            }
            return Ok(buf as *const c_char);
        }
        Ok(msg)
    })
}

unsafe extern "C" fn export_xpu(cq: *mut fid_cq, _flags: u64, _xpu_cq: *mut fid_xpu_cq) -> c_int {
    slot("fi_cq_export_xpu", || {
        // SAFETY: from_fid checks the object.
        unsafe { from_fid::<Cq>(cq as *const fid) }?;
        crate::ox_log!(
            Warn,
            Cq,
            super::NAME,
            "XPU completion queues are not supported"
        );
        Err(Error::NOSYS)
    })
}

#[cfg(test)]
pub(super) mod tests;
