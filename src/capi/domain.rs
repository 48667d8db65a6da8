//! Exported forms of `rdma/fi_domain.h`'s inline API: domains, memory
//! regions and address vectors.
//!
//! Each function dispatches through the object's ops table exactly as
//! upstream's `static inline` does, so it works on any provider's objects.
//! Beyond upstream, a NULL object returns -FI_EINVAL and a missing (NULL,
//! too short, or empty) ops slot returns -FI_ENOSYS instead of crashing.

use crate::abi::domain::{
    fi_av_attr, fi_mr_attr, fi_mr_modify, fi_ops_av, fi_ops_domain, fi_ops_mr, fid_av, fid_domain,
    fid_mr,
};
use crate::abi::eq::{fi_cntr_attr, fi_cq_attr, fi_poll_attr, fi_wait_attr, fid_cntr, fid_cq};
use crate::abi::eq::{fid_poll, fid_wait};
use crate::abi::fabric::{
    fi_addr_t, fi_info, fi_mr_map_raw, fi_mr_raw_attr, fi_mr_xpu_desc, fi_ops, fi_ops_fabric, fid,
    fid_fabric, FI_ADDR_NOTAVAIL, FI_ENABLE, FI_GET_MR_XPU_DESC, FI_GET_RAW_MR, FI_KEY_NOTAVAIL,
    FI_MAP_RAW_MR, FI_REFRESH, FI_UNMAP_KEY,
};
use crate::abi::xpu::fid_xpu_ctx;
use crate::capi::{guard, guard_or, nonnull};
use crate::error::Result;
use libc::{c_char, c_int, c_void, iovec, size_t};
use std::ptr;

/// `fid->ops->control(fid, command, arg)`, or -FI_ENOSYS without that slot.
///
/// # Safety
/// `fid` must be non-NULL and point to a live object; `arg` must be what
/// `command` expects.
unsafe fn fid_control(fid: *mut fid, command: c_int, arg: *mut c_void) -> Result<c_int> {
    // SAFETY: fid is a live object by contract; its ops table, if not NULL,
    // is readable for `size` bytes.
    let f = unsafe { crate::op!((*fid).ops, fi_ops, control) }?;
    // SAFETY: the slot belongs to this object's provider.
    Ok(unsafe { f(fid, command, arg) })
}

/// Returns the hmem device identifier (`fi_mr_attr.device.ze`) for a Level
/// Zero driver and device: `driver_index << 16 | device_index`.
///
/// # Safety
/// None; the function only computes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_hmem_ze_device(driver_index: c_int, device_index: c_int) -> c_int {
    guard("fi_hmem_ze_device", || {
        Ok(driver_index.wrapping_shl(16) | device_index)
    })
}

/// Opens a resource domain of `fabric` described by `info`
/// (`fabric->ops->domain`). On success `*domain` holds the new domain,
/// which the caller closes with `fi_close()`. Returns 0 or a negative
/// FI_E* code (-FI_EINVAL for a NULL fabric, -FI_ENOSYS without the op).
///
/// # Safety
/// `fabric` must be NULL or point to a live fabric; the other pointers must
/// be valid for the provider's use.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_domain(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    domain: *mut *mut fid_domain,
    context: *mut c_void,
) -> c_int {
    guard("fi_domain", || {
        dispatch!(
            "fi_domain",
            fabric,
            (*fabric).ops,
            fi_ops_fabric,
            domain(fabric, info, domain, context)
        )
    })
}

/// As `fi_domain()`, with open `flags`. With `flags == 0` this is
/// `fi_domain()`; otherwise it needs the fabric's `domain2` op
/// (-FI_ENOSYS without it).
///
/// # Safety
/// As `fi_domain()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_domain2(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    domain: *mut *mut fid_domain,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    if flags == 0 {
        // SAFETY: same contract as ours.
        return unsafe { fi_domain(fabric, info, domain, context) };
    }
    guard("fi_domain2", || {
        dispatch!(
            "fi_domain2",
            fabric,
            (*fabric).ops,
            fi_ops_fabric,
            domain2(fabric, info, domain, flags, context)
        )
    })
}

/// Binds `fid` (an EQ, for asynchronous events) to `domain`
/// (`domain->fid.ops->bind`). Returns 0 or a negative FI_E* code.
///
/// # Safety
/// `domain` must be NULL or point to a live domain; `fid` to a live object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_domain_bind(
    domain: *mut fid_domain,
    fid: *mut fid,
    flags: u64,
) -> c_int {
    guard("fi_domain_bind", || {
        dispatch!(
            "fi_domain_bind",
            domain,
            (*domain).fid.ops,
            fi_ops,
            bind(&raw mut (*domain).fid, fid, flags)
        )
    })
}

/// Opens a completion queue on `domain` (`domain->ops->cq_open`). On
/// success `*cq` holds the CQ, closed with `fi_close()`.
///
/// # Safety
/// `domain` must be NULL or point to a live domain; `attr` and `cq` must be
/// valid for the provider's use.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cq_open(
    domain: *mut fid_domain,
    attr: *mut fi_cq_attr,
    cq: *mut *mut fid_cq,
    context: *mut c_void,
) -> c_int {
    guard("fi_cq_open", || {
        dispatch!(
            "fi_cq_open",
            domain,
            (*domain).ops,
            fi_ops_domain,
            cq_open(domain, attr, cq, context)
        )
    })
}

/// Opens a counter on `domain` (`domain->ops->cntr_open`). On success
/// `*cntr` holds the counter, closed with `fi_close()`.
///
/// # Safety
/// As `fi_cq_open()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_cntr_open(
    domain: *mut fid_domain,
    attr: *mut fi_cntr_attr,
    cntr: *mut *mut fid_cntr,
    context: *mut c_void,
) -> c_int {
    guard("fi_cntr_open", || {
        dispatch!(
            "fi_cntr_open",
            domain,
            (*domain).ops,
            fi_ops_domain,
            cntr_open(domain, attr, cntr, context)
        )
    })
}

