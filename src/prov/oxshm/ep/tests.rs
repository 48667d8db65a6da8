use super::*;
use crate::abi::domain::{fi_av_attr, fid_av};
use crate::prov::info::{FabricAttr, API_VERSION};
use std::ptr::{null, null_mut};

/// An oxshm fabric and domain, closed on drop when nothing is left open.
pub struct Res {
    pub fabric: *mut fid_fabric,
    pub domain: *mut fid_domain,
}

impl Res {
    pub fn new() -> Res {
        let attr = FabricAttr {
            name: None,
            prov_name: None,
            prov_version: 0,
            api_version: API_VERSION,
        };
        let fabric = super::super::fabric::open(&attr, null_mut()).unwrap();
        // SAFETY: fabric was just opened by oxshm.
        let fab =
            unsafe { from_fid::<super::super::fabric::Fabric>(fabric as *const fid) }.unwrap();
        // SAFETY: a zeroed fi_info (no attributes) is valid input.
        let info: fi_info = unsafe { std::mem::zeroed() };
        // SAFETY: info is a valid fi_info.
        let domain = unsafe { super::super::domain::open(fab, &info, null_mut()) }.unwrap();
        Res { fabric, domain }
    }

    pub fn domain(&self) -> &Domain {
        // SAFETY: the live domain opened by new.
        unsafe { from_fid::<Domain>(self.domain as *const fid) }.unwrap()
    }

    /// An AV of `kind` (an fi_av_type value).
    pub fn av(&self, kind: fi_av_type) -> *mut fid_av {
        // SAFETY: all-zero is a valid fi_av_attr.
        let mut a: fi_av_attr = unsafe { std::mem::zeroed() };
        a.r#type = kind as u32;
        let mut av = null_mut();
        // SAFETY: valid arguments.
        let rc = unsafe { super::super::av::open(self.domain, &mut a, &mut av, null_mut()) };
        assert_eq!(rc, 0);
        av
    }

    /// An endpoint opened with `info` (zeroed: defaults).
    pub fn ep_with(&self, info: &mut fi_info) -> std::result::Result<*mut fid_ep, c_int> {
        let mut ep = null_mut();
        // SAFETY: valid arguments.
        let rc = unsafe { endpoint(self.domain, info, &mut ep, null_mut()) };
        if rc == 0 {
            Ok(ep)
        } else {
            Err(rc)
        }
    }

    pub fn ep(&self) -> *mut fid_ep {
        // SAFETY: all-zero is a valid fi_info.
        let mut info: fi_info = unsafe { std::mem::zeroed() };
        self.ep_with(&mut info).unwrap()
    }
}

impl Drop for Res {
    fn drop(&mut self) {
        // SAFETY: oxshm objects opened by new.
        unsafe {
            close_fid(self.domain as *mut fid);
            close_fid(self.fabric as *mut fid);
        }
    }
}

/// fi_close through the object's own table.
///
/// # Safety
/// `f` is a live object of this provider.
pub unsafe fn close_fid(f: *mut fid) -> c_int {
    // SAFETY: per the function contract.
    unsafe { ((*(*f).ops).close.unwrap())(f) }
}

fn as_fid<T>(p: *mut T) -> *mut fid {
    p as *mut fid
}

fn ep_ref<'a>(e: *mut fid_ep) -> &'a Ep {
    // SAFETY: test endpoints are live oxshm endpoints.
    unsafe { ep_from_fid(e as *const fid) }.unwrap()
}

const EINVAL: c_int = -libc::EINVAL;

#[test]
fn address_text_round_trips() {
    let a = Address {
        pid: 4242,
        ep_id: 7,
        nonce: 0x0123_4567_89ab_cdef,
    };
    let s = a.to_string();
    assert_eq!(s, "fi_oxshm://4242/7/0123456789abcdef");
    assert_eq!(Address::parse(&s), Ok(a));
    assert_eq!(a.segment_name(), "/oxshm-4242-7-0123456789abcdef");
    let widest = Address {
        pid: i32::MAX as u32,
        ep_id: u32::MAX,
        nonce: u64::MAX,
    };
    assert_eq!(widest.to_string().len(), 49);
    assert!(widest.to_cstring().as_bytes_with_nul().len() <= ADDR_MAX);
    assert_eq!(Address::parse(&widest.to_string()), Ok(widest));
}

