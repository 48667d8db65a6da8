//! Mirror of `rdma/fi_domain.h`: domains, address vectors, memory regions,
//! and the datatype/operation enums shared by atomics and collectives.

use crate::abi::atomic::fi_atomic_attr;
use crate::abi::collective::{fi_collective_attr, fid_av_set};
use crate::abi::endpoint::{fid_ep, fid_stx};
use crate::abi::eq::{fi_cntr_attr, fi_cq_attr, fi_poll_attr, fid_cntr, fid_cq, fid_poll};
use crate::abi::fabric::{fi_addr_t, fi_av_type_raw, fi_info, fi_rx_attr, fi_tx_attr, fid};
use crate::abi::xpu::{fi_xpu_attr, fid_xpu_ctx};
use libc::{c_char, c_int, c_uint, c_void, size_t, ssize_t};

// ---------------------------------------------------------------------------
// Address vectors
// ---------------------------------------------------------------------------

/// `fi_av_open` flag: addresses are the same on every peer.
pub const FI_SYMMETRIC: u64 = 1u64 << 59;
/// `fi_av_insert*` flag: report per-address errors through the EQ.
pub const FI_SYNC_ERR: u64 = 1u64 << 58;
/// `fi_av_set` flag: the set spans every address of the AV.
pub const FI_UNIVERSE: u64 = 1u64 << 57;
/// `fi_av_set_attr.flags`: the set may run barriers.
pub const FI_BARRIER_SET: u64 = 1u64 << 40;
/// `fi_av_set_attr.flags`: the set may run broadcasts.
pub const FI_BROADCAST_SET: u64 = 1u64 << 41;
/// `fi_av_set_attr.flags`: the set may run all-to-all.
pub const FI_ALLTOALL_SET: u64 = 1u64 << 42;
/// `fi_av_set_attr.flags`: the set may run all-reduce.
pub const FI_ALLREDUCE_SET: u64 = 1u64 << 43;
/// `fi_av_set_attr.flags`: the set may run all-gather.
pub const FI_ALLGATHER_SET: u64 = 1u64 << 44;
/// `fi_av_set_attr.flags`: the set may run reduce-scatter.
pub const FI_REDUCE_SCATTER_SET: u64 = 1u64 << 45;
/// `fi_av_set_attr.flags`: the set may run reduce.
pub const FI_REDUCE_SET: u64 = 1u64 << 46;
/// `fi_av_set_attr.flags`: the set may run scatter.
pub const FI_SCATTER_SET: u64 = 1u64 << 47;
/// `fi_av_set_attr.flags`: the set may run gather.
pub const FI_GATHER_SET: u64 = 1u64 << 48;

/// Attributes of an address vector, read by `fi_av_open()`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_av_attr {
    pub r#type: fi_av_type_raw,
    pub rx_ctx_bits: c_int,
    pub count: size_t,
    pub ep_per_node: size_t,
    /// Name of a shared AV, or NULL for a private one.
    pub name: *const c_char,
    pub map_addr: *mut c_void,
    pub flags: u64,
}

/// Attributes of an AV set (`fi_av_set()`, rdma/fi_collective.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_av_set_attr {
    pub count: size_t,
    pub start_addr: fi_addr_t,
    pub end_addr: fi_addr_t,
    pub stride: u64,
    pub comm_key_size: size_t,
    pub comm_key: *mut u8,
    pub flags: u64,
}

/// Operations of an address vector.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_av {
    pub size: size_t,
    pub insert: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            addr: *const c_void,
            count: size_t,
            fi_addr: *mut fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub insertsvc: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            node: *const c_char,
            service: *const c_char,
            fi_addr: *mut fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub insertsym: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            node: *const c_char,
            nodecnt: size_t,
            service: *const c_char,
            svccnt: size_t,
            fi_addr: *mut fi_addr_t,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub remove: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: *mut fi_addr_t,
            count: size_t,
            flags: u64,
        ) -> c_int,
    >,
    pub lookup: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            addr: *mut c_void,
            addrlen: *mut size_t,
        ) -> c_int,
    >,
    pub straddr: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            addr: *const c_void,
            buf: *mut c_char,
            len: *mut size_t,
        ) -> *const c_char,
    >,
    pub av_set: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            attr: *mut fi_av_set_attr,
            av_set: *mut *mut fid_av_set,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub insert_auth_key: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            auth_key: *const c_void,
            auth_key_size: size_t,
            fi_addr: *mut fi_addr_t,
            flags: u64,
        ) -> c_int,
    >,
    pub lookup_auth_key: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            auth_key: *mut c_void,
            auth_key_size: *mut size_t,
        ) -> c_int,
    >,
    pub set_user_id: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            user_id: fi_addr_t,
            flags: u64,
        ) -> c_int,
    >,
    /// Since 2.7.
    pub lookup2: Option<
        unsafe extern "C" fn(
            av: *mut fid_av,
            fi_addr: fi_addr_t,
            buf: *mut c_void,
            len: *mut size_t,
            flags: u64,
            ctx: *mut fid_xpu_ctx,
        ) -> c_int,
    >,
}

