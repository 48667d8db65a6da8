//! The initiator's side of a grant, and staged transfers: a grant asks the
//! initiator to copy its share of a shared copy itself (`share.rs`) or,
//! where neither process may copy across (no cross-memory attach), to send
//! it in [`CHUNK`]-byte pieces through the receiver's ring (staging:
//! outbound pieces pumped by their sender, inbound pieces landed by their
//! receiver). See the parent module for the whole data path.

use super::*;

impl Xfer {
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
    ///
    /// The test for nothing queued is inlined into every pass over the
    /// inbox: called for it, the function saved and restored its registers
    /// each time (17 instructions a pass against 2, callgrind).
    #[inline(always)]
    pub(super) fn pump(&self) {
        if self.has_outbound.load(Ordering::Acquire) {
            self.pump_queued();
        }
    }

    #[inline(never)]
    fn pump_queued(&self) {
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
