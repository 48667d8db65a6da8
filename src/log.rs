//! libfabric-shaped logging: `FI_LOG_LEVEL`, `FI_LOG_PROV` and `FI_LOG_SUBSYS`
//! select what is written to stderr, one line per call:
//! `libfabric:<pid>:<time>:<prov>:<subsys>:<func>():<line><level> <msg>`.

use once_cell::sync::Lazy;
use std::fmt;
use std::io::Write;

/// `enum fi_log_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Warn = 0,
    Trace = 1,
    Info = 2,
    Debug = 3,
}

impl Level {
    pub const NAMES: [&'static str; 4] = ["warn", "trace", "info", "debug"];

    pub fn from_raw(v: u32) -> Option<Level> {
        [Level::Warn, Level::Trace, Level::Info, Level::Debug]
            .get(v as usize)
            .copied()
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// `enum fi_log_subsys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsys {
    Core = 0,
    Fabric,
    Domain,
    EpCtrl,
    EpData,
    Av,
    Cq,
    Eq,
    Mr,
    Cntr,
}

impl Subsys {
    pub const NAMES: [&'static str; 10] = [
        "core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr",
    ];
    const ALL: [Subsys; 10] = [
        Subsys::Core,
        Subsys::Fabric,
        Subsys::Domain,
        Subsys::EpCtrl,
        Subsys::EpData,
        Subsys::Av,
        Subsys::Cq,
        Subsys::Eq,
        Subsys::Mr,
        Subsys::Cntr,
    ];

    pub fn from_raw(v: u32) -> Option<Subsys> {
        Self::ALL.get(v as usize).copied()
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// A comma-separated name list; a leading `^` turns it into an exclusion list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    names: Vec<String>,
    negated: bool,
}

impl Filter {
    pub fn parse(spec: Option<&str>) -> Filter {
        let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
            return Filter::default();
        };
        let (negated, list) = match spec.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        Filter {
            names: list
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
            negated,
        }
    }

    /// Whether `name` passes: an empty filter passes everything.
    pub fn allows(&self, name: &str) -> bool {
        if self.names.is_empty() {
            return true;
        }
        let listed = self.names.iter().any(|n| n.eq_ignore_ascii_case(name));
        listed != self.negated
    }
}

struct Config {
    level: Option<Level>,
    prov: Filter,
    subsys: Filter,
}

static CONFIG: Lazy<Config> = Lazy::new(|| {
    let level = std::env::var("FI_LOG_LEVEL").ok().and_then(|v| {
        let v = v.trim().to_ascii_lowercase();
        match v.as_str() {
            "warn" => Some(Level::Warn),
            "trace" => Some(Level::Trace),
            "info" => Some(Level::Info),
            "debug" | "all" => Some(Level::Debug),
            _ => None,
        }
    });
    Config {
        level,
        prov: Filter::parse(std::env::var("FI_LOG_PROV").ok().as_deref()),
        subsys: Filter::parse(std::env::var("FI_LOG_SUBSYS").ok().as_deref()),
    }
});

/// Whether a message at this level, from this provider and subsystem, is written.
pub fn enabled(prov: &str, level: Level, subsys: Subsys) -> bool {
    let cfg = &*CONFIG;
    match cfg.level {
        Some(max) if level <= max => cfg.prov.allows(prov) && cfg.subsys.allows(subsys.name()),
        _ => false,
    }
}

/// Writes one log line if it passes the filters.
pub fn emit(prov: &str, level: Level, subsys: Subsys, func: &str, line: u32, msg: fmt::Arguments) {
    if !enabled(prov, level, subsys) {
        return;
    }
    write_line(prov, level, subsys.name(), func, line, &msg.to_string());
}

/// Writes one already-filtered line to stderr in libfabric's shape.
pub fn write_line(prov: &str, level: Level, subsys: &str, func: &str, line: u32, msg: &str) {
    // SAFETY: time(NULL) and getpid() have no preconditions.
    let (now, pid) = unsafe { (libc::time(std::ptr::null_mut()), libc::getpid()) };
    let mut text = format!(
        "libfabric:{pid}:{now}:{prov}:{subsys}:{func}():{line}<{}> {msg}",
        level.name()
    );
    if !text.ends_with('\n') {
        text.push('\n');
    }
    // One write per line keeps lines from concurrent threads whole.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The name of the enclosing function, for log lines.
#[macro_export]
#[doc(hidden)]
macro_rules! __function {
    () => {{
        fn f() {}
        let name = std::any::type_name_of_val(&f);
        name.rsplit("::")
            .find(|s| *s != "f" && *s != "{{closure}}")
            .unwrap_or(name)
    }};
}

/// `ox_log!(Warn, Mr, "prov", "text {}", x)` writes a libfabric-shaped line.
#[macro_export]
macro_rules! ox_log {
    ($level:ident, $subsys:ident, $prov:expr, $($arg:tt)+) => {
        $crate::log::cold(|| {
            $crate::log::emit(
                $prov,
                $crate::log::Level::$level,
                $crate::log::Subsys::$subsys,
                $crate::__function!(),
                line!(),
                format_args!($($arg)+),
            )
        })
    };
}

/// Runs `f` out of line, as the unlikely path: a log line's formatting
/// and the look-up of its function name stay out of the caller's code,
/// so that the checks on the data and registration paths, whose failure
/// branches log, stay small enough to inline.
#[cold]
#[inline(never)]
pub fn cold<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Warning from the core (provider name "core").
#[macro_export]
macro_rules! core_warn {
    ($subsys:ident, $($arg:tt)+) => { $crate::ox_log!(Warn, $subsys, "core", $($arg)+) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_include_and_exclude() {
        let f = Filter::parse(Some("oxshm,tcp"));
        assert!(f.allows("oxshm") && f.allows("TCP") && !f.allows("core"));
        let f = Filter::parse(Some("^oxshm"));
        assert!(!f.allows("oxshm") && f.allows("core"));
        assert!(Filter::parse(None).allows("anything"));
        assert!(Filter::parse(Some("  ")).allows("anything"));
    }

    #[test]
    fn level_and_subsys_names_are_upstreams() {
        assert_eq!(Level::from_raw(2), Some(Level::Info));
        assert_eq!(Level::from_raw(4), None);
        assert_eq!(Subsys::from_raw(8).map(Subsys::name), Some("mr"));
        assert_eq!(Subsys::from_raw(10), None);
    }
}
