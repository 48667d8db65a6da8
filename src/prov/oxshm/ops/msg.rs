//! fi_msg(3) and fi_tagged(3) on an oxshm endpoint: sends, receives
//! (FI_MULTI_RECV included), injects, and tagged peeks and claims.

use super::*;

/// Everything a send-type call says.
struct Send<'a> {
    call: &'a str,
    tagged: bool,
    tag: u64,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    dest: fi_addr_t,
    data: Option<u64>,
    /// None: the endpoint's default transmit flags.
    flags: Option<u64>,
    inject: bool,
    context: *mut c_void,
    /// Whether to try the short path ([`send_small`]) first: not when
    /// [`send_one`]'s own short path declined the call already.
    short: bool,
}

/// A send's capability (and its name, for the log) and size limits.
#[inline(always)]
fn send_kind(tagged: bool) -> (u64, &'static str, Limit, Limit) {
    if tagged {
        (
            FI_TAGGED,
            "FI_TAGGED",
            Limit::MaxTagged,
            Limit::InjectTagged,
        )
    } else {
        (FI_MSG, "FI_MSG", Limit::MaxMsg, Limit::InjectMsg)
    }
}

fn send(e: *mut fid_ep, s: Send<'_>) -> ssize_t {
    slot_ssize(s.call, || {
        let ep = ep_of(e)?;
        let (cap, name, max, inj) = send_kind(s.tagged);
        need_cap(ep, cap, name, s.call)?;
        let mut flags = s.flags.unwrap_or_else(|| ep.op_flags(false));
        if s.inject {
            flags |= FI_INJECT;
        }
        let inject = flags & FI_INJECT != 0;
        if s.short {
            if let Some(r) = send_small(ep, &s, flags, inject, max, inj) {
                return r;
            }
        }
        // SAFETY: the caller's iov/desc arrays (fi_msg(3)).
        let mut local = Locals::new();
        unsafe {
            locals(
                ep,
                s.iov,
                s.desc,
                s.count,
                Access::SEND,
                !inject,
                s.call,
                &mut local,
            )
        }?;
        check_size(ep, total(&local), max, inject.then_some(inj), s.call)?;
        let p = Post {
            dest: s.dest,
            kind: OpKind::Send {
                tagged: s.tagged,
                tag: s.tag,
            },
            local: &local,
            result: &[],
            compare: &[],
            addr: 0,
            key: 0,
            data: s.data,
            flags,
            silent: s.inject,
            context: s.context,
        };
        post(ep, &p, s.call)
    })
}

/// The short path of a send ([`Xfer::post_small`]): one buffer, no
/// FI_DELIVERY_COMPLETE, and under FI_MR_LOCAL only an inject (whose desc
/// is not needed). None: the general path takes it.
#[inline]
fn send_small(
    ep: &Ep,
    s: &Send<'_>,
    flags: u64,
    inject: bool,
    max: Limit,
    inj: Limit,
) -> Option<Result<isize>> {
    if s.count != 1
        || s.iov.is_null()
        || flags & FI_DELIVERY_COMPLETE != 0
        || (!inject && ep.domain().mr_mode & FI_MR_LOCAL != 0)
    {
        return None;
    }
    // SAFETY: count is 1 and iov is not NULL (fi_msg(3)).
    let io = unsafe { *s.iov };
    if io.iov_len > 0 && io.iov_base.is_null() {
        return None;
    }
    if let Err(e) = check_size(ep, io.iov_len as u64, max, inject.then_some(inj), s.call) {
        return Some(Err(e));
    }
    let x = match ep.xfer(s.call) {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let r = x.post_small(&Quick {
        dest: s.dest,
        write: None,
        tagged: s.tagged,
        tag: s.tag,
        data: s.data,
        buf: io.iov_base,
        len: io.iov_len,
        flags,
        silent: s.inject,
        context: s.context,
    })?;
    Some(r.map(|()| 0).inspect_err(|e| {
        if *e != Error::AGAIN {
            crate::ox_log!(Warn, EpData, super::super::NAME, "{}: {e}", s.call);
        }
    }))
}

struct Recv<'a> {
    call: &'a str,
    tagged: bool,
    tag: u64,
    ignore: u64,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    src: fi_addr_t,
    flags: Option<u64>,
    context: *mut c_void,
}

