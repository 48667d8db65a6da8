use super::wait::{SPIN_MAX, SPIN_MIN, SPIN_START};
use super::*;
use crate::prov::info::{FabricAttr, API_VERSION};
use std::time::Duration;

/// An oxshm fabric and domain opened at `api_version`, closed on drop.
pub struct Res {
    pub fabric: *mut fid_fabric,
    pub domain: *mut fid_domain,
}

impl Res {
    pub fn new(api_version: u32) -> Res {
        Res::with_threading(api_version, 0)
    }

    /// A domain opened with `threading` in its domain_attr (0: none given).
    pub fn with_threading(api_version: u32, threading: u32) -> Res {
        let attr = FabricAttr {
            name: None,
            prov_name: None,
            prov_version: 0,
            api_version,
        };
        let fabric = super::super::fabric::open(&attr, std::ptr::null_mut()).unwrap();
        // SAFETY: a zeroed fi_info (no attributes) is valid input, and so
        // is one with a zeroed domain_attr but for its threading.
        let mut info: fi_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut dattr: crate::abi::fabric::fi_domain_attr = unsafe { std::mem::zeroed() };
        if threading != 0 {
            dattr.threading = threading;
            info.domain_attr = &mut dattr;
        }
        // SAFETY: fabric was just opened by oxshm.
        let fab =
            unsafe { from_fid::<super::super::fabric::Fabric>(fabric as *const fid) }.unwrap();
        // SAFETY: info is a valid fi_info.
        let domain =
            unsafe { super::super::domain::open(fab, &info, std::ptr::null_mut()) }.unwrap();
        Res { fabric, domain }
    }

    /// Closes the domain; on success it is not closed again on drop.
    pub fn close_domain(&mut self) -> c_int {
        // SAFETY: domain is the live oxshm domain opened by new.
        let rc = unsafe { fi_close_raw(self.domain as *mut fid) };
        if rc == 0 {
            self.domain = std::ptr::null_mut();
        }
        rc
    }
}

impl Drop for Res {
    fn drop(&mut self) {
        // SAFETY: both are oxshm objects opened by Res::new (the domain
        // unless close_domain closed it).
        unsafe {
            if !self.domain.is_null() {
                fi_close_raw(self.domain as *mut fid);
            }
            fi_close_raw(self.fabric as *mut fid);
        }
    }
}

/// fi_close through the object's own table.
///
/// # Safety
/// `f` is a live object of this provider.
pub unsafe fn fi_close_raw(f: *mut fid) -> c_int {
    // SAFETY: per the function contract.
    unsafe { ((*(*f).ops).close.unwrap())(f) }
}

fn attr(format: fi_cq_format, wait: fi_wait_obj, size: usize) -> fi_cq_attr {
    // SAFETY: all-zero is a valid fi_cq_attr.
    let mut a: fi_cq_attr = unsafe { std::mem::zeroed() };
    a.format = format as u32;
    a.wait_obj = wait as u32;
    a.size = size;
    a
}

fn open_cq(r: &Res, a: &mut fi_cq_attr) -> std::result::Result<*mut fid_cq, c_int> {
    let mut cq = std::ptr::null_mut();
    // SAFETY: the domain is live; a and cq are valid.
    let rc = unsafe { open(r.domain, a, &mut cq, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(cq)
    } else {
        assert!(cq.is_null(), "output written on failure");
        Err(rc)
    }
}

fn cq_ref(cq: *mut fid_cq) -> &'static Cq {
    // SAFETY: cq came from open.
    unsafe { cq_from_fid(cq as *const fid) }.unwrap()
}

fn ctx(n: usize) -> *mut c_void {
    n as *mut c_void
}

fn ops(cq: *mut fid_cq) -> &'static fi_ops_cq {
    // SAFETY: cq came from open; its ops table is static.
    unsafe { &*(*cq).ops }
}

fn close_cq(cq: *mut fid_cq) -> c_int {
    // SAFETY: cq came from open.
    unsafe { fi_close_raw(cq as *mut fid) }
}

#[test]
fn table_is_full() {
    let t = &OPS_CQ;
    assert!(t.read.is_some() && t.readfrom.is_some() && t.readerr.is_some());
    assert!(t.sread.is_some() && t.sreadfrom.is_some() && t.signal.is_some());
    assert!(t.strerror.is_some() && t.export_xpu.is_some());
    assert_eq!(t.size, std::mem::size_of::<fi_ops_cq>());
}