#[test]
fn only_the_canonical_spelling_parses() {
    for bad in [
        "",
        "fi_oxshm://",
        "fi_shm://1/2/0123456789abcdef",
        "FI_OXSHM://1/2/0123456789abcdef",
        "fi_oxshm://1/2",
        "fi_oxshm://1/2/0123456789abcdef/",
        "fi_oxshm://0/2/0123456789abcdef",
        "fi_oxshm://01/2/0123456789abcdef",
        "fi_oxshm://+1/2/0123456789abcdef",
        "fi_oxshm://2147483648/2/0123456789abcdef",
        "fi_oxshm://1/02/0123456789abcdef",
        "fi_oxshm://1/4294967296/0123456789abcdef",
        "fi_oxshm://1/2/0123456789ABCDEF",
        "fi_oxshm://1/2/0123456789abcde",
        "fi_oxshm://1/2/0123456789abcdef0",
        "fi_oxshm://1/2/0x23456789abcdef",
        "fi_oxshm://1/-2/0123456789abcdef",
    ] {
        assert!(Address::parse(bad).is_err(), "{bad:?} parsed");
    }
    assert!(Address::parse("fi_oxshm://1/0/0000000000000000").is_ok());
}

#[test]
fn addresses_from_c_stop_at_the_nul_and_the_limit() {
    let text = b"fi_oxshm://1/2/0123456789abcdef\0garbage";
    // SAFETY: the buffer holds text.len() bytes.
    let a = unsafe { address_from_c(text.as_ptr() as *const c_void, text.len()) }.unwrap();
    assert_eq!((a.pid, a.ep_id), (1, 2));
    // Without its NUL, when the length is exact.
    // SAFETY: as above.
    assert!(unsafe { address_from_c(text.as_ptr() as *const c_void, 31) }.is_ok());
    let long = [b'x'; 200];
    // SAFETY: the buffer holds 200 bytes.
    assert!(unsafe { address_from_c(long.as_ptr() as *const c_void, 200) }.is_err());
    // SAFETY: NULL is refused before any read.
    assert!(unsafe { address_from_c(null(), 10) }.is_err());
}

#[test]
fn names_are_unique_and_released() {
    let a = names::fresh();
    let b = names::fresh();
    assert_ne!(a, b);
    assert_eq!(a.pid, std::process::id());
    assert_eq!(names::claim(a), Err(Error::ADDRINUSE));
    assert_eq!(names::rename(a, b), Err(Error::ADDRINUSE));
    let c = Address {
        ep_id: u32::MAX - 3,
        ..a
    };
    names::rename(a, c).unwrap();
    names::claim(a).unwrap();
    for n in [a, b, c] {
        names::release(n);
    }
    names::claim(b).unwrap();
    names::release(b);
}

#[test]
fn cq_and_counter_flags() {
    assert_eq!(cq_roles(FI_TRANSMIT).unwrap(), vec![Role::Cq(0)]);
    assert_eq!(
        cq_roles(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION).unwrap(),
        vec![Role::Cq(0), Role::Cq(1)]
    );
    assert_eq!(cq_roles(0), Err(Error::BADFLAGS));
    assert_eq!(cq_roles(FI_SELECTIVE_COMPLETION), Err(Error::BADFLAGS));
    assert_eq!(cq_roles(FI_TRANSMIT | FI_READ), Err(Error::BADFLAGS));
    assert_eq!(
        cntr_roles(0, FI_SEND | FI_WRITE).unwrap(),
        vec![Role::Cntr(0), Role::Cntr(3)]
    );
    assert_eq!(cntr_roles(0, 0), Ok(Vec::new()));
    assert_eq!(cntr_roles(0, FI_SEND | FI_TAGGED), Err(Error::BADFLAGS));
    assert_eq!(cntr_roles(0, FI_REMOTE_WRITE), Err(Error::INVAL));
    assert_eq!(
        cntr_roles(FI_RMA_EVENT, FI_REMOTE_READ | FI_REMOTE_WRITE).unwrap(),
        vec![Role::Cntr(4), Role::Cntr(5)]
    );
}

