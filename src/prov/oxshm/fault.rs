//! Copies into and out of this process's registered memory that fail
//! cleanly when a page is not accessible, without a system call.
//!
//! Without FI_MR_ALLOCATED, a registered page may be unbacked or
//! inaccessible when a peer's access arrives; the target must then fail the
//! access (-FI_EFAULT), not crash. A `process_vm_readv`/`writev` on the
//! process itself does that, at the price of a system call per copy, which
//! is most of the cost of an 8-byte write. Here the copy is a short loop of
//! loads and stores at known addresses; a SIGSEGV or SIGBUS handler that
//! finds the fault inside it resumes the routine at its fixup, which
//! returns the bytes left uncopied. Every other fault goes to the handler
//! that was installed before ours (or takes the default action), so the
//! process sees its own faults as before.
//!
//! The handler is installed the first time it is needed. A program that
//! installs its own SIGSEGV or SIGBUS handler later displaces ours: the
//! peer checks (every [`super::xfer::PEER_CHECK`]) notice it and copies go
//! back to the system call. `FI_OXSHM_SAFE_COPY=0` never installs it.
//! Machines other than x86-64 always use the system call.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether safe copies may be used (the handler is installed and ours).
static READY: AtomicBool = AtomicBool::new(false);

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::READY;
    use libc::{c_int, c_void, siginfo_t};
    use std::sync::atomic::Ordering;
    use std::sync::OnceLock;

    // dst in rdi, src in rsi, len in rdx; returns in rax the bytes not
    // copied. rcx counts the bytes not yet copied, at the granularity of
    // the step under way: a fault at any load or store between
    // `oxshm_safe_copy` and `oxshm_safe_copy_fixup` resumes at the fixup,
    // which returns rcx (the bytes of the interrupted step count as not
    // copied; some of them may have been). From 64 bytes, first 16 bytes
    // copied unaligned, then the destination aligned to 16 and 64 bytes a
    // step with SSE2 (baseline x86-64). From 16 bytes, what is left goes 16
    // bytes a step, the last 16 bytes as one block ending at the end.
    // Below 16 bytes: two blocks of 8 (or 4) bytes, the first at the start
    // and the second ending at the end, or bytes one by one below 4. The
    // bytes copied twice where blocks overlap are the same (source and
    // destination are disjoint).
    //
    // Not `rep movsb`, which this used before: where the CPU lacks fast
    // string moves (ERMS, as on the AMD EPYC VMs this was measured on)
    // the microcode copies a byte at a time at many relative alignments of
    // source and destination: 16 KiB in 10-14 us against memcpy's 0.5,
    // 4 KiB in 2.5 us against 0.12, 64 bytes in 88 ns against 5. This
    // loop keeps within a few percent of glibc's memcpy from 8 bytes to
    // 64 KiB at every alignment measured.
    std::arch::global_asm!(
        ".pushsection .text.oxshm_safe_copy,\"ax\",@progbits",
        ".globl oxshm_safe_copy",
        ".hidden oxshm_safe_copy",
        ".globl oxshm_safe_copy_fixup",
        ".hidden oxshm_safe_copy_fixup",
        ".type oxshm_safe_copy,@function",
        ".p2align 4",
        "oxshm_safe_copy:",
        "mov rcx, rdx",
        "cmp rcx, 16",
        "jb 30f",
        "lea r8, [rsi + rdx - 16]",
        "lea r9, [rdi + rdx - 16]",
        "cmp rcx, 64",
        "jb 23f",
        "movdqu xmm0, [rsi]",
        "movdqu [rdi], xmm0",
        "mov rax, rdi",
        "neg rax",
        "and rax, 15",
        "add rsi, rax",
        "add rdi, rax",
        "sub rcx, rax",
        "cmp rcx, 64",
        "jb 23f",
        ".p2align 4",
        "21:",
        "movdqu xmm0, [rsi]",
        "movdqu xmm1, [rsi + 16]",
        "movdqu xmm2, [rsi + 32]",
        "movdqu xmm3, [rsi + 48]",
        "movdqa [rdi], xmm0",
        "movdqa [rdi + 16], xmm1",
        "movdqa [rdi + 32], xmm2",
        "movdqa [rdi + 48], xmm3",
        "add rsi, 64",
        "add rdi, 64",
        "sub rcx, 64",
        "cmp rcx, 64",
        "jae 21b",
        "23:",
        "cmp rcx, 16",
        "jbe 25f",
        "24:",
        "movdqu xmm0, [rsi]",
        "movdqu [rdi], xmm0",
        "add rsi, 16",
        "add rdi, 16",
        "sub rcx, 16",
        "cmp rcx, 16",
        "ja 24b",
        "25:",
        "movdqu xmm0, [r8]",
        "movdqu [r9], xmm0",
        "xor eax, eax",
        "ret",
        "30:",
        "cmp rcx, 8",
        "jb 32f",
        "mov rax, [rsi]",
        "mov r8, [rsi + rcx - 8]",
        "mov [rdi], rax",
        "mov [rdi + rcx - 8], r8",
        "xor eax, eax",
        "ret",
        "32:",
        "cmp rcx, 4",
        "jb 34f",
        "mov eax, [rsi]",
        "mov r8d, [rsi + rcx - 4]",
        "mov [rdi], eax",
        "mov [rdi + rcx - 4], r8d",
        "xor eax, eax",
        "ret",
        "34:",
        "test rcx, rcx",
        "jz 36f",
        "35:",
        "mov al, [rsi]",
        "mov [rdi], al",
        "inc rsi",
        "inc rdi",
        "dec rcx",
        "jnz 35b",
        "36:",
        "xor eax, eax",
        "ret",
        "oxshm_safe_copy_fixup:",
        "mov rax, rcx",
        "ret",
        ".size oxshm_safe_copy, . - oxshm_safe_copy",
        ".popsection",
    );

    extern "C" {
        fn oxshm_safe_copy(dst: *mut u8, src: *const u8, len: usize) -> usize;
        static oxshm_safe_copy_fixup: u8;
    }

    /// The handlers in place before ours: SIGSEGV, SIGBUS.
    static PREV: [OnceLock<libc::sigaction>; 2] = [OnceLock::new(), OnceLock::new()];
    const SIGNALS: [c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

    /// Only the addresses of the labels are taken: the copy's loads and
    /// stores lie in `start()..fixup()`.
    fn start() -> usize {
        oxshm_safe_copy as *const () as usize
    }

    fn fixup() -> usize {
        std::ptr::addr_of!(oxshm_safe_copy_fixup) as usize
    }

    fn handler() -> usize {
        on_fault as *const () as usize
    }

    extern "C" fn on_fault(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
        // SAFETY: an SA_SIGINFO handler gets the interrupted context as a
        // ucontext_t; only its instruction pointer is read and written.
        let uc = unsafe { &mut *(ctx as *mut libc::ucontext_t) };
        let ip = &mut uc.uc_mcontext.gregs[libc::REG_RIP as usize];
        if (start()..fixup()).contains(&(*ip as usize)) {
            *ip = fixup() as i64;
            return;
        }
        let i = if sig == libc::SIGBUS { 1 } else { 0 };
        match PREV[i].get() {
            Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: the previous handler asked for three arguments.
                    let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) =
                        unsafe { std::mem::transmute(p.sa_sigaction) };
                    f(sig, info, ctx);
                } else {
                    // SAFETY: a one-argument handler.
                    let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                // The default action, as if we had never been installed:
                // reset it and deliver the signal again on return.
                // SAFETY: sigaction, sigemptyset and raise are
                // async-signal-safe; the struct is ours.
                unsafe {
                    let mut d: libc::sigaction = std::mem::zeroed();
                    d.sa_sigaction = libc::SIG_DFL;
                    libc::sigemptyset(&mut d.sa_mask);
                    libc::sigaction(sig, &d, std::ptr::null_mut());
                    libc::raise(sig);
                }
            }
        }
    }

    /// Installs the handler (once per process); whether it is in place.
    pub fn install() -> bool {
        static DONE: OnceLock<bool> = OnceLock::new();
        *DONE.get_or_init(|| {
            for (i, &sig) in SIGNALS.iter().enumerate() {
                // SAFETY: zeroed sigaction structs are valid; the calls
                // only read and write them.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                        return false;
                    }
                    let _ = PREV[i].set(old);
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = handler();
                    new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
                    libc::sigemptyset(&mut new.sa_mask);
                    if libc::sigaction(sig, &new, std::ptr::null_mut()) != 0 {
                        return false;
                    }
                }
            }
            READY.store(true, Ordering::Release);
            true
        })
    }

    /// Whether our handler is still the one in place for both signals.
    pub fn still_ours() -> bool {
        SIGNALS.iter().all(|&sig| {
            // SAFETY: a query; the struct is ours.
            unsafe {
                let mut cur: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut cur) == 0
                    && cur.sa_sigaction == handler()
            }
        })
    }

    /// # Safety
    /// `dst` and `src` name `len` bytes that do not overlap.
    pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> usize {
        // SAFETY: per the contract; a fault inside is caught (see above).
        unsafe { oxshm_safe_copy(dst, src, len) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    pub fn install() -> bool {
        false
    }

    pub fn still_ours() -> bool {
        false
    }

    /// # Safety
    /// Never called: `install` says no.
    pub unsafe fn copy(_dst: *mut u8, _src: *const u8, len: usize) -> usize {
        len
    }
}

/// Whether [`copy`] may be used: installs the handler on first use unless
/// `FI_OXSHM_SAFE_COPY=0`.
pub fn available() -> bool {
    if READY.load(Ordering::Acquire) {
        return true;
    }
    static TRIED: std::sync::Once = std::sync::Once::new();
    TRIED.call_once(|| {
        if std::env::var("FI_OXSHM_SAFE_COPY").is_ok_and(|v| v == "0") {
            return;
        }
        let ok = imp::install();
        crate::ox_log!(
            Info,
            EpData,
            super::NAME,
            "{}",
            if ok {
                "copies into registered memory catch faults (SIGSEGV/SIGBUS handler installed)"
            } else {
                "copies into registered memory use process_vm_readv/writev on this process"
            }
        );
    });
    READY.load(Ordering::Acquire)
}

/// Checks that the handler was not displaced by another; if it was,
/// copies go back to the system call from now on (with a log line).
pub fn check() {
    if READY.load(Ordering::Acquire) && !imp::still_ours() {
        READY.store(false, Ordering::Release);
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "another SIGSEGV/SIGBUS handler replaced oxshm's: copies into registered memory use system calls from now on"
        );
    }
}

