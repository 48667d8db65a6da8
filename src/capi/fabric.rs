//! Exports of `rdma/fabric.h` that dispatch through an object's `fi_ops`
//! table (upstream keeps them `static inline`): fi_close, fi_control,
//! fi_alias, fi_get_val, fi_set_val, fi_open_ops, fi_set_ops.
//!
//! Each works on any provider's object. A NULL object is -FI_EINVAL; a NULL
//! ops table, a table whose `size` does not reach the slot, or a NULL slot is
//! -FI_ENOSYS. Otherwise the provider's return value is passed through.

use crate::abi::fabric::{fi_alias, fi_fid_var, fi_ops, fid, FI_ALIAS, FI_GET_VAL, FI_SET_VAL};
use crate::capi::guard;
use crate::error::Result;
use libc::{c_char, c_int, c_void};

/// fi_control without the boundary guard, for the helpers built on it.
///
/// # Safety
/// As [`fi_control`].
unsafe fn control(func: &str, fid: *mut fid, command: c_int, arg: *mut c_void) -> Result<c_int> {
    dispatch!(func, fid, (*fid).ops, fi_ops, control(fid, command, arg))
}

/// Closes a fabric object and releases its resources. Objects opened from
/// it usually must be closed first (-FI_EBUSY otherwise).
///
/// Returns 0, the provider's negative FI_E* code, -FI_EINVAL for a NULL
/// `fid`, or -FI_ENOSYS if the object has no close operation.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; after success it is
/// gone and must not be used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_close(fid: *mut fid) -> c_int {
    guard("fi_close", || {
        dispatch!("fi_close", fid, (*fid).ops, fi_ops, close(fid))
    })
}

/// Performs object-specific control `command` (FI_GETFIDFLAG, FI_ENABLE,
/// FI_GET_RAW_MR, ...) with `arg` as that command defines it.
///
/// Returns the provider's result, -FI_EINVAL for a NULL `fid`, or
/// -FI_ENOSYS if the object has no control operation.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; `arg` must be what
/// `command` expects.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_control(fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: forwarded caller contract.
    guard("fi_control", || unsafe {
        control("fi_control", fid, command, arg)
    })
}

/// Creates an alias of `fid` with operation flags `flags`, storing the new
/// object in `*alias_fid` (fi_control with FI_ALIAS). The alias is closed
/// with fi_close like any object.
///
/// Returns 0 or a negative FI_E* code as fi_control does.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; `alias_fid` must be
/// writable as the provider requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_alias(fid: *mut fid, alias_fid: *mut *mut fid, flags: u64) -> c_int {
    guard("fi_alias", || {
        let mut alias = fi_alias {
            fid: alias_fid,
            flags,
        };
        // SAFETY: forwarded caller contract; `alias` outlives the call.
        unsafe {
            control(
                "fi_alias",
                fid,
                FI_ALIAS,
                &mut alias as *mut fi_alias as *mut c_void,
            )
        }
    })
}

/// Reads the object variable `name` into `val` (fi_control with
/// FI_GET_VAL). Provider-specific names have the top bit set.
///
/// Returns 0 or a negative FI_E* code as fi_control does.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; `val` must point to
/// storage of the type `name` defines.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_get_val(fid: *mut fid, name: c_int, val: *mut c_void) -> c_int {
    guard("fi_get_val", || {
        let mut var = fi_fid_var { name, val };
        // SAFETY: forwarded caller contract; `var` outlives the call.
        unsafe {
            control(
                "fi_get_val",
                fid,
                FI_GET_VAL,
                &mut var as *mut fi_fid_var as *mut c_void,
            )
        }
    })
}

/// Sets the object variable `name` from `val` (fi_control with
/// FI_SET_VAL).
///
/// Returns 0 or a negative FI_E* code as fi_control does.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; `val` must point to
/// a value of the type `name` defines.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_set_val(fid: *mut fid, name: c_int, val: *mut c_void) -> c_int {
    guard("fi_set_val", || {
        let mut var = fi_fid_var { name, val };
        // SAFETY: forwarded caller contract; `var` outlives the call.
        unsafe {
            control(
                "fi_set_val",
                fid,
                FI_SET_VAL,
                &mut var as *mut fi_fid_var as *mut c_void,
            )
        }
    })
}

