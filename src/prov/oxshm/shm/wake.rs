//! The wake-up sockets of segments: the datagram socket an owner asleep
//! waits on, and the one each process sends wake-up bytes from (see the
//! segment module's documentation).

use std::ffi::CString;

/// The wake-up socket of a segment: the owner's bound socket, or the
/// address a sender writes to.
pub(super) enum Wake {
    None,
    Own {
        fd: libc::c_int,
        /// Tells this socket apart from any other of the process, for the
        /// wait fds that watch it (an fd number is reused after a close).
        key: u64,
    },
    Peer {
        addr: libc::sockaddr_un,
        len: libc::socklen_t,
    },
}

/// The abstract socket address of a segment's wake-up socket.
pub(super) fn wake_addr(name: &CString) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // A leading NUL puts the name in the abstract namespace: nothing on
    // disk, gone when the owner closes it (or dies).
    let name = name.as_bytes();
    let name = name.strip_prefix(b"/").unwrap_or(name);
    let tail = b".wake";
    let n = (1 + name.len() + tail.len()).min(a.sun_path.len());
    for (d, s) in a.sun_path[1..n]
        .iter_mut()
        .zip(name.iter().chain(tail.iter()))
    {
        *d = *s as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + n;
    (a, len as libc::socklen_t)
}

/// The owner's wake-up socket, bound; None (logged) where it cannot be.
pub(super) fn wake_bind(name: &CString) -> Option<libc::c_int> {
    // SAFETY: socket has no memory preconditions; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return None;
    }
    let (a, len) = wake_addr(name);
    // SAFETY: a is a sockaddr_un of `len` bytes; fd is ours.
    if unsafe {
        libc::bind(
            fd,
            &a as *const libc::sockaddr_un as *const libc::sockaddr,
            len,
        )
    } != 0
    {
        crate::ox_log!(
            Info,
            EpData,
            crate::prov::oxshm::NAME,
            "no wake-up socket for {}: {}; fd waiters rely on the progress thread",
            name.to_string_lossy(),
            std::io::Error::last_os_error()
        );
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        return None;
    }
    Some(fd)
}

/// Reads every byte queued on a wake-up socket: those of the senders the
/// owner's last arming woke (already handled, or about to be), and any
/// stranger's. A byte still on its way (its sender disarmed the socket
/// but has not written yet) causes one spurious wake-up later, no more.
/// The socket is not read elsewhere: a sender counting its bytes would
/// have to count after writing, and a reader that trusted the count could
/// miss a byte whose sender was preempted in between, leaving the wait fd
/// readable and its poller spinning.
pub(super) fn drain(fd: libc::c_int) {
    // One recvmmsg takes up to BATCH datagrams: one call, unless more than
    // BATCH - 1 are queued.
    const BATCH: usize = 8;
    let mut bytes = [[0u8; 1]; BATCH];
    loop {
        // SAFETY: all-zero iovec and mmsghdr values are valid.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((v, m), b) in iov.iter_mut().zip(msgs.iter_mut()).zip(bytes.iter_mut()) {
            v.iov_base = b.as_mut_ptr() as *mut libc::c_void;
            v.iov_len = 1;
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: msgs holds BATCH headers, each with one iovec of one
        // writable byte; fd is the caller's open socket.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < BATCH as libc::c_int {
            break;
        }
    }
}

/// The socket senders write wake-up bytes from (one per process).
pub(super) fn wake_sender() -> libc::c_int {
    static FD: once_cell::sync::Lazy<libc::c_int> = once_cell::sync::Lazy::new(|| {
        // SAFETY: socket has no memory preconditions; -1 is handled at use.
        unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        }
    });
    *FD
}
