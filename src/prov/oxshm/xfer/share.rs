//! Shared copies: a target that verified an access, or matched a bulk
//! message to a posted receive, copies one half of it and grants the
//! initiator the other half to copy itself, so that both processes copy at
//! once, on two CPUs (see [`SPLIT_MIN`] and `tune.rs` for when).
//!
//! - A lone transfer is granted first, both halves move at once, and the
//!   target answers when both are done ([`Xfer::settle`]).
//! - A stream's is granted once the target copied its own half
//!   ([`W_OWN_DONE`]); the initiator completes it as soon as its half is
//!   copied, and its word completes the target's side.
//! - Within one drain pass, both ends hold a stream's halves back and copy
//!   those of one peer together, in one system call ([`HELD_MAX`],
//!   [`HELD_BYTES`]); a joint copy that fails is made again operation by
//!   operation, so that only the operations that fail fail.
//!
//! Staged transfers (no cross-memory attach) are in `staging.rs`; the
//! initiator's handling of a grant (`Xfer::on_grant`) is there too, as a
//! grant may ask for either.

use super::*;

/// A shared copy at the target: what it completes (a verified remote
/// access, whose access stays in the domain's `active` count, so that
/// region closes wait, until the initiator's share is done; or a message
/// and its posted receive), and the outcome of the target's own share.
///
/// The record exists before the grant is sent: the initiator may finish its
/// share, and its word be read by another thread draining the inbox, while
/// this process is still copying its own. Whichever of the two ends last
/// completes the operation ([`Xfer::settle`]).
pub(super) struct Grant {
    then: Then,
    /// The target's own share: None while it is being copied.
    own: Option<Result<()>>,
    /// The initiator's word on its share (the status it sent), once here.
    peer: Option<i32>,
    /// Given up (its initiator gone: true; this endpoint closing: false)
    /// while this process was still copying its own share: abandoned once
    /// that copy ends, never while it runs.
    gone: Option<bool>,
    /// The part of this process's memory the initiator writes (a write's
    /// or a message's granted share; empty for a read): marked defined for
    /// Valgrind once written ([`copy::mark_defined`]).
    written: Pieces,
    /// Granted with [`W_OWN_DONE`]: the initiator completes its operation
    /// itself, so no answer is sent.
    unanswered: bool,
}

thread_local! {
    /// This thread is in a drain pass ([`Xfer::drain_locked`]), which
    /// copies the shares it held back before it returns: only then may a
    /// shared copy be held back ([`Xfer::grant`]).
    static DRAINING: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// This thread's drain pass ([`DRAINING`]) while it lives. A pass that
/// unwinds (a panic, caught at the ABI boundary) leaves what it held back
/// to the next pass ([`Xfer::stranded`]).
pub(super) struct Draining<'a> {
    stranded: &'a AtomicBool,
    outer: u8,
}

/// [`DRAINING`]: this thread is in a drain pass; the pass held something
/// back.
const IN_PASS: u8 = 1;
const HELD_BACK: u8 = 2;

impl<'a> Draining<'a> {
    pub(super) fn enter(stranded: &'a AtomicBool) -> Draining<'a> {
        let outer = DRAINING.with(|d| d.replace(IN_PASS));
        Draining { stranded, outer }
    }

    /// Whether the pass held anything back (so far).
    pub(super) fn held(&self) -> bool {
        DRAINING.with(|d| d.get()) & HELD_BACK != 0
    }
}

impl Drop for Draining<'_> {
    fn drop(&mut self) {
        let now = DRAINING.with(|d| d.replace(self.outer));
        if now & HELD_BACK != 0 && std::thread::panicking() {
            self.stranded.store(true, Ordering::Relaxed);
        }
    }
}

/// Whether this thread is in a drain pass that will copy what is held
/// back before it ends; if so, notes that something is.
pub(super) fn hold_back() -> bool {
    DRAINING.with(|d| {
        let v = d.get();
        if v & IN_PASS != 0 {
            d.set(v | HELD_BACK);
        }
        v & IN_PASS != 0
    })
}

/// A stream's shared copy whose own share is held back to be copied with
/// others ([`Xfer::flush_held`]): what [`Xfer::grant`] was given.
pub(super) struct Held {
    then: Then,
    share: u64,
    granted: Pieces,
    here: Pieces,
    there: Pieces,
    read: bool,
}

