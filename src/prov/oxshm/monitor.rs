//! Memory monitors of the registration cache (fi_mr(3), FI_MR_CACHE_MONITOR):
//! they tell the caches of every pinned-mode domain which address ranges no
//! longer map the pages they did, so that a pinning of the old pages is
//! never served again.
//!
//! One monitor runs per process, chosen when the first pinned-mode domain
//! opens:
//! - `userfaultfd` (the default): cached ranges are registered with a
//!   userfaultfd in write-protect mode, which asks for no fault handling;
//!   the kernel then reports unmap (munmap, brk/sbrk shrink, mremap's
//!   source), remove (madvise that drops pages) and remap events. A thread
//!   reads them and queues the ranges; a lookup first waits for the events
//!   read so far and applies the queue, so a change made by a call that has
//!   returned is never missed.
//!
//! The kernel holds a thread that unmaps or drops a watched range until
//! the event is *read*. So the reader never waits for anything another
//! thread may hold while unmapping (a cache's lock: a registration holds it
//! across mlock and allocations), and never unmaps a watched range itself
//! while it is the only reader: it only reads and queues, and at exit the
//! descriptor is closed (which releases every waiter and drops every
//! registration) before the thread is joined. The thread's own exit unmaps
//! memory (a sanitizer's alternate signal stack) that an application may
//! have registered: an address it unmapped and that the runtime reused.
//! - `memhooks`: see `memhooks.rs`.
//! - `kdreg2`: oxfabric does not implement the kdreg2 device's interface
//!   (an ioctl ABI it cannot test here), so this choice always falls back
//!   to userfaultfd, then memhooks. The warning names the device path and
//!   what was found there (missing, not a character device, not openable,
//!   or present but not spoken), and the fallback taken.
//! - `disabled`: no caching.
//! - an imported `fid_mem_monitor` (fi_import_fid on the "mr_cache" fid):
//!   replaces the built-in monitor for system memory.
//!
//! When the chosen monitor cannot run, the others are tried in the order
//! userfaultfd, memhooks; when none can run, nothing is cached and the log
//! says why.

use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A cache that monitors report to.
pub trait Invalidate: Send + Sync {
    fn invalidate(&self, start: u64, len: u64);
    /// As `invalidate`, unless the cache is busy (its lock is held, maybe
    /// by this very thread): then false, and nothing changed.
    fn try_invalidate(&self, start: u64, len: u64) -> bool;
}

/// The monitor in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Userfaultfd,
    Memhooks,
    Imported,
    /// Nothing can watch memory: no caching.
    None,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Userfaultfd => "userfaultfd",
            Kind::Memhooks => "memhooks",
            Kind::Imported => "imported",
            Kind::None => "none",
        }
    }
}

/// Subscribe/unsubscribe calls of a monitor imported by the application.
pub trait Imported: Send + Sync {
    fn start(&self) -> Result<()>;
    fn stop(&self);
    fn subscribe(&self, start: u64, len: u64) -> Result<()>;
    fn unsubscribe(&self, start: u64, len: u64);
    /// Whether the monitor still vouches for the range (its `valid` op).
    fn valid(&self, start: u64, len: u64) -> bool;
    /// Which monitor this is (the address of its fid).
    fn id(&self) -> usize;
}

static CACHES: Mutex<Vec<Weak<dyn Invalidate>>> = Mutex::new(Vec::new());
static CHOSEN: OnceLock<Kind> = OnceLock::new();
static IMPORTED: Mutex<Option<Arc<dyn Imported>>> = Mutex::new(None);

/// Registers a cache for notifications.
pub fn add_cache(c: Weak<dyn Invalidate>) {
    let mut v = CACHES.lock().unwrap_or_else(|e| e.into_inner());
    v.retain(|w| w.strong_count() > 0);
    v.push(c);
}

/// Changes reported but not applied yet: by the userfaultfd reader, which
/// never waits for a cache, and by hooks that found a cache busy. The next
/// lookup (or domain close) applies them.
static PENDING: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
static HAS_PENDING: AtomicBool = AtomicBool::new(false);
/// Held while applying PENDING, so that a lookup that finds the queue
/// empty knows that everything queued before was applied.
static APPLY: Mutex<()> = Mutex::new(());
/// Past this many queued ranges, the queue collapses into the one range
/// that covers them all: invalidating more than changed costs misses only.
const PENDING_MAX: usize = 1024;