fn recv(e: *mut fid_ep, r: Recv<'_>) -> ssize_t {
    slot_ssize(r.call, || {
        let ep = ep_of(e)?;
        let (cap, name) = if r.tagged {
            (FI_TAGGED, "FI_TAGGED")
        } else {
            (FI_MSG, "FI_MSG")
        };
        need_cap(ep, cap, name, r.call)?;
        let flags = match r.flags {
            Some(f) => f,
            // A default FI_MULTI_RECV (rx_attr op_flags, FI_SETOPSFLAG)
            // applies to the receives that may use it.
            None => {
                let f = ep.op_flags(true);
                let multi_cap = if r.tagged {
                    FI_TAGGED_MULTI_RECV
                } else {
                    FI_MULTI_RECV
                };
                if ep.caps & multi_cap == 0 {
                    f & !FI_MULTI_RECV
                } else {
                    f
                }
            }
        };
        let src = if ep.caps & FI_DIRECTED_RECV != 0 {
            r.src
        } else {
            FI_ADDR_UNSPEC
        };
        // The common receive: one buffer, no search or multi-receive flag,
        // no descriptor to check (no FI_MR_LOCAL). What recv_flags and
        // locals would find for it is known: straight to the queue.
        if flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD) == 0
            && r.count == 1
            && !r.iov.is_null()
            && ep.domain().mr_mode & FI_MR_LOCAL == 0
        {
            // SAFETY: count is 1 and iov is not NULL (fi_msg(3)).
            let io = unsafe { *r.iov };
            if io.iov_len == 0 || !io.iov_base.is_null() {
                let one = [(io.iov_base as u64, io.iov_len as u64)];
                ep.xfer(r.call)?.post_recv(&RecvPost {
                    tagged: r.tagged,
                    tag: r.tag,
                    ignore: r.ignore,
                    src,
                    iov: &one,
                    flags,
                    context: r.context,
                })?;
                return Ok(0);
            }
        }
        let search = recv_flags(ep, &r, flags)?;
        // A peek and a discard take no data: their buffers are ignored
        // (fi_tagged(3)).
        let mut local = Locals::new();
        if flags & (FI_PEEK | FI_DISCARD) == 0 {
            // SAFETY: the caller's iov/desc arrays (fi_msg(3)).
            unsafe {
                locals(
                    ep,
                    r.iov,
                    r.desc,
                    r.count,
                    Access::RECV,
                    true,
                    r.call,
                    &mut local,
                )
            }?;
        }
        if flags & FI_MULTI_RECV != 0 && total(&local) == 0 {
            crate::ox_log!(
                Warn,
                EpData,
                crate::prov::oxshm::NAME,
                "{}: FI_MULTI_RECV with an empty buffer",
                r.call
            );
            return Err(Error::INVAL);
        }
        let p = RecvPost {
            tagged: r.tagged,
            tag: r.tag,
            ignore: r.ignore,
            src,
            iov: &local,
            flags,
            context: r.context,
        };
        let x = ep.xfer(r.call)?;
        match search {
            Search::None => x.post_recv(&p)?,
            Search::Peek { claim, discard } => x.peek(&p, claim, discard)?,
            Search::Claimed { discard } => x.claimed(&p, discard)?,
        }
        Ok(0)
    })
}

/// What a receive's FI_PEEK, FI_CLAIM and FI_DISCARD flags ask.
enum Search {
    /// A plain receive.
    None,
    /// Look for a matching message (and claim or discard it).
    Peek { claim: bool, discard: bool },
    /// Receive (or discard) a message claimed with this context.
    Claimed { discard: bool },
}

