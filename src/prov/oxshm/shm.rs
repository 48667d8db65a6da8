//! Shared memory between oxshm processes: one segment per enabled endpoint,
//! holding a header and the endpoint's inbox, a bounded multi-producer ring
//! of fixed-size cells that every peer writes into and the owner drains.
//!
//! # Segment layout
//!
//! ```text
//! offset 0      Header (one page): magic, layout version, owner pid and
//!               start time, state, the wake-up word, ring indices
//! offset 4096   CELLS cells of CELL bytes, CELL + 64 bytes apart (so that
//!               their first lines spread over the cache's sets): a
//!               16-byte cell header (its sequence word, the producer's
//!               pid and the message's length) and a message of up to
//!               SMALL_DATA bytes, which starts on the sequence word's
//!               cache line: the owner's first read of a new message
//!               costs one cache-line transfer, not two
//! then          SPILL_AREAS spill areas, whole lines a line more than
//!               CELL_HEAD + CELL_DATA bytes apart: a message longer than
//!               SMALL_DATA, CELL_HEAD bytes into the area its producer
//!               took (bits of the cell header's length say so and which
//!               area), the lowest free one ([`spill`])
//! ```
//!
//! Small messages, the common case, thus walk 1.1 MiB of cells instead of
//! 17 MiB: consecutive cells share pages and their lines stay in cache and
//! TLB (64-byte messages between two processes: about a fifth more per
//! second than with 16 KiB cells, fabtests' `fi_rdm_tagged_bw`). The ring
//! is deep (1024 positions, as deep as upstream's command queue) so that
//! two processes that stream small messages or injected writes at each
//! other each post long runs before the other's ring fills and it must
//! drain its own; spilled messages, which take an area each, have only
//! SPILL_AREAS positions in flight ([`Segment::claim`]), which keeps
//! the segment at 3.3 MB (3.1 MiB).
//!
//! The segment is the POSIX shared-memory object named by
//! [`Address::segment_name`], created with `O_EXCL` and mode 0600 when the
//! endpoint is enabled and unlinked when it closes. Objects left by a process
//! that died without closing (kill -9) are removed by the next oxshm process
//! that enables or closes an endpoint ([`reap()`]), and by a survivor as soon as
//! it notices the death of a peer.
//!
//! # The ring
//!
//! A bounded queue after Vyukov: a producer claims position `p` by a CAS on
//! `tail` when the cell's sequence word equals `p`, writes the message and
//! publishes it by storing `p + 1`; the owner consumes cell `p` when its word
//! is `p + 1` and frees it by storing `p + CELLS`, one message late (it
//! holds the last cell it consumed until the next message or an empty look
//! at the ring: see [`Segment::recv`]), always in order. So a producer
//! that reads the owner's `head` knows every position below
//! `head + CELLS - 2` finds its cell freed, and claims those by the CAS
//! alone, without reading the cell ([`Segment::claim`]); a spilled
//! message also needs a free spill area, which the owner gives back once
//! it has handled the message the area held ([`spill`]). A full ring, or
//! no free area for a spilled message, is -FI_EAGAIN to the sender. A
//! producer that died between its claim and its publication would stall
//! the owner: a cell that stays claimed for [`STALL`] while its producer
//! is dead (or never wrote its pid) is skipped, and the spill area its
//! claim took with it.
//!
//! # Waking the owner
//!
//! The owner's progress thread sleeps on the `bell` word (futex(2), shared)
//! only after it found nothing to do and no application thread drove
//! progress recently; it says so in `sleeping`. A sender that publishes a
//! cell while `sleeping` is set bumps `bell` and wakes it: one system call,
//! paid only when the target is idle.
//!
//! An application thread of the owner that sleeps in poll(2) on a CQ's or
//! counter's wait fd (after fi_trywait) is woken by the sender itself,
//! without the progress thread in between: each segment has a wake-up
//! socket (an abstract-namespace datagram socket named after the segment,
//! [`Segment::wake_fd`]) that the wait fd watches. The owner arms it
//! (`fd_armed`, [`Segment::arm`]) before it sleeps; the first sender that
//! publishes a cell after that disarms it and sends one byte. A reply to
//! the owner's own operation ([`Urgency::Reply`]) only completes that
//! operation, so it wakes an owner only if it waits for transmit
//! completions: an owner waiting to receive is not woken twice per
//! message (by the acknowledgment of its last send, then by the message
//! it waits for). The byte
//! carries nothing: a stranger that writes to the socket causes a spurious
//! wake-up, no more. Where the socket cannot be made (or a sender lives in
//! another network namespace), waiters fall back on the progress thread.

