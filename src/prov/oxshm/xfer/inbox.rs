//! The target's side of the data path: what an endpoint does with each
//! request in its inbox. It verifies RMA, atomics and messages against its
//! own registrations before a byte moves, executes them (or grants the
//! initiator its share, `staging.rs`), answers in the initiator's inbox,
//! and delivers messages into posted receives. See the parent module for
//! the whole data path.

use super::*;

impl Xfer {
    /// Handles ring message `m`, from a cell that process `pid` claimed.
    pub(super) fn handle(&self, pid: u32, m: &[u8]) {
        if self.small_to_front(pid, m) {
            return;
        }
        let (w, auth, body) = if is_small(m) {
            match Small::parse(pid, m) {
                Some((w, body)) => (w, &[][..], body),
                None => {
                    crate::ox_log!(
                        Warn,
                        EpData,
                        super::super::NAME,
                        "dropped a short small request ({} bytes)",
                        m.len()
                    );
                    return;
                }
            }
        } else {
            let Some((w, rest)) = Wire::parse(m) else {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "dropped a short message ({} bytes)",
                    m.len()
                );
                return;
            };
            match w.kind {
                K_RESP => return self.on_response(&w, rest),
                K_GRANT => return self.on_grant(&w, rest),
                K_DONE => return self.on_done(&w),
                K_CHUNK => return self.on_chunk(&w, rest),
                K_RDATA => return self.on_rdata(&w, rest),
                _ => {}
            }
            let auth_len = (w.auth_len as usize).min(rest.len()).min(AUTH_MAX);
            let (auth, body) = rest.split_at(auth_len);
            (w, auth, body)
        };
        let r = match w.kind {
            K_MSG => return self.on_message(&w, body),
            K_WRITE | K_READ => match self.on_rma(&w, auth, body) {
                // A shared copy: the response waits for the initiator.
                Ok(None) => return,
                Ok(Some(out)) => Ok(out),
                Err(e) => Err(e),
            },
            K_ATOMIC => self.on_atomic(&w, auth, body),
            k => {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "dropped a message of unknown kind {k} from {}",
                    w.src()
                );
                return;
            }
        };
        let (status, out) = match r {
            Ok(out) => (0, out),
            Err(e) => (e.code(), Vec::new()),
        };
        self.respond(&w, status, &out);
    }

    pub(super) fn respond(&self, req: &Wire, status: i32, out: &[u8]) {
        if req.flags & W_NOACK != 0 {
            return;
        }
        let w = Wire {
            op: req.op,
            len: out.len() as u64,
            status,
            ..self.wire(K_RESP)
        };
        self.send_to(req.src(), &[w.bytes(), out]);
    }

    /// Answers `req` with `len` bytes that `fill` writes straight into the
    /// initiator's ring (no buffer between): the answer carries them when
    /// `fill` succeeds, its error otherwise, and the outcome of `fill` is
    /// returned. None when nothing was sent, and `fill` did not run: the
    /// initiator's inbox is full or answers are queued before this one
    /// (the caller answers through [`Xfer::respond`], in order), or the
    /// initiator is gone.
    pub(super) fn respond_direct(
        &self,
        req: &Wire,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Option<Result<()>> {
        if req.flags & W_NOACK != 0 || WIRE + len > CELL_DATA {
            return None;
        }
        let d = lock(&self.deferred);
        if !d.is_empty() {
            return None;
        }
        let peer = self.peer(&req.src()).ok()?;
        let mut outcome = None;
        let sent = peer.seg.reply_with(WIRE + len, |cell| {
            let (head, data) = cell.split_at_mut(WIRE);
            let r = fill(&mut data[..len]);
            let w = Wire {
                op: req.op,
                len: if r.is_ok() { len as u64 } else { 0 },
                status: r.err().map_or(0, |e| e.code()),
                ..self.wire(K_RESP)
            };
            head.copy_from_slice(w.bytes());
            outcome = Some(r);
            if r.is_ok() {
                WIRE + len
            } else {
                WIRE
            }
        });
        drop(d);
        sent.ok().and(outcome)
    }

    /// Sends a response, or queues it (in order) when the initiator's
    /// inbox is full; a response to a peer that is gone is dropped.
    pub(super) fn send_to(&self, to: Address, parts: &[&[u8]]) {
        let mut d = lock(&self.deferred);
        if d.is_empty() {
            // A peer met before (the sender of a request) is sent to under
            // the peers lock, as a post does: no count taken and dropped.
            let sent = lock(&self.peers)
                .get_cached(&to)
                .map(|p| p.seg.send(parts, urgency(parts[0])));
            let sent = match sent {
                Some(r) => r,
                None => match self.peer(&to) {
                    Ok(p) => p.seg.send(parts, urgency(parts[0])),
                    Err(_) => return,
                },
            };
            match sent {
                Ok(()) => return,
                Err(Error::AGAIN) => {}
                Err(_) => return,
            }
        }
        d.push_back((to, parts.concat()));
        self.has_deferred.store(true, Ordering::Release);
    }

    /// Sends the responses queued by [`Xfer::send_to`], in order, as far as
    /// the initiators' inboxes take them. The test for nothing queued is
    /// inlined into every pass over the inbox (as [`Xfer::pump`]'s).
    #[inline(always)]
    pub(super) fn flush_deferred(&self) {
        if self.has_deferred.load(Ordering::Acquire) {
            self.flush_deferred_queued();
        }
    }

    #[inline(never)]
    fn flush_deferred_queued(&self) {
        let mut d = lock(&self.deferred);
        if d.is_empty() {
            self.has_deferred.store(false, Ordering::Release);
        }
        while let Some((to, msg)) = d.front() {
            match self.peer(to) {
                Ok(p) => match p.seg.send(&[msg], urgency(msg)) {
                    Err(Error::AGAIN) => return,
                    _ => {
                        d.pop_front();
                    }
                },
                Err(_) => {
                    d.pop_front();
                }
            }
        }
    }

    /// Verifies an access against this endpoint's domain, inside the
    /// caller's `_active` window ([`Active`]: closes of the domain's
    /// regions wait until it ends), and writes what it may touch into
    /// `out` (empty), where the caller uses it ([`Registry::verify_into`]).
    ///
    /// [`Registry::verify_into`]: crate::mr::Registry::verify_into
    #[inline(always)]
    pub(super) fn verify<'t>(
        &self,
        _active: &Active<'_>,
        w: &Wire,
        auth: &[u8],
        want: Access,
        len: u64,
        out: &'t mut Option<crate::mr::Target>,
    ) -> Result<&'t crate::mr::Target> {
        let d = self.domain();
        let digest = (!auth.is_empty()).then(|| d.registry.auth_digest(auth));
        // FI_MR_ENDPOINT: a region is reachable only through the endpoint
        // it is bound to. Looked at before the verification too, which
        // consumes a single-use key: a key presented to the wrong endpoint
        // is refused without being used up.
        let scoped = d.mr_mode & FI_MR_ENDPOINT != 0;
        let foreign = |h: &crate::mr::Handle| {
            let no = !d.mr_bound_to(h, self.ep);
            if no {
                crate::ox_log!(
                    Info,
                    EpData,
                    super::super::NAME,
                    "refused remote access from {}: key 0x{:x} belongs to another endpoint (FI_MR_ENDPOINT)",
                    w.src(),
                    w.key
                );
            }
            no
        };
        if scoped && d.registry.handle(w.key).is_ok_and(|h| foreign(&h)) {
            return Err(Error::ACCES);
        }
        let verified = d
            .registry
            .verify_into(w.key, w.addr, len, want, digest, out);
        match (verified, out.as_ref()) {
            // Again for the region verified (the key may have been
            // closed and reused since the look).
            (Ok(()), Some(t)) if scoped && foreign(&t.handle) => return Err(Error::ACCES),
            (Ok(()), Some(t))
                if d.pins
                    .as_ref()
                    .is_some_and(|p| p.stale(t.handle.slot(), t.pieces())) =>
            {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "refused remote access from {}: stale registration: key 0x{:x} addr 0x{:x} len {len}: its pages no longer have the frames recorded when it was registered (FI_OXSHM_PIN=check)",
                    w.src(),
                    w.key,
                    w.addr
                );
                return Err(Error::FAULT);
            }
            (Ok(()), _) => {}
            (Err(e), _) => {
                crate::ox_log!(
                    Info,
                    EpData,
                    super::super::NAME,
                    "refused remote access from {}: key 0x{:x} addr 0x{:x} len {len} needs {want:?}: {}",
                    w.src(),
                    w.key,
                    w.addr,
                    e
                );
                return Err(e);
            }
        }
        // A verification that succeeds has written the target.
        out.as_ref().ok_or(Error::INVAL)
    }

    /// Counts an accepted remote access at the endpoint counter and at
    /// counters bound to the region (fi_mr_bind).
    pub(super) fn count_remote(&self, h: &crate::mr::Handle, event: usize, len: u64) {
        if let Some(c) = self.cntr(event) {
            c.count(len);
        }
        let flag = if event == C_REMOTE_WRITE {
            FI_REMOTE_WRITE
        } else {
            FI_REMOTE_READ
        };
        self.domain().for_each_mr_cntr(h, flag, |c| c.count(len));
    }

    pub(super) fn remote_data(&self, w: &Wire, flags: u64, len: u64) {
        if w.flags & W_DATA == 0 {
            return;
        }
        if let Some((cq, _)) = self.cq(true) {
            let _ = cq.push(Completion {
                flags: flags | FI_REMOTE_CQ_DATA,
                len: len as usize,
                data: w.data,
                src: self.source(&w.src()),
                ..Default::default()
            });
        }
    }

    pub(super) fn allocated(&self) -> bool {
        self.domain().mr_mode & FI_MR_ALLOCATED != 0
    }

    /// A remote write or read: verified, then one copy (inline, or one
    /// cross-memory call), or a shared copy for a large one. `Ok(None)`:
    /// answered already (an inline read's result, written straight into
    /// the initiator's ring), or, for a shared copy, when the initiator's
    /// share is done.
    pub(super) fn on_rma(&self, w: &Wire, auth: &[u8], body: &[u8]) -> Result<Option<Vec<u8>>> {
        let read = w.kind == K_READ;
        let want = if read {
            Access::REMOTE_READ
        } else {
            Access::REMOTE_WRITE
        };
        let active = Active::enter(self.domain());
        let mut verified = None;
        let t = self.verify(&active, w, auth, want, w.len, &mut verified)?;
        let mut out = Vec::new();
        if w.flags & W_INLINE != 0 {
            if read {
                // The result goes from the registered memory straight into
                // the initiator's ring: one copy, no buffer. The access is
                // counted before the answer is published, as below.
                let checked = !self.allocated();
                let direct = self.respond_direct(w, w.len as usize, |buf| {
                    own_copy(t.pieces(), buf, checked)?;
                    self.accepted(w, &t.handle);
                    Ok(())
                });
                if direct.is_some() {
                    drop(active);
                    return Ok(None);
                }
                out = vec![0u8; w.len as usize];
                own_copy(t.pieces(), &mut out, checked)?;
            } else {
                if body.len() as u64 != w.len {
                    return Err(Error::INVAL);
                }
                copy_in(t.pieces(), body, !self.allocated())?;
            }
        } else {
            let remote = parse_iovs(body, w.niov as usize).ok_or(Error::INVAL)?;
            // Whether this process may copy to and from the initiator, and
            // whether the initiator may copy to and from us.
            let mine = self.peer(&w.src())?.cma;
            let theirs = w.flags & W_SPLIT != 0;
            if !mine && !theirs {
                return self.stage_rma(w, t.clone(), active);
            }
            let share = if theirs && (!mine || w.len >= SPLIT_MIN || self.inbox.more_behind()) {
                self.initiator_share(w.len, mine)
            } else {
                Share::NONE
            };
            if share.len > 0 {
                let (grant_t, own_t) = split_at(t.pieces(), share.len);
                if grant_t.len() <= GRANT_PIECES {
                    let (_, own_r) = split_at(&remote, share.len);
                    // The access stays active until the initiator is done.
                    active.keep();
                    let then = Then::Rma {
                        w: *w,
                        handle: t.handle,
                    };
                    self.grant(then, share, grant_t, &own_t, &own_r, read);
                    return Ok(None);
                }
                if !mine {
                    return self.stage_rma(w, t.clone(), active);
                }
            }
            cross_copy(w.src_pid, t.pieces(), &remote, w.len, !read)?;
        }
        self.accepted(w, &t.handle);
        drop(active);
        Ok(Some(out))
    }

    /// Counts an accepted remote write or read and posts its remote CQ
    /// data (inside the access's active window).
    pub(super) fn accepted(&self, w: &Wire, h: &crate::mr::Handle) {
        if w.kind == K_READ {
            self.count_remote(h, C_REMOTE_READ, w.len);
        } else {
            self.count_remote(h, C_REMOTE_WRITE, w.len);
            self.remote_data(w, FI_RMA | FI_REMOTE_WRITE, w.len);
        }
    }

    pub(super) fn on_atomic(&self, w: &Wire, auth: &[u8], body: &[u8]) -> Result<Vec<u8>> {
        let kind = match w.akind {
            0 => atomics::Kind::Base,
            1 => atomics::Kind::Fetch,
            2 => atomics::Kind::Compare,
            _ => return Err(Error::INVAL),
        };
        if !atomics::valid(kind, w.dt, w.aop) {
            return Err(Error::OPNOTSUPP);
        }
        let read_only = w.aop == crate::abi::domain::fi_op::FI_ATOMIC_READ as u32;
        let want = match (kind, read_only) {
            (_, true) => Access::REMOTE_READ,
            (atomics::Kind::Base, false) => Access::REMOTE_WRITE,
            _ => Access::REMOTE_READ | Access::REMOTE_WRITE,
        };
        let len = w.len;
        if len as usize > ATOMIC_MAX {
            return Err(Error::MSGSIZE);
        }
        let n_operand = w.niov as usize;
        if n_operand > body.len() {
            return Err(Error::INVAL);
        }
        let (operand, compare) = body.split_at(n_operand);
        let active = Active::enter(self.domain());
        let mut verified = None;
        let t = self.verify(&active, w, auth, want, len, &mut verified)?;
        let mut target = vec![0u8; len as usize];
        let mut result = if kind == atomics::Kind::Base {
            None
        } else {
            Some(vec![0u8; len as usize])
        };
        {
            let _g = lock(&ATOMIC_LOCK);
            own_copy(t.pieces(), &mut target, !self.allocated())?;
            atomics::apply(
                kind,
                w.dt,
                w.aop,
                &mut target,
                operand,
                compare,
                result.as_deref_mut(),
            )?;
            if !read_only {
                copy_in(t.pieces(), &target, !self.allocated())?;
            }
        }
        let event = if read_only {
            C_REMOTE_READ
        } else {
            C_REMOTE_WRITE
        };
        self.count_remote(&t.handle, event, len);
        drop(active);
        self.remote_data(
            w,
            FI_ATOMIC
                | if read_only {
                    FI_REMOTE_READ
                } else {
                    FI_REMOTE_WRITE
                },
            len,
        );
        Ok(result.unwrap_or_default())
    }

    /// The commonest message first, without its [`Wire`]: a short message
    /// that the oldest posted receive, a plain one with one buffer that
    /// holds it, takes. True when it did; false leaves everything as it
    /// was, for [`Xfer::on_message`]. (Built for every message, the
    /// header took twenty stores and their loads, kept in memory for the
    /// rarer paths that take it by reference.)
    #[inline(always)]
    fn small_to_front(&self, pid: u32, m: &[u8]) -> bool {
        let Some(SmallMsg {
            flags,
            tag,
            data,
            src_ep,
            src_nonce,
            body,
        }) = Small::parse_msg(m)
        else {
            return false;
        };
        let src = Address {
            pid,
            ep_id: src_ep,
            nonce: src_nonce,
        };
        let mut rx = lock(&self.rx);
        let Some((base, context, report)) = rx.posted.front().and_then(|r| {
            let ok = r.multi.is_none() && takes(r, flags & W_TAGGED != 0, tag, &src);
            match r.iov[..] {
                [(base, room)] if ok && body.len() as u64 <= room => {
                    Some((base, r.context, r.report))
                }
                _ => None,
            }
        }) else {
            return false;
        };
        rx.posted.discard_front();
        self.posted_recvs.store(rx.posted.len(), Ordering::Release);
        drop(rx);
        // SAFETY: the receive buffer is the application's writable memory
        // (fi_msg(3)), and holds the message (checked).
        unsafe { copy_short(body.as_ptr(), base as *mut u8, body.len()) };
        let len = body.len() as u64;
        self.finish_fields(context, report, base, flags, data, tag, &src, len);
        true
    }

    pub(super) fn on_message(&self, w: &Wire, body: &[u8]) {
        let inline = w.flags & W_INLINE != 0;
        let mut rx = lock(&self.rx);
        // The common case first: an inline message that the oldest
        // receive, a plain one, takes.
        if inline
            && rx
                .posted
                .front()
                .is_some_and(|r| r.multi.is_none() && matches(r, w))
        {
            // One buffer that holds the whole message (most receives): the
            // fields delivery needs are read in place, and the receive is
            // dropped where it lies instead of being copied out first.
            // Copied out, its 128 bytes were read with wide loads soon
            // after the narrow stores that posted it: bench/msg_cpu.c (a
            // receive posted, then the message to it) took 4 % more CPU
            // time a message than with the copy done by memcpy; in place,
            // 5.5 % less (15 interleaved runs), and handling an 8 B
            // message 433 instructions instead of 486 (callgrind).
            let one = rx.posted.front().and_then(|r| match r.iov[..] {
                [(base, room)] if w.len <= room && w.len == body.len() as u64 => {
                    Some((base, r.context, r.report))
                }
                _ => None,
            });
            if let Some((base, context, report)) = one {
                rx.posted.discard_front();
                self.posted_recvs.store(rx.posted.len(), Ordering::Release);
                drop(rx);
                // SAFETY: the receive buffer is the application's writable
                // memory (fi_msg(3)), and holds the message (checked).
                unsafe { copy_short(body.as_ptr(), base as *mut u8, body.len()) };
                self.respond(w, 0, &[]);
                return self.finish_plain(context, report, base, w, w.len);
            }
            let r = rx.posted.pop_front().unwrap_or_else(|| unreachable!());
            self.posted_recvs.store(rx.posted.len(), Ordering::Release);
            drop(rx);
            return self.deliver(&r, w, body, &[], false);
        }
        // A multi-receive buffer too full for the message is released and
        // the search goes on with the receives posted after it.
        let r = loop {
            let Some(i) = rx.posted.iter().position(|r| matches(r, w)) else {
                break None;
            };
            if rx.posted[i].multi.is_none() {
                // Mostly the oldest: no shift of the others.
                let r = if i == 0 {
                    rx.posted.pop_front()
                } else {
                    rx.posted.remove(i)
                };
                self.posted_recvs.store(rx.posted.len(), Ordering::Release);
                break r;
            }
            let (piece, released) = self.take_piece(&rx.posted[i], w.len);
            if released {
                rx.posted.remove(i);
                self.posted_recvs.store(rx.posted.len(), Ordering::Release);
            }
            if piece.is_some() {
                break piece;
            }
        };
        match r {
            Some(r) => {
                drop(rx);
                let remote = if inline {
                    Pieces::default()
                } else {
                    parse_iovs(body, w.niov as usize).unwrap_or_default()
                };
                let bytes = if inline { body } else { &[][..] };
                self.deliver(&r, w, bytes, &remote, false);
            }
            None => {
                rx.unexpected.push_back(Unexpected {
                    w: *w,
                    bytes: if inline { body.to_vec() } else { Vec::new() },
                    remote: if inline {
                        Pieces::default()
                    } else {
                        parse_iovs(body, w.niov as usize).unwrap_or_default()
                    },
                    claim: None,
                });
                drop(rx);
                // An inline message is buffered here: its sender is done.
                if inline {
                    self.respond(w, 0, &[]);
                }
            }
        }
    }

    /// Fills a receive with a message and completes both sides. It takes
    /// the receive and the header by reference: moved by value, each was
    /// copied again right after it was written (a store-forwarding stall
    /// per message).
    pub(super) fn deliver(
        &self,
        r: &Recv,
        w: &Wire,
        bytes: &[u8],
        remote: &[(u64, u64)],
        buffered: bool,
    ) {
        let inline = w.flags & W_INLINE != 0;
        let room: u64 = r.iov.iter().map(|x| x.1).sum();
        let take = w.len.min(room);
        let mut status = Ok(());
        if inline {
            // SAFETY: the receive buffers are the application's writable
            // memory (fi_msg(3)).
            unsafe { scatter(&bytes[..take as usize], &r.iov) };
            // An inline message that waited in the unexpected queue was
            // acknowledged when it was buffered.
            if !buffered {
                self.respond(w, 0, &[]);
            }
        } else {
            let (want, _) = split_at(&r.iov, take);
            let mine = if take == 0 {
                Ok(true)
            } else {
                self.peer_cma(&w.src())
            };
            match mine {
                Ok(true) => {
                    if self.share_recv(r, w, &want, remote, take) {
                        return;
                    }
                    status = cross_copy(w.src_pid, &want, remote, take, true)
                }
                Ok(false) => return self.stage_recv(r.clone(), *w, want, take),
                Err(e) => status = Err(e),
            }
            // The sender's buffers are released whatever happened.
            self.respond(w, status.err().map_or(0, |e| e.code()), &[]);
        }
        self.finish_recv(r, w, status);
    }

    /// Completes a receive that took (the first bytes of) message `w`.
    pub(super) fn finish_recv(&self, r: &Recv, w: &Wire, status: Result<()>) {
        let room: u64 = r.iov.iter().map(|x| x.1).sum();
        let take = w.len.min(room);
        if status.is_ok() && w.len <= room && r.multi.is_none() {
            return self.finish_plain(r.context, r.report, first_buf(r), w, take);
        }
        self.finish_other(r, w, status, room, take);
    }

    /// [`Xfer::finish_recv`] of a plain receive (not a piece of a
    /// multi-receive buffer) that took the whole message: its context,
    /// whether it reports, and its first buffer.
    #[inline(always)]
    fn finish_plain(&self, context: *mut c_void, report: bool, buf: u64, w: &Wire, take: u64) {
        self.finish_fields(context, report, buf, w.flags, w.data, w.tag, &w.src(), take);
    }

    /// [`Xfer::finish_plain`] of a message's fields: its header flags,
    /// remote CQ data, tag and sender.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn finish_fields(
        &self,
        context: *mut c_void,
        report: bool,
        buf: u64,
        flags: u32,
        data: u64,
        tag: u64,
        src: &Address,
        take: u64,
    ) {
        if let Some(c) = self.cntr(C_RECV) {
            c.count(take);
        }
        if report {
            if let Some((cq, _)) = self.cq(true) {
                let _ = cq.push(Completion {
                    context,
                    flags: flags_of_recv(flags),
                    len: take as usize,
                    buf: buf as *mut c_void,
                    data,
                    tag,
                    src: self.source(src),
                });
            }
        }
    }

    /// [`Xfer::finish_recv`] of the rest: a piece of a multi-receive
    /// buffer, a truncated message, a failed one.
    #[inline(never)]
    fn finish_other(&self, r: &Recv, w: &Wire, status: Result<()>, room: u64, take: u64) {
        let flags = recv_flags(w);
        let buf = first_buf(r) as *mut c_void;
        let truncated = w.len > room;
        // The last piece of a released multi-receive buffer says so, and
        // is reported even under FI_SELECTIVE_COMPLETION (fi_msg(3)).
        let last = r.multi.as_ref().is_some_and(|m| m.piece_done());
        let flags = flags | if last { FI_MULTI_RECV } else { 0 };
        match status {
            Ok(()) if !truncated => {
                if let Some(c) = self.cntr(C_RECV) {
                    c.count(take);
                }
                if r.report || last {
                    if let Some((cq, _)) = self.cq(true) {
                        let _ = cq.push(Completion {
                            context: r.context,
                            flags,
                            len: take as usize,
                            buf,
                            data: w.data,
                            tag: w.tag,
                            src: self.source(&w.src()),
                        });
                    }
                }
            }
            _ => {
                let err = match status {
                    Err(e) => e.0,
                    Ok(()) => Error::TRUNC.0,
                };
                if truncated {
                    crate::ox_log!(
                        Info,
                        EpData,
                        super::super::NAME,
                        "message of {} bytes truncated to the receive buffer's {room}",
                        w.len
                    );
                }
                if let Some(c) = self.cntr(C_RECV) {
                    c.inc_err(1);
                }
                if let Some((cq, _)) = self.cq(true) {
                    let _ = cq.push_err(ErrCompletion {
                        context: r.context,
                        flags,
                        len: take as usize,
                        buf,
                        data: w.data,
                        tag: w.tag,
                        olen: (w.len - take) as usize,
                        err,
                        prov_errno: err,
                        ..ErrCompletion::default()
                    });
                }
            }
        }
    }
}

/// The completion flags of a receive that message `w` filled.
#[inline(always)]
fn recv_flags(w: &Wire) -> u64 {
    flags_of_recv(w.flags)
}

/// [`recv_flags`] of a message's header flags.
#[inline(always)]
fn flags_of_recv(flags: u32) -> u64 {
    FI_RECV
        | if flags & W_TAGGED != 0 {
            FI_TAGGED
        } else {
            FI_MSG
        }
        | if flags & W_DATA != 0 {
            FI_REMOTE_CQ_DATA
        } else {
            0
        }
}

/// The address of a receive's first buffer, 0 for none (the completion's
/// `buf`).
#[inline(always)]
fn first_buf(r: &Recv) -> u64 {
    r.iov.first().map_or(0, |x| x.0)
}
