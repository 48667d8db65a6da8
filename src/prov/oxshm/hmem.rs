//! Device memory interfaces (`enum fi_hmem_iface`): oxshm moves host memory
//! only, but recognises every interface and tells a caller precisely why a
//! device registration cannot be served. A device runtime is looked up with
//! dlopen at registration time, never linked.

use crate::abi::domain::fi_hmem_iface;
use crate::error::{Error, Result};
use std::ffi::CString;
use std::sync::atomic::{AtomicU8, Ordering};

/// The runtime library each device interface needs.
pub fn runtime_library(iface: fi_hmem_iface) -> Option<&'static str> {
    match iface {
        fi_hmem_iface::FI_HMEM_SYSTEM => None,
        fi_hmem_iface::FI_HMEM_CUDA => Some("libcuda.so.1"),
        fi_hmem_iface::FI_HMEM_ROCR => Some("libhsa-runtime64.so.1"),
        fi_hmem_iface::FI_HMEM_ZE => Some("libze_loader.so.1"),
        fi_hmem_iface::FI_HMEM_NEURON => Some("libnrt.so.1"),
        fi_hmem_iface::FI_HMEM_SYNAPSEAI => Some("libSynapse.so"),
    }
}

pub fn name(iface: fi_hmem_iface) -> &'static str {
    match iface {
        fi_hmem_iface::FI_HMEM_SYSTEM => "FI_HMEM_SYSTEM",
        fi_hmem_iface::FI_HMEM_CUDA => "FI_HMEM_CUDA",
        fi_hmem_iface::FI_HMEM_ROCR => "FI_HMEM_ROCR",
        fi_hmem_iface::FI_HMEM_ZE => "FI_HMEM_ZE",
        fi_hmem_iface::FI_HMEM_NEURON => "FI_HMEM_NEURON",
        fi_hmem_iface::FI_HMEM_SYNAPSEAI => "FI_HMEM_SYNAPSEAI",
    }
}

/// Whether each interface's runtime loads: 0 not yet known, 1 no, 2 yes.
static PRESENT: [AtomicU8; 6] = [const { AtomicU8::new(0) }; 6];

/// Whether an interface's runtime library can be loaded (cached; no heap,
/// so nothing outlives the process as a leak report).
fn runtime_present(iface: fi_hmem_iface, lib: &'static str) -> bool {
    let cell = &PRESENT[iface as usize];
    match cell.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = library_present(lib);
            cell.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

/// Whether a shared library can be loaded.
fn library_present(lib: &str) -> bool {
    let Ok(c) = CString::new(lib) else {
        return false;
    };
    // SAFETY: dlopen with a valid string; the handle is closed at once.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if h.is_null() {
            false
        } else {
            libc::dlclose(h);
            true
        }
    }
}

/// Checks that memory of interface `raw` can be registered: the system
/// interface always can; a device interface needs its runtime library, and
/// even then oxshm (host memory only) refuses it with -FI_EOPNOTSUPP.
/// Unknown values are -FI_EINVAL.
pub fn check_iface(raw: u32) -> Result<fi_hmem_iface> {
    let Some(iface) = fi_hmem_iface::from_raw(raw) else {
        crate::ox_log!(Warn, Mr, super::NAME, "unknown hmem iface {raw}");
        return Err(Error::INVAL);
    };
    let Some(lib) = runtime_library(iface) else {
        return Ok(iface);
    };
    if !runtime_present(iface, lib) {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "{} memory needs its runtime ({lib}), which is not installed",
            name(iface)
        );
        return Err(Error::NOSYS);
    }
    crate::ox_log!(
        Warn,
        Mr,
        super::NAME,
        "{} runtime found, but oxshm moves host memory only",
        name(iface)
    );
    Err(Error::OPNOTSUPP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_memory_is_accepted_and_unknown_ifaces_refused() {
        assert_eq!(check_iface(0), Ok(fi_hmem_iface::FI_HMEM_SYSTEM));
        assert_eq!(check_iface(99), Err(Error::INVAL));
    }

    #[test]
    fn device_ifaces_get_a_clear_error() {
        for raw in 1..=5 {
            let e = check_iface(raw).unwrap_err();
            assert!(
                e == Error::NOSYS || e == Error::OPNOTSUPP,
                "iface {raw}: {e:?}"
            );
        }
        assert!(!library_present("libdefinitely-not-here.so.9"));
        assert!(library_present("libc.so.6"));
    }
}
