//! The initiator's side of the data path: operations and receives as the
//! endpoint posts them (`fi_send`, `fi_write`, `fi_recv` and the rest reach
//! [`Xfer::post`] and [`Xfer::post_recv`]), cancelling, and peeking at and
//! claiming unexpected messages (FI_PEEK, FI_CLAIM, FI_DISCARD). See the
//! parent module for the whole data path.

use super::*;

impl Xfer {
    /// Posts a transmit operation. -FI_EAGAIN when the queue or the peer's
    /// inbox is full (after driving progress once).
    pub fn post(&self, p: &Post<'_>) -> Result<()> {
        self.post_as(p, None, true)
    }

    /// [`Xfer::post`] without direct RMA, for a queued direct transfer
    /// that goes to the target after all (`batch.rs`).
    pub(super) fn post_request(&self, p: &Post<'_>) -> Result<()> {
        self.post_as(p, None, false)
    }

    /// [`Xfer::post`]; `single`: whether a send of a stream goes as one
    /// copy by the target, when the caller asked [`Xfer::stream_single`]
    /// already (None: asked here); `fresh`: a new operation (not one of the
    /// batch's), which may go direct, and goes after what the batch holds.
    fn post_as(&self, p: &Post<'_>, single: Option<bool>, fresh: bool) -> Result<()> {
        let dest = self.resolve(p.dest)?;
        let ep = self.ep();
        if self.inflight.load(Ordering::Acquire) >= ep.tx_size {
            self.progress_app(true);
            return Err(Error::AGAIN);
        }
        let inject = p.flags & FI_INJECT != 0;
        let report = self.tx_reports(p.silent, p.flags);
        let len: u64 = p.local.iter().map(|x| x.1).sum();
        let (kind, cntr) = match p.kind {
            OpKind::Send { .. } => (K_MSG, C_SEND),
            OpKind::Write => (K_WRITE, C_WRITE),
            OpKind::Read => (K_READ, C_READ),
            OpKind::Atomic {
                kind: atomics::Kind::Base,
                ..
            } => (K_ATOMIC, C_WRITE),
            OpKind::Atomic { .. } => (K_ATOMIC, C_READ),
        };
        if fresh {
            if matches!(p.kind, OpKind::Write | OpKind::Read)
                && self.direct(p, &dest, len, report, cntr)
            {
                return Ok(());
            }
            // Nothing overtakes the batch's transfers.
            if !self.flush_batch() {
                return Err(Error::AGAIN);
            }
        }
        let auth = &self.auth;
        if auth.len() > AUTH_MAX {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "authorization keys over {AUTH_MAX} bytes are not supported"
            );
            return Err(Error::INVAL);
        }
        let mut w = Wire {
            key: p.key,
            addr: p.addr,
            len,
            data: p.data.unwrap_or(0),
            auth_len: auth.len() as u32,
            ..self.wire(kind)
        };
        if p.data.is_some() {
            w.flags |= W_DATA;
        }
        let mut sink = Vec::new();
        let mut body = Vec::new();
        match p.kind {
            OpKind::Send { tagged, tag } => {
                w.tag = tag;
                if tagged {
                    w.flags |= W_TAGGED;
                }
            }
            OpKind::Atomic { kind, dt, op } => {
                w.dt = dt;
                w.aop = op;
                w.akind = kind as u32;
                sink = p.result.to_vec();
            }
            _ => {}
        }
        // A lone send goes as one cross-memory copy (`lone_send`), and so
        // does a stream's where that measures faster (`stream_single`); a
        // write that did not go direct (one with remote CQ data) too.
        let lone = !inject
            && len as usize >= LONE_MIN
            && matches!(p.kind, OpKind::Send { .. } | OpKind::Write)
            && {
                let cma = lock(&self.peers).get(&dest).is_some_and(|p| p.cma);
                let write = p.kind == OpKind::Write;
                (!write && self.is_lone(len as usize, cma))
                    || single.unwrap_or_else(|| self.stream_single(write, len as usize, cma))
            };
        let inline = match p.kind {
            OpKind::Read => len as usize <= INLINE,
            OpKind::Atomic { .. } => true,
            _ => (len as usize <= INLINE && !lone) || inject,
        };
        if inject && len as usize > INLINE {
            return Err(Error::MSGSIZE);
        }
        // Inline sends and writes: the payload is gathered from the
        // application's buffers straight into the target's ring cell.
        let mut direct = false;
        if inline {
            w.flags |= W_INLINE;
            match p.kind {
                OpKind::Send { .. } | OpKind::Write => direct = true,
                OpKind::Atomic { kind, op, .. } => {
                    if op != crate::abi::domain::fi_op::FI_ATOMIC_READ as u32 {
                        // SAFETY: as above.
                        unsafe { gather(p.local, &mut body) };
                    }
                    w.niov = body.len() as u32;
                    if kind == atomics::Kind::Compare {
                        // SAFETY: as above.
                        unsafe { gather(p.compare, &mut body) };
                    }
                    if kind == atomics::Kind::Base {
                        sink.clear();
                    }
                    w.len = if op == crate::abi::domain::fi_op::FI_ATOMIC_READ as u32 {
                        p.result.iter().map(|x| x.1).sum()
                    } else {
                        len
                    };
                }
                OpKind::Read => sink = p.local.to_vec(),
            }
        } else {
            w.niov = p.local.len() as u32;
            body = iov_bytes(p.local);
        }
        // The peer. A message that completes once it is in the target's
        // inbox (the small-message case) borrows it under the peers lock,
        // held across the ring write only: no count taken and dropped on
        // the Arc, two locked instructions fewer per message. Any other
        // operation, or a peer not met yet, takes a counted reference.
        let mut peers = (inline
            && matches!(p.kind, OpKind::Send { .. })
            && p.flags & FI_DELIVERY_COMPLETE == 0)
            .then(|| lock(&self.peers));
        if peers.as_ref().is_some_and(|m| !m.contains_key(&dest)) {
            peers = None;
        }
        let counted = if peers.is_none() {
            self.peer(&dest).ok()
        } else {
            None
        };
        let peer: Option<&Peer> = match &peers {
            Some(m) => m.get(&dest).map(|a| &**a),
            None => counted.as_deref(),
        };
        let shared = matches!(p.kind, OpKind::Write | OpKind::Read | OpKind::Send { .. });
        if shared && !inline && peer.is_some_and(|p| p.cma) {
            w.flags |= W_SPLIT;
        }
        let bulk = (!inline && !matches!(p.kind, OpKind::Atomic { .. }))
            .then(|| (p.local.to_vec(), p.kind == OpKind::Read));
        let op = Pending {
            context: p.context,
            cflags: cflags(&p.kind),
            len: w.len,
            report,
            cntr,
            sink,
            bulk,
            peer: dest,
            tag: w.tag,
            data: w.data,
        };
        let Some(peer) = peer else {
            // The peer is gone or was never there: an error completion.
            self.inflight.fetch_add(1, Ordering::AcqRel);
            self.complete(op, Err(Error::HOSTUNREACH));
            return Ok(());
        };
        // An inline message is complete once it is in the target's inbox
        // (FI_TRANSMIT_COMPLETE: the target's provider holds the bytes),
        // unless the caller asked for delivery completion. An injected
        // write has no completion to carry the target's answer: a refused
        // one is logged and counted at the target and changes nothing.
        let noack = inline
            && match p.kind {
                OpKind::Send { .. } => p.flags & FI_DELIVERY_COMPLETE == 0,
                // With a write counter bound, the refusal of an injected
                // write is counted there: it waits for the answer.
                OpKind::Write => p.silent && self.cntr(C_WRITE).is_none(),
                _ => false,
            };
        // The request's bytes, into a cell of the target's ring.
        let send = |w: &Wire| {
            if !direct {
                return peer.seg.send(&[w.bytes(), auth, &body], Urgency::Request);
            }
            // A message or write that waits for no answer and carries no
            // key goes in the short header.
            // (It takes the source's pid from the claim: not in a fork
            // child.)
            let small = matches!(w.kind, K_MSG | K_WRITE)
                && w.flags & W_NOACK != 0
                && auth.is_empty()
                && self.addr.pid == shm::my_pid();
            let target = (w.kind == K_WRITE).then_some((w.key, w.addr));
            let (flags, head) = if small {
                let kind = if target.is_some() { K_SWRITE } else { K_SMSG };
                Small::start(kind, w.flags, len as usize)
            } else {
                (w.flags, WIRE + auth.len())
            };
            peer.seg.send_with(head + len as usize, |cell| {
                if small {
                    Small::write(flags, &w.src(), target, w.tag, w.data, cell);
                } else {
                    cell[..WIRE].copy_from_slice(w.bytes());
                    cell[WIRE..WIRE + auth.len()].copy_from_slice(auth);
                }
                let mut at = head;
                for &(a, l) in p.local {
                    // SAFETY: the application's buffers are readable for
                    // the length it gave (fi_msg(3), fi_rma(3)).
                    let src = unsafe { std::slice::from_raw_parts(a as *const u8, l as usize) };
                    cell[at..at + src.len()].copy_from_slice(src);
                    at += src.len();
                }
                at
            })
        };
        if noack {
            // A target whose endpoint is closed takes nothing: an error
            // completion, as for an acknowledged operation. (One that
            // closes after this look loses the message, as with any
            // provider that completes at transmit.)
            if peer.seg.owner_closed() {
                drop(peers);
                self.completed(op, Err(Error::HOSTUNREACH));
                return Ok(());
            }
            w.flags |= W_NOACK;
            let r = send(&w);
            // Progress and completions may look peers up: not under the lock.
            drop(peers);
            if r == Err(Error::AGAIN) {
                self.progress_app(true);
            }
            r?;
            // Never in flight: no locked instruction here, which would
            // wait for the cell's stores to leave this CPU.
            self.completed(op, Ok(()));
            return Ok(());
        }
        // Only a message that completes in the inbox holds the lock.
        debug_assert!(peers.is_none());
        let id = lock(&self.pend).insert(op);
        w.op = id;
        self.inflight.fetch_add(1, Ordering::AcqRel);
        match send(&w) {
            Ok(()) => {
                // A peer found gone after this operation was looked up had
                // its pending operations failed before this one existed:
                // fail it too (the peer check adds to `dead` first).
                if self.is_dead(&dest) {
                    let op = lock(&self.pend).take(id);
                    if let Some(op) = op {
                        self.complete(op, Err(Error::IO));
                    }
                }
                Ok(())
            }
            Err(e) => {
                lock(&self.pend).take(id);
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                if e == Error::AGAIN {
                    self.progress_app(true);
                }
                Err(e)
            }
        }
    }

    /// A bulk write or read copied by this process with one cross-memory
    /// call, after checking it against the target's shared slots
    /// (`direct.rs`), and completed here: true when done so. False: the
    /// request path takes it (a region or an access that the check leaves
    /// to the target, a refusal, a copy that failed, or a target that does
    /// not share its slots).
    fn direct(&self, p: &Post<'_>, dest: &Address, len: u64, report: bool, cntr: usize) -> bool {
        if !*DIRECT
            || p.data.is_some()
            || !self.auth.is_empty()
            || (p.flags & FI_INJECT != 0 && len as usize > INLINE)
        {
            return false;
        }
        // Shorter ones go direct when lone (a ping-pong's).
        if len < super::super::direct::DIRECT_MIN && !self.is_lone_rma(len as usize) {
            return false;
        }
        let Ok(peer) = self.peer(dest) else {
            return false;
        };
        if !peer.cma || peer.seg.owner_closed() || self.is_dead(dest) {
            return false;
        }
        let Some(fd) = peer.seg.direct_table() else {
            return false;
        };
        let pid = peer.seg.hdr().pid.load(Ordering::Relaxed);
        let Some(table) = peer
            .table
            .get_or_init(|| super::super::direct::PeerTable::open(pid, fd))
        else {
            return false;
        };
        // A large transfer posted alone goes in halves through the target
        // (see SPLIT_FROM).
        let big = len >= super::super::direct::SPLIT_FROM;
        if big {
            let now = tune::now_ns();
            let last = self.last_big.swap(now, Ordering::Relaxed);
            if now.saturating_sub(last) > super::super::direct::STREAM_GAP_NS {
                return false;
            }
        }
        let read = p.kind == OpKind::Read;
        let op = Pending {
            context: p.context,
            cflags: cflags(&p.kind),
            len,
            report,
            cntr,
            sink: Vec::new(),
            bulk: None,
            peer: *dest,
            tag: 0,
            data: 0,
        };
        // Of a stream, a transfer the caller's buffers stay lent for is
        // copied with the next ones, in one call (`batch.rs`).
        if *batch::BATCH
            && !big
            && len >= super::super::direct::DIRECT_MIN
            && p.flags & FI_INJECT == 0
            && !p.silent
            && p.local.len() <= IOV_MAX
            && !self.polled_since(true)
        {
            self.batch_push(batch::Batched {
                peer: Arc::clone(&peer),
                dest: p.dest,
                read,
                key: p.key,
                addr: p.addr,
                len,
                local: p.local.to_vec(),
                flags: p.flags,
                op,
            });
            return true;
        }
        // Copied now: after what the batch holds.
        if !self.flush_batch() {
            return false;
        }
        let want = if read {
            Access::REMOTE_READ
        } else {
            Access::REMOTE_WRITE
        };
        let copied = table.access(p.key, p.addr, len, want, |at| {
            direct_copy(table.pid(), p.local, at, len, read)
        });
        if big {
            self.last_big.store(tune::now_ns(), Ordering::Relaxed);
        }
        if copied != Some(true) {
            return false;
        }
        // Never in flight: complete now, as an inline message is.
        self.completed(op, Ok(()));
        true
    }

    /// The common small transfers, on a short path: one buffer carried
    /// inline to a peer already met, complete once it is in the target's
    /// inbox, which answers nothing ([`W_NOACK`]):
    /// - a send without FI_DELIVERY_COMPLETE (the caller checked that, the
    ///   size and, under FI_MR_LOCAL, that it is an inject), in the short
    ///   header ([`Small`]) when the endpoint has no authorization key;
    /// - an `fi_inject_write*` of an endpoint without a write counter (a
    ///   refused one is logged and counted at the target, as on the
    ///   general path).
    ///
    /// It does what [`Xfer::post`] does for them, without building the
    /// general request or taking a count on the peer. None when the
    /// general path must take it: a peer not met yet, a write that waits
    /// for its answer.
    #[inline(always)]
    pub fn post_small(&self, q: &Quick) -> Option<Result<()>> {
        if q.len > INLINE || self.auth.len() > AUTH_MAX {
            return None;
        }
        // Nothing overtakes the batch's transfers (`batch.rs`).
        if !self.flush_batch() {
            return Some(Err(Error::AGAIN));
        }
        if q.write.is_some()
            && (!q.silent
                || self.cntr(C_WRITE).is_some()
                || (*DIRECT
                    && (q.len as u64 >= super::super::direct::DIRECT_MIN
                        || self.may_be_lone_rma(q.len))))
        {
            return None;
        }
        // Read before any lookup made under it (0, which no AV has, when
        // there is none: nothing matches it).
        let version = self.av().map_or(0, |av| av.version());
        if self.inflight.load(Ordering::Acquire) >= self.ep().tx_size {
            // A destination not in the AV is refused before a full queue.
            if let Err(e) = self.resolve(q.dest) {
                return Some(Err(e));
            }
            self.progress_app(true);
            return Some(Err(Error::AGAIN));
        }
        let report = self.tx_reports(q.silent, q.flags);
        let mut peers = lock(&self.peers);
        // The destination of the last send here, the AV unchanged since:
        // its peer without the AV's lookup.
        let (dest, peer) = match peers.by_dest(q.dest, version) {
            Some(found) => found,
            None => {
                drop(peers);
                let dest = match self.resolve(q.dest) {
                    Ok(a) => a,
                    Err(e) => return Some(Err(e)),
                };
                peers = lock(&self.peers);
                (dest, peers.learn_dest(q.dest, version, &dest)?)
            }
        };
        // A send that may be lone is left to `post`, which decides; one of
        // a stream that goes as one copy by the target is posted there.
        if q.write.is_none() && !q.silent && q.len >= LONE_MIN {
            if self.may_be_lone(q.len, peer.cma) {
                return None;
            }
            if self.stream_single(false, q.len, peer.cma) {
                drop(peers);
                let local = [(q.buf as u64, q.len as u64)];
                let p = Post {
                    dest: q.dest,
                    kind: OpKind::Send {
                        tagged: q.tagged,
                        tag: q.tag,
                    },
                    local: &local,
                    result: &[],
                    compare: &[],
                    addr: 0,
                    key: 0,
                    data: q.data,
                    flags: q.flags,
                    silent: q.silent,
                    context: q.context,
                };
                return Some(self.post_as(&p, Some(true), true));
            }
        }
        let cntr = if q.write.is_some() { C_WRITE } else { C_SEND };
        // The operation as a completion reports it: built only where one
        // does (an inject without a counter has nothing to report).
        let op = || {
            let kind = match q.write {
                Some(_) => OpKind::Write,
                None => OpKind::Send {
                    tagged: q.tagged,
                    tag: q.tag,
                },
            };
            Pending {
                context: q.context,
                cflags: cflags(&kind),
                len: q.len as u64,
                report,
                cntr,
                sink: Vec::new(),
                bulk: None,
                peer: dest,
                tag: q.tag,
                data: q.data.unwrap_or(0),
            }
        };
        // As in post: a closed target takes nothing.
        if peer.seg.owner_closed() {
            drop(peers);
            self.completed(op(), Err(Error::HOSTUNREACH));
            return Some(Ok(()));
        }
        let flags = W_INLINE
            | W_NOACK
            | if q.tagged && q.write.is_none() {
                W_TAGGED
            } else {
                0
            }
            | if q.data.is_some() { W_DATA } else { 0 };
        // The short header when nothing needs the whole one (it takes the
        // source's pid from the claim: not in a fork child).
        let data = q.data.unwrap_or(0);
        let r = if self.auth.is_empty() && self.addr.pid == shm::my_pid() {
            self.put_small(peer, q, flags, data)
        } else {
            self.put_wire(peer, (q.write, q.tag, q.buf, q.len), flags, data)
        };
        drop(peers);
        if let Err(e) = r {
            if e == Error::AGAIN {
                self.progress_app(true);
            }
            return Some(Err(e));
        }
        if report || self.cntr(cntr).is_some() {
            self.completed(op(), Ok(()));
        }
        Some(Ok(()))
    }

    /// [`Xfer::post_small`]'s message in the short header.
    #[inline(always)]
    fn put_small(&self, peer: &Peer, q: &Quick, flags: u32, data: u64) -> Result<()> {
        let kind = if q.write.is_some() { K_SWRITE } else { K_SMSG };
        let len = q.len;
        let (flags, head) = Small::start(kind, flags, len);
        let mut c = peer.seg.claim(head + len)?;
        let cell = c.data();
        Small::write(
            flags,
            &self.addr,
            q.write.map(|(a, k)| (k, a)),
            q.tag,
            data,
            cell,
        );
        let end = payload(cell, head, q.buf, len);
        c.commit(end, Urgency::Request);
        Ok(())
    }

    /// [`Xfer::post_small`]'s message in the whole header, with the
    /// endpoint's authorization key.
    ///
    /// Takes the message's fields, not the [`Quick`]: a reference to it
    /// here kept the whole request in memory on the inlined short path.
    #[inline(never)]
    fn put_wire(
        &self,
        peer: &Peer,
        (write, tag, buf, len): (Option<(u64, u64)>, u64, *const c_void, usize),
        flags: u32,
        data: u64,
    ) -> Result<()> {
        let (addr, key) = write.unwrap_or((0, 0));
        let auth = &self.auth[..];
        let head = WIRE + auth.len();
        let w = Wire {
            flags,
            key,
            addr,
            len: len as u64,
            data,
            tag: if write.is_none() { tag } else { 0 },
            auth_len: auth.len() as u32,
            ..self.wire(if write.is_some() { K_WRITE } else { K_MSG })
        };
        peer.seg.send_with(head + len, |cell| {
            cell[..WIRE].copy_from_slice(w.bytes());
            cell[WIRE..head].copy_from_slice(auth);
            payload(cell, head, buf, len)
        })
    }

    /// Whether a transmit operation with these `flags` gets a completion
    /// entry: not an inject call, and a transmit CQ that either reports
    /// every operation or, under FI_SELECTIVE_COMPLETION, was asked to.
    #[inline]
    fn tx_reports(&self, silent: bool, flags: u64) -> bool {
        !silent
            && match self.cq(false) {
                Some((_, selective)) => !selective || flags & FI_COMPLETION != 0,
                None => false,
            }
    }

    /// Posts a receive buffer; matches it against the messages already
    /// here (a multi-receive buffer takes as many as fit).
    ///
    /// The plain receive is inlined into its callers, which build `r` in
    /// place of the call: its fields go from registers into the queue.
    /// Not inlined, `r` was built on the caller's stack with 8-byte stores
    /// and its tag and ignore mask were copied with one 16-byte load right
    /// after (a store-forwarding stall per receive, `perf record` at the
    /// receiver of `fi_rdm_bw -S 64`).
    #[inline(always)]
    pub fn post_recv(&self, r: &RecvPost<'_>) -> Result<()> {
        // The rarer paths take a copy of `r`: a reference to it would keep
        // it in memory on the common one, where it is inlined.
        if r.flags & FI_MULTI_RECV != 0 {
            return self.post_multi_recv(&{ *r });
        }
        let src = self.recv_src(r)?;
        let report = self.recv_report(r);
        let mut rx = lock(&self.rx);
        if !rx.unexpected.is_empty() {
            let recv = self.recv_with(&{ *r }, src, report);
            let found = rx
                .unexpected
                .iter()
                .position(|u| u.claim.is_none() && matches(&recv, &u.w));
            if let Some(i) = found {
                let u = rx.unexpected.remove(i).unwrap_or_else(|| unreachable!());
                drop(rx);
                self.deliver(&recv, &u.w, &u.bytes, &u.remote, true);
                return Ok(());
            }
        }
        if rx.posted.len() >= self.ep().rx_size {
            return Err(Error::AGAIN);
        }
        // Written in place at the end of the queue.
        rx.posted
            .push_plain(r.tagged, r.tag, r.ignore, src, r.iov, report, r.context);
        let n = rx.posted.len();
        self.posted_recvs.store(n, Ordering::Release);
        Ok(())
    }

    /// [`Xfer::post_recv`] of a multi-receive buffer.
    #[inline(never)]
    fn post_multi_recv(&self, r: &RecvPost<'_>) -> Result<()> {
        let recv = self.recv_of(r)?;
        let mut rx = lock(&self.rx);
        // A multi-receive buffer is posted only when no waiting message
        // matches it any more; until then it is this call's alone, and
        // messages arriving meanwhile queue up as unexpected ones.
        if rx.posted.len() >= self.ep().rx_size {
            return Err(Error::AGAIN);
        }
        loop {
            let found = rx
                .unexpected
                .iter()
                .position(|u| u.claim.is_none() && matches(&recv, &u.w));
            let Some(i) = found else {
                rx.posted.push_back(recv);
                self.posted_recvs.store(rx.posted.len(), Ordering::Release);
                return Ok(());
            };
            let len = rx.unexpected[i].w.len;
            let (piece, released) = self.take_piece(&recv, len);
            let u = piece
                .is_some()
                .then(|| rx.unexpected.remove(i).unwrap_or_else(|| unreachable!()));
            drop(rx);
            if let (Some(p), Some(u)) = (piece, u) {
                self.deliver(&p, &u.w, &u.bytes, &u.remote, true);
            }
            if released {
                return Ok(());
            }
            rx = lock(&self.rx);
        }
    }

    /// The only source a receive accepts (FI_DIRECTED_RECV), if any.
    #[inline]
    fn recv_src(&self, r: &RecvPost<'_>) -> Result<Option<Address>> {
        Ok(if r.src == FI_ADDR_UNSPEC || r.src == FI_ADDR_NOTAVAIL {
            None
        } else {
            Some(self.resolve(r.src)?)
        })
    }

    /// Whether a receive's completion is reported in the CQ.
    #[inline]
    fn recv_report(&self, r: &RecvPost<'_>) -> bool {
        match self.cq(true) {
            Some((_, selective)) => !selective || r.flags & FI_COMPLETION != 0,
            None => false,
        }
    }

    /// The receive that a posted buffer stands for.
    pub(super) fn recv_of(&self, r: &RecvPost<'_>) -> Result<Recv> {
        let src = self.recv_src(r)?;
        Ok(self.recv_with(r, src, self.recv_report(r)))
    }

    /// The receive of `r` with its source and reporting already worked out.
    fn recv_with(&self, r: &RecvPost<'_>, src: Option<Address>, report: bool) -> Recv {
        let mut recv = Recv {
            tagged: r.tagged,
            tag: r.tag,
            ignore: r.ignore,
            iov: r.iov.into(),
            report,
            context: r.context,
            multi: (r.flags & FI_MULTI_RECV != 0)
                .then(|| Arc::new(Multi::new(self.ep().min_multi_recv()))),
            ..Recv::VACANT
        };
        recv.set_source(src);
        recv
    }

    /// The piece of multi-receive buffer `r` that a message of `len` bytes
    /// fills, if it fits; and whether the buffer is released. A buffer
    /// released without the message completes on its own here when no
    /// piece of it is outstanding.
    pub(super) fn take_piece(&self, r: &Recv, len: u64) -> (Option<Recv>, bool) {
        let Some(m) = r.multi.as_ref() else {
            return (None, true);
        };
        let room: u64 = r.iov.iter().map(|x| x.1).sum();
        match m.carve(room, len) {
            Carve::Piece { off, len, released } => {
                let piece = Recv {
                    iov: window(&r.iov, off, len)[..].into(),
                    multi: Some(Arc::clone(m)),
                    ..*r
                };
                (Some(piece), released)
            }
            Carve::Full => {
                crate::ox_log!(
                    Debug,
                    EpData,
                    super::super::NAME,
                    "a message of {len} bytes does not fit in what remains of multi-receive buffer {:?}: the buffer is released",
                    r.context
                );
                if m.release() {
                    self.multi_released(r, None);
                }
                (None, true)
            }
        }
    }

    /// The completion of its own that says multi-receive buffer `r` is
    /// released (fi_cq(3) FI_MULTI_RECV): no other flag, len 0; or the
    /// FI_ECANCELED error completion of a cancelled buffer.
    pub(super) fn multi_released(&self, r: &Recv, err: Option<Error>) {
        let Some((cq, _)) = self.cq(true) else {
            return;
        };
        let buf = r
            .iov
            .first()
            .map_or(std::ptr::null_mut(), |x| x.0 as *mut c_void);
        let _ = match err {
            None => cq.push(Completion {
                context: r.context,
                flags: FI_MULTI_RECV,
                buf,
                ..Default::default()
            }),
            Some(e) => cq.push_err(ErrCompletion {
                context: r.context,
                flags: FI_MULTI_RECV | FI_RECV | if r.tagged { FI_TAGGED } else { FI_MSG },
                buf,
                tag: r.tag,
                err: e.0,
                prov_errno: e.0,
                ..ErrCompletion::default()
            }),
        };
    }

    /// Cancels the posted receive with `context`: it completes with
    /// FI_ECANCELED. A multi-receive buffer stops taking messages; its
    /// error completion carries FI_MULTI_RECV unless pieces of it are still
    /// being filled, in which case the last of them does.
    pub fn cancel(&self, context: *mut c_void) {
        let mut rx = lock(&self.rx);
        let Some(i) = rx.posted.iter().position(|r| r.context == context) else {
            return;
        };
        let r = rx.posted.remove(i).unwrap_or_else(|| unreachable!());
        self.posted_recvs.store(rx.posted.len(), Ordering::Release);
        drop(rx);
        if let Some(m) = r.multi.as_ref() {
            let alone = m.release();
            if alone {
                return self.multi_released(&r, Some(Error::CANCELED));
            }
        }
        if let Some((cq, _)) = self.cq(true) {
            let _ = cq.push_err(ErrCompletion {
                context: r.context,
                flags: FI_RECV | if r.tagged { FI_TAGGED } else { FI_MSG },
                buf: r
                    .iov
                    .first()
                    .map_or(std::ptr::null_mut(), |x| x.0 as *mut c_void),
                tag: r.tag,
                err: Error::CANCELED.0,
                prov_errno: Error::CANCELED.0,
                ..ErrCompletion::default()
            });
        }
    }

    /// fi_trecvmsg with FI_PEEK (fi_tagged(3)): looks for a waiting
    /// message that `r` matches, without receiving it. Found: a completion
    /// with the message's length, tag and data (no buffer); with `claim`
    /// the message is then reserved for an FI_CLAIM receive with the same
    /// context, with `discard` it is dropped. Not found: an FI_ENOMSG error
    /// completion. A claim writes a token into the context (an application
    /// `struct fi_context`, as FI_CLAIM requires); -FI_EBUSY when that
    /// context already holds a claim.
    pub fn peek(&self, r: &RecvPost<'_>, claim: bool, discard: bool) -> Result<()> {
        if claim && r.context.is_null() {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "fi_trecvmsg: FI_CLAIM needs a struct fi_context as the context, not NULL"
            );
            return Err(Error::INVAL);
        }
        let want = self.recv_of(r)?;
        // A message in the inbox was sent before the peek: it is seen.
        self.drain_all();
        let mut rx = lock(&self.rx);
        if claim
            && rx
                .unexpected
                .iter()
                .any(|u| u.claim.is_some_and(|c| c.0 == r.context as usize))
        {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "fi_trecvmsg: FI_PEEK | FI_CLAIM with context {:?}, which already holds a claimed message",
                r.context
            );
            return Err(Error::BUSY);
        }
        let found = rx
            .unexpected
            .iter()
            .position(|u| u.claim.is_none() && matches(&want, &u.w));
        let Some(i) = found else {
            drop(rx);
            if let Some((cq, _)) = self.cq(true) {
                let _ = cq.push_err(ErrCompletion {
                    context: r.context,
                    flags: FI_TAGGED | FI_RECV,
                    tag: r.tag,
                    err: Error::NOMSG.0,
                    prov_errno: Error::NOMSG.0,
                    ..ErrCompletion::default()
                });
            }
            return Ok(());
        };
        let w = rx.unexpected[i].w;
        if claim {
            let token = self.next_grant.fetch_add(1, Ordering::Relaxed);
            // SAFETY: FI_CLAIM requires the context to be the
            // application's `struct fi_context`, the provider's to use
            // until the paired FI_CLAIM receive (fi_tagged(3)).
            unsafe {
                (*(r.context as *mut crate::abi::fabric::fi_context)).internal[0] =
                    token as *mut c_void
            };
            rx.unexpected[i].claim = Some((r.context as usize, token));
        }
        let gone = discard.then(|| rx.unexpected.remove(i)).flatten();
        drop(rx);
        if let Some(u) = gone {
            self.discarded(&u);
        }
        self.peeked(r.context, &w, w.len);
        Ok(())
    }

    /// fi_trecvmsg with FI_CLAIM and without FI_PEEK: receives into `r`
    /// (or, with `discard`, drops) the message claimed by an earlier
    /// FI_PEEK | FI_CLAIM with the same context. -FI_EINVAL when that
    /// context holds no claim.
    pub fn claimed(&self, r: &RecvPost<'_>, discard: bool) -> Result<()> {
        if r.context.is_null() {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "fi_trecvmsg: FI_CLAIM needs a struct fi_context as the context, not NULL"
            );
            return Err(Error::INVAL);
        }
        let recv = self.recv_of(r)?;
        let mut rx = lock(&self.rx);
        let at = rx
            .unexpected
            .iter()
            .position(|u| u.claim.is_some_and(|c| c.0 == r.context as usize));
        let Some(i) = at else {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "fi_trecvmsg: FI_CLAIM with context {:?}, which holds no claimed message (claim it with FI_PEEK | FI_CLAIM first)",
                r.context
            );
            return Err(Error::INVAL);
        };
        // SAFETY: the context is the application's `struct fi_context`
        // that the peek wrote the token into (fi_tagged(3)).
        let token =
            unsafe { (*(r.context as *const crate::abi::fabric::fi_context)).internal[0] } as u64;
        if rx.unexpected[i].claim.is_some_and(|c| c.1 != token) {
            crate::ox_log!(
                Warn,
                EpData,
                super::super::NAME,
                "fi_trecvmsg: FI_CLAIM with context {:?}, whose claim was overwritten since FI_PEEK | FI_CLAIM",
                r.context
            );
            return Err(Error::INVAL);
        }
        let u = rx.unexpected.remove(i).unwrap_or_else(|| unreachable!());
        drop(rx);
        if discard {
            self.discarded(&u);
            self.peeked(r.context, &u.w, 0);
        } else {
            self.deliver(&recv, &u.w, &u.bytes, &u.remote, true);
        }
        Ok(())
    }

    /// Releases the sender of a discarded message (an inline one was
    /// released when it was buffered): its send completes successfully,
    /// as the application consumed the message (fi_tagged(3)
    /// FI_MATCH_COMPLETE).
    pub(super) fn discarded(&self, u: &Unexpected) {
        if u.w.flags & W_INLINE == 0 {
            self.respond(&u.w, 0, &[]);
        }
    }

    /// The completion of a peek or a discard: the message's meta-data,
    /// `len` bytes, no buffer.
    pub(super) fn peeked(&self, context: *mut c_void, w: &Wire, len: u64) {
        if let Some((cq, _)) = self.cq(true) {
            let data = w.flags & W_DATA != 0;
            let _ = cq.push(Completion {
                context,
                flags: FI_TAGGED | FI_RECV | if data { FI_REMOTE_CQ_DATA } else { 0 },
                len: len as usize,
                data: if data { w.data } else { 0 },
                tag: w.tag,
                src: self.source(&w.src()),
                ..Default::default()
            });
        }
    }
}

/// Copies a small transfer's payload after its header in the ring cell;
/// returns the end of the message.
#[inline(always)]
fn payload(cell: &mut [u8], head: usize, buf: *const c_void, len: usize) -> usize {
    let dst = &mut cell[head..head + len];
    // SAFETY: the application's buffer is readable for the length it gave
    // (fi_msg(3), fi_rma(3)), and is not NULL where that is not 0 (the
    // caller checked); `dst` is the cell's, len bytes long.
    unsafe { super::copy::copy_short(buf as *const u8, dst.as_mut_ptr(), len) };
    head + len
}
