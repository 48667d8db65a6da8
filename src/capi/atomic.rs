//! Exported forms of the `rdma/fi_atomic.h` inline API: remote atomics
//! through the endpoint's `atomic` table, and the domain's atomic query.
//!
//! Every call returns -FI_EINVAL (and a log line) for a NULL object and
//! -FI_ENOSYS when the table is NULL, too short, or lacks the slot; the
//! transfer calls otherwise return 0 or a negative FI_E* code (-FI_EAGAIN:
//! retry later). `count` is in elements of `datatype`; `addr`/`key` name
//! the remote registration.

use crate::abi::atomic::{fi_atomic_attr, fi_msg_atomic, fi_ops_atomic};
use crate::abi::domain::{fi_datatype_raw, fi_op_raw, fi_ops_domain, fid_domain};
use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::{fi_addr_t, fi_ioc};
use crate::capi::{guard, guard_ssize};
use libc::{c_int, c_void, size_t, ssize_t};

/// Applies `op` with the `count` elements of `buf` to remote `addr`.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; buffers stay valid until completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_atomic", || {
        dispatch!(
            "fi_atomic",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            write(ep, buf, count, desc, dest_addr, addr, key, datatype, op, context)
        )
    })
}

/// As fi_atomic, with operands in the `count` entries of `iov`.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_atomicv(
    ep: *mut fid_ep,
    iov: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_atomicv", || {
        dispatch!(
            "fi_atomicv",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            writev(ep, iov, desc, count, dest_addr, addr, key, datatype, op, context)
        )
    })
}

/// Performs the atomic described by `msg` with operation `flags`.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_atomicmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_atomic,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_atomicmsg", || {
        dispatch!(
            "fi_atomicmsg",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            writemsg(ep, msg, flags)
        )
    })
}

/// As fi_atomic without a completion; `buf` may be reused on return.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_inject_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
) -> ssize_t {
    guard_ssize("fi_inject_atomic", || {
        dispatch!(
            "fi_inject_atomic",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            inject(ep, buf, count, dest_addr, addr, key, datatype, op)
        )
    })
}

/// As fi_atomic, returning the target's previous values in `result`.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_fetch_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_fetch_atomic", || {
        dispatch!(
            "fi_fetch_atomic",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            readwrite(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                dest_addr,
                addr,
                key,
                datatype,
                op,
                context
            )
        )
    })
}

/// As fi_fetch_atomic, with operand and result arrays.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_fetch_atomicv(
    ep: *mut fid_ep,
    iov: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    resultv: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_fetch_atomicv", || {
        dispatch!(
            "fi_fetch_atomicv",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            readwritev(
                ep,
                iov,
                desc,
                count,
                resultv,
                result_desc,
                result_count,
                dest_addr,
                addr,
                key,
                datatype,
                op,
                context
            )
        )
    })
}

/// Performs the fetching atomic described by `msg`, results into `resultv`.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_fetch_atomicmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_atomic,
    resultv: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_fetch_atomicmsg", || {
        dispatch!(
            "fi_fetch_atomicmsg",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            readwritemsg(ep, msg, resultv, result_desc, result_count, flags)
        )
    })
}

/// Compares the target with `compare` and, per `op`, writes `buf`; the
/// previous values land in `result`.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_compare_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    compare: *const c_void,
    compare_desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_compare_atomic", || {
        dispatch!(
            "fi_compare_atomic",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            compwrite(
                ep,
                buf,
                count,
                desc,
                compare,
                compare_desc,
                result,
                result_desc,
                dest_addr,
                addr,
                key,
                datatype,
                op,
                context
            )
        )
    })
}

/// As fi_compare_atomic, with operand, compare and result arrays.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_compare_atomicv(
    ep: *mut fid_ep,
    iov: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    comparev: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: size_t,
    resultv: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    dest_addr: fi_addr_t,
    addr: u64,
    key: u64,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_compare_atomicv", || {
        dispatch!(
            "fi_compare_atomicv",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            compwritev(
                ep,
                iov,
                desc,
                count,
                comparev,
                compare_desc,
                compare_count,
                resultv,
                result_desc,
                result_count,
                dest_addr,
                addr,
                key,
                datatype,
                op,
                context
            )
        )
    })
}

/// Performs the compare atomic described by `msg`.
///
/// # Safety
/// As fi_atomic.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_compare_atomicmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_atomic,
    comparev: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: size_t,
    resultv: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_compare_atomicmsg", || {
        dispatch!(
            "fi_compare_atomicmsg",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            compwritemsg(
                ep,
                msg,
                comparev,
                compare_desc,
                compare_count,
                resultv,
                result_desc,
                result_count,
                flags
            )
        )
    })
}

