//! How a reader waits on a CQ or a counter: the wait object the
//! application chose, the eventfd that is set while something is queued,
//! the private wait fd a blocking read sleeps on, and the adaptive spin
//! that comes before the sleep.

use super::super::domain::Domain;
use super::super::xfer::Xfer;
use crate::abi::eq::{fi_wait_obj, fi_wait_obj_raw};
use crate::error::{Error, Result};
use libc::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The wait object an application asked for (shared with counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitObj {
    None,
    Unspec,
    Fd,
    Yield,
}

impl WaitObj {
    /// The supported `enum fi_wait_obj` values; others are -FI_ENOSYS.
    pub fn from_raw(raw: fi_wait_obj_raw, what: &str) -> Result<WaitObj> {
        match fi_wait_obj::from_raw(raw) {
            Some(fi_wait_obj::FI_WAIT_NONE) => Ok(WaitObj::None),
            Some(fi_wait_obj::FI_WAIT_UNSPEC) => Ok(WaitObj::Unspec),
            Some(fi_wait_obj::FI_WAIT_FD) => Ok(WaitObj::Fd),
            Some(fi_wait_obj::FI_WAIT_YIELD) => Ok(WaitObj::Yield),
            _ => {
                crate::ox_log!(Warn, Core, super::super::NAME, "{what}: wait object {raw} not supported (use FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD or FI_WAIT_YIELD)");
                Err(Error::NOSYS)
            }
        }
    }

    pub fn raw(self) -> fi_wait_obj {
        match self {
            WaitObj::None => fi_wait_obj::FI_WAIT_NONE,
            WaitObj::Unspec => fi_wait_obj::FI_WAIT_UNSPEC,
            WaitObj::Fd => fi_wait_obj::FI_WAIT_FD,
            WaitObj::Yield => fi_wait_obj::FI_WAIT_YIELD,
        }
    }
}

/// A non-blocking eventfd, closed on drop. Its owner tracks whether it is
/// set, so each transition costs one system call and none are repeated.
pub struct EventFd(c_int);

impl EventFd {
    pub fn new(what: &str) -> Result<EventFd> {
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            let e = Error::last_os();
            crate::ox_log!(
                Warn,
                Core,
                super::super::NAME,
                "{what}: eventfd failed: {e}"
            );
            return Err(e);
        }
        Ok(EventFd(fd))
    }

    pub fn raw(&self) -> c_int {
        self.0
    }

    /// Makes the fd readable.
    pub fn set(&self) {
        let one: u64 = 1;
        // SAFETY: our eventfd; writing 8 bytes from a u64.
        unsafe { libc::write(self.0, &one as *const u64 as *const c_void, 8) };
    }

    /// Makes the fd unreadable again.
    pub fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: our eventfd; reading 8 bytes into a u64.
        unsafe { libc::read(self.0, &mut v as *mut u64 as *mut c_void, 8) };
    }
}

impl Drop for EventFd {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// The fd of an FI_WAIT_FD CQ or counter (`FI_GETWAIT`), and the private
/// one that fi_cq_sread and fi_cntr_wait sleep on: an epoll set that
/// watches the object's eventfd, which the object sets when it has
/// something to report, and the wake-up sockets of the domain's endpoints,
/// which the sender of the next message makes readable once they are
/// armed ([`WaitFd::prepare`]). A thread asleep in poll(2) is thus woken
/// by the sending process itself, as by an eventfd it shared with it;
/// completions that the progress thread produces meanwhile reach it
/// through the eventfd.
pub struct WaitFd {
    efd: EventFd,
    epfd: c_int,
    /// Keys of the wake-up sockets in the set.
    watched: Mutex<Vec<u64>>,
}

impl WaitFd {
    pub fn new(what: &str) -> Result<WaitFd> {
        let efd = EventFd::new(what)?;
        // SAFETY: epoll_create1 has no memory preconditions; checked.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            let e = Error::last_os();
            crate::ox_log!(
                Warn,
                Core,
                super::super::NAME,
                "{what}: epoll_create1 failed: {e}"
            );
            return Err(e);
        }
        let w = WaitFd {
            efd,
            epfd,
            watched: Mutex::new(Vec::new()),
        };
        if !w.add(w.efd.raw()) {
            let e = Error::last_os();
            crate::ox_log!(
                Warn,
                Core,
                super::super::NAME,
                "{what}: epoll_ctl failed: {e}"
            );
            return Err(e);
        }
        Ok(w)
    }

    /// The fd for FI_GETWAIT.
    pub fn raw(&self) -> c_int {
        self.epfd
    }

    /// Makes the fd readable.
    pub fn set(&self) {
        self.efd.set()
    }

    /// Makes the eventfd unreadable again.
    pub fn clear(&self) {
        self.efd.clear()
    }

