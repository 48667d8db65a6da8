//! fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_fabric2, fi_open and
//! fi_version, plus the conversions between `struct fi_info` and the
//! provider layer's [`Info`].
//!
//! Every `fi_info` handed to C is allocated with the C allocator, because
//! applications free fields of it (a strdup'd `prov_name` in hints) through
//! fi_freeinfo. Structures the application supplies are read according to a
//! [`Layout`]: the sizes its ABI version gave each structure, so a program
//! built against older headers is never read past the end of what it
//! allocated.

use crate::abi::fabric::*;
use crate::capi::{guard, guard_or, nonnull};
use crate::error::{Error, Result};
use crate::prov::info::{self as pinfo, DomainAttr, EpAttr, FabricAttr, Info, RxAttr, TxAttr};
use crate::prov::AddrRequest;
use libc::{c_char, c_int, c_void, size_t};
use std::ffi::CStr;
use std::mem::{offset_of, size_of};
use std::ptr::{self, addr_of, addr_of_mut, null_mut};

/// Sizes of the fi_info structures in one ABI version of libfabric.
/// Newer versions only ever appended fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub info: usize,
    pub tx: usize,
    pub rx: usize,
    pub ep: usize,
    pub domain: usize,
    pub fabric: usize,
}

impl Layout {
    /// FABRIC_1.10: libfabric 2.7.
    pub const CURRENT: Layout = Layout {
        info: size_of::<fi_info>(),
        tx: size_of::<fi_tx_attr>(),
        rx: size_of::<fi_rx_attr>(),
        ep: size_of::<fi_ep_attr>(),
        domain: size_of::<fi_domain_attr>(),
        fabric: size_of::<fi_fabric_attr>(),
    };
    /// FABRIC_1.8 and 1.9 (libfabric 2.0 - 2.6): no XPU fields.
    pub const V1_8: Layout = Layout {
        ep: offset_of!(fi_ep_attr, xpu_ctx),
        domain: offset_of!(fi_domain_attr, max_xpu_ctx_cnt),
        ..Layout::CURRENT
    };
    /// FABRIC_1.7: no `max_group_id`.
    pub const V1_7: Layout = Layout {
        domain: offset_of!(fi_domain_attr, max_group_id),
        ..Layout::V1_8
    };
    /// FABRIC_1.3: no `max_ep_auth_key`.
    pub const V1_3: Layout = Layout {
        domain: offset_of!(fi_domain_attr, max_ep_auth_key),
        ..Layout::V1_7
    };
    /// FABRIC_1.2: no `tclass` in tx or domain attributes.
    pub const V1_2: Layout = Layout {
        tx: offset_of!(fi_tx_attr, tclass),
        domain: offset_of!(fi_domain_attr, tclass),
        ..Layout::V1_3
    };
    /// FABRIC_1.1: no `nic`.
    pub const V1_1: Layout = Layout {
        info: offset_of!(fi_info, nic),
        ..Layout::V1_2
    };
    /// FABRIC_1.0: no auth keys, no domain caps/mode/counts, no api_version.
    pub const V1_0: Layout = Layout {
        ep: offset_of!(fi_ep_attr, auth_key_size),
        domain: offset_of!(fi_domain_attr, cntr_cnt),
        fabric: offset_of!(fi_fabric_attr, api_version),
        ..Layout::V1_1
    };
}

/// Reads `(*p).field` if the caller's structure (of `limit` bytes) has it.
macro_rules! field {
    ($p:expr, $ty:ty, $field:ident, $limit:expr) => {{
        let p: *const $ty = $p;
        if offset_of!($ty, $field) + size_of_field(addr_of!((*p).$field)) <= $limit {
            addr_of!((*p).$field).read_unaligned()
        } else {
            Default::default()
        }
    }};
}

fn size_of_field<T>(_: *const T) -> usize {
    size_of::<T>()
}

