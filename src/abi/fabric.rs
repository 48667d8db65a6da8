//! Mirror of `rdma/fabric.h`: the base object (`struct fid`), discovery
//! attributes (`struct fi_info` and its parts), capability, mode and
//! memory-registration bits, object classes and `fi_control` commands.
//!
//! Function-like macros (FI_VERSION, FI_CHECK_OP, ...), the deprecated
//! constants that warn when used, the forward declarations and the
//! arithmetic inlines (`fi_tc_dscp_set`, `fi_allocinfo`) are raw C in
//! `c/fabric.h.top` and `c/fabric.h.end`; their Rust copies here are
//! `cbindgen:ignore`d.

use crate::abi::domain::fid_domain;
use crate::abi::endpoint::{fid_ep, fid_pep};
use crate::abi::eq::{fi_eq_attr, fi_wait_attr, fid_eq, fid_wait};
use crate::abi::xpu::fid_xpu_ctx;
use libc::{c_char, c_int, c_uint, c_void, size_t};

/// Defines `from_raw` for a C enum mirrored as a Rust enum.
macro_rules! enum_from_raw {
    ($ty:ident { $($variant:ident),* $(,)? }) => {
        impl $ty {
            /// The enumerator with value `v`, or `None` if `v` names none.
            pub fn from_raw(v: c_uint) -> Option<$ty> {
                $(if v == $ty::$variant as c_uint {
                    return Some($ty::$variant);
                })*
                None
            }
        }
    };
}

// ---------------------------------------------------------------------------
// Versions

/// Major version of the API these headers describe.
pub const FI_MAJOR_VERSION: u32 = 2;
/// Minor version of the API these headers describe.
pub const FI_MINOR_VERSION: u32 = 7;
/// Revision (patch level) of the headers.
pub const FI_REVISION_VERSION: u32 = 0;

/// Kept for source compatibility; libfabric gives it no meaning.
pub const FI_NAME_MAX: c_int = 64;
/// Frozen count of atomic operations (see fi_atomic.h); never changes.
pub const FI_ATOMIC_OP_LAST: c_int = 19;
/// Frozen count of atomic datatypes; not the real last datatype.
pub const FI_DATATYPE_LAST: c_int = 14;

/// Generic handle to any fabric object.
pub type fid_t = *mut fid;

// ---------------------------------------------------------------------------
// Capability and operation flags (64-bit)

pub const FI_MSG: u64 = 1u64 << 1;
pub const FI_RMA: u64 = 1u64 << 2;
pub const FI_TAGGED: u64 = 1u64 << 3;
pub const FI_ATOMIC: u64 = 1u64 << 4;
pub const FI_ATOMICS: u64 = FI_ATOMIC;
pub const FI_MULTICAST: u64 = 1u64 << 5;
pub const FI_COLLECTIVE: u64 = 1u64 << 6;

pub const FI_READ: u64 = 1u64 << 8;
pub const FI_WRITE: u64 = 1u64 << 9;
pub const FI_RECV: u64 = 1u64 << 10;
pub const FI_SEND: u64 = 1u64 << 11;
pub const FI_TRANSMIT: u64 = FI_SEND;
pub const FI_REMOTE_READ: u64 = 1u64 << 12;
pub const FI_REMOTE_WRITE: u64 = 1u64 << 13;

pub const FI_MULTI_RECV: u64 = 1u64 << 16;
pub const FI_REMOTE_CQ_DATA: u64 = 1u64 << 17;
pub const FI_MORE: u64 = 1u64 << 18;
pub const FI_PEEK: u64 = 1u64 << 19;
pub const FI_TRIGGER: u64 = 1u64 << 20;
pub const FI_FENCE: u64 = 1u64 << 21;

pub const FI_COMPLETION: u64 = 1u64 << 24;
pub const FI_EVENT: u64 = FI_COMPLETION;
pub const FI_INJECT: u64 = 1u64 << 25;
pub const FI_INJECT_COMPLETE: u64 = 1u64 << 26;
pub const FI_TRANSMIT_COMPLETE: u64 = 1u64 << 27;
pub const FI_DELIVERY_COMPLETE: u64 = 1u64 << 28;
pub const FI_AFFINITY: u64 = 1u64 << 29;
pub const FI_COMMIT_COMPLETE: u64 = 1u64 << 30;
pub const FI_MATCH_COMPLETE: u64 = 1u64 << 31;

/// fi_getinfo flag: rediscover interfaces instead of using cached results.
/// Since 2.2.
pub const FI_RESCAN: u64 = 1u64 << 35;
pub const FI_PEER_TRANSFER: u64 = 1u64 << 36;
pub const FI_AV_USER_ID: u64 = 1u64 << 41;
/// fi_av_insert flag: the peer is behind a firewall; do not connect to it.
/// Since 2.2.
pub const FI_FIREWALL_ADDR: u64 = 1u64 << 42;
pub const FI_PEER: u64 = 1u64 << 43;
/// Capability: resources may be driven by an accelerator (see fi_xpu.h).
/// Since 2.7.
pub const FI_XPU: u64 = 1u64 << 44;

