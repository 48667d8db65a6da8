//! oxshm counters (`fi_cntr_open`): a completion count and an error count,
//! both atomic, that the data path bumps through [`Cntr::inc`] and
//! [`Cntr::inc_err`] without taking a lock unless a thread is waiting.
//!
//! fi_cntr_wait polls for a short, adaptive while (driving progress, as
//! fi_cntr_read does), then sleeps in poll(2) on a private wait fd that an
//! update made while a thread waits sets, as does the sender of the next
//! message to one of the domain's endpoints (the woken thread then handles
//! the message itself; see cq.rs's `WaitFd`); with FI_WAIT_FD
//! the counter also keeps an eventfd that becomes readable when either
//! count changes and unreadable when the application observes the counter
//! (fi_cntr_read, fi_cntr_readerr, fi_cntr_wait), for `FI_GETWAIT`,
//! fi_trywait and poll(2).

use super::cq::{deadline, Spin, WaitFd, WaitObj};
use super::domain::Domain;
use super::object::{from_fid, nosys, slot, Header, Object};
use crate::abi::domain::fid_domain;
use crate::abi::eq::*;
use crate::abi::fabric::*;
use crate::abi::xpu::fid_xpu_cntr;
use crate::error::{Error, Result};
use crate::prov::info::version;
use libc::{c_int, c_void};
use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// Tag of live oxshm counters.
pub const TAG_CNTR: u64 = u64::from_be_bytes(*b"oxCNTR\0\0");

struct WaitState {
    /// Whether the eventfd is currently set.
    fd_set: bool,
    /// Whether the sleepers' eventfd is set.
    sleep_set: bool,
    /// When an update last woke the waiters (for [`Spin::slept`]).
    woken_at: Option<Instant>,
}

#[repr(C)]
pub struct Cntr {
    pub fid: fid_cntr,
    pub hdr: Header,
    domain: *const Domain,
    events: fi_cntr_events,
    wait: WaitObj,
    wfd: Option<WaitFd>,
    value: AtomicU64,
    errors: AtomicU64,
    /// Threads inside fi_cntr_wait; updates skip the lock while it is 0.
    waiters: AtomicUsize,
    lock: Mutex<WaitState>,
    /// What fi_cntr_wait sleeps on, made at the first sleep.
    sleeper: OnceLock<WaitFd>,
    spin: Spin,
}

// SAFETY: the domain pointer is only used to release the counter's hold at
// close (the domain cannot close first); the counts are atomics and the
// wait state is behind the mutex.
unsafe impl Send for Cntr {}
// SAFETY: as above.
unsafe impl Sync for Cntr {}

// SAFETY: #[repr(C)] with fid_cntr (which starts with struct fid) first.
unsafe impl Object for Cntr {
    const TAG: u64 = TAG_CNTR;
    const FCLASS: usize = FI_CLASS_CNTR as usize;
    const NAME: &'static str = "counter";
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

static OPS_CNTR: fi_ops_cntr = fi_ops_cntr {
    size: std::mem::size_of::<fi_ops_cntr>(),
    read: Some(read),
    readerr: Some(readerr),
    add: Some(add),
    set: Some(set),
    wait: Some(wait),
    adderr: Some(adderr),
    seterr: Some(seterr),
    export_xpu: Some(export_xpu),
};

/// Checks that `p` is a live oxshm counter (for fi_ep_bind and fi_mr_bind).
///
/// # Safety
/// `p` is NULL or points to readable memory that starts with a `struct fid`.
pub unsafe fn cntr_from_fid(p: *const fid) -> Result<&'static Cntr> {
    // SAFETY: per the function contract.
    unsafe { from_fid::<Cntr>(p) }
}

/// Bytes of `struct fi_cntr_attr` at an API version (`xpu_ctx` is 2.7's).
pub fn cntr_attr_len(api_version: u32) -> usize {
    if api_version < version(2, 7) {
        offset_of!(fi_cntr_attr, xpu_ctx)
    } else {
        std::mem::size_of::<fi_cntr_attr>()
    }
}

