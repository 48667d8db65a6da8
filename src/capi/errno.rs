//! Exports of `rdma/fi_errno.h`.

use libc::{c_char, c_int};

/// Returns a printable message for a libfabric error number. `errnum` may be
/// given negated, as calls return it (`-FI_ENOKEY` and `FI_ENOKEY` give the
/// same text). Numbers below FI_ERRNO_OFFSET get the C library's strerror
/// text; numbers at or past FI_ERRNO_MAX read as FI_EOTHER.
///
/// The string is owned by the library, never NULL, must not be freed or
/// modified, and stays valid until the process exits. Safe to call from
/// several threads at once.
///
/// # Safety
/// None beyond the C ABI: any `int` is accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_strerror(errnum: c_int) -> *const c_char {
    crate::capi::guard_or("fi_strerror", c"Unspecified error".as_ptr(), || {
        Ok(crate::errstr::strerror_cstr(errnum))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::errno::*;
    use std::ffi::CStr;

    fn text(n: c_int) -> &'static str {
        // SAFETY: fi_strerror returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(fi_strerror(n)) }.to_str().unwrap()
    }

    #[test]
    fn both_signs() {
        assert_eq!(text(FI_ENOKEY), "Required key not available");
        assert_eq!(text(-FI_ENOKEY), "Required key not available");
        assert_eq!(text(-FI_EINVAL), "Invalid argument");
        assert_eq!(text(FI_ETRUNC), "Truncation error");
        assert_eq!(text(-FI_EAVAIL), "Error available");
    }

    #[test]
    fn out_of_range() {
        assert_eq!(text(FI_ERRNO_MAX + 5), "Unspecified error");
        assert_eq!(text(-100000), "Unspecified error");
        // SAFETY: any int is a valid argument.
        assert!(!unsafe { fi_strerror(c_int::MIN) }.is_null());
    }
}
