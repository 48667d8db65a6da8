//! Mirror of `rdma/fi_endpoint.h`: endpoint objects (active, passive,
//! shared transmit context), their control and message ops tables, and the
//! `fi_setopt`/`fi_getopt` option names.

use crate::abi::atomic::fi_ops_atomic;
use crate::abi::cm::fi_ops_cm;
use crate::abi::collective::fi_ops_collective;
use crate::abi::fabric::{fi_addr_t, fi_rx_attr, fi_tx_attr, fid, fid_t};
use crate::abi::rma::fi_ops_rma;
use crate::abi::tagged::fi_ops_tagged;
use crate::abi::xpu::fid_xpu_ep;
use libc::{c_int, c_void, iovec, size_t, ssize_t};

/// A message for `fi_sendmsg`/`fi_recvmsg`: `iov_count` entries of `msg_iov`
/// with one descriptor each in `desc` (NULL when the domain needs none),
/// the peer `addr`, the completion `context` and, for FI_REMOTE_CQ_DATA,
/// the immediate `data`. The caller keeps ownership of every array.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_msg {
    pub msg_iov: *const iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: size_t,
    pub addr: fi_addr_t,
    pub context: *mut c_void,
    pub data: u64,
}

/// Option level of the generic endpoint options (`level` of fi_setopt).
pub const FI_OPT_ENDPOINT: c_int = 0;

/// `size_t`: space left in a multi-receive buffer below which it is released.
pub const FI_OPT_MIN_MULTI_RECV: c_int = 0;
/// `size_t`, read only: bytes of user data a CM message can carry.
pub const FI_OPT_CM_DATA_SIZE: c_int = 1;
/// `size_t`: smallest message the provider buffers (FI_BUFFERED_RECV).
pub const FI_OPT_BUFFERED_MIN: c_int = 2;
/// `size_t`: largest message the provider buffers (FI_BUFFERED_RECV).
pub const FI_OPT_BUFFERED_LIMIT: c_int = 3;
/// `size_t`: size of the transport's send buffer.
pub const FI_OPT_SEND_BUF_SIZE: c_int = 4;
/// `size_t`: size of the transport's receive buffer.
pub const FI_OPT_RECV_BUF_SIZE: c_int = 5;
/// `size_t`: depth of the transmit queue.
pub const FI_OPT_TX_SIZE: c_int = 6;
/// `size_t`: depth of the receive queue.
pub const FI_OPT_RX_SIZE: c_int = 7;
/// `int`: one of FI_HMEM_P2P_*: peer-to-peer use for device memory.
pub const FI_OPT_FI_HMEM_P2P: c_int = 8;
/// Reserved; kept so the numbering stays stable.
pub const FI_OPT_XPU_TRIGGER: c_int = 9;
/// `bool`: whether the provider may call the CUDA API.
pub const FI_OPT_CUDA_API_PERMITTED: c_int = 10;
/// `bool`: whether the provider may use shared memory underneath.
pub const FI_OPT_SHARED_MEMORY_PERMITTED: c_int = 11;
/// `size_t`: largest message size for the msg API.
pub const FI_OPT_MAX_MSG_SIZE: c_int = 12;
/// `size_t`: largest message size for the tagged API.
pub const FI_OPT_MAX_TAGGED_SIZE: c_int = 13;
/// `size_t`: largest transfer for the RMA API.
pub const FI_OPT_MAX_RMA_SIZE: c_int = 14;
/// `size_t`: largest transfer for the atomic API.
pub const FI_OPT_MAX_ATOMIC_SIZE: c_int = 15;
/// `size_t`: inject limit of the msg API.
pub const FI_OPT_INJECT_MSG_SIZE: c_int = 16;
/// `size_t`: inject limit of the tagged API.
pub const FI_OPT_INJECT_TAGGED_SIZE: c_int = 17;
/// `size_t`: inject limit of the RMA API.
pub const FI_OPT_INJECT_RMA_SIZE: c_int = 18;
/// `size_t`: inject limit of the atomic API.
pub const FI_OPT_INJECT_ATOMIC_SIZE: c_int = 19;