pub const FI_TAGGED_DIRECTED_RECV: u64 = 1u64 << 45;
pub const FI_TAGGED_MULTI_RECV: u64 = 1u64 << 46;
pub const FI_HMEM: u64 = 1u64 << 47;
pub const FI_EXACT_DIRECTED_RECV: u64 = 1u64 << 48;
pub const FI_RMA_PMEM: u64 = 1u64 << 49;
pub const FI_SOURCE_ERR: u64 = 1u64 << 50;
pub const FI_LOCAL_COMM: u64 = 1u64 << 51;
pub const FI_REMOTE_COMM: u64 = 1u64 << 52;
pub const FI_SHARED_AV: u64 = 1u64 << 53;
pub const FI_PROV_ATTR_ONLY: u64 = 1u64 << 54;
pub const FI_NUMERICHOST: u64 = 1u64 << 55;
pub const FI_RMA_EVENT: u64 = 1u64 << 56;
pub const FI_SOURCE: u64 = 1u64 << 57;
pub const FI_NAMED_RX_CTX: u64 = 1u64 << 58;
pub const FI_DIRECTED_RECV: u64 = 1u64 << 59;

// Tagged-message, buffered-receive and CQ flags (operation specific).
pub const FI_CLAIM: u64 = 1u64 << 59;
pub const FI_DISCARD: u64 = 1u64 << 58;
pub const FI_AUTH_KEY: u64 = 1u64 << 57;

/// One buffer of an atomic operation: `count` elements at `addr`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_ioc {
    pub addr: *mut c_void,
    pub count: size_t,
}

// ---------------------------------------------------------------------------
// Address formats (fi_info.addr_format)

pub const FI_FORMAT_UNSPEC: c_int = 0;
pub const FI_SOCKADDR: c_int = 1;
pub const FI_SOCKADDR_IN: c_int = 2;
pub const FI_SOCKADDR_IN6: c_int = 3;
pub const FI_SOCKADDR_IB: c_int = 4;
pub const FI_ADDR_PSMX: c_int = 5;
pub const FI_ADDR_GNI: c_int = 6;
pub const FI_ADDR_BGQ: c_int = 7;
pub const FI_ADDR_MLX: c_int = 8;
pub const FI_ADDR_STR: c_int = 9;
pub const FI_ADDR_PSMX2: c_int = 10;
pub const FI_ADDR_IB_UD: c_int = 11;
pub const FI_ADDR_EFA: c_int = 12;
pub const FI_ADDR_PSMX3: c_int = 13;
pub const FI_ADDR_OPX: c_int = 14;
pub const FI_ADDR_CXI: c_int = 15;
pub const FI_ADDR_UCX: c_int = 16;
/// Either FI_SOCKADDR_IN or FI_SOCKADDR_IN6. Since 2.3.
pub const FI_SOCKADDR_IP: c_int = 17;

/// No address / any address (`fi_addr_t`).
pub const FI_ADDR_UNSPEC: u64 = u64::MAX;
/// The address could not be resolved (`fi_addr_t`).
pub const FI_ADDR_NOTAVAIL: u64 = u64::MAX;
/// No memory-region key is available.
pub const FI_KEY_NOTAVAIL: u64 = u64::MAX;
/// Context count meaning "use a shared context". Printed as SIZE_MAX by the
/// raw top file.
/// cbindgen:ignore
pub const FI_SHARED_CONTEXT: size_t = usize::MAX;
/// Auth-key size meaning "use the AV's auth key".
/// cbindgen:ignore
pub const FI_AV_AUTH_KEY: size_t = usize::MAX;

/// Address handle returned by an address vector.
pub type fi_addr_t = u64;

/// `enum fi_av_type`: how an address vector maps addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_av_type {
    FI_AV_UNSPEC = 0,
    FI_AV_MAP = 1,
    FI_AV_TABLE = 2,
}
/// cbindgen:ignore
pub type fi_av_type_raw = c_uint;
enum_from_raw!(fi_av_type {
    FI_AV_UNSPEC,
    FI_AV_MAP,
    FI_AV_TABLE
});

// ---------------------------------------------------------------------------
// Memory-registration mode bits (fi_domain_attr.mr_mode, an int)

/// Deprecated: any registration mode. The header's macro warns when used.
/// cbindgen:ignore
pub const FI_MR_UNSPEC: c_int = 0;
/// Deprecated basic registration. The header's macro warns when used.
/// cbindgen:ignore
pub const FI_MR_BASIC: c_int = 1 << 0;
/// Deprecated scalable registration. The header's macro warns when used.
/// cbindgen:ignore
pub const FI_MR_SCALABLE: c_int = 1 << 1;

pub const FI_MR_LOCAL: c_int = 1 << 2;
pub const FI_MR_RAW: c_int = 1 << 3;
pub const FI_MR_VIRT_ADDR: c_int = 1 << 4;
pub const FI_MR_ALLOCATED: c_int = 1 << 5;
pub const FI_MR_PROV_KEY: c_int = 1 << 6;
pub const FI_MR_MMU_NOTIFY: c_int = 1 << 7;
pub const FI_MR_RMA_EVENT: c_int = 1 << 8;
pub const FI_MR_ENDPOINT: c_int = 1 << 9;
pub const FI_MR_HMEM: c_int = 1 << 10;
pub const FI_MR_COLLECTIVE: c_int = 1 << 11;
/// Transfers started by an XPU need a descriptor from fi_mr_get_xpu_desc().
/// Since 2.7.
pub const FI_MR_XPU_DESC: c_int = 1 << 12;