/// An address vector.
#[repr(C)]
pub struct fid_av {
    pub fid: fid,
    pub ops: *mut fi_ops_av,
}

// ---------------------------------------------------------------------------
// Memory regions
// ---------------------------------------------------------------------------

/// Registration flag: `fi_mr_attr.dmabuf` describes the memory, not `mr_iov`.
pub const FI_MR_DMABUF: u64 = 1u64 << 40;
/// Registration flag: the key is usable for a single remote access.
pub const FI_MR_SINGLE_USE: u64 = 1u64 << 41;
/// HMEM flag: host memory allocated through the device's allocator.
pub const FI_HMEM_HOST_ALLOC: u64 = 1u64 << 45;
/// HMEM flag: device memory that the host cannot access.
pub const FI_HMEM_DEVICE_ONLY: u64 = 1u64 << 46;

/// A registered memory region. `mem_desc` (local descriptor) and `key`
/// (remote key) are read directly by `fi_mr_desc()` / `fi_mr_key()`.
#[repr(C)]
pub struct fid_mr {
    pub fid: fid,
    pub mem_desc: *mut c_void,
    pub key: u64,
}

/// `enum fi_hmem_iface`: which device API owns a buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_hmem_iface {
    FI_HMEM_SYSTEM = 0,
    FI_HMEM_CUDA = 1,
    FI_HMEM_ROCR = 2,
    FI_HMEM_ZE = 3,
    FI_HMEM_NEURON = 4,
    FI_HMEM_SYNAPSEAI = 5,
}
/// cbindgen:ignore
pub type fi_hmem_iface_raw = c_uint;

/// A DMA-BUF backed range to register (with FI_MR_DMABUF).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_dmabuf {
    pub fd: c_int,
    pub offset: u64,
    pub len: size_t,
    pub base_addr: *mut c_void,
}

/// Auth-key form that names a peer through an AV (`auth_key_size` ==
/// FI_AV_AUTH_KEY).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_auth_key {
    pub av: *mut fid_av,
    pub src_addr: fi_addr_t,
}

/// `fi_mr_attr`'s anonymous union: the memory to register.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_mr_attr_mr_iov {
    pub mr_iov: *const libc::iovec,
    pub dmabuf: *const fi_mr_dmabuf,
}

/// `fi_mr_attr.device`: the device that owns the memory, by `iface`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_mr_attr_device {
    pub reserved: u64,
    pub cuda: c_int,
    pub ze: c_int,
    pub neuron: c_int,
    pub synapseai: c_int,
    /// Since 2.7.
    pub rocr: c_int,
}

/// Full description of a registration, for `fi_mr_regattr()`. The caller
/// owns the struct and everything it points to; it is read during the call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_attr {
    pub __anon_mr_iov: __anon_fi_mr_attr_mr_iov,
    pub iov_count: size_t,
    pub access: u64,
    pub offset: u64,
    pub requested_key: u64,
    pub context: *mut c_void,
    pub auth_key_size: size_t,
    pub auth_key: *mut u8,
    pub iface: fi_hmem_iface_raw,
    pub device: __anon_fi_mr_attr_device,
    pub hmem_data: *mut c_void,
    pub page_size: size_t,
    /// Parent of a sub-MR, or NULL.
    pub base_mr: *const fid_mr,
    pub sub_mr_cnt: size_t,
}

/// `FI_REFRESH` argument: new pages for an existing region.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mr_modify {
    pub flags: u64,
    pub attr: fi_mr_attr,
}

/// `fi_set_ops()` name under which [`fi_hmem_override_ops`] is installed.
/// (The C `#define` is in `c/fi_domain.h.top`: cbindgen prints no strings.)
/// cbindgen:ignore
pub const FI_SET_OPS_HMEM_OVERRIDE: &core::ffi::CStr = c"hmem_override_ops";

