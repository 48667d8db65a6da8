//! Direct RMA: an initiator checks a bulk write or read against the
//! target's registrations itself and copies with one cross-memory call,
//! without a request to the target. On unless `FI_OXSHM_DIRECT=0`, which
//! is read by the target (which otherwise shares its slots and offers
//! it) and by the initiator.
//!
//! The target verifies every other access (`xfer.rs`). For bulk RMA that
//! costs a round trip through the target's progress, and the target's CPU,
//! while the bytes could move in one call from the initiator. So a domain
//! keeps the slots of its first [`SHARED_SLOTS`] regions in a memfd
//! ([`Table`]): the registration engine writes them there as anywhere
//! (`Registry::with_config_in`), and peers map the memfd read-only,
//! through `/proc/<pid>/fd` (which needs the same ptrace permission as the
//! cross-memory copy itself). An initiator's [`PeerTable::access`] runs the
//! engine's own check on the mapped slot (`mr::remote`): key and
//! generation, enabled, rights, the whole range. Only plain regions
//! qualify (one range, no authorization key, not single-use, no counter
//! bound, host memory); anything else, and every refusal, goes to the
//! target as a request, which verifies, refuses, counts and logs as
//! before. Endpoints whose accepted accesses must be counted (a remote
//! counter bound), domains with FI_MR_ENDPOINT or requested keys, pinned
//! mode's frame checks, and transfers with remote CQ data or an
//! authorization key all keep the request path.
//!
//! # A close waits for direct copies
//!
//! The memfd's header has an entry per initiator thread ([`Accessor`]): a
//! sequence that is odd while that thread is inside an access. The thread
//! makes it odd with a SeqCst read-modify-write before its check loads the
//! slot's `seq` (SeqCst), and even again when its copy is done. A region's
//! close takes the slot with a SeqCst CAS on `seq`, then reads every
//! claimed entry (SeqCst) and waits, for each odd one, until it changes.
//! In the single order of SeqCst operations either the initiator's load
//! follows the CAS (it finds the region closed and asks the target), or
//! its increment precedes the closer's read, which then waits for it.
//! So when `fi_close` returns, no direct copy touches the region, as for
//! the target's own accesses (`Domain::quiesce`). An entry whose process
//! died (pid and start time) is not waited for. The domain's close marks
//! the table closed and waits the same way for every entry.
//!
//! # Fork
//!
//! In a child forked after the domain opened, the table's mapping is
//! replaced by a private copy ([`after_fork`]): whatever the child does
//! with the inherited domain stays in the child, and its endpoints do not
//! offer direct RMA.

use super::shm::{alive, my_pid, start_time};
use crate::mr::remote::RemoteSlots;
use crate::mr::Access;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Regions whose slots a domain shares: the first 4096 (256 KiB). Later
/// ones go through the target.
pub const SHARED_SLOTS: usize = 4096;
/// RMA transfers from this size go direct when they can: below it the
/// ring's two copies cost less than a system call (`fi_rma_bw`, 3
/// alternating rounds on the Intel host: 4 KiB writes 4.4 GB/s direct
/// against 5.2 through the ring, 8 KiB 7.5 against 6.4).
pub const DIRECT_MIN: u64 = 8192;
/// From this size a write or read goes direct below [`DIRECT_MIN`] too
/// when it is lone (`xfer.rs`, `lone_rma`: a ping-pong's). There the
/// ring's two copies run one after the other, where a stream overlaps one
/// transfer's second copy with the next one's first: `fi_rma_pingpong -o
/// write` at 4 KiB took 0.91-1.02 us direct against 1.22-1.33 through the
/// ring (upstream 2.1.0 0.88-0.96), and at 2 KiB 0.90 against 0.91, 1 KiB
/// 0.70 against 0.72 (5 alternating rounds, medians, Intel host).
pub const LONE_DIRECT_MIN: u64 = 4096;
const _: () = assert!(LONE_DIRECT_MIN < DIRECT_MIN);
/// From this size a transfer posted alone (not within [`STREAM_GAP_NS`] of
/// the end of the last one this large) goes to the target instead: the
/// target then splits it in halves with the initiator (`xfer.rs`), two
/// CPUs at once where a direct copy uses one (`fi_rma_pingpong -o write`,
/// Intel host: 4 MiB in 214-225 us through the target against 338-345
/// direct). Transfers posted back to back (a stream, `fi_rma_bw`) go
/// direct: there the target's share costs a grant each and the stream ran
/// 10-20% slower.
pub const SPLIT_FROM: u64 = 512 * 1024;
/// See [`SPLIT_FROM`].
pub const STREAM_GAP_NS: u64 = 20_000;
/// Initiator threads that can go direct to one domain at once.
const ACCESSORS: usize = 32;
/// Bytes of the memfd's header.
const HEAD: usize = 4096;
const BYTES: usize = HEAD + SHARED_SLOTS * 64;
const MAGIC: u64 = u64::from_be_bytes(*b"oxshmMT1");