/// Opens a wait set on `fabric` (`fabric->ops->wait_open`). Deprecated.
///
/// # Safety
/// `fabric` must be NULL or point to a live fabric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_wait_open(
    fabric: *mut fid_fabric,
    attr: *mut fi_wait_attr,
    waitset: *mut *mut fid_wait,
) -> c_int {
    guard("fi_wait_open", || {
        dispatch!(
            "fi_wait_open",
            fabric,
            (*fabric).ops,
            fi_ops_fabric,
            wait_open(fabric, attr, waitset)
        )
    })
}

/// Opens a poll set on `domain` (`domain->ops->poll_open`). Deprecated.
///
/// # Safety
/// `domain` must be NULL or point to a live domain.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_poll_open(
    domain: *mut fid_domain,
    attr: *mut fi_poll_attr,
    pollset: *mut *mut fid_poll,
) -> c_int {
    guard("fi_poll_open", || {
        dispatch!(
            "fi_poll_open",
            domain,
            (*domain).ops,
            fi_ops_domain,
            poll_open(domain, attr, pollset)
        )
    })
}

/// Registers `[buf, buf + len)` with `domain` (`domain->mr->reg`, passed
/// the domain's fid). On success `*mr` holds the region, released with
/// `fi_close()`. Returns 0 or a negative FI_E* code.
///
/// # Safety
/// `domain` must be NULL or point to a live domain; `mr` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_reg(
    domain: *mut fid_domain,
    buf: *const c_void,
    len: size_t,
    acs: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    guard("fi_mr_reg", || {
        dispatch!(
            "fi_mr_reg",
            domain,
            (*domain).mr,
            fi_ops_mr,
            reg(
                &raw mut (*domain).fid,
                buf,
                len,
                acs,
                offset,
                requested_key,
                flags,
                mr,
                context
            )
        )
    })
}

/// Registers the `count` ranges of `iov` as one region (`domain->mr->regv`).
/// Otherwise as `fi_mr_reg()`.
///
/// # Safety
/// As `fi_mr_reg()`; `iov` must hold `count` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_regv(
    domain: *mut fid_domain,
    iov: *const iovec,
    count: size_t,
    acs: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    guard("fi_mr_regv", || {
        dispatch!(
            "fi_mr_regv",
            domain,
            (*domain).mr,
            fi_ops_mr,
            regv(
                &raw mut (*domain).fid,
                iov,
                count,
                acs,
                offset,
                requested_key,
                flags,
                mr,
                context
            )
        )
    })
}

/// Registers the region that `attr` describes (`domain->mr->regattr`).
/// `attr` is only read during the call.
///
/// # Safety
/// As `fi_mr_reg()`; `attr` must be NULL or a valid `fi_mr_attr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_regattr(
    domain: *mut fid_domain,
    attr: *const fi_mr_attr,
    flags: u64,
    mr: *mut *mut fid_mr,
) -> c_int {
    guard("fi_mr_regattr", || {
        dispatch!(
            "fi_mr_regattr",
            domain,
            (*domain).mr,
            fi_ops_mr,
            regattr(&raw mut (*domain).fid, attr, flags, mr)
        )
    })
}

/// Returns the local descriptor of `mr` (`mr->mem_desc`), owned by the
/// region and valid until it is closed; NULL when `mr` is NULL.
///
/// # Safety
/// `mr` must be NULL or point to a live memory region.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_desc(mr: *mut fid_mr) -> *mut c_void {
    guard_or("fi_mr_desc", ptr::null_mut(), || {
        nonnull(mr, "fi_mr_desc", "mr")?;
        // SAFETY: mr is non-NULL and, by contract, live.
        Ok(unsafe { (*mr).mem_desc })
    })
}

/// Returns the remote key of `mr` (`mr->key`); FI_KEY_NOTAVAIL when `mr` is
/// NULL (or the provider uses raw keys, see `fi_mr_raw_attr()`).
///
/// # Safety
/// `mr` must be NULL or point to a live memory region.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_key(mr: *mut fid_mr) -> u64 {
    guard_or("fi_mr_key", FI_KEY_NOTAVAIL, || {
        nonnull(mr, "fi_mr_key", "mr")?;
        // SAFETY: mr is non-NULL and, by contract, live.
        Ok(unsafe { (*mr).key })
    })
}

/// Reads the raw remote key of `mr` into `raw_key` (room for `*key_size`
/// bytes) and its base address into `*base_addr`, through
/// `control(FI_GET_RAW_MR)`. On -FI_ETOOSMALL, `*key_size` holds the
/// size needed.
///
/// # Safety
/// `mr` must be NULL or point to a live memory region; the other pointers
/// must be valid for the provider's writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_raw_attr(
    mr: *mut fid_mr,
    base_addr: *mut u64,
    raw_key: *mut u8,
    key_size: *mut size_t,
    flags: u64,
) -> c_int {
    guard("fi_mr_raw_attr", || {
        nonnull(mr, "fi_mr_raw_attr", "mr")?;
        let mut attr = fi_mr_raw_attr {
            flags,
            base_addr,
            raw_key,
            key_size,
        };
        // SAFETY: mr is non-NULL and live; FI_GET_RAW_MR takes an
        // fi_mr_raw_attr, which outlives the call.
        unsafe { fid_control(&raw mut (*mr).fid, FI_GET_RAW_MR, (&raw mut attr).cast()) }
    })
}