fn defer(start: u64, len: u64) {
    let mut q = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    if q.len() >= PENDING_MAX {
        let lo = q.iter().map(|r| r.0).min().unwrap_or(start).min(start);
        let hi = q
            .iter()
            .map(|r| r.0.saturating_add(r.1))
            .max()
            .unwrap_or(0)
            .max(start.saturating_add(len));
        q.clear();
        q.push((lo, hi - lo));
    } else {
        q.push((start, len));
    }
    HAS_PENDING.store(true, Ordering::SeqCst);
}

/// Applies the queued changes to every cache (waits for the caches).
pub fn apply_pending() {
    if !HAS_PENDING.load(Ordering::SeqCst) {
        return;
    }
    let _a = APPLY.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let ranges: Vec<(u64, u64)> = {
            let mut q = PENDING.lock().unwrap_or_else(|e| e.into_inner());
            if q.is_empty() {
                HAS_PENDING.store(false, Ordering::SeqCst);
                return;
            }
            q.drain(..).collect()
        };
        for (s, l) in ranges {
            notify(s, l);
        }
    }
}

/// Reports a change from a context that must not wait for a cache (a hook
/// may run while its own thread holds one): applied at once where every
/// cache is free, else queued for the next lookup.
pub fn report(start: u64, len: u64) {
    let applied = match CACHES.try_lock() {
        Ok(v) => {
            let live: Vec<Arc<dyn Invalidate>> = v.iter().filter_map(|w| w.upgrade()).collect();
            drop(v);
            // Every cache is tried: one invalidated now serves no stale hit
            // even before the queue is applied.
            let mut all = true;
            for c in &live {
                all &= c.try_invalidate(start, len);
            }
            all
        }
        Err(_) => false,
    };
    if !applied {
        defer(start, len);
    }
}

/// Reports that `[start, start + len)` changed: every cache invalidates its
/// pinnings over it (waiting for each).
pub fn notify(start: u64, len: u64) {
    let live: Vec<Arc<dyn Invalidate>> = CACHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(|w| w.upgrade())
        .collect();
    for c in live {
        c.invalidate(start, len);
    }
}

/// Installs an imported monitor; refused once the built-in one is chosen
/// (the import must precede the cache's first use).
pub fn import(m: Arc<dyn Imported>) -> Result<()> {
    if let Some(k) = CHOSEN.get() {
        if *k != Kind::Imported {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "a memory monitor can only be imported before the registration cache is first used (the {} monitor is running)",
                k.name()
            );
            return Err(Error::BUSY);
        }
    }
    let mut imp = IMPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if imp.is_some() {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "a memory monitor is imported already: close it (fi_close on its fid) before importing another"
        );
        return Err(Error::BUSY);
    }
    *imp = Some(m);
    let _ = CHOSEN.set(Kind::Imported);
    Ok(())
}

/// The application closes its imported monitor (fi_close on the monitor's
/// fid, which the import filled in). Refused while a pinned-mode domain is
/// open, since its cache relies on the monitor; once closed, nothing is
/// cached until another monitor is imported.
pub fn release_imported(id: usize) -> Result<()> {
    let u = USERS.lock().unwrap_or_else(|e| e.into_inner());
    let mut imp = IMPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if imp.as_ref().is_none_or(|m| m.id() != id) {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "fi_close: not the imported memory monitor (closed already?)"
        );
        return Err(Error::INVAL);
    }
    if u.0 > 0 {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "fi_close: the imported memory monitor serves {} open domain(s) with a registration cache; close them first",
            u.0
        );
        return Err(Error::BUSY);
    }
    *imp = None;
    crate::ox_log!(
        Info,
        Mr,
        super::NAME,
        "the imported memory monitor is closed: registrations are not cached until another is imported"
    );
    Ok(())
}

/// Pinned-mode domains open now, and whether an imported monitor runs.
static USERS: Mutex<(usize, bool)> = Mutex::new((0, false));

