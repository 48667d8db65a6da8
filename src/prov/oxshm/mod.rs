//! `oxshm`: the built-in provider for processes on one host.
//!
//! One file per object, as libfabric's prov/<name>/src/<prefix>_<object>.c.

pub mod atomics;
pub mod av;
pub mod cntr;
pub mod cq;
pub mod domain;
pub mod ep;
pub mod eq;
pub mod fabric;
pub mod fault;
pub mod hmem;
pub mod info;
pub mod lock;
pub mod mem;
pub mod memhooks;
pub mod monitor;
pub mod mr;
pub mod mr_cache;
pub mod object;
pub mod ops;
pub mod pin;
pub mod shm;
pub mod svc;
#[cfg(target_arch = "x86_64")]
pub mod x87;
pub mod xfer;

use super::Provider;

/// Provider version reported in `fabric_attr->prov_version`.
pub const VERSION: u32 = crate::prov::info::version(0, 1);

pub const NAME: &str = "oxshm";

pub static PROVIDER: Provider = Provider {
    name: NAME,
    version: VERSION,
    offers: info::offers,
    mr_required: info::mr_required,
    mr_preferred: info::mr_preferred,
    adjust: info::adjust,
    node_service: svc::Name::from_node_service,
    default_src: svc::default_source,
};
