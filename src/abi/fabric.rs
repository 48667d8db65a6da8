//! Mirror of `rdma/fabric.h`.

use libc::{c_char, c_int, c_uint, c_void, size_t};

pub const FI_MAJOR_VERSION: u32 = 2;
pub const FI_MINOR_VERSION: u32 = 7;

pub const FI_MSG: u64 = 1u64 << 1;
pub const FI_MR_LOCAL: c_int = 1 << 2;

/// `enum fi_progress`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_progress {
    FI_PROGRESS_UNSPEC = 0,
    FI_PROGRESS_AUTO = 1,
    FI_PROGRESS_MANUAL = 2,
    FI_PROGRESS_CONTROL_UNIFIED = 3,
}
/// cbindgen:ignore
pub type fi_progress_raw = c_uint;

pub type fi_addr_t = u64;

#[repr(C)]
pub struct fi_ops {
    pub size: size_t,
    pub close: Option<unsafe extern "C" fn(fid: *mut fid) -> c_int>,
}

/// All fabric interface descriptors start with this structure.
#[repr(C)]
pub struct fid {
    pub fclass: size_t,
    pub context: *mut c_void,
    pub ops: *mut fi_ops,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_domain_attr_progress {
    pub data_progress: fi_progress_raw,
    pub progress: fi_progress_raw,
}

#[repr(C)]
pub struct fi_domain_attr {
    pub domain: *mut crate::abi::domain::fid_domain,
    pub name: *mut c_char,
    pub control_progress: fi_progress_raw,
    pub __anon_progress: __anon_fi_domain_attr_progress,
    pub mr_key_size: size_t,
}
