//! The `memhooks` monitor: intercepts munmap, mremap, madvise, brk, sbrk and
//! free at the ELF level. When it starts, it walks the loaded objects
//! (dl_iterate_phdr) and points their GOT entries for those functions
//! (JUMP_SLOT and GLOB_DAT relocations) at hooks that report the range to
//! the caches, then call the real function. libfabric itself is left alone.
//! A hook may run on a thread that holds a cache's lock (a library's
//! internal free while libfabric registers): it never waits for a cache,
//! it queues the range for the next lookup instead
//! ([`monitor::report`](super::monitor::report)).
//!
//! What it cannot see (documented in README.md):
//! - calls a library makes to its own internals: glibc's free and realloc
//!   of mmapped chunks, and its heap trimming, unmap without going through
//!   any GOT (a `free` from the application is seen: the block's usable
//!   size is reported before it is freed);
//! - raw system calls (syscall(2), inline assembly) and statically linked
//!   copies of these functions;
//! - objects loaded with dlopen after the monitor started;
//! - mmap(MAP_FIXED) over a live mapping (the old pages are replaced without
//!   an unmap call; userfaultfd reports this one).

use crate::error::{Error, Result};
use libc::{c_int, c_void, size_t};
use std::ffi::CStr;

/// The real functions, called through libfabric's own GOT, which is never
/// patched.
unsafe extern "C" fn hook_munmap(addr: *mut c_void, len: size_t) -> c_int {
    super::monitor::report(addr as u64, len as u64);
    // SAFETY: the application's call, passed on unchanged.
    unsafe { libc::munmap(addr, len) }
}

unsafe extern "C" fn hook_mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    // The old range loses its pages (moved, or shrunk past new_len).
    super::monitor::report(old as u64, old_len as u64);
    // SAFETY: the application's call, passed on (new_addr is read by the
    // kernel only with MREMAP_FIXED, as in the variadic original).
    unsafe { libc::mremap(old, old_len, new_len, flags, new_addr) }
}

unsafe extern "C" fn hook_madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    const MADV_DONTNEED_LOCKED: c_int = 24;
    if matches!(
        advice,
        libc::MADV_DONTNEED | libc::MADV_FREE | libc::MADV_REMOVE | MADV_DONTNEED_LOCKED
    ) {
        super::monitor::report(addr as u64, len as u64);
    }
    // SAFETY: the application's call, passed on unchanged.
    unsafe { libc::madvise(addr, len, advice) }
}

unsafe extern "C" fn hook_brk(addr: *mut c_void) -> c_int {
    // SAFETY: sbrk(0) only reads the current break.
    let cur = unsafe { libc::sbrk(0) } as u64;
    if (addr as u64) < cur && cur != u64::MAX {
        super::monitor::report(addr as u64, cur - addr as u64);
    }
    // SAFETY: the application's call, passed on unchanged.
    unsafe { libc::brk(addr) }
}

unsafe extern "C" fn hook_sbrk(incr: libc::intptr_t) -> *mut c_void {
    if incr < 0 {
        // SAFETY: sbrk(0) only reads the current break.
        let cur = unsafe { libc::sbrk(0) } as u64;
        let n = incr.unsigned_abs() as u64;
        super::monitor::report(cur.saturating_sub(n), n);
    }
    // SAFETY: the application's call, passed on unchanged.
    unsafe { libc::sbrk(incr) }
}

unsafe extern "C" fn hook_free(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: p is a live block of this malloc (free's contract).
        let n = unsafe { libc::malloc_usable_size(p) };
        // Blocks of a page or more may be unmapped or trimmed by the free.
        if n >= 4096 {
            super::monitor::report(p as u64, n as u64);
        }
    }
    // SAFETY: the application's call, passed on unchanged.
    unsafe { libc::free(p) }
}

fn hooks() -> [(&'static CStr, usize); 6] {
    [
        (c"munmap", hook_munmap as *const () as usize),
        (c"mremap", hook_mremap as *const () as usize),
        (c"madvise", hook_madvise as *const () as usize),
        (c"brk", hook_brk as *const () as usize),
        (c"sbrk", hook_sbrk as *const () as usize),
        (c"free", hook_free as *const () as usize),
    ]
}

#[cfg(target_arch = "x86_64")]
const RELOCS: [u32; 2] = [7, 6]; // R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT
#[cfg(target_arch = "aarch64")]
const RELOCS: [u32; 2] = [1026, 1025]; // R_AARCH64_JUMP_SLOT, R_AARCH64_GLOB_DAT

const DT_NULL: i64 = 0;
const DT_PLTRELSZ: i64 = 2;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;
const DT_JMPREL: i64 = 23;

struct Walk {
    own_base: usize,
    patched: usize,
    failed: usize,
}

/// Starts the monitor: patches every loaded object but libfabric.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn start() -> Result<()> {
    // SAFETY: dladdr fills a Dl_info for an address of this library.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(hook_munmap as *const c_void, &mut info) } == 0 {
        return Err(Error::NOSYS);
    }
    let mut w = Walk {
        own_base: info.dli_fbase as usize,
        patched: 0,
        failed: 0,
    };
    // SAFETY: the callback only reads the program headers it is given and
    // writes GOT entries it found through them.
    unsafe { libc::dl_iterate_phdr(Some(object), &mut w as *mut Walk as *mut c_void) };
    if w.failed > 0 {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "memhooks: {} GOT entries could not be made writable",
            w.failed
        );
    }
    crate::ox_log!(
        Info,
        Mr,
        super::NAME,
        "memhooks: {} GOT entries now point at the hooks",
        w.patched
    );
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn start() -> Result<()> {
    Err(Error::NOSYS)
}

