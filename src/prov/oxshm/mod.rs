//! `oxshm`: the built-in provider for processes on one host.
//!
//! One file per object, as libfabric's prov/<name>/src/<prefix>_<object>.c.

pub mod atomics;
pub mod av;
pub mod cntr;
pub mod cq;
pub mod direct;
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

/// 64 random bits from getrandom(2): endpoint address nonces and the
/// secret of provider keys. Without an entropy source, the clock and this
/// thread's stack address, which still differ between processes that
/// reuse a pid.
pub(crate) fn random_u64() -> u64 {
    let mut v: u64 = 0;
    // SAFETY: getrandom writes at most 8 bytes into v.
    let n = unsafe { libc::getrandom(&mut v as *mut u64 as *mut libc::c_void, 8, 0) };
    if n != 8 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        v = t ^ (&v as *const u64 as u64).rotate_left(29);
    }
    v
}

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
