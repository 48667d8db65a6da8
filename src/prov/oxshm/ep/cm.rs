//! The endpoint's `struct fi_ops_cm`: fi_setname and fi_getname (and
//! [`copy_out`], which the AV's fi_av_lookup shares); the connection calls
//! of a connectionless provider answer -FI_ENOSYS.

use super::*;

/// Sets the endpoint's name before `fi_enable` (`addr` holds `addrlen`
/// bytes of an oxshm address of this process; the NUL is optional).
pub(super) unsafe extern "C" fn setname(f: fid_t, addr: *mut c_void, addrlen: size_t) -> c_int {
    slot("fi_setname", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        crate::boundary::nonnull(addr, "fi_setname", "addr")?;
        // SAFETY: addr holds addrlen readable bytes (fi_cm(3)).
        let n = unsafe { name_from_c(addr, addrlen) }.map_err(|why| {
            crate::ox_log!(
                Warn,
                EpCtrl,
                crate::prov::oxshm::NAME,
                "fi_setname: not an oxshm address: {why}"
            );
            Error::INVAL
        })?;
        let mut st = ep.lock();
        ep.refuse_if_enabled(&st, "fi_setname")?;
        match n {
            Name::Endpoint(a) => {
                check_own(&a)?;
                names::rename(st.name, a)?;
                st.name = a;
                st.service = None;
            }
            // A host name keeps the endpoint's own name and sets (or, with
            // no service, clears) the service it will publish.
            Name::Host { service, .. } => st.service = service,
        }
        Ok(0)
    })
}

/// Copies the name with its NUL into `addr` (room for `*addrlen` bytes);
/// `*addrlen` becomes the size needed. -FI_ETOOSMALL, with `*addrlen` set
/// and `addr` untouched, when the buffer is short.
pub(super) unsafe extern "C" fn getname(
    f: fid_t,
    addr: *mut c_void,
    addrlen: *mut size_t,
) -> c_int {
    slot("fi_getname", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        crate::boundary::nonnull(addrlen, "fi_getname", "addrlen")?;
        let name = ep.name().to_cstring();
        // SAFETY: the caller's buffer (possibly empty) of *addrlen bytes.
        unsafe {
            copy_out(
                name.as_bytes_with_nul(),
                addr,
                addrlen,
                "fi_getname",
                crate::log::Subsys::EpCtrl,
            )
        }
    })
}

/// Copies `bytes` to a caller's `buf` of `*len` bytes: -FI_ETOOSMALL with
/// `*len` set to the size needed when it does not fit (nothing copied),
/// else the copy and `*len` = its size.
///
/// # Safety
/// `len` is a valid `size_t *`; `buf` is NULL or holds `*len` writable bytes.
pub(in crate::prov::oxshm) unsafe fn copy_out(
    bytes: &[u8],
    buf: *mut c_void,
    len: *mut size_t,
    call: &str,
    subsys: crate::log::Subsys,
) -> Result<i32> {
    // SAFETY: per the function contract.
    let have = unsafe { *len };
    if have < bytes.len() {
        // A size query is ordinary use, not an error: logged at info.
        crate::log::emit(
            crate::prov::oxshm::NAME,
            crate::log::Level::Info,
            subsys,
            call,
            line!(),
            format_args!("{} bytes needed, buffer holds {have}", bytes.len()),
        );
        // SAFETY: per the function contract.
        unsafe { *len = bytes.len() };
        return Err(Error::TOOSMALL);
    }
    crate::boundary::nonnull(buf, call, "addr")?;
    // SAFETY: buf holds have >= bytes.len() writable bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, bytes.len());
        *len = bytes.len();
    }
    Ok(0)
}

pub(super) unsafe extern "C" fn getpeer(e: *mut fid_ep, _: *mut c_void, _: *mut size_t) -> c_int {
    ep_nosys(
        e as *const fid,
        "fi_getpeer",
        "RDM endpoints have no connected peer",
    )
}

pub(super) unsafe extern "C" fn connect(
    e: *mut fid_ep,
    _: *const c_void,
    _: *const c_void,
    _: size_t,
) -> c_int {
    ep_nosys(
        e as *const fid,
        "fi_connect",
        "RDM endpoints do not connect",
    )
}

/// Logs that oxshm has no passive endpoints and answers -FI_ENOSYS.
fn no_passive(call: &str) -> c_int {
    crate::ox_log!(
        Warn,
        EpCtrl,
        crate::prov::oxshm::NAME,
        "{call}: oxshm has no passive endpoints"
    );
    Error::NOSYS.code()
}

pub(super) unsafe extern "C" fn listen(_: *mut fid_pep) -> c_int {
    no_passive("fi_listen")
}

pub(super) unsafe extern "C" fn accept(e: *mut fid_ep, _: *const c_void, _: size_t) -> c_int {
    ep_nosys(e as *const fid, "fi_accept", "RDM endpoints do not connect")
}

pub(super) unsafe extern "C" fn reject(
    _: *mut fid_pep,
    _: fid_t,
    _: *const c_void,
    _: size_t,
) -> c_int {
    no_passive("fi_reject")
}

pub(super) unsafe extern "C" fn shutdown(e: *mut fid_ep, _: u64) -> c_int {
    ep_nosys(
        e as *const fid,
        "fi_shutdown",
        "RDM endpoints do not connect",
    )
}

pub(super) unsafe extern "C" fn join(
    e: *mut fid_ep,
    _: *const c_void,
    _: u64,
    _: *mut *mut fid_mc,
    _: *mut c_void,
) -> c_int {
    ep_nosys(e as *const fid, "fi_join", "oxshm has no multicast")
}