/// Turns the raw key `raw_key[0..key_size]` of a peer's region, based at
/// `base_addr`, into a key usable with `domain`, stored in `*key`
/// (`control(FI_MAP_RAW_MR)`). Release it with `fi_mr_unmap_key()`.
///
/// # Safety
/// `domain` must be NULL or point to a live domain; `raw_key` must hold
/// `key_size` bytes and `key` be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_map_raw(
    domain: *mut fid_domain,
    base_addr: u64,
    raw_key: *mut u8,
    key_size: size_t,
    key: *mut u64,
    flags: u64,
) -> c_int {
    guard("fi_mr_map_raw", || {
        nonnull(domain, "fi_mr_map_raw", "domain")?;
        let mut map = fi_mr_map_raw {
            flags,
            base_addr,
            raw_key,
            key_size,
            key,
        };
        // SAFETY: domain is non-NULL and live; FI_MAP_RAW_MR takes an
        // fi_mr_map_raw, which outlives the call.
        unsafe { fid_control(&raw mut (*domain).fid, FI_MAP_RAW_MR, (&raw mut map).cast()) }
    })
}

/// Releases a key obtained from `fi_mr_map_raw()` (`control(FI_UNMAP_KEY)`).
///
/// # Safety
/// `domain` must be NULL or point to a live domain.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_unmap_key(domain: *mut fid_domain, key: u64) -> c_int {
    guard("fi_mr_unmap_key", || {
        nonnull(domain, "fi_mr_unmap_key", "domain")?;
        let mut key = key;
        // SAFETY: domain is non-NULL and live; FI_UNMAP_KEY takes a
        // uint64_t *, which outlives the call.
        unsafe { fid_control(&raw mut (*domain).fid, FI_UNMAP_KEY, (&raw mut key).cast()) }
    })
}

/// Associates `mr` with `bfid` (a counter or an endpoint)
/// (`mr->fid.ops->bind`).
///
/// # Safety
/// `mr` must be NULL or point to a live region; `bfid` to a live object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_bind(mr: *mut fid_mr, bfid: *mut fid, flags: u64) -> c_int {
    guard("fi_mr_bind", || {
        dispatch!(
            "fi_mr_bind",
            mr,
            (*mr).fid.ops,
            fi_ops,
            bind(&raw mut (*mr).fid, bfid, flags)
        )
    })
}

/// Updates the pages behind `mr` from the `count` ranges of `iov`
/// (`control(FI_REFRESH)` with an otherwise zeroed `fi_mr_modify`).
///
/// # Safety
/// `mr` must be NULL or point to a live region; `iov` must hold `count`
/// entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_refresh(
    mr: *mut fid_mr,
    iov: *const iovec,
    count: size_t,
    flags: u64,
) -> c_int {
    guard("fi_mr_refresh", || {
        nonnull(mr, "fi_mr_refresh", "mr")?;
        // SAFETY: every field of fi_mr_modify (integers, raw pointers,
        // unions of those) is valid when all bits are zero.
        let mut modify: fi_mr_modify = unsafe { std::mem::zeroed() };
        modify.flags = flags;
        modify.attr.__anon_mr_iov.mr_iov = iov;
        modify.attr.iov_count = count;
        // SAFETY: mr is non-NULL and live; FI_REFRESH takes an
        // fi_mr_modify, which outlives the call.
        unsafe { fid_control(&raw mut (*mr).fid, FI_REFRESH, (&raw mut modify).cast()) }
    })
}

/// Enables a region created disabled (FI_MR_RMA_EVENT), through
/// `control(FI_ENABLE)`.
///
/// # Safety
/// `mr` must be NULL or point to a live region.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_enable(mr: *mut fid_mr) -> c_int {
    guard("fi_mr_enable", || {
        dispatch!(
            "fi_mr_enable",
            mr,
            (*mr).fid.ops,
            fi_ops,
            control(&raw mut (*mr).fid, FI_ENABLE, ptr::null_mut())
        )
    })
}

/// Copies the XPU-usable descriptor of `mr` for XPU context `ctx` into `buf`
/// (room for `*len` bytes; `*len` becomes the size written, or the size
/// needed with -FI_ETOOSMALL), through `control(FI_GET_MR_XPU_DESC)`.
///
/// # Safety
/// `mr` must be NULL or point to a live region; `buf` and `len` must be
/// valid for the provider's use.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_mr_get_xpu_desc(
    mr: *mut fid_mr,
    buf: *mut c_void,
    len: *mut size_t,
    flags: u64,
    ctx: *mut fid_xpu_ctx,
) -> c_int {
    guard("fi_mr_get_xpu_desc", || {
        nonnull(mr, "fi_mr_get_xpu_desc", "mr")?;
        let mut desc = fi_mr_xpu_desc {
            buf,
            len,
            flags,
            ctx,
        };
        // SAFETY: mr is non-NULL and live; FI_GET_MR_XPU_DESC takes an
        // fi_mr_xpu_desc, which outlives the call.
        unsafe {
            fid_control(
                &raw mut (*mr).fid,
                FI_GET_MR_XPU_DESC,
                (&raw mut desc).cast(),
            )
        }
    })
}

/// Opens an address vector on `domain` (`domain->ops->av_open`). On
/// success `*av` holds it, closed with `fi_close()`.
///
/// # Safety
/// `domain` must be NULL or point to a live domain.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_open(
    domain: *mut fid_domain,
    attr: *mut fi_av_attr,
    av: *mut *mut fid_av,
    context: *mut c_void,
) -> c_int {
    guard("fi_av_open", || {
        dispatch!(
            "fi_av_open",
            domain,
            (*domain).ops,
            fi_ops_domain,
            av_open(domain, attr, av, context)
        )
    })
}