/// A pinned-mode domain with a cache opens: the first starts an imported
/// monitor. Returns false when that monitor refuses to start (no caching).
pub fn domain_opened() -> bool {
    let mut u = USERS.lock().unwrap_or_else(|e| e.into_inner());
    u.0 += 1;
    if kind() == Kind::Imported && !u.1 {
        match imported().map(|m| m.start()) {
            Some(Ok(())) => u.1 = true,
            Some(Err(e)) => {
                crate::ox_log!(
                    Warn,
                    Mr,
                    super::NAME,
                    "the imported memory monitor did not start ({e}): registrations are not cached"
                );
                u.0 -= 1;
                return false;
            }
            None => {
                crate::ox_log!(
                    Info,
                    Mr,
                    super::NAME,
                    "the imported memory monitor was closed and no other is imported: registrations are not cached"
                );
                u.0 -= 1;
                return false;
            }
        }
    }
    true
}

/// A domain counted by [`domain_opened`] closes: the last stops an
/// imported monitor.
pub fn domain_closed() {
    let mut u = USERS.lock().unwrap_or_else(|e| e.into_inner());
    u.0 = u.0.saturating_sub(1);
    if u.0 == 0 && u.1 {
        u.1 = false;
        if let Some(m) = imported() {
            m.stop();
        }
    }
}

fn imported() -> Option<Arc<dyn Imported>> {
    IMPORTED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The monitor in force, chosen (and started) on first call.
pub fn kind() -> Kind {
    *CHOSEN.get_or_init(choose)
}

fn choose() -> Kind {
    for dev in ["cuda", "rocr", "ze"] {
        let name = format!("mr_{dev}_cache_monitor_enabled");
        if let Ok((p, crate::param::Value::Bool(true))) = crate::param::get(None, &name) {
            crate::ox_log!(
                Info,
                Mr,
                super::NAME,
                "{}=1: the registration cache holds system memory only; {dev} memory is registered without pinning or caching",
                p.env_name()
            );
        }
    }
    let asked = match crate::param::get(None, "mr_cache_monitor") {
        Ok((_, crate::param::Value::String(s))) => Some(s.trim().to_ascii_lowercase()),
        _ => None,
    };
    let order: &[Kind] = match asked.as_deref() {
        None | Some("") | Some("userfaultfd") | Some("uffd") => {
            &[Kind::Userfaultfd, Kind::Memhooks]
        }
        Some("memhooks") => &[Kind::Memhooks, Kind::Userfaultfd],
        Some("disabled") => {
            crate::ox_log!(
                Info,
                Mr,
                super::NAME,
                "FI_MR_CACHE_MONITOR=disabled: the registration cache is off"
            );
            return Kind::None;
        }
        Some("kdreg2") => {
            let dev = std::path::Path::new(KDREG2_DEVICE);
            let line = kdreg2_fallback(dev, &probe_kdreg2(dev));
            crate::ox_log!(Warn, Mr, super::NAME, "{line}");
            &[Kind::Userfaultfd, Kind::Memhooks]
        }
        Some(other) => {
            crate::ox_log!(Warn, Mr, super::NAME, "FI_MR_CACHE_MONITOR=\"{other}\" is not a monitor (userfaultfd, memhooks, kdreg2, disabled); using userfaultfd, then memhooks");
            &[Kind::Userfaultfd, Kind::Memhooks]
        }
    };
    for &k in order {
        let started = match k {
            Kind::Userfaultfd => uffd::start(),
            Kind::Memhooks => super::memhooks::start(),
            _ => Err(Error::NOSYS),
        };
        match started {
            Ok(()) => {
                crate::ox_log!(
                    Info,
                    Mr,
                    super::NAME,
                    "registration cache monitor: {}",
                    k.name()
                );
                return k;
            }
            Err(e) => crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "the {} monitor cannot run: {e}",
                k.name()
            ),
        }
    }
    crate::ox_log!(
        Warn,
        Mr,
        super::NAME,
        "no memory monitor can run: registrations are not cached"
    );
    Kind::None
}

/// The device of the kdreg2 kernel module.
pub const KDREG2_DEVICE: &str = "/dev/kdreg2";

/// What `FI_MR_CACHE_MONITOR=kdreg2` finds at the device path.
#[derive(Debug, PartialEq, Eq)]
enum Kdreg2 {
    /// Nothing there: the module is not loaded.
    Missing,
    /// Something that is not a character device: not kdreg2's.
    NotDevice,
    /// A character device that cannot be opened (why).
    Unopenable(String),
    /// A character device that opens: the module's, as far as can be told
    /// without speaking its interface.
    Present,
}

