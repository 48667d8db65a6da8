//! oxfabric: libfabric's memory-registration surface, with a built-in
//! shared-memory provider, behind libfabric's C ABI.
//!
//! Layers, top to bottom: [`capi`] (the `extern "C"` boundary), [`prov`]
//! (providers; `oxshm`), [`mr`] (the registration engine, safe Rust) and
//! [`abi`] (`#[repr(C)]` mirrors of libfabric's public headers).

pub mod abi;
pub mod capi;
pub mod error;
pub mod errstr;
pub mod mr;
pub mod prov;
#[macro_use]
pub mod log;
pub mod param;
pub mod tostr;
