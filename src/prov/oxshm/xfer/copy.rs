//! How the data path's bytes move between address spaces: iov lists on
//! the wire, the cross-memory copies (`process_vm_readv`/`writev`) and
//! whether a peer permits them, copies within this process, and the
//! checked copies that turn a fault in registered memory into -FI_EFAULT.

use super::*;

pub(super) fn iov_bytes(iov: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(iov.len() * 16);
    for (a, l) in iov {
        v.extend_from_slice(&a.to_ne_bytes());
        v.extend_from_slice(&l.to_ne_bytes());
    }
    v
}

pub(super) fn parse_iovs(b: &[u8], n: usize) -> Option<Pieces> {
    if b.len() < n * 16 {
        return None;
    }
    let mut v = Pieces::default();
    for c in b[..n * 16].chunks_exact(16) {
        let (a, l) = c.split_at(8);
        v.push((
            u64::from_ne_bytes(a.try_into().unwrap_or([0; 8])),
            u64::from_ne_bytes(l.try_into().unwrap_or([0; 8])),
        ));
    }
    Some(v)
}

/// Copies the bytes of local iovs into one buffer.
///
/// # Safety
/// Every iov is readable memory of this process.
pub(super) unsafe fn gather(iov: &[(u64, u64)], out: &mut Vec<u8>) {
    for &(a, l) in iov {
        // SAFETY: per the function contract.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(a as *const u8, l as usize) });
    }
}

/// Copies `src` into local iovs, in order; returns the bytes copied.
///
/// # Safety
/// Every iov is writable memory of this process.
pub(super) unsafe fn scatter(src: &[u8], iov: &[(u64, u64)]) -> usize {
    let mut at = 0;
    for &(a, l) in iov {
        if at == src.len() {
            break;
        }
        let n = (l as usize).min(src.len() - at);
        // SAFETY: per the function contract.
        unsafe { copy_short(src[at..].as_ptr(), a as *mut u8, n) };
        at += n;
    }
    at
}

/// `copy_nonoverlapping`, with the sizes of the common small messages
/// (up to 16 bytes) copied in place by two loads and two stores that may
/// overlap, rather than by a call to `memcpy`, whose dispatch on the size
/// costs more than such a copy.
///
/// # Safety
/// As `copy_nonoverlapping`: `n` bytes readable at `src`, writable at
/// `dst`, the two not overlapping.
#[inline(always)]
pub(super) unsafe fn copy_short(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY (all arms): the loads and stores stay within the n bytes.
    unsafe {
        match n {
            8..=16 => {
                let a = src.cast::<u64>().read_unaligned();
                let b = src.add(n - 8).cast::<u64>().read_unaligned();
                dst.cast::<u64>().write_unaligned(a);
                dst.add(n - 8).cast::<u64>().write_unaligned(b);
            }
            4..=7 => {
                let a = src.cast::<u32>().read_unaligned();
                let b = src.add(n - 4).cast::<u32>().read_unaligned();
                dst.cast::<u32>().write_unaligned(a);
                dst.add(n - 4).cast::<u32>().write_unaligned(b);
            }
            1..=3 => {
                let a = src.read();
                let b = src.add(n / 2).read();
                let c = src.add(n - 1).read();
                dst.write(a);
                dst.add(n / 2).write(b);
                dst.add(n - 1).write(c);
            }
            0 => {}
            _ => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}

/// Most iovecs of one side of a cross-memory copy kept on the stack.
const STACK_IOVECS: usize = 2 * IOV_MAX;

/// Runs `f` on `v` as iovecs (empty pieces left out): on the stack for up
/// to [`STACK_IOVECS`] pieces, as a message's and a receive's are, on the
/// heap beyond.
fn with_iovecs<R>(v: &[(u64, u64)], f: impl FnOnce(&mut [libc::iovec]) -> R) -> R {
    let iovec = |&(a, l): &(u64, u64)| libc::iovec {
        iov_base: a as *mut c_void,
        iov_len: l as usize,
    };
    if v.len() <= STACK_IOVECS {
        let mut a = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; STACK_IOVECS];
        let mut n = 0;
        for p in v.iter().filter(|p| p.1 > 0) {
            a[n] = iovec(p);
            n += 1;
        }
        f(&mut a[..n])
    } else {
        let mut h: Vec<libc::iovec> = v.iter().filter(|p| p.1 > 0).map(iovec).collect();
        f(&mut h)
    }
}

/// A direct RMA's copy (`direct.rs`): `local` (at most [`IOV_MAX`]
/// buffers of this process) to or from `len` bytes at `at` in process
/// `pid`, in one system call with the iovecs on the stack. False when the
/// kernel refused or moved fewer bytes (the caller then asks the target;
/// nothing is logged here).
pub(super) fn direct_copy(pid: u32, local: &[(u64, u64)], at: u64, len: u64, pull: bool) -> bool {
    if local.len() > IOV_MAX {
        return false;
    }
    let mut l = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; IOV_MAX];
    for (d, &(a, n)) in l.iter_mut().zip(local) {
        *d = libc::iovec {
            iov_base: a as *mut c_void,
            iov_len: n as usize,
        };
    }
    let r = libc::iovec {
        iov_base: at as *mut c_void,
        iov_len: len as usize,
    };
    // SAFETY: the local iovs name this process's buffers (the caller's
    // operation); the kernel checks the remote one against process pid.
    let n = unsafe { cma(pid, &l[..local.len()], std::slice::from_ref(&r), pull) };
    n >= 0 && n as u64 == len
}