/// Application-supplied copies to and from device memory, installed with
/// `fi_set_ops(FI_SET_OPS_HMEM_OVERRIDE)`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_hmem_override_ops {
    pub size: size_t,
    pub copy_from_hmem_iov: Option<
        unsafe extern "C" fn(
            dest: *mut c_void,
            size: size_t,
            iface: fi_hmem_iface_raw,
            device: u64,
            hmem_iov: *const libc::iovec,
            hmem_iov_count: size_t,
            hmem_iov_offset: u64,
        ) -> ssize_t,
    >,
    pub copy_to_hmem_iov: Option<
        unsafe extern "C" fn(
            iface: fi_hmem_iface_raw,
            device: u64,
            hmem_iov: *const libc::iovec,
            hmem_iov_count: size_t,
            hmem_iov_offset: u64,
            src: *const c_void,
            size: size_t,
        ) -> ssize_t,
    >,
}

// ---------------------------------------------------------------------------
// Atomic and collective operands
// ---------------------------------------------------------------------------

/// First value of the collective-only datatypes and operations.
pub const FI_COLLECTIVE_OFFSET: c_int = 256;

/// `enum fi_datatype`: operand type of an atomic or collective.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_datatype {
    FI_INT8 = 0,
    FI_UINT8 = 1,
    FI_INT16 = 2,
    FI_UINT16 = 3,
    FI_INT32 = 4,
    FI_UINT32 = 5,
    FI_INT64 = 6,
    FI_UINT64 = 7,
    FI_FLOAT = 8,
    FI_DOUBLE = 9,
    FI_FLOAT_COMPLEX = 10,
    FI_DOUBLE_COMPLEX = 11,
    FI_LONG_DOUBLE = 12,
    FI_LONG_DOUBLE_COMPLEX = 13,
    FI_INT128 = 14,
    FI_UINT128 = 15,
    FI_FLOAT16 = 16,
    FI_BFLOAT16 = 17,
    FI_FLOAT8_E4M3 = 18,
    FI_FLOAT8_E5M2 = 19,
    /// Collective only (FI_COLLECTIVE_OFFSET).
    FI_VOID = 256,
}
/// cbindgen:ignore
pub type fi_datatype_raw = c_uint;

/// `enum fi_op`: atomic or reduction operation.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_op {
    FI_MIN = 0,
    FI_MAX = 1,
    FI_SUM = 2,
    FI_PROD = 3,
    FI_LOR = 4,
    FI_LAND = 5,
    FI_BOR = 6,
    FI_BAND = 7,
    FI_LXOR = 8,
    FI_BXOR = 9,
    FI_ATOMIC_READ = 10,
    FI_ATOMIC_WRITE = 11,
    FI_CSWAP = 12,
    FI_CSWAP_NE = 13,
    FI_CSWAP_LE = 14,
    FI_CSWAP_LT = 15,
    FI_CSWAP_GE = 16,
    FI_CSWAP_GT = 17,
    FI_MSWAP = 18,
    FI_DIFF = 19,
    /// Collective only (FI_COLLECTIVE_OFFSET).
    FI_NOOP = 256,
}
/// cbindgen:ignore
pub type fi_op_raw = c_uint;

/// `enum fi_collective_op`: collective operation.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_collective_op {
    FI_BARRIER = 0,
    FI_BROADCAST = 1,
    FI_ALLTOALL = 2,
    FI_ALLREDUCE = 3,
    FI_ALLGATHER = 4,
    FI_REDUCE_SCATTER = 5,
    FI_REDUCE = 6,
    FI_SCATTER = 7,
    FI_GATHER = 8,
}
/// cbindgen:ignore
pub type fi_collective_op_raw = c_uint;

// ---------------------------------------------------------------------------
// Domains
// ---------------------------------------------------------------------------

