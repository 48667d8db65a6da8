//! Mirror of `rdma/fi_eq.h`: wait sets, poll sets, event queues, completion
//! queues and counters.

use crate::abi::fabric::{fi_addr_t, fi_info, fid, fid_t};
use crate::abi::xpu::{fid_xpu_cntr, fid_xpu_cq, fid_xpu_ctx};
use libc::{c_char, c_int, c_uint, c_void, size_t, ssize_t};

/// `enum fi_wait_obj`: how a caller waits on an object (`FI_GETWAIT` returns
/// the underlying object).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_wait_obj {
    FI_WAIT_NONE = 0,
    FI_WAIT_UNSPEC = 1,
    FI_WAIT_SET = 2,
    FI_WAIT_FD = 3,
    /// pthread mutex and condition variable (deprecated).
    FI_WAIT_MUTEX_COND = 4,
    FI_WAIT_YIELD = 5,
    FI_WAIT_POLLFD = 6,
}
/// cbindgen:ignore
pub type fi_wait_obj_raw = c_uint;

/// Attributes of a wait set (deprecated object).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_wait_attr {
    pub wait_obj: fi_wait_obj_raw,
    pub flags: u64,
}

/// Operations of a wait set (deprecated).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_wait {
    pub size: size_t,
    pub wait: Option<unsafe extern "C" fn(waitset: *mut fid_wait, timeout: c_int) -> c_int>,
}

/// A wait set (deprecated).
#[repr(C)]
pub struct fid_wait {
    pub fid: fid,
    pub ops: *mut fi_ops_wait,
}

/// `FI_GETWAIT` result for FI_WAIT_MUTEX_COND (deprecated).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_mutex_cond {
    pub mutex: *mut libc::pthread_mutex_t,
    pub cond: *mut libc::pthread_cond_t,
}

/// `FI_GETWAIT` result for FI_WAIT_POLLFD: the caller supplies `fd` with
/// room for `nfds` entries; `change_index` changes whenever the set does.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_wait_pollfd {
    pub change_index: u64,
    pub nfds: size_t,
    pub fd: *mut libc::pollfd,
}

/// Attributes of a poll set (deprecated object).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_poll_attr {
    pub flags: u64,
}

/// Operations of a poll set (deprecated).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_poll {
    pub size: size_t,
    pub poll: Option<
        unsafe extern "C" fn(
            pollset: *mut fid_poll,
            context: *mut *mut c_void,
            count: c_int,
        ) -> c_int,
    >,
    pub poll_add: Option<
        unsafe extern "C" fn(pollset: *mut fid_poll, event_fid: *mut fid, flags: u64) -> c_int,
    >,
    pub poll_del: Option<
        unsafe extern "C" fn(pollset: *mut fid_poll, event_fid: *mut fid, flags: u64) -> c_int,
    >,
}

/// A poll set (deprecated).
#[repr(C)]
pub struct fid_poll {
    pub fid: fid,
    pub ops: *mut fi_ops_poll,
}

/// Attributes of an event queue, read by `fi_eq_open()`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_attr {
    pub size: size_t,
    pub flags: u64,
    pub wait_obj: fi_wait_obj_raw,
    pub signaling_vector: c_int,
    /// Deprecated; NULL unless `wait_obj` is FI_WAIT_SET.
    pub wait_set: *mut fid_wait,
}

/// EQ event: generic notification (`struct fi_eq_entry`).
pub const FI_NOTIFY: c_int = 0;
/// EQ event: connection request on a passive endpoint (`fi_eq_cm_entry`).
pub const FI_CONNREQ: c_int = 1;
/// EQ event: connection established (`fi_eq_cm_entry`).
pub const FI_CONNECTED: c_int = 2;
/// EQ event: connection shut down (`fi_eq_cm_entry`).
pub const FI_SHUTDOWN: c_int = 3;
/// EQ event: asynchronous memory registration finished (`fi_eq_entry`).
pub const FI_MR_COMPLETE: c_int = 4;
/// EQ event: asynchronous AV insertion finished (`fi_eq_entry`).
pub const FI_AV_COMPLETE: c_int = 5;
/// EQ event: multicast join finished (`fi_eq_entry`).
pub const FI_JOIN_COMPLETE: c_int = 6;

/// Entry for FI_NOTIFY, FI_MR_COMPLETE, FI_AV_COMPLETE, FI_JOIN_COMPLETE.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_entry {
    pub fid: fid_t,
    pub context: *mut c_void,
    pub data: u64,
}