/// Opens the provider-specific interface `name` on an object; on success
/// `*ops` points to the provider's operations table, owned by the provider.
///
/// Returns 0, the provider's negative FI_E* code (-FI_ENOSYS for an unknown
/// name), -FI_EINVAL for a NULL `fid`, or -FI_ENOSYS if the object has no
/// ops_open operation.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; `name` must be a
/// NUL-terminated string; `ops` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_open_ops(
    fid: *mut fid,
    name: *const c_char,
    flags: u64,
    ops: *mut *mut c_void,
    context: *mut c_void,
) -> c_int {
    guard("fi_open_ops", || {
        dispatch!(
            "fi_open_ops",
            fid,
            (*fid).ops,
            fi_ops,
            ops_open(fid, name, flags, ops, context)
        )
    })
}

/// Installs the caller's operations table `ops` for interface `name` on an
/// object (for example peer or logging hooks).
///
/// Returns 0, the provider's negative FI_E* code, -FI_EINVAL for a NULL
/// `fid`, or -FI_ENOSYS if the object has no ops_set operation.
///
/// # Safety
/// `fid` must be NULL or point to a live fabric object; `name` must be a
/// NUL-terminated string; `ops` must be what `name` defines and outlive its
/// use by the provider.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_set_ops(
    fid: *mut fid,
    name: *const c_char,
    flags: u64,
    ops: *mut c_void,
    context: *mut c_void,
) -> c_int {
    guard("fi_set_ops", || {
        dispatch!(
            "fi_set_ops",
            fid,
            (*fid).ops,
            fi_ops,
            ops_set(fid, name, flags, ops, context)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::errno::{FI_EINVAL, FI_ENOSYS};
    use crate::abi::fabric::FI_CLASS_FABRIC;
    use std::cell::Cell;
    use std::mem::{offset_of, size_of};
    use std::ptr::null_mut;

    thread_local! {
        static LAST: Cell<(c_int, usize, u64)> = const { Cell::new((0, 0, 0)) };
    }

    unsafe extern "C" fn t_close(_fid: *mut fid) -> c_int {
        LAST.with(|l| l.set((-1, 0, 0)));
        7
    }

    unsafe extern "C" fn t_control(_fid: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
        // SAFETY: the tests pass the argument type each command defines.
        let (a, b) = unsafe {
            match command {
                FI_ALIAS => {
                    let a = &*(arg as *const fi_alias);
                    (a.fid as usize, a.flags)
                }
                FI_GET_VAL | FI_SET_VAL => {
                    let v = &*(arg as *const fi_fid_var);
                    (v.val as usize, v.name as u64)
                }
                _ => (arg as usize, 0),
            }
        };
        LAST.with(|l| l.set((command, a, b)));
        command + 100
    }

    unsafe extern "C" fn t_ops_open(
        _fid: *mut fid,
        _name: *const c_char,
        flags: u64,
        ops: *mut *mut c_void,
        _context: *mut c_void,
    ) -> c_int {
        // SAFETY: the test passes a writable pointer.
        unsafe { *ops = 0x1234 as *mut c_void };
        flags as c_int
    }

    unsafe extern "C" fn t_ops_set(
        _fid: *mut fid,
        _name: *const c_char,
        flags: u64,
        ops: *mut c_void,
        _context: *mut c_void,
    ) -> c_int {
        LAST.with(|l| l.set((-2, ops as usize, flags)));
        0
    }

    fn full_ops() -> fi_ops {
        fi_ops {
            size: size_of::<fi_ops>(),
            close: Some(t_close),
            bind: None,
            control: Some(t_control),
            ops_open: Some(t_ops_open),
            tostr: None,
            ops_set: Some(t_ops_set),
        }
    }

    fn object(ops: *mut fi_ops) -> fid {
        fid {
            fclass: FI_CLASS_FABRIC as usize,
            context: null_mut(),
            ops,
        }
    }

    #[test]
    fn dispatches() {
        let mut ops = full_ops();
        let mut obj = object(&mut ops);
        let f = &mut obj as *mut fid;
        // SAFETY: f is a live fake object with a valid ops table.
        unsafe {
            assert_eq!(fi_close(f), 7);
            assert_eq!(fi_control(f, 6, 0x55 as *mut c_void), 106);
            assert_eq!(LAST.with(|l| l.get()), (6, 0x55, 0));

            let mut out: *mut fid = null_mut();
            assert_eq!(fi_alias(f, &mut out, 0xabc), FI_ALIAS + 100);
            assert_eq!(
                LAST.with(|l| l.get()),
                (FI_ALIAS, &mut out as *mut _ as usize, 0xabc)
            );

            let mut v = 0u64;
            let vp = &mut v as *mut u64 as *mut c_void;
            assert_eq!(fi_get_val(f, 3, vp), FI_GET_VAL + 100);
            assert_eq!(LAST.with(|l| l.get()), (FI_GET_VAL, vp as usize, 3));
            assert_eq!(fi_set_val(f, 4, vp), FI_SET_VAL + 100);
            assert_eq!(LAST.with(|l| l.get()), (FI_SET_VAL, vp as usize, 4));

            let mut p: *mut c_void = null_mut();
            assert_eq!(fi_open_ops(f, c"x".as_ptr(), 9, &mut p, null_mut()), 9);
            assert_eq!(p as usize, 0x1234);
            assert_eq!(
                fi_set_ops(f, c"x".as_ptr(), 5, 0x99 as *mut c_void, null_mut()),
                0
            );
            assert_eq!(LAST.with(|l| l.get()), (-2, 0x99, 5));
        }
    }

    #[test]
    fn null_object_is_einval() {
        // SAFETY: NULL objects are part of the contract.
        unsafe {
            assert_eq!(fi_close(null_mut()), -FI_EINVAL);
            assert_eq!(fi_control(null_mut(), 0, null_mut()), -FI_EINVAL);
            assert_eq!(fi_alias(null_mut(), null_mut(), 0), -FI_EINVAL);
            assert_eq!(fi_get_val(null_mut(), 0, null_mut()), -FI_EINVAL);
            assert_eq!(fi_set_val(null_mut(), 0, null_mut()), -FI_EINVAL);
            assert_eq!(
                fi_open_ops(null_mut(), null_mut(), 0, null_mut(), null_mut()),
                -FI_EINVAL
            );
            assert_eq!(
                fi_set_ops(null_mut(), null_mut(), 0, null_mut(), null_mut()),
                -FI_EINVAL
            );
        }
    }

    #[test]
    fn null_table_is_enosys() {
        let mut obj = object(null_mut());
        let f = &mut obj as *mut fid;
        // SAFETY: f is a live fake object whose ops table is NULL.
        unsafe {
            assert_eq!(fi_close(f), -FI_ENOSYS);
            assert_eq!(fi_control(f, 0, null_mut()), -FI_ENOSYS);
            assert_eq!(fi_alias(f, null_mut(), 0), -FI_ENOSYS);
            assert_eq!(
                fi_open_ops(f, null_mut(), 0, null_mut(), null_mut()),
                -FI_ENOSYS
            );
            assert_eq!(
                fi_set_ops(f, null_mut(), 0, null_mut(), null_mut()),
                -FI_ENOSYS
            );
        }
    }

    #[test]
    fn short_table_and_null_slot_are_enosys() {
        // A 1.x-era table that ends before ops_set.
        let mut ops = full_ops();
        ops.size = offset_of!(fi_ops, ops_set);
        let mut obj = object(&mut ops);
        let f = &mut obj as *mut fid;
        // SAFETY: f is a live fake object with a valid (short) ops table.
        unsafe {
            assert_eq!(
                fi_set_ops(f, null_mut(), 0, null_mut(), null_mut()),
                -FI_ENOSYS
            );
            assert_eq!(fi_close(f), 7);
        }
        let mut ops = full_ops();
        ops.control = None;
        ops.close = None;
        let mut obj = object(&mut ops);
        let f = &mut obj as *mut fid;
        // SAFETY: as above.
        unsafe {
            assert_eq!(fi_close(f), -FI_ENOSYS);
            assert_eq!(fi_control(f, 0, null_mut()), -FI_ENOSYS);
            assert_eq!(fi_get_val(f, 0, null_mut()), -FI_ENOSYS);
        }
    }
}

/// The traffic class that carries DSCP value `dscp` (FI_TC_DSCP set).
#[unsafe(no_mangle)]
pub extern "C" fn fi_tc_dscp_set(dscp: u8) -> u32 {
    dscp as u32 | crate::abi::fabric::FI_TC_DSCP as u32
}

/// The DSCP value carried by traffic class `tclass`, or 0 if it carries none.
#[unsafe(no_mangle)]
pub extern "C" fn fi_tc_dscp_get(tclass: u32) -> u8 {
    if tclass & crate::abi::fabric::FI_TC_DSCP as u32 != 0 {
        tclass as u8
    } else {
        0
    }
}

#[cfg(test)]
mod dscp_tests {
    use super::*;

    #[test]
    fn dscp_round_trip() {
        assert_eq!(fi_tc_dscp_get(fi_tc_dscp_set(46)), 46);
        assert_eq!(fi_tc_dscp_set(0x2e), 0x12e);
        assert_eq!(
            fi_tc_dscp_get(crate::abi::fabric::FI_TC_BULK_DATA as u32),
            0
        );
    }
}
