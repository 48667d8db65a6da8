//! Exported forms of the `rdma/fi_endpoint.h` inline API: endpoint creation,
//! binding, control, options, and the message calls. Each one forwards to
//! the same ops-table slot as upstream's inline, so it works on any
//! provider's objects.
//!
//! Every call returns -FI_EINVAL (and logs) for a NULL object and
//! -FI_ENOSYS when the object's table is NULL, too short for the slot, or
//! has the slot unset; otherwise it returns what the provider returned.

use crate::abi::domain::{fi_ops_domain, fid_domain};
use crate::abi::endpoint::{fi_msg, fi_ops_ep, fi_ops_msg, fid_ep, fid_pep, fid_stx};
use crate::abi::fabric::{
    fi_addr_t, fi_info, fi_ops, fi_ops_fabric, fi_rx_attr, fi_tx_attr, fid, fid_fabric, fid_t,
    FI_ENABLE,
};
use crate::abi::xpu::fid_xpu_ep;
use crate::capi::fabric::fi_alias;
use crate::capi::{guard, guard_ssize, nonnull};
use libc::{c_int, c_void, iovec, size_t, ssize_t};
use std::ptr;

/// Opens a passive (listening) endpoint on `fabric` for `info`; on success
/// `*pep` holds it (close with fi_close).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fabric`,
/// -FI_ENOSYS if the fabric has no passive endpoints.
///
/// # Safety
/// `fabric` must be NULL or a live fabric; the other pointers are passed to
/// the provider as they are.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_passive_ep(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    pep: *mut *mut fid_pep,
    context: *mut c_void,
) -> c_int {
    guard("fi_passive_ep", || {
        dispatch!(
            "fi_passive_ep",
            fabric,
            (*fabric).ops,
            fi_ops_fabric,
            passive_ep(fabric, info, pep, context)
        )
    })
}

/// Opens an active endpoint on `domain` for `info`; on success `*ep` holds
/// it (close with fi_close).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain cannot open endpoints.
///
/// # Safety
/// `domain` must be NULL or a live domain; the other pointers are passed to
/// the provider as they are.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_endpoint(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    guard("fi_endpoint", || {
        dispatch!(
            "fi_endpoint",
            domain,
            (*domain).ops,
            fi_ops_domain,
            endpoint(domain, info, ep, context)
        )
    })
}

/// As fi_endpoint, with open `flags`; `flags == 0` is exactly fi_endpoint.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain has no flagged open.
///
/// # Safety
/// As fi_endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_endpoint2(
    domain: *mut fid_domain,
    info: *mut fi_info,
    ep: *mut *mut fid_ep,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard("fi_endpoint2", || {
        if flags == 0 {
            // SAFETY: same contract as ours.
            return Ok(unsafe { fi_endpoint(domain, info, ep, context) });
        }
        dispatch!(
            "fi_endpoint2",
            domain,
            (*domain).ops,
            fi_ops_domain,
            endpoint2(domain, info, ep, flags, context)
        )
    })
}

/// Opens a scalable endpoint (one address, many transmit and receive
/// contexts) on `domain`; on success `*sep` holds it.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain has no scalable endpoints.
///
/// # Safety
/// As fi_endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_scalable_ep(
    domain: *mut fid_domain,
    info: *mut fi_info,
    sep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    guard("fi_scalable_ep", || {
        dispatch!(
            "fi_scalable_ep",
            domain,
            (*domain).ops,
            fi_ops_domain,
            scalable_ep(domain, info, sep, context)
        )
    })
}

/// Binds a CQ, counter, EQ, AV, MR or shared context `bfid` to `ep`;
/// `flags` select which events go where (FI_TRANSMIT, FI_RECV, ...).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint has no bind operation.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; `bfid` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_ep_bind(ep: *mut fid_ep, bfid: *mut fid, flags: u64) -> c_int {
    guard("fi_ep_bind", || {
        dispatch!(
            "fi_ep_bind",
            ep,
            (*ep).fid.ops,
            fi_ops,
            bind(ptr::addr_of_mut!((*ep).fid), bfid, flags)
        )
    })
}

