//! oxshm memory regions (`fi_mr_reg`, `fi_mr_regv`, `fi_mr_regattr`): the
//! fid glue over the registration engine in `crate::mr`.

use super::domain::Domain;
use super::object::{from_fid, nosys, slot, Header, Object, TAG_MR};
use crate::abi::domain::*;
use crate::abi::eq::{fi_eq_entry, FI_MR_COMPLETE};
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use crate::prov::info::version;
use libc::{c_int, c_void, iovec, size_t};
use std::mem::offset_of;

/// Access bits a registration may carry.
pub const ACCESS_BITS: u64 =
    FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_COLLECTIVE;

#[repr(C)]
pub struct Mr {
    pub fid: fid_mr,
    pub hdr: Header,
    domain: *const Domain,
    pub iovs: Vec<(usize, usize)>,
    pub access: u64,
}

// SAFETY: #[repr(C)] with fid_mr (which starts with struct fid) first.
unsafe impl Object for Mr {
    const TAG: u64 = TAG_MR;
    const FCLASS: usize = FI_CLASS_MR as usize;
    const NAME: &'static str = "memory region";
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

/// A registration request, already read from C.
struct Request<'a> {
    iovs: Vec<(usize, usize)>,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    context: *mut c_void,
    out: *mut *mut fid_mr,
    domain: &'a Domain,
}

fn register(r: Request) -> Result<i32> {
    let d = r.domain;
    crate::capi::nonnull(r.out, "fi_mr_reg", "mr")?;
    if r.iovs.is_empty() || r.iovs.len() > d.mr_iov_limit {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "iov_count {} outside 1..={}",
            r.iovs.len(),
            d.mr_iov_limit
        );
        return Err(Error::INVAL);
    }
    for (i, &(base, len)) in r.iovs.iter().enumerate() {
        if len == 0 {
            crate::ox_log!(Warn, Mr, super::NAME, "iov {i} has length 0");
            return Err(Error::INVAL);
        }
        if base == 0 {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "iov {i}: NULL buffer with length {len}"
            );
            return Err(Error::INVAL);
        }
        if base.checked_add(len).is_none() {
            crate::ox_log!(Warn, Mr, super::NAME, "iov {i} wraps the address space");
            return Err(Error::INVAL);
        }
    }
    if r.access & !ACCESS_BITS != 0 {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "unknown access bits 0x{:x}",
            r.access & !ACCESS_BITS
        );
        return Err(Error::INVAL);
    }
    if r.offset != 0 {
        crate::ox_log!(Warn, Mr, super::NAME, "offset must be 0 (got {})", r.offset);
        return Err(Error::INVAL);
    }
    if r.flags != 0 {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "registration flags 0x{:x} are not supported",
            r.flags
        );
        return Err(Error::BADFLAGS);
    }
    let key = if d.mr_mode & FI_MR_PROV_KEY != 0 {
        d.keys.insert_provider()
    } else {
        d.keys.insert_requested(r.requested_key).inspect_err(|e| {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "requested key 0x{:x} refused: {e}",
                r.requested_key
            );
        })?;
        r.requested_key
    };
    let mr = Box::into_raw(Box::new(Mr {
        fid: fid_mr {
            fid: fid {
                fclass: FI_CLASS_MR as usize,
                context: r.context,
                ops: Mr::fi_ops(),
            },
            mem_desc: std::ptr::null_mut(),
            key,
        },
        hdr: Header::new(TAG_MR),
        domain: d,
        iovs: r.iovs,
        access: r.access,
    }));
    // SAFETY: mr was just allocated; its descriptor is the object itself.
    unsafe { (*mr).fid.mem_desc = mr as *mut c_void };
    // The out parameter is written before any completion event can be read.
    // SAFETY: out checked non-NULL.
    unsafe { *r.out = mr as *mut fid_mr };
    if let Some(eq) = d.reg_mr_eq() {
        let entry = fi_eq_entry {
            fid: mr as *mut fid,
            context: r.context,
            data: 0,
        };
        // SAFETY: viewing a plain-data struct as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                &entry as *const fi_eq_entry as *const u8,
                std::mem::size_of::<fi_eq_entry>(),
            )
        };
        eq.push(FI_MR_COMPLETE as u32, bytes)?;
    }
    Ok(0)
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let mr = unsafe { from_fid::<Mr>(f) }?;
        mr.hdr.begin_close("memory region")?;
        // SAFETY: a domain cannot close while it has registrations.
        unsafe { (*mr.domain).keys.remove(mr.fid.key) };
        // SAFETY: allocated by `register`; closed once (tag now dead).
        drop(unsafe { Box::from_raw(f as *mut Mr) });
        Ok(0)
    })
}

