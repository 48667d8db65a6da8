use super::super::ep::tests::{close_fid, Res};
use super::*;
use crate::abi::domain::fid_av;
use crate::abi::eq::*;
use std::ptr::{null, null_mut};

/// An enabled endpoint with one CQ (tagged format) for both
/// directions and an AV holding its own address, so that it sends to
/// itself; closed on drop.
struct Loop {
    r: Res,
    ep: *mut fid_ep,
    cq: *mut fid_cq,
    av: *mut fid_av,
    me: fi_addr_t,
}

impl Loop {
    fn new(caps: u64) -> Loop {
        let r = Res::new();
        // SAFETY: all-zero is a valid fi_info and fi_cq_attr; every
        // call below gets live objects of this provider.
        unsafe {
            let mut info: fi_info = std::mem::zeroed();
            info.caps = caps;
            let ep = r.ep_with(&mut info).unwrap();
            let mut ca: fi_cq_attr = std::mem::zeroed();
            ca.format = fi_cq_format::FI_CQ_FORMAT_TAGGED as u32;
            ca.wait_obj = fi_wait_obj::FI_WAIT_NONE as u32;
            let mut cq = null_mut();
            assert_eq!(
                super::super::cq::open(r.domain, &mut ca, &mut cq, null_mut()),
                0
            );
            let av = r.av(fi_av_type::FI_AV_TABLE);
            let bind = (*(*ep).fid.ops).bind.unwrap();
            let f = ep as *mut fid;
            assert_eq!(bind(f, cq as *mut fid, FI_TRANSMIT | FI_RECV), 0);
            assert_eq!(bind(f, av as *mut fid, 0), 0);
            assert_eq!(
                (*(*ep).fid.ops).control.unwrap()(f, FI_ENABLE, null_mut()),
                0
            );
            let name = ep_of(ep).unwrap().name().to_cstring();
            let names = [name.as_ptr()];
            let mut me = 0;
            let insert = (*(*av).ops).insert.unwrap();
            assert_eq!(
                insert(
                    av,
                    names.as_ptr() as *const c_void,
                    1,
                    &mut me,
                    0,
                    null_mut()
                ),
                1
            );
            Loop { r, ep, cq, av, me }
        }
    }

    fn tsend(&self, buf: &[u8], tag: u64) {
        // SAFETY: buf outlives the send's completion (read below).
        let rc = unsafe {
            tagged_send(
                self.ep,
                buf.as_ptr() as *const c_void,
                buf.len(),
                null_mut(),
                self.me,
                tag,
                null_mut(),
            )
        };
        assert_eq!(rc, 0);
    }

    fn send(&self, buf: &[u8]) {
        // SAFETY: as tsend.
        let rc = unsafe {
            msg_send(
                self.ep,
                buf.as_ptr() as *const c_void,
                buf.len(),
                null_mut(),
                self.me,
                null_mut(),
            )
        };
        assert_eq!(rc, 0);
    }

    fn trecvmsg(&self, buf: Option<&mut [u8]>, tag: u64, ctx: *mut c_void, flags: u64) -> ssize_t {
        let iov = buf.map(|b| iovec {
            iov_base: b.as_mut_ptr() as *mut c_void,
            iov_len: b.len(),
        });
        let m = fi_msg_tagged {
            msg_iov: iov.as_ref().map_or(null(), |i| i as *const iovec),
            desc: null_mut(),
            iov_count: iov.is_some() as usize,
            addr: FI_ADDR_UNSPEC,
            tag,
            ignore: 0,
            context: ctx,
            data: 0,
        };
        // SAFETY: m and its iov are valid for the call.
        unsafe { tagged_recvmsg(self.ep, &m, flags) }
    }

    fn recvmsg(&self, buf: &mut [u8], ctx: *mut c_void, flags: u64) -> ssize_t {
        let iov = iovec {
            iov_base: buf.as_mut_ptr() as *mut c_void,
            iov_len: buf.len(),
        };
        let m = fi_msg {
            msg_iov: &iov,
            desc: null_mut(),
            iov_count: 1,
            addr: FI_ADDR_UNSPEC,
            context: ctx,
            data: 0,
        };
        // SAFETY: as trecvmsg.
        unsafe { msg_recvmsg(self.ep, &m, flags) }
    }

