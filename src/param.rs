//! Run-time parameters (`fi_param_define`, `fi_param_get`, `fi_getparams`):
//! each is an environment variable `FI_<NAME>` (core) or `FI_<PROV>_<NAME>`
//! (provider), with a type and a help text that `fi_info -e` prints.

use crate::error::{Error, Result};
use once_cell::sync::Lazy;
use std::sync::Mutex;

/// `enum fi_param_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    String = 0,
    Int = 1,
    Bool = 2,
    SizeT = 3,
}

impl ParamType {
    pub fn from_raw(v: u32) -> Option<ParamType> {
        match v {
            0 => Some(ParamType::String),
            1 => Some(ParamType::Int),
            2 => Some(ParamType::Bool),
            3 => Some(ParamType::SizeT),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Provider name, or None for the core.
    pub prov: Option<String>,
    /// Name as defined (`log_level`).
    pub name: String,
    pub ty: ParamType,
    pub help: String,
}

impl Param {
    /// The environment variable that holds the value.
    pub fn env_name(&self) -> String {
        env_name(self.prov.as_deref(), &self.name)
    }
}

/// `FI_[<PROV>_]<NAME>`, upper case, with '-' turned into '_'.
pub fn env_name(prov: Option<&str>, name: &str) -> String {
    let mut s = String::from("FI_");
    if let Some(p) = prov.filter(|p| !p.eq_ignore_ascii_case("core")) {
        s.push_str(p);
        s.push('_');
    }
    s.push_str(name);
    s.to_ascii_uppercase().replace('-', "_")
}

/// A parsed parameter value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    String(String),
    Int(i32),
    Bool(bool),
    SizeT(usize),
}

/// Parses a value as `ty`; None when it does not parse.
pub fn parse(ty: ParamType, text: &str) -> Option<Value> {
    let t = text.trim();
    match ty {
        ParamType::String => Some(Value::String(text.to_string())),
        ParamType::Int => t.parse().ok().map(Value::Int),
        ParamType::SizeT => t.parse().ok().map(Value::SizeT),
        ParamType::Bool => match t.to_ascii_lowercase().as_str() {
            "1" | "yes" | "on" | "true" | "y" => Some(Value::Bool(true)),
            "0" | "no" | "off" | "false" | "n" => Some(Value::Bool(false)),
            _ => None,
        },
    }
}

static REGISTRY: Lazy<Mutex<Vec<Param>>> = Lazy::new(|| Mutex::new(builtin()));

/// The parameters the library itself reads.
fn builtin() -> Vec<Param> {
    let core = |name: &str, ty, help: &str| Param {
        prov: None,
        name: name.into(),
        ty,
        help: help.into(),
    };
    let ox = |name: &str, ty, help: &str| Param {
        prov: Some("oxshm".into()),
        name: name.into(),
        ty,
        help: help.into(),
    };
    vec![
        core("provider", ParamType::String, "Only use the listed providers (comma-separated; a leading ^ excludes them instead)"),
        core("log_level", ParamType::String, "Most verbose level logged: warn, trace, info or debug (default: nothing)"),
        core("log_prov", ParamType::String, "Only log the listed providers (comma-separated; ^ excludes)"),
        core("log_subsys", ParamType::String, "Only log the listed subsystems: core, fabric, domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr (^ excludes)"),
        core("mr_cache_max_size", ParamType::SizeT, "Most bytes of unused pinnings the MR cache keeps (default: unlimited)"),
        core("mr_cache_max_count", ParamType::SizeT, "Most unused pinnings the MR cache keeps (default 1024); 0 disables the cache"),
        core("mr_cache_monitor", ParamType::String, "How the MR cache learns of unmapped memory: userfaultfd (default), memhooks, kdreg2 or disabled"),
        core("mr_cuda_cache_monitor_enabled", ParamType::Bool, "Read for compatibility: oxshm caches system memory only, so CUDA memory is registered without pinning or caching whatever its value"),
        core("mr_rocr_cache_monitor_enabled", ParamType::Bool, "Read for compatibility: oxshm caches system memory only, so ROCR memory is registered without pinning or caching whatever its value"),
        core("mr_ze_cache_monitor_enabled", ParamType::Bool, "Read for compatibility: oxshm caches system memory only, so Level Zero memory is registered without pinning or caching whatever its value"),
        core("hmem_disable_p2p", ParamType::Bool, "Do not use peer-to-peer transfers for device memory"),
        ox("mr_mode", ParamType::String, "mr_mode bits oxshm domains require, as a number or a list of names (FI_MR_LOCAL|FI_MR_PROV_KEY)"),
        ox("pin", ParamType::String, "Pinned registration mode: 1 locks each registration's pages (mlock, within RLIMIT_MEMLOCK) and records their page frames, through the registration cache; check also refuses remote accesses whose pages no longer have the recorded frames; 0 (default) registers without pinning"),
        ox("stats", ParamType::Bool, "Log each domain's registration statistics when it closes"),
        ox("name_wait", ParamType::SizeT, "Milliseconds fi_av_insert waits for a service (fi_oxshm://node:service) to be published by its endpoint (default 5000)"),
        ox("ptracer", ParamType::Bool, "With kernel.yama.ptrace_scope 1, let peers of this user copy to and from the process (PR_SET_PTRACER_ANY; default 1)"),
    ]
}

/// Defines a parameter; redefining the same (provider, name) is -FI_EALREADY.
pub fn define(p: Param) -> Result<()> {
    if p.name.is_empty()
        || !p
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        crate::core_warn!(
            Core,
            "fi_param_define: invalid parameter name \"{}\"",
            p.name
        );
        return Err(Error::INVAL);
    }
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if reg.iter().any(|q| q.env_name() == p.env_name()) {
        crate::ox_log!(
            Info,
            Core,
            "core",
            "parameter {} already defined",
            p.env_name()
        );
        return Err(Error::ALREADY);
    }
    reg.push(p);
    Ok(())
}

