//! The error type every layer returns; converted to a negative `FI_E*` code
//! exactly once, at the C boundary.

use std::fmt;

/// A libfabric error number (positive; the C API returns its negation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error(pub i32);

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub const PERM: Error = Error(libc::EPERM);
    pub const NOENT: Error = Error(libc::ENOENT);
    pub const INTR: Error = Error(libc::EINTR);
    pub const IO: Error = Error(libc::EIO);
    pub const BADF: Error = Error(libc::EBADF);
    pub const AGAIN: Error = Error(libc::EAGAIN);
    pub const NOMEM: Error = Error(libc::ENOMEM);
    pub const ACCES: Error = Error(libc::EACCES);
    pub const FAULT: Error = Error(libc::EFAULT);
    pub const BUSY: Error = Error(libc::EBUSY);
    pub const NODEV: Error = Error(libc::ENODEV);
    pub const INVAL: Error = Error(libc::EINVAL);
    pub const MFILE: Error = Error(libc::EMFILE);
    pub const NOSPC: Error = Error(libc::ENOSPC);
    pub const NOSYS: Error = Error(libc::ENOSYS);
    pub const NODATA: Error = Error(libc::ENODATA);
    pub const OVERFLOW: Error = Error(libc::EOVERFLOW);
    pub const MSGSIZE: Error = Error(libc::EMSGSIZE);
    pub const NOPROTOOPT: Error = Error(libc::ENOPROTOOPT);
    pub const OPNOTSUPP: Error = Error(libc::EOPNOTSUPP);
    pub const ADDRINUSE: Error = Error(libc::EADDRINUSE);
    pub const ADDRNOTAVAIL: Error = Error(libc::EADDRNOTAVAIL);
    pub const NETDOWN: Error = Error(libc::ENETDOWN);
    pub const NETUNREACH: Error = Error(libc::ENETUNREACH);
    pub const CONNABORTED: Error = Error(libc::ECONNABORTED);
    pub const CONNRESET: Error = Error(libc::ECONNRESET);
    pub const NOBUFS: Error = Error(libc::ENOBUFS);
    pub const ISCONN: Error = Error(libc::EISCONN);
    pub const NOTCONN: Error = Error(libc::ENOTCONN);
    pub const SHUTDOWN: Error = Error(libc::ESHUTDOWN);
    pub const TIMEDOUT: Error = Error(libc::ETIMEDOUT);
    pub const CONNREFUSED: Error = Error(libc::ECONNREFUSED);
    pub const HOSTUNREACH: Error = Error(libc::EHOSTUNREACH);
    pub const ALREADY: Error = Error(libc::EALREADY);
    pub const INPROGRESS: Error = Error(libc::EINPROGRESS);
    pub const REMOTEIO: Error = Error(libc::EREMOTEIO);
    pub const CANCELED: Error = Error(libc::ECANCELED);
    pub const NOMSG: Error = Error(libc::ENOMSG);
    pub const KEYREJECTED: Error = Error(libc::EKEYREJECTED);
    // libfabric's own numbers, from FI_ERRNO_OFFSET (256).
    pub const OTHER: Error = Error(256);
    pub const TOOSMALL: Error = Error(257);
    pub const OPBADSTATE: Error = Error(258);
    pub const AVAIL: Error = Error(259);
    pub const BADFLAGS: Error = Error(260);
    pub const NOEQ: Error = Error(261);
    pub const DOMAIN: Error = Error(262);
    pub const NOCQ: Error = Error(263);
    pub const CRC: Error = Error(264);
    pub const TRUNC: Error = Error(265);
    pub const NOKEY: Error = Error(266);
    pub const NOAV: Error = Error(267);
    pub const OVERRUN: Error = Error(268);
    pub const NORX: Error = Error(269);
    pub const NOMR: Error = Error(270);

    /// The negative return code the C API uses.
    pub fn code(self) -> i32 {
        -self.0
    }

    /// From a C return code (negative or positive).
    pub fn from_code(code: i32) -> Error {
        Error(code.abs())
    }

    /// The current `errno` as an error.
    pub fn last_os() -> Error {
        Error(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }
}

impl From<Error> for i32 {
    fn from(e: Error) -> i32 {
        e.code()
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error(-{}: {})", self.0, crate::errstr::strerror(self.0))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::errstr::strerror(self.0))
    }
}

impl std::error::Error for Error {}