/// One `process_vm_readv` (`pull`) or `process_vm_writev` between the
/// `local` iovecs of this process and the `remote` ones of process `pid`:
/// the bytes moved, or -1.
///
/// # Safety
/// The local iovecs name memory of this process that the call may read
/// (write, when `pull`).
unsafe fn cma(pid: u32, local: &[libc::iovec], remote: &[libc::iovec], pull: bool) -> isize {
    let (l, ln, r, rn) = (
        local.as_ptr(),
        local.len() as u64,
        remote.as_ptr(),
        remote.len() as u64,
    );
    // SAFETY: per the function contract; the kernel checks the remote
    // iovecs against process pid.
    unsafe {
        if pull {
            libc::process_vm_readv(pid as i32, l, ln, r, rn, 0)
        } else {
            libc::process_vm_writev(pid as i32, l, ln, r, rn, 0)
        }
    }
}

/// One transfer of a batch: its local buffers, target address, length.
pub(super) type BatchItem<'a> = (&'a [(u64, u64)], u64, u64);

/// A batch of direct RMA copies (`batch.rs`) to or from process `pid`,
/// in one system call: each item is an operation's local buffers, its
/// target address and length. Returns the bytes moved, in order (0 when
/// the kernel refused): an item whose bytes all lie within them is done.
pub(super) fn direct_copy_all(pid: u32, items: &[BatchItem<'_>], pull: bool) -> u64 {
    let iov = |a: u64, n: u64| libc::iovec {
        iov_base: a as *mut c_void,
        iov_len: n as usize,
    };
    let l: Vec<libc::iovec> = items
        .iter()
        .flat_map(|(local, _, _)| local.iter().map(|&(a, n)| iov(a, n)))
        .collect();
    let r: Vec<libc::iovec> = items.iter().map(|&(_, at, n)| iov(at, n)).collect();
    if l.len() > BATCH_IOVECS || r.len() > BATCH_IOVECS {
        return 0;
    }
    // SAFETY: the local iovs name this process's buffers (the operations'
    // own, valid until they complete); the kernel checks the remote ones
    // against process pid.
    let n = unsafe { cma(pid, &l, &r, pull) };
    n.max(0) as u64
}

/// The most iovecs on either side of one cross-memory call (the kernel's
/// UIO_MAXIOV).
pub(super) const BATCH_IOVECS: usize = 1024;

/// One cross-memory copy between `local` (this process) and `remote`
/// (process `pid`): `pull` reads the remote iovs into the local ones.
/// Succeeds only when all `len` bytes moved; a failure is logged.
pub(super) fn cross_copy(
    pid: u32,
    local: &[(u64, u64)],
    remote: &[(u64, u64)],
    len: u64,
    pull: bool,
) -> Result<()> {
    copy_across(pid, local, remote, len, pull, true)
}

/// [`cross_copy`], logging a failure only when `log`: a copy of several
/// operations that, if it fails, is made again operation by operation
/// logs nothing itself.
pub(super) fn copy_across(
    pid: u32,
    local: &[(u64, u64)],
    remote: &[(u64, u64)],
    len: u64,
    pull: bool,
    log: bool,
) -> Result<()> {
    with_iovecs(local, |l| {
        with_iovecs(remote, |r| cross_copy_iovecs(pid, l, r, len, pull, log))
    })
}

/// [`cross_copy`] of iovecs.
fn cross_copy_iovecs(
    pid: u32,
    mut li: &mut [libc::iovec],
    mut ri: &mut [libc::iovec],
    len: u64,
    pull: bool,
    log: bool,
) -> Result<()> {
    let mut done: u64 = 0;
    // The kernel moves at most IOV_MAX iovs and may stop short; a short
    // count with no error moves on from where it stopped.
    while done < len {
        // SAFETY: the iovs name memory of this process (local) and of pid
        // (remote, checked by the kernel).
        let n = unsafe { cma(pid, li, ri, pull) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if log {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "cross-memory copy with pid {pid} failed after {done} of {len} bytes: {e}"
                );
            }
            return Err(match e.raw_os_error() {
                Some(libc::ESRCH) => Error::IO,
                Some(libc::EPERM) => Error::PERM,
                _ => Error::FAULT,
            });
        }
        if n == 0 {
            if log {
                crate::ox_log!(Warn, EpData, super::super::NAME, "cross-memory copy with pid {pid} stopped after {done} of {len} bytes (unmapped memory)");
            }
            return Err(Error::FAULT);
        }
        done += n as u64;
        li = advance(li, n as usize);
        ri = advance(ri, n as usize);
    }
    Ok(())
}

