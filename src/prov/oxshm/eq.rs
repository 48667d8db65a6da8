//! oxshm event queues (`fi_eq_open`): a bounded queue of events and one of
//! error entries, with a real wait object (an eventfd that is readable while
//! the queue holds anything) for `fi_eq_sread` and `FI_GETWAIT`.

use super::fabric::Fabric;
use super::object::{from_fid, nosys, slot, slot_ssize, Header, Object, TAG_EQ};
use crate::abi::eq::*;
use crate::abi::fabric::*;
use crate::error::{Error, Result};
use libc::{c_char, c_int, c_void, size_t, ssize_t};
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Provider-specific fi_eq_write flag (bit 60, in libfabric's provider
/// range): `buf` is a `struct fi_eq_err_entry` to queue as an error entry.
pub const FI_OXSHM_EQ_ERR: u64 = 1u64 << 60;

/// Entries an EQ holds when `attr->size` is 0.
const DEFAULT_SIZE: usize = 1024;
/// Largest event payload fi_eq_write accepts.
const MAX_ENTRY: usize = 4096;

struct Entry {
    event: u32,
    data: Vec<u8>,
}

struct ErrEntry {
    fid: *mut fid,
    context: *mut c_void,
    data: u64,
    err: c_int,
    prov_errno: c_int,
    err_data: Vec<u8>,
}

struct Queues {
    events: VecDeque<Entry>,
    errors: VecDeque<ErrEntry>,
    /// err_data of the last error read, valid until the next read.
    last_err_data: Vec<u8>,
    /// Whether the eventfd currently holds a count.
    signaled: bool,
}

#[repr(C)]
pub struct Eq {
    pub fid: fid_eq,
    pub hdr: Header,
    fabric: *const Fabric,
    flags: u64,
    size: usize,
    wait: bool,
    efd: c_int,
    q: Mutex<Queues>,
    cond: Condvar,
}

// SAFETY: #[repr(C)] with fid_eq (which starts with struct fid) first.
unsafe impl Object for Eq {
    const TAG: u64 = TAG_EQ;
    const FCLASS: usize = FI_CLASS_EQ as usize;
    const NAME: &'static str = "event queue";
    fn header(&self) -> &Header {
        &self.hdr
    }
    fn fi_ops() -> *mut fi_ops {
        &FI_OPS as *const fi_ops as *mut fi_ops
    }
}

static FI_OPS: fi_ops = fi_ops {
    size: std::mem::size_of::<fi_ops>(),
    close: Some(close),
    bind: Some(nosys::bind),
    control: Some(control),
    ops_open: Some(nosys::ops_open),
    tostr: Some(nosys::tostr),
    ops_set: Some(nosys::ops_set),
};

static OPS_EQ: fi_ops_eq = fi_ops_eq {
    size: std::mem::size_of::<fi_ops_eq>(),
    read: Some(read),
    readerr: Some(readerr),
    write: Some(write),
    sread: Some(sread),
    strerror: Some(strerror),
};

/// Opens an EQ on `fab` for `fi_eq_open`.
pub fn open(fab: &Fabric, attr: &fi_eq_attr, context: *mut c_void) -> Result<*mut fid_eq> {
    let wait_obj = attr.wait_obj;
    let wait = match wait_obj {
        x if x == fi_wait_obj::FI_WAIT_NONE as u32 => false,
        x if x == fi_wait_obj::FI_WAIT_UNSPEC as u32
            || x == fi_wait_obj::FI_WAIT_FD as u32
            || x == fi_wait_obj::FI_WAIT_YIELD as u32 =>
        {
            true
        }
        other => {
            crate::ox_log!(Warn, Eq, super::NAME, "wait object {other} not supported (use FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD or FI_WAIT_YIELD)");
            return Err(Error::NOSYS);
        }
    };
    if !attr.wait_set.is_null() {
        crate::ox_log!(Warn, Eq, super::NAME, "wait sets are not supported");
        return Err(Error::NOSYS);
    }
    let known = FI_WRITE | FI_AFFINITY;
    if attr.flags & !known != 0 {
        crate::ox_log!(
            Warn,
            Eq,
            super::NAME,
            "unknown EQ flags 0x{:x}",
            attr.flags & !known
        );
        return Err(Error::BADFLAGS);
    }
    let efd = if wait {
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            let e = Error::last_os();
            crate::ox_log!(Warn, Eq, super::NAME, "eventfd failed: {e}");
            return Err(e);
        }
        fd
    } else {
        -1
    };
    let size = if attr.size == 0 {
        DEFAULT_SIZE
    } else {
        attr.size
    };
    fab.hdr.hold();
    let eq = Box::new(Eq {
        fid: fid_eq {
            fid: fid {
                fclass: FI_CLASS_EQ as usize,
                context,
                ops: Eq::fi_ops(),
            },
            ops: &OPS_EQ as *const fi_ops_eq as *mut fi_ops_eq,
        },
        hdr: Header::new(TAG_EQ),
        fabric: fab,
        flags: attr.flags,
        size,
        wait,
        efd,
        q: Mutex::new(Queues {
            events: VecDeque::new(),
            errors: VecDeque::new(),
            last_err_data: Vec::new(),
            signaled: false,
        }),
        cond: Condvar::new(),
    });
    Ok(Box::into_raw(eq) as *mut fid_eq)
}

