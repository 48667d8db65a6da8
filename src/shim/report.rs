//! Findings and counters, the log line of each finding (once per call
//! site), and the JSON report written at exit to `OXSHIM_REPORT`.

use super::{site, state};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// A kind of misuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// fi_close of an MR already closed.
    DoubleClose,
    /// fi_mr_bind, fi_mr_refresh, fi_mr_enable or fi_control on a closed MR.
    ClosedMrUse,
    /// fi_close of a domain that still has open MRs.
    DomainCloseLive,
    /// An MR still open at exit.
    Leak,
    /// A data-path desc whose registration does not cover the buffer.
    DescRange,
    /// A data-path desc whose registration lacks the access the
    /// operation needs on the local buffer (FI_SEND, FI_RECV, FI_READ,
    /// FI_WRITE).
    DescAccess,
    /// A data-path desc registered on another domain than the endpoint's.
    DescForeignDomain,
    /// A data-path desc of a closed registration.
    DescClosedMr,
    /// No desc on a transfer that needs one (FI_MR_LOCAL).
    DescMissing,
    /// Pages under an open MR unmapped, remapped or dropped.
    UnmappedLiveMr,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::DoubleClose => "double_close",
            Kind::ClosedMrUse => "closed_mr_use",
            Kind::DomainCloseLive => "domain_close_live_mrs",
            Kind::Leak => "leaked_mr",
            Kind::DescRange => "desc_out_of_range",
            Kind::DescAccess => "desc_wrong_access",
            Kind::DescForeignDomain => "desc_foreign_domain",
            Kind::DescClosedMr => "desc_closed_mr",
            Kind::DescMissing => "desc_missing",
            Kind::UnmappedLiveMr => "live_mr_unmapped",
        }
    }
}

/// The registration a finding is about.
#[derive(Clone, Copy, Debug)]
pub struct MrInfo {
    pub addr: usize,
    pub len: usize,
    pub access: u64,
    pub key: u64,
    pub reg_site: usize,
}

impl MrInfo {
    pub fn describe(&self) -> String {
        format!(
            "MR addr={:#x} len={} access={:#x} key={:#x} registered at {}",
            self.addr,
            self.len,
            self.access,
            self.key,
            site(self.reg_site)
        )
    }
}

pub struct Finding {
    pub kind: Kind,
    pub at: usize,
    pub count: u64,
    pub domain: usize,
    pub mr: Option<MrInfo>,
    pub what: String,
}

/// Latency histogram: 8 buckets per power of two, exact below 8 ns.
pub struct Hist {
    buckets: Vec<u64>,
    n: u64,
}

impl Default for Hist {
    fn default() -> Hist {
        Hist {
            buckets: vec![0; 512],
            n: 0,
        }
    }
}

impl Hist {
    fn index(ns: u64) -> usize {
        if ns < 8 {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros() as u64;
        ((e - 2) * 8 + ((ns >> (e - 3)) & 7)) as usize
    }

    fn value(i: usize) -> u64 {
        if i < 8 {
            return i as u64;
        }
        let (e, sub) = (i as u64 / 8 + 2, i as u64 % 8);
        (8 + sub) << (e - 3)
    }

    pub fn add(&mut self, ns: u64) {
        self.buckets[Hist::index(ns)] += 1;
        self.n += 1;
    }

    /// Quantile `q` in nanoseconds, from clock ticks ([`super::ns_per_tick`]).
    pub fn quantile_ns(&self, q: f64, ns_per_tick: f64) -> u64 {
        (self.quantile(q) as f64 * ns_per_tick).round() as u64
    }

    /// The lower bound of the bucket holding quantile `q` (0 when empty).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let want = ((self.n as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Hist::value(i);
            }
        }
        0
    }
}