/// Filled in by `fi_eq_readerr()`. `err_data` stays valid until the next
/// read from the same EQ; the caller may pass its own buffer through
/// `err_data`/`err_data_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_eq_err_entry {
    pub fid: fid_t,
    pub context: *mut c_void,
    pub data: u64,
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: *mut c_void,
    pub err_data_size: size_t,
}

/// Entry for FI_CONNREQ / FI_CONNECTED / FI_SHUTDOWN, followed in the
/// caller's buffer by connection data (`data`, a flexible array member).
/// The receiver owns `info` and frees it with `fi_freeinfo()`.
///
/// Printed from `c/fi_eq.h.top`, because cbindgen cannot write `data[]`.
/// cbindgen:ignore
#[repr(C)]
pub struct fi_eq_cm_entry {
    pub fid: fid_t,
    pub info: *mut fi_info,
    pub data: [u8; 0],
}

/// Operations of an event queue.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_eq {
    pub size: size_t,
    pub read: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            event: *mut u32,
            buf: *mut c_void,
            len: size_t,
            flags: u64,
        ) -> ssize_t,
    >,
    pub readerr: Option<
        unsafe extern "C" fn(eq: *mut fid_eq, buf: *mut fi_eq_err_entry, flags: u64) -> ssize_t,
    >,
    pub write: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            event: u32,
            buf: *const c_void,
            len: size_t,
            flags: u64,
        ) -> ssize_t,
    >,
    pub sread: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            event: *mut u32,
            buf: *mut c_void,
            len: size_t,
            timeout: c_int,
            flags: u64,
        ) -> ssize_t,
    >,
    pub strerror: Option<
        unsafe extern "C" fn(
            eq: *mut fid_eq,
            prov_errno: c_int,
            err_data: *const c_void,
            buf: *mut c_char,
            len: size_t,
        ) -> *const c_char,
    >,
}

/// An event queue.
#[repr(C)]
pub struct fid_eq {
    pub fid: fid,
    pub ops: *mut fi_ops_eq,
}

/// `enum fi_cq_format`: which `fi_cq_*_entry` a CQ reports.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_cq_format {
    FI_CQ_FORMAT_UNSPEC = 0,
    FI_CQ_FORMAT_CONTEXT = 1,
    FI_CQ_FORMAT_MSG = 2,
    FI_CQ_FORMAT_DATA = 3,
    FI_CQ_FORMAT_TAGGED = 4,
}
/// cbindgen:ignore
pub type fi_cq_format_raw = c_uint;

/// FI_CQ_FORMAT_CONTEXT entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_entry {
    pub op_context: *mut c_void,
}

/// FI_CQ_FORMAT_MSG entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_msg_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: size_t,
}

/// FI_CQ_FORMAT_DATA entry; `data` is remote CQ data when FI_REMOTE_CQ_DATA
/// is set in `flags`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_data_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: size_t,
    pub buf: *mut c_void,
    pub data: u64,
}

/// FI_CQ_FORMAT_TAGGED entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_tagged_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: size_t,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
}

/// Filled in by `fi_cq_readerr()`. `err_data` stays valid until the next
/// read from the same CQ.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_err_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: size_t,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    pub olen: size_t,
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: *mut c_void,
    pub err_data_size: size_t,
    pub src_addr: fi_addr_t,
}

/// `enum fi_cq_wait_cond`: condition for `fi_cq_sread()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_cq_wait_cond {
    FI_CQ_COND_NONE = 0,
    /// `cond` points to a `size_t` threshold.
    FI_CQ_COND_THRESHOLD = 1,
}
/// cbindgen:ignore
pub type fi_cq_wait_cond_raw = c_uint;

/// Attributes of a completion queue, read by `fi_cq_open()`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cq_attr {
    pub size: size_t,
    pub flags: u64,
    pub format: fi_cq_format_raw,
    pub wait_obj: fi_wait_obj_raw,
    pub signaling_vector: c_int,
    pub wait_cond: fi_cq_wait_cond_raw,
    /// Deprecated; NULL unless `wait_obj` is FI_WAIT_SET.
    pub wait_set: *mut fid_wait,
    /// XPU context the CQ is bound to; read only when `flags` has FI_XPU.
    /// Since 2.7.
    pub xpu_ctx: *mut fid_xpu_ctx,
}