    /// Sleeps in poll(2) until the fd is readable or `deadline` passes.
    pub fn sleep(&self, deadline: Option<Instant>) {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                // Rounded up: waking early would only poll again.
                left.as_micros().div_ceil(1000).min(c_int::MAX as u128) as c_int
            }
        };
        let mut p = libc::pollfd {
            fd: self.epfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; an EINTR return is a spurious wake-up.
        unsafe { libc::poll(&mut p, 1, ms) };
    }

    fn add(&self, fd: c_int) -> bool {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: both fds are open; ev is a valid epoll_event.
        let rc = unsafe { libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST)
    }

    /// fi_trywait: watches the wake-up socket of each of the domain's
    /// endpoints and arms it, for responses too where `replies` says that
    /// they complete into this object; false when a message is already
    /// pending (the caller must not sleep).
    pub fn prepare(&self, d: &Domain, replies: impl Fn(&Xfer) -> bool) -> bool {
        let mut seen = 0;
        let ready = d.all_xfers(|x| {
            seen += 1;
            if let Some((fd, key)) = x.wake_fd() {
                self.watch(fd, key);
            }
            x.prepare_fd_wait(replies(x))
        });
        // Sockets of closed endpoints left the set as they closed; their
        // keys go once they outnumber the live ones.
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if ready && w.len() > 2 * seen + 8 {
            let mut live = Vec::new();
            d.all_xfers(|x| {
                live.extend(x.wake_fd().map(|(_, k)| k));
                true
            });
            w.retain(|k| live.contains(k));
        }
        ready
    }

    fn watch(&self, fd: c_int, key: u64) {
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if !w.contains(&key) && self.add(fd) {
            w.push(key);
        }
    }
}

impl Drop for WaitFd {
    fn drop(&mut self) {
        // SAFETY: the epoll fd is ours and closed once.
        unsafe { libc::close(self.epfd) };
    }
}

/// Milliseconds from fi(3) (negative: forever) as a deadline.
pub fn deadline(timeout_ms: c_int) -> Option<Instant> {
    (timeout_ms >= 0).then(|| Instant::now() + Duration::from_millis(timeout_ms as u64))
}

/// Shortest and longest polling phase of a blocking wait, and the first.
pub(super) const SPIN_MIN: Duration = Duration::from_micros(2);
pub(super) const SPIN_MAX: Duration = Duration::from_micros(100);
pub(super) const SPIN_START: Duration = Duration::from_micros(20);

/// The polling phase of a blocking wait (fi_cq_sread, fi_cntr_wait), one
/// per CQ or counter. Sleeping and being woken costs two context switches
/// and, between processes on different CPUs, an interrupt (tens of
/// microseconds where an idle virtual CPU must be woken); a message that
/// arrives within microseconds is cheaper to poll for. The phase adapts
/// as halt-polling does: a wait that slept for an event that came within
/// [`SPIN_MAX`] of its start doubles it (a longer poll would have caught
/// the event), one whose event came later halves it, so a thread that
/// waits for rare events soon polls only [`SPIN_MIN`] before it sleeps.
/// The event's time is stamped by the thread that queues the completion
/// or counts while the waiter sleeps, so that a slow wake-up does not
/// count against polling; a waiter woken by a message itself takes the
/// time it woke.
pub struct Spin {
    nanos: AtomicU64,
}

impl Default for Spin {
    fn default() -> Spin {
        Spin {
            nanos: AtomicU64::new(SPIN_START.as_nanos() as u64),
        }
    }
}

impl Spin {
    /// The current length of the polling phase.
    pub fn budget(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// Calls `ready` (which drives progress and looks for the event) until
    /// it answers, the polling phase is over or `deadline` passes;
    /// `ready` is called at least once. The CPU is yielded between calls
    /// (sched_yield(2), as FI_WAIT_YIELD says, for every wait object):
    /// where CPUs are fewer than runnable threads, the peer or the thread
    /// that will complete the operation may be waiting for this one's CPU,
    /// and spinning there costs it the time of every spin (measured: a
    /// 64-byte ping-pong of two processes on one CPU took 4.2 us per
    /// message with 16 spins before yielding, 2.1 us yielding at once);
    /// on an idle CPU the call returns at once.
    pub fn poll<T>(
        &self,
        deadline: Option<Instant>,
        mut ready: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        let start = Instant::now();
        let mut end = start + self.budget();
        if let Some(d) = deadline {
            end = end.min(d);
        }
        loop {
            if let Some(v) = ready() {
                return Some(v);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// After a wait that slept: `event_after` is the time from the start
    /// of the wait (polling included) to the event that ended it.
    pub fn slept(&self, event_after: Duration) {
        let cur = self.budget();
        let next = if event_after <= SPIN_MAX {
            (cur * 2).clamp(SPIN_MIN, SPIN_MAX)
        } else {
            (cur / 2).max(SPIN_MIN)
        };
        self.nanos.store(next.as_nanos() as u64, Ordering::Relaxed);
    }
}