#[test]
fn attach_fills_each_role_once_and_holds() {
    let r = Res::new();
    let av = r.av(fi_av_type::FI_AV_TABLE);
    // SAFETY: a live oxshm AV.
    let obj = unsafe { from_fid::<Av>(av as *const fid) }.unwrap();
    let mut b = Bindings::default();
    attach(&mut b, &[Role::Cq(0), Role::Cntr(2)], obj, 7).unwrap();
    assert_eq!(obj.hdr.refs(), 2);
    assert_eq!(b.cq[0].unwrap().flags, 7);
    assert!(b.cq[0].unwrap().get::<Av>().is_some());
    assert!(b.cq[0].unwrap().get::<Eq>().is_none());
    // One role taken: nothing changes.
    assert_eq!(
        attach(&mut b, &[Role::Cq(1), Role::Cq(0)], obj, 0),
        Err(Error::INVAL)
    );
    assert!(b.cq[1].is_none());
    assert_eq!(obj.hdr.refs(), 2);
    // SAFETY: a live AV, held: its close is refused.
    assert_eq!(unsafe { close_fid(as_fid(av)) }, -libc::EBUSY);
    for x in b.all() {
        x.release();
    }
    // SAFETY: released; the AV closes.
    assert_eq!(unsafe { close_fid(as_fid(av)) }, 0);
}

#[test]
fn lifecycle_bind_enable_close_order() {
    let r = Res::new();
    let ep = r.ep();
    let av = r.av(fi_av_type::FI_AV_TABLE);
    let e = ep_ref(ep);
    // SAFETY: live objects throughout; slots called as C would.
    unsafe {
        assert_eq!((*ep).fid.fclass, FI_CLASS_EP as usize);
        assert_eq!(control(as_fid(ep), FI_ENABLE, null_mut()), -(Error::NOAV.0));
        assert!(e.enabled().is_none());
        // Wrong objects and flags.
        assert_eq!(bind(as_fid(ep), null_mut(), 0), EINVAL);
        assert_eq!(bind(as_fid(ep), r.domain as *mut fid, 0), EINVAL);
        assert_eq!(bind(as_fid(ep), as_fid(av), FI_RECV), -(Error::BADFLAGS.0));
        assert_eq!(bind(as_fid(ep), as_fid(av), 0), 0);
        assert_eq!(bind(as_fid(ep), as_fid(av), 0), EINVAL);
        // The domain and the AV are held.
        assert_eq!(close_fid(r.domain as *mut fid), -libc::EBUSY);
        assert_eq!(close_fid(as_fid(av)), -libc::EBUSY);
        assert_eq!(control(as_fid(ep), FI_ENABLE, null_mut()), 0);
        assert_eq!(control(as_fid(ep), FI_ENABLE, null_mut()), 0);
        let en = e.enabled().unwrap();
        assert!(en.bindings.av().is_some());
        assert_eq!(en.name, e.name());
        let av2 = r.av(fi_av_type::FI_AV_MAP);
        assert_eq!(bind(as_fid(ep), as_fid(av2), 0), -(Error::OPBADSTATE.0));
        assert_eq!(close_fid(as_fid(av2)), 0);
        // A bound MR keeps the endpoint open.
        e.hold_mr();
        assert_eq!(close_fid(as_fid(ep)), -libc::EBUSY);
        e.release_mr();
        assert_eq!(close_fid(as_fid(ep)), 0);
        assert_eq!(close_fid(as_fid(ep)), EINVAL);
        assert_eq!(close_fid(as_fid(av)), 0);
    }
}

#[test]
fn an_av_of_another_domain_is_refused() {
    let r1 = Res::new();
    let r2 = Res::new();
    let ep = r1.ep();
    let av = r2.av(fi_av_type::FI_AV_TABLE);
    // SAFETY: live objects.
    unsafe {
        assert_eq!(bind(as_fid(ep), as_fid(av), 0), -(Error::DOMAIN.0));
        assert_eq!(close_fid(as_fid(av)), 0);
        assert_eq!(close_fid(as_fid(ep)), 0);
    }
}

