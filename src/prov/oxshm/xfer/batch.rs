//! A stream's direct RMA, copied in batches. A direct write or read
//! (`direct.rs`) costs one cross-memory call, and where such a call is
//! dear its fixed part dominates up to tens of KiB: on the AMD EPYC VM of
//! 2026-12-06, `process_vm_writev` into another process took 3.6 us for
//! one 8 KiB buffer and 1.7 us a buffer for 64 of them in one call, 4.8
//! against 2.7 us at 16 KiB, 12.1 against 7.6 at 64 KiB (3 runs; 1.3-2.1x
//! from 8 KiB to 64 KiB).
//!
//! So of a stream (a write or read posted with no poll of the
//! application's since the last long transfer, [`Xfer::polled_since`]),
//! a direct transfer from [`super::super::direct::DIRECT_MIN`] up to
//! [`super::super::direct::SPLIT_FROM`] is queued, not copied; the first
//! after a poll still goes at once (a ping-pong's). The queue is copied,
//! checked against the target's registrations under one announcement
//! (`PeerTable::access_all`) and moved with one call per run of
//! transfers to one peer in one direction:
//! - when the application next drives progress (a CQ or counter read, a
//!   wait), before it can look for their completions;
//! - before the endpoint posts anything else, so nothing posted later
//!   overtakes them;
//! - when it holds [`BATCH_OPS`] transfers or [`BATCH_BYTES`] bytes;
//! - by the progress thread, once the application stops calling in
//!   (FI_PROGRESS_AUTO), and at the endpoint's close.
//!
//! A transfer the check leaves to the target (a refusal included), or
//! whose bytes the call did not move, goes to the target as a request
//! then, exactly as an unbatched one would: the target verifies, refuses,
//! counts and logs. Injected and inline transfers (FI_INJECT: the buffer
//! is the application's again on return) are never queued.
//! `FI_OXSHM_BATCH=0` copies every direct transfer at once.

use super::*;

/// Most transfers a batch holds before it is copied (fabtests' window).
pub(super) const BATCH_OPS: usize = 64;
/// Most bytes a batch holds before it is copied.
pub(super) const BATCH_BYTES: u64 = 4 << 20;

/// `FI_OXSHM_BATCH=0` turns batching off; it is on otherwise.
pub(super) static BATCH: once_cell::sync::Lazy<bool> =
    once_cell::sync::Lazy::new(|| std::env::var("FI_OXSHM_BATCH").map_or(true, |v| v != "0"));

/// One queued direct transfer.
pub(super) struct Batched {
    pub peer: Arc<Peer>,
    /// The destination as the application named it (for the request path).
    pub dest: fi_addr_t,
    pub read: bool,
    pub key: u64,
    pub addr: u64,
    pub len: u64,
    pub local: Vec<(u64, u64)>,
    pub flags: u64,
    /// Its completion.
    pub op: Pending,
}

/// The queue of an endpoint.
#[derive(Default)]
pub(super) struct Batch {
    ops: Vec<Batched>,
    bytes: u64,
}

impl Xfer {
    /// Queues `b` (counted in flight until it completes); copies the
    /// batch when it is full.
    pub(super) fn batch_push(&self, b: Batched) {
        self.inflight.fetch_add(1, Ordering::AcqRel);
        let full = {
            let mut q = lock(&self.batch);
            q.bytes += b.len;
            q.ops.push(b);
            self.has_batch.store(true, Ordering::Release);
            q.ops.len() >= BATCH_OPS || q.bytes >= BATCH_BYTES
        };
        if full {
            self.flush_batch();
        }
    }

    /// Copies what is queued, completing each transfer or handing it to
    /// the request path. True when the queue is empty after (false: a
    /// request found the target's ring full, and it and those after it
    /// wait for the next flush).
    #[inline]
    pub(super) fn flush_batch(&self) -> bool {
        // Every poll asks: no call when nothing is queued.
        !self.has_batch.load(Ordering::Acquire) || self.flush_queued()
    }

