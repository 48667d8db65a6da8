//! Exported forms of the `rdma/fi_cm.h` inline API: endpoint names,
//! connection setup and teardown, and multicast joins. Each forwards to the
//! endpoint's `cm` table slot that upstream's inline uses.
//!
//! Every call returns -FI_EINVAL (and logs) for a NULL object and
//! -FI_ENOSYS when the `cm` table is NULL, too short, or lacks the slot.

use crate::abi::cm::{fi_ops_cm, fid_mc};
use crate::abi::endpoint::{fid_ep, fid_pep};
use crate::abi::fabric::{fi_addr_t, fid_t, FI_ADDR_NOTAVAIL};
use crate::capi::{guard, guard_or, nonnull};
use libc::{c_int, c_void, size_t};

/// Sets the local address of the endpoint `fid` to the `addrlen` bytes at
/// `addr` (before it is enabled).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `fid` must be NULL or the `fid` of a live active or passive endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_setname(fid: fid_t, addr: *mut c_void, addrlen: size_t) -> c_int {
    let ep = fid as *mut fid_ep;
    guard("fi_setname", || {
        dispatch!(
            "fi_setname",
            ep,
            (*ep).cm,
            fi_ops_cm,
            setname(fid, addr, addrlen)
        )
    })
}

/// Copies the local address of the endpoint `fid` into `addr`; `*addrlen`
/// is the buffer size on input and the address size on output
/// (-FI_ETOOSMALL when the buffer is too small).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `fid` must be NULL or the `fid` of a live active or passive endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_getname(fid: fid_t, addr: *mut c_void, addrlen: *mut size_t) -> c_int {
    let ep = fid as *mut fid_ep;
    guard("fi_getname", || {
        dispatch!(
            "fi_getname",
            ep,
            (*ep).cm,
            fi_ops_cm,
            getname(fid, addr, addrlen)
        )
    })
}

/// Copies the address of the connected peer of `ep` into `addr`, sized as
/// for fi_getname.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_getpeer(
    ep: *mut fid_ep,
    addr: *mut c_void,
    addrlen: *mut size_t,
) -> c_int {
    guard("fi_getpeer", || {
        dispatch!(
            "fi_getpeer",
            ep,
            (*ep).cm,
            fi_ops_cm,
            getpeer(ep, addr, addrlen)
        )
    })
}

/// Starts listening for connection requests on `pep`; they arrive on its EQ.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `pep`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `pep` must be NULL or a live passive endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_listen(pep: *mut fid_pep) -> c_int {
    guard("fi_listen", || {
        dispatch!("fi_listen", pep, (*pep).cm, fi_ops_cm, listen(pep))
    })
}

/// Requests a connection from `ep` to `addr`, sending `paramlen` bytes of
/// `param` with it; the result arrives on the endpoint's EQ.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_connect(
    ep: *mut fid_ep,
    addr: *const c_void,
    param: *const c_void,
    paramlen: size_t,
) -> c_int {
    guard("fi_connect", || {
        dispatch!(
            "fi_connect",
            ep,
            (*ep).cm,
            fi_ops_cm,
            connect(ep, addr, param, paramlen)
        )
    })
}

/// Accepts the connection request `ep` was opened for, returning
/// `paramlen` bytes of `param` to the peer.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_accept(
    ep: *mut fid_ep,
    param: *const c_void,
    paramlen: size_t,
) -> c_int {
    guard("fi_accept", || {
        dispatch!(
            "fi_accept",
            ep,
            (*ep).cm,
            fi_ops_cm,
            accept(ep, param, paramlen)
        )
    })
}

/// Rejects the connection request `handle` received on `pep`, returning
/// `paramlen` bytes of `param` to the peer.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `pep`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `pep` must be NULL or a live passive endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_reject(
    pep: *mut fid_pep,
    handle: fid_t,
    param: *const c_void,
    paramlen: size_t,
) -> c_int {
    guard("fi_reject", || {
        dispatch!(
            "fi_reject",
            pep,
            (*pep).cm,
            fi_ops_cm,
            reject(pep, handle, param, paramlen)
        )
    })
}

/// Shuts down the connection of `ep`; both sides see FI_SHUTDOWN.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS without the cm interface.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_shutdown(ep: *mut fid_ep, flags: u64) -> c_int {
    guard("fi_shutdown", || {
        dispatch!("fi_shutdown", ep, (*ep).cm, fi_ops_cm, shutdown(ep, flags))
    })
}

/// Joins `ep` to the multicast group (or, with FI_COLLECTIVE, collective
/// group) at `addr`; the join completes on the EQ and `*mc` is the group.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint cannot join groups.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_join(
    ep: *mut fid_ep,
    addr: *const c_void,
    flags: u64,
    mc: *mut *mut fid_mc,
    context: *mut c_void,
) -> c_int {
    guard("fi_join", || {
        dispatch!(
            "fi_join",
            ep,
            (*ep).cm,
            fi_ops_cm,
            join(ep, addr, flags, mc, context)
        )
    })
}