/// `v` without its first `n` bytes.
pub(super) fn advance(v: &mut [libc::iovec], mut n: usize) -> &mut [libc::iovec] {
    let mut k = 0;
    while k < v.len() && n >= v[k].iov_len {
        n -= v[k].iov_len;
        k += 1;
    }
    let v = &mut v[k..];
    if n > 0 {
        if let Some(f) = v.first_mut() {
            f.iov_base = (f.iov_base as usize + n) as *mut c_void;
            f.iov_len -= n;
        }
    }
    v
}

/// Lets peers of the same user use cross-memory attach on this process
/// when the kernel's Yama module would otherwise allow it only to
/// ancestors (`kernel.yama.ptrace_scope` 1, the default of several
/// distributions): prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), once per
/// process. `FI_OXSHM_PTRACER=0` leaves the setting alone (peers that are
/// not this process's ancestors then see their large transfers to it fail
/// with FI_EPERM). Scopes 2 and 3 cannot be relaxed this way.
pub(super) fn allow_peers_cma() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        if scope != Some(1) || std::env::var("FI_OXSHM_PTRACER").is_ok_and(|v| v == "0") {
            if scope.is_some_and(|s| s >= 2) {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "kernel.yama.ptrace_scope is {}: transfers over {INLINE} bytes between processes need cross-memory attach and will fail with FI_EPERM",
                    scope.unwrap_or(0)
                );
            }
            return;
        }
        const PR_SET_PTRACER: libc::c_int = 0x5961_6d61;
        // SAFETY: prctl with an integer argument; no memory is passed.
        let r = unsafe { libc::prctl(PR_SET_PTRACER, libc::c_ulong::MAX, 0, 0, 0) };
        crate::ox_log!(
            Info,
            EpData,
            super::super::NAME,
            "kernel.yama.ptrace_scope is 1: {} peers of this user to copy to and from this process (PR_SET_PTRACER_ANY)",
            if r == 0 { "allowed" } else { "could not allow" }
        );
    });
}

/// What one cross-memory call costs this process, in nanoseconds: the
/// least of eight `process_vm_readv` calls of 64 bytes of its own memory,
/// measured at the first question and kept. Its fixed part (the lookup of
/// the other process's memory, pinning its pages) varies by far more than
/// a copy does between hosts: 2.3-2.7 us on the AMD EPYC VM of
/// 2026-12-06 (a plain system call 0.21-0.26 us there), where a lone 4 KiB
/// RMA ping-pong on the Intel host it was tuned on went faster direct than
/// through the ring (0.91-1.02 us against 1.22-1.33).
pub(super) fn cma_call_ns() -> u64 {
    static NS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *NS.get_or_init(|| {
        let src = [0u8; 64];
        let mut dst = [0u8; 64];
        let me = shm::my_pid() as i32;
        let mut best = u64::MAX;
        for _ in 0..8 {
            let l = libc::iovec {
                iov_base: dst.as_mut_ptr().cast(),
                iov_len: dst.len(),
            };
            let r = libc::iovec {
                iov_base: src.as_ptr() as *mut libc::c_void,
                iov_len: src.len(),
            };
            let t = std::time::Instant::now();
            // SAFETY: both iovecs describe this process's own live buffers.
            let n = unsafe { libc::process_vm_readv(me, &l, 1, &r, 1, 0) };
            let ns = t.elapsed().as_nanos() as u64;
            if n < 0 {
                // Refused (seccomp, or no such call): never cheap.
                return u64::MAX;
            }
            best = best.min(ns.max(1));
        }
        best
    })
}