use super::ep::Address;
use crate::error::{Error, Result};
use std::ffi::CString;
use std::sync::atomic::{compiler_fence, fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod fence;
mod prefetch;
mod reap;
mod spill;
#[cfg(test)]
pub(crate) mod tests;
mod wake;

pub(super) use fence::{asym, heavy_fence, process_fence};
use fence::{futex_wait, futex_wake};
use prefetch::{prefetch_next, prefetch_own, prefetch_pages, prefetch_rest, AHEAD};
pub use reap::{reap, reap_peer};
use wake::{drain, wake_addr, wake_bind, wake_sender, Wake};

/// Bytes of one ring cell, its header included.
pub const CELL: usize = 1024;
/// Cells in an endpoint's inbox (positions of its ring).
pub const CELLS: usize = 1024;
/// Spill areas of an inbox: a longer message goes in one of them
/// ([`spill`]).
pub const SPILL_AREAS: usize = 128;
const _: () =
    assert!(CELLS.is_power_of_two() && SPILL_AREAS.is_power_of_two() && SPILL_AREAS <= CELLS);
/// Bytes of a cell's header.
pub const CELL_HEAD: usize = 16;
/// Bytes of message a cell carries in place.
pub const SMALL_DATA: usize = CELL - CELL_HEAD;
/// Where a cell's second cache line starts in its message (cells start on
/// a line: the segment is mapped on a page, and the header and the cell
/// stride are whole lines).
pub const LINE_AT: usize = 64 - CELL_HEAD;
const _: () = assert!(HEADER % 64 == 0 && CELL_STRIDE % 64 == 0);
/// Bytes of message one ring position carries (longer than
/// [`SMALL_DATA`]: in a spill area).
pub const CELL_DATA: usize = 16880;
/// Bytes of the segment header.
const HEADER: usize = 4096;
/// Bytes of a segment.
pub const SEGMENT_BYTES: usize = SPILLS + SPILL_AREAS * SPILL_STRIDE;
/// Distance between two cells: a cache line more than a cell, so that the
/// cells' first lines (header and message start, the lines every message
/// touches) fall in different cache sets instead of all in the same few
/// (a stride that is a multiple of 4096 maps them all to one set of the
/// first-level cache).
const CELL_STRIDE: usize = CELL + 64;
/// Where the spill areas start, and how far apart they are: whole lines,
/// a line more than an area takes (as the cells). An area's message
/// starts [`CELL_HEAD`] bytes into it, as a cell's does, so that a
/// payload padded to [`LINE_AT`] starts on a line in either.
const SPILLS: usize = HEADER + CELLS * CELL_STRIDE;
const SPILL_STRIDE: usize = (CELL_HEAD + CELL_DATA).div_ceil(64) * 64 + 64;
const _: () = assert!(
    SPILLS % 64 == 0
        && SPILL_STRIDE % 64 == 0
        && SPILLS + (SPILL_AREAS - 1) * SPILL_STRIDE + CELL_HEAD + CELL_DATA <= SEGMENT_BYTES
);
/// Bit of a cell header's `len`: the message is in a spill area, whose
/// index the bits from [`AREA_SHIFT`] hold; the length is in the bits
/// below.
const SPILLED: u32 = 1 << 31;
const AREA_SHIFT: u32 = 16;
const LEN_MASK: u32 = (1 << AREA_SHIFT) - 1;
const _: () = assert!(
    CELL_DATA <= LEN_MASK as usize
        && SMALL_DATA < CELL_DATA
        && ((SPILL_AREAS - 1) << AREA_SHIFT) < SPILLED as usize
);

/// A cell header's `len` for `len` bytes in spill area `area`.
#[inline(always)]
fn spilled_len(len: u32, area: u32) -> u32 {
    SPILLED | (area << AREA_SHIFT) | len
}

/// The spill area a cell header's `len` names, if any. An index past the
/// areas (a corrupted header) is masked into range: the owner reads
/// inside its mapping whatever it holds.
#[inline(always)]
fn area_of(raw: u32) -> Option<u32> {
    (raw & SPILLED != 0).then_some((raw & !SPILLED) >> AREA_SHIFT & (SPILL_AREAS as u32 - 1))
}

const MAGIC: u64 = u64::from_be_bytes(*b"oxshmSG1");
/// Version of this layout (and of the data path's protocol); a peer with
/// another one is refused.
const LAYOUT: u32 = 14;

/// What a message means to an owner asleep on its wake-up socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// A request the owner must act on (for itself or for the sender).
    Request,
    /// A reply to one of the owner's own operations: it completes that
    /// operation and asks nothing of the owner.
    Reply,
}