    /// The next completion (`Err` with the error entry), skipping sends.
    fn next(&self) -> std::result::Result<fi_cq_tagged_entry, fi_cq_err_entry> {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // SAFETY: entries of the CQ's format; live CQ.
        unsafe {
            let read = (*(*self.cq).ops).read.unwrap();
            let readerr = (*(*self.cq).ops).readerr.unwrap();
            while std::time::Instant::now() < end {
                let mut e: fi_cq_tagged_entry = std::mem::zeroed();
                match read(self.cq, &mut e as *mut _ as *mut c_void, 1) {
                    1 if e.flags & FI_SEND != 0 => continue,
                    1 => return Ok(e),
                    n if n == -(Error::AVAIL.0 as isize) => {
                        let mut x: fi_cq_err_entry = std::mem::zeroed();
                        assert_eq!(readerr(self.cq, &mut x, 0), 1);
                        return Err(x);
                    }
                    n => assert_eq!(n, -(libc::EAGAIN as isize)),
                }
            }
        }
        panic!("no completion within 10 s");
    }

    fn ok(&self) -> fi_cq_tagged_entry {
        match self.next() {
            Ok(e) => e,
            Err(x) => panic!("error completion {} (flags 0x{:x})", x.err, x.flags),
        }
    }

    fn err(&self) -> fi_cq_err_entry {
        match self.next() {
            Ok(e) => panic!(
                "completion flags 0x{:x} len {}, not an error",
                e.flags, e.len
            ),
            Err(x) => x,
        }
    }

    /// True when no receive completion shows up for a while.
    fn quiet(&self) -> bool {
        let end = std::time::Instant::now() + std::time::Duration::from_millis(50);
        // SAFETY: as next.
        unsafe {
            let read = (*(*self.cq).ops).read.unwrap();
            while std::time::Instant::now() < end {
                let mut e: fi_cq_tagged_entry = std::mem::zeroed();
                match read(self.cq, &mut e as *mut _ as *mut c_void, 1) {
                    1 if e.flags & FI_SEND != 0 => {}
                    -11 => {}
                    _ => return false,
                }
            }
        }
        true
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        // SAFETY: the objects opened by new.
        unsafe {
            assert_eq!(close_fid(self.ep as *mut fid), 0);
            assert_eq!(close_fid(self.cq as *mut fid), 0);
            assert_eq!(close_fid(self.av as *mut fid), 0);
        }
        let _ = &self.r;
    }
}

fn ctx() -> Box<fi_context> {
    // SAFETY: all-zero is a valid fi_context.
    Box::new(unsafe { std::mem::zeroed() })
}

fn cp(c: &mut fi_context) -> *mut c_void {
    c as *mut fi_context as *mut c_void
}

const EINVAL: ssize_t = -(libc::EINVAL as ssize_t);
const EOPNOTSUPP: ssize_t = -(libc::EOPNOTSUPP as ssize_t);

