//! Shared memory between oxshm processes: one segment per enabled endpoint,
//! holding a header and the endpoint's inbox, a bounded multi-producer ring
//! of fixed-size cells that every peer writes into and the owner drains.
//!
//! # Segment layout
//!
//! ```text
//! offset 0      Header (one page): magic, layout version, owner pid and
//!               start time, state, the wake-up word, ring indices
//! offset 4096   CELLS cells of CELL bytes: a 64-byte cell header (its
//!               sequence word and the producer's pid) and the message
//! ```
//!
//! The segment is the POSIX shared-memory object named by
//! [`Address::segment_name`], created with `O_EXCL` and mode 0600 when the
//! endpoint is enabled and unlinked when it closes. Objects left by a process
//! that died without closing (kill -9) are removed by the next oxshm process
//! that enables or closes an endpoint ([`reap`]), and by a survivor as soon as
//! it notices the death of a peer.
//!
//! # The ring
//!
//! A bounded queue after Vyukov: a producer claims position `p` by a CAS on
//! `tail` when the cell's sequence word equals `p`, writes the message and
//! publishes it by storing `p + 1`; the owner consumes cell `p` when its word
//! is `p + 1` and frees it by storing `p + CELLS`. A full ring is
//! -FI_EAGAIN to the sender. A producer that died between its claim and its
//! publication would stall the owner: a cell that stays claimed for
//! [`STALL`] while its producer is dead (or never wrote its pid) is skipped.
//!
//! # Waking the owner
//!
//! The owner's progress thread sleeps on the `bell` word (futex(2), shared)
//! only after it found nothing to do and no application thread drove
//! progress recently; it says so in `sleeping`. A sender that publishes a
//! cell while `sleeping` is set bumps `bell` and wakes it: one system call,
//! paid only when the target is idle.

use super::ep::Address;
use crate::error::{Error, Result};
use std::ffi::CString;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes of one ring cell, its header included.
pub const CELL: usize = 4096;
/// Cells in an endpoint's inbox.
pub const CELLS: usize = 256;
/// Bytes of a cell's header.
pub const CELL_HEAD: usize = 64;
/// Bytes of message a cell carries.
pub const CELL_DATA: usize = CELL - CELL_HEAD;
/// Bytes of the segment header.
const HEADER: usize = 4096;
/// Bytes of a segment.
pub const SEGMENT_BYTES: usize = HEADER + CELLS * CELL;

const MAGIC: u64 = u64::from_be_bytes(*b"oxshmSG1");
/// Version of this layout; a peer with another one is refused.
const LAYOUT: u32 = 2;

/// Segment states.
pub const ALIVE: u32 = 1;
pub const CLOSED: u32 = 2;

/// How long a claimed cell may stay unpublished before its producer's
/// liveness is checked and the cell skipped.
const STALL: Duration = Duration::from_millis(200);
/// Empty polls of the own ring between two looks for a stalled claim.
const STALL_POLLS: u32 = 64;

#[repr(C)]
pub struct Header {
    magic: AtomicU64,
    layout: AtomicU32,
    cells: AtomicU32,
    pub pid: AtomicU32,
    pub state: AtomicU32,
    /// Start time of the owner (field 22 of /proc/<pid>/stat), so a reused
    /// pid is not taken for the owner.
    pub start_time: AtomicU64,
    pub nonce: AtomicU64,
    pub ep_id: AtomicU32,
    /// Set by a progress thread about to sleep on `bell`.
    pub sleeping: AtomicU32,
    pub bell: AtomicU32,
    _pad0: [u8; 4],
    /// The address of this word in the owner's address space: a peer
    /// reads these 8 bytes of the owner's memory with process_vm_readv,
    /// and finds them equal to their address, to learn whether
    /// cross-memory attach to the owner is permitted (see
    /// [`Segment::cma_permitted`]).
    probe: AtomicU64,
    _pad1: [u8; 48],
    tail: AtomicU64,
    _pad2: [u8; 120],
    head: AtomicU64,
}

#[repr(C)]
struct CellHead {
    seq: AtomicU64,
    pid: AtomicU32,
    len: AtomicU32,
}

/// A mapped segment (own or a peer's).
pub struct Segment {
    base: *mut u8,
    name: CString,
    own: bool,
    /// When the owner's ring looked stalled first (owner side only).
    stall: std::sync::Mutex<Option<(u64, Instant)>>,
    /// Polls that found the own ring empty (owner side only).
    empty_polls: AtomicU32,
}