/// `fd_armed` bits: wake the owner for requests, for replies.
const ARM_REQUEST: u32 = 1;
const ARM_REPLY: u32 = 2;

/// Segment states.
pub const ALIVE: u32 = 1;
pub const CLOSED: u32 = 2;

/// How long a claimed cell may stay unpublished before its producer's
/// liveness is checked and the cell skipped.
const STALL: Duration = Duration::from_millis(200);
/// Empty polls of the own ring between two looks for a stalled claim.
const STALL_POLLS: u32 = 64;
/// [`Segment::held`]: no empty look at the ring since the cell was held.
const HELD_FRESH: u64 = 1 << 63;

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
    /// Set by the owner about to sleep on its wake-up socket; the first
    /// sender to publish a cell clears it and sends a byte.
    fd_armed: AtomicU32,
    /// 1 when the owner issues an asymmetric fence ([`heavy_fence`]) before
    /// it sleeps: senders registered for it then publish without a fence
    /// of their own. Cleared for good when the owner first sleeps on its
    /// wake-up socket ([`Segment::arm`]).
    asym: AtomicU32,
    _pad0: [u8; 4],
    /// The address of this word in the owner's address space: a peer
    /// reads these 8 bytes of the owner's memory with process_vm_readv,
    /// and finds them equal to their address, to learn whether
    /// cross-memory attach to the owner is permitted (see
    /// [`Segment::cma_permitted`]).
    probe: AtomicU64,
    _pad1: [u8; 40],
    tail: AtomicU64,
    _pad2: [u8; 120],
    head: AtomicU64,
    _pad3: [u8; 120],
    /// The owner's domain's shared-slot memfd (`direct.rs`), -1 for none,
    /// and 1 in `direct` when initiators may copy bulk RMA themselves
    /// after checking it (written before `magic`).
    table_fd: std::sync::atomic::AtomicI32,
    direct: AtomicU32,
    _pad4: [u8; SPILL_PAD],
    /// The spill areas taken by producers and given back by the owner
    /// ([`spill`]), a bit each (and a count of takes), the producers'
    /// words on one line and the owner's on another: an area is free when
    /// its two bits are equal.
    spill_taken: [AtomicU64; spill::GROUPS],
    _pad5: [u8; 64 - 8 * spill::GROUPS],
    spill_given: [AtomicU64; spill::GROUPS],
    _pad6: [u8; 64 - 8 * spill::GROUPS],
}

/// Bytes between `direct` and `spill_taken`, which starts a line.
const SPILL_PAD: usize = 448 - 376;
const _: () = assert!(
    SPILL_AREAS % spill::GROUP == 0
        && spill::GROUPS <= 8
        && std::mem::offset_of!(Header, spill_taken) % 64 == 0
        && std::mem::offset_of!(Header, spill_given) % 64 == 0
        && std::mem::offset_of!(Header, direct) + 4 + SPILL_PAD
            == std::mem::offset_of!(Header, spill_taken)
        && std::mem::size_of::<Header>() <= HEADER
);

const _: () = assert!(std::mem::size_of::<CellHead>() == CELL_HEAD);

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
    /// The consumed cell not yet given back, plus one, with [`HELD_FRESH`]
    /// until the first empty look after it; 0 for none (owner side only,
    /// written by the one consumer).
    held: AtomicU64,
    /// Spill areas whose messages were handled, not yet given back, and
    /// the bytes those messages held (owner side only, [`spill::Batch`]).
    spill_batch: spill::Batch,
    wake: Wake,
    /// Producer side: the count of inbox passes that handled a message,
    /// kept by the endpoint that sends through this segment
    /// ([`Segment::watch`]), and its value at the last claim: a claim
    /// with none handled since is part of a stream ([`Segment::claim`]).
    handled: Option<Arc<AtomicU64>>,
    handled_at_claim: AtomicU64,
    /// Producer side: positions below this are known given back for
    /// their lap ([`Segment::claim`]), learnt from the owner's `head`.
    free_until: AtomicU64,
}