/// A grant whose share is held back to be copied with others
/// ([`Xfer::flush_held_grants`]).
pub(super) struct HeldGrant {
    /// The grant.
    pub(super) g: Wire,
    /// This process's pieces of the share, and the target's.
    pub(super) mine: Pieces,
    pub(super) pieces: Pieces,
    /// The bytes come from the target.
    pub(super) read: bool,
}

/// Most shared copies held back for one system call, and most bytes of
/// one process's shares: the call saves its fixed cost (about 0.3 us here)
/// per operation, which counts for tens of KiB, while the next process
/// waits for the whole call's grants or words. Held in eights without a
/// byte limit, the halves of a stream of 1 MiB messages ran at 0.93x of
/// copied one by one (fabtests `fi_rdm_tagged_bw`).
pub(super) const HELD_MAX: usize = 8;
pub(super) const HELD_BYTES: u64 = 128 * 1024;

/// Whether shares of `bytes` in all, `n` of them, fill one system call.
pub(super) fn held_full(n: usize, bytes: u64) -> bool {
    n >= HELD_MAX || bytes >= HELD_BYTES
}

/// The initiator's share of a shared copy ([`Xfer::initiator_share`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Share {
    /// Its first `len` bytes (0: the target copies it all).
    pub(super) len: u64,
    /// Nothing is queued behind it: both copy at once, and it is answered
    /// when both are done (else the target copies first, [`W_OWN_DONE`]).
    pub(super) lone: bool,
}

impl Share {
    pub(super) const NONE: Share = Share { len: 0, lone: true };
}

/// Whether the share tuner measures a shared copy of `len` bytes (and so
/// may copy it alone): one of a stream (not `lone`) from [`SPLIT_MIN`].
/// The others go in halves unless sharing is off.
pub(super) fn measured_share(len: u64, lone: bool) -> bool {
    !lone && len >= SPLIT_MIN
}

impl Xfer {
    /// The initiator's share of a shared copy of `len` bytes: all of it
    /// when this process may not copy (`!mine`); otherwise as the tuner
    /// says ([`tune::Tuner::way`]): the first page-aligned half, for a
    /// lone operation (nothing waiting behind it in the inbox) and, where
    /// sharing pays, for each operation of a stream. 0: this process
    /// copies it all.
    pub(super) fn initiator_share(&self, len: u64, mine: bool) -> Share {
        if !mine {
            return Share { len, lone: true };
        }
        // Callers share a transfer under SPLIT_MIN only with more behind it.
        // Such a transfer goes in halves as a lone one does, unmeasured:
        // at 16 KiB (a stream's sends and `fi_writedata` that go as one
        // copy by the target, `Xfer::stream_single`) halves ran at 16.0
        // GB/s against 14.7 with the tuner's trials of copying alone (13.1
        // alone throughout; upstream 2.1.0 15.7), `fi_writedata` 12.0
        // against 11.0.
        let lone = !self.inbox.more_behind();
        let unmeasured = !measured_share(len, lone);
        let len = match lock(&self.tuner).way(len, unmeasured, tune::now_ns()) {
            tune::Way::Alone => 0,
            tune::Way::Halves => (len / 2) & !4095,
        };
        Share { len, lone }
    }

    /// A bulk message whose sender may copy into this process (W_SPLIT),
    /// under the rules of a shared RMA copy ([`SPLIT_MIN`],
    /// [`Xfer::initiator_share`]): the sender is granted the first bytes
    /// of `want` to copy itself while this process copies the rest, so that
    /// both CPUs copy at once; the receive and the send complete when the
    /// sender says its share is done ([`Xfer::on_done`]). False: not
    /// shared, the caller copies it all.
    pub(super) fn share_recv(
        &self,
        r: &Recv,
        w: &Wire,
        want: &[(u64, u64)],
        remote: &[(u64, u64)],
        take: u64,
    ) -> bool {
        if w.flags & W_SPLIT == 0 || take == 0 || (take < SPLIT_MIN && !self.inbox.more_behind()) {
            return false;
        }
        let share = self.initiator_share(take, true);
        if share.len == 0 {
            return false;
        }
        let (grant_t, own_t) = split_at(want, share.len);
        if grant_t.len() > GRANT_PIECES {
            return false;
        }
        let (_, own_r) = split_at(remote, share.len);
        let then = Then::Recv {
            r: r.clone(),
            w: *w,
        };
        self.grant(then, share, grant_t, &own_t, &own_r, false);
        true
    }