/// One initiator thread's announcement.
#[repr(C, align(64))]
struct Accessor {
    /// Odd while the thread is inside an access.
    seq: AtomicU64,
    pid: AtomicU32,
    /// The thread, by its thread pointer (`mr::thread_word`).
    tid: AtomicU64,
    start: AtomicU64,
}

#[repr(C)]
struct Head {
    magic: AtomicU64,
    pid: AtomicU32,
    key_size: AtomicU32,
    secret: AtomicU64,
    slots: AtomicU32,
    /// Entries of `acc` ever claimed (a high-water mark).
    claimed: AtomicU32,
    /// Set when the domain closes: no access may start.
    closed: AtomicU32,
    _pad: [u8; 28],
    acc: [Accessor; ACCESSORS],
}

const _: () = assert!(std::mem::size_of::<Head>() <= HEAD);

/// A domain's shared slots (target side).
pub struct Table {
    fd: i32,
    base: *mut u8,
    /// The process that made it; in a child forked since, the slots are
    /// a private copy ([`after_fork`]) that peers never see.
    owner: u32,
    /// Its entry in [`LIVE`].
    live: usize,
}

/// Tables that exist in this process, packed as `(base >> 12) << 20 | fd`
/// (0: free), for [`after_fork`]: at most this many shared tables.
const MAX_TABLES: usize = 64;
static LIVE: [AtomicU64; MAX_TABLES] = [const { AtomicU64::new(0) }; MAX_TABLES];

fn pack(base: *mut u8, fd: i32) -> Option<u64> {
    let (b, f) = (base as u64, fd as u64);
    (b % 4096 == 0 && b >> 47 == 0 && f < 1 << 20).then_some((b >> 12) << 20 | f)
}