/// Checks the flag combination of a receive (fi_msg(3), fi_tagged(3)).
fn recv_flags(ep: &Ep, r: &Recv<'_>, flags: u64) -> Result<Search> {
    let refuse = |what: &str, e: Error| {
        crate::ox_log!(Warn, EpData, crate::prov::oxshm::NAME, "{}: {what}", r.call);
        Err(e)
    };
    let (peek, claim, discard) = (
        flags & FI_PEEK != 0,
        flags & FI_CLAIM != 0,
        flags & FI_DISCARD != 0,
    );
    if flags & FI_MULTI_RECV != 0 {
        if peek || claim || discard {
            return refuse(
                "FI_MULTI_RECV does not combine with FI_PEEK, FI_CLAIM or FI_DISCARD",
                Error::INVAL,
            );
        }
        let (cap, name) = if r.tagged {
            (FI_TAGGED_MULTI_RECV, "FI_TAGGED_MULTI_RECV")
        } else {
            (FI_MULTI_RECV, "FI_MULTI_RECV")
        };
        need_cap(ep, cap, name, r.call)?;
    }
    if !(peek || claim || discard) {
        return Ok(Search::None);
    }
    if !r.tagged {
        return refuse(
            "FI_PEEK, FI_CLAIM and FI_DISCARD apply to tagged receives only (fi_trecvmsg)",
            Error::OPNOTSUPP,
        );
    }
    if discard && !(peek || claim) {
        return refuse("FI_DISCARD needs FI_PEEK or FI_CLAIM", Error::INVAL);
    }
    if claim && r.context.is_null() {
        return refuse(
            "FI_CLAIM needs a struct fi_context as the context, not NULL",
            Error::INVAL,
        );
    }
    Ok(if peek {
        Search::Peek { claim, discard }
    } else {
        Search::Claimed { discard }
    })
}

pub(super) fn one(buf: *const c_void, len: size_t) -> iovec {
    iovec {
        iov_base: buf as *mut c_void,
        iov_len: len,
    }
}

/// fi_recv and fi_trecv: the common receive ([`recv`]'s short path: no
/// search or multi-receive flag among the endpoint's, no descriptor to
/// check) in a copy of its own for tagged and untagged calls. Anything
/// else goes through [`recv`], which checks it all again; the short path
/// declines before it posts anything.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn recv_one<const TAGGED: bool>(
    e: *mut fid_ep,
    call: &'static str,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> ssize_t {
    let mut general = false;
    let r = slot_ssize(call, || {
        let ep = ep_of(e)?;
        let (cap, name) = if TAGGED {
            (FI_TAGGED, "FI_TAGGED")
        } else {
            (FI_MSG, "FI_MSG")
        };
        need_cap(ep, cap, name, call)?;
        // A default FI_MULTI_RECV applies only where the endpoint may use
        // it ([`recv`]): the general path sorts that out.
        let flags = ep.op_flags(true);
        if flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD) == 0
            && ep.domain().mr_mode & FI_MR_LOCAL == 0
            && (len == 0 || !buf.is_null())
        {
            let src = if ep.caps & FI_DIRECTED_RECV != 0 {
                src
            } else {
                FI_ADDR_UNSPEC
            };
            let one = [(buf as u64, len as u64)];
            ep.xfer(call)?.post_recv(&RecvPost {
                tagged: TAGGED,
                tag,
                ignore,
                src,
                iov: &one,
                flags,
                context,
            })?;
            return Ok(0);
        }
        general = true;
        Ok(0)
    });
    if !general {
        return r;
    }
    let io = one(buf, len);
    let mut desc = desc;
    recv(
        e,
        Recv {
            call,
            tagged: TAGGED,
            tag,
            ignore,
            iov: &io,
            desc: &mut desc,
            count: 1,
            src,
            flags: None,
            context,
        },
    )
}

pub(crate) unsafe extern "C" fn msg_recv(
    e: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    recv_one::<false>(e, "fi_recv", buf, len, desc, src, 0, 0, context)
}

pub(crate) unsafe extern "C" fn msg_recvv(
    e: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    src: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    recv(
        e,
        Recv {
            call: "fi_recvv",
            tagged: false,
            tag: 0,
            ignore: 0,
            iov,
            desc,
            count,
            src,
            flags: None,
            context,
        },
    )
}

pub(crate) unsafe extern "C" fn msg_recvmsg(
    e: *mut fid_ep,
    m: *const fi_msg,
    flags: u64,
) -> ssize_t {
    if m.is_null() {
        return null_msg("fi_recvmsg");
    }
    // SAFETY: m is a valid fi_msg (fi_msg(3)).
    let m = unsafe { *m };
    recv(
        e,
        Recv {
            call: "fi_recvmsg",
            tagged: false,
            tag: 0,
            ignore: 0,
            iov: m.msg_iov,
            desc: m.desc,
            count: m.iov_count,
            src: m.addr,
            flags: Some(flags),
            context: m.context,
        },
    )
}