/// Copies `len` bytes from `src` to `dst`, stopping at an inaccessible
/// page; returns the bytes not copied (0: all of them).
///
/// # Safety
/// [`available`] returned true; `dst` and `src` name `len` bytes that do
/// not overlap, and those that are accessible may be written (`dst`) and
/// read (`src`).
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> usize {
    // SAFETY: per the contract.
    unsafe { imp::copy(dst, src, len) }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Every length up to 200 bytes and a few larger ones, at every pair of
    /// source and destination alignments within 16 bytes: the bytes land
    /// exactly, none around them changes, and nothing is reported left.
    #[test]
    fn copies_every_length_and_alignment_exactly() {
        assert!(available());
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let lens = (0..=200).chain([255, 256, 257, 4095, 4096, 4097, 16_384 + 7]);
        for len in lens {
            for so in 0..16 {
                for d_o in 0..16 {
                    let mut dst = vec![0xEEu8; len + 64];
                    // SAFETY: both ranges are inside their vectors.
                    let left =
                        unsafe { copy(dst.as_mut_ptr().add(d_o), src.as_ptr().add(so), len) };
                    assert_eq!(left, 0, "len {len} src+{so} dst+{d_o}");
                    assert_eq!(&dst[d_o..d_o + len], &src[so..so + len]);
                    assert!(dst[..d_o].iter().all(|&b| b == 0xEE));
                    assert!(dst[d_o + len..].iter().all(|&b| b == 0xEE));
                }
            }
        }
    }

    /// Two pages, the second inaccessible.
    struct Guarded(*mut u8);

    impl Guarded {
        fn new() -> Guarded {
            // SAFETY: a fresh anonymous mapping, its second page then
            // made inaccessible.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    8192,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                assert_eq!(
                    libc::mprotect((p as *mut u8).add(4096).cast(), 4096, libc::PROT_NONE),
                    0
                );
                Guarded(p as *mut u8)
            }
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.0.cast(), 8192) };
        }
    }

    /// A copy that runs into an inaccessible page, on either side, stops
    /// there: it reports at least the bytes past the boundary as left, and
    /// the bytes it reports copied are the source's.
    #[test]
    fn a_fault_on_either_side_stops_the_copy_and_reports_the_bytes_left() {
        assert!(available());
        let g = Guarded::new();
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 1) as u8).collect();
        for (before, len) in [
            (100usize, 300usize),
            (8, 9),
            (64, 200),
            (1, 1000),
            (4000, 4096),
        ] {
            // Reading: the source crosses into the inaccessible page.
            // SAFETY: `before` bytes before the boundary are accessible.
            let src = unsafe { g.0.add(4096 - before) };
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), src, before) };
            let mut out = vec![0u8; len];
            // SAFETY: the destination is ours; the source faults past
            // `before` bytes, which the copy catches.
            let left = unsafe { copy(out.as_mut_ptr(), src, len) };
            assert!(
                left >= len - before && left <= len,
                "read {before}+{len}: {left}"
            );
            assert_eq!(&out[..len - left], &data[..len - left]);
            // Writing: the destination crosses into it.
            // SAFETY: as above, the destination faulting instead.
            let left = unsafe { copy(src, data.as_ptr(), len) };
            assert!(
                left >= len - before && left <= len,
                "write {before}+{len}: {left}"
            );
            // SAFETY: the bytes reported copied are accessible.
            let got = unsafe { std::slice::from_raw_parts(src, len - left) };
            assert_eq!(got, &data[..len - left]);
        }
    }
}
