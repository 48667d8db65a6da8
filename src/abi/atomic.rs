//! Mirror of `rdma/fi_atomic.h`: remote atomic operations.
//!
//! `enum fi_datatype` and `enum fi_op` live in `rdma/fi_domain.h` upstream
//! and so in [`crate::abi::domain`].

// The ops-table slots are C function-pointer types spelled out as C has
// them; a Rust `type` alias would be exported as a typedef upstream lacks.
#![allow(clippy::type_complexity)]

use crate::abi::domain::{fi_datatype_raw, fi_op_raw};
use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::{fi_addr_t, fi_ioc};
use crate::abi::rma::fi_rma_ioc;
use libc::{c_int, c_void, size_t, ssize_t};

/// Operation flag: the atomic returns the target's previous value.
pub const FI_FETCH_ATOMIC: u64 = 1u64 << 58;
/// Operation flag: the atomic compares before it writes.
pub const FI_COMPARE_ATOMIC: u64 = 1u64 << 59;

/// What `fi_query_atomic` reports for one (datatype, op) pair: the largest
/// element `count` one operation may carry and the element `size` in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fi_atomic_attr {
    pub count: size_t,
    pub size: size_t,
}

/// An atomic request for the `*msg` calls: local operand arrays
/// (`msg_iov`, a descriptor each in `desc`), the peer `addr`, the remote
/// arrays, the `datatype` and `op`, the completion `context` and remote CQ
/// `data`. The caller owns the arrays.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_atomic {
    pub msg_iov: *const fi_ioc,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_ioc,
    pub rma_iov_count: size_t,
    pub datatype: fi_datatype_raw,
    pub op: fi_op_raw,
    pub context: *mut c_void,
    pub data: u64,
}

/// Result buffers of a fetching atomic (used by triggered operations).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_fetch {
    pub msg_iov: *mut fi_ioc,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
}

/// Compare operands of a compare-and-swap style atomic (used by triggered
/// operations).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_compare {
    pub msg_iov: *const fi_ioc,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
}

/// Atomic operations of an endpoint (`fid_ep.atomic`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_atomic {
    pub size: size_t,
    pub write: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub writev: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub writemsg: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg_atomic, flags: u64) -> ssize_t,
    >,
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            count: size_t,
            dest_addr: fi_addr_t,
            addr: u64,
            key: u64,
            datatype: fi_datatype_raw,
            op: fi_op_raw,
        ) -> ssize_t,
    >,
    pub readwrite: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub readwritev: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub readwritemsg: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            msg: *const fi_msg_atomic,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: size_t,
            flags: u64,
        ) -> ssize_t,
    >,
    pub compwrite: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub compwritev: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub compwritemsg: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            msg: *const fi_msg_atomic,
            comparev: *const fi_ioc,
            compare_desc: *mut *mut c_void,
            compare_count: size_t,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: size_t,
            flags: u64,
        ) -> ssize_t,
    >,
    pub writevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype_raw,
            op: fi_op_raw,
            count: *mut size_t,
        ) -> c_int,
    >,
    pub readwritevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype_raw,
            op: fi_op_raw,
            count: *mut size_t,
        ) -> c_int,
    >,
    pub compwritevalid: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            datatype: fi_datatype_raw,
            op: fi_op_raw,
            count: *mut size_t,
        ) -> c_int,
    >,
}
