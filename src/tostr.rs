//! The text `fi_tostr(3)` prints, built from plain values.
//!
//! The layout is libfabric's YAML-like dump: a struct is `name:` followed
//! by one `key: value` line per field, indented by four spaces per level;
//! flag words are `[ NAME, NAME ]` (`[  ]` when empty, bits without a name
//! are skipped); an enum is its C name or `Unknown`.
//!
//! Two layouts exist. [`Layout::V2`] is libfabric 2.x's and is what this
//! library prints by default. [`Layout::V1`] is libfabric 1.x's (it still
//! prints `comp_order`, `total_buffered_recv`, the two progress models and
//! the 1.x-only flag names); it is used for an `fi_info` whose
//! `fabric_attr->api_version` asks for a 1.x API, so a program written for
//! 1.x (such as a 1.x `fi_info -v`) sees the text its own library printed.
//!
//! [`Out`] reproduces the C buffer's truncation exactly, so `fi_tostr_r`
//! with a short buffer yields the same prefix upstream yields.

use crate::abi::domain::FI_SYMMETRIC;
use crate::abi::domain::{fi_collective_op::*, fi_datatype::*, fi_hmem_iface::*, fi_op::*};
use crate::abi::eq::{fi_cntr_events::*, fi_cq_format::*, fi_cq_wait_cond::*, fi_wait_obj::*};
use crate::abi::eq::{
    FI_AV_COMPLETE, FI_CONNECTED, FI_CONNREQ, FI_JOIN_COMPLETE, FI_MR_COMPLETE, FI_NOTIFY,
    FI_SHUTDOWN,
};
use crate::abi::fabric::*;
use crate::abi::fabric::{
    fi_av_type::*, fi_ep_type::*, fi_progress::*, fi_resource_mgmt::*, fi_threading::*,
};
use crate::abi::trigger::fi_op_type::*;
use std::fmt::Write as _;

/// Values that only libfabric 1.x defines (rdma/fabric.h of 1.17).
mod v1 {
    pub const FI_VARIABLE_MSG: u64 = 1 << 48;
    pub const FI_BUFFERED_RECV: u64 = 1 << 51;
    pub const FI_RESTRICTED_COMP: u64 = 1 << 53;
    pub const FI_NOTIFY_FLAGS_ONLY: u64 = 1 << 54;
    pub const FI_EP_SOCK_STREAM: u32 = 4;
    pub const FI_EP_SOCK_DGRAM: u32 = 5;
    /// Set in provider-specific address formats and protocols.
    pub const FI_PROV_SPECIFIC: u32 = 1 << 31;
}

/// Which libfabric generation's text to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// libfabric 1.x (as Debian's 1.17 prints it).
    V1,
    /// libfabric 2.x.
    V2,
}

impl Layout {
    /// The layout for an `fi_info` whose fabric attributes carry
    /// `api_version` (`None`: no fabric attributes).
    pub fn for_api_version(api_version: Option<u32>) -> Layout {
        match api_version {
            Some(v) if v != 0 && (v >> 16) < 2 => Layout::V1,
            _ => Layout::V2,
        }
    }
}

/// Four spaces: one indentation level.
const TAB: &str = "    ";

// ---------------------------------------------------------------------------
// The bounded buffer

/// Text with the C buffer's bounds: `cap` is the buffer length, NUL
/// included. Appends behave like upstream's `snprintf`-based appender, which
/// keeps at most `cap - 2` characters; an address keeps up to `cap - 1`.
#[derive(Clone, Debug)]
pub struct Out {
    buf: Vec<u8>,
    cap: usize,
}

impl Out {
    /// An empty buffer of `cap` bytes (NUL included).
    pub fn new(cap: usize) -> Out {
        Out {
            buf: Vec::new(),
            cap,
        }
    }

    /// A buffer without a practical bound.
    pub fn unbounded() -> Out {
        Out::new(usize::MAX)
    }

    /// The buffer length given to [`Out::new`].
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The text so far (no NUL).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Appends `s` as upstream's appender does: `snprintf` into the rest of
    /// the buffer with one byte less than remains.
    pub fn push(&mut self, s: &[u8]) {
        let size = self.cap.saturating_sub(1).saturating_sub(self.buf.len());
        if size == 0 {
            return;
        }
        let n = s.len().min(size - 1);
        self.buf.extend_from_slice(&s[..n]);
    }

    pub fn push_str(&mut self, s: &str) {
        self.push(s.as_bytes());
    }

    /// Appends an address as upstream's address printer does: `snprintf`
    /// into all of the rest of the buffer.
    pub fn push_addr(&mut self, s: &[u8]) {
        let room = self.cap.saturating_sub(self.buf.len());
        if room == 0 {
            return;
        }
        let n = s.len().min(room - 1);
        self.buf.extend_from_slice(&s[..n]);
    }

    /// Drops a trailing `", "`.
    pub fn remove_comma(&mut self) {
        if self.buf.ends_with(b", ") {
            self.buf.truncate(self.buf.len() - 2);
        }
    }

    /// Replaces the text (with what a C callback left in the buffer),
    /// keeping the bound.
    pub fn set(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.cap.saturating_sub(1));
        self.buf.clear();
        self.buf.extend_from_slice(&bytes[..n]);
    }

    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        let mut s = String::new();
        let _ = s.write_fmt(args);
        self.push_str(&s);
    }
}

// ---------------------------------------------------------------------------
// Names

type FlagNames = &'static [(u64, &'static str)];
type EnumNames = &'static [(u32, &'static str)];

/// `[(VALUE, "VALUE"), ...]` for flag words, in the order given.
macro_rules! flag_names {
    ($($n:ident),* $(,)?) => { &[$(($n as u64, stringify!($n))),*] };
}

/// `[(VALUE, "VALUE"), ...]` for enumerators.
macro_rules! enum_names {
    ($($n:ident),* $(,)?) => { &[$(($n as u32, stringify!($n))),*] };
}

use v1::{
    FI_BUFFERED_RECV, FI_EP_SOCK_DGRAM, FI_EP_SOCK_STREAM, FI_NOTIFY_FLAGS_ONLY,
    FI_RESTRICTED_COMP, FI_VARIABLE_MSG,
};

const CAPS_V1: FlagNames = flag_names![
    FI_MSG,
    FI_RMA,
    FI_TAGGED,
    FI_ATOMIC,
    FI_MULTICAST,
    FI_COLLECTIVE,
    FI_READ,
    FI_WRITE,
    FI_RECV,
    FI_SEND,
    FI_REMOTE_READ,
    FI_REMOTE_WRITE,
    FI_MULTI_RECV,
    FI_REMOTE_CQ_DATA,
    FI_TRIGGER,
    FI_FENCE,
    FI_VARIABLE_MSG,
    FI_RMA_PMEM,
    FI_SOURCE_ERR,
    FI_LOCAL_COMM,
    FI_REMOTE_COMM,
    FI_SHARED_AV,
    FI_RMA_EVENT,
    FI_SOURCE,
    FI_NAMED_RX_CTX,
    FI_DIRECTED_RECV,
    FI_HMEM,
];

const CAPS_V2: FlagNames = flag_names![
    FI_MSG,
    FI_RMA,
    FI_TAGGED,
    FI_ATOMIC,
    FI_MULTICAST,
    FI_COLLECTIVE,
    FI_READ,
    FI_WRITE,
    FI_RECV,
    FI_SEND,
    FI_REMOTE_READ,
    FI_REMOTE_WRITE,
    FI_MULTI_RECV,
    FI_REMOTE_CQ_DATA,
    FI_TRIGGER,
    FI_FENCE,
    FI_RMA_PMEM,
    FI_SOURCE_ERR,
    FI_LOCAL_COMM,
    FI_REMOTE_COMM,
    FI_SHARED_AV,
    FI_RMA_EVENT,
    FI_SOURCE,
    FI_NAMED_RX_CTX,
    FI_DIRECTED_RECV,
    FI_AV_USER_ID,
    FI_PEER,
    FI_HMEM,
];

const OP_FLAGS: FlagNames = flag_names![
    FI_MULTICAST,
    FI_MULTI_RECV,
    FI_REMOTE_CQ_DATA,
    FI_MORE,
    FI_PEEK,
    FI_TRIGGER,
    FI_FENCE,
    FI_COMPLETION,
    FI_INJECT,
    FI_INJECT_COMPLETE,
    FI_TRANSMIT_COMPLETE,
    FI_DELIVERY_COMPLETE,
    FI_MATCH_COMPLETE,
    FI_AFFINITY,
    FI_CLAIM,
    FI_DISCARD,
];

const MSG_ORDER: FlagNames = flag_names![
    FI_ORDER_RAR,
    FI_ORDER_RAW,
    FI_ORDER_RAS,
    FI_ORDER_WAR,
    FI_ORDER_WAW,
    FI_ORDER_WAS,
    FI_ORDER_SAR,
    FI_ORDER_SAW,
    FI_ORDER_SAS,
    FI_ORDER_RMA_RAR,
    FI_ORDER_RMA_RAW,
    FI_ORDER_RMA_WAR,
    FI_ORDER_RMA_WAW,
    FI_ORDER_ATOMIC_RAR,
    FI_ORDER_ATOMIC_RAW,
    FI_ORDER_ATOMIC_WAR,
    FI_ORDER_ATOMIC_WAW,
];

const MODE_V1: FlagNames = flag_names![
    FI_CONTEXT,
    FI_MSG_PREFIX,
    FI_ASYNC_IOV,
    FI_RX_CQ_DATA,
    FI_LOCAL_MR,
    FI_NOTIFY_FLAGS_ONLY,
    FI_RESTRICTED_COMP,
    FI_CONTEXT2,
    FI_BUFFERED_RECV,
];

const MODE_V2: FlagNames = flag_names![
    FI_CONTEXT,
    FI_MSG_PREFIX,
    FI_ASYNC_IOV,
    FI_RX_CQ_DATA,
    FI_LOCAL_MR,
    FI_CONTEXT2,
];

const MR_MODE: FlagNames = flag_names![
    FI_MR_BASIC,
    FI_MR_SCALABLE,
    FI_MR_LOCAL,
    FI_MR_RAW,
    FI_MR_VIRT_ADDR,
    FI_MR_ALLOCATED,
    FI_MR_PROV_KEY,
    FI_MR_MMU_NOTIFY,
    FI_MR_RMA_EVENT,
    FI_MR_ENDPOINT,
    FI_MR_HMEM,
    FI_MR_COLLECTIVE,
];

const CQ_EVENT_FLAGS: FlagNames = flag_names![
    FI_SEND,
    FI_RECV,
    FI_RMA,
    FI_ATOMIC,
    FI_MSG,
    FI_TAGGED,
    FI_READ,
    FI_WRITE,
    FI_REMOTE_READ,
    FI_REMOTE_WRITE,
    FI_REMOTE_CQ_DATA,
    FI_MULTI_RECV,
    FI_MORE,
    FI_CLAIM,
];

const AV_FLAGS: FlagNames = flag_names![FI_EVENT, FI_READ, FI_SYMMETRIC];

const CQ_FLAGS: FlagNames = flag_names![FI_AFFINITY];

const MR_ACCESS: FlagNames = flag_names![
    FI_RECV,
    FI_SEND,
    FI_READ,
    FI_WRITE,
    FI_REMOTE_READ,
    FI_REMOTE_WRITE,
    FI_COLLECTIVE,
];

const EP_TYPE_V1: EnumNames = enum_names![
    FI_EP_UNSPEC,
    FI_EP_MSG,
    FI_EP_DGRAM,
    FI_EP_RDM,
    FI_EP_SOCK_STREAM,
    FI_EP_SOCK_DGRAM,
];

const EP_TYPE_V2: EnumNames = enum_names![FI_EP_UNSPEC, FI_EP_MSG, FI_EP_DGRAM, FI_EP_RDM];

const ADDR_FORMAT_V1: EnumNames = enum_names![
    FI_FORMAT_UNSPEC,
    FI_SOCKADDR,
    FI_SOCKADDR_IN,
    FI_SOCKADDR_IN6,
    FI_SOCKADDR_IB,
    FI_ADDR_PSMX,
    FI_ADDR_GNI,
    FI_ADDR_BGQ,
    FI_ADDR_MLX,
    FI_ADDR_STR,
    FI_ADDR_PSMX2,
    FI_ADDR_IB_UD,
    FI_ADDR_EFA,
    FI_ADDR_PSMX3,
    FI_ADDR_OPX,
    FI_ADDR_CXI,
];

// 2.x prints neither the formats of the providers it dropped (psm, gni,
// bgq) nor provider-specific ones.
const ADDR_FORMAT_V2: EnumNames = enum_names![
    FI_FORMAT_UNSPEC,
    FI_SOCKADDR,
    FI_SOCKADDR_IN,
    FI_SOCKADDR_IN6,
    FI_SOCKADDR_IB,
    FI_ADDR_MLX,
    FI_ADDR_STR,
    FI_ADDR_PSMX2,
    FI_ADDR_IB_UD,
    FI_ADDR_EFA,
    FI_ADDR_PSMX3,
    FI_ADDR_OPX,
    FI_ADDR_CXI,
    FI_ADDR_UCX,
];

const THREADING_V1: EnumNames = enum_names![
    FI_THREAD_UNSPEC,
    FI_THREAD_SAFE,
    FI_THREAD_FID,
    FI_THREAD_DOMAIN,
    FI_THREAD_COMPLETION,
    FI_THREAD_ENDPOINT,
];

// 2.0 retired FI_THREAD_FID and FI_THREAD_ENDPOINT.
const THREADING_V2: EnumNames = enum_names![
    FI_THREAD_UNSPEC,
    FI_THREAD_SAFE,
    FI_THREAD_DOMAIN,
    FI_THREAD_COMPLETION,
];

const PROGRESS_V1: EnumNames =
    enum_names![FI_PROGRESS_UNSPEC, FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL];

const PROGRESS_V2: EnumNames = enum_names![
    FI_PROGRESS_UNSPEC,
    FI_PROGRESS_AUTO,
    FI_PROGRESS_MANUAL,
    FI_PROGRESS_CONTROL_UNIFIED,
];

const PROTOCOL_V1: EnumNames = enum_names![
    FI_PROTO_UNSPEC,
    FI_PROTO_RDMA_CM_IB_RC,
    FI_PROTO_IWARP,
    FI_PROTO_IB_UD,
    FI_PROTO_PSMX,
    FI_PROTO_UDP,
    FI_PROTO_SOCK_TCP,
    FI_PROTO_IWARP_RDM,
    FI_PROTO_IB_RDM,
    FI_PROTO_GNI,
    FI_PROTO_RXM,
    FI_PROTO_RXD,
    FI_PROTO_MLX,
    FI_PROTO_NETWORKDIRECT,
    FI_PROTO_PSMX2,
    FI_PROTO_SHM,
    FI_PROTO_RSTREAM,
    FI_PROTO_RDMA_CM_IB_XRC,
    FI_PROTO_EFA,
    FI_PROTO_PSMX3,
    FI_PROTO_RXM_TCP,
    FI_PROTO_OPX,
    FI_PROTO_CXI,
    FI_PROTO_XNET,
];

const PROTOCOL_V2: EnumNames = enum_names![
    FI_PROTO_UNSPEC,
    FI_PROTO_RDMA_CM_IB_RC,
    FI_PROTO_IWARP,
    FI_PROTO_IB_UD,
    FI_PROTO_UDP,
    FI_PROTO_SOCK_TCP,
    FI_PROTO_IWARP_RDM,
    FI_PROTO_IB_RDM,
    FI_PROTO_RXM,
    FI_PROTO_RXD,
    FI_PROTO_MLX,
    FI_PROTO_NETWORKDIRECT,
    FI_PROTO_PSMX2,
    FI_PROTO_SHM,
    FI_PROTO_RDMA_CM_IB_XRC,
    FI_PROTO_EFA,
    FI_PROTO_PSMX3,
    FI_PROTO_RXM_TCP,
    FI_PROTO_OPX,
    FI_PROTO_CXI,
    FI_PROTO_XNET,
    FI_PROTO_UCX,
    FI_PROTO_SM2,
    FI_PROTO_CXI_RNR,
    FI_PROTO_LPP,
    FI_PROTO_LNX,
];