/// FI_OPT_FI_HMEM_P2P value: the provider decides (default).
pub const FI_HMEM_P2P_ENABLED: c_int = 0;
/// FI_OPT_FI_HMEM_P2P value: every device transfer must use P2P.
pub const FI_HMEM_P2P_REQUIRED: c_int = 1;
/// FI_OPT_FI_HMEM_P2P value: use P2P whenever it is available.
pub const FI_HMEM_P2P_PREFERRED: c_int = 2;
/// FI_OPT_FI_HMEM_P2P value: never use P2P.
pub const FI_HMEM_P2P_DISABLED: c_int = 3;

/// Control operations of an endpoint (`fid_ep.ops`). `size` is the size of
/// the table the provider filled; a slot past it is absent.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_ep {
    pub size: size_t,
    pub cancel: Option<unsafe extern "C" fn(fid: fid_t, context: *mut c_void) -> ssize_t>,
    pub getopt: Option<
        unsafe extern "C" fn(
            fid: fid_t,
            level: c_int,
            optname: c_int,
            optval: *mut c_void,
            optlen: *mut size_t,
        ) -> c_int,
    >,
    pub setopt: Option<
        unsafe extern "C" fn(
            fid: fid_t,
            level: c_int,
            optname: c_int,
            optval: *const c_void,
            optlen: size_t,
        ) -> c_int,
    >,
    pub tx_ctx: Option<
        unsafe extern "C" fn(
            sep: *mut fid_ep,
            index: c_int,
            attr: *mut fi_tx_attr,
            tx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub rx_ctx: Option<
        unsafe extern "C" fn(
            sep: *mut fid_ep,
            index: c_int,
            attr: *mut fi_rx_attr,
            rx_ep: *mut *mut fid_ep,
            context: *mut c_void,
        ) -> c_int,
    >,
    pub rx_size_left: Option<unsafe extern "C" fn(ep: *mut fid_ep) -> ssize_t>,
    pub tx_size_left: Option<unsafe extern "C" fn(ep: *mut fid_ep) -> ssize_t>,
    /// Fills the caller's `*xpu_ep` with the handle an accelerator uses to
    /// drive this endpoint.
    /// Since 2.7.
    pub export_xpu:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, flags: u64, xpu_ep: *mut fid_xpu_ep) -> c_int>,
}

/// Message operations of an endpoint (`fid_ep.msg`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_msg {
    pub size: size_t,
    pub recv: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *mut c_void,
            len: size_t,
            desc: *mut c_void,
            src_addr: fi_addr_t,
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
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub recvmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> ssize_t>,
    pub send: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            desc: *mut c_void,
            dest_addr: fi_addr_t,
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
            context: *mut c_void,
        ) -> ssize_t,
    >,
    pub sendmsg:
        Option<unsafe extern "C" fn(ep: *mut fid_ep, msg: *const fi_msg, flags: u64) -> ssize_t>,
    pub inject: Option<
        unsafe extern "C" fn(
            ep: *mut fid_ep,
            buf: *const c_void,
            len: size_t,
            dest_addr: fi_addr_t,
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
        ) -> ssize_t,
    >,
}

/// An active endpoint (also a scalable endpoint or one of its contexts).
/// Each table pointer may be NULL, or shorter than the current layout, when
/// the provider does not implement that interface.
#[repr(C)]
pub struct fid_ep {
    pub fid: fid,
    pub ops: *mut fi_ops_ep,
    pub cm: *mut fi_ops_cm,
    pub msg: *mut fi_ops_msg,
    pub rma: *mut fi_ops_rma,
    pub tagged: *mut fi_ops_tagged,
    pub atomic: *mut fi_ops_atomic,
    pub collective: *mut fi_ops_collective,
}

/// A passive endpoint: listens for connection requests. Its leading fields
/// match `fid_ep`, so the generic endpoint calls accept either.
#[repr(C)]
pub struct fid_pep {
    pub fid: fid,
    pub ops: *mut fi_ops_ep,
    pub cm: *mut fi_ops_cm,
}

/// A shared transmit context, opened with `fi_stx_context`.
#[repr(C)]
pub struct fid_stx {
    pub fid: fid,
    pub ops: *mut fi_ops_ep,
}
