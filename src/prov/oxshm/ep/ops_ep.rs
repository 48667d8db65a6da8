//! The endpoint's `struct fi_ops_ep`: fi_cancel, fi_getopt and
//! fi_setopt, the context calls and fi_rx_size_left/fi_tx_size_left.

use super::*;

/// Cancels the posted receive whose context is `context` (it completes
/// with FI_ECANCELED; a multi-receive buffer stops taking messages, see
/// `Xfer::cancel`); transmits are never queued at the initiator long
/// enough to cancel. 0 whether or not something was cancelled, and on an
/// endpoint not enabled yet (nothing is pending there).
pub(super) unsafe extern "C" fn cancel(f: fid_t, context: *mut c_void) -> ssize_t {
    slot_ssize("fi_cancel", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        if let Some(x) = ep.xfer.get() {
            x.cancel(context);
        }
        Ok(0)
    })
}

/// An endpoint option and the C type of its value.
#[derive(Clone, Copy, Debug)]
enum Opt {
    MinMultiRecv,
    CmDataSize,
    HmemP2p,
    XpuTrigger,
    CudaApiPermitted,
    SharedMemoryPermitted,
    Limit(Limit),
}

fn option(optname: c_int) -> Option<Opt> {
    Some(match optname {
        FI_OPT_MIN_MULTI_RECV => Opt::MinMultiRecv,
        FI_OPT_CM_DATA_SIZE => Opt::CmDataSize,
        FI_OPT_FI_HMEM_P2P => Opt::HmemP2p,
        FI_OPT_XPU_TRIGGER => Opt::XpuTrigger,
        FI_OPT_CUDA_API_PERMITTED => Opt::CudaApiPermitted,
        FI_OPT_SHARED_MEMORY_PERMITTED => Opt::SharedMemoryPermitted,
        FI_OPT_MAX_MSG_SIZE => Opt::Limit(Limit::MaxMsg),
        FI_OPT_MAX_TAGGED_SIZE => Opt::Limit(Limit::MaxTagged),
        FI_OPT_MAX_RMA_SIZE => Opt::Limit(Limit::MaxRma),
        FI_OPT_MAX_ATOMIC_SIZE => Opt::Limit(Limit::MaxAtomic),
        FI_OPT_INJECT_MSG_SIZE => Opt::Limit(Limit::InjectMsg),
        FI_OPT_INJECT_TAGGED_SIZE => Opt::Limit(Limit::InjectTagged),
        FI_OPT_INJECT_RMA_SIZE => Opt::Limit(Limit::InjectRma),
        FI_OPT_INJECT_ATOMIC_SIZE => Opt::Limit(Limit::InjectAtomic),
        _ => return None,
    })
}

/// The option `optname` at `level`, or -FI_ENOPROTOOPT.
fn known_option(level: c_int, optname: c_int, call: &str) -> Result<Opt> {
    if level != FI_OPT_ENDPOINT {
        crate::ox_log!(
            Warn,
            EpCtrl,
            crate::prov::oxshm::NAME,
            "{call}: option level {level} is not FI_OPT_ENDPOINT"
        );
        return Err(Error::NOPROTOOPT);
    }
    option(optname).ok_or_else(|| {
        crate::ox_log!(
            Warn,
            EpCtrl,
            crate::prov::oxshm::NAME,
            "{call}: option {optname} is not an oxshm endpoint option"
        );
        Error::NOPROTOOPT
    })
}

fn p2p_disabled_by_env() -> bool {
    matches!(
        crate::param::get(None, "hmem_disable_p2p"),
        Ok((_, crate::param::Value::Bool(true)))
    )
}

/// A value of an option, as the bytes C reads.
enum OptVal {
    Size(usize),
    Int(c_int),
    Bool(bool),
}

