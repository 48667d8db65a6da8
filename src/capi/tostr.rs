//! `fi_tostr` and `fi_tostr_r` (fi_fabric(3)): printable text for libfabric
//! structs, enums and flag words. The text itself is built by
//! [`crate::tostr`]; this file reads the caller's C data into plain values.
//!
//! Enum values are read as integers and never trusted: an out-of-range
//! value prints `Unknown`. Pointers inside structs are followed exactly
//! where upstream follows them (nested attributes, strings, addresses, and
//! the `ops` table of a `struct fid`).

use crate::abi::domain::{fi_av_attr, fi_mr_attr};
use crate::abi::eq::{fi_cntr_attr, fi_cq_attr, fi_cq_err_entry};
use crate::abi::fabric::{
    fi_domain_attr, fi_ep_attr, fi_fabric_attr, fi_info, fi_ops, fi_rx_attr, fi_tx_attr, fi_type,
    fi_type_raw, fid,
};
use crate::capi::guard_or;
use crate::tostr::{self, AddrNeed, Data, Out};
use libc::{c_char, c_void, size_t};
use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::ptr;

/// Size of the buffer behind `fi_tostr` (upstream's size).
const TOSTR_BUF_LEN: usize = 8192;

thread_local! {
    static TOSTR_BUF: UnsafeCell<[c_char; TOSTR_BUF_LEN]> =
        const { UnsafeCell::new([0; TOSTR_BUF_LEN]) };
}

/// Returns printable text for `data`, which points to a value of the type
/// `datatype` names: a `struct fi_info` (FI_TYPE_INFO), an attribute
/// struct, a `uint64_t` flag word (FI_TYPE_CAPS, FI_TYPE_OP_FLAGS,
/// FI_TYPE_MSG_ORDER, FI_TYPE_MODE, FI_TYPE_CQ_EVENT_FLAGS), a `uint32_t`
/// (FI_TYPE_ADDR_FORMAT, FI_TYPE_PROTOCOL) or an `int`-sized enum or
/// `mr_mode`. FI_TYPE_VERSION ignores the value and prints the library's
/// version. An unknown `datatype` gives "Unknown type".
///
/// The text is in a buffer of 8192 bytes owned by the library, one per
/// thread, overwritten by the next call on the same thread; longer text is
/// cut. Returns NULL if `data` is NULL.
///
/// # Safety
/// `data` must be NULL or point to a readable value of the named type;
/// pointers inside a struct must be NULL or valid as for libfabric.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tostr(data: *const c_void, datatype: fi_type_raw) -> *mut c_char {
    let buf = TOSTR_BUF.with(|b| b.get().cast::<c_char>());
    // SAFETY: buf is this thread's TOSTR_BUF_LEN-byte buffer; the caller's
    // contract on data is forwarded.
    unsafe { fi_tostr_r(buf, TOSTR_BUF_LEN, data, datatype) }
}

/// As `fi_tostr`, into the caller's buffer `buf` of `len` bytes. The text
/// is always NUL-terminated and cut to fit (as upstream: at most `len - 2`
/// characters of the text outside addresses). Returns `buf`, or NULL
/// (leaving `buf` untouched) if `buf` or `data` is NULL or `len` is 0.
///
/// # Safety
/// `buf` must be NULL or writable for `len` bytes; `data` as for
/// `fi_tostr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_tostr_r(
    buf: *mut c_char,
    len: size_t,
    data: *const c_void,
    datatype: fi_type_raw,
) -> *mut c_char {
    if buf.is_null() || len == 0 || data.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: buf is non-NULL and writable for len >= 1 bytes.
    unsafe { *buf = 0 };
    guard_or("fi_tostr_r", buf, || {
        let mut out = Out::new(len);
        // SAFETY: buf is writable for len bytes; data is non-NULL and, by
        // contract, a readable value of the named type.
        unsafe { render(&mut out, buf, len, data, datatype) };
        // SAFETY: Out never holds more than len - 1 bytes, so the text and
        // its NUL fit in buf.
        unsafe { copy_out(&out, buf) };
        Ok(buf)
    })
}