/// Whether `ep` supports atomic `op` on `datatype`; on success `*count` is
/// the most elements one operation may carry.
///
/// Returns 0, or a negative FI_E* code (-FI_EOPNOTSUPP: not supported).
///
/// # Safety
/// `ep` must be NULL or a live endpoint; `count` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_atomicvalid(
    ep: *mut fid_ep,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    guard("fi_atomicvalid", || {
        dispatch!(
            "fi_atomicvalid",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            writevalid(ep, datatype, op, count)
        )
    })
}

/// As fi_atomicvalid, for fetching atomics.
///
/// # Safety
/// As fi_atomicvalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_fetch_atomicvalid(
    ep: *mut fid_ep,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    guard("fi_fetch_atomicvalid", || {
        dispatch!(
            "fi_fetch_atomicvalid",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            readwritevalid(ep, datatype, op, count)
        )
    })
}

/// As fi_atomicvalid, for compare atomics.
///
/// # Safety
/// As fi_atomicvalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_compare_atomicvalid(
    ep: *mut fid_ep,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    guard("fi_compare_atomicvalid", || {
        dispatch!(
            "fi_compare_atomicvalid",
            ep,
            (*ep).atomic,
            fi_ops_atomic,
            compwritevalid(ep, datatype, op, count)
        )
    })
}