fn check_attr(api_version: u32, a: &fi_cntr_attr) -> Result<(fi_cntr_events, WaitObj)> {
    let xpu = if api_version >= version(2, 7) {
        FI_XPU
    } else {
        0
    };
    if a.flags & xpu != 0 {
        crate::ox_log!(Warn, Cntr, super::NAME, "FI_XPU counters are not supported");
        return Err(Error::NOSYS);
    }
    if a.flags != 0 {
        crate::ox_log!(
            Warn,
            Cntr,
            super::NAME,
            "unsupported counter flags 0x{:x}",
            a.flags
        );
        return Err(Error::BADFLAGS);
    }
    let events = match fi_cntr_events::from_raw(a.events) {
        Some(fi_cntr_events::FI_CNTR_EVENTS_BYTES) if api_version < version(2, 0) => {
            crate::ox_log!(
                Warn,
                Cntr,
                super::NAME,
                "FI_CNTR_EVENTS_BYTES needs API 2.0 or later"
            );
            return Err(Error::INVAL);
        }
        Some(e) => e,
        None => {
            crate::ox_log!(
                Warn,
                Cntr,
                super::NAME,
                "unknown counter events {}",
                a.events
            );
            return Err(Error::INVAL);
        }
    };
    let wait = WaitObj::from_raw(a.wait_obj, "fi_cntr_open")?;
    Ok((events, wait))
}

/// The `fi_ops_domain.cntr_open` slot.
///
/// # Safety
/// `domain` is any object (checked); `attr` is NULL or holds a
/// `struct fi_cntr_attr` of the domain's API version; `cntr` is NULL or
/// writable.
pub unsafe extern "C" fn open(
    domain: *mut fid_domain,
    attr: *mut fi_cntr_attr,
    cntr: *mut *mut fid_cntr,
    context: *mut c_void,
) -> c_int {
    slot("fi_cntr_open", || {
        // SAFETY: from_fid checks the object.
        let d = unsafe { from_fid::<Domain>(domain as *const fid) }?;
        crate::boundary::nonnull(attr, "fi_cntr_open", "attr")?;
        crate::boundary::nonnull(cntr, "fi_cntr_open", "cntr")?;
        // A copy of the application's prefix; later fields stay zero.
        // SAFETY: attr holds at least cntr_attr_len bytes for this API
        // version, and every field of fi_cntr_attr is valid when zeroed.
        let a: fi_cntr_attr = unsafe {
            let mut a: fi_cntr_attr = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(
                attr as *const u8,
                &mut a as *mut fi_cntr_attr as *mut u8,
                cntr_attr_len(d.api_version),
            );
            a
        };
        let (events, wait) = check_attr(d.api_version, &a)?;
        let wfd = match wait {
            WaitObj::Fd => Some(WaitFd::new("fi_cntr_open")?),
            _ => None,
        };
        d.hdr.hold();
        let c = Box::new(Cntr {
            fid: fid_cntr {
                fid: fid {
                    fclass: FI_CLASS_CNTR as usize,
                    context,
                    ops: Cntr::fi_ops(),
                },
                ops: &OPS_CNTR as *const fi_ops_cntr as *mut fi_ops_cntr,
            },
            hdr: Header::new(TAG_CNTR),
            domain: d,
            events,
            wait,
            wfd,
            value: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(WaitState {
                fd_set: false,
                sleep_set: false,
                woken_at: None,
            }),
            sleeper: OnceLock::new(),
            spin: Spin::default(),
        });
        // SAFETY: cntr checked non-NULL; written last, on success.
        unsafe { *cntr = Box::into_raw(c) as *mut fid_cntr };
        Ok(0)
    })
}