#[test]
fn attr_layout_by_version() {
    assert_eq!(cq_attr_len(version(1, 17)), 40);
    assert_eq!(cq_attr_len(version(2, 7)), 48);
    assert_eq!(cq_err_entry_len(version(1, 4)), 72);
    assert_eq!(cq_err_entry_len(version(1, 17)), 80);
    assert_eq!(cq_err_entry_len(version(2, 1)), 88);
}

#[test]
fn every_format_reads_its_entries() {
    let r = Res::new(API_VERSION);
    let formats = [
        fi_cq_format::FI_CQ_FORMAT_UNSPEC,
        fi_cq_format::FI_CQ_FORMAT_CONTEXT,
        fi_cq_format::FI_CQ_FORMAT_MSG,
        fi_cq_format::FI_CQ_FORMAT_DATA,
        fi_cq_format::FI_CQ_FORMAT_TAGGED,
    ];
    for f in formats {
        let cq = open_cq(&r, &mut attr(f, fi_wait_obj::FI_WAIT_NONE, 0)).unwrap();
        let c = cq_ref(cq);
        for i in 0..3u64 {
            c.push(Completion {
                context: ctx(0x100 + i as usize),
                flags: FI_RECV | FI_MSG,
                len: 10 + i as usize,
                buf: ctx(0x2000),
                data: 0xdada + i,
                tag: 0x7a9 + i,
                src: 5 + i,
            })
            .unwrap();
        }
        let mut raw = [0u8; 48 * 4];
        let p = raw.as_mut_ptr() as *mut c_void;
        let mut src = [0u64; 4];
        // SAFETY: raw holds 4 entries of any format; src 4 addresses.
        let n = unsafe { (ops(cq).readfrom.unwrap())(cq, p, 2, src.as_mut_ptr()) };
        assert_eq!(n, 2);
        assert_eq!(&src[..2], &[5, 6]);
        let sz = entry_size(f);
        // SAFETY: two entries of the format were written.
        unsafe {
            let e1 = raw.as_ptr().add(sz);
            assert_eq!(*(e1 as *const usize), 0x101, "context of entry 2, {f:?}");
            match f {
                fi_cq_format::FI_CQ_FORMAT_MSG => {
                    let e = &*(e1 as *const fi_cq_msg_entry);
                    assert_eq!((e.flags, e.len), (FI_RECV | FI_MSG, 11));
                }
                fi_cq_format::FI_CQ_FORMAT_DATA => {
                    let e = &*(e1 as *const fi_cq_data_entry);
                    assert_eq!((e.len, e.buf, e.data), (11, ctx(0x2000), 0xdadb));
                }
                fi_cq_format::FI_CQ_FORMAT_TAGGED => {
                    let e = &*(e1 as *const fi_cq_tagged_entry);
                    assert_eq!((e.data, e.tag), (0xdadb, 0x7aa));
                }
                _ => {}
            }
            // Nothing past the two entries was touched.
            assert!(raw[2 * sz..].iter().all(|&b| b == 0));
        }
        // SAFETY: as above.
        let n = unsafe { (ops(cq).read.unwrap())(cq, p, 4) };
        assert_eq!(n, 1);
        // SAFETY: as above.
        let n = unsafe { (ops(cq).read.unwrap())(cq, p, 4) };
        assert_eq!(n, Error::AGAIN.code() as isize);
        assert_eq!(close_cq(cq), 0);
    }
}

