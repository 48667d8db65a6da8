//! Exported forms of the `rdma/fi_rma.h` inline API: one-sided reads and
//! writes through the endpoint's `rma` table.
//!
//! Every call returns 0 or a negative FI_E* code (-FI_EAGAIN: retry later);
//! -FI_EINVAL (and a log line) for a NULL `ep`, -FI_ENOSYS when the `rma`
//! table is NULL, too short, or lacks the slot. `addr` and `key` name the
//! remote registration (see fi_mr(3)); local buffers must stay valid until
//! the operation completes.

use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::fi_addr_t;
use crate::abi::rma::{fi_msg_rma, fi_ops_rma};
use crate::capi::guard_ssize;
use libc::{c_void, iovec, size_t, ssize_t};

/// Reads `len` bytes at remote `addr`/`key` of `src_addr` into `buf`.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_read(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src_addr: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_read", || {
        dispatch!(
            "fi_read",
            ep,
            (*ep).rma,
            fi_ops_rma,
            read(ep, buf, len, desc, src_addr, addr, key, context)
        )
    })
}

/// As fi_read, into the `count` entries of `iov`.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_readv(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    src_addr: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_readv", || {
        dispatch!(
            "fi_readv",
            ep,
            (*ep).rma,
            fi_ops_rma,
            readv(ep, iov, desc, count, src_addr, addr, key, context)
        )
    })
}

/// Performs the read described by `msg` with operation `flags`.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_readmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_rma,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_readmsg", || {
        dispatch!(
            "fi_readmsg",
            ep,
            (*ep).rma,
            fi_ops_rma,
            readmsg(ep, msg, flags)
        )
    })
}

/// Writes `len` bytes from `buf` to remote `addr`/`key` of `dest_addr`.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_write(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_write", || {
        dispatch!(
            "fi_write",
            ep,
            (*ep).rma,
            fi_ops_rma,
            write(ep, buf, len, desc, dest_addr, addr, key, context)
        )
    })
}

/// As fi_write, from the `count` entries of `iov`.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_writev(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_writev", || {
        dispatch!(
            "fi_writev",
            ep,
            (*ep).rma,
            fi_ops_rma,
            writev(ep, iov, desc, count, dest_addr, addr, key, context)
        )
    })
}

/// Performs the write described by `msg` with operation `flags`.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_writemsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_rma,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_writemsg", || {
        dispatch!(
            "fi_writemsg",
            ep,
            (*ep).rma,
            fi_ops_rma,
            writemsg(ep, msg, flags)
        )
    })
}

/// Writes `len` bytes from `buf` without a completion; `buf` may be reused
/// when the call returns.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_inject_write(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
) -> ssize_t {
    guard_ssize("fi_inject_write", || {
        dispatch!(
            "fi_inject_write",
            ep,
            (*ep).rma,
            fi_ops_rma,
            inject(ep, buf, len, dest_addr, addr, key)
        )
    })
}

/// As fi_write, delivering `data` to the target's completion
/// (FI_REMOTE_CQ_DATA).
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_writedata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    data: u64,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_writedata", || {
        dispatch!(
            "fi_writedata",
            ep,
            (*ep).rma,
            fi_ops_rma,
            writedata(ep, buf, len, desc, data, dest_addr, addr, key, context)
        )
    })
}