/// Asks `domain` whether it supports `op` on `datatype` (FI_FETCH_ATOMIC /
/// FI_COMPARE_ATOMIC in `flags` select the variant); on success `*attr`
/// holds the limits.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain cannot be asked, -FI_EOPNOTSUPP if the pair is
/// unsupported.
///
/// # Safety
/// `domain` must be NULL or a live domain; `attr` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_query_atomic(
    domain: *mut fid_domain,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    attr: *mut fi_atomic_attr,
    flags: u64,
) -> c_int {
    guard("fi_query_atomic", || {
        dispatch!(
            "fi_query_atomic",
            domain,
            (*domain).ops,
            fi_ops_domain,
            query_atomic(domain, datatype, op, attr, flags)
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
    type Ioc = *mut fi_ioc;
    type CIoc = *const fi_ioc;
    type Msg = *const fi_msg_atomic;
    type Dt = fi_datatype_raw;
    type Op = fi_op_raw;
    fake_fn!(write(e: Ep, b: CBuf, n: size_t, d: Buf, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op, c: Buf) -> ssize_t);
    fake_fn!(writev(e: Ep, v: CIoc, d: Descs, n: size_t, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op, c: Buf) -> ssize_t);
    fake_fn!(writemsg(e: Ep, m: Msg, f: u64) -> ssize_t);
    fake_fn!(inject(e: Ep, b: CBuf, n: size_t, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op) -> ssize_t);
    fake_fn!(readwrite(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op, c: Buf) -> ssize_t);
    fake_fn!(readwritev(e: Ep, v: CIoc, d: Descs, n: size_t, r: Ioc, rd: Descs, rn: size_t, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op, c: Buf) -> ssize_t);
    fake_fn!(readwritemsg(e: Ep, m: Msg, r: Ioc, rd: Descs, rn: size_t, f: u64) -> ssize_t);
    fake_fn!(compwrite(e: Ep, b: CBuf, n: size_t, d: Buf, x: CBuf, xd: Buf, r: Buf, rd: Buf, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op, c: Buf) -> ssize_t);
    fake_fn!(compwritev(e: Ep, v: CIoc, d: Descs, n: size_t, x: CIoc, xd: Descs, xn: size_t, r: Ioc, rd: Descs, rn: size_t, s: fi_addr_t, a: u64, k: u64, t: Dt, o: Op, c: Buf) -> ssize_t);
    fake_fn!(compwritemsg(e: Ep, m: Msg, x: CIoc, xd: Descs, xn: size_t, r: Ioc, rd: Descs, rn: size_t, f: u64) -> ssize_t);
    fake_fn!(writevalid(e: Ep, t: Dt, o: Op, n: *mut size_t) -> c_int);
    fake_fn!(readwritevalid(e: Ep, t: Dt, o: Op, n: *mut size_t) -> c_int);
    fake_fn!(compwritevalid(e: Ep, t: Dt, o: Op, n: *mut size_t) -> c_int);
    fake_fn!(query_atomic(d: *mut fid_domain, t: Dt, o: Op, a: *mut fi_atomic_attr, f: u64) -> c_int);

    fn table(size: usize) -> fi_ops_atomic {
        fi_ops_atomic {
            size,
            write: Some(write),
            writev: Some(writev),
            writemsg: Some(writemsg),
            inject: Some(inject),
            readwrite: Some(readwrite),
            readwritev: Some(readwritev),
            readwritemsg: Some(readwritemsg),
            compwrite: Some(compwrite),
            compwritev: Some(compwritev),
            compwritemsg: Some(compwritemsg),
            writevalid: Some(writevalid),
            readwritevalid: Some(readwritevalid),
            compwritevalid: Some(compwritevalid),
        }
    }

    #[rustfmt::skip]
    const EP: &[Case<fid_ep>] = &[
        Case { slot: "write", call: |e| unsafe { fi_atomic(e, p(1), 2, p(3), 4, 5, 6, 7, 8, p(9)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
        Case { slot: "writev", call: |e| unsafe { fi_atomicv(e, p(1), p(2), 3, 4, 5, 6, 7, 8, p(9)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
        Case { slot: "writemsg", call: |e| unsafe { fi_atomicmsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "inject", call: |e| unsafe { fi_inject_atomic(e, p(1), 2, 3, 4, 5, 6, 7) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "readwrite", call: |e| unsafe { fi_fetch_atomic(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, 9, 10, p(11)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] },
        Case { slot: "readwritev", call: |e| unsafe { fi_fetch_atomicv(e, p(1), p(2), 3, p(4), p(5), 6, 7, 8, 9, 10, 11, p(12)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] },
        Case { slot: "readwritemsg", call: |e| unsafe { fi_fetch_atomicmsg(e, p(1), p(2), p(3), 4, 5) as i64 }, args: &[1, 2, 3, 4, 5] },
        Case { slot: "compwrite", call: |e| unsafe { fi_compare_atomic(e, p(1), 2, p(3), p(4), p(5), p(6), p(7), 8, 9, 10, 11, 12, p(13)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13] },
        Case { slot: "compwritev", call: |e| unsafe { fi_compare_atomicv(e, p(1), p(2), 3, p(4), p(5), 6, p(7), p(8), 9, 10, 11, 12, 13, 14, p(15)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] },
        Case { slot: "compwritemsg", call: |e| unsafe { fi_compare_atomicmsg(e, p(1), p(2), p(3), 4, p(5), p(6), 7, 8) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8] },
        Case { slot: "writevalid", call: |e| unsafe { fi_atomicvalid(e, 1, 2, p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "readwritevalid", call: |e| unsafe { fi_fetch_atomicvalid(e, 1, 2, p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "compwritevalid", call: |e| unsafe { fi_compare_atomicvalid(e, 1, 2, p(3)) as i64 }, args: &[1, 2, 3] },
    ];

    #[rustfmt::skip]
    const DOMAIN: &[Case<fid_domain>] = &[Case {
        slot: "query_atomic",
        call: |d| unsafe { fi_query_atomic(d, 1, 2, p(3), 4) as i64 },
        args: &[1, 2, 3, 4],
    }];

    /// Runs `check` on an endpoint and a domain over `atomic` and `domain`.
    fn with(
        atomic: *mut fi_ops_atomic,
        domain: *mut fi_ops_domain,
        check: impl Fn(*mut fid_ep, *mut fid_domain),
    ) {
        // SAFETY: all-zero is a valid value of these objects.
        let (mut ep, mut dom): (fid_ep, fid_domain) = unsafe { (zeroed(), zeroed()) };
        ep.atomic = atomic;
        dom.ops = domain;
        check(&mut ep, &mut dom);
    }

    fn domain_table(size: usize, slot: bool) -> fi_ops_domain {
        // SAFETY: all-zero is a valid table (every slot NULL).
        let mut t: fi_ops_domain = unsafe { zeroed() };
        t.size = size;
        if slot {
            t.query_atomic = Some(query_atomic);
        }
        t
    }

    #[test]
    fn each_call_reaches_its_slot_with_its_arguments() {
        let mut a = table(size_of::<fi_ops_atomic>());
        let mut d = domain_table(size_of::<fi_ops_domain>(), true);
        with(&mut a, &mut d, |ep, dom| {
            fake::dispatches(ep, EP);
            fake::dispatches(dom, DOMAIN);
        });
    }

    #[test]
    fn missing_slots_are_enosys_and_null_objects_einval() {
        let nosys = Error::NOSYS.code();
        let (mut a_short, mut d_short) = (
            table(size_of::<size_t>()),
            domain_table(size_of::<size_t>(), true),
        );
        // SAFETY: all-zero is a valid table (every slot NULL).
        let mut a_empty: fi_ops_atomic = unsafe { zeroed() };
        a_empty.size = size_of::<fi_ops_atomic>();
        let mut d_empty = domain_table(size_of::<fi_ops_domain>(), false);
        let pairs: [(*mut fi_ops_atomic, *mut fi_ops_domain); 3] = [
            (&mut a_short, &mut d_short),
            (&mut a_empty, &mut d_empty),
            (ptr::null_mut(), ptr::null_mut()),
        ];
        for (a, d) in pairs {
            with(a, d, |ep, dom| {
                fake::all_fail(ep, EP, nosys);
                fake::all_fail(dom, DOMAIN, nosys);
            });
        }
        fake::all_fail(ptr::null_mut(), EP, Error::INVAL.code());
        fake::all_fail(ptr::null_mut(), DOMAIN, Error::INVAL.code());
    }
}