/// Decrements the waiter count however fi_cntr_wait returns.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Cntr {
    /// The domain the counter was opened on.
    pub fn domain(&self) -> &Domain {
        // SAFETY: a domain cannot close while its counters are open.
        unsafe { &*self.domain }
    }

    fn lock(&self) -> MutexGuard<'_, WaitState> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the counter counts (FI_CNTR_EVENTS_COMP or _BYTES).
    pub fn events(&self) -> fi_cntr_events {
        self.events
    }

    /// The completion count.
    pub fn value(&self) -> u64 {
        self.value.load(Ordering::SeqCst)
    }

    /// The error count.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::SeqCst)
    }

    /// Adds `n` to the completion count (wrapping, as a uint64_t does) and
    /// wakes waiters. Thread-safe and lock-free while nobody waits and the
    /// counter has no fd.
    pub fn inc(&self, n: u64) {
        self.value.fetch_add(n, Ordering::SeqCst);
        self.wake();
    }

    /// Adds `n` to the error count and wakes waiters (whose fi_cntr_wait
    /// then returns -FI_EAVAIL).
    pub fn inc_err(&self, n: u64) {
        self.errors.fetch_add(n, Ordering::SeqCst);
        self.wake();
    }

    /// Counts one successful operation of `bytes` bytes: 1 for an
    /// FI_CNTR_EVENTS_COMP counter, `bytes` for FI_CNTR_EVENTS_BYTES.
    pub fn count(&self, bytes: u64) {
        match self.events {
            fi_cntr_events::FI_CNTR_EVENTS_COMP => self.inc(1),
            fi_cntr_events::FI_CNTR_EVENTS_BYTES => self.inc(bytes),
        }
    }

    fn set_value(&self, v: u64) {
        self.value.store(v, Ordering::SeqCst);
        self.wake();
    }

    fn set_errors(&self, v: u64) {
        self.errors.store(v, Ordering::SeqCst);
        self.wake();
    }

    /// After a count changed: sets the fd and wakes waiters. The count is
    /// written (SeqCst) before `waiters` is read, and a waiter registers
    /// before it reads the count, so one of the two always sees the other.
    fn wake(&self) {
        if let Some(fd) = &self.wfd {
            let mut g = self.lock();
            if !g.fd_set {
                fd.set();
                g.fd_set = true;
            }
            drop(g);
        }
        if self.waiters.load(Ordering::SeqCst) > 0 {
            if let Some(s) = self.sleeper.get() {
                let mut g = self.lock();
                if !g.sleep_set {
                    g.woken_at = Some(Instant::now());
                    s.set();
                    g.sleep_set = true;
                }
            }
        }
    }

    /// The fd fi_cntr_wait sleeps on.
    fn sleeper(&self) -> Result<&WaitFd> {
        if let Some(s) = self.sleeper.get() {
            return Ok(s);
        }
        let s = WaitFd::new("fi_cntr_wait")?;
        // Another waiter may have made one meanwhile: it is kept.
        Ok(self.sleeper.get_or_init(|| s))
    }

    /// The application looked at the counter: the fd waits for the next
    /// change. Cleared before the count is read, so no change is missed.
    fn observe(&self) {
        if let Some(fd) = &self.wfd {
            let mut g = self.lock();
            if g.fd_set {
                fd.clear();
                g.fd_set = false;
            }
        }
    }

    /// fi_trywait on this counter: drives progress, then -FI_EAGAIN if
    /// the counter changed since the application last looked at it (its
    /// fd is readable) or a message waits in an endpoint's inbox, else
    /// arms the wake-up sockets the wait fd watches and returns Ok.
    pub fn trywait(&self) -> Result<()> {
        self.domain().progress();
        if self.changed() {
            return Err(Error::AGAIN);
        }
        let ready = match &self.wfd {
            // Responses count sends, reads and writes.
            Some(w) => w.prepare(self.domain(), |_| true),
            None => {
                self.domain().progress_before_wait();
                true
            }
        };
        if !ready || self.changed() {
            return Err(Error::AGAIN);
        }
        Ok(())
    }

    /// Whether the fd is set: a change the application has not observed.
    fn changed(&self) -> bool {
        self.wfd.is_some() && self.lock().fd_set
    }

    /// fi_cntr_wait: 0 once the count reaches `threshold`, -FI_EAVAIL if the
    /// error count changes first, -FI_ETIMEDOUT after `timeout` ms. Polls
    /// first (driving progress), then sleeps until an update or a message
    /// wakes it, and drives progress itself after each wake-up.
    fn wait_for(&self, threshold: u64, timeout: c_int) -> Result<()> {
        let start = Instant::now();
        self.domain().progress();
        self.observe();
        let errors = self.errors();
        let deadline = deadline(timeout);
        let outcome = || {
            if self.value() >= threshold {
                Some(Ok(()))
            } else if self.errors() != errors {
                Some(Err(Error::AVAIL))
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                Some(Err(Error::TIMEDOUT))
            } else {
                None
            }
        };
        let mut first = true;
        let polled = self.spin.poll(deadline, || {
            if !first {
                self.domain().progress();
            }
            first = false;
            outcome()
        });
        if let Some(r) = polled {
            return r;
        }
        let sleeper = self.sleeper()?;
        self.lock().woken_at = None;
        let mut woke = None;
        loop {
            // Registered before the counts are read (see `wake`), and only
            // while asleep: updates this thread's own progress makes need
            // not set the fd.
            self.waiters.fetch_add(1, Ordering::SeqCst);
            let waiting = Waiting(&self.waiters);
            // Cleared before the counts are read: an update after the
            // read sets it again.
            {
                let mut g = self.lock();
                if g.sleep_set {
                    sleeper.clear();
                    g.sleep_set = false;
                }
            }
            if let Some(r) = outcome() {
                drop(waiting);
                let event = self.lock().woken_at.take().or(woke);
                let event = event.unwrap_or_else(Instant::now);
                self.spin.slept(event.saturating_duration_since(start));
                return r;
            }
            // Responses count sends, reads and writes.
            if sleeper.prepare(self.domain(), |_| true) {
                sleeper.sleep(deadline);
                woke = Some(Instant::now());
            }
            drop(waiting);
            // Woken by a message, the waiter handles it itself.
            self.domain().progress();
        }
    }
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let c = unsafe { from_fid::<Cntr>(f) }?;
        let waiters = c.waiters.load(Ordering::SeqCst);
        if waiters > 0 {
            crate::ox_log!(
                Warn,
                Cntr,
                super::NAME,
                "cannot close counter: {waiters} thread(s) blocked in fi_cntr_wait"
            );
            return Err(Error::BUSY);
        }
        c.hdr.begin_close("counter")?;
        // SAFETY: the domain outlives its counters (it cannot close while
        // held).
        unsafe { (*c.domain).hdr.release() };
        // SAFETY: allocated by `open`; no dependants remain. Dropping closes
        // the eventfd.
        drop(unsafe { Box::from_raw(f as *mut Cntr) });
        Ok(0)
    })
}

