//! fi_rma(3) on an oxshm endpoint: reads, writes, writedata and
//! injected writes.

use super::*;

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
                crate::prov::oxshm::NAME,
                "{}: {} remote iovs; rma_iov_limit is 1",
                r.call,
                r.rma_count
            );
            return Err(Error::INVAL);
        }
        // SAFETY: rma holds rma_count (1) entries (fi_rma(3)).
        let ri = unsafe { *r.rma };
        // fi_inject_write and fi_inject_writedata come here only when their
        // short path ([`inject_one`]) left the write to this one.
        let access = if r.read { Access::READ } else { Access::WRITE };
        // SAFETY: the caller's iov/desc arrays (fi_rma(3)).
        let mut local = Locals::new();
        unsafe {
            locals(
                ep, r.iov, r.desc, r.count, access, !inject, r.call, &mut local,
            )
        }?;
        let len = total(&local);
        if ri.len as u64 != len {
            crate::ox_log!(
                Warn,
                EpData,
                crate::prov::oxshm::NAME,
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

/// fi_inject_write and fi_inject_writedata: [`rma`]'s short path for an
/// injected write ([`Xfer::post_small`]) without its general checks, in a
/// copy of its own. Whatever the short path leaves (a write counter
/// bound, a lone or direct write, a peer not met yet) goes through
/// [`rma`], which checks it all again; as with the sends
/// ([`super::msg`]'s `send_one`), a declined write has written nothing.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn inject_one(
    e: *mut fid_ep,
    call: &'static str,
    buf: *const c_void,
    len: size_t,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    data: Option<u64>,
) -> ssize_t {
    let mut general = false;
    let r = slot_ssize(call, || {
        let ep = ep_of(e)?;
        need_cap(ep, FI_RMA, "FI_RMA", call)?;
        let flags = ep.op_flags(false) | FI_INJECT;
        if len == 0 || !buf.is_null() {
            check_size(ep, len as u64, Limit::MaxRma, Some(Limit::InjectRma), call)?;
            if let Some(res) = ep.xfer(call)?.post_small(&Quick {
                dest,
                write: Some((addr, key)),
                tagged: false,
                tag: 0,
                data,
                buf,
                len,
                flags,
                silent: true,
                context: std::ptr::null_mut(),
            }) {
                return res.map(|()| 0).inspect_err(|e| {
                    if *e != Error::AGAIN {
                        crate::ox_log!(Warn, EpData, crate::prov::oxshm::NAME, "{call}: {e}");
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
    rma_one(
        e,
        call,
        false,
        buf,
        len,
        std::ptr::null_mut(),
        dest,
        addr,
        key,
        data,
        true,
        std::ptr::null_mut(),
    )
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
    inject_one(e, "fi_inject_write", buf, len, dest, addr, key, None)
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
    inject_one(
        e,
        "fi_inject_writedata",
        buf,
        len,
        dest,
        addr,
        key,
        Some(data),
    )
}