#[test]
fn cqs_and_counters_bind_by_direction_and_event() {
    use crate::abi::eq::{fi_cntr_attr, fi_cq_attr, fi_cq_format, fi_wait_obj};
    let r = Res::new();
    let ep = r.ep();
    // SAFETY: all-zero attributes are valid; objects are live throughout.
    unsafe {
        let mut ca: fi_cq_attr = std::mem::zeroed();
        ca.format = fi_cq_format::FI_CQ_FORMAT_CONTEXT as u32;
        ca.wait_obj = fi_wait_obj::FI_WAIT_NONE as u32;
        let (mut cq1, mut cq2) = (null_mut(), null_mut());
        assert_eq!(
            super::super::cq::open(r.domain, &mut ca, &mut cq1, null_mut()),
            0
        );
        assert_eq!(
            super::super::cq::open(r.domain, &mut ca, &mut cq2, null_mut()),
            0
        );
        let mut na: fi_cntr_attr = std::mem::zeroed();
        na.wait_obj = fi_wait_obj::FI_WAIT_NONE as u32;
        let mut cntr = null_mut();
        assert_eq!(
            super::super::cntr::open(r.domain, &mut na, &mut cntr, null_mut()),
            0
        );
        let f = as_fid(ep);
        assert_eq!(
            bind(f, as_fid(cq1), FI_TRANSMIT | FI_SELECTIVE_COMPLETION),
            0
        );
        assert_eq!(bind(f, as_fid(cq2), FI_TRANSMIT), EINVAL);
        assert_eq!(bind(f, as_fid(cq2), 0), -(Error::BADFLAGS.0));
        assert_eq!(bind(f, as_fid(cq2), FI_RECV), 0);
        // Remote events need FI_RMA_EVENT (this endpoint has it).
        assert_eq!(
            cntr_roles(FI_LOCAL_COMM | FI_RMA, FI_REMOTE_WRITE),
            Err(Error::INVAL)
        );
        assert_eq!(bind(f, as_fid(cntr), FI_SEND | FI_READ), 0);
        assert_eq!(bind(f, as_fid(cntr), FI_SEND), EINVAL);
        // Held while bound.
        assert_eq!(close_fid(as_fid(cq1)), -libc::EBUSY);
        assert_eq!(close_fid(as_fid(cntr)), -libc::EBUSY);
        let av = r.av(fi_av_type::FI_AV_TABLE);
        assert_eq!(bind(f, as_fid(av), 0), 0);
        assert_eq!(control(f, FI_ENABLE, null_mut()), 0);
        let b = &ep_ref(ep).enabled().unwrap().bindings;
        assert!(b.cq(false).is_some() && b.cq(true).is_some());
        assert_eq!(
            b.cq[0].unwrap().flags,
            FI_TRANSMIT | FI_SELECTIVE_COMPLETION
        );
        assert!(b.cntr(0).is_some() && b.cntr(2).is_some() && b.cntr(1).is_none());
        assert_eq!(close_fid(f), 0);
        for o in [as_fid(cq1), as_fid(cq2), as_fid(cntr), as_fid(av)] {
            assert_eq!(close_fid(o), 0);
        }
    }
}

