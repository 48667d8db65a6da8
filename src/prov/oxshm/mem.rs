//! Facts about the caller's memory that registration checks: whether an
//! address range is mapped (FI_MR_ALLOCATED), and whether a dma-buf file
//! descriptor can back a registration (FI_MR_DMABUF); and the one thing
//! registration does to it: backing a remotely accessible region's resident
//! memory with transparent huge pages ([`collapse_resident`]).

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
/// Neither probe faults pages in or changes anything.
/// - Up to [`MINCORE_PAGES`] pages (16 MiB of 4 KiB pages): one mincore(2)
///   call, which fails with ENOMEM on an unmapped page.
/// - Longer: msync(2) with MS_ASYNC, which walks the range's mappings and
///   fails with ENOMEM where one is missing; it writes nothing back (a
///   no-op since Linux 2.6.19). One step a mapping, where mincore stepped
///   through every page, one call per 16 MiB: 0.68 s for a 4 TiB
///   reservation on the AMD EPYC host of 2026-12-07, against 2 us.
///
/// msync is not used for short ranges, though it is faster there (0.29
/// against 1.2 us for one page): Valgrind takes its range for memory the
/// call reads, and reports every refused registration of unmapped memory
/// as an access to unaddressable bytes. Never inlined: mincore's buffer
/// would enlarge the frame of every registration.
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
    let pages = (stop - start) / page;
    if pages <= MINCORE_PAGES {
        let mut vec = [0u8; MINCORE_PAGES];
        // SAFETY: vec holds a byte for each of the range's pages; the
        // kernel only looks the range up.
        unsafe { libc::mincore(start as *mut libc::c_void, stop - start, vec.as_mut_ptr()) == 0 }
    } else {
        // SAFETY: MS_ASYNC only checks the range's mappings.
        unsafe { libc::msync(start as *mut libc::c_void, stop - start, libc::MS_ASYNC) == 0 }
    }
}

/// The longest range [`range_mapped`] probes with mincore(2), in pages.
const MINCORE_PAGES: usize = 4096;

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

/// `FI_OXSHM_THP=0` leaves registered memory as the application mapped it
/// ([`collapse_resident`]); it is on otherwise.
pub static THP: once_cell::sync::Lazy<bool> =
    once_cell::sync::Lazy::new(|| std::env::var("FI_OXSHM_THP").map_or(true, |v| v != "0"));

/// madvise(2) advice (Linux 6.1): collapse the range's pages into
/// transparent huge pages now. Older kernels answer EINVAL.
const MADV_COLLAPSE: libc::c_int = 25;