fn probe_kdreg2(path: &std::path::Path) -> Kdreg2 {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Kdreg2::Missing;
    };
    if !meta.file_type().is_char_device() {
        return Kdreg2::NotDevice;
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(_) => Kdreg2::Present,
        Err(e) => Kdreg2::Unopenable(e.to_string()),
    }
}

/// The warning of a kdreg2 choice: the device path, what is there, and the
/// fallback taken (every case falls back: oxfabric does not implement the
/// kdreg2 interface).
fn kdreg2_fallback(path: &std::path::Path, found: &Kdreg2) -> String {
    let p = path.display();
    let what = match found {
        Kdreg2::Missing => format!("{p} does not exist (the kdreg2 kernel module is not loaded)"),
        Kdreg2::NotDevice => format!("{p} is not a character device, so not kdreg2's"),
        Kdreg2::Unopenable(e) => format!("{p} cannot be opened ({e})"),
        Kdreg2::Present => {
            format!("{p} is present, but oxfabric does not implement the kdreg2 interface")
        }
    };
    format!("FI_MR_CACHE_MONITOR=kdreg2: {what}; falling back to the userfaultfd monitor, then memhooks")
}

/// Watches `[start, start + len)` (page-aligned) for changes.
pub fn subscribe(start: u64, len: u64) -> Result<()> {
    match kind() {
        Kind::Userfaultfd => uffd::register(start, len),
        Kind::Memhooks => Ok(()),
        Kind::Imported => match imported() {
            Some(m) => m.subscribe(start, len),
            None => Err(Error::NOSYS),
        },
        Kind::None => Err(Error::NOSYS),
    }
}

/// Stops watching `[start, start + len)`.
pub fn unsubscribe(start: u64, len: u64) {
    match kind() {
        Kind::Userfaultfd => uffd::unregister(start, len),
        Kind::Imported => {
            if let Some(m) = imported() {
                m.unsubscribe(start, len)
            }
        }
        _ => {}
    }
}

/// Applies every change the monitor has been told of (before a lookup).
pub fn sync() {
    if let Some(Kind::Userfaultfd) = CHOSEN.get() {
        uffd::wait_read();
    }
    apply_pending();
}

/// Whether the monitor still vouches for a cached range (imported monitors
/// answer through their `valid` op; the built-in ones report changes).
pub fn valid(start: u64, len: u64) -> bool {
    match CHOSEN.get() {
        Some(Kind::Imported) => imported().is_some_and(|m| m.valid(start, len)),
        _ => true,
    }
}

mod uffd {
    use super::*;

    // linux/userfaultfd.h
    const UFFD_API: u64 = 0xAA;
    const UFFD_USER_MODE_ONLY: i32 = 1;
    const FEATURE_EVENT_REMAP: u64 = 1 << 2;
    const FEATURE_EVENT_REMOVE: u64 = 1 << 3;
    const FEATURE_EVENT_UNMAP: u64 = 1 << 6;
    const EVENT_REMAP: u8 = 0x14;
    const EVENT_REMOVE: u8 = 0x15;
    const EVENT_UNMAP: u8 = 0x16;
    const MODE_WP: u64 = 2;
    const fn iowr(nr: u64, size: u64) -> u64 {
        (3 << 30) | (size << 16) | (0xAA << 8) | nr
    }
    const fn ior(nr: u64, size: u64) -> u64 {
        (2 << 30) | (size << 16) | (0xAA << 8) | nr
    }
    const UFFDIO_API: u64 = iowr(0x3F, 24);
    const UFFDIO_REGISTER: u64 = iowr(0x00, 32);
    const UFFDIO_UNREGISTER: u64 = ior(0x01, 16);

    static FD: OnceLock<RawFd> = OnceLock::new();
    /// Wakes the thread to end it (at exit).
    static WAKE: OnceLock<RawFd> = OnceLock::new();
    static THREAD: Mutex<Option<libc::pthread_t>> = Mutex::new(None);
    static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    /// Held while reading events and queueing them, so that a lookup that
    /// takes it finds every event read so far in the queue.
    static EVENTS: Mutex<()> = Mutex::new(());
    /// 1 while the reader is between its first read and the queuing of
    /// what it read (set and cleared under EVENTS).
    static READING: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