#[test]
fn names_get_and_set() {
    let r = Res::new();
    let ep = r.ep();
    let other = r.ep();
    let mut buf = [0u8; ADDR_MAX];
    // SAFETY: live endpoints; buffers as the sizes say.
    unsafe {
        let mut len = 0usize;
        assert_eq!(
            getname(as_fid(ep), null_mut(), &mut len),
            -(Error::TOOSMALL.0)
        );
        let name = ep_ref(ep).name().to_cstring();
        assert_eq!(len, name.as_bytes_with_nul().len());
        let mut short = len - 1;
        buf[0] = b'#';
        assert_eq!(
            getname(as_fid(ep), buf.as_mut_ptr() as *mut c_void, &mut short),
            -(Error::TOOSMALL.0)
        );
        assert_eq!(buf[0], b'#');
        let mut len = buf.len();
        assert_eq!(
            getname(as_fid(ep), buf.as_mut_ptr() as *mut c_void, &mut len),
            0
        );
        assert_eq!(&buf[..len], name.as_bytes_with_nul());
        assert_eq!(
            getname(as_fid(ep), buf.as_mut_ptr() as *mut c_void, null_mut()),
            EINVAL
        );

        let mine = Address {
            ep_id: 0x7fff_0001,
            ..ep_ref(ep).name()
        };
        let text = mine.to_cstring();
        let set = |e: *mut fid_ep, t: &[u8]| setname(as_fid(e), t.as_ptr() as *mut c_void, t.len());
        assert_eq!(set(ep, b"fi_oxshm://nonsense:no spaces"), EINVAL);
        // A host name sets the service to publish and keeps the name.
        let before = ep_ref(ep).name();
        assert_eq!(set(ep, b"fi_oxshm://localhost:svc-1\0"), 0);
        assert_eq!(ep_ref(ep).name(), before);
        assert_eq!(ep_ref(ep).lock().service.as_deref(), Some("svc-1"));
        assert_eq!(set(ep, b"fi_oxshm://localhost"), 0);
        assert_eq!(ep_ref(ep).lock().service, None);
        let foreign = Address {
            pid: if mine.pid == 1 { 2 } else { 1 },
            ..mine
        };
        assert_eq!(set(ep, foreign.to_cstring().as_bytes()), EINVAL);
        assert_eq!(set(ep, text.as_bytes()), 0);
        assert_eq!(ep_ref(ep).name(), mine);
        // Taken by `ep` now.
        assert_eq!(set(other, text.as_bytes_with_nul()), -libc::EADDRINUSE);
        assert_eq!(set(ep, text.as_bytes_with_nul()), 0);
        assert_eq!(setname(as_fid(ep), null_mut(), 10), EINVAL);
        let av = r.av(fi_av_type::FI_AV_TABLE);
        assert_eq!(bind(as_fid(ep), as_fid(av), 0), 0);
        assert_eq!(control(as_fid(ep), FI_ENABLE, null_mut()), 0);
        assert_eq!(set(ep, text.as_bytes()), -(Error::OPBADSTATE.0));
        assert_eq!(getpeer(ep, null_mut(), null_mut()), -libc::ENOSYS);
        assert_eq!(close_fid(as_fid(ep)), 0);
        // The name is free again.
        assert_eq!(set(other, text.as_bytes()), 0);
        assert_eq!(close_fid(as_fid(other)), 0);
        assert_eq!(close_fid(as_fid(av)), 0);
    }
}

