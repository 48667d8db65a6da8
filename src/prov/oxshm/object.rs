//! What every oxshm object shares: a private tag after its public fid
//! struct, so that a foreign or closed object is rejected with -FI_EINVAL
//! instead of being trusted, and a count of the objects that depend on it.

use crate::abi::fabric::{fi_ops, fid};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Tags of the oxshm object kinds (ASCII, for debuggers).
pub const TAG_FABRIC: u64 = u64::from_be_bytes(*b"oxFABRIC");
pub const TAG_DOMAIN: u64 = u64::from_be_bytes(*b"oxDOMAIN");
pub const TAG_EQ: u64 = u64::from_be_bytes(*b"oxEQ\0\0\0\0");
/// Written over the tag when an object is closed.
pub const TAG_DEAD: u64 = u64::from_be_bytes(*b"oxDEAD\0\0");

/// The part of an object after its public struct: tag and dependants.
#[derive(Debug)]
pub struct Header {
    tag: AtomicU64,
    refs: AtomicUsize,
}

impl Header {
    pub fn new(tag: u64) -> Header {
        Header {
            tag: AtomicU64::new(tag),
            refs: AtomicUsize::new(0),
        }
    }

    pub fn tag(&self) -> u64 {
        self.tag.load(Ordering::Acquire)
    }

    /// Records one more object that depends on this one.
    pub fn hold(&self) {
        self.refs.fetch_add(1, Ordering::AcqRel);
    }

    pub fn release(&self) {
        self.refs.fetch_sub(1, Ordering::AcqRel);
    }

    pub fn refs(&self) -> usize {
        self.refs.load(Ordering::Acquire)
    }

    /// Marks the object closed unless something still depends on it.
    pub fn begin_close(&self, what: &str) -> Result<()> {
        let n = self.refs();
        if n != 0 {
            crate::ox_log!(
                Warn,
                Core,
                super::NAME,
                "cannot close {what}: {n} dependent object(s) still open"
            );
            return Err(Error::BUSY);
        }
        self.tag.store(TAG_DEAD, Ordering::Release);
        Ok(())
    }
}

/// An oxshm object type: `#[repr(C)]`, its public struct (which starts with
/// `struct fid`) first and its [`Header`] second.
///
/// # Safety
/// Implementors must be `#[repr(C)]` with the public struct at offset 0.
pub unsafe trait Object: Sized {
    const TAG: u64;
    const FCLASS: usize;
    const NAME: &'static str;
    fn header(&self) -> &Header;
    /// The type's static `struct fi_ops` (identifies our objects).
    fn fi_ops() -> *mut fi_ops;
}

/// Whether `ops` is `T`'s table, or a copy of it in which only `close` and
/// `bind` were replaced: an interposer such as liboxfabric-shim.so points
/// an object's `fid.ops` at such a per-object copy to see its close and
/// its bindings.
///
/// # Safety
/// `ops` is NULL or points to a readable `struct fi_ops` of `(*ops).size`
/// bytes (any provider's).
pub unsafe fn ops_are<T: Object>(ops: *const fi_ops) -> bool {
    let ours = T::fi_ops() as *const fi_ops;
    if ops == ours {
        return true;
    }
    if ops.is_null() {
        return false;
    }
    let addr = |f: Option<usize>| f.unwrap_or(0);
    // SAFETY: ours is a static table; ops is readable (contract), and its
    // slots are read only when its size covers them.
    unsafe {
        let (a, b) = (&*ops, &*ours);
        a.size == b.size
            && addr(a.control.map(|f| f as usize)) == addr(b.control.map(|f| f as usize))
            && addr(a.ops_open.map(|f| f as usize)) == addr(b.ops_open.map(|f| f as usize))
            && addr(a.tostr.map(|f| f as usize)) == addr(b.tostr.map(|f| f as usize))
            && addr(a.ops_set.map(|f| f as usize)) == addr(b.ops_set.map(|f| f as usize))
    }
}

/// Checks that `p` is a live oxshm object of type `T` and returns it.
///
/// # Safety
/// `p` is NULL or points to readable memory that starts with a `struct fid`
/// (any provider's object).
pub unsafe fn from_fid<'a, T: Object>(p: *const fid) -> Result<&'a T> {
    if p.is_null() {
        crate::ox_log!(Warn, Core, super::NAME, "{} is NULL", T::NAME);
        return Err(Error::INVAL);
    }
    // SAFETY: p points to at least a struct fid (contract).
    let fclass = unsafe { (*p).fclass };
    if fclass != T::FCLASS {
        crate::ox_log!(
            Warn,
            Core,
            super::NAME,
            "object of class {fclass} passed where a {} is required",
            T::NAME
        );
        return Err(Error::INVAL);
    }
    // SAFETY: an object of this class whose ops are ours is one of our T
    // (checked next through the tag, which lives inside T).
    if !unsafe { ops_are::<T>((*p).ops) } {
        crate::ox_log!(
            Warn,
            Core,
            super::NAME,
            "{} belongs to another provider",
            T::NAME
        );
        return Err(Error::INVAL);
    }
    // SAFETY: fid ops are ours, so p is a T allocated by this provider.
    let obj = unsafe { &*(p as *const T) };
    if obj.header().tag() != T::TAG {
        crate::ox_log!(Warn, Core, super::NAME, "{} is closed or corrupt", T::NAME);
        return Err(Error::INVAL);
    }
    Ok(obj)
}

/// Slots of `struct fi_ops` that an object does not support: each returns
/// -FI_ENOSYS (never a NULL slot).
pub mod nosys {
    use crate::abi::fabric::fid;
    use crate::error::Error;
    use libc::{c_char, c_int, c_void, size_t};

    /// # Safety
    /// Callable with any arguments: none are dereferenced.
    pub unsafe extern "C" fn bind(_: *mut fid, _: *mut fid, _: u64) -> c_int {
        Error::NOSYS.code()
    }
    /// # Safety
    /// Callable with any arguments: none are dereferenced.
    pub unsafe extern "C" fn control(_: *mut fid, _: c_int, _: *mut c_void) -> c_int {
        Error::NOSYS.code()
    }
    /// # Safety
    /// Callable with any arguments: none are dereferenced.
    pub unsafe extern "C" fn ops_open(
        _: *mut fid,
        _: *const c_char,
        _: u64,
        _: *mut *mut c_void,
        _: *mut c_void,
    ) -> c_int {
        Error::NOSYS.code()
    }
    /// # Safety
    /// Callable with any arguments: none are dereferenced.
    pub unsafe extern "C" fn tostr(_: *const fid, _: *mut c_char, _: size_t) -> c_int {
        Error::NOSYS.code()
    }
    /// # Safety
    /// Callable with any arguments: none are dereferenced.
    pub unsafe extern "C" fn ops_set(
        _: *mut fid,
        _: *const c_char,
        _: u64,
        _: *mut c_void,
        _: *mut c_void,
    ) -> c_int {
        Error::NOSYS.code()
    }
}

/// Runs a vtable slot's body: catches panics (-FI_EOTHER) and maps errors to
/// negative codes, like the exported functions do.
pub fn slot(name: &str, f: impl FnOnce() -> Result<i32>) -> i32 {
    crate::boundary::guard(name, f)
}

/// As [`slot`], for `ssize_t` slots.
pub fn slot_ssize(name: &str, f: impl FnOnce() -> Result<isize>) -> isize {
    crate::boundary::guard_ssize(name, f)
}
