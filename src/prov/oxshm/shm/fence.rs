//! Fences and futexes between the processes of a segment: the asymmetric
//! fence (membarrier(2)) that spares senders a fence per message, and the
//! futex a progress thread sleeps on.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::time::Duration;

/// Whether this process is registered for asymmetric fences
/// (membarrier(2) `MEMBARRIER_CMD_GLOBAL_EXPEDITED`, Linux 4.16) and may
/// issue them: a sleeping owner's fence then also orders the accesses of
/// every running thread of every registered process, so that senders need
/// no fence per message (see [`super::Segment::send`]). Registration belongs to
/// the process, not its memory image: a child after fork(2) registers
/// anew (or publishes with fences if it cannot).
///
/// Every lock release and every send asks, so the answer is one load of a
/// static: 0 until this process has looked, then 1 (no) or 2 (yes). A
/// fork(2) child handler puts it back to 0, so that the child looks (and
/// registers) for itself.
#[inline]
pub(in crate::prov::oxshm) fn asym() -> bool {
    match ASYM.load(Ordering::Relaxed) {
        0 => asym_first(),
        s => s == 2,
    }
}

pub(super) static ASYM: AtomicU8 = AtomicU8::new(0);

/// Whether this process is registered for membarrier(2)
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` ([`process_fence`]); meaningful once
/// [`asym`] answered.
static PRIVATE: AtomicBool = AtomicBool::new(false);

#[cold]
#[inline(never)]
fn asym_first() -> bool {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn forget() {
        ASYM.store(0, Ordering::Relaxed);
    }
    ONCE.call_once(|| {
        // SAFETY: registers a handler that only stores an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(forget)) };
    });
    let ok = register_asym();
    ASYM.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
    ok
}

const MEMBARRIER_QUERY: libc::c_long = 0;
const MEMBARRIER_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
const MEMBARRIER_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;
const MEMBARRIER_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

fn register_asym() -> bool {
    if std::env::var("FI_OXSHM_MEMBARRIER").as_deref() == Ok("0") {
        return false;
    }
    // SAFETY: membarrier(2) with plain integer arguments.
    let cmds = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_QUERY, 0, 0) };
    let want = MEMBARRIER_GLOBAL_EXPEDITED | MEMBARRIER_REGISTER_GLOBAL_EXPEDITED;
    // SAFETY: as above.
    let ok = cmds >= 0
        && cmds & want == want
        && unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_REGISTER_GLOBAL_EXPEDITED,
                0,
                0,
            ) == 0
                && libc::syscall(libc::SYS_membarrier, MEMBARRIER_GLOBAL_EXPEDITED, 0, 0) == 0
        };
    if !ok {
        crate::ox_log!(
            Info,
            EpData,
            crate::prov::oxshm::NAME,
            "membarrier(2) global expedited is not available: every message is published with a full fence"
        );
        return false;
    }
    let private = MEMBARRIER_PRIVATE_EXPEDITED | MEMBARRIER_REGISTER_PRIVATE_EXPEDITED;
    // SAFETY: as above.
    let private = cmds & private == private
        && unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_REGISTER_PRIVATE_EXPEDITED,
                0,
                0,
            ) == 0
        };
    PRIVATE.store(private, Ordering::Relaxed);
    ok
}

/// An asymmetric fence among this process's threads only (a domain's
/// serialization, [`crate::prov::oxshm::lock::Serial`], and a lock's
/// sleepers): membarrier(2) private expedited, which interrupts only the
/// CPUs running this process (about 0.1-0.7 us here, against 20-30 us for
/// the global command, which interrupts every registered process's CPUs).
/// Falls back to the global command. False when neither was issued (a
/// plain fence only).
pub(in crate::prov::oxshm) fn process_fence() -> bool {
    fence(Ordering::SeqCst);
    if !asym() {
        return false;
    }
    if PRIVATE.load(Ordering::Relaxed) {
        // SAFETY: membarrier(2) with plain integer arguments.
        let r = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_PRIVATE_EXPEDITED, 0, 0) };
        if r == 0 {
            return true;
        }
    }
    global_barrier()
}

/// The fence of an owner about to sleep: between its store of `sleeping`
/// (or `fd_armed`) and its look at the ring. With [`asym`] it is a
/// membarrier(2) that orders every registered sender's publication too.
pub(in crate::prov::oxshm) fn heavy_fence() {
    fence(Ordering::SeqCst);
    if asym() {
        global_barrier();
    }
}

/// membarrier(2) global expedited; false (and a log line) if it failed.
fn global_barrier() -> bool {
    // SAFETY: membarrier(2) with plain integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_GLOBAL_EXPEDITED, 0, 0) };
    if r != 0 {
        // Not expected once it worked: senders that skip their fence may
        // then go unnoticed until the sleeper's timeout.
        crate::ox_log!(
            Warn,
            EpData,
            crate::prov::oxshm::NAME,
            "membarrier(2) failed: {}",
            std::io::Error::last_os_error()
        );
    }
    r == 0
}

pub(super) fn futex_wait(word: &AtomicU32, val: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a valid u32 in shared memory; ts is a valid timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            &ts as *const libc::timespec,
        )
    };
}

pub(super) fn futex_wake(word: &AtomicU32) {
    // SAFETY: word is a valid u32 in shared memory.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}