#[test]
fn info_is_checked() {
    let r = Res::new();
    // SAFETY: all-zero structs are valid attributes; the two attribute
    // structs are only reached through these raw pointers, freed below.
    let mut info: fi_info = unsafe { std::mem::zeroed() };
    let ep_attr: *mut fi_ep_attr = Box::into_raw(Box::new(unsafe { std::mem::zeroed() }));
    let tx: *mut fi_tx_attr = Box::into_raw(Box::new(unsafe { std::mem::zeroed() }));
    info.ep_attr = ep_attr;
    info.tx_attr = tx;
    let refused = |info: &mut fi_info| r.ep_with(info).err();
    // SAFETY: ep_attr and tx are the live boxes above.
    unsafe {
        (*ep_attr).r#type = fi_ep_type::FI_EP_MSG as u32;
        assert_eq!(refused(&mut info), Some(-libc::ENODATA));
        (*ep_attr).r#type = fi_ep_type::FI_EP_RDM as u32;
        info.caps = FI_MSG | FI_COLLECTIVE;
        assert_eq!(refused(&mut info), Some(-libc::ENODATA));
        info.caps = FI_LOCAL_COMM;
        info.addr_format = FI_SOCKADDR_IN as u32;
        assert_eq!(refused(&mut info), Some(-libc::ENODATA));
        info.addr_format = FI_ADDR_STR as u32;
        (*ep_attr).tx_ctx_cnt = FI_SHARED_CONTEXT;
        assert_eq!(refused(&mut info), Some(-libc::ENODATA));
        (*ep_attr).tx_ctx_cnt = 1;
        (*tx).op_flags = FI_MULTI_RECV;
        assert_eq!(refused(&mut info), Some(-(Error::BADFLAGS.0)));
        (*tx).op_flags = FI_COMPLETION;
        (*tx).size = 1 << 30;
        assert_eq!(refused(&mut info), Some(-libc::ENODATA));
        (*tx).size = 16;
    }
    // A name given through src_addr.
    let mine = names::fresh();
    names::release(mine);
    let text = mine.to_cstring();
    info.src_addr = text.as_ptr() as *mut c_void;
    info.src_addrlen = text.as_bytes_with_nul().len();
    let ep = r.ep_with(&mut info).unwrap();
    let e = ep_ref(ep);
    assert_eq!(e.name(), mine);
    assert_eq!((e.tx_size, e.caps), (16, FI_LOCAL_COMM));
    assert_eq!(e.op_flags(false), FI_COMPLETION);
    // The same src_addr again: in use.
    assert_eq!(r.ep_with(&mut info).err(), Some(-libc::EADDRINUSE));
    // SAFETY: bad arguments are refused; ep is live.
    unsafe {
        let mut out = null_mut();
        assert_eq!(
            endpoint2(r.domain, &mut info, &mut out, 1, null_mut()),
            -(Error::BADFLAGS.0)
        );
        assert_eq!(endpoint(r.domain, null_mut(), &mut out, null_mut()), EINVAL);
        assert_eq!(
            endpoint(r.domain, &mut info, null_mut(), null_mut()),
            EINVAL
        );
        assert_eq!(
            endpoint(null_mut(), &mut info, &mut out, null_mut()),
            EINVAL
        );
        assert!(out.is_null());
        assert_eq!(close_fid(as_fid(ep)), 0);
        drop(Box::from_raw(ep_attr));
        drop(Box::from_raw(tx));
    }
}

#[test]
fn operation_flags() {
    let r = Res::new();
    let ep = r.ep();
    let ctl = |cmd: c_int, v: &mut u64| {
        // SAFETY: a live endpoint; v is a uint64_t.
        unsafe { control(as_fid(ep), cmd, v as *mut u64 as *mut c_void) }
    };
    let mut v = FI_TRANSMIT | FI_INJECT | FI_COMPLETION;
    assert_eq!(ctl(FI_SETOPSFLAG, &mut v), 0);
    let mut v = FI_TRANSMIT;
    assert_eq!(ctl(FI_GETOPSFLAG, &mut v), 0);
    assert_eq!(v, FI_INJECT | FI_COMPLETION);
    let mut v = FI_RECV;
    assert_eq!(ctl(FI_GETOPSFLAG, &mut v), 0);
    assert_eq!(v, 0);
    let mut v = FI_RECV | FI_INJECT;
    assert_eq!(ctl(FI_SETOPSFLAG, &mut v), -(Error::BADFLAGS.0));
    let mut v = FI_RECV | FI_TRANSMIT;
    assert_eq!(ctl(FI_GETOPSFLAG, &mut v), EINVAL);
    let mut v = 0;
    assert_eq!(ctl(FI_SETOPSFLAG, &mut v), EINVAL);
    let mut v = 0;
    assert_eq!(ctl(FI_ALIAS, &mut v), -libc::ENOSYS);
    // SAFETY: NULL arguments are refused; the endpoint is live.
    unsafe {
        assert_eq!(control(as_fid(ep), FI_GETOPSFLAG, null_mut()), EINVAL);
        assert_eq!(close_fid(as_fid(ep)), 0);
    }
}