    pub fn start() -> Result<()> {
        let flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: the syscall takes flags only. User-mode-only descriptors
        // are allowed without privilege on kernels that have them.
        let mut fd =
            unsafe { libc::syscall(libc::SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY) } as i32;
        if fd < 0 {
            // SAFETY: as above.
            fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) } as i32;
        }
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            crate::ox_log!(
                Warn,
                Mr,
                super::super::NAME,
                "userfaultfd: {e} (needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)"
            );
            return Err(Error::last_os());
        }
        let mut api = [
            UFFD_API,
            FEATURE_EVENT_UNMAP | FEATURE_EVENT_REMOVE | FEATURE_EVENT_REMAP,
            0,
        ];
        // SAFETY: UFFDIO_API reads and writes a struct uffdio_api (3 u64s).
        if unsafe { libc::ioctl(fd, UFFDIO_API as _, api.as_mut_ptr()) } != 0 {
            let e = std::io::Error::last_os_error();
            crate::ox_log!(
                Warn,
                Mr,
                super::super::NAME,
                "userfaultfd: the kernel refuses unmap/remove/remap events: {e}"
            );
            // SAFETY: our descriptor.
            unsafe { libc::close(fd) };
            return Err(Error::NOSYS);
        }
        // SAFETY: eventfd takes an initial value and flags.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if wake < 0 {
            // SAFETY: our descriptor.
            unsafe { libc::close(fd) };
            return Err(Error::last_os());
        }
        let _ = FD.set(fd);
        let _ = WAKE.set(wake);
        // A plain pthread, not a std thread: it keeps no Rust thread-local
        // state, which sanitizers' dynamic-TLS tracking trips over when such
        // a thread exits at process exit.
        // SAFETY: zeroed is a valid pthread_t placeholder, written by
        // pthread_create; the thread function takes no argument.
        let mut t: libc::pthread_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::pthread_create(&mut t, std::ptr::null(), reader, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(Error::AGAIN);
        }
        *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        // SAFETY: registering a function with no preconditions.
        unsafe { libc::atexit(stop) };
        Ok(())
    }

    extern "C" fn reader(_: *mut libc::c_void) -> *mut libc::c_void {
        let (Some(&fd), Some(&wake)) = (FD.get(), WAKE.get()) else {
            return std::ptr::null_mut();
        };
        loop {
            let mut p = [
                libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: wake,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two pollfds.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 2, -1) };
            if n > 0 {
                if p[1].revents != 0 {
                    return std::ptr::null_mut();
                }
                drain();
            }
        }
    }

    /// At exit: closes the descriptor, which drops every registration and
    /// releases every thread waiting for its event to be read, then ends
    /// the thread (tools that inspect the process at exit, such as
    /// LeakSanitizer, then find none). In this order because the thread's
    /// own exit may unmap a watched range (a sanitizer unmaps the thread's
    /// alternate signal stack), and only it would read that event.
    extern "C" fn stop() {
        let (Some(&fd), Some(&wake)) = (FD.get(), WAKE.get()) else {
            return;
        };
        let _g = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        STOPPED.store(true, std::sync::atomic::Ordering::SeqCst);
        let one = 1u64;
        // SAFETY: an 8-byte write to our eventfd.
        unsafe { libc::write(wake, &one as *const u64 as *const libc::c_void, 8) };
        drop(_g);
        // SAFETY: our descriptor; nothing reads or registers through it
        // once STOPPED is set, and the reader's poll sees the eventfd.
        unsafe { libc::close(fd) };
        if let Some(t) = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: our thread, joined once.
            unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
        }
        // SAFETY: our descriptor, no longer polled.
        unsafe { libc::close(wake) };
    }

    /// Waits until every event read so far is queued. The kernel lets an
    /// unmapping call return only once its event is read, and the reader
    /// holds EVENTS from before the read until the event is queued: so
    /// after this and [`apply_pending`], every change made by a call that
    /// has returned is in the caches (no system call needed).
    ///
    /// The reader says it is at work (READING) before its read: an
    /// unmapping call that returned had its event read after that store,
    /// so this thread, after the call, sees the flag unless the event is
    /// queued already. Only then does it wait on EVENTS: a lookup with no
    /// read in progress takes no lock here.
    pub fn wait_read() {
        if READING.load(std::sync::atomic::Ordering::SeqCst) != 0 {
            drop(EVENTS.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Reads every pending event and queues its range. Nothing here waits
    /// for a cache: a thread may hold a cache's lock while its unmap waits
    /// for this read.
    fn drain() {
        let Some(&fd) = FD.get() else { return };
        let _g = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        if STOPPED.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        READING.store(1, std::sync::atomic::Ordering::SeqCst);
        struct Done;
        impl Drop for Done {
            fn drop(&mut self) {
                READING.store(0, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let _done = Done;
        let mut buf = [0u64; 4 * 16];
        loop {
            // SAFETY: reading whole uffd_msg records (32 bytes) into buf.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, 512) };
            if n <= 0 {
                return;
            }
            for m in buf[..(n as usize / 8)].chunks_exact(4) {
                let event = (m[0] & 0xff) as u8;
                match event {
                    EVENT_UNMAP | EVENT_REMOVE => defer(m[1], m[2].saturating_sub(m[1])),
                    EVENT_REMAP => defer(m[1], m[3]),
                    _ => {}
                }
            }
        }
    }

    pub fn register(start: u64, len: u64) -> Result<()> {
        let Some(&fd) = FD.get() else {
            return Err(Error::NOSYS);
        };
        // No EVENTS lock here: this runs under a cache's lock, and the
        // reader must never wait for a thread that holds one.
        if STOPPED.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::NOSYS);
        }
        let mut reg = [start, len, MODE_WP, 0];
        // SAFETY: UFFDIO_REGISTER reads and writes a struct uffdio_register.
        if unsafe { libc::ioctl(fd, UFFDIO_REGISTER as _, reg.as_mut_ptr()) } != 0 {
            let e = std::io::Error::last_os_error();
            crate::ox_log!(
                Info,
                Mr,
                super::super::NAME,
                "userfaultfd cannot watch 0x{start:x}+{len} ({e}): this pinning is not cached"
            );
            return Err(Error::last_os());
        }
        Ok(())
    }

    pub fn unregister(start: u64, len: u64) {
        let Some(&fd) = FD.get() else { return };
        if STOPPED.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let mut r = [start, len];
        // SAFETY: UFFDIO_UNREGISTER reads a struct uffdio_range. A range
        // already unmapped fails harmlessly.
        unsafe { libc::ioctl(fd, UFFDIO_UNREGISTER as _, r.as_mut_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn kdreg2_missing_device_falls_back() {
        let p = Path::new("/nonexistent/oxfabric-test/kdreg2");
        assert_eq!(probe_kdreg2(p), Kdreg2::Missing);
        let line = kdreg2_fallback(p, &probe_kdreg2(p));
        assert!(line.contains("/nonexistent/oxfabric-test/kdreg2 does not exist"));
        assert!(line.contains("falling back to the userfaultfd monitor, then memhooks"));
    }

    #[test]
    fn kdreg2_path_that_is_not_a_device_falls_back() {
        let dir = std::env::temp_dir().join(format!("oxf-kdreg2-{}", std::process::id()));
        std::fs::write(&dir, b"not a device").unwrap();
        let found = probe_kdreg2(&dir);
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(found, Kdreg2::NotDevice);
        let line = kdreg2_fallback(&dir, &found);
        assert!(line.contains("is not a character device"), "{line}");
        assert!(line.contains("falling back to the userfaultfd monitor"));
    }

    #[test]
    fn kdreg2_device_that_opens_is_still_not_spoken() {
        // A character device that opens (not kdreg2's): oxfabric cannot
        // tell it from the module's without its interface, and falls back.
        let p = Path::new("/dev/null");
        assert_eq!(probe_kdreg2(p), Kdreg2::Present);
        let line = kdreg2_fallback(p, &Kdreg2::Present);
        assert!(line.contains("/dev/null is present, but oxfabric does not implement"));
        assert!(line.contains("falling back"));
    }

    #[test]
    fn kdreg2_device_that_cannot_be_opened_falls_back() {
        let line = kdreg2_fallback(
            Path::new(KDREG2_DEVICE),
            &Kdreg2::Unopenable("Permission denied (os error 13)".into()),
        );
        assert!(line.contains("/dev/kdreg2 cannot be opened (Permission denied"));
        assert!(line.contains("falling back to the userfaultfd monitor, then memhooks"));
    }
}