pub(super) unsafe extern "C" fn getopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut size_t,
) -> c_int {
    slot("fi_getopt", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        let opt = known_option(level, optname, "fi_getopt")?;
        let v = match opt {
            Opt::MinMultiRecv => OptVal::Size(ep.min_multi_recv()),
            // RDM endpoints exchange no connection data.
            Opt::CmDataSize => OptVal::Size(0),
            Opt::HmemP2p => OptVal::Int(if p2p_disabled_by_env() {
                FI_HMEM_P2P_DISABLED
            } else {
                ep.hmem_p2p.load(Ordering::Acquire)
            }),
            Opt::XpuTrigger => {
                crate::ox_log!(
                    Warn,
                    EpCtrl,
                    crate::prov::oxshm::NAME,
                    "fi_getopt: oxshm has no XPU-triggered operations"
                );
                return Err(Error::OPNOTSUPP);
            }
            Opt::CudaApiPermitted => OptVal::Bool(ep.cuda_api_permitted.load(Ordering::Acquire)),
            Opt::SharedMemoryPermitted => OptVal::Bool(true),
            Opt::Limit(l) => OptVal::Size(ep.limit(l)),
        };
        crate::boundary::nonnull(optlen, "fi_getopt", "optlen")?;
        let need = match v {
            OptVal::Size(_) => std::mem::size_of::<usize>(),
            OptVal::Int(_) => std::mem::size_of::<c_int>(),
            OptVal::Bool(_) => std::mem::size_of::<bool>(),
        };
        // SAFETY: optlen checked non-NULL; it is a size_t * (fi_getopt(3)).
        let have = unsafe { *optlen };
        if have < need {
            crate::ox_log!(
                Warn,
                EpCtrl,
                crate::prov::oxshm::NAME,
                "fi_getopt: option {optname} needs {need} bytes, optlen is {have}"
            );
            // SAFETY: as above; the needed size is the documented output.
            unsafe { *optlen = need };
            return Err(Error::TOOSMALL);
        }
        crate::boundary::nonnull(optval, "fi_getopt", "optval")?;
        // SAFETY: optval holds *optlen >= need writable bytes; written last.
        unsafe {
            match v {
                OptVal::Size(n) => std::ptr::write_unaligned(optval as *mut usize, n),
                OptVal::Int(n) => std::ptr::write_unaligned(optval as *mut c_int, n),
                OptVal::Bool(b) => std::ptr::write_unaligned(optval as *mut bool, b),
            }
            *optlen = need;
        }
        Ok(0)
    })
}

/// Reads a `T` option value of exactly `optlen` bytes.
///
/// # Safety
/// `optval` is NULL or holds `optlen` readable bytes.
unsafe fn read_opt<T: Copy>(optval: *const c_void, optlen: usize, optname: c_int) -> Result<T> {
    crate::boundary::nonnull(optval, "fi_setopt", "optval")?;
    if optlen != std::mem::size_of::<T>() {
        crate::ox_log!(
            Warn,
            EpCtrl,
            crate::prov::oxshm::NAME,
            "fi_setopt: option {optname} takes {} bytes, optlen is {optlen}",
            std::mem::size_of::<T>()
        );
        return Err(Error::INVAL);
    }
    // SAFETY: optval holds size_of::<T>() readable bytes (checked above).
    Ok(unsafe { std::ptr::read_unaligned(optval as *const T) })
}