    /// A shared copy, at the target: grants the initiator of `then`'s
    /// request the first `share.len` bytes (`granted`, this process's
    /// pieces) and copies the rest itself (`here`, this process's pieces,
    /// and `there`, the initiator's); `then` completes when the initiator
    /// says its share is done ([`Xfer::on_done`]). `read`: the bytes go to
    /// the initiator.
    ///
    /// A lone transfer is granted first, so that both copy at once, and
    /// answered when both shares are done. A stream's is granted once this
    /// process's share is copied ([`W_OWN_DONE`]): the initiator completes
    /// its operation as soon as its own share is copied, with no answer,
    /// while this process copies the next operation's share. A drain pass
    /// holds a stream's own shares back and copies those of one initiator
    /// together, in one system call, before it returns ([`Xfer::hold`]).
    /// Where this process's copy fails, nothing is granted and the
    /// operation fails at both ends.
    pub(super) fn grant(
        &self,
        then: Then,
        share: Share,
        granted: Pieces,
        here: &[(u64, u64)],
        there: &[(u64, u64)],
        read: bool,
    ) {
        if !share.lone {
            return self.hold(Held {
                then,
                share: share.len,
                granted,
                here: here.into(),
                there: there.into(),
                read,
            });
        }
        // A lone one: after those held back, granted first.
        self.flush_held();
        let w = *then.wire();
        let id = self.insert_grant(then, None, read, &granted, false);
        self.send_grant(&w, id, share.len, &granted, 0);
        let left = here.iter().map(|x| x.1).sum();
        let status = cross_copy(w.src_pid, here, there, left, !read);
        self.settle(id, |g| g.own = Some(status));
        self.drop_grants_if_dead(&w);
    }

    /// Holds a stream's shared copy back to copy its own share with the
    /// next ones from the same initiator in one system call, when this
    /// thread is in a drain pass (which copies them before it returns);
    /// copies it at once otherwise.
    fn hold(&self, h: Held) {
        if !hold_back() {
            return self.copy_held(vec![h]);
        }
        let full = {
            let mut held = lock(&self.held);
            let fits = held
                .first()
                .is_none_or(|f| f.then.wire().src_pid == h.then.wire().src_pid && f.read == h.read);
            if !fits {
                let older = std::mem::take(&mut *held);
                drop(held);
                self.copy_held(older);
                held = lock(&self.held);
            }
            held.push(h);
            let bytes = held.iter().flat_map(|h| h.here.iter()).map(|x| x.1).sum();
            held_full(held.len(), bytes)
        };
        if full {
            self.flush_held();
        }
    }

    /// Copies the own shares held back and grants their initiators theirs.
    pub(super) fn flush_held(&self) {
        let held = std::mem::take(&mut *lock(&self.held));
        if !held.is_empty() {
            self.copy_held(held);
        }
    }

    /// The own shares of `held` (one initiator's, one direction), in one
    /// cross-memory call; then each is granted ([`W_OWN_DONE`]). Where the
    /// call fails, each is copied alone: one that fails then is not
    /// granted and fails at both ends.
    fn copy_held(&self, held: Vec<Held>) {
        let Some(first) = held.first() else {
            return;
        };
        let (pid, read) = (first.then.wire().src_pid, first.read);
        let len = |v: &[(u64, u64)]| v.iter().map(|x| x.1).sum::<u64>();
        let together = held.len() > 1 && {
            let here: Vec<(u64, u64)> = held.iter().flat_map(|h| h.here.iter().copied()).collect();
            let there: Vec<(u64, u64)> =
                held.iter().flat_map(|h| h.there.iter().copied()).collect();
            copy_across(pid, &here, &there, len(&here), !read, false).is_ok()
        };
        for h in held {
            let w = *h.then.wire();
            if !together {
                if let Err(e) = cross_copy(pid, &h.here, &h.there, len(&h.here), !read) {
                    self.complete_then(h.then, Err(e), false);
                    continue;
                }
            }
            let id = self.insert_grant(h.then, Some(Ok(())), read, &h.granted, true);
            self.send_grant(&w, id, h.share, &h.granted, W_OWN_DONE);
            self.drop_grants_if_dead(&w);
        }
    }

    /// Records a shared copy whose initiator is granted `granted` (this
    /// process's pieces); its id.
    fn insert_grant(
        &self,
        then: Then,
        own: Option<Result<()>>,
        read: bool,
        granted: &[(u64, u64)],
        unanswered: bool,
    ) -> u64 {
        let id = self.next_grant.fetch_add(1, Ordering::Relaxed);
        lock(&self.grants).insert(
            id,
            Grant {
                then,
                own,
                peer: None,
                gone: None,
                // What the initiator writes here (none for a read).
                written: if read {
                    Pieces::default()
                } else {
                    granted.into()
                },
                unanswered,
            },
        );
        id
    }

