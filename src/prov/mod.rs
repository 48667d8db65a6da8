//! Providers built into the library, and the provider-independent part of
//! `fi_getinfo`: provider selection (`FI_PROVIDER`, `prov_name` hints) and
//! hints matching.

pub mod info;
pub mod oxshm;

use crate::error::{Error, Result};
use crate::log::Filter;
use info::Info;

/// What the core needs to know of a provider.
pub struct Provider {
    pub name: &'static str,
    /// `FI_VERSION`-style provider version.
    pub version: u32,
    /// Every fi_info the provider offers at an API version, before hints.
    pub offers: fn(api_version: u32) -> Vec<Info>,
    /// mr_mode bits the provider's domains need (never cleared by hints).
    pub mr_required: fn() -> i32,
    /// mr_mode bits the provider keeps when the application supports them
    /// (it can run without them, but runs better with them).
    pub mr_preferred: fn() -> i32,
    /// Final touches to a matched offer (attributes that depend on what was
    /// negotiated).
    pub adjust: fn(&mut Info),
    /// The address text for fi_getinfo's node and service (at least one
    /// given), or why they name nothing this provider can reach.
    pub node_service: fn(Option<&str>, Option<&str>) -> std::result::Result<String, String>,
    /// The source address reported when the caller gives none.
    pub default_src: fn() -> String,
}

/// The providers, in the order fi_getinfo reports them.
pub fn providers() -> &'static [&'static Provider] {
    static ALL: [&Provider; 1] = [&oxshm::PROVIDER];
    &ALL
}

/// Looks a provider up by name (case-insensitive).
pub fn find(name: &str) -> Option<&'static Provider> {
    providers()
        .iter()
        .copied()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Where a caller's addresses come from: fi_getinfo's node/service/flags.
#[derive(Debug, Default, Clone)]
pub struct AddrRequest {
    pub node: Option<String>,
    pub service: Option<String>,
    pub source: bool,
}

/// fi_getinfo without the C: the offers of every selected provider that
/// satisfy `hints`, adjusted to them. `Err(NODATA)` when none does.
pub fn getinfo(
    api_version: u32,
    addr: &AddrRequest,
    hints: Option<&Info>,
    env_filter: &Filter,
) -> Result<Vec<Info>> {
    info::check_api_version(api_version)?;
    let want_prov = hints
        .and_then(|h| h.fabric.as_ref())
        .and_then(|f| f.prov_name.as_deref());
    let mut out = Vec::new();
    for prov in providers() {
        if !env_filter.allows(prov.name) {
            crate::ox_log!(Info, Core, "core", "{} excluded by FI_PROVIDER", prov.name);
            continue;
        }
        if let Some(want) = want_prov {
            if !want.split(';').any(|w| w.eq_ignore_ascii_case(prov.name)) {
                continue;
            }
        }
        let named = if addr.node.is_some() || addr.service.is_some() {
            match (prov.node_service)(addr.node.as_deref(), addr.service.as_deref()) {
                Ok(text) => Some(text),
                Err(why) => {
                    crate::ox_log!(Info, Core, prov.name, "node/service: {why}");
                    continue;
                }
            }
        } else {
            None
        };
        let required = (prov.mr_required)();
        for offer in (prov.offers)(api_version) {
            match info::match_info(api_version, &offer, required, hints) {
                Ok(mut got) => {
                    keep_preferred(&mut got, hints, api_version, (prov.mr_preferred)());
                    (prov.adjust)(&mut got);
                    apply_addr(&mut got, named.as_deref(), addr.source, prov.default_src);
                    out.push(got);
                }
                Err(why) => {
                    crate::ox_log!(
                        Info,
                        Core,
                        prov.name,
                        "offer does not match hints: {}",
                        why.0
                    );
                }
            }
        }
    }
    if out.is_empty() {
        crate::ox_log!(Info, Core, "core", "no provider matches the request");
        return Err(Error::NODATA);
    }
    Ok(out)
}

/// Adds the preferred mr_mode bits that the caller's hints say it supports
/// (modern mr_mode only: not with FI_MR_BASIC/FI_MR_SCALABLE or before 1.5).
fn keep_preferred(got: &mut Info, hints: Option<&Info>, api_version: u32, preferred: i32) {
    use crate::abi::fabric as f;
    let Some(supported) = hints.and_then(|h| h.domain.as_ref()).map(|d| d.mr_mode) else {
        return;
    };
    let Some(d) = got.domain.as_mut() else { return };
    let legacy = api_version < info::version(1, 5)
        || d.mr_mode == f::FI_MR_BASIC
        || d.mr_mode == f::FI_MR_SCALABLE;
    if !legacy {
        d.mr_mode |= preferred & supported;
    }
}

/// Sets the addresses fi_getinfo(3) reports: `named` (from node and
/// service) is the source with FI_SOURCE and the destination without; the
/// source is always filled in, with the provider's default when neither
/// `named` nor the hints give one.
fn apply_addr(info: &mut Info, named: Option<&str>, source: bool, default_src: fn() -> String) {
    let c_text = |t: &str| {
        let mut b = t.as_bytes().to_vec();
        b.push(0);
        b
    };
    if let Some(t) = named {
        if source {
            info.src_addr = Some(c_text(t));
        } else {
            info.dest_addr = Some(c_text(t));
        }
    }
    if info.src_addr.is_none() {
        info.src_addr = Some(c_text(&default_src()));
    }
}
