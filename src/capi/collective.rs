//! Exported forms of the `rdma/fi_collective.h` inline API: AV sets,
//! collective group joins, and the collective operations through the
//! endpoint's `collective` table.
//!
//! Every call returns -FI_EINVAL (and a log line) for a NULL object and
//! -FI_ENOSYS when the table is NULL, too short, or lacks the slot. The
//! operations return 0 or a negative FI_E* code (-FI_EAGAIN: retry later)
//! and complete on the endpoint's CQ; `coll_addr` is the group's address
//! (from fi_av_set_addr or the joined `fid_mc`).

use crate::abi::cm::fid_mc;
use crate::abi::collective::{
    fi_collective_addr, fi_collective_attr, fi_ops_av_set, fi_ops_collective, fid_av_set,
};
use crate::abi::domain::{
    fi_av_set_attr, fi_collective_op_raw, fi_datatype_raw, fi_op_raw, fi_ops_av, fi_ops_domain,
    fid_av, fid_domain,
};
use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::{fi_addr_t, FI_COLLECTIVE};
use crate::capi::cm::fi_join;
use crate::capi::{guard, guard_ssize};
use libc::{c_int, c_void, size_t, ssize_t};
use std::ptr;

/// Creates an AV set over `av` as `attr` describes; on success `*set` holds
/// it (close with fi_close).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `av`,
/// -FI_ENOSYS if the AV has no sets.
///
/// # Safety
/// `av` must be NULL or a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set(
    av: *mut fid_av,
    attr: *mut fi_av_set_attr,
    set: *mut *mut fid_av_set,
    context: *mut c_void,
) -> c_int {
    guard("fi_av_set", || {
        dispatch!(
            "fi_av_set",
            av,
            (*av).ops,
            fi_ops_av,
            av_set(av, attr, set, context)
        )
    })
}

/// Adds the members of `src` to `dst`.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `dst`,
/// -FI_ENOSYS if the set does not support it.
///
/// # Safety
/// `dst` must be NULL or a live AV set; `src` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_union(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int {
    guard("fi_av_set_union", || {
        dispatch!(
            "fi_av_set_union",
            dst,
            (*dst).ops,
            fi_ops_av_set,
            set_union(dst, src)
        )
    })
}

/// Keeps only the members of `dst` that are also in `src`.
///
/// Returns as fi_av_set_union.
///
/// # Safety
/// As fi_av_set_union.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_intersect(
    dst: *mut fid_av_set,
    src: *const fid_av_set,
) -> c_int {
    guard("fi_av_set_intersect", || {
        dispatch!(
            "fi_av_set_intersect",
            dst,
            (*dst).ops,
            fi_ops_av_set,
            intersect(dst, src)
        )
    })
}

/// Removes the members of `src` from `dst`.
///
/// Returns as fi_av_set_union.
///
/// # Safety
/// As fi_av_set_union.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_diff(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int {
    guard("fi_av_set_diff", || {
        dispatch!(
            "fi_av_set_diff",
            dst,
            (*dst).ops,
            fi_ops_av_set,
            diff(dst, src)
        )
    })
}

/// Adds the AV address `addr` to `set`.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `set`,
/// -FI_ENOSYS if the set does not support it.
///
/// # Safety
/// `set` must be NULL or a live AV set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_insert(set: *mut fid_av_set, addr: fi_addr_t) -> c_int {
    guard("fi_av_set_insert", || {
        dispatch!(
            "fi_av_set_insert",
            set,
            (*set).ops,
            fi_ops_av_set,
            insert(set, addr)
        )
    })
}

/// Removes the AV address `addr` from `set`.
///
/// Returns as fi_av_set_insert.
///
/// # Safety
/// As fi_av_set_insert.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_remove(set: *mut fid_av_set, addr: fi_addr_t) -> c_int {
    guard("fi_av_set_remove", || {
        dispatch!(
            "fi_av_set_remove",
            set,
            (*set).ops,
            fi_ops_av_set,
            remove(set, addr)
        )
    })
}

