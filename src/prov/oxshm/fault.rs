//! Copies into and out of this process's registered memory that fail
//! cleanly when a page is not accessible, without a system call.
//!
//! Without FI_MR_ALLOCATED, a registered page may be unbacked or
//! inaccessible when a peer's access arrives; the target must then fail the
//! access (-FI_EFAULT), not crash. A `process_vm_readv`/`writev` on the
//! process itself does that, at the price of a system call per copy, which
//! is most of the cost of an 8-byte write. Here the copy is one `rep movsb`
//! at a known address; a SIGSEGV or SIGBUS handler that finds the fault at
//! that instruction resumes the copy routine at its fixup, which returns
//! the bytes left uncopied. Every other fault goes to the handler that was
//! installed before ours (or takes the default action), so the process sees
//! its own faults as before.
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
    // copied. The direction flag is clear at every call (SysV ABI). On a
    // fault at the `rep movsb`, rcx holds the bytes left.
    std::arch::global_asm!(
        ".pushsection .text.oxshm_safe_copy,\"ax\",@progbits",
        ".globl oxshm_safe_copy",
        ".hidden oxshm_safe_copy",
        ".globl oxshm_safe_copy_insn",
        ".hidden oxshm_safe_copy_insn",
        ".globl oxshm_safe_copy_fixup",
        ".hidden oxshm_safe_copy_fixup",
        ".type oxshm_safe_copy,@function",
        "oxshm_safe_copy:",
        "mov rcx, rdx",
        "oxshm_safe_copy_insn:",
        "rep movsb",
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
        static oxshm_safe_copy_insn: u8;
        static oxshm_safe_copy_fixup: u8;
    }

    /// The handlers in place before ours: SIGSEGV, SIGBUS.
    static PREV: [OnceLock<libc::sigaction>; 2] = [OnceLock::new(), OnceLock::new()];
    const SIGNALS: [c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

    /// Only the addresses of the labels are taken.
    fn insn() -> usize {
        std::ptr::addr_of!(oxshm_safe_copy_insn) as usize
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
        if *ip as usize == insn() {
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