impl Eq {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether anything (event or error) is waiting to be read.
    pub fn has_entries(&self) -> bool {
        let q = self.lock();
        !q.events.is_empty() || !q.errors.is_empty()
    }

    /// Keeps the eventfd readable exactly while the queues hold entries.
    fn sync_signal(&self, q: &mut Queues) {
        if self.efd < 0 {
            return;
        }
        let busy = !q.events.is_empty() || !q.errors.is_empty();
        if busy && !q.signaled {
            let one: u64 = 1;
            // SAFETY: efd is our eventfd; writing 8 bytes from a u64.
            unsafe { libc::write(self.efd, &one as *const u64 as *const c_void, 8) };
            q.signaled = true;
        } else if !busy && q.signaled {
            let mut v: u64 = 0;
            // SAFETY: efd is our eventfd; reading 8 bytes into a u64.
            unsafe { libc::read(self.efd, &mut v as *mut u64 as *mut c_void, 8) };
            q.signaled = false;
        }
    }

    /// Queues an event from the provider itself (FI_MR_COMPLETE, ...).
    pub fn push(&self, event: u32, data: &[u8]) -> Result<()> {
        let mut q = self.lock();
        if q.events.len() + q.errors.len() >= self.size {
            crate::ox_log!(
                Warn,
                Eq,
                super::NAME,
                "event queue full ({} entries)",
                self.size
            );
            return Err(Error::AGAIN);
        }
        q.events.push_back(Entry {
            event,
            data: data.to_vec(),
        });
        self.sync_signal(&mut q);
        drop(q);
        self.cond.notify_all();
        Ok(())
    }

    fn push_err(&self, e: ErrEntry) -> Result<()> {
        let mut q = self.lock();
        if q.events.len() + q.errors.len() >= self.size {
            return Err(Error::AGAIN);
        }
        q.errors.push_back(e);
        self.sync_signal(&mut q);
        drop(q);
        self.cond.notify_all();
        Ok(())
    }

    /// Copies the first event out; errors pending first make it -FI_EAVAIL.
    fn read_locked(
        &self,
        q: &mut Queues,
        event: *mut u32,
        buf: *mut c_void,
        len: usize,
        peek: bool,
    ) -> Result<isize> {
        if !q.errors.is_empty() {
            return Err(Error::AVAIL);
        }
        let Some(head) = q.events.front() else {
            return Err(Error::AGAIN);
        };
        if len < head.data.len() {
            crate::ox_log!(
                Warn,
                Eq,
                super::NAME,
                "buffer of {len} bytes cannot hold a {}-byte event",
                head.data.len()
            );
            return Err(Error::TOOSMALL);
        }
        if !head.data.is_empty() && buf.is_null() {
            crate::ox_log!(Warn, Eq, super::NAME, "buf is NULL");
            return Err(Error::INVAL);
        }
        let n = head.data.len();
        // SAFETY: buf holds `len >= n` writable bytes and event is writable
        // (fi_eq_read(3)); both checked non-NULL where used.
        unsafe {
            if n > 0 {
                std::ptr::copy_nonoverlapping(head.data.as_ptr(), buf as *mut u8, n);
            }
            *event = head.event;
        }
        if !peek {
            q.events.pop_front();
            self.sync_signal(q);
        }
        Ok(n as isize)
    }
}

fn check_read_flags(flags: u64) -> Result<bool> {
    if flags & !FI_PEEK != 0 {
        crate::ox_log!(
            Warn,
            Eq,
            super::NAME,
            "unsupported read flags 0x{:x}",
            flags & !FI_PEEK
        );
        return Err(Error::BADFLAGS);
    }
    Ok(flags & FI_PEEK != 0)
}