/// Looks a defined parameter up and reads its environment variable.
/// -FI_ENOENT if it was never defined, -FI_ENODATA if it is not set,
/// -FI_EINVAL if its value does not parse as its type.
pub fn get(prov: Option<&str>, name: &str) -> Result<(Param, Value)> {
    let env = env_name(prov, name);
    let p = {
        let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.iter().find(|q| q.env_name() == env).cloned()
    };
    let Some(p) = p else {
        crate::ox_log!(Info, Core, "core", "parameter {env} was not defined");
        return Err(Error::NOENT);
    };
    let Ok(text) = std::env::var(&env) else {
        return Err(Error::NODATA);
    };
    match parse(p.ty, &text) {
        Some(v) => Ok((p, v)),
        None => {
            crate::core_warn!(Core, "{env}=\"{text}\" is not a valid {:?}", p.ty);
            Err(Error::INVAL)
        }
    }
}

/// Every defined parameter with its current value (if set).
pub fn all() -> Vec<(Param, Option<String>)> {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.iter()
        .map(|p| (p.clone(), std::env::var(p.env_name()).ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        assert_eq!(env_name(None, "log_level"), "FI_LOG_LEVEL");
        assert_eq!(env_name(Some("oxshm"), "mr_mode"), "FI_OXSHM_MR_MODE");
        assert_eq!(env_name(Some("core"), "x-y"), "FI_X_Y");
    }

    #[test]
    fn parsing_by_type() {
        assert_eq!(parse(ParamType::Bool, " Yes"), Some(Value::Bool(true)));
        assert_eq!(parse(ParamType::Bool, "off"), Some(Value::Bool(false)));
        assert_eq!(parse(ParamType::Bool, "maybe"), None);
        assert_eq!(parse(ParamType::Int, "-3"), Some(Value::Int(-3)));
        assert_eq!(parse(ParamType::Int, "x"), None);
        assert_eq!(parse(ParamType::SizeT, "4096"), Some(Value::SizeT(4096)));
        assert_eq!(parse(ParamType::SizeT, "-1"), None);
        assert_eq!(
            parse(ParamType::String, " a b"),
            Some(Value::String(" a b".into()))
        );
    }

    #[test]
    fn define_get_and_errors() {
        let p = Param {
            prov: Some("unit".into()),
            name: "knob".into(),
            ty: ParamType::Int,
            help: "h".into(),
        };
        define(p.clone()).unwrap();
        assert_eq!(define(p), Err(Error::ALREADY));
        assert_eq!(get(Some("unit"), "nope").unwrap_err(), Error::NOENT);
        std::env::remove_var("FI_UNIT_KNOB");
        assert_eq!(get(Some("unit"), "knob").unwrap_err(), Error::NODATA);
        std::env::set_var("FI_UNIT_KNOB", "12");
        assert_eq!(get(Some("unit"), "knob").unwrap().1, Value::Int(12));
        std::env::set_var("FI_UNIT_KNOB", "twelve");
        assert_eq!(get(Some("unit"), "knob").unwrap_err(), Error::INVAL);
        std::env::remove_var("FI_UNIT_KNOB");
        let bad = Param {
            prov: None,
            name: "bad name".into(),
            ty: ParamType::Int,
            help: String::new(),
        };
        assert_eq!(define(bad), Err(Error::INVAL));
        assert!(all().iter().any(|(p, _)| p.env_name() == "FI_LOG_LEVEL"));
    }
}
