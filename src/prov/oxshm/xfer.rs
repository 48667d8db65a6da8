//! The oxshm data path: how an enabled endpoint moves messages, RMA and
//! atomics to and from endpoints of other processes (or its own) on the host.
//!
//! # Who does what
//!
//! Every operation is a request in the target endpoint's inbox ring
//! (`shm.rs`) and is executed by the target, which verifies it against its
//! own registrations with the registration engine (`Registry::verify`: key
//! and generation, the whole range across the iovs of the region, rights,
//! enabled and single-use state, authorization key) before it touches a
//! byte. The target answers with a response in the initiator's inbox; the
//! initiator completes the operation (CQ entry, counter) when the response
//! arrives, so every completion is a delivery completion and a refused
//! access completes in error at the initiator with the target's reason.
//!
//! - **Direct RMA** (`direct.rs`; `FI_OXSHM_DIRECT=0` turns it off): a write or read from
//!   [`super::direct::DIRECT_MIN`] bytes whose region is plain (one range,
//!   no authorization key, not single-use, no counter bound) is checked by
//!   the initiator itself against the target's registrations, whose first
//!   slots the target's domain keeps in shared memory, and copied with one
//!   cross-memory call, with no request at all; the region's close waits
//!   for such copies as for the target's own. Anything the check does not
//!   settle (a refusal included) goes to the target as below, which
//!   verifies, refuses, counts and logs it. Targets that count accepted
//!   accesses (a remote counter bound) keep the request path.
//! - Small payloads (at most [`INLINE`] bytes) travel in the ring cell: a
//!   write or a send is one copy in and one copy out, no system call;
//!   except a lone send from [`LONE_MIN`] bytes ([`lone_send`]: a
//!   ping-pong's), which goes as below.
//! - Larger payloads move in one cross-memory copy done by the target:
//!   `process_vm_readv` from the initiator's buffers for writes and sends,
//!   `process_vm_writev` into them for reads. The request carries the
//!   initiator's iovs; they must stay valid until the operation completes,
//!   as libfabric requires of every non-inject buffer. The target grants
//!   the initiator the first half of the copy (of a verified access's
//!   target range, or of the receive buffers a message matched) to do
//!   itself while it copies the second, so that both processes copy at
//!   once: an operation from [`SPLIT_MIN`], or a smaller one of a stream
//!   (more requests queued behind it). The operation completes at both
//!   ends when the initiator says its share is done. Whether a stream's
//!   sharing is faster than the target copying alone depends on the
//!   machine and the buffers: the target measures both in turn and keeps
//!   the faster (`xfer/tune.rs`).
//! - Where the kernel does not permit cross-memory attach between two
//!   processes (Yama `ptrace_scope` 2 or 3, a peer that is not an ancestor
//!   under scope 1 without PR_SET_PTRACER, `FI_OXSHM_CMA=0`), the bytes are
//!   *staged*: they move in [`CHUNK`]-byte pieces through the receiver's
//!   ring, each piece copied in by its sender and out by its receiver. The
//!   target still verifies the whole access first and answers only after
//!   the last piece; a refused access moves no piece at all. Whether a
//!   process may copy to a peer is probed once, when it maps the peer's
//!   inbox ([`shm::Segment::cma_permitted`]), and each side decides only
//!   the copies it would do itself: a target that may not reach its
//!   initiator grants the whole range to an initiator that may reach it,
//!   and stages it when neither may.
//! - Atomics are executed by the target under one lock per process, so
//!   atomics from any number of peers on one location are atomic with
//!   respect to each other.
//!
//! A region's close waits for any remote access that verified before it
//! (the domain's `active` count), so once `fi_close` returns no peer can
//! touch the memory: the buffer may be freed at once.
//!
//! # Progress
//!
//! The endpoint's inbox is drained by whichever comes first: an application
//! thread reading one of the domain's CQs or counters, or the endpoint's
//! progress thread. The thread sleeps on the inbox's futex, and tells
//! senders to wake it only when no application thread has driven progress
//! for [`APP_POLL_GRACE`]: a target that polls pays no system call per
//! message, an idle one still completes every operation (FI_PROGRESS_AUTO).
//! An application thread about to sleep (fi_cq_sread, fi_cntr_wait, or
//! poll(2) on a wait fd after fi_trywait) arms the inbox's wake-up socket
//! instead ([`Xfer::prepare_fd_wait`], shm.rs): the sender of the next
//! message wakes it, and it handles the message itself, with no progress
//! thread in between. Where an inbox has no socket, the sleeper hands it
//! back to the progress thread ([`Xfer::hand_off`]), which then leaves its
//! grace period at once.
//!
//! # Faults
//!
//! A peer that dies or closes its endpoint is noticed by the initiator's
//! progress thread within [`PEER_CHECK`]: its pending operations complete
//! with FI_EIO, its segment is removed from /dev/shm if it died, and later
//! operations to it fail (error completion FI_EHOSTUNREACH).
//!
//! # Files
//!
//! This file holds the engine: its state, progress, peers, completions
//! and the answers to this endpoint's operations. `xfer/post.rs` is the
//! initiator's side (posting operations and receives, cancel, peek and
//! claim), `xfer/inbox.rs` what the target does with each request,
//! `xfer/share.rs` shared copies (grants, their settling, and the halves
//! held back to be copied together), `xfer/staging.rs` the initiator's
//! side of a grant and staged pieces, `xfer/batch.rs` a stream's direct
//! RMA copied in batches, `xfer/copy.rs` how bytes cross address spaces,
//! `xfer/tables.rs` the tables of pending operations and of peers.

use super::atomics;
use super::cntr::Cntr;
use super::cq::{Completion, Cq, ErrCompletion};
use super::domain::Domain;
use super::ep::{Address, Ep};
use super::fault;
use super::lock::{Excluded, Lock, LockGuard, Serial};
use super::mr::Iovs;
use super::shm::{self, Segment, Urgency, CELL_DATA};
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use crate::mr::Access;
use libc::c_void;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod batch;
mod copy;
mod inbox;
mod post;
mod rxq;
mod share;
mod staging;
mod tables;
#[cfg(test)]
mod tests;
mod tune;
mod wire;

use copy::*;
use rxq::*;
use share::*;
use tables::PendTable;
pub(super) use tables::{PeerHash, PeerMap};
use wire::*;

