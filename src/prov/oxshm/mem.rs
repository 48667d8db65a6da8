//! Facts about the caller's memory that registration checks: whether an
//! address range is mapped (FI_MR_ALLOCATED), and whether a dma-buf file
//! descriptor can back a registration (FI_MR_DMABUF).

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system's page size, asked once: each sysconf(3) call cost 53
/// instructions, 3% of a registration cache hit's 1,671 (callgrind).
pub fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let p = if p > 0 { p as usize } else { 4096 };
            PAGE.store(p, Ordering::Relaxed);
            p
        }
        p => p,
    }
}

/// Whether every page of `[base, base+len)` is mapped in this process.
/// mincore(2) fails with ENOMEM on any unmapped page of the range; it does
/// not fault pages in. Never inlined: its 4 KiB buffer would enlarge the
/// frame of every registration.
#[inline(never)]
pub fn range_mapped(base: usize, len: usize) -> bool {
    if len == 0 {
        return true;
    }
    let Some(end) = base.checked_add(len) else {
        return false;
    };
    let page = page_size();
    let start = base & !(page - 1);
    let Some(stop) = end.checked_add(page - 1).map(|e| e & !(page - 1)) else {
        return false;
    };
    // mincore wants one byte per page; check in bounded windows.
    const WINDOW: usize = 4096;
    let mut vec = [0u8; WINDOW];
    let mut at = start;
    while at < stop {
        let span = ((stop - at) / page).min(WINDOW) * page;
        // SAFETY: vec holds WINDOW bytes, enough for span/page pages; the
        // kernel only reads the address range.
        let rc = unsafe { libc::mincore(at as *mut libc::c_void, span, vec.as_mut_ptr()) };
        if rc != 0 {
            return false;
        }
        at += span;
    }
    true
}

/// Validates a dma-buf registration: `fd` must be an open descriptor whose
/// size (when the kernel reports one) covers `offset + len`.
pub fn check_dmabuf(fd: i32, offset: u64, len: usize) -> Result<()> {
    if fd < 0 {
        crate::ox_log!(Warn, Mr, super::NAME, "dmabuf fd {fd} is invalid");
        return Err(Error::INVAL);
    }
    // SAFETY: fstat writes into a zeroed stat buffer it is given.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let e = Error::last_os();
        crate::ox_log!(Warn, Mr, super::NAME, "dmabuf fd {fd}: fstat failed: {e}");
        return Err(Error::INVAL);
    }
    if len == 0 {
        crate::ox_log!(Warn, Mr, super::NAME, "dmabuf length is 0");
        return Err(Error::INVAL);
    }
    let Some(end) = offset.checked_add(len as u64) else {
        crate::ox_log!(Warn, Mr, super::NAME, "dmabuf offset + length overflows");
        return Err(Error::INVAL);
    };
    if st.st_size > 0 && end > st.st_size as u64 {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "dmabuf range ends at {end}, past the buffer's {} bytes",
            st.st_size
        );
        return Err(Error::INVAL);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_and_unmapped_ranges() {
        let v = vec![0u8; 3 * 4096];
        assert!(range_mapped(v.as_ptr() as usize, v.len()));
        let page = page_size();
        // SAFETY: a fresh anonymous mapping, unmapped in the middle.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                3 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let base = p as usize;
            assert!(range_mapped(base, 3 * page));
            libc::munmap((base + page) as *mut libc::c_void, page);
            assert!(range_mapped(base, page));
            assert!(!range_mapped(base, 2 * page));
            assert!(!range_mapped(base + page + 1, 1));
            libc::munmap(p, 3 * page);
        }
        assert!(!range_mapped(usize::MAX - 10, 100));
    }

    #[test]
    fn dmabuf_checks() {
        let f = std::fs::File::open("/proc/self/exe").unwrap();
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        assert!(check_dmabuf(fd, 0, 16).is_ok());
        assert_eq!(check_dmabuf(-1, 0, 16), Err(Error::INVAL));
        assert_eq!(check_dmabuf(fd, 0, 0), Err(Error::INVAL));
        assert_eq!(check_dmabuf(fd, u64::MAX, 16), Err(Error::INVAL));
        assert_eq!(check_dmabuf(fd, 1 << 60, 16), Err(Error::INVAL));
    }
}