/// A NUL-terminated string as an owned Rust string (lossy UTF-8).
unsafe fn cstr(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// `len` bytes at `p`, or None for NULL or zero length.
unsafe fn bytes(p: *const c_void, len: usize) -> Option<Vec<u8>> {
    if p.is_null() || len == 0 {
        None
    } else {
        // SAFETY: the caller passes `len` readable bytes at `p`.
        Some(unsafe { std::slice::from_raw_parts(p as *const u8, len) }.to_vec())
    }
}

/// Converts application-supplied hints into an [`Info`].
///
/// # Safety
/// `p` points to a `fi_info` of at least `lay.info` bytes whose non-NULL
/// attribute pointers point to structures of the sizes in `lay`.
pub unsafe fn info_from_c(p: *const fi_info, lay: &Layout) -> Info {
    // SAFETY: per the function contract; every read is bounded by `lay`.
    unsafe {
        let mut out = Info {
            caps: field!(p, fi_info, caps, lay.info),
            mode: field!(p, fi_info, mode, lay.info),
            addr_format: field!(p, fi_info, addr_format, lay.info),
            src_addr: bytes(
                field!(p, fi_info, src_addr, lay.info),
                field!(p, fi_info, src_addrlen, lay.info),
            ),
            dest_addr: bytes(
                field!(p, fi_info, dest_addr, lay.info),
                field!(p, fi_info, dest_addrlen, lay.info),
            ),
            ..Default::default()
        };
        let tx: *const fi_tx_attr = field!(p, fi_info, tx_attr, lay.info);
        if !tx.is_null() {
            let l = lay.tx;
            out.tx = Some(TxAttr {
                caps: field!(tx, fi_tx_attr, caps, l),
                mode: field!(tx, fi_tx_attr, mode, l),
                op_flags: field!(tx, fi_tx_attr, op_flags, l),
                msg_order: field!(tx, fi_tx_attr, msg_order, l),
                comp_order: field!(tx, fi_tx_attr, comp_order, l),
                inject_size: field!(tx, fi_tx_attr, inject_size, l),
                size: field!(tx, fi_tx_attr, size, l),
                iov_limit: field!(tx, fi_tx_attr, iov_limit, l),
                rma_iov_limit: field!(tx, fi_tx_attr, rma_iov_limit, l),
                tclass: field!(tx, fi_tx_attr, tclass, l),
            });
        }
        let rx: *const fi_rx_attr = field!(p, fi_info, rx_attr, lay.info);
        if !rx.is_null() {
            let l = lay.rx;
            out.rx = Some(RxAttr {
                caps: field!(rx, fi_rx_attr, caps, l),
                mode: field!(rx, fi_rx_attr, mode, l),
                op_flags: field!(rx, fi_rx_attr, op_flags, l),
                msg_order: field!(rx, fi_rx_attr, msg_order, l),
                comp_order: field!(rx, fi_rx_attr, comp_order, l),
                total_buffered_recv: field!(rx, fi_rx_attr, total_buffered_recv, l),
                size: field!(rx, fi_rx_attr, size, l),
                iov_limit: field!(rx, fi_rx_attr, iov_limit, l),
            });
        }
        let ep: *const fi_ep_attr = field!(p, fi_info, ep_attr, lay.info);
        if !ep.is_null() {
            let l = lay.ep;
            out.ep = Some(EpAttr {
                ep_type: field!(ep, fi_ep_attr, r#type, l),
                protocol: field!(ep, fi_ep_attr, protocol, l),
                protocol_version: field!(ep, fi_ep_attr, protocol_version, l),
                max_msg_size: field!(ep, fi_ep_attr, max_msg_size, l),
                msg_prefix_size: field!(ep, fi_ep_attr, msg_prefix_size, l),
                max_order_raw_size: field!(ep, fi_ep_attr, max_order_raw_size, l),
                max_order_war_size: field!(ep, fi_ep_attr, max_order_war_size, l),
                max_order_waw_size: field!(ep, fi_ep_attr, max_order_waw_size, l),
                mem_tag_format: field!(ep, fi_ep_attr, mem_tag_format, l),
                tx_ctx_cnt: field!(ep, fi_ep_attr, tx_ctx_cnt, l),
                rx_ctx_cnt: field!(ep, fi_ep_attr, rx_ctx_cnt, l),
                auth_key: bytes(
                    field!(ep, fi_ep_attr, auth_key, l) as *const c_void,
                    field!(ep, fi_ep_attr, auth_key_size, l),
                ),
            });
        }
        let d: *const fi_domain_attr = field!(p, fi_info, domain_attr, lay.info);
        if !d.is_null() {
            let l = lay.domain;
            let prog: __anon_fi_domain_attr_progress =
                field!(d, fi_domain_attr, __anon_progress, l);
            out.domain = Some(DomainAttr {
                name: cstr(field!(d, fi_domain_attr, name, l)),
                threading: field!(d, fi_domain_attr, threading, l),
                control_progress: field!(d, fi_domain_attr, control_progress, l),
                progress: prog.progress,
                resource_mgmt: field!(d, fi_domain_attr, resource_mgmt, l),
                av_type: field!(d, fi_domain_attr, av_type, l),
                mr_mode: field!(d, fi_domain_attr, mr_mode, l),
                mr_key_size: field!(d, fi_domain_attr, mr_key_size, l),
                cq_data_size: field!(d, fi_domain_attr, cq_data_size, l),
                cq_cnt: field!(d, fi_domain_attr, cq_cnt, l),
                ep_cnt: field!(d, fi_domain_attr, ep_cnt, l),
                tx_ctx_cnt: field!(d, fi_domain_attr, tx_ctx_cnt, l),
                rx_ctx_cnt: field!(d, fi_domain_attr, rx_ctx_cnt, l),
                max_ep_tx_ctx: field!(d, fi_domain_attr, max_ep_tx_ctx, l),
                max_ep_rx_ctx: field!(d, fi_domain_attr, max_ep_rx_ctx, l),
                max_ep_stx_ctx: field!(d, fi_domain_attr, max_ep_stx_ctx, l),
                max_ep_srx_ctx: field!(d, fi_domain_attr, max_ep_srx_ctx, l),
                cntr_cnt: field!(d, fi_domain_attr, cntr_cnt, l),
                mr_iov_limit: field!(d, fi_domain_attr, mr_iov_limit, l),
                caps: field!(d, fi_domain_attr, caps, l),
                mode: field!(d, fi_domain_attr, mode, l),
                auth_key: bytes(
                    field!(d, fi_domain_attr, auth_key, l) as *const c_void,
                    field!(d, fi_domain_attr, auth_key_size, l),
                ),
                max_err_data: field!(d, fi_domain_attr, max_err_data, l),
                mr_cnt: field!(d, fi_domain_attr, mr_cnt, l),
                tclass: field!(d, fi_domain_attr, tclass, l),
                max_ep_auth_key: field!(d, fi_domain_attr, max_ep_auth_key, l),
                max_group_id: field!(d, fi_domain_attr, max_group_id, l),
                max_xpu_ctx_cnt: field!(d, fi_domain_attr, max_xpu_ctx_cnt, l),
            });
        }
        let fa: *const fi_fabric_attr = field!(p, fi_info, fabric_attr, lay.info);
        if !fa.is_null() {
            out.fabric = Some(fabric_attr_from_c(fa, lay.fabric));
        }
        out
    }
}

/// Reads a `fi_fabric_attr` of `limit` bytes.
///
/// # Safety
/// `fa` points to at least `limit` readable bytes of a `fi_fabric_attr`.
pub unsafe fn fabric_attr_from_c(fa: *const fi_fabric_attr, limit: usize) -> FabricAttr {
    // SAFETY: per the function contract.
    unsafe {
        FabricAttr {
            name: cstr(field!(fa, fi_fabric_attr, name, limit)),
            prov_name: cstr(field!(fa, fi_fabric_attr, prov_name, limit)),
            prov_version: field!(fa, fi_fabric_attr, prov_version, limit),
            api_version: field!(fa, fi_fabric_attr, api_version, limit),
        }
    }
}

unsafe fn calloc<T>() -> Result<*mut T> {
    // SAFETY: calloc has no preconditions; the result is checked.
    let p = unsafe { libc::calloc(1, size_of::<T>()) } as *mut T;
    if p.is_null() {
        Err(Error::NOMEM)
    } else {
        Ok(p)
    }
}

unsafe fn strdup_opt(s: &Option<String>) -> Result<*mut c_char> {
    let Some(s) = s else { return Ok(null_mut()) };
    let mut v = s.as_bytes().to_vec();
    v.retain(|&b| b != 0);
    // SAFETY: allocating len+1 bytes and filling them within bounds.
    unsafe {
        let p = libc::malloc(v.len() + 1) as *mut u8;
        if p.is_null() {
            return Err(Error::NOMEM);
        }
        ptr::copy_nonoverlapping(v.as_ptr(), p, v.len());
        *p.add(v.len()) = 0;
        Ok(p as *mut c_char)
    }
}

unsafe fn memdup(b: &Option<Vec<u8>>) -> Result<(*mut c_void, usize)> {
    let Some(b) = b else {
        return Ok((null_mut(), 0));
    };
    // SAFETY: allocating b.len() bytes and copying exactly that many.
    unsafe {
        let p = libc::malloc(b.len().max(1));
        if p.is_null() {
            return Err(Error::NOMEM);
        }
        ptr::copy_nonoverlapping(b.as_ptr(), p as *mut u8, b.len());
        Ok((p, b.len()))
    }
}

/// An empty `fi_info` with every attribute structure allocated and zeroed
/// (what `fi_allocinfo()` returns).
pub fn alloc_info() -> Result<*mut fi_info> {
    // SAFETY: fresh zeroed allocations; on failure everything allocated so
    // far is released by free_info, which tolerates NULL members.
    unsafe {
        let info = calloc::<fi_info>()?;
        let r = (|| -> Result<()> {
            (*info).tx_attr = calloc()?;
            (*info).rx_attr = calloc()?;
            (*info).ep_attr = calloc()?;
            (*info).domain_attr = calloc()?;
            (*info).fabric_attr = calloc()?;
            Ok(())
        })();
        if let Err(e) = r {
            free_info(info, &Layout::CURRENT);
            return Err(e);
        }
        Ok(info)
    }
}

/// Builds a C `fi_info` list from provider descriptions.
pub fn infos_to_c(list: &[Info]) -> Result<*mut fi_info> {
    let mut head: *mut fi_info = null_mut();
    let mut tail: *mut fi_info = null_mut();
    for i in list {
        let one = match info_to_c(i) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: head is a list this function built.
                unsafe { free_info(head, &Layout::CURRENT) };
                return Err(e);
            }
        };
        if tail.is_null() {
            head = one;
        } else {
            // SAFETY: tail is the last element of the list built so far.
            unsafe { (*tail).next = one };
        }
        tail = one;
    }
    Ok(head)
}

