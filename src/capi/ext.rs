//! Exported forms of the `rdma/fi_ext.h` inline API: fid export and import,
//! and the logging import built on them.
//!
//! Each call returns -FI_EINVAL (and a log line) for a NULL object and
//! -FI_ENOSYS when the object's `fi_ops` table is NULL, too short, or lacks
//! the slot upstream's inline calls.

use crate::abi::ext::{fi_fid_export, fi_ops_log, fid_logging};
use crate::abi::fabric::{fi_ops, fid, FI_CLASS_LOG, FI_EXPORT_FID};
use crate::capi::fabric::{fi_close, fi_control};
use crate::capi::info::fi_open;
use crate::capi::{guard, nonnull};
use libc::{c_char, c_int, c_void, size_t};
use std::mem::size_of;
use std::ptr;

/// Exports `fid` for use by another provider or library (the FI_EXPORT_FID
/// control command); on success `*expfid` holds the exported fid.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS if the object has no control operation.
///
/// # Safety
/// `fid` must be NULL or a live fabric object; `expfid` is passed to it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_export_fid(
    fid: *mut fid,
    flags: u64,
    expfid: *mut *mut fid,
    context: *mut c_void,
) -> c_int {
    guard("fi_export_fid", || {
        let mut exp = fi_fid_export {
            fid: expfid,
            flags,
            context,
        };
        let arg = ptr::addr_of_mut!(exp).cast::<c_void>();
        // SAFETY: same contract as ours; `exp` outlives the call.
        Ok(unsafe { fi_control(fid, FI_EXPORT_FID, arg) })
    })
}

/// Imports the application object `expfid` (a memory monitor, a logger)
/// into `fid` by binding it.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `fid`,
/// -FI_ENOSYS if the object has no bind operation.
///
/// # Safety
/// `fid` must be NULL or a live fabric object; `expfid` is passed to it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_import_fid(fid: *mut fid, expfid: *mut fid, flags: u64) -> c_int {
    guard("fi_import_fid", || {
        dispatch!(
            "fi_import_fid",
            fid,
            (*fid).ops,
            fi_ops,
            bind(fid, expfid, flags)
        )
    })
}

/// Opens the named interface `name` with fi_open, imports `fid` into it
/// with fi_import_fid, and closes the interface again.
///
/// Returns 0, fi_open's error, or fi_import_fid's error.
///
/// # Safety
/// `name` must be NULL or a string; `attr` is passed to fi_open; `fid` must
/// be NULL or a live object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_import(
    version: u32,
    name: *const c_char,
    attr: *mut c_void,
    attr_len: size_t,
    flags: u64,
    fid: *mut fid,
    context: *mut c_void,
) -> c_int {
    guard("fi_import", || {
        let mut open_fid: *mut fid = ptr::null_mut();
        // SAFETY: the arguments are passed on under the same contract.
        let ret = unsafe { fi_open(version, name, attr, attr_len, flags, &mut open_fid, context) };
        if ret != 0 {
            return Ok(ret);
        }
        // SAFETY: fi_open succeeded, so open_fid is a live object.
        let ret = unsafe { fi_import_fid(open_fid, fid, flags) };
        // SAFETY: as above; the close result does not change the outcome.
        unsafe { fi_close(open_fid) };
        Ok(ret)
    })
}