/// Stores in `*coll_addr` the address that names `set` as a collective
/// group (for fi_join_collective).
///
/// Returns as fi_av_set_insert.
///
/// # Safety
/// As fi_av_set_insert; `coll_addr` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_addr(set: *mut fid_av_set, coll_addr: *mut fi_addr_t) -> c_int {
    guard("fi_av_set_addr", || {
        dispatch!(
            "fi_av_set_addr",
            set,
            (*set).ops,
            fi_ops_av_set,
            addr(set, coll_addr)
        )
    })
}

/// Joins `ep` to the collective group of `set` derived from `coll_addr`:
/// fi_join with a `struct fi_collective_addr` and FI_COLLECTIVE added to
/// `flags`. The join completes on the EQ; `*mc` is the group.
///
/// Returns as fi_join.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; `set` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_join_collective(
    ep: *mut fid_ep,
    coll_addr: fi_addr_t,
    set: *const fid_av_set,
    flags: u64,
    mc: *mut *mut fid_mc,
    context: *mut c_void,
) -> c_int {
    guard("fi_join_collective", || {
        let addr = fi_collective_addr { set, coll_addr };
        let addr = ptr::addr_of!(addr).cast::<c_void>();
        // SAFETY: same contract as ours; `addr` outlives the call.
        Ok(unsafe { fi_join(ep, addr, flags | FI_COLLECTIVE, mc, context) })
    })
}

/// Waits, without blocking the caller, until every member of the group has
/// entered the barrier; completes with `context`.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_barrier(
    ep: *mut fid_ep,
    coll_addr: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_barrier", || {
        dispatch!(
            "fi_barrier",
            ep,
            (*ep).collective,
            fi_ops_collective,
            barrier(ep, coll_addr, context)
        )
    })
}

/// As fi_barrier, with operation `flags`; `flags == 0` is exactly
/// fi_barrier.
///
/// # Safety
/// As fi_barrier.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_barrier2(
    ep: *mut fid_ep,
    coll_addr: fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_barrier2", || {
        if flags == 0 {
            // SAFETY: same contract as ours.
            return Ok(unsafe { fi_barrier(ep, coll_addr, context) });
        }
        dispatch!(
            "fi_barrier2",
            ep,
            (*ep).collective,
            fi_ops_collective,
            barrier2(ep, coll_addr, flags, context)
        )
    })
}

/// Sends the `count` elements at `buf` from `root_addr` to every member;
/// the others receive into their `buf`.
///
/// # Safety
/// As fi_barrier; buffers stay valid until completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_broadcast(
    ep: *mut fid_ep,
    buf: *mut c_void,
    count: size_t,
    desc: *mut c_void,
    coll_addr: fi_addr_t,
    root_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_broadcast", || {
        dispatch!(
            "fi_broadcast",
            ep,
            (*ep).collective,
            fi_ops_collective,
            broadcast(ep, buf, count, desc, coll_addr, root_addr, datatype, flags, context)
        )
    })
}

/// Every member sends a distinct `count`-element block of `buf` to each
/// other member; `result` gathers the blocks received.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_alltoall(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_alltoall", || {
        dispatch!(
            "fi_alltoall",
            ep,
            (*ep).collective,
            fi_ops_collective,
            alltoall(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                datatype,
                flags,
                context
            )
        )
    })
}

/// Reduces every member's `buf` with `op`; every member gets the result.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_allreduce(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_allreduce", || {
        dispatch!(
            "fi_allreduce",
            ep,
            (*ep).collective,
            fi_ops_collective,
            allreduce(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                datatype,
                op,
                flags,
                context
            )
        )
    })
}

/// Every member gets the concatenation of all members' `buf`.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_allgather(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_allgather", || {
        dispatch!(
            "fi_allgather",
            ep,
            (*ep).collective,
            fi_ops_collective,
            allgather(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                datatype,
                flags,
                context
            )
        )
    })
}

/// Reduces every member's `buf` with `op` and gives each member one block
/// of the result.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_reduce_scatter(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_reduce_scatter", || {
        dispatch!(
            "fi_reduce_scatter",
            ep,
            (*ep).collective,
            fi_ops_collective,
            reduce_scatter(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                datatype,
                op,
                flags,
                context
            )
        )
    })
}