/// `enum fi_progress`: who drives progress.
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
enum_from_raw!(fi_progress {
    FI_PROGRESS_UNSPEC,
    FI_PROGRESS_AUTO,
    FI_PROGRESS_MANUAL,
    FI_PROGRESS_CONTROL_UNIFIED,
});

/// `enum fi_threading`: the thread-safety level of a domain.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_threading {
    FI_THREAD_UNSPEC = 0,
    FI_THREAD_SAFE = 1,
    FI_THREAD_FID = 2,
    FI_THREAD_DOMAIN = 3,
    FI_THREAD_COMPLETION = 4,
    FI_THREAD_ENDPOINT = 5,
}
/// cbindgen:ignore
pub type fi_threading_raw = c_uint;
enum_from_raw!(fi_threading {
    FI_THREAD_UNSPEC,
    FI_THREAD_SAFE,
    FI_THREAD_FID,
    FI_THREAD_DOMAIN,
    FI_THREAD_COMPLETION,
    FI_THREAD_ENDPOINT,
});

/// `enum fi_resource_mgmt`: whether the provider guards against overruns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_resource_mgmt {
    FI_RM_UNSPEC = 0,
    FI_RM_DISABLED = 1,
    FI_RM_ENABLED = 2,
}
/// cbindgen:ignore
pub type fi_resource_mgmt_raw = c_uint;
enum_from_raw!(fi_resource_mgmt {
    FI_RM_UNSPEC,
    FI_RM_DISABLED,
    FI_RM_ENABLED
});

// ---------------------------------------------------------------------------
// Message ordering (msg_order, comp_order)

/// Deprecated: no ordering. The header's macro warns when used.
/// cbindgen:ignore
pub const FI_ORDER_NONE: u64 = 0;
pub const FI_ORDER_RAR: u64 = 1u64 << 0;
pub const FI_ORDER_RAW: u64 = 1u64 << 1;
pub const FI_ORDER_RAS: u64 = 1u64 << 2;
pub const FI_ORDER_WAR: u64 = 1u64 << 3;
pub const FI_ORDER_WAW: u64 = 1u64 << 4;
pub const FI_ORDER_WAS: u64 = 1u64 << 5;
pub const FI_ORDER_SAR: u64 = 1u64 << 6;
pub const FI_ORDER_SAW: u64 = 1u64 << 7;
pub const FI_ORDER_SAS: u64 = 1u64 << 8;
/// Deprecated: all of RAR..SAS. The header's macro warns when used.
/// cbindgen:ignore
pub const FI_ORDER_STRICT: u64 = 0x1FF;

pub const FI_ORDER_RMA_RAR: u64 = 1u64 << 32;
pub const FI_ORDER_RMA_RAW: u64 = 1u64 << 33;
pub const FI_ORDER_RMA_WAR: u64 = 1u64 << 34;
pub const FI_ORDER_RMA_WAW: u64 = 1u64 << 35;
pub const FI_ORDER_ATOMIC_RAR: u64 = 1u64 << 36;
pub const FI_ORDER_ATOMIC_RAW: u64 = 1u64 << 37;
pub const FI_ORDER_ATOMIC_WAR: u64 = 1u64 << 38;
pub const FI_ORDER_ATOMIC_WAW: u64 = 1u64 << 39;

/// Deprecated data ordering. The header's macro warns when used.
/// cbindgen:ignore
pub const FI_ORDER_DATA: u64 = 1u64 << 16;

/// `enum fi_ep_type`: endpoint communication model.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_ep_type {
    FI_EP_UNSPEC = 0,
    FI_EP_MSG = 1,
    FI_EP_DGRAM = 2,
    FI_EP_RDM = 3,
}
/// cbindgen:ignore
pub type fi_ep_type_raw = c_uint;
enum_from_raw!(fi_ep_type {
    FI_EP_UNSPEC,
    FI_EP_MSG,
    FI_EP_DGRAM,
    FI_EP_RDM
});

// ---------------------------------------------------------------------------
// Endpoint protocols (fi_ep_attr.protocol)