/// In the child of a fork, each table's shared mapping becomes a private
/// copy of what it held: the child's registry (which an application
/// should not use, but may close) then writes its own memory, never the
/// slots of the parent, whose peers check accesses against them.
extern "C" fn after_fork() {
    for e in &LIVE {
        let w = e.load(Ordering::Relaxed);
        if w == 0 {
            continue;
        }
        let base = ((w >> 20) << 12) as *mut libc::c_void;
        // SAFETY: a fresh private mapping, filled from the table's own
        // (mapped at `base` in this process), then moved over it; the child
        // is single-threaded here.
        unsafe {
            let tmp = libc::mmap(
                std::ptr::null_mut(),
                BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if tmp == libc::MAP_FAILED {
                continue;
            }
            std::ptr::copy_nonoverlapping(base as *const u8, tmp as *mut u8, BYTES);
            libc::mremap(
                tmp,
                BYTES,
                BYTES,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                base,
            );
        }
    }
}

// SAFETY: the mapping is shared memory reached through atomics only.
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

/// Maps the table; `populate` maps every page at once, for a peer's view
/// (its checks then never fault on the table; see `shm::Segment::map`).
/// The owner's mapping faults pages in as its registrations reach them.
fn map(fd: i32, prot: i32, populate: bool) -> Option<*mut u8> {
    let flags = libc::MAP_SHARED | if populate { libc::MAP_POPULATE } else { 0 };
    // SAFETY: a fresh shared mapping of the memfd, BYTES long.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), BYTES, prot, flags, fd, 0) };
    (p != libc::MAP_FAILED).then_some(p as *mut u8)
}

impl Table {
    /// A memfd for the shared slots, mapped; `None` where it cannot be made
    /// (the domain then keeps its slots private and every access goes to
    /// the target).
    pub fn create() -> Option<Table> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"oxshm-mr".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd is ours.
        if unsafe { libc::ftruncate(fd, BYTES as libc::off_t) } != 0 {
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
            return None;
        }
        static ATFORK: std::sync::Once = std::sync::Once::new();
        ATFORK.call_once(|| {
            // SAFETY: registers a handler that only remaps this module's
            // own mappings.
            unsafe { libc::pthread_atfork(None, None, Some(after_fork)) };
        });
        let registered = map(fd, libc::PROT_READ | libc::PROT_WRITE, false).and_then(|base| {
            let w = pack(base, fd)?;
            let live = LIVE.iter().position(|e| {
                e.compare_exchange(0, w, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
            });
            if live.is_none() {
                // SAFETY: the mapping just made, unused.
                unsafe { libc::munmap(base as *mut libc::c_void, BYTES) };
            }
            Some((base, live?))
        });
        match registered {
            Some((base, live)) => Some(Table {
                fd,
                base,
                owner: my_pid(),
                live,
            }),
            None => {
                // SAFETY: fd is ours.
                unsafe { libc::close(fd) };
                None
            }
        }
    }

    /// Whether this process made the table (not a forked child's copy):
    /// only then may peers be told of it.
    pub fn shared(&self) -> bool {
        self.owner == my_pid()
    }

    fn head(&self) -> &Head {
        // SAFETY: the mapping starts with a Head and lives as long as self.
        unsafe { &*(self.base as *const Head) }
    }

    /// The memory of the shared slots: (start, bytes), zeroed.
    pub fn slots(&self) -> (*mut u8, usize) {
        // SAFETY: HEAD < BYTES, inside the mapping.
        (unsafe { self.base.add(HEAD) }, SHARED_SLOTS * 64)
    }

    /// Says how to decode the registry's keys; peers may map it from now.
    pub fn publish(&self, key_size: usize, secret: u64) {
        let h = self.head();
        h.pid.store(my_pid(), Ordering::Relaxed);
        h.key_size.store(key_size as u32, Ordering::Relaxed);
        h.secret.store(secret, Ordering::Relaxed);
        h.slots.store(SHARED_SLOTS as u32, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
    }

    /// The memfd, for peers to open through `/proc/<pid>/fd`.
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// After a region's close took its slot (the SeqCst CAS): waits until
    /// no initiator thread is inside an access that checked the region
    /// before that (see the module).
    #[inline]
    pub fn quiesce(&self) {
        let h = self.head();
        let n = (h.claimed.load(Ordering::SeqCst) as usize).min(ACCESSORS);
        for a in &h.acc[..n] {
            let s = a.seq.load(Ordering::SeqCst);
            if s & 1 != 0 {
                wait_out(a, s);
            }
        }
    }
}

/// Waits until accessor `a`, inside an access at sequence `s`, leaves it
/// (or its process is found dead).
#[cold]
fn wait_out(a: &Accessor, s: u64) {
    let mut spins = 0u32;
    while a.seq.load(Ordering::SeqCst) == s {
        spins += 1;
        if spins < 1000 {
            std::hint::spin_loop();
            continue;
        }
        if spins % 256 == 0
            && !alive(
                a.pid.load(Ordering::Relaxed),
                a.start.load(Ordering::Relaxed),
            )
        {
            return;
        }
        std::thread::yield_now();
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // No access starts from now; those inside finish first (a forked
        // child's private copy has no peers).
        if self.shared() {
            self.head().closed.store(1, Ordering::SeqCst);
            self.quiesce();
        }
        LIVE[self.live].store(0, Ordering::SeqCst);
        // SAFETY: the mapping and fd made in create, no longer used here
        // (the registry that used the slots is gone).
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, BYTES);
            libc::close(self.fd);
        }
    }
}

/// A peer domain's shared slots, as an initiator maps them.
pub struct PeerTable {
    base: *mut u8,
    view: RemoteSlots,
    pid: u32,
}

// SAFETY: as for Table; the view only reads.
unsafe impl Send for PeerTable {}
// SAFETY: as above.
unsafe impl Sync for PeerTable {}