/// The `fi_ops_mr.reg` slot.
///
/// # Safety
/// `fid` is any object (checked); other pointers as fi_mr_reg(3).
pub unsafe extern "C" fn reg(
    fid: *mut fid,
    buf: *const c_void,
    len: size_t,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    slot("fi_mr_reg", || {
        // SAFETY: from_fid checks the object.
        let domain = unsafe { from_fid::<Domain>(fid) }?;
        register(Request {
            iovs: vec![(buf as usize, len)],
            access,
            offset,
            requested_key,
            flags,
            context,
            out: mr,
            domain,
        })
    })
}

/// Reads `count` iovs from C.
///
/// # Safety
/// `iov` is NULL or holds `count` readable iovecs.
unsafe fn read_iovs(iov: *const iovec, count: usize) -> Result<Vec<(usize, usize)>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if iov.is_null() {
        crate::ox_log!(Warn, Mr, super::NAME, "iov is NULL with count {count}");
        return Err(Error::INVAL);
    }
    if count > super::info::MR_IOV_LIMIT {
        crate::ox_log!(
            Warn,
            Mr,
            super::NAME,
            "iov_count {count} exceeds {}",
            super::info::MR_IOV_LIMIT
        );
        return Err(Error::INVAL);
    }
    // SAFETY: per the function contract.
    let s = unsafe { std::slice::from_raw_parts(iov, count) };
    Ok(s.iter().map(|v| (v.iov_base as usize, v.iov_len)).collect())
}

/// The `fi_ops_mr.regv` slot.
///
/// # Safety
/// `fid` is any object (checked); other pointers as fi_mr_regv(3).
pub unsafe extern "C" fn regv(
    fid: *mut fid,
    iov: *const iovec,
    count: size_t,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    slot("fi_mr_regv", || {
        // SAFETY: from_fid checks the object.
        let domain = unsafe { from_fid::<Domain>(fid) }?;
        // SAFETY: iov holds count entries (fi_mr_regv(3)).
        let iovs = unsafe { read_iovs(iov, count) }?;
        register(Request {
            iovs,
            access,
            offset,
            requested_key,
            flags,
            context,
            out: mr,
            domain,
        })
    })
}

/// How many bytes of `struct fi_mr_attr` exist at an API version: fields
/// are only read if the application's headers had them.
pub fn mr_attr_len(api_version: u32) -> usize {
    if api_version < version(1, 5) {
        offset_of!(fi_mr_attr, auth_key_size)
    } else if api_version < version(1, 10) {
        offset_of!(fi_mr_attr, iface)
    } else if api_version < version(1, 19) {
        offset_of!(fi_mr_attr, hmem_data)
    } else if api_version < version(1, 22) {
        offset_of!(fi_mr_attr, page_size)
    } else if api_version < version(2, 0) {
        offset_of!(fi_mr_attr, base_mr)
    } else {
        std::mem::size_of::<fi_mr_attr>()
    }
}

/// The `fi_ops_mr.regattr` slot.
///
/// # Safety
/// `fid` is any object (checked); `attr` as fi_mr_regattr(3), read only
/// as far as the domain's API version defines it.
pub unsafe extern "C" fn regattr(
    fid: *mut fid,
    attr: *const fi_mr_attr,
    flags: u64,
    mr: *mut *mut fid_mr,
) -> c_int {
    slot("fi_mr_regattr", || {
        // SAFETY: from_fid checks the object.
        let domain = unsafe { from_fid::<Domain>(fid) }?;
        crate::capi::nonnull(attr, "fi_mr_regattr", "attr")?;
        let limit = mr_attr_len(domain.api_version);
        // A copy of the application's prefix; later fields stay zero.
        // SAFETY: attr holds at least `limit` bytes for this API version.
        let a: fi_mr_attr = unsafe {
            let mut a: fi_mr_attr = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(
                attr as *const u8,
                &mut a as *mut fi_mr_attr as *mut u8,
                limit,
            );
            a
        };
        if !a.hmem_data.is_null() {
            crate::ox_log!(Warn, Mr, super::NAME, "hmem_data must be NULL");
            return Err(Error::INVAL);
        }
        if !a.base_mr.is_null() {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "sub-MRs (base_mr) are not supported yet"
            );
            return Err(Error::NOSYS);
        }
        if a.auth_key_size != 0 || !a.auth_key.is_null() {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "authorization keys need FI_AV_AUTH_KEY, which this domain does not offer"
            );
            return Err(Error::INVAL);
        }
        // SAFETY: the union's mr_iov member is the iov pointer unless
        // FI_MR_DMABUF (refused below, as every flag is for now) is set.
        let iov = unsafe { a.__anon_mr_iov.mr_iov };
        if flags & FI_MR_DMABUF != 0 {
            crate::ox_log!(Warn, Mr, super::NAME, "FI_MR_DMABUF is not supported yet");
            return Err(Error::BADFLAGS);
        }
        // SAFETY: mr_iov holds iov_count entries (fi_mr_regattr(3)).
        let iovs = unsafe { read_iovs(iov, a.iov_count) }?;
        register(Request {
            iovs,
            access: a.access,
            offset: a.offset,
            requested_key: a.requested_key,
            flags,
            context: a.context,
            out: mr,
            domain,
        })
    })
}
