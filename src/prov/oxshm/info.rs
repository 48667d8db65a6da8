//! What oxshm offers through fi_getinfo: only capabilities that work, with
//! the limits the data path (`xfer.rs`, `ops.rs`) enforces.

use crate::abi::fabric as f;
use crate::prov::info::{self as pinfo, DomainAttr, EpAttr, FabricAttr, Info, RxAttr, TxAttr};

/// Largest number of iovs one registration may carry.
pub const MR_IOV_LIMIT: usize = crate::mr::MAX_IOVS;
/// Registrations per domain.
pub const MR_CNT: usize = 1 << 20;
/// Bytes of an MR key.
pub const MR_KEY_SIZE: usize = 8;

/// Capabilities of an oxshm endpoint at this build.
pub const CAPS: u64 = f::FI_LOCAL_COMM
    | f::FI_HMEM
    | f::FI_MSG
    | f::FI_TAGGED
    | f::FI_RMA
    | f::FI_ATOMIC
    | f::FI_RMA_EVENT
    | f::FI_SEND
    | f::FI_RECV
    | f::FI_READ
    | f::FI_WRITE
    | f::FI_REMOTE_READ
    | f::FI_REMOTE_WRITE
    | f::FI_DIRECTED_RECV
    | f::FI_MULTI_RECV
    | f::FI_SOURCE;

/// Orderings oxshm guarantees between operations of one initiator
/// endpoint to one target endpoint (fi_endpoint(3), msg_order):
/// - FI_ORDER_SAS: sends enter the target's inbox ring in the order they
///   were posted, and the target matches them in ring order, whatever path
///   their payload then takes;
/// - atomic RAR/RAW/WAR/WAW: every atomic travels in its ring cell and the
///   target executes them one after the other, in ring order, under its
///   atomics lock, before it reads the next request. Up to
///   [`MAX_ORDER_SIZE`] bytes, the largest atomic operation.
///
/// Not RMA orderings: a large RMA transfer may be copied by the initiator
/// (a grant) while the target executes the next one, so their bytes may
/// land in either order.
pub const MSG_ORDER: u64 = f::FI_ORDER_SAS
    | f::FI_ORDER_ATOMIC_RAR
    | f::FI_ORDER_ATOMIC_RAW
    | f::FI_ORDER_ATOMIC_WAR
    | f::FI_ORDER_ATOMIC_WAW;

/// Bytes up to which the orderings of [`MSG_ORDER`] hold for atomics
/// (`max_order_raw_size` and its siblings): the largest atomic operation.
pub const MAX_ORDER_SIZE: usize = super::xfer::ATOMIC_MAX;

/// mr_mode bits an oxshm domain imposes: `FI_OXSHM_MR_MODE`, a number or a
/// list of bit names (`FI_MR_LOCAL|FI_MR_PROV_KEY` or comma-separated), so
/// applications can be tested against each registration mode on one host.
pub fn mr_required() -> i32 {
    std::env::var("FI_OXSHM_MR_MODE")
        .ok()
        .map(|v| parse_mr_mode(&v))
        .unwrap_or(0)
}

/// mr_mode bits oxshm keeps when the application supports them, unless
/// `FI_OXSHM_MR_MODE` fixes the requirements: FI_MR_PROV_KEY, because
/// provider keys are unpredictable, carry a generation and need no key
/// index. (Not FI_MR_ALLOCATED: under it every registration checks that its
/// pages are mapped, a system call that costs twenty times the rest of a
/// registration.)
pub fn mr_preferred() -> i32 {
    if std::env::var_os("FI_OXSHM_MR_MODE").is_some() {
        0
    } else {
        f::FI_MR_PROV_KEY
    }
}

/// Parses an mr_mode list; unknown names are ignored with a warning.
pub fn parse_mr_mode(text: &str) -> i32 {
    const NAMES: &[(&str, i32)] = &[
        ("FI_MR_LOCAL", f::FI_MR_LOCAL),
        ("FI_MR_RAW", f::FI_MR_RAW),
        ("FI_MR_VIRT_ADDR", f::FI_MR_VIRT_ADDR),
        ("FI_MR_ALLOCATED", f::FI_MR_ALLOCATED),
        ("FI_MR_PROV_KEY", f::FI_MR_PROV_KEY),
        ("FI_MR_MMU_NOTIFY", f::FI_MR_MMU_NOTIFY),
        ("FI_MR_RMA_EVENT", f::FI_MR_RMA_EVENT),
        ("FI_MR_ENDPOINT", f::FI_MR_ENDPOINT),
        ("FI_MR_HMEM", f::FI_MR_HMEM),
        ("FI_MR_COLLECTIVE", f::FI_MR_COLLECTIVE),
        ("FI_MR_XPU_DESC", f::FI_MR_XPU_DESC),
    ];
    let text = text.trim();
    if let Some(hex) = text.strip_prefix("0x") {
        return i32::from_str_radix(hex, 16).unwrap_or(0) & !(f::FI_MR_BASIC | f::FI_MR_SCALABLE);
    }
    if let Ok(n) = text.parse::<i32>() {
        return n & !(f::FI_MR_BASIC | f::FI_MR_SCALABLE);
    }
    let mut bits = 0;
    for name in text.split(['|', ',', ' ']).filter(|s| !s.is_empty()) {
        let upper = name.to_ascii_uppercase();
        let full = if upper.starts_with("FI_MR_") {
            upper
        } else {
            format!("FI_MR_{upper}")
        };
        match NAMES.iter().find(|(n, _)| *n == full) {
            Some((_, b)) => bits |= b,
            None => crate::ox_log!(
                Warn,
                Core,
                super::NAME,
                "FI_OXSHM_MR_MODE: unknown bit {name}"
            ),
        }
    }
    bits
}