// SAFETY: the mapping is shared memory accessed only through atomics and
// through cells that the ring protocol hands to one thread at a time.
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}

fn os_err(what: &str, name: &CString) -> Error {
    let e = std::io::Error::last_os_error();
    crate::ox_log!(
        Warn,
        EpData,
        super::NAME,
        "{what} {}: {e}",
        name.to_string_lossy()
    );
    match e.raw_os_error() {
        Some(libc::ENOENT) => Error::NOENT,
        Some(libc::EACCES) | Some(libc::EPERM) => Error::ACCES,
        Some(libc::EEXIST) => Error::ADDRINUSE,
        Some(libc::ENOMEM) | Some(libc::ENOSPC) => Error::NOMEM,
        _ => Error::IO,
    }
}

/// This process's pid, without a system call per message. A fork child
/// forgets the cached value (pthread_atfork), so it never uses its
/// parent's.
pub fn my_pid() -> u32 {
    static PID: AtomicU32 = AtomicU32::new(0);
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn forget() {
        PID.store(0, Ordering::Relaxed);
    }
    let p = PID.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    ONCE.call_once(|| {
        // SAFETY: registers a handler that only stores an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(forget)) };
    });
    let p = std::process::id();
    PID.store(p, Ordering::Relaxed);
    p
}

/// Start time of `pid` in clock ticks since boot, or None when it is gone.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses; the
    // fields after it start after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    // A zombie (killed, not yet waited for) or dead task is gone for us.
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Whether the process `pid` that started at `start` still runs.
pub fn alive(pid: u32, start: u64) -> bool {
    match start_time(pid) {
        Some(t) => t == start,
        None => false,
    }
}