    /// Sends grant `id` of `share` bytes (`granted`) for request `w`.
    fn send_grant(&self, w: &Wire, id: u64, share: u64, granted: &[(u64, u64)], flags: u32) {
        let g = Wire {
            op: w.op,
            addr: id,
            len: share,
            niov: granted.len() as u32,
            flags,
            ..self.wire(K_GRANT)
        };
        self.send_to(w.src(), &[g.bytes(), &iov_bytes(granted)]);
    }

    /// An initiator found gone meanwhile had its grants dropped before
    /// this one existed: drops it too (the peer check adds to `dead`
    /// before it drops grants).
    fn drop_grants_if_dead(&self, w: &Wire) {
        if self.is_dead(&w.src()) {
            self.drop_grants(Some(&w.src()));
        }
    }

    /// Target: the initiator's share of a shared copy is done.
    pub(super) fn on_done(&self, d: &Wire) {
        self.settle(d.addr, |g| g.peer = Some(d.status));
    }

    /// Records one side's end of shared copy `id` (`f`); the second to end
    /// completes it, or abandons it if it was given up meanwhile
    /// ([`settled`]).
    pub(super) fn settle(&self, id: u64, f: impl FnOnce(&mut Grant)) {
        let g = {
            let mut grants = lock(&self.grants);
            let Some(g) = grants.get_mut(&id) else {
                return;
            };
            f(g);
            if settled(g.own, g.peer, g.gone) == Settled::Wait {
                return;
            }
            grants.remove(&id)
        };
        let Some(g) = g else {
            return;
        };
        match settled(g.own, g.peer, g.gone) {
            Settled::Wait => {}
            Settled::Abandon(dead) => self.abandon(g.then, dead),
            Settled::Complete(status) => {
                if g.peer == Some(0) {
                    mark_defined(&g.written);
                }
                self.complete_then(g.then, status, g.unanswered);
            }
        }
    }

    /// Completes what a staged transfer or a shared copy was for, once all
    /// its bytes moved (or failed with `status`): the remote access is
    /// counted, released and answered; the message is answered and its
    /// receive completed. `unanswered`: the initiator completed its
    /// operation itself ([`W_OWN_DONE`]), so no answer is sent.
    pub(super) fn complete_then(&self, then: Then, status: Result<()>, unanswered: bool) {
        let code = status.err().map_or(0, |e| e.code());
        match then {
            Then::Rma { w, handle } => {
                if status.is_ok() {
                    self.accepted(&w, &handle);
                }
                Active::release(self.domain());
                if !unanswered {
                    self.respond(&w, code, &[]);
                }
            }
            Then::Recv { r, w } => {
                if !unanswered {
                    self.respond(&w, code, &[]);
                }
                self.finish_recv(&r, &w, status);
            }
        }
    }

    /// Tells the target of grant `g` that this process's share is done
    /// (`status`); completes the operation when the target's share was
    /// done first ([`W_OWN_DONE`]).
    pub(super) fn share_done(&self, g: &Wire, status: i32) {
        let done = Wire {
            addr: g.addr,
            status,
            ..self.wire(K_DONE)
        };
        self.send_to(g.src(), &[done.bytes()]);
        // The target's share was copied before it granted this one: the
        // operation is complete (its word follows the target's, in order,
        // so anything this endpoint sends next reaches the target after).
        if g.flags & W_OWN_DONE != 0 {
            if let Some(op) = lock(&self.pend).take(g.op) {
                let r = if status == 0 {
                    Ok(())
                } else {
                    Err(Error::from_code(status))
                };
                self.complete(op, r);
            }
        }
    }

    /// Copies the shares of the grants held back ([`Xfer::on_grant`]).
    pub(super) fn flush_held_grants(&self) {
        let held = std::mem::take(&mut *lock(&self.held_grants));
        if !held.is_empty() {
            self.copy_held_grants(held);
        }
    }