/// One C `fi_info` from a provider description.
pub fn info_to_c(i: &Info) -> Result<*mut fi_info> {
    let info = alloc_info()?;
    // SAFETY: `info` and its attribute structures were just allocated.
    let r = unsafe { fill_info(info, i) };
    if let Err(e) = r {
        // SAFETY: `info` is ours and fully owned.
        unsafe { free_info(info, &Layout::CURRENT) };
        return Err(e);
    }
    Ok(info)
}

unsafe fn fill_info(info: *mut fi_info, i: &Info) -> Result<()> {
    // SAFETY: the caller passes a fresh fi_info from alloc_info.
    unsafe {
        let o = &mut *info;
        o.caps = i.caps;
        o.mode = i.mode;
        o.addr_format = i.addr_format;
        (o.src_addr, o.src_addrlen) = memdup(&i.src_addr)?;
        (o.dest_addr, o.dest_addrlen) = memdup(&i.dest_addr)?;
        if let Some(t) = &i.tx {
            let d = &mut *o.tx_attr;
            d.caps = t.caps;
            d.mode = t.mode;
            d.op_flags = t.op_flags;
            d.msg_order = t.msg_order;
            d.comp_order = t.comp_order;
            d.inject_size = t.inject_size;
            d.size = t.size;
            d.iov_limit = t.iov_limit;
            d.rma_iov_limit = t.rma_iov_limit;
            d.tclass = t.tclass;
        }
        if let Some(r) = &i.rx {
            let d = &mut *o.rx_attr;
            d.caps = r.caps;
            d.mode = r.mode;
            d.op_flags = r.op_flags;
            d.msg_order = r.msg_order;
            d.comp_order = r.comp_order;
            d.total_buffered_recv = r.total_buffered_recv;
            d.size = r.size;
            d.iov_limit = r.iov_limit;
        }
        if let Some(e) = &i.ep {
            let d = &mut *o.ep_attr;
            d.r#type = e.ep_type;
            d.protocol = e.protocol;
            d.protocol_version = e.protocol_version;
            d.max_msg_size = e.max_msg_size;
            d.msg_prefix_size = e.msg_prefix_size;
            d.max_order_raw_size = e.max_order_raw_size;
            d.max_order_war_size = e.max_order_war_size;
            d.max_order_waw_size = e.max_order_waw_size;
            d.mem_tag_format = e.mem_tag_format;
            d.tx_ctx_cnt = e.tx_ctx_cnt;
            d.rx_ctx_cnt = e.rx_ctx_cnt;
            let (k, n) = memdup(&e.auth_key)?;
            d.auth_key = k as *mut u8;
            d.auth_key_size = n;
        }
        if let Some(s) = &i.domain {
            let d = &mut *o.domain_attr;
            d.name = strdup_opt(&s.name)?;
            d.threading = s.threading;
            d.control_progress = s.control_progress;
            d.__anon_progress.progress = s.progress;
            d.resource_mgmt = s.resource_mgmt;
            d.av_type = s.av_type;
            d.mr_mode = s.mr_mode;
            d.mr_key_size = s.mr_key_size;
            d.cq_data_size = s.cq_data_size;
            d.cq_cnt = s.cq_cnt;
            d.ep_cnt = s.ep_cnt;
            d.tx_ctx_cnt = s.tx_ctx_cnt;
            d.rx_ctx_cnt = s.rx_ctx_cnt;
            d.max_ep_tx_ctx = s.max_ep_tx_ctx;
            d.max_ep_rx_ctx = s.max_ep_rx_ctx;
            d.max_ep_stx_ctx = s.max_ep_stx_ctx;
            d.max_ep_srx_ctx = s.max_ep_srx_ctx;
            d.cntr_cnt = s.cntr_cnt;
            d.mr_iov_limit = s.mr_iov_limit;
            d.caps = s.caps;
            d.mode = s.mode;
            let (k, n) = memdup(&s.auth_key)?;
            d.auth_key = k as *mut u8;
            d.auth_key_size = n;
            d.max_err_data = s.max_err_data;
            d.mr_cnt = s.mr_cnt;
            d.tclass = s.tclass;
            d.max_ep_auth_key = s.max_ep_auth_key;
            d.max_group_id = s.max_group_id;
            d.max_xpu_ctx_cnt = s.max_xpu_ctx_cnt;
        }
        if let Some(f) = &i.fabric {
            let d = &mut *o.fabric_attr;
            d.name = strdup_opt(&f.name)?;
            d.prov_name = strdup_opt(&f.prov_name)?;
            d.prov_version = f.prov_version;
            d.api_version = f.api_version;
        }
        Ok(())
    }
}