/// Settles what depends on the negotiated mr_mode: with FI_MR_RAW, keys are
/// raw keys and `mr_key_size` is their size.
pub fn adjust(info: &mut Info) {
    if let Some(d) = info.domain.as_mut() {
        if d.mr_mode & f::FI_MR_RAW != 0 {
            d.mr_key_size = crate::mr::RAW_KEY_SIZE;
        }
    }
}

/// oxshm's single offer: an RDM endpoint on the `oxshm` fabric and domain.
pub fn offers(api_version: u32) -> Vec<Info> {
    let _ = api_version;
    vec![Info {
        caps: CAPS,
        mode: 0,
        addr_format: f::FI_ADDR_STR as u32,
        src_addr: None,
        dest_addr: None,
        tx: Some(TxAttr {
            caps: CAPS & pinfo::TX_CAPS,
            mode: 0,
            op_flags: 0,
            msg_order: MSG_ORDER,
            comp_order: 0,
            inject_size: super::xfer::INJECT,
            size: 1024,
            iov_limit: super::xfer::IOV_MAX,
            rma_iov_limit: 1,
            tclass: 0,
        }),
        rx: Some(RxAttr {
            caps: CAPS & pinfo::RX_CAPS,
            mode: 0,
            op_flags: 0,
            msg_order: MSG_ORDER,
            comp_order: 0,
            total_buffered_recv: 0,
            size: 1024,
            iov_limit: super::xfer::IOV_MAX,
        }),
        ep: Some(EpAttr {
            ep_type: f::fi_ep_type::FI_EP_RDM as u32,
            protocol: f::FI_PROTO_SHM as u32,
            protocol_version: 1,
            max_msg_size: 1 << 30,
            msg_prefix_size: 0,
            max_order_raw_size: MAX_ORDER_SIZE,
            max_order_war_size: MAX_ORDER_SIZE,
            max_order_waw_size: MAX_ORDER_SIZE,
            mem_tag_format: 0,
            tx_ctx_cnt: 1,
            rx_ctx_cnt: 1,
            auth_key: None,
        }),
        domain: Some(DomainAttr {
            name: Some(super::NAME.to_string()),
            threading: f::fi_threading::FI_THREAD_SAFE as u32,
            control_progress: f::fi_progress::FI_PROGRESS_AUTO as u32,
            progress: f::fi_progress::FI_PROGRESS_AUTO as u32,
            resource_mgmt: f::fi_resource_mgmt::FI_RM_ENABLED as u32,
            av_type: f::fi_av_type::FI_AV_UNSPEC as u32,
            mr_mode: 0,
            mr_key_size: MR_KEY_SIZE,
            cq_data_size: 8,
            cq_cnt: 1024,
            ep_cnt: 256,
            tx_ctx_cnt: 1,
            rx_ctx_cnt: 1,
            max_ep_tx_ctx: 1,
            max_ep_rx_ctx: 1,
            max_ep_stx_ctx: 0,
            max_ep_srx_ctx: 0,
            cntr_cnt: 1024,
            mr_iov_limit: MR_IOV_LIMIT,
            caps: CAPS,
            mode: 0,
            auth_key: None,
            max_err_data: 0,
            mr_cnt: MR_CNT,
            tclass: 0,
            max_ep_auth_key: 0,
            max_group_id: 0,
            max_xpu_ctx_cnt: 0,
        }),
        fabric: Some(FabricAttr {
            name: Some(super::NAME.to_string()),
            prov_name: Some(super::NAME.to_string()),
            prov_version: super::VERSION,
            api_version,
        }),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mr_mode_variable_forms() {
        assert_eq!(
            parse_mr_mode("FI_MR_LOCAL|FI_MR_PROV_KEY"),
            f::FI_MR_LOCAL | f::FI_MR_PROV_KEY
        );
        assert_eq!(
            parse_mr_mode("local,virt_addr"),
            f::FI_MR_LOCAL | f::FI_MR_VIRT_ADDR
        );
        assert_eq!(parse_mr_mode("0x44"), f::FI_MR_LOCAL | f::FI_MR_PROV_KEY);
        assert_eq!(parse_mr_mode("68"), f::FI_MR_LOCAL | f::FI_MR_PROV_KEY);
        assert_eq!(parse_mr_mode("3"), 0);
        assert_eq!(parse_mr_mode("bogus"), 0);
    }
}
