//! Memory of a live MR unmapped or remapped: munmap, mremap (a move, or a
//! shrink), madvise(MADV_DONTNEED, MADV_FREE, MADV_REMOVE) and a brk or
//! sbrk that lowers the break, called by the program (entry.c interposes
//! them). A registration still open over those pages names memory that
//! the NIC may write after the program reuses it. Reported once per call
//! site with the MR and the call's site; the memory call is never refused
//! (it is not libfabric's, and the pages are gone by then).
//!
//! libc's own calls are not seen: a large malloc'd block that free()
//! unmaps from inside libc, or the heap trimmed by malloc.

use super::mr::{info_of, ShimMr};
use super::report::Kind;
use super::{state, Mode, MODE};
use libc::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set at the first registration the shim wraps: before it no call can
/// hit an MR, and the memory calls skip the lock.
pub(crate) static ANY_MR: AtomicBool = AtomicBool::new(false);

fn call_name(call: c_int) -> &'static str {
    match call {
        0 => "munmap",
        1 => "mremap",
        2 => "madvise",
        3 => "brk",
        _ => "sbrk",
    }
}

/// The pages `start..end` lost their contents through `call`, made at
/// `ra` (from entry.c, after the call succeeded).
#[unsafe(no_mangle)]
pub extern "C" fn oxshim_rs_unmap(ra: *mut c_void, call: c_int, start: usize, end: usize) {
    if start >= end || !ANY_MR.load(Ordering::Relaxed) || *MODE == Mode::Off {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let mut st = state();
        let mut hits = Vec::new();
        for (i, d) in st.report.domains.iter().enumerate() {
            for &p in &d.live {
                // SAFETY: live wrappers are valid.
                let m = unsafe { &*(p as *const ShimMr) };
                if m.orphaned.load(Ordering::Relaxed) || m.len == 0 {
                    continue;
                }
                if m.addr < end && start < m.addr.saturating_add(m.len) {
                    hits.push((i, p));
                }
            }
        }
        for (dom, p) in hits {
            let what = format!(
                "{} of {start:#x}..{end:#x} while an MR over it is open",
                call_name(call)
            );
            st.report.finding(
                Kind::UnmappedLiveMr,
                ra as usize,
                dom,
                Some(info_of(p)),
                what,
            );
        }
    });
}
