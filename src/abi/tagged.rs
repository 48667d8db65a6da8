//! Mirror of `rdma/fi_tagged.h`: tag-matched messages.
//!
//! `FI_MPI_IGNORE_TAG`, `FI_MPI_IGNORE_PAYLOAD` and the `fi_tag_mpi()` helper
//! are emitted from `c/fi_tagged.h.top` so that they keep upstream's form.

use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::fi_addr_t;
use libc::{c_void, iovec, size_t, ssize_t};

/// `ignore` mask that matches any MPI tag (the low 32 bits).
/// cbindgen:ignore
pub const FI_MPI_IGNORE_TAG: u64 = u32::MAX as u64;
/// `ignore` mask that matches any MPI payload id (bits 32..40).
/// cbindgen:ignore
pub const FI_MPI_IGNORE_PAYLOAD: u64 = (u8::MAX as u64) << 32;

/// A tagged message for `fi_tsendmsg`/`fi_trecvmsg`: as `fi_msg`, plus the
/// `tag` and (for receives) the `ignore` mask of tag bits that need not match.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_tagged {
    pub msg_iov: *const iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
    pub addr: fi_addr_t,
    pub tag: u64,
    pub ignore: u64,
    pub context: *mut c_void,
    pub data: u64,
}

/// Tagged-message operations of an endpoint (`fid_ep.tagged`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_tagged {
    pub size: size_t,
    pub recv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: size_t,
            desc: *mut c_void,
            src_addr: fi_addr_t,
            tag: u64,
            ignore: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub recvv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: size_t,
            src_addr: fi_addr_t,
            tag: u64,
            ignore: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub recvmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> ssize_t,
    >,
    pub send: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
            tag: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub sendv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            iov: *const iovec,
            desc: *mut *mut c_void,
            count: size_t,
            dest_addr: fi_addr_t,
            tag: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub sendmsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> ssize_t,
    >,
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            dest_addr: fi_addr_t,
            tag: u64,
        ) -> ssize_t,
    >,
    pub senddata: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            desc: *mut c_void,
            data: u64,
            dest_addr: fi_addr_t,
            tag: u64,
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
            tag: u64,
        ) -> ssize_t,
    >,
}