    /// The shares of `held` (one target's, one direction) in one
    /// cross-memory call, each operation still pending; where that fails,
    /// each alone. Then each is done ([`Xfer::share_done`]).
    pub(super) fn copy_held_grants(&self, held: Vec<HeldGrant>) {
        let Some(first) = held.first() else {
            return;
        };
        let (pid, read) = (first.g.src_pid, first.read);
        // An operation completed meanwhile (its peer found gone) has its
        // buffers back with the application: not copied.
        let held: Vec<HeldGrant> = {
            let pend = lock(&self.pend);
            held.into_iter()
                .filter(|h| pend.get(h.g.op).is_some())
                .collect()
        };
        let together = held.len() > 1 && {
            let mine: Vec<(u64, u64)> = held.iter().flat_map(|h| h.mine.iter().copied()).collect();
            let there: Vec<(u64, u64)> =
                held.iter().flat_map(|h| h.pieces.iter().copied()).collect();
            let len = held.iter().map(|h| h.g.len).sum();
            copy_across(pid, &mine, &there, len, read, false).is_ok()
        };
        for h in held {
            let status = if together {
                0
            } else {
                match cross_copy(pid, &h.mine, &h.pieces, h.g.len, read) {
                    Ok(()) => 0,
                    Err(e) => e.code(),
                }
            };
            self.share_done(&h.g, status);
        }
    }

    /// Drops the shared copies an initiator `a` will never finish.
    pub(super) fn drop_grants(&self, a: Option<&Address>) {
        let dropped: Vec<Grant> = {
            let mut g = lock(&self.grants);
            let ids: Vec<u64> = g
                .iter()
                .filter(|(_, x)| a.is_none_or(|a| x.then.wire().src() == *a))
                .map(|(id, _)| *id)
                .collect();
            let mut out = Vec::new();
            for id in ids {
                // Given up; abandoned now unless its own share is still
                // being copied: then when that copy ends (Xfer::settle),
                // not under it.
                if let Some(x) = g.get_mut(&id) {
                    x.gone = Some(a.is_some());
                    if settled(x.own, x.peer, x.gone) != Settled::Wait {
                        out.extend(g.remove(&id));
                    }
                }
            }
            out
        };
        for g in dropped {
            self.abandon(g.then, a.is_some());
        }
    }

    /// Gives up what a staged transfer or a shared copy was for, its peer
    /// gone (`dead`) or this endpoint closing: a remote access leaves the
    /// active count; a receive fails when its sender died (at the
    /// endpoint's own close it just goes).
    pub(super) fn abandon(&self, then: Then, dead: bool) {
        match then {
            Then::Rma { .. } => Active::release(self.domain()),
            Then::Recv { r, w } if dead => self.finish_recv(&r, &w, Err(Error::IO)),
            Then::Recv { .. } => {}
        }
    }
}

/// What a shared copy's record says once one side's end is in it.
#[derive(Debug, PartialEq)]
enum Settled {
    /// A side has not ended: this process's own share is still being
    /// copied, or the initiator's word is not here yet.
    Wait,
    /// Both ended: the status of the whole (this side's error first, then
    /// the initiator's).
    Complete(Result<()>),
    /// Given up (`true`: its initiator is gone), and this process's own
    /// copy, which the record outlived, has ended.
    Abandon(bool),
}