/// A cross-memory call at most this dear lets lone 4-16 KiB transfers
/// skip the ring (`lone_send`, `lone_rma`): there the ring's second copy
/// costs 0.3-1.2 us, and a call dearer than that loses (AMD host,
/// `fi_rma_pingpong -o write -S 4096`: 3.55 us direct, 2.29 through the
/// ring).
pub(super) const CMA_CHEAP_NS: u64 = 1_000;

/// Whether lone 4-16 KiB transfers may skip the ring here: what
/// `FI_OXSHM_LONE` says (`1`: they may, `0`: they keep the ring), and
/// without it (or `auto`) whether a cross-memory call costs this process
/// at most [`CMA_CHEAP_NS`]. Decided once, at the first question, and
/// logged at Info.
#[inline]
pub(super) fn cma_cheap() -> bool {
    static CHEAP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHEAP.get_or_init(|| {
        let policy = super::tune::Policy::from_var("FI_OXSHM_LONE");
        let (cheap, why) = lone_verdict(policy, cma_call_ns);
        crate::ox_log!(
            Info,
            EpData,
            super::super::NAME,
            "{why}: lone 4-16 KiB transfers {}",
            if cheap {
                "skip the ring"
            } else {
                "keep the ring"
            }
        );
        cheap
    })
}

/// The verdict of [`cma_cheap`] under `policy`, and why; `measure` is
/// called only where the policy leaves it to the cost of a call.
pub(super) fn lone_verdict(
    policy: super::tune::Policy,
    measure: impl FnOnce() -> u64,
) -> (bool, String) {
    use super::tune::Policy;
    match policy {
        Policy::Always => (true, "FI_OXSHM_LONE=1".to_string()),
        Policy::Never => (false, "FI_OXSHM_LONE=0".to_string()),
        Policy::Auto => {
            let ns = measure();
            (
                ns <= CMA_CHEAP_NS,
                format!("a cross-memory call costs {ns} ns here"),
            )
        }
    }
}

/// Copies the target's own verified `pieces` into `buf`. Without
/// FI_MR_ALLOCATED (`checked`), registered memory may be inaccessible: the
/// copy then stops at such a page and fails cleanly (-FI_EFAULT) instead of
/// faulting, by [`fault::copy`] or, where that is not available, by one
/// process_vm_readv on ourselves.
pub(super) fn own_copy(pieces: &[(u64, u64)], buf: &mut [u8], checked: bool) -> Result<()> {
    if checked && !fault::available() {
        let me = [(buf.as_mut_ptr() as u64, buf.len() as u64)];
        return cross_copy(shm::my_pid(), &me, pieces, buf.len() as u64, true);
    }
    let mut at = 0usize;
    for &(a, l) in pieces {
        let l = l as usize;
        let (dst, src) = (buf[at..at + l].as_mut_ptr(), a as *const u8);
        if checked {
            // SAFETY: the engine verified that these bytes are registered;
            // an inaccessible page stops the copy.
            let left = unsafe { fault::copy(dst, src, l) };
            fault_check(a, l, left)?;
        } else {
            // SAFETY: the engine verified that these bytes are registered,
            // and FI_MR_ALLOCATED says registered memory stays backed.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, l) };
        }
        at += l;
    }
    Ok(())
}

/// Copies `src` into the target's own verified `pieces` (see [`own_copy`]).
pub(super) fn copy_in(pieces: &[(u64, u64)], src: &[u8], checked: bool) -> Result<()> {
    if checked && !fault::available() {
        let me = [(src.as_ptr() as u64, src.len() as u64)];
        return cross_copy(shm::my_pid(), &me, pieces, src.len() as u64, false);
    }
    let mut at = 0usize;
    for &(a, l) in pieces {
        let l = l as usize;
        let (dst, from) = (a as *mut u8, src[at..at + l].as_ptr());
        if checked {
            // SAFETY: as in own_copy.
            let left = unsafe { fault::copy(dst, from, l) };
            fault_check(a, l, left)?;
        } else {
            // SAFETY: as in own_copy.
            unsafe { std::ptr::copy_nonoverlapping(from, dst, l) };
        }
        at += l;
    }
    Ok(())
}

/// -FI_EFAULT, with a log line, when a checked copy of `len` bytes at
/// `addr` stopped `left` bytes short.
pub(super) fn fault_check(addr: u64, len: usize, left: usize) -> Result<()> {
    if left == 0 {
        return Ok(());
    }
    crate::ox_log!(
        Warn,
        EpData,
        super::super::NAME,
        "registered memory at 0x{:x} is not accessible: a copy of {len} bytes at 0x{addr:x} stopped after {}",
        addr + (len - left) as u64,
        len - left
    );
    Err(Error::FAULT)
}

