//! fi_atomic(3) on an oxshm endpoint: atomics, fetching and compare
//! atomics, and the valid-combination queries.

use super::*;

/// Elements of one datatype as local iovs (`fi_ioc`), checked like locals.
///
/// # Safety
/// `ioc` holds `count` entries; `desc` is NULL or holds `count`.
#[allow(clippy::too_many_arguments)]
unsafe fn iocs(
    ep: &Ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    size: usize,
    access: Access,
    check_desc: bool,
    call: &str,
    v: &mut Locals,
) -> Result<()> {
    if count > IOV_MAX || (count > 0 && ioc.is_null()) {
        crate::ox_log!(
            Warn,
            EpData,
            crate::prov::oxshm::NAME,
            "{call}: {count} iocs (iov_limit {IOV_MAX}) or a NULL ioc array"
        );
        return Err(Error::INVAL);
    }
    for i in 0..count {
        // SAFETY: per the function contract.
        let io = unsafe { *ioc.add(i) };
        let d = if desc.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: per the function contract.
            unsafe { *desc.add(i) }
        };
        let bytes = io.count.checked_mul(size).ok_or(Error::INVAL)?;
        push_local(ep, v, io.addr, bytes, d, access, check_desc, call)?;
    }
    Ok(())
}

struct Atomic<'a> {
    call: &'a str,
    kind: atomics::Kind,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    compare: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: usize,
    result: *const fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    dest: fi_addr_t,
    rma: *const fi_rma_ioc,
    rma_count: usize,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    data: Option<u64>,
    flags: Option<u64>,
    inject: bool,
    context: *mut c_void,
}

fn atomic(e: *mut fid_ep, a: Atomic<'_>) -> ssize_t {
    slot_ssize(a.call, || {
        let ep = ep_of(e)?;
        need_cap(ep, FI_ATOMIC, "FI_ATOMIC", a.call)?;
        let (dt, op) = (a.dt, a.op);
        let Some(size) = atomics::elem_size(dt).filter(|_| atomics::valid(a.kind, dt, op)) else {
            crate::ox_log!(
                Warn,
                EpData,
                crate::prov::oxshm::NAME,
                "{}: datatype {dt} with operation {op} is not supported (fi_atomicvalid)",
                a.call
            );
            return Err(Error::OPNOTSUPP);
        };
        let mut flags = a.flags.unwrap_or_else(|| ep.op_flags(false));
        if a.inject {
            flags |= FI_INJECT;
        }
        let inject = flags & FI_INJECT != 0;
        if a.rma_count != 1 || a.rma.is_null() {
            crate::ox_log!(
                Warn,
                EpData,
                crate::prov::oxshm::NAME,
                "{}: {} remote iocs; rma_iov_limit is 1",
                a.call,
                a.rma_count
            );
            return Err(Error::INVAL);
        }
        // SAFETY: rma holds one entry (fi_atomic(3)).
        let ri = unsafe { *a.rma };
        let read_only = op == crate::abi::domain::fi_op::FI_ATOMIC_READ as u32;
        let mut local = Locals::new();
        if !read_only {
            // SAFETY: the caller's ioc/desc arrays (fi_atomic(3)).
            unsafe {
                iocs(
                    ep,
                    a.ioc,
                    a.desc,
                    a.count,
                    size,
                    Access::WRITE,
                    !inject,
                    a.call,
                    &mut local,
                )
            }?;
        }
        let mut compare = Locals::new();
        // SAFETY: as above.
        unsafe {
            iocs(
                ep,
                a.compare,
                a.compare_desc,
                a.compare_count,
                size,
                Access::WRITE,
                true,
                a.call,
                &mut compare,
            )
        }?;
        let mut result = Locals::new();
        // SAFETY: as above.
        unsafe {
            iocs(
                ep,
                a.result,
                a.result_desc,
                a.result_count,
                size,
                Access::READ,
                true,
                a.call,
                &mut result,
            )
        }?;
        let want = ri.count as u64 * size as u64;
        let mismatch = (!read_only && total(&local) != want)
            || (a.kind == atomics::Kind::Compare && total(&compare) != want)
            || (a.kind != atomics::Kind::Base && total(&result) != want);
        if mismatch || want == 0 {
            crate::ox_log!(
                Warn,
                EpData,
                crate::prov::oxshm::NAME,
                "{}: operand, compare and result counts must equal the remote count {} (and be nonzero)",
                a.call,
                ri.count
            );
            return Err(Error::INVAL);
        }
        if want as usize > ATOMIC_MAX {
            crate::ox_log!(
                Warn,
                EpData,
                crate::prov::oxshm::NAME,
                "{}: {} elements of {size} bytes exceed the {ATOMIC_MAX} bytes of one atomic (fi_atomicvalid)",
                a.call,
                ri.count
            );
            return Err(Error::MSGSIZE);
        }
        let p = Post {
            dest: a.dest,
            kind: OpKind::Atomic {
                kind: a.kind,
                dt,
                op,
            },
            local: &local,
            result: &result,
            compare: &compare,
            addr: ri.addr,
            key: ri.key,
            data: a.data,
            flags,
            silent: a.inject,
            context: a.context,
        };
        post(ep, &p, a.call)
    })
}