const RESOURCE_MGMT: EnumNames = enum_names![FI_RM_UNSPEC, FI_RM_DISABLED, FI_RM_ENABLED];

const AV_TYPE: EnumNames = enum_names![FI_AV_UNSPEC, FI_AV_MAP, FI_AV_TABLE];

const ATOMIC_TYPE: EnumNames = enum_names![
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
];

const ATOMIC_OP: EnumNames = enum_names![
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
];

const EQ_EVENT: EnumNames = enum_names![
    FI_NOTIFY,
    FI_CONNREQ,
    FI_CONNECTED,
    FI_SHUTDOWN,
    FI_MR_COMPLETE,
    FI_AV_COMPLETE,
    FI_JOIN_COMPLETE,
];

const OP_TYPE: EnumNames = enum_names![
    FI_OP_RECV,
    FI_OP_SEND,
    FI_OP_TRECV,
    FI_OP_TSEND,
    FI_OP_READ,
    FI_OP_WRITE,
    FI_OP_ATOMIC,
    FI_OP_FETCH_ATOMIC,
    FI_OP_COMPARE_ATOMIC,
    FI_OP_CNTR_SET,
    FI_OP_CNTR_ADD,
];

const COLLECTIVE_OP: EnumNames = enum_names![
    FI_BARRIER,
    FI_BROADCAST,
    FI_ALLTOALL,
    FI_ALLREDUCE,
    FI_ALLGATHER,
    FI_REDUCE_SCATTER,
    FI_REDUCE,
    FI_SCATTER,
    FI_GATHER,
];

const HMEM_IFACE: EnumNames = enum_names![
    FI_HMEM_SYSTEM,
    FI_HMEM_CUDA,
    FI_HMEM_ROCR,
    FI_HMEM_ZE,
    FI_HMEM_NEURON,
    FI_HMEM_SYNAPSEAI,
];

const CQ_FORMAT: EnumNames = enum_names![
    FI_CQ_FORMAT_UNSPEC,
    FI_CQ_FORMAT_CONTEXT,
    FI_CQ_FORMAT_MSG,
    FI_CQ_FORMAT_DATA,
    FI_CQ_FORMAT_TAGGED,
];

const WAIT_OBJ: EnumNames = enum_names![
    FI_WAIT_NONE,
    FI_WAIT_UNSPEC,
    FI_WAIT_SET,
    FI_WAIT_FD,
    FI_WAIT_MUTEX_COND,
    FI_WAIT_YIELD,
    FI_WAIT_POLLFD,
];

const CQ_WAIT_COND: EnumNames = enum_names![FI_CQ_COND_NONE, FI_CQ_COND_THRESHOLD];

const CNTR_EVENTS: EnumNames = enum_names![FI_CNTR_EVENTS_COMP, FI_CNTR_EVENTS_BYTES];

/// The flag-name tables of one layout.
struct Tables {
    caps: FlagNames,
    mode: FlagNames,
    ep_type: EnumNames,
    addr_format: EnumNames,
    threading: EnumNames,
    progress: EnumNames,
    protocol: EnumNames,
    prov_specific: bool,
}

impl Layout {
    fn tables(self) -> Tables {
        match self {
            Layout::V1 => Tables {
                caps: CAPS_V1,
                mode: MODE_V1,
                ep_type: EP_TYPE_V1,
                addr_format: ADDR_FORMAT_V1,
                threading: THREADING_V1,
                progress: PROGRESS_V1,
                protocol: PROTOCOL_V1,
                prov_specific: true,
            },
            Layout::V2 => Tables {
                caps: CAPS_V2,
                mode: MODE_V2,
                ep_type: EP_TYPE_V2,
                addr_format: ADDR_FORMAT_V2,
                threading: THREADING_V2,
                progress: PROGRESS_V2,
                protocol: PROTOCOL_V2,
                prov_specific: false,
            },
        }
    }
}

/// Appends the names of the set bits of `v` in table order, comma
/// separated.
fn flags(out: &mut Out, names: FlagNames, v: u64) {
    for &(bit, name) in names {
        if v & bit != 0 {
            let mut s = String::with_capacity(name.len() + 2);
            s.push_str(name);
            s.push_str(", ");
            out.push_str(&s);
        }
    }
    out.remove_comma();
}

fn name_of(names: EnumNames, v: u32) -> Option<&'static str> {
    names.iter().find(|&&(n, _)| n == v).map(|&(_, s)| s)
}

/// Appends the name of `v`, or `Unknown`.
fn enum_value(out: &mut Out, names: EnumNames, v: u32) {
    out.push_str(name_of(names, v).unwrap_or("Unknown"));
}

/// As [`enum_value`], for values where 1.x marks provider-specific ones.
fn enum_value_prov(out: &mut Out, names: EnumNames, v: u32, prov_specific: bool) {
    match name_of(names, v) {
        Some(s) => out.push_str(s),
        None if prov_specific && v & v1::FI_PROV_SPECIFIC != 0 => out.push_str("Provider specific"),
        None => out.push_str("Unknown"),
    }
}

/// `comp_order` as 1.x prints it: only the NONE / STRICT summary and
/// FI_ORDER_DATA.
fn comp_order(out: &mut Out, v: u64) {
    if v & FI_ORDER_STRICT == FI_ORDER_NONE {
        out.push_str("FI_ORDER_NONE, ");
    } else if v & FI_ORDER_STRICT == FI_ORDER_STRICT {
        out.push_str("FI_ORDER_STRICT, ");
    }
    if v & FI_ORDER_DATA != 0 {
        out.push_str("FI_ORDER_DATA, ");
    }
    out.remove_comma();
}

/// `%p`: `(nil)` or `0x` and lowercase hex.
fn ptr(p: usize) -> String {
    if p == 0 {
        "(nil)".to_string()
    } else {
        format!("{p:#x}")
    }
}

/// `%s` of a C string that may be NULL.
fn cstr(s: &Option<Vec<u8>>) -> &[u8] {
    match s {
        Some(b) => b,
        None => b"(null)",
    }
}

/// `FI_MAJOR(v).FI_MINOR(v)`.
fn version(v: u32) -> String {
    format!("{}.{}", v >> 16, v & 0xffff)
}

// ---------------------------------------------------------------------------
// Plain-value views of the C structs

/// A C string field: `None` for NULL.
pub type CString = Option<Vec<u8>>;

/// `struct fi_tx_attr`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxAttr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: usize,
    pub size: usize,
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
    pub tclass: u32,
}

/// `struct fi_rx_attr`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RxAttr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: usize,
    pub size: usize,
    pub iov_limit: usize,
}

/// `struct fi_ep_attr` (the fields fi_tostr prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpAttr {
    pub ep_type: u32,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: usize,
    pub msg_prefix_size: usize,
    pub max_order_raw_size: usize,
    pub max_order_war_size: usize,
    pub max_order_waw_size: usize,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub auth_key_size: usize,
}

/// `struct fi_domain_attr` (the fields fi_tostr prints). `domain` is the
/// object's address; `progress` is the data-progress union.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainAttr {
    pub domain: usize,
    pub name: CString,
    pub threading: u32,
    pub control_progress: u32,
    pub progress: u32,
    pub resource_mgmt: u32,
    pub av_type: u32,
    pub mr_mode: u32,
    pub mr_key_size: usize,
    pub cq_data_size: usize,
    pub cq_cnt: usize,
    pub ep_cnt: usize,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub max_ep_tx_ctx: usize,
    pub max_ep_rx_ctx: usize,
    pub max_ep_stx_ctx: usize,
    pub max_ep_srx_ctx: usize,
    pub cntr_cnt: usize,
    pub mr_iov_limit: usize,
    pub caps: u64,
    pub mode: u64,
    pub auth_key_size: usize,
    pub max_err_data: usize,
    pub mr_cnt: usize,
    pub tclass: u32,
}

/// `struct fi_fabric_attr` (the fields fi_tostr prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricAttr {
    pub name: CString,
    pub prov_name: CString,
    pub prov_version: u32,
    pub api_version: u32,
}

/// An address field of `fi_info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Addr {
    /// A NULL pointer: printed `(null)`.
    #[default]
    Null,
    /// An address upstream cannot print (unknown format or family):
    /// printed as nothing.
    Unprintable,
    /// The address's text (see [`straddr`]).
    Text(Vec<u8>),
}

/// A `struct fid *` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fid {
    /// Printed as `%p` (NULL, or an object without a `tostr` op).
    #[default]
    Null,
    Ptr(usize),
    /// An object with a `tostr` op: the caller's hook appends its text.
    Custom(usize),
}

/// `struct fi_info`; `None` for a NULL attribute pointer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addrlen: usize,
    pub dest_addrlen: usize,
    pub src_addr: Addr,
    pub dest_addr: Addr,
    pub handle: Fid,
    pub tx_attr: Option<TxAttr>,
    pub rx_attr: Option<RxAttr>,
    pub ep_attr: Option<EpAttr>,
    pub domain_attr: Option<DomainAttr>,
    pub fabric_attr: Option<FabricAttr>,
    pub nic: Fid,
}

impl Info {
    /// The layout this info is printed in (see [`Layout::for_api_version`]).
    pub fn layout(&self) -> Layout {
        Layout::for_api_version(self.fabric_attr.as_ref().map(|f| f.api_version))
    }
}

/// `struct fi_av_attr` (the fields fi_tostr prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AvAttr {
    pub av_type: u32,
    pub count: usize,
    pub ep_per_node: usize,
    pub name: CString,
    pub flags: u64,
}

/// `struct fi_cq_attr` (the fields fi_tostr prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CqAttr {
    pub size: usize,
    pub flags: u64,
    pub format: u32,
    pub wait_obj: u32,
    pub signaling_vector: i32,
    pub wait_cond: u32,
}

/// `struct fi_mr_attr` (the fields fi_tostr prints); pointers as addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MrAttr {
    pub mr_iov: usize,
    pub iov_count: usize,
    pub access: u64,
    pub offset: u64,
    pub requested_key: u64,
    pub context: usize,
    pub auth_key_size: usize,
    pub iface: u32,
}

/// `struct fi_cntr_attr` (the fields fi_tostr prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CntrAttr {
    pub events: u32,
    pub wait_obj: u32,
    pub flags: u64,
}

/// `struct fi_cq_err_entry` (the fields fi_tostr prints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CqErrEntry {
    pub op_context: usize,
    pub flags: u64,
    pub len: usize,
    pub buf: usize,
    pub data: u64,
    pub tag: u64,
    pub olen: usize,
    pub err: i32,
    pub prov_errno: i32,
    pub err_data: usize,
    pub err_data_size: usize,
}