#[test]
fn options() {
    let r = Res::new();
    let ep = r.ep();
    let f = as_fid(ep);
    // SAFETY: a live endpoint; each value has the size passed.
    unsafe {
        let mut v: usize = 0;
        let mut len = std::mem::size_of::<usize>();
        let pv = &mut v as *mut usize as *mut c_void;
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, pv, &mut len),
            0
        );
        assert_eq!(v, DEFAULT_MIN_MULTI_RECV);
        let want: usize = 100;
        let pw = &want as *const usize as *const c_void;
        assert_eq!(setopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, pw, 8), 0);
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, pv, &mut len),
            0
        );
        assert_eq!(v, 100);
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, pw, 4),
            EINVAL
        );
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, null(), 8),
            EINVAL
        );
        let mut small = 4usize;
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, pv, &mut small),
            -(Error::TOOSMALL.0)
        );
        assert_eq!(small, 8);
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, pv, &mut len),
            0
        );
        assert_eq!(v, 0);
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, pw, 8),
            -libc::EOPNOTSUPP
        );
        assert_eq!(
            getopt(f, 1, FI_OPT_MIN_MULTI_RECV, pv, &mut len),
            -libc::ENOPROTOOPT
        );
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, 9999, pv, &mut len),
            -libc::ENOPROTOOPT
        );
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_BUFFERED_LIMIT, pv, &mut len),
            -libc::ENOPROTOOPT
        );
        // P2P: an int.
        let mut p: c_int = -1;
        let mut plen = std::mem::size_of::<c_int>();
        let pp = &mut p as *mut c_int as *mut c_void;
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, pp, &mut plen),
            0
        );
        assert_eq!(p, FI_HMEM_P2P_ENABLED);
        for (val, rc) in [
            (FI_HMEM_P2P_DISABLED, 0),
            (FI_HMEM_P2P_REQUIRED, -libc::EOPNOTSUPP),
            (77, EINVAL),
        ] {
            let q = &val as *const c_int as *const c_void;
            assert_eq!(setopt(f, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, q, 4), rc);
        }
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, pp, &mut plen),
            0
        );
        assert_eq!(p, FI_HMEM_P2P_DISABLED);
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_XPU_TRIGGER, pv, &mut len),
            -libc::EOPNOTSUPP
        );
        let no = false;
        let pn = &no as *const bool as *const c_void;
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_CUDA_API_PERMITTED, pn, 1),
            0
        );
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_SHARED_MEMORY_PERMITTED, pn, 1),
            -libc::EOPNOTSUPP
        );
        // Size limits may be lowered, not raised, before fi_enable.
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_MAX_MSG_SIZE, pv, &mut len),
            0
        );
        assert_eq!(v, 1 << 30);
        let big: usize = (1 << 30) + 1;
        let pb = &big as *const usize as *const c_void;
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_MAX_RMA_SIZE, pb, 8),
            EINVAL
        );
        assert_eq!(setopt(f, FI_OPT_ENDPOINT, FI_OPT_MAX_RMA_SIZE, pw, 8), 0);
        assert_eq!(ep_ref(ep).limit(Limit::MaxRma), 100);
        assert_eq!(ep_ref(ep).limit(Limit::MaxMsg), 1 << 30);
        assert_eq!(
            getopt(f, FI_OPT_ENDPOINT, FI_OPT_INJECT_MSG_SIZE, pv, &mut len),
            0
        );
        assert_eq!(v, super::super::xfer::INJECT);
        let av = r.av(fi_av_type::FI_AV_TABLE);
        assert_eq!(bind(f, as_fid(av), 0), 0);
        assert_eq!(control(f, FI_ENABLE, null_mut()), 0);
        assert_eq!(
            setopt(f, FI_OPT_ENDPOINT, FI_OPT_MAX_RMA_SIZE, pw, 8),
            -(Error::OPBADSTATE.0)
        );
        assert_eq!(close_fid(f), 0);
        assert_eq!(close_fid(as_fid(av)), 0);
    }
}