impl Segment {
    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with a Header and lives as long as self.
        unsafe { &*(self.base as *const Header) }
    }

    pub fn hdr(&self) -> &Header {
        self.header()
    }

    fn cell(&self, pos: u64) -> *mut u8 {
        let i = (pos as usize) & (CELLS - 1);
        // SAFETY: i < CELLS, inside the mapping.
        unsafe { self.base.add(HEADER + i * CELL) }
    }

    fn cell_head(&self, pos: u64) -> &CellHead {
        // SAFETY: every cell starts with a CellHead.
        unsafe { &*(self.cell(pos) as *const CellHead) }
    }

    /// Creates the segment of `addr` (this process's endpoint).
    pub fn create(addr: &Address) -> Result<Segment> {
        let name = CString::new(addr.segment_name()).map_err(|_| Error::INVAL)?;
        // SAFETY: name is NUL-terminated.
        let fd = unsafe {
            libc::shm_open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                0o600,
            )
        };
        if fd < 0 {
            return Err(os_err("cannot create shared memory", &name));
        }
        // SAFETY: fd is ours.
        let r = unsafe { libc::ftruncate(fd, SEGMENT_BYTES as libc::off_t) };
        if r != 0 {
            let e = os_err("cannot size shared memory", &name);
            // SAFETY: fd is ours; name was just created by us.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(name.as_ptr());
            }
            return Err(e);
        }
        let seg = Self::map(fd, name, true)?;
        let h = seg.header();
        for p in 0..CELLS as u64 {
            seg.cell_head(p).seq.store(p, Ordering::Relaxed);
        }
        h.cells.store(CELLS as u32, Ordering::Relaxed);
        h.pid.store(addr.pid, Ordering::Relaxed);
        h.start_time
            .store(start_time(addr.pid).unwrap_or(0), Ordering::Relaxed);
        h.nonce.store(addr.nonce, Ordering::Relaxed);
        h.ep_id.store(addr.ep_id, Ordering::Relaxed);
        h.probe
            .store(&h.probe as *const AtomicU64 as u64, Ordering::Relaxed);
        h.state.store(ALIVE, Ordering::Relaxed);
        h.layout.store(LAYOUT, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// Maps the segment of a peer's `addr`: -FI_ENOENT when there is none
    /// (the peer is gone or not enabled), -FI_EADDRNOTAVAIL for another layout.
    pub fn open(addr: &Address) -> Result<Segment> {
        let name = CString::new(addr.segment_name()).map_err(|_| Error::INVAL)?;
        // SAFETY: name is NUL-terminated.
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(os_err("cannot open the peer's shared memory", &name));
        }
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open; st is writable.
        if unsafe { libc::fstat(fd, &mut st) } != 0 || (st.st_size as usize) < SEGMENT_BYTES {
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "shared memory {} is not an oxshm segment (size)",
                name.to_string_lossy()
            );
            return Err(Error::ADDRNOTAVAIL);
        }
        let seg = Self::map(fd, name, false)?;
        let h = seg.header();
        if h.magic.load(Ordering::Acquire) != MAGIC
            || h.layout.load(Ordering::Relaxed) != LAYOUT
            || h.cells.load(Ordering::Relaxed) != CELLS as u32
            || h.nonce.load(Ordering::Relaxed) != addr.nonce
        {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "shared memory {} is not an oxshm segment of this version",
                seg.name.to_string_lossy()
            );
            return Err(Error::ADDRNOTAVAIL);
        }
        Ok(seg)
    }

    fn map(fd: libc::c_int, name: CString, own: bool) -> Result<Segment> {
        // SAFETY: a fresh shared mapping of the whole object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SEGMENT_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        // SAFETY: the mapping keeps the object; the fd is no longer needed.
        unsafe { libc::close(fd) };
        if p == libc::MAP_FAILED {
            let e = os_err("cannot map shared memory", &name);
            if own {
                // SAFETY: we created it.
                unsafe { libc::shm_unlink(name.as_ptr()) };
            }
            return Err(e);
        }
        Ok(Segment {
            base: p as *mut u8,
            name,
            own,
            stall: std::sync::Mutex::new(None),
            empty_polls: AtomicU32::new(0),
        })
    }

    /// Whether this process may copy to and from the owner of this (peer's)
    /// segment with process_vm_readv/writev: one 8-byte read of the owner's
    /// memory (the kernel's ptrace access check, Yama included, decides).
    /// `FI_OXSHM_CMA=0` says no without trying.
    pub fn cma_permitted(&self) -> bool {
        static OFF: once_cell::sync::Lazy<bool> =
            once_cell::sync::Lazy::new(|| std::env::var("FI_OXSHM_CMA").is_ok_and(|v| v == "0"));
        if *OFF {
            return false;
        }
        let h = self.header();
        let at = h.probe.load(Ordering::Relaxed);
        let mut got = 0u64;
        let local = libc::iovec {
            iov_base: &mut got as *mut u64 as *mut libc::c_void,
            iov_len: 8,
        };
        let remote = libc::iovec {
            iov_base: at as *mut libc::c_void,
            iov_len: 8,
        };
        // SAFETY: the local iovec is our 8-byte variable; the kernel checks
        // the remote one.
        let n = unsafe {
            libc::process_vm_readv(
                h.pid.load(Ordering::Relaxed) as i32,
                &local,
                1,
                &remote,
                1,
                0,
            )
        };
        n == 8 && got == at
    }

    /// Whether the owner has closed the endpoint or died.
    pub fn owner_gone(&self) -> bool {
        let h = self.header();
        h.state.load(Ordering::Acquire) != ALIVE
            || !alive(
                h.pid.load(Ordering::Relaxed),
                h.start_time.load(Ordering::Relaxed),
            )
    }

    /// Copies `msg` into a free cell of this (peer's) ring and publishes it;
    /// -FI_EAGAIN when the ring is full. `msg` is at most [`CELL_DATA`].
    pub fn send(&self, parts: &[&[u8]]) -> Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        debug_assert!(len <= CELL_DATA);
        if len > CELL_DATA {
            return Err(Error::MSGSIZE);
        }
        self.send_with(len, |cell| {
            let mut at = 0;
            for p in parts {
                cell[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            len
        })
    }

    /// Claims a free cell of this (peer's) ring, lets `fill` write a
    /// message of at most `room` bytes into it (it returns the length it
    /// wrote) and publishes it: the bytes are copied once, straight into
    /// the peer's ring. -FI_EAGAIN when the ring is full; `room` is at most
    /// [`CELL_DATA`].
    pub fn send_with(&self, room: usize, fill: impl FnOnce(&mut [u8]) -> usize) -> Result<()> {
        if room > CELL_DATA {
            return Err(Error::MSGSIZE);
        }
        let h = self.header();
        let mut pos = h.tail.load(Ordering::Relaxed);
        loop {
            let c = self.cell_head(pos);
            let seq = c.seq.load(Ordering::Acquire);
            let dif = seq.wrapping_sub(pos) as i64;
            if dif == 0 {
                match h.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(p) => pos = p,
                }
            } else if dif < 0 {
                return Err(Error::AGAIN);
            } else {
                pos = h.tail.load(Ordering::Relaxed);
            }
        }
        let c = self.cell_head(pos);
        c.pid.store(my_pid(), Ordering::Relaxed);
        // SAFETY: the claimed cell is ours alone until published, and
        // CELL_HEAD + room <= CELL.
        let data = unsafe { std::slice::from_raw_parts_mut(self.cell(pos).add(CELL_HEAD), room) };
        let len = fill(data).min(room);
        c.len.store(len as u32, Ordering::Relaxed);
        c.seq.store(pos + 1, Ordering::Release);
        fence(Ordering::SeqCst);
        if h.sleeping.load(Ordering::Relaxed) != 0 {
            h.bell.fetch_add(1, Ordering::Release);
            futex_wake(&h.bell);
        }
        Ok(())
    }

    /// Hands the oldest published message of this (own) ring to `f` and
    /// frees its cell; false when there is none. One consumer at a time.
    pub fn recv(&self, f: impl FnOnce(&[u8])) -> bool {
        let h = self.header();
        let pos = h.head.load(Ordering::Relaxed);
        let c = self.cell_head(pos);
        let seq = c.seq.load(Ordering::Acquire);
        if seq != pos + 1 {
            // A claimed cell that stays unpublished (its producer died) is
            // looked for only once every STALL_POLLS empty polls: reading
            // `tail` would pull its line away from the producer, whose next
            // claim would then wait for it.
            let n = self.empty_polls.load(Ordering::Relaxed).wrapping_add(1);
            self.empty_polls.store(n, Ordering::Relaxed);
            if n % STALL_POLLS == 0 && seq == pos && h.tail.load(Ordering::Relaxed) != pos {
                self.check_stall(pos);
            }
            return false;
        }
        let len = (c.len.load(Ordering::Relaxed) as usize).min(CELL_DATA);
        // SAFETY: the published cell belongs to the consumer until freed.
        let msg = unsafe { std::slice::from_raw_parts(self.cell(pos).add(CELL_HEAD), len) };
        f(msg);
        self.free(pos);
        true
    }

    fn free(&self, pos: u64) {
        let c = self.cell_head(pos);
        c.pid.store(0, Ordering::Relaxed);
        c.seq.store(pos + CELLS as u64, Ordering::Release);
        self.header().head.store(pos + 1, Ordering::Relaxed);
    }

    /// A cell claimed but not published: skip it once its producer is dead
    /// (or never said who it is) for longer than [`STALL`].
    #[cold]
    fn check_stall(&self, pos: u64) {
        let mut st = self.stall.lock().unwrap_or_else(|e| e.into_inner());
        match *st {
            Some((p, since)) if p == pos => {
                if since.elapsed() < STALL {
                    return;
                }
                let pid = self.cell_head(pos).pid.load(Ordering::Relaxed);
                if pid != 0 && start_time(pid).is_some() {
                    return;
                }
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::NAME,
                    "a peer (pid {pid}) died while writing into this endpoint's inbox; its message is dropped"
                );
                *st = None;
                drop(st);
                // The dead producer's claim is honoured as an empty message.
                self.free(pos);
            }
            _ => *st = Some((pos, Instant::now())),
        }
    }

    /// Whether the ring holds a published message.
    pub fn pending(&self) -> bool {
        let h = self.header();
        let pos = h.head.load(Ordering::Relaxed);
        self.cell_head(pos).seq.load(Ordering::Acquire) == pos + 1
    }

    /// Inside [`Segment::recv`]'s `f`: whether another message is
    /// published behind the one being handled.
    pub fn more_behind(&self) -> bool {
        let pos = self.header().head.load(Ordering::Relaxed) + 1;
        self.cell_head(pos).seq.load(Ordering::Acquire) == pos + 1
    }

    /// Sleeps until a sender rings (or `timeout`), telling senders to ring;
    /// returns at once if a message is pending.
    pub fn sleep(&self, timeout: Duration) {
        let h = self.header();
        let bell = h.bell.load(Ordering::Acquire);
        h.sleeping.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.pending() {
            futex_wait(&h.bell, bell, timeout);
        }
        h.sleeping.store(0, Ordering::Relaxed);
    }

    /// Wakes a sleeper of this segment (at close).
    pub fn ring(&self) {
        let h = self.header();
        h.bell.fetch_add(1, Ordering::Release);
        futex_wake(&h.bell);
    }

    /// Marks an own segment closed and removes its name.
    pub fn close(&self) {
        if self.own {
            self.header().state.store(CLOSED, Ordering::Release);
            // SAFETY: name is NUL-terminated; the object is ours.
            unsafe { libc::shm_unlink(self.name.as_ptr()) };
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.close();
        // SAFETY: base/SEGMENT_BYTES is our mapping; nothing refers to it.
        unsafe { libc::munmap(self.base as *mut libc::c_void, SEGMENT_BYTES) };
    }
}

