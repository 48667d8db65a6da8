//! Removal of the segments whose owners died without closing them.

use super::{alive, start_time, Header, HEADER, MAGIC};
use crate::prov::oxshm::ep::Address;
use std::ffi::CString;
use std::sync::atomic::Ordering;

/// Removes the segments of `/dev/shm` whose owner died without closing
/// them (kill -9, a crash). A segment whose owner runs is left alone.
pub fn reap() -> usize {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return 0;
    };
    let mut n = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("oxshm-") else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if reap_one(name, pid) {
            n += 1;
        }
    }
    n
}

/// Removes `/dev/shm/<name>` when its owner (`pid`) is dead.
fn reap_one(name: &str, pid: u32) -> bool {
    let Ok(c) = CString::new(format!("/{name}")) else {
        return false;
    };
    // SAFETY: c is NUL-terminated.
    let fd = unsafe { libc::shm_open(c.as_ptr(), libc::O_RDONLY, 0) };
    if fd < 0 {
        return false;
    }
    // An object another process has created but not sized yet has no
    // header page: reading a mapping of it would raise SIGBUS.
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; st is writable.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || (st.st_size as usize) < HEADER {
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        return false;
    }
    // SAFETY: a read-only mapping of the header page.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            HEADER,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    let dead = if p == libc::MAP_FAILED {
        start_time(pid).is_none()
    } else {
        // SAFETY: the object is at least a header page long; it starts with
        // a Header (or zeros, for a segment still being set up: magic 0).
        let h = unsafe { &*(p as *const Header) };
        let dead = if h.magic.load(Ordering::Acquire) == MAGIC {
            !alive(
                h.pid.load(Ordering::Relaxed),
                h.start_time.load(Ordering::Relaxed),
            )
        } else {
            start_time(pid).is_none()
        };
        // SAFETY: our mapping.
        unsafe { libc::munmap(p, HEADER) };
        dead
    };
    if dead {
        // SAFETY: c is NUL-terminated.
        unsafe { libc::shm_unlink(c.as_ptr()) };
        crate::ox_log!(
            Info,
            EpData,
            crate::prov::oxshm::NAME,
            "removed shared memory {name} of a dead process"
        );
    }
    dead
}

/// Removes the segment of a peer found dead.
pub fn reap_peer(addr: &Address) {
    let name = addr.segment_name();
    reap_one(&name[1..], addr.pid);
}