/// One loaded object.
unsafe extern "C" fn object(
    info: *mut libc::dl_phdr_info,
    _size: size_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our Walk.
    let (info, w) = unsafe { (&*info, &mut *(data as *mut Walk)) };
    let base = info.dlpi_addr as usize;
    if base == w.own_base {
        return 0;
    }
    // SAFETY: dlpi_phdr holds dlpi_phnum headers.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let Some(dynamic) = phdrs.iter().find(|p| p.p_type == libc::PT_DYNAMIC) else {
        return 0;
    };
    let relro = phdrs
        .iter()
        .find(|p| p.p_type == libc::PT_GNU_RELRO)
        .map(|p| {
            (
                base + p.p_vaddr as usize,
                base + (p.p_vaddr + p.p_memsz) as usize,
            )
        });
    // ld.so relocates these pointers in place, except in read-only dynamic
    // sections (the vDSO).
    let abs = |v: u64| -> usize {
        if (v as usize) < base {
            base + v as usize
        } else {
            v as usize
        }
    };
    let (mut symtab, mut strtab, mut rela, mut relasz, mut jmprel, mut pltsz) = (0, 0, 0, 0, 0, 0);
    let mut d = (base + dynamic.p_vaddr as usize) as *const [i64; 2];
    loop {
        // SAFETY: the dynamic section is an array of (tag, value) ending
        // with DT_NULL.
        let [tag, val] = unsafe { *d };
        match tag {
            DT_NULL => break,
            DT_SYMTAB => symtab = abs(val as u64),
            DT_STRTAB => strtab = abs(val as u64),
            DT_RELA => rela = abs(val as u64),
            DT_RELASZ => relasz = val as usize,
            DT_JMPREL => jmprel = abs(val as u64),
            DT_PLTRELSZ => pltsz = val as usize,
            _ => {}
        }
        // SAFETY: not past DT_NULL.
        d = unsafe { d.add(1) };
    }
    if symtab == 0 || strtab == 0 {
        return 0;
    }
    let hooks = hooks();
    for (table, size) in [(jmprel, pltsz), (rela, relasz)] {
        if table == 0 {
            continue;
        }
        for i in 0..size / 24 {
            // SAFETY: Elf64_Rela entries: r_offset, r_info, r_addend.
            let r = unsafe { *((table + i * 24) as *const [u64; 3]) };
            if !RELOCS.contains(&((r[1] & 0xffff_ffff) as u32)) {
                continue;
            }
            let sym = (r[1] >> 32) as usize;
            // SAFETY: Elf64_Sym is 24 bytes with st_name first.
            let name_off = unsafe { *((symtab + sym * 24) as *const u32) } as usize;
            // SAFETY: st_name indexes the NUL-terminated string table.
            let name = unsafe { CStr::from_ptr((strtab + name_off) as *const libc::c_char) };
            let Some(&(_, hook)) = hooks.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            let slot = base + r[0] as usize;
            // SAFETY: the slot is this object's GOT entry for the symbol.
            if unsafe { patch(slot, hook, relro) } {
                w.patched += 1;
            } else {
                w.failed += 1;
            }
        }
    }
    0
}

/// Writes `value` into the GOT entry at `slot`, lifting RELRO protection
/// for the write.
///
/// # Safety
/// `slot` is a GOT entry of a loaded object.
unsafe fn patch(slot: usize, value: usize, relro: Option<(usize, usize)>) -> bool {
    let page = super::pin::page_size() as usize;
    let start = slot & !(page - 1);
    let ro = relro.is_some_and(|(a, b)| slot >= a && slot < b);
    // SAFETY: per the contract; the page is the object's own.
    unsafe {
        if ro
            && libc::mprotect(
                start as *mut c_void,
                page,
                libc::PROT_READ | libc::PROT_WRITE,
            ) != 0
        {
            return false;
        }
        std::ptr::write_volatile(slot as *mut usize, value);
        if ro {
            libc::mprotect(start as *mut c_void, page, libc::PROT_READ);
        }
    }
    true
}
