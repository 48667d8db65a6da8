//! Text for error numbers, as `fi_strerror` returns it.
//!
//! libfabric's own numbers (FI_ERRNO_OFFSET and up) have fixed messages;
//! anything at or past FI_ERRNO_MAX reads as FI_EOTHER's. Smaller numbers
//! are host `errno` values and get the C library's `strerror` text. A
//! negative number is read as its negation, so both `-FI_ENOKEY` and
//! `FI_ENOKEY` name the same message.
//!
//! Every message returned lives for the rest of the process: the fixed ones
//! are static, and each host message is produced once (by the thread-safe
//! `strerror_r`) and then kept.

use crate::abi::errno::{FI_ERRNO_MAX, FI_ERRNO_OFFSET};
use libc::c_char;
use std::ffi::CStr;
use std::sync::OnceLock;

/// Messages for FI_ERRNO_OFFSET .. FI_ERRNO_MAX, in order.
const FABRIC_MESSAGES: [&CStr; (FI_ERRNO_MAX - FI_ERRNO_OFFSET) as usize] = [
    c"Unspecified error",
    c"Provided buffer is too small",
    c"Operation not permitted in current state",
    c"Error available",
    c"Flags not supported",
    c"Missing or unavailable event queue",
    c"Invalid resource domain",
    c"Missing or unavailable completion queue",
    c"CRC error",
    c"Truncation error",
    c"Required key not available",
    c"Missing or unavailable address vector",
    c"Queue has been overrun",
    c"Receiver not ready, no receive buffers available",
    c"Memory registration limit exceeded",
    c"Address is behind a firewall",
];

/// A host message, kept in both the forms callers want.
struct Cached {
    c: &'static CStr,
    s: &'static str,
}

/// One slot per errno value below FI_ERRNO_OFFSET.
static HOST: [OnceLock<Cached>; FI_ERRNO_OFFSET as usize] =
    [const { OnceLock::new() }; FI_ERRNO_OFFSET as usize];
/// `i32::MIN` has no positive counterpart and stays negative.
static HOST_MIN: OnceLock<Cached> = OnceLock::new();

/// The message for `errnum` (negative or positive), as UTF-8 text.
pub fn strerror(errnum: i32) -> &'static str {
    match lookup(errnum) {
        Message::Fabric(c) => c.to_str().unwrap_or("Unspecified error"),
        Message::Host(m) => m.s,
    }
}

/// The message for `errnum` as a NUL-terminated string that stays valid for
/// the rest of the process (what `fi_strerror` hands to C).
pub fn strerror_cstr(errnum: i32) -> *const c_char {
    match lookup(errnum) {
        Message::Fabric(c) => c.as_ptr(),
        Message::Host(m) => m.c.as_ptr(),
    }
}

