//! liboxfabric-shim.so: an LD_PRELOAD checker and profiler of memory
//! registrations over any installed libfabric.
//!
//! The shim exports the global API at libfabric's symbol versions
//! (`entry.c`, `shim.map`) and reaches the next libfabric with
//! `dlvsym(RTLD_NEXT, name, version)`. The application keeps the provider's
//! fabric, domain and endpoint objects, whose ops pointers are pointed at
//! per-object copies with a few slots replaced ([`objects`], [`ep`]); its
//! memory regions are shim-owned wrappers ([`mr`]) that outlive the
//! provider's close, so a second close or a use after close is caught, and
//! the descs of data-transfer calls are checked against them ([`desc`]). Calls that libfabric makes
//! to its own API (rxm opening tcp) are told apart by the object their
//! return address lies in and passed through, counted apart.
//!
//! `OXSHIM_MODE`: `report` (default: log each finding once per call site
//! and go on), `strict` (also refuse the offending call with -FI_EINVAL
//! where the call can be refused), `off` (patch nothing). `OXSHIM_REPORT`:
//! a path where a JSON report is written at exit ([`report`]).

pub mod desc;
pub mod ep;
pub mod eq;
pub mod lock;
pub mod mr;
pub mod objects;
pub mod report;
pub mod unmap;

use crate::abi::errno::FI_EOTHER;
use libc::{c_int, c_void};
use lock::{SpinGuard, SpinLock};
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Instant;

/// What the shim does with a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Patch nothing; every call goes straight to the provider.
    Off,
    /// Log and record findings; calls proceed as the provider answers.
    Report,
    /// As `Report`, and the offending call fails with -FI_EINVAL before
    /// the provider sees it (domain close and exit excepted).
    Strict,
}

impl Mode {
    /// Parses `OXSHIM_MODE`; anything unrecognised is `Report`.
    pub fn parse(v: Option<&str>) -> Mode {
        match v {
            Some("off") => Mode::Off,
            Some("strict") => Mode::Strict,
            _ => Mode::Report,
        }
    }
}

pub(crate) static MODE: Lazy<Mode> =
    Lazy::new(|| Mode::parse(std::env::var("OXSHIM_MODE").ok().as_deref()));

/// Everything the shim knows, behind one lock. The lock is never held
/// across a call into the provider: providers call back into the shim.
pub(crate) struct State {
    /// Every fabric hooked; never freed, like the domains' hooks.
    #[allow(clippy::vec_box)]
    pub fabrics: Vec<Box<objects::FabricHook>>,
    /// Every domain hooked, in order; never freed (see [`objects`]). Boxed:
    /// the tables hold each hook's address, which must not move.
    #[allow(clippy::vec_box)]
    pub domains: Vec<Box<objects::DomainHook>>,
    pub report: report::Report,
    /// Closed wrappers, oldest first, at most [`mr::QUARANTINE`].
    pub quarantine: std::collections::VecDeque<usize>,
    /// Wrappers evicted from quarantine, reused by the next registrations
    /// (no allocation on the registration path once warm).
    pub spare: Vec<usize>,
    /// Provider MR -> wrapper, for domains whose registrations complete by
    /// event ([`eq`]).
    pub async_mrs: HashMap<usize, usize>,
    /// Hooks of closed endpoints, oldest first ([`ep`]).
    pub ep_quarantine: std::collections::VecDeque<usize>,
    /// Endpoint hooks past quarantine, reused by the next endpoints.
    pub ep_spare: Vec<usize>,
}

// SAFETY: the raw pointers in State name objects that the shim owns or that
// the provider keeps alive until their close, which the shim intercepts; all
// access goes through the STATE lock.
unsafe impl Send for State {}

static STATE: Lazy<SpinLock<State>> = Lazy::new(|| {
    SpinLock::new(State {
        fabrics: Vec::new(),
        domains: Vec::new(),
        report: report::Report::default(),
        quarantine: Default::default(),
        spare: Vec::new(),
        async_mrs: HashMap::new(),
        ep_quarantine: Default::default(),
        ep_spare: Vec::new(),
    })
});

pub(crate) fn state() -> SpinGuard<'static, State> {
    STATE.lock()
}

static AT_EXIT: Once = Once::new();

/// Instant and tick count when the shim armed its report: with the same
/// pair at exit they give the tick rate, so the hot path reads only the
/// time-stamp counter.
static CLOCK0: Lazy<(Instant, u64)> = Lazy::new(|| (Instant::now(), ticks()));

/// A cheap monotonic clock: the time-stamp counter on x86-64 (invariant on
/// every CPU this runs on), nanoseconds since CLOCK0 elsewhere.
#[inline]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86-64.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    return CLOCK0.0.elapsed().as_nanos() as u64;
}

/// Whether this registration or close is timed: each domain's first 1024
/// calls of the kind, then one in 16 (reading the clock twice is a third
/// of the shim's cost per call; the report's median and p99 come from
/// samples). `calls` is the domain's counter, bumped with a plain load and
/// store: two threads racing may both take or skip a sample, which moves
/// no count the report shows.
#[inline]
pub(crate) fn sampled(calls: &AtomicUsize) -> bool {
    let n = calls.load(Ordering::Relaxed);
    calls.store(n.wrapping_add(1), Ordering::Relaxed);
    n < 1024 || n % 16 == 0
}

/// Nanoseconds per tick of [`ticks`], measured since CLOCK0.
pub(crate) fn ns_per_tick() -> f64 {
    let (t0, k0) = *CLOCK0;
    let (ns, k) = (
        t0.elapsed().as_nanos() as f64,
        ticks().wrapping_sub(k0) as f64,
    );
    if cfg!(target_arch = "x86_64") && k > 0.0 {
        ns / k
    } else {
        1.0
    }
}