/// Binds an EQ (or other resource) `bfid` to the passive endpoint `pep`.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `pep`,
/// -FI_ENOSYS if it has no bind operation.
///
/// # Safety
/// `pep` must be NULL or a live passive endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_pep_bind(pep: *mut fid_pep, bfid: *mut fid, flags: u64) -> c_int {
    guard("fi_pep_bind", || {
        dispatch!(
            "fi_pep_bind",
            pep,
            (*pep).fid.ops,
            fi_ops,
            bind(ptr::addr_of_mut!((*pep).fid), bfid, flags)
        )
    })
}

/// Binds an AV (or other resource) `bfid` to the scalable endpoint `sep`.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `sep`,
/// -FI_ENOSYS if it has no bind operation.
///
/// # Safety
/// `sep` must be NULL or a live scalable endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_scalable_ep_bind(
    sep: *mut fid_ep,
    bfid: *mut fid,
    flags: u64,
) -> c_int {
    guard("fi_scalable_ep_bind", || {
        dispatch!(
            "fi_scalable_ep_bind",
            sep,
            (*sep).fid.ops,
            fi_ops,
            bind(ptr::addr_of_mut!((*sep).fid), bfid, flags)
        )
    })
}

/// Enables `ep` for data transfers (its control operation FI_ENABLE).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint has no control operation.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_enable(ep: *mut fid_ep) -> c_int {
    guard("fi_enable", || {
        dispatch!(
            "fi_enable",
            ep,
            (*ep).fid.ops,
            fi_ops,
            control(ptr::addr_of_mut!((*ep).fid), FI_ENABLE, ptr::null_mut())
        )
    })
}

/// Cancels the outstanding operation posted with `context` on the endpoint
/// `fid`; the operation completes with FI_ECANCELED.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS if the endpoint cannot cancel.
///
/// # Safety
/// `fid` must be NULL or the `fid` of a live endpoint (`fid_ep`, `fid_pep`
/// or `fid_stx`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cancel(fid: fid_t, context: *mut c_void) -> ssize_t {
    let ep = fid as *mut fid_ep;
    guard_ssize("fi_cancel", || {
        dispatch!("fi_cancel", ep, (*ep).ops, fi_ops_ep, cancel(fid, context))
    })
}

/// Sets endpoint option `optname` at `level` (FI_OPT_ENDPOINT) from the
/// `optlen` bytes at `optval`.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS if the endpoint has no options; the provider answers
/// -FI_ENOPROTOOPT for an option it does not know.
///
/// # Safety
/// `fid` must be NULL or the `fid` of a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_setopt(
    fid: fid_t,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: size_t,
) -> c_int {
    let ep = fid as *mut fid_ep;
    guard("fi_setopt", || {
        dispatch!(
            "fi_setopt",
            ep,
            (*ep).ops,
            fi_ops_ep,
            setopt(fid, level, optname, optval, optlen)
        )
    })
}

/// Reads endpoint option `optname` at `level` into `optval`; `*optlen` is
/// the buffer size on input and the value's size on output.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS if the endpoint has no options.
///
/// # Safety
/// `fid` must be NULL or the `fid` of a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_getopt(
    fid: fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut size_t,
) -> c_int {
    let ep = fid as *mut fid_ep;
    guard("fi_getopt", || {
        dispatch!(
            "fi_getopt",
            ep,
            (*ep).ops,
            fi_ops_ep,
            getopt(fid, level, optname, optval, optlen)
        )
    })
}