/// Tells Valgrind's memcheck, when the process runs under it, that
/// `pieces` of this process's memory hold defined bytes: another process
/// wrote them (a peer's share of a shared copy, through
/// `process_vm_writev`), which memcheck cannot see, so a program that
/// reads what it received would be warned of uninitialised data. Natively
/// the request is a few register rotations that change nothing.
pub(super) fn mark_defined(pieces: &[(u64, u64)]) {
    for &(a, l) in pieces {
        valgrind_request(VG_MAKE_MEM_DEFINED, a, l);
    }
}

/// Memcheck's MAKE_MEM_DEFINED client request: the tool base of ('M',
/// 'C'), plus 2.
const VG_MAKE_MEM_DEFINED: u64 = (((b'M' as u64) << 24) | ((b'C' as u64) << 16)) + 2;

/// A Valgrind client request (Valgrind's documented x86-64 protocol: the
/// four rotations of rdi by 3, 13, 61 and 51 bits, 128 in all, then
/// `xchg rbx, rbx`, with rax pointing at the request and its arguments;
/// the answer comes in rdx, which keeps its value when no Valgrind runs).
#[cfg(target_arch = "x86_64")]
fn valgrind_request(req: u64, a1: u64, a2: u64) -> u64 {
    let args: [u64; 6] = [req, a1, a2, 0, 0, 0];
    let mut result: u64 = 0;
    // SAFETY: the rotations of rdi add up to 128 bits and leave it as it
    // was; xchg of rbx with itself changes nothing; Valgrind, when present,
    // only reads `args` and writes rdx.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") result,
            inout("rdi") 0u64 => _,
            options(nostack)
        );
    }
    result
}

#[cfg(not(target_arch = "x86_64"))]
fn valgrind_request(_req: u64, _a1: u64, _a2: u64) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length the short copy treats in place (and some past them)
    /// copies exactly its bytes, and not one byte around them.
    #[test]
    fn short_copies_move_exactly_their_bytes() {
        let src: Vec<u8> = (1..=48).collect();
        for n in 0..=40 {
            let mut dst = [0xeeu8; 48];
            // SAFETY: n <= 40 bytes of src are readable, and dst[4..]
            // holds 44 writable bytes that do not overlap src.
            unsafe { copy_short(src.as_ptr(), dst[4..].as_mut_ptr(), n) };
            assert_eq!(&dst[4..4 + n], &src[..n], "{n} bytes");
            assert!(dst[..4].iter().all(|&b| b == 0xee), "before, {n} bytes");
            assert!(dst[4 + n..].iter().all(|&b| b == 0xee), "after, {n} bytes");
        }
    }

    /// A cross-memory copy gathers and scatters across pieces of any
    /// shape: few (iovecs on the stack) and many (on the heap), both ways.
    #[test]
    fn a_cross_copy_moves_every_piece_in_order() {
        let pid = std::process::id();
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for pieces in [3usize, STACK_IOVECS, STACK_IOVECS + 5] {
            let mut dst = vec![0u8; src.len()];
            // The destination in `pieces` uneven pieces, the source in two.
            let step = dst.len() / pieces;
            let mut local: Vec<(u64, u64)> = (0..pieces)
                .map(|i| (dst.as_mut_ptr() as u64 + (i * step) as u64, step as u64))
                .collect();
            let last = local.last_mut().unwrap_or_else(|| unreachable!());
            last.1 = (dst.len() - (pieces - 1) * step) as u64;
            let half = (src.len() / 2) as u64;
            let remote = [
                (src.as_ptr() as u64, half),
                (src.as_ptr() as u64 + half, src.len() as u64 - half),
            ];
            cross_copy(pid, &local, &remote, src.len() as u64, true).expect("pull");
            assert_eq!(dst, src, "{pieces} pieces pulled");
            let mut back = vec![0u8; src.len()];
            let there = [(back.as_mut_ptr() as u64, back.len() as u64)];
            cross_copy(pid, &local, &there, src.len() as u64, false).expect("push");
            assert_eq!(back, src, "{pieces} pieces pushed");
        }
    }

    /// A copy from memory that is not mapped fails with FI_EFAULT.
    #[test]
    fn a_cross_copy_from_unmapped_memory_is_a_fault() {
        let mut dst = [0u8; 64];
        let local = [(dst.as_mut_ptr() as u64, 64)];
        let r = cross_copy(std::process::id(), &local, &[(8, 64)], 64, true);
        assert_eq!(r, Err(Error::FAULT));
    }
}
