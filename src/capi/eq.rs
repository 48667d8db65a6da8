//! Exported forms of `rdma/fi_eq.h`'s inline API: wait and poll sets, event
//! queues, completion queues and counters.
//!
//! Each function dispatches through the object's ops table exactly as
//! upstream's `static inline` does. Beyond upstream, a NULL object returns
//! -FI_EINVAL and a missing (NULL, too short, or empty) ops slot returns
//! -FI_ENOSYS instead of crashing.

use crate::abi::eq::{
    fi_cq_err_entry, fi_eq_attr, fi_eq_err_entry, fi_ops_cntr, fi_ops_cq, fi_ops_eq, fi_ops_poll,
    fi_ops_wait, fid_cntr, fid_cq, fid_eq, fid_poll, fid_wait,
};
use crate::abi::fabric::{fi_addr_t, fi_ops_fabric, fid, fid_fabric, FI_ADDR_NOTAVAIL};
use crate::abi::xpu::{fid_xpu_cntr, fid_xpu_cq};
use crate::capi::{guard, guard_or, guard_ssize, nonnull};
use libc::{c_char, c_int, c_void, size_t, ssize_t};
use std::ptr;

/// Asks whether the caller may block on the wait objects of the `count`
/// objects in `fids` (`fabric->ops->trywait`): 0 if so, -FI_EAGAIN if
/// events are already pending.
///
/// # Safety
/// `fabric` must be NULL or point to a live fabric; `fids` must hold
/// `count` live objects.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_trywait(
    fabric: *mut fid_fabric,
    fids: *mut *mut fid,
    count: c_int,
) -> c_int {
    guard("fi_trywait", || {
        dispatch!(
            "fi_trywait",
            fabric,
            (*fabric).ops,
            fi_ops_fabric,
            trywait(fabric, fids, count)
        )
    })
}

/// Waits up to `timeout` ms (-1: forever) on a wait set
/// (`waitset->ops->wait`). Deprecated.
///
/// # Safety
/// `waitset` must be NULL or point to a live wait set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_wait(waitset: *mut fid_wait, timeout: c_int) -> c_int {
    guard("fi_wait", || {
        dispatch!(
            "fi_wait",
            waitset,
            (*waitset).ops,
            fi_ops_wait,
            wait(waitset, timeout)
        )
    })
}

/// Stores up to `count` contexts of objects with pending events in
/// `context` and returns how many (`pollset->ops->poll`). Deprecated.
///
/// # Safety
/// `pollset` must be NULL or point to a live poll set; `context` must hold
/// `count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_poll(
    pollset: *mut fid_poll,
    context: *mut *mut c_void,
    count: c_int,
) -> c_int {
    guard("fi_poll", || {
        dispatch!(
            "fi_poll",
            pollset,
            (*pollset).ops,
            fi_ops_poll,
            poll(pollset, context, count)
        )
    })
}

/// Adds `event_fid` (a CQ or counter) to a poll set
/// (`pollset->ops->poll_add`). Deprecated.
///
/// # Safety
/// `pollset` must be NULL or point to a live poll set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_poll_add(
    pollset: *mut fid_poll,
    event_fid: *mut fid,
    flags: u64,
) -> c_int {
    guard("fi_poll_add", || {
        dispatch!(
            "fi_poll_add",
            pollset,
            (*pollset).ops,
            fi_ops_poll,
            poll_add(pollset, event_fid, flags)
        )
    })
}

/// Removes `event_fid` from a poll set (`pollset->ops->poll_del`).
/// Deprecated.
///
/// # Safety
/// `pollset` must be NULL or point to a live poll set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_poll_del(
    pollset: *mut fid_poll,
    event_fid: *mut fid,
    flags: u64,
) -> c_int {
    guard("fi_poll_del", || {
        dispatch!(
            "fi_poll_del",
            pollset,
            (*pollset).ops,
            fi_ops_poll,
            poll_del(pollset, event_fid, flags)
        )
    })
}