pub const FI_PROTO_UNSPEC: c_int = 0;
pub const FI_PROTO_RDMA_CM_IB_RC: c_int = 1;
pub const FI_PROTO_IWARP: c_int = 2;
pub const FI_PROTO_IB_UD: c_int = 3;
pub const FI_PROTO_PSMX: c_int = 4;
pub const FI_PROTO_UDP: c_int = 5;
pub const FI_PROTO_SOCK_TCP: c_int = 6;
pub const FI_PROTO_MXM: c_int = 7;
pub const FI_PROTO_IWARP_RDM: c_int = 8;
pub const FI_PROTO_IB_RDM: c_int = 9;
pub const FI_PROTO_GNI: c_int = 10;
pub const FI_PROTO_RXM: c_int = 11;
pub const FI_PROTO_RXD: c_int = 12;
pub const FI_PROTO_MLX: c_int = 13;
pub const FI_PROTO_NETWORKDIRECT: c_int = 14;
pub const FI_PROTO_PSMX2: c_int = 15;
pub const FI_PROTO_SHM: c_int = 16;
pub const FI_PROTO_MRAIL: c_int = 17;
pub const FI_PROTO_RSTREAM: c_int = 18;
pub const FI_PROTO_RDMA_CM_IB_XRC: c_int = 19;
pub const FI_PROTO_EFA: c_int = 20;
pub const FI_PROTO_PSMX3: c_int = 21;
pub const FI_PROTO_RXM_TCP: c_int = 22;
pub const FI_PROTO_OPX: c_int = 23;
pub const FI_PROTO_CXI: c_int = 24;
pub const FI_PROTO_XNET: c_int = 25;
pub const FI_PROTO_COLL: c_int = 26;
pub const FI_PROTO_UCX: c_int = 27;
pub const FI_PROTO_SM2: c_int = 28;
pub const FI_PROTO_CXI_RNR: c_int = 29;
pub const FI_PROTO_LPP: c_int = 30;
pub const FI_PROTO_LNX: c_int = 31;

// Tag formats (fi_ep_attr.mem_tag_format, low values)
pub const FI_TAG_BITS: c_int = 0;
pub const FI_TAG_MPI: c_int = 1;
pub const FI_TAG_CCL: c_int = 2;
pub const FI_TAG_MAX_FORMAT: c_int = 1 << 16;

// Traffic classes (tclass)
pub const FI_TC_UNSPEC: c_int = 0;
pub const FI_TC_DSCP: c_int = 0x100;
pub const FI_TC_LABEL: c_int = 0x200;
pub const FI_TC_BEST_EFFORT: c_int = FI_TC_LABEL;
pub const FI_TC_LOW_LATENCY: c_int = FI_TC_LABEL + 1;
pub const FI_TC_DEDICATED_ACCESS: c_int = FI_TC_LABEL + 2;
pub const FI_TC_BULK_DATA: c_int = FI_TC_LABEL + 3;
pub const FI_TC_SCAVENGER: c_int = FI_TC_LABEL + 4;
pub const FI_TC_NETWORK_CTRL: c_int = FI_TC_LABEL + 5;

// ---------------------------------------------------------------------------
// Mode bits (fi_info.mode)

pub const FI_CONTEXT: u64 = 1u64 << 59;
pub const FI_MSG_PREFIX: u64 = 1u64 << 58;
pub const FI_ASYNC_IOV: u64 = 1u64 << 57;
pub const FI_RX_CQ_DATA: u64 = 1u64 << 56;
/// Deprecated mode bit, superseded by FI_MR_LOCAL. The header's macro warns
/// when used.
/// cbindgen:ignore
pub const FI_LOCAL_MR: u64 = 1u64 << 55;
pub const FI_CONTEXT2: u64 = 1u64 << 52;

/// Transmit context attributes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_tx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: size_t,
    pub size: size_t,
    pub iov_limit: size_t,
    pub rma_iov_limit: size_t,
    pub tclass: u32,
}

/// Receive context attributes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_rx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: size_t,
    pub size: size_t,
    pub iov_limit: size_t,
}

/// Endpoint attributes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_ep_attr {
    pub r#type: fi_ep_type_raw,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: size_t,
    pub msg_prefix_size: size_t,
    pub max_order_raw_size: size_t,
    pub max_order_war_size: size_t,
    pub max_order_waw_size: size_t,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: size_t,
    pub rx_ctx_cnt: size_t,
    pub auth_key_size: size_t,
    pub auth_key: *mut u8,
    /// XPU context an FI_XPU endpoint is tied to; NULL for host endpoints.
    /// Since 2.7.
    pub xpu_ctx: *mut fid_xpu_ctx,
}

/// Data progress model; `progress` is the 2.x name, `data_progress` the
/// older one.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_domain_attr_progress {
    pub data_progress: fi_progress_raw,
    pub progress: fi_progress_raw,
}

impl Default for __anon_fi_domain_attr_progress {
    /// FI_PROGRESS_UNSPEC.
    fn default() -> Self {
        Self {
            progress: fi_progress::FI_PROGRESS_UNSPEC as fi_progress_raw,
        }
    }
}

/// Domain attributes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_domain_attr {
    pub domain: *mut fid_domain,
    pub name: *mut c_char,
    pub threading: fi_threading_raw,
    pub control_progress: fi_progress_raw,
    pub __anon_progress: __anon_fi_domain_attr_progress,
    pub resource_mgmt: fi_resource_mgmt_raw,
    pub av_type: fi_av_type_raw,
    pub mr_mode: c_int,
    pub mr_key_size: size_t,
    pub cq_data_size: size_t,
    pub cq_cnt: size_t,
    pub ep_cnt: size_t,
    pub tx_ctx_cnt: size_t,
    pub rx_ctx_cnt: size_t,
    pub max_ep_tx_ctx: size_t,
    pub max_ep_rx_ctx: size_t,
    pub max_ep_stx_ctx: size_t,
    pub max_ep_srx_ctx: size_t,
    pub cntr_cnt: size_t,
    pub mr_iov_limit: size_t,
    pub caps: u64,
    pub mode: u64,
    pub auth_key: *mut u8,
    pub auth_key_size: size_t,
    pub max_err_data: size_t,
    pub mr_cnt: size_t,
    pub tclass: u32,
    pub max_ep_auth_key: size_t,
    pub max_group_id: u32,
    /// Largest value a counter can hold; 0 or UINT64_MAX means the full range.
    /// Since 2.5.
    pub max_cntr_value: u64,
    /// Largest value a counter's error count can hold. Since 2.5.
    pub max_err_cntr_value: u64,
    /// Number of XPU contexts the domain supports; 0 means no XPU support.
    /// Since 2.7.
    pub max_xpu_ctx_cnt: size_t,
}