/// Frees a `fi_info` list, reading each structure only within `lay`.
///
/// # Safety
/// `info` is NULL or a list whose memory came from the C allocator, with
/// structures at least as large as `lay` says.
pub unsafe fn free_info(mut info: *mut fi_info, lay: &Layout) {
    // SAFETY: per the function contract.
    unsafe {
        while !info.is_null() {
            let next: *mut fi_info = field!(info, fi_info, next, lay.info);
            let p = info as *const fi_info;
            libc::free(field!(p, fi_info, src_addr, lay.info));
            libc::free(field!(p, fi_info, dest_addr, lay.info));
            libc::free(field!(p, fi_info, tx_attr, lay.info) as *mut c_void);
            libc::free(field!(p, fi_info, rx_attr, lay.info) as *mut c_void);
            let ep: *const fi_ep_attr = field!(p, fi_info, ep_attr, lay.info);
            if !ep.is_null() {
                libc::free(field!(ep, fi_ep_attr, auth_key, lay.ep) as *mut c_void);
                libc::free(ep as *mut c_void);
            }
            let d: *const fi_domain_attr = field!(p, fi_info, domain_attr, lay.info);
            if !d.is_null() {
                libc::free(field!(d, fi_domain_attr, name, lay.domain) as *mut c_void);
                libc::free(field!(d, fi_domain_attr, auth_key, lay.domain) as *mut c_void);
                libc::free(d as *mut c_void);
            }
            let fa: *const fi_fabric_attr = field!(p, fi_info, fabric_attr, lay.info);
            if !fa.is_null() {
                libc::free(field!(fa, fi_fabric_attr, name, lay.fabric) as *mut c_void);
                libc::free(field!(fa, fi_fabric_attr, prov_name, lay.fabric) as *mut c_void);
                libc::free(fa as *mut c_void);
            }
            let nic: *mut fid_nic = field!(p, fi_info, nic, lay.info);
            if !nic.is_null() {
                let _ = crate::capi::fabric::fi_close(nic as *mut fid);
            }
            libc::free(info as *mut c_void);
            info = next;
        }
    }
}