/// Opens an event queue on `fabric` (`fabric->ops->eq_open`). On success
/// `*eq` holds it, closed with `fi_close()`.
///
/// # Safety
/// `fabric` must be NULL or point to a live fabric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_eq_open(
    fabric: *mut fid_fabric,
    attr: *mut fi_eq_attr,
    eq: *mut *mut fid_eq,
    context: *mut c_void,
) -> c_int {
    guard("fi_eq_open", || {
        dispatch!(
            "fi_eq_open",
            fabric,
            (*fabric).ops,
            fi_ops_fabric,
            eq_open(fabric, attr, eq, context)
        )
    })
}

/// Reads one event into `buf` (room for `len` bytes), its type into
/// `*event` (`eq->ops->read`). Returns the bytes read, -FI_EAGAIN when
/// empty, -FI_EAVAIL when an error entry is pending.
///
/// # Safety
/// `eq` must be NULL or point to a live EQ; `buf` must hold `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_eq_read(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: size_t,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_eq_read", || {
        dispatch!(
            "fi_eq_read",
            eq,
            (*eq).ops,
            fi_ops_eq,
            read(eq, event, buf, len, flags)
        )
    })
}

/// Reads the pending error entry into `buf` (`eq->ops->readerr`).
///
/// # Safety
/// `eq` must be NULL or point to a live EQ.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_eq_readerr(
    eq: *mut fid_eq,
    buf: *mut fi_eq_err_entry,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_eq_readerr", || {
        dispatch!(
            "fi_eq_readerr",
            eq,
            (*eq).ops,
            fi_ops_eq,
            readerr(eq, buf, flags)
        )
    })
}

/// Queues an application event of type `event` with `len` bytes from `buf`
/// (`eq->ops->write`). Returns the bytes written or a negative FI_E* code.
///
/// # Safety
/// `eq` must be NULL or point to a live EQ; `buf` must hold `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_eq_write(
    eq: *mut fid_eq,
    event: u32,
    buf: *const c_void,
    len: size_t,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_eq_write", || {
        dispatch!(
            "fi_eq_write",
            eq,
            (*eq).ops,
            fi_ops_eq,
            write(eq, event, buf, len, flags)
        )
    })
}

/// As `fi_eq_read()`, waiting up to `timeout` ms (-1: forever) for an event
/// (`eq->ops->sread`).
///
/// # Safety
/// As `fi_eq_read()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_eq_sread(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: size_t,
    timeout: c_int,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_eq_sread", || {
        dispatch!(
            "fi_eq_sread",
            eq,
            (*eq).ops,
            fi_ops_eq,
            sread(eq, event, buf, len, timeout, flags)
        )
    })
}

/// Describes a provider error of this EQ (`eq->ops->strerror`); with `buf`
/// non-NULL the text is also copied there. NULL when `eq` is NULL or has no
/// such op.
///
/// # Safety
/// `eq` must be NULL or point to a live EQ; `buf` must hold `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_eq_strerror(
    eq: *mut fid_eq,
    prov_errno: c_int,
    err_data: *const c_void,
    buf: *mut c_char,
    len: size_t,
) -> *const c_char {
    guard_or("fi_eq_strerror", ptr::null(), || {
        dispatch!(
            "fi_eq_strerror",
            eq,
            (*eq).ops,
            fi_ops_eq,
            strerror(eq, prov_errno, err_data, buf, len)
        )
    })
}

/// Reads up to `count` completions, in the CQ's format, into `buf`
/// (`cq->ops->read`). Returns how many, -FI_EAGAIN when empty, -FI_EAVAIL
/// when an error completion is pending.
///
/// # Safety
/// `cq` must be NULL or point to a live CQ; `buf` must hold `count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_read(cq: *mut fid_cq, buf: *mut c_void, count: size_t) -> ssize_t {
    guard_ssize("fi_cq_read", || {
        dispatch!("fi_cq_read", cq, (*cq).ops, fi_ops_cq, read(cq, buf, count))
    })
}

