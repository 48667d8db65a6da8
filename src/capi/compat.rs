//! Entry points for programs linked against older libfabric ABIs
//! (`fi_getinfo@FABRIC_1.0` ... `@FABRIC_1.9`, `fi_fabric@FABRIC_1.0`).
//!
//! Each reads the caller's structures at the sizes its ABI version defined
//! ([`Layout`]) and never writes past them. The lists they return are
//! allocated at the current size, which every older reader accepts.
//!
//! The `.symver` directives are emitted only for the libfabric.so.1 link
//! (cfg `oxfabric_symver`, set by the `symver` feature), whose version
//! script defines the FABRIC_1.x nodes; any other link would fail on them.
//! This file is not read by cbindgen: these names are not part of any header.

use crate::abi::fabric::{fi_fabric_attr, fi_info, fid_fabric};
use crate::capi::guard;
use crate::capi::guard_or;
use crate::capi::info::{dupinfo_impl, fabric_impl, free_info, getinfo_impl, Layout};
use crate::prov::info::version;
use libc::{c_char, c_int, c_void};
use std::mem::offset_of;
use std::ptr::null_mut;

macro_rules! compat_info_family {
    ($lay:expr, $getinfo:ident, $freeinfo:ident, $dupinfo:ident, $node:literal) => {
        /// fi_getinfo for an older ABI.
        ///
        /// # Safety
        /// As fi_getinfo, with `hints` in that ABI's layout.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $getinfo(
            version: u32,
            node: *const c_char,
            service: *const c_char,
            flags: u64,
            hints: *const fi_info,
            info: *mut *mut fi_info,
        ) -> c_int {
            guard("fi_getinfo", || unsafe {
                getinfo_impl(version, node, service, flags, hints, info, &$lay)
            })
        }

        /// fi_freeinfo for an older ABI.
        ///
        /// # Safety
        /// As fi_freeinfo, with `info` in that ABI's layout.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $freeinfo(info: *mut fi_info) {
            guard("fi_freeinfo", || {
                // SAFETY: per the function contract.
                unsafe { free_info(info, &$lay) };
                Ok(0)
            });
        }

        /// fi_dupinfo for an older ABI.
        ///
        /// # Safety
        /// As fi_dupinfo, with `info` in that ABI's layout.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $dupinfo(info: *const fi_info) -> *mut fi_info {
            guard_or("fi_dupinfo", null_mut(), || unsafe {
                dupinfo_impl(info, &$lay)
            })
        }

        #[cfg(oxfabric_symver)]
        core::arch::global_asm!(
            concat!(".symver ", stringify!($getinfo), ", fi_getinfo@", $node),
            concat!(".symver ", stringify!($freeinfo), ", fi_freeinfo@", $node),
            concat!(".symver ", stringify!($dupinfo), ", fi_dupinfo@", $node),
        );
    };
}

compat_info_family!(
    Layout::V1_0,
    oxfabric_getinfo_1_0,
    oxfabric_freeinfo_1_0,
    oxfabric_dupinfo_1_0,
    "FABRIC_1.0"
);
compat_info_family!(
    Layout::V1_1,
    oxfabric_getinfo_1_1,
    oxfabric_freeinfo_1_1,
    oxfabric_dupinfo_1_1,
    "FABRIC_1.1"
);
compat_info_family!(
    Layout::V1_2,
    oxfabric_getinfo_1_2,
    oxfabric_freeinfo_1_2,
    oxfabric_dupinfo_1_2,
    "FABRIC_1.2"
);
compat_info_family!(
    Layout::V1_3,
    oxfabric_getinfo_1_3,
    oxfabric_freeinfo_1_3,
    oxfabric_dupinfo_1_3,
    "FABRIC_1.3"
);
compat_info_family!(
    Layout::V1_7,
    oxfabric_getinfo_1_7,
    oxfabric_freeinfo_1_7,
    oxfabric_dupinfo_1_7,
    "FABRIC_1.7"
);
compat_info_family!(
    Layout::V1_8,
    oxfabric_getinfo_1_8,
    oxfabric_freeinfo_1_8,
    oxfabric_dupinfo_1_8,
    "FABRIC_1.8"
);
compat_info_family!(
    Layout::V1_8,
    oxfabric_getinfo_1_9,
    oxfabric_freeinfo_1_9,
    oxfabric_dupinfo_1_9,
    "FABRIC_1.9"
);

/// fi_fabric for ABI 1.0, whose fi_fabric_attr has no `api_version`: the
/// fabric is opened at API 1.0.
///
/// # Safety
/// As fi_fabric, with `attr` in the 1.0 layout.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxfabric_fabric_1_0(
    attr: *mut fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    guard("fi_fabric", || unsafe {
        fabric_impl(
            attr,
            offset_of!(fi_fabric_attr, api_version),
            Some(version(1, 0)),
            fabric,
            context,
        )
    })
}

// The current versions are the plain Rust symbols, renamed to their default
// version so that no unversioned copy is left behind.
#[cfg(oxfabric_symver)]
core::arch::global_asm!(
    ".symver oxfabric_fabric_1_0, fi_fabric@FABRIC_1.0",
    ".symver fi_getinfo, fi_getinfo@@FABRIC_1.10, remove",
    ".symver fi_freeinfo, fi_freeinfo@@FABRIC_1.10, remove",
    ".symver fi_dupinfo, fi_dupinfo@@FABRIC_1.10, remove",
    ".symver fi_fabric, fi_fabric@@FABRIC_1.1, remove",
);