unsafe fn memdup_raw(p: *const c_void, len: usize) -> Result<*mut c_void> {
    if p.is_null() {
        return Ok(null_mut());
    }
    // SAFETY: the caller passes `len` readable bytes at `p`.
    unsafe {
        let d = libc::malloc(len.max(1));
        if d.is_null() {
            return Err(Error::NOMEM);
        }
        ptr::copy_nonoverlapping(p as *const u8, d as *mut u8, len);
        Ok(d)
    }
}

unsafe fn strdup_raw(p: *const c_char) -> Result<*mut c_char> {
    if p.is_null() {
        return Ok(null_mut());
    }
    // SAFETY: p is a NUL-terminated string.
    let d = unsafe { libc::strdup(p) };
    if d.is_null() {
        Err(Error::NOMEM)
    } else {
        Ok(d)
    }
}

/// Copies `min(limit, size_of::<T>())` bytes of `*src` into a fresh zeroed
/// full-size `T`.
unsafe fn dup_prefix<T>(src: *const T, limit: usize) -> Result<*mut T> {
    if src.is_null() {
        return Ok(null_mut());
    }
    // SAFETY: src has `limit` readable bytes; the destination is full size.
    unsafe {
        let d = calloc::<T>()?;
        ptr::copy_nonoverlapping(src as *const u8, d as *mut u8, limit.min(size_of::<T>()));
        Ok(d)
    }
}