/// As `fi_cq_read()`, also storing each completion's source address in
/// `src_addr` (`cq->ops->readfrom`).
///
/// # Safety
/// As `fi_cq_read()`; `src_addr` must hold `count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_readfrom(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: size_t,
    src_addr: *mut fi_addr_t,
) -> ssize_t {
    guard_ssize("fi_cq_readfrom", || {
        dispatch!(
            "fi_cq_readfrom",
            cq,
            (*cq).ops,
            fi_ops_cq,
            readfrom(cq, buf, count, src_addr)
        )
    })
}

/// Reads the pending error completion into `buf` (`cq->ops->readerr`).
/// As upstream does for older providers, `buf->src_addr` is preset to
/// FI_ADDR_NOTAVAIL before the call.
///
/// # Safety
/// `cq` must be NULL or point to a live CQ; `buf` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_readerr(
    cq: *mut fid_cq,
    buf: *mut fi_cq_err_entry,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_cq_readerr", || {
        nonnull(cq, "fi_cq_readerr", "cq")?;
        // SAFETY: cq is non-NULL and, by contract, live.
        let f = unsafe { crate::op!((*cq).ops, fi_ops_cq, readerr) }?;
        if !buf.is_null() {
            // SAFETY: buf is non-NULL and, by contract, writable.
            unsafe { (*buf).src_addr = FI_ADDR_NOTAVAIL };
        }
        // SAFETY: dispatch to the CQ's own provider.
        Ok(unsafe { f(cq, buf, flags) })
    })
}

/// As `fi_cq_read()`, waiting up to `timeout` ms (-1: forever) until `cond`
/// (see `fi_cq_attr.wait_cond`) holds (`cq->ops->sread`).
///
/// # Safety
/// As `fi_cq_read()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_sread(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: size_t,
    cond: *const c_void,
    timeout: c_int,
) -> ssize_t {
    guard_ssize("fi_cq_sread", || {
        dispatch!(
            "fi_cq_sread",
            cq,
            (*cq).ops,
            fi_ops_cq,
            sread(cq, buf, count, cond, timeout)
        )
    })
}

/// `fi_cq_sread()` with source addresses (`cq->ops->sreadfrom`).
///
/// # Safety
/// As `fi_cq_readfrom()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_sreadfrom(
    cq: *mut fid_cq,
    buf: *mut c_void,
    count: size_t,
    src_addr: *mut fi_addr_t,
    cond: *const c_void,
    timeout: c_int,
) -> ssize_t {
    guard_ssize("fi_cq_sreadfrom", || {
        dispatch!(
            "fi_cq_sreadfrom",
            cq,
            (*cq).ops,
            fi_ops_cq,
            sreadfrom(cq, buf, count, src_addr, cond, timeout)
        )
    })
}

/// Wakes a thread blocked in `fi_cq_sread()` on `cq` (`cq->ops->signal`).
///
/// # Safety
/// `cq` must be NULL or point to a live CQ.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_signal(cq: *mut fid_cq) -> c_int {
    guard("fi_cq_signal", || {
        dispatch!("fi_cq_signal", cq, (*cq).ops, fi_ops_cq, signal(cq))
    })
}

/// Describes a provider error of this CQ (`cq->ops->strerror`); NULL when
/// `cq` is NULL or has no such op.
///
/// # Safety
/// `cq` must be NULL or point to a live CQ; `buf` must hold `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_strerror(
    cq: *mut fid_cq,
    prov_errno: c_int,
    err_data: *const c_void,
    buf: *mut c_char,
    len: size_t,
) -> *const c_char {
    guard_or("fi_cq_strerror", ptr::null(), || {
        dispatch!(
            "fi_cq_strerror",
            cq,
            (*cq).ops,
            fi_ops_cq,
            strerror(cq, prov_errno, err_data, buf, len)
        )
    })
}

/// Returns the counter's value (`cntr->ops->read`); 0 when `cntr` is NULL
/// or has no such op.
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_read(cntr: *mut fid_cntr) -> u64 {
    guard_or("fi_cntr_read", 0, || {
        dispatch!("fi_cntr_read", cntr, (*cntr).ops, fi_ops_cntr, read(cntr))
    })
}