/// A claimed ring position ([`Segment::claim`]).
pub struct Claim<'a> {
    seg: &'a Segment,
    pos: u64,
    room: usize,
    /// The spill area of a spilled message.
    area: Option<u32>,
}

impl Claim<'_> {
    /// Where the message goes: `room` bytes, the claimer's alone until
    /// [`Claim::commit`].
    #[inline(always)]
    pub fn data(&mut self) -> &mut [u8] {
        // SAFETY: the claimed position is ours alone until published, and
        // room fits where data() puts it (SMALL_DATA, or CELL_DATA).
        unsafe { std::slice::from_raw_parts_mut(self.seg.data(self.pos, self.area), self.room) }
    }

    /// Publishes the first `len` bytes written (at most `room`).
    #[inline(always)]
    pub fn commit(self, len: usize, urgency: Urgency) {
        let c = std::mem::ManuallyDrop::new(self);
        c.seg.commit(c.pos, len.min(c.room), c.area, urgency);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        // Never left claimed: the owner would wait for it (see STALL).
        self.seg.commit(self.pos, 0, self.area, Urgency::Request);
    }
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
#[inline(always)]
pub fn my_pid() -> u32 {
    let p = PID.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    my_pid_slow()
}

/// [`my_pid`]'s cache, 0 until the first call (and after a fork).
static PID: AtomicU32 = AtomicU32::new(0);