/// FI_PEEK reports without consuming; FI_PEEK | FI_CLAIM reserves for
/// the FI_CLAIM receive with the same context; FI_DISCARD drops.
#[test]
fn peek_claim_discard() {
    let l = Loop::new(FI_TAGGED);
    let mut c = ctx();
    // Nothing there: FI_ENOMSG.
    assert_eq!(l.trecvmsg(None, 7, cp(&mut c), FI_PEEK), 0);
    let e = l.err();
    assert_eq!(e.err, libc::ENOMSG);
    assert_eq!(e.flags, FI_TAGGED | FI_RECV);
    let msg: Vec<u8> = (0..100u8).collect();
    l.tsend(&msg, 7);
    l.tsend(&msg[..10], 8);
    l.tsend(&msg[..20], 9);
    // Peeked, not consumed: peeking again finds it again.
    for _ in 0..2 {
        assert_eq!(l.trecvmsg(None, 7, cp(&mut c), FI_PEEK), 0);
        let e = l.ok();
        assert_eq!((e.flags, e.len, e.tag), (FI_TAGGED | FI_RECV, 100, 7));
        assert_eq!(e.op_context, cp(&mut c));
    }
    // Claimed: an ordinary receive and a peek pass it by.
    assert_eq!(l.trecvmsg(None, 7, cp(&mut c), FI_PEEK | FI_CLAIM), 0);
    assert_eq!(l.ok().len, 100);
    assert_eq!(
        l.trecvmsg(None, 7, cp(&mut c), FI_PEEK | FI_CLAIM),
        -(libc::EBUSY as isize)
    );
    let mut other = ctx();
    assert_eq!(l.trecvmsg(None, 7, cp(&mut other), FI_PEEK), 0);
    assert_eq!(l.err().err, libc::ENOMSG);
    // FI_CLAIM through a context that holds no claim.
    let mut buf = [0u8; 128];
    assert_eq!(
        l.trecvmsg(Some(&mut buf), 7, cp(&mut other), FI_CLAIM),
        EINVAL
    );
    assert_eq!(l.trecvmsg(Some(&mut buf), 7, null_mut(), FI_CLAIM), EINVAL);
    // A context whose claim was overwritten.
    let saved = c.internal[0];
    c.internal[0] = 0xbad as *mut c_void;
    assert_eq!(l.trecvmsg(Some(&mut buf), 7, cp(&mut c), FI_CLAIM), EINVAL);
    c.internal[0] = saved;
    // The claimed message is received through its context.
    assert_eq!(l.trecvmsg(Some(&mut buf), 0, cp(&mut c), FI_CLAIM), 0);
    let e = l.ok();
    assert_eq!((e.flags, e.len, e.tag), (FI_TAGGED | FI_RECV, 100, 7));
    assert_eq!(&buf[..100], &msg[..]);
    // Peek and discard.
    assert_eq!(l.trecvmsg(None, 8, cp(&mut c), FI_PEEK | FI_DISCARD), 0);
    assert_eq!(l.ok().len, 10);
    assert_eq!(l.trecvmsg(None, 8, cp(&mut c), FI_PEEK), 0);
    assert_eq!(l.err().err, libc::ENOMSG);
    // Claim, then discard the claim.
    assert_eq!(l.trecvmsg(None, 9, cp(&mut c), FI_PEEK | FI_CLAIM), 0);
    assert_eq!(l.ok().len, 20);
    assert_eq!(l.trecvmsg(None, 0, cp(&mut c), FI_CLAIM | FI_DISCARD), 0);
    let e = l.ok();
    assert_eq!((e.len, e.tag), (0, 9));
    assert_eq!(l.trecvmsg(None, 9, cp(&mut c), FI_PEEK), 0);
    assert_eq!(l.err().err, libc::ENOMSG);
    // Bad combinations are refused by the call.
    assert_eq!(l.trecvmsg(None, 9, cp(&mut c), FI_DISCARD), EINVAL);
    assert_eq!(l.trecvmsg(None, 9, null_mut(), FI_PEEK | FI_CLAIM), EINVAL);
    assert_eq!(l.recvmsg(&mut buf, cp(&mut c), FI_PEEK), EOPNOTSUPP);
    assert!(l.quiet());
}

