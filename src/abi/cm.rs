//! Mirror of `rdma/fi_cm.h`: connection management and multicast.

use crate::abi::endpoint::{fid_ep, fid_pep};
use crate::abi::fabric::{fi_addr_t, fid, fid_t};
use libc::{c_int, c_void, size_t};

/// A multicast group joined with `fi_join`; `fi_addr` is the address to send
/// to the group. Closed with `fi_close`.
#[repr(C)]
pub struct fid_mc {
    pub fid: fid,
    pub fi_addr: fi_addr_t,
}

/// Connection-management operations of an endpoint (`fid_ep.cm`,
/// `fid_pep.cm`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cm {
    pub size: size_t,
    pub setname:
        Option<unsafe extern "C" fn(fid: fid_t, addr: *mut c_void, addrlen: size_t) -> c_int>,
    pub getname:
        Option<unsafe extern "C" fn(fid: fid_t, addr: *mut c_void, addrlen: *mut size_t) -> c_int>,
    pub getpeer: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, addr: *mut c_void, addrlen: *mut size_t) -> c_int,
    >,
    pub connect: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            addr: *const c_void,
            param: *const c_void,
            paramlen: size_t,
        ) -> c_int,
    >,
    pub listen: Option<unsafe extern "C" fn(pep: *mut fid_pep) -> c_int>,
    pub accept: Option<
        unsafe extern "C" fn(ep: *mut fid_ep, param: *const c_void, paramlen: size_t) -> c_int,
    >,
    pub reject: Option<
        unsafe extern "C" fn(
            pep: *mut fid_pep,
            handle: fid_t,
            param: *const c_void,
            paramlen: size_t,
        ) -> c_int,
    >,
    pub shutdown: Option<unsafe extern "C" fn(ep: *mut fid_ep, flags: u64) -> c_int>,
    pub join: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            addr: *const c_void,
            flags: u64,
            mc: *mut *mut fid_mc,
            context: *mut c_void,
        ) -> c_int,
    >,
}
