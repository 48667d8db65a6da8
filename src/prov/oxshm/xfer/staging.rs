//! The grants and staged transfers of the data path: a target that
//! verified an access hands the initiator its share of a shared copy
//! (grants), and where neither process may copy across (no cross-memory
//! attach), the bytes move in [`CHUNK`]-byte pieces through the
//! receiver's ring (staging: outbound pieces pumped by their sender,
//! inbound pieces landed by their receiver). See the parent module for
//! the whole data path.

use super::*;

impl Xfer {
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

    /// Initiator: copies its granted share of a shared copy and says so;
    /// or, for a staged grant, starts sending the granted bytes as pieces.
    pub(super) fn on_grant(&self, g: &Wire, body: &[u8]) {
        if g.flags & W_STAGED != 0 {
            // Under the operations' lock, so that a peer check cannot
            // complete the operation between this look and the queueing.
            let pend = lock(&self.pend);
            let Some((local, _)) = pend.get(g.op).and_then(|p| p.bulk.as_ref()) else {
                return;
            };
            let (src, _) = split_at(local, g.len);
            self.push_outbound(Outbound {
                to: g.src(),
                kind: K_CHUNK,
                id: g.addr,
                src,
                len: g.len,
                sent: 0,
                read: None,
            });
            drop(pend);
            self.pump();
            return;
        }
        let (local, read) = match lock(&self.pend).get(g.op).and_then(|p| p.bulk.clone()) {
            Some(x) => x,
            // The operation is gone (its peer was declared dead): the
            // target learns it from its own checks.
            None => return,
        };
        let pieces = parse_iovs(body, g.niov as usize).unwrap_or_default();
        let (mine, _) = split_at(&local, g.len);
        // A stream's grant, in a drain pass: copied with the next ones
        // from the same target, in one system call, before the pass ends.
        if g.flags & W_OWN_DONE != 0 && hold_back() {
            let mut held = lock(&self.held_grants);
            let fits = held
                .first()
                .is_none_or(|f| f.g.src_pid == g.src_pid && f.read == read);
            if !fits {
                let older = std::mem::take(&mut *held);
                drop(held);
                self.copy_held_grants(older);
                held = lock(&self.held_grants);
            }
            held.push(HeldGrant {
                g: *g,
                mine,
                pieces,
                read,
            });
            let bytes = held.iter().map(|h| h.g.len).sum();
            if held_full(held.len(), bytes) {
                let all = std::mem::take(&mut *held);
                drop(held);
                self.copy_held_grants(all);
            }
            return;
        }
        let status = match cross_copy(g.src_pid, &mine, &pieces, g.len, read) {
            Ok(()) => 0,
            Err(e) => e.code(),
        };
        self.share_done(g, status);
    }