/// Reduces every member's `buf` with `op` into `result` at `root_addr`.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_reduce(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    root_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    op: fi_op_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_reduce", || {
        dispatch!(
            "fi_reduce",
            ep,
            (*ep).collective,
            fi_ops_collective,
            reduce(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                root_addr,
                datatype,
                op,
                flags,
                context
            )
        )
    })
}

/// The root's `buf` is split into blocks, one per member, into `result`.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_scatter(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    root_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_scatter", || {
        dispatch!(
            "fi_scatter",
            ep,
            (*ep).collective,
            fi_ops_collective,
            scatter(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                root_addr,
                datatype,
                flags,
                context
            )
        )
    })
}

/// Every member's `buf` is collected, in member order, into the root's
/// `result`.
///
/// # Safety
/// As fi_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_gather(
    ep: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    desc: *mut c_void,
    result: *mut c_void,
    result_desc: *mut c_void,
    coll_addr: fi_addr_t,
    root_addr: fi_addr_t,
    datatype: fi_datatype_raw,
    flags: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_gather", || {
        dispatch!(
            "fi_gather",
            ep,
            (*ep).collective,
            fi_ops_collective,
            gather(
                ep,
                buf,
                count,
                desc,
                result,
                result_desc,
                coll_addr,
                root_addr,
                datatype,
                flags,
                context
            )
        )
    })
}

