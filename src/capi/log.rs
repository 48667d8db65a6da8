//! fi_log_enabled, fi_log_ready and the Rust half of fi_log (its variadic
//! front is in variadic.c).

use crate::abi::prov::fi_provider_head;
use crate::log::{self, Level, Subsys};
use libc::{c_char, c_int, c_uint};
use std::ffi::CStr;

/// The name of a `struct fi_provider`, "core" for NULL.
///
/// # Safety
/// `prov` is NULL or points to a `struct fi_provider`.
pub(crate) unsafe fn prov_name(prov: *const fi_provider_head) -> String {
    if prov.is_null() {
        return "core".into();
    }
    // SAFETY: per the function contract.
    let name = unsafe { (*prov).name };
    if name.is_null() {
        return "core".into();
    }
    // SAFETY: a provider's name is a NUL-terminated string.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// Whether a message at `level` for `subsys` from `prov` would be logged.
///
/// # Safety
/// `prov` is NULL or points to a `struct fi_provider`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_log_enabled(
    prov: *const fi_provider_head,
    level: c_uint,
    subsys: c_uint,
) -> c_int {
    crate::capi::guard("fi_log_enabled", || {
        let (Some(l), Some(s)) = (Level::from_raw(level), Subsys::from_raw(subsys)) else {
            return Ok(0);
        };
        // SAFETY: per the function contract.
        let name = unsafe { prov_name(prov) };
        Ok(log::enabled(&name, l, s) as c_int)
    })
}

/// Rate-limited form of fi_log_enabled: also requires that the time in
/// `*showtime` (milliseconds since the epoch) has passed, and then moves it
/// forward by the sparse-logging interval.
///
/// # Safety
/// `prov` as fi_log_enabled; `showtime` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_log_ready(
    prov: *const fi_provider_head,
    level: c_uint,
    subsys: c_uint,
    showtime: *mut u64,
) -> c_int {
    crate::capi::guard("fi_log_ready", || {
        // SAFETY: per the function contract.
        if unsafe { fi_log_enabled(prov, level, subsys) } == 0 {
            return Ok(0);
        }
        if showtime.is_null() {
            return Ok(1);
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        // SAFETY: showtime is non-NULL and writable per the contract.
        unsafe {
            if now < *showtime {
                return Ok(0);
            }
            *showtime = now + SPARSE_INTERVAL_MS;
        }
        Ok(1)
    })
}

/// How long fi_log_ready stays quiet after it lets a message through.
const SPARSE_INTERVAL_MS: u64 = 5000;

/// Writes one formatted message for fi_log (variadic.c formats it).
///
/// # Safety
/// `prov` as fi_log_enabled; `func` and `msg` are NULL or strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxfabric_log_emit(
    prov: *const fi_provider_head,
    level: c_uint,
    subsys: c_uint,
    func: *const c_char,
    line: c_int,
    msg: *const c_char,
) {
    crate::capi::guard("fi_log", || {
        let (Some(l), Some(s)) = (Level::from_raw(level), Subsys::from_raw(subsys)) else {
            return Ok(0);
        };
        // SAFETY: per the function contract.
        let name = unsafe { prov_name(prov) };
        if !log::enabled(&name, l, s) {
            return Ok(0);
        }
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: p is a NUL-terminated string per the contract.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        log::write_line(
            &name,
            l,
            s.name(),
            &text(func),
            line.max(0) as u32,
            &text(msg),
        );
        Ok(0)
    });
}
