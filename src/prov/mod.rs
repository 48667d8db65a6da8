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
        let required = (prov.mr_required)();
        for offer in (prov.offers)(api_version) {
            match info::match_info(api_version, &offer, required, hints) {
                Ok(mut got) => {
                    keep_preferred(&mut got, hints, api_version, (prov.mr_preferred)());
                    (prov.adjust)(&mut got);
                    apply_addr(&mut got, addr);
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

fn apply_addr(info: &mut Info, addr: &AddrRequest) {
    if addr.node.is_none() && addr.service.is_none() {
        return;
    }
    let text = format!(
        "fi_oxshm://{}{}{}",
        addr.node.as_deref().unwrap_or(""),
        if addr.service.is_some() { ":" } else { "" },
        addr.service.as_deref().unwrap_or("")
    );
    let mut bytes = text.into_bytes();
    bytes.push(0);
    if addr.source {
        info.src_addr = Some(bytes);
    } else {
        info.dest_addr = Some(bytes);
    }
}