impl PeerTable {
    /// Maps the table of process `pid`'s domain, memfd `fd` of `pid`.
    /// `None` when it cannot (no permission, not a table, gone).
    pub fn open(pid: u32, fd: i32) -> Option<PeerTable> {
        if fd < 0 {
            return None;
        }
        let path = std::ffi::CString::new(format!("/proc/{pid}/fd/{fd}")).ok()?;
        // SAFETY: a NUL-terminated path.
        let f = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if f < 0 {
            return None;
        }
        // SAFETY: a stat buffer for fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: f is ours.
        let ok = unsafe { libc::fstat(f, &mut st) } == 0 && st.st_size as usize == BYTES;
        let base = if ok {
            map(f, libc::PROT_READ | libc::PROT_WRITE, true)
        } else {
            None
        };
        // SAFETY: f is ours; the mapping keeps the memfd.
        unsafe { libc::close(f) };
        let base = base?;
        // SAFETY: the mapping starts with a Head.
        let h = unsafe { &*(base as *const Head) };
        let t = (|| {
            if h.magic.load(Ordering::Acquire) != MAGIC
                || h.pid.load(Ordering::Relaxed) != pid
                || h.slots.load(Ordering::Relaxed) as usize != SHARED_SLOTS
            {
                return None;
            }
            let (ks, secret) = (
                h.key_size.load(Ordering::Relaxed) as usize,
                h.secret.load(Ordering::Relaxed),
            );
            // SAFETY: the slots follow the header, SHARED_SLOTS of them,
            // mapped as long as the PeerTable.
            let view = unsafe { RemoteSlots::new(base.add(HEAD), SHARED_SLOTS * 64, ks, secret) }?;
            Some(PeerTable { base, view, pid })
        })();
        if t.is_none() {
            // SAFETY: the mapping made above, unused.
            unsafe { libc::munmap(base as *mut libc::c_void, BYTES) };
        }
        t
    }

    fn head(&self) -> &Head {
        // SAFETY: as in Table::head.
        unsafe { &*(self.base as *const Head) }
    }

    /// This thread's accessor entry, claimed on first use; `None` when all
    /// are taken by live threads.
    fn accessor(&self) -> Option<&Accessor> {
        let h = self.head();
        let (me, tid) = (my_pid(), crate::mr::thread_word());
        let n = (h.claimed.load(Ordering::Acquire) as usize).min(ACCESSORS);
        if let Some(a) = h.acc[..n]
            .iter()
            .find(|a| a.pid.load(Ordering::Relaxed) == me && a.tid.load(Ordering::Relaxed) == tid)
        {
            return Some(a);
        }
        self.claim(me, tid)
    }