#[test]
fn errors_keep_their_place() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_NONE,
            8,
        ),
    )
    .unwrap();
    let c = cq_ref(cq);
    c.push(Completion {
        context: ctx(1),
        ..Completion::default()
    })
    .unwrap();
    c.push_err(ErrCompletion {
        context: ctx(2),
        err: libc::EACCES,
        prov_errno: libc::EACCES,
        err_data: b"key 7 rejected".to_vec(),
        src: 9,
        ..ErrCompletion::default()
    })
    .unwrap();
    c.push(Completion {
        context: ctx(3),
        ..Completion::default()
    })
    .unwrap();
    let mut out = [std::ptr::null_mut::<c_void>(); 4];
    let p = out.as_mut_ptr() as *mut c_void;
    let read = ops(cq).read.unwrap();
    let readerr = ops(cq).readerr.unwrap();
    // SAFETY: out holds 4 context entries.
    assert_eq!(unsafe { read(cq, p, 4) }, 1);
    assert_eq!(out[0], ctx(1));
    // SAFETY: as above.
    assert_eq!(unsafe { read(cq, p, 4) }, Error::AVAIL.code() as isize);
    // SAFETY: all-zero is a valid fi_cq_err_entry.
    let mut e: fi_cq_err_entry = unsafe { std::mem::zeroed() };
    // PEEK leaves it queued; a small caller buffer gets what fits.
    let mut small = [0u8; 3];
    e.err_data = small.as_mut_ptr() as *mut c_void;
    e.err_data_size = small.len();
    // SAFETY: e is a writable entry.
    assert_eq!(unsafe { readerr(cq, &mut e, FI_PEEK) }, 1);
    assert_eq!(&small, b"key");
    assert_eq!(e.err_data_size, 3);
    // SAFETY: as above.
    let mut e: fi_cq_err_entry = unsafe { std::mem::zeroed() };
    // SAFETY: e is a writable entry.
    assert_eq!(unsafe { readerr(cq, &mut e, 0) }, 1);
    assert_eq!((e.op_context, e.err, e.src_addr), (ctx(2), libc::EACCES, 9));
    assert_eq!(e.err_data_size, 14);
    // SAFETY: err_data points at the CQ's copy, valid until the next read.
    let d = unsafe { std::slice::from_raw_parts(e.err_data as *const u8, 14) };
    assert_eq!(d, b"key 7 rejected");
    // SAFETY: as above.
    assert_eq!(
        unsafe { readerr(cq, &mut e, 0) },
        Error::AGAIN.code() as isize
    );
    // SAFETY: as above.
    assert_eq!(unsafe { read(cq, p, 4) }, 1);
    assert_eq!(out[0], ctx(3));
    // SAFETY: as above.
    assert_eq!(
        unsafe { readerr(cq, &mut e, 1 << 40) },
        Error::BADFLAGS.code() as isize
    );
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn old_api_err_entry_is_not_overrun() {
    for (api, len) in [(version(1, 4), 72usize), (version(1, 17), 80)] {
        let r = Res::new(api);
        let cq = open_cq(
            &r,
            &mut attr(
                fi_cq_format::FI_CQ_FORMAT_CONTEXT,
                fi_wait_obj::FI_WAIT_NONE,
                0,
            ),
        )
        .unwrap();
        cq_ref(cq)
            .push_err(ErrCompletion {
                err: libc::EIO,
                err_data: vec![1, 2, 3],
                ..ErrCompletion::default()
            })
            .unwrap();
        let mut raw = [0xa5u8; 96];
        // The caller's entry is zeroed (no err_data buffer offered);
        // the bytes after this version's struct are a canary.
        raw[..len].fill(0);
        // SAFETY: raw is larger than any fi_cq_err_entry.
        let n = unsafe { (ops(cq).readerr.unwrap())(cq, raw.as_mut_ptr() as *mut _, 0) };
        assert_eq!(n, 1);
        assert!(
            raw[len..].iter().all(|&b| b == 0xa5),
            "api 0x{api:x} wrote past {len}"
        );
        // SAFETY: the prefix is a fi_cq_err_entry's.
        let e = unsafe { std::ptr::read_unaligned(raw.as_ptr() as *const fi_cq_err_entry) };
        assert_eq!(e.err, libc::EIO);
        assert!(!e.err_data.is_null());
        assert_eq!(close_cq(cq), 0);
    }
}

