//! The data-transfer calls of an oxshm endpoint (fi_msg(3), fi_tagged(3),
//! fi_rma(3), fi_atomic(3)): argument checks, FI_MR_LOCAL descriptors,
//! default operation flags, then one [`Post`] or [`RecvPost`] for the
//! transport (`xfer.rs`).
//!
//! Errors returned by the call itself (nothing was posted, nothing will
//! complete): -FI_EOPBADSTATE before `fi_enable`, -FI_EOPNOTSUPP for a
//! capability the endpoint was not opened with (FI_MULTI_RECV included), an
//! unsupported atomic combination, or FI_PEEK/FI_CLAIM/FI_DISCARD on an
//! untagged receive; -FI_EINVAL for a flag combination fi_tagged(3) rules
//! out (FI_DISCARD alone, FI_MULTI_RECV with any of them, FI_CLAIM without
//! a context or without a claim on it), an empty multi-receive buffer,
//! more iovs than `iov_limit`, more than one remote iov (`rma_iov_limit` is
//! 1), local and remote lengths that differ, an fi_addr not in the AV, or a
//! bad descriptor under FI_MR_LOCAL (-FI_EACCES when its registration lacks
//! the local right), -FI_EMSGSIZE past `max_msg_size` or the inject size,
//! -FI_EAGAIN when the transmit queue or the peer's inbox is full. Anything
//! the target refuses completes in error instead (fi_cq_readerr).

use super::atomics;
use super::ep::{Ep, Limit};
use super::object::{from_fid, slot, slot_ssize};
use super::xfer::{IovList, OpKind, Post, RecvPost, ATOMIC_MAX, IOV_MAX};
use crate::abi::atomic::*;
use crate::abi::domain::{fi_datatype_raw, fi_op_raw};
use crate::abi::endpoint::*;
use crate::abi::fabric::*;
use crate::abi::rma::*;
use crate::abi::tagged::*;
use crate::error::{Error, Result};
use crate::mr::Access;
use libc::{c_int, c_void, iovec, size_t, ssize_t};

fn ep_of<'a>(e: *mut fid_ep) -> Result<&'a Ep> {
    // SAFETY: from_fid checks the object.
    unsafe { from_fid::<Ep>(e as *const fid) }
}

fn need_cap(ep: &Ep, cap: u64, name: &str, call: &str) -> Result<()> {
    if ep.caps & cap == 0 {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: the endpoint was opened without {name}"
        );
        return Err(Error::OPNOTSUPP);
    }
    Ok(())
}

/// Local buffers as (address, length), checked against `iov_limit` and,
/// under FI_MR_LOCAL, against their descriptors.
///
/// # Safety
/// `iov` holds `count` iovecs (when count > 0); `desc` is NULL or holds
/// `count` descriptors.
unsafe fn locals(
    ep: &Ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    access: Access,
    check_desc: bool,
    call: &str,
) -> Result<IovList> {
    if count > IOV_MAX {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: {count} iovs, iov_limit is {IOV_MAX}"
        );
        return Err(Error::INVAL);
    }
    if count > 0 && iov.is_null() {
        crate::ox_log!(Warn, EpData, super::NAME, "{call}: iov is NULL");
        return Err(Error::INVAL);
    }
    let mut v = IovList::default();
    for i in 0..count {
        // SAFETY: per the function contract.
        let io = unsafe { *iov.add(i) };
        let d = if desc.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: per the function contract.
            unsafe { *desc.add(i) }
        };
        push_local(
            ep,
            &mut v,
            io.iov_base,
            io.iov_len,
            d,
            access,
            check_desc,
            call,
        )?;
    }
    Ok(v)
}

#[allow(clippy::too_many_arguments)]
fn push_local(
    ep: &Ep,
    v: &mut IovList,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    access: Access,
    check_desc: bool,
    call: &str,
) -> Result<()> {
    if len > 0 && buf.is_null() {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: a buffer of {len} bytes is NULL"
        );
        return Err(Error::INVAL);
    }
    let d = ep.domain();
    if check_desc && d.mr_mode & FI_MR_LOCAL != 0 {
        // SAFETY: desc is NULL or what fi_mr_desc returned.
        unsafe { super::mr::check_local_desc(d, desc, buf as u64, len as u64, access, call) }?;
    }
    v.push((buf as u64, len as u64));
    Ok(())
}

