//! Exported forms of the `rdma/fi_tagged.h` inline API: tag-matched sends
//! and receives through the endpoint's `tagged` table. (`fi_tag_mpi` stays
//! an inline helper in the header: it is pure arithmetic.)
//!
//! Every call returns 0 or a negative FI_E* code (-FI_EAGAIN: retry later);
//! -FI_EINVAL (and a log line) for a NULL `ep`, -FI_ENOSYS when the `tagged`
//! table is NULL, too short, or lacks the slot. A receive matches a message
//! whose tag equals `tag` in every bit not set in `ignore`.

use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::fi_addr_t;
use crate::abi::tagged::{fi_msg_tagged, fi_ops_tagged};
use crate::capi::guard_ssize;
use libc::{c_void, iovec, size_t, ssize_t};

/// Posts a tagged receive of up to `len` bytes into `buf`.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; buffers stay valid until completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_trecv(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src_addr: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_trecv", || {
        dispatch!(
            "fi_trecv",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            recv(ep, buf, len, desc, src_addr, tag, ignore, context)
        )
    })
}

/// As fi_trecv, into the `count` entries of `iov`.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_trecvv(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    src_addr: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_trecvv", || {
        dispatch!(
            "fi_trecvv",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            recvv(ep, iov, desc, count, src_addr, tag, ignore, context)
        )
    })
}

/// Posts the tagged receive described by `msg` with operation `flags`.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_trecvmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_tagged,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_trecvmsg", || {
        dispatch!(
            "fi_trecvmsg",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            recvmsg(ep, msg, flags)
        )
    })
}

/// Sends `len` bytes from `buf` with `tag` to `dest_addr`.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tsend(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_tsend", || {
        dispatch!(
            "fi_tsend",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            send(ep, buf, len, desc, dest_addr, tag, context)
        )
    })
}

/// As fi_tsend, from the `count` entries of `iov`.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tsendv(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest_addr: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_tsendv", || {
        dispatch!(
            "fi_tsendv",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            sendv(ep, iov, desc, count, dest_addr, tag, context)
        )
    })
}

/// Sends the tagged message described by `msg` with operation `flags`.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tsendmsg(
    ep: *mut fid_ep,
    msg: *const fi_msg_tagged,
    flags: u64,
) -> ssize_t {
    guard_ssize("fi_tsendmsg", || {
        dispatch!(
            "fi_tsendmsg",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            sendmsg(ep, msg, flags)
        )
    })
}

/// Sends `len` bytes with `tag` without a completion; `buf` may be reused
/// when the call returns.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tinject(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest_addr: fi_addr_t,
    tag: u64,
) -> ssize_t {
    guard_ssize("fi_tinject", || {
        dispatch!(
            "fi_tinject",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            inject(ep, buf, len, dest_addr, tag)
        )
    })
}

/// As fi_tsend, delivering `data` to the peer's completion.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tsenddata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    data: u64,
    dest_addr: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_tsenddata", || {
        dispatch!(
            "fi_tsenddata",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            senddata(ep, buf, len, desc, data, dest_addr, tag, context)
        )
    })
}