/// Operations of a domain.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_domain {
    pub size: size_t,
    pub av_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_av_attr,
            av: *mut *mut fid_av,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub cq_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_cq_attr,
            cq: *mut *mut fid_cq,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub endpoint: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            info: *mut fi_info,
            ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub scalable_ep: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            info: *mut fi_info,
            sep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub cntr_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_cntr_attr,
            cntr: *mut *mut fid_cntr,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub poll_open: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_poll_attr,
            pollset: *mut *mut fid_poll,
        ) -> c_int,
    >,
    pub stx_ctx: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_tx_attr,
            stx: *mut *mut fid_stx,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub srx_ctx: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_rx_attr,
            rx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub query_atomic: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            datatype: fi_datatype_raw,
            op: fi_op_raw,
            attr: *mut fi_atomic_attr,
            flags: u64,
        ) -> c_int,
    >,
    pub query_collective: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            coll: fi_collective_op_raw,
            attr: *mut fi_collective_attr,
            flags: u64,
        ) -> c_int,
    >,
    pub endpoint2: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            info: *mut fi_info,
            ep: *mut *mut fid_ep,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
    /// Since 2.7.
    pub xpu_ctx: Option<
        unsafe extern "C" fn(
            domain: *mut fid_domain,
            attr: *mut fi_xpu_attr,
            ctx: *mut *mut fid_xpu_ctx,
            context: *mut c_void,
        ) -> c_int,
    >,
}

/// Memory-registration operations of a domain. The first argument is the
/// domain's `fid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mr {
    pub size: size_t,
    pub reg: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            buf: *const c_void,
            len: size_t,
            access: u64,
            offset: u64,
            requested_key: u64,
            flags: u64,
            mr: *mut *mut fid_mr,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub regv: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            iov: *const libc::iovec,
            count: size_t,
            access: u64,
            offset: u64,
            requested_key: u64,
            flags: u64,
            mr: *mut *mut fid_mr,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub regattr: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            attr: *const fi_mr_attr,
            flags: u64,
            mr: *mut *mut fid_mr,
        ) -> c_int,
    >,
}

/// A resource domain.
#[repr(C)]
pub struct fid_domain {
    pub fid: fid,
    pub ops: *mut fi_ops_domain,
    pub mr: *mut fi_ops_mr,
}

/// `from_raw` for the C enums of this header: `None` for a value outside
/// the enum.
macro_rules! impl_from_raw {
    ($ty:ident { $($v:ident),+ $(,)? }) => {
        impl $ty {
            pub fn from_raw(v: c_uint) -> Option<$ty> {
                $(if v == $ty::$v as c_uint {
                    return Some($ty::$v);
                })+
                None
            }
        }
    };
}

impl_from_raw!(fi_hmem_iface {
    FI_HMEM_SYSTEM,
    FI_HMEM_CUDA,
    FI_HMEM_ROCR,
    FI_HMEM_ZE,
    FI_HMEM_NEURON,
    FI_HMEM_SYNAPSEAI,
});
impl_from_raw!(fi_datatype {
    FI_INT8,
    FI_UINT8,
    FI_INT16,
    FI_UINT16,
    FI_INT32,
    FI_UINT32,
    FI_INT64,
    FI_UINT64,
    FI_FLOAT,
    FI_DOUBLE,
    FI_FLOAT_COMPLEX,
    FI_DOUBLE_COMPLEX,
    FI_LONG_DOUBLE,
    FI_LONG_DOUBLE_COMPLEX,
    FI_INT128,
    FI_UINT128,
    FI_FLOAT16,
    FI_BFLOAT16,
    FI_FLOAT8_E4M3,
    FI_FLOAT8_E5M2,
    FI_VOID,
});
impl_from_raw!(fi_op {
    FI_MIN,
    FI_MAX,
    FI_SUM,
    FI_PROD,
    FI_LOR,
    FI_LAND,
    FI_BOR,
    FI_BAND,
    FI_LXOR,
    FI_BXOR,
    FI_ATOMIC_READ,
    FI_ATOMIC_WRITE,
    FI_CSWAP,
    FI_CSWAP_NE,
    FI_CSWAP_LE,
    FI_CSWAP_LT,
    FI_CSWAP_GE,
    FI_CSWAP_GT,
    FI_MSWAP,
    FI_DIFF,
    FI_NOOP,
});
impl_from_raw!(fi_collective_op {
    FI_BARRIER,
    FI_BROADCAST,
    FI_ALLTOALL,
    FI_ALLREDUCE,
    FI_ALLGATHER,
    FI_REDUCE_SCATTER,
    FI_REDUCE,
    FI_SCATTER,
    FI_GATHER,
});

/// `FI_REG_MR` (deprecated): fi_domain_bind flag asking for asynchronous
/// registration events. The header spells it in `c/fi_domain.h.top` so that
/// using it warns as upstream's does.
/// cbindgen:ignore
pub const FI_REG_MR: u64 = 1u64 << 59;