/// Returns the counter's error count (`cntr->ops->readerr`); 0 when `cntr`
/// is NULL or has no such op.
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_readerr(cntr: *mut fid_cntr) -> u64 {
    guard_or("fi_cntr_readerr", 0, || {
        dispatch!(
            "fi_cntr_readerr",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            readerr(cntr)
        )
    })
}

/// Adds `value` to the counter (`cntr->ops->add`).
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_add(cntr: *mut fid_cntr, value: u64) -> c_int {
    guard("fi_cntr_add", || {
        dispatch!(
            "fi_cntr_add",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            add(cntr, value)
        )
    })
}

/// Adds `value` to the counter's error count (`cntr->ops->adderr`;
/// -FI_ENOSYS when the provider has none).
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_adderr(cntr: *mut fid_cntr, value: u64) -> c_int {
    guard("fi_cntr_adderr", || {
        dispatch!(
            "fi_cntr_adderr",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            adderr(cntr, value)
        )
    })
}

/// Sets the counter to `value` (`cntr->ops->set`).
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_set(cntr: *mut fid_cntr, value: u64) -> c_int {
    guard("fi_cntr_set", || {
        dispatch!(
            "fi_cntr_set",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            set(cntr, value)
        )
    })
}

/// Sets the counter's error count to `value` (`cntr->ops->seterr`;
/// -FI_ENOSYS when the provider has none).
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_seterr(cntr: *mut fid_cntr, value: u64) -> c_int {
    guard("fi_cntr_seterr", || {
        dispatch!(
            "fi_cntr_seterr",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            seterr(cntr, value)
        )
    })
}

/// Waits up to `timeout` ms (-1: forever) for the counter to reach
/// `threshold` (`cntr->ops->wait`). Returns 0, -FI_ETIMEDOUT, or
/// -FI_EAVAIL when the error count changed.
///
/// # Safety
/// `cntr` must be NULL or point to a live counter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_wait(
    cntr: *mut fid_cntr,
    threshold: u64,
    timeout: c_int,
) -> c_int {
    guard("fi_cntr_wait", || {
        dispatch!(
            "fi_cntr_wait",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            wait(cntr, threshold, timeout)
        )
    })
}

/// Exports an XPU CQ for device-side polling: the provider fills the
/// caller-owned `*xpu_cq` (`cq->ops->export_xpu`; -FI_ENOSYS when the
/// provider has none).
///
/// # Safety
/// `cq` must be NULL or point to a live CQ; `xpu_cq` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_export_xpu(
    cq: *mut fid_cq,
    flags: u64,
    xpu_cq: *mut fid_xpu_cq,
) -> c_int {
    guard("fi_cq_export_xpu", || {
        dispatch!(
            "fi_cq_export_xpu",
            cq,
            (*cq).ops,
            fi_ops_cq,
            export_xpu(cq, flags, xpu_cq)
        )
    })
}