/// Lends the application's logging callbacks in `log_fid->ops` to the
/// library: sets `log_fid->fid.fclass` to FI_CLASS_LOG and
/// `log_fid->ops->size`, then imports it into the "logging" interface.
///
/// Returns 0 or a negative FI_E* code: -FI_EINVAL for a NULL `log_fid` or
/// `log_fid->ops`, otherwise as fi_import.
///
/// # Safety
/// `log_fid` must be NULL or a writable `fid_logging` whose `ops` is NULL
/// or writable; the library keeps using it while it is imported.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_import_log(
    version: u32,
    flags: u64,
    log_fid: *mut fid_logging,
) -> c_int {
    guard("fi_import_log", || {
        nonnull(log_fid, "fi_import_log", "log_fid")?;
        // SAFETY: log_fid is non-NULL and writable by contract, and so is its
        // `ops` once checked; the import then follows fi_import's contract.
        unsafe {
            nonnull((*log_fid).ops, "fi_import_log", "log_fid->ops")?;
            (*log_fid).fid.fclass = FI_CLASS_LOG as size_t;
            (*(*log_fid).ops).size = size_of::<fi_ops_log>();
            Ok(fi_import(
                version,
                c"logging".as_ptr(),
                ptr::null_mut(),
                0,
                flags,
                ptr::addr_of_mut!((*log_fid).fid),
                log_fid.cast::<c_void>(),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::fake::{self, fake_fn, p, Case};
    use crate::error::Error;
    use std::mem::zeroed;

    fake_fn!(bind(fid: *mut fid, bfid: *mut fid, flags: u64) -> c_int);

    /// A control slot that records what fi_export_fid put in its
    /// `struct fi_fid_export`.
    unsafe extern "C" fn control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
        // SAFETY: fi_export_fid passes a live struct fi_fid_export.
        let e = unsafe { &*arg.cast::<fi_fid_export>() };
        fake::record(
            "control",
            vec![
                fid as u64,
                command as u64,
                e.fid as u64,
                e.flags,
                e.context as u64,
            ],
        );
        fake::RET
    }

    #[rustfmt::skip]
    const CASES: &[Case<fid>] = &[
        Case { slot: "control", call: |f| unsafe { fi_export_fid(f, 1, p(2), p(3)) as i64 }, args: &[FI_EXPORT_FID as u64, 2, 1, 3] },
        Case { slot: "bind", call: |f| unsafe { fi_import_fid(f, p(1), 2) as i64 }, args: &[1, 2] },
    ];

    fn ops(size: usize, slots: bool) -> fi_ops {
        // SAFETY: all-zero is a valid table (every slot NULL).
        let mut t: fi_ops = unsafe { zeroed() };
        t.size = size;
        if slots {
            t.bind = Some(bind);
            t.control = Some(control);
        }
        t
    }

    #[test]
    fn export_and_import_reach_their_slots() {
        let mut t = ops(size_of::<fi_ops>(), true);
        // SAFETY: all-zero is a valid fid.
        let mut f: fid = unsafe { zeroed() };
        f.ops = &mut t;
        fake::dispatches(&mut f, CASES);
        for mut t in [
            ops(size_of::<size_t>(), true),
            ops(size_of::<fi_ops>(), false),
        ] {
            f.ops = &mut t;
            fake::all_fail(&mut f, CASES, Error::NOSYS.code());
        }
        f.ops = ptr::null_mut();
        fake::all_fail(&mut f, CASES, Error::NOSYS.code());
        fake::all_fail(ptr::null_mut(), CASES, Error::INVAL.code());
    }

    #[test]
    fn import_log_prepares_the_logger_then_imports_it() {
        // SAFETY: all-zero values are valid for these structs.
        let (mut log_ops, mut log): (fi_ops_log, fid_logging) = unsafe { (zeroed(), zeroed()) };
        // SAFETY: NULL logger, then a logger without ops, then a real one.
        unsafe {
            assert_eq!(fi_import_log(0, 0, ptr::null_mut()), Error::INVAL.code());
            assert_eq!(fi_import_log(0, 0, &mut log), Error::INVAL.code());
            log.ops = &mut log_ops;
            // No "logging" interface exists, so the import stops at fi_open.
            let version = crate::capi::info::fi_version();
            assert_eq!(fi_import_log(version, 0, &mut log), Error::NOSYS.code());
        }
        assert_eq!(log.fid.fclass, FI_CLASS_LOG as size_t);
        assert_eq!(log_ops.size, size_of::<fi_ops_log>());
    }
}