pub(super) unsafe extern "C" fn setopt(
    f: fid_t,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: size_t,
) -> c_int {
    slot("fi_setopt", || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(f) }?;
        let opt = known_option(level, optname, "fi_setopt")?;
        match opt {
            Opt::MinMultiRecv => {
                // SAFETY: read_opt checks the pointer and the length.
                let v: usize = unsafe { read_opt(optval, optlen, optname) }?;
                ep.min_multi_recv.store(v, Ordering::Release);
            }
            Opt::CmDataSize | Opt::XpuTrigger => {
                crate::ox_log!(
                    Warn,
                    EpCtrl,
                    crate::prov::oxshm::NAME,
                    "fi_setopt: option {optname} can only be read"
                );
                return Err(Error::OPNOTSUPP);
            }
            Opt::HmemP2p => {
                // SAFETY: read_opt checks the pointer and the length.
                let v: c_int = unsafe { read_opt(optval, optlen, optname) }?;
                match v {
                    FI_HMEM_P2P_ENABLED | FI_HMEM_P2P_PREFERRED | FI_HMEM_P2P_DISABLED => {
                        ep.hmem_p2p.store(v, Ordering::Release)
                    }
                    FI_HMEM_P2P_REQUIRED => {
                        crate::ox_log!(
                            Warn,
                            EpCtrl,
                            crate::prov::oxshm::NAME,
                            "fi_setopt: FI_HMEM_P2P_REQUIRED cannot be met: oxshm copies through host memory"
                        );
                        return Err(Error::OPNOTSUPP);
                    }
                    other => {
                        crate::ox_log!(
                            Warn,
                            EpCtrl,
                            crate::prov::oxshm::NAME,
                            "fi_setopt: {other} is not an FI_HMEM_P2P_* value"
                        );
                        return Err(Error::INVAL);
                    }
                }
            }
            Opt::CudaApiPermitted => {
                // SAFETY: read_opt checks the pointer and the length.
                let v: u8 = unsafe { read_opt(optval, optlen, optname) }?;
                // oxshm never calls a device API for data, so either is kept.
                ep.cuda_api_permitted.store(v != 0, Ordering::Release);
            }
            Opt::SharedMemoryPermitted => {
                // SAFETY: read_opt checks the pointer and the length.
                let v: u8 = unsafe { read_opt(optval, optlen, optname) }?;
                if v == 0 {
                    crate::ox_log!(
                        Warn,
                        EpCtrl,
                        crate::prov::oxshm::NAME,
                        "fi_setopt: oxshm is a shared-memory provider; it cannot run without shared memory"
                    );
                    return Err(Error::OPNOTSUPP);
                }
            }
            Opt::Limit(l) => {
                // SAFETY: read_opt checks the pointer and the length.
                let v: usize = unsafe { read_opt(optval, optlen, optname) }?;
                ep.refuse_if_enabled(&ep.lock(), "fi_setopt")?;
                let max = ep.ceilings[l as usize];
                if v > max {
                    crate::ox_log!(
                        Warn,
                        EpCtrl,
                        crate::prov::oxshm::NAME,
                        "fi_setopt: option {optname} value {v} exceeds oxshm's {max}"
                    );
                    return Err(Error::INVAL);
                }
                ep.limits[l as usize].store(v, Ordering::Release);
            }
        }
        Ok(0)
    })
}

pub(super) unsafe extern "C" fn tx_ctx(
    sep: *mut fid_ep,
    _: c_int,
    _: *mut fi_tx_attr,
    _: *mut *mut fid_ep,
    _: *mut c_void,
) -> c_int {
    ep_nosys(
        sep as *const fid,
        "fi_tx_context",
        "oxshm has no scalable endpoints",
    )
}

pub(super) unsafe extern "C" fn rx_ctx(
    sep: *mut fid_ep,
    _: c_int,
    _: *mut fi_rx_attr,
    _: *mut *mut fid_ep,
    _: *mut c_void,
) -> c_int {
    ep_nosys(
        sep as *const fid,
        "fi_rx_context",
        "oxshm has no scalable endpoints",
    )
}

/// Receive operations that can be posted without -FI_EAGAIN (deprecated).
pub(super) unsafe extern "C" fn rx_size_left(e: *mut fid_ep) -> ssize_t {
    size_left(e, "fi_rx_size_left", true)
}

/// Transmit operations that can be posted without -FI_EAGAIN (deprecated).
pub(super) unsafe extern "C" fn tx_size_left(e: *mut fid_ep) -> ssize_t {
    size_left(e, "fi_tx_size_left", false)
}

fn size_left(e: *mut fid_ep, call: &str, recv: bool) -> ssize_t {
    slot_ssize(call, || {
        // SAFETY: from_fid checks the object.
        let ep = unsafe { from_fid::<Ep>(e as *const fid) }?;
        if ep.enabled().is_none() {
            crate::ox_log!(
                Warn,
                EpCtrl,
                crate::prov::oxshm::NAME,
                "{call}: the endpoint is not enabled"
            );
            return Err(Error::OPBADSTATE);
        }
        let used = match ep.xfer.get() {
            Some(x) if recv => x.posted_recvs.load(Ordering::Acquire),
            Some(x) => x.inflight.load(Ordering::Acquire),
            None => 0,
        };
        let size = if recv { ep.rx_size } else { ep.tx_size };
        Ok(size.saturating_sub(used) as isize)
    })
}

pub(super) unsafe extern "C" fn export_xpu(e: *mut fid_ep, _: u64, _: *mut fid_xpu_ep) -> c_int {
    ep_nosys(e as *const fid, "fi_export_xpu", "oxshm has no XPU support")
}