fn total(v: &[(u64, u64)]) -> u64 {
    v.iter().map(|x| x.1).sum()
}

fn check_size(ep: &Ep, len: u64, max: Limit, inject: Option<Limit>, call: &str) -> Result<()> {
    let m = ep.limit(max) as u64;
    if len > m {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: {len} bytes exceed max_msg_size {m}"
        );
        return Err(Error::MSGSIZE);
    }
    if let Some(l) = inject {
        let m = ep.limit(l) as u64;
        if len > m {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{call}: {len} bytes exceed inject_size {m}"
            );
            return Err(Error::MSGSIZE);
        }
    }
    Ok(())
}

fn post(ep: &Ep, p: &Post<'_>, call: &str) -> Result<isize> {
    ep.xfer(call)?.post(p).map(|()| 0).inspect_err(|e| {
        if *e != Error::AGAIN {
            crate::ox_log!(Warn, EpData, super::NAME, "{call}: {e}");
        }
    })
}

// ---------------------------------------------------------------------------
// Messages and tagged messages
// ---------------------------------------------------------------------------

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
}

fn send(e: *mut fid_ep, s: Send<'_>) -> ssize_t {
    slot_ssize(s.call, || {
        let ep = ep_of(e)?;
        let (cap, name, max, inj) = if s.tagged {
            (
                FI_TAGGED,
                "FI_TAGGED",
                Limit::MaxTagged,
                Limit::InjectTagged,
            )
        } else {
            (FI_MSG, "FI_MSG", Limit::MaxMsg, Limit::InjectMsg)
        };
        need_cap(ep, cap, name, s.call)?;
        let mut flags = s.flags.unwrap_or_else(|| ep.op_flags(false));
        if s.inject {
            flags |= FI_INJECT;
        }
        let inject = flags & FI_INJECT != 0;
        // SAFETY: the caller's iov/desc arrays (fi_msg(3)).
        let local = unsafe { locals(ep, s.iov, s.desc, s.count, Access::SEND, !inject, s.call) }?;
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
        let search = recv_flags(ep, &r, flags)?;
        let src = if ep.caps & FI_DIRECTED_RECV != 0 {
            r.src
        } else {
            FI_ADDR_UNSPEC
        };
        // A peek and a discard take no data: their buffers are ignored
        // (fi_tagged(3)).
        let local = if flags & (FI_PEEK | FI_DISCARD) != 0 {
            IovList::default()
        } else {
            // SAFETY: the caller's iov/desc arrays (fi_msg(3)).
            unsafe { locals(ep, r.iov, r.desc, r.count, Access::RECV, true, r.call) }?
        };
        if flags & FI_MULTI_RECV != 0 && total(&local) == 0 {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
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
        crate::ox_log!(Warn, EpData, super::NAME, "{}: {what}", r.call);
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

fn one(buf: *const c_void, len: size_t) -> iovec {
    iovec {
        iov_base: buf as *mut c_void,
        iov_len: len,
    }
}

pub(crate) unsafe extern "C" fn msg_recv(
    e: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    mut desc: *mut c_void,
    src: fi_addr_t,
    context: *mut c_void,
) -> ssize_t {
    let io = one(buf, len);
    recv(
        e,
        Recv {
            call: "fi_recv",
            tagged: false,
            tag: 0,
            ignore: 0,
            iov: &io,
            desc: &mut desc,
            count: 1,
            src,
            flags: None,
            context,
        },
    )
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

fn null_msg(call: &str) -> ssize_t {
    crate::ox_log!(Warn, EpData, super::NAME, "{call}: msg is NULL");
    Error::INVAL.code() as ssize_t
}

#[allow(clippy::too_many_arguments)]
fn send_one(
    e: *mut fid_ep,
    call: &str,
    tagged: bool,
    tag: u64,
    buf: *const c_void,
    len: size_t,
    mut desc: *mut c_void,
    dest: fi_addr_t,
    data: Option<u64>,
    inject: bool,
    context: *mut c_void,
) -> ssize_t {
    let io = one(buf, len);
    send(
        e,
        Send {
            call,
            tagged,
            tag,
            iov: &io,
            desc: &mut desc,
            count: 1,
            dest,
            data,
            flags: None,
            inject,
            context,
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
    send_one(
        e, "fi_send", false, 0, buf, len, desc, dest, None, false, context,
    )
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
        },
    )
}

pub(crate) unsafe extern "C" fn msg_inject(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest: fi_addr_t,
) -> ssize_t {
    send_one(
        e,
        "fi_inject",
        false,
        0,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        None,
        true,
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
    send_one(
        e,
        "fi_senddata",
        false,
        0,
        buf,
        len,
        desc,
        dest,
        Some(data),
        false,
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
    send_one(
        e,
        "fi_injectdata",
        false,
        0,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        Some(data),
        true,
        std::ptr::null_mut(),
    )
}

pub(crate) unsafe extern "C" fn tagged_recv(
    e: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    mut desc: *mut c_void,
    src: fi_addr_t,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> ssize_t {
    let io = one(buf, len);
    recv(
        e,
        Recv {
            call: "fi_trecv",
            tagged: true,
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
    send_one(
        e, "fi_tsend", true, tag, buf, len, desc, dest, None, false, context,
    )
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
    send_one(
        e,
        "fi_tinject",
        true,
        tag,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        None,
        true,
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
    send_one(
        e,
        "fi_tsenddata",
        true,
        tag,
        buf,
        len,
        desc,
        dest,
        Some(data),
        false,
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
    send_one(
        e,
        "fi_tinjectdata",
        true,
        tag,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        Some(data),
        true,
        std::ptr::null_mut(),
    )
}

// ---------------------------------------------------------------------------
// RMA
// ---------------------------------------------------------------------------

struct Rma<'a> {
    call: &'a str,
    read: bool,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: usize,
    dest: fi_addr_t,
    rma: *const fi_rma_iov,
    rma_count: usize,
    data: Option<u64>,
    flags: Option<u64>,
    inject: bool,
    context: *mut c_void,
}

fn rma(e: *mut fid_ep, r: Rma<'_>) -> ssize_t {
    slot_ssize(r.call, || {
        let ep = ep_of(e)?;
        need_cap(ep, FI_RMA, "FI_RMA", r.call)?;
        let mut flags = r.flags.unwrap_or_else(|| ep.op_flags(false));
        if r.inject {
            flags |= FI_INJECT;
        }
        let inject = flags & FI_INJECT != 0 && !r.read;
        if r.rma_count != 1 || r.rma.is_null() {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{}: {} remote iovs; rma_iov_limit is 1",
                r.call,
                r.rma_count
            );
            return Err(Error::INVAL);
        }
        // SAFETY: rma holds rma_count (1) entries (fi_rma(3)).
        let ri = unsafe { *r.rma };
        let access = if r.read { Access::READ } else { Access::WRITE };
        // SAFETY: the caller's iov/desc arrays (fi_rma(3)).
        let local = unsafe { locals(ep, r.iov, r.desc, r.count, access, !inject, r.call) }?;
        let len = total(&local);
        if ri.len as u64 != len {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{}: local buffers hold {len} bytes, the remote iov {}",
                r.call,
                ri.len
            );
            return Err(Error::INVAL);
        }
        check_size(
            ep,
            len,
            Limit::MaxRma,
            inject.then_some(Limit::InjectRma),
            r.call,
        )?;
        let p = Post {
            dest: r.dest,
            kind: if r.read { OpKind::Read } else { OpKind::Write },
            local: &local,
            result: &[],
            compare: &[],
            addr: ri.addr,
            key: ri.key,
            data: r.data,
            flags,
            silent: r.inject,
            context: r.context,
        };
        post(ep, &p, r.call)
    })
}

#[allow(clippy::too_many_arguments)]
fn rma_one(
    e: *mut fid_ep,
    call: &str,
    read: bool,
    buf: *const c_void,
    len: size_t,
    mut desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    data: Option<u64>,
    inject: bool,
    context: *mut c_void,
) -> ssize_t {
    let io = one(buf, len);
    let ri = fi_rma_iov { addr, len, key };
    rma(
        e,
        Rma {
            call,
            read,
            iov: &io,
            desc: &mut desc,
            count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            data,
            flags: None,
            inject,
            context,
        },
    )
}

#[allow(clippy::too_many_arguments)]
fn rma_v(
    e: *mut fid_ep,
    call: &str,
    read: bool,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    // The remote length is the local total (readv/writev name one remote
    // address).
    let mut len = 0usize;
    if !iov.is_null() && count <= IOV_MAX {
        for i in 0..count {
            // SAFETY: iov holds count entries (fi_rma(3)).
            len += unsafe { (*iov.add(i)).iov_len };
        }
    }
    let ri = fi_rma_iov { addr, len, key };
    rma(
        e,
        Rma {
            call,
            read,
            iov,
            desc,
            count,
            dest,
            rma: &ri,
            rma_count: 1,
            data: None,
            flags: None,
            inject: false,
            context,
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rma_read(
    e: *mut fid_ep,
    buf: *mut c_void,
    len: size_t,
    desc: *mut c_void,
    src: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    rma_one(
        e, "fi_read", true, buf, len, desc, src, addr, key, None, false, context,
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rma_readv(
    e: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    src: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    rma_v(
        e, "fi_readv", true, iov, desc, count, src, addr, key, context,
    )
}

fn rma_msg(e: *mut fid_ep, call: &str, read: bool, m: *const fi_msg_rma, flags: u64) -> ssize_t {
    if m.is_null() {
        return null_msg(call);
    }
    // SAFETY: m is a valid fi_msg_rma (fi_rma(3)).
    let m = unsafe { *m };
    rma(
        e,
        Rma {
            call,
            read,
            iov: m.msg_iov,
            desc: m.desc,
            count: m.iov_count,
            dest: m.addr,
            rma: m.rma_iov,
            rma_count: m.rma_iov_count,
            data: (!read && flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data),
            flags: Some(flags),
            inject: false,
            context: m.context,
        },
    )
}

pub(crate) unsafe extern "C" fn rma_readmsg(
    e: *mut fid_ep,
    m: *const fi_msg_rma,
    flags: u64,
) -> ssize_t {
    rma_msg(e, "fi_readmsg", true, m, flags)
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rma_write(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    rma_one(
        e, "fi_write", false, buf, len, desc, dest, addr, key, None, false, context,
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rma_writev(
    e: *mut fid_ep,
    iov: *const iovec,
    desc: *mut *mut c_void,
    count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    rma_v(
        e,
        "fi_writev",
        false,
        iov,
        desc,
        count,
        dest,
        addr,
        key,
        context,
    )
}

pub(crate) unsafe extern "C" fn rma_writemsg(
    e: *mut fid_ep,
    m: *const fi_msg_rma,
    flags: u64,
) -> ssize_t {
    rma_msg(e, "fi_writemsg", false, m, flags)
}

pub(crate) unsafe extern "C" fn rma_inject(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
) -> ssize_t {
    rma_one(
        e,
        "fi_inject_write",
        false,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        addr,
        key,
        None,
        true,
        std::ptr::null_mut(),
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rma_writedata(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    desc: *mut c_void,
    data: u64,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> ssize_t {
    rma_one(
        e,
        "fi_writedata",
        false,
        buf,
        len,
        desc,
        dest,
        addr,
        key,
        Some(data),
        false,
        context,
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rma_injectdata(
    e: *mut fid_ep,
    buf: *const c_void,
    len: size_t,
    data: u64,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
) -> ssize_t {
    rma_one(
        e,
        "fi_inject_writedata",
        false,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        addr,
        key,
        Some(data),
        true,
        std::ptr::null_mut(),
    )
}

// ---------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------

/// Elements of one datatype as local iovs (`fi_ioc`), checked like locals.
///
/// # Safety
/// `ioc` holds `count` entries; `desc` is NULL or holds `count`.
#[allow(clippy::too_many_arguments)]
unsafe fn iocs(
    ep: &Ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    size: usize,
    access: Access,
    check_desc: bool,
    call: &str,
) -> Result<IovList> {
    if count > IOV_MAX || (count > 0 && ioc.is_null()) {
        crate::ox_log!(
            Warn,
            EpData,
            super::NAME,
            "{call}: {count} iocs (iov_limit {IOV_MAX}) or a NULL ioc array"
        );
        return Err(Error::INVAL);
    }
    let mut v = IovList::default();
    for i in 0..count {
        // SAFETY: per the function contract.
        let io = unsafe { *ioc.add(i) };
        let d = if desc.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: per the function contract.
            unsafe { *desc.add(i) }
        };
        let bytes = io.count.checked_mul(size).ok_or(Error::INVAL)?;
        push_local(ep, &mut v, io.addr, bytes, d, access, check_desc, call)?;
    }
    Ok(v)
}

struct Atomic<'a> {
    call: &'a str,
    kind: atomics::Kind,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: usize,
    compare: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: usize,
    result: *const fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: usize,
    dest: fi_addr_t,
    rma: *const fi_rma_ioc,
    rma_count: usize,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    data: Option<u64>,
    flags: Option<u64>,
    inject: bool,
    context: *mut c_void,
}

fn atomic(e: *mut fid_ep, a: Atomic<'_>) -> ssize_t {
    slot_ssize(a.call, || {
        let ep = ep_of(e)?;
        need_cap(ep, FI_ATOMIC, "FI_ATOMIC", a.call)?;
        let (dt, op) = (a.dt, a.op);
        let Some(size) = atomics::elem_size(dt).filter(|_| atomics::valid(a.kind, dt, op)) else {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{}: datatype {dt} with operation {op} is not supported (fi_atomicvalid)",
                a.call
            );
            return Err(Error::OPNOTSUPP);
        };
        let mut flags = a.flags.unwrap_or_else(|| ep.op_flags(false));
        if a.inject {
            flags |= FI_INJECT;
        }
        let inject = flags & FI_INJECT != 0;
        if a.rma_count != 1 || a.rma.is_null() {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{}: {} remote iocs; rma_iov_limit is 1",
                a.call,
                a.rma_count
            );
            return Err(Error::INVAL);
        }
        // SAFETY: rma holds one entry (fi_atomic(3)).
        let ri = unsafe { *a.rma };
        let read_only = op == crate::abi::domain::fi_op::FI_ATOMIC_READ as u32;
        // SAFETY: the caller's ioc/desc arrays (fi_atomic(3)).
        let local = if read_only {
            IovList::default()
        } else {
            unsafe {
                iocs(
                    ep,
                    a.ioc,
                    a.desc,
                    a.count,
                    size,
                    Access::WRITE,
                    !inject,
                    a.call,
                )
            }?
        };
        // SAFETY: as above.
        let compare = unsafe {
            iocs(
                ep,
                a.compare,
                a.compare_desc,
                a.compare_count,
                size,
                Access::WRITE,
                true,
                a.call,
            )
        }?;
        // SAFETY: as above.
        let result = unsafe {
            iocs(
                ep,
                a.result,
                a.result_desc,
                a.result_count,
                size,
                Access::READ,
                true,
                a.call,
            )
        }?;
        let want = ri.count as u64 * size as u64;
        let mismatch = (!read_only && total(&local) != want)
            || (a.kind == atomics::Kind::Compare && total(&compare) != want)
            || (a.kind != atomics::Kind::Base && total(&result) != want);
        if mismatch || want == 0 {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{}: operand, compare and result counts must equal the remote count {} (and be nonzero)",
                a.call,
                ri.count
            );
            return Err(Error::INVAL);
        }
        if want as usize > ATOMIC_MAX {
            crate::ox_log!(
                Warn,
                EpData,
                super::NAME,
                "{}: {} elements of {size} bytes exceed the {ATOMIC_MAX} bytes of one atomic (fi_atomicvalid)",
                a.call,
                ri.count
            );
            return Err(Error::MSGSIZE);
        }
        let p = Post {
            dest: a.dest,
            kind: OpKind::Atomic {
                kind: a.kind,
                dt,
                op,
            },
            local: &local,
            result: &result,
            compare: &compare,
            addr: ri.addr,
            key: ri.key,
            data: a.data,
            flags,
            silent: a.inject,
            context: a.context,
        };
        post(ep, &p, a.call)
    })
}

impl Default for Atomic<'_> {
    fn default() -> Self {
        Atomic {
            call: "",
            kind: atomics::Kind::Base,
            ioc: std::ptr::null(),
            desc: std::ptr::null_mut(),
            count: 0,
            compare: std::ptr::null(),
            compare_desc: std::ptr::null_mut(),
            compare_count: 0,
            result: std::ptr::null(),
            result_desc: std::ptr::null_mut(),
            result_count: 0,
            dest: 0,
            rma: std::ptr::null(),
            rma_count: 0,
            dt: 0,
            op: 0,
            data: None,
            flags: None,
            inject: false,
            context: std::ptr::null_mut(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_write(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    mut desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_atomic",
            ioc: &io,
            desc: &mut desc,
            count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

/// Sum of the element counts of `count` iocs (0 for a bad array).
fn ioc_count(ioc: *const fi_ioc, count: usize) -> usize {
    if ioc.is_null() || count > IOV_MAX {
        return 0;
    }
    // SAFETY: ioc holds count entries (fi_atomic(3)).
    (0..count).map(|i| unsafe { (*ioc.add(i)).count }).sum()
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_writev(
    e: *mut fid_ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let ri = fi_rma_ioc {
        addr,
        count: ioc_count(ioc, count),
        key,
    };
    atomic(
        e,
        Atomic {
            call: "fi_atomicv",
            ioc,
            desc,
            count,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

fn atomic_msg_of(call: &str, m: *const fi_msg_atomic, flags: u64) -> Option<Atomic<'_>> {
    if m.is_null() {
        null_msg(call);
        return None;
    }
    // SAFETY: m is a valid fi_msg_atomic (fi_atomic(3)).
    let m = unsafe { *m };
    Some(Atomic {
        call,
        ioc: m.msg_iov,
        desc: m.desc,
        count: m.iov_count,
        dest: m.addr,
        rma: m.rma_iov,
        rma_count: m.rma_iov_count,
        dt: m.datatype,
        op: m.op,
        data: (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data),
        flags: Some(flags),
        context: m.context,
        ..Default::default()
    })
}

pub(crate) unsafe extern "C" fn atomic_writemsg(
    e: *mut fid_ep,
    m: *const fi_msg_atomic,
    flags: u64,
) -> ssize_t {
    match atomic_msg_of("fi_atomicmsg", m, flags) {
        Some(a) => atomic(e, a),
        None => Error::INVAL.code() as ssize_t,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_inject(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_inject_atomic",
            ioc: &io,
            count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            inject: true,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_readwrite(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    mut desc: *mut c_void,
    result: *mut c_void,
    mut result_desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let rio = fi_ioc {
        addr: result,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_fetch_atomic",
            kind: atomics::Kind::Fetch,
            ioc: &io,
            desc: &mut desc,
            count: 1,
            result: &rio,
            result_desc: &mut result_desc,
            result_count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_readwritev(
    e: *mut fid_ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let ri = fi_rma_ioc {
        addr,
        count: ioc_count(result, result_count),
        key,
    };
    atomic(
        e,
        Atomic {
            call: "fi_fetch_atomicv",
            kind: atomics::Kind::Fetch,
            ioc,
            desc,
            count,
            result,
            result_desc,
            result_count,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

pub(crate) unsafe extern "C" fn atomic_readwritemsg(
    e: *mut fid_ep,
    m: *const fi_msg_atomic,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    flags: u64,
) -> ssize_t {
    match atomic_msg_of("fi_fetch_atomicmsg", m, flags) {
        Some(a) => atomic(
            e,
            Atomic {
                kind: atomics::Kind::Fetch,
                result,
                result_desc,
                result_count,
                ..a
            },
        ),
        None => Error::INVAL.code() as ssize_t,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_compwrite(
    e: *mut fid_ep,
    buf: *const c_void,
    count: size_t,
    mut desc: *mut c_void,
    compare: *const c_void,
    mut compare_desc: *mut c_void,
    result: *mut c_void,
    mut result_desc: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let io = fi_ioc {
        addr: buf as *mut c_void,
        count,
    };
    let cio = fi_ioc {
        addr: compare as *mut c_void,
        count,
    };
    let rio = fi_ioc {
        addr: result,
        count,
    };
    let ri = fi_rma_ioc { addr, count, key };
    atomic(
        e,
        Atomic {
            call: "fi_compare_atomic",
            kind: atomics::Kind::Compare,
            ioc: &io,
            desc: &mut desc,
            count: 1,
            compare: &cio,
            compare_desc: &mut compare_desc,
            compare_count: 1,
            result: &rio,
            result_desc: &mut result_desc,
            result_count: 1,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_compwritev(
    e: *mut fid_ep,
    ioc: *const fi_ioc,
    desc: *mut *mut c_void,
    count: size_t,
    compare: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: size_t,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    context: *mut c_void,
) -> ssize_t {
    let ri = fi_rma_ioc {
        addr,
        count: ioc_count(ioc, count),
        key,
    };
    atomic(
        e,
        Atomic {
            call: "fi_compare_atomicv",
            kind: atomics::Kind::Compare,
            ioc,
            desc,
            count,
            compare,
            compare_desc,
            compare_count,
            result,
            result_desc,
            result_count,
            dest,
            rma: &ri,
            rma_count: 1,
            dt,
            op,
            context,
            ..Default::default()
        },
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn atomic_compwritemsg(
    e: *mut fid_ep,
    m: *const fi_msg_atomic,
    compare: *const fi_ioc,
    compare_desc: *mut *mut c_void,
    compare_count: size_t,
    result: *mut fi_ioc,
    result_desc: *mut *mut c_void,
    result_count: size_t,
    flags: u64,
) -> ssize_t {
    match atomic_msg_of("fi_compare_atomicmsg", m, flags) {
        Some(a) => atomic(
            e,
            Atomic {
                kind: atomics::Kind::Compare,
                compare,
                compare_desc,
                compare_count,
                result,
                result_desc,
                result_count,
                ..a
            },
        ),
        None => Error::INVAL.code() as ssize_t,
    }
}

/// `fi_atomicvalid` and friends: 0 and the most elements of one operation
/// in `*count`, or -FI_EOPNOTSUPP.
fn valid(
    e: *mut fid_ep,
    kind: atomics::Kind,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
    call: &str,
) -> c_int {
    slot(call, || {
        let ep = ep_of(e)?;
        need_cap(ep, FI_ATOMIC, "FI_ATOMIC", call)?;
        crate::boundary::nonnull(count, call, "count")?;
        let max = max_count(kind, dt, op).ok_or_else(|| {
            crate::ox_log!(
                Info,
                EpData,
                super::NAME,
                "{call}: datatype {dt} with operation {op} is not supported"
            );
            Error::OPNOTSUPP
        })?;
        // SAFETY: count checked non-NULL.
        unsafe { *count = max };
        Ok(0)
    })
}

/// Most elements of one atomic of `(dt, op)`, None when unsupported.
pub fn max_count(kind: atomics::Kind, dt: u32, op: u32) -> Option<usize> {
    let size = atomics::elem_size(dt)?;
    atomics::valid(kind, dt, op).then_some(ATOMIC_MAX / size)
}

pub(crate) unsafe extern "C" fn atomic_writevalid(
    e: *mut fid_ep,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    valid(e, atomics::Kind::Base, dt, op, count, "fi_atomicvalid")
}

pub(crate) unsafe extern "C" fn atomic_readwritevalid(
    e: *mut fid_ep,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    valid(
        e,
        atomics::Kind::Fetch,
        dt,
        op,
        count,
        "fi_fetch_atomicvalid",
    )
}

pub(crate) unsafe extern "C" fn atomic_compwritevalid(
    e: *mut fid_ep,
    dt: fi_datatype_raw,
    op: fi_op_raw,
    count: *mut size_t,
) -> c_int {
    valid(
        e,
        atomics::Kind::Compare,
        dt,
        op,
        count,
        "fi_compare_atomicvalid",
    )
}

#[cfg(test)]
mod tests;
