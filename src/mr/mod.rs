//! The registration engine: safe Rust, independent of any provider and of C
//! types (plain integers only).
//!
//! A [`Registry`] holds the memory regions of one domain. A provider
//! registers a region with a [`Request`] and keeps the [`Handle`] it gets
//! back (in its `fid_mr`); the data path checks every remote access with
//! [`Registry::verify`], which is lock-free and returns the [`Target`]
//! bytes to touch.
//!
//! - `slot.rs`: 64-byte type-stable slots, their seqlock protocol and free
//!   list; `chunks.rs` the storage under them.
//! - `key.rs`: provider keys (a keyed permutation of slot and generation);
//!   `index.rs`: requested keys.
//! - `iov.rs`: iov lists of multi-iov regions.
//! - `registry.rs`: register, close, enable, bind, sub-regions, statistics.
//! - `verify.rs`: the read path, and how multi-iov regions are addressed;
//!   `remote.rs` the same check made by another process over shared slots.
//! - `raw.rs`: the raw key format.
//! - `cache.rs`: the registration cache (pinnings in LRU order, limits,
//!   range lookup, invalidation); the pinning itself is the provider's.

pub mod cache;
pub(crate) mod chunks;
mod index;
mod iov;
mod key;
pub mod raw;
pub mod refs;
mod region;
pub mod registry;
pub mod remote;
mod slot;
pub mod verify;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod stress;

pub use iov::MAX_IOVS;
pub use key::SLOT_BITS_MAX;
pub use raw::{RawFields, RawKey, RAW_KEY_SIZE};
pub use region::{Access, Bindings, Handle, RegFlags, RegionInfo, Request};
pub use registry::{CheckedIovs, Config, IovFault, Registry, Stats, KEY_NOTAVAIL};
pub use verify::Target;

/// A word that tells this process's live threads apart (one load); the
/// shim's build, which has no provider, does not use it.
#[cfg_attr(feature = "shim", allow(unused_imports))]
pub(crate) use slot::thread_word;
