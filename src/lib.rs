//! oxfabric: libfabric's memory-registration surface, with a built-in
//! shared-memory provider, behind libfabric's C ABI.
//!
//! Layers, top to bottom: [`capi`] (the `extern "C"` boundary), [`prov`]
//! (providers; `oxshm`), [`mr`] (the registration engine, safe Rust) and
//! [`abi`] (`#[repr(C)]` mirrors of libfabric's public headers). The panic
//! barrier and argument checks every C entry runs through, exports and
//! provider vtable slots alike, are [`boundary`], below `prov`.

pub mod abi;
#[cfg(not(feature = "shim"))]
pub mod boundary;
// The shim build (feature `shim`) links liboxfabric-shim.so, which wraps
// another libfabric instead of being one: it leaves out the exports and the
// provider, whose `fi_*` names would collide with its own.
#[cfg(not(feature = "shim"))]
pub mod capi;
pub mod error;
pub mod errstr;
pub mod mr;
#[cfg(not(feature = "shim"))]
pub mod prov;
#[cfg(feature = "shim")]
pub mod shim;
#[macro_use]
pub mod log;
pub mod param;
pub mod tally;
pub mod tostr;