/// A multi-receive buffer takes messages back to back and says on its
/// last completion that it is released.
#[test]
fn multi_recv_packs_and_releases() {
    let l = Loop::new(FI_MSG | FI_TAGGED | FI_MULTI_RECV);
    let ep = ep_of(l.ep).unwrap();
    let min = 64usize;
    // SAFETY: a size_t option value.
    let rc = unsafe {
        let f = l.ep as *mut fid;
        (*(*l.ep).ops).setopt.unwrap()(
            f,
            FI_OPT_ENDPOINT as c_int,
            FI_OPT_MIN_MULTI_RECV as c_int,
            &min as *const usize as *const c_void,
            8,
        )
    };
    assert_eq!(rc, 0);
    assert_eq!(ep.min_multi_recv(), 64);
    let mut buf = vec![0u8; 300];
    let base = buf.as_ptr() as usize;
    let mut c = ctx();
    assert_eq!(l.recvmsg(&mut buf, cp(&mut c), FI_MULTI_RECV), 0);
    // Received one after the other (one arrives before the buffer).
    let msgs: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i + 1; 100]).collect();
    for m in &msgs[..2] {
        l.send(m);
        let e = l.ok();
        assert_eq!(e.flags, FI_MSG | FI_RECV);
        assert_eq!(e.op_context, cp(&mut c));
        assert_eq!(e.len, 100);
    }
    // 100 bytes left >= 64: still posted. The third leaves 0.
    l.send(&msgs[2]);
    let e = l.ok();
    assert_eq!(e.flags, FI_MSG | FI_RECV | FI_MULTI_RECV);
    assert_eq!(e.buf as usize, base + 200);
    assert!(buf.chunks(100).zip(&msgs).all(|(a, b)| a == &b[..]));
    // Released: the next message waits for a new buffer.
    l.send(&msgs[0]);
    assert!(l.quiet());
    // A fresh buffer too small for the waiting message truncates it
    // and is released with it.
    let mut small = [0u8; 10];
    let mut c2 = ctx();
    assert_eq!(l.recvmsg(&mut small, cp(&mut c2), FI_MULTI_RECV), 0);
    let e = l.err();
    assert_eq!(e.err, Error::TRUNC.0);
    assert_eq!((e.len, e.olen), (10, 90));
    assert_eq!(e.flags, FI_MSG | FI_RECV | FI_MULTI_RECV);
    assert_eq!(small, [1u8; 10]);
    // A used buffer too small for the next message is released on its
    // own (flags FI_MULTI_RECV only, len 0) and the message goes to
    // the receive posted after it.
    let mut c3 = ctx();
    let mut c4 = ctx();
    let mut b3 = vec![0u8; 180];
    let mut b4 = vec![0u8; 100];
    assert_eq!(l.recvmsg(&mut b3, cp(&mut c3), FI_MULTI_RECV), 0);
    assert_eq!(l.recvmsg(&mut b4, cp(&mut c4), 0), 0);
    l.send(&msgs[1]);
    let e = l.ok();
    assert_eq!(
        (e.op_context, e.flags, e.len),
        (cp(&mut c3), FI_MSG | FI_RECV, 100)
    );
    l.send(&msgs[2]);
    let e = l.ok();
    assert_eq!(
        (e.op_context, e.flags, e.len),
        (cp(&mut c3), FI_MULTI_RECV, 0)
    );
    let e = l.ok();
    assert_eq!(
        (e.op_context, e.flags, e.len),
        (cp(&mut c4), FI_MSG | FI_RECV, 100)
    );
    assert_eq!(b4, msgs[2]);
    // A cancelled buffer completes with FI_ECANCELED and FI_MULTI_RECV.
    let mut c5 = ctx();
    assert_eq!(l.recvmsg(&mut b3, cp(&mut c5), FI_MULTI_RECV), 0);
    l.send(&msgs[0]);
    assert_eq!(l.ok().len, 100);
    // SAFETY: the live endpoint.
    let rc = unsafe { (*(*l.ep).ops).cancel.unwrap()(l.ep as *mut fid, cp(&mut c5)) };
    assert_eq!(rc, 0);
    let e = l.err();
    assert_eq!(e.err, libc::ECANCELED);
    assert_eq!(e.flags, FI_MSG | FI_RECV | FI_MULTI_RECV);
    assert_eq!(e.op_context, cp(&mut c5));
    assert!(l.quiet());
    // Bad input.
    let mut empty = [0u8; 0];
    assert_eq!(l.recvmsg(&mut empty, cp(&mut c2), FI_MULTI_RECV), EINVAL);
    assert_eq!(
        l.trecvmsg(Some(&mut buf), 0, cp(&mut c2), FI_MULTI_RECV),
        EOPNOTSUPP
    );
}