/// Exports an XPU counter for device-side use: the provider fills the
/// caller-owned `*xpu_cntr` (`cntr->ops->export_xpu`; -FI_ENOSYS when the
/// provider has none).
///
/// # Safety
/// `cntr` must be NULL or point to a live counter; `xpu_cntr` must be
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_export_xpu(
    cntr: *mut fid_cntr,
    flags: u64,
    xpu_cntr: *mut fid_xpu_cntr,
) -> c_int {
    guard("fi_cntr_export_xpu", || {
        dispatch!(
            "fi_cntr_export_xpu",
            cntr,
            (*cntr).ops,
            fi_ops_cntr,
            export_xpu(cntr, flags, xpu_cntr)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::eq::fi_cq_err_entry;
    use crate::capi::fake::text::{calls, fake_ptr, n, p, record};
    use std::mem::{offset_of, size_of, zeroed};

    const ENOSYS: c_int = -libc::ENOSYS;
    const EINVAL: c_int = -libc::EINVAL;

    unsafe extern "C" fn eq_read(
        eq: *mut fid_eq,
        event: *mut u32,
        buf: *mut c_void,
        len: size_t,
        flags: u64,
    ) -> ssize_t {
        record(format!(
            "eq_read {:x} {:x} {:x} {len} {flags}",
            p(eq),
            p(event),
            p(buf)
        ));
        24
    }

    unsafe extern "C" fn eq_sread(
        eq: *mut fid_eq,
        event: *mut u32,
        buf: *mut c_void,
        len: size_t,
        timeout: c_int,
        flags: u64,
    ) -> ssize_t {
        record(format!(
            "eq_sread {:x} {:x} {:x} {len} {timeout} {flags}",
            p(eq),
            p(event),
            p(buf)
        ));
        25
    }

    unsafe extern "C" fn eq_strerror(
        _eq: *mut fid_eq,
        prov_errno: c_int,
        _err_data: *const c_void,
        buf: *mut c_char,
        _len: size_t,
    ) -> *const c_char {
        record(format!("eq_strerror {prov_errno}"));
        buf
    }

    unsafe extern "C" fn cq_readerr(
        cq: *mut fid_cq,
        buf: *mut fi_cq_err_entry,
        flags: u64,
    ) -> ssize_t {
        // SAFETY: the test passes a valid entry.
        let src = unsafe { (*buf).src_addr };
        record(format!("cq_readerr {:x} {src:x} {flags}", p(cq)));
        1
    }

    unsafe extern "C" fn cq_sreadfrom(
        cq: *mut fid_cq,
        buf: *mut c_void,
        count: size_t,
        src_addr: *mut fi_addr_t,
        cond: *const c_void,
        timeout: c_int,
    ) -> ssize_t {
        record(format!(
            "cq_sreadfrom {:x} {:x} {count} {:x} {:x} {timeout}",
            p(cq),
            p(buf),
            p(src_addr),
            p(cond)
        ));
        2
    }

    unsafe extern "C" fn cq_export_xpu(
        cq: *mut fid_cq,
        flags: u64,
        xpu_cq: *mut fid_xpu_cq,
    ) -> c_int {
        record(format!("cq_export {:x} {flags} {:x}", p(cq), p(xpu_cq)));
        3
    }

    unsafe extern "C" fn cntr_read(cntr: *mut fid_cntr) -> u64 {
        record(format!("cntr_read {:x}", p(cntr)));
        42
    }

    unsafe extern "C" fn cntr_adderr(cntr: *mut fid_cntr, value: u64) -> c_int {
        record(format!("cntr_adderr {:x} {value}", p(cntr)));
        4
    }

    unsafe extern "C" fn cntr_wait(cntr: *mut fid_cntr, threshold: u64, timeout: c_int) -> c_int {
        record(format!("cntr_wait {:x} {threshold} {timeout}", p(cntr)));
        5
    }

    unsafe extern "C" fn poll_add(
        pollset: *mut fid_poll,
        event_fid: *mut fid,
        flags: u64,
    ) -> c_int {
        record(format!(
            "poll_add {:x} {:x} {flags}",
            p(pollset),
            p(event_fid)
        ));
        6
    }

    unsafe extern "C" fn trywait(
        fabric: *mut fid_fabric,
        fids: *mut *mut fid,
        count: c_int,
    ) -> c_int {
        record(format!("trywait {:x} {:x} {count}", p(fabric), p(fids)));
        7
    }

    #[test]
    fn eq_ops_dispatch() {
        // SAFETY: all-zero is a valid empty table and object.
        let mut ops: fi_ops_eq = unsafe { zeroed() };
        ops.size = size_of::<fi_ops_eq>();
        ops.read = Some(eq_read);
        ops.sread = Some(eq_sread);
        ops.strerror = Some(eq_strerror);
        let mut eq: fid_eq = unsafe { zeroed() };
        eq.ops = &raw mut ops;
        let e = &raw mut eq;
        let mut buf = [0 as c_char; 8];
        unsafe {
            assert_eq!(fi_eq_read(e, fake_ptr(1), fake_ptr(2), 3, 4), 24);
            assert_eq!(fi_eq_sread(e, fake_ptr(1), fake_ptr(2), 3, -1, 5), 25);
            let s = fi_eq_strerror(e, 9, ptr::null(), buf.as_mut_ptr(), buf.len());
            assert_eq!(s, buf.as_ptr());
            assert_eq!(fi_eq_write(e, 1, ptr::null(), 0, 0), ENOSYS as ssize_t);
            assert_eq!(fi_eq_readerr(e, n(), 0), ENOSYS as ssize_t);
        }
        assert_eq!(
            calls(),
            [
                format!("eq_read {:x} 1 2 3 4", p(e)),
                format!("eq_sread {:x} 1 2 3 -1 5", p(e)),
                "eq_strerror 9".to_string(),
            ]
        );
    }

    #[test]
    fn cq_readerr_presets_src_addr() {
        // SAFETY: all-zero is a valid empty table, object and entry.
        let mut ops: fi_ops_cq = unsafe { zeroed() };
        ops.size = size_of::<fi_ops_cq>();
        ops.readerr = Some(cq_readerr);
        ops.sreadfrom = Some(cq_sreadfrom);
        ops.export_xpu = Some(cq_export_xpu);
        let mut cq: fid_cq = unsafe { zeroed() };
        cq.ops = &raw mut ops;
        let c = &raw mut cq;
        let mut entry: fi_cq_err_entry = unsafe { zeroed() };
        entry.src_addr = 5;
        unsafe {
            assert_eq!(fi_cq_readerr(c, &raw mut entry, 8), 1);
            assert_eq!(
                fi_cq_sreadfrom(c, fake_ptr(1), 2, fake_ptr(3), fake_ptr(4), 5),
                2
            );
            assert_eq!(fi_cq_export_xpu(c, 6, fake_ptr(7)), 3);
            assert_eq!(fi_cq_read(c, n(), 0), ENOSYS as ssize_t);
            assert_eq!(fi_cq_signal(c), ENOSYS);
            assert!(fi_cq_strerror(c, 0, ptr::null(), n(), 0).is_null());
        }
        assert_eq!(
            calls(),
            [
                format!("cq_readerr {:x} {FI_ADDR_NOTAVAIL:x} 8", p(c)),
                format!("cq_sreadfrom {:x} 1 2 3 4 5", p(c)),
                format!("cq_export {:x} 6 7", p(c)),
            ]
        );
        // With no readerr slot the caller's entry is left alone.
        let pe = &raw mut entry;
        unsafe {
            (*(*c).ops).size = offset_of!(fi_ops_cq, readerr);
            (*pe).src_addr = 5;
            assert_eq!(fi_cq_readerr(c, pe, 0), ENOSYS as ssize_t);
            assert_eq!((*pe).src_addr, 5);
        }
    }

    #[test]
    fn cntr_ops_dispatch_and_check_size() {
        // SAFETY: all-zero is a valid empty table and object.
        let mut ops: fi_ops_cntr = unsafe { zeroed() };
        ops.size = size_of::<fi_ops_cntr>();
        ops.read = Some(cntr_read);
        ops.adderr = Some(cntr_adderr);
        ops.wait = Some(cntr_wait);
        let mut cntr: fid_cntr = unsafe { zeroed() };
        cntr.ops = &raw mut ops;
        let c = &raw mut cntr;
        unsafe {
            assert_eq!(fi_cntr_read(c), 42);
            assert_eq!(fi_cntr_adderr(c, 9), 4);
            assert_eq!(fi_cntr_wait(c, 10, 11), 5);
            assert_eq!(fi_cntr_readerr(c), 0);
            assert_eq!(fi_cntr_seterr(c, 1), ENOSYS);
            assert_eq!(fi_cntr_export_xpu(c, 0, n()), ENOSYS);
        }
        assert_eq!(
            calls(),
            [
                format!("cntr_read {:x}", p(c)),
                format!("cntr_adderr {:x} 9", p(c)),
                format!("cntr_wait {:x} 10 11", p(c)),
            ]
        );
        // A table from an older provider that ends before adderr.
        unsafe {
            (*(*c).ops).size = offset_of!(fi_ops_cntr, adderr);
            assert_eq!(fi_cntr_adderr(c, 9), ENOSYS);
            assert_eq!(fi_cntr_wait(c, 1, 2), 5);
        }
        calls();
    }

    #[test]
    fn poll_wait_and_fabric_ops() {
        // SAFETY: all-zero is a valid empty table and object.
        let mut pops: fi_ops_poll = unsafe { zeroed() };
        pops.size = size_of::<fi_ops_poll>();
        pops.poll_add = Some(poll_add);
        let mut poll: fid_poll = unsafe { zeroed() };
        poll.ops = &raw mut pops;
        let ps = &raw mut poll;
        let mut fops: fi_ops_fabric = unsafe { zeroed() };
        fops.size = size_of::<fi_ops_fabric>();
        fops.trywait = Some(trywait);
        let mut fabric: fid_fabric = unsafe { zeroed() };
        fabric.ops = &raw mut fops;
        let fab = &raw mut fabric;
        let mut wait: fid_wait = unsafe { zeroed() };
        unsafe {
            assert_eq!(fi_poll_add(ps, fake_ptr(1), 2), 6);
            assert_eq!(fi_poll_del(ps, fake_ptr(1), 2), ENOSYS);
            assert_eq!(fi_poll(ps, n(), 0), ENOSYS);
            assert_eq!(fi_trywait(fab, fake_ptr(3), 4), 7);
            assert_eq!(fi_eq_open(fab, n(), n(), n()), ENOSYS);
            assert_eq!(fi_wait(&raw mut wait, 0), ENOSYS);
        }
        assert_eq!(
            calls(),
            [
                format!("poll_add {:x} 1 2", p(ps)),
                format!("trywait {:x} 3 4", p(fab)),
            ]
        );
    }

    #[test]
    fn null_objects_give_einval() {
        let e = EINVAL as ssize_t;
        unsafe {
            assert_eq!(fi_trywait(n(), n(), 0), EINVAL);
            assert_eq!(fi_wait(n(), 0), EINVAL);
            assert_eq!(fi_poll(n(), n(), 0), EINVAL);
            assert_eq!(fi_poll_add(n(), n(), 0), EINVAL);
            assert_eq!(fi_poll_del(n(), n(), 0), EINVAL);
            assert_eq!(fi_eq_open(n(), n(), n(), n()), EINVAL);
            assert_eq!(fi_eq_read(n(), n(), n(), 0, 0), e);
            assert_eq!(fi_eq_readerr(n(), n(), 0), e);
            assert_eq!(fi_eq_write(n(), 0, ptr::null(), 0, 0), e);
            assert_eq!(fi_eq_sread(n(), n(), n(), 0, 0, 0), e);
            assert!(fi_eq_strerror(n(), 0, ptr::null(), n(), 0).is_null());
            assert_eq!(fi_cq_read(n(), n(), 0), e);
            assert_eq!(fi_cq_readfrom(n(), n(), 0, n()), e);
            assert_eq!(fi_cq_readerr(n(), n(), 0), e);
            assert_eq!(fi_cq_sread(n(), n(), 0, ptr::null(), 0), e);
            assert_eq!(fi_cq_sreadfrom(n(), n(), 0, n(), ptr::null(), 0), e);
            assert_eq!(fi_cq_signal(n()), EINVAL);
            assert!(fi_cq_strerror(n(), 0, ptr::null(), n(), 0).is_null());
            assert_eq!(fi_cntr_read(n()), 0);
            assert_eq!(fi_cntr_readerr(n()), 0);
            assert_eq!(fi_cntr_add(n(), 0), EINVAL);
            assert_eq!(fi_cntr_adderr(n(), 0), EINVAL);
            assert_eq!(fi_cntr_set(n(), 0), EINVAL);
            assert_eq!(fi_cntr_seterr(n(), 0), EINVAL);
            assert_eq!(fi_cntr_wait(n(), 0, 0), EINVAL);
            assert_eq!(fi_cq_export_xpu(n(), 0, n()), EINVAL);
            assert_eq!(fi_cntr_export_xpu(n(), 0, n()), EINVAL);
        }
    }
}