/// Fabric attributes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_fabric_attr {
    pub fabric: *mut fid_fabric,
    pub name: *mut c_char,
    pub prov_name: *mut c_char,
    pub prov_version: u32,
    pub api_version: u32,
}

/// One discovered (or requested) configuration. Lists are linked by `next`
/// and released with fi_freeinfo().
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_info {
    pub next: *mut fi_info,
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addrlen: size_t,
    pub dest_addrlen: size_t,
    pub src_addr: *mut c_void,
    pub dest_addr: *mut c_void,
    pub handle: fid_t,
    pub tx_attr: *mut fi_tx_attr,
    pub rx_attr: *mut fi_rx_attr,
    pub ep_attr: *mut fi_ep_attr,
    pub domain_attr: *mut fi_domain_attr,
    pub fabric_attr: *mut fi_fabric_attr,
    pub nic: *mut fid_nic,
}

/// NIC identification strings (any may be NULL).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_device_attr {
    pub name: *mut c_char,
    pub device_id: *mut c_char,
    pub device_version: *mut c_char,
    pub vendor_id: *mut c_char,
    pub driver: *mut c_char,
    pub firmware: *mut c_char,
}

/// `enum fi_bus_type`: the bus a NIC sits on.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_bus_type {
    FI_BUS_UNSPEC = 0,
    FI_BUS_PCI = 1,
}
/// cbindgen:ignore
pub type fi_bus_type_raw = c_uint;
enum_from_raw!(fi_bus_type {
    FI_BUS_UNSPEC,
    FI_BUS_PCI
});
/// Alias of FI_BUS_UNSPEC (an enumerator of `enum fi_bus_type` in C).
/// cbindgen:ignore
pub const FI_BUS_UNKNOWN: c_uint = fi_bus_type::FI_BUS_UNSPEC as c_uint;

/// PCI address of a NIC.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_pci_attr {
    pub domain_id: u16,
    pub bus_id: u8,
    pub device_id: u8,
    pub function_id: u8,
}

/// Bus-specific address, selected by `fi_bus_attr.bus_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_bus_attr_attr {
    pub pci: fi_pci_attr,
}

/// Where a NIC is attached.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_bus_attr {
    pub bus_type: fi_bus_type_raw,
    pub attr: __anon_fi_bus_attr_attr,
}

/// `enum fi_link_state`: whether a NIC's link is up.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_link_state {
    FI_LINK_UNKNOWN = 0,
    FI_LINK_DOWN = 1,
    FI_LINK_UP = 2,
}
/// cbindgen:ignore
pub type fi_link_state_raw = c_uint;
enum_from_raw!(fi_link_state {
    FI_LINK_UNKNOWN,
    FI_LINK_DOWN,
    FI_LINK_UP
});

/// Link attributes of a NIC.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_link_attr {
    pub address: *mut c_char,
    pub mtu: size_t,
    pub speed: size_t,
    pub state: fi_link_state_raw,
    pub network_type: *mut c_char,
}

// ---------------------------------------------------------------------------
// Object classes (fid.fclass)

pub const FI_CLASS_UNSPEC: c_int = 0;
pub const FI_CLASS_FABRIC: c_int = 1;
pub const FI_CLASS_DOMAIN: c_int = 2;
pub const FI_CLASS_EP: c_int = 3;
pub const FI_CLASS_SEP: c_int = 4;
pub const FI_CLASS_RX_CTX: c_int = 5;
pub const FI_CLASS_SRX_CTX: c_int = 6;
pub const FI_CLASS_TX_CTX: c_int = 7;
pub const FI_CLASS_STX_CTX: c_int = 8;
pub const FI_CLASS_PEP: c_int = 9;
pub const FI_CLASS_INTERFACE: c_int = 10;
pub const FI_CLASS_AV: c_int = 11;
pub const FI_CLASS_MR: c_int = 12;
pub const FI_CLASS_EQ: c_int = 13;
pub const FI_CLASS_CQ: c_int = 14;
pub const FI_CLASS_CNTR: c_int = 15;
pub const FI_CLASS_WAIT: c_int = 16;
pub const FI_CLASS_POLL: c_int = 17;
pub const FI_CLASS_CONNREQ: c_int = 18;
pub const FI_CLASS_MC: c_int = 19;
pub const FI_CLASS_NIC: c_int = 20;
pub const FI_CLASS_AV_SET: c_int = 21;
pub const FI_CLASS_MR_CACHE: c_int = 22;
pub const FI_CLASS_MEM_MONITOR: c_int = 23;
pub const FI_CLASS_PEER_CQ: c_int = 24;
pub const FI_CLASS_PEER_SRX: c_int = 25;
pub const FI_CLASS_LOG: c_int = 26;
pub const FI_CLASS_PEER_AV: c_int = 27;
pub const FI_CLASS_PEER_AV_SET: c_int = 28;
pub const FI_CLASS_PEER_CNTR: c_int = 29;
pub const FI_CLASS_PROFILE: c_int = 30;
/// Class of `struct fid_xpu_ctx`. Since 2.7.
pub const FI_CLASS_XPU_CTX: c_int = 31;

