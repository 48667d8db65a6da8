//! The data-transfer calls of an oxshm endpoint (fi_msg(3), fi_tagged(3),
//! fi_rma(3), fi_atomic(3)): argument checks, FI_MR_LOCAL descriptors,
//! default operation flags, then one [`Post`] or [`RecvPost`] for the
//! transport (`xfer.rs`).
//!
//! Errors returned by the call itself (nothing was posted, nothing will
//! complete): -FI_EOPBADSTATE before `fi_enable`, -FI_EOPNOTSUPP for a
//! capability the endpoint was not opened with (FI_MULTI_RECV included), an
//! unsupported atomic combination, or FI_PEEK/FI_CLAIM/FI_DISCARD on an
//! untagged receive; -FI_EINVAL for a flag combination fi_tagged(3) rules
//! out (FI_DISCARD alone, FI_MULTI_RECV with any of them, FI_CLAIM without
//! a context or without a claim on it), an empty multi-receive buffer,
//! more iovs than `iov_limit`, more than one remote iov (`rma_iov_limit` is
//! 1), local and remote lengths that differ, an fi_addr not in the AV, or a
//! bad descriptor under FI_MR_LOCAL (-FI_EACCES when its registration lacks
//! the local right), -FI_EMSGSIZE past `max_msg_size` or the inject size,
//! -FI_EAGAIN when the transmit queue or the peer's inbox is full. Anything
//! the target refuses completes in error instead (fi_cq_readerr).

use super::atomics;
use super::ep::{Ep, Limit};
use super::object::{from_fid, slot, slot_ssize};
use super::xfer::{OpKind, Post, Quick, RecvPost, ATOMIC_MAX, IOV_MAX};
use crate::abi::atomic::*;
use crate::abi::domain::{fi_datatype_raw, fi_op_raw};
use crate::abi::endpoint::*;
use crate::abi::fabric::*;
use crate::abi::rma::*;
use crate::abi::tagged::*;
use crate::error::{Error, Result};
use crate::mr::Access;
use libc::{c_int, c_void, iovec, size_t, ssize_t};
use std::mem::MaybeUninit;

fn ep_of<'a>(e: *mut fid_ep) -> Result<&'a Ep> {
    // SAFETY: from_fid checks the object.
    unsafe { from_fid::<Ep>(e as *const fid) }
}

#[inline(always)]
fn need_cap(ep: &Ep, cap: u64, name: &str, call: &str) -> Result<()> {
    if ep.caps & cap == 0 {
        return Err(missing_cap(name, call));
    }
    Ok(())
}

/// [`need_cap`]'s refusal, out of line: the name and call are only looked
/// at here.
#[cold]
#[inline(never)]
fn missing_cap(name: &str, call: &str) -> Error {
    crate::ox_log!(
        Warn,
        EpData,
        super::NAME,
        "{call}: the endpoint was opened without {name}"
    );
    Error::OPNOTSUPP
}

/// An operation's local buffers as (address, length) pairs, at most
/// `iov_limit` of them, filled in place by [`locals`] where the call uses
/// them. It is never returned by value: the caller's copy of a freshly
/// filled list read it with 16-byte loads right after `locals` wrote it
/// with 8-byte stores, a store-forwarding stall on every send and receive
/// (a tenth of the small-message path's time, `perf annotate`).
pub(super) struct Locals {
    n: usize,
    a: [MaybeUninit<(u64, u64)>; IOV_MAX],
}

impl Locals {
    #[inline]
    pub(super) const fn new() -> Locals {
        Locals {
            n: 0,
            a: [MaybeUninit::uninit(); IOV_MAX],
        }
    }

    /// Adds a pair; the caller has checked the count against IOV_MAX.
    #[inline]
    fn push(&mut self, x: (u64, u64)) {
        self.a[self.n].write(x);
        self.n += 1;
    }
}

impl std::ops::Deref for Locals {
    type Target = [(u64, u64)];
    #[inline]
    fn deref(&self) -> &[(u64, u64)] {
        // SAFETY: the first n pairs were written by push (n <= IOV_MAX,
        // which indexing checks).
        unsafe { std::slice::from_raw_parts(self.a.as_ptr() as *const (u64, u64), self.n) }
    }
}

/// Local buffers as (address, length) into `v`, checked against
/// `iov_limit` and, under FI_MR_LOCAL, against their descriptors.
///
/// # Safety
/// `iov` holds `count` iovecs (when count > 0); `desc` is NULL or holds
/// `count` descriptors.
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn locals(
    ep: &Ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    access: Access,
    check_desc: bool,
    call: &str,
    v: &mut Locals,
) -> Result<()> {
    if count > IOV_MAX {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: {count} iovs, iov_limit is {IOV_MAX}"
        );
        return Err(Error::INVAL);
    }
    if count > 0 && iov.is_null() {
        crate::ox_log!(Warn, EpData, super::NAME, "{call}: iov is NULL");
        return Err(Error::INVAL);
    }
    for i in 0..count {
        // SAFETY: per the function contract.
        let io = unsafe { *iov.add(i) };
        let d = if desc.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: per the function contract.
            unsafe { *desc.add(i) }
        };
        push_local(ep, v, io.iov_base, io.iov_len, d, access, check_desc, call)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn push_local(
    ep: &Ep,
    v: &mut Locals,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    access: Access,
    check_desc: bool,
    call: &str,
) -> Result<()> {
    if len > 0 && buf.is_null() {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: a buffer of {len} bytes is NULL"
        );
        return Err(Error::INVAL);
    }
    let d = ep.domain();
    if check_desc && d.mr_mode & FI_MR_LOCAL != 0 {
        // SAFETY: desc is NULL or what fi_mr_desc returned.
        unsafe { super::mr::check_local_desc(d, desc, buf as u64, len as u64, access, call) }?;
    }
    v.push((buf as u64, len as u64));
    Ok(())
}

fn total(v: &[(u64, u64)]) -> u64 {
    v.iter().map(|x| x.1).sum()
}

fn check_size(ep: &Ep, len: u64, max: Limit, inject: Option<Limit>, call: &str) -> Result<()> {
    let m = ep.limit(max) as u64;
    if len > m {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: {len} bytes exceed max_msg_size {m}"
        );
        return Err(Error::MSGSIZE);
    }
    if let Some(l) = inject {
        let m = ep.limit(l) as u64;
        if len > m {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{call}: {len} bytes exceed inject_size {m}"
            );
            return Err(Error::MSGSIZE);
        }
    }
    Ok(())
}

fn post(ep: &Ep, p: &Post<'_>, call: &str) -> Result<isize> {
    ep.xfer(call)?.post(p).map(|()| 0).inspect_err(|e| {
        if *e != Error::AGAIN {
            crate::ox_log!(Warn, EpData, super::NAME, "{call}: {e}");
        }
    })
}

mod atomic;
mod msg;
mod rma;
pub(super) use atomic::*;
pub(super) use msg::*;
pub(super) use rma::*;

#[cfg(test)]
mod tests;
