//! Mirror of `rdma/fi_ext.h`: provider-specific option names, fid export
//! and import, and the memory-monitor and logging import extensions.
//!
//! Upstream's header includes `rdma/providers/fi_prov.h` and
//! `rdma/providers/fi_log.h`, which oxfabric does not install; the
//! definitions this header needs from them come from `c/fi_ext.h.top`.

use crate::abi::fabric::fid;
use libc::{c_char, c_int, c_uint, c_void, size_t};

/// Base of the EFA provider's private option names and values.
pub const FI_PROV_SPECIFIC_EFA: c_int = 0xefa << 16;
/// Base of the TCP provider's private option names and values.
pub const FI_PROV_SPECIFIC_TCP: c_int = 0x7cb << 16;

/// EFA option: how many times to retry after receiver-not-ready.
// `+ 0` makes cbindgen parenthesize the macro like its siblings.
#[allow(clippy::identity_op)]
pub const FI_OPT_EFA_RNR_RETRY: c_int = -FI_PROV_SPECIFIC_EFA + 0;
/// EFA option (`bool`): RMA reads are emulated.
pub const FI_OPT_EFA_EMULATED_READ: c_int = -FI_PROV_SPECIFIC_EFA + 1;
/// EFA option (`bool`): RMA writes are emulated.
pub const FI_OPT_EFA_EMULATED_WRITE: c_int = -FI_PROV_SPECIFIC_EFA + 2;
/// EFA option (`bool`): atomics are emulated.
pub const FI_OPT_EFA_EMULATED_ATOMICS: c_int = -FI_PROV_SPECIFIC_EFA + 3;
/// EFA option (`bool`): use the device's RDMA for transfers.
pub const FI_OPT_EFA_USE_DEVICE_RDMA: c_int = -FI_PROV_SPECIFIC_EFA + 4;
/// EFA option (`bool`): sends and receives stay ordered in 128-byte units.
pub const FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES: c_int = -FI_PROV_SPECIFIC_EFA + 5;
/// EFA option (`bool`): writes stay ordered in 128-byte units.
pub const FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES: c_int = -FI_PROV_SPECIFIC_EFA + 6;
/// EFA option (`bool`): every peer runs the same configuration.
/// Since 2.7.
pub const FI_OPT_EFA_HOMOGENEOUS_PEERS: c_int = -FI_PROV_SPECIFIC_EFA + 7;
/// EFA option (`bool`): RDMA writes with immediate data need no posted
/// receive.
/// Since 2.7.
pub const FI_OPT_EFA_USE_UNSOLICITED_WRITE_RECV: c_int = -FI_PROV_SPECIFIC_EFA + 8;

/// The argument of the FI_EXPORT_FID control command (`fi_export_fid`): the
/// exported fid is written to `*fid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_fid_export {
    pub fid: *mut *mut fid,
    pub flags: u64,
    pub context: *mut c_void,
}

/// Callbacks of an imported memory monitor, called by the library to
/// start and stop it and to watch address ranges.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mem_monitor {
    pub size: size_t,
    pub start: Option<unsafe extern "C" fn(monitor: *mut fid_mem_monitor) -> c_int>,
    pub stop: Option<unsafe extern "C" fn(monitor: *mut fid_mem_monitor)>,
    pub subscribe: Option<
        unsafe extern "C" fn(
            monitor: *mut fid_mem_monitor,
            addr: *const c_void,
            len: size_t,
        ) -> c_int,
    >,
    pub unsubscribe: Option<
        unsafe extern "C" fn(monitor: *mut fid_mem_monitor, addr: *const c_void, len: size_t),
    >,
    pub valid: Option<
        unsafe extern "C" fn(
            monitor: *mut fid_mem_monitor,
            addr: *const c_void,
            len: size_t,
        ) -> bool,
    >,
}

/// What the library gives an imported memory monitor: `notify` reports
/// that a watched range changed.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_mem_notify {
    pub size: size_t,
    pub notify: Option<
        unsafe extern "C" fn(monitor: *mut fid_mem_monitor, addr: *const c_void, len: size_t),
    >,
}

/// An application memory monitor, imported into the MR cache with
/// `fi_import_fid`.
#[repr(C)]
pub struct fid_mem_monitor {
    pub fid: fid,
    pub export_ops: *mut fi_ops_mem_monitor,
    pub import_ops: *mut fi_ops_mem_notify,
}

/// Flag for `fi_ops_log.enabled`/`ready`: the provider filter was already
/// applied.
pub const FI_LOG_PROV_FILTERED: u64 = 1u64 << 0;

/// A provider as the logging callbacks see it: opaque here (it is
/// `rdma/providers/fi_prov.h`'s `struct fi_provider`).
pub struct fi_provider {
    _opaque: [u8; 0],
}

/// `enum fi_log_level` of `rdma/providers/fi_log.h` (defined for C in
/// `c/fi_ext.h.top`).
/// cbindgen:ignore
pub type fi_log_level_raw = c_uint;
/// `enum fi_log_subsys` of `rdma/providers/fi_log.h` (defined for C in
/// `c/fi_ext.h.top`).
/// cbindgen:ignore
pub type fi_log_subsys_raw = c_uint;

/// Logging callbacks an application lends the library with
/// `fi_import_log`; the library then routes its log output through them.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct fi_ops_log {
    pub size: size_t,
    pub enabled: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level_raw,
            subsys: fi_log_subsys_raw,
            flags: u64,
        ) -> c_int,
    >,
    pub ready: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level_raw,
            subsys: fi_log_subsys_raw,
            flags: u64,
            showtime: *mut u64,
        ) -> c_int,
    >,
    pub log: Option<
        unsafe extern "C" fn(
            prov: *const fi_provider,
            level: fi_log_level_raw,
            subsys: fi_log_subsys_raw,
            func: *const c_char,
            line: c_int,
            msg: *const c_char,
        ),
    >,
}

/// The application object `fi_import_log` hands to the library: its `fid`
/// and its logging callbacks. The application owns it and keeps it alive
/// while imported.
#[repr(C)]
pub struct fid_logging {
    pub fid: fid,
    pub ops: *mut fi_ops_log,
}