/// Operations of a completion queue.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cq {
    pub size: size_t,
    pub read:
        Option<unsafe extern "C" fn(cq: *mut fid_cq, buf: *mut c_void, count: size_t) -> ssize_t>,
    pub readfrom: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            buf: *mut c_void,
            count: size_t,
            src_addr: *mut fi_addr_t,
        ) -> ssize_t,
    >,
    pub readerr: Option<
        unsafe extern "C" fn(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> ssize_t,
    >,
    pub sread: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            buf: *mut c_void,
            count: size_t,
            cond: *const c_void,
            timeout: c_int,
        ) -> ssize_t,
    >,
    pub sreadfrom: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            buf: *mut c_void,
            count: size_t,
            src_addr: *mut fi_addr_t,
            cond: *const c_void,
            timeout: c_int,
        ) -> ssize_t,
    >,
    pub signal: Option<unsafe extern "C" fn(cq: *mut fid_cq) -> c_int>,
    pub strerror: Option<
        unsafe extern "C" fn(
            cq: *mut fid_cq,
            prov_errno: c_int,
            err_data: *const c_void,
            buf: *mut c_char,
            len: size_t,
        ) -> *const c_char,
    >,
    /// Since 2.7.
    pub export_xpu:
        Option<unsafe extern "C" fn(cq: *mut fid_cq, flags: u64, xpu_cq: *mut fid_xpu_cq) -> c_int>,
}

/// A completion queue.
#[repr(C)]
pub struct fid_cq {
    pub fid: fid,
    pub ops: *mut fi_ops_cq,
}

/// `enum fi_cntr_events`: what a counter counts.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_cntr_events {
    FI_CNTR_EVENTS_COMP = 0,
    /// Bytes transferred, not completions.
    FI_CNTR_EVENTS_BYTES = 1,
}
/// cbindgen:ignore
pub type fi_cntr_events_raw = c_uint;

/// Attributes of a counter, read by `fi_cntr_open()`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_cntr_attr {
    pub events: fi_cntr_events_raw,
    pub wait_obj: fi_wait_obj_raw,
    /// Deprecated; NULL unless `wait_obj` is FI_WAIT_SET.
    pub wait_set: *mut fid_wait,
    pub flags: u64,
    /// XPU context the counter is bound to; read only when `flags` has
    /// FI_XPU. Since 2.7.
    pub xpu_ctx: *mut fid_xpu_ctx,
}

/// Operations of a counter.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_cntr {
    pub size: size_t,
    pub read: Option<unsafe extern "C" fn(cntr: *mut fid_cntr) -> u64>,
    pub readerr: Option<unsafe extern "C" fn(cntr: *mut fid_cntr) -> u64>,
    pub add: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    pub set: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    pub wait:
        Option<unsafe extern "C" fn(cntr: *mut fid_cntr, threshold: u64, timeout: c_int) -> c_int>,
    pub adderr: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    pub seterr: Option<unsafe extern "C" fn(cntr: *mut fid_cntr, value: u64) -> c_int>,
    /// Since 2.7.
    pub export_xpu: Option<
        unsafe extern "C" fn(cntr: *mut fid_cntr, flags: u64, xpu_cntr: *mut fid_xpu_cntr) -> c_int,
    >,
}

/// A counter.
#[repr(C)]
pub struct fid_cntr {
    pub fid: fid,
    pub ops: *mut fi_ops_cntr,
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

impl_from_raw!(fi_wait_obj {
    FI_WAIT_NONE,
    FI_WAIT_UNSPEC,
    FI_WAIT_SET,
    FI_WAIT_FD,
    FI_WAIT_MUTEX_COND,
    FI_WAIT_YIELD,
    FI_WAIT_POLLFD,
});
impl_from_raw!(fi_cq_format {
    FI_CQ_FORMAT_UNSPEC,
    FI_CQ_FORMAT_CONTEXT,
    FI_CQ_FORMAT_MSG,
    FI_CQ_FORMAT_DATA,
    FI_CQ_FORMAT_TAGGED,
});
impl_from_raw!(fi_cq_wait_cond {
    FI_CQ_COND_NONE,
    FI_CQ_COND_THRESHOLD,
});
impl_from_raw!(fi_cntr_events {
    FI_CNTR_EVENTS_COMP,
    FI_CNTR_EVENTS_BYTES,
});