/// fi_bind flag: only operations flagged FI_COMPLETION generate completions.
pub const FI_SELECTIVE_COMPLETION: u64 = 1u64 << 59;

/// Operations every fabric object supports. Slots past `size` (and NULL
/// slots) are treated as not implemented.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_ops {
    pub size: size_t,
    pub close: Option<unsafe extern "C" fn(fid: *mut fid) -> c_int>,
    pub bind: Option<unsafe extern "C" fn(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int>,
    pub control:
        Option<unsafe extern "C" fn(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int>,
    pub ops_open: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            name: *const c_char,
            flags: u64,
            ops: *mut *mut c_void,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub tostr:
        Option<unsafe extern "C" fn(fid: *const fid, buf: *mut c_char, len: size_t) -> c_int>,
    pub ops_set: Option<
        unsafe extern "C" fn(
            fid: *mut fid,
            name: *const c_char,
            flags: u64,
            ops: *mut c_void,
            context: *mut c_void,
        ) -> c_int,
    >,
}

/// Head of every fabric object: its class (FI_CLASS_*), the caller's
/// context, and its operations.
#[repr(C)]
#[derive(Debug)]
pub struct fid {
    pub fclass: size_t,
    pub context: *mut c_void,
    pub ops: *mut fi_ops,
}

/// Operations of a fabric object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_ops_fabric {
    pub size: size_t,
    pub domain: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            info: *mut fi_info,
            dom: *mut *mut fid_domain,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub passive_ep: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            info: *mut fi_info,
            pep: *mut *mut fid_pep,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub eq_open: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            attr: *mut fi_eq_attr,
            eq: *mut *mut fid_eq,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub wait_open: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            attr: *mut fi_wait_attr,
            waitset: *mut *mut fid_wait,
        ) -> c_int,
    >,
    pub trywait: Option<
        unsafe extern "C" fn(fabric: *mut fid_fabric, fids: *mut *mut fid, count: c_int) -> c_int,
    >,
    pub domain2: Option<
        unsafe extern "C" fn(
            fabric: *mut fid_fabric,
            info: *mut fi_info,
            dom: *mut *mut fid_domain,
            flags: u64,
            context: *mut c_void,
        ) -> c_int,
    >,
}

/// An open fabric; `api_version` is the version the application asked for.
#[repr(C)]
#[derive(Debug)]
pub struct fid_fabric {
    pub fid: fid,
    pub ops: *mut fi_ops_fabric,
    pub api_version: u32,
}

/// A NIC description attached to `fi_info.nic`; any attribute may be NULL.
#[repr(C)]
#[derive(Debug)]
pub struct fid_nic {
    pub fid: fid,
    pub device_attr: *mut fi_device_attr,
    pub bus_attr: *mut fi_bus_attr,
    pub link_attr: *mut fi_link_attr,
    pub prov_attr: *mut c_void,
}

/// Argument of FI_ALIAS: where to store the new alias, and its flags.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_alias {
    pub fid: *mut *mut fid,
    pub flags: u64,
}

/// Argument of FI_GET_VAL / FI_SET_VAL: a variable name and its value.
/// Provider-specific names set the top bit.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_fid_var {
    pub name: c_int,
    pub val: *mut c_void,
}

/// Argument of FI_GET_RAW_MR: outputs for a memory region's raw key.
/// `*key_size` is the buffer size on input and the key size on output.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_mr_raw_attr {
    pub flags: u64,
    pub base_addr: *mut u64,
    pub raw_key: *mut u8,
    pub key_size: *mut size_t,
}

/// Argument of FI_GET_MR_XPU_DESC (used by fi_mr_get_xpu_desc()): the
/// caller's buffer and its size (`*len`: in, buffer size; out, bytes
/// written or needed), flags, and the XPU context the descriptor is for.
/// Since 2.7.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_mr_xpu_desc {
    pub buf: *mut c_void,
    pub len: *mut size_t,
    pub flags: u64,
    pub ctx: *mut fid_xpu_ctx,
}

/// Argument of FI_MAP_RAW_MR: a raw key to turn into a 64-bit key.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_mr_map_raw {
    pub flags: u64,
    pub base_addr: u64,
    pub raw_key: *mut u8,
    pub key_size: size_t,
    pub key: *mut u64,
}

