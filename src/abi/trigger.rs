//! Mirror of `rdma/fi_trigger.h`: operations deferred until a counter
//! reaches a threshold (FI_TRIGGER), and the work queue of deferred
//! operations.

use crate::abi::atomic::{fi_msg_atomic, fi_msg_compare, fi_msg_fetch};
use crate::abi::domain::{fi_datatype_raw, fi_hmem_iface_raw};
use crate::abi::endpoint::{fi_msg, fid_ep};
use crate::abi::eq::fid_cntr;
use crate::abi::fabric::fi_context2;
use crate::abi::rma::fi_msg_rma;
use crate::abi::tagged::fi_msg_tagged;
use libc::{c_int, c_uint, c_void, size_t};

/// `enum fi_trigger_event`: what releases a triggered operation.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_trigger_event {
    FI_TRIGGER_THRESHOLD = 0,
    FI_TRIGGER_XPU = 1,
}
/// cbindgen:ignore
pub type fi_trigger_event_raw = c_uint;

impl fi_trigger_event {
    pub fn from_raw(v: c_uint) -> Option<fi_trigger_event> {
        match v {
            0 => Some(fi_trigger_event::FI_TRIGGER_THRESHOLD),
            1 => Some(fi_trigger_event::FI_TRIGGER_XPU),
            _ => None,
        }
    }
}

/// `enum fi_op_type`: the kind of operation a deferred work item posts.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum fi_op_type {
    FI_OP_RECV = 0,
    FI_OP_SEND = 1,
    FI_OP_TRECV = 2,
    FI_OP_TSEND = 3,
    FI_OP_READ = 4,
    FI_OP_WRITE = 5,
    FI_OP_ATOMIC = 6,
    FI_OP_FETCH_ATOMIC = 7,
    FI_OP_COMPARE_ATOMIC = 8,
    FI_OP_CNTR_SET = 9,
    FI_OP_CNTR_ADD = 10,
}
/// cbindgen:ignore
pub type fi_op_type_raw = c_uint;

impl fi_op_type {
    pub fn from_raw(v: c_uint) -> Option<fi_op_type> {
        use fi_op_type::*;
        const ALL: [fi_op_type; 11] = [
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
        ALL.get(v as usize).copied()
    }
}

/// FI_TRIGGER_THRESHOLD condition: run once `cntr` reaches `threshold`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_threshold {
    pub cntr: *mut fid_cntr,
    pub threshold: size_t,
}

/// The value of a `fi_trigger_var`; which member is meaningful follows from
/// the variable's datatype and count.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_trigger_var_value {
    pub val8: u8,
    pub val16: u16,
    pub val32: u32,
    pub val64: u64,
    pub data: *mut u8,
}

/// A variable an XPU writes to release a triggered operation.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_var {
    pub datatype: fi_datatype_raw,
    pub count: c_int,
    pub addr: *mut c_void,
    pub value: __anon_fi_trigger_var_value,
}

/// The device of a `fi_trigger_xpu`, by interface.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_trigger_xpu_device {
    pub reserved: u64,
    pub cuda: c_int,
    pub ze: c_int,
}

/// FI_TRIGGER_XPU condition: `count` variables in `var` on an accelerator.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_trigger_xpu {
    pub count: c_int,
    pub iface: fi_hmem_iface_raw,
    pub device: __anon_fi_trigger_xpu_device,
    pub var: *mut fi_trigger_var,
}

/// A deferred message send or receive.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_msg {
    pub ep: *mut fid_ep,
    pub msg: fi_msg,
    pub flags: u64,
}

/// A deferred tagged send or receive.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_tagged {
    pub ep: *mut fid_ep,
    pub msg: fi_msg_tagged,
    pub flags: u64,
}

/// A deferred RMA read or write.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_rma {
    pub ep: *mut fid_ep,
    pub msg: fi_msg_rma,
    pub flags: u64,
}

/// A deferred atomic.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_atomic {
    pub ep: *mut fid_ep,
    pub msg: fi_msg_atomic,
    pub flags: u64,
}

/// A deferred fetching atomic.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_fetch_atomic {
    pub ep: *mut fid_ep,
    pub msg: fi_msg_atomic,
    pub fetch: fi_msg_fetch,
    pub flags: u64,
}

/// A deferred compare atomic.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_compare_atomic {
    pub ep: *mut fid_ep,
    pub msg: fi_msg_atomic,
    pub fetch: fi_msg_fetch,
    pub compare: fi_msg_compare,
    pub flags: u64,
}

/// A deferred counter set or add of `value`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_op_cntr {
    pub cntr: *mut fid_cntr,
    pub value: u64,
}

/// The condition of a `fi_triggered_context`, by `event_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_triggered_context_trigger {
    pub threshold: fi_trigger_threshold,
    pub xpu: fi_trigger_xpu,
    pub internal: [*mut c_void; 3],
}

/// Passed as the `context` of an operation posted with FI_TRIGGER; the same
/// size as `struct fi_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_triggered_context {
    pub event_type: fi_trigger_event_raw,
    pub trigger: __anon_fi_triggered_context_trigger,
}

/// The condition of a `fi_triggered_context2`, by `event_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_triggered_context2_trigger {
    pub threshold: fi_trigger_threshold,
    pub xpu: fi_trigger_xpu,
    pub internal: [*mut c_void; 7],
}

/// As `fi_triggered_context`, for FI_CONTEXT2 mode; the same size as
/// `struct fi_context2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_triggered_context2 {
    pub event_type: fi_trigger_event_raw,
    pub trigger: __anon_fi_triggered_context2_trigger,
}

/// The operation of a `fi_deferred_work`, by `op_type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union __anon_fi_deferred_work_op {
    pub msg: *mut fi_op_msg,
    pub tagged: *mut fi_op_tagged,
    pub rma: *mut fi_op_rma,
    pub atomic: *mut fi_op_atomic,
    pub fetch_atomic: *mut fi_op_fetch_atomic,
    pub compare_atomic: *mut fi_op_compare_atomic,
    pub cntr: *mut fi_op_cntr,
}

/// A deferred work item queued on a domain with FI_QUEUE_WORK: post `op`
/// once `triggering_cntr` reaches `threshold`, then count it on
/// `completion_cntr`. The application owns the item until it completes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_deferred_work {
    pub context: fi_context2,
    pub threshold: u64,
    pub triggering_cntr: *mut fid_cntr,
    pub completion_cntr: *mut fid_cntr,
    pub op_type: fi_op_type_raw,
    pub op: __anon_fi_deferred_work_op,
}