/// What to print: one variant per `enum fi_type` value, carrying the
/// value read from the caller's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    Info(&'a Info),
    EpType(u32),
    Caps(u64),
    OpFlags(u64),
    AddrFormat(u32),
    TxAttr(&'a TxAttr),
    RxAttr(&'a RxAttr),
    EpAttr(&'a EpAttr),
    DomainAttr(&'a DomainAttr),
    FabricAttr(&'a FabricAttr),
    Threading(u32),
    Progress(u32),
    Protocol(u32),
    MsgOrder(u64),
    Mode(u64),
    AvType(u32),
    AtomicType(u32),
    AtomicOp(u32),
    /// The library's version (the data is not read).
    Version,
    EqEvent(u32),
    CqEventFlags(u64),
    MrMode(u32),
    OpType(u32),
    Fid(Fid),
    CollectiveOp(u32),
    HmemIface(u32),
    CqFormat(u32),
    LogLevel(u32),
    LogSubsys(u32),
    AvAttr(&'a AvAttr),
    CqAttr(&'a CqAttr),
    MrAttr(&'a MrAttr),
    CntrAttr(&'a CntrAttr),
    CqErrEntry(&'a CqErrEntry),
    CqWaitCond(u32),
    WaitObj(u32),
    /// A type value this library does not know.
    UnknownType,
}

/// The text `FI_TYPE_VERSION` prints: the library's release.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Appends the text for `data`, as this library prints it: standalone
/// values in [`Layout::V2`], an `fi_info` in its own [`Info::layout`].
/// `fid_hook(out, addr)` appends the text of a [`Fid::Custom`] object.
pub fn write(out: &mut Out, data: &Data<'_>, fid_hook: &mut dyn FnMut(&mut Out, usize)) {
    write_as(out, data, Layout::V2, fid_hook);
}

/// As [`write`], with standalone values in `layout`.
pub fn write_as(
    out: &mut Out,
    data: &Data<'_>,
    layout: Layout,
    fid_hook: &mut dyn FnMut(&mut Out, usize),
) {
    let t = layout.tables();
    match *data {
        Data::Info(i) => info(out, i, fid_hook),
        Data::EpType(v) => enum_value(out, t.ep_type, v),
        Data::Caps(v) => flags(out, t.caps, v),
        Data::OpFlags(v) => flags(out, OP_FLAGS, v),
        Data::AddrFormat(v) => enum_value_prov(out, t.addr_format, v, t.prov_specific),
        Data::TxAttr(a) => tx_attr(out, layout, Some(a), ""),
        Data::RxAttr(a) => rx_attr(out, layout, Some(a), ""),
        Data::EpAttr(a) => ep_attr(out, layout, Some(a), ""),
        Data::DomainAttr(a) => domain_attr(out, layout, Some(a), ""),
        Data::FabricAttr(a) => fabric_attr(out, Some(a), ""),
        Data::Threading(v) => enum_value(out, t.threading, v),
        Data::Progress(v) => enum_value(out, t.progress, v),
        Data::Protocol(v) => enum_value_prov(out, t.protocol, v, t.prov_specific),
        Data::MsgOrder(v) => flags(out, MSG_ORDER, v),
        Data::Mode(v) => flags(out, t.mode, v),
        Data::AvType(v) => enum_value(out, AV_TYPE, v),
        Data::AtomicType(v) => enum_value(out, ATOMIC_TYPE, v),
        Data::AtomicOp(v) => enum_value(out, ATOMIC_OP, v),
        Data::Version => out.push_str(LIBRARY_VERSION),
        Data::EqEvent(v) => enum_value(out, EQ_EVENT, v),
        Data::CqEventFlags(v) => flags(out, CQ_EVENT_FLAGS, v),
        Data::MrMode(v) => flags(out, MR_MODE, u64::from(v)),
        Data::OpType(v) => enum_value(out, OP_TYPE, v),
        Data::Fid(fid) => fid_line(out, "fid: ", fid, fid_hook),
        Data::CollectiveOp(v) => enum_value(out, COLLECTIVE_OP, v),
        Data::HmemIface(v) => enum_value(out, HMEM_IFACE, v),
        Data::CqFormat(v) => enum_value(out, CQ_FORMAT, v),
        Data::LogLevel(v) => log_name(out, &crate::log::Level::NAMES, v),
        Data::LogSubsys(v) => log_name(out, &crate::log::Subsys::NAMES, v),
        Data::AvAttr(a) => av_attr(out, a),
        Data::CqAttr(a) => cq_attr(out, a),
        Data::MrAttr(a) => mr_attr(out, a),
        Data::CntrAttr(a) => cntr_attr(out, a),
        Data::CqErrEntry(e) => cq_err_entry(out, e),
        Data::CqWaitCond(v) => enum_value(out, CQ_WAIT_COND, v),
        Data::WaitObj(v) => enum_value(out, WAIT_OBJ, v),
        Data::UnknownType => out.push_str("Unknown type"),
    }
}

/// The whole text for `data` without a bound; custom fids print nothing.
pub fn to_bytes(data: &Data<'_>) -> Vec<u8> {
    let mut out = Out::unbounded();
    write(&mut out, data, &mut |_, _| {});
    out.buf
}

fn log_name(out: &mut Out, names: &[&str], v: u32) {
    out.push_str(names.get(v as usize).copied().unwrap_or("Unknown"));
}

fn fid_line(out: &mut Out, label: &str, fid: Fid, hook: &mut dyn FnMut(&mut Out, usize)) {
    match fid {
        Fid::Null => out.line(format_args!("{label}(nil)\n")),
        Fid::Ptr(p) => out.line(format_args!("{label}{}\n", ptr(p))),
        Fid::Custom(p) => hook(out, p),
    }
}

fn flag_line(out: &mut Out, prefix: &str, key: &str, names: FlagNames, v: u64) {
    out.line(format_args!("{prefix}{TAB}{key}: [ "));
    flags(out, names, v);
    out.push_str(" ]\n");
}

fn comp_order_line(out: &mut Out, prefix: &str, v: u64) {
    out.line(format_args!("{prefix}{TAB}comp_order: [ "));
    comp_order(out, v);
    out.push_str(" ]\n");
}

fn enum_line(out: &mut Out, prefix: &str, key: &str, names: EnumNames, v: u32) {
    out.line(format_args!("{prefix}{TAB}{key}: "));
    enum_value(out, names, v);
    out.push_str("\n");
}

fn tx_attr(out: &mut Out, layout: Layout, a: Option<&TxAttr>, prefix: &str) {
    let Some(a) = a else {
        out.line(format_args!("{prefix}fi_tx_attr: (null)\n"));
        return;
    };
    let t = layout.tables();
    out.line(format_args!("{prefix}fi_tx_attr:\n"));
    flag_line(out, prefix, "caps", t.caps, a.caps);
    flag_line(out, prefix, "mode", t.mode, a.mode);
    flag_line(out, prefix, "op_flags", OP_FLAGS, a.op_flags);
    flag_line(out, prefix, "msg_order", MSG_ORDER, a.msg_order);
    if layout == Layout::V1 {
        comp_order_line(out, prefix, a.comp_order);
    }
    out.line(format_args!(
        "{prefix}{TAB}inject_size: {}\n",
        a.inject_size
    ));
    out.line(format_args!("{prefix}{TAB}size: {}\n", a.size));
    out.line(format_args!("{prefix}{TAB}iov_limit: {}\n", a.iov_limit));
    out.line(format_args!(
        "{prefix}{TAB}rma_iov_limit: {}\n",
        a.rma_iov_limit
    ));
    out.line(format_args!("{prefix}{TAB}tclass: {:#x}\n", a.tclass));
}

fn rx_attr(out: &mut Out, layout: Layout, a: Option<&RxAttr>, prefix: &str) {
    let Some(a) = a else {
        out.line(format_args!("{prefix}fi_rx_attr: (null)\n"));
        return;
    };
    let t = layout.tables();
    out.line(format_args!("{prefix}fi_rx_attr:\n"));
    flag_line(out, prefix, "caps", t.caps, a.caps);
    flag_line(out, prefix, "mode", t.mode, a.mode);
    flag_line(out, prefix, "op_flags", OP_FLAGS, a.op_flags);
    flag_line(out, prefix, "msg_order", MSG_ORDER, a.msg_order);
    if layout == Layout::V1 {
        comp_order_line(out, prefix, a.comp_order);
        out.line(format_args!(
            "{prefix}{TAB}total_buffered_recv: {}\n",
            a.total_buffered_recv
        ));
    }
    out.line(format_args!("{prefix}{TAB}size: {}\n", a.size));
    out.line(format_args!("{prefix}{TAB}iov_limit: {}\n", a.iov_limit));
}

fn ctx_cnt(out: &mut Out, prefix: &str, key: &str, v: usize) {
    if v == FI_SHARED_CONTEXT {
        out.line(format_args!("{prefix}{TAB}{key}: FI_SHARED_CONTEXT\n"));
    } else {
        out.line(format_args!("{prefix}{TAB}{key}: {v}\n"));
    }
}

fn ep_attr(out: &mut Out, layout: Layout, a: Option<&EpAttr>, prefix: &str) {
    let Some(a) = a else {
        out.line(format_args!("{prefix}fi_ep_attr: (null)\n"));
        return;
    };
    let t = layout.tables();
    out.line(format_args!("{prefix}fi_ep_attr:\n"));
    enum_line(out, prefix, "type", t.ep_type, a.ep_type);
    out.line(format_args!("{prefix}{TAB}protocol: "));
    enum_value_prov(out, t.protocol, a.protocol, t.prov_specific);
    out.push_str("\n");
    out.line(format_args!(
        "{prefix}{TAB}protocol_version: {}\n",
        a.protocol_version as i32
    ));
    out.line(format_args!(
        "{prefix}{TAB}max_msg_size: {}\n",
        a.max_msg_size
    ));
    out.line(format_args!(
        "{prefix}{TAB}msg_prefix_size: {}\n",
        a.msg_prefix_size
    ));
    out.line(format_args!(
        "{prefix}{TAB}max_order_raw_size: {}\n",
        a.max_order_raw_size
    ));
    out.line(format_args!(
        "{prefix}{TAB}max_order_war_size: {}\n",
        a.max_order_war_size
    ));
    out.line(format_args!(
        "{prefix}{TAB}max_order_waw_size: {}\n",
        a.max_order_waw_size
    ));
    out.line(format_args!(
        "{prefix}{TAB}mem_tag_format: 0x{:016x}\n",
        a.mem_tag_format
    ));
    ctx_cnt(out, prefix, "tx_ctx_cnt", a.tx_ctx_cnt);
    ctx_cnt(out, prefix, "rx_ctx_cnt", a.rx_ctx_cnt);
    out.line(format_args!(
        "{prefix}{TAB}auth_key_size: {}\n",
        a.auth_key_size
    ));
}

fn domain_attr(out: &mut Out, layout: Layout, a: Option<&DomainAttr>, prefix: &str) {
    let Some(a) = a else {
        out.line(format_args!("{prefix}fi_domain_attr: (null)\n"));
        return;
    };
    let t = layout.tables();
    out.line(format_args!("{prefix}fi_domain_attr:\n"));
    // Upstream prints the pointer with %x: its low 32 bits.
    out.line(format_args!(
        "{prefix}{TAB}domain: {:#x}\n",
        a.domain as u32
    ));
    out.line(format_args!("{prefix}{TAB}name: "));
    out.push(cstr(&a.name));
    out.push_str("\n");
    enum_line(out, prefix, "threading", t.threading, a.threading);
    if layout == Layout::V1 {
        enum_line(
            out,
            prefix,
            "control_progress",
            t.progress,
            a.control_progress,
        );
        enum_line(out, prefix, "data_progress", t.progress, a.progress);
    } else {
        enum_line(out, prefix, "progress", t.progress, a.progress);
    }
    enum_line(out, prefix, "resource_mgmt", RESOURCE_MGMT, a.resource_mgmt);
    enum_line(out, prefix, "av_type", AV_TYPE, a.av_type);
    flag_line(out, prefix, "mr_mode", MR_MODE, u64::from(a.mr_mode));
    let counts = [
        ("mr_key_size", a.mr_key_size),
        ("cq_data_size", a.cq_data_size),
        ("cq_cnt", a.cq_cnt),
        ("ep_cnt", a.ep_cnt),
        ("tx_ctx_cnt", a.tx_ctx_cnt),
        ("rx_ctx_cnt", a.rx_ctx_cnt),
        ("max_ep_tx_ctx", a.max_ep_tx_ctx),
        ("max_ep_rx_ctx", a.max_ep_rx_ctx),
        ("max_ep_stx_ctx", a.max_ep_stx_ctx),
        ("max_ep_srx_ctx", a.max_ep_srx_ctx),
        ("cntr_cnt", a.cntr_cnt),
        ("mr_iov_limit", a.mr_iov_limit),
    ];
    for (key, v) in counts {
        out.line(format_args!("{prefix}{TAB}{key}: {v}\n"));
    }
    flag_line(out, prefix, "caps", t.caps, a.caps);
    flag_line(out, prefix, "mode", t.mode, a.mode);
    out.line(format_args!(
        "{prefix}{TAB}auth_key_size: {}\n",
        a.auth_key_size
    ));
    out.line(format_args!(
        "{prefix}{TAB}max_err_data: {}\n",
        a.max_err_data
    ));
    out.line(format_args!("{prefix}{TAB}mr_cnt: {}\n", a.mr_cnt));
    out.line(format_args!("{prefix}{TAB}tclass: {:#x}\n", a.tclass));
}

fn fabric_attr(out: &mut Out, a: Option<&FabricAttr>, prefix: &str) {
    let Some(a) = a else {
        out.line(format_args!("{prefix}fi_fabric_attr: (null)\n"));
        return;
    };
    out.line(format_args!("{prefix}fi_fabric_attr:\n"));
    out.line(format_args!("{prefix}{TAB}name: "));
    out.push(cstr(&a.name));
    out.push_str("\n");
    out.line(format_args!("{prefix}{TAB}prov_name: "));
    out.push(cstr(&a.prov_name));
    out.push_str("\n");
    out.line(format_args!(
        "{prefix}{TAB}prov_version: {}\n",
        version(a.prov_version)
    ));
    out.line(format_args!(
        "{prefix}{TAB}api_version: {}\n",
        version(a.api_version)
    ));
}

fn addr(out: &mut Out, a: &Addr) {
    match a {
        Addr::Null => out.push_str("(null)"),
        Addr::Unprintable => {}
        Addr::Text(s) => out.push_addr(s),
    }
}

fn info(out: &mut Out, i: &Info, hook: &mut dyn FnMut(&mut Out, usize)) {
    let layout = i.layout();
    let t = layout.tables();
    out.push_str("fi_info:\n");
    out.line(format_args!("{TAB}caps: [ "));
    flags(out, t.caps, i.caps);
    out.push_str(" ]\n");
    out.line(format_args!("{TAB}mode: [ "));
    flags(out, t.mode, i.mode);
    out.push_str(" ]\n");
    out.line(format_args!("{TAB}addr_format: "));
    enum_value_prov(out, t.addr_format, i.addr_format, t.prov_specific);
    out.push_str("\n");
    out.line(format_args!("{TAB}src_addrlen: {}\n", i.src_addrlen));
    out.line(format_args!("{TAB}dest_addrlen: {}\n", i.dest_addrlen));
    out.line(format_args!("{TAB}src_addr: "));
    addr(out, &i.src_addr);
    out.push_str("\n");
    out.line(format_args!("{TAB}dest_addr: "));
    addr(out, &i.dest_addr);
    out.push_str("\n");
    fid_line(out, "    handle: ", i.handle, hook);
    tx_attr(out, layout, i.tx_attr.as_ref(), TAB);
    rx_attr(out, layout, i.rx_attr.as_ref(), TAB);
    ep_attr(out, layout, i.ep_attr.as_ref(), TAB);
    domain_attr(out, layout, i.domain_attr.as_ref(), TAB);
    fabric_attr(out, i.fabric_attr.as_ref(), TAB);
    fid_line(out, "    nic: ", i.nic, hook);
}

fn av_attr(out: &mut Out, a: &AvAttr) {
    out.push_str("fi_av_attr:\n");
    out.line(format_args!("{TAB}type: "));
    enum_value(out, AV_TYPE, a.av_type);
    out.push_str("\n");
    out.line(format_args!("{TAB}count: {}\n", a.count));
    out.line(format_args!("{TAB}ep_per_node: {}\n", a.ep_per_node));
    out.line(format_args!("{TAB}name: "));
    out.push(cstr(&a.name));
    out.push_str("\n");
    out.line(format_args!("{TAB}flags: [ "));
    flags(out, AV_FLAGS, a.flags);
    out.push_str(" ]\n");
}

fn cq_attr(out: &mut Out, a: &CqAttr) {
    out.push_str("fi_cq_attr:\n");
    out.line(format_args!("{TAB}size: {}\n", a.size));
    out.line(format_args!("{TAB}flags: [ "));
    flags(out, CQ_FLAGS, a.flags);
    out.push_str(" ]\n");
    out.line(format_args!("{TAB}format: "));
    enum_value(out, CQ_FORMAT, a.format);
    out.push_str("\n");
    out.line(format_args!("{TAB}wait_obj: "));
    enum_value(out, WAIT_OBJ, a.wait_obj);
    out.push_str("\n");
    out.line(format_args!(
        "{TAB}signaling_vector: {}\n",
        a.signaling_vector
    ));
    out.line(format_args!("{TAB}wait_cond: "));
    enum_value(out, CQ_WAIT_COND, a.wait_cond);
    out.push_str("\n");
}

fn mr_attr(out: &mut Out, a: &MrAttr) {
    out.push_str("fi_mr_attr:\n");
    out.line(format_args!("{TAB}mr_iov: {}\n", ptr(a.mr_iov)));
    out.line(format_args!("{TAB}iov_count: {}\n", a.iov_count));
    out.line(format_args!("{TAB}access: [ "));
    flags(out, MR_ACCESS, a.access);
    out.push_str(" ]\n");
    out.line(format_args!("{TAB}offset: {:#x}\n", a.offset));
    out.line(format_args!("{TAB}requested_key: {:#x}\n", a.requested_key));
    out.line(format_args!("{TAB}context: {}\n", ptr(a.context)));
    out.line(format_args!("{TAB}auth_key_size: {}\n", a.auth_key_size));
    out.line(format_args!("{TAB}iface: "));
    enum_value(out, HMEM_IFACE, a.iface);
    out.push_str("\n");
}

fn cntr_attr(out: &mut Out, a: &CntrAttr) {
    out.push_str("fi_cntr_attr:\n");
    out.line(format_args!("{TAB}events: "));
    enum_value(out, CNTR_EVENTS, a.events);
    out.push_str("\n");
    out.line(format_args!("{TAB}wait_obj: "));
    enum_value(out, WAIT_OBJ, a.wait_obj);
    out.push_str("\n");
    out.line(format_args!("{TAB}flags: {:#x}\n", a.flags));
}

fn cq_err_entry(out: &mut Out, e: &CqErrEntry) {
    out.push_str("fi_cq_err_entry:\n");
    out.line(format_args!("{TAB}op_context: {}\n", ptr(e.op_context)));
    out.line(format_args!("{TAB}flags: {:#x}\n", e.flags));
    out.line(format_args!("{TAB}len: {}\n", e.len));
    out.line(format_args!("{TAB}buf: {}\n", ptr(e.buf)));
    out.line(format_args!("{TAB}data: {}\n", e.data));
    out.line(format_args!("{TAB}tag: {:#x}\n", e.tag));
    out.line(format_args!("{TAB}olen: {}\n", e.olen));
    out.line(format_args!("{TAB}err: {}\n", e.err));
    // Upstream prints `err` under this key too; kept for identical output.
    out.line(format_args!("{TAB}prov_errno: {}\n", e.err));
    out.line(format_args!("{TAB}err_data: {}\n", ptr(e.err_data)));
    out.line(format_args!("{TAB}err_data_size: {}\n", e.err_data_size));
}

// ---------------------------------------------------------------------------
// Addresses

/// What the address printer reads for `addr_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrNeed {
    /// This many bytes at the address.
    Bytes(usize),
    /// A NUL-terminated string.
    CStr,
    /// Only the address itself (printed as a pointer).
    Pointer,
    /// The 2-byte address family first; then ask again with it.
    Family,
    /// Nothing: the format is not printable.
    Nothing,
}

/// Bytes of `struct ofi_sockaddr_ib` that the printer reads.
const SOCKADDR_IB_LEN: usize = 48;

fn af_inet() -> u16 {
    libc::AF_INET as u16
}

fn af_inet6() -> u16 {
    libc::AF_INET6 as u16
}

/// How many bytes [`straddr`] needs for `addr_format`; `family` is the
/// address's `sa_family` once known.
pub fn addr_need(addr_format: u32, family: Option<u16>) -> AddrNeed {
    let fmt = addr_format as i32;
    let by_family = |base: usize| match family {
        None => AddrNeed::Family,
        Some(f) if f == af_inet() => AddrNeed::Bytes(base + 4),
        Some(f) if f == af_inet6() => AddrNeed::Bytes(base + 16),
        Some(_) => AddrNeed::Nothing,
    };
    match fmt {
        FI_SOCKADDR => match family {
            None => AddrNeed::Family,
            Some(f) if f == af_inet() => AddrNeed::Bytes(8),
            Some(f) if f == af_inet6() => AddrNeed::Bytes(24),
            Some(_) => AddrNeed::Nothing,
        },
        FI_SOCKADDR_IN => by_family(4),
        FI_SOCKADDR_IN6 => by_family(8),
        FI_SOCKADDR_IB => AddrNeed::Bytes(SOCKADDR_IB_LEN),
        FI_ADDR_EFA => AddrNeed::Bytes(24),
        FI_ADDR_IB_UD => AddrNeed::Bytes(27),
        FI_ADDR_PSMX | FI_ADDR_GNI | FI_ADDR_OPX => AddrNeed::Bytes(8),
        FI_ADDR_PSMX2 => AddrNeed::Bytes(16),
        FI_ADDR_PSMX3 => AddrNeed::Bytes(32),
        FI_ADDR_CXI => AddrNeed::Bytes(4),
        FI_ADDR_BGQ | FI_ADDR_MLX => AddrNeed::Pointer,
        FI_ADDR_STR => AddrNeed::CStr,
        _ => AddrNeed::Nothing,
    }
}

fn ne_u16(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn ne_u32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn ne_u64(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// Dotted IPv4 text of 4 bytes.
fn ntop4(b: &[u8]) -> String {
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// IPv6 text of 16 bytes, as the C library's `inet_ntop` writes it: the
/// first longest run of two or more zero groups becomes `::`, and the
/// IPv4-compatible and IPv4-mapped forms end in dotted IPv4.
pub fn ntop6(b: &[u8]) -> String {
    let words: Vec<u16> = (0..8).map(|i| be_u16(b, 2 * i)).collect();
    // (first group, length) of a run of zero groups.
    type Run = Option<(usize, usize)>;
    let (mut best, mut cur): (Run, Run) = (None, None);
    for (i, &w) in words.iter().enumerate() {
        if w == 0 {
            cur = Some(match cur {
                Some((base, len)) => (base, len + 1),
                None => (i, 1),
            });
        } else if let Some(c) = cur.take() {
            if best.is_none_or(|b| c.1 > b.1) {
                best = Some(c);
            }
        }
    }
    if let Some(c) = cur {
        if best.is_none_or(|b| c.1 > b.1) {
            best = Some(c);
        }
    }
    let best = best.filter(|b| b.1 >= 2);
    let mut s = String::new();
    let mut i = 0;
    while i < 8 {
        if let Some((base, len)) = best {
            if i >= base && i < base + len {
                if i == base {
                    s.push(':');
                }
                i += 1;
                continue;
            }
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6 {
            if let Some((0, len)) = best {
                if len == 6 || (len == 5 && words[5] == 0xffff) {
                    s.push_str(&ntop4(&b[12..16]));
                    break;
                }
            }
        }
        let _ = write!(s, "{:x}", words[i]);
        i += 1;
    }
    if let Some((base, len)) = best {
        if base + len == 8 {
            s.push(':');
        }
    }
    s
}

/// Text of an IP address given its family: `None` for another family.
fn ntop(family: u16, b: &[u8]) -> Option<String> {
    if family == af_inet() {
        Some(ntop4(b))
    } else if family == af_inet6() {
        Some(ntop6(b))
    } else {
        None
    }
}

/// The text upstream's address printer writes for an address of
/// `addr_format` whose leading bytes are `bytes` (as many as
/// [`addr_need`] asked for; the string for `FI_ADDR_STR`) and whose
/// location is `pointer`. `None` when upstream prints nothing.
pub fn straddr(addr_format: u32, pointer: usize, bytes: &[u8]) -> Option<Vec<u8>> {
    let fmt = addr_format as i32;
    let need = |n: usize| bytes.len() >= n;
    let family = if bytes.len() >= 2 {
        ne_u16(bytes, 0)
    } else {
        0
    };
    let sin = |b: &[u8]| -> Option<String> {
        let ip = ntop(ne_u16(b, 0), b.get(4..)?)?;
        Some(format!("fi_sockaddr_in://{ip}:{}", be_u16(b, 2)))
    };
    let sin6 = |b: &[u8]| -> Option<String> {
        let ip = ntop(ne_u16(b, 0), b.get(8..)?)?;
        Some(format!("fi_sockaddr_in6://[{ip}]:{}", be_u16(b, 2)))
    };
    let text = match fmt {
        FI_SOCKADDR if need(2) && family == af_inet() && need(8) => sin(bytes)?,
        FI_SOCKADDR if need(2) && family == af_inet6() && need(24) => sin6(bytes)?,
        FI_SOCKADDR_IN if need(addr_bytes_for(4, family)) => sin(bytes)?,
        FI_SOCKADDR_IN6 if need(addr_bytes_for(8, family)) => sin6(bytes)?,
        FI_ADDR_EFA if need(24) => format!(
            "fi_addr_efa://[{}]:{}:{}",
            ntop6(&bytes[..16]),
            ne_u16(bytes, 16),
            ne_u32(bytes, 20)
        ),
        FI_SOCKADDR_IB if need(SOCKADDR_IB_LEN) => format!(
            "fi_sockaddr_ib://[{}]:0x{:x}:0x{:x}:0x{:x}",
            ntop6(&bytes[8..24]),
            be_u16(bytes, 2),
            ((be_u64(bytes, 24) >> 16) as u16) & 0xfff,
            (be_u64(bytes, 40) as u8),
        ),
        FI_ADDR_PSMX if need(8) => format!("fi_addr_psmx://{:x}", ne_u64(bytes, 0)),
        FI_ADDR_PSMX2 if need(16) => format!(
            "fi_addr_psmx2://{:x}:{:x}",
            ne_u64(bytes, 0),
            ne_u64(bytes, 8)
        ),
        FI_ADDR_PSMX3 if need(32) => format!(
            "fi_addr_psmx3://{:x}:{:x}:{:x}:{:x}",
            ne_u64(bytes, 0),
            ne_u64(bytes, 8),
            ne_u64(bytes, 16),
            ne_u64(bytes, 24)
        ),
        FI_ADDR_GNI if need(8) => format!("fi_addr_gni://{:x}", ne_u64(bytes, 0)),
        FI_ADDR_BGQ => format!("fi_addr_bgq://{}", ptr(pointer)),
        FI_ADDR_OPX if need(8) => format!("fi_addr_opx://{:016x}", ne_u64(bytes, 0)),
        FI_ADDR_MLX => format!("fi_addr_mlx://{}", ptr(pointer)),
        FI_ADDR_IB_UD if need(27) => format!(
            "fi_addr_ib_ud://{}:{:x}/{:x}/{:x}/{:x}",
            ntop6(&bytes[..16]),
            ne_u32(bytes, 16),
            ne_u16(bytes, 20),
            ne_u16(bytes, 22),
            bytes[26]
        ),
        FI_ADDR_STR => return Some(bytes.to_vec()),
        FI_ADDR_CXI if need(4) => format!("fi_addr_cxi://0x{:08x}", ne_u32(bytes, 0)),
        _ => return None,
    };
    Some(text.into_bytes())
}

/// Bytes a sockaddr_in/in6 print reads: `base` (offset of the address)
/// plus 4 or 16 by the family field; an unknown family needs only the
/// family itself.
fn addr_bytes_for(base: usize, family: u16) -> usize {
    if family == af_inet() {
        base + 4
    } else if family == af_inet6() {
        base + 16
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text of `data` in `layout`, without a bound.
    fn text_as(data: &Data<'_>, layout: Layout) -> String {
        let mut out = Out::unbounded();
        write_as(&mut out, data, layout, &mut |_, _| {});
        String::from_utf8(out.as_bytes().to_vec()).unwrap()
    }

    fn text(data: &Data<'_>) -> String {
        text_as(data, Layout::V2)
    }

    /// Text of `data` in a C buffer of `cap` bytes.
    fn text_cap(data: &Data<'_>, cap: usize) -> String {
        let mut out = Out::new(cap);
        write(&mut out, data, &mut |_, _| {});
        String::from_utf8(out.as_bytes().to_vec()).unwrap()
    }

    /// `FI_VERSION(major, minor)`.
    fn ver(major: u32, minor: u32) -> u32 {
        (major << 16) | minor
    }

    fn s(v: &str) -> CString {
        Some(v.as_bytes().to_vec())
    }

    /// A standalone value of fi_type `ty` (as the C API reads it).
    fn scalar(ty: u32, v: u64) -> Data<'static> {
        let i = v as u32;
        match ty {
            1 => Data::EpType(i),
            2 => Data::Caps(v),
            3 => Data::OpFlags(v),
            4 => Data::AddrFormat(i),
            10 => Data::Threading(i),
            11 => Data::Progress(i),
            12 => Data::Protocol(i),
            13 => Data::MsgOrder(v),
            14 => Data::Mode(v),
            15 => Data::AvType(i),
            16 => Data::AtomicType(i),
            17 => Data::AtomicOp(i),
            19 => Data::EqEvent(i),
            20 => Data::CqEventFlags(v),
            21 => Data::MrMode(i),
            22 => Data::OpType(i),
            24 => Data::CollectiveOp(i),
            25 => Data::HmemIface(i),
            26 => Data::CqFormat(i),
            27 => Data::LogLevel(i),
            28 => Data::LogSubsys(i),
            34 => Data::CqWaitCond(i),
            35 => Data::WaitObj(i),
            _ => panic!("not a scalar type: {ty}"),
        }
    }

    /// Every value of a flag or enum type that Debian's libfabric 1.17
    /// names, as its `fi_tostr` printed it: `flag<type> bit<n>|text`,
    /// `enum<type> v<n>|text`, `mrmode bit<n>|text`. The probe also tried
    /// every other bit, enum values -1..39, 256, 257, 258, 1000, 2^30 and
    /// 2^31-1: those printed "" (flags) or "Unknown" (enums), except -1 for
    /// address formats and protocols, "Provider specific".
    const NAMED_1_17: &str = r#"flag2 bit1|FI_MSG
flag2 bit2|FI_RMA
flag2 bit3|FI_TAGGED
flag2 bit4|FI_ATOMIC
flag2 bit5|FI_MULTICAST
flag2 bit6|FI_COLLECTIVE
flag2 bit8|FI_READ
flag2 bit9|FI_WRITE
flag2 bit10|FI_RECV
flag2 bit11|FI_SEND
flag2 bit12|FI_REMOTE_READ
flag2 bit13|FI_REMOTE_WRITE
flag2 bit16|FI_MULTI_RECV
flag2 bit17|FI_REMOTE_CQ_DATA
flag2 bit20|FI_TRIGGER
flag2 bit21|FI_FENCE
flag2 bit47|FI_HMEM
flag2 bit48|FI_VARIABLE_MSG
flag2 bit49|FI_RMA_PMEM
flag2 bit50|FI_SOURCE_ERR
flag2 bit51|FI_LOCAL_COMM
flag2 bit52|FI_REMOTE_COMM
flag2 bit53|FI_SHARED_AV
flag2 bit56|FI_RMA_EVENT
flag2 bit57|FI_SOURCE
flag2 bit58|FI_NAMED_RX_CTX
flag2 bit59|FI_DIRECTED_RECV
flag3 bit5|FI_MULTICAST
flag3 bit16|FI_MULTI_RECV
flag3 bit17|FI_REMOTE_CQ_DATA
flag3 bit18|FI_MORE
flag3 bit19|FI_PEEK
flag3 bit20|FI_TRIGGER
flag3 bit21|FI_FENCE
flag3 bit24|FI_COMPLETION
flag3 bit25|FI_INJECT
flag3 bit26|FI_INJECT_COMPLETE
flag3 bit27|FI_TRANSMIT_COMPLETE
flag3 bit28|FI_DELIVERY_COMPLETE
flag3 bit29|FI_AFFINITY
flag3 bit31|FI_MATCH_COMPLETE
flag3 bit58|FI_DISCARD
flag3 bit59|FI_CLAIM
flag13 bit0|FI_ORDER_RAR
flag13 bit1|FI_ORDER_RAW
flag13 bit2|FI_ORDER_RAS
flag13 bit3|FI_ORDER_WAR
flag13 bit4|FI_ORDER_WAW
flag13 bit5|FI_ORDER_WAS
flag13 bit6|FI_ORDER_SAR
flag13 bit7|FI_ORDER_SAW
flag13 bit8|FI_ORDER_SAS
flag13 bit32|FI_ORDER_RMA_RAR
flag13 bit33|FI_ORDER_RMA_RAW
flag13 bit34|FI_ORDER_RMA_WAR
flag13 bit35|FI_ORDER_RMA_WAW
flag13 bit36|FI_ORDER_ATOMIC_RAR
flag13 bit37|FI_ORDER_ATOMIC_RAW
flag13 bit38|FI_ORDER_ATOMIC_WAR
flag13 bit39|FI_ORDER_ATOMIC_WAW
flag14 bit51|FI_BUFFERED_RECV
flag14 bit52|FI_CONTEXT2
flag14 bit53|FI_RESTRICTED_COMP
flag14 bit54|FI_NOTIFY_FLAGS_ONLY
flag14 bit55|FI_LOCAL_MR
flag14 bit56|FI_RX_CQ_DATA
flag14 bit57|FI_ASYNC_IOV
flag14 bit58|FI_MSG_PREFIX
flag14 bit59|FI_CONTEXT
flag20 bit1|FI_MSG
flag20 bit2|FI_RMA
flag20 bit3|FI_TAGGED
flag20 bit4|FI_ATOMIC
flag20 bit8|FI_READ
flag20 bit9|FI_WRITE
flag20 bit10|FI_RECV
flag20 bit11|FI_SEND
flag20 bit12|FI_REMOTE_READ
flag20 bit13|FI_REMOTE_WRITE
flag20 bit16|FI_MULTI_RECV
flag20 bit17|FI_REMOTE_CQ_DATA
flag20 bit18|FI_MORE
flag20 bit59|FI_CLAIM
mrmode bit0|FI_MR_BASIC
mrmode bit1|FI_MR_SCALABLE
mrmode bit2|FI_MR_LOCAL
mrmode bit3|FI_MR_RAW
mrmode bit4|FI_MR_VIRT_ADDR
mrmode bit5|FI_MR_ALLOCATED
mrmode bit6|FI_MR_PROV_KEY
mrmode bit7|FI_MR_MMU_NOTIFY
mrmode bit8|FI_MR_RMA_EVENT
mrmode bit9|FI_MR_ENDPOINT
mrmode bit10|FI_MR_HMEM
mrmode bit11|FI_MR_COLLECTIVE
enum1 v0|FI_EP_UNSPEC
enum1 v1|FI_EP_MSG
enum1 v2|FI_EP_DGRAM
enum1 v3|FI_EP_RDM
enum1 v4|FI_EP_SOCK_STREAM
enum1 v5|FI_EP_SOCK_DGRAM
enum4 v-1|Provider specific
enum4 v0|FI_FORMAT_UNSPEC
enum4 v1|FI_SOCKADDR
enum4 v2|FI_SOCKADDR_IN
enum4 v3|FI_SOCKADDR_IN6
enum4 v4|FI_SOCKADDR_IB
enum4 v5|FI_ADDR_PSMX
enum4 v6|FI_ADDR_GNI
enum4 v7|FI_ADDR_BGQ
enum4 v8|FI_ADDR_MLX
enum4 v9|FI_ADDR_STR
enum4 v10|FI_ADDR_PSMX2
enum4 v11|FI_ADDR_IB_UD
enum4 v12|FI_ADDR_EFA
enum4 v13|FI_ADDR_PSMX3
enum4 v14|FI_ADDR_OPX
enum4 v15|FI_ADDR_CXI
enum10 v0|FI_THREAD_UNSPEC
enum10 v1|FI_THREAD_SAFE
enum10 v2|FI_THREAD_FID
enum10 v3|FI_THREAD_DOMAIN
enum10 v4|FI_THREAD_COMPLETION
enum10 v5|FI_THREAD_ENDPOINT
enum11 v0|FI_PROGRESS_UNSPEC
enum11 v1|FI_PROGRESS_AUTO
enum11 v2|FI_PROGRESS_MANUAL
enum12 v-1|Provider specific
enum12 v0|FI_PROTO_UNSPEC
enum12 v1|FI_PROTO_RDMA_CM_IB_RC
enum12 v2|FI_PROTO_IWARP
enum12 v3|FI_PROTO_IB_UD
enum12 v4|FI_PROTO_PSMX
enum12 v5|FI_PROTO_UDP
enum12 v6|FI_PROTO_SOCK_TCP
enum12 v8|FI_PROTO_IWARP_RDM
enum12 v9|FI_PROTO_IB_RDM
enum12 v10|FI_PROTO_GNI
enum12 v11|FI_PROTO_RXM
enum12 v12|FI_PROTO_RXD
enum12 v13|FI_PROTO_MLX
enum12 v14|FI_PROTO_NETWORKDIRECT
enum12 v15|FI_PROTO_PSMX2
enum12 v16|FI_PROTO_SHM
enum12 v18|FI_PROTO_RSTREAM
enum12 v19|FI_PROTO_RDMA_CM_IB_XRC
enum12 v20|FI_PROTO_EFA
enum12 v21|FI_PROTO_PSMX3
enum12 v22|FI_PROTO_RXM_TCP
enum12 v23|FI_PROTO_OPX
enum12 v24|FI_PROTO_CXI
enum12 v25|FI_PROTO_XNET
enum15 v0|FI_AV_UNSPEC
enum15 v1|FI_AV_MAP
enum15 v2|FI_AV_TABLE
enum16 v0|FI_INT8
enum16 v1|FI_UINT8
enum16 v2|FI_INT16
enum16 v3|FI_UINT16
enum16 v4|FI_INT32
enum16 v5|FI_UINT32
enum16 v6|FI_INT64
enum16 v7|FI_UINT64
enum16 v8|FI_FLOAT
enum16 v9|FI_DOUBLE
enum16 v10|FI_FLOAT_COMPLEX
enum16 v11|FI_DOUBLE_COMPLEX
enum16 v12|FI_LONG_DOUBLE
enum16 v13|FI_LONG_DOUBLE_COMPLEX
enum16 v14|FI_INT128
enum16 v15|FI_UINT128
enum17 v0|FI_MIN
enum17 v1|FI_MAX
enum17 v2|FI_SUM
enum17 v3|FI_PROD
enum17 v4|FI_LOR
enum17 v5|FI_LAND
enum17 v6|FI_BOR
enum17 v7|FI_BAND
enum17 v8|FI_LXOR
enum17 v9|FI_BXOR
enum17 v10|FI_ATOMIC_READ
enum17 v11|FI_ATOMIC_WRITE
enum17 v12|FI_CSWAP
enum17 v13|FI_CSWAP_NE
enum17 v14|FI_CSWAP_LE
enum17 v15|FI_CSWAP_LT
enum17 v16|FI_CSWAP_GE
enum17 v17|FI_CSWAP_GT
enum17 v18|FI_MSWAP
enum19 v0|FI_NOTIFY
enum19 v1|FI_CONNREQ
enum19 v2|FI_CONNECTED
enum19 v3|FI_SHUTDOWN
enum19 v4|FI_MR_COMPLETE
enum19 v5|FI_AV_COMPLETE
enum19 v6|FI_JOIN_COMPLETE
enum22 v0|FI_OP_RECV
enum22 v1|FI_OP_SEND
enum22 v2|FI_OP_TRECV
enum22 v3|FI_OP_TSEND
enum22 v4|FI_OP_READ
enum22 v5|FI_OP_WRITE
enum22 v6|FI_OP_ATOMIC
enum22 v7|FI_OP_FETCH_ATOMIC
enum22 v8|FI_OP_COMPARE_ATOMIC
enum22 v9|FI_OP_CNTR_SET
enum22 v10|FI_OP_CNTR_ADD
enum24 v0|FI_BARRIER
enum24 v1|FI_BROADCAST
enum24 v2|FI_ALLTOALL
enum24 v3|FI_ALLREDUCE
enum24 v4|FI_ALLGATHER
enum24 v5|FI_REDUCE_SCATTER
enum24 v6|FI_REDUCE
enum24 v7|FI_SCATTER
enum24 v8|FI_GATHER
enum25 v0|FI_HMEM_SYSTEM
enum25 v1|FI_HMEM_CUDA
enum25 v2|FI_HMEM_ROCR
enum25 v3|FI_HMEM_ZE
enum25 v4|FI_HMEM_NEURON
enum25 v5|FI_HMEM_SYNAPSEAI
enum26 v0|FI_CQ_FORMAT_UNSPEC
enum26 v1|FI_CQ_FORMAT_CONTEXT
enum26 v2|FI_CQ_FORMAT_MSG
enum26 v3|FI_CQ_FORMAT_DATA
enum26 v4|FI_CQ_FORMAT_TAGGED
enum27 v0|warn
enum27 v1|trace
enum27 v2|info
enum27 v3|debug
enum28 v0|core
enum28 v1|fabric
enum28 v2|domain
enum28 v3|ep_ctrl
enum28 v4|ep_data
enum28 v5|av
enum28 v6|cq
enum28 v7|eq
enum28 v8|mr
enum28 v9|cntr
"#;

    const ENUM_PROBES: [i64; 47] = {
        let mut v = [0i64; 47];
        let mut i = 0;
        while i < 41 {
            v[i] = i as i64 - 1;
            i += 1;
        }
        v[41] = 256;
        v[42] = 257;
        v[43] = 258;
        v[44] = 0x4000_0000;
        v[45] = 0x7fff_ffff;
        v[46] = 1000;
        v
    };

    #[test]
    fn v1_names_match_libfabric_1_17_exhaustively() {
        use std::collections::HashMap;
        let mut named: HashMap<(String, i64), String> = HashMap::new();
        for line in NAMED_1_17.lines() {
            let (key, want) = line.split_once('|').unwrap();
            let (kind, n) = key.split_once(' ').unwrap();
            let n: i64 = n
                .trim_start_matches("bit")
                .trim_start_matches('v')
                .parse()
                .unwrap();
            named.insert((kind.to_string(), n), want.to_string());
        }
        let mut checked = 0;
        for ty in [2u32, 3, 13, 14, 20] {
            let kind = format!("flag{ty}");
            for bit in 0..64 {
                let got = text_as(&scalar(ty, 1u64 << bit), Layout::V1);
                let want = named.get(&(kind.clone(), bit)).cloned().unwrap_or_default();
                assert_eq!(got, want, "{kind} bit {bit}");
                checked += 1;
            }
            assert_eq!(text_as(&scalar(ty, 0), Layout::V1), "", "{kind} zero");
        }
        for bit in 0..32 {
            let got = text_as(&Data::MrMode(1 << bit), Layout::V1);
            let want = named
                .get(&("mrmode".to_string(), bit))
                .cloned()
                .unwrap_or_default();
            assert_eq!(got, want, "mr_mode bit {bit}");
            checked += 1;
        }
        for ty in [1u32, 4, 10, 11, 12, 15, 16, 17, 19, 22, 24, 25, 26, 27, 28] {
            let kind = format!("enum{ty}");
            for v in ENUM_PROBES {
                let got = text_as(&scalar(ty, v as u32 as u64), Layout::V1);
                let want = match named.get(&(kind.clone(), v)) {
                    Some(w) => w.clone(),
                    None if v == -1 && (ty == 4 || ty == 12) => "Provider specific".into(),
                    None => "Unknown".into(),
                };
                assert_eq!(got, want, "{kind} value {v}");
                checked += 1;
            }
        }
        assert_eq!(checked, 5 * 64 + 32 + 15 * 47);
    }

    #[test]
    fn v1_flag_lists_keep_upstream_order() {
        let all = |ty| text_as(&scalar(ty, !0), Layout::V1);
        assert_eq!(
            all(2),
            "FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_MULTICAST, FI_COLLECTIVE, FI_READ, \
             FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, \
             FI_REMOTE_CQ_DATA, FI_TRIGGER, FI_FENCE, FI_VARIABLE_MSG, FI_RMA_PMEM, \
             FI_SOURCE_ERR, FI_LOCAL_COMM, FI_REMOTE_COMM, FI_SHARED_AV, FI_RMA_EVENT, \
             FI_SOURCE, FI_NAMED_RX_CTX, FI_DIRECTED_RECV, FI_HMEM"
        );
        assert_eq!(
            all(3),
            "FI_MULTICAST, FI_MULTI_RECV, FI_REMOTE_CQ_DATA, FI_MORE, FI_PEEK, FI_TRIGGER, \
             FI_FENCE, FI_COMPLETION, FI_INJECT, FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, \
             FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE, FI_AFFINITY, FI_CLAIM, FI_DISCARD"
        );
        assert_eq!(
            all(13),
            "FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAR, FI_ORDER_WAW, \
             FI_ORDER_WAS, FI_ORDER_SAR, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, \
             FI_ORDER_RMA_RAW, FI_ORDER_RMA_WAR, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, \
             FI_ORDER_ATOMIC_RAW, FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW"
        );
        assert_eq!(
            all(14),
            "FI_CONTEXT, FI_MSG_PREFIX, FI_ASYNC_IOV, FI_RX_CQ_DATA, FI_LOCAL_MR, \
             FI_NOTIFY_FLAGS_ONLY, FI_RESTRICTED_COMP, FI_CONTEXT2, FI_BUFFERED_RECV"
        );
        assert_eq!(
            all(20),
            "FI_SEND, FI_RECV, FI_RMA, FI_ATOMIC, FI_MSG, FI_TAGGED, FI_READ, FI_WRITE, \
             FI_REMOTE_READ, FI_REMOTE_WRITE, FI_REMOTE_CQ_DATA, FI_MULTI_RECV, FI_MORE, \
             FI_CLAIM"
        );
        assert_eq!(
            text_as(&Data::MrMode(u32::MAX), Layout::V1),
            "FI_MR_BASIC, FI_MR_SCALABLE, FI_MR_LOCAL, FI_MR_RAW, FI_MR_VIRT_ADDR, \
             FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT, \
             FI_MR_ENDPOINT, FI_MR_HMEM, FI_MR_COLLECTIVE"
        );
    }

    /// The attribute structs the probe passed to Debian's 1.17 fi_tostr.
    fn probe_tx() -> TxAttr {
        TxAttr {
            caps: FI_MSG | FI_RMA,
            mode: FI_CONTEXT,
            op_flags: FI_COMPLETION,
            msg_order: FI_ORDER_SAS,
            comp_order: 0,
            inject_size: 64,
            size: 1024,
            iov_limit: 4,
            rma_iov_limit: 1,
            tclass: 0x205,
        }
    }

    fn probe_ep() -> EpAttr {
        EpAttr {
            ep_type: FI_EP_MSG as u32,
            protocol: FI_PROTO_SHM as u32,
            protocol_version: -5i32 as u32,
            max_msg_size: 123,
            msg_prefix_size: 4,
            max_order_raw_size: 5,
            max_order_war_size: 6,
            max_order_waw_size: 7,
            mem_tag_format: 0x1234,
            tx_ctx_cnt: FI_SHARED_CONTEXT,
            rx_ctx_cnt: 3,
            auth_key_size: 4,
        }
    }

    fn probe_domain() -> DomainAttr {
        DomainAttr {
            domain: 0x1234_5678_9abc,
            name: s("dname"),
            threading: FI_THREAD_DOMAIN as u32,
            control_progress: FI_PROGRESS_MANUAL as u32,
            progress: FI_PROGRESS_AUTO as u32,
            resource_mgmt: FI_RM_DISABLED as u32,
            av_type: FI_AV_TABLE as u32,
            mr_mode: (FI_MR_LOCAL | FI_MR_HMEM) as u32,
            mr_key_size: 1,
            cq_data_size: 2,
            cq_cnt: 3,
            ep_cnt: 4,
            tx_ctx_cnt: 5,
            rx_ctx_cnt: 6,
            max_ep_tx_ctx: 7,
            max_ep_rx_ctx: 8,
            max_ep_stx_ctx: 9,
            max_ep_srx_ctx: 10,
            cntr_cnt: 11,
            mr_iov_limit: 12,
            caps: FI_LOCAL_COMM,
            mode: v1::FI_RESTRICTED_COMP,
            auth_key_size: 13,
            max_err_data: 14,
            mr_cnt: 15,
            tclass: 16,
        }
    }

    #[test]
    fn v1_attrs_match_libfabric_1_17() {
        let tx_head = "fi_tx_attr:\n    caps: [ FI_MSG, FI_RMA ]\n    mode: [ FI_CONTEXT ]\n    \
                       op_flags: [ FI_COMPLETION ]\n    msg_order: [ FI_ORDER_SAS ]\n";
        let tx_tail = |inject: &str| {
            format!(
                "    inject_size: {inject}\n    size: 1024\n    iov_limit: 4\n    \
                 rma_iov_limit: 1\n    tclass: 0x205\n"
            )
        };
        let cases = [
            (0u64, "FI_ORDER_NONE"),
            (0x1ff, "FI_ORDER_STRICT"),
            (0x3, ""),
            (0x1ff | FI_ORDER_DATA, "FI_ORDER_STRICT, FI_ORDER_DATA"),
            (FI_ORDER_DATA, "FI_ORDER_NONE, FI_ORDER_DATA"),
            (1 << 32, "FI_ORDER_NONE"),
        ];
        for (comp, want) in cases {
            let tx = TxAttr {
                comp_order: comp,
                ..probe_tx()
            };
            let want = format!("{tx_head}    comp_order: [ {want} ]\n{}", tx_tail("64"));
            assert_eq!(
                text_as(&Data::TxAttr(&tx), Layout::V1),
                want,
                "comp {comp:#x}"
            );
        }
        let tx = TxAttr {
            inject_size: usize::MAX,
            ..probe_tx()
        };
        assert_eq!(
            text_as(&Data::TxAttr(&tx), Layout::V1),
            format!(
                "{tx_head}    comp_order: [ FI_ORDER_NONE ]\n{}",
                tx_tail("18446744073709551615")
            )
        );

        let rx = RxAttr {
            caps: FI_RECV,
            comp_order: 0x1ff,
            total_buffered_recv: 7,
            size: 9,
            iov_limit: 2,
            ..Default::default()
        };
        assert_eq!(
            text_as(&Data::RxAttr(&rx), Layout::V1),
            "fi_rx_attr:\n    caps: [ FI_RECV ]\n    mode: [  ]\n    op_flags: [  ]\n    \
             msg_order: [  ]\n    comp_order: [ FI_ORDER_STRICT ]\n    total_buffered_recv: 7\n    \
             size: 9\n    iov_limit: 2\n"
        );

        let ep_text = |ty: &str, proto: &str, tx: &str, rx: &str| {
            format!(
                "fi_ep_attr:\n    type: {ty}\n    protocol: {proto}\n    protocol_version: -5\n    \
                 max_msg_size: 123\n    msg_prefix_size: 4\n    max_order_raw_size: 5\n    \
                 max_order_war_size: 6\n    max_order_waw_size: 7\n    \
                 mem_tag_format: 0x0000000000001234\n    tx_ctx_cnt: {tx}\n    rx_ctx_cnt: {rx}\n    \
                 auth_key_size: 4\n"
            )
        };
        assert_eq!(
            text_as(&Data::EpAttr(&probe_ep()), Layout::V1),
            ep_text("FI_EP_MSG", "FI_PROTO_SHM", "FI_SHARED_CONTEXT", "3")
        );
        for protocol in [0x4000_0001, 1000] {
            let ep = EpAttr {
                ep_type: 77,
                protocol,
                tx_ctx_cnt: 2,
                rx_ctx_cnt: FI_SHARED_CONTEXT,
                ..probe_ep()
            };
            assert_eq!(
                text_as(&Data::EpAttr(&ep), Layout::V1),
                ep_text("Unknown", "Unknown", "2", "FI_SHARED_CONTEXT")
            );
        }

        let dom_text = |head: &str| {
            format!(
                "fi_domain_attr:\n{head}    mr_mode: [ FI_MR_LOCAL, FI_MR_HMEM ]\n    \
                 mr_key_size: 1\n    cq_data_size: 2\n    cq_cnt: 3\n    ep_cnt: 4\n    \
                 tx_ctx_cnt: 5\n    rx_ctx_cnt: 6\n    max_ep_tx_ctx: 7\n    max_ep_rx_ctx: 8\n    \
                 max_ep_stx_ctx: 9\n    max_ep_srx_ctx: 10\n    cntr_cnt: 11\n    \
                 mr_iov_limit: 12\n    caps: [ FI_LOCAL_COMM ]\n    mode: [ FI_RESTRICTED_COMP ]\n    \
                 auth_key_size: 13\n    max_err_data: 14\n    mr_cnt: 15\n    tclass: 0x10\n"
            )
        };
        assert_eq!(
            text_as(&Data::DomainAttr(&probe_domain()), Layout::V1),
            dom_text(
                "    domain: 0x56789abc\n    name: dname\n    threading: FI_THREAD_DOMAIN\n    \
                 control_progress: FI_PROGRESS_MANUAL\n    data_progress: FI_PROGRESS_AUTO\n    \
                 resource_mgmt: FI_RM_DISABLED\n    av_type: FI_AV_TABLE\n"
            )
        );
        let dom = DomainAttr {
            domain: 0,
            name: None,
            threading: 99,
            control_progress: 99,
            progress: 99,
            resource_mgmt: 99,
            av_type: 99,
            ..probe_domain()
        };
        assert_eq!(
            text_as(&Data::DomainAttr(&dom), Layout::V1),
            dom_text(
                "    domain: 0x0\n    name: (null)\n    threading: Unknown\n    \
                 control_progress: Unknown\n    data_progress: Unknown\n    \
                 resource_mgmt: Unknown\n    av_type: Unknown\n"
            )
        );

        let fab = FabricAttr {
            name: s("fname"),
            prov_name: s("pname"),
            prov_version: ver(117, 3),
            api_version: ver(1, 17),
        };
        assert_eq!(
            text(&Data::FabricAttr(&fab)),
            "fi_fabric_attr:\n    name: fname\n    prov_name: pname\n    prov_version: 117.3\n    \
             api_version: 1.17\n"
        );
        let fab = FabricAttr {
            name: None,
            prov_name: None,
            prov_version: u32::MAX,
            api_version: 0x8000_0001,
        };
        assert_eq!(
            text(&Data::FabricAttr(&fab)),
            "fi_fabric_attr:\n    name: (null)\n    prov_name: (null)\n    \
             prov_version: 65535.65535\n    api_version: 32768.1\n"
        );
    }

    fn sin(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut b = vec![0u8; 16];
        b[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        b[2..4].copy_from_slice(&port.to_be_bytes());
        b[4..8].copy_from_slice(&ip);
        b
    }

    fn sin6(ip: [u8; 16], port: u16) -> Vec<u8> {
        let mut b = vec![0u8; 28];
        b[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        b[2..4].copy_from_slice(&port.to_be_bytes());
        b[8..24].copy_from_slice(&ip);
        b
    }

    fn addr_text(fmt: i32, pointer: usize, bytes: &[u8]) -> Addr {
        match straddr(fmt as u32, pointer, bytes) {
            Some(t) => Addr::Text(t),
            None => Addr::Unprintable,
        }
    }

    const ALL_ORDER: u64 = 0x1ff | (0xff << 32);
    const TCP_ORDER: u64 = FI_ORDER_RAR
        | FI_ORDER_RAW
        | FI_ORDER_RAS
        | FI_ORDER_WAW
        | FI_ORDER_WAS
        | FI_ORDER_SAW
        | FI_ORDER_SAS
        | FI_ORDER_RMA_RAR
        | FI_ORDER_RMA_RAW
        | FI_ORDER_RMA_WAW
        | FI_ORDER_ATOMIC_RAR
        | FI_ORDER_ATOMIC_RAW
        | FI_ORDER_ATOMIC_WAW;

    /// `fi_info -p shm -v`, first entry, from Debian's 1.17.
    const SHM_1_17: &str = r#"fi_info:
    caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_READ, FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, FI_RMA_EVENT, FI_SOURCE, FI_DIRECTED_RECV ]
    mode: [  ]
    addr_format: FI_ADDR_STR
    src_addrlen: 15
    dest_addrlen: 15
    src_addr: fi_shm://10154
    dest_addr: fi_shm://10154
    handle: (nil)
    fi_tx_attr:
        caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_READ, FI_WRITE, FI_SEND ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [ FI_ORDER_SAS ]
        comp_order: [ FI_ORDER_NONE ]
        inject_size: 4096
        size: 1024
        iov_limit: 4
        rma_iov_limit: 4
        tclass: 0x0
    fi_rx_attr:
        caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_RECV, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, FI_RMA_EVENT, FI_SOURCE, FI_DIRECTED_RECV ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [ FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAR, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAR, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, FI_ORDER_RMA_RAW, FI_ORDER_RMA_WAR, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW, FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW ]
        comp_order: [ FI_ORDER_STRICT ]
        total_buffered_recv: 0
        size: 1024
        iov_limit: 4
    fi_ep_attr:
        type: FI_EP_RDM
        protocol: FI_PROTO_SHM
        protocol_version: 1
        max_msg_size: 18446744073709551615
        msg_prefix_size: 0
        max_order_raw_size: 0
        max_order_war_size: 0
        max_order_waw_size: 0
        mem_tag_format: 0xaaaaaaaaaaaaaaaa
        tx_ctx_cnt: 1
        rx_ctx_cnt: 1
        auth_key_size: 0
    fi_domain_attr:
        domain: 0x0
        name: shm
        threading: FI_THREAD_SAFE
        control_progress: FI_PROGRESS_AUTO
        data_progress: FI_PROGRESS_MANUAL
        resource_mgmt: FI_RM_ENABLED
        av_type: FI_AV_UNSPEC
        mr_mode: [ FI_MR_VIRT_ADDR ]
        mr_key_size: 8
        cq_data_size: 8
        cq_cnt: 1024
        ep_cnt: 256
        tx_ctx_cnt: 1024
        rx_ctx_cnt: 1024
        max_ep_tx_ctx: 1
        max_ep_rx_ctx: 1
        max_ep_stx_ctx: 0
        max_ep_srx_ctx: 0
        cntr_cnt: 0
        mr_iov_limit: 4
        caps: [  ]
        mode: [  ]
        auth_key_size: 0
        max_err_data: 0
        mr_cnt: 0
        tclass: 0x0
    fi_fabric_attr:
        name: shm
        prov_name: shm
        prov_version: 117.0
        api_version: 1.17
    nic: (nil)
"#;
    /// `fi_info -p sockets -v`, first entry.
    const SOCKETS_1_17: &str = r#"fi_info:
    caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_SEND, FI_MULTI_RECV, FI_TRIGGER, FI_FENCE, FI_LOCAL_COMM, FI_REMOTE_COMM, FI_SHARED_AV, FI_SOURCE, FI_NAMED_RX_CTX, FI_DIRECTED_RECV ]
    mode: [  ]
    addr_format: FI_SOCKADDR_IN
    src_addrlen: 16
    dest_addrlen: 0
    src_addr: fi_sockaddr_in://192.0.2.2:0
    dest_addr: (null)
    handle: (nil)
    fi_tx_attr:
        caps: [ FI_MSG, FI_TAGGED, FI_SEND, FI_TRIGGER, FI_FENCE, FI_NAMED_RX_CTX ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [ FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAR, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAR, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, FI_ORDER_RMA_RAW, FI_ORDER_RMA_WAR, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW, FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW ]
        comp_order: [ FI_ORDER_NONE ]
        inject_size: 255
        size: 256
        iov_limit: 8
        rma_iov_limit: 0
        tclass: 0x0
    fi_rx_attr:
        caps: [ FI_MSG, FI_TAGGED, FI_RECV, FI_MULTI_RECV, FI_TRIGGER, FI_SOURCE, FI_DIRECTED_RECV ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [ FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAR, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAR, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, FI_ORDER_RMA_RAW, FI_ORDER_RMA_WAR, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW, FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW ]
        comp_order: [ FI_ORDER_STRICT, FI_ORDER_DATA ]
        total_buffered_recv: 0
        size: 256
        iov_limit: 8
    fi_ep_attr:
        type: FI_EP_DGRAM
        protocol: FI_PROTO_SOCK_TCP
        protocol_version: 2
        max_msg_size: 18446744073709547519
        msg_prefix_size: 0
        max_order_raw_size: 18446744073709547519
        max_order_war_size: 18446744073709547519
        max_order_waw_size: 18446744073709547519
        mem_tag_format: 0xaaaaaaaaaaaaaaaa
        tx_ctx_cnt: 16
        rx_ctx_cnt: 16
        auth_key_size: 0
    fi_domain_attr:
        domain: 0x0
        name: eth0
        threading: FI_THREAD_SAFE
        control_progress: FI_PROGRESS_AUTO
        data_progress: FI_PROGRESS_AUTO
        resource_mgmt: FI_RM_ENABLED
        av_type: FI_AV_UNSPEC
        mr_mode: [  ]
        mr_key_size: 8
        cq_data_size: 8
        cq_cnt: 32
        ep_cnt: 128
        tx_ctx_cnt: 16
        rx_ctx_cnt: 16
        max_ep_tx_ctx: 16
        max_ep_rx_ctx: 16
        max_ep_stx_ctx: 128
        max_ep_srx_ctx: 128
        cntr_cnt: 128
        mr_iov_limit: 8
        caps: [ FI_LOCAL_COMM, FI_REMOTE_COMM, FI_SHARED_AV ]
        mode: [  ]
        auth_key_size: 0
        max_err_data: 256
        mr_cnt: 65535
        tclass: 0x0
    fi_fabric_attr:
        name: 192.0.2.0/24
        prov_name: sockets
        prov_version: 117.0
        api_version: 1.17
    nic: (nil)
"#;
    /// `fi_info -p tcp -v`, first entry.
    const TCP_1_17: &str = r#"fi_info:
    caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_READ, FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, FI_LOCAL_COMM, FI_REMOTE_COMM ]
    mode: [ FI_BUFFERED_RECV ]
    addr_format: FI_SOCKADDR_IN
    src_addrlen: 16
    dest_addrlen: 0
    src_addr: fi_sockaddr_in://192.0.2.2:0
    dest_addr: (null)
    handle: (nil)
    fi_tx_attr:
        caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_READ, FI_WRITE, FI_SEND ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [ FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, FI_ORDER_RMA_RAW, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW, FI_ORDER_ATOMIC_WAW ]
        comp_order: [ FI_ORDER_NONE ]
        inject_size: 64
        size: 2048
        iov_limit: 4
        rma_iov_limit: 4
        tclass: 0x0
    fi_rx_attr:
        caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_RECV, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [ FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, FI_ORDER_RMA_RAW, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW, FI_ORDER_ATOMIC_WAW ]
        comp_order: [ FI_ORDER_NONE ]
        total_buffered_recv: 0
        size: 2048
        iov_limit: 4
    fi_ep_attr:
        type: FI_EP_RDM
        protocol: FI_PROTO_RXM
        protocol_version: 1
        max_msg_size: 18446744073709551615
        msg_prefix_size: 0
        max_order_raw_size: 18446744073709551615
        max_order_war_size: 0
        max_order_waw_size: 18446744073709551615
        mem_tag_format: 0xaaaaaaaaaaaaaaaa
        tx_ctx_cnt: 1
        rx_ctx_cnt: 1
        auth_key_size: 0
    fi_domain_attr:
        domain: 0x0
        name: eth0
        threading: FI_THREAD_SAFE
        control_progress: FI_PROGRESS_AUTO
        data_progress: FI_PROGRESS_MANUAL
        resource_mgmt: FI_RM_ENABLED
        av_type: FI_AV_UNSPEC
        mr_mode: [  ]
        mr_key_size: 8
        cq_data_size: 8
        cq_cnt: 65536
        ep_cnt: 32768
        tx_ctx_cnt: 1
        rx_ctx_cnt: 1
        max_ep_tx_ctx: 1
        max_ep_rx_ctx: 1
        max_ep_stx_ctx: 0
        max_ep_srx_ctx: 0
        cntr_cnt: 0
        mr_iov_limit: 1
        caps: [ FI_LOCAL_COMM, FI_REMOTE_COMM ]
        mode: [  ]
        auth_key_size: 0
        max_err_data: 0
        mr_cnt: 0
        tclass: 0x0
    fi_fabric_attr:
        name: 192.0.2.0/24
        prov_name: tcp;ofi_rxm
        prov_version: 117.0
        api_version: 1.17
    nic: (nil)
"#;

    fn shm_info() -> Info {
        let addr = addr_text(FI_ADDR_STR, 0, b"fi_shm://10154");
        Info {
            caps: FI_MSG
                | FI_RMA
                | FI_TAGGED
                | FI_ATOMIC
                | FI_READ
                | FI_WRITE
                | FI_RECV
                | FI_SEND
                | FI_REMOTE_READ
                | FI_REMOTE_WRITE
                | FI_MULTI_RECV
                | FI_RMA_EVENT
                | FI_SOURCE
                | FI_DIRECTED_RECV,
            mode: 0,
            addr_format: FI_ADDR_STR as u32,
            src_addrlen: 15,
            dest_addrlen: 15,
            src_addr: addr.clone(),
            dest_addr: addr,
            handle: Fid::Null,
            tx_attr: Some(TxAttr {
                caps: FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | FI_WRITE | FI_SEND,
                msg_order: FI_ORDER_SAS,
                inject_size: 4096,
                size: 1024,
                iov_limit: 4,
                rma_iov_limit: 4,
                ..Default::default()
            }),
            rx_attr: Some(RxAttr {
                caps: FI_MSG
                    | FI_RMA
                    | FI_TAGGED
                    | FI_ATOMIC
                    | FI_RECV
                    | FI_REMOTE_READ
                    | FI_REMOTE_WRITE
                    | FI_MULTI_RECV
                    | FI_RMA_EVENT
                    | FI_SOURCE
                    | FI_DIRECTED_RECV,
                msg_order: ALL_ORDER,
                comp_order: FI_ORDER_STRICT,
                size: 1024,
                iov_limit: 4,
                ..Default::default()
            }),
            ep_attr: Some(EpAttr {
                ep_type: FI_EP_RDM as u32,
                protocol: FI_PROTO_SHM as u32,
                protocol_version: 1,
                max_msg_size: usize::MAX,
                mem_tag_format: 0xaaaa_aaaa_aaaa_aaaa,
                tx_ctx_cnt: 1,
                rx_ctx_cnt: 1,
                ..Default::default()
            }),
            domain_attr: Some(DomainAttr {
                name: s("shm"),
                threading: FI_THREAD_SAFE as u32,
                control_progress: FI_PROGRESS_AUTO as u32,
                progress: FI_PROGRESS_MANUAL as u32,
                resource_mgmt: FI_RM_ENABLED as u32,
                mr_mode: FI_MR_VIRT_ADDR as u32,
                mr_key_size: 8,
                cq_data_size: 8,
                cq_cnt: 1024,
                ep_cnt: 256,
                tx_ctx_cnt: 1024,
                rx_ctx_cnt: 1024,
                max_ep_tx_ctx: 1,
                max_ep_rx_ctx: 1,
                mr_iov_limit: 4,
                ..Default::default()
            }),
            fabric_attr: Some(FabricAttr {
                name: s("shm"),
                prov_name: s("shm"),
                prov_version: ver(117, 0),
                api_version: ver(1, 17),
            }),
            nic: Fid::Null,
        }
    }

    fn sockets_info() -> Info {
        let big = 18446744073709547519;
        Info {
            caps: FI_MSG
                | FI_TAGGED
                | FI_RECV
                | FI_SEND
                | FI_MULTI_RECV
                | FI_TRIGGER
                | FI_FENCE
                | FI_LOCAL_COMM
                | FI_REMOTE_COMM
                | FI_SHARED_AV
                | FI_SOURCE
                | FI_NAMED_RX_CTX
                | FI_DIRECTED_RECV,
            addr_format: FI_SOCKADDR_IN as u32,
            src_addrlen: 16,
            src_addr: addr_text(FI_SOCKADDR_IN, 0, &sin([192, 0, 2, 2], 0)),
            tx_attr: Some(TxAttr {
                caps: FI_MSG | FI_TAGGED | FI_SEND | FI_TRIGGER | FI_FENCE | FI_NAMED_RX_CTX,
                msg_order: ALL_ORDER,
                inject_size: 255,
                size: 256,
                iov_limit: 8,
                ..Default::default()
            }),
            rx_attr: Some(RxAttr {
                caps: FI_MSG
                    | FI_TAGGED
                    | FI_RECV
                    | FI_MULTI_RECV
                    | FI_TRIGGER
                    | FI_SOURCE
                    | FI_DIRECTED_RECV,
                msg_order: ALL_ORDER,
                comp_order: FI_ORDER_STRICT | FI_ORDER_DATA,
                size: 256,
                iov_limit: 8,
                ..Default::default()
            }),
            ep_attr: Some(EpAttr {
                ep_type: FI_EP_DGRAM as u32,
                protocol: FI_PROTO_SOCK_TCP as u32,
                protocol_version: 2,
                max_msg_size: big,
                max_order_raw_size: big,
                max_order_war_size: big,
                max_order_waw_size: big,
                mem_tag_format: 0xaaaa_aaaa_aaaa_aaaa,
                tx_ctx_cnt: 16,
                rx_ctx_cnt: 16,
                ..Default::default()
            }),
            domain_attr: Some(DomainAttr {
                name: s("eth0"),
                threading: FI_THREAD_SAFE as u32,
                control_progress: FI_PROGRESS_AUTO as u32,
                progress: FI_PROGRESS_AUTO as u32,
                resource_mgmt: FI_RM_ENABLED as u32,
                mr_key_size: 8,
                cq_data_size: 8,
                cq_cnt: 32,
                ep_cnt: 128,
                tx_ctx_cnt: 16,
                rx_ctx_cnt: 16,
                max_ep_tx_ctx: 16,
                max_ep_rx_ctx: 16,
                max_ep_stx_ctx: 128,
                max_ep_srx_ctx: 128,
                cntr_cnt: 128,
                mr_iov_limit: 8,
                caps: FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV,
                max_err_data: 256,
                mr_cnt: 65535,
                ..Default::default()
            }),
            fabric_attr: Some(FabricAttr {
                name: s("192.0.2.0/24"),
                prov_name: s("sockets"),
                prov_version: ver(117, 0),
                api_version: ver(1, 17),
            }),
            ..Default::default()
        }
    }

    fn tcp_info() -> Info {
        Info {
            caps: FI_MSG
                | FI_RMA
                | FI_TAGGED
                | FI_READ
                | FI_WRITE
                | FI_RECV
                | FI_SEND
                | FI_REMOTE_READ
                | FI_REMOTE_WRITE
                | FI_MULTI_RECV
                | FI_LOCAL_COMM
                | FI_REMOTE_COMM,
            mode: v1::FI_BUFFERED_RECV,
            addr_format: FI_SOCKADDR_IN as u32,
            src_addrlen: 16,
            src_addr: addr_text(FI_SOCKADDR_IN, 0, &sin([192, 0, 2, 2], 0)),
            tx_attr: Some(TxAttr {
                caps: FI_MSG | FI_RMA | FI_TAGGED | FI_READ | FI_WRITE | FI_SEND,
                msg_order: TCP_ORDER,
                inject_size: 64,
                size: 2048,
                iov_limit: 4,
                rma_iov_limit: 4,
                ..Default::default()
            }),
            rx_attr: Some(RxAttr {
                caps: FI_MSG
                    | FI_RMA
                    | FI_TAGGED
                    | FI_RECV
                    | FI_REMOTE_READ
                    | FI_REMOTE_WRITE
                    | FI_MULTI_RECV,
                msg_order: TCP_ORDER,
                size: 2048,
                iov_limit: 4,
                ..Default::default()
            }),
            ep_attr: Some(EpAttr {
                ep_type: FI_EP_RDM as u32,
                protocol: FI_PROTO_RXM as u32,
                protocol_version: 1,
                max_msg_size: usize::MAX,
                max_order_raw_size: usize::MAX,
                max_order_waw_size: usize::MAX,
                mem_tag_format: 0xaaaa_aaaa_aaaa_aaaa,
                tx_ctx_cnt: 1,
                rx_ctx_cnt: 1,
                ..Default::default()
            }),
            domain_attr: Some(DomainAttr {
                name: s("eth0"),
                threading: FI_THREAD_SAFE as u32,
                control_progress: FI_PROGRESS_AUTO as u32,
                progress: FI_PROGRESS_MANUAL as u32,
                resource_mgmt: FI_RM_ENABLED as u32,
                mr_key_size: 8,
                cq_data_size: 8,
                cq_cnt: 65536,
                ep_cnt: 32768,
                tx_ctx_cnt: 1,
                rx_ctx_cnt: 1,
                max_ep_tx_ctx: 1,
                max_ep_rx_ctx: 1,
                mr_iov_limit: 1,
                caps: FI_LOCAL_COMM | FI_REMOTE_COMM,
                ..Default::default()
            }),
            fabric_attr: Some(FabricAttr {
                name: s("192.0.2.0/24"),
                prov_name: s("tcp;ofi_rxm"),
                prov_version: ver(117, 0),
                api_version: ver(1, 17),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn v1_info_dumps_match_debian_fi_info() {
        for (info, want) in [
            (shm_info(), SHM_1_17),
            (sockets_info(), SOCKETS_1_17),
            (tcp_info(), TCP_1_17),
        ] {
            assert_eq!(info.layout(), Layout::V1);
            let got = text(&Data::Info(&info));
            for (n, (g, w)) in got.lines().zip(want.lines()).enumerate() {
                assert_eq!(g, w, "line {}", n + 1);
            }
            assert_eq!(got, want);
        }
    }

    #[test]
    fn info_with_null_attrs_matches_1_17() {
        let info = Info::default();
        assert_eq!(
            text(&Data::Info(&info)),
            "fi_info:\n    caps: [  ]\n    mode: [  ]\n    addr_format: FI_FORMAT_UNSPEC\n    \
             src_addrlen: 0\n    dest_addrlen: 0\n    src_addr: (null)\n    dest_addr: (null)\n    \
             handle: (nil)\n    fi_tx_attr: (null)\n    fi_rx_attr: (null)\n    \
             fi_ep_attr: (null)\n    fi_domain_attr: (null)\n    fi_fabric_attr: (null)\n    \
             nic: (nil)\n"
        );
        let info = Info {
            handle: Fid::Ptr(0x7ffd_9410_64b0),
            ..Default::default()
        };
        assert!(text(&Data::Info(&info)).contains("\n    handle: 0x7ffd941064b0\n"));
    }

    /// `fi_tostr_r` of an info whose only text is an FI_ADDR_STR address,
    /// into buffers of 120..140 bytes (Debian's 1.17): labels keep
    /// `len - 2` characters, the address one more.
    #[test]
    fn truncation_matches_1_17() {
        let info = Info {
            addr_format: FI_ADDR_STR as u32,
            src_addr: addr_text(FI_ADDR_STR, 0, b"fi_shm://123456789"),
            ..Default::default()
        };
        let head = "fi_info:\n    caps: [  ]\n    mode: [  ]\n    addr_format: FI_ADDR_STR\n    \
                    src_addrlen: 0\n    dest_addrlen: 0\n    ";
        let cases = [
            (120, "src_addf"),
            (121, "src_addrf"),
            (122, "src_addr:f"),
            (123, "src_addr: f"),
            (131, "src_addr: fi_shm://"),
            (139, "src_addr: fi_shm://12345678"),
        ];
        for (cap, tail) in cases {
            let got = text_cap(&Data::Info(&info), cap);
            assert_eq!(got, format!("{head}{tail}"), "cap {cap}");
            assert_eq!(got.len(), cap - 1);
        }
        let caps = Data::Caps(FI_MSG | FI_RMA);
        assert_eq!(text_cap(&caps, 8), "FI_MSG");
        assert_eq!(text_cap(&caps, 3), "F");
        assert_eq!(text_cap(&caps, 2), "");
        assert_eq!(text_cap(&caps, 1), "");
        assert_eq!(text_cap(&caps, 0), "");
        // A cut that lands on the separator still drops it (values from
        // Debian's 1.17 for buffers of 9..13 bytes).
        assert_eq!(text_cap(&caps, 9), "FI_MSG,");
        assert_eq!(text_cap(&caps, 10), "FI_MSG");
        assert_eq!(text_cap(&caps, 11), "FI_MSG, F");
        assert_eq!(text_cap(&caps, 13), "FI_MSG, FI_");
        let mut out = Out::new(4);
        out.set(b"abcdef");
        assert_eq!(out.as_bytes(), b"abc");
    }

    #[test]
    fn addresses_match_1_17() {
        let words: Vec<u8> = [
            0x1122_3344_5566_7788u64,
            0x99aa_bbcc_ddee_ff00,
            3,
            4,
            5,
            6,
            7,
            8,
        ]
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
        let p = 0x7ffd_9410_6430;
        let cases: [(i32, &str); 11] = [
            (
                FI_SOCKADDR_IB,
                "fi_sockaddr_ib://[ff:eedd:ccbb:aa99:300::]:0x6655:0x0:0x0",
            ),
            (FI_ADDR_PSMX, "fi_addr_psmx://1122334455667788"),
            (FI_ADDR_GNI, "fi_addr_gni://1122334455667788"),
            (FI_ADDR_BGQ, "fi_addr_bgq://0x7ffd94106430"),
            (FI_ADDR_MLX, "fi_addr_mlx://0x7ffd94106430"),
            (
                FI_ADDR_PSMX2,
                "fi_addr_psmx2://1122334455667788:99aabbccddeeff00",
            ),
            (
                FI_ADDR_IB_UD,
                "fi_addr_ib_ud://8877:6655:4433:2211:ff:eedd:ccbb:aa99:3/0/0/0",
            ),
            (
                FI_ADDR_EFA,
                "fi_addr_efa://[8877:6655:4433:2211:ff:eedd:ccbb:aa99]:3:0",
            ),
            (
                FI_ADDR_PSMX3,
                "fi_addr_psmx3://1122334455667788:99aabbccddeeff00:3:4",
            ),
            (FI_ADDR_OPX, "fi_addr_opx://1122334455667788"),
            (FI_ADDR_CXI, "fi_addr_cxi://0x55667788"),
        ];
        for (fmt, want) in cases {
            assert_eq!(
                addr_text(fmt, p, &words),
                Addr::Text(want.into()),
                "format {fmt}"
            );
        }
        // Bytes k*7+1: every field non-zero.
        let ramp: Vec<u8> = (0..64u32).map(|k| (k * 7 + 1) as u8).collect();
        let cases: [(i32, &str); 6] = [
            (
                FI_SOCKADDR_IB,
                "fi_sockaddr_ib://[3940:474e:555c:636a:7178:7f86:8d94:9ba2]:0xf16:0x5cc:0x4a",
            ),
            (
                FI_ADDR_IB_UD,
                "fi_addr_ib_ud://108:f16:1d24:2b32:3940:474e:555c:636a:867f7871/948d/a29b/b7",
            ),
            (
                FI_ADDR_EFA,
                "fi_addr_efa://[108:f16:1d24:2b32:3940:474e:555c:636a]:30833:2728105101",
            ),
            (FI_ADDR_OPX, "fi_addr_opx://322b241d160f0801"),
            (FI_ADDR_CXI, "fi_addr_cxi://0x160f0801"),
            (
                FI_ADDR_PSMX3,
                "fi_addr_psmx3://322b241d160f0801:6a635c554e474039:a29b948d867f7871:\
                 dad3ccc5beb7b0a9",
            ),
        ];
        for (fmt, want) in cases {
            assert_eq!(
                addr_text(fmt, p, &ramp),
                Addr::Text(want.into()),
                "format {fmt}"
            );
        }
        // Families decide; an unknown family or format prints nothing.
        let v4 = sin([10, 1, 2, 3], 4242);
        let mut v6ip = [0u8; 16];
        v6ip[0] = 0xfe;
        v6ip[1] = 0x80;
        v6ip[15] = 1;
        let v6 = sin6(v6ip, 80);
        let t = |fmt, b: &[u8]| addr_text(fmt, p, b);
        let txt = |s: &str| Addr::Text(s.into());
        assert_eq!(
            t(FI_SOCKADDR_IN, &v4),
            txt("fi_sockaddr_in://10.1.2.3:4242")
        );
        assert_eq!(t(FI_SOCKADDR, &v4), txt("fi_sockaddr_in://10.1.2.3:4242"));
        assert_eq!(
            t(FI_SOCKADDR_IN6, &v6),
            txt("fi_sockaddr_in6://[fe80::1]:80")
        );
        assert_eq!(t(FI_SOCKADDR, &v6), txt("fi_sockaddr_in6://[fe80::1]:80"));
        let mut bad = v4.clone();
        bad[..2].copy_from_slice(&99u16.to_ne_bytes());
        for fmt in [FI_SOCKADDR, FI_SOCKADDR_IN, FI_SOCKADDR_IN6] {
            assert_eq!(t(fmt, &bad), Addr::Unprintable, "format {fmt}");
            assert_eq!(t(fmt, &words), Addr::Unprintable, "format {fmt}");
        }
        for fmt in [FI_FORMAT_UNSPEC, FI_ADDR_UCX, 17, 18, 19, 0x4000_0001] {
            assert_eq!(t(fmt, &words), Addr::Unprintable, "format {fmt}");
            assert_eq!(addr_need(fmt as u32, None), AddrNeed::Nothing);
        }
        assert_eq!(addr_need(FI_SOCKADDR as u32, None), AddrNeed::Family);
        assert_eq!(
            addr_need(FI_SOCKADDR as u32, Some(libc::AF_INET6 as u16)),
            AddrNeed::Bytes(24)
        );
        assert_eq!(
            addr_need(FI_SOCKADDR_IN as u32, Some(libc::AF_INET as u16)),
            AddrNeed::Bytes(8)
        );
        assert_eq!(addr_need(FI_ADDR_STR as u32, None), AddrNeed::CStr);
        assert_eq!(addr_need(FI_ADDR_MLX as u32, None), AddrNeed::Pointer);
    }

    #[test]
    fn ntop6_matches_glibc() {
        // (address bytes, glibc inet_ntop text)
        let cases = [
            ("00000000000000000000000000000000", "::"),
            ("00000000000000000000000000000001", "::1"),
            ("00010000000000000000000000000000", "1::"),
            ("fe800000000000000000000000000001", "fe80::1"),
            ("00000000000000000000ffff01020304", "::ffff:1.2.3.4"),
            ("00000000000000000000000001020304", "::1.2.3.4"),
            ("00000000000000000000000000000101", "::101"),
            ("00010000000000020000000000000003", "1:0:0:2::3"),
            ("00010000000000020000000000030004", "1::2:0:0:3:4"),
            ("00010002000300040005000600070008", "1:2:3:4:5:6:7:8"),
            ("00000001000000010000000100000001", "0:1:0:1:0:1:0:1"),
            ("20010db8000000000000ff0000428329", "2001:db8::ff00:42:8329"),
            ("00000000000000000000ffff00000000", "::ffff:0.0.0.0"),
            ("00000000000100000000000000000000", "0:0:1::"),
            ("00010000000000000001000000000000", "1::1:0:0:0"),
            ("00000002000300040005000600070008", "0:2:3:4:5:6:7:8"),
            ("0000ffff000000000000000000000001", "0:ffff::1"),
        ];
        for (hex, want) in cases {
            let b: Vec<u8> = (0..16)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            assert_eq!(ntop6(&b), want, "{hex}");
        }
    }

    #[test]
    fn layout_follows_the_api_version() {
        assert_eq!(Layout::for_api_version(Some(ver(1, 17))), Layout::V1);
        assert_eq!(Layout::for_api_version(Some(ver(1, 0))), Layout::V1);
        assert_eq!(Layout::for_api_version(Some(ver(2, 0))), Layout::V2);
        assert_eq!(Layout::for_api_version(Some(ver(2, 7))), Layout::V2);
        assert_eq!(Layout::for_api_version(Some(0)), Layout::V2);
        assert_eq!(Layout::for_api_version(None), Layout::V2);
    }

    // Libfabric 2.x: the format facts below come from upstream's 2.x
    // fi_tostr (fields and flag lists it prints, enum ranges it names); no
    // 2.x library is installed here to capture from.

    #[test]
    fn v2_attrs_drop_the_1x_fields() {
        let tx = TxAttr {
            comp_order: FI_ORDER_STRICT,
            ..probe_tx()
        };
        assert_eq!(
            text(&Data::TxAttr(&tx)),
            "fi_tx_attr:\n    caps: [ FI_MSG, FI_RMA ]\n    mode: [ FI_CONTEXT ]\n    \
             op_flags: [ FI_COMPLETION ]\n    msg_order: [ FI_ORDER_SAS ]\n    inject_size: 64\n    \
             size: 1024\n    iov_limit: 4\n    rma_iov_limit: 1\n    tclass: 0x205\n"
        );
        let rx = RxAttr {
            caps: FI_RECV | FI_MSG,
            comp_order: 0x1ff,
            total_buffered_recv: 7,
            size: 9,
            iov_limit: 2,
            ..Default::default()
        };
        assert_eq!(
            text(&Data::RxAttr(&rx)),
            "fi_rx_attr:\n    caps: [ FI_MSG, FI_RECV ]\n    mode: [  ]\n    op_flags: [  ]\n    \
             msg_order: [  ]\n    size: 9\n    iov_limit: 2\n"
        );
        let dom = DomainAttr {
            mode: FI_CONTEXT2 | v1::FI_RESTRICTED_COMP,
            ..probe_domain()
        };
        let got = text(&Data::DomainAttr(&dom));
        assert!(got.starts_with(
            "fi_domain_attr:\n    domain: 0x56789abc\n    name: dname\n    \
             threading: FI_THREAD_DOMAIN\n    progress: FI_PROGRESS_AUTO\n    \
             resource_mgmt: FI_RM_DISABLED\n    av_type: FI_AV_TABLE\n    \
             mr_mode: [ FI_MR_LOCAL, FI_MR_HMEM ]\n    mr_key_size: 1\n"
        ));
        assert!(got.ends_with(
            "    caps: [ FI_LOCAL_COMM ]\n    mode: [ FI_CONTEXT2 ]\n    auth_key_size: 13\n    \
             max_err_data: 14\n    mr_cnt: 15\n    tclass: 0x10\n"
        ));
        // The ep attributes print the same fields in both generations.
        assert_eq!(
            text(&Data::EpAttr(&probe_ep())),
            text_as(&Data::EpAttr(&probe_ep()), Layout::V1)
        );
    }

    #[test]
    fn v2_info_uses_the_2x_layout() {
        let mut info = shm_info();
        info.fabric_attr.as_mut().unwrap().api_version = ver(2, 7);
        let got = text(&Data::Info(&info));
        assert!(!got.contains("comp_order"));
        assert!(!got.contains("total_buffered_recv"));
        assert!(!got.contains("control_progress"));
        assert!(got.contains("\n        progress: FI_PROGRESS_MANUAL\n"));
        assert!(got.contains("\n        api_version: 2.7\n    nic: (nil)\n"));
        // Everything else is the 1.x text.
        let v1: Vec<&str> = SHM_1_17
            .lines()
            .filter(|l| {
                !l.contains("comp_order")
                    && !l.contains("total_buffered_recv")
                    && !l.contains("control_progress")
                    && !l.contains("api_version")
            })
            .collect();
        let v2: Vec<String> = got
            .lines()
            .filter(|l| !l.contains("api_version"))
            .map(|l| l.replace("    progress:", "    data_progress:"))
            .collect();
        assert_eq!(v1, v2);
    }

    #[test]
    fn v2_flag_lists() {
        assert_eq!(
            text(&Data::Caps(!0)),
            "FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_MULTICAST, FI_COLLECTIVE, FI_READ, \
             FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, \
             FI_REMOTE_CQ_DATA, FI_TRIGGER, FI_FENCE, FI_RMA_PMEM, FI_SOURCE_ERR, \
             FI_LOCAL_COMM, FI_REMOTE_COMM, FI_SHARED_AV, FI_RMA_EVENT, FI_SOURCE, \
             FI_NAMED_RX_CTX, FI_DIRECTED_RECV, FI_AV_USER_ID, FI_PEER, FI_HMEM"
        );
        assert_eq!(
            text(&Data::Caps(FI_AV_USER_ID | FI_MSG)),
            "FI_MSG, FI_AV_USER_ID"
        );
        assert_eq!(text(&Data::Caps(1 << 48)), "");
        assert_eq!(text(&Data::Caps(0)), "");
        assert_eq!(
            text(&Data::Mode(!0)),
            "FI_CONTEXT, FI_MSG_PREFIX, FI_ASYNC_IOV, FI_RX_CQ_DATA, FI_LOCAL_MR, FI_CONTEXT2"
        );
        for ty in [3u32, 13, 20] {
            assert_eq!(text(&scalar(ty, !0)), text_as(&scalar(ty, !0), Layout::V1));
        }
        assert_eq!(
            text(&Data::MrMode(u32::MAX)),
            text_as(&Data::MrMode(u32::MAX), Layout::V1)
        );
    }

    #[test]
    fn v2_enum_ranges() {
        let names = |ty: u32, range: std::ops::Range<u32>| -> Vec<String> {
            range.map(|v| text(&scalar(ty, u64::from(v)))).collect()
        };
        assert_eq!(names(1, 4..6), ["Unknown", "Unknown"]);
        assert_eq!(names(1, 3..4), ["FI_EP_RDM"]);
        assert_eq!(
            names(4, 4..10),
            [
                "FI_SOCKADDR_IB",
                "Unknown",
                "Unknown",
                "Unknown",
                "FI_ADDR_MLX",
                "FI_ADDR_STR"
            ]
        );
        assert_eq!(names(4, 15..18), ["FI_ADDR_CXI", "FI_ADDR_UCX", "Unknown"]);
        assert_eq!(text(&Data::AddrFormat(u32::MAX)), "Unknown");
        assert_eq!(
            names(10, 0..6),
            [
                "FI_THREAD_UNSPEC",
                "FI_THREAD_SAFE",
                "Unknown",
                "FI_THREAD_DOMAIN",
                "FI_THREAD_COMPLETION",
                "Unknown"
            ]
        );
        assert_eq!(names(11, 3..5), ["FI_PROGRESS_CONTROL_UNIFIED", "Unknown"]);
        let protos = names(12, 0..33);
        assert_eq!(protos[4], "Unknown");
        assert_eq!(protos[16], "FI_PROTO_SHM");
        assert_eq!(protos[26], "Unknown");
        assert_eq!(
            protos[27..32],
            [
                "FI_PROTO_UCX",
                "FI_PROTO_SM2",
                "FI_PROTO_CXI_RNR",
                "FI_PROTO_LPP",
                "FI_PROTO_LNX"
            ]
        );
        assert_eq!(protos[32], "Unknown");
        assert_eq!(text(&Data::Protocol(u32::MAX)), "Unknown");
        assert_eq!(names(16, 15..17), ["FI_UINT128", "Unknown"]);
        assert_eq!(text(&Data::AtomicType(FI_VOID as u32)), "Unknown");
        assert_eq!(names(17, 18..20), ["FI_MSWAP", "Unknown"]);
        assert_eq!(
            names(35, 0..8),
            [
                "FI_WAIT_NONE",
                "FI_WAIT_UNSPEC",
                "FI_WAIT_SET",
                "FI_WAIT_FD",
                "FI_WAIT_MUTEX_COND",
                "FI_WAIT_YIELD",
                "FI_WAIT_POLLFD",
                "Unknown"
            ]
        );
        assert_eq!(
            names(34, 0..3),
            ["FI_CQ_COND_NONE", "FI_CQ_COND_THRESHOLD", "Unknown"]
        );
        assert_eq!(names(27, 3..5), ["debug", "Unknown"]);
        assert_eq!(names(28, 9..11), ["cntr", "Unknown"]);
        // The others name the same values in both generations.
        for ty in [15u32, 19, 22, 24, 25, 26, 27, 28] {
            for v in ENUM_PROBES {
                let d = scalar(ty, v as u32 as u64);
                assert_eq!(text(&d), text_as(&d, Layout::V1), "type {ty} value {v}");
            }
        }
    }

    #[test]
    fn version_fid_and_unknown_type() {
        assert_eq!(text(&Data::Version), "2.7.0");
        assert_eq!(text(&Data::UnknownType), "Unknown type");
        assert_eq!(text(&Data::Fid(Fid::Null)), "fid: (nil)\n");
        assert_eq!(
            text(&Data::Fid(Fid::Ptr(0xdead_beef0))),
            "fid: 0xdeadbeef0\n"
        );
        let mut out = Out::unbounded();
        let mut seen = 0;
        write(&mut out, &Data::Fid(Fid::Custom(0x40)), &mut |o, addr| {
            seen = addr;
            o.push_str("custom\n");
        });
        assert_eq!((out.as_bytes(), seen), (&b"custom\n"[..], 0x40));
        let info = Info {
            handle: Fid::Custom(1),
            nic: Fid::Custom(2),
            ..Default::default()
        };
        let mut out = Out::unbounded();
        write(&mut out, &Data::Info(&info), &mut |o, addr| {
            o.push_str(&format!("    <fid {addr}>\n"));
        });
        let got = String::from_utf8(out.as_bytes().to_vec()).unwrap();
        assert!(got.contains("    dest_addr: (null)\n    <fid 1>\n    fi_tx_attr: (null)\n"));
        assert!(got.ends_with("    fi_fabric_attr: (null)\n    <fid 2>\n"));
    }

    #[test]
    fn v2_only_attrs() {
        let av = AvAttr {
            av_type: FI_AV_MAP as u32,
            count: 10,
            ep_per_node: 2,
            name: s("avname"),
            flags: FI_EVENT | FI_READ | FI_SYMMETRIC | FI_SEND,
        };
        assert_eq!(
            text(&Data::AvAttr(&av)),
            "fi_av_attr:\n    type: FI_AV_MAP\n    count: 10\n    ep_per_node: 2\n    \
             name: avname\n    flags: [ FI_EVENT, FI_READ, FI_SYMMETRIC ]\n"
        );
        let av = AvAttr {
            av_type: 9,
            name: None,
            flags: 0,
            ..av
        };
        assert_eq!(
            text(&Data::AvAttr(&av)),
            "fi_av_attr:\n    type: Unknown\n    count: 10\n    ep_per_node: 2\n    \
             name: (null)\n    flags: [  ]\n"
        );
        let cq = CqAttr {
            size: 100,
            flags: FI_AFFINITY | FI_SEND,
            format: FI_CQ_FORMAT_TAGGED as u32,
            wait_obj: FI_WAIT_FD as u32,
            signaling_vector: -3,
            wait_cond: FI_CQ_COND_THRESHOLD as u32,
        };
        assert_eq!(
            text(&Data::CqAttr(&cq)),
            "fi_cq_attr:\n    size: 100\n    flags: [ FI_AFFINITY ]\n    \
             format: FI_CQ_FORMAT_TAGGED\n    wait_obj: FI_WAIT_FD\n    signaling_vector: -3\n    \
             wait_cond: FI_CQ_COND_THRESHOLD\n"
        );
        let mr = MrAttr {
            mr_iov: 0x1000,
            iov_count: 1,
            access: FI_RECV
                | FI_SEND
                | FI_READ
                | FI_WRITE
                | FI_REMOTE_READ
                | FI_REMOTE_WRITE
                | FI_COLLECTIVE
                | FI_MSG,
            offset: 0xabc,
            requested_key: 0xdef,
            context: 0,
            auth_key_size: 2,
            iface: FI_HMEM_ZE as u32,
        };
        assert_eq!(
            text(&Data::MrAttr(&mr)),
            "fi_mr_attr:\n    mr_iov: 0x1000\n    iov_count: 1\n    access: [ FI_RECV, FI_SEND, \
             FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_COLLECTIVE ]\n    \
             offset: 0xabc\n    requested_key: 0xdef\n    context: (nil)\n    auth_key_size: 2\n    \
             iface: FI_HMEM_ZE\n"
        );
        let cntr = CntrAttr {
            events: FI_CNTR_EVENTS_BYTES as u32,
            wait_obj: FI_WAIT_MUTEX_COND as u32,
            flags: 0x10,
        };
        assert_eq!(
            text(&Data::CntrAttr(&cntr)),
            "fi_cntr_attr:\n    events: FI_CNTR_EVENTS_BYTES\n    wait_obj: FI_WAIT_MUTEX_COND\n    \
             flags: 0x10\n"
        );
        let cntr = CntrAttr {
            events: 5,
            wait_obj: 12,
            flags: 0,
        };
        assert_eq!(
            text(&Data::CntrAttr(&cntr)),
            "fi_cntr_attr:\n    events: Unknown\n    wait_obj: Unknown\n    flags: 0x0\n"
        );
        let e = CqErrEntry {
            op_context: 0x10,
            flags: FI_SEND | FI_MSG,
            len: 5,
            buf: 0,
            data: u64::MAX,
            tag: 0xff,
            olen: 3,
            err: 265,
            prov_errno: -9,
            err_data: 0,
            err_data_size: 0,
        };
        assert_eq!(
            text(&Data::CqErrEntry(&e)),
            "fi_cq_err_entry:\n    op_context: 0x10\n    flags: 0x802\n    len: 5\n    \
             buf: (nil)\n    data: 18446744073709551615\n    tag: 0xff\n    olen: 3\n    \
             err: 265\n    prov_errno: 265\n    err_data: (nil)\n    err_data_size: 0\n"
        );
    }
}