/// As fi_inject_write, delivering `data` to the target's completion.
///
/// # Safety
/// As fi_read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_inject_writedata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    data: u64,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
) -> ssize_t {
    guard_ssize("fi_inject_writedata", || {
        dispatch!(
            "fi_inject_writedata",
            ep,
            (*ep).rma,
            fi_ops_rma,
            injectdata(ep, buf, len, data, dest_addr, addr, key)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::fake::{self, fake_fn, p, Case};
    use crate::error::Error;
    use std::mem::{size_of, zeroed};
    use std::ptr;

    type Ep = *mut fid_ep;
    type Buf = *mut c_void;
    type CBuf = *const c_void;
    type Descs = *mut *mut c_void;
    fake_fn!(read(e: Ep, b: Buf, l: size_t, d: Buf, s: fi_addr_t, a: u64, k: u64, c: Buf) -> ssize_t);
    fake_fn!(readv(e: Ep, v: *const iovec, d: Descs, n: size_t, s: fi_addr_t, a: u64, k: u64, c: Buf) -> ssize_t);
    fake_fn!(readmsg(e: Ep, m: *const fi_msg_rma, f: u64) -> ssize_t);
    fake_fn!(write(e: Ep, b: CBuf, l: size_t, d: Buf, s: fi_addr_t, a: u64, k: u64, c: Buf) -> ssize_t);
    fake_fn!(writev(e: Ep, v: *const iovec, d: Descs, n: size_t, s: fi_addr_t, a: u64, k: u64, c: Buf) -> ssize_t);
    fake_fn!(writemsg(e: Ep, m: *const fi_msg_rma, f: u64) -> ssize_t);
    fake_fn!(inject(e: Ep, b: CBuf, l: size_t, s: fi_addr_t, a: u64, k: u64) -> ssize_t);
    fake_fn!(writedata(e: Ep, b: CBuf, l: size_t, d: Buf, x: u64, s: fi_addr_t, a: u64, k: u64, c: Buf) -> ssize_t);
    fake_fn!(injectdata(e: Ep, b: CBuf, l: size_t, x: u64, s: fi_addr_t, a: u64, k: u64) -> ssize_t);

    fn table(size: usize) -> fi_ops_rma {
        fi_ops_rma {
            size,
            read: Some(read),
            readv: Some(readv),
            readmsg: Some(readmsg),
            write: Some(write),
            writev: Some(writev),
            writemsg: Some(writemsg),
            inject: Some(inject),
            writedata: Some(writedata),
            injectdata: Some(injectdata),
        }
    }

    #[rustfmt::skip]
    const CASES: &[Case<fid_ep>] = &[
        Case { slot: "read", call: |e| unsafe { fi_read(e, p(1), 2, p(3), 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "readv", call: |e| unsafe { fi_readv(e, p(1), p(2), 3, 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "readmsg", call: |e| unsafe { fi_readmsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "write", call: |e| unsafe { fi_write(e, p(1), 2, p(3), 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "writev", call: |e| unsafe { fi_writev(e, p(1), p(2), 3, 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "writemsg", call: |e| unsafe { fi_writemsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "inject", call: |e| unsafe { fi_inject_write(e, p(1), 2, 3, 4, 5) as i64 }, args: &[1, 2, 3, 4, 5] },
        Case { slot: "writedata", call: |e| unsafe { fi_writedata(e, p(1), 2, p(3), 4, 5, 6, 7, p(8)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8] },
        Case { slot: "injectdata", call: |e| unsafe { fi_inject_writedata(e, p(1), 2, 3, 4, 5, 6) as i64 }, args: &[1, 2, 3, 4, 5, 6] },
    ];

    fn with_rma(rma: *mut fi_ops_rma, check: impl Fn(*mut fid_ep)) {
        // SAFETY: all-zero is a valid endpoint.
        let mut ep: fid_ep = unsafe { zeroed() };
        ep.rma = rma;
        check(&mut ep);
    }

    #[test]
    fn each_call_reaches_its_slot_with_its_arguments() {
        let mut t = table(size_of::<fi_ops_rma>());
        with_rma(&mut t, |ep| fake::dispatches(ep, CASES));
    }

    #[test]
    fn missing_slots_are_enosys_and_null_objects_einval() {
        let mut short = table(size_of::<size_t>());
        // SAFETY: all-zero is a valid table (every slot NULL).
        let mut empty: fi_ops_rma = unsafe { zeroed() };
        empty.size = size_of::<fi_ops_rma>();
        for rma in [&mut short as *mut fi_ops_rma, &mut empty, ptr::null_mut()] {
            with_rma(rma, |ep| fake::all_fail(ep, CASES, Error::NOSYS.code()));
        }
        fake::all_fail(ptr::null_mut(), CASES, Error::INVAL.code());
    }
}