/// Writes `out`'s text and a NUL at `buf`.
///
/// # Safety
/// `buf` must be writable for `out.len() + 1` bytes.
unsafe fn copy_out(out: &Out, buf: *mut c_char) {
    let text = out.as_bytes();
    // SAFETY: guaranteed by the caller.
    unsafe {
        ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
}

/// Reads the value of type `datatype` at `data` and appends its text.
///
/// # Safety
/// As [`fi_tostr_r`], with `buf`/`len` the caller's buffer.
unsafe fn render(
    out: &mut Out,
    buf: *mut c_char,
    len: usize,
    data: *const c_void,
    datatype: fi_type_raw,
) {
    // A fid's own `tostr` op appends to the buffer in place, as upstream
    // calls it: the text so far is put in `buf` first, and the op is told
    // how much of the buffer remains.
    let mut hook = |out: &mut Out, addr: usize| {
        let obj = addr as *const fid;
        // SAFETY: addr came from fid_view, which read a live fid whose ops
        // table holds a tostr slot.
        let Ok(f) = (unsafe { crate::op!((*obj).ops, fi_ops, tostr) }) else {
            return;
        };
        let cur = out.len();
        let rest = len - cur;
        // An op that appends to `buf` with `rest` as the whole buffer's
        // size would write out of bounds once the text fills half of it;
        // upstream would too. Such a case prints nothing here.
        if cur >= rest {
            return;
        }
        // SAFETY: buf is writable for len > cur bytes; the op receives the
        // buffer and the length upstream gives it.
        unsafe {
            copy_out(out, buf);
            f(obj, buf, rest);
            let n = libc::strnlen(buf, len - 1);
            out.set(std::slice::from_raw_parts(buf.cast::<u8>(), n));
        }
    };
    let Some(ty) = fi_type::from_raw(datatype) else {
        tostr::write(out, &Data::UnknownType, &mut hook);
        return;
    };
    // SAFETY (all reads below): data is non-NULL and points to a value of
    // the type `ty` names, per the caller's contract.
    unsafe {
        let int = || ptr::read_unaligned(data.cast::<libc::c_int>()) as u32;
        let u32v = || ptr::read_unaligned(data.cast::<u32>());
        let u64v = || ptr::read_unaligned(data.cast::<u64>());
        use fi_type::*;
        match ty {
            FI_TYPE_INFO => {
                let info = read_info(data.cast::<fi_info>());
                tostr::write(out, &Data::Info(&info), &mut hook);
            }
            FI_TYPE_TX_ATTR => {
                let a = read_tx(data.cast());
                tostr::write(out, &Data::TxAttr(&a), &mut hook);
            }
            FI_TYPE_RX_ATTR => {
                let a = read_rx(data.cast());
                tostr::write(out, &Data::RxAttr(&a), &mut hook);
            }
            FI_TYPE_EP_ATTR => {
                let a = read_ep(data.cast());
                tostr::write(out, &Data::EpAttr(&a), &mut hook);
            }
            FI_TYPE_DOMAIN_ATTR => {
                let a = read_domain(data.cast());
                tostr::write(out, &Data::DomainAttr(&a), &mut hook);
            }
            FI_TYPE_FABRIC_ATTR => {
                let a = read_fabric(data.cast());
                tostr::write(out, &Data::FabricAttr(&a), &mut hook);
            }
            FI_TYPE_AV_ATTR => {
                let a = read_av(data.cast());
                tostr::write(out, &Data::AvAttr(&a), &mut hook);
            }
            FI_TYPE_CQ_ATTR => {
                let a = read_cq(data.cast());
                tostr::write(out, &Data::CqAttr(&a), &mut hook);
            }
            FI_TYPE_MR_ATTR => {
                let a = read_mr(data.cast());
                tostr::write(out, &Data::MrAttr(&a), &mut hook);
            }
            FI_TYPE_CNTR_ATTR => {
                let a = read_cntr(data.cast());
                tostr::write(out, &Data::CntrAttr(&a), &mut hook);
            }
            FI_TYPE_CQ_ERR_ENTRY => {
                let e = read_cq_err(data.cast());
                tostr::write(out, &Data::CqErrEntry(&e), &mut hook);
            }
            FI_TYPE_FID => {
                let f = fid_view(data.cast());
                tostr::write(out, &Data::Fid(f), &mut hook);
            }
            _ => {
                let d = match ty {
                    FI_TYPE_EP_TYPE => Data::EpType(int()),
                    FI_TYPE_CAPS => Data::Caps(u64v()),
                    FI_TYPE_OP_FLAGS => Data::OpFlags(u64v()),
                    FI_TYPE_ADDR_FORMAT => Data::AddrFormat(u32v()),
                    FI_TYPE_THREADING => Data::Threading(int()),
                    FI_TYPE_PROGRESS => Data::Progress(int()),
                    FI_TYPE_PROTOCOL => Data::Protocol(u32v()),
                    FI_TYPE_MSG_ORDER => Data::MsgOrder(u64v()),
                    FI_TYPE_MODE => Data::Mode(u64v()),
                    FI_TYPE_AV_TYPE => Data::AvType(int()),
                    FI_TYPE_ATOMIC_TYPE => Data::AtomicType(int()),
                    FI_TYPE_ATOMIC_OP => Data::AtomicOp(int()),
                    FI_TYPE_VERSION => Data::Version,
                    FI_TYPE_EQ_EVENT => Data::EqEvent(int()),
                    FI_TYPE_CQ_EVENT_FLAGS => Data::CqEventFlags(u64v()),
                    FI_TYPE_MR_MODE => Data::MrMode(int()),
                    FI_TYPE_OP_TYPE => Data::OpType(int()),
                    FI_TYPE_COLLECTIVE_OP => Data::CollectiveOp(int()),
                    FI_TYPE_HMEM_IFACE => Data::HmemIface(int()),
                    FI_TYPE_CQ_FORMAT => Data::CqFormat(int()),
                    FI_TYPE_LOG_LEVEL => Data::LogLevel(int()),
                    FI_TYPE_LOG_SUBSYS => Data::LogSubsys(int()),
                    FI_TYPE_CQ_WAIT_COND => Data::CqWaitCond(int()),
                    FI_TYPE_WAIT_OBJ => Data::WaitObj(int()),
                    _ => Data::UnknownType,
                };
                tostr::write(out, &d, &mut hook);
            }
        }
    }
}

/// A C string, or `None` for NULL.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string.
unsafe fn cstring(p: *const c_char) -> tostr::CString {
    if p.is_null() {
        None
    } else {
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        Some(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec())
    }
}

/// How a `struct fid *` prints: through its own `tostr` op when its ops
/// table has one (FI_CHECK_OP), else as a pointer.
///
/// # Safety
/// `p` must be NULL or point to a readable `struct fid` whose `ops` is NULL
/// or a readable `struct fi_ops` of at least `size` bytes.
unsafe fn fid_view(p: *const fid) -> tostr::Fid {
    if p.is_null() {
        return tostr::Fid::Null;
    }
    // SAFETY: guaranteed by the caller.
    let has_tostr = unsafe { crate::op!((*p).ops, fi_ops, tostr) }.is_ok();
    if has_tostr {
        tostr::Fid::Custom(p as usize)
    } else {
        tostr::Fid::Ptr(p as usize)
    }
}

/// The address at `p` (format `addr_format`) as upstream prints it,
/// reading only the bytes that printing reads.
///
/// # Safety
/// `p` must be NULL or point to an address of `addr_format` as libfabric
/// defines it (a string for FI_ADDR_STR).
unsafe fn read_addr(addr_format: u32, p: *const c_void) -> tostr::Addr {
    if p.is_null() {
        return tostr::Addr::Null;
    }
    let bytes = p.cast::<u8>();
    let mut family = None;
    loop {
        let text = match tostr::addr_need(addr_format, family) {
            AddrNeed::Family => {
                // SAFETY: every sockaddr starts with its 2-byte family.
                family = Some(unsafe { ptr::read_unaligned(bytes.cast::<u16>()) });
                continue;
            }
            AddrNeed::Bytes(n) => {
                // SAFETY: an address of this format (and family) holds at
                // least n bytes.
                let b = unsafe { std::slice::from_raw_parts(bytes, n) };
                tostr::straddr(addr_format, p as usize, b)
            }
            AddrNeed::CStr => {
                // SAFETY: an FI_ADDR_STR address is a NUL-terminated string.
                let s = unsafe { CStr::from_ptr(p.cast::<c_char>()) };
                tostr::straddr(addr_format, p as usize, s.to_bytes())
            }
            AddrNeed::Pointer => tostr::straddr(addr_format, p as usize, &[]),
            AddrNeed::Nothing => None,
        };
        return match text {
            Some(t) => tostr::Addr::Text(t),
            None => tostr::Addr::Unprintable,
        };
    }
}

/// Reads an optional attribute struct.
///
/// # Safety
/// `p` must be NULL or valid for `f`.
unsafe fn opt<T, U>(p: *const T, f: unsafe fn(*const T) -> U) -> Option<U> {
    if p.is_null() {
        None
    } else {
        // SAFETY: non-NULL; validity forwarded from the caller.
        Some(unsafe { f(p) })
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_info` whose pointers are NULL
/// or valid.
unsafe fn read_info(p: *const fi_info) -> tostr::Info {
    // SAFETY: guaranteed by the caller, for the struct and what it points to.
    unsafe {
        let i = ptr::read_unaligned(p);
        tostr::Info {
            caps: i.caps,
            mode: i.mode,
            addr_format: i.addr_format,
            src_addrlen: i.src_addrlen,
            dest_addrlen: i.dest_addrlen,
            src_addr: read_addr(i.addr_format, i.src_addr),
            dest_addr: read_addr(i.addr_format, i.dest_addr),
            handle: fid_view(i.handle),
            tx_attr: opt(i.tx_attr.cast_const(), read_tx),
            rx_attr: opt(i.rx_attr.cast_const(), read_rx),
            ep_attr: opt(i.ep_attr.cast_const(), read_ep),
            domain_attr: opt(i.domain_attr.cast_const(), read_domain),
            fabric_attr: opt(i.fabric_attr.cast_const(), read_fabric),
            // The nic's fid is its first member.
            nic: fid_view(i.nic.cast_const().cast::<fid>()),
        }
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_tx_attr`.
unsafe fn read_tx(p: *const fi_tx_attr) -> tostr::TxAttr {
    // SAFETY: guaranteed by the caller.
    let a = unsafe { ptr::read_unaligned(p) };
    tostr::TxAttr {
        caps: a.caps,
        mode: a.mode,
        op_flags: a.op_flags,
        msg_order: a.msg_order,
        comp_order: a.comp_order,
        inject_size: a.inject_size,
        size: a.size,
        iov_limit: a.iov_limit,
        rma_iov_limit: a.rma_iov_limit,
        tclass: a.tclass,
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_rx_attr`.
unsafe fn read_rx(p: *const fi_rx_attr) -> tostr::RxAttr {
    // SAFETY: guaranteed by the caller.
    let a = unsafe { ptr::read_unaligned(p) };
    tostr::RxAttr {
        caps: a.caps,
        mode: a.mode,
        op_flags: a.op_flags,
        msg_order: a.msg_order,
        comp_order: a.comp_order,
        total_buffered_recv: a.total_buffered_recv,
        size: a.size,
        iov_limit: a.iov_limit,
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_ep_attr`.
unsafe fn read_ep(p: *const fi_ep_attr) -> tostr::EpAttr {
    // SAFETY: guaranteed by the caller.
    let a = unsafe { ptr::read_unaligned(p) };
    tostr::EpAttr {
        ep_type: a.r#type,
        protocol: a.protocol,
        protocol_version: a.protocol_version,
        max_msg_size: a.max_msg_size,
        msg_prefix_size: a.msg_prefix_size,
        max_order_raw_size: a.max_order_raw_size,
        max_order_war_size: a.max_order_war_size,
        max_order_waw_size: a.max_order_waw_size,
        mem_tag_format: a.mem_tag_format,
        tx_ctx_cnt: a.tx_ctx_cnt,
        rx_ctx_cnt: a.rx_ctx_cnt,
        auth_key_size: a.auth_key_size,
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_domain_attr` whose `name` is
/// NULL or a string.
unsafe fn read_domain(p: *const fi_domain_attr) -> tostr::DomainAttr {
    // SAFETY: guaranteed by the caller; both union members are the same
    // plain integer.
    unsafe {
        let a = ptr::read_unaligned(p);
        tostr::DomainAttr {
            domain: a.domain as usize,
            name: cstring(a.name),
            threading: a.threading,
            control_progress: a.control_progress,
            progress: a.__anon_progress.progress,
            resource_mgmt: a.resource_mgmt,
            av_type: a.av_type,
            mr_mode: a.mr_mode as u32,
            mr_key_size: a.mr_key_size,
            cq_data_size: a.cq_data_size,
            cq_cnt: a.cq_cnt,
            ep_cnt: a.ep_cnt,
            tx_ctx_cnt: a.tx_ctx_cnt,
            rx_ctx_cnt: a.rx_ctx_cnt,
            max_ep_tx_ctx: a.max_ep_tx_ctx,
            max_ep_rx_ctx: a.max_ep_rx_ctx,
            max_ep_stx_ctx: a.max_ep_stx_ctx,
            max_ep_srx_ctx: a.max_ep_srx_ctx,
            cntr_cnt: a.cntr_cnt,
            mr_iov_limit: a.mr_iov_limit,
            caps: a.caps,
            mode: a.mode,
            auth_key_size: a.auth_key_size,
            max_err_data: a.max_err_data,
            mr_cnt: a.mr_cnt,
            tclass: a.tclass,
        }
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_fabric_attr` whose strings are
/// NULL or valid.
unsafe fn read_fabric(p: *const fi_fabric_attr) -> tostr::FabricAttr {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let a = ptr::read_unaligned(p);
        tostr::FabricAttr {
            name: cstring(a.name),
            prov_name: cstring(a.prov_name),
            prov_version: a.prov_version,
            api_version: a.api_version,
        }
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_av_attr` whose `name` is NULL
/// or a string.
unsafe fn read_av(p: *const fi_av_attr) -> tostr::AvAttr {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let a = ptr::read_unaligned(p);
        tostr::AvAttr {
            av_type: a.r#type,
            count: a.count,
            ep_per_node: a.ep_per_node,
            name: cstring(a.name),
            flags: a.flags,
        }
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_cq_attr`.
unsafe fn read_cq(p: *const fi_cq_attr) -> tostr::CqAttr {
    // SAFETY: guaranteed by the caller.
    let a = unsafe { ptr::read_unaligned(p) };
    tostr::CqAttr {
        size: a.size,
        flags: a.flags,
        format: a.format,
        wait_obj: a.wait_obj,
        signaling_vector: a.signaling_vector,
        wait_cond: a.wait_cond,
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_mr_attr`.
unsafe fn read_mr(p: *const fi_mr_attr) -> tostr::MrAttr {
    // SAFETY: guaranteed by the caller; the union's members are pointers.
    unsafe {
        let a = ptr::read_unaligned(p);
        tostr::MrAttr {
            mr_iov: a.__anon_mr_iov.mr_iov as usize,
            iov_count: a.iov_count,
            access: a.access,
            offset: a.offset,
            requested_key: a.requested_key,
            context: a.context as usize,
            auth_key_size: a.auth_key_size,
            iface: a.iface,
        }
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_cntr_attr`.
unsafe fn read_cntr(p: *const fi_cntr_attr) -> tostr::CntrAttr {
    // SAFETY: guaranteed by the caller.
    let a = unsafe { ptr::read_unaligned(p) };
    tostr::CntrAttr {
        events: a.events,
        wait_obj: a.wait_obj,
        flags: a.flags,
    }
}

/// # Safety
/// `p` must point to a readable `struct fi_cq_err_entry`.
unsafe fn read_cq_err(p: *const fi_cq_err_entry) -> tostr::CqErrEntry {
    // SAFETY: guaranteed by the caller.
    let e = unsafe { ptr::read_unaligned(p) };
    tostr::CqErrEntry {
        op_context: e.op_context as usize,
        flags: e.flags,
        len: e.len,
        buf: e.buf as usize,
        data: e.data,
        tag: e.tag,
        olen: e.olen,
        err: e.err,
        prov_errno: e.prov_errno,
        err_data: e.err_data as usize,
        err_data_size: e.err_data_size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::fabric::*;
    use libc::c_int;
    use std::mem::{offset_of, zeroed};

    fn text(p: *const c_char) -> String {
        assert!(!p.is_null());
        // SAFETY: the exports return NUL-terminated text.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
    }

    fn tostr<T>(v: &T, ty: fi_type) -> String {
        // SAFETY: v is a readable value of the type ty names.
        text(unsafe { fi_tostr((v as *const T).cast(), ty as fi_type_raw) })
    }

    #[test]
    fn null_arguments_return_null_and_leave_the_buffer() {
        let caps = FI_MSG;
        let data = (&caps as *const u64).cast::<c_void>();
        let mut buf = [b'x' as c_char; 8];
        // SAFETY: buf is writable for 8 bytes; data is a u64.
        unsafe {
            assert!(fi_tostr(ptr::null(), fi_type::FI_TYPE_CAPS as u32).is_null());
            assert!(fi_tostr_r(buf.as_mut_ptr(), 0, data, 2).is_null());
            assert!(fi_tostr_r(ptr::null_mut(), 8, data, 2).is_null());
            assert!(fi_tostr_r(buf.as_mut_ptr(), 8, ptr::null(), 2).is_null());
        }
        assert!(buf.iter().all(|&c| c == b'x' as c_char));
    }

    #[test]
    fn tostr_r_cuts_like_upstream() {
        let caps = FI_MSG | FI_RMA;
        let data = (&caps as *const u64).cast::<c_void>();
        // Debian 1.17 for buffers of 1, 2, 3 and 8 bytes.
        for (len, want) in [
            (1, ""),
            (2, ""),
            (3, "F"),
            (8, "FI_MSG"),
            (64, "FI_MSG, FI_RMA"),
        ] {
            let mut buf = [b'x' as c_char; 64];
            // SAFETY: buf is writable for len <= 64 bytes.
            let r = unsafe { fi_tostr_r(buf.as_mut_ptr(), len, data, 2) };
            assert_eq!(r, buf.as_mut_ptr());
            assert_eq!(text(r), want, "len {len}");
        }
    }

    #[test]
    fn fi_tostr_uses_one_buffer_per_thread() {
        let caps = FI_MSG;
        let ep = fi_ep_type::FI_EP_RDM as c_int;
        // SAFETY: values of the named types.
        let (a, b) = unsafe {
            (
                fi_tostr((&caps as *const u64).cast(), fi_type::FI_TYPE_CAPS as u32),
                fi_tostr(
                    (&ep as *const c_int).cast(),
                    fi_type::FI_TYPE_EP_TYPE as u32,
                ),
            )
        };
        assert_eq!(a, b);
        assert_eq!(text(b), "FI_EP_RDM");
        let other = std::thread::spawn(move || {
            // SAFETY: a u64 flag word.
            unsafe { fi_tostr((&caps as *const u64).cast(), 2) as usize }
        })
        .join()
        .unwrap();
        assert_ne!(other, a as usize);
    }

    #[test]
    fn scalars_are_read_at_their_c_width() {
        let neg: c_int = -1;
        assert_eq!(tostr(&neg, fi_type::FI_TYPE_THREADING), "Unknown");
        let thr = fi_threading::FI_THREAD_SAFE as c_int;
        assert_eq!(tostr(&thr, fi_type::FI_TYPE_THREADING), "FI_THREAD_SAFE");
        let mr = FI_MR_LOCAL | FI_MR_PROV_KEY;
        assert_eq!(
            tostr(&mr, fi_type::FI_TYPE_MR_MODE),
            "FI_MR_LOCAL, FI_MR_PROV_KEY"
        );
        let proto = FI_PROTO_SHM as u32;
        assert_eq!(tostr(&proto, fi_type::FI_TYPE_PROTOCOL), "FI_PROTO_SHM");
        let fmt = FI_ADDR_STR as u32;
        assert_eq!(tostr(&fmt, fi_type::FI_TYPE_ADDR_FORMAT), "FI_ADDR_STR");
        let mode = FI_CONTEXT | FI_CONTEXT2;
        assert_eq!(
            tostr(&mode, fi_type::FI_TYPE_MODE),
            "FI_CONTEXT, FI_CONTEXT2"
        );
        let order: u64 = 0;
        assert_eq!(tostr(&order, fi_type::FI_TYPE_MSG_ORDER), "");
        let w = crate::abi::eq::fi_wait_obj::FI_WAIT_FD as c_int;
        assert_eq!(tostr(&w, fi_type::FI_TYPE_WAIT_OBJ), "FI_WAIT_FD");
        let lvl: c_int = 2;
        assert_eq!(tostr(&lvl, fi_type::FI_TYPE_LOG_LEVEL), "info");
        assert_eq!(
            tostr(&lvl, fi_type::FI_TYPE_VERSION),
            env!("CARGO_PKG_VERSION")
        );
        for ty in [36u32, 1000, u32::MAX] {
            // SAFETY: an int; the type is unknown and nothing is read.
            let p = unsafe { fi_tostr((&lvl as *const c_int).cast(), ty) };
            assert_eq!(text(p), "Unknown type");
        }
    }

    unsafe extern "C" fn append_tostr(_fid: *const fid, buf: *mut c_char, len: size_t) -> c_int {
        // The upstream appender: strnlen, then snprintf into len - 1 - cur.
        let add = b"    nic: custom\n";
        // SAFETY: buf holds a NUL-terminated string within len bytes.
        unsafe {
            let cur = libc::strnlen(buf, len);
            let size = len - 1 - cur;
            let n = add.len().min(size.saturating_sub(1));
            ptr::copy_nonoverlapping(add.as_ptr(), buf.add(cur).cast::<u8>(), n);
            *buf.add(cur + n) = 0;
        }
        0
    }

    fn ops_with_tostr(size: usize) -> fi_ops {
        fi_ops {
            size,
            close: None,
            bind: None,
            control: None,
            ops_open: None,
            tostr: Some(append_tostr),
            ops_set: None,
        }
    }

    #[test]
    fn fids_print_through_their_tostr_op() {
        let mut ops = ops_with_tostr(size_of::<fi_ops>());
        let mut f = fid {
            fclass: FI_CLASS_NIC as usize,
            context: ptr::null_mut(),
            ops: &mut ops,
        };
        assert_eq!(tostr(&f, fi_type::FI_TYPE_FID), "    nic: custom\n");
        // A table too short to hold the slot, or no table: a pointer.
        let mut short = ops_with_tostr(offset_of!(fi_ops, tostr));
        f.ops = &mut short;
        let want = format!("fid: {:p}\n", &f as *const fid);
        assert_eq!(tostr(&f, fi_type::FI_TYPE_FID), want);
        f.ops = ptr::null_mut();
        assert_eq!(tostr(&f, fi_type::FI_TYPE_FID), want);

        // In an fi_info, the op appends after the text so far.
        f.ops = &mut ops;
        // SAFETY: all-zero is a valid fi_info (NULL pointers, zero values).
        let mut info: fi_info = unsafe { zeroed() };
        info.nic = (&mut f as *mut fid).cast();
        let got = tostr(&info, fi_type::FI_TYPE_INFO);
        assert!(
            got.ends_with("    fi_fabric_attr: (null)\n    nic: custom\n"),
            "{got}"
        );
    }

    #[test]
    fn attrs_are_read_from_c_structs() {
        // SAFETY: all-zero is a valid value of each of these structs.
        let (mut tx, mut rx, mut ep, mut dom, mut fab, mut info): (
            fi_tx_attr,
            fi_rx_attr,
            fi_ep_attr,
            fi_domain_attr,
            fi_fabric_attr,
            fi_info,
        ) = unsafe { (zeroed(), zeroed(), zeroed(), zeroed(), zeroed(), zeroed()) };
        tx.caps = FI_MSG | FI_RMA;
        tx.comp_order = FI_ORDER_STRICT;
        tx.inject_size = 64;
        tx.tclass = 0x205;
        rx.caps = FI_RECV;
        rx.total_buffered_recv = 7;
        ep.r#type = 77;
        ep.protocol = FI_PROTO_SHM as u32;
        ep.tx_ctx_cnt = FI_SHARED_CONTEXT;
        ep.mem_tag_format = 0x1234;
        dom.domain = 0x1234_5678_9abc as *mut _;
        let name = c"oxshm";
        dom.name = name.as_ptr().cast_mut();
        dom.threading = fi_threading::FI_THREAD_SAFE as u32;
        dom.control_progress = fi_progress::FI_PROGRESS_AUTO as u32;
        dom.__anon_progress.progress = fi_progress::FI_PROGRESS_MANUAL as u32;
        dom.av_type = 1000;
        dom.mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
        dom.tclass = 0x10;
        fab.name = name.as_ptr().cast_mut();
        fab.prov_name = name.as_ptr().cast_mut();
        fab.prov_version = (117 << 16) | 3;
        fab.api_version = (1 << 16) | 17;
        let mut sin: libc::sockaddr_in = unsafe { zeroed() };
        sin.sin_family = libc::AF_INET as libc::sa_family_t;
        sin.sin_port = 4242u16.to_be();
        sin.sin_addr.s_addr = u32::from_ne_bytes([10, 1, 2, 3]);
        info.caps = FI_MSG;
        info.mode = 1 << 51;
        info.addr_format = FI_SOCKADDR_IN as u32;
        info.src_addrlen = size_of::<libc::sockaddr_in>();
        info.src_addr = (&mut sin as *mut libc::sockaddr_in).cast();
        info.tx_attr = &mut tx;
        info.rx_attr = &mut rx;
        info.ep_attr = &mut ep;
        info.domain_attr = &mut dom;
        info.fabric_attr = &mut fab;

        let name = Some(b"oxshm".to_vec());
        let want = tostr::Info {
            caps: FI_MSG,
            mode: 1 << 51,
            addr_format: FI_SOCKADDR_IN as u32,
            src_addrlen: 16,
            src_addr: tostr::Addr::Text(b"fi_sockaddr_in://10.1.2.3:4242".to_vec()),
            tx_attr: Some(tostr::TxAttr {
                caps: FI_MSG | FI_RMA,
                comp_order: FI_ORDER_STRICT,
                inject_size: 64,
                tclass: 0x205,
                ..Default::default()
            }),
            rx_attr: Some(tostr::RxAttr {
                caps: FI_RECV,
                total_buffered_recv: 7,
                ..Default::default()
            }),
            ep_attr: Some(tostr::EpAttr {
                ep_type: 77,
                protocol: FI_PROTO_SHM as u32,
                tx_ctx_cnt: FI_SHARED_CONTEXT,
                mem_tag_format: 0x1234,
                ..Default::default()
            }),
            domain_attr: Some(tostr::DomainAttr {
                domain: 0x1234_5678_9abc,
                name: name.clone(),
                threading: fi_threading::FI_THREAD_SAFE as u32,
                control_progress: fi_progress::FI_PROGRESS_AUTO as u32,
                progress: fi_progress::FI_PROGRESS_MANUAL as u32,
                av_type: 1000,
                mr_mode: (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY) as u32,
                tclass: 0x10,
                ..Default::default()
            }),
            fabric_attr: Some(tostr::FabricAttr {
                name: name.clone(),
                prov_name: name,
                prov_version: (117 << 16) | 3,
                api_version: (1 << 16) | 17,
            }),
            ..Default::default()
        };
        let want_text = String::from_utf8(tostr::to_bytes(&Data::Info(&want))).unwrap();
        let got = tostr(&info, fi_type::FI_TYPE_INFO);
        assert_eq!(got, want_text);
        // A 1.17 caller gets the 1.x layout.
        assert!(got.contains("\n    mode: [ FI_BUFFERED_RECV ]\n"));
        assert!(got.contains("\n        comp_order: [ FI_ORDER_STRICT ]\n"));
        assert!(got.contains("\n        total_buffered_recv: 7\n"));
        assert!(got.contains("\n        control_progress: FI_PROGRESS_AUTO\n"));
        assert!(got.contains("\n        data_progress: FI_PROGRESS_MANUAL\n"));
        assert!(got.contains("\n        domain: 0x56789abc\n        name: oxshm\n"));
        assert!(got.contains("\n        type: Unknown\n        protocol: FI_PROTO_SHM\n"));
        assert!(got.contains("\n        tx_ctx_cnt: FI_SHARED_CONTEXT\n"));
        assert!(got.contains("\n        av_type: Unknown\n"));
        assert!(got.contains("\n        mem_tag_format: 0x0000000000001234\n"));

        // A 2.x caller, and the standalone attributes, get the 2.x layout.
        fab.api_version = (2 << 16) | 7;
        let got = tostr(&info, fi_type::FI_TYPE_INFO);
        assert!(!got.contains("comp_order") && !got.contains("FI_BUFFERED_RECV"));
        assert!(got.contains("\n        progress: FI_PROGRESS_MANUAL\n"));
        assert_eq!(
            tostr(&rx, fi_type::FI_TYPE_RX_ATTR),
            "fi_rx_attr:\n    caps: [ FI_RECV ]\n    mode: [  ]\n    op_flags: [  ]\n    \
             msg_order: [  ]\n    size: 0\n    iov_limit: 0\n"
        );
        assert_eq!(
            tostr(&fab, fi_type::FI_TYPE_FABRIC_ATTR),
            "fi_fabric_attr:\n    name: oxshm\n    prov_name: oxshm\n    prov_version: 117.3\n    \
             api_version: 2.7\n"
        );
        assert!(tostr(&tx, fi_type::FI_TYPE_TX_ATTR)
            .starts_with("fi_tx_attr:\n    caps: [ FI_MSG, FI_RMA ]\n"));
        assert!(
            tostr(&ep, fi_type::FI_TYPE_EP_ATTR).starts_with("fi_ep_attr:\n    type: Unknown\n")
        );
        assert!(tostr(&dom, fi_type::FI_TYPE_DOMAIN_ATTR)
            .contains("\n    progress: FI_PROGRESS_MANUAL\n"));
    }

    #[test]
    fn addresses_are_read_by_format() {
        // SAFETY: all-zero is a valid fi_info.
        let mut info: fi_info = unsafe { zeroed() };
        let mut sin6: libc::sockaddr_in6 = unsafe { zeroed() };
        sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        sin6.sin6_port = 80u16.to_be();
        sin6.sin6_addr.s6_addr[0] = 0xfe;
        sin6.sin6_addr.s6_addr[1] = 0x80;
        sin6.sin6_addr.s6_addr[15] = 1;
        let line = |info: &fi_info| {
            let t = tostr(info, fi_type::FI_TYPE_INFO);
            let at = t.find("src_addr: ").unwrap() + "src_addr: ".len();
            t[at..at + t[at..].find('\n').unwrap()].to_string()
        };
        info.src_addr = (&mut sin6 as *mut libc::sockaddr_in6).cast();
        for fmt in [FI_SOCKADDR, FI_SOCKADDR_IN6] {
            info.addr_format = fmt as u32;
            assert_eq!(line(&info), "fi_sockaddr_in6://[fe80::1]:80");
        }
        info.addr_format = FI_ADDR_UCX as u32;
        assert_eq!(line(&info), "");
        let s = c"fi_shm://1234";
        info.addr_format = FI_ADDR_STR as u32;
        info.src_addr = s.as_ptr().cast_mut().cast();
        assert_eq!(line(&info), "fi_shm://1234");
        info.addr_format = FI_ADDR_MLX as u32;
        assert_eq!(line(&info), format!("fi_addr_mlx://{:p}", s.as_ptr()));
        info.src_addr = ptr::null_mut();
        assert_eq!(line(&info), "(null)");
    }

    #[test]
    fn other_attrs_are_read_from_c_structs() {
        use crate::abi::domain::{fi_av_attr, fi_hmem_iface, fi_mr_attr};
        use crate::abi::eq::*;
        // SAFETY: all-zero is a valid value of each of these structs.
        let (mut av, mut cq, mut mr, mut cntr, mut ce): (
            fi_av_attr,
            fi_cq_attr,
            fi_mr_attr,
            fi_cntr_attr,
            fi_cq_err_entry,
        ) = unsafe { (zeroed(), zeroed(), zeroed(), zeroed(), zeroed()) };
        av.r#type = fi_av_type::FI_AV_TABLE as u32;
        av.count = 4;
        av.flags = FI_READ;
        assert_eq!(
            tostr(&av, fi_type::FI_TYPE_AV_ATTR),
            "fi_av_attr:\n    type: FI_AV_TABLE\n    count: 4\n    ep_per_node: 0\n    \
             name: (null)\n    flags: [ FI_READ ]\n"
        );
        cq.size = 8;
        cq.format = fi_cq_format::FI_CQ_FORMAT_DATA as u32;
        cq.wait_obj = 77;
        cq.signaling_vector = -1;
        assert_eq!(
            tostr(&cq, fi_type::FI_TYPE_CQ_ATTR),
            "fi_cq_attr:\n    size: 8\n    flags: [  ]\n    format: FI_CQ_FORMAT_DATA\n    \
             wait_obj: Unknown\n    signaling_vector: -1\n    wait_cond: FI_CQ_COND_NONE\n"
        );
        let iov = libc::iovec {
            iov_base: ptr::null_mut(),
            iov_len: 0,
        };
        mr.__anon_mr_iov.mr_iov = &iov;
        mr.iov_count = 1;
        mr.access = FI_REMOTE_WRITE;
        mr.requested_key = 0xdef;
        mr.iface = fi_hmem_iface::FI_HMEM_CUDA as u32;
        assert_eq!(
            tostr(&mr, fi_type::FI_TYPE_MR_ATTR),
            format!(
                "fi_mr_attr:\n    mr_iov: {:p}\n    iov_count: 1\n    access: [ FI_REMOTE_WRITE ]\n    \
                 offset: 0x0\n    requested_key: 0xdef\n    context: (nil)\n    auth_key_size: 0\n    \
                 iface: FI_HMEM_CUDA\n",
                &iov as *const libc::iovec
            )
        );
        cntr.events = fi_cntr_events::FI_CNTR_EVENTS_COMP as u32;
        cntr.flags = 3;
        assert_eq!(
            tostr(&cntr, fi_type::FI_TYPE_CNTR_ATTR),
            "fi_cntr_attr:\n    events: FI_CNTR_EVENTS_COMP\n    wait_obj: FI_WAIT_NONE\n    \
             flags: 0x3\n"
        );
        ce.err = 265;
        ce.prov_errno = 7;
        ce.data = 9;
        assert_eq!(
            tostr(&ce, fi_type::FI_TYPE_CQ_ERR_ENTRY),
            "fi_cq_err_entry:\n    op_context: (nil)\n    flags: 0x0\n    len: 0\n    \
             buf: (nil)\n    data: 9\n    tag: 0x0\n    olen: 0\n    err: 265\n    \
             prov_errno: 265\n    err_data: (nil)\n    err_data_size: 0\n"
        );
    }
}
