//! Mirror of `rdma/fi_collective.h`: address-vector sets and collective
//! operations.
//!
//! `enum fi_collective_op` and `struct fi_av_set_attr` live in
//! `rdma/fi_domain.h` upstream and so in [`crate::abi::domain`].

// The ops-table slots are C function-pointer types spelled out as C has
// them; a Rust `type` alias would be exported as a typedef upstream lacks.
#![allow(clippy::type_complexity)]

use crate::abi::atomic::fi_atomic_attr;
use crate::abi::domain::{fi_collective_op_raw, fi_datatype_raw, fi_op_raw};
use crate::abi::endpoint::fid_ep;
use crate::abi::fabric::{fi_addr_t, fi_ioc, fid};
use libc::{c_int, c_void, size_t, ssize_t};

/// Operations of an AV set (`fid_av_set.ops`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av_set {
    pub size: size_t,
    pub set_union:
        Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    pub intersect:
        Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    pub diff: Option<unsafe extern "C" fn(dst: *mut fid_av_set, src: *const fid_av_set) -> c_int>,
    pub insert: Option<unsafe extern "C" fn(set: *mut fid_av_set, addr: fi_addr_t) -> c_int>,
    pub remove: Option<unsafe extern "C" fn(set: *mut fid_av_set, addr: fi_addr_t) -> c_int>,
    pub addr:
        Option<unsafe extern "C" fn(set: *mut fid_av_set, coll_addr: *mut fi_addr_t) -> c_int>,
}

/// A subset of an address vector's peers, opened with `fi_av_set` and
/// closed with `fi_close`; the member list of a collective group.
#[repr(C)]
pub struct fid_av_set {
    pub fid: fid,
    pub ops: *mut fi_ops_av_set,
}

/// What `fi_query_collective` reports, or is asked about: the reduction
/// `op` and `datatype`, the datatype's limits, the largest group and the
/// mode bits the provider needs.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_collective_attr {
    pub op: fi_op_raw,
    pub datatype: fi_datatype_raw,
    pub datatype_attr: fi_atomic_attr,
    pub max_members: size_t,
    pub mode: u64,
}

/// The `addr` argument `fi_join_collective` passes to `fi_join` (with
/// FI_COLLECTIVE set): the member set and the group address it derives from.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_collective_addr {
    pub set: *const fid_av_set,
    pub coll_addr: fi_addr_t,
}

/// A collective request for the `msg` slot: operands, group and root
/// addresses, which collective `coll` with its `datatype` and `op`, and the
/// completion `context`. The caller owns the arrays.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg_collective {
    pub msg_iov: *const fi_ioc,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
    pub coll_addr: fi_addr_t,
    pub root_addr: fi_addr_t,
    pub coll: fi_collective_op_raw,
    pub datatype: fi_datatype_raw,
    pub op: fi_op_raw,
    pub context: *mut c_void,
}

/// Collective operations of an endpoint (`fid_ep.collective`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_collective {
    pub size: size_t,
    pub barrier: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            coll_addr: fi_addr_t,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub broadcast: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            count: size_t,
            desc: *mut c_void,
            coll_addr: fi_addr_t,
            root_addr: fi_addr_t,
            datatype: fi_datatype_raw,
            flags: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub alltoall: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub allreduce: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub allgather: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub reduce_scatter: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub reduce: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub scatter: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub gather: Option<
        unsafe extern "C" fn(
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
        ) -> ssize_t,
    >,
    pub msg: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            msg: *const fi_msg_collective,
            resultv: *mut fi_ioc,
            result_desc: *mut *mut c_void,
            result_count: size_t,
            flags: u64,
        ) -> ssize_t,
    >,
    pub barrier2: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            coll_addr: fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> ssize_t,
    >,
}