// fi_control commands
pub const FI_GETFIDFLAG: c_int = 0;
pub const FI_SETFIDFLAG: c_int = 1;
pub const FI_GETOPSFLAG: c_int = 2;
pub const FI_SETOPSFLAG: c_int = 3;
pub const FI_ALIAS: c_int = 4;
pub const FI_GETWAIT: c_int = 5;
pub const FI_ENABLE: c_int = 6;
pub const FI_BACKLOG: c_int = 7;
pub const FI_GET_RAW_MR: c_int = 8;
pub const FI_MAP_RAW_MR: c_int = 9;
pub const FI_UNMAP_KEY: c_int = 10;
pub const FI_QUEUE_WORK: c_int = 11;
pub const FI_CANCEL_WORK: c_int = 12;
pub const FI_FLUSH_WORK: c_int = 13;
pub const FI_REFRESH: c_int = 14;
pub const FI_DUP: c_int = 15;
pub const FI_GETWAITOBJ: c_int = 16;
pub const FI_GET_VAL: c_int = 17;
pub const FI_SET_VAL: c_int = 18;
pub const FI_EXPORT_FID: c_int = 19;
/// Returns the object's file descriptor (`int *`). Since 2.2.
pub const FI_GET_FD: c_int = 20;
/// Fills a `struct fi_mr_xpu_desc`. Since 2.7.
pub const FI_GET_MR_XPU_DESC: c_int = 21;

/// `enum fi_type`: what `fi_tostr()` is asked to print.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_type {
    FI_TYPE_INFO = 0,
    FI_TYPE_EP_TYPE = 1,
    FI_TYPE_CAPS = 2,
    FI_TYPE_OP_FLAGS = 3,
    FI_TYPE_ADDR_FORMAT = 4,
    FI_TYPE_TX_ATTR = 5,
    FI_TYPE_RX_ATTR = 6,
    FI_TYPE_EP_ATTR = 7,
    FI_TYPE_DOMAIN_ATTR = 8,
    FI_TYPE_FABRIC_ATTR = 9,
    FI_TYPE_THREADING = 10,
    FI_TYPE_PROGRESS = 11,
    FI_TYPE_PROTOCOL = 12,
    FI_TYPE_MSG_ORDER = 13,
    FI_TYPE_MODE = 14,
    FI_TYPE_AV_TYPE = 15,
    FI_TYPE_ATOMIC_TYPE = 16,
    FI_TYPE_ATOMIC_OP = 17,
    FI_TYPE_VERSION = 18,
    FI_TYPE_EQ_EVENT = 19,
    FI_TYPE_CQ_EVENT_FLAGS = 20,
    FI_TYPE_MR_MODE = 21,
    FI_TYPE_OP_TYPE = 22,
    FI_TYPE_FID = 23,
    FI_TYPE_COLLECTIVE_OP = 24,
    FI_TYPE_HMEM_IFACE = 25,
    FI_TYPE_CQ_FORMAT = 26,
    FI_TYPE_LOG_LEVEL = 27,
    FI_TYPE_LOG_SUBSYS = 28,
    FI_TYPE_AV_ATTR = 29,
    FI_TYPE_CQ_ATTR = 30,
    FI_TYPE_MR_ATTR = 31,
    FI_TYPE_CNTR_ATTR = 32,
    FI_TYPE_CQ_ERR_ENTRY = 33,
    /// `enum fi_cq_wait_cond`. Since 2.6 or earlier (not in 2.1).
    FI_TYPE_CQ_WAIT_COND = 34,
    /// `enum fi_wait_obj`. Since 2.6 or earlier (not in 2.1).
    FI_TYPE_WAIT_OBJ = 35,
}
/// cbindgen:ignore
pub type fi_type_raw = c_uint;
enum_from_raw!(fi_type {
    FI_TYPE_INFO,
    FI_TYPE_EP_TYPE,
    FI_TYPE_CAPS,
    FI_TYPE_OP_FLAGS,
    FI_TYPE_ADDR_FORMAT,
    FI_TYPE_TX_ATTR,
    FI_TYPE_RX_ATTR,
    FI_TYPE_EP_ATTR,
    FI_TYPE_DOMAIN_ATTR,
    FI_TYPE_FABRIC_ATTR,
    FI_TYPE_THREADING,
    FI_TYPE_PROGRESS,
    FI_TYPE_PROTOCOL,
    FI_TYPE_MSG_ORDER,
    FI_TYPE_MODE,
    FI_TYPE_AV_TYPE,
    FI_TYPE_ATOMIC_TYPE,
    FI_TYPE_ATOMIC_OP,
    FI_TYPE_VERSION,
    FI_TYPE_EQ_EVENT,
    FI_TYPE_CQ_EVENT_FLAGS,
    FI_TYPE_MR_MODE,
    FI_TYPE_OP_TYPE,
    FI_TYPE_FID,
    FI_TYPE_COLLECTIVE_OP,
    FI_TYPE_HMEM_IFACE,
    FI_TYPE_CQ_FORMAT,
    FI_TYPE_LOG_LEVEL,
    FI_TYPE_LOG_SUBSYS,
    FI_TYPE_AV_ATTR,
    FI_TYPE_CQ_ATTR,
    FI_TYPE_MR_ATTR,
    FI_TYPE_CNTR_ATTR,
    FI_TYPE_CQ_ERR_ENTRY,
    FI_TYPE_CQ_WAIT_COND,
    FI_TYPE_WAIT_OBJ,
});