pub(super) fn null_msg(call: &str) -> ssize_t {
    crate::ox_log!(
        Warn,
        EpData,
        crate::prov::oxshm::NAME,
        "{call}: msg is NULL"
    );
    Error::INVAL.code() as ssize_t
}

/// The one-buffer sends (fi_send, fi_senddata, fi_inject, fi_injectdata
/// and their tagged forms): [`send`]'s short path ([`Xfer::post_small`])
/// reached without its general checks, in a copy of its own for each
/// kind of call (`INJECT`: an inject call, no completion). Whatever the
/// short path leaves (FI_DELIVERY_COMPLETE, a descriptor to check under
/// FI_MR_LOCAL, a peer not met yet, a long message) goes through [`send`],
/// which checks it all again without trying the short path a second time
/// ([`Send::short`]). A declined call has sent nothing and completed
/// nothing: [`Xfer::post_small`] declines before it writes a message, at
/// most having flushed the batch or learnt the peer's address, which the
/// general path would do anyway.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn send_one<const TAGGED: bool, const INJECT: bool>(
    e: *mut fid_ep,
    call: &'static str,
    tag: u64,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest: fi_addr_t,
    data: Option<u64>,
    context: *mut c_void,
) -> ssize_t {
    let mut general = false;
    let r = slot_ssize(call, || {
        let ep = ep_of(e)?;
        let (cap, name, max, inj) = send_kind(TAGGED);
        need_cap(ep, cap, name, call)?;
        let mut flags = ep.op_flags(false);
        if INJECT {
            flags |= FI_INJECT;
        }
        let inject = flags & FI_INJECT != 0;
        if flags & FI_DELIVERY_COMPLETE == 0
            && (inject || ep.domain().mr_mode & FI_MR_LOCAL == 0)
            && (len == 0 || !buf.is_null())
        {
            check_size(ep, len as u64, max, inject.then_some(inj), call)?;
            if let Some(r) = ep.xfer(call)?.post_small(&Quick {
                dest,
                write: None,
                tagged: TAGGED,
                tag,
                data,
                buf,
                len,
                flags,
                silent: INJECT,
                context,
            }) {
                return r.map(|()| 0).inspect_err(|e| {
                    if *e != Error::AGAIN {
                        crate::ox_log!(Warn, EpData, super::super::NAME, "{call}: {e}");
                    }
                });
            }
        }
        general = true;
        Ok(0)
    });
    if !general {
        return r;
    }
    let io = one(buf, len);
    let mut desc = desc;
    send(
        e,
        Send {
            call,
            tagged: TAGGED,
            tag,
            iov: &io,
            desc: &mut desc,
            count: 1,
            dest,
            data,
            flags: None,
            inject: INJECT,
            context,
            short: false,
        },
    )
}

pub(crate) unsafe extern "C" fn msg_send(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    send_one::<false, false>(e, "fi_send", 0, buf, len, desc, dest, None, context)
}

pub(crate) unsafe extern "C" fn msg_sendv(
    e: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    send(
        e,
        Send {
            call: "fi_sendv",
            tagged: false,
            tag: 0,
            iov,
            desc,
            count,
            dest,
            data: None,
            flags: None,
            inject: false,
            context,
            short: true,
        },
    )
}

pub(crate) unsafe extern "C" fn msg_sendmsg(
    e: *mut fid_ep,
    m: *const fi_msg,
    flags: u64,
) -> ssize_t {
    if m.is_null() {
        return null_msg("fi_sendmsg");
    }
    // SAFETY: m is a valid fi_msg (fi_msg(3)).
    let m = unsafe { *m };
    send(
        e,
        Send {
            call: "fi_sendmsg",
            tagged: false,
            tag: 0,
            iov: m.msg_iov,
            desc: m.desc,
            count: m.iov_count,
            dest: m.addr,
            data: (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data),
            flags: Some(flags),
            inject: false,
            context: m.context,
            short: true,
        },
    )
}

