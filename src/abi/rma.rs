//! Mirror of `rdma/fi_rma.h`: one-sided reads and writes.

use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::fi_addr_t;
use libc::{c_void, iovec, size_t, ssize_t};

/// A remote byte range: target address (or offset, per the domain's
/// FI_MR_VIRT_ADDR mode), length and the registration's key.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fi_rma_iov {
    pub addr: u64,
    pub len: size_t,
    pub key: u64,
}

/// A remote array for atomics: as `fi_rma_iov`, but `count` is in elements
/// of the operation's datatype.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fi_rma_ioc {
    pub addr: u64,
    pub count: size_t,
    pub key: u64,
}

/// An RMA request for `fi_readmsg`/`fi_writemsg`: local `msg_iov` (with a
/// descriptor each in `desc`), the peer `addr`, the remote ranges, the
/// completion `context` and the remote CQ `data`. The caller owns the arrays.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_rma {
    pub msg_iov: *const iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_iov,
    pub rma_iov_count: size_t,
    pub context: *mut c_void,
    pub data: u64,
}

/// RMA operations of an endpoint (`fid_ep.rma`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_rma {
    pub size: size_t,
    pub read: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: size_t,
            desc: *mut c_void,
            src_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub readv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: size_t,
            src_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub readmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> ssize_t,
    >,
    pub write: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub writev: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: size_t,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub writemsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> ssize_t,
    >,
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
        ) -> ssize_t,
    >,
    pub writedata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            desc: *mut c_void,
            data: u64,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub injectdata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            data: u64,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
        ) -> ssize_t,
    >,
}
