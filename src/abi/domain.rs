//! Mirror of `rdma/fi_domain.h`.
use crate::abi::fabric::fid;
#[repr(C)]
pub struct fid_domain {
    pub fid: fid,
}
