//! Mirror of `rdma/fi_errno.h`: libfabric's error numbers.
//!
//! Calls report failure as the negation of one of these (`-FI_EINVAL`).
//! The numbers below FI_ERRNO_OFFSET are the host's `errno` values; the C
//! header spells them with the `<errno.h>` names (see
//! `c/fi_errno.h.top`), so only the Rust copies are written as `libc::E*`.
//! From FI_ERRNO_OFFSET up the numbers are libfabric's own.

use libc::c_int;

/// The call succeeded.
pub const FI_SUCCESS: c_int = 0;

// Host errno values. The header gets these as `#define FI_EPERM EPERM` etc.
// from the raw top file; cbindgen must not print them a second time.

/// cbindgen:ignore
pub const FI_EPERM: c_int = libc::EPERM;
/// cbindgen:ignore
pub const FI_ENOENT: c_int = libc::ENOENT;
/// cbindgen:ignore
pub const FI_EINTR: c_int = libc::EINTR;
/// cbindgen:ignore
pub const FI_EIO: c_int = libc::EIO;
/// cbindgen:ignore
pub const FI_E2BIG: c_int = libc::E2BIG;
/// cbindgen:ignore
pub const FI_EBADF: c_int = libc::EBADF;
/// cbindgen:ignore
pub const FI_EAGAIN: c_int = libc::EAGAIN;
/// cbindgen:ignore
pub const FI_ENOMEM: c_int = libc::ENOMEM;
/// cbindgen:ignore
pub const FI_EACCES: c_int = libc::EACCES;
/// cbindgen:ignore
pub const FI_EFAULT: c_int = libc::EFAULT;
/// cbindgen:ignore
pub const FI_EBUSY: c_int = libc::EBUSY;
/// cbindgen:ignore
pub const FI_ENODEV: c_int = libc::ENODEV;
/// cbindgen:ignore
pub const FI_EINVAL: c_int = libc::EINVAL;
/// cbindgen:ignore
pub const FI_EMFILE: c_int = libc::EMFILE;
/// cbindgen:ignore
pub const FI_ENOSPC: c_int = libc::ENOSPC;
/// cbindgen:ignore
pub const FI_ENOSYS: c_int = libc::ENOSYS;
/// cbindgen:ignore
pub const FI_EWOULDBLOCK: c_int = libc::EWOULDBLOCK;
/// cbindgen:ignore
pub const FI_ENOMSG: c_int = libc::ENOMSG;
/// cbindgen:ignore
pub const FI_ENODATA: c_int = libc::ENODATA;
/// cbindgen:ignore
pub const FI_EPROTO: c_int = libc::EPROTO;
/// cbindgen:ignore
pub const FI_EOVERFLOW: c_int = libc::EOVERFLOW;
/// cbindgen:ignore
pub const FI_EMSGSIZE: c_int = libc::EMSGSIZE;
/// cbindgen:ignore
pub const FI_ENOPROTOOPT: c_int = libc::ENOPROTOOPT;
/// cbindgen:ignore
pub const FI_EOPNOTSUPP: c_int = libc::EOPNOTSUPP;
/// cbindgen:ignore
pub const FI_EADDRINUSE: c_int = libc::EADDRINUSE;
/// cbindgen:ignore
pub const FI_EADDRNOTAVAIL: c_int = libc::EADDRNOTAVAIL;
/// cbindgen:ignore
pub const FI_ENETDOWN: c_int = libc::ENETDOWN;
/// cbindgen:ignore
pub const FI_ENETUNREACH: c_int = libc::ENETUNREACH;
/// cbindgen:ignore
pub const FI_ECONNABORTED: c_int = libc::ECONNABORTED;
/// cbindgen:ignore
pub const FI_ECONNRESET: c_int = libc::ECONNRESET;
/// cbindgen:ignore
pub const FI_ENOBUFS: c_int = libc::ENOBUFS;
/// cbindgen:ignore
pub const FI_EISCONN: c_int = libc::EISCONN;
/// cbindgen:ignore
pub const FI_ENOTCONN: c_int = libc::ENOTCONN;
/// cbindgen:ignore
pub const FI_ESHUTDOWN: c_int = libc::ESHUTDOWN;
/// cbindgen:ignore
pub const FI_ETIMEDOUT: c_int = libc::ETIMEDOUT;
/// cbindgen:ignore
pub const FI_ECONNREFUSED: c_int = libc::ECONNREFUSED;
/// cbindgen:ignore
pub const FI_EHOSTDOWN: c_int = libc::EHOSTDOWN;
/// cbindgen:ignore
pub const FI_EHOSTUNREACH: c_int = libc::EHOSTUNREACH;
/// cbindgen:ignore
pub const FI_EALREADY: c_int = libc::EALREADY;
/// cbindgen:ignore
pub const FI_EINPROGRESS: c_int = libc::EINPROGRESS;
/// cbindgen:ignore
pub const FI_EREMOTEIO: c_int = libc::EREMOTEIO;
/// cbindgen:ignore
pub const FI_ECANCELED: c_int = libc::ECANCELED;
/// cbindgen:ignore
pub const FI_EKEYREJECTED: c_int = libc::EKEYREJECTED;

/// First libfabric-specific error number; smaller values are host errno
/// values.
pub const FI_ERRNO_OFFSET: c_int = 256;

/// Unspecified error.
pub const FI_EOTHER: c_int = FI_ERRNO_OFFSET;
/// The caller's buffer is too small; the needed size is usually reported.
pub const FI_ETOOSMALL: c_int = 257;
/// The operation is not allowed in the object's current state.
pub const FI_EOPBADSTATE: c_int = 258;
/// An error entry is waiting to be read (fi_cq_readerr / fi_eq_readerr).
pub const FI_EAVAIL: c_int = 259;
/// A flag is not supported.
pub const FI_EBADFLAGS: c_int = 260;
/// No event queue is bound, or it is unusable.
pub const FI_ENOEQ: c_int = 261;
/// The resource domain is invalid.
pub const FI_EDOMAIN: c_int = 262;
/// No completion queue is bound, or it is unusable.
pub const FI_ENOCQ: c_int = 263;
/// CRC error.
pub const FI_ECRC: c_int = 264;
/// Data was truncated.
pub const FI_ETRUNC: c_int = 265;
/// A required key (such as a memory-region key) is not available.
pub const FI_ENOKEY: c_int = 266;
/// No address vector is bound, or it is unusable.
pub const FI_ENOAV: c_int = 267;
/// A queue overflowed.
pub const FI_EOVERRUN: c_int = 268;
/// The receiver has no buffer posted for the message.
pub const FI_ENORX: c_int = 269;
/// No more memory registrations can be made.
pub const FI_ENOMR: c_int = 270;
/// The peer sits behind a firewall and no connection to it exists.
/// Since 2.2.
pub const FI_EFIREWALLADDR: c_int = 271;
/// One past the largest libfabric-specific error number.
pub const FI_ERRNO_MAX: c_int = 272;