/// Creates an alias of `ep` whose data transfers use the operation `flags`
/// (fi_alias on the endpoint's fid); on success `*alias_ep` holds it (close
/// with fi_close).
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep` or
/// `alias_ep`, -FI_ENOSYS if the endpoint has no control operation.
/// `*alias_ep` is written only on success.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; `alias_ep` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_ep_alias(
    ep: *mut fid_ep,
    alias_ep: *mut *mut fid_ep,
    flags: u64,
) -> c_int {
    guard("fi_ep_alias", || {
        nonnull(ep, "fi_ep_alias", "ep")?;
        nonnull(alias_ep, "fi_ep_alias", "alias_ep")?;
        let mut alias: *mut fid = ptr::null_mut();
        // SAFETY: ep is non-NULL and live by contract; `alias` outlives the
        // call.
        let ret = unsafe { fi_alias(ptr::addr_of_mut!((*ep).fid), &mut alias, flags) };
        if ret == 0 {
            // SAFETY: alias_ep is non-NULL and writable by contract.
            unsafe { *alias_ep = alias.cast::<fid_ep>() };
        }
        Ok(ret)
    })
}

/// Opens transmit context `idx` of the scalable endpoint `ep`; on success
/// `*tx_ep` holds it.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint has no transmit contexts.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tx_context(
    ep: *mut fid_ep,
    idx: c_int,
    attr: *mut fi_tx_attr,
    tx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    guard("fi_tx_context", || {
        dispatch!(
            "fi_tx_context",
            ep,
            (*ep).ops,
            fi_ops_ep,
            tx_ctx(ep, idx, attr, tx_ep, context)
        )
    })
}

/// Opens receive context `idx` of the scalable endpoint `ep`; on success
/// `*rx_ep` holds it.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint has no receive contexts.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_rx_context(
    ep: *mut fid_ep,
    idx: c_int,
    attr: *mut fi_rx_attr,
    rx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    guard("fi_rx_context", || {
        dispatch!(
            "fi_rx_context",
            ep,
            (*ep).ops,
            fi_ops_ep,
            rx_ctx(ep, idx, attr, rx_ep, context)
        )
    })
}

/// Deprecated: a lower bound on the receives `ep` accepts before -FI_EAGAIN.
///
/// Returns the count or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint does not report it.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_rx_size_left(ep: *mut fid_ep) -> ssize_t {
    guard_ssize("fi_rx_size_left", || {
        dispatch!(
            "fi_rx_size_left",
            ep,
            (*ep).ops,
            fi_ops_ep,
            rx_size_left(ep)
        )
    })
}

/// Deprecated: a lower bound on the transmits `ep` accepts before
/// -FI_EAGAIN.
///
/// Returns the count or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint does not report it.
///
/// # Safety
/// `ep` must be NULL or a live endpoint.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tx_size_left(ep: *mut fid_ep) -> ssize_t {
    guard_ssize("fi_tx_size_left", || {
        dispatch!(
            "fi_tx_size_left",
            ep,
            (*ep).ops,
            fi_ops_ep,
            tx_size_left(ep)
        )
    })
}

/// Opens a shared transmit context on `domain`; on success `*stx` holds it.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain has no shared contexts.
///
/// # Safety
/// `domain` must be NULL or a live domain.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_stx_context(
    domain: *mut fid_domain,
    attr: *mut fi_tx_attr,
    stx: *mut *mut fid_stx,
    context: *mut c_void,
) -> c_int {
    guard("fi_stx_context", || {
        dispatch!(
            "fi_stx_context",
            domain,
            (*domain).ops,
            fi_ops_domain,
            stx_ctx(domain, attr, stx, context)
        )
    })
}

/// Opens a shared receive context on `domain`; on success `*rx_ep` holds it.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `domain`,
/// -FI_ENOSYS if the domain has no shared contexts.
///
/// # Safety
/// `domain` must be NULL or a live domain.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_srx_context(
    domain: *mut fid_domain,
    attr: *mut fi_rx_attr,
    rx_ep: *mut *mut fid_ep,
    context: *mut c_void,
) -> c_int {
    guard("fi_srx_context", || {
        dispatch!(
            "fi_srx_context",
            domain,
            (*domain).ops,
            fi_ops_domain,
            srx_ctx(domain, attr, rx_ep, context)
        )
    })
}

/// Posts a receive of up to `len` bytes into `buf` (descriptor `desc`) from
/// `src_addr` (FI_ADDR_UNSPEC: any peer); completes with `context`.
///
/// Returns 0 or a negative FI_E* code (-FI_EAGAIN: retry later):
/// -FI_EINVAL for a NULL `ep`, -FI_ENOSYS without the msg interface.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; the buffers must stay valid until
/// the operation completes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_recv(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src_addr: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_recv", || {
        dispatch!(
            "fi_recv",
            ep,
            (*ep).msg,
            fi_ops_msg,
            recv(ep, buf, len, desc, src_addr, context)
        )
    })
}

/// As fi_recv, into the `count` entries of `iov` (one descriptor each).
///
/// Returns as fi_recv.
///
/// # Safety
/// As fi_recv.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_recvv(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    src_addr: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_recvv", || {
        dispatch!(
            "fi_recvv",
            ep,
            (*ep).msg,
            fi_ops_msg,
            recvv(ep, iov, desc, count, src_addr, context)
        )
    })
}

/// Posts the receive described by `msg` with operation `flags`.
///
/// Returns as fi_recv.
///
/// # Safety
/// As fi_recv; `msg` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_recvmsg(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> ssize_t {
    guard_ssize("fi_recvmsg", || {
        dispatch!(
            "fi_recvmsg",
            ep,
            (*ep).msg,
            fi_ops_msg,
            recvmsg(ep, msg, flags)
        )
    })
}

/// Sends `len` bytes from `buf` (descriptor `desc`) to `dest_addr`;
/// completes with `context`.
///
/// Returns 0 or a negative FI_E* code (-FI_EAGAIN: retry later):
/// -FI_EINVAL for a NULL `ep`, -FI_ENOSYS without the msg interface.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; the buffers must stay valid until
/// the operation completes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_send(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest_addr: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_send", || {
        dispatch!(
            "fi_send",
            ep,
            (*ep).msg,
            fi_ops_msg,
            send(ep, buf, len, desc, dest_addr, context)
        )
    })
}

/// As fi_send, from the `count` entries of `iov` (one descriptor each).
///
/// Returns as fi_send.
///
/// # Safety
/// As fi_send.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_sendv(
    ep: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest_addr: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_sendv", || {
        dispatch!(
            "fi_sendv",
            ep,
            (*ep).msg,
            fi_ops_msg,
            sendv(ep, iov, desc, count, dest_addr, context)
        )
    })
}

/// Sends the message described by `msg` with operation `flags`.
///
/// Returns as fi_send.
///
/// # Safety
/// As fi_send; `msg` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_sendmsg(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> ssize_t {
    guard_ssize("fi_sendmsg", || {
        dispatch!(
            "fi_sendmsg",
            ep,
            (*ep).msg,
            fi_ops_msg,
            sendmsg(ep, msg, flags)
        )
    })
}

/// Sends `len` bytes from `buf` to `dest_addr` without a completion; `buf`
/// may be reused as soon as the call returns.
///
/// Returns as fi_send.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; `buf` readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_inject(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest_addr: fi_addr_t,
) -> ssize_t {
    guard_ssize("fi_inject", || {
        dispatch!(
            "fi_inject",
            ep,
            (*ep).msg,
            fi_ops_msg,
            inject(ep, buf, len, dest_addr)
        )
    })
}

/// As fi_send, carrying `data` to the peer's completion (FI_REMOTE_CQ_DATA).
///
/// Returns as fi_send.
///
/// # Safety
/// As fi_send.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_senddata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    data: u64,
    dest_addr: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    guard_ssize("fi_senddata", || {
        dispatch!(
            "fi_senddata",
            ep,
            (*ep).msg,
            fi_ops_msg,
            senddata(ep, buf, len, desc, data, dest_addr, context)
        )
    })
}

/// As fi_inject, carrying `data` to the peer's completion.
///
/// Returns as fi_send.
///
/// # Safety
/// As fi_inject.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_injectdata(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    data: u64,
    dest_addr: fi_addr_t,
) -> ssize_t {
    guard_ssize("fi_injectdata", || {
        dispatch!(
            "fi_injectdata",
            ep,
            (*ep).msg,
            fi_ops_msg,
            injectdata(ep, buf, len, data, dest_addr)
        )
    })
}

/// Fills the caller-owned `*xpu_ep` with the handle an accelerator uses to
/// drive the enabled XPU endpoint `ep` (opened with FI_XPU).
/// Since 2.7.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `ep`,
/// -FI_ENOSYS if the endpoint cannot be exported.
///
/// # Safety
/// `ep` must be NULL or a live endpoint; `xpu_ep` is passed to the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_ep_export_xpu(
    ep: *mut fid_ep,
    flags: u64,
    xpu_ep: *mut fid_xpu_ep,
) -> c_int {
    guard("fi_ep_export_xpu", || {
        dispatch!(
            "fi_ep_export_xpu",
            ep,
            (*ep).ops,
            fi_ops_ep,
            export_xpu(ep, flags, xpu_ep)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::fabric::{fi_alias as fi_alias_arg, FI_ALIAS};
    use crate::capi::fake::{self, fake_fn, p, Case};
    use crate::error::Error;
    use std::mem::{size_of, zeroed};

    fake_fn!(bind(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int);
    fake_fn!(control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int);
    fake_fn!(passive_ep(f: *mut fid_fabric, i: *mut fi_info, pep: *mut *mut fid_pep, c: *mut c_void) -> c_int);
    fake_fn!(endpoint(d: *mut fid_domain, i: *mut fi_info, ep: *mut *mut fid_ep, c: *mut c_void) -> c_int);
    fake_fn!(endpoint2(d: *mut fid_domain, i: *mut fi_info, ep: *mut *mut fid_ep, f: u64, c: *mut c_void) -> c_int);
    fake_fn!(scalable_ep(d: *mut fid_domain, i: *mut fi_info, ep: *mut *mut fid_ep, c: *mut c_void) -> c_int);
    fake_fn!(stx_ctx(d: *mut fid_domain, a: *mut fi_tx_attr, s: *mut *mut fid_stx, c: *mut c_void) -> c_int);
    fake_fn!(srx_ctx(d: *mut fid_domain, a: *mut fi_rx_attr, s: *mut *mut fid_ep, c: *mut c_void) -> c_int);
    fake_fn!(cancel(fid: fid_t, c: *mut c_void) -> ssize_t);
    fake_fn!(getopt(fid: fid_t, l: c_int, n: c_int, v: *mut c_void, len: *mut size_t) -> c_int);
    fake_fn!(setopt(fid: fid_t, l: c_int, n: c_int, v: *const c_void, len: size_t) -> c_int);
    fake_fn!(tx_ctx(ep: *mut fid_ep, i: c_int, a: *mut fi_tx_attr, t: *mut *mut fid_ep, c: *mut c_void) -> c_int);
    fake_fn!(rx_ctx(ep: *mut fid_ep, i: c_int, a: *mut fi_rx_attr, t: *mut *mut fid_ep, c: *mut c_void) -> c_int);
    fake_fn!(rx_size_left(ep: *mut fid_ep) -> ssize_t);
    fake_fn!(tx_size_left(ep: *mut fid_ep) -> ssize_t);
    fake_fn!(export_xpu(ep: *mut fid_ep, f: u64, x: *mut fid_xpu_ep) -> c_int);
    fake_fn!(recv(ep: *mut fid_ep, b: *mut c_void, l: size_t, d: *mut c_void, a: fi_addr_t, c: *mut c_void) -> ssize_t);
    fake_fn!(recvv(ep: *mut fid_ep, v: *const iovec, d: *mut *mut c_void, n: size_t, a: fi_addr_t, c: *mut c_void) -> ssize_t);
    fake_fn!(recvmsg(ep: *mut fid_ep, m: *const fi_msg, f: u64) -> ssize_t);
    fake_fn!(send(ep: *mut fid_ep, b: *const c_void, l: size_t, d: *mut c_void, a: fi_addr_t, c: *mut c_void) -> ssize_t);
    fake_fn!(sendv(ep: *mut fid_ep, v: *const iovec, d: *mut *mut c_void, n: size_t, a: fi_addr_t, c: *mut c_void) -> ssize_t);
    fake_fn!(sendmsg(ep: *mut fid_ep, m: *const fi_msg, f: u64) -> ssize_t);
    fake_fn!(inject(ep: *mut fid_ep, b: *const c_void, l: size_t, a: fi_addr_t) -> ssize_t);
    fake_fn!(senddata(ep: *mut fid_ep, b: *const c_void, l: size_t, d: *mut c_void, x: u64, a: fi_addr_t, c: *mut c_void) -> ssize_t);
    fake_fn!(injectdata(ep: *mut fid_ep, b: *const c_void, l: size_t, x: u64, a: fi_addr_t) -> ssize_t);

    /// Ops tables, full (`size` covers every slot) or short (`size` covers
    /// none), with every slot set.
    struct Tables {
        fid: fi_ops,
        fabric: fi_ops_fabric,
        domain: fi_ops_domain,
        ep: fi_ops_ep,
        msg: fi_ops_msg,
    }

    fn tables(full: bool) -> Box<Tables> {
        let size = |n: usize| if full { n } else { size_of::<size_t>() };
        // SAFETY: all-zero is a valid value of these tables (NULL slots).
        let mut t: Box<Tables> = Box::new(unsafe { zeroed() });
        t.fid.size = size(size_of::<fi_ops>());
        t.fid.bind = Some(bind);
        t.fid.control = Some(control);
        t.fabric.size = size(size_of::<fi_ops_fabric>());
        t.fabric.passive_ep = Some(passive_ep);
        t.domain.size = size(size_of::<fi_ops_domain>());
        t.domain.endpoint = Some(endpoint);
        t.domain.endpoint2 = Some(endpoint2);
        t.domain.scalable_ep = Some(scalable_ep);
        t.domain.stx_ctx = Some(stx_ctx);
        t.domain.srx_ctx = Some(srx_ctx);
        t.ep = fi_ops_ep {
            size: size(size_of::<fi_ops_ep>()),
            cancel: Some(cancel),
            getopt: Some(getopt),
            setopt: Some(setopt),
            tx_ctx: Some(tx_ctx),
            rx_ctx: Some(rx_ctx),
            rx_size_left: Some(rx_size_left),
            tx_size_left: Some(tx_size_left),
            export_xpu: Some(export_xpu),
        };
        t.msg = fi_ops_msg {
            size: size(size_of::<fi_ops_msg>()),
            recv: Some(recv),
            recvv: Some(recvv),
            recvmsg: Some(recvmsg),
            send: Some(send),
            sendv: Some(sendv),
            sendmsg: Some(sendmsg),
            inject: Some(inject),
            senddata: Some(senddata),
            injectdata: Some(injectdata),
        };
        t
    }

    /// Objects over one set of tables.
    struct Objects {
        fabric: fid_fabric,
        domain: fid_domain,
        ep: fid_ep,
        pep: fid_pep,
    }

    fn objects(t: &mut Tables) -> Box<Objects> {
        // SAFETY: all-zero is a valid value of these objects.
        let mut o: Box<Objects> = Box::new(unsafe { zeroed() });
        o.fabric.fid.ops = &mut t.fid;
        o.fabric.ops = &mut t.fabric;
        o.domain.fid.ops = &mut t.fid;
        o.domain.ops = &mut t.domain;
        o.ep.fid.ops = &mut t.fid;
        o.ep.ops = &mut t.ep;
        o.ep.msg = &mut t.msg;
        o.pep.fid.ops = &mut t.fid;
        o.pep.ops = &mut t.ep;
        o
    }

    #[rustfmt::skip]
    const FABRIC: &[Case<fid_fabric>] = &[Case {
        slot: "passive_ep",
        call: |f| unsafe { fi_passive_ep(f, p(1), p(2), p(3)) as i64 },
        args: &[1, 2, 3],
    }];

    #[rustfmt::skip]
    const DOMAIN: &[Case<fid_domain>] = &[
        Case { slot: "endpoint", call: |d| unsafe { fi_endpoint(d, p(1), p(2), p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "endpoint", call: |d| unsafe { fi_endpoint2(d, p(1), p(2), 0, p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "endpoint2", call: |d| unsafe { fi_endpoint2(d, p(1), p(2), 4, p(3)) as i64 }, args: &[1, 2, 4, 3] },
        Case { slot: "scalable_ep", call: |d| unsafe { fi_scalable_ep(d, p(1), p(2), p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "stx_ctx", call: |d| unsafe { fi_stx_context(d, p(1), p(2), p(3)) as i64 }, args: &[1, 2, 3] },
        Case { slot: "srx_ctx", call: |d| unsafe { fi_srx_context(d, p(1), p(2), p(3)) as i64 }, args: &[1, 2, 3] },
    ];

    #[rustfmt::skip]
    const PEP: &[Case<fid_pep>] = &[
        Case { slot: "bind", call: |e| unsafe { fi_pep_bind(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "cancel", call: |e| unsafe { fi_cancel(e.cast(), p(1)) as i64 }, args: &[1] },
    ];

    #[rustfmt::skip]
    const EP: &[Case<fid_ep>] = &[
        Case { slot: "bind", call: |e| unsafe { fi_ep_bind(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "bind", call: |e| unsafe { fi_scalable_ep_bind(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "control", call: |e| unsafe { fi_enable(e) as i64 }, args: &[FI_ENABLE as u64, 0] },
        Case { slot: "cancel", call: |e| unsafe { fi_cancel(e.cast(), p(1)) as i64 }, args: &[1] },
        Case { slot: "setopt", call: |e| unsafe { fi_setopt(e.cast(), 1, 2, p(3), 4) as i64 }, args: &[1, 2, 3, 4] },
        Case { slot: "getopt", call: |e| unsafe { fi_getopt(e.cast(), 1, 2, p(3), p(4)) as i64 }, args: &[1, 2, 3, 4] },
        Case { slot: "tx_ctx", call: |e| unsafe { fi_tx_context(e, 1, p(2), p(3), p(4)) as i64 }, args: &[1, 2, 3, 4] },
        Case { slot: "rx_ctx", call: |e| unsafe { fi_rx_context(e, 1, p(2), p(3), p(4)) as i64 }, args: &[1, 2, 3, 4] },
        Case { slot: "rx_size_left", call: |e| unsafe { fi_rx_size_left(e) as i64 }, args: &[] },
        Case { slot: "tx_size_left", call: |e| unsafe { fi_tx_size_left(e) as i64 }, args: &[] },
        Case { slot: "export_xpu", call: |e| unsafe { fi_ep_export_xpu(e, 1, p(2)) as i64 }, args: &[1, 2] },
        Case { slot: "recv", call: |e| unsafe { fi_recv(e, p(1), 2, p(3), 4, p(5)) as i64 }, args: &[1, 2, 3, 4, 5] },
        Case { slot: "recvv", call: |e| unsafe { fi_recvv(e, p(1), p(2), 3, 4, p(5)) as i64 }, args: &[1, 2, 3, 4, 5] },
        Case { slot: "recvmsg", call: |e| unsafe { fi_recvmsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "send", call: |e| unsafe { fi_send(e, p(1), 2, p(3), 4, p(5)) as i64 }, args: &[1, 2, 3, 4, 5] },
        Case { slot: "sendv", call: |e| unsafe { fi_sendv(e, p(1), p(2), 3, 4, p(5)) as i64 }, args: &[1, 2, 3, 4, 5] },
        Case { slot: "sendmsg", call: |e| unsafe { fi_sendmsg(e, p(1), 2) as i64 }, args: &[1, 2] },
        Case { slot: "inject", call: |e| unsafe { fi_inject(e, p(1), 2, 3) as i64 }, args: &[1, 2, 3] },
        Case { slot: "senddata", call: |e| unsafe { fi_senddata(e, p(1), 2, p(3), 4, 5, p(6)) as i64 }, args: &[1, 2, 3, 4, 5, 6] },
        Case { slot: "injectdata", call: |e| unsafe { fi_injectdata(e, p(1), 2, 3, 4) as i64 }, args: &[1, 2, 3, 4] },
    ];

    fn all_fail(o: &mut Objects, code: i32) {
        fake::all_fail(&mut o.fabric, FABRIC, code);
        fake::all_fail(&mut o.domain, DOMAIN, code);
        fake::all_fail(&mut o.pep, PEP, code);
        fake::all_fail(&mut o.ep, EP, code);
    }

    #[test]
    fn each_call_reaches_its_slot_with_its_arguments() {
        let mut t = tables(true);
        let o = &mut *objects(&mut t);
        fake::dispatches(&mut o.fabric, FABRIC);
        fake::dispatches(&mut o.domain, DOMAIN);
        fake::dispatches(&mut o.pep, PEP);
        fake::dispatches(&mut o.ep, EP);
    }

    #[test]
    fn missing_slots_are_enosys_and_null_objects_einval() {
        let nosys = Error::NOSYS.code();
        // Tables too short for any slot.
        let mut t = tables(false);
        all_fail(&mut objects(&mut t), nosys);
        // Full-size tables with every slot NULL.
        let mut t = tables(true);
        let sizes = (
            t.fid.size,
            t.fabric.size,
            t.domain.size,
            t.ep.size,
            t.msg.size,
        );
        // SAFETY: all-zero is a valid value of the tables.
        *t = unsafe { zeroed() };
        (
            t.fid.size,
            t.fabric.size,
            t.domain.size,
            t.ep.size,
            t.msg.size,
        ) = sizes;
        all_fail(&mut objects(&mut t), nosys);
        // NULL tables.
        // SAFETY: all-zero objects have NULL tables.
        all_fail(&mut Box::new(unsafe { zeroed() }), nosys);
        let inval = Error::INVAL.code();
        fake::all_fail(ptr::null_mut(), FABRIC, inval);
        fake::all_fail(ptr::null_mut(), DOMAIN, inval);
        fake::all_fail(ptr::null_mut(), PEP, inval);
        fake::all_fail(ptr::null_mut(), EP, inval);
    }

    /// A control slot that answers FI_ALIAS with the alias `p(9)`.
    unsafe extern "C" fn alias_control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
        if command != FI_ALIAS {
            return Error::INVAL.code();
        }
        // SAFETY: fi_ep_alias passes a live struct fi_alias.
        let alias = unsafe { &mut *arg.cast::<fi_alias_arg>() };
        if alias.flags == 7 {
            // SAFETY: alias.fid points at the caller's output slot.
            unsafe { *alias.fid = p(9) };
            fake::record("control", vec![fid as u64]);
            0
        } else {
            -99
        }
    }

    #[test]
    fn ep_alias_writes_the_alias_only_on_success() {
        let mut t = tables(true);
        t.fid.control = Some(alias_control);
        let mut o = objects(&mut t);
        let mut out: *mut fid_ep = ptr::null_mut();
        // SAFETY: live fake objects; out is writable.
        unsafe {
            assert_eq!(fi_ep_alias(&mut o.ep, &mut out, 7), 0);
            assert_eq!(out, p(9));
            out = ptr::null_mut();
            assert_eq!(fi_ep_alias(&mut o.ep, &mut out, 1), -99);
            assert!(out.is_null());
            assert_eq!(
                fi_ep_alias(&mut o.ep, ptr::null_mut(), 7),
                Error::INVAL.code()
            );
            assert_eq!(
                fi_ep_alias(ptr::null_mut(), &mut out, 7),
                Error::INVAL.code()
            );
        }
    }
}