#[test]
fn full_queue_and_overrun() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_NONE,
            2,
        ),
    )
    .unwrap();
    let c = cq_ref(cq);
    c.push(Completion::default()).unwrap();
    c.push_err(ErrCompletion::default()).unwrap();
    // Full: a completion is kept beyond the size rather than lost.
    let past = Completion {
        context: 7 as *mut c_void,
        ..Default::default()
    };
    assert_eq!(c.push(past), Ok(()));
    assert_eq!(c.len(), 3);
    c.record_overrun();
    assert_eq!(c.push(Completion::default()), Err(Error::OVERRUN));
    let mut out = [std::ptr::null_mut::<c_void>(); 2];
    let p = out.as_mut_ptr() as *mut c_void;
    let read = ops(cq).read.unwrap();
    let readerr = ops(cq).readerr.unwrap();
    // SAFETY: valid buffers throughout.
    unsafe {
        let mut e: fi_cq_err_entry = std::mem::zeroed();
        assert_eq!(read(cq, p, 2), 1);
        assert_eq!(read(cq, p, 2), Error::AVAIL.code() as isize);
        assert_eq!(readerr(cq, &mut e, 0), 1);
        assert_eq!(e.err, Error::OTHER.0);
        // The one kept past the size follows the error, in order.
        assert_eq!(read(cq, p, 2), 1);
        assert_eq!(out[0], 7 as *mut c_void);
        // The queued entries are gone: now the overrun is reported.
        assert_eq!(read(cq, p, 2), Error::AVAIL.code() as isize);
        assert_eq!(readerr(cq, &mut e, 0), 1);
        assert_eq!(e.err, Error::OVERRUN.0);
        assert_eq!(e.olen, 2, "two completions lost");
        assert_eq!(read(cq, p, 2), Error::OVERRUN.code() as isize);
        assert_eq!(readerr(cq, &mut e, 0), Error::AGAIN.code() as isize);
    }
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn zero_count_read_is_a_poll() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_NONE,
            0,
        ),
    )
    .unwrap();
    let read = ops(cq).read.unwrap();
    // SAFETY: count 0 reads nothing; a NULL buf with count > 0 is refused.
    unsafe {
        assert_eq!(
            read(cq, std::ptr::null_mut(), 0),
            Error::AGAIN.code() as isize
        );
        cq_ref(cq).push(Completion::default()).unwrap();
        assert_eq!(read(cq, std::ptr::null_mut(), 0), 0);
        assert_eq!(
            read(cq, std::ptr::null_mut(), 1),
            Error::INVAL.code() as isize
        );
    }
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn sread_threshold_and_wakeup() {
    let r = Res::new(API_VERSION);
    let mut a = attr(
        fi_cq_format::FI_CQ_FORMAT_MSG,
        fi_wait_obj::FI_WAIT_UNSPEC,
        0,
    );
    a.wait_cond = fi_cq_wait_cond::FI_CQ_COND_THRESHOLD as u32;
    let cq = open_cq(&r, &mut a).unwrap();
    let c = cq_ref(cq);
    let pusher = std::thread::spawn(move || {
        for i in 0..3 {
            std::thread::sleep(Duration::from_millis(20));
            c.push(Completion {
                context: ctx(i + 1),
                ..Completion::default()
            })
            .unwrap();
        }
    });
    let mut out = [fi_cq_msg_entry {
        op_context: std::ptr::null_mut(),
        flags: 0,
        len: 0,
    }; 4];
    let t0 = Instant::now();
    // SAFETY: out holds 4 msg entries; cond is the threshold value 3.
    let n = unsafe {
        (ops(cq).sread.unwrap())(
            cq,
            out.as_mut_ptr() as *mut c_void,
            4,
            3 as *const c_void,
            5000,
        )
    };
    pusher.join().unwrap();
    assert_eq!(n, 3, "woke at the threshold, not the first entry");
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert_eq!(out[2].op_context, ctx(3));
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn spin_adapts_to_when_events_come() {
    let s = Spin::default();
    assert_eq!(s.budget(), SPIN_START);
    // Events soon after the start: a longer poll would have caught
    // them, up to the longest.
    for _ in 0..10 {
        s.slept(Duration::from_micros(50));
    }
    assert_eq!(s.budget(), SPIN_MAX);
    // Rare events: down to the shortest.
    for _ in 0..20 {
        s.slept(Duration::from_millis(5));
    }
    assert_eq!(s.budget(), SPIN_MIN);
    s.slept(SPIN_MAX);
    assert_eq!(s.budget(), SPIN_MIN * 2);
    // The poll returns what `ready` answers, and gives up at the
    // deadline having called it at least once.
    let mut calls = 0;
    assert_eq!(s.poll(None, || Some(7)), Some(7));
    let past = Instant::now();
    assert_eq!(
        s.poll(Some(past), || {
            calls += 1;
            None::<()>
        }),
        None
    );
    assert_eq!(calls, 1);
}

#[test]
fn trywait_answers_for_queue_and_signal() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_FD,
            0,
        ),
    )
    .unwrap();
    let c = cq_ref(cq);
    assert_eq!(c.trywait(), Ok(()));
    c.push(Completion::default()).unwrap();
    assert_eq!(c.trywait(), Err(Error::AGAIN));
    let mut out = [std::ptr::null_mut::<c_void>(); 1];
    // SAFETY: out holds one entry.
    assert_eq!(unsafe { read(cq, out.as_mut_ptr() as *mut c_void, 1) }, 1);
    assert_eq!(c.trywait(), Ok(()));
    // SAFETY: cq is live.
    assert_eq!(unsafe { signal(cq) }, 0);
    assert_eq!(c.trywait(), Err(Error::AGAIN));
    // SAFETY: out holds one entry; the signal ends the wait at once.
    let n = unsafe { sread(cq, out.as_mut_ptr() as *mut c_void, 1, std::ptr::null(), -1) };
    assert_eq!(n, Error::AGAIN.code() as isize);
    assert_eq!(c.trywait(), Ok(()));
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn sread_sleeps_until_another_thread_pushes() {
    for wait in [fi_wait_obj::FI_WAIT_UNSPEC, fi_wait_obj::FI_WAIT_YIELD] {
        let r = Res::new(API_VERSION);
        let cq = open_cq(&r, &mut attr(fi_cq_format::FI_CQ_FORMAT_CONTEXT, wait, 0)).unwrap();
        let c = cq_ref(cq);
        let pusher = std::thread::spawn(move || {
            // Until the reader sleeps (it polls for microseconds first).
            while c.lock().waiters == 0 {
                std::thread::yield_now();
            }
            c.push(Completion {
                context: ctx(9),
                ..Completion::default()
            })
            .unwrap();
        });
        let mut out = [std::ptr::null_mut::<c_void>(); 1];
        // SAFETY: out holds one entry.
        let n = unsafe { sread(cq, out.as_mut_ptr() as *mut c_void, 1, std::ptr::null(), -1) };
        pusher.join().unwrap();
        assert_eq!(n, 1);
        assert_eq!(out[0], ctx(9));
        assert_eq!(c.lock().waiters, 0);
        assert_eq!(close_cq(cq), 0);
    }
}