enum Message {
    Fabric(&'static CStr),
    Host(&'static Cached),
}

fn lookup(errnum: i32) -> Message {
    // As upstream: negate, then split at the offset. i32::MIN wraps to itself
    // and is passed to the C library unchanged.
    let n = if errnum < 0 {
        errnum.wrapping_neg()
    } else {
        errnum
    };
    if n >= FI_ERRNO_MAX {
        Message::Fabric(FABRIC_MESSAGES[0])
    } else if n >= FI_ERRNO_OFFSET {
        Message::Fabric(FABRIC_MESSAGES[(n - FI_ERRNO_OFFSET) as usize])
    } else if n >= 0 {
        Message::Host(HOST[n as usize].get_or_init(|| host_message(n)))
    } else {
        Message::Host(HOST_MIN.get_or_init(|| host_message(n)))
    }
}

/// Asks the C library once for the text of a host errno value.
fn host_message(n: i32) -> Cached {
    let mut buf = [0 as c_char; 256];
    // SAFETY: buf is writable for buf.len() bytes; the XSI strerror_r writes
    // at most that many, NUL included, and keeps no pointer to it.
    let rc = unsafe { libc::strerror_r(n, buf.as_mut_ptr(), buf.len()) };
    // SAFETY: on success and on EINVAL ("Unknown error N") strerror_r leaves
    // a NUL-terminated string in buf; the last byte is forced to NUL anyway.
    buf[buf.len() - 1] = 0;
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
    let owned = if rc == 0 || !text.is_empty() {
        text.to_owned()
    } else {
        std::ffi::CString::new(format!("Unknown error {n}")).unwrap_or_default()
    };
    let c: &'static CStr = Box::leak(owned.into_boxed_c_str());
    let s: &'static str = match c.to_str() {
        Ok(s) => s,
        Err(_) => Box::leak(c.to_string_lossy().into_owned().into_boxed_str()),
    };
    Cached { c, s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::errno::*;

    // Expected strings were checked against the `fi_strerror` tool and
    // libfabric's message table (FI_ENOMR and up postdate Debian's 1.17).
    #[test]
    fn fabric_messages() {
        assert_eq!(strerror(FI_EOTHER), "Unspecified error");
        assert_eq!(strerror(FI_ETOOSMALL), "Provided buffer is too small");
        assert_eq!(
            strerror(FI_EOPBADSTATE),
            "Operation not permitted in current state"
        );
        assert_eq!(strerror(FI_EAVAIL), "Error available");
        assert_eq!(strerror(FI_EBADFLAGS), "Flags not supported");
        assert_eq!(strerror(FI_ENOEQ), "Missing or unavailable event queue");
        assert_eq!(strerror(FI_EDOMAIN), "Invalid resource domain");
        assert_eq!(
            strerror(FI_ENOCQ),
            "Missing or unavailable completion queue"
        );
        assert_eq!(strerror(FI_ECRC), "CRC error");
        assert_eq!(strerror(FI_ETRUNC), "Truncation error");
        assert_eq!(strerror(FI_ENOKEY), "Required key not available");
        assert_eq!(strerror(FI_ENOAV), "Missing or unavailable address vector");
        assert_eq!(strerror(FI_EOVERRUN), "Queue has been overrun");
        assert_eq!(
            strerror(FI_ENORX),
            "Receiver not ready, no receive buffers available"
        );
        assert_eq!(strerror(FI_ENOMR), "Memory registration limit exceeded");
    }

    #[test]
    fn past_the_table_is_unspecified() {
        assert_eq!(strerror(FI_ERRNO_MAX), "Unspecified error");
        assert_eq!(strerror(300), "Unspecified error");
        assert_eq!(strerror(4096), "Unspecified error");
        assert_eq!(strerror(i32::MAX), "Unspecified error");
        assert_eq!(strerror(-1000), "Unspecified error");
    }

    #[test]
    fn negative_is_negated() {
        assert_eq!(strerror(-FI_ENOKEY), "Required key not available");
        assert_eq!(strerror(-FI_EINVAL), "Invalid argument");
    }

    #[test]
    fn host_messages() {
        assert_eq!(strerror(0), "Success");
        assert_eq!(strerror(FI_EPERM), "Operation not permitted");
        assert_eq!(strerror(FI_EAGAIN), "Resource temporarily unavailable");
        assert_eq!(strerror(FI_EINVAL), "Invalid argument");
        assert_eq!(strerror(FI_ENOSYS), "Function not implemented");
        assert_eq!(strerror(FI_ENODATA), "No data available");
        assert_eq!(strerror(FI_EOPNOTSUPP), "Operation not supported");
        assert_eq!(strerror(FI_EKEYREJECTED), "Key was rejected by service");
        assert_eq!(strerror(255), "Unknown error 255");
        assert_eq!(strerror(i32::MIN), "Unknown error -2147483648");
    }

    #[test]
    fn cstr_is_stable_and_matches() {
        for n in [-FI_ENOKEY, 0, FI_EINVAL, 255, FI_ENOMR, 9999, i32::MIN] {
            let p = strerror_cstr(n);
            assert_eq!(p, strerror_cstr(n), "pointer for {n} must not move");
            // SAFETY: strerror_cstr returns a NUL-terminated static string.
            let c = unsafe { CStr::from_ptr(p) };
            assert_eq!(c.to_str().unwrap(), strerror(n));
        }
    }

    #[test]
    fn threads_agree() {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..300)
                        .map(strerror_cstr)
                        .map(|p| p as usize)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let all: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(all.windows(2).all(|w| w[0] == w[1]));
    }
}
