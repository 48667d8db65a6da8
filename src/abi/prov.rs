//! Mirror of the part of `rdma/providers/fi_prov.h` that the exported
//! logging and parameter calls read (no header is generated from it).

use libc::{c_char, c_void};

/// The leading fields of `struct fi_provider`, up to its name.
#[repr(C)]
pub struct fi_provider_head {
    pub version: u32,
    pub fi_version: u32,
    pub context: [*mut c_void; 4],
    pub name: *const c_char,
}