/// Deep copy of one `fi_info` (not the rest of its list), read within `lay`,
/// written at the current layout.
///
/// # Safety
/// `src` points to a `fi_info` whose structures are at least `lay` in size.
pub unsafe fn dup_info(src: *const fi_info, lay: &Layout) -> Result<*mut fi_info> {
    // SAFETY: per the function contract; `dst` is ours until returned.
    unsafe {
        let dst = dup_prefix(src, lay.info)?;
        // Pointers copied from src are not ours to free; clear them first.
        let d = &mut *dst;
        d.next = null_mut();
        let (sa, da) = (d.src_addr, d.dest_addr);
        let (tx, rx, ep, dom, fab, nic) = (
            d.tx_attr,
            d.rx_attr,
            d.ep_attr,
            d.domain_attr,
            d.fabric_attr,
            d.nic,
        );
        d.src_addr = null_mut();
        d.dest_addr = null_mut();
        d.tx_attr = null_mut();
        d.rx_attr = null_mut();
        d.ep_attr = null_mut();
        d.domain_attr = null_mut();
        d.fabric_attr = null_mut();
        d.nic = null_mut();
        let r = (|| -> Result<()> {
            d.src_addr = memdup_raw(sa, d.src_addrlen)?;
            d.dest_addr = memdup_raw(da, d.dest_addrlen)?;
            d.tx_attr = dup_prefix(tx, lay.tx)?;
            d.rx_attr = dup_prefix(rx, lay.rx)?;
            if !ep.is_null() {
                d.ep_attr = dup_prefix(ep, lay.ep)?;
                let e = &mut *d.ep_attr;
                let key = e.auth_key;
                e.auth_key = null_mut();
                e.auth_key = memdup_raw(key as *const c_void, e.auth_key_size)? as *mut u8;
            }
            if !dom.is_null() {
                d.domain_attr = dup_prefix(dom, lay.domain)?;
                let a = &mut *d.domain_attr;
                let (name, key) = (a.name, a.auth_key);
                a.name = null_mut();
                a.auth_key = null_mut();
                a.name = strdup_raw(name)?;
                a.auth_key = memdup_raw(key as *const c_void, a.auth_key_size)? as *mut u8;
            }
            if !fab.is_null() {
                d.fabric_attr = dup_prefix(fab, lay.fabric)?;
                let a = &mut *d.fabric_attr;
                let (name, prov) = (a.name, a.prov_name);
                a.name = null_mut();
                a.prov_name = null_mut();
                a.name = strdup_raw(name)?;
                a.prov_name = strdup_raw(prov)?;
            }
            if !nic.is_null() {
                // A NIC is duplicated by its provider.
                let mut copy: *mut fid = null_mut();
                let rc = crate::capi::fabric::fi_control(
                    nic as *mut fid,
                    FI_DUP as c_int,
                    addr_of_mut!(copy) as *mut c_void,
                );
                if rc == 0 {
                    d.nic = copy as *mut fid_nic;
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            free_info(dst, &Layout::CURRENT);
            return Err(e);
        }
        Ok(dst)
    }
}

/// The process's provider filter from `FI_PROVIDER`.
fn provider_filter() -> crate::log::Filter {
    crate::log::Filter::parse(std::env::var("FI_PROVIDER").ok().as_deref())
}

/// Shared body of fi_getinfo and its compat versions.
///
/// # Safety
/// As fi_getinfo; `hints` structures are at least `lay` in size.
pub unsafe fn getinfo_impl(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    info: *mut *mut fi_info,
    lay: &Layout,
) -> Result<i32> {
    nonnull(info, "fi_getinfo", "info")?;
    pinfo::check_api_version(version)?;
    // SAFETY: per the function contract.
    let hints = (!hints.is_null()).then(|| unsafe { info_from_c(hints, lay) });
    if let Some(h) = &hints {
        if let Some(ep) = &h.ep {
            if ep.ep_type > FI_EP_RDM_RAW_MAX {
                crate::core_warn!(
                    Core,
                    "hints->ep_attr->type {} is not an endpoint type",
                    ep.ep_type
                );
                return Err(Error::INVAL);
            }
        }
    }
    let addr = AddrRequest {
        // SAFETY: node and service are NULL or strings, per fi_getinfo(3).
        node: unsafe { cstr(node) },
        service: unsafe { cstr(service) },
        source: flags & FI_SOURCE != 0,
    };
    let list = crate::prov::getinfo(version, &addr, hints.as_ref(), &provider_filter())?;
    let head = infos_to_c(&list)?;
    // SAFETY: info checked non-NULL above; written last, on success.
    unsafe { *info = head };
    Ok(0)
}

/// Largest valid `enum fi_ep_type` value.
const FI_EP_RDM_RAW_MAX: u32 = fi_ep_type::FI_EP_RDM as u32;

/// Returns the fi_info structures that describe the fabric services
/// available and matching `hints` (NULL: everything), as a list the caller
/// releases with fi_freeinfo.
///
/// Returns 0, -FI_ENODATA when nothing matches, -FI_ENOSYS for an API
/// version newer than this library's, -FI_EINVAL for a NULL `info` or
/// malformed hints, -FI_ENOMEM.
///
/// # Safety
/// `hints` is NULL or a valid fi_info (API 1.10 ABI layout); `node` and
/// `service` are NULL or strings; `info` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    info: *mut *mut fi_info,
) -> c_int {
    guard("fi_getinfo", || unsafe {
        getinfo_impl(version, node, service, flags, hints, info, &Layout::CURRENT)
    })
}

/// Frees a list returned by fi_getinfo, fi_dupinfo or fi_allocinfo,
/// including the strings and buffers its members point to. NULL is a no-op.
///
/// # Safety
/// `info` is NULL or a list that this library allocated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_freeinfo(info: *mut fi_info) {
    guard("fi_freeinfo", || {
        // SAFETY: per the function contract.
        unsafe { free_info(info, &Layout::CURRENT) };
        Ok(0)
    });
}

/// Deep copy of one fi_info (its `next` is not followed: the copy's `next`
/// is NULL). With NULL, returns a new fi_info whose attribute structures are
/// allocated and zeroed. Returns NULL when out of memory.
///
/// # Safety
/// `info` is NULL or a valid fi_info.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_dupinfo(info: *const fi_info) -> *mut fi_info {
    guard_or("fi_dupinfo", null_mut(), || unsafe {
        dupinfo_impl(info, &Layout::CURRENT)
    })
}

