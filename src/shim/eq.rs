//! Asynchronous registration (a domain bound to an EQ with FI_REG_MR): the
//! provider reports each registration as an FI_MR_COMPLETE event naming
//! its own MR, which the application compares with the wrapper it holds.
//! The shim points each EQ's `ops` at a copy whose `read` and `sread`
//! translate that fid to the wrapper.
//!
//! The provider may post the event before the registration call has
//! returned through the shim; a read that finds an MR event it cannot yet
//! translate while such registrations are in flight waits for them (the
//! application's `*mr` is written before the event is handed over).

use super::objects::{find_table, register_hook, TableCopy};
use super::state;
use crate::abi::eq::{fi_eq_attr, fi_eq_entry, fi_ops_eq, fid_eq, FI_MR_COMPLETE};
use crate::abi::errno::FI_ENOSYS;
use crate::abi::fabric::fid_fabric;
use libc::{c_int, c_void, size_t, ssize_t};
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Registrations on async domains between the provider's call and the
/// wrapper's entry in [`super::State::async_mrs`].
pub(crate) static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

pub(crate) struct EqHook {
    orig_ops: *mut fi_ops_eq,
    ops: TableCopy,
}

/// Hooks an EQ the provider just opened.
///
/// # Safety
/// `eq` is an open EQ.
pub(crate) unsafe fn hook_eq(eq: *mut fid_eq) {
    if eq.is_null() {
        return;
    }
    // SAFETY: per the contract.
    let orig_ops = unsafe { (*eq).ops };
    if orig_ops.is_null() {
        return;
    }
    let mut hook = Box::new(EqHook {
        orig_ops,
        ops: TableCopy::empty(),
    });
    let owner = &*hook as *const EqHook as usize;
    // SAFETY: the provider's ops table.
    hook.ops = unsafe { TableCopy::new(orig_ops as *const c_void, size_of::<fi_ops_eq>(), owner) };
    hook.ops
        .set(offset_of!(fi_ops_eq, read), eq_read as *const () as usize);
    hook.ops
        .set(offset_of!(fi_ops_eq, sread), eq_sread as *const () as usize);
    register_hook(hook.ops.ptr::<fi_ops_eq>() as usize, owner);
    // SAFETY: the copy lives as long as the hook, which is never freed
    // (the EQ's close goes to the provider directly).
    unsafe { (*eq).ops = hook.ops.ptr() };
    Box::leak(hook);
}

/// # Safety
/// `eq` is NULL or a readable `struct fid_eq`.
unsafe fn eq_hook<'a>(eq: *const fid_eq) -> Option<&'a EqHook> {
    if eq.is_null() {
        return None;
    }
    // SAFETY: per the contract; hooks are never freed.
    unsafe { find_table((*eq).ops as usize).map(|h| &*(h as *const EqHook)) }
}

/// Replaces the provider's MR in an FI_MR_COMPLETE entry by its wrapper.
///
/// # Safety
/// `buf` holds `rc` bytes of an event of type `event`.
unsafe fn translate(event: u32, buf: *mut c_void, rc: ssize_t) {
    if event != FI_MR_COMPLETE as u32 || buf.is_null() || (rc as usize) < size_of::<fi_eq_entry>() {
        return;
    }
    let entry = buf as *mut fi_eq_entry;
    // SAFETY: per the contract, an fi_eq_entry.
    let real = unsafe { (*entry).fid } as usize;
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // Read before the lookup: a registration that ends in between has
        // put its wrapper in the map before leaving IN_FLIGHT.
        let in_flight = IN_FLIGHT.load(Ordering::Acquire);
        if let Some(&w) = state().async_mrs.get(&real) {
            // SAFETY: as above.
            unsafe { (*entry).fid = w as *mut _ };
            return;
        }
        if in_flight == 0 || Instant::now() > deadline {
            return;
        }
        std::thread::yield_now();
    }
}

unsafe extern "C" fn eq_read(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: size_t,
    flags: u64,
) -> ssize_t {
    // SAFETY: only reached through a hooked EQ's table.
    let Some(h) = (unsafe { eq_hook(eq) }) else {
        return -(FI_ENOSYS as ssize_t);
    };
    // SAFETY: the provider's table is static; forwarded as received.
    let rc = unsafe {
        match (*h.orig_ops).read {
            Some(f) => f(eq, event, buf, len, flags),
            None => return -(FI_ENOSYS as ssize_t),
        }
    };
    if rc > 0 && !event.is_null() {
        // SAFETY: the provider wrote `rc` bytes and the event type.
        unsafe { translate(*event, buf, rc) };
    }
    rc
}

unsafe extern "C" fn eq_sread(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: size_t,
    timeout: c_int,
    flags: u64,
) -> ssize_t {
    // SAFETY: only reached through a hooked EQ's table.
    let Some(h) = (unsafe { eq_hook(eq) }) else {
        return -(FI_ENOSYS as ssize_t);
    };
    // SAFETY: the provider's table is static; forwarded as received.
    let rc = unsafe {
        match (*h.orig_ops).sread {
            Some(f) => f(eq, event, buf, len, timeout, flags),
            None => return -(FI_ENOSYS as ssize_t),
        }
    };
    if rc > 0 && !event.is_null() {
        // SAFETY: the provider wrote `rc` bytes and the event type.
        unsafe { translate(*event, buf, rc) };
    }
    rc
}

/// fabric->ops->eq_open: the EQ is hooked.
///
/// # Safety
/// As fi_eq_open on a fabric the shim hooked.
pub(crate) unsafe extern "C" fn fabric_eq_open(
    fabric: *mut fid_fabric,
    attr: *mut fi_eq_attr,
    eq: *mut *mut fid_eq,
    context: *mut c_void,
) -> c_int {
    super::guard(|| {
        // SAFETY: per the contract.
        let Some(h) = (unsafe { super::objects::fabric_hook(fabric) }) else {
            return -crate::abi::errno::FI_EINVAL;
        };
        // SAFETY: the provider's table is static; forwarded as received.
        let rc = unsafe {
            match (*h.orig_ops).eq_open {
                Some(f) => f(fabric, attr, eq, context),
                None => return -FI_ENOSYS,
            }
        };
        if rc == 0 && !eq.is_null() {
            // SAFETY: the provider wrote an open EQ.
            unsafe { hook_eq(*eq) };
        }
        rc
    })
}