/// `enum fi_param_type`: the type of a runtime parameter's value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_param_type {
    FI_PARAM_STRING = 0,
    FI_PARAM_INT = 1,
    FI_PARAM_BOOL = 2,
    FI_PARAM_SIZE_T = 3,
}
/// cbindgen:ignore
pub type fi_param_type_raw = c_uint;
enum_from_raw!(fi_param_type {
    FI_PARAM_STRING,
    FI_PARAM_INT,
    FI_PARAM_BOOL,
    FI_PARAM_SIZE_T
});

/// One runtime parameter as reported by fi_getparams(); `value` is NULL
/// when the parameter is not set.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_param {
    pub name: *const c_char,
    pub r#type: fi_param_type_raw,
    pub help_string: *const c_char,
    pub value: *const c_char,
}

/// Scratch space the provider may use per operation when FI_CONTEXT is set;
/// owned by the application until the operation completes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_context {
    pub internal: [*mut c_void; 4],
}

/// As `fi_context`, twice the size, for FI_CONTEXT2.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_context2 {
    pub internal: [*mut c_void; 8],
}

/// Context reported for a receive completed on an endpoint that shares a
/// receive context.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fi_recv_context {
    pub ep: *mut fid_ep,
    pub context: *mut c_void,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    // Sizes and offsets of the 2.1 layout (from the 2.1 header on x86_64),
    // plus the fields appended since.
    #[test]
    fn layouts() {
        assert_eq!(size_of::<fi_info>(), 120);
        assert_eq!(offset_of!(fi_info, nic), 112);
        assert_eq!(size_of::<fi_tx_attr>(), 80);
        assert_eq!(offset_of!(fi_tx_attr, tclass), 72);
        assert_eq!(size_of::<fi_rx_attr>(), 64);
        assert_eq!(offset_of!(fi_ep_attr, auth_key), 88);
        assert_eq!(offset_of!(fi_ep_attr, xpu_ctx), 96);
        assert_eq!(size_of::<fi_ep_attr>(), 104);
        assert_eq!(offset_of!(fi_domain_attr, mr_key_size), 40);
        assert_eq!(offset_of!(fi_domain_attr, tclass), 184);
        assert_eq!(offset_of!(fi_domain_attr, max_ep_auth_key), 192);
        assert_eq!(offset_of!(fi_domain_attr, max_group_id), 200);
        assert_eq!(offset_of!(fi_domain_attr, max_cntr_value), 208);
        assert_eq!(offset_of!(fi_domain_attr, max_err_cntr_value), 216);
        assert_eq!(offset_of!(fi_domain_attr, max_xpu_ctx_cnt), 224);
        assert_eq!(size_of::<fi_domain_attr>(), 232);
        assert_eq!(size_of::<fi_fabric_attr>(), 32);
        assert_eq!(size_of::<fi_device_attr>(), 48);
        assert_eq!(size_of::<fi_pci_attr>(), 6);
        assert_eq!(size_of::<fi_bus_attr>(), 12);
        assert_eq!(offset_of!(fi_bus_attr, attr), 4);
        assert_eq!(size_of::<fi_link_attr>(), 40);
        assert_eq!(offset_of!(fi_link_attr, state), 24);
        assert_eq!(size_of::<fi_ops>(), 56);
        assert_eq!(offset_of!(fi_ops, ops_set), 48);
        assert_eq!(size_of::<fid>(), 24);
        assert_eq!(size_of::<fi_ops_fabric>(), 56);
        assert_eq!(offset_of!(fi_ops_fabric, domain2), 48);
        assert_eq!(size_of::<fid_fabric>(), 40);
        assert_eq!(offset_of!(fid_fabric, api_version), 32);
        assert_eq!(size_of::<fid_nic>(), 56);
        assert_eq!(size_of::<fi_alias>(), 16);
        assert_eq!(size_of::<fi_fid_var>(), 16);
        assert_eq!(size_of::<fi_mr_raw_attr>(), 32);
        assert_eq!(size_of::<fi_mr_xpu_desc>(), 32);
        assert_eq!(size_of::<fi_mr_map_raw>(), 40);
        assert_eq!(size_of::<fi_param>(), 32);
        assert_eq!(size_of::<fi_context>(), 32);
        assert_eq!(size_of::<fi_context2>(), 64);
        assert_eq!(size_of::<fi_recv_context>(), 16);
        assert_eq!(size_of::<fi_ioc>(), 16);
    }

    #[test]
    fn enum_round_trip() {
        assert_eq!(fi_ep_type::from_raw(3), Some(fi_ep_type::FI_EP_RDM));
        assert_eq!(fi_ep_type::from_raw(4), None);
        assert_eq!(
            fi_bus_type::from_raw(FI_BUS_UNKNOWN),
            Some(fi_bus_type::FI_BUS_UNSPEC)
        );
        assert_eq!(fi_type::from_raw(35), Some(fi_type::FI_TYPE_WAIT_OBJ));
        assert_eq!(fi_progress::from_raw(u32::MAX), None);
    }

    #[test]
    fn constants() {
        assert_eq!(FI_TC_NETWORK_CTRL, 0x205);
        assert_eq!(FI_TAG_MAX_FORMAT, 65536);
        assert_eq!(FI_ORDER_STRICT, (FI_ORDER_SAS << 1) - 1);
        assert_eq!(FI_SHARED_CONTEXT, usize::MAX);
        assert_eq!(FI_ADDR_NOTAVAIL, !0u64);
    }
}