/// Counters of one domain.
pub struct DomainStats {
    pub provider: String,
    pub name: String,
    pub internal: bool,
    pub mr_mode: i32,
    pub closed: bool,
    pub regs: u64,
    pub closes: u64,
    pub refusals: u64,
    pub bytes: u64,
    /// Open wrappers; each knows its index here ([`super::mr::ShimMr`]'s
    /// `slot`), so that a close removes it in O(1) without hashing.
    pub live: Vec<usize>,
    pub live_bytes: u64,
    pub peak_live: u64,
    pub peak_bytes: u64,
    pub reg_ns: Hist,
    pub close_ns: Hist,
    pub findings: BTreeMap<Kind, u64>,
    /// Why the data-path checks are off on this domain (None: on).
    pub datapath_off: Option<String>,
    /// Endpoints of the application hooked on it.
    pub endpoints: u64,
}

impl DomainStats {
    pub fn new(provider: String, name: String, internal: bool, mr_mode: i32) -> DomainStats {
        DomainStats {
            provider,
            name,
            internal,
            mr_mode,
            closed: false,
            regs: 0,
            closes: 0,
            refusals: 0,
            bytes: 0,
            live: Vec::new(),
            live_bytes: 0,
            peak_live: 0,
            peak_bytes: 0,
            reg_ns: Hist::default(),
            close_ns: Hist::default(),
            findings: BTreeMap::new(),
            datapath_off: None,
            endpoints: 0,
        }
    }

    /// Counts a registration; returns its slot in `live`.
    pub fn registered(&mut self, mr: usize, len: u64, ticks: Option<u64>) -> usize {
        self.regs += 1;
        self.bytes += len;
        let slot = self.live.len();
        self.live.push(mr);
        self.live_bytes += len;
        self.peak_live = self.peak_live.max(self.live.len() as u64);
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
        if let Some(t) = ticks {
            self.reg_ns.add(t);
        }
        slot
    }

    /// Counts a close of the MR at `slot`; returns the MR moved into that
    /// slot, whose own slot the caller updates.
    pub fn closed_mr(&mut self, slot: usize, len: u64, ticks: Option<u64>) -> Option<usize> {
        self.closes += 1;
        if let Some(t) = ticks {
            self.close_ns.add(t);
        }
        if slot >= self.live.len() {
            return None;
        }
        self.live.swap_remove(slot);
        self.live_bytes -= len;
        self.live.get(slot).copied()
    }
}

#[derive(Default)]
pub struct Report {
    pub domains: Vec<DomainStats>,
    pub findings: Vec<Finding>,
    index: HashMap<(Kind, usize), usize>,
    /// In a child after fork(2): the parent's pid, and the wrappers that
    /// were open at the fork (the parent's registrations: not this
    /// process's leaks).
    pub forked_from: Option<u32>,
    pub inherited: std::collections::HashSet<usize>,
}

impl Report {
    /// In the child of a fork: what was counted belongs to the parent. The
    /// counters and findings start again from zero; the MRs open at the
    /// fork stay known (a use or close of one is still checked) but are
    /// not reported as this process's leaks.
    pub fn forked(&mut self, parent: u32) {
        self.forked_from = Some(parent);
        self.findings.clear();
        self.index.clear();
        for d in &mut self.domains {
            self.inherited.extend(d.live.iter().copied());
            let fresh = DomainStats::new(
                std::mem::take(&mut d.provider),
                std::mem::take(&mut d.name),
                d.internal,
                d.mr_mode,
            );
            let live = std::mem::take(&mut d.live);
            let (live_bytes, closed, datapath_off, endpoints) =
                (d.live_bytes, d.closed, d.datapath_off.take(), d.endpoints);
            *d = fresh;
            d.live = live;
            d.live_bytes = live_bytes;
            d.closed = closed;
            d.datapath_off = datapath_off;
            d.endpoints = endpoints;
        }
    }