#[test]
fn sread_timeout_returns_partial() {
    let r = Res::new(API_VERSION);
    let mut a = attr(
        fi_cq_format::FI_CQ_FORMAT_CONTEXT,
        fi_wait_obj::FI_WAIT_YIELD,
        0,
    );
    a.wait_cond = fi_cq_wait_cond::FI_CQ_COND_THRESHOLD as u32;
    let cq = open_cq(&r, &mut a).unwrap();
    let mut out = [std::ptr::null_mut::<c_void>(); 4];
    let p = out.as_mut_ptr() as *mut c_void;
    let sread = ops(cq).sread.unwrap();
    // SAFETY: out holds 4 entries.
    unsafe {
        let t0 = Instant::now();
        assert_eq!(
            sread(cq, p, 4, 2 as *const c_void, 50),
            Error::AGAIN.code() as isize
        );
        assert!(t0.elapsed() >= Duration::from_millis(45));
        cq_ref(cq).push(Completion::default()).unwrap();
        assert_eq!(sread(cq, p, 4, 2 as *const c_void, 30), 1);
    }
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn signal_wakes_sread_and_fd() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_FD,
            0,
        ),
    )
    .unwrap();
    let c = cq_ref(cq);
    let mut fd: c_int = -1;
    // SAFETY: FI_GETWAIT with an int *.
    let rc = unsafe {
        control(
            cq as *mut fid,
            FI_GETWAIT,
            &mut fd as *mut c_int as *mut c_void,
        )
    };
    assert_eq!(rc, 0);
    let readable = |fd: c_int| {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    };
    assert!(!readable(fd));
    c.push(Completion::default()).unwrap();
    assert!(readable(fd));
    let mut out = [std::ptr::null_mut::<c_void>(); 1];
    // SAFETY: out holds one entry.
    assert_eq!(unsafe { read(cq, out.as_mut_ptr() as *mut c_void, 1) }, 1);
    assert!(!readable(fd));
    let cqp = cq as usize;
    let signaler = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        // SAFETY: the CQ stays open until the join below.
        unsafe { signal(cqp as *mut fid_cq) }
    });
    let t0 = Instant::now();
    // SAFETY: out holds one entry.
    let n = unsafe { sread(cq, out.as_mut_ptr() as *mut c_void, 1, std::ptr::null(), -1) };
    assert_eq!(signaler.join().unwrap(), 0);
    assert_eq!(n, Error::AGAIN.code() as isize);
    assert!(t0.elapsed() < Duration::from_secs(5));
    // A signal with nobody waiting makes the next blocking read return.
    // SAFETY: as above.
    unsafe {
        assert_eq!(signal(cq), 0);
        assert!(readable(fd));
        assert_eq!(
            sread(cq, out.as_mut_ptr() as *mut c_void, 1, std::ptr::null(), -1),
            Error::AGAIN.code() as isize
        );
        assert!(!readable(fd));
    }
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn bad_attributes() {
    let r = Res::new(API_VERSION);
    let f = fi_cq_format::FI_CQ_FORMAT_CONTEXT;
    let w = fi_wait_obj::FI_WAIT_NONE;
    let mut a = attr(f, fi_wait_obj::FI_WAIT_SET, 0);
    assert_eq!(open_cq(&r, &mut a), Err(Error::NOSYS.code()));
    a = attr(f, fi_wait_obj::FI_WAIT_MUTEX_COND, 0);
    assert_eq!(open_cq(&r, &mut a), Err(Error::NOSYS.code()));
    a = attr(f, w, 0);
    a.format = 99;
    assert_eq!(open_cq(&r, &mut a), Err(Error::INVAL.code()));
    a = attr(f, w, 0);
    a.flags = FI_WRITE;
    assert_eq!(open_cq(&r, &mut a), Err(Error::BADFLAGS.code()));
    a = attr(f, w, 0);
    a.flags = FI_XPU;
    assert_eq!(open_cq(&r, &mut a), Err(Error::NOSYS.code()));
    a = attr(f, fi_wait_obj::FI_WAIT_UNSPEC, 0);
    a.wait_cond = 7;
    assert_eq!(open_cq(&r, &mut a), Err(Error::INVAL.code()));
    a = attr(f, w, MAX_SIZE + 1);
    assert_eq!(open_cq(&r, &mut a), Err(Error::INVAL.code()));
    // FI_AFFINITY is a hint; wait_cond is ignored without a wait object.
    a = attr(f, w, 0);
    a.flags = FI_AFFINITY;
    a.wait_cond = 7;
    let cq = open_cq(&r, &mut a).unwrap();
    assert_eq!(cq_ref(cq).capacity(), DEFAULT_SIZE);
    assert_eq!(close_cq(cq), 0);
    let mut out = std::ptr::null_mut();
    // SAFETY: NULL attr and NULL output are refused before use.
    unsafe {
        assert_eq!(
            open(
                r.domain,
                std::ptr::null_mut(),
                &mut out,
                std::ptr::null_mut()
            ),
            -22
        );
        let mut a = attr(f, w, 0);
        assert_eq!(
            open(r.domain, &mut a, std::ptr::null_mut(), std::ptr::null_mut()),
            -22
        );
        assert_eq!(
            open(std::ptr::null_mut(), &mut a, &mut out, std::ptr::null_mut()),
            -22
        );
    }
    assert!(out.is_null());
}