fn futex_wait(word: &AtomicU32, val: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a valid u32 in shared memory; ts is a valid timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            &ts as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: word is a valid u32 in shared memory.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}

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
            super::NAME,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(id: u32) -> Address {
        Address {
            pid: std::process::id(),
            ep_id: 900_000 + id,
            nonce: 0x1234_5678_9abc_def0 ^ id as u64 ^ (std::process::id() as u64) << 32,
        }
    }

    #[test]
    fn ring_delivers_in_order_and_fills() {
        let a = addr(1);
        let own = Segment::create(&a).unwrap();
        let peer = Segment::open(&a).unwrap();
        for i in 0..CELLS as u32 {
            peer.send(&[&i.to_ne_bytes(), b"xyz"]).unwrap();
        }
        assert_eq!(peer.send(&[b"full"]), Err(Error::AGAIN));
        for i in 0..CELLS as u32 {
            let mut got = Vec::new();
            assert!(own.recv(|m| got.extend_from_slice(m)));
            assert_eq!(&got[..4], &i.to_ne_bytes());
            assert_eq!(&got[4..], b"xyz");
        }
        assert!(!own.recv(|_| panic!("empty ring")));
        peer.send(&[b"again"]).unwrap();
        assert!(own.recv(|m| assert_eq!(m, b"again")));
    }

    #[test]
    fn many_producers_lose_nothing() {
        let a = addr(2);
        let own = Segment::create(&a).unwrap();
        let peers: Vec<Segment> = (0..4).map(|_| Segment::open(&a).unwrap()).collect();
        let n = 5000u32;
        let mut seen = vec![0u32; 4];
        std::thread::scope(|s| {
            for (t, p) in peers.iter().enumerate() {
                s.spawn(move || {
                    for i in 0..n {
                        while p
                            .send(&[&(t as u32).to_ne_bytes(), &i.to_ne_bytes()])
                            .is_err()
                        {
                            std::hint::spin_loop();
                        }
                    }
                });
            }
            let mut got = 0;
            while got < 4 * n {
                if own.recv(|m| {
                    let t = u32::from_ne_bytes(m[..4].try_into().unwrap()) as usize;
                    let i = u32::from_ne_bytes(m[4..8].try_into().unwrap());
                    assert_eq!(i, seen[t], "per-producer order");
                    seen[t] += 1;
                }) {
                    got += 1;
                }
            }
        });
        assert_eq!(seen, vec![n; 4]);
    }

    #[test]
    fn closed_segment_is_gone_and_reported() {
        let a = addr(3);
        let own = Segment::create(&a).unwrap();
        let peer = Segment::open(&a).unwrap();
        assert!(!peer.owner_gone());
        drop(own);
        assert!(peer.owner_gone());
        assert_eq!(Segment::open(&a).err(), Some(Error::NOENT));
    }

    #[test]
    fn a_second_segment_for_one_address_is_refused() {
        let a = addr(4);
        let _own = Segment::create(&a).unwrap();
        assert_eq!(Segment::create(&a).err(), Some(Error::ADDRINUSE));
    }

    #[test]
    fn this_process_is_alive_and_pid_reuse_is_told_apart() {
        let me = std::process::id();
        let t = start_time(me).unwrap();
        assert!(alive(me, t));
        assert!(!alive(me, t + 1));
    }
}