/// Shared body of fi_dupinfo and its compat versions.
///
/// # Safety
/// `info` is NULL or a fi_info whose structures are at least `lay` in size.
pub unsafe fn dupinfo_impl(info: *const fi_info, lay: &Layout) -> Result<*mut fi_info> {
    if info.is_null() {
        alloc_info()
    } else {
        // SAFETY: per the function contract.
        unsafe { dup_info(info, lay) }
    }
}

/// A new fi_info whose attribute structures are allocated and zeroed, to
/// fill in as hints; release it with fi_freeinfo. NULL when out of memory.
/// (Upstream's headers make this an inline call of `fi_dupinfo(NULL)`.)
#[unsafe(no_mangle)]
pub extern "C" fn fi_allocinfo() -> *mut fi_info {
    guard_or("fi_allocinfo", null_mut(), alloc_info)
}

/// Opens the fabric that `attr` names (`prov_name`, else `name`).
///
/// Returns 0, -FI_EINVAL for NULL arguments, -FI_ENODEV when no provider
/// has that name, -FI_ENODATA when the provider has no such fabric, or the
/// provider's error.
///
/// # Safety
/// `attr` is NULL or a valid fi_fabric_attr; `fabric` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_fabric(
    attr: *mut fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    guard("fi_fabric", || unsafe {
        fabric_impl(attr, size_of::<fi_fabric_attr>(), None, fabric, context)
    })
}

/// Shared body of fi_fabric, its 1.0 version and fi_fabric2.
///
/// # Safety
/// `attr` is NULL or `attr_len` readable bytes of a fi_fabric_attr.
pub unsafe fn fabric_impl(
    attr: *const fi_fabric_attr,
    attr_len: usize,
    api_override: Option<u32>,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> Result<i32> {
    nonnull(attr, "fi_fabric", "attr")?;
    nonnull(fabric, "fi_fabric", "fabric")?;
    // SAFETY: attr checked non-NULL; reads bounded by attr_len.
    let mut a = unsafe { fabric_attr_from_c(attr, attr_len) };
    if let Some(v) = api_override {
        a.api_version = v;
    }
    if a.api_version == 0 {
        a.api_version = pinfo::API_VERSION;
    }
    pinfo::check_api_version(a.api_version)?;
    let name = a.prov_name.clone().or_else(|| a.name.clone());
    let Some(name) = name else {
        crate::core_warn!(Fabric, "fabric attributes name no provider and no fabric");
        return Err(Error::INVAL);
    };
    let prov_name = name.split(';').next().unwrap_or(&name);
    match crate::prov::find(prov_name) {
        Some(p) if p.name == crate::prov::oxshm::NAME => {
            let f = crate::prov::oxshm::fabric::open(&a, context)?;
            // SAFETY: fabric checked non-NULL; written last, on success.
            unsafe { *fabric = f };
            Ok(0)
        }
        _ => {
            crate::core_warn!(Fabric, "no provider named {prov_name}");
            Err(Error::NODEV)
        }
    }
}

/// Opens the fabric named by `info->fabric_attr` (fi_fabric2(3)). `flags`
/// must be 0.
///
/// # Safety
/// `info` is NULL or a valid fi_info; `fabric` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_fabric2(
    info: *mut fi_info,
    fabric: *mut *mut fid_fabric,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard("fi_fabric2", || unsafe {
        nonnull(info, "fi_fabric2", "info")?;
        if flags != 0 {
            crate::core_warn!(Fabric, "fi_fabric2: flags 0x{flags:x} not supported");
            return Err(Error::BADFLAGS);
        }
        let attr = (*info).fabric_attr;
        fabric_impl(attr, size_of::<fi_fabric_attr>(), None, fabric, context)
    })
}

/// Opens a named interface (fi_open(3)): "mr_cache", the registration
/// cache, into which fi_import_fid imports a `fid_mem_monitor`
/// (rdma/fi_ext.h); `*fid` is then an object the caller closes with
/// fi_close. Any other name returns -FI_ENOSYS; NULL arguments return
/// -FI_EINVAL.
///
/// # Safety
/// `name` is NULL or a string; `fid` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_open(
    version: u32,
    name: *const c_char,
    attr: *mut c_void,
    attr_len: size_t,
    flags: u64,
    fid: *mut *mut fid,
    context: *mut c_void,
) -> c_int {
    let _ = (attr, attr_len, flags);
    guard("fi_open", || {
        nonnull(name, "fi_open", "name")?;
        nonnull(fid, "fi_open", "fid")?;
        pinfo::check_api_version(version)?;
        // SAFETY: name checked non-NULL; a string per fi_open(3).
        let n = unsafe { cstr(name) }.unwrap_or_default();
        if n == "mr_cache" {
            let f = crate::prov::oxshm::mr_cache::open(context);
            // SAFETY: fid checked non-NULL; written on success only.
            unsafe { *fid = f };
            return Ok(0);
        }
        crate::core_warn!(Core, "fi_open: no interface named \"{n}\"");
        Err(Error::NOSYS)
    })
}