pub(crate) unsafe extern "C" fn msg_inject(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest: fi_addr_t,
) -> ssize_t {
    send_one::<false, true>(
        e,
        "fi_inject",
        0,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        None,
        std::ptr::null_mut(),
    )
}

pub(crate) unsafe extern "C" fn msg_senddata(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    data: u64,
    dest: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    send_one::<false, false>(
        e,
        "fi_senddata",
        0,
        buf,
        len,
        desc,
        dest,
        Some(data),
        context,
    )
}

pub(crate) unsafe extern "C" fn msg_injectdata(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    data: u64,
    dest: fi_addr_t,
) -> ssize_t {
    send_one::<false, true>(
        e,
        "fi_injectdata",
        0,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        Some(data),
        std::ptr::null_mut(),
    )
}

pub(crate) unsafe extern "C" fn tagged_recv(
    e: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> ssize_t {
    recv_one::<true>(e, "fi_trecv", buf, len, desc, src, tag, ignore, context)
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn tagged_recvv(
    e: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    src: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> ssize_t {
    recv(
        e,
        Recv {
            call: "fi_trecvv",
            tagged: true,
            tag,
            ignore,
            iov,
            desc,
            count,
            src,
            flags: None,
            context,
        },
    )
}

pub(crate) unsafe extern "C" fn tagged_recvmsg(
    e: *mut fid_ep,
    m: *const fi_msg_tagged,
    flags: u64,
) -> ssize_t {
    if m.is_null() {
        return null_msg("fi_trecvmsg");
    }
    // SAFETY: m is a valid fi_msg_tagged (fi_tagged(3)).
    let m = unsafe { *m };
    recv(
        e,
        Recv {
            call: "fi_trecvmsg",
            tagged: true,
            tag: m.tag,
            ignore: m.ignore,
            iov: m.msg_iov,
            desc: m.desc,
            count: m.iov_count,
            src: m.addr,
            flags: Some(flags),
            context: m.context,
        },
    )
}

pub(crate) unsafe extern "C" fn tagged_send(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> ssize_t {
    send_one::<true, false>(e, "fi_tsend", tag, buf, len, desc, dest, None, context)
}

pub(crate) unsafe extern "C" fn tagged_sendv(
    e: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> ssize_t {
    send(
        e,
        Send {
            call: "fi_tsendv",
            tagged: true,
            tag,
            iov,
            desc,
            count,
            dest,
            data: None,
            flags: None,
            inject: false,
            context,
            short: true,
        },
    )
}

pub(crate) unsafe extern "C" fn tagged_sendmsg(
    e: *mut fid_ep,
    m: *const fi_msg_tagged,
    flags: u64,
) -> ssize_t {
    if m.is_null() {
        return null_msg("fi_tsendmsg");
    }
    // SAFETY: m is a valid fi_msg_tagged (fi_tagged(3)).
    let m = unsafe { *m };
    send(
        e,
        Send {
            call: "fi_tsendmsg",
            tagged: true,
            tag: m.tag,
            iov: m.msg_iov,
            desc: m.desc,
            count: m.iov_count,
            dest: m.addr,
            data: (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data),
            flags: Some(flags),
            inject: false,
            context: m.context,
            short: true,
        },
    )
}

pub(crate) unsafe extern "C" fn tagged_inject(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest: fi_addr_t,
    tag: u64,
) -> ssize_t {
    send_one::<true, true>(
        e,
        "fi_tinject",
        tag,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        None,
        std::ptr::null_mut(),
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn tagged_senddata(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    data: u64,
    dest: fi_addr_t,
    tag: u64,
    context: *mut c_void,
) -> ssize_t {
    send_one::<true, false>(
        e,
        "fi_tsenddata",
        tag,
        buf,
        len,
        desc,
        dest,
        Some(data),
        context,
    )
}

pub(crate) unsafe extern "C" fn tagged_injectdata(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    data: u64,
    dest: fi_addr_t,
    tag: u64,
) -> ssize_t {
    send_one::<true, true>(
        e,
        "fi_tinjectdata",
        tag,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        Some(data),
        std::ptr::null_mut(),
    )
}