/// Binds `fid` (an EQ) to `av` (`av->fid.ops->bind`). Deprecated.
///
/// # Safety
/// `av` must be NULL or point to a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_bind(av: *mut fid_av, fid: *mut fid, flags: u64) -> c_int {
    guard("fi_av_bind", || {
        dispatch!(
            "fi_av_bind",
            av,
            (*av).fid.ops,
            fi_ops,
            bind(&raw mut (*av).fid, fid, flags)
        )
    })
}

/// Inserts `count` addresses from `addr` into `av`, writing their handles
/// to `fi_addr` (`av->ops->insert`). Returns the number inserted or a
/// negative FI_E* code.
///
/// # Safety
/// `av` must be NULL or point to a live AV; the buffers must hold `count`
/// entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_insert(
    av: *mut fid_av,
    addr: *const c_void,
    count: size_t,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard("fi_av_insert", || {
        dispatch!(
            "fi_av_insert",
            av,
            (*av).ops,
            fi_ops_av,
            insert(av, addr, count, fi_addr, flags, context)
        )
    })
}

/// Inserts the address of `node`/`service` into `av` (`av->ops->insertsvc`).
///
/// # Safety
/// As `fi_av_insert()`; `node` and `service` are NUL-terminated or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_insertsvc(
    av: *mut fid_av,
    node: *const c_char,
    service: *const c_char,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard("fi_av_insertsvc", || {
        dispatch!(
            "fi_av_insertsvc",
            av,
            (*av).ops,
            fi_ops_av,
            insertsvc(av, node, service, fi_addr, flags, context)
        )
    })
}

/// Inserts `nodecnt` x `svccnt` symmetric addresses starting at
/// `node`/`service` (`av->ops->insertsym`).
///
/// # Safety
/// As `fi_av_insertsvc()`; `fi_addr` must hold `nodecnt * svccnt` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_insertsym(
    av: *mut fid_av,
    node: *const c_char,
    nodecnt: size_t,
    service: *const c_char,
    svccnt: size_t,
    fi_addr: *mut fi_addr_t,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard("fi_av_insertsym", || {
        dispatch!(
            "fi_av_insertsym",
            av,
            (*av).ops,
            fi_ops_av,
            insertsym(av, node, nodecnt, service, svccnt, fi_addr, flags, context)
        )
    })
}

/// Removes `count` addresses from `av` (`av->ops->remove`).
///
/// # Safety
/// `av` must be NULL or point to a live AV; `fi_addr` must hold `count`
/// entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_remove(
    av: *mut fid_av,
    fi_addr: *mut fi_addr_t,
    count: size_t,
    flags: u64,
) -> c_int {
    guard("fi_av_remove", || {
        dispatch!(
            "fi_av_remove",
            av,
            (*av).ops,
            fi_ops_av,
            remove(av, fi_addr, count, flags)
        )
    })
}

/// Copies the address behind `fi_addr` into `addr` (room for `*addrlen`
/// bytes; `*addrlen` becomes its real size) (`av->ops->lookup`).
///
/// # Safety
/// `av` must be NULL or point to a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_lookup(
    av: *mut fid_av,
    fi_addr: fi_addr_t,
    addr: *mut c_void,
    addrlen: *mut size_t,
) -> c_int {
    guard("fi_av_lookup", || {
        dispatch!(
            "fi_av_lookup",
            av,
            (*av).ops,
            fi_ops_av,
            lookup(av, fi_addr, addr, addrlen)
        )
    })
}

/// Formats `addr` into `buf` (room for `*len` bytes) and returns `buf`
/// (`av->ops->straddr`); NULL when `av` is NULL or has no such op.
///
/// # Safety
/// `av` must be NULL or point to a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_straddr(
    av: *mut fid_av,
    addr: *const c_void,
    buf: *mut c_char,
    len: *mut size_t,
) -> *const c_char {
    guard_or("fi_av_straddr", ptr::null(), || {
        dispatch!(
            "fi_av_straddr",
            av,
            (*av).ops,
            fi_ops_av,
            straddr(av, addr, buf, len)
        )
    })
}

/// Inserts an authorization key into `av` (`av->ops->insert_auth_key`;
/// -FI_ENOSYS when the provider has none).
///
/// # Safety
/// `av` must be NULL or point to a live AV; `auth_key` must hold
/// `auth_key_size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_insert_auth_key(
    av: *mut fid_av,
    auth_key: *const c_void,
    auth_key_size: size_t,
    fi_addr: *mut fi_addr_t,
    flags: u64,
) -> c_int {
    guard("fi_av_insert_auth_key", || {
        dispatch!(
            "fi_av_insert_auth_key",
            av,
            (*av).ops,
            fi_ops_av,
            insert_auth_key(av, auth_key, auth_key_size, fi_addr, flags)
        )
    })
}

/// Copies the authorization key behind `addr` into `auth_key` (room for
/// `*auth_key_size` bytes) (`av->ops->lookup_auth_key`; -FI_ENOSYS when
/// the provider has none).
///
/// # Safety
/// `av` must be NULL or point to a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_lookup_auth_key(
    av: *mut fid_av,
    addr: fi_addr_t,
    auth_key: *mut c_void,
    auth_key_size: *mut size_t,
) -> c_int {
    guard("fi_av_lookup_auth_key", || {
        dispatch!(
            "fi_av_lookup_auth_key",
            av,
            (*av).ops,
            fi_ops_av,
            lookup_auth_key(av, addr, auth_key, auth_key_size)
        )
    })
}

/// Sets the user id reported for `fi_addr` (`av->ops->set_user_id`;
/// -FI_ENOSYS when the provider has none).
///
/// # Safety
/// `av` must be NULL or point to a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_set_user_id(
    av: *mut fid_av,
    fi_addr: fi_addr_t,
    user_id: fi_addr_t,
    flags: u64,
) -> c_int {
    guard("fi_av_set_user_id", || {
        dispatch!(
            "fi_av_set_user_id",
            av,
            (*av).ops,
            fi_ops_av,
            set_user_id(av, fi_addr, user_id, flags)
        )
    })
}