    #[cold]
    fn claim(&self, me: u32, tid: u64) -> Option<&Accessor> {
        let h = self.head();
        let start = start_time(me).unwrap_or(0);
        for (i, a) in h.acc.iter().enumerate() {
            let pid = a.pid.load(Ordering::Acquire);
            let free = pid == 0 || (pid != me && !alive(pid, a.start.load(Ordering::Relaxed)));
            if !free
                || a.pid
                    .compare_exchange(pid, me, Ordering::SeqCst, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            // A dead owner may have died inside an access: even again.
            let s = a.seq.load(Ordering::Relaxed);
            a.seq.store((s + 1) & !1, Ordering::Relaxed);
            a.start.store(start, Ordering::Relaxed);
            a.tid.store(tid, Ordering::Release);
            h.claimed.fetch_max(i as u32 + 1, Ordering::SeqCst);
            return Some(a);
        }
        None
    }

    /// Checks an access of `len` bytes at `addr` through `key` needing
    /// `want` against the target's registrations and, when they allow it,
    /// runs `copy` on the target address with the access announced (so
    /// that a close of the region waits for it). `Some(true)`: copied;
    /// `Some(false)`: allowed, but the copy failed; `None`: not decided
    /// here (ask the target).
    pub fn access(
        &self,
        key: u64,
        addr: u64,
        len: u64,
        want: Access,
        copy: impl FnOnce(u64) -> bool,
    ) -> Option<bool> {
        self.announced(|| self.check_whole(key, addr, len, want).map(copy))
            .flatten()
    }

    /// [`PeerTable::access`] for several accesses under one announcement
    /// (a batch of a stream's, `xfer/batch.rs`): each (key, address,
    /// length, rights) is checked, and `copy` runs once with the target
    /// address of each, `None` for one not decided here. `None` (and
    /// `copy` not run): nothing is decided here (the table is closed, or
    /// this thread has no entry).
    pub fn access_all<R>(
        &self,
        reqs: impl Iterator<Item = (u64, u64, u64, Access)>,
        copy: impl FnOnce(&[Option<u64>]) -> R,
    ) -> Option<R> {
        self.announced(|| {
            let at: Vec<Option<u64>> = reqs
                .map(|(key, addr, len, want)| self.check_whole(key, addr, len, want))
                .collect();
            copy(&at)
        })
    }

    /// The target address of the whole access, where the registrations
    /// allow it.
    fn check_whole(&self, key: u64, addr: u64, len: u64, want: Access) -> Option<u64> {
        self.view
            .check(key, addr, len, want)
            .filter(|&(_, l)| l == len)
            .map(|(at, _)| at)
    }

    /// Runs `f` with this thread's access announced (see the module
    /// comment); `None` when the table is closed or the thread has no
    /// entry.
    fn announced<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let a = self.accessor()?;
        let s = a.seq.fetch_add(1, Ordering::SeqCst);
        let r = if self.head().closed.load(Ordering::SeqCst) == 0 {
            Some(f())
        } else {
            None
        };
        a.seq.store(s + 2, Ordering::Release);
        r
    }