/// The address to send to the multicast group `mc`; FI_ADDR_NOTAVAIL (and a
/// warning) for a NULL `mc`.
///
/// # Safety
/// `mc` must be NULL or a live multicast group.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mc_addr(mc: *mut fid_mc) -> fi_addr_t {
    guard_or("fi_mc_addr", FI_ADDR_NOTAVAIL, || {
        nonnull(mc, "fi_mc_addr", "mc")?;
        // SAFETY: mc is non-NULL and, by contract, a live group.
        Ok(unsafe { (*mc).fi_addr })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::fake::{self, fake_fn, p, Case};
    use crate::error::Error;
    use std::mem::{size_of, zeroed};
    use std::ptr;

    fake_fn!(setname(fid: fid_t, a: *mut c_void, l: size_t) -> c_int);
    fake_fn!(getname(fid: fid_t, a: *mut c_void, l: *mut size_t) -> c_int);
    fake_fn!(getpeer(ep: *mut fid_ep, a: *mut c_void, l: *mut size_t) -> c_int);
    fake_fn!(connect(ep: *mut fid_ep, a: *const c_void, p: *const c_void, l: size_t) -> c_int);
    fake_fn!(listen(pep: *mut fid_pep) -> c_int);
    fake_fn!(accept(ep: *mut fid_ep, p: *const c_void, l: size_t) -> c_int);
    fake_fn!(reject(pep: *mut fid_pep, h: fid_t, p: *const c_void, l: size_t) -> c_int);
    fake_fn!(shutdown(ep: *mut fid_ep, f: u64) -> c_int);
    fake_fn!(join(ep: *mut fid_ep, a: *const c_void, f: u64, mc: *mut *mut fid_mc, c: *mut c_void) -> c_int);

    fn table(size: usize) -> fi_ops_cm {
        fi_ops_cm {
            size,
            setname: Some(setname),
            getname: Some(getname),
            getpeer: Some(getpeer),
            connect: Some(connect),
            listen: Some(listen),
            accept: Some(accept),
            reject: Some(reject),
            shutdown: Some(shutdown),
            join: Some(join),
        }
    }

    #[rustfmt::skip]
    const EP: &[Case<fid_ep>] = &[
        Case { slot: "setname", call: |e| unsafe { fi_setname(e.cast(), p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "getname", call: |e| unsafe { fi_getname(e.cast(), p(1), p(2)) as i64 }, args: &[1, 2] },
        Case { slot: "getpeer", call: |e| unsafe { fi_getpeer(e, p(1), p(2)) as i64 }, args: &[1, 2] },
        Case { slot: "connect", call: |e| unsafe { fi_connect(e, p(1), p(2), 3) as i64 }, args: &[1, 2, 3] },
        Case { slot: "accept", call: |e| unsafe { fi_accept(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "shutdown", call: |e| unsafe { fi_shutdown(e, 1) as i64 }, args: &[1] },
        Case { slot: "join", call: |e| unsafe { fi_join(e, p(1), 2, p(3), p(4)) as i64 }, args: &[1, 2, 3, 4] },
    ];

    #[rustfmt::skip]
    const PEP: &[Case<fid_pep>] = &[
        Case { slot: "getname", call: |e| unsafe { fi_getname(e.cast(), p(1), p(2)) as i64 }, args: &[1, 2] },
        Case { slot: "listen", call: |e| unsafe { fi_listen(e) as i64 }, args: &[] },
        Case { slot: "reject", call: |e| unsafe { fi_reject(e, p(1), p(2), 3) as i64 }, args: &[1, 2, 3] },
    ];

    /// Runs every case against endpoints whose `cm` table is `cm`.
    fn with_cm(cm: *mut fi_ops_cm, check: impl Fn(*mut fid_ep, *mut fid_pep)) {
        // SAFETY: all-zero is a valid value of these objects.
        let (mut ep, mut pep): (fid_ep, fid_pep) = unsafe { (zeroed(), zeroed()) };
        ep.cm = cm;
        pep.cm = cm;
        check(&mut ep, &mut pep);
    }

    #[test]
    fn each_call_reaches_its_slot_with_its_arguments() {
        let mut t = table(size_of::<fi_ops_cm>());
        with_cm(&mut t, |ep, pep| {
            fake::dispatches(ep, EP);
            fake::dispatches(pep, PEP);
        });
    }

    #[test]
    fn missing_slots_are_enosys_and_null_objects_einval() {
        let nosys = Error::NOSYS.code();
        let mut short = table(size_of::<size_t>());
        // SAFETY: all-zero is a valid table (every slot NULL).
        let mut empty: fi_ops_cm = unsafe { zeroed() };
        empty.size = size_of::<fi_ops_cm>();
        for cm in [&mut short as *mut fi_ops_cm, &mut empty, ptr::null_mut()] {
            with_cm(cm, |ep, pep| {
                fake::all_fail(ep, EP, nosys);
                fake::all_fail(pep, PEP, nosys);
            });
        }
        fake::all_fail(ptr::null_mut(), EP, Error::INVAL.code());
        fake::all_fail(ptr::null_mut(), PEP, Error::INVAL.code());
    }

    #[test]
    fn mc_addr_reads_the_group_address() {
        // SAFETY: all-zero is a valid group.
        let mut mc: fid_mc = unsafe { zeroed() };
        mc.fi_addr = 77;
        // SAFETY: a live group, then NULL.
        unsafe {
            assert_eq!(fi_mc_addr(&mut mc), 77);
            assert_eq!(fi_mc_addr(ptr::null_mut()), FI_ADDR_NOTAVAIL);
        }
    }
}
