//! Exported forms of `rdma/fi_xpu.h`'s inline API (libfabric 2.7).
//!
//! Both functions dispatch through the object's ops table as upstream's
//! `static inline` does; a NULL object returns -FI_EINVAL and a missing ops
//! slot -FI_ENOSYS.

use crate::abi::domain::{fi_ops_domain, fid_domain};
use crate::abi::xpu::{fi_ops_xpu_ctx, fi_xpu_attr, fi_xpu_ctx_attr, fid_xpu_ctx};
use crate::capi::guard;
use libc::{c_int, c_void};

/// Opens an XPU context on `domain` for the accelerator that `attr` names
/// (`domain->ops->xpu_ctx`). On success `*ctx` holds the context, closed
/// with `fi_close()`. Returns 0 or a negative FI_E* code (-FI_ENOSYS when
/// the provider has no XPU support).
///
/// # Safety
/// `domain` must be NULL or point to a live domain; `attr` and `ctx` must be
/// valid for the provider's use.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_xpu_ctx(
    domain: *mut fid_domain,
    attr: *mut fi_xpu_attr,
    ctx: *mut *mut fid_xpu_ctx,
    context: *mut c_void,
) -> c_int {
    guard("fi_xpu_ctx", || {
        dispatch!(
            "fi_xpu_ctx",
            domain,
            (*domain).ops,
            fi_ops_domain,
            xpu_ctx(domain, attr, ctx, context)
        )
    })
}

/// Fills `*attr` with what XPU context `ctx` supports (FI_XPU_CAP_*) and the
/// raw AV address and MR descriptor sizes it uses (`ctx->ops->query`).
///
/// # Safety
/// `ctx` must be NULL or point to a live XPU context; `attr` must be
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_xpu_ctx_query(
    ctx: *mut fid_xpu_ctx,
    attr: *mut fi_xpu_ctx_attr,
) -> c_int {
    guard("fi_xpu_ctx_query", || {
        dispatch!(
            "fi_xpu_ctx_query",
            ctx,
            (*ctx).ops,
            fi_ops_xpu_ctx,
            query(ctx, attr)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of, zeroed};
    use std::ptr;

    unsafe extern "C" fn open_ctx(
        _domain: *mut fid_domain,
        attr: *mut fi_xpu_attr,
        ctx: *mut *mut fid_xpu_ctx,
        context: *mut c_void,
    ) -> c_int {
        // SAFETY: the test passes valid pointers.
        unsafe {
            *ctx = context.cast();
            (*attr).device as c_int
        }
    }

    unsafe extern "C" fn query(_ctx: *mut fid_xpu_ctx, attr: *mut fi_xpu_ctx_attr) -> c_int {
        // SAFETY: the test passes a writable attr.
        unsafe {
            (*attr).caps = crate::abi::xpu::FI_XPU_CAP_CQ;
            (*attr).mr_desc_size = 4;
        }
        0
    }

    #[test]
    fn dispatch_enosys_and_einval() {
        // SAFETY: all-zero is a valid empty table, object and attr.
        let mut dops: fi_ops_domain = unsafe { zeroed() };
        dops.size = size_of::<fi_ops_domain>();
        dops.xpu_ctx = Some(open_ctx);
        let mut domain: fid_domain = unsafe { zeroed() };
        domain.ops = &raw mut dops;
        let mut xops: fi_ops_xpu_ctx = unsafe { zeroed() };
        xops.size = size_of::<fi_ops_xpu_ctx>();
        xops.query = Some(query);
        let mut ctx: fid_xpu_ctx = unsafe { zeroed() };
        ctx.ops = &raw mut xops;
        let mut attr: fi_xpu_attr = unsafe { zeroed() };
        attr.device = 3;
        let mut out: *mut fid_xpu_ctx = ptr::null_mut();
        let mut qa: fi_xpu_ctx_attr = unsafe { zeroed() };
        let d = &raw mut domain;
        let c = &raw mut ctx;
        unsafe {
            assert_eq!(fi_xpu_ctx(d, &raw mut attr, &raw mut out, c.cast()), 3);
            assert_eq!(out, c);
            assert_eq!(fi_xpu_ctx_query(c, &raw mut qa), 0);
            assert_eq!(
                (qa.caps, qa.mr_desc_size),
                (crate::abi::xpu::FI_XPU_CAP_CQ, 4)
            );
            // A 2.1-sized domain table has no xpu_ctx slot.
            (*(*d).ops).size = offset_of!(fi_ops_domain, xpu_ctx);
            assert_eq!(
                fi_xpu_ctx(d, &raw mut attr, &raw mut out, ptr::null_mut()),
                -libc::ENOSYS
            );
            (*c).ops = ptr::null_mut();
            assert_eq!(fi_xpu_ctx_query(c, &raw mut qa), -libc::ENOSYS);
            let nd: *mut fid_domain = ptr::null_mut();
            assert_eq!(
                fi_xpu_ctx(nd, &raw mut attr, &raw mut out, ptr::null_mut()),
                -libc::EINVAL
            );
            assert_eq!(
                fi_xpu_ctx_query(ptr::null_mut(), &raw mut qa),
                -libc::EINVAL
            );
        }
    }
}