#[cold]
#[inline(never)]
fn my_pid_slow() -> u32 {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn forget() {
        PID.store(0, Ordering::Relaxed);
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
        unsafe { self.base.add(HEADER + i * CELL_STRIDE) }
    }

    /// Where the message of position `pos` lies: in its cell, or in
    /// spill area `area` when there is one.
    fn data(&self, pos: u64, area: Option<u32>) -> *mut u8 {
        match area {
            Some(i) => {
                let i = i as usize & (SPILL_AREAS - 1);
                // SAFETY: i < SPILL_AREAS, and an area has CELL_DATA bytes
                // after its first CELL_HEAD, inside the mapping.
                unsafe { self.base.add(SPILLS + i * SPILL_STRIDE + CELL_HEAD) }
            }
            // SAFETY: every cell has SMALL_DATA bytes after its header.
            None => unsafe { self.cell(pos).add(CELL_HEAD) },
        }
    }

    fn cell_head(&self, pos: u64) -> &CellHead {
        // SAFETY: every cell starts with a CellHead.
        unsafe { &*(self.cell(pos) as *const CellHead) }
    }

    /// Creates the segment of `addr` (this process's endpoint); `direct`:
    /// the memfd of its domain's shared slots, when initiators may copy
    /// bulk RMA to it directly.
    pub fn create(addr: &Address, direct: Option<i32>) -> Result<Segment> {
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
        let mut seg = Self::map(fd, name, true)?;
        if let Some(fd) = wake_bind(&seg.name) {
            static KEYS: AtomicU64 = AtomicU64::new(1);
            seg.wake = Wake::Own {
                fd,
                key: KEYS.fetch_add(1, Ordering::Relaxed),
            };
        }
        let h = seg.header();
        for p in 0..CELLS as u64 {
            seg.cell_head(p).seq.store(p, Ordering::Relaxed);
        }
        // Every area free: both words of bits zero, as the new object is.
        h.cells.store(CELLS as u32, Ordering::Relaxed);
        h.pid.store(addr.pid, Ordering::Relaxed);
        h.start_time
            .store(start_time(addr.pid).unwrap_or(0), Ordering::Relaxed);
        h.nonce.store(addr.nonce, Ordering::Relaxed);
        h.ep_id.store(addr.ep_id, Ordering::Relaxed);
        h.asym.store(u32::from(asym()), Ordering::Relaxed);
        h.probe
            .store(&h.probe as *const AtomicU64 as u64, Ordering::Relaxed);
        h.state.store(ALIVE, Ordering::Relaxed);
        h.table_fd.store(direct.unwrap_or(-1), Ordering::Relaxed);
        h.direct
            .store(u32::from(direct.is_some()), Ordering::Relaxed);
        h.layout.store(LAYOUT, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// The memfd of the owner's shared slots, when it lets initiators copy
    /// bulk RMA directly (`direct.rs`).
    pub fn direct_table(&self) -> Option<i32> {
        let h = self.header();
        (h.direct.load(Ordering::Relaxed) == 1).then(|| h.table_fd.load(Ordering::Relaxed))
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
        let mut seg = Self::map(fd, name, false)?;
        let (wa, len) = wake_addr(&seg.name);
        seg.wake = Wake::Peer { addr: wa, len };
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
        // Populated up front (the owner's mapping allocates the pages, a
        // peer's maps them), so that the data path never faults on a
        // segment page. Such a fault waits for the page's lock, which the
        // kernel's background scanners take too (DAMON's access sampling
        // walks a shared page's mappings under it): on a busy two-vCPU
        // guest a preempted scanner held one for 1-20 s, and the transfer
        // that touched the page waited as long (the data-path stress with
        // direct RMA, about 1 run in 10; 0 in 80 with the pages mapped
        // from the start). A failed populate is not an error: the pages
        // then fault in on first use.
        // SAFETY: a fresh shared mapping of the whole object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SEGMENT_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
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
            held: AtomicU64::new(0),
            spill_batch: spill::Batch::default(),
            wake: Wake::None,
            handled: None,
            handled_at_claim: AtomicU64::new(u64::MAX),
            free_until: AtomicU64::new(0),
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

    /// Whether the owner has closed the endpoint (a plain load: a death
    /// is not noticed here).
    pub fn owner_closed(&self) -> bool {
        self.header().state.load(Ordering::Acquire) != ALIVE
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
    pub fn send(&self, parts: &[&[u8]], urgency: Urgency) -> Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        debug_assert!(len <= CELL_DATA);
        if len > CELL_DATA {
            return Err(Error::MSGSIZE);
        }
        self.publish(len, urgency, |cell| {
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
    /// [`CELL_DATA`]. The message is a request ([`Urgency::Request`]).
    #[inline(always)]
    pub fn send_with(&self, room: usize, fill: impl FnOnce(&mut [u8]) -> usize) -> Result<()> {
        self.publish(room, Urgency::Request, fill)
    }

    /// [`Segment::send_with`] for a reply ([`Urgency::Reply`]).
    pub fn reply_with(&self, room: usize, fill: impl FnOnce(&mut [u8]) -> usize) -> Result<()> {
        self.publish(room, Urgency::Reply, fill)
    }

    #[inline(always)]
    fn publish(
        &self,
        room: usize,
        urgency: Urgency,
        fill: impl FnOnce(&mut [u8]) -> usize,
    ) -> Result<()> {
        let mut c = self.claim(room)?;
        let len = fill(c.data());
        c.commit(len, urgency);
        Ok(())
    }

    /// Producer side: counts the sending endpoint's inbox passes that
    /// handled a message into `handled`, to tell streams from exchanges.
    pub fn watch(&mut self, handled: Arc<AtomicU64>) {
        self.handled = Some(handled);
    }

    /// Whether this claim follows the sender's previous claim here with no
    /// message handled between them: a stream, whose producer runs ahead
    /// of the owner, rather than an exchange, where the owner has caught
    /// up and polls the cells this producer would ask for ahead
    /// ([`prefetch_own`]). Unwatched segments count as streams. Threads
    /// sending through one segment at once may blur it; it only decides a
    /// prefetch.
    #[inline(always)]
    fn streaming(&self) -> bool {
        let Some(h) = &self.handled else {
            return true;
        };
        let now = h.load(Ordering::Relaxed);
        let before = self.handled_at_claim.load(Ordering::Relaxed);
        if before != now {
            self.handled_at_claim.store(now, Ordering::Relaxed);
        }
        before == now
    }

    /// Claims a cell of this (peer's) ring for a message of up to `room`
    /// bytes, which the caller writes into [`Claim::data`] and publishes
    /// with [`Claim::commit`] (a claim dropped without it publishes an
    /// empty message, which the owner drops). -FI_EAGAIN when the ring is
    /// full, -FI_EMSGSIZE past [`CELL_DATA`]. A spilled message (`room`
    /// over [`SMALL_DATA`]) also takes a free spill area, the lowest
    /// ([`spill`]); -FI_EAGAIN when every area holds a message.
    ///
    /// A position below `free_until` is claimed without reading its cell:
    /// its line is then first touched by the stores that write the
    /// message, which all wait in the store buffer for it and land
    /// together. Read first, the line came over for the read, and an owner
    /// polling it took it back while the message was being written, which
    /// the stores then waited for once more (`fi_rdm_pingpong` 8 bytes,
    /// 7 alternating rounds on the Intel host: 0.28 us against 0.30).
    #[inline(always)]
    pub fn claim(&self, room: usize) -> Result<Claim<'_>> {
        if room > CELL_DATA {
            return Err(Error::MSGSIZE);
        }
        let h = self.header();
        let area = if room > SMALL_DATA {
            Some(spill::take(h).ok_or(Error::AGAIN)?)
        } else {
            None
        };
        let mut pos = h.tail.load(Ordering::Relaxed);
        loop {
            // Acquire: with learn_free's Release, the bound another thread
            // learnt carries the owner's give-backs to this one's stores.
            let mut free = self.free_until.load(Ordering::Acquire);
            if pos >= free {
                free = self.learn_free(h);
            }
            if pos >= free {
                let seq = self.cell_head(pos).seq.load(Ordering::Acquire);
                let dif = seq.wrapping_sub(pos) as i64;
                if dif < 0 {
                    if let Some(i) = area {
                        spill::untake(h, i);
                    }
                    return Err(Error::AGAIN);
                }
                if dif > 0 {
                    // Claimed by another producer since `tail` was read.
                    pos = h.tail.load(Ordering::Relaxed);
                    continue;
                }
            }
            match h
                .tail
                .compare_exchange_weak(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(p) => pos = p,
            }
        }
        let c = self.cell_head(pos);
        c.pid.store(my_pid(), Ordering::Relaxed);
        if let Some(i) = area {
            // Said at once, for an owner that finds this claim's producer
            // dead to give the area back ([`Segment::free`]).
            c.len.store(spilled_len(0, i), Ordering::Relaxed);
        }
        if self.streaming() {
            prefetch_own(self.cell(pos + AHEAD), room);
        }
        Ok(Claim {
            seg: self,
            pos,
            room,
            area,
        })
    }

    /// Producer side: raises `free_until` from the owner's `head`. The
    /// owner stores `head` (Release) after giving back every position
    /// three or more below it: it gives cells back in order, each one
    /// message after consuming it ([`Segment::hold`], [`Segment::free`]),
    /// and stores the new `head` before that. So with `head` at h, every
    /// position below h + CELLS - 2 finds its cell given back for its lap
    /// (the first lap's cells start given back). Reading `head` takes its
    /// line from the owner: done once per CELLS - 2 claims at most while
    /// the owner keeps up, and on every claim of a full ring.
    /// Returns the bound now known.
    #[cold]
    #[inline(never)]
    fn learn_free(&self, h: &Header) -> u64 {
        let bound = h.head.load(Ordering::Acquire) + CELLS as u64 - 2;
        let known = self.free_until.load(Ordering::Acquire);
        if bound > known {
            self.free_until.store(bound, Ordering::Release);
            return bound;
        }
        known
    }

    /// Publishes the message of claimed position `pos` (`len` bytes) and
    /// wakes the owner where it asked for it.
    #[inline(always)]
    fn commit(&self, pos: u64, len: usize, area: Option<u32>, urgency: Urgency) {
        let h = self.header();
        let c = self.cell_head(pos);
        let len = len as u32;
        c.len.store(
            match area {
                Some(i) => spilled_len(len, i),
                None => len,
            },
            Ordering::Relaxed,
        );
        c.seq.store(pos + 1, Ordering::Release);
        // The store above must be visible before `sleeping` and `fd_armed`
        // are read (an owner stores those, then looks at the ring). Where
        // the owner fences for both sides before it sleeps, ordering the
        // two accesses in this thread's program is enough; otherwise a
        // full fence here, which waits for the cell's lines to leave this
        // CPU's store buffer.
        if h.asym.load(Ordering::Relaxed) != 0 && asym() {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if h.sleeping.load(Ordering::Relaxed) != 0 {
            h.bell.fetch_add(1, Ordering::Release);
            futex_wake(&h.bell);
        }
        let want = match urgency {
            Urgency::Request => ARM_REQUEST,
            Urgency::Reply => ARM_REPLY,
        };
        let armed = h.fd_armed.load(Ordering::Relaxed);
        // One sender wakes the owner: the one that disarms the socket.
        if armed & want != 0
            && h.fd_armed
                .compare_exchange(armed, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.wake_owner();
        }
    }

    /// Sends the wake-up byte to the owner of this (peer's) segment.
    #[cold]
    fn wake_owner(&self) {
        let Wake::Peer { addr, len } = &self.wake else {
            return;
        };
        let fd = wake_sender();
        if fd < 0 {
            return;
        }
        // SAFETY: one byte from a local; addr is a sockaddr_un of len bytes.
        let n = unsafe {
            libc::sendto(
                fd,
                b"w".as_ptr() as *const libc::c_void,
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                addr as *const libc::sockaddr_un as *const libc::sockaddr,
                *len,
            )
        };
        // A full socket is readable already; an owner in another network
        // namespace is not reachable (its progress thread takes over).
        let _ = n;
    }

    /// The wake-up socket of this (own) segment and its key, for a wait fd
    /// to watch: readable after [`Segment::arm`] once a sender published a
    /// cell.
    pub fn wake_fd(&self) -> Option<(libc::c_int, u64)> {
        match &self.wake {
            Wake::Own { fd, key, .. } => Some((*fd, *key)),
            _ => None,
        }
    }

    /// Before the owner sleeps on [`Segment::wake_fd`]: asks the next
    /// sender of a request (and, with `replies`, of a reply) for a wake-up
    /// byte. False when a message is already pending (the caller must not
    /// sleep) or there is no wake-up socket.
    pub fn arm(&self, replies: bool) -> bool {
        let Wake::Own { fd, .. } = &self.wake else {
            return false;
        };
        drain(*fd);
        let h = self.header();
        let bits = if replies {
            ARM_REQUEST | ARM_REPLY
        } else {
            ARM_REQUEST
        };
        // An owner that sleeps on its socket has its senders fence: each of
        // its sleeps then costs a plain fence, not a membarrier(2) that
        // interrupts every CPU running an oxshm process. The switch itself
        // takes one membarrier, so that no sender still skipping its fence
        // is missed.
        if h.asym.load(Ordering::Relaxed) != 0 {
            h.asym.store(0, Ordering::SeqCst);
            heavy_fence();
        }
        h.fd_armed.store(bits, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.pending() {
            h.fd_armed.store(0, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Hands the oldest published message of this (own) ring to `f`, with
    /// the pid of the process that claimed its cell; false when there is
    /// none. One consumer at a time.
    ///
    /// The cell of the last message handed out is given back to producers
    /// late ([`Segment::hold`]): when the next message is consumed, or at
    /// the second empty look at the ring after it. Giving a cell back is a
    /// store to a line the producer shares, and the next locked instruction
    /// of this thread (a queue or CQ lock while it completes the message,
    /// or the claim of its reply's cell) would wait for that line to be
    /// taken from the producer: deferred, the wait falls on a poll of an
    /// empty ring, not on the path from a message to its answer.
    #[inline(always)]
    pub fn recv(&self, f: impl FnOnce(u32, &[u8])) -> bool {
        let h = self.header();
        let pos = h.head.load(Ordering::Relaxed);
        let c = self.cell_head(pos);
        let seq = c.seq.load(Ordering::Acquire);
        if seq != pos + 1 {
            self.empty_look();
            // A claimed cell that stays unpublished (its producer died) is
            // looked for once every STALL_POLLS empty polls, from the
            // claimer's pid (on the line just read); a claimer that died
            // before writing its pid shows only in `tail`, read 64 times
            // less often: reading it pulls its line away from the
            // producers, whose next claim would then wait for it.
            let n = self.empty_polls.load(Ordering::Relaxed).wrapping_add(1);
            self.empty_polls.store(n, Ordering::Relaxed);
            if n % STALL_POLLS == 0
                && seq == pos
                && (c.pid.load(Ordering::Relaxed) != 0
                    || (n % (64 * STALL_POLLS) == 0 && h.tail.load(Ordering::Relaxed) != pos))
            {
                self.check_stall(pos);
            }
            return false;
        }
        let raw = c.len.load(Ordering::Relaxed);
        let spilled = raw & SPILLED != 0;
        let area = area_of(raw);
        let len = ((raw & LEN_MASK) as usize).min(if spilled { CELL_DATA } else { SMALL_DATA });
        // SAFETY: the published position belongs to the consumer until
        // given back, and its spill area until given back below; len fits
        // where the producer wrote.
        let msg = unsafe { std::slice::from_raw_parts(self.data(pos, area), len) };
        if !spilled {
            prefetch_rest(msg.as_ptr(), msg.len());
        } else {
            prefetch_pages(msg.as_ptr(), msg.len());
        }
        // The sequence word is written again when the cell is given back,
        // one message later: asked for now, its line is this CPU's by then
        // rather than fetched back from the producer while the next
        // message's first lock waits (`fi_rma_bw -o write` 64 bytes, 7
        // alternating rounds: 538 MB/s against 484; messages unchanged).
        prefetch_own(self.cell(pos), 0);
        // Within a run of messages (no empty look since the last one), the
        // next is most likely published already: its lines are asked for
        // now, to travel while this one is handled ([`prefetch_next`]).
        // Outside a run, the next cell is mostly the one its producer is
        // writing, and asking would take its lines away (`fi_rma_bw -o
        // write` 64 bytes lost a fifth).
        if self.held.load(Ordering::Relaxed) & HELD_FRESH != 0 {
            prefetch_next(self.cell(pos + 1), if spilled { 0 } else { len });
        }
        f(c.pid.load(Ordering::Relaxed), msg);
        // The message is handled: its area goes back (with the batch).
        if let Some(i) = area {
            self.spill_batch.add(h, i, len);
        }
        // Release: the cells given back before are so before producers
        // see it ([`Segment::learn_free`]).
        h.head.store(pos + 1, Ordering::Release);
        self.hold(pos);
        true
    }

    /// Keeps the consumed cell `pos` from producers for now, giving back
    /// the one held before it (see [`Segment::recv`]). At most one cell is
    /// held: the ring takes one message less meanwhile.
    fn hold(&self, pos: u64) {
        let prev = self.held.load(Ordering::Relaxed);
        self.held.store(HELD_FRESH | (pos + 1), Ordering::Relaxed);
        if prev != 0 {
            self.give_back((prev & !HELD_FRESH) - 1);
        }
    }

    /// An empty look at the ring: the held cell goes back at the second.
    fn empty_look(&self) {
        self.spill_batch.flush(self.header());
        let held = self.held.load(Ordering::Relaxed);
        if held & HELD_FRESH != 0 {
            self.held.store(held & !HELD_FRESH, Ordering::Relaxed);
        } else if held != 0 {
            self.held.store(0, Ordering::Relaxed);
            self.give_back(held - 1);
        }
    }

    /// Hands consumed cell `pos` back to producers.
    fn give_back(&self, pos: u64) {
        let c = self.cell_head(pos);
        c.pid.store(0, Ordering::Relaxed);
        // No spill area is said for the position's next claim until it
        // takes one ([`Segment::free`]).
        c.len.store(0, Ordering::Relaxed);
        c.seq.store(pos + CELLS as u64, Ordering::Release);
    }

    /// Frees the cell at `head` without consuming it (a dead producer's),
    /// after the cell held before it: cells go back in order
    /// ([`Segment::learn_free`]).
    fn free(&self, pos: u64) {
        let held = self.held.load(Ordering::Relaxed) & !HELD_FRESH;
        if held != 0 {
            self.held.store(0, Ordering::Relaxed);
            self.give_back(held - 1);
        }
        // The dead producer's spill area, if its claim took one and said
        // so (it dies between the two, and the area is lost to the ring).
        if let Some(i) = area_of(self.cell_head(pos).len.load(Ordering::Relaxed)) {
            spill::give_back(self.header(), i);
        }
        self.give_back(pos);
        self.header().head.store(pos + 1, Ordering::Release);
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

    /// Whether a pass over this (own) ring would find nothing to do: no
    /// published message, no cell held back ([`Segment::recv`]) and no
    /// look for a stalled claim due (the pass makes one every
    /// [`STALL_POLLS`] empty looks, counted here too).
    /// Takes no lock and writes nothing shared.
    pub fn idle(&self) -> bool {
        // A held cell is given back by a pass over the ring.
        if self.pending() || self.held.load(Ordering::Relaxed) != 0 {
            return false;
        }
        let n = self.empty_polls.load(Ordering::Relaxed).wrapping_add(1);
        if n % STALL_POLLS == 0 {
            return false;
        }
        self.empty_polls.store(n, Ordering::Relaxed);
        true
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
        if h.asym.load(Ordering::Relaxed) != 0 {
            heavy_fence();
        } else {
            fence(Ordering::SeqCst);
        }
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
        if let Wake::Own { fd, .. } = self.wake {
            // SAFETY: the socket is ours and closed once.
            unsafe { libc::close(fd) };
        }
        // SAFETY: base/SEGMENT_BYTES is our mapping; nothing refers to it.
        unsafe { libc::munmap(self.base as *mut libc::c_void, SEGMENT_BYTES) };
    }
}
