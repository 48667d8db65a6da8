//! The "mr_cache" interface of fi_open(3) (fi_mr(3), MEMORY REGISTRATION
//! CACHE): an object into which the application imports its own memory
//! monitor, a `fid_mem_monitor` of rdma/fi_ext.h, with fi_import_fid (or
//! fi_import("mr_cache", ...)). The imported monitor replaces the built-in
//! one for system memory; the import must come before the first pinned-mode
//! domain opens.
//!
//! The library fills in `monitor->import_ops` (its `notify`) and the
//! monitor fid's ops (fi_close takes the monitor back, refused while a
//! pinned-mode domain is open; a second import waits for it), calls
//! `start` when the first pinned-mode domain opens and `stop` when the last
//! closes, `subscribe`/`unsubscribe` for each cached range and `valid`
//! before serving a cached range. `notify` invalidates every cached pinning
//! over the range; it must not be called from inside `subscribe` or
//! `unsubscribe`.

use super::monitor;
use super::object::{nosys, slot};
use crate::abi::ext::{fi_ops_mem_notify, fid_mem_monitor};
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use libc::{c_int, c_void, size_t};
use std::sync::Arc;

static FI_OPS: fi_ops = fi_ops {
    size: std::mem::size_of::<fi_ops>(),
    close: Some(close),
    bind: Some(bind),
    control: Some(nosys::control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

/// The ops an imported monitor's fid gets: fi_close on it removes it
/// ([`monitor::release_imported`]).
static MONITOR_OPS: fi_ops = fi_ops {
    size: std::mem::size_of::<fi_ops>(),
    close: Some(close_monitor),
    bind: Some(nosys::bind),
    control: Some(nosys::control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

static NOTIFY_OPS: fi_ops_mem_notify = fi_ops_mem_notify {
    size: std::mem::size_of::<fi_ops_mem_notify>(),
    notify: Some(notify),
};

/// Opens the interface: a fid of class FI_CLASS_MR_CACHE that the caller
/// closes with fi_close (closing it leaves an imported monitor in place).
pub fn open(context: *mut c_void) -> *mut fid {
    Box::into_raw(Box::new(fid {
        fclass: FI_CLASS_MR_CACHE as size_t,
        context,
        ops: &FI_OPS as *const fi_ops as *mut fi_ops,
    }))
}

/// # Safety
/// `f` is NULL or a live fid.
unsafe fn check(f: *mut fid) -> Result<()> {
    if f.is_null() {
        return Err(Error::INVAL);
    }
    // SAFETY: per the contract.
    let (class, ops) = unsafe { ((*f).fclass, (*f).ops) };
    if class != FI_CLASS_MR_CACHE as size_t || !std::ptr::eq(ops, &FI_OPS) {
        crate::ox_log!(Warn, Mr, super::NAME, "not an mr_cache object");
        return Err(Error::INVAL);
    }
    Ok(())
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: check reads the fid only.
        unsafe { check(f) }?;
        // SAFETY: allocated by `open`; the caller gives it up.
        drop(unsafe { Box::from_raw(f) });
        Ok(0)
    })
}

/// An application monitor, called through its export_ops.
struct Imported(*mut fid_mem_monitor);

// SAFETY: the application's monitor is process-wide and stays live while
// imported (fi_mr(3)); its callbacks are called from any thread, as
// upstream's cache does.
unsafe impl Send for Imported {}
// SAFETY: as above.
unsafe impl Sync for Imported {}

impl monitor::Imported for Imported {
    fn start(&self) -> Result<()> {
        // SAFETY: a live monitor whose export_ops was checked at import.
        let rc = unsafe { (*(*self.0).export_ops).start.map(|f| f(self.0)) };
        match rc {
            None | Some(0) => Ok(()),
            Some(e) => Err(Error::from_code(e)),
        }
    }
    fn stop(&self) {
        // SAFETY: as above.
        if let Some(f) = unsafe { (*(*self.0).export_ops).stop } {
            // SAFETY: as above.
            unsafe { f(self.0) };
        }
    }
    fn subscribe(&self, start: u64, len: u64) -> Result<()> {
        // SAFETY: as above; subscribe was checked non-NULL.
        let rc = unsafe {
            (*(*self.0).export_ops)
                .subscribe
                .map_or(-libc::ENOSYS, |f| {
                    f(self.0, start as *const c_void, len as size_t)
                })
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::from_code(rc))
        }
    }
    fn unsubscribe(&self, start: u64, len: u64) {
        // SAFETY: as above.
        if let Some(f) = unsafe { (*(*self.0).export_ops).unsubscribe } {
            // SAFETY: as above.
            unsafe { f(self.0, start as *const c_void, len as size_t) };
        }
    }
    fn id(&self) -> usize {
        self.0 as usize
    }
    fn valid(&self, start: u64, len: u64) -> bool {
        // SAFETY: as above.
        match unsafe { (*(*self.0).export_ops).valid } {
            // SAFETY: as above.
            Some(f) => unsafe { f(self.0, start as *const c_void, len as size_t) },
            None => true,
        }
    }
}

/// fi_import_fid(mr_cache, &monitor->fid, 0).
unsafe extern "C" fn bind(f: *mut fid, bfid: *mut fid, _flags: u64) -> c_int {
    slot("fi_import_fid", || {
        // SAFETY: check reads the fid only.
        unsafe { check(f) }?;
        crate::boundary::nonnull(bfid, "fi_import_fid", "fid")?;
        // SAFETY: a non-NULL fid from the application.
        if unsafe { (*bfid).fclass } != FI_CLASS_MEM_MONITOR as size_t {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "fi_import_fid: mr_cache imports memory monitors only (fclass FI_CLASS_MEM_MONITOR)"
            );
            return Err(Error::INVAL);
        }
        let m = bfid as *mut fid_mem_monitor;
        // SAFETY: a fid_mem_monitor starts with its fid (fi_ext.h).
        let ops = unsafe { (*m).export_ops };
        // SAFETY: ops is checked non-NULL before it is read.
        if ops.is_null() || unsafe { (*ops).subscribe.is_none() || (*ops).unsubscribe.is_none() } {
            crate::ox_log!(
                Warn,
                Mr,
                super::NAME,
                "fi_import_fid: the monitor's export_ops lacks subscribe or unsubscribe"
            );
            return Err(Error::INVAL);
        }
        monitor::import(Arc::new(Imported(m)))?;
        // SAFETY: the application lends the monitor; its import_ops and
        // its fid's ops are ours to set (fi_ext.h): the application calls
        // fi_close on the fid to take the monitor back, as Open MPI does.
        unsafe {
            (*m).import_ops = &NOTIFY_OPS as *const _ as *mut fi_ops_mem_notify;
            (*m).fid.ops = &MONITOR_OPS as *const fi_ops as *mut fi_ops;
        }
        Ok(0)
    })
}

/// fi_close on an imported monitor's fid.
unsafe extern "C" fn close_monitor(f: *mut fid) -> c_int {
    slot("fi_close", || {
        crate::boundary::nonnull(f, "fi_close", "fid")?;
        monitor::release_imported(f as usize)?;
        Ok(0)
    })
}

unsafe extern "C" fn notify(_m: *mut fid_mem_monitor, addr: *const c_void, len: size_t) {
    let _ = crate::boundary::guard("notify", || {
        monitor::report(addr as u64, len as u64);
        Ok(0)
    });
}