#[test]
fn queue_space_and_unsupported_slots() {
    let r = Res::new();
    let ep = r.ep();
    // SAFETY: a live endpoint; the data slots read no argument.
    unsafe {
        assert_eq!(tx_size_left(ep), -(Error::OPBADSTATE.0) as isize);
        let av = r.av(fi_av_type::FI_AV_TABLE);
        assert_eq!(bind(as_fid(ep), as_fid(av), 0), 0);
        assert_eq!(control(as_fid(ep), FI_ENABLE, null_mut()), 0);
        assert_eq!(tx_size_left(ep), 1024);
        assert_eq!(rx_size_left(ep), 1024);
        assert_eq!(cancel(as_fid(ep), null_mut()), 0);
        assert_eq!(cancel(null_mut(), null_mut()), EINVAL as isize);
        // Data slots answer: fi_addr 0 is not in the (empty) AV.
        let msg = &*(*ep).msg;
        assert_eq!(
            msg.send.unwrap()(ep, null(), 0, null_mut(), 0, null_mut()),
            EINVAL as isize
        );
        assert_eq!(
            msg.send.unwrap()(null_mut(), null(), 0, null_mut(), 0, null_mut()),
            EINVAL as isize
        );
        let rma = &*(*ep).rma;
        assert_eq!(
            rma.write.unwrap()(ep, null(), 0, null_mut(), 0, 0, 0, null_mut()),
            EINVAL as isize
        );
        let atomic = &*(*ep).atomic;
        assert_eq!(atomic.writevalid.unwrap()(ep, 0, 0, null_mut()), EINVAL);
        let mut count = 0usize;
        // FI_INT8 with FI_MIN.
        assert_eq!(atomic.writevalid.unwrap()(ep, 0, 0, &mut count), 0);
        assert_eq!(count, super::super::xfer::ATOMIC_MAX);
        // FI_FLOAT with FI_BOR: no bitwise operations on floats.
        assert_eq!(
            atomic.writevalid.unwrap()(ep, 8, 6, &mut count),
            -libc::EOPNOTSUPP
        );
        let coll = &*(*ep).collective;
        assert_eq!(
            coll.barrier.unwrap()(ep, 0, null_mut()),
            -libc::ENOSYS as isize
        );
        let tagged = &*(*ep).tagged;
        assert_eq!(tagged.inject.unwrap()(ep, null(), 0, 0, 0), EINVAL as isize);
        assert_eq!(
            tx_ctx(ep, 0, null_mut(), null_mut(), null_mut()),
            -libc::ENOSYS
        );
        assert_eq!(export_xpu(ep, 0, null_mut()), -libc::ENOSYS);
        let cm = &*(*ep).cm;
        assert_eq!(cm.connect.unwrap()(ep, null(), null(), 0), -libc::ENOSYS);
        assert_eq!(close_fid(as_fid(ep)), 0);
        assert_eq!(close_fid(as_fid(av)), 0);
    }
}

#[test]
fn every_table_slot_is_set() {
    // A NULL slot would crash a C caller: check each table word by word.
    fn all_set<T>(t: &T, words: usize) -> bool {
        // SAFETY: T is an ops table: size_t then `words` fn pointers.
        let p = t as *const T as *const usize;
        (1..=words).all(|i| unsafe { *p.add(i) } != 0)
    }
    let w = |n: usize| n / std::mem::size_of::<usize>() - 1;
    assert!(all_set(&FI_OPS, w(std::mem::size_of::<fi_ops>())));
    assert!(all_set(&OPS_EP, w(std::mem::size_of::<fi_ops_ep>())));
    assert!(all_set(&OPS_CM, w(std::mem::size_of::<fi_ops_cm>())));
    assert!(all_set(
        &data::OPS_MSG,
        w(std::mem::size_of::<fi_ops_msg>())
    ));
    assert!(all_set(
        &data::OPS_RMA,
        w(std::mem::size_of::<fi_ops_rma>())
    ));
    assert!(all_set(
        &data::OPS_TAGGED,
        w(std::mem::size_of::<fi_ops_tagged>())
    ));
    assert!(all_set(
        &data::OPS_ATOMIC,
        w(std::mem::size_of::<fi_ops_atomic>())
    ));
    assert!(all_set(
        &data::OPS_COLLECTIVE,
        w(std::mem::size_of::<fi_ops_collective>())
    ));
}

#[test]
fn passive_endpoint_calls_answer_enosys() {
    // SAFETY: neither call reads its arguments: oxshm has no passive
    // endpoints.
    unsafe {
        assert_eq!(listen(std::ptr::null_mut()), Error::NOSYS.code());
        assert_eq!(
            reject(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null(),
                0
            ),
            Error::NOSYS.code()
        );
    }
}