#[test]
fn old_api_ignores_xpu_field() {
    // A 1.17 fi_cq_attr ends before xpu_ctx: FI_XPU's bit is just an
    // unknown flag there, and bytes past the struct are never read.
    let r = Res::new(version(1, 17));
    let mut a = attr(
        fi_cq_format::FI_CQ_FORMAT_DATA,
        fi_wait_obj::FI_WAIT_NONE,
        0,
    );
    a.xpu_ctx = std::ptr::dangling_mut();
    let cq = open_cq(&r, &mut a).unwrap();
    assert_eq!(close_cq(cq), 0);
    a.flags = FI_XPU;
    assert_eq!(open_cq(&r, &mut a), Err(Error::BADFLAGS.code()));
}

#[test]
fn wait_none_cannot_block() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_NONE,
            0,
        ),
    )
    .unwrap();
    let mut out = [0usize; 1];
    let mut fd: c_int = -1;
    // SAFETY: valid buffers.
    unsafe {
        let p = out.as_mut_ptr() as *mut c_void;
        assert_eq!(
            sread(cq, p, 1, std::ptr::null(), 0),
            Error::NOSYS.code() as isize
        );
        assert_eq!(signal(cq), Error::NOSYS.code());
        let arg = &mut fd as *mut c_int as *mut c_void;
        assert_eq!(
            control(cq as *mut fid, FI_GETWAIT, arg),
            Error::NODATA.code()
        );
        let mut obj: u32 = 99;
        let arg = &mut obj as *mut u32 as *mut c_void;
        assert_eq!(control(cq as *mut fid, FI_GETWAITOBJ, arg), 0);
        assert_eq!(obj, fi_wait_obj::FI_WAIT_NONE as u32);
        assert_eq!(export_xpu(cq, 0, std::ptr::null_mut()), Error::NOSYS.code());
    }
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn domain_waits_for_its_cqs() {
    let mut r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_NONE,
            0,
        ),
    )
    .unwrap();
    assert_eq!(r.close_domain(), Error::BUSY.code());
    assert_eq!(close_cq(cq), 0);
    assert_eq!(r.close_domain(), 0);
}