    /// The process whose domain this is.
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

impl Drop for PeerTable {
    fn drop(&mut self) {
        // The entries stay claimed by this process (other views of it may
        // use them); a process that dies leaves them to be taken over.
        // SAFETY: the mapping made in open.
        unsafe { libc::munmap(self.base as *mut libc::c_void, BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::{Config, Registry, Request};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn table_and_registry() -> (Table, Registry) {
        let t = Table::create().expect("memfd");
        let (mem, bytes) = t.slots();
        // SAFETY: the table's zeroed slot memory, mapped while `t` lives
        // (the caller drops the registry first).
        let r = unsafe {
            Registry::with_config_in(
                Config {
                    secret: Some(99),
                    ..Config::default()
                },
                mem,
                bytes,
            )
        }
        .unwrap();
        let (ks, secret) = r.key_params();
        t.publish(ks, secret);
        (t, r)
    }

    /// A peer maps the whole table up front (its checks never fault on
    /// it); unpopulated, it would map only the pages it has read.
    #[test]
    fn a_peer_view_maps_every_page_of_the_table() {
        let (t, _r) = table_and_registry();
        let p = PeerTable::open(std::process::id(), t.fd()).expect("peer view");
        let mapped = crate::prov::oxshm::shm::tests::mapped_bytes(p.base);
        assert!(
            mapped >= BYTES / 4096 * 4096,
            "the peer maps {mapped} of {BYTES}"
        );
    }

    #[test]
    fn a_peer_view_through_proc_checks_and_copies() {
        let (t, r) = table_and_registry();
        let p = PeerTable::open(std::process::id(), t.fd()).expect("peer view");
        let buf = vec![0u8; 8192];
        let base = buf.as_ptr() as u64;
        let iov = [(base, 8192)];
        let h = r
            .register(&Request::new(&iov, Access::REMOTE_WRITE))
            .unwrap();
        let mut at = 0;
        assert_eq!(
            p.access(h.key(), 4096, 4096, Access::REMOTE_WRITE, |a| {
                at = a;
                true
            }),
            Some(true)
        );
        assert_eq!(at, base + 4096);
        // No right to read, past the end, closed: not decided here, and
        // nothing copied.
        let never = |_| panic!("copied");
        assert_eq!(p.access(h.key(), 0, 8, Access::REMOTE_READ, never), None);
        assert_eq!(
            p.access(h.key(), 8000, 400, Access::REMOTE_WRITE, never),
            None
        );
        r.close(&h).unwrap();
        t.quiesce();
        assert_eq!(p.access(h.key(), 0, 8, Access::REMOTE_WRITE, never), None);
        drop(p);
        drop(r);
    }

    #[test]
    fn a_close_waits_for_a_copy_in_progress() {
        let (t, r) = table_and_registry();
        let t = Arc::new(t);
        let p = Arc::new(PeerTable::open(std::process::id(), t.fd()).unwrap());
        let buf = [0u8; 64];
        let iov = [(buf.as_ptr() as u64, 64)];
        let h = r
            .register(&Request::new(&iov, Access::REMOTE_WRITE))
            .unwrap();
        let (inside, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let th = {
            let (p, inside, done) = (Arc::clone(&p), Arc::clone(&inside), Arc::clone(&done));
            let key = h.key();
            std::thread::spawn(move || {
                p.access(key, 0, 64, Access::REMOTE_WRITE, |_| {
                    inside.store(true, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    done.store(true, Ordering::SeqCst);
                    true
                })
            })
        };
        while !inside.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        r.close(&h).unwrap();
        t.quiesce();
        assert!(done.load(Ordering::SeqCst), "the close waited for the copy");
        assert_eq!(th.join().unwrap(), Some(true));
        drop(p);
        drop(r);
    }

    #[test]
    fn entries_of_dead_processes_are_not_waited_for_and_are_taken_over() {
        let (t, r) = table_and_registry();
        let h = t.head();
        // Every entry held by a process that no longer exists, one of them
        // inside an access.
        for a in &h.acc {
            a.pid.store(u32::MAX - 1, Ordering::Relaxed);
            a.start.store(1, Ordering::Relaxed);
        }
        h.acc[3].seq.store(7, Ordering::Relaxed);
        h.claimed.store(ACCESSORS as u32, Ordering::SeqCst);
        t.quiesce();
        let p = PeerTable::open(std::process::id(), t.fd()).unwrap();
        let a = p.accessor().expect("a dead process's entry taken over");
        assert_eq!(a.seq.load(Ordering::Relaxed) & 1, 0);
        assert_eq!(a.pid.load(Ordering::Relaxed), std::process::id());
        drop(p);
        drop(r);
    }

    #[test]
    fn a_closed_table_decides_nothing() {
        let (t, r) = table_and_registry();
        let p = PeerTable::open(std::process::id(), t.fd()).unwrap();
        let buf = [0u8; 64];
        let iov = [(buf.as_ptr() as u64, 64)];
        let h = r
            .register(&Request::new(&iov, Access::REMOTE_WRITE))
            .unwrap();
        let key = h.key();
        drop(r);
        drop(t);
        // The peer's mapping outlives the domain; its slots may still read
        // live, but the table says closed.
        assert_eq!(
            p.access(key, 0, 8, Access::REMOTE_WRITE, |_| panic!("copied")),
            None
        );
    }

    #[test]
    fn a_forked_child_writes_its_own_copy() {
        let (t, r) = table_and_registry();
        let buf = [0u8; 64];
        let iov = [(buf.as_ptr() as u64, 64)];
        let h = r
            .register(&Request::new(&iov, Access::REMOTE_WRITE))
            .unwrap();
        let p = PeerTable::open(std::process::id(), t.fd()).unwrap();
        // SAFETY: the child only closes the region and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let ok = !t.shared() && r.close(&h).is_ok();
            // SAFETY: ends the child without running the test harness.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut st = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(child, &mut st, 0) }, child);
        assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0);
        // The child's close did not reach the parent's slots.
        assert!(t.shared());
        assert_eq!(
            p.access(h.key(), 0, 8, Access::REMOTE_WRITE, |_| true),
            Some(true)
        );
        assert!(r.verify(h.key(), 0, 8, Access::REMOTE_WRITE, None).is_ok());
        drop(p);
        drop(r);
    }

    #[test]
    fn not_a_table_is_refused() {
        assert!(PeerTable::open(std::process::id(), -1).is_none());
        assert!(PeerTable::open(std::process::id(), 0).is_none(), "stdin");
        let (t, r) = table_and_registry();
        assert!(PeerTable::open(std::process::id() + 1_000_000, t.fd()).is_none());
        drop(r);
    }
}