/// As `fi_av_lookup()` with `flags`; with FI_XPU and an XPU context `ctx`,
/// returns the raw address form that XPU uses (`av->ops->lookup2`;
/// -FI_ENOSYS when the provider has none).
///
/// # Safety
/// `av` must be NULL or point to a live AV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_av_lookup2(
    av: *mut fid_av,
    fi_addr: fi_addr_t,
    buf: *mut c_void,
    len: *mut size_t,
    flags: u64,
    ctx: *mut fid_xpu_ctx,
) -> c_int {
    guard("fi_av_lookup2", || {
        dispatch!(
            "fi_av_lookup2",
            av,
            (*av).ops,
            fi_ops_av,
            lookup2(av, fi_addr, buf, len, flags, ctx)
        )
    })
}

/// Returns `fi_addr` aimed at receive context `rx_index`, whose index sits
/// in the top `rx_ctx_bits` bits. With `rx_ctx_bits` outside 1..=64 no bits
/// are added.
///
/// # Safety
/// None; the function only computes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_rx_addr(
    fi_addr: fi_addr_t,
    rx_index: c_int,
    rx_ctx_bits: c_int,
) -> fi_addr_t {
    guard_or("fi_rx_addr", FI_ADDR_NOTAVAIL, || {
        // C converts the int to uint64_t by sign extension, as `as` does.
        let index = rx_index as u64;
        let high = u32::try_from(64 - i64::from(rx_ctx_bits))
            .ok()
            .filter(|&s| s < 64)
            .map_or(0, |s| index << s);
        Ok(high | fi_addr)
    })
}