/// As fi_tinject, delivering `data` to the peer's completion.
///
/// # Safety
/// As fi_trecv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tinjectdata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    data: u64,
    dest_addr: fi_addr_t,
    tag: u64,
) -> ssize_t {
    guard_ssize("fi_tinjectdata", || {
        dispatch!(
            "fi_tinjectdata",
            ep,
            (*ep).tagged,
            fi_ops_tagged,
            injectdata(ep, buf, len, data, dest_addr, tag)
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
    fake_fn!(recv(e: Ep, b: Buf, l: size_t, d: Buf, s: fi_addr_t, t: u64, i: u64, c: Buf) -> ssize_t);
    fake_fn!(recvv(e: Ep, v: *const iovec, d: Descs, n: size_t, s: fi_addr_t, t: u64, i: u64, c: Buf) -> ssize_t);
    fake_fn!(recvmsg(e: Ep, m: *const fi_msg_tagged, f: u64) -> ssize_t);
    fake_fn!(send(e: Ep, b: CBuf, l: size_t, d: Buf, s: fi_addr_t, t: u64, c: Buf) -> ssize_t);
    fake_fn!(sendv(e: Ep, v: *const iovec, d: Descs, n: size_t, s: fi_addr_t, t: u64, c: Buf) -> ssize_t);
    fake_fn!(sendmsg(e: Ep, m: *const fi_msg_tagged, f: u64) -> ssize_t);
    fake_fn!(inject(e: Ep, b: CBuf, l: size_t, s: fi_addr_t, t: u64) -> ssize_t);
    fake_fn!(senddata(e: Ep, b: CBuf, l: size_t, d: Buf, x: u64, s: fi_addr_t, t: u64, c: Buf) -> ssize_t);
    fake_fn!(injectdata(e: Ep, b: CBuf, l: size_t, x: u64, s: fi_addr_t, t: u64) -> ssize_t);

    fn table(size: usize) -> fi_ops_tagged {
        fi_ops_tagged {
            size,
            recv: Some(recv),
            recvv: Some(recvv),
            recvmsg: Some(recvmsg),
            send: Some(send),
            sendv: Some(sendv),
            sendmsg: Some(sendmsg),
            inject: Some(inject),
            senddata: Some(senddata),
            injectdata: Some(injectdata),
        }
    }

    #[rustfmt::skip]
    const CASES: &[Case<fid_ep>] = &[
        Case { slot: "recv", call: |e| unsafe { fi_trecv(e, p(1), 2, p(3), 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "recvv", call: |e| unsafe { fi_trecvv(e, p(1), p(2), 3, 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "recvmsg", call: |e| unsafe { fi_trecvmsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "send", call: |e| unsafe { fi_tsend(e, p(1), 2, p(3), 4, 5, p(6)) as i64 }, args: &[1, 2, 3, 4, 5, 6] },
        Case { slot: "sendv", call: |e| unsafe { fi_tsendv(e, p(1), p(2), 3, 4, 5, p(6)) as i64 }, args: &[1, 2, 3, 4, 5, 6] },
        Case { slot: "sendmsg", call: |e| unsafe { fi_tsendmsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "inject", call: |e| unsafe { fi_tinject(e, p(1), 2, 3, 4) as i64 }, args: &[1, 2, 3, 4] },
        Case { slot: "senddata", call: |e| unsafe { fi_tsenddata(e, p(1), 2, p(3), 4, 5, 6, p(7)) as i64 }, args: &[1, 2, 3, 4, 5, 6, 7] },
        Case { slot: "injectdata", call: |e| unsafe { fi_tinjectdata(e, p(1), 2, 3, 4, 5) as i64 }, args: &[1, 2, 3, 4, 5] },
    ];

    fn with_tagged(tagged: *mut fi_ops_tagged, check: impl Fn(*mut fid_ep)) {
        // SAFETY: all-zero is a valid endpoint.
        let mut ep: fid_ep = unsafe { zeroed() };
        ep.tagged = tagged;
        check(&mut ep);
    }

    #[test]
    fn each_call_reaches_its_slot_with_its_arguments() {
        let mut t = table(size_of::<fi_ops_tagged>());
        with_tagged(&mut t, |ep| fake::dispatches(ep, CASES));
    }

    #[test]
    fn missing_slots_are_enosys_and_null_objects_einval() {
        let mut short = table(size_of::<size_t>());
        // SAFETY: all-zero is a valid table (every slot NULL).
        let mut empty: fi_ops_tagged = unsafe { zeroed() };
        empty.size = size_of::<fi_ops_tagged>();
        for tagged in [
            &mut short as *mut fi_ops_tagged,
            &mut empty,
            ptr::null_mut(),
        ] {
            with_tagged(tagged, |ep| fake::all_fail(ep, CASES, Error::NOSYS.code()));
        }
        fake::all_fail(ptr::null_mut(), CASES, Error::INVAL.code());
    }
}

/// An MPI-style tag: `payload_id` in bits 32..40, the MPI `tag` in the low
/// 32 bits (see FI_MPI_IGNORE_TAG and FI_MPI_IGNORE_PAYLOAD).
#[unsafe(no_mangle)]
pub extern "C" fn fi_tag_mpi(tag: libc::c_int, payload_id: u8) -> u64 {
    ((payload_id as u64) << 32) | (tag as u32 as u64)
}

#[cfg(test)]
mod mpi_tag_tests {
    use super::*;

    #[test]
    fn mpi_tags() {
        assert_eq!(fi_tag_mpi(-1, 0), 0xffff_ffff);
        assert_eq!(fi_tag_mpi(5, 3), (3 << 32) | 5);
    }
}