/// The decision of [`Xfer::settle`] from a grant's three fields: never
/// before this process's own share is done (its copy may still be writing
/// the application's memory), then given up, then completed once the
/// initiator's word is here.
fn settled(own: Option<Result<()>>, peer: Option<i32>, gone: Option<bool>) -> Settled {
    match (own, peer, gone) {
        (None, _, _) | (Some(_), None, None) => Settled::Wait,
        (Some(_), _, Some(dead)) => Settled::Abandon(dead),
        (Some(Err(e)), Some(_), None) => Settled::Complete(Err(e)),
        (Some(Ok(())), Some(0), None) => Settled::Complete(Ok(())),
        (Some(Ok(())), Some(s), None) => Settled::Complete(Err(Error::from_code(s))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a drain pass holds copies back, it learns whether it did, and a
    /// pass that unwinds with copies held back leaves them to the next
    /// (`stranded`); the state outside a pass is restored either way.
    #[test]
    fn copies_are_held_back_only_within_a_drain_pass() {
        let stranded = AtomicBool::new(false);
        assert!(!hold_back(), "outside a pass");
        {
            let pass = Draining::enter(&stranded);
            assert!(!pass.held());
            assert!(hold_back());
            assert!(pass.held());
        }
        assert!(!hold_back() && !stranded.load(Ordering::Relaxed));
        // A pass that held nothing back unwinds with nothing to leave.
        let r = std::panic::catch_unwind(|| {
            let _pass = Draining::enter(&stranded);
            panic!("in the pass");
        });
        assert!(r.is_err() && !stranded.load(Ordering::Relaxed));
        let r = std::panic::catch_unwind(|| {
            let _pass = Draining::enter(&stranded);
            assert!(hold_back());
            panic!("in the pass");
        });
        assert!(r.is_err() && stranded.load(Ordering::Relaxed));
        assert!(!hold_back(), "outside a pass again");
    }

    /// The three events of a grant's record, in any order.
    #[derive(Clone, Copy, Debug)]
    enum Ev {
        Own(Result<()>),
        Peer(i32),
        Gone(bool),
    }

    /// Plays `evs` on a record as `settle` does (the record goes at the
    /// first decision other than Wait; later events find nothing) and
    /// returns each event's decision.
    fn play(evs: &[Ev]) -> Vec<Option<Settled>> {
        let (mut own, mut peer, mut gone) = (None, None, None);
        let mut removed = false;
        evs.iter()
            .map(|&e| {
                if removed {
                    return None;
                }
                match e {
                    Ev::Own(r) => own = Some(r),
                    Ev::Peer(s) => peer = Some(s),
                    Ev::Gone(d) => gone = Some(d),
                }
                let s = settled(own, peer, gone);
                removed = s != Settled::Wait;
                Some(s)
            })
            .collect()
    }

    #[test]
    fn a_shared_copy_completes_once_whichever_side_ends_last() {
        use Settled::*;
        // The order the lost completion needed: the initiator's word
        // arrives while this process still copies its own share.
        assert_eq!(
            play(&[Ev::Peer(0), Ev::Own(Ok(()))]),
            vec![Some(Wait), Some(Complete(Ok(())))]
        );
        assert_eq!(
            play(&[Ev::Own(Ok(())), Ev::Peer(0)]),
            vec![Some(Wait), Some(Complete(Ok(())))]
        );
        // Either side's failure fails the whole; this side's comes first.
        let inval = Error::INVAL.code();
        assert_eq!(
            play(&[Ev::Own(Ok(())), Ev::Peer(inval)]),
            vec![Some(Wait), Some(Complete(Err(Error::INVAL)))]
        );
        assert_eq!(
            play(&[Ev::Peer(inval), Ev::Own(Err(Error::FAULT))]),
            vec![Some(Wait), Some(Complete(Err(Error::FAULT)))]
        );
    }

    #[test]
    fn every_order_of_the_three_events_decides_once() {
        // All six orders of (own share done, initiator's word, given up):
        // one decision, never before the own share is done; completed
        // when both sides ended before the give-up, abandoned otherwise.
        let evs = [Ev::Own(Ok(())), Ev::Peer(0), Ev::Gone(true)];
        for order in [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            let seq: Vec<Ev> = order.iter().map(|&i| evs[i]).collect();
            let got = play(&seq);
            let decided: Vec<&Settled> = got
                .iter()
                .flatten()
                .filter(|s| **s != Settled::Wait)
                .collect();
            assert_eq!(decided.len(), 1, "{seq:?}: {got:?}");
            let pos = |k: usize| order.iter().position(|&i| i == k).unwrap();
            let at = got
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| *s != Settled::Wait));
            assert!(
                at.unwrap() >= pos(0),
                "{seq:?}: decided before its own share ended"
            );
            let want = if pos(2) > pos(0).max(pos(1)) {
                Settled::Complete(Ok(()))
            } else {
                Settled::Abandon(true)
            };
            assert_eq!(*decided[0], want, "{seq:?}");
        }
    }

    #[test]
    fn a_copy_given_up_is_abandoned_only_after_its_own_share_ends() {
        use Settled::*;
        // Given up while this process copies: nothing happens until the
        // copy ends, then it is abandoned, not completed, and the
        // initiator's late word finds no record.
        assert_eq!(
            play(&[Ev::Gone(true), Ev::Own(Ok(())), Ev::Peer(0)]),
            vec![Some(Wait), Some(Abandon(true)), None]
        );
        assert_eq!(
            play(&[Ev::Peer(0), Ev::Gone(false), Ev::Own(Ok(()))]),
            vec![Some(Wait), Some(Wait), Some(Abandon(false))]
        );
        // Given up after its own share ended: abandoned at once.
        assert_eq!(
            play(&[Ev::Own(Ok(())), Ev::Gone(true)]),
            vec![Some(Wait), Some(Abandon(true))]
        );
        // Completed first: a later give-up finds nothing to abandon.
        assert_eq!(
            play(&[Ev::Own(Ok(())), Ev::Peer(0), Ev::Gone(true)]),
            vec![Some(Wait), Some(Complete(Ok(()))), None]
        );
    }
}