unsafe extern "C" fn close(f: *mut fid) -> c_int {
    slot("fi_close", || {
        // SAFETY: from_fid checks the object.
        let eq = unsafe { from_fid::<Eq>(f) }?;
        eq.hdr.begin_close("event queue")?;
        // SAFETY: the fabric outlives its EQs (it cannot close while held).
        unsafe { (*eq.fabric).hdr.release() };
        if eq.efd >= 0 {
            // SAFETY: efd is ours and closed once.
            unsafe { libc::close(eq.efd) };
        }
        // SAFETY: allocated by `open`; no dependants remain.
        drop(unsafe { Box::from_raw(f as *mut Eq) });
        Ok(0)
    })
}

unsafe extern "C" fn control(f: *mut fid, command: c_int, arg: *mut c_void) -> c_int {
    slot("fi_control", || {
        // SAFETY: from_fid checks the object.
        let eq = unsafe { from_fid::<Eq>(f) }?;
        match command {
            c if c == FI_GETWAIT as c_int => {
                if eq.efd < 0 {
                    crate::ox_log!(
                        Warn,
                        Eq,
                        super::NAME,
                        "FI_GETWAIT on an EQ opened with FI_WAIT_NONE"
                    );
                    return Err(Error::NODATA);
                }
                crate::boundary::nonnull(arg, "fi_control", "arg")?;
                // SAFETY: FI_GETWAIT's argument is an int * for fd objects.
                unsafe { *(arg as *mut c_int) = eq.efd };
                Ok(0)
            }
            c if c == FI_GETWAITOBJ as c_int => {
                crate::boundary::nonnull(arg, "fi_control", "arg")?;
                let obj = if eq.wait {
                    fi_wait_obj::FI_WAIT_FD
                } else {
                    fi_wait_obj::FI_WAIT_NONE
                };
                // SAFETY: FI_GETWAITOBJ's argument is an enum fi_wait_obj *.
                unsafe { *(arg as *mut u32) = obj as u32 };
                Ok(0)
            }
            other => {
                crate::ox_log!(
                    Warn,
                    Eq,
                    super::NAME,
                    "control command {other} not supported on an EQ"
                );
                Err(Error::NOSYS)
            }
        }
    })
}

unsafe extern "C" fn read(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: size_t,
    flags: u64,
) -> ssize_t {
    slot_ssize("fi_eq_read", || {
        // SAFETY: from_fid checks the object.
        let q = unsafe { from_fid::<Eq>(eq as *const fid) }?;
        crate::boundary::nonnull(event, "fi_eq_read", "event")?;
        let peek = check_read_flags(flags)?;
        let mut g = q.lock();
        q.read_locked(&mut g, event, buf, len, peek)
    })
}