impl Default for Atomic<'_> {
    fn default() -> Self {
        Atomic {
            call: "",
            kind: atomics::Kind::Base,
            ioc: std::ptr::null(),
            desc: std::ptr::null_mut(),
            count: 0,
            compare: std::ptr::null(),
            compare_desc: std::ptr::null_mut(),
            compare_count: 0,
            result: std::ptr::null(),
            result_desc: std::ptr::null_mut(),
            result_count: 0,
            dest: 0,
            rma: std::ptr::null(),
            rma_count: 0,
            dt: 0,
            op: 0,
            data: None,
            flags: None,
            inject: false,
            context: std::ptr::null_mut(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_write(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    mut desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_atomic",
            ioc: &io,
            desc: &mut desc,
            count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

/// Sum of the element counts of `count` iocs (0 for a bad array).
fn ioc_count(ioc: *const fi_ioc, count: usize) -> usize {
    if ioc.is_null() || count > IOV_MAX {
        return 0;
    }
    // SAFETY: ioc holds count entries (fi_atomic(3)).
    (0..count).map(|i| unsafe { (*ioc.add(i)).count }).sum()
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_writev(
    e: *mut fid_ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let ri = fi_rma_ioc {
        addr,
        count: ioc_count(ioc, count),
        key,
    };
    atomic(
        e,
        Atomic {
            call: "fi_atomicv",
            ioc,
            desc,
            count,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

fn atomic_msg_of(call: &str, m: *const fi_msg_atomic, flags: u64) -> Option<Atomic<'_>> {
    if m.is_null() {
        null_msg(call);
        return None;
    }
    // SAFETY: m is a valid fi_msg_atomic (fi_atomic(3)).
    let m = unsafe { *m };
    Some(Atomic {
        call,
        ioc: m.msg_iov,
        desc: m.desc,
        count: m.iov_count,
        dest: m.addr,
        rma: m.rma_iov,
        rma_count: m.rma_iov_count,
        dt: m.datatype,
        op: m.op,
        data: (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data),
        flags: Some(flags),
        context: m.context,
        ..Default::default()
    })
}

pub(crate) unsafe extern "C" fn atomic_writemsg(
    e: *mut fid_ep,
    m: *const fi_msg_atomic,
    flags: u64,
) -> ssize_t {
    match atomic_msg_of("fi_atomicmsg", m, flags) {
        Some(a) => atomic(e, a),
        None => Error::INVAL.code() as ssize_t,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_inject(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_inject_atomic",
            ioc: &io,
            count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            inject: true,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_readwrite(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    mut desc: *mut c_void,
    result: *mut c_void,
    mut result_desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let rio = fi_ioc {
        addr: result,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_fetch_atomic",
            kind: atomics::Kind::Fetch,
            ioc: &io,
            desc: &mut desc,
            count: 1,
            result: &rio,
            result_desc: &mut result_desc,
            result_count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_readwritev(
    e: *mut fid_ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let ri = fi_rma_ioc {
        addr,
        count: ioc_count(result, result_count),
        key,
    };
    atomic(
        e,
        Atomic {
            call: "fi_fetch_atomicv",
            kind: atomics::Kind::Fetch,
            ioc,
            desc,
            count,
            result,
            result_desc,
            result_count,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

pub(crate) unsafe extern "C" fn atomic_readwritemsg(
    e: *mut fid_ep,
    m: *const fi_msg_atomic,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    flags: u64,
) -> ssize_t {
    match atomic_msg_of("fi_fetch_atomicmsg", m, flags) {
        Some(a) => atomic(
            e,
            Atomic {
                kind: atomics::Kind::Fetch,
                result,
                result_desc,
                result_count,
                ..a
            },
        ),
        None => Error::INVAL.code() as ssize_t,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_compwrite(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    mut desc: *mut c_void,
    compare: *const c_void,
    mut compare_desc: *mut c_void,
    result: *mut c_void,
    mut result_desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let cio = fi_ioc {
        addr: compare as *mut c_void,
        count,
    };
    let rio = fi_ioc {
        addr: result,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_compare_atomic",
            kind: atomics::Kind::Compare,
            ioc: &io,
            desc: &mut desc,
            count: 1,
            compare: &cio,
            compare_desc: &mut compare_desc,
            compare_count: 1,
            result: &rio,
            result_desc: &mut result_desc,
            result_count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_compwritev(
    e: *mut fid_ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    compare: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: size_t,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let ri = fi_rma_ioc {
        addr,
        count: ioc_count(ioc, count),
        key,
    };
    atomic(
        e,
        Atomic {
            call: "fi_compare_atomicv",
            kind: atomics::Kind::Compare,
            ioc,
            desc,
            count,
            compare,
            compare_desc,
            compare_count,
            result,
            result_desc,
            result_count,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_compwritemsg(
    e: *mut fid_ep,
    m: *const fi_msg_atomic,
    compare: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: size_t,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    flags: u64,
) -> ssize_t {
    match atomic_msg_of("fi_compare_atomicmsg", m, flags) {
        Some(a) => atomic(
            e,
            Atomic {
                kind: atomics::Kind::Compare,
                compare,
                compare_desc,
                compare_count,
                result,
                result_desc,
                result_count,
                ..a
            },
        ),
        None => Error::INVAL.code() as ssize_t,
    }
}

/// `fi_atomicvalid` and friends: 0 and the most elements of one operation
/// in `*count`, or -FI_EOPNOTSUPP.
fn valid(
    e: *mut fid_ep,
    kind: atomics::Kind,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
    call: &str,
) -> c_int {
    slot(call, || {
        let ep = ep_of(e)?;
        need_cap(ep, FI_ATOMIC, "FI_ATOMIC", call)?;
        crate::boundary::nonnull(count, call, "count")?;
        let max = max_count(kind, dt, op).ok_or_else(|| {
            crate::ox_log!(
                Info,
                EpData,
                crate::prov::oxshm::NAME,
                "{call}: datatype {dt} with operation {op} is not supported"
            );
            Error::OPNOTSUPP
        })?;
        // SAFETY: count checked non-NULL.
        unsafe { *count = max };
        Ok(0)
    })
}

/// Most elements of one atomic of `(dt, op)`, None when unsupported.
pub fn max_count(kind: atomics::Kind, dt: u32, op: u32) -> Option<usize> {
    let size = atomics::elem_size(dt)?;
    atomics::valid(kind, dt, op).then_some(ATOMIC_MAX / size)
}

pub(crate) unsafe extern "C" fn atomic_writevalid(
    e: *mut fid_ep,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    valid(e, atomics::Kind::Base, dt, op, count, "fi_atomicvalid")
}

pub(crate) unsafe extern "C" fn atomic_readwritevalid(
    e: *mut fid_ep,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    valid(
        e,
        atomics::Kind::Fetch,
        dt,
        op,
        count,
        "fi_fetch_atomicvalid",
    )
}

pub(crate) unsafe extern "C" fn atomic_compwritevalid(
    e: *mut fid_ep,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    valid(
        e,
        atomics::Kind::Compare,
        dt,
        op,
        count,
        "fi_compare_atomicvalid",
    )
}
