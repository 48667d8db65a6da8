//! `#[repr(C)]` mirror of libfabric 2.7's public headers, one module per
//! header; `include/rdma/*.h` is generated from these files (see build.rs).
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]
// Function-pointer slots mirror C signatures; naming them would hide the ABI.
#![allow(clippy::type_complexity)]

pub mod atomic;
pub mod cm;
pub mod collective;
pub mod domain;
pub mod endpoint;
pub mod eq;
pub mod errno;
pub mod ext;
pub mod fabric;
pub mod prov;
pub mod rma;
pub mod tagged;
pub mod trigger;
pub mod xpu;