unsafe extern "C" fn sread(
    eq: *mut fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: size_t,
    timeout: c_int,
    flags: u64,
) -> ssize_t {
    slot_ssize("fi_eq_sread", || {
        // SAFETY: from_fid checks the object.
        let q = unsafe { from_fid::<Eq>(eq as *const fid) }?;
        crate::boundary::nonnull(event, "fi_eq_sread", "event")?;
        let peek = check_read_flags(flags)?;
        if !q.wait {
            crate::ox_log!(
                Warn,
                Eq,
                super::NAME,
                "fi_eq_sread on an EQ opened with FI_WAIT_NONE"
            );
            return Err(Error::NOSYS);
        }
        let deadline =
            (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        let mut g = q.lock();
        loop {
            if !g.events.is_empty() || !g.errors.is_empty() {
                return q.read_locked(&mut g, event, buf, len, peek);
            }
            g = match deadline {
                None => q.cond.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(Error::AGAIN);
                    }
                    q.cond
                        .wait_timeout(g, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    })
}

unsafe extern "C" fn readerr(eq: *mut fid_eq, buf: *mut fi_eq_err_entry, flags: u64) -> ssize_t {
    slot_ssize("fi_eq_readerr", || {
        // SAFETY: from_fid checks the object.
        let q = unsafe { from_fid::<Eq>(eq as *const fid) }?;
        crate::boundary::nonnull(buf, "fi_eq_readerr", "buf")?;
        let peek = check_read_flags(flags)?;
        let mut g = q.lock();
        let Some(head) = g.errors.front() else {
            return Err(Error::AGAIN);
        };
        // Before API 1.5 the entry ends at err_data: no err_data_size, and
        // err_data is always the provider's buffer.
        // SAFETY: the fabric outlives its EQs.
        let old_abi = unsafe { (*q.fabric).api_version } < crate::prov::info::version(1, 5);
        let written = if old_abi {
            std::mem::offset_of!(fi_eq_err_entry, err_data_size)
        } else {
            std::mem::size_of::<fi_eq_err_entry>()
        };
        // SAFETY: buf points to a writable fi_eq_err_entry of the caller's
        // API version (fi_eq_readerr(3)); from 1.5, a caller-supplied
        // err_data buffer holds err_data_size bytes.
        unsafe {
            let out = buf;
            let (user_buf, user_len) = if old_abi {
                (std::ptr::null_mut(), 0)
            } else {
                ((*out).err_data, (*out).err_data_size)
            };
            (*out).fid = head.fid;
            (*out).context = head.context;
            (*out).data = head.data;
            (*out).err = head.err;
            (*out).prov_errno = head.prov_errno;
            if !user_buf.is_null() && user_len > 0 {
                let n = user_len.min(head.err_data.len());
                std::ptr::copy_nonoverlapping(head.err_data.as_ptr(), user_buf as *mut u8, n);
                (*out).err_data_size = n;
            } else {
                let data = head.err_data.clone();
                g.last_err_data = data;
                (*out).err_data = if g.last_err_data.is_empty() {
                    std::ptr::null_mut()
                } else {
                    g.last_err_data.as_mut_ptr() as *mut c_void
                };
                if !old_abi {
                    (*out).err_data_size = g.last_err_data.len();
                }
            }
        }
        if !peek {
            g.errors.pop_front();
            q.sync_signal(&mut g);
        }
        Ok(written as isize)
    })
}

unsafe extern "C" fn write(
    eq: *mut fid_eq,
    event: u32,
    buf: *const c_void,
    len: size_t,
    flags: u64,
) -> ssize_t {
    slot_ssize("fi_eq_write", || {
        // SAFETY: from_fid checks the object.
        let q = unsafe { from_fid::<Eq>(eq as *const fid) }?;
        if q.flags & FI_WRITE == 0 {
            crate::ox_log!(
                Warn,
                Eq,
                super::NAME,
                "fi_eq_write on an EQ opened without FI_WRITE"
            );
            return Err(Error::INVAL);
        }
        if flags & !FI_OXSHM_EQ_ERR != 0 {
            crate::ox_log!(
                Warn,
                Eq,
                super::NAME,
                "unsupported write flags 0x{:x}",
                flags & !FI_OXSHM_EQ_ERR
            );
            return Err(Error::BADFLAGS);
        }
        if len > 0 && buf.is_null() {
            crate::ox_log!(Warn, Eq, super::NAME, "buf is NULL with len {len}");
            return Err(Error::INVAL);
        }
        if len > MAX_ENTRY {
            crate::ox_log!(
                Warn,
                Eq,
                super::NAME,
                "event of {len} bytes exceeds {MAX_ENTRY}"
            );
            return Err(Error::INVAL);
        }
        if flags & FI_OXSHM_EQ_ERR != 0 {
            if len < std::mem::size_of::<fi_eq_err_entry>() {
                crate::ox_log!(
                    Warn,
                    Eq,
                    super::NAME,
                    "error entry needs a struct fi_eq_err_entry"
                );
                return Err(Error::INVAL);
            }
            // SAFETY: buf holds a fi_eq_err_entry (checked length).
            let e = unsafe { &*(buf as *const fi_eq_err_entry) };
            let err_data = if e.err_data.is_null() || e.err_data_size == 0 {
                Vec::new()
            } else {
                // SAFETY: err_data holds err_data_size bytes.
                unsafe { std::slice::from_raw_parts(e.err_data as *const u8, e.err_data_size) }
                    .to_vec()
            };
            q.push_err(ErrEntry {
                fid: e.fid,
                context: e.context,
                data: e.data,
                err: e.err,
                prov_errno: e.prov_errno,
                err_data,
            })?;
            return Ok(len as isize);
        }
        let data = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: buf holds len readable bytes (fi_eq_write(3)).
            unsafe { std::slice::from_raw_parts(buf as *const u8, len) }.to_vec()
        };
        q.push(event, &data)?;
        Ok(len as isize)
    })
}

unsafe extern "C" fn strerror(
    eq: *mut fid_eq,
    prov_errno: c_int,
    _err_data: *const c_void,
    buf: *mut c_char,
    len: size_t,
) -> *const c_char {
    // SAFETY: from_fid checks the object; a bad EQ still gets a message.
    let _ = unsafe { from_fid::<Eq>(eq as *const fid) };
    let msg = crate::errstr::strerror_cstr(prov_errno.abs());
    if !buf.is_null() && len > 0 {
        // SAFETY: buf holds len writable bytes; msg is NUL-terminated.
        unsafe {
            let n = libc::strlen(msg).min(len - 1);
            std::ptr::copy_nonoverlapping(msg, buf, n);
            *buf.add(n) = 0;
        }
        return buf;
    }
    msg
}