    /// Records one occurrence; the first at a call site is logged.
    pub fn finding(
        &mut self,
        kind: Kind,
        at: usize,
        domain: usize,
        mr: Option<MrInfo>,
        what: String,
    ) {
        *self.domains[domain].findings.entry(kind).or_insert(0) += 1;
        if let Some(&i) = self.index.get(&(kind, at)) {
            self.findings[i].count += 1;
            return;
        }
        let mut line = format!("oxshim: {}: {what}", kind.name());
        if let Some(m) = &mr {
            let _ = write!(line, "; {}", m.describe());
        }
        let _ = write!(line, "; at {}", site(at));
        eprintln!("{line}");
        self.index.insert((kind, at), self.findings.len());
        self.findings.push(Finding {
            kind,
            at,
            count: 1,
            domain,
            mr,
            what,
        });
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_mr(m: &MrInfo) -> String {
    format!(
        "{{\"addr\": \"{:#x}\", \"len\": {}, \"access\": \"{:#x}\", \"key\": \"{:#x}\", \"registered_at\": {}}}",
        m.addr,
        m.len,
        m.access,
        m.key,
        json_str(&site(m.reg_site))
    )
}

/// The report as JSON: one entry per domain (provider, counters,
/// latencies, findings by kind, leaked MRs) and every finding with its
/// call site and count.
pub fn to_json(
    r: &Report,
    internal_regs: &[u64],
    unknown_descs: &[u64],
    leaks: &[Vec<MrInfo>],
    ns_per_tick: f64,
) -> String {
    let mut o = String::from("{\n  \"tool\": \"oxfabric-shim\",\n");
    let _ = writeln!(
        o,
        "  \"pid\": {},\n  \"forked_from\": {},",
        std::process::id(),
        r.forked_from.map_or("null".to_string(), |p| p.to_string())
    );
    let _ = writeln!(
        o,
        "  \"mode\": {},",
        json_str(&format!("{:?}", *super::MODE).to_lowercase())
    );
    o.push_str("  \"domains\": [");
    for (i, d) in r.domains.iter().enumerate() {
        o.push_str(if i == 0 { "\n" } else { ",\n" });
        let kinds: Vec<String> = d
            .findings
            .iter()
            .map(|(k, n)| format!("{}: {n}", json_str(k.name())))
            .collect();
        let leaked: Vec<String> = leaks
            .get(i)
            .map_or(vec![], |l| l.iter().take(100).map(json_mr).collect());
        let _ = write!(
            o,
            "    {{\"provider\": {}, \"domain\": {}, \"internal\": {}, \"mr_mode\": {}, \"closed\": {}, \
             \"registrations\": {}, \"internal_registrations\": {}, \"closes\": {}, \"refusals\": {}, \
             \"bytes_registered\": {}, \"peak_live_mrs\": {}, \"peak_live_bytes\": {}, \
             \"reg_ns\": {{\"median\": {}, \"p99\": {}}}, \"close_ns\": {{\"median\": {}, \"p99\": {}}}, \
             \"datapath_checks\": {}, \"datapath_off_reason\": {}, \"endpoints\": {}, \"unknown_descs\": {}, \
             \"findings\": {{{}}}, \"leaked\": [{}]}}",
            json_str(&d.provider),
            json_str(&d.name),
            d.internal,
            d.mr_mode,
            d.closed,
            d.regs,
            internal_regs.get(i).copied().unwrap_or(0),
            d.closes,
            d.refusals,
            d.bytes,
            d.peak_live,
            d.peak_bytes,
            d.reg_ns.quantile_ns(0.5, ns_per_tick),
            d.reg_ns.quantile_ns(0.99, ns_per_tick),
            d.close_ns.quantile_ns(0.5, ns_per_tick),
            d.close_ns.quantile_ns(0.99, ns_per_tick),
            d.datapath_off.is_none(),
            d.datapath_off.as_deref().map_or("null".into(), json_str),
            d.endpoints,
            unknown_descs.get(i).copied().unwrap_or(0),
            kinds.join(", "),
            leaked.join(", ")
        );
    }
    o.push_str("\n  ],\n  \"providers\": [");
    // Per provider: the application's domains summed, libfabric's own
    // registrations on every domain of that provider.
    let mut provs: BTreeMap<&str, (u64, u64, u64, u64, u64, u64)> = BTreeMap::new();
    for (i, d) in r.domains.iter().enumerate() {
        let e = provs.entry(d.provider.as_str()).or_default();
        e.0 += d.regs;
        e.1 += internal_regs.get(i).copied().unwrap_or(0);
        e.2 += d.closes;
        e.3 += d.refusals;
        e.4 += d.bytes;
        e.5 += d.findings.values().sum::<u64>();
    }
    for (i, (p, (regs, internal, closes, refusals, bytes, findings))) in provs.iter().enumerate() {
        o.push_str(if i == 0 { "\n" } else { ",\n" });
        let _ = write!(
            o,
            "    {{\"provider\": {}, \"registrations\": {regs}, \"internal_registrations\": {internal}, \
             \"closes\": {closes}, \"refusals\": {refusals}, \"bytes_registered\": {bytes}, \"findings\": {findings}}}",
            json_str(p)
        );
    }
    o.push_str("\n  ],\n  \"findings\": [");
    for (i, f) in r.findings.iter().enumerate() {
        o.push_str(if i == 0 { "\n" } else { ",\n" });
        let d = &r.domains[f.domain];
        let _ = write!(
            o,
            "    {{\"kind\": {}, \"count\": {}, \"at\": {}, \"provider\": {}, \"domain\": {}, \"what\": {}, \"mr\": {}}}",
            json_str(f.kind.name()),
            f.count,
            json_str(&site(f.at)),
            json_str(&d.provider),
            json_str(&d.name),
            json_str(&f.what),
            f.mr.as_ref().map_or("null".into(), json_mr)
        );
    }
    o.push_str("\n  ]\n}\n");
    o
}

/// atexit handler: MRs still open are leaks; the report is written.
pub extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let mut st = state();
        let internal_regs: Vec<u64> = st.domains.iter().map(|h| h.internal_regs.sum()).collect();
        let unknown_descs: Vec<u64> = st
            .domains
            .iter()
            .map(|h| h.unknown_descs.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        let mut leaks = Vec::new();
        for i in 0..st.report.domains.len() {
            let live: Vec<usize> = st.report.domains[i]
                .live
                .iter()
                .copied()
                .filter(|p| !st.report.inherited.contains(p))
                .collect();
            let infos: Vec<MrInfo> = live.iter().map(|&p| super::mr::info_of(p)).collect();
            for m in &infos {
                let what = "MR still open at exit".to_string();
                st.report.finding(Kind::Leak, m.reg_site, i, Some(*m), what);
            }
            leaks.push(infos);
        }
        let total: u64 = st.report.findings.iter().map(|f| f.count).sum();
        if total > 0 {
            eprintln!(
                "oxshim: {total} findings at {} call sites",
                st.report.findings.len()
            );
        }
        if let Ok(path) = std::env::var("OXSHIM_REPORT") {
            // `%p`: the process id, so that each rank of a job has its own.
            // A child of fork(2) never writes over its parent's report: it
            // adds `.<pid>` where the path has no `%p`.
            let pid = std::process::id().to_string();
            let path = if path.contains("%p") {
                path.replace("%p", &pid)
            } else if st.report.forked_from.is_some() {
                format!("{path}.{pid}")
            } else {
                path
            };
            let text = to_json(
                &st.report,
                &internal_regs,
                &unknown_descs,
                &leaks,
                super::ns_per_tick(),
            );
            if let Err(e) = std::fs::write(&path, text) {
                eprintln!("oxshim: cannot write {path}: {e}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_quantiles() {
        let mut h = Hist::default();
        for ns in 1..=1000 {
            h.add(ns);
        }
        let m = h.quantile(0.5);
        assert!((448..=500).contains(&m), "median {m}");
        let p = h.quantile(0.99);
        assert!((896..=990).contains(&p), "p99 {p}");
        assert_eq!(Hist::default().quantile(0.5), 0);
    }

    #[test]
    fn json_escapes() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