/// Registers the exit report once, at the first object the shim wraps,
/// and the fork handlers.
pub(crate) fn arm_exit_report() {
    AT_EXIT.call_once(|| {
        Lazy::force(&CLOCK0);
        // SAFETY: report::at_exit is an extern "C" fn() that lives as long
        // as the process (the shim is never unloaded while preloaded).
        unsafe { libc::atexit(report::at_exit) };
        // SAFETY: the handlers are extern "C" fns that live as long as the
        // process.
        unsafe { libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
    });
}

thread_local! {
    /// The state lock, held by the thread that forks from just before the
    /// fork until just after it, so that the child never inherits it held
    /// by a thread that does not exist there.
    static FORK_GUARD: std::cell::RefCell<Option<SpinGuard<'static, State>>> =
        const { std::cell::RefCell::new(None) };
}

extern "C" fn fork_prepare() {
    let g = state();
    FORK_GUARD.with(|c| *c.borrow_mut() = Some(g));
}

extern "C" fn fork_parent() {
    FORK_GUARD.with(|c| drop(c.borrow_mut().take()));
}

extern "C" fn fork_child() {
    FORK_GUARD.with(|c| {
        if let Some(mut g) = c.borrow_mut().take() {
            // SAFETY: getppid(2) has no preconditions.
            let parent = unsafe { libc::getppid() } as u32;
            g.report.forked(parent);
        }
    });
}

/// Runs a Rust entry for C: a panic becomes -FI_EOTHER.
pub(crate) fn guard(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(-FI_EOTHER)
}

/// The next libfabric's `name` at symbol version `version`.
pub(crate) fn next_symbol(name: &CStr, version: &CStr) -> Option<*mut c_void> {
    // SAFETY: both strings are NUL-terminated; RTLD_NEXT searches the
    // objects loaded after this one.
    let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), version.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Base address of the libfabric the shim wraps (0 if none is found).
static FABRIC_BASE: Lazy<usize> = Lazy::new(|| {
    next_symbol(c"fi_fabric", c"FABRIC_1.1")
        .or_else(|| next_symbol(c"fi_fabric", c"FABRIC_1.0"))
        .and_then(|p| dl_info(p as usize))
        .map_or(0, |i| i.base)
});

/// What dladdr says of an address.
pub(crate) struct DlInfo {
    pub base: usize,
    pub file: String,
    pub symbol: Option<(String, usize)>,
}

pub(crate) fn dl_info(addr: usize) -> Option<DlInfo> {
    // SAFETY: Dl_info is plain data; dladdr only reads the link maps.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return None;
    }
    // SAFETY: dladdr's strings are NUL-terminated and live as long as the
    // object they name.
    let text = |p: *const libc::c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    let file = if info.dli_fname.is_null() {
        String::new()
    } else {
        text(info.dli_fname)
    };
    let symbol = (!info.dli_sname.is_null()).then(|| {
        (
            text(info.dli_sname),
            addr.wrapping_sub(info.dli_saddr as usize),
        )
    });
    Some(DlInfo {
        base: info.dli_fbase as usize,
        file,
        symbol,
    })
}

/// Whether a return address lies in libfabric itself or one of its
/// provider plugins (`.../libfabric/lib<prov>-fi.so`).
pub(crate) fn classify(ra: usize) -> bool {
    let Some(info) = dl_info(ra) else {
        return false;
    };
    // An exported fi_* function of libfabric that calls through an ops
    // table is the exported form of a header inline (oxfabric's
    // fi_mr_reg, fi_close, ...): its caller is the application.
    // libfabric's own internal calls come from provider code.
    if info
        .symbol
        .as_ref()
        .is_some_and(|(s, _)| s.starts_with("fi_"))
    {
        return false;
    }
    if info.base != 0 && info.base == *FABRIC_BASE {
        return true;
    }
    info.file.contains("/libfabric/") || info.file.ends_with("-fi.so")
}

/// Direct-mapped cache of [`classify`]: `ra << 1 | internal` per slot.
static CALLERS: [AtomicUsize; 1024] = [const { AtomicUsize::new(0) }; 1024];

/// Whether the call that returns to `ra` comes from libfabric. Lock-free:
/// a registration asks it before anything else.
#[inline(always)]
pub(crate) fn is_internal(ra: usize) -> bool {
    let slot = &CALLERS[(ra ^ (ra >> 10)) & (CALLERS.len() - 1)];
    let v = slot.load(Ordering::Relaxed);
    if v != 0 && v >> 1 == ra {
        return v & 1 == 1;
    }
    classify_into(slot, ra)
}

/// A call site not yet (or no longer) in [`CALLERS`]: classified once and
/// remembered.
#[cold]
#[inline(never)]
fn classify_into(slot: &AtomicUsize, ra: usize) -> bool {
    let internal = classify(ra);
    slot.store(ra << 1 | internal as usize, Ordering::Relaxed);
    internal
}

/// A call site as `object(symbol+0xoff)`, for logs and the report.
pub fn site(addr: usize) -> String {
    if addr == 0 {
        return "?".into();
    }
    match dl_info(addr) {
        None => format!("{addr:#x}"),
        Some(i) => {
            let file = i.file.rsplit('/').next().unwrap_or("").to_string();
            match i.symbol {
                Some((s, off)) => format!("{file}({s}+{off:#x})"),
                None => format!("{file}+{:#x}", addr.wrapping_sub(i.base)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_parses() {
        assert_eq!(Mode::parse(None), Mode::Report);
        assert_eq!(Mode::parse(Some("off")), Mode::Off);
        assert_eq!(Mode::parse(Some("strict")), Mode::Strict);
        assert_eq!(Mode::parse(Some("bogus")), Mode::Report);
    }
}
