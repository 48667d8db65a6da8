//! Provider descriptions as plain Rust values, and the hints matching that
//! `fi_getinfo` applies to them (libfabric's `ofi_check_info` rules).
//!
//! The C boundary converts a `struct fi_info` into [`Info`] (reading only the
//! fields that exist in the caller's ABI version) and back; nothing here sees a
//! C pointer.

use crate::abi::fabric as f;
use crate::error::{Error, Result};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxAttr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: usize,
    pub size: usize,
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
    pub tclass: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RxAttr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: usize,
    pub size: usize,
    pub iov_limit: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpAttr {
    pub ep_type: u32,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: usize,
    pub msg_prefix_size: usize,
    pub max_order_raw_size: usize,
    pub max_order_war_size: usize,
    pub max_order_waw_size: usize,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub auth_key: Option<Vec<u8>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainAttr {
    pub name: Option<String>,
    pub threading: u32,
    pub control_progress: u32,
    pub progress: u32,
    pub resource_mgmt: u32,
    pub av_type: u32,
    pub mr_mode: i32,
    pub mr_key_size: usize,
    pub cq_data_size: usize,
    pub cq_cnt: usize,
    pub ep_cnt: usize,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub max_ep_tx_ctx: usize,
    pub max_ep_rx_ctx: usize,
    pub max_ep_stx_ctx: usize,
    pub max_ep_srx_ctx: usize,
    pub cntr_cnt: usize,
    pub mr_iov_limit: usize,
    pub caps: u64,
    pub mode: u64,
    pub auth_key: Option<Vec<u8>>,
    pub max_err_data: usize,
    pub mr_cnt: usize,
    pub tclass: u32,
    pub max_ep_auth_key: usize,
    pub max_group_id: u32,
    pub max_xpu_ctx_cnt: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricAttr {
    pub name: Option<String>,
    pub prov_name: Option<String>,
    pub prov_version: u32,
    pub api_version: u32,
}

/// One `fi_info`, as a provider offers it or as hints describe a request.
/// In hints, an absent attribute structure is `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addr: Option<Vec<u8>>,
    pub dest_addr: Option<Vec<u8>>,
    pub tx: Option<TxAttr>,
    pub rx: Option<RxAttr>,
    pub ep: Option<EpAttr>,
    pub domain: Option<DomainAttr>,
    pub fabric: Option<FabricAttr>,
}

/// `FI_VERSION(major, minor)`.
pub const fn version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

/// The newest API version this library implements.
pub const API_VERSION: u32 = version(f::FI_MAJOR_VERSION, f::FI_MINOR_VERSION);

/// Capabilities that describe the caller's intent ("primary") versus the
/// ones a provider may add without cost ("secondary"): a returned fi_info
/// carries the requested caps plus the provider's secondary caps.
pub const SECONDARY_CAPS: u64 = f::FI_MULTI_RECV
    | f::FI_SOURCE
    | f::FI_RMA_EVENT
    | f::FI_LOCAL_COMM
    | f::FI_REMOTE_COMM
    | f::FI_SHARED_AV
    | f::FI_TRIGGER
    | f::FI_FENCE
    | f::FI_SOURCE_ERR
    | f::FI_RMA_PMEM
    | f::FI_TAGGED_DIRECTED_RECV
    | f::FI_TAGGED_MULTI_RECV
    | f::FI_EXACT_DIRECTED_RECV;

/// Primary-capability modifiers (fi_getinfo(3)): they restrict what a
/// primary capability is used for. Where a request names a primary
/// capability and none of its modifiers, all of them are implied.
pub const MSG_MODIFIERS: u64 = f::FI_SEND | f::FI_RECV;
pub const RMA_MODIFIERS: u64 = f::FI_READ | f::FI_WRITE | f::FI_REMOTE_READ | f::FI_REMOTE_WRITE;

/// Capabilities that describe the domain rather than an endpoint's
/// transfers (fi_domain(3)); they appear in `caps` and `domain_attr->caps`
/// but never in `tx_attr->caps` or `rx_attr->caps`.
pub const DOMAIN_ONLY_CAPS: u64 = f::FI_LOCAL_COMM | f::FI_REMOTE_COMM | f::FI_SHARED_AV;

/// Capabilities that may appear in `tx_attr->caps` (fi_endpoint(3)).
pub const TX_CAPS: u64 = f::FI_MSG
    | f::FI_RMA
    | f::FI_TAGGED
    | f::FI_ATOMIC
    | f::FI_MULTICAST
    | f::FI_NAMED_RX_CTX
    | f::FI_HMEM
    | f::FI_COLLECTIVE
    | f::FI_XPU
    | f::FI_SEND
    | f::FI_READ
    | f::FI_WRITE
    | f::FI_TRIGGER
    | f::FI_FENCE
    | f::FI_RMA_PMEM;

/// Capabilities that may appear in `rx_attr->caps` (fi_endpoint(3)).
pub const RX_CAPS: u64 = f::FI_MSG
    | f::FI_RMA
    | f::FI_TAGGED
    | f::FI_ATOMIC
    | f::FI_DIRECTED_RECV
    | f::FI_TAGGED_DIRECTED_RECV
    | f::FI_EXACT_DIRECTED_RECV
    | f::FI_HMEM
    | f::FI_COLLECTIVE
    | f::FI_XPU
    | f::FI_RECV
    | f::FI_REMOTE_READ
    | f::FI_REMOTE_WRITE
    | f::FI_RMA_PMEM
    | f::FI_SOURCE
    | f::FI_SOURCE_ERR
    | f::FI_RMA_EVENT
    | f::FI_MULTI_RECV
    | f::FI_TAGGED_MULTI_RECV
    | f::FI_TRIGGER;

/// Secondary capabilities granted only when asked for: FI_SOURCE has the
/// provider look every received message's source up in the AV, a cost
/// fi_getinfo(3) lets a provider add unasked only where it has none
/// (FI_SOURCE_ERR goes with it). As upstream's providers do.
pub const SECONDARY_ASKED_ONLY: u64 = f::FI_SOURCE | f::FI_SOURCE_ERR;

/// The capabilities granted for a request of `requested` from a provider
/// offering `offered` (which holds every requested bit): the requested
/// bits, the modifiers their primary capabilities imply when the request
/// names none of that group, and the provider's secondary capabilities
/// but those of [`SECONDARY_ASKED_ONLY`]. A request of 0 asks for
/// everything offered.
pub fn granted_caps(requested: u64, offered: u64) -> u64 {
    if requested == 0 {
        return offered;
    }
    let mut caps = requested | (offered & SECONDARY_CAPS & !SECONDARY_ASKED_ONLY);
    if requested & (f::FI_MSG | f::FI_TAGGED) != 0 && requested & MSG_MODIFIERS == 0 {
        caps |= offered & MSG_MODIFIERS;
    }
    if requested & (f::FI_RMA | f::FI_ATOMIC) != 0 && requested & RMA_MODIFIERS == 0 {
        caps |= offered & RMA_MODIFIERS;
    }
    caps
}

/// Bits that basic registration (FI_MR_BASIC) stands for.
pub const MR_BASIC_MAP: i32 = f::FI_MR_VIRT_ADDR | f::FI_MR_ALLOCATED | f::FI_MR_PROV_KEY;

/// Why a provider's description does not satisfy hints; logged at info level
/// by the caller (no match is not an error until every provider fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch(pub String);

fn mismatch<T>(msg: String) -> std::result::Result<T, Mismatch> {
    Err(Mismatch(msg))
}

/// Negotiates `mr_mode` as fi_mr(3) and fi_getinfo(3) describe.
///
/// `required` are the bits the provider's domain needs (modern bits only).
/// `hint` is the caller's `domain_attr->mr_mode` (None without hints or
/// domain attributes); `local_mr_mode` is whether the caller set the
/// deprecated FI_LOCAL_MR mode bit. Returns the mr_mode to report.
pub fn negotiate_mr_mode(
    api_version: u32,
    hint: Option<i32>,
    local_mr_mode: bool,
    required: i32,
) -> std::result::Result<i32, Mismatch> {
    // Basic registration stands for VIRT_ADDR | ALLOCATED | PROV_KEY, plus
    // FI_MR_LOCAL when the caller also set the FI_LOCAL_MR mode bit;
    // scalable registration for no requirement but that FI_MR_LOCAL.
    let local = if local_mr_mode { f::FI_MR_LOCAL } else { 0 };
    let basic_ok = required & !(MR_BASIC_MAP | local) == 0;
    let scalable_ok = required & !local == 0;
    let Some(hint) = hint else {
        // No preference: report what the domain needs, in the caller's
        // vocabulary.
        if api_version >= version(1, 5) {
            return Ok(required);
        }
        return if required == 0 {
            Ok(f::FI_MR_SCALABLE)
        } else if required & !(MR_BASIC_MAP | f::FI_MR_LOCAL) == 0 {
            Ok(f::FI_MR_BASIC)
        } else {
            mismatch(format!("domain requires mr_mode 0x{required:x}, which API versions before 1.5 cannot express"))
        };
    };
    if hint == f::FI_MR_BASIC {
        // Forces basic registration; never cleared.
        return if basic_ok {
            Ok(f::FI_MR_BASIC)
        } else {
            mismatch(format!(
                "FI_MR_BASIC requested; domain requires mr_mode 0x{required:x}"
            ))
        };
    }
    if hint == f::FI_MR_SCALABLE {
        return if scalable_ok {
            Ok(f::FI_MR_SCALABLE)
        } else {
            mismatch(format!(
                "FI_MR_SCALABLE requested; domain requires mr_mode 0x{required:x}"
            ))
        };
    }
    if api_version < version(1, 5) {
        // Only the enum values exist before 1.5; FI_MR_UNSPEC means either.
        if hint != f::FI_MR_UNSPEC {
            return mismatch(format!("mr_mode 0x{hint:x} is not valid before API 1.5"));
        }
        return if scalable_ok {
            Ok(f::FI_MR_SCALABLE)
        } else if basic_ok {
            Ok(f::FI_MR_BASIC)
        } else {
            mismatch(format!("domain requires mr_mode 0x{required:x}, which API versions before 1.5 cannot express"))
        };
    }
    if hint & (f::FI_MR_BASIC | f::FI_MR_SCALABLE) != 0 {
        return mismatch(format!(
            "mr_mode 0x{hint:x} mixes FI_MR_BASIC/FI_MR_SCALABLE with other bits"
        ));
    }
    let mut supported = hint;
    if local_mr_mode {
        supported |= f::FI_MR_LOCAL;
    }
    let missing = required & !supported;
    if missing != 0 {
        return mismatch(format!(
            "domain requires mr_mode bits 0x{missing:x} that the application does not support"
        ));
    }
    Ok(required)
}

/// Matches a provider offer against hints; on success returns the offer
/// adjusted to the request (requested caps, modes, threading, ...).
pub fn match_info(
    api_version: u32,
    offer: &Info,
    mr_required: i32,
    hints: Option<&Info>,
) -> std::result::Result<Info, Mismatch> {
    let mut out = offer.clone();
    let Some(h) = hints else {
        if let Some(d) = out.domain.as_mut() {
            d.mr_mode = negotiate_mr_mode(api_version, None, false, mr_required)?;
        }
        return Ok(out);
    };

    if h.caps & !offer.caps != 0 {
        return mismatch(format!(
            "unsupported capabilities 0x{:x}",
            h.caps & !offer.caps
        ));
    }
    out.caps = granted_caps(h.caps, offer.caps);
    // Mode bits are what the caller can accept; the provider needs offer.mode.
    if offer.mode & !h.mode != 0 {
        return mismatch(format!(
            "provider needs mode bits 0x{:x}",
            offer.mode & !h.mode
        ));
    }
    if h.addr_format != f::FI_FORMAT_UNSPEC as u32 && h.addr_format != offer.addr_format {
        return mismatch(format!("address format {} not supported", h.addr_format));
    }

    if let (Some(ht), Some(ot)) = (&h.tx, out.tx.as_mut()) {
        if ht.caps & !ot.caps != 0 {
            return mismatch(format!("tx caps 0x{:x} not supported", ht.caps & !ot.caps));
        }
        if ht.mode != 0 && ot.mode & !ht.mode != 0 {
            return mismatch("tx mode bits required".into());
        }
        if ht.inject_size > ot.inject_size
            || ht.size > ot.size
            || ht.iov_limit > ot.iov_limit
            || ht.rma_iov_limit > ot.rma_iov_limit
        {
            return mismatch("tx limits exceed the provider's".into());
        }
        if ht.msg_order & !ot.msg_order != 0 {
            return mismatch("tx msg_order not supported".into());
        }
        ot.op_flags = ht.op_flags;
    }
    if let (Some(hr), Some(or)) = (&h.rx, out.rx.as_mut()) {
        if hr.caps & !or.caps != 0 {
            return mismatch(format!("rx caps 0x{:x} not supported", hr.caps & !or.caps));
        }
        if hr.size > or.size || hr.iov_limit > or.iov_limit {
            return mismatch("rx limits exceed the provider's".into());
        }
        if hr.msg_order & !or.msg_order != 0 {
            return mismatch("rx msg_order not supported".into());
        }
        or.op_flags = hr.op_flags;
    }
    // Each direction carries what was granted that applies to it, or what
    // its own hints asked for (with their implied modifiers).
    let granted = out.caps;
    if let Some(ot) = out.tx.as_mut() {
        let asked = h.tx.as_ref().map_or(0, |t| t.caps);
        ot.caps = match asked {
            0 => granted & ot.caps,
            a => granted_caps(a, ot.caps) & ot.caps,
        } & TX_CAPS;
    }
    if let Some(or) = out.rx.as_mut() {
        let asked = h.rx.as_ref().map_or(0, |r| r.caps);
        or.caps = match asked {
            0 => granted & or.caps,
            a => granted_caps(a, or.caps) & or.caps,
        } & RX_CAPS;
    }
    if let (Some(he), Some(oe)) = (&h.ep, out.ep.as_mut()) {
        if he.ep_type != f::fi_ep_type::FI_EP_UNSPEC as u32 && he.ep_type != oe.ep_type {
            return mismatch(format!("endpoint type {} not supported", he.ep_type));
        }
        if he.protocol != f::FI_PROTO_UNSPEC as u32 && he.protocol != oe.protocol {
            return mismatch(format!("protocol {} not supported", he.protocol));
        }
        if he.max_msg_size > oe.max_msg_size {
            return mismatch("max_msg_size exceeds the provider's".into());
        }
        if he.tx_ctx_cnt > oe.tx_ctx_cnt.max(1) || he.rx_ctx_cnt > oe.rx_ctx_cnt.max(1) {
            return mismatch("more tx/rx contexts than the provider offers".into());
        }
        if he.mem_tag_format != 0 {
            oe.mem_tag_format = he.mem_tag_format;
        }
        if he.auth_key.is_some() {
            oe.auth_key = he.auth_key.clone();
        }
    }
    if let (Some(hd), Some(od)) = (&h.domain, out.domain.as_mut()) {
        if let Some(name) = &hd.name {
            if Some(name) != od.name.as_ref() {
                return mismatch(format!("domain name {name} not offered"));
            }
        }
        // FI_THREAD_SAFE serves every threading model.
        if hd.threading != 0 {
            if hd.threading > f::fi_threading::FI_THREAD_ENDPOINT as u32 {
                return mismatch(format!("threading {} unknown", hd.threading));
            }
            if od.threading != f::fi_threading::FI_THREAD_SAFE as u32 {
                return mismatch("threading model not supported".into());
            }
            od.threading = hd.threading;
        }
        let (auto, manual) = (
            f::fi_progress::FI_PROGRESS_AUTO as u32,
            f::fi_progress::FI_PROGRESS_MANUAL as u32,
        );
        for (want, have, what) in [
            (hd.control_progress, &mut od.control_progress, "control"),
            (hd.progress, &mut od.progress, "data"),
        ] {
            if want != 0 {
                // Automatic progress also serves a caller that drives progress.
                if want != *have && !(want == manual && *have == auto) {
                    return mismatch(format!("{what} progress {want} not supported"));
                }
                *have = want;
            }
        }
        if hd.resource_mgmt != 0 {
            if hd.resource_mgmt > f::fi_resource_mgmt::FI_RM_ENABLED as u32 {
                return mismatch("resource_mgmt unknown".into());
            }
            od.resource_mgmt = hd.resource_mgmt;
        }
        if hd.av_type != 0 {
            if hd.av_type > f::fi_av_type::FI_AV_TABLE as u32 {
                return mismatch(format!("av_type {} unknown", hd.av_type));
            }
            od.av_type = hd.av_type;
        }
        if hd.caps & !od.caps != 0 {
            return mismatch("domain caps not supported".into());
        }
        if hd.caps != 0 {
            od.caps = hd.caps | (od.caps & SECONDARY_CAPS);
        }
        if hd.mr_key_size > od.mr_key_size && hd.mr_key_size != 0 {
            return mismatch("mr_key_size exceeds the provider's".into());
        }
        if hd.cq_data_size > od.cq_data_size {
            return mismatch("cq_data_size exceeds the provider's".into());
        }
        if hd.mr_iov_limit > od.mr_iov_limit {
            return mismatch("mr_iov_limit exceeds the provider's".into());
        }
        if hd.auth_key.is_some() {
            od.auth_key = hd.auth_key.clone();
        }
        od.mr_mode = negotiate_mr_mode(
            api_version,
            Some(hd.mr_mode),
            h.mode & f::FI_LOCAL_MR != 0,
            mr_required,
        )?;
    } else if let Some(od) = out.domain.as_mut() {
        od.mr_mode =
            negotiate_mr_mode(api_version, None, h.mode & f::FI_LOCAL_MR != 0, mr_required)?;
    }
    if let (Some(hf), Some(of)) = (&h.fabric, out.fabric.as_mut()) {
        if let Some(name) = &hf.name {
            if Some(name) != of.name.as_ref() {
                return mismatch(format!("fabric name {name} not offered"));
            }
        }
        if hf.prov_version != 0 && hf.prov_version > of.prov_version {
            return mismatch("provider version too old".into());
        }
    }
    out.mode = offer.mode;
    // Legacy registration modes carry FI_MR_LOCAL as the FI_LOCAL_MR mode
    // bit (the caller offered it, or negotiation would have failed).
    if let Some(od) = out.domain.as_ref() {
        let legacy = od.mr_mode == f::FI_MR_BASIC || od.mr_mode == f::FI_MR_SCALABLE;
        if legacy && mr_required & f::FI_MR_LOCAL != 0 {
            out.mode |= f::FI_LOCAL_MR;
        }
    }
    // A domain offers what the caller asked of the endpoint, and no more.
    if h.caps != 0 {
        if let Some(od) = out.domain.as_mut() {
            od.caps &= out.caps | SECONDARY_CAPS;
        }
    }
    if let Some(of) = out.fabric.as_mut() {
        of.api_version = api_version;
    }
    if h.src_addr.is_some() {
        out.src_addr = h.src_addr.clone();
    }
    if h.dest_addr.is_some() {
        out.dest_addr = h.dest_addr.clone();
    }
    Ok(out)
}

/// Checks an API version requested by the caller.
pub fn check_api_version(v: u32) -> Result<()> {
    if v > API_VERSION || v < version(1, 0) {
        crate::core_warn!(
            Core,
            "API version {}.{} not supported (this library implements up to {}.{})",
            v >> 16,
            v & 0xffff,
            API_VERSION >> 16,
            API_VERSION & 0xffff
        );
        return Err(Error::NOSYS);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: u32 = API_VERSION;

    #[test]
    fn mr_mode_without_hints_reports_requirements() {
        assert_eq!(negotiate_mr_mode(V, None, false, 0), Ok(0));
        let req = f::FI_MR_PROV_KEY | f::FI_MR_VIRT_ADDR;
        assert_eq!(negotiate_mr_mode(V, None, false, req), Ok(req));
        assert_eq!(
            negotiate_mr_mode(version(1, 4), None, false, 0),
            Ok(f::FI_MR_SCALABLE)
        );
        assert_eq!(
            negotiate_mr_mode(version(1, 4), None, false, req),
            Ok(f::FI_MR_BASIC)
        );
    }

    #[test]
    fn mr_mode_clears_unneeded_and_rejects_unsupported() {
        let all = f::FI_MR_LOCAL | f::FI_MR_VIRT_ADDR | f::FI_MR_PROV_KEY | f::FI_MR_ALLOCATED;
        assert_eq!(
            negotiate_mr_mode(V, Some(all), false, f::FI_MR_PROV_KEY),
            Ok(f::FI_MR_PROV_KEY)
        );
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_LOCAL), false, f::FI_MR_PROV_KEY).is_err());
        // FI_LOCAL_MR mode bit stands in for FI_MR_LOCAL.
        assert_eq!(
            negotiate_mr_mode(V, Some(0), true, f::FI_MR_LOCAL),
            Ok(f::FI_MR_LOCAL)
        );
        assert!(negotiate_mr_mode(V, Some(0), false, f::FI_MR_LOCAL).is_err());
    }

    #[test]
    fn mr_mode_legacy_values() {
        assert_eq!(
            negotiate_mr_mode(V, Some(f::FI_MR_BASIC), false, 0),
            Ok(f::FI_MR_BASIC)
        );
        assert_eq!(
            negotiate_mr_mode(V, Some(f::FI_MR_BASIC), false, f::FI_MR_PROV_KEY),
            Ok(f::FI_MR_BASIC)
        );
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_BASIC), false, f::FI_MR_RAW).is_err());
        assert_eq!(
            negotiate_mr_mode(V, Some(f::FI_MR_SCALABLE), false, 0),
            Ok(f::FI_MR_SCALABLE)
        );
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_SCALABLE), false, f::FI_MR_VIRT_ADDR).is_err());
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_BASIC | f::FI_MR_LOCAL), false, 0).is_err());
        assert_eq!(
            negotiate_mr_mode(version(1, 4), Some(0), false, 0),
            Ok(f::FI_MR_SCALABLE)
        );
        assert!(negotiate_mr_mode(version(1, 4), Some(f::FI_MR_LOCAL), false, 0).is_err());
        // Requirements outside what each legacy mode stands for.
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_SCALABLE), false, f::FI_MR_RAW).is_err());
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_SCALABLE), false, f::FI_MR_ENDPOINT).is_err());
        assert!(negotiate_mr_mode(version(1, 4), Some(0), false, f::FI_MR_RAW).is_err());
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_BASIC), false, f::FI_MR_LOCAL).is_err());
        assert_eq!(
            negotiate_mr_mode(V, Some(f::FI_MR_BASIC), true, f::FI_MR_LOCAL),
            Ok(f::FI_MR_BASIC)
        );
        assert!(negotiate_mr_mode(V, Some(f::FI_MR_SCALABLE), false, f::FI_MR_LOCAL).is_err());
        assert_eq!(
            negotiate_mr_mode(V, Some(f::FI_MR_SCALABLE), true, f::FI_MR_LOCAL),
            Ok(f::FI_MR_SCALABLE)
        );
    }

    fn offer() -> Info {
        Info {
            caps: f::FI_MSG | f::FI_RMA | f::FI_LOCAL_COMM,
            addr_format: f::FI_ADDR_STR as u32,
            tx: Some(TxAttr {
                caps: f::FI_MSG | f::FI_RMA,
                size: 1024,
                iov_limit: 4,
                ..Default::default()
            }),
            rx: Some(RxAttr {
                caps: f::FI_MSG,
                size: 1024,
                iov_limit: 4,
                ..Default::default()
            }),
            ep: Some(EpAttr {
                ep_type: f::fi_ep_type::FI_EP_RDM as u32,
                max_msg_size: 1 << 20,
                ..Default::default()
            }),
            domain: Some(DomainAttr {
                name: Some("oxshm".into()),
                threading: f::fi_threading::FI_THREAD_SAFE as u32,
                control_progress: 1,
                progress: 2,
                mr_iov_limit: 8,
                mr_key_size: 8,
                ..Default::default()
            }),
            fabric: Some(FabricAttr {
                name: Some("oxshm".into()),
                prov_name: Some("oxshm".into()),
                prov_version: 1,
                api_version: 0,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn caps_are_matched_and_narrowed() {
        let h = Info {
            caps: f::FI_MSG,
            ..Default::default()
        };
        let got = match_info(V, &offer(), 0, Some(&h)).unwrap();
        assert_eq!(got.caps, f::FI_MSG | f::FI_LOCAL_COMM);
        let h = Info {
            caps: f::FI_TAGGED,
            ..Default::default()
        };
        assert!(match_info(V, &offer(), 0, Some(&h)).is_err());
    }

    #[test]
    fn primary_caps_imply_their_modifiers() {
        let all = f::FI_MSG
            | f::FI_RMA
            | f::FI_RMA_EVENT
            | f::FI_LOCAL_COMM
            | MSG_MODIFIERS
            | RMA_MODIFIERS;
        // None of a group's modifiers named: all of them.
        assert_eq!(
            granted_caps(f::FI_MSG | f::FI_RMA | f::FI_RMA_EVENT, all),
            all
        );
        // Some named: only those (plus the secondary caps).
        assert_eq!(
            granted_caps(f::FI_RMA | f::FI_WRITE, all),
            f::FI_RMA | f::FI_WRITE | f::FI_RMA_EVENT | f::FI_LOCAL_COMM
        );
        assert_eq!(
            granted_caps(f::FI_MSG | f::FI_SEND, all),
            f::FI_MSG | f::FI_SEND | f::FI_RMA_EVENT | f::FI_LOCAL_COMM
        );
        assert_eq!(granted_caps(0, all), all);
    }

    #[test]
    fn tx_and_rx_carry_their_own_caps() {
        let caps =
            f::FI_MSG | f::FI_RMA | f::FI_LOCAL_COMM | f::FI_SOURCE | MSG_MODIFIERS | RMA_MODIFIERS;
        let mut o = offer();
        o.caps = caps;
        o.tx.as_mut().unwrap().caps = caps & TX_CAPS;
        o.rx.as_mut().unwrap().caps = caps & RX_CAPS;
        let h = Info {
            caps: f::FI_RMA,
            tx: Some(TxAttr::default()),
            rx: Some(RxAttr::default()),
            ..Default::default()
        };
        // FI_SOURCE, a secondary cap with a cost, only when asked for.
        let got = match_info(V, &o, 0, Some(&h)).unwrap();
        assert_eq!(got.caps, f::FI_RMA | RMA_MODIFIERS | f::FI_LOCAL_COMM);
        assert_eq!(got.tx.unwrap().caps, f::FI_RMA | f::FI_READ | f::FI_WRITE);
        assert_eq!(
            got.rx.unwrap().caps,
            f::FI_RMA | f::FI_REMOTE_READ | f::FI_REMOTE_WRITE
        );
        let h = Info {
            caps: f::FI_RMA | f::FI_SOURCE,
            ..h
        };
        let got = match_info(V, &o, 0, Some(&h)).unwrap();
        assert_eq!(
            got.caps,
            f::FI_RMA | RMA_MODIFIERS | f::FI_LOCAL_COMM | f::FI_SOURCE
        );
        assert_eq!(
            got.rx.unwrap().caps,
            f::FI_RMA | f::FI_REMOTE_READ | f::FI_REMOTE_WRITE | f::FI_SOURCE
        );
        // No hints: the offer's split as it is.
        let got = match_info(V, &o, 0, None).unwrap();
        assert_eq!(got.tx.unwrap().caps & (f::FI_RECV | f::FI_LOCAL_COMM), 0);
    }

    #[test]
    fn ep_type_names_and_threading() {
        let mut h = Info {
            ep: Some(EpAttr {
                ep_type: f::fi_ep_type::FI_EP_MSG as u32,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(match_info(V, &offer(), 0, Some(&h)).is_err());
        h.ep.as_mut().unwrap().ep_type = f::fi_ep_type::FI_EP_RDM as u32;
        assert!(match_info(V, &offer(), 0, Some(&h)).is_ok());
        let h = Info {
            domain: Some(DomainAttr {
                name: Some("other".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(match_info(V, &offer(), 0, Some(&h)).is_err());
        let h = Info {
            domain: Some(DomainAttr {
                threading: f::fi_threading::FI_THREAD_DOMAIN as u32,
                ..Default::default()
            }),
            ..Default::default()
        };
        let got = match_info(V, &offer(), 0, Some(&h)).unwrap();
        assert_eq!(
            got.domain.unwrap().threading,
            f::fi_threading::FI_THREAD_DOMAIN as u32
        );
    }

    #[test]
    fn limits_and_versions() {
        let h = Info {
            tx: Some(TxAttr {
                iov_limit: 64,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(match_info(V, &offer(), 0, Some(&h)).is_err());
        assert!(check_api_version(version(1, 0)).is_ok());
        assert!(check_api_version(API_VERSION).is_ok());
        assert_eq!(check_api_version(version(2, 8)), Err(Error::NOSYS));
        assert_eq!(check_api_version(version(3, 0)), Err(Error::NOSYS));
        let got = match_info(version(1, 9), &offer(), 0, None).unwrap();
        assert_eq!(got.domain.unwrap().mr_mode, 0);
    }
}