/// Returns `fi_addr` with `group_id` in its upper 32 bits.
///
/// # Safety
/// None; the function only computes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_group_addr(fi_addr: fi_addr_t, group_id: u32) -> fi_addr_t {
    guard_or("fi_group_addr", FI_ADDR_NOTAVAIL, || {
        Ok((u64::from(group_id) << 32) | fi_addr)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::fabric::fi_ops_fabric;
    use crate::capi::fake::text::{calls, fake_ptr, n, p, record};
    use std::mem::{offset_of, size_of, zeroed};

    const ENOSYS: c_int = -libc::ENOSYS;
    const EINVAL: c_int = -libc::EINVAL;

    /// A domain, an MR and an AV whose ops tables record every call.
    struct Fake {
        fops: fi_ops,
        dops: fi_ops_domain,
        mops: fi_ops_mr,
        aops: fi_ops_av,
        domain: fid_domain,
        mr: fid_mr,
        av: fid_av,
    }

    impl Fake {
        /// A leaked fake, used only through raw pointers (it points into
        /// itself); release it with [`Fake::free`].
        fn new() -> *mut Fake {
            // SAFETY: all-zero is valid for these plain C structs (NULL
            // pointers, None slots).
            let f = Box::into_raw(Box::new(unsafe { zeroed::<Fake>() }));
            // SAFETY: f is a fresh, exclusively owned allocation.
            unsafe {
                (*f).fops.size = size_of::<fi_ops>();
                (*f).fops.bind = Some(fake_bind);
                (*f).fops.control = Some(fake_control);
                (*f).dops.size = size_of::<fi_ops_domain>();
                (*f).dops.cq_open = Some(fake_cq_open);
                (*f).dops.av_open = Some(fake_av_open);
                (*f).mops.size = size_of::<fi_ops_mr>();
                (*f).mops.reg = Some(fake_reg);
                (*f).mops.regattr = Some(fake_regattr);
                (*f).aops.size = size_of::<fi_ops_av>();
                (*f).aops.insert = Some(fake_insert);
                (*f).aops.lookup2 = Some(fake_lookup2);
                (*f).aops.straddr = Some(fake_straddr);
                (*f).domain.fid.ops = &raw mut (*f).fops;
                (*f).domain.ops = &raw mut (*f).dops;
                (*f).domain.mr = &raw mut (*f).mops;
                (*f).mr.fid.ops = &raw mut (*f).fops;
                (*f).mr.mem_desc = 0x1234 as *mut c_void;
                (*f).mr.key = 77;
                (*f).av.fid.ops = &raw mut (*f).fops;
                (*f).av.ops = &raw mut (*f).aops;
            }
            f
        }

        fn free(f: *mut Fake) {
            // SAFETY: f came from Fake::new and is not used afterwards.
            drop(unsafe { Box::from_raw(f) });
        }
    }

    unsafe extern "C" fn fake_bind(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int {
        record(format!("bind {:x} {:x} {flags}", p(fid), p(bfid)));
        11
    }

    unsafe extern "C" fn fake_control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
        // SAFETY: each command's argument type is fixed by the API.
        let what = unsafe {
            match command {
                FI_GET_RAW_MR => {
                    let a = &*(arg as *const fi_mr_raw_attr);
                    format!(
                        "raw {} {:x} {:x} {:x}",
                        a.flags,
                        p(a.base_addr),
                        p(a.raw_key),
                        p(a.key_size)
                    )
                }
                FI_MAP_RAW_MR => {
                    let a = &*(arg as *const fi_mr_map_raw);
                    format!(
                        "map {} {} {:x} {} {:x}",
                        a.flags,
                        a.base_addr,
                        p(a.raw_key),
                        a.key_size,
                        p(a.key)
                    )
                }
                FI_UNMAP_KEY => format!("unmap {}", *(arg as *const u64)),
                FI_REFRESH => {
                    let m = &*(arg as *const fi_mr_modify);
                    format!(
                        "refresh {} {:x} {} {} {}",
                        m.flags,
                        p(m.attr.__anon_mr_iov.mr_iov),
                        m.attr.iov_count,
                        m.attr.access,
                        m.attr.requested_key
                    )
                }
                FI_ENABLE => format!("enable {:x}", p(arg)),
                FI_GET_MR_XPU_DESC => {
                    let d = &*(arg as *const fi_mr_xpu_desc);
                    format!(
                        "xpu {:x} {:x} {} {:x}",
                        p(d.buf),
                        p(d.len),
                        d.flags,
                        p(d.ctx)
                    )
                }
                _ => format!("cmd {command}"),
            }
        };
        record(format!("control {:x} {what}", p(fid)));
        12
    }

    unsafe extern "C" fn fake_cq_open(
        domain: *mut fid_domain,
        attr: *mut fi_cq_attr,
        cq: *mut *mut fid_cq,
        context: *mut c_void,
    ) -> c_int {
        record(format!(
            "cq_open {:x} {:x} {:x} {:x}",
            p(domain),
            p(attr),
            p(cq),
            p(context)
        ));
        13
    }

    unsafe extern "C" fn fake_av_open(
        domain: *mut fid_domain,
        attr: *mut fi_av_attr,
        av: *mut *mut fid_av,
        context: *mut c_void,
    ) -> c_int {
        record(format!(
            "av_open {:x} {:x} {:x} {:x}",
            p(domain),
            p(attr),
            p(av),
            p(context)
        ));
        14
    }

    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn fake_reg(
        fid: *mut fid,
        buf: *const c_void,
        len: size_t,
        access: u64,
        offset: u64,
        requested_key: u64,
        flags: u64,
        mr: *mut *mut fid_mr,
        context: *mut c_void,
    ) -> c_int {
        record(format!(
            "reg {:x} {:x} {len} {access} {offset} {requested_key} {flags} {:x} {:x}",
            p(fid),
            p(buf),
            p(mr),
            p(context)
        ));
        15
    }

    unsafe extern "C" fn fake_regattr(
        fid: *mut fid,
        attr: *const fi_mr_attr,
        flags: u64,
        mr: *mut *mut fid_mr,
    ) -> c_int {
        record(format!(
            "regattr {:x} {:x} {flags} {:x}",
            p(fid),
            p(attr),
            p(mr)
        ));
        16
    }

    unsafe extern "C" fn fake_insert(
        av: *mut fid_av,
        addr: *const c_void,
        count: size_t,
        fi_addr: *mut fi_addr_t,
        flags: u64,
        context: *mut c_void,
    ) -> c_int {
        record(format!(
            "insert {:x} {:x} {count} {:x} {flags} {:x}",
            p(av),
            p(addr),
            p(fi_addr),
            p(context)
        ));
        1
    }

    unsafe extern "C" fn fake_lookup2(
        av: *mut fid_av,
        fi_addr: fi_addr_t,
        buf: *mut c_void,
        len: *mut size_t,
        flags: u64,
        ctx: *mut fid_xpu_ctx,
    ) -> c_int {
        record(format!(
            "lookup2 {:x} {fi_addr} {:x} {:x} {flags} {:x}",
            p(av),
            p(buf),
            p(len),
            p(ctx)
        ));
        17
    }

    unsafe extern "C" fn fake_straddr(
        _av: *mut fid_av,
        _addr: *const c_void,
        buf: *mut c_char,
        _len: *mut size_t,
    ) -> *const c_char {
        buf
    }

    unsafe extern "C" fn fake_domain(
        fabric: *mut fid_fabric,
        info: *mut fi_info,
        domain: *mut *mut fid_domain,
        context: *mut c_void,
    ) -> c_int {
        record(format!(
            "domain {:x} {:x} {:x} {:x}",
            p(fabric),
            p(info),
            p(domain),
            p(context)
        ));
        18
    }

    unsafe extern "C" fn fake_domain2(
        fabric: *mut fid_fabric,
        info: *mut fi_info,
        domain: *mut *mut fid_domain,
        flags: u64,
        context: *mut c_void,
    ) -> c_int {
        record(format!(
            "domain2 {:x} {:x} {:x} {flags} {:x}",
            p(fabric),
            p(info),
            p(domain),
            p(context)
        ));
        19
    }

    #[test]
    fn domain_ops_dispatch_with_arguments() {
        let f = Fake::new();
        let d = unsafe { &raw mut (*f).domain };
        let r = unsafe { fi_cq_open(d, fake_ptr(0x10), fake_ptr(0x20), fake_ptr(0x30)) };
        assert_eq!(r, 13);
        let r = unsafe { fi_av_open(d, fake_ptr(0x11), fake_ptr(0x21), fake_ptr(0x31)) };
        assert_eq!(r, 14);
        assert_eq!(
            calls(),
            [
                format!("cq_open {:x} 10 20 30", p(d)),
                format!("av_open {:x} 11 21 31", p(d)),
            ]
        );
        Fake::free(f);
    }

    #[test]
    fn mr_reg_passes_the_domain_fid() {
        let f = Fake::new();
        let d = unsafe { &raw mut (*f).domain };
        let fid = unsafe { &raw mut (*d).fid };
        let r = unsafe {
            fi_mr_reg(
                d,
                fake_ptr(0x40),
                64,
                3,
                5,
                7,
                9,
                fake_ptr(0x50),
                fake_ptr(0x60),
            )
        };
        assert_eq!(r, 15);
        let r = unsafe { fi_mr_regattr(d, fake_ptr(0x70), 2, fake_ptr(0x80)) };
        assert_eq!(r, 16);
        assert_eq!(
            calls(),
            [
                format!("reg {:x} 40 64 3 5 7 9 50 60", p(fid)),
                format!("regattr {:x} 70 2 80", p(fid)),
            ]
        );
        // No regv slot.
        let r = unsafe {
            fi_mr_regv(
                d,
                ptr::null(),
                0,
                0,
                0,
                0,
                0,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        assert_eq!(r, ENOSYS);
        Fake::free(f);
    }

    #[test]
    fn mr_fields_are_read_directly() {
        let f = Fake::new();
        let mr = unsafe { &raw mut (*f).mr };
        assert_eq!(unsafe { fi_mr_desc(mr) }, 0x1234 as *mut c_void);
        assert_eq!(unsafe { fi_mr_key(mr) }, 77);
        assert!(unsafe { fi_mr_desc(ptr::null_mut()) }.is_null());
        assert_eq!(unsafe { fi_mr_key(ptr::null_mut()) }, FI_KEY_NOTAVAIL);
        Fake::free(f);
    }

    #[test]
    fn mr_controls_build_their_arguments() {
        let f = Fake::new();
        let mr = unsafe { &raw mut (*f).mr };
        let mfid = p(unsafe { &raw const (*mr).fid });
        let d = unsafe { &raw mut (*f).domain };
        let dfid = p(unsafe { &raw const (*d).fid });
        let ctx: *mut fid_xpu_ctx = fake_ptr(0x99);

        assert_eq!(
            unsafe { fi_mr_raw_attr(mr, fake_ptr(0x1), fake_ptr(0x2), fake_ptr(0x3), 4) },
            12
        );
        assert_eq!(
            unsafe { fi_mr_map_raw(d, 0xabc, fake_ptr(0x5), 6, fake_ptr(0x7), 8) },
            12
        );
        assert_eq!(unsafe { fi_mr_unmap_key(d, 4242) }, 12);
        assert_eq!(unsafe { fi_mr_refresh(mr, fake_ptr(0x9), 2, 3) }, 12);
        assert_eq!(unsafe { fi_mr_enable(mr) }, 12);
        assert_eq!(
            unsafe { fi_mr_get_xpu_desc(mr, fake_ptr(0xa), fake_ptr(0xb), 5, ctx) },
            12
        );
        assert_eq!(unsafe { fi_mr_bind(mr, fake_ptr(0xc), 6) }, 11);
        assert_eq!(unsafe { fi_domain_bind(d, fake_ptr(0xd), 7) }, 11);
        assert_eq!(
            calls(),
            [
                format!("control {mfid:x} raw 4 1 2 3"),
                format!("control {dfid:x} map 8 2748 5 6 7"),
                format!("control {dfid:x} unmap 4242"),
                format!("control {mfid:x} refresh 3 9 2 0 0"),
                format!("control {mfid:x} enable 0"),
                format!("control {mfid:x} xpu a b 5 99"),
                format!("bind {mfid:x} c 6"),
                format!("bind {dfid:x} d 7"),
            ]
        );
        Fake::free(f);
    }

    #[test]
    fn av_ops_dispatch() {
        let f = Fake::new();
        let av = unsafe { &raw mut (*f).av };
        let r = unsafe { fi_av_insert(av, fake_ptr(0x1), 2, fake_ptr(0x3), 4, fake_ptr(0x5)) };
        assert_eq!(r, 1);
        let r = unsafe { fi_av_lookup2(av, 6, fake_ptr(0x7), fake_ptr(0x8), 9, fake_ptr(0xa)) };
        assert_eq!(r, 17);
        assert_eq!(
            calls(),
            [
                format!("insert {:x} 1 2 3 4 5", p(av)),
                format!("lookup2 {:x} 6 7 8 9 a", p(av)),
            ]
        );
        let mut buf = [0 as c_char; 4];
        let s = unsafe { fi_av_straddr(av, ptr::null(), buf.as_mut_ptr(), ptr::null_mut()) };
        assert_eq!(s, buf.as_ptr());
        // Slots the fake leaves empty.
        assert_eq!(unsafe { fi_av_remove(av, ptr::null_mut(), 0, 0) }, ENOSYS);
        assert_eq!(
            unsafe { fi_av_insert_auth_key(av, ptr::null(), 0, ptr::null_mut(), 0) },
            ENOSYS
        );
        Fake::free(f);
    }

    #[test]
    fn short_tables_give_enosys() {
        let f = Fake::new();
        // Tables that end before the slot, although the slot is set.
        // SAFETY: f is live and only used through raw pointers.
        unsafe {
            (*f).dops.size = offset_of!(fi_ops_domain, cq_open);
            (*f).mops.size = offset_of!(fi_ops_mr, reg);
            (*f).aops.size = offset_of!(fi_ops_av, lookup2);
            (*f).fops.size = offset_of!(fi_ops, control);
        }
        let d = unsafe { &raw mut (*f).domain };
        let mr = unsafe { &raw mut (*f).mr };
        let av = unsafe { &raw mut (*f).av };
        unsafe {
            assert_eq!(
                fi_cq_open(d, ptr::null_mut(), ptr::null_mut(), ptr::null_mut()),
                ENOSYS
            );
            assert_eq!(
                fi_mr_reg(
                    d,
                    ptr::null(),
                    0,
                    0,
                    0,
                    0,
                    0,
                    ptr::null_mut(),
                    ptr::null_mut()
                ),
                ENOSYS
            );
            assert_eq!(
                fi_av_lookup2(av, 0, ptr::null_mut(), ptr::null_mut(), 0, ptr::null_mut()),
                ENOSYS
            );
            assert_eq!(fi_mr_enable(mr), ENOSYS);
            // bind sits before control, so it still works.
            assert_eq!(fi_mr_bind(mr, ptr::null_mut(), 0), 11);
            // NULL tables.
            (*d).ops = ptr::null_mut();
            (*mr).fid.ops = ptr::null_mut();
            assert_eq!(
                fi_av_open(d, ptr::null_mut(), ptr::null_mut(), ptr::null_mut()),
                ENOSYS
            );
            assert_eq!(fi_mr_bind(mr, ptr::null_mut(), 0), ENOSYS);
        }
        calls();
        Fake::free(f);
    }

    #[test]
    fn null_objects_give_einval() {
        unsafe {
            assert_eq!(fi_domain(n(), n(), n(), n()), EINVAL);
            assert_eq!(fi_domain2(n(), n(), n(), 1, n()), EINVAL);
            assert_eq!(fi_domain_bind(n(), n(), 0), EINVAL);
            assert_eq!(fi_cq_open(n(), n(), n(), n()), EINVAL);
            assert_eq!(fi_cntr_open(n(), n(), n(), n()), EINVAL);
            assert_eq!(fi_wait_open(n(), n(), n()), EINVAL);
            assert_eq!(fi_poll_open(n(), n(), n()), EINVAL);
            assert_eq!(fi_mr_reg(n(), ptr::null(), 0, 0, 0, 0, 0, n(), n()), EINVAL);
            assert_eq!(
                fi_mr_regv(n(), ptr::null(), 0, 0, 0, 0, 0, n(), n()),
                EINVAL
            );
            assert_eq!(fi_mr_regattr(n(), ptr::null(), 0, n()), EINVAL);
            assert_eq!(fi_mr_raw_attr(n(), n(), n(), n(), 0), EINVAL);
            assert_eq!(fi_mr_map_raw(n(), 0, n(), 0, n(), 0), EINVAL);
            assert_eq!(fi_mr_unmap_key(n(), 0), EINVAL);
            assert_eq!(fi_mr_bind(n(), n(), 0), EINVAL);
            assert_eq!(fi_mr_refresh(n(), ptr::null(), 0, 0), EINVAL);
            assert_eq!(fi_mr_enable(n()), EINVAL);
            assert_eq!(fi_mr_get_xpu_desc(n(), n(), n(), 0, n()), EINVAL);
            assert_eq!(fi_av_open(n(), n(), n(), n()), EINVAL);
            assert_eq!(fi_av_bind(n(), n(), 0), EINVAL);
            assert_eq!(fi_av_insert(n(), ptr::null(), 0, n(), 0, n()), EINVAL);
            assert_eq!(
                fi_av_insertsvc(n(), ptr::null(), ptr::null(), n(), 0, n()),
                EINVAL
            );
            assert_eq!(
                fi_av_insertsym(n(), ptr::null(), 0, ptr::null(), 0, n(), 0, n()),
                EINVAL
            );
            assert_eq!(fi_av_remove(n(), n(), 0, 0), EINVAL);
            assert_eq!(fi_av_lookup(n(), 0, n(), n()), EINVAL);
            assert!(fi_av_straddr(n(), ptr::null(), n(), n()).is_null());
            assert_eq!(fi_av_insert_auth_key(n(), ptr::null(), 0, n(), 0), EINVAL);
            assert_eq!(fi_av_lookup_auth_key(n(), 0, n(), n()), EINVAL);
            assert_eq!(fi_av_set_user_id(n(), 0, 0, 0), EINVAL);
            assert_eq!(fi_av_lookup2(n(), 0, n(), n(), 0, n()), EINVAL);
        }
    }

    #[test]
    fn fabric_domain_and_domain2() {
        // SAFETY: all-zero is a valid empty table and fabric.
        let mut ops: fi_ops_fabric = unsafe { zeroed() };
        ops.size = size_of::<fi_ops_fabric>();
        ops.domain = Some(fake_domain);
        let mut fabric: fid_fabric = unsafe { zeroed() };
        fabric.ops = &raw mut ops;
        let fab = &raw mut fabric;
        unsafe {
            assert_eq!(fi_domain(fab, fake_ptr(1), fake_ptr(2), fake_ptr(3)), 18);
            // flags == 0 is plain fi_domain.
            assert_eq!(
                fi_domain2(fab, fake_ptr(1), fake_ptr(2), 0, fake_ptr(3)),
                18
            );
            // Otherwise domain2 is needed.
            assert_eq!(
                fi_domain2(fab, fake_ptr(1), fake_ptr(2), 5, fake_ptr(3)),
                ENOSYS
            );
            (*fab).ops.as_mut().unwrap().domain2 = Some(fake_domain2);
            assert_eq!(
                fi_domain2(fab, fake_ptr(1), fake_ptr(2), 5, fake_ptr(3)),
                19
            );
            assert_eq!(fi_wait_open(fab, ptr::null_mut(), ptr::null_mut()), ENOSYS);
        }
        let f = p(fab);
        assert_eq!(
            calls(),
            [
                format!("domain {f:x} 1 2 3"),
                format!("domain {f:x} 1 2 3"),
                format!("domain2 {f:x} 1 2 5 3"),
            ]
        );
    }

    #[test]
    fn address_arithmetic() {
        unsafe {
            assert_eq!(fi_hmem_ze_device(2, 3), (2 << 16) | 3);
            assert_eq!(fi_group_addr(5, 7), (7u64 << 32) | 5);
            assert_eq!(fi_rx_addr(5, 3, 8), (3u64 << 56) | 5);
            assert_eq!(fi_rx_addr(5, 1, 64), 1 | 5);
            // A negative index is sign-extended, as C converts it.
            assert_eq!(fi_rx_addr(0, -1, 4), 0xf000_0000_0000_0000);
            // No receive-context bits: the address is unchanged.
            assert_eq!(fi_rx_addr(5, 3, 0), 5);
            assert_eq!(fi_rx_addr(5, 3, 65), 5);
        }
    }
}