/// Largest payload carried in the ring: sends, writes and read results up
/// to this size need no system call (but see [`LONE_MIN`]).
pub const INLINE: usize = 16384;
/// Largest inject operation (`tx_attr->inject_size`), as upstream shm's.
/// An inject call's buffer is the caller's again when it returns, so its
/// payload must be copied into the ring then: two copies, one by each
/// process, one after the other. Above this size applications post
/// operations with a completion, which a lone send from [`LONE_MIN`]
/// bytes takes in one cross-memory copy. (With 16 KiB injects, fabtests
/// and MPI injected 16 KiB ping-pongs: `fi_rdm_pingpong -S 16384` took
/// 2.73-2.96 us against upstream 2.1.0's 1.58-1.78.)
pub const INJECT: usize = 4096;
/// A send of at least this many bytes goes as one cross-memory copy by the
/// target, not through the ring, when it is lone ([`lone_send`]). Below
/// it the ring's two copies cost no more than the system call:
/// `fi_rdm_pingpong` at 8 KiB took 1.62-1.69 us single-copy against
/// 1.75-1.80 through the ring, at 12 KiB 1.74-1.76 against 2.29-2.40, at
/// 16 KiB 1.80-1.94 against 2.95-3.02 (3 alternating rounds, Intel host).
pub const LONE_MIN: usize = 8192;
// Injects never go lone: their buffer is the caller's at once.
const _: () = assert!(INJECT < LONE_MIN && LONE_MIN <= INLINE);
/// Largest authorization key an operation may carry.
pub const AUTH_MAX: usize = 256;
/// Largest atomic operand (and compare, and result) in bytes.
pub const ATOMIC_MAX: usize = 256;
/// Most local iovs of one operation (`iov_limit`).
pub const IOV_MAX: usize = 4;
/// How often the progress thread checks the peers that owe responses.
pub const PEER_CHECK: Duration = Duration::from_millis(50);
/// How long the progress thread leaves the inbox to an application that
/// polls (it looks again after this long, and steps in when no poll came).
pub const APP_POLL_GRACE: Duration = Duration::from_millis(2);
/// Most messages an application call handles in one pass over the inbox.
const APP_DRAIN: usize = 64;
/// Iterations the progress thread spins for the next message before it
/// sleeps (a few microseconds).
const SPIN: u32 = 2000;

/// RMA transfers and messages from this size on, and smaller ones with
/// more requests queued behind them, are shared copies: the target verifies
/// the access (or matches the message to a posted receive) and may grant
/// the initiator the first half of it (the verified target addresses, or
/// the receive buffers) to copy itself while it copies the second, so that
/// both processes copy at once, on two CPUs (`xfer/tune.rs` says when). A
/// lone smaller one is copied by the target (a grant would add a round
/// trip). A lone 64 KiB one finishes sooner in halves even with it
/// (`fi_rma_pingpong -o write` at 64 KiB, 5 interleaved rounds: 13.0 us
/// in halves, 19.2 copied whole by one process, upstream 2.1.0 12.9).
pub const SPLIT_MIN: u64 = 64 * 1024;
/// `FI_OXSHM_DIRECT=0` turns direct RMA off (`direct.rs`); it is on
/// otherwise. (It was opt-in while the data-path stress with it stalled
/// for seconds in about one run in ten: page faults on shared segments
/// waiting for a page lock held by a preempted DAMON scan, gone since the
/// segments are mapped populated, `shm::Segment::map`.)
pub static DIRECT: once_cell::sync::Lazy<bool> =
    once_cell::sync::Lazy::new(|| std::env::var("FI_OXSHM_DIRECT").map_or(true, |v| v != "0"));
/// `FI_OXSHM_SHARE`, read once ([`tune`]).
static SHARE_POLICY: once_cell::sync::Lazy<tune::Policy> =
    once_cell::sync::Lazy::new(tune::Policy::from_env);
/// `FI_OXSHM_SINGLE`, read once ([`Xfer::stream_single`]).
static SINGLE_POLICY: once_cell::sync::Lazy<tune::Policy> =
    once_cell::sync::Lazy::new(|| tune::Policy::from_var("FI_OXSHM_SINGLE"));
/// Most target pieces a grant carries (more: the target copies it all).
const GRANT_PIECES: usize = 64;

// ---------------------------------------------------------------------------
// Operations, as the endpoint posts them
// ---------------------------------------------------------------------------

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OpKind {
    Send {
        tagged: bool,
        tag: u64,
    },
    Write,
    Read,
    Atomic {
        kind: atomics::Kind,
        dt: u32,
        op: u32,
    },
}

/// One transmit operation, validated by the caller (sizes, flags, descs).
pub struct Post<'a> {
    pub dest: fi_addr_t,
    pub kind: OpKind,
    /// Source bytes (send, write, atomic operand) or destination (read).
    pub local: &'a [(u64, u64)],
    /// Fetch and compare atomics: where the original values go.
    pub result: &'a [(u64, u64)],
    /// Compare atomics: the compare operands.
    pub compare: &'a [(u64, u64)],
    /// RMA and atomics: target address and key.
    pub addr: u64,
    pub key: u64,
    /// Remote CQ data.
    pub data: Option<u64>,
    /// Operation flags (defaults merged in).
    pub flags: u64,
    /// An fi_inject* call: no completion at all. (FI_INJECT given as a flag
    /// only frees the buffer at once; the operation still completes.)
    pub silent: bool,
    pub context: *mut c_void,
}

/// One receive buffer.
#[derive(Clone, Copy)]
pub struct RecvPost<'a> {
    pub tagged: bool,
    pub tag: u64,
    pub ignore: u64,
    /// FI_ADDR_UNSPEC or the only source to accept (FI_DIRECTED_RECV).
    pub src: fi_addr_t,
    pub iov: &'a [(u64, u64)],
    pub flags: u64,
    pub context: *mut c_void,
}

/// A small transfer for [`Xfer::post_small`].
pub struct Quick {
    pub dest: fi_addr_t,
    /// An RMA write's target (address, key); None for a send.
    pub write: Option<(u64, u64)>,
    pub tagged: bool,
    pub tag: u64,
    pub data: Option<u64>,
    pub buf: *const c_void,
    pub len: usize,
    pub flags: u64,
    /// An inject call: no completion entry.
    pub silent: bool,
    pub context: *mut c_void,
}

/// An operation waiting for its response.
struct Pending {
    context: *mut c_void,
    /// Completion flags (FI_RMA | FI_WRITE, ...).
    cflags: u64,
    len: u64,
    /// Generate a completion entry on success.
    report: bool,
    /// Counter event index (CNTR_EVENTS).
    cntr: usize,
    /// Where inline response bytes go (read data, fetched values).
    sink: Vec<(u64, u64)>,
    /// A bulk (not inline) operation's local buffers, and whether it is a
    /// read: granted shares and staged pieces are copied from (into) them.
    bulk: Option<(Vec<(u64, u64)>, bool)>,
    peer: Address,
    tag: u64,
    data: u64,
}