/// The API version this library implements: FI_VERSION(2, 7).
#[unsafe(no_mangle)]
pub extern "C" fn fi_version() -> u32 {
    pinfo::API_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn compat_layouts_match_the_old_abis() {
        // Sizes of libfabric 1.0's structures (LP64), as its headers had them.
        assert_eq!(Layout::V1_0.info, 112);
        assert_eq!(Layout::V1_0.tx, 72);
        assert_eq!(Layout::V1_0.rx, 64);
        assert_eq!(Layout::V1_0.ep, 80);
        assert_eq!(Layout::V1_0.domain, 120);
        assert_eq!(Layout::V1_0.fabric, 28);
        assert_eq!(Layout::V1_1.domain, 184);
        assert_eq!(Layout::V1_2.info, 120);
        assert_eq!(Layout::V1_3.tx, size_of::<fi_tx_attr>());
        assert_eq!(
            Layout::V1_7.domain,
            offset_of!(fi_domain_attr, max_group_id)
        );
        assert_eq!(
            Layout::V1_8.domain,
            offset_of!(fi_domain_attr, max_xpu_ctx_cnt)
        );
    }

    unsafe fn set_str(slot: *mut *mut c_char, s: &str) {
        let c = CString::new(s).unwrap();
        unsafe { *slot = libc::strdup(c.as_ptr()) };
    }

    #[test]
    fn dupinfo_is_deep_and_freeinfo_releases_it() {
        unsafe {
            let a = alloc_info().unwrap();
            set_str(&mut (*(*a).fabric_attr).prov_name, "oxshm");
            set_str(&mut (*(*a).domain_attr).name, "dom");
            (*(*a).domain_attr).mr_mode = FI_MR_LOCAL;
            let b = dup_info(a, &Layout::CURRENT).unwrap();
            assert_ne!((*b).fabric_attr, (*a).fabric_attr);
            assert_ne!((*(*b).fabric_attr).prov_name, (*(*a).fabric_attr).prov_name);
            assert_eq!(
                cstr((*(*b).fabric_attr).prov_name).as_deref(),
                Some("oxshm")
            );
            assert_eq!(cstr((*(*b).domain_attr).name).as_deref(), Some("dom"));
            assert_eq!((*(*b).domain_attr).mr_mode, FI_MR_LOCAL);
            *(*(*b).domain_attr).name = b'X' as c_char;
            assert_eq!(cstr((*(*a).domain_attr).name).as_deref(), Some("dom"));
            free_info(a, &Layout::CURRENT);
            free_info(b, &Layout::CURRENT);
        }
    }

    #[test]
    fn short_hints_are_read_only_within_their_layout() {
        unsafe {
            let a = alloc_info().unwrap();
            (*(*a).domain_attr).max_ep_auth_key = 99;
            (*(*a).domain_attr).tclass = 7;
            let old = info_from_c(a, &Layout::V1_2);
            let d = old.domain.unwrap();
            assert_eq!((d.max_ep_auth_key, d.tclass), (0, 0));
            let new = info_from_c(a, &Layout::CURRENT);
            let d = new.domain.unwrap();
            assert_eq!((d.max_ep_auth_key, d.tclass), (99, 7));
            free_info(a, &Layout::CURRENT);
        }
    }

    #[test]
    fn getinfo_matches_and_rejects() {
        unsafe {
            let mut out: *mut fi_info = null_mut();
            let v = pinfo::API_VERSION;
            assert_eq!(
                getinfo_impl(
                    v,
                    null_mut(),
                    null_mut(),
                    0,
                    null_mut(),
                    &mut out,
                    &Layout::CURRENT
                ),
                Ok(0)
            );
            assert!(!out.is_null());
            assert_eq!(
                cstr((*(*out).fabric_attr).prov_name).as_deref(),
                Some("oxshm")
            );
            free_info(out, &Layout::CURRENT);

            let h = alloc_info().unwrap();
            (*(*h).ep_attr).r#type = fi_ep_type::FI_EP_MSG as u32;
            out = null_mut();
            let r = getinfo_impl(v, null_mut(), null_mut(), 0, h, &mut out, &Layout::CURRENT);
            assert_eq!(r, Err(Error::NODATA));
            assert!(out.is_null());
            (*(*h).ep_attr).r#type = 77;
            let r = getinfo_impl(v, null_mut(), null_mut(), 0, h, &mut out, &Layout::CURRENT);
            assert_eq!(r, Err(Error::INVAL));
            free_info(h, &Layout::CURRENT);

            let r = getinfo_impl(
                pinfo::version(2, 8),
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                &mut out,
                &Layout::CURRENT,
            );
            assert_eq!(r, Err(Error::NOSYS));
            let r = getinfo_impl(
                v,
                null_mut(),
                null_mut(),
                0,
                null_mut(),
                null_mut(),
                &Layout::CURRENT,
            );
            assert_eq!(r, Err(Error::INVAL));
        }
    }
}