    /// Tells the target of grant `g` that this process's share is done
    /// (`status`); completes the operation when the target's share was
    /// done first ([`W_OWN_DONE`]).
    fn share_done(&self, g: &Wire, status: i32) {
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
    fn copy_held_grants(&self, held: Vec<HeldGrant>) {
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
            cross_copy_quiet(pid, &mine, &there, len, read).is_ok()
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
    fn abandon(&self, then: Then, dead: bool) {
        match then {
            Then::Rma { .. } => Active::release(self.domain()),
            Then::Recv { r, w } if dead => self.finish_recv(&r, &w, Err(Error::IO)),
            Then::Recv { .. } => {}
        }
    }

    /// Receives a bulk message that this process may not copy from its
    /// sender: the sender is granted a staged transfer of the `take` bytes
    /// into `want`, and the receive completes after the last piece.
    pub(super) fn stage_recv(&self, r: Recv, w: Wire, want: Pieces, take: u64) {
        let from = w.src();
        let id = self.next_grant.fetch_add(1, Ordering::Relaxed);
        lock(&self.inbound).insert(
            id,
            Inbound {
                from,
                dest: want,
                checked: false,
                len: take,
                got: 0,
                status: Ok(()),
                then: Then::Recv { r, w },
            },
        );
        let g = Wire {
            op: w.op,
            addr: id,
            len: take,
            flags: W_STAGED,
            ..self.wire(K_GRANT)
        };
        self.send_to(from, &[g.bytes()]);
        // A sender found gone meanwhile had its staged transfers dropped
        // before this one existed (the peer check adds to `dead` first).
        if self.is_dead(&from) {
            self.drop_staged(Some(&from));
        }
    }

    /// Stages a verified bulk RMA that this process may not copy to or
    /// from its initiator, nor the initiator from us: a read's target sends
    /// the verified bytes as pieces; a write's target grants the initiator
    /// a staged transfer into the verified region. The access stays active
    /// (region closes wait) until the last piece.
    pub(super) fn stage_rma(
        &self,
        w: &Wire,
        t: crate::mr::Target,
        active: Active<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let from = w.src();
        active.keep();
        if w.kind == K_READ {
            self.push_outbound(Outbound {
                to: from,
                kind: K_RDATA,
                id: w.op,
                src: Pieces::from(t.pieces()),
                len: w.len,
                sent: 0,
                read: Some((*w, t.handle)),
            });
        } else {
            let id = self.next_grant.fetch_add(1, Ordering::Relaxed);
            lock(&self.inbound).insert(
                id,
                Inbound {
                    from,
                    dest: Pieces::from(t.pieces()),
                    checked: !self.allocated(),
                    len: w.len,
                    got: 0,
                    status: Ok(()),
                    then: Then::Rma {
                        w: *w,
                        handle: t.handle,
                    },
                },
            );
            let g = Wire {
                op: w.op,
                addr: id,
                len: w.len,
                flags: W_STAGED,
                ..self.wire(K_GRANT)
            };
            self.send_to(from, &[g.bytes()]);
        }
        if self.is_dead(&from) {
            self.drop_staged(Some(&from));
        }
        self.pump();
        Ok(None)
    }

    /// Sends what the staged transfers out of this endpoint can: as many
    /// pieces as the receivers' rings take, in order.
    ///
    /// Once a receiver's ring is full, the transfers behind to the same
    /// receiver are not tried: each try reads the ring's cells, pulling
    /// their lines away from the receiver that is emptying it.
    pub(super) fn pump(&self) {
        if !self.has_outbound.load(Ordering::Acquire) {
            return;
        }
        let mut out = lock(&self.outbound);
        if out.is_empty() {
            self.has_outbound.store(false, Ordering::Release);
            return;
        }
        let mut full: Vec<Address> = Vec::new();
        let mut i = 0;
        while i < out.len() {
            if full.contains(&out[i].to) {
                i += 1;
                continue;
            }
            match self.pump_one(&mut out[i]) {
                Pumped::Blocked => {
                    full.push(out[i].to);
                    i += 1;
                }
                Pumped::Done => {
                    out.remove(i);
                }
            }
        }
    }

    pub(super) fn pump_one(&self, o: &mut Outbound) -> Pumped {
        let peer = match self.peer(&o.to) {
            Ok(p) => p,
            Err(e) => {
                self.end_outbound(o, Err(e));
                return Pumped::Done;
            }
        };
        while o.sent < o.len {
            let n = (o.len - o.sent).min(CHUNK as u64);
            let piece = window(&o.src, o.sent, n);
            let mut w = Wire {
                data: o.sent,
                len: n,
                flags: if o.sent + n == o.len { W_LAST } else { 0 },
                ..self.wire(o.kind)
            };
            if o.kind == K_RDATA {
                w.op = o.id;
            } else {
                w.addr = o.id;
            }
            let sent = if o.read.is_some() {
                // Registered memory of ours, verified, copied straight into
                // the initiator's ring: a checked copy unless FI_MR_ALLOCATED
                // says it is backed. A piece that faults goes out empty (the
                // cell is claimed already) and the error response follows.
                let mut failed = None;
                let checked = !self.allocated();
                let sent = peer.seg.send_with(WIRE + n as usize, |cell| {
                    let (head, body) = cell.split_at_mut(WIRE);
                    match own_copy(&piece, body, checked) {
                        Ok(()) => {
                            head.copy_from_slice(w.bytes());
                            WIRE + n as usize
                        }
                        Err(e) => {
                            failed = Some(e);
                            head.copy_from_slice(Wire { len: 0, ..w }.bytes());
                            WIRE
                        }
                    }
                });
                if let (Ok(()), Some(e)) = (&sent, failed) {
                    self.end_outbound(o, Err(e));
                    return Pumped::Done;
                }
                sent
            } else {
                let mut parts: Vec<&[u8]> = vec![w.bytes()];
                for &(a, l) in piece.iter() {
                    // SAFETY: the application's buffers of an operation
                    // that has not completed (fi_msg(3), fi_rma(3)).
                    parts.push(unsafe { std::slice::from_raw_parts(a as *const u8, l as usize) });
                }
                peer.seg.send(&parts, Urgency::Request)
            };
            match sent {
                Ok(()) => o.sent += n,
                Err(Error::AGAIN) => return Pumped::Blocked,
                Err(e) => {
                    self.end_outbound(o, Err(e));
                    return Pumped::Done;
                }
            }
        }
        self.end_outbound(o, Ok(()));
        Pumped::Done
    }

    /// Ends a staged transfer out of this endpoint. A read's target ends
    /// the access and answers the request; an initiator's failed transfer
    /// is left to the peer check (its peer is gone).
    pub(super) fn end_outbound(&self, o: &mut Outbound, status: Result<()>) {
        if let Err(e) = status {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "staged transfer to {} stopped after {} of {} bytes: {e}",
                o.to,
                o.sent,
                o.len
            );
        }
        if let Some((w, handle)) = o.read.take() {
            if status.is_ok() {
                self.accepted(&w, &handle);
            }
            Active::release(self.domain());
            self.respond(&w, status.err().map_or(0, |e| e.code()), &[]);
        }
    }

    /// A staged piece of a transfer into this endpoint.
    pub(super) fn on_chunk(&self, c: &Wire, body: &[u8]) {
        let mut inb = lock(&self.inbound);
        let Some(s) = inb.get_mut(&c.addr) else {
            // Dropped: its sender was declared gone, or the endpoint is
            // closing.
            return;
        };
        if s.from != c.src() {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "dropped a staged piece from {} for a transfer granted to {}",
                c.src(),
                s.from
            );
            return;
        }
        if c.data != s.got || body.len() as u64 != c.len || c.len > s.len - s.got {
            if s.status.is_ok() {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "staged piece from {} at {} of {} bytes does not follow the {} received",
                    c.src(),
                    c.data,
                    body.len(),
                    s.got
                );
            }
            s.status = Err(Error::INVAL);
        } else if s.status.is_ok() {
            let piece = window(&s.dest, s.got, c.len);
            s.status = if s.checked {
                copy_in(&piece, body, true)
            } else {
                // SAFETY: verified registered memory under FI_MR_ALLOCATED,
                // or a posted receive's buffers (fi_msg(3)).
                unsafe { scatter(body, &piece) };
                Ok(())
            };
            s.got += c.len;
        }
        if c.flags & W_LAST == 0 {
            return;
        }
        let Some(s) = inb.remove(&c.addr) else {
            return;
        };
        drop(inb);
        let status = match s.status {
            Ok(()) if s.got != s.len => Err(Error::INVAL),
            st => st,
        };
        self.complete_then(s.then, status, false);
    }

    /// Initiator: a staged piece of a read's result.
    pub(super) fn on_rdata(&self, c: &Wire, body: &[u8]) {
        let pend = lock(&self.pend);
        let Some(op) = pend.get(c.op) else {
            return;
        };
        let Some((local, true)) = op.bulk.as_ref().map(|(l, r)| (l, *r)) else {
            return;
        };
        if op.peer != c.src() || body.len() as u64 != c.len || c.data.saturating_add(c.len) > op.len
        {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "dropped a malformed piece of a read result from {}",
                c.src()
            );
            return;
        }
        let piece = window(local, c.data, c.len);
        // SAFETY: the read's destination buffers, the application's until
        // the operation completes (fi_rma(3)).
        unsafe { scatter(body, &piece) };
    }

    /// Drops the staged transfers to and from `a` (all of them: the
    /// endpoint is closing). Their accesses end; a receive that `a` was
    /// feeding completes with FI_EIO.
    pub(super) fn drop_staged(&self, a: Option<&Address>) {
        let hit = |x: &Address| a.is_none_or(|a| a == x);
        let outs: Vec<Outbound> = {
            let mut o = lock(&self.outbound);
            let (gone, keep) = o.drain(..).partition(|x| hit(&x.to));
            *o = keep;
            gone
        };
        for o in outs {
            if o.read.is_some() {
                Active::release(self.domain());
            }
        }
        let ins: Vec<Inbound> = {
            let mut m = lock(&self.inbound);
            let ids: Vec<u64> = m
                .iter()
                .filter(|(_, s)| hit(&s.from))
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter().filter_map(|id| m.remove(&id)).collect()
        };
        for s in ins {
            self.abandon(s.then, a.is_some());
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