thread_local! {
    /// The endpoint (its transport's address) and its application poll
    /// count when this thread last posted a send of [`LONE_MIN`] bytes or
    /// more ([`lone_send`]), or a write or read that may be lone
    /// ([`lone_rma`]). Kept per thread, not in [`Xfer`]: a field there
    /// moved the transport's other fields and cost `fi_rma_pingpong`
    /// 0.03-0.06 us at 8-64 B (7 alternating rounds).
    static LAST_LONG: std::cell::Cell<(usize, u64)> = const { std::cell::Cell::new((0, 0)) };
    /// CQ reads by this thread that returned completions already queued,
    /// without a progress pass (and so without counting an application
    /// poll): a transfer that completed as it was posted (direct RMA) is
    /// read that way, and the application's wait for it is a poll too.
    static QUEUED_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts a CQ read of completions already queued ([`QUEUED_READS`]).
#[inline(always)]
pub fn note_queued_read() {
    QUEUED_READS.with(|c| c.set(c.get().wrapping_add(1)));
}

/// Whether a send of `len` bytes (not an inject) to a peer is *lone* and
/// so goes as one cross-memory copy by the target rather than through the
/// ring: it is long enough ([`LONE_MIN`], at most [`INLINE`]: above that
/// every send is), `cma` (cross-memory copies between the two processes
/// work), nothing this endpoint posted waits for an answer (`inflight`),
/// and the application `polled` for completions since the last send that
/// long. A ping-pong's sends are lone. Of a burst, only the first is: the
/// others keep the ring, where the sender's copy of one overlaps the
/// receiver's copy of the one before.
fn lone_send(len: usize, cma: bool, cheap: bool, inflight: usize, polled: bool) -> bool {
    (LONE_MIN..=INLINE).contains(&len) && cma && cheap && inflight == 0 && polled
}

/// Whether a write or read of `len` bytes, shorter than
/// [`super::direct::DIRECT_MIN`], is *lone* and so goes direct
/// (`direct.rs`) when it can: at least [`super::direct::LONE_DIRECT_MIN`]
/// bytes, nothing this endpoint posted waits for an answer (`inflight`),
/// and the application `polled` for completions since the last such
/// transfer (or long send). An RMA ping-pong's writes are lone; of a
/// stream only the first is, and the others keep the ring. Both this and
/// [`lone_send`] need a `cheap` cross-memory call ([`copy::cma_cheap`]).
fn lone_rma(len: usize, cheap: bool, inflight: usize, polled: bool) -> bool {
    LONE_RMA.contains(&len) && cheap && inflight == 0 && polled
}

/// Sizes of a write or read that goes direct only when lone ([`lone_rma`]).
const LONE_RMA: std::ops::Range<usize> =
    super::direct::LONE_DIRECT_MIN as usize..super::direct::DIRECT_MIN as usize;

/// Splits `pieces` at byte `at`: the pieces before and after.
fn split_at(pieces: &[(u64, u64)], at: u64) -> (Pieces, Pieces) {
    let (mut a, mut b) = (Pieces::default(), Pieces::default());
    let mut off = 0u64;
    for &(p, l) in pieces {
        if off + l <= at {
            a.push((p, l));
        } else if off >= at {
            b.push((p, l));
        } else {
            let k = at - off;
            a.push((p, k));
            b.push((p + k, l - k));
        }
        off += l;
    }
    (a, b)
}

/// Bytes `[off, off + len)` of `pieces`, as pieces: no allocation when
/// they lie in one piece, as a staged piece of a contiguous buffer does.
fn window(pieces: &[(u64, u64)], off: u64, len: u64) -> Iovs {
    let mut at = 0u64;
    for &(p, l) in pieces {
        if off < at + l {
            if off + len <= at + l {
                return Iovs::One([(p + (off - at), len)]);
            }
            break;
        }
        at += l;
    }
    let (_, rest) = split_at(pieces, off);
    Iovs::Many(split_at(&rest, len).0.to_vec())
}

/// A transfer this endpoint receives in staged pieces ([`K_CHUNK`]).
struct Inbound {
    from: Address,
    /// Where the bytes go, in order.
    dest: Pieces,
    /// Copy with a checked copy (registered memory without FI_MR_ALLOCATED).
    checked: bool,
    len: u64,
    got: u64,
    status: Result<()>,
    then: Then,
}

/// What a staged transfer or a shared copy completes.
enum Then {
    /// A remote write (or, shared, a read), verified against `handle`; the
    /// access is active.
    Rma { w: Wire, handle: crate::mr::Handle },
    /// A message for a posted receive.
    Recv { r: Recv, w: Wire },
}

impl Then {
    /// The request.
    fn wire(&self) -> &Wire {
        match self {
            Then::Rma { w, .. } | Then::Recv { w, .. } => w,
        }
    }
}

/// A transfer this endpoint sends in staged pieces.
struct Outbound {
    to: Address,
    /// [`K_CHUNK`] (with the receiver's inbound id) or [`K_RDATA`] (with
    /// the initiator's operation id).
    kind: u32,
    id: u64,
    /// Where the bytes come from, in order.
    src: Pieces,
    len: u64,
    sent: u64,
    /// A staged read at its target: the request (answered after the last
    /// piece) and the verified region; the access is active and the source
    /// is registered memory (checked copies without FI_MR_ALLOCATED).
    read: Option<(Wire, crate::mr::Handle)>,
}

/// What one pass over a staged transfer came to.
enum Pumped {
    /// The receiver's ring is full: more on a later pass.
    Blocked,
    /// Every piece is sent, or the transfer ended in error.
    Done,
}

/// A mapped peer inbox.
struct Peer {
    seg: Segment,
    /// This process may copy to and from the peer's memory.
    cma: bool,
    /// The peer's domain's shared slots, once a direct RMA looked for them
    /// (`direct.rs`; None: none, or not reachable).
    table: std::sync::OnceLock<Option<super::direct::PeerTable>>,
}

/// The objects the endpoint was bound to when it was enabled, resolved
/// once: the bindings do not change from then on, and each bound object
/// outlives the transport (it refuses to close while bound, and the
/// endpoint's close stops the transport before it releases them). Every
/// message looked its CQ, counter and AV up through the bindings before:
/// an `Option` chain and a class check each time.
struct Resolved {
    /// The CQ by direction ([`super::ep::CQ_DIRS`]) and whether it was
    /// bound with FI_SELECTIVE_COMPLETION.
    cq: [Option<(*const Cq, bool)>; 2],
    /// The counter by event ([`super::ep::CNTR_EVENTS`]).
    cntr: [Option<*const Cntr>; 6],
    av: Option<*const super::av::Av>,
}

impl Resolved {
    fn of(ep: &Ep) -> Resolved {
        let Some(en) = ep.enabled() else {
            return Resolved {
                cq: [None; 2],
                cntr: [None; 6],
                av: None,
            };
        };
        let b = &en.bindings;
        let cq = |recv: bool| {
            let c = b.cq[recv as usize].as_ref()?;
            Some((
                c.get::<Cq>()? as *const Cq,
                c.flags & FI_SELECTIVE_COMPLETION != 0,
            ))
        };
        Resolved {
            cq: [cq(false), cq(true)],
            cntr: std::array::from_fn(|i| b.cntr(i).map(|c| c as *const Cntr)),
            av: b.av().map(|a| a as *const super::av::Av),
        }
    }
}

/// An endpoint's transport, from `fi_enable` to `fi_close`.
pub struct Xfer {
    pub addr: Address,
    inbox: Segment,
    ep: *const Ep,
    domain: *const Domain,
    bound: Resolved,
    peers: Lock<PeerMap>,
    /// Peers found gone: operations to them fail at once.
    dead: Mutex<std::collections::HashSet<Address>>,
    pend: Lock<PendTable>,
    rx: Lock<Rx>,
    /// Responses that found the initiator's inbox full, sent first on the
    /// next progress pass.
    deferred: Lock<VecDeque<(Address, Vec<u8>)>>,
    /// Whether `deferred` may hold something (set under its lock when one
    /// is queued, cleared under it when found empty): an empty poll takes
    /// no lock.
    has_deferred: AtomicBool,
    /// As `has_deferred`, for `outbound`.
    has_outbound: AtomicBool,
    /// A drain pass unwound with shares held back: the next one copies
    /// them first.
    stranded: AtomicBool,
    /// As `has_deferred`, for `dead`.
    has_dead: AtomicBool,
    /// The authorization key every operation presents: the endpoint's, or
    /// its domain's (empty: none).
    auth: Vec<u8>,
    /// One drainer of the inbox at a time.
    drain: Lock<()>,
    /// Passes over the inbox that handled a message (written by the
    /// drainer): the peers' segments read it to tell a stream of sends
    /// from an exchange ([`Segment::watch`]).
    handled: Arc<AtomicU64>,
    /// Application calls that drove progress (a count, not a time: reading
    /// the clock on every poll costs more than the poll).
    app_polls: AtomicU64,
    /// Set by an application thread about to sleep: the progress thread
    /// serves the inbox from now on, however recently the application
    /// polled.
    handed_off: AtomicBool,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The progress thread, for `unpark` (its grace period is a park).
    waker: std::sync::OnceLock<std::thread::Thread>,
    /// When the peers were last checked.
    last_check: Mutex<Instant>,
    /// Shared copies whose initiator share is outstanding, by grant id.
    grants: Lock<HashMap<u64, Grant>>,
    /// A stream's shared copies whose own share waits to be copied with the
    /// next ones from the same initiator, in one system call, by the end of
    /// the drain pass that queued them ([`Xfer::flush_held`]).
    held: Lock<Vec<Held>>,
    /// Grants of a stream whose share this process copies with the next
    /// ones from the same target, by the end of the drain pass that
    /// received them ([`Xfer::flush_held_grants`]).
    held_grants: Lock<Vec<HeldGrant>>,
    /// Grant and inbound ids.
    next_grant: AtomicU64,
    /// Whether shared copies pay on this machine ([`tune`]).
    tuner: Lock<tune::Tuner>,
    /// Whether a stream's sends of [`LONE_MIN`] to [`INLINE`] bytes go
    /// faster as one cross-memory copy by the target than through the
    /// ring ([`Xfer::stream_single`]).
    single: Lock<tune::Chooser>,
    /// As `single`, for writes that do not go direct (with remote CQ
    /// data): [`Xfer::stream_single`].
    single_write: Lock<tune::Chooser>,
    /// When the last RMA transfer from [`super::direct::SPLIT_FROM`] was
    /// posted or copied (ns): a stream of them goes direct.
    last_big: AtomicU64,
    /// Staged transfers into this endpoint, by id.
    inbound: Lock<HashMap<u64, Inbound>>,
    /// Staged transfers out of this endpoint, in the order they began.
    outbound: Lock<Vec<Outbound>>,
    /// A stream's direct transfers waiting to be copied together
    /// (`batch.rs`).
    batch: Lock<batch::Batch>,
    /// Whether `batch` may hold something (set and cleared under its
    /// lock): a poll with nothing queued takes no lock.
    has_batch: AtomicBool,
    /// Operations posted and not completed (for tx_size_left).
    pub inflight: AtomicUsize,
    /// Buffered receives (rx_size_left).
    pub posted_recvs: AtomicUsize,
}

// SAFETY: the raw pointers are to the endpoint and domain, which outlive
// the transport (the endpoint stops and drops it before it is freed, and
// holds its domain); contexts in the queues are opaque application values.
unsafe impl Send for Xfer {}
// SAFETY: as above; all mutable state is behind locks or atomics.
unsafe impl Sync for Xfer {}

/// Serializes atomics executed by this process.
static ATOMIC_LOCK: Mutex<()> = Mutex::new(());

/// What [`lock`] takes: the endpoint's per-message state is behind
/// [`Lock`]s, its rarely used parts behind `std::sync::Mutex`es.
trait Locks {
    type Guard<'a>
    where
        Self: 'a;
    fn take(&self) -> Self::Guard<'_>;
}

impl<T> Locks for Mutex<T> {
    type Guard<'a>
        = MutexGuard<'a, T>
    where
        T: 'a;
    fn take(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T> Locks for Lock<T> {
    type Guard<'a>
        = LockGuard<'a, T>
    where
        T: 'a;
    #[inline(always)]
    fn take(&self) -> LockGuard<'_, T> {
        self.lock()
    }
}

#[inline(always)]
fn lock<L: Locks>(m: &L) -> L::Guard<'_> {
    m.take()
}

/// How a message that starts with `head` (its wire header) concerns a
/// receiver asleep on its wait fd: a response only completes the
/// receiver's own operation.
fn urgency(head: &[u8]) -> Urgency {
    match head
        .get(..4)
        .map(|k| u32::from_ne_bytes([k[0], k[1], k[2], k[3]]))
    {
        Some(K_RESP) => Urgency::Reply,
        _ => Urgency::Request,
    }
}

/// Completion flags of an operation.
fn cflags(k: &OpKind) -> u64 {
    match k {
        OpKind::Send { tagged: false, .. } => FI_MSG | FI_SEND,
        OpKind::Send { tagged: true, .. } => FI_TAGGED | FI_SEND,
        OpKind::Write => FI_RMA | FI_WRITE,
        OpKind::Read => FI_RMA | FI_READ,
        OpKind::Atomic {
            kind: atomics::Kind::Base,
            ..
        } => FI_ATOMIC | FI_WRITE,
        OpKind::Atomic { .. } => FI_ATOMIC | FI_READ,
    }
}

/// Counter event indices (ep.rs CNTR_EVENTS order).
const C_SEND: usize = 0;
const C_RECV: usize = 1;
const C_READ: usize = 2;
const C_WRITE: usize = 3;
const C_REMOTE_READ: usize = 4;
const C_REMOTE_WRITE: usize = 5;

impl Xfer {
    /// A message of `kind` from this endpoint.
    fn wire(&self, kind: u32) -> Wire {
        Wire {
            kind,
            src_pid: self.addr.pid,
            src_ep: self.addr.ep_id,
            src_nonce: self.addr.nonce,
            ..Default::default()
        }
    }

    /// The memfd initiators may check bulk RMA against, when they may copy
    /// it directly to and from this endpoint (`direct.rs`): its domain
    /// shares its slots, and nothing at this endpoint counts accepted
    /// accesses (a remote counter), which a direct copy would not tell it.
    fn direct_table(ep: &Ep) -> Option<i32> {
        let d = ep.domain();
        let t = d.table.as_ref().filter(|t| t.shared())?;
        let b = &ep.enabled()?.bindings;
        let counted = b.cntr(C_REMOTE_WRITE).is_some() || b.cntr(C_REMOTE_READ).is_some();
        let checked = d.pins.as_ref().is_some_and(|p| p.checks_frames());
        (!counted && !checked).then(|| t.fd())
    }

    /// Sets up the transport of an endpoint being enabled: its inbox and
    /// its progress thread.
    pub fn start(ep: &Ep, addr: Address) -> Result<Arc<Xfer>> {
        shm::reap();
        allow_peers_cma();
        let inbox = Segment::create(&addr, Self::direct_table(ep))?;
        let serial = ep.domain().serial.as_ref();
        let x = Arc::new(Xfer {
            addr,
            inbox,
            ep,
            domain: ep.domain(),
            bound: Resolved::of(ep),
            peers: Lock::serialized(PeerMap::default(), serial),
            dead: Mutex::new(Default::default()),
            pend: Lock::serialized(PendTable::default(), serial),
            rx: Lock::serialized(Rx::default(), serial),
            deferred: Lock::serialized(VecDeque::new(), serial),
            auth: ep
                .auth_key
                .clone()
                .or_else(|| ep.domain().auth_key.clone())
                .unwrap_or_default(),
            drain: Lock::serialized((), serial),
            handled: Arc::new(AtomicU64::new(0)),
            app_polls: AtomicU64::new(0),
            handed_off: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            waker: std::sync::OnceLock::new(),
            last_check: Mutex::new(Instant::now()),
            grants: Lock::serialized(HashMap::new(), serial),
            held: Lock::serialized(Vec::new(), serial),
            held_grants: Lock::serialized(Vec::new(), serial),
            next_grant: AtomicU64::new(1),
            tuner: Lock::serialized(tune::Tuner::new(*SHARE_POLICY), serial),
            single: Lock::serialized(tune::Chooser::new(*SINGLE_POLICY), serial),
            single_write: Lock::serialized(tune::Chooser::new(*SINGLE_POLICY), serial),
            last_big: AtomicU64::new(0),
            inbound: Lock::serialized(HashMap::new(), serial),
            outbound: Lock::serialized(Vec::new(), serial),
            has_deferred: AtomicBool::new(false),
            has_outbound: AtomicBool::new(false),
            stranded: AtomicBool::new(false),
            has_dead: AtomicBool::new(false),
            batch: Lock::serialized(batch::Batch::default(), serial),
            has_batch: AtomicBool::new(false),
            inflight: AtomicUsize::new(0),
            posted_recvs: AtomicUsize::new(0),
        });
        let t = Arc::clone(&x);
        let h = std::thread::Builder::new()
            .name("oxshm-progress".into())
            .spawn(move || t.run())
            .map_err(|e| {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::NAME,
                    "cannot start the progress thread: {e}"
                );
                Error::NOMEM
            })?;
        let _ = x.waker.set(h.thread().clone());
        *lock(&x.thread) = Some(h);
        ep.domain().add_xfer(&x);
        Ok(x)
    }

    /// Stops the progress thread and removes the inbox (endpoint close).
    pub fn stop(self: &Arc<Xfer>) {
        // What the batch holds was accepted: copied (or requested) now.
        self.flush_batch();
        self.domain().remove_xfer(self);
        self.stop.store(true, Ordering::Release);
        self.inbox.ring();
        self.wake_thread();
        if let Some(h) = lock(&self.thread).take() {
            let _ = h.join();
        }
        self.inbox.close();
        self.drop_grants(None);
        self.drop_staged(None);
        shm::reap();
    }

    fn ep(&self) -> &Ep {
        // SAFETY: the endpoint outlives its transport.
        unsafe { &*self.ep }
    }

    fn domain(&self) -> &Domain {
        // SAFETY: the endpoint holds its domain.
        unsafe { &*self.domain }
    }

    /// Whether the application drove progress since the last look.
    fn app_active(&self, seen: &mut u64) -> bool {
        let n = self.app_polls.load(Ordering::Relaxed);
        let active = n != *seen;
        *seen = n;
        active
    }

    /// Ends the progress thread's grace period (or its next one) early.
    fn wake_thread(&self) {
        if let Some(t) = self.waker.get() {
            t.unpark();
        }
    }

    /// An application thread is about to sleep until a completion, a
    /// counter change or its wait fd wakes it: the progress thread must
    /// serve the inbox meanwhile, even if the application polled a moment
    /// ago. Costs a system call only when the thread is in its grace
    /// period.
    pub fn hand_off(&self) {
        self.handed_off.store(true, Ordering::SeqCst);
        self.wake_thread();
    }

    fn run(self: Arc<Xfer>) {
        let mut seen = 0;
        // Held while the thread is busy, dropped before it parks or sleeps:
        // in a domain the application serializes, the thread is an
        // outsider ([`super::lock::Serial`]) and must announce itself
        // before it takes any lock.
        let serial = self.domain().serial.as_deref();
        let mut out = None;
        fn busy<'a>(s: Option<&'a Serial>, out: &mut Option<Excluded<'a>>) {
            if out.is_none() {
                *out = s.map(Serial::exclude);
            }
        }
        while !self.stop.load(Ordering::Acquire) {
            if self.peer_check_due() {
                busy(serial, &mut out);
                self.check_peers();
            }
            // While the application polls, the inbox is its to drain: the
            // thread stays off the CPUs and only steps in when the polling
            // stops for APP_POLL_GRACE, or when the application hands the
            // inbox back before it sleeps.
            let handed = self.handed_off.swap(false, Ordering::SeqCst);
            if handed {
                seen = self.app_polls.load(Ordering::Relaxed);
            } else if self.app_active(&mut seen) {
                // Messages may well be pending: the application is
                // draining them.
                out = None;
                std::thread::park_timeout(APP_POLL_GRACE);
                continue;
            }
            busy(serial, &mut out);
            match self.drain_once(false) {
                Some(0) => {}
                Some(_) => continue,
                // An application thread is draining (a long copy keeps
                // it from counting polls meanwhile): the inbox is in hand,
                // and spinning here would only take a CPU from it. If it
                // hands off meanwhile, the flag brings us back at once.
                None => {
                    if handed {
                        self.handed_off.store(true, Ordering::SeqCst);
                    }
                    out = None;
                    std::thread::park_timeout(APP_POLL_GRACE);
                    continue;
                }
            }
            // A short spin (some microseconds) catches the next message of
            // a stream.
            for _ in 0..SPIN {
                if self.inbox.pending() {
                    break;
                }
                std::hint::spin_loop();
            }
            if self.inbox.pending() {
                continue;
            }
            // Staged pieces wait for room in a peer's ring, which its
            // owner frees without telling us: look again shortly.
            if !lock(&self.outbound).is_empty() {
                out = None;
                std::thread::sleep(Duration::from_micros(20));
                continue;
            }
            let pending = lock(&self.pend).live > 0 || !lock(&self.deferred).is_empty();
            let t = if pending {
                PEER_CHECK
            } else {
                Duration::from_millis(200)
            };
            out = None;
            self.inbox.sleep(t);
        }
    }

    /// Progress driven by an application call (CQ or counter read);
    /// `polling` for calls that return at once (the application will call
    /// again), not for one about to block.
    pub fn progress_app(&self, polling: bool) {
        if polling {
            let n = self.app_polls.load(Ordering::Relaxed).wrapping_add(1);
            self.app_polls.store(n, Ordering::Relaxed);
            // Peers are checked from here too, so that a starved progress
            // thread cannot delay the failure of their operations.
            if n % 4096 == 0 {
                self.maybe_check_peers();
            }
        }
        self.progress_once(true);
        if !polling {
            self.hand_off();
        }
    }

    /// [`lone_send`] for a send of `len` bytes posted now to a peer that
    /// `cma` says is reachable by cross-memory copies. A send of
    /// [`LONE_MIN`] bytes or more notes the application's poll count.
    fn is_lone(&self, len: usize, cma: bool) -> bool {
        if !(LONE_MIN..=INLINE).contains(&len) {
            return false;
        }
        lone_send(
            len,
            cma,
            copy::cma_cheap(),
            self.inflight.load(Ordering::Acquire),
            self.polled_since(true),
        )
    }

    /// Whether a send of `len` bytes of a stream (not lone) to a peer that
    /// `cma` says is reachable by cross-memory copies goes as one copy by
    /// the target, as a lone send does, rather than through the ring: from
    /// [`LONE_MIN`] to [`INLINE`] bytes, as the endpoint's measurements
    /// say (`FI_OXSHM_SINGLE`: `1` always, `0` never). The ring's two
    /// copies move every line of the message between the two CPUs' caches;
    /// one copy by the target reads a send buffer that a benchmark reuses
    /// from its own cache. On the Intel host of 2026-12-06,
    /// `fi_rdm_bw -S 16384` ran at 18.7 GB/s through the ring against
    /// upstream's 17.0 (one copy by the target) on the host's fast level,
    /// and at 11.1 against 15.3 one copy (upstream 15.6) on its slow
    /// level: which is faster depends on the machine's state, so the
    /// endpoint measures ([`tune::Chooser`]). Counts the send.
    ///
    /// A `write` that does not go direct (`fi_writedata`: the target must
    /// see it) is measured apart, on the endpoint's writes
    /// (`fi_rma_bw -o writedata -S 16384` read 0.92x of upstream 2.1.0
    /// through the ring on the host's slow level, 1.05-1.09x on its fast
    /// one).
    fn stream_single(&self, write: bool, len: usize, cma: bool) -> bool {
        let chooser = if write {
            &self.single_write
        } else {
            &self.single
        };
        cma && (LONE_MIN..=INLINE).contains(&len)
            && lock(chooser).second(len as u64, tune::now_ns())
    }

    /// [`Xfer::is_lone`] without noting anything, for the short path to
    /// leave such a send to [`Xfer::post`]. The poll mark (two
    /// thread-local reads, each a call in a shared library) is read only
    /// where it decides: the other conditions hold.
    fn may_be_lone(&self, len: usize, cma: bool) -> bool {
        lone_send(
            len,
            cma,
            copy::cma_cheap(),
            self.inflight.load(Ordering::Acquire),
            true,
        ) && self.polled_since(false)
    }

    /// [`lone_rma`] for a write or read of `len` bytes posted now; one
    /// that may be lone notes the application's poll count.
    fn is_lone_rma(&self, len: usize) -> bool {
        self.lone_rma_now(len, true)
    }

    /// [`Xfer::is_lone_rma`] without noting anything, for the short path
    /// to leave such a write to [`Xfer::post`].
    #[inline]
    fn may_be_lone_rma(&self, len: usize) -> bool {
        self.lone_rma_now(len, false)
    }

    /// [`lone_rma`] now, the size first (the short path asks for every
    /// injected write). With `note`, a transfer of a lone size becomes the
    /// last ([`Xfer::polled_since`]) whatever the verdict. Without, the poll
    /// mark is read only where it decides, as in [`Xfer::may_be_lone`] (an
    /// injected write of 4 KiB spent 22 instructions in `__tls_get_addr`
    /// on it).
    #[inline]
    fn lone_rma_now(&self, len: usize, note: bool) -> bool {
        if !LONE_RMA.contains(&len) {
            return false;
        }
        let others = lone_rma(
            len,
            copy::cma_cheap(),
            self.inflight.load(Ordering::Acquire),
            true,
        );
        if note {
            self.polled_since(true) && others
        } else {
            others && self.polled_since(false)
        }
    }

    /// Whether the application polled this endpoint's completions (or this
    /// thread read completions already queued) since this thread last
    /// posted a long transfer to it ([`LAST_LONG`]); with `note`, this
    /// transfer becomes the last.
    #[inline]
    fn polled_since(&self, note: bool) -> bool {
        let now = (
            self as *const Xfer as usize,
            self.app_polls
                .load(Ordering::Relaxed)
                .wrapping_add(QUEUED_READS.with(|c| c.get())),
        );
        LAST_LONG.with(|c| if note { c.replace(now) } else { c.get() }) != now
    }

    /// The inbox's wake-up socket and its key, for the wait fds of the
    /// domain's CQs and counters to watch.
    pub fn wake_fd(&self) -> Option<(libc::c_int, u64)> {
        self.inbox.wake_fd()
    }

    /// fi_trywait: the application is about to sleep on a wait fd that
    /// watches [`Xfer::wake_fd`]. Arms the socket, so that the next
    /// request's sender (with `replies`, the next response's too) wakes
    /// the application itself; false when a message is pending already
    /// (the caller must not sleep). Without a socket, hands the inbox to
    /// the progress thread instead.
    pub fn prepare_fd_wait(&self, replies: bool) -> bool {
        if self.inbox.wake_fd().is_none() {
            self.hand_off();
            return true;
        }
        self.inbox.arm(replies)
    }

    /// Whether `cq` is the endpoint's transmit CQ (the one that responses
    /// to its operations complete into).
    pub fn reports_tx_to(&self, cq: &Cq) -> bool {
        self.cq(false).is_some_and(|(c, _)| std::ptr::eq(c, cq))
    }

    /// Drains the inbox (if no other thread is at it); returns the messages
    /// handled.
    #[inline(always)]
    pub fn progress_once(&self, app: bool) -> usize {
        self.drain_once(app).unwrap_or(0)
    }

    /// As [`Xfer::progress_once`]; `None` when another thread is draining.
    #[inline(always)]
    fn drain_once(&self, app: bool) -> Option<usize> {
        // A stream's queued direct transfers first, before their
        // completions are looked for (`batch.rs`).
        self.flush_batch();
        // An empty inbox with nothing queued to send: no lock taken.
        if self.inbox.idle()
            && !self.has_deferred.load(Ordering::Acquire)
            && !self.has_outbound.load(Ordering::Acquire)
            && !self.stranded.load(Ordering::Relaxed)
        {
            return Some(0);
        }
        let Ok(_g) = self.drain.try_lock() else {
            return None;
        };
        Some(self.drain_locked(app))
    }

    /// Handles the messages already in the inbox, waiting for a thread
    /// that is draining it to finish first: what was sent to this
    /// endpoint before the call has been seen when it returns (at most
    /// 16 passes, so that a steady stream cannot hold the caller).
    fn drain_all(&self) {
        let _g = lock(&self.drain);
        self.drain_passes();
    }

    /// Up to 16 passes over the inbox, by the holder of the drain lock.
    fn drain_passes(&self) {
        for _ in 0..16 {
            if self.drain_locked(true) < APP_DRAIN {
                break;
            }
        }
    }

    /// One pass over the inbox by the holder of the drain lock. Inlined
    /// into its two callers, as [`Xfer::drain_once`] is into the
    /// application's progress: the calls' frames took about 30
    /// instructions a read.
    #[inline(always)]
    fn drain_locked(&self, app: bool) -> usize {
        self.flush_deferred();
        self.pump();
        // What a pass that panicked held back.
        if self.stranded.load(Ordering::Relaxed) {
            self.stranded.store(false, Ordering::Relaxed);
            self.flush_held();
            self.flush_held_grants();
        }
        let mut n = 0;
        let max = if app { APP_DRAIN } else { 1024 };
        let held = {
            // Cleared however the pass ends (a panic caught at the ABI
            // boundary included), so that nothing is held back outside one.
            let pass = Draining::enter(&self.stranded);
            while n < max && self.inbox.recv(|pid, m| self.handle(pid, m)) {
                n += 1;
            }
            pass.held()
        };
        if held {
            self.flush_held();
            self.flush_held_grants();
        }
        if n > 0 {
            // Under the drain lock: one writer.
            let h = self.handled.load(Ordering::Relaxed);
            self.handled.store(h.wrapping_add(1), Ordering::Relaxed);
        }
        n
    }

    // ------------------------------------------------------------- peers --

    fn peer(&self, a: &Address) -> Result<Arc<Peer>> {
        if let Some(p) = lock(&self.peers).get(a) {
            return Ok(Arc::clone(p));
        }
        if self.is_dead(a) {
            return Err(Error::HOSTUNREACH);
        }
        let mut seg = Segment::open(a).map_err(|e| {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "peer {a} is not reachable ({e}): is its endpoint enabled?"
            );
            Error::HOSTUNREACH
        })?;
        seg.watch(Arc::clone(&self.handled));
        let cma = seg.cma_permitted();
        if !cma {
            crate::ox_log!(
                Info,
                EpData,
                super::NAME,
                "cross-memory attach to peer {a} is not permitted: bulk copies to and from it go through shared memory"
            );
        }
        let p = Arc::new(Peer {
            seg,
            cma,
            table: std::sync::OnceLock::new(),
        });
        lock(&self.peers).insert(*a, Arc::clone(&p));
        Ok(p)
    }

    /// Whether this process may copy to and from peer `a`'s memory
    /// ([`Peer::cma`]): answered from the peers met before without
    /// taking a count of the peer.
    fn peer_cma(&self, a: &Address) -> Result<bool> {
        if let Some(p) = lock(&self.peers).get_cached(a) {
            return Ok(p.cma);
        }
        self.peer(a).map(|p| p.cma)
    }

    /// Whether `a` was found gone.
    fn is_dead(&self, a: &Address) -> bool {
        self.has_dead.load(Ordering::Acquire) && lock(&self.dead).contains(a)
    }

    /// Queues a staged transfer for [`Xfer::pump`].
    fn push_outbound(&self, o: Outbound) {
        lock(&self.outbound).push(o);
        self.has_outbound.store(true, Ordering::Release);
    }

    /// Runs [`Xfer::check_peers`] if no thread did for [`PEER_CHECK`].
    pub fn maybe_check_peers(&self) {
        if self.peer_check_due() {
            self.check_peers();
        }
    }

    /// Whether the peers are due a check ([`PEER_CHECK`]); if so, the
    /// caller checks them (the time is taken as the check's).
    fn peer_check_due(&self) -> bool {
        let Ok(mut last) = self.last_check.try_lock() else {
            return false;
        };
        if last.elapsed() < PEER_CHECK {
            return false;
        }
        *last = Instant::now();
        drop(last);
        fault::check();
        true
    }

    /// Fails the operations owed by peers that died or closed.
    fn check_peers(&self) {
        let gone: Vec<(Address, Arc<Peer>)> = lock(&self.peers)
            .iter()
            .filter(|(_, p)| p.seg.owner_gone())
            .map(|(a, p)| (*a, Arc::clone(p)))
            .collect();
        if !gone.is_empty() {
            // What a peer answered before it closed is already in this
            // inbox (it wrote there, then marked itself gone): handle it
            // first, so that only operations it never answered fail. Not
            // when another thread holds the inbox (or this one does, from a
            // region's close waiting in quiesce): then what is pending fails
            // at once, as it did before.
            if let Ok(_g) = self.drain.try_lock() {
                self.drain_passes();
            }
        }
        for (a, p) in gone {
            let died = !shm::alive(a.pid, p.seg.hdr().start_time.load(Ordering::Relaxed));
            lock(&self.peers).remove(&a);
            lock(&self.dead).insert(a);
            self.has_dead.store(true, Ordering::Release);
            lock(&self.deferred).retain(|(to, _)| *to != a);
            self.drop_grants(Some(&a));
            // The operations are taken before their staged pieces are
            // dropped and completed after: a grant that arrives meanwhile
            // finds its operation gone, and no piece is read from a buffer
            // the application has got back.
            let ops: Vec<Pending> = {
                let mut pend = lock(&self.pend);
                let ids = pend.ids_for(&a);
                ids.into_iter().filter_map(|id| pend.take(id)).collect()
            };
            self.drop_staged(Some(&a));
            if !ops.is_empty() || died {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::NAME,
                    "peer {a} {}: {} pending operation(s) fail with FI_EIO",
                    if died { "died" } else { "closed its endpoint" },
                    ops.len()
                );
            }
            for op in ops {
                self.complete(op, Err(Error::IO));
            }
            if died {
                shm::reap_peer(&a);
            }
        }
    }

    /// The address an AV handle names. Inlined: its `Result` otherwise
    /// comes back through memory and is loaded wider than it was stored.
    #[inline(always)]
    fn resolve(&self, dest: fi_addr_t) -> Result<Address> {
        let av = self.av().ok_or(Error::NOAV)?;
        match av.addr_of(dest) {
            Some(a) => Ok(a),
            None => {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::NAME,
                    "fi_addr 0x{dest:x} is not in the endpoint's AV"
                );
                Err(Error::INVAL)
            }
        }
    }

    /// A completion's source (fi_cq_readfrom(3)): the AV handle of `a` in
    /// the endpoint's AV, FI_ADDR_NOTAVAIL if absent or if the endpoint
    /// was opened without FI_SOURCE (fi_cq(3): source addresses are only
    /// available to endpoints with it; the lookup is not made).
    #[inline(always)]
    fn source(&self, a: &Address) -> fi_addr_t {
        if self.ep().caps & FI_SOURCE == 0 {
            return FI_ADDR_NOTAVAIL;
        }
        self.source_lookup(a)
    }

    #[inline(never)]
    fn source_lookup(&self, a: &Address) -> fi_addr_t {
        self.av()
            .and_then(|av| av.find(a))
            .unwrap_or(FI_ADDR_NOTAVAIL)
    }

    /// The AV the endpoint was enabled with ([`Resolved`]).
    #[inline(always)]
    fn av(&self) -> Option<&super::av::Av> {
        // SAFETY: a bound object outlives the transport ([`Resolved`]).
        self.bound.av.map(|a| unsafe { &*a })
    }

    // ------------------------------------------------------- completions --

    #[inline(always)]
    fn cq(&self, recv: bool) -> Option<(&Cq, bool)> {
        // SAFETY: as in `av`.
        self.bound.cq[recv as usize].map(|(c, selective)| (unsafe { &*c }, selective))
    }

    #[inline(always)]
    fn cntr(&self, i: usize) -> Option<&Cntr> {
        // SAFETY: as in `av`.
        self.bound
            .cntr
            .get(i)
            .copied()
            .flatten()
            .map(|c| unsafe { &*c })
    }

    /// Reports a finished transmit operation.
    fn complete(&self, op: Pending, r: Result<()>) {
        self.inflight.fetch_sub(1, Ordering::AcqRel);
        self.completed(op, r)
    }

    /// Reports `op`'s completion (CQ entry, counter), in flight or not.
    fn completed(&self, op: Pending, r: Result<()>) {
        match r {
            Ok(()) => {
                if let Some(c) = self.cntr(op.cntr) {
                    c.count(op.len);
                }
                if op.report {
                    if let Some((cq, _)) = self.cq(false) {
                        let _ = cq.push(Completion {
                            context: op.context,
                            flags: op.cflags,
                            len: op.len as usize,
                            ..Default::default()
                        });
                    }
                }
            }
            Err(e) => {
                if let Some(c) = self.cntr(op.cntr) {
                    c.inc_err(1);
                }
                if let Some((cq, _)) = self.cq(false) {
                    let _ = cq.push_err(ErrCompletion {
                        context: op.context,
                        flags: op.cflags,
                        len: 0,
                        buf: std::ptr::null_mut(),
                        data: op.data,
                        tag: op.tag,
                        olen: 0,
                        err: e.0,
                        prov_errno: e.0,
                        ..ErrCompletion::default()
                    });
                }
            }
        }
    }

    // ---------------------------------------------------------- responses --
    // (What arrives as the target is in inbox.rs; grants and staged
    // pieces in staging.rs.)

    /// Initiator: the target's answer to one of this endpoint's operations.
    fn on_response(&self, w: &Wire, body: &[u8]) {
        let Some(op) = lock(&self.pend).take(w.op) else {
            return;
        };
        let r = if w.status == 0 {
            if !op.sink.is_empty() && !body.is_empty() {
                // SAFETY: the sink iovs are the application's result or
                // read buffers, writable until this completion.
                unsafe { scatter(body, &op.sink) };
            }
            Ok(())
        } else {
            Err(Error::from_code(w.status))
        };
        self.complete(op, r);
    }
}

/// A remote access in progress in a domain: region closes wait for it.
pub struct Active<'a>(&'a Domain);

impl<'a> Active<'a> {
    fn enter(d: &'a Domain) -> Active<'a> {
        d.active.fetch_add(1, Ordering::SeqCst);
        Active(d)
    }
}

impl Active<'_> {
    /// Keeps the access active past this guard (a shared copy); ended by
    /// [`Active::release`].
    fn keep(self) {
        std::mem::forget(self);
    }

    fn release(d: &Domain) {
        d.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}