/// Asks `domain` whether it supports collective `coll` with the op and
/// datatype in `*attr`; on success `*attr` holds the limits.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain cannot be asked, -FI_EOPNOTSUPP if unsupported.
///
/// # Safety
/// `domain` must be NULL or a live domain; `attr` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_query_collective(
    domain: *mut fid_domain,
    coll: fi_collective_op_raw,
    attr: *mut fi_collective_attr,
    flags: u64,
) -> c_int {
    guard("fi_query_collective", || {
        dispatch!(
            "fi_query_collective",
            domain,
            (*domain).ops,
            fi_ops_domain,
            query_collective(domain, coll, attr, flags)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::cm::fi_ops_cm;
    use crate::abi::collective::fi_msg_collective;
    use crate::abi::fabric::fi_ioc;
    use crate::capi::fake::{self, fake_fn, p, Case};
    use crate::error::Error;
    use std::mem::{size_of, zeroed};

    type Ep = *mut fid_ep;
    type Buf = *mut c_void;
    type CBuf = *const c_void;
    type Dt = fi_datatype_raw;
    type Op = fi_op_raw;
    type A = fi_addr_t;
    type Set = *mut fid_av_set;
    fake_fn!(av_set(av: *mut fid_av, a: *mut fi_av_set_attr, s: *mut Set, c: Buf) -> c_int);
    fake_fn!(set_union(d: Set, s: *const fid_av_set) -> c_int);
    fake_fn!(intersect(d: Set, s: *const fid_av_set) -> c_int);
    fake_fn!(diff(d: Set, s: *const fid_av_set) -> c_int);
    fake_fn!(insert(s: Set, a: A) -> c_int);
    fake_fn!(remove(s: Set, a: A) -> c_int);
    fake_fn!(addr(s: Set, a: *mut A) -> c_int);
    fake_fn!(query_collective(d: *mut fid_domain, c: fi_collective_op_raw, a: *mut fi_collective_attr, f: u64) -> c_int);
    fake_fn!(barrier(e: Ep, a: A, c: Buf) -> ssize_t);
    fake_fn!(barrier2(e: Ep, a: A, f: u64, c: Buf) -> ssize_t);
    fake_fn!(broadcast(e: Ep, b: Buf, n: size_t, d: Buf, a: A, r: A, t: Dt, f: u64, c: Buf) -> ssize_t);
    fake_fn!(alltoall(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, t: Dt, f: u64, c: Buf) -> ssize_t);
    fake_fn!(allreduce(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, t: Dt, o: Op, f: u64, c: Buf) -> ssize_t);
    fake_fn!(allgather(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, t: Dt, f: u64, c: Buf) -> ssize_t);
    fake_fn!(reduce_scatter(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, t: Dt, o: Op, f: u64, c: Buf) -> ssize_t);
    fake_fn!(reduce(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, ra: A, t: Dt, o: Op, f: u64, c: Buf) -> ssize_t);
    fake_fn!(scatter(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, ra: A, t: Dt, f: u64, c: Buf) -> ssize_t);
    fake_fn!(gather(e: Ep, b: CBuf, n: size_t, d: Buf, r: Buf, rd: Buf, a: A, ra: A, t: Dt, f: u64, c: Buf) -> ssize_t);
    fake_fn!(msg(e: Ep, m: *const fi_msg_collective, r: *mut fi_ioc, rd: *mut Buf, rn: size_t, f: u64) -> ssize_t);

    /// A cm join slot that records what fi_join_collective put in its
    /// `struct fi_collective_addr`.
    unsafe extern "C" fn join(
        ep: Ep,
        addr: CBuf,
        flags: u64,
        mc: *mut *mut fid_mc,
        c: Buf,
    ) -> c_int {
        // SAFETY: fi_join_collective passes a live struct fi_collective_addr.
        let a = unsafe { &*addr.cast::<fi_collective_addr>() };
        fake::record(
            "join",
            vec![
                ep as u64,
                a.set as u64,
                a.coll_addr,
                flags,
                mc as u64,
                c as u64,
            ],
        );
        fake::RET
    }

    struct Tables {
        av: fi_ops_av,
        set: fi_ops_av_set,
        domain: fi_ops_domain,
        coll: fi_ops_collective,
        cm: fi_ops_cm,
    }

    /// Tables of full or short `size`, with every slot set or none.
    fn tables(full: bool, slots: bool) -> Box<Tables> {
        let size = |n: usize| if full { n } else { size_of::<size_t>() };
        // SAFETY: all-zero is a valid value of these tables (NULL slots).
        let mut t: Box<Tables> = Box::new(unsafe { zeroed() });
        t.av.size = size(size_of::<fi_ops_av>());
        t.set.size = size(size_of::<fi_ops_av_set>());
        t.domain.size = size(size_of::<fi_ops_domain>());
        t.coll.size = size(size_of::<fi_ops_collective>());
        t.cm.size = size(size_of::<fi_ops_cm>());
        if slots {
            t.av.av_set = Some(av_set);
            t.set = fi_ops_av_set {
                size: t.set.size,
                set_union: Some(set_union),
                intersect: Some(intersect),
                diff: Some(diff),
                insert: Some(insert),
                remove: Some(remove),
                addr: Some(addr),
            };
            t.domain.query_collective = Some(query_collective);
            t.coll = fi_ops_collective {
                size: t.coll.size,
                barrier: Some(barrier),
                broadcast: Some(broadcast),
                alltoall: Some(alltoall),
                allreduce: Some(allreduce),
                allgather: Some(allgather),
                reduce_scatter: Some(reduce_scatter),
                reduce: Some(reduce),
                scatter: Some(scatter),
                gather: Some(gather),
                msg: Some(msg),
                barrier2: Some(barrier2),
            };
            t.cm.join = Some(join);
        }
        t
    }

    struct Objects {
        av: fid_av,
        set: fid_av_set,
        domain: fid_domain,
        ep: fid_ep,
    }

    fn objects(t: *mut Tables) -> Box<Objects> {
        // SAFETY: all-zero is a valid value of these objects.
        let mut o: Box<Objects> = Box::new(unsafe { zeroed() });
        if !t.is_null() {
            // SAFETY: t is a live Tables.
            let t = unsafe { &mut *t };
            o.av.ops = &mut t.av;
            o.set.ops = &mut t.set;
            o.domain.ops = &mut t.domain;
            o.ep.collective = &mut t.coll;
            o.ep.cm = &mut t.cm;
        }
        o
    }

    #[rustfmt::skip]
    const AV: &[Case<fid_av>] = &[Case { slot: "av_set", call: |a| unsafe { fi_av_set(a, p(1), p(2), p(3)) as i64 }, args: &[1, 2, 3] }];

    #[rustfmt::skip]
    const SET: &[Case<fid_av_set>] = &[
        Case { slot: "set_union", call: |s| unsafe { fi_av_set_union(s, p(1)) as i64 }, args: &[1] },
        Case { slot: "intersect", call: |s| unsafe { fi_av_set_intersect(s, p(1)) as i64 }, args: &[1] },
        Case { slot: "diff", call: |s| unsafe { fi_av_set_diff(s, p(1)) as i64 }, args: &[1] },
        Case { slot: "insert", call: |s| unsafe { fi_av_set_insert(s, 1) as i64 }, args: &[1] },
        Case { slot: "remove", call: |s| unsafe { fi_av_set_remove(s, 1) as i64 }, args: &[1] },
        Case { slot: "addr", call: |s| unsafe { fi_av_set_addr(s, p(1)) as i64 }, args: &[1] },
    ];

    #[rustfmt::skip]
    const DOMAIN: &[Case<fid_domain>] = &[Case {
        slot: "query_collective",
        call: |d| unsafe { fi_query_collective(d, 1, p(2), 3) as i64 },
        args: &[1, 2, 3],
    }];

    #[rustfmt::skip]
    const EP: &[Case<fid_ep>] = &[
        Case { slot: "join", call: |e| unsafe { fi_join_collective(e, 1, p(2), 3, p(4), p(5)) as i64 }, args: &[2, 1, 3 | FI_COLLECTIVE, 4, 5] },
        Case { slot: "barrier", call: |e| unsafe { fi_barrier(e, 1, p(2)) as i64 }, args: &[1, 2] },
        Case { slot: "barrier", call: |e| unsafe { fi_barrier2(e, 1, 0, p(2)) as i64 }, args: &[1, 2] },
        Case { slot: "barrier2", call: |e| unsafe { fi_barrier2(e, 1, 2, p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "broadcast", call: |e| unsafe { fi_broadcast(e, p(1), 2, p(3), 4, 5, 6, 7, p(8)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8] },
        Case { slot: "alltoall", call: |e| unsafe { fi_alltoall(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, p(9)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
        Case { slot: "allreduce", call: |e| unsafe { fi_allreduce(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, 9, p(10)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
        Case { slot: "allgather", call: |e| unsafe { fi_allgather(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, p(9)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9] },
        Case { slot: "reduce_scatter", call: |e| unsafe { fi_reduce_scatter(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, 9, p(10)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
        Case { slot: "reduce", call: |e| unsafe { fi_reduce(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, 9, 10, p(11)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] },
        Case { slot: "scatter", call: |e| unsafe { fi_scatter(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, 9, p(10)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
        Case { slot: "gather", call: |e| unsafe { fi_gather(e, p(1), 2, p(3), p(4), p(5), 6, 7, 8, 9, p(10)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
    ];

    fn all_fail(o: &mut Objects, code: i32) {
        fake::all_fail(&mut o.av, AV, code);
        fake::all_fail(&mut o.set, SET, code);
        fake::all_fail(&mut o.domain, DOMAIN, code);
        fake::all_fail(&mut o.ep, EP, code);
    }

    #[test]
    fn each_call_reaches_its_slot_with_its_arguments() {
        let mut t = tables(true, true);
        let o = &mut *objects(&mut *t);
        fake::dispatches(&mut o.av, AV);
        fake::dispatches(&mut o.set, SET);
        fake::dispatches(&mut o.domain, DOMAIN);
        fake::dispatches(&mut o.ep, EP);
    }

    #[test]
    fn missing_slots_are_enosys_and_null_objects_einval() {
        let nosys = Error::NOSYS.code();
        all_fail(&mut objects(&mut *tables(false, true)), nosys);
        all_fail(&mut objects(&mut *tables(true, false)), nosys);
        all_fail(&mut objects(ptr::null_mut()), nosys);
        let inval = Error::INVAL.code();
        fake::all_fail(ptr::null_mut(), AV, inval);
        fake::all_fail(ptr::null_mut(), SET, inval);
        fake::all_fail(ptr::null_mut(), DOMAIN, inval);
        fake::all_fail(ptr::null_mut(), EP, inval);
    }
}