    #[cold]
    #[inline(never)]
    fn flush_queued(&self) -> bool {
        let ops = {
            let mut q = lock(&self.batch);
            q.bytes = 0;
            std::mem::take(&mut q.ops)
        };
        // A flush inside this one (the request path drives progress when
        // a ring is full) finds the queue empty, or holding only what was
        // posted since.
        let mut ops = ops.into_iter().peekable();
        let mut left = Vec::new();
        let mut group = Vec::new();
        while let Some(first) = ops.next() {
            // A run to one peer in one direction, within the call's limits.
            let mut iovs = first.local.len();
            group.push(first);
            while let Some(b) = ops.peek() {
                let g = &group[0];
                if !Arc::ptr_eq(&b.peer, &g.peer)
                    || b.read != g.read
                    || iovs + b.local.len() > copy::BATCH_IOVECS
                    || group.len() >= copy::BATCH_IOVECS
                {
                    break;
                }
                iovs += b.local.len();
                group.extend(ops.next());
            }
            if !left.is_empty() {
                // Behind one that waits: waits too, uncopied, in order.
                left.append(&mut group);
                continue;
            }
            let done = self.copy_run(&group);
            for (b, ok) in group.drain(..).zip(done) {
                if !left.is_empty() {
                    // Copied or not, it completes after the one that
                    // waits (a write copied twice writes the same bytes).
                    left.push(b);
                } else if ok {
                    self.complete(b.op, Ok(()));
                } else if let Some(b) = self.batch_request(b) {
                    left.push(b);
                }
            }
        }
        let mut q = lock(&self.batch);
        if !left.is_empty() {
            q.bytes += left.iter().map(|b| b.len).sum::<u64>();
            q.ops.splice(0..0, left);
        }
        let empty = q.ops.is_empty();
        self.has_batch.store(!empty, Ordering::Release);
        empty
    }

    /// Checks and copies a run of queued transfers to one peer in one
    /// direction with one call; whether each was done.
    fn copy_run(&self, run: &[Batched]) -> Vec<bool> {
        let mut done = vec![false; run.len()];
        let peer = &run[0].peer;
        if peer.seg.owner_closed() || self.is_dead(&run[0].op.peer) {
            return done;
        }
        let Some(Some(table)) = peer.table.get() else {
            return done;
        };
        let want = if run[0].read {
            Access::REMOTE_READ
        } else {
            Access::REMOTE_WRITE
        };
        let reqs = run.iter().map(|b| (b.key, b.addr, b.len, want));
        let _ = table.access_all(reqs, |at| {
            let items: Vec<_> = run
                .iter()
                .zip(at)
                .filter_map(|(b, at)| at.map(|at| (&b.local[..], at, b.len)))
                .collect();
            if items.is_empty() {
                return;
            }
            let n = direct_copy_all(table.pid(), &items, run[0].read);
            // In order: an allowed transfer is done when all its bytes lie
            // within the n moved.
            let mut end = 0;
            for ((d, at), b) in done.iter_mut().zip(at).zip(run) {
                if at.is_some() {
                    end += b.len;
                    *d = end <= n;
                }
            }
        });
        done
    }

    /// Hands a queued transfer that was not done direct to the request
    /// path, as an unbatched one would have gone; `Some(b)` back when the
    /// target's ring is full (it waits for the next flush).
    fn batch_request(&self, b: Batched) -> Option<Batched> {
        self.inflight.fetch_sub(1, Ordering::AcqRel);
        let p = Post {
            dest: b.dest,
            kind: if b.read { OpKind::Read } else { OpKind::Write },
            local: &b.local,
            result: &[],
            compare: &[],
            addr: b.addr,
            key: b.key,
            data: None,
            flags: b.flags,
            silent: false,
            context: b.op.context,
        };
        match self.post_request(&p) {
            Ok(()) => None,
            Err(Error::AGAIN) => {
                self.inflight.fetch_add(1, Ordering::AcqRel);
                Some(b)
            }
            Err(e) => {
                // Posted and accepted once: it completes, with the error.
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "a queued direct {} of {} bytes could not go to the target: {e}",
                    if b.read { "read" } else { "write" },
                    b.len
                );
                self.inflight.fetch_add(1, Ordering::AcqRel);
                self.complete(b.op, Err(e));
                None
            }
        }
    }
}