unsafe extern "C" fn control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    slot("fi_control", || {
        // SAFETY: from_fid checks the object.
        let c = unsafe { from_fid::<Cntr>(f) }?;
        match command {
            FI_GETWAIT => {
                let Some(fd) = &c.wfd else {
                    crate::ox_log!(
                        Warn,
                        Cntr,
                        super::NAME,
                        "FI_GETWAIT: this counter has no fd (open it with FI_WAIT_FD)"
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
                unsafe { *(arg as *mut u32) = c.wait.raw() as u32 };
                Ok(0)
            }
            other => {
                crate::ox_log!(
                    Warn,
                    Cntr,
                    super::NAME,
                    "control command {other} not supported on a counter"
                );
                Err(Error::NOSYS)
            }
        }
    })
}

/// The counter behind a slot's argument; a bad one is logged by from_fid.
fn counter<'a>(p: *mut fid_cntr) -> Result<&'a Cntr> {
    // SAFETY: from_fid checks the object; C hands us a fid_cntr pointer.
    unsafe { from_fid::<Cntr>(p as *const fid) }
}

/// Returns 0 for a bad counter: uint64_t has no error channel.
unsafe extern "C" fn read(cntr: *mut fid_cntr) -> u64 {
    crate::boundary::guard_or("fi_cntr_read", 0, || {
        let c = counter(cntr)?;
        c.domain().progress();
        c.observe();
        Ok(c.value())
    })
}

/// Returns 0 for a bad counter: uint64_t has no error channel.
unsafe extern "C" fn readerr(cntr: *mut fid_cntr) -> u64 {
    crate::boundary::guard_or("fi_cntr_readerr", 0, || {
        let c = counter(cntr)?;
        c.domain().progress();
        c.observe();
        Ok(c.errors())
    })
}

unsafe extern "C" fn add(cntr: *mut fid_cntr, value: u64) -> c_int {
    slot("fi_cntr_add", || {
        counter(cntr)?.inc(value);
        Ok(0)
    })
}

unsafe extern "C" fn set(cntr: *mut fid_cntr, value: u64) -> c_int {
    slot("fi_cntr_set", || {
        counter(cntr)?.set_value(value);
        Ok(0)
    })
}

unsafe extern "C" fn adderr(cntr: *mut fid_cntr, value: u64) -> c_int {
    slot("fi_cntr_adderr", || {
        counter(cntr)?.inc_err(value);
        Ok(0)
    })
}

unsafe extern "C" fn seterr(cntr: *mut fid_cntr, value: u64) -> c_int {
    slot("fi_cntr_seterr", || {
        counter(cntr)?.set_errors(value);
        Ok(0)
    })
}

unsafe extern "C" fn wait(cntr: *mut fid_cntr, threshold: u64, timeout: c_int) -> c_int {
    slot("fi_cntr_wait", || {
        counter(cntr)?.wait_for(threshold, timeout)?;
        Ok(0)
    })
}

unsafe extern "C" fn export_xpu(
    cntr: *mut fid_cntr,
    _flags: u64,
    _xpu_cntr: *mut fid_xpu_cntr,
) -> c_int {
    slot("fi_cntr_export_xpu", || {
        counter(cntr)?;
        crate::ox_log!(Warn, Cntr, super::NAME, "XPU counters are not supported");
        Err(Error::NOSYS)
    })
}

#[cfg(test)]
mod tests {
    use super::super::cq::tests::{fi_close_raw, Res};
    use super::*;
    use crate::prov::info::API_VERSION;
    use std::time::Duration;

    fn attr(events: fi_cntr_events, wait: fi_wait_obj) -> fi_cntr_attr {
        // SAFETY: all-zero is a valid fi_cntr_attr.
        let mut a: fi_cntr_attr = unsafe { std::mem::zeroed() };
        a.events = events as u32;
        a.wait_obj = wait as u32;
        a
    }

    fn open_cntr(r: &Res, a: &mut fi_cntr_attr) -> std::result::Result<*mut fid_cntr, c_int> {
        let mut c = std::ptr::null_mut();
        // SAFETY: the domain is live; a and c are valid.
        let rc = unsafe { open(r.domain, a, &mut c, std::ptr::null_mut()) };
        if rc == 0 {
            Ok(c)
        } else {
            assert!(c.is_null(), "output written on failure");
            Err(rc)
        }
    }

    fn cntr(c: *mut fid_cntr) -> &'static Cntr {
        // SAFETY: c came from open.
        unsafe { cntr_from_fid(c as *const fid) }.unwrap()
    }

    fn close_cntr(c: *mut fid_cntr) -> c_int {
        // SAFETY: c came from open.
        unsafe { fi_close_raw(c as *mut fid) }
    }

    fn comp(wait: fi_wait_obj) -> fi_cntr_attr {
        attr(fi_cntr_events::FI_CNTR_EVENTS_COMP, wait)
    }

    #[test]
    fn table_is_full() {
        let t = &OPS_CNTR;
        assert!(t.read.is_some() && t.readerr.is_some() && t.add.is_some());
        assert!(t.set.is_some() && t.wait.is_some() && t.adderr.is_some());
        assert!(t.seterr.is_some() && t.export_xpu.is_some());
        assert_eq!(t.size, std::mem::size_of::<fi_ops_cntr>());
        assert_eq!(cntr_attr_len(version(1, 17)), 24);
        assert_eq!(cntr_attr_len(API_VERSION), 32);
    }

    #[test]
    fn add_set_read() {
        let r = Res::new(API_VERSION);
        let c = open_cntr(&r, &mut comp(fi_wait_obj::FI_WAIT_NONE)).unwrap();
        // SAFETY: c is a live counter.
        unsafe {
            assert_eq!(read(c), 0);
            assert_eq!(add(c, 5), 0);
            cntr(c).inc(2);
            assert_eq!(read(c), 7);
            assert_eq!(set(c, 100), 0);
            assert_eq!(read(c), 100);
            assert_eq!(adderr(c, 3), 0);
            cntr(c).inc_err(1);
            assert_eq!(readerr(c), 4);
            assert_eq!(seterr(c, 0), 0);
            assert_eq!(readerr(c), 0);
            assert_eq!(read(c), 100);
            cntr(c).count(4096);
            assert_eq!(read(c), 101, "a COMP counter counts operations");
            // A bad counter reads as 0 and is refused elsewhere.
            assert_eq!(read(std::ptr::null_mut()), 0);
            assert_eq!(add(std::ptr::null_mut(), 1), Error::INVAL.code());
        }
        assert_eq!(close_cntr(c), 0);
    }

    #[test]
    fn bytes_counter() {
        let r = Res::new(API_VERSION);
        let mut a = attr(
            fi_cntr_events::FI_CNTR_EVENTS_BYTES,
            fi_wait_obj::FI_WAIT_NONE,
        );
        let c = open_cntr(&r, &mut a).unwrap();
        cntr(c).count(4096);
        cntr(c).count(8);
        assert_eq!(cntr(c).value(), 4104);
        assert_eq!(close_cntr(c), 0);
        let old = Res::new(version(1, 17));
        assert_eq!(open_cntr(&old, &mut a), Err(Error::INVAL.code()));
    }

    #[test]
    fn wait_outcomes() {
        let r = Res::new(API_VERSION);
        // Waiting works whatever the wait object: it is a condvar inside.
        let c = open_cntr(&r, &mut comp(fi_wait_obj::FI_WAIT_NONE)).unwrap();
        // SAFETY: c is a live counter until the close below.
        unsafe {
            assert_eq!(wait(c, 0, 0), 0);
            let t0 = Instant::now();
            assert_eq!(wait(c, 1, 50), Error::TIMEDOUT.code());
            assert!(t0.elapsed() >= Duration::from_millis(45));
            let p = c as usize;
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                add(p as *mut fid_cntr, 2)
            });
            assert_eq!(wait(c, 2, 10_000), 0);
            assert_eq!(t.join().unwrap(), 0);
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                adderr(p as *mut fid_cntr, 1)
            });
            assert_eq!(wait(c, 10, -1), Error::AVAIL.code());
            assert_eq!(t.join().unwrap(), 0);
            // An error count that changed before the call does not count.
            assert_eq!(wait(c, 10, 10), Error::TIMEDOUT.code());
        }
        assert_eq!(close_cntr(c), 0);
    }

    #[test]
    fn wait_sleeps_until_another_thread_counts() {
        for obj in [fi_wait_obj::FI_WAIT_UNSPEC, fi_wait_obj::FI_WAIT_FD] {
            let r = Res::new(API_VERSION);
            let c = open_cntr(&r, &mut comp(obj)).unwrap();
            let k = cntr(c);
            let first_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let done = std::sync::Arc::clone(&first_done);
            let counter = std::thread::spawn(move || {
                // Until the waiter sleeps (it polls for microseconds first).
                while k.waiters.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                k.inc(1);
                // The second wait has read the error count once it sleeps.
                while !done.load(Ordering::SeqCst) || k.waiters.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                k.inc_err(1);
            });
            // SAFETY: c is a live counter until the close below.
            unsafe {
                assert_eq!(wait(c, 1, -1), 0);
                first_done.store(true, Ordering::SeqCst);
                assert_eq!(wait(c, 2, -1), Error::AVAIL.code());
            }
            counter.join().unwrap();
            assert_eq!(k.waiters.load(Ordering::SeqCst), 0);
            assert_eq!(close_cntr(c), 0);
        }
    }

    #[test]
    fn trywait_follows_changes() {
        let r = Res::new(API_VERSION);
        let c = open_cntr(&r, &mut comp(fi_wait_obj::FI_WAIT_FD)).unwrap();
        let k = cntr(c);
        assert_eq!(k.trywait(), Ok(()));
        k.inc(1);
        assert_eq!(k.trywait(), Err(Error::AGAIN));
        // SAFETY: c is live.
        assert_eq!(unsafe { read(c) }, 1);
        assert_eq!(k.trywait(), Ok(()));
        assert_eq!(close_cntr(c), 0);
    }

    #[test]
    fn many_threads_count_exactly() {
        let r = Res::new(API_VERSION);
        let c = open_cntr(&r, &mut comp(fi_wait_obj::FI_WAIT_FD)).unwrap();
        let k = cntr(c);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        k.inc(1);
                    }
                })
            })
            .collect();
        // SAFETY: c is a live counter until the close below.
        assert_eq!(unsafe { wait(c, 40_000, 20_000) }, 0);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(k.value(), 40_000);
        assert_eq!(close_cntr(c), 0);
    }

    #[test]
    fn fd_follows_changes() {
        let r = Res::new(API_VERSION);
        let c = open_cntr(&r, &mut comp(fi_wait_obj::FI_WAIT_FD)).unwrap();
        let mut fd: c_int = -1;
        // SAFETY: FI_GETWAIT with an int *.
        let rc = unsafe {
            control(
                c as *mut fid,
                FI_GETWAIT,
                &mut fd as *mut c_int as *mut c_void,
            )
        };
        assert_eq!(rc, 0);
        let readable = || {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, 0) == 1 }
        };
        assert!(!readable());
        cntr(c).inc(1);
        assert!(readable());
        // SAFETY: c is live.
        assert_eq!(unsafe { read(c) }, 1);
        assert!(!readable());
        cntr(c).inc_err(1);
        assert!(readable());
        // SAFETY: c is live.
        assert_eq!(unsafe { readerr(c) }, 1);
        assert!(!readable());
        assert_eq!(close_cntr(c), 0);
    }

    #[test]
    fn bad_attributes() {
        let r = Res::new(API_VERSION);
        let mut a = comp(fi_wait_obj::FI_WAIT_SET);
        assert_eq!(open_cntr(&r, &mut a), Err(Error::NOSYS.code()));
        a = comp(fi_wait_obj::FI_WAIT_POLLFD);
        assert_eq!(open_cntr(&r, &mut a), Err(Error::NOSYS.code()));
        a = comp(fi_wait_obj::FI_WAIT_NONE);
        a.events = 9;
        assert_eq!(open_cntr(&r, &mut a), Err(Error::INVAL.code()));
        a = comp(fi_wait_obj::FI_WAIT_NONE);
        a.flags = FI_AFFINITY;
        assert_eq!(open_cntr(&r, &mut a), Err(Error::BADFLAGS.code()));
        a = comp(fi_wait_obj::FI_WAIT_NONE);
        a.flags = FI_XPU;
        assert_eq!(open_cntr(&r, &mut a), Err(Error::NOSYS.code()));
        let mut out = std::ptr::null_mut();
        // SAFETY: NULL attr and NULL output are refused before use.
        unsafe {
            assert_eq!(
                open(
                    r.domain,
                    std::ptr::null_mut(),
                    &mut out,
                    std::ptr::null_mut()
                ),
                -22
            );
            let mut a = comp(fi_wait_obj::FI_WAIT_NONE);
            assert_eq!(
                open(r.domain, &mut a, std::ptr::null_mut(), std::ptr::null_mut()),
                -22
            );
        }
        assert!(out.is_null());
    }

    #[test]
    fn domain_waits_for_its_counters() {
        let mut r = Res::new(API_VERSION);
        let c = open_cntr(&r, &mut comp(fi_wait_obj::FI_WAIT_UNSPEC)).unwrap();
        assert_eq!(r.close_domain(), Error::BUSY.code());
        let mut obj: u32 = 99;
        // SAFETY: FI_GETWAITOBJ with an enum fi_wait_obj *; c is live.
        unsafe {
            let arg = &mut obj as *mut u32 as *mut c_void;
            assert_eq!(control(c as *mut fid, FI_GETWAITOBJ, arg), 0);
            assert_eq!(export_xpu(c, 0, std::ptr::null_mut()), Error::NOSYS.code());
        }
        assert_eq!(obj, fi_wait_obj::FI_WAIT_UNSPEC as u32);
        assert_eq!(close_cntr(c), 0);
        assert_eq!(r.close_domain(), 0);
    }
}
