//! oxshm fabric objects (`fi_fabric`): the root of a provider's object tree.

use super::domain;
use super::eq;
use super::object::{from_fid, nosys, slot, Header, Object, TAG_FABRIC};
use crate::abi::domain::fid_domain;
use crate::abi::endpoint::fid_pep;
use crate::abi::eq::{fi_eq_attr, fi_wait_attr, fid_eq, fid_wait};
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use crate::prov::info::FabricAttr;
use libc::{c_int, c_void};

#[repr(C)]
pub struct Fabric {
    pub fid: fid_fabric,
    pub hdr: Header,
    pub api_version: u32,
}

// SAFETY: #[repr(C)] with fid_fabric (which starts with struct fid) first.
unsafe impl Object for Fabric {
    const TAG: u64 = TAG_FABRIC;
    const FCLASS: usize = FI_CLASS_FABRIC as usize;
    const NAME: &'static str = "fabric";
    fn header(&self) -> &Header {
        &self.hdr
    }
    fn fi_ops() -> *mut fi_ops {
        &FI_OPS as *const fi_ops as *mut fi_ops
    }
}

static FI_OPS: fi_ops = fi_ops {
    size: std::mem::size_of::<fi_ops>(),
    close: Some(close),
    bind: Some(nosys::bind),
    control: Some(nosys::control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

static OPS_FABRIC: fi_ops_fabric = fi_ops_fabric {
    size: std::mem::size_of::<fi_ops_fabric>(),
    domain: Some(open_domain),
    passive_ep: Some(passive_ep),
    eq_open: Some(eq_open),
    wait_open: Some(wait_open),
    trywait: Some(trywait),
    domain2: Some(open_domain2),
};

/// Opens an oxshm fabric for `fi_fabric`.
pub fn open(attr: &FabricAttr, context: *mut c_void) -> Result<*mut fid_fabric> {
    if let Some(name) = &attr.name {
        if name != super::NAME {
            crate::ox_log!(Warn, Fabric, super::NAME, "no fabric named {name}");
            return Err(Error::NODATA);
        }
    }
    let f = Box::new(Fabric {
        fid: fid_fabric {
            fid: fid {
                fclass: FI_CLASS_FABRIC as usize,
                context,
                ops: Fabric::fi_ops(),
            },
            ops: &OPS_FABRIC as *const fi_ops_fabric as *mut fi_ops_fabric,
            api_version: attr.api_version,
        },
        hdr: Header::new(TAG_FABRIC),
        api_version: attr.api_version,
    });
    Ok(Box::into_raw(f) as *mut fid_fabric)
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: f is a fid from the application; from_fid checks it.
        let fab = unsafe { from_fid::<Fabric>(f) }?;
        fab.hdr.begin_close("fabric")?;
        // SAFETY: a live fabric allocated by `open`; no dependants remain.
        drop(unsafe { Box::from_raw(f as *mut Fabric) });
        Ok(0)
    })
}

unsafe extern "C" fn open_domain(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    dom: *mut *mut fid_domain,
    context: *mut c_void,
) -> c_int {
    // SAFETY: arguments forwarded unchanged; domain::open checks them.
    unsafe { open_domain2(fabric, info, dom, 0, context) }
}

unsafe extern "C" fn open_domain2(
    fabric: *mut fid_fabric,
    info: *mut fi_info,
    dom: *mut *mut fid_domain,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    slot("fi_domain", || {
        // SAFETY: fabric comes from the application; from_fid checks it.
        let fab = unsafe { from_fid::<Fabric>(fabric as *const fid) }?;
        if flags != 0 {
            crate::ox_log!(
                Warn,
                Domain,
                super::NAME,
                "fi_domain2: flags 0x{flags:x} not supported"
            );
            return Err(Error::BADFLAGS);
        }
        crate::boundary::nonnull(dom, "fi_domain", "domain")?;
        crate::boundary::nonnull(info, "fi_domain", "info")?;
        // SAFETY: info checked non-NULL; domain::open reads it within the
        // current layout.
        let d = unsafe { domain::open(fab, info, context) }?;
        // SAFETY: dom checked non-NULL; written last, on success.
        unsafe { *dom = d };
        Ok(0)
    })
}

unsafe extern "C" fn passive_ep(
    _: *mut fid_fabric,
    _: *mut fi_info,
    _: *mut *mut fid_pep,
    _: *mut c_void,
) -> c_int {
    crate::ox_log!(
        Warn,
        EpCtrl,
        super::NAME,
        "passive endpoints need FI_EP_MSG, which oxshm does not offer"
    );
    Error::NOSYS.code()
}

unsafe extern "C" fn eq_open(
    fabric: *mut fid_fabric,
    attr: *mut fi_eq_attr,
    out: *mut *mut fid_eq,
    context: *mut c_void,
) -> c_int {
    slot("fi_eq_open", || {
        // SAFETY: fabric comes from the application; from_fid checks it.
        let fab = unsafe { from_fid::<Fabric>(fabric as *const fid) }?;
        crate::boundary::nonnull(attr, "fi_eq_open", "attr")?;
        crate::boundary::nonnull(out, "fi_eq_open", "eq")?;
        // SAFETY: attr checked non-NULL.
        let e = unsafe { eq::open(fab, &*attr, context) }?;
        // SAFETY: out checked non-NULL; written last, on success.
        unsafe { *out = e };
        Ok(0)
    })
}

unsafe extern "C" fn wait_open(
    _: *mut fid_fabric,
    _: *mut fi_wait_attr,
    _: *mut *mut fid_wait,
) -> c_int {
    crate::ox_log!(
        Warn,
        Fabric,
        super::NAME,
        "wait sets are deprecated and not supported"
    );
    Error::NOSYS.code()
}

/// -FI_EAGAIN if any of the objects already has something to read (the
/// caller must not block), else 0, the CQs and counters having armed what
/// makes their fds readable (see `Cq::trywait`).
unsafe extern "C" fn trywait(fabric: *mut fid_fabric, fids: *mut *mut fid, count: c_int) -> c_int {
    slot("fi_trywait", || {
        // SAFETY: fabric comes from the application; from_fid checks it.
        unsafe { from_fid::<Fabric>(fabric as *const fid) }?;
        if count < 0 || (count > 0 && fids.is_null()) {
            crate::ox_log!(Warn, Fabric, super::NAME, "fi_trywait: bad fid array");
            return Err(Error::INVAL);
        }
        for i in 0..count as usize {
            // SAFETY: fids holds `count` object pointers (fi_trywait(3)).
            let f = unsafe { *fids.add(i) };
            crate::boundary::nonnull(f, "fi_trywait", "fid")?;
            // SAFETY: f is non-NULL and starts with a struct fid; from_fid
            // checks the object of the class it claims.
            match unsafe { (*f).fclass } as c_int {
                c if c == FI_CLASS_CQ as c_int => {
                    unsafe { from_fid::<super::cq::Cq>(f) }?.trywait()?
                }
                c if c == FI_CLASS_CNTR as c_int => {
                    unsafe { from_fid::<super::cntr::Cntr>(f) }?.trywait()?
                }
                _ => {
                    if unsafe { from_fid::<eq::Eq>(f) }?.has_entries() {
                        return Err(Error::AGAIN);
                    }
                }
            }
        }
        Ok(0)
    })
}