/// Bytes of one transparent huge page of anonymous memory (the PMD size),
/// read once; 0 where the kernel has none or has them set to `never`.
pub fn thp_bytes() -> usize {
    static THP_BYTES: once_cell::sync::OnceCell<usize> = once_cell::sync::OnceCell::new();
    *THP_BYTES.get_or_init(|| {
        const SYS: &str = "/sys/kernel/mm/transparent_hugepage";
        let never = std::fs::read_to_string(format!("{SYS}/enabled"))
            .map_or(true, |s| s.contains("[never]"));
        let bytes = std::fs::read_to_string(format!("{SYS}/hpage_pmd_size"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if never || !bytes.is_power_of_two() || bytes < page_size() {
            0
        } else {
            bytes
        }
    })
}

/// What [`collapse_resident`] did with a range: whole huge-page blocks in
/// it, those with a present page (looked at one by one; the others are
/// only counted), those already on huge pages, those whose every page was
/// resident in small anonymous pages, and those of these the kernel
/// collapsed (as far as its answers tell).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Collapsed {
    pub blocks: usize,
    pub looked: usize,
    pub huge: usize,
    pub resident: usize,
    pub collapsed: usize,
}

/// How long a range [`collapse_registered`] found all huge is taken to
/// stay so.
const RECENT_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// [`collapse_resident`] for a registration: a range within one found all
/// on huge pages (or made so) in the last [`RECENT_FOR`] is not looked at
/// again, so a region registered and closed over and over pays one
/// PAGEMAP_SCAN (3.6-4.8 us for 64 MiB) a second, not one a registration.
/// Memory unmapped and mapped again at the same addresses within that
/// second keeps its small pages (a missed speed-up, nothing more). None:
/// skipped so.
pub fn collapse_registered(base: usize, len: usize) -> Option<Collapsed> {
    static RECENT: std::sync::Mutex<[(usize, usize, Option<std::time::Instant>); 8]> =
        std::sync::Mutex::new([(0, 0, None); 8]);
    if thp_bytes() == 0 {
        return Some(Collapsed::default());
    }
    let now = std::time::Instant::now();
    let end = base.saturating_add(len);
    {
        let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
        let hit = recent.iter().any(|&(s, e, at)| {
            s <= base && end <= e && at.is_some_and(|t| now.duration_since(t) < RECENT_FOR)
        });
        if hit {
            return None;
        }
    }
    let c = collapse_resident(base, len);
    if c.blocks != 0 && c.huge + c.collapsed == c.blocks {
        let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
        // In the place of the oldest (or an empty one).
        if let Some(slot) = recent.iter_mut().min_by_key(|(_, _, at)| *at) {
            *slot = (base, end, Some(now));
        }
    }
    Some(c)
}

/// ioctl(2) on /proc/self/pagemap (Linux 6.7): the categories of a range's
/// pages, as runs of pages with the same ones (`struct pm_scan_arg`).
const PAGEMAP_SCAN: libc::c_ulong = 0xc060_6610;
const PAGE_IS_FILE: u64 = 1 << 2;
const PAGE_IS_PRESENT: u64 = 1 << 3;
const PAGE_IS_HUGE: u64 = 1 << 6;

#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

/// /proc/self/pagemap, opened once; -1 where it cannot be.
fn pagemap_fd() -> i32 {
    static FD: once_cell::sync::OnceCell<i32> = once_cell::sync::OnceCell::new();
    // SAFETY: a path and flags; the descriptor lives as long as the process.
    *FD.get_or_init(|| unsafe {
        libc::open(
            c"/proc/self/pagemap".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    })
}

/// Backs the resident memory of `[base, base+len)` with transparent huge
/// pages (MADV_COLLAPSE), one whole aligned huge-page block at a time:
/// only a block whose every page is present, anonymous and not already
/// on a huge page, so no memory the application has not touched is added
/// (the kernel fills a sparse block's holes when it collapses it), and a
/// region registered again costs one look (PAGEMAP_SCAN), not another
/// collapse, which drains every CPU's page lists first (13-20 us for 64
/// MiB already huge). Contents do not change.
///
/// Why: a peer's cross-memory copy (process_vm_readv/writev) pins the
/// pages of this process it copies to or from, one small page at a time.
/// On the AMD EPYC host of 2026-12-07 (KVM, kernel 6.18), two processes
/// writing 64 KiB buffers into each other at once copied 5-8.7 GB/s each
/// into 4 KiB pages and 13-15 GB/s into huge pages (1 MiB: 5.2-5.5
/// against 7.0-7.6; 4 MiB: 4.9-5.1 against 7.3-9.7), and what counts is
/// the memory the peer pins: huge pages at the source alone changed
/// nothing. Applications touch their buffers before registering them
/// (fabtests does), so THP set to `madvise` never gives them huge pages
/// unless asked.
///
/// The cost is the kernel's copy into the new pages, once: on that host
/// about 2.5 ms per 2 MiB block (655 ms for 256 MiB). Kernels before 6.7
/// (no PAGEMAP_SCAN) are left alone, as is memory the kernel refuses to
/// collapse.
#[inline(never)]
pub fn collapse_resident(base: usize, len: usize) -> Collapsed {
    let huge = thp_bytes();
    let mut c = Collapsed::default();
    if huge == 0 {
        return c;
    }
    let Some(end) = base.checked_add(len) else {
        return c;
    };
    let Some(start) = base.checked_add(huge - 1).map(|b| b & !(huge - 1)) else {
        return c;
    };
    let stop = end & !(huge - 1);
    if stop <= start {
        return c;
    }
    let fd = pagemap_fd();
    if fd < 0 {
        return c;
    }
    // A run of blocks to collapse, not yet asked for: [run, run_end).
    let (mut run, mut run_end) = (start, start);
    let flush = |from: usize, to: usize, c: &mut Collapsed| {
        if to > from {
            // SAFETY: advice on the caller's registered memory; it changes
            // the pages backing it, not its contents.
            let rc = unsafe { libc::madvise(from as *mut libc::c_void, to - from, MADV_COLLAPSE) };
            if rc == 0 {
                c.collapsed += (to - from) / huge;
            }
        }
    };
    // Blocks are judged in order; `at` is the first not yet judged, and
    // the scan resumes where the kernel's walk ended.
    let mut regions = [PageRegion::default(); 64];
    let mut at = start;
    let mut walk = start;
    while at < stop {
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start: walk as u64,
            end: stop as u64,
            vec: regions.as_mut_ptr() as u64,
            vec_len: regions.len() as u64,
            return_mask: PAGE_IS_PRESENT | PAGE_IS_HUGE | PAGE_IS_FILE,
            ..PmScanArg::default()
        };
        // SAFETY: arg and the regions it points at outlive the call; the
        // kernel writes at most vec_len regions.
        let n = unsafe { libc::ioctl(fd, PAGEMAP_SCAN, &mut arg) };
        if n < 0 {
            // No PAGEMAP_SCAN (before 6.7), or the range went away.
            break;
        }
        let walked = (arg.walk_end as usize).clamp(walk, stop);
        // Pages the walk reported, in runs; a page not in any run has
        // none of the categories (not present).
        let runs = &regions[..n as usize];
        // Judge every block wholly inside the walked part.
        while at + huge <= walked {
            // Blocks before the next run of present pages have none:
            // counted all at once, not judged one by one (a registration
            // may span most of the address space, 2^19 blocks a TiB, and
            // the walk reports a reserved, untouched mapping as one run).
            let whole = at + (walked - at) / huge * huge;
            let next = runs
                .iter()
                .find(|r| r.end as usize > at && r.categories & PAGE_IS_PRESENT != 0)
                .map_or(whole, |r| (r.start as usize).max(at) & !(huge - 1))
                .min(whole);
            if next > at {
                c.blocks += (next - at) / huge;
                at = next;
                continue;
            }
            c.looked += 1;
            let (b0, b1) = (at as u64, (at + huge) as u64);
            // Whether the block's pages are all present, anonymous, and on
            // a huge page (`want` PAGE_IS_HUGE) or not (0).
            let all = |want: u64| {
                runs.iter()
                    .filter(|r| r.start < b1 && r.end > b0)
                    .try_fold(0u64, |sum, r| {
                        let cat = r.categories;
                        (cat & PAGE_IS_PRESENT != 0 && cat & (PAGE_IS_HUGE | PAGE_IS_FILE) == want)
                            .then(|| sum + r.end.min(b1) - r.start.max(b0))
                            .ok_or(())
                    })
                    == Ok(huge as u64)
            };
            let small = all(0);
            if !small && all(PAGE_IS_HUGE) {
                c.huge += 1;
            }
            c.blocks += 1;
            if small {
                c.resident += 1;
                if run_end != at {
                    flush(run, run_end, &mut c);
                    run = at;
                }
                run_end = at + huge;
            }
            at += huge;
        }
        if walked <= walk {
            break;
        }
        if at + huge > walked && walk == at {
            // The kernel's answer filled up inside one block: so many runs
            // in it mix categories, and it is not collapsed.
            c.blocks += 1;
            c.looked += 1;
            at += huge;
        }
        // Resume at the first block not judged: its runs are reread.
        walk = at;
    }
    flush(run, run_end, &mut c);
    c
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
        // Inaccessible and never touched is still mapped; a shared file
        // mapping is checked without being written back.
        // SAFETY: a fresh reservation and a fresh file mapping, unmapped
        // here.
        unsafe {
            let len = 1usize << 40;
            let p = libc::mmap(
                std::ptr::null_mut(),
                len + 2 * page,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            // An unmapped page on either side.
            libc::munmap(p, page);
            libc::munmap((p as usize + page + len) as *mut libc::c_void, page);
            let base = p as usize + page;
            assert!(range_mapped(base, len));
            assert!(range_mapped(base + 1, len - 2));
            assert!(!range_mapped(base, len + 1));
            assert!(!range_mapped(base - 1, 2));
            libc::munmap(base as *mut libc::c_void, len);
            let f = std::fs::File::open("/proc/self/exe").unwrap();
            use std::os::fd::AsRawFd;
            let q = libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(q, libc::MAP_FAILED);
            assert!(range_mapped(q as usize, page));
            libc::munmap(q, page);
        }
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

    /// An anonymous mapping of `blocks` huge-page blocks, aligned to one;
    /// unmapped on drop.
    struct Blocks {
        map: usize,
        map_len: usize,
        at: usize,
        len: usize,
    }

    impl Blocks {
        fn new(blocks: usize) -> Blocks {
            let huge = thp_bytes().max(2 << 20);
            let page = page_size();
            let map_len = (blocks + 2) * huge;
            // SAFETY: a fresh private anonymous mapping; its first and last
            // pages made inaccessible, so that it never merges with another
            // test's mapping and its smaps entry is its own.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    map_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            let map = p as usize;
            // SAFETY: pages of the mapping just made.
            unsafe {
                libc::mprotect(p, page, libc::PROT_NONE);
                libc::mprotect(
                    (map + map_len - page) as *mut libc::c_void,
                    page,
                    libc::PROT_NONE,
                );
            }
            let at = (map + page + huge - 1) & !(huge - 1);
            Blocks {
                map,
                map_len,
                at,
                len: blocks * huge,
            }
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: the mapping lives as long as self.
            unsafe { std::slice::from_raw_parts_mut(self.at as *mut u8, self.len) }
        }
    }

    impl Drop for Blocks {
        fn drop(&mut self) {
            // SAFETY: our own mapping.
            unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
        }
    }

    /// The mapping's resident and huge-page kilobytes, from
    /// /proc/self/smaps.
    fn smaps(addr: usize) -> (u64, u64) {
        let text = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let (mut rss, mut huge) = (None, None);
        for line in text.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a <= addr && addr < b;
                        continue;
                    }
                }
            }
            if !inside {
                continue;
            }
            let kb = |l: &str| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
            };
            if line.starts_with("Rss:") {
                rss = kb(line);
            } else if line.starts_with("AnonHugePages:") {
                huge = kb(line);
            }
        }
        (rss.unwrap(), huge.unwrap())
    }

    /// Whether this kernel collapses anonymous memory on request: THP on,
    /// and Linux 6.7 or later (MADV_COLLAPSE, PAGEMAP_SCAN).
    fn kernel_collapses() -> bool {
        // SAFETY: uname fills the struct.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        unsafe { libc::uname(&mut u) };
        let rel: String = u
            .release
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8 as char)
            .collect();
        let mut v = rel
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|x| x.parse::<u32>().ok());
        let (maj, min) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
        thp_bytes() != 0 && (maj, min) >= (6, 7)
    }

    #[test]
    fn resident_blocks_go_on_huge_pages_with_their_contents() {
        let mut b = Blocks::new(2);
        for (i, x) in b.bytes().iter_mut().enumerate() {
            *x = (i * 7 + i / 4096) as u8;
        }
        // A range reaching past both ends of the blocks covers them whole.
        let c = collapse_resident(b.at - 4096, b.len + 8192);
        let (_, huge_kb) = smaps(b.at);
        if kernel_collapses() {
            assert_eq!(
                c,
                Collapsed {
                    blocks: 2,
                    looked: 2,
                    huge: 0,
                    resident: 2,
                    collapsed: 2
                }
            );
            assert!(
                huge_kb >= (b.len / 1024) as u64,
                "AnonHugePages {huge_kb} kB"
            );
        } else {
            // No THP: nothing to do; an old kernel refuses.
            assert_eq!(c.collapsed, 0);
            assert_eq!(huge_kb, 0);
        }
        for (i, x) in b.bytes().iter().enumerate() {
            assert_eq!(*x, (i * 7 + i / 4096) as u8, "byte {i}");
        }
        // Once huge, a block is not collapsed again.
        if kernel_collapses() {
            let again = collapse_resident(b.at, b.len);
            assert_eq!(
                again,
                Collapsed {
                    blocks: 2,
                    looked: 2,
                    huge: 2,
                    resident: 0,
                    collapsed: 0
                }
            );
        }
    }

    #[test]
    fn a_sparse_or_untouched_block_is_left_alone_and_adds_no_memory() {
        let mut b = Blocks::new(3);
        let (at, len) = (b.at, b.len);
        let huge = len / 3;
        let page = page_size();
        let bytes = b.bytes();
        // Block 0 whole, block 1 every other page, block 2 untouched.
        for p in (0..huge).step_by(page) {
            bytes[p] = 1;
        }
        for p in (huge..2 * huge).step_by(2 * page) {
            bytes[p] = 2;
        }
        let (rss_before, _) = smaps(at);
        let c = collapse_resident(at, len);
        let (rss_after, huge_kb) = smaps(at);
        if kernel_collapses() {
            assert_eq!(
                c,
                Collapsed {
                    blocks: 3,
                    looked: 2,
                    huge: 0,
                    resident: 1,
                    collapsed: 1
                }
            );
        }
        // The sparse block was not filled in, the untouched one not faulted.
        assert!(
            rss_after <= rss_before + 64,
            "Rss {rss_before} -> {rss_after} kB"
        );
        assert!(huge_kb <= (huge / 1024) as u64);
        assert!(bytes[huge..2 * huge]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == if i % (2 * page) == 0 { 2 } else { 0 }));
    }

    #[test]
    fn a_registration_within_a_range_found_all_huge_just_now_is_not_looked_at() {
        let mut b = Blocks::new(2);
        b.bytes().fill(3);
        let first = collapse_registered(b.at, b.len);
        if !kernel_collapses() {
            // Nothing is remembered where nothing collapses.
            assert_eq!(first.map(|c| c.collapsed), Some(0));
            assert!(collapse_registered(b.at, b.len).is_some());
            return;
        }
        assert_eq!(first.map(|c| c.collapsed), Some(2));
        // Within it: skipped; beyond it: looked at.
        assert_eq!(collapse_registered(b.at + 4096, b.len / 2), None);
        assert_eq!(collapse_registered(b.at, b.len), None);
        let wider = collapse_registered(b.at - 2 * 4096, b.len + 2 * 4096).unwrap();
        assert_eq!((wider.blocks, wider.huge), (2, 2));
        // A range with a block that cannot be made huge is not remembered.
        let mut s = Blocks::new(1);
        let page = page_size();
        for p in (0..s.len).step_by(2 * page) {
            s.bytes()[p] = 1;
        }
        assert_eq!(
            collapse_registered(s.at, s.len).map(|c| c.collapsed),
            Some(0)
        );
        assert!(collapse_registered(s.at, s.len).is_some());
    }

    #[test]
    fn a_range_as_wide_as_the_address_space_is_judged_by_its_present_pages() {
        // A reservation of tens of TiB (as a sanitizer's shadow), with one
        // touched block near each end: the blocks between are counted,
        // not judged one at a time (the fuzzer registers such ranges).
        let huge = thp_bytes();
        if huge == 0 {
            return;
        }
        let page = page_size();
        let (map, len) = [1usize << 46, 1 << 44, 1 << 40]
            .iter()
            .find_map(|&len| {
                // SAFETY: a fresh inaccessible reservation, never touched
                // but for the two blocks opened below.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_NONE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                        -1,
                        0,
                    )
                };
                (p != libc::MAP_FAILED).then_some((p as usize, len))
            })
            .expect("no reservation of 1 TiB or more");
        let first = (map + huge - 1) & !(huge - 1);
        let last = ((map + len) & !(huge - 1)) - 2 * huge;
        for b in [first, last] {
            // SAFETY: one block inside our reservation, opened and filled.
            unsafe {
                assert_eq!(
                    libc::mprotect(
                        b as *mut libc::c_void,
                        huge,
                        libc::PROT_READ | libc::PROT_WRITE
                    ),
                    0
                );
                std::ptr::write_bytes(b as *mut u8, 5, huge);
            }
        }
        let c = collapse_resident(map, len);
        let whole = ((map + len) & !(huge - 1)) - first;
        if kernel_collapses() {
            assert_eq!(c.blocks, whole / huge);
            // Only the two blocks with present pages are looked at.
            assert_eq!((c.looked, c.resident, c.collapsed, c.huge), (2, 2, 2, 0));
        }
        for b in [first, last] {
            // SAFETY: the blocks filled above.
            let s = unsafe { std::slice::from_raw_parts(b as *const u8, huge) };
            assert!(s.iter().all(|&x| x == 5));
        }
        // Past the end of user space: nothing, at once.
        assert_eq!(collapse_resident(page, usize::MAX - 2 * page).collapsed, 0);
        // SAFETY: our own reservation.
        unsafe { libc::munmap(map as *mut libc::c_void, len) };
    }

    #[test]
    fn ranges_without_a_whole_block_do_nothing() {
        let v = vec![1u8; 1 << 20];
        assert_eq!(collapse_resident(v.as_ptr() as usize, v.len()).blocks, 0);
        assert_eq!(
            collapse_resident(usize::MAX - 4096, 8192),
            Collapsed::default()
        );
        assert_eq!(collapse_resident(0, 0), Collapsed::default());
    }
}
