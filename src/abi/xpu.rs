//! Mirror of `rdma/fi_xpu.h` (host side; new in libfabric 2.7).
//!
//! An XPU context ties endpoints, CQs and counters to one accelerator so that
//! kernels running on it can drive the data path while the host keeps the
//! control path. The device-side header (`fi_xpu_device.h`) is not mirrored.

use crate::abi::domain::fi_hmem_iface_raw;
use crate::abi::fabric::fid;
use libc::{c_int, c_uint, c_void, size_t};

/// `alloc` callback flag: the memory must be exportable as a DMA-BUF fd.
/// Since 2.7.
pub const FI_XPU_ALLOC_DMABUF: u64 = 1u64 << 0;
/// `import` callback flag: the host address is PCIe BAR (I/O) memory.
/// Since 2.7.
pub const FI_XPU_IMPORT_IOMEMORY: u64 = 1u64 << 0;
/// `import` callback flag: the returned address must be usable from kernels.
/// Since 2.7.
pub const FI_XPU_IMPORT_DEVICEMAP: u64 = 1u64 << 1;

/// Memory callbacks the application lends to an XPU context. The provider
/// calls them to allocate, map and release accelerator memory on its behalf.
/// `size` must be `sizeof(struct fi_xpu_ops)`; slots past `size` are unused.
/// Since 2.7.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_xpu_ops {
    pub size: size_t,
    /// Allocates `size` bytes on `device`; with FI_XPU_ALLOC_DMABUF also
    /// returns a DMA-BUF `fd` and the allocation's `offset` in it.
    pub alloc: Option<
        unsafe extern "C" fn(
            device: u64,
            size: u64,
            alignment: u64,
            flags: u64,
            addr: *mut *mut c_void,
            fd: *mut c_int,
            offset: *mut u64,
        ) -> c_int,
    >,
    /// Makes the host range `[host_addr, host_addr + size)` reachable from
    /// `device` and returns the device-side address in `*dev_addr`.
    pub import: Option<
        unsafe extern "C" fn(
            device: u64,
            host_addr: *mut c_void,
            size: u64,
            flags: u64,
            dev_addr: *mut *mut c_void,
        ) -> c_int,
    >,
    /// Releases memory obtained from `alloc`.
    pub free: Option<unsafe extern "C" fn(device: u64, addr: *mut c_void)>,
}

/// Input to `fi_xpu_ctx()`: which accelerator, and (optionally, may be NULL)
/// the callbacks to manage its memory. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_xpu_attr {
    pub iface: fi_hmem_iface_raw,
    pub device: u64,
    pub ops: *mut fi_xpu_ops,
}

/// `fi_xpu_ctx_attr.caps`: endpoints can be exported to the XPU. Since 2.7.
pub const FI_XPU_CAP_EP: u64 = 1u64 << 0;
/// `fi_xpu_ctx_attr.caps`: CQs can be exported to the XPU. Since 2.7.
pub const FI_XPU_CAP_CQ: u64 = 1u64 << 1;
/// `fi_xpu_ctx_attr.caps`: counters can be exported to the XPU. Since 2.7.
pub const FI_XPU_CAP_CNTR: u64 = 1u64 << 2;

/// Output of `fi_xpu_ctx_query()`: the supported XPU objects (FI_XPU_CAP_*)
/// and the buffer sizes that `fi_av_lookup2()` and `fi_mr_get_xpu_desc()`
/// need for this context. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_xpu_ctx_attr {
    pub caps: u64,
    pub av_addr_size: size_t,
    pub mr_desc_size: size_t,
}

/// Operations of an XPU context. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_xpu_ctx {
    pub size: size_t,
    pub query:
        Option<unsafe extern "C" fn(ctx: *mut fid_xpu_ctx, attr: *mut fi_xpu_ctx_attr) -> c_int>,
}

/// An XPU context, opened with `fi_xpu_ctx()` and closed with `fi_close()`.
/// Since 2.7.
#[repr(C)]
pub struct fid_xpu_ctx {
    pub fid: fid,
    pub ops: *mut fi_ops_xpu_ctx,
}

/// `enum fi_xpu_provider`: provider id stored in `fid_xpu.prov_id` for
/// device-side dispatch. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_xpu_provider {
    FI_XPU_PROV_EFA = 1,
}
/// cbindgen:ignore
pub type fi_xpu_provider_raw = c_uint;

impl fi_xpu_provider {
    pub fn from_raw(v: c_uint) -> Option<fi_xpu_provider> {
        match v {
            1 => Some(fi_xpu_provider::FI_XPU_PROV_EFA),
            _ => None,
        }
    }
}

/// Head of every handle filled in by `fi_ep_export_xpu()`,
/// `fi_cq_export_xpu()` and `fi_cntr_export_xpu()`. The caller owns the
/// storage; the provider writes `fclass` (FI_CLASS_EP/CQ/CNTR), `prov_id`
/// (an `enum fi_xpu_provider` value) and its own `prov_ctx`. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fid_xpu {
    pub fclass: u32,
    pub prov_id: u32,
    pub prov_ctx: u64,
}

/// An endpoint exported to an XPU. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fid_xpu_ep {
    pub fid: fid_xpu,
}

/// A completion queue exported to an XPU. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fid_xpu_cq {
    pub fid: fid_xpu,
}

/// A counter exported to an XPU. Since 2.7.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fid_xpu_cntr {
    pub fid: fid_xpu,
}