#[test]
fn concurrent_pushers_lose_nothing() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_UNSPEC,
            64,
        ),
    )
    .unwrap();
    let c = cq_ref(cq);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..500usize {
                    let comp = Completion {
                        context: ctx(t * 1000 + i + 1),
                        ..Completion::default()
                    };
                    while c.push(comp) == Err(Error::AGAIN) {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let mut seen = [0usize; 4];
    let mut out = [std::ptr::null_mut::<c_void>(); 16];
    while seen.iter().sum::<usize>() < 2000 {
        // SAFETY: out holds 16 entries.
        let n = unsafe {
            sread(
                cq,
                out.as_mut_ptr() as *mut c_void,
                16,
                std::ptr::null(),
                1000,
            )
        };
        assert!(n > 0, "sread returned {n}");
        for p in &out[..n as usize] {
            let v = *p as usize - 1;
            let (t, i) = (v / 1000, v % 1000);
            assert_eq!(i, seen[t], "per-thread order kept");
            seen[t] += 1;
        }
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn strerror_fills_buffer() {
    let r = Res::new(API_VERSION);
    let cq = open_cq(
        &r,
        &mut attr(
            fi_cq_format::FI_CQ_FORMAT_CONTEXT,
            fi_wait_obj::FI_WAIT_NONE,
            0,
        ),
    )
    .unwrap();
    let mut buf = [b'x' as c_char; 8];
    // SAFETY: buf holds 8 bytes.
    let s = unsafe { strerror(cq, libc::EACCES, std::ptr::null(), buf.as_mut_ptr(), 8) };
    assert_eq!(s, buf.as_ptr());
    assert_eq!(buf[7], 0);
    // SAFETY: NULL buf: the static message.
    let s = unsafe { strerror(cq, i32::MIN, std::ptr::null(), std::ptr::null_mut(), 0) };
    assert!(!s.is_null());
    assert_eq!(close_cq(cq), 0);
}

/// Queues (or writes, in a direct read) a successful completion with
/// context `i`.
fn push_ok(c: &Cq, i: usize) {
    c.push(Completion {
        context: ctx(i),
        ..Completion::default()
    })
    .unwrap();
}

/// Queues an error completion (-FI_EACCES) with context `i`.
fn push_refused(c: &Cq, i: usize) {
    c.push_err(ErrCompletion {
        context: ctx(i),
        err: libc::EACCES,
        prov_errno: libc::EACCES,
        ..ErrCompletion::default()
    })
    .unwrap();
}

/// A CQ of a domain the application serializes (FI_THREAD_DOMAIN), with
/// its domain; None where the asymmetric fence it needs is missing.
fn serialized_cq(format: fi_cq_format) -> (Res, *mut fid_cq) {
    let r = Res::with_threading(
        API_VERSION,
        crate::abi::fabric::fi_threading::FI_THREAD_DOMAIN as u32,
    );
    assert!(
        super::super::lock::Serial::available(),
        "membarrier(2) global expedited is needed (Linux 4.16)"
    );
    let cq = open_cq(&r, &mut attr(format, fi_wait_obj::FI_WAIT_NONE, 8)).unwrap();
    assert!(cq_ref(cq).q.is_serialized());
    (r, cq)
}

/// Opens a read's direct window on `c` over `out` (as readfrom does
/// around its progress pass).
fn direct_window<'a>(c: &'a Cq, out: &mut [*mut c_void], src: *mut fi_addr_t) -> DirectRead<'a> {
    // SAFETY: this thread is the application's; out holds out.len()
    // context entries, src as many addresses if not NULL.
    unsafe {
        *c.direct.get() = Direct {
            buf: out.as_mut_ptr() as *mut c_void,
            count: out.len(),
            src,
            n: 0,
        }
    };
    DirectRead(c)
}

#[test]
fn a_read_takes_its_own_completions_directly_and_queues_the_rest() {
    let (_r, cq) = serialized_cq(fi_cq_format::FI_CQ_FORMAT_CONTEXT);
    let c = cq_ref(cq);
    let mut out = [std::ptr::null_mut::<c_void>(); 2];
    let mut src = [0 as fi_addr_t; 2];
    let w = direct_window(c, &mut out, src.as_mut_ptr());
    for i in 1..=3 {
        c.push(Completion {
            context: ctx(i),
            src: 40 + i as u64,
            ..Completion::default()
        })
        .unwrap();
    }
    assert_eq!(w.written(), 2);
    drop(w);
    assert_eq!(out, [ctx(1), ctx(2)]);
    assert_eq!(src, [41, 42]);
    // The one past the array's end waits in the queue, and a push after
    // the read ended is queued behind it.
    push_ok(c, 4);
    let mut rest = [std::ptr::null_mut::<c_void>(); 4];
    // SAFETY: rest holds 4 context entries.
    let n = unsafe { ops(cq).read.unwrap()(cq, rest.as_mut_ptr() as *mut c_void, 4) };
    assert_eq!(n, 2);
    assert_eq!(&rest[..2], &[ctx(3), ctx(4)]);
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn a_direct_read_never_overtakes_a_queued_error() {
    let (_r, cq) = serialized_cq(fi_cq_format::FI_CQ_FORMAT_CONTEXT);
    let c = cq_ref(cq);
    let mut out = [std::ptr::null_mut::<c_void>(); 4];
    let w = direct_window(c, &mut out, std::ptr::null_mut());
    push_ok(c, 1);
    push_refused(c, 2);
    push_ok(c, 3);
    // The success before the error went into the array; the one after it
    // waits behind the error.
    assert_eq!(w.written(), 1);
    drop(w);
    assert_eq!(out[0], ctx(1));
    let read = ops(cq).read.unwrap();
    let mut rest = [std::ptr::null_mut::<c_void>(); 4];
    let p = rest.as_mut_ptr() as *mut c_void;
    // SAFETY: rest holds 4 context entries.
    assert_eq!(unsafe { read(cq, p, 4) }, Error::AVAIL.code() as isize);
    // SAFETY: all-zero is a valid fi_cq_err_entry.
    let mut e: fi_cq_err_entry = unsafe { std::mem::zeroed() };
    // SAFETY: e is a writable entry.
    assert_eq!(unsafe { ops(cq).readerr.unwrap()(cq, &mut e, 0) }, 1);
    assert_eq!(e.op_context, ctx(2));
    // SAFETY: as above.
    assert_eq!(unsafe { read(cq, p, 4) }, 1);
    assert_eq!(rest[0], ctx(3));
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn an_outsiders_push_is_queued_during_a_direct_read() {
    let (r, cq) = serialized_cq(fi_cq_format::FI_CQ_FORMAT_CONTEXT);
    let c = cq_ref(cq);
    // SAFETY: the domain is live.
    let d = unsafe { from_fid::<Domain>(r.domain as *const fid) }.unwrap();
    let serial = d.serial.clone().unwrap();
    let mut out = [std::ptr::null_mut::<c_void>(); 4];
    let w = direct_window(c, &mut out, std::ptr::null_mut());
    let c_addr = c as *const Cq as usize;
    std::thread::spawn(move || {
        let _out = serial.exclude();
        // SAFETY: the CQ outlives the thread (joined below).
        let c = unsafe { &*(c_addr as *const Cq) };
        c.push(Completion {
            context: ctx(7),
            ..Completion::default()
        })
        .unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(w.written(), 0);
    drop(w);
    assert_eq!(out[0], std::ptr::null_mut());
    let mut rest = [std::ptr::null_mut::<c_void>(); 4];
    // SAFETY: rest holds 4 context entries.
    let n = unsafe { ops(cq).read.unwrap()(cq, rest.as_mut_ptr() as *mut c_void, 4) };
    assert_eq!((n, rest[0]), (1, ctx(7)));
    assert_eq!(close_cq(cq), 0);
}

#[test]
fn no_push_writes_into_an_array_after_its_read_ended() {
    let (_r, cq) = serialized_cq(fi_cq_format::FI_CQ_FORMAT_CONTEXT);
    let c = cq_ref(cq);
    let mut out = [std::ptr::null_mut::<c_void>(); 4];
    drop(direct_window(c, &mut out, std::ptr::null_mut()));
    push_ok(c, 5);
    assert_eq!(out[0], std::ptr::null_mut());
    assert_eq!(c.len(), 1);
    assert_eq!(close_cq(cq), 0);
}
