//! # oxfabric layout tests
//!
//! Checks that every struct/union (size, alignment, each field's offset and
//! size), enum (size, each value), constant (value) and type alias (size,
//! alignment, signedness) in `src/abi` agrees with three sets of C headers:
//! Debian's libfabric 1.17 (`/usr/include/rdma`), upstream 2.1
//! (`build/upstream/2.1/include/rdma`, where `make deps` unpacks them) and oxfabric's own generated
//! `include/rdma`; and that every name those upstream headers define exists
//! in ours.
//!
//! How it works:
//! 1. `build.rs` parses `src/abi/*.rs` with syn and writes `decls.rs`: one
//!    [`Decl`] per public item, whose Rust numbers (offsets, sizes, values)
//!    rustc computes from the real `oxfabric::abi` items. New items and
//!    fields are picked up with no edit here. Each file's header comes from
//!    its "//! Mirror of `rdma/X.h`" line.
//! 2. For each header set, [`run`] writes a C program with one function per
//!    check, each on its own line, printing a C value (`__builtin_offsetof`,
//!    `sizeof`, `_Alignof`, a constant, an enumerator, a `strcmp`). It first
//!    compiles it with `-fsyntax-only`: a line rejected with "no member
//!    named", "undeclared", "incomplete type"... marks that item absent from
//!    that set; the line is dropped and the probe repeats. Any other error
//!    on a line is a failure. The rest is compiled, run and compared.
//! 3. Absence policy: in our headers nothing may be absent (except
//!    `cbindgen:ignore`d items that no header has: Rust-only). In 2.1
//!    ("strict"), an absent item must carry a `/// Since X.Y.` doc line
//!    newer than 2.1; otherwise it is misnamed (or kept a 1.x spelling) or
//!    untagged, and fails. In 1.17, absent items (2.x additions) are
//!    skipped. Items of a header a set lacks (fi_xpu.h) are skipped there.
//! 4. A struct with absent fields in a set (1.17's shorter fi_info, 2.1
//!    without 2.7's fields), or holding such a struct by value, has its
//!    present fields checked but not its size; the set's `sizeof` must still
//!    end before the first absent field. `[T; 0]` (a flexible array member)
//!    has its offset checked only. Opaque structs (private fields) and
//!    partial mirrors ("the leading fields of `struct X`") are not sized.
//! 5. Fields newer than the newest upstream set (`/// Since 2.7.`) are also
//!    checked in our header against C layout rules: the offset must be the
//!    end of the previous field rounded up to the field's alignment.
//! 6. Release numbers (FI_MAJOR/MINOR_VERSION) and FI_ERRNO_MAX differ by
//!    nature: against an older set they must be >= its values.
//! 7. The other direction: `cc -E -dD` of each set gives the macros, tags,
//!    enumerators and typedefs its headers define; each one missing from our
//!    headers fails in 2.1 and is listed (informational) for 1.17.
//!
//! Run: `cargo test -p oxfabric-layout` (one block per header set, then
//! `N passed, N failed`; exits non-zero on any failure).
//! `OXFABRIC_LAYOUT_VERBOSE=1` lists skipped checks; `OXFABRIC_LAYOUT_1_17`,
//! `OXFABRIC_LAYOUT_2_1` and `OXFABRIC_LAYOUT_OURS` override the include
//! directories (the one holding `rdma/`); `CC` the compiler (gcc or clang).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A libfabric version, `(major, minor)`.
pub type Version = (u32, u32);

/// One public item of `src/abi`.
#[derive(Debug)]
pub struct Decl {
    /// Source file stem (`fabric`, `domain`, ...).
    pub module: &'static str,
    /// The header under `rdma/` that the file mirrors (from its `//!` line).
    pub header: &'static str,
    pub name: &'static str,
    /// From a `/// Since X.Y.` doc line.
    pub since: Option<Version>,
    /// `cbindgen:ignore`d: may be absent from every header.
    pub rust_only: bool,
    pub repr_c: bool,
    pub entity: Entity,
}

#[derive(Debug)]
pub enum Entity {
    Aggregate {
        /// C tag; differs from the Rust name for a partial mirror ("the
        /// leading fields of `struct X`"), whose size is not compared.
        c_name: &'static str,
        union: bool,
        size: usize,
        align: usize,
        fields: Vec<Field>,
    },
    Enum {
        size: usize,
        variants: Vec<Variant>,
    },
    /// `value` is `None` for a non-integer constant (not compared).
    Const {
        value: Option<u64>,
    },
    /// A C string constant (`&CStr` in Rust, a string `#define` in C).
    Str {
        value: &'static [u8],
    },
    Alias {
        size: usize,
        align: usize,
        signed: Option<bool>,
    },
    /// A struct with private fields (`_opaque: [u8; 0]`): C only sees a
    /// declaration, so there is no layout to compare.
    Opaque,
}

/// A C-visible member of an aggregate: a field, or a member of an inline
/// union/struct (`c` is then a designator such as `device.cuda`, or just the
/// member name when the union is anonymous).
#[derive(Debug)]
pub struct Field {
    /// Index of the Rust field this belongs to.
    pub top: usize,
    pub top_name: &'static str,
    pub c: &'static str,
    pub since: Option<Version>,
    /// The struct/union held by value, if any: when it is shorter in a set,
    /// this member's size (and its container's) is not compared there.
    pub ty: Option<&'static str>,
    pub offset: usize,
    pub size: usize,
    pub align: usize,
}

#[derive(Debug)]
pub struct Variant {
    pub name: &'static str,
    pub since: Option<Version>,
    pub value: u64,
}

/// Rust-side offset, size and alignment of `(*T).path`, for decls.rs.
#[macro_export]
macro_rules! field {
    ($t:path, $top:expr, $top_name:expr, $c:expr, $since:expr, $ty:expr; $($f:tt)+) => {{
        let u = ::core::mem::MaybeUninit::<$t>::uninit();
        let base = u.as_ptr();
        // SAFETY: only the member's address is computed; nothing is read.
        let p = unsafe { ::core::ptr::addr_of!((*base).$($f)+) };
        $crate::Field {
            top: $top,
            top_name: $top_name,
            c: $c,
            since: $since,
            ty: $ty,
            offset: p as usize - base as usize,
            size: $crate::pointee_size(p),
            align: $crate::pointee_align(p),
        }
    }};
}

pub fn pointee_size<T>(_: *const T) -> usize {
    core::mem::size_of::<T>()
}

pub fn pointee_align<T>(_: *const T) -> usize {
    core::mem::align_of::<T>()
}

/// A directory holding `rdma/*.h`.
#[derive(Debug, Clone)]
pub struct HeaderSet {
    pub label: String,
    pub include: PathBuf,
    /// `None` for oxfabric's own headers, which must hold everything.
    pub version: Option<Version>,
    /// Absent items must be tagged `Since` a newer version.
    pub strict: bool,
}

/// 1.17, 2.1 and ours, with the environment overrides.
pub fn default_sets(workspace: &Path) -> Vec<HeaderSet> {
    let pick = |var: &str, candidates: &[PathBuf]| -> PathBuf {
        if let Some(p) = std::env::var_os(var) {
            return PathBuf::from(p);
        }
        candidates
            .iter()
            .find(|p| p.join("rdma/fabric.h").exists())
            .unwrap_or(&candidates[0])
            .clone()
    };
    vec![
        HeaderSet {
            label: "libfabric 1.17".into(),
            include: pick("OXFABRIC_LAYOUT_1_17", &[PathBuf::from("/usr/include")]),
            version: Some((1, 17)),
            strict: false,
        },
        HeaderSet {
            label: "libfabric 2.1".into(),
            include: pick(
                "OXFABRIC_LAYOUT_2_1",
                &[
                    workspace.join("build/upstream/2.1/include"),
                    PathBuf::from("/work/upstream/2.1/include"),
                    workspace.join("upstream/2.1/include"),
                ],
            ),
            version: Some((2, 1)),
            strict: true,
        },
        HeaderSet {
            label: "oxfabric include/".into(),
            include: pick("OXFABRIC_LAYOUT_OURS", &[workspace.join("include")]),
            version: None,
            strict: true,
        },
    ]
}

/// Include order: fabric.h first, as upstream's own headers expect.
const ORDER: &[&str] = &[
    "fabric",
    "errno",
    "eq",
    "domain",
    "xpu",
    "endpoint",
    "cm",
    "rma",
    "tagged",
    "atomic",
    "collective",
    "trigger",
    "ext",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Size,
    Align,
    Offset,
    FieldSize,
    Value,
    Signed,
    /// C-computed expected offset of a field newer than every upstream set.
    Follows,
    /// The header's own FI_MAJOR/MINOR_VERSION; shown, not counted.
    Meta,
    /// A release number in an older set: compared as a pair, ours >= it.
    Release,
    /// A sentinel that grows with each release (FI_ERRNO_MAX): ours >= C.
    AtLeast,
    /// Listed so that the report shows it; never compared.
    Opaque,
}

/// Constants that differ between releases by nature; in older header sets
/// they are compared as "ours >= theirs" instead of for equality.
const RELEASE: &[&str] = &["FI_MAJOR_VERSION", "FI_MINOR_VERSION"];
const GROWING: &[&str] = &["FI_ERRNO_MAX"];

#[derive(Debug)]
struct Check {
    label: String,
    decl: Option<usize>,
    /// Index of the Rust field (aggregates).
    top: Option<usize>,
    /// Index in the decl's `fields`.
    field: Option<usize>,
    kind: Kind,
    since: Option<Version>,
    c_expr: String,
    rust: Option<u64>,
}

#[derive(Debug, Clone)]
enum Outcome {
    Value(u64),
    Absent(String),
    Error(String),
}

struct SetRun {
    /// label -> outcome; labels missing here were not emitted (header absent).
    outcomes: HashMap<String, Outcome>,
    /// Headers included (under rdma/).
    headers: Vec<String>,
    /// Names the headers define: name -> (kind, header).
    names: BTreeMap<String, (&'static str, String)>,
    checks: Vec<Check>,
    missing_headers: BTreeSet<String>,
    /// Set-wide failure (headers missing or not compiling).
    broken: Option<String>,
}

fn checks_for(decls: &[Decl], set: &HeaderSet, newest_upstream: Version) -> Vec<Check> {
    let mut out = Vec::new();
    let meta = |name: &str| Check {
        label: format!("#{name}"),
        decl: None,
        top: None,
        field: None,
        kind: Kind::Meta,
        since: None,
        c_expr: name.to_string(),
        rust: None,
    };
    out.push(meta("FI_MAJOR_VERSION"));
    out.push(meta("FI_MINOR_VERSION"));
    for (di, d) in decls.iter().enumerate() {
        // `top`: (Rust field index, index in `fields`).
        let mut push = |label: String,
                        top: Option<(usize, usize)>,
                        kind: Kind,
                        since: Option<Version>,
                        c_expr: String,
                        rust: Option<u64>| {
            out.push(Check {
                label,
                decl: Some(di),
                top: top.map(|t| t.0),
                field: top.map(|t| t.1),
                kind,
                since: since.or(d.since),
                c_expr,
                rust,
            });
        };
        match &d.entity {
            Entity::Aggregate {
                c_name,
                union,
                size,
                align,
                fields,
            } => {
                let ty = format!("{} {c_name}", if *union { "union" } else { "struct" });
                push(
                    format!("{ty}: size"),
                    None,
                    Kind::Size,
                    None,
                    format!("sizeof({ty})"),
                    Some(*size as u64),
                );
                push(
                    format!("{ty}: alignment"),
                    None,
                    Kind::Align,
                    None,
                    format!("_Alignof({ty})"),
                    Some(*align as u64),
                );
                for (fi, f) in fields.iter().enumerate() {
                    push(
                        format!("{ty}.{}: offset", f.c),
                        Some((f.top, fi)),
                        Kind::Offset,
                        f.since,
                        format!("__builtin_offsetof({ty}, {})", f.c),
                        Some(f.offset as u64),
                    );
                    // `[T; 0]` mirrors a flexible array member (`data[]`),
                    // which has no size in C: its offset is all there is.
                    if f.size == 0 {
                        continue;
                    }
                    push(
                        format!("{ty}.{}: size", f.c),
                        Some((f.top, fi)),
                        Kind::FieldSize,
                        f.since,
                        format!("sizeof((({ty} *)0)->{})", f.c),
                        Some(f.size as u64),
                    );
                }
                // Fields newer than every upstream set: C layout rules in our header.
                if set.version.is_none() {
                    for (fi, f) in fields.iter().enumerate().filter(|(_, f)| {
                        f.since.is_some_and(|v| v > newest_upstream) && !f.c.contains('.')
                    }) {
                        if f.top == 0 {
                            continue;
                        }
                        let prev: Vec<&Field> =
                            fields.iter().filter(|g| g.top == f.top - 1).collect();
                        if prev.is_empty() {
                            continue;
                        }
                        let prev_end = if prev.len() == 1 && prev[0].top_name == prev[0].c {
                            let p = prev[0].c;
                            format!("(__builtin_offsetof({ty}, {p}) + sizeof((({ty} *)0)->{p}))")
                        } else {
                            // An inline union/struct: its members' furthest end,
                            // rounded up to their strictest alignment.
                            let ends: Vec<String> = prev
                                .iter()
                                .map(|g| {
                                    format!(
                                        "(__builtin_offsetof({ty}, {0}) + sizeof((({ty} *)0)->{0}))",
                                        g.c
                                    )
                                })
                                .collect();
                            let aligns: Vec<String> = prev
                                .iter()
                                .map(|g| format!("_Alignof(__typeof__((({ty} *)0)->{}))", g.c))
                                .collect();
                            format!("OXL_UP({}, {})", max_expr(&ends), max_expr(&aligns))
                        };
                        push(
                            format!(
                                "{ty}.{}: offset follows {} (C layout, since {})",
                                f.c,
                                prev[0].top_name,
                                ver(f.since)
                            ),
                            Some((f.top, fi)),
                            Kind::Follows,
                            f.since,
                            format!(
                                "OXL_UP({prev_end}, _Alignof(__typeof__((({ty} *)0)->{})))",
                                f.c
                            ),
                            Some(f.offset as u64),
                        );
                    }
                }
            }
            Entity::Str { value } => {
                let mut lit = String::new();
                for &b in value.iter() {
                    if b.is_ascii_alphanumeric() || b"_-. /:".contains(&b) {
                        lit.push(b as char);
                    } else {
                        write!(lit, "\\{b:03o}").unwrap();
                    }
                }
                push(
                    format!("{}: string", d.name),
                    None,
                    Kind::Value,
                    None,
                    format!("__builtin_strcmp(({}), \"{lit}\") == 0", d.name),
                    Some(1),
                )
            }
            Entity::Opaque => push(
                format!("struct {}: opaque", d.name),
                None,
                Kind::Opaque,
                None,
                "0".into(),
                None,
            ),
            Entity::Enum { size, variants } => {
                push(
                    format!("enum {}: size", d.name),
                    None,
                    Kind::Size,
                    None,
                    format!("sizeof(enum {})", d.name),
                    Some(*size as u64),
                );
                for v in variants {
                    push(
                        format!("enum {} {}: value", d.name, v.name),
                        None,
                        Kind::Value,
                        v.since,
                        v.name.to_string(),
                        Some(v.value),
                    );
                }
            }
            Entity::Const { value } => {
                let kind = match set.version {
                    Some(_) if RELEASE.contains(&d.name) => Kind::Release,
                    Some(_) if GROWING.contains(&d.name) => Kind::AtLeast,
                    _ => Kind::Value,
                };
                push(
                    format!("{}: value", d.name),
                    None,
                    kind,
                    None,
                    d.name.to_string(),
                    *value,
                )
            }
            Entity::Alias {
                size,
                align,
                signed,
            } => {
                push(
                    format!("{}: size", d.name),
                    None,
                    Kind::Size,
                    None,
                    format!("sizeof({})", d.name),
                    Some(*size as u64),
                );
                push(
                    format!("{}: alignment", d.name),
                    None,
                    Kind::Align,
                    None,
                    format!("_Alignof({})", d.name),
                    Some(*align as u64),
                );
                if let Some(s) = signed {
                    push(
                        format!("{}: signedness", d.name),
                        None,
                        Kind::Signed,
                        None,
                        format!("(({0})-1 < ({0})0)", d.name),
                        Some(*s as u64),
                    );
                }
            }
        }
    }
    out
}

/// The summary line's grouping of a skip reason.
fn category(why: &str) -> &str {
    if why.starts_with("new in") {
        "newer than this set"
    } else if why.contains("prefix checked") || why.contains("shorter here") {
        "struct shorter here, size not compared"
    } else if why.contains("absent from these headers") {
        "absent (added later)"
    } else if why.contains("not in this set") {
        "header not in this set"
    } else if why.contains("mirrors only the leading") {
        "partial mirror, size not compared"
    } else {
        why
    }
}

fn max_expr(xs: &[String]) -> String {
    let mut it = xs.iter();
    let mut acc = it.next().cloned().unwrap_or_else(|| "0".into());
    for x in it {
        acc = format!("OXL_MAX({acc}, {x})");
    }
    acc
}

fn ver(v: Option<Version>) -> String {
    match v {
        Some((a, b)) => format!("{a}.{b}"),
        None => "?".into(),
    }
}

fn write_program(path: &Path, headers: &[String], checks: &[Check], live: &[usize]) -> Vec<usize> {
    let mut src = String::new();
    src.push_str("/* Generated by oxfabric-layout; one check per line. */\n");
    src.push_str("#include <stdio.h>\n#include <stddef.h>\n");
    for h in headers {
        writeln!(src, "#include <rdma/{h}>").unwrap();
    }
    src.push_str("#define OXL_MAX(a, b) ((a) > (b) ? (a) : (b))\n");
    src.push_str("#define OXL_UP(x, a) (((x) + (a) - 1) / (a) * (a))\n");
    let first = src.lines().count() + 1;
    let mut line_of = Vec::new();
    for (n, &i) in live.iter().enumerate() {
        writeln!(
            src,
            "static void k{i}(void) {{ printf(\"{i} %llu\\n\", (unsigned long long)({})); }}",
            checks[i].c_expr
        )
        .unwrap();
        line_of.push(first + n);
    }
    src.push_str("int main(void) {\n");
    for &i in live {
        writeln!(src, "    k{i}();").unwrap();
    }
    src.push_str("    return 0;\n}\n");
    fs::write(path, src).unwrap();
    line_of
}

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

const ABSENT_PATTERNS: &[&str] = &[
    "has no member named",
    "undeclared",
    "incomplete type",
    "undefined type",
    "unknown type name",
];

/// Error messages by line of `file` in compiler output.
fn errors_by_line(stderr: &str, file: &str) -> (BTreeMap<usize, Vec<String>>, Vec<String>) {
    let mut by_line: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut other = Vec::new();
    for l in stderr.lines() {
        let Some(pos) = l.find(": error: ") else {
            continue;
        };
        let (loc, msg) = (&l[..pos], &l[pos + ": error: ".len()..]);
        let mut parts = loc.rsplitn(3, ':');
        let _col = parts.next();
        let line = parts.next().and_then(|s| s.parse::<usize>().ok());
        let f = parts.next().unwrap_or("");
        match line {
            Some(n) if f.ends_with(file) => by_line.entry(n).or_default().push(msg.to_string()),
            _ => other.push(l.to_string()),
        }
    }
    (by_line, other)
}

fn run_set(decls: &[Decl], set: &HeaderSet, workdir: &Path, newest: Version) -> SetRun {
    let mut run = SetRun {
        outcomes: HashMap::new(),
        headers: Vec::new(),
        names: BTreeMap::new(),
        checks: checks_for(decls, set, newest),
        missing_headers: BTreeSet::new(),
        broken: None,
    };
    if !set.include.join("rdma/fabric.h").exists() {
        run.broken = Some(format!(
            "no rdma/fabric.h under {} (set the OXFABRIC_LAYOUT_* variable)",
            set.include.display()
        ));
        return run;
    }
    let mut wanted: Vec<(usize, &str)> = decls
        .iter()
        .map(|d| {
            let rank = ORDER
                .iter()
                .position(|m| *m == d.module)
                .unwrap_or(ORDER.len());
            (rank, d.header)
        })
        .collect();
    wanted.push((0, "fabric.h"));
    wanted.sort();
    let mut headers: Vec<String> = Vec::new();
    for (_, h) in wanted {
        if headers.iter().any(|x| x == h) || run.missing_headers.contains(h) {
            continue;
        }
        if set.include.join("rdma").join(h).exists() {
            headers.push(h.to_string());
        } else {
            run.missing_headers.insert(h.to_string());
        }
    }
    let mut live: Vec<usize> = (0..run.checks.len())
        .filter(|&i| {
            run.checks[i]
                .decl
                .is_none_or(|d| !run.missing_headers.contains(decls[d].header))
        })
        .collect();

    fs::create_dir_all(workdir).unwrap();
    let c_file = workdir.join("layout.c");
    let exe = workdir.join("layout");
    let base = [
        "-std=gnu11".to_string(),
        "-w".to_string(),
        format!("-I{}", set.include.display()),
    ];
    for _round in 0..20 {
        let line_of = write_program(&c_file, &headers, &run.checks, &live);
        let out = Command::new(compiler())
            .args(&base)
            .args(["-fsyntax-only", "-fmax-errors=0"])
            .arg(&c_file)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler()));
        if out.status.success() {
            break;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (by_line, other) = errors_by_line(&stderr, "layout.c");
        let line_to_check: HashMap<usize, usize> = line_of
            .iter()
            .zip(live.iter())
            .map(|(&l, &i)| (l, i))
            .collect();
        let mut dropped = BTreeSet::new();
        let mut unmapped = other;
        for (line, msgs) in by_line {
            match line_to_check.get(&line) {
                Some(&i) => {
                    let absent = msgs
                        .iter()
                        .find(|m| ABSENT_PATTERNS.iter().any(|p| m.contains(p)));
                    let o = match absent {
                        Some(m) => Outcome::Absent(m.clone()),
                        None => Outcome::Error(msgs[0].clone()),
                    };
                    run.outcomes.insert(run.checks[i].label.clone(), o);
                    dropped.insert(i);
                }
                None => unmapped.extend(msgs.into_iter().map(|m| format!("line {line}: {m}"))),
            }
        }
        if dropped.is_empty() {
            unmapped.truncate(20);
            run.broken = Some(format!(
                "headers do not compile:\n      {}",
                if unmapped.is_empty() {
                    stderr.lines().take(20).collect::<Vec<_>>().join("\n      ")
                } else {
                    unmapped.join("\n      ")
                }
            ));
            return run;
        }
        live.retain(|i| !dropped.contains(i));
    }

    let out = Command::new(compiler())
        .args(&base)
        .arg("-o")
        .arg(&exe)
        .arg(&c_file)
        .output()
        .unwrap();
    if !out.status.success() {
        run.broken = Some(format!(
            "compile failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
        return run;
    }
    let pp = Command::new(compiler())
        .args(&base)
        .args(["-E", "-dD"])
        .arg(&c_file)
        .output()
        .unwrap();
    run.names = defined_names(&String::from_utf8_lossy(&pp.stdout), &headers);
    run.headers = headers;

    let out = Command::new(&exe).output().unwrap();
    if !out.status.success() {
        run.broken = Some(format!("{} exited with {}", exe.display(), out.status));
        return run;
    }
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let mut it = l.split(' ');
        if let (Some(Ok(i)), Some(Ok(v))) = (
            it.next().map(str::parse::<usize>),
            it.next().map(str::parse::<u64>),
        ) {
            run.outcomes
                .insert(run.checks[i].label.clone(), Outcome::Value(v));
        }
    }
    run
}

/// The names (macros, struct/union/enum tags, enumerators, typedefs) that
/// `headers` define, from `cc -E -dD` output: name -> (kind, header).
fn defined_names(pp: &str, headers: &[String]) -> BTreeMap<String, (&'static str, String)> {
    let mut names = BTreeMap::new();
    let mut cur: Option<String> = None;
    let mut toks: Vec<(String, usize)> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    for line in pp.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            // Line marker: `# N "path" flags`.
            cur = rest.split('"').nth(1).and_then(|p| {
                let (_, h) = p.split_once("/rdma/")?;
                headers.iter().any(|x| x == h).then(|| h.to_string())
            });
            continue;
        }
        let Some(h) = &cur else { continue };
        if let Some(def) = line.strip_prefix("#define ") {
            let name: String = def
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let rest = &def[name.len()..];
            // Function-like, or with a value (include guards have none).
            if rest.starts_with('(') || !rest.trim().is_empty() {
                names.insert(name, ("macro", h.clone()));
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let fi = match files.iter().position(|f| f == h) {
            Some(i) => i,
            None => {
                files.push(h.clone());
                files.len() - 1
            }
        };
        toks.extend(tokens(line).into_iter().map(|t| (t, fi)));
    }
    let ident = |t: &str| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    let (mut i, mut depth) = (0, 0i32);
    while i < toks.len() {
        let (t, fi) = (&toks[i].0, toks[i].1);
        let h = &files[fi];
        let next = |k: usize| toks.get(i + k).map(|x| x.0.as_str()).unwrap_or("");
        match t.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "struct" | "union" | "enum" if depth == 0 => {
                let tagged = ident(next(1)) && next(2) == "{";
                if tagged {
                    let kind = match t.as_str() {
                        "struct" => "struct",
                        "union" => "union",
                        _ => "enum",
                    };
                    names.insert(next(1).to_string(), (kind, h.clone()));
                }
                if t == "enum" && (tagged || next(1) == "{") {
                    // Enumerators: the identifier opening each item.
                    let mut j = i + if tagged { 3 } else { 2 };
                    let (mut paren, mut expect) = (0, true);
                    while j < toks.len() && !(toks[j].0 == "}" && paren == 0) {
                        let tt = toks[j].0.as_str();
                        match tt {
                            "(" | "[" => paren += 1,
                            ")" | "]" => paren -= 1,
                            "," if paren == 0 => {
                                expect = true;
                                j += 1;
                                continue;
                            }
                            _ if expect && ident(tt) => {
                                names.insert(tt.to_string(), ("enumerator", h.clone()));
                            }
                            _ => {}
                        }
                        expect = false;
                        j += 1;
                    }
                    i = j + 1;
                    continue;
                }
            }
            "typedef" if depth == 0 => {
                let (mut j, mut nest) = (i, 0);
                let (mut last, mut fnptr) = (None, None);
                while j < toks.len() && !(toks[j].0 == ";" && nest == 0) {
                    let tt = toks[j].0.as_str();
                    match tt {
                        "(" | "{" => nest += 1,
                        ")" | "}" => nest -= 1,
                        "*" if fnptr.is_none()
                            && toks[j - 1].0 == "("
                            && toks.get(j + 1).is_some_and(|x| ident(&x.0)) =>
                        {
                            fnptr = Some(toks[j + 1].0.clone());
                        }
                        _ if nest == 0 && ident(tt) => last = Some(tt.to_string()),
                        _ => {}
                    }
                    j += 1;
                }
                if let Some(n) = fnptr.or(last) {
                    names.insert(n, ("typedef", h.clone()));
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    names
}

/// C tokens, roughly: identifiers, numbers, literals, single punctuation.
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_' || b[i] == '.') {
                i += 1;
            }
            out.push(b[s..i].iter().collect());
        } else if c == '"' || c == '\'' {
            let s = i;
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(b[s..i.min(b.len())].iter().collect());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// Totals over all header sets.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

fn show(kind: Kind, v: u64) -> String {
    match kind {
        Kind::Value if v > 9 => {
            if v > u64::MAX - 1_000_000 {
                format!("{v:#x} ({})", v as i64)
            } else {
                format!("{v} ({v:#x})")
            }
        }
        _ => v.to_string(),
    }
}

/// Runs every set and writes the report to `out`.
pub fn run(
    decls: &[Decl],
    sets: &[HeaderSet],
    workdir: &Path,
    verbose: bool,
    out: &mut dyn Write,
) -> Totals {
    let newest = sets
        .iter()
        .filter_map(|s| s.version)
        .max()
        .unwrap_or((0, 0));
    let runs: Vec<SetRun> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| run_set(decls, s, &workdir.join(format!("set{i}")), newest))
        .collect();

    let mut total = Totals::default();
    let _ = writeln!(
        out,
        "oxfabric layout: {} items from src/abi, {} header sets",
        decls.len(),
        sets.len()
    );
    for (si, (set, r)) in sets.iter().zip(&runs).enumerate() {
        let mut t = Totals::default();
        let mut fails = Vec::new();
        let mut skips: Vec<(String, String)> = Vec::new();
        let mut notes = Vec::new();
        if let Some(b) = &r.broken {
            t.failed += 1;
            fails.push(format!("FAIL {}: {b}", set.label));
        }
        let value = |label: &str| match r.outcomes.get(label) {
            Some(Outcome::Value(v)) => Some(*v),
            _ => None,
        };
        // Rust fields with at least one C member absent / present, per decl.
        let mut absent_tops: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for c in &r.checks {
            if let (Some(d), Some(top), Kind::Offset) = (c.decl, c.top, c.kind) {
                if matches!(r.outcomes.get(&c.label), Some(Outcome::Absent(_))) {
                    absent_tops.entry(d).or_default().insert(top);
                }
            }
        }
        // A Rust field is present when any of its C members is.
        for c in &r.checks {
            if let (Some(d), Some(top), Kind::Offset) = (c.decl, c.top, c.kind) {
                if value(&c.label).is_some() {
                    if let Some(s) = absent_tops.get_mut(&d) {
                        s.remove(&top);
                    }
                }
            }
        }
        absent_tops.retain(|_, s| !s.is_empty());
        // Aggregates shorter in this set than in Rust: those with absent
        // fields, and those holding one of them by value.
        let mut short: BTreeMap<&str, String> = BTreeMap::new();
        for (&di, abs) in &absent_tops {
            short.insert(
                decls[di].name,
                format!("{} field(s) absent here (prefix checked)", abs.len()),
            );
        }
        loop {
            let mut grew = false;
            for d in decls {
                let Entity::Aggregate { fields, .. } = &d.entity else {
                    continue;
                };
                if short.contains_key(d.name) {
                    continue;
                }
                if let Some(t) = fields
                    .iter()
                    .filter_map(|f| f.ty)
                    .find(|t| short.contains_key(t))
                {
                    short.insert(d.name, format!("holds struct {t}, which is shorter here"));
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }

        let mut header_ver = (None, None);
        for c in &r.checks {
            if r.broken.is_some() {
                break;
            }
            if c.kind == Kind::Meta {
                let v = value(&c.label);
                if c.c_expr == "FI_MAJOR_VERSION" {
                    header_ver.0 = v;
                } else {
                    header_ver.1 = v;
                }
                continue;
            }
            let d = &decls[c.decl.unwrap()];
            if c.kind == Kind::Opaque {
                skips.push((c.label.clone(), "opaque, no C layout".into()));
                continue;
            }
            let Some(o) = r.outcomes.get(&c.label) else {
                skips.push((
                    c.label.clone(),
                    format!("rdma/{} not in this set", d.header),
                ));
                continue;
            };
            match o {
                Outcome::Error(m) => {
                    t.failed += 1;
                    fails.push(format!("FAIL {}: C rejects it: {m}", c.label));
                }
                Outcome::Absent(m) => {
                    let newer = matches!((c.since, set.version), (Some(s), Some(v)) if s > v);

                    // cbindgen:ignore'd items usually reach our headers through
                    // c/*.top; only those missing there too are Rust-only.
                    let in_ours = || {
                        runs.iter().zip(sets).any(|(r2, s2)| {
                            s2.version.is_none()
                                && matches!(r2.outcomes.get(&c.label), Some(Outcome::Value(_)))
                        })
                    };
                    if d.rust_only && (set.version.is_none() || !in_ours()) {
                        skips.push((c.label.clone(), "cbindgen:ignore, Rust-only".into()));
                    } else if set.version.is_none() {
                        t.failed += 1;
                        fails.push(format!("FAIL {}: missing from our header ({m})", c.label));
                    } else if newer {
                        skips.push((c.label.clone(), format!("new in {}", ver(c.since))));
                    } else if set.strict {
                        t.failed += 1;
                        fails.push(format!(
                            "FAIL {}: not in these headers ({m}); misnamed, or missing a \
                             `/// Since X.Y.` doc line",
                            c.label
                        ));
                    } else {
                        skips.push((c.label.clone(), "absent from these headers".into()));
                    }
                }
                Outcome::Value(cv) => {
                    let Some(rv) = c.rust else {
                        skips.push((c.label.clone(), "non-integer constant".into()));
                        continue;
                    };
                    if c.kind == Kind::Release {
                        skips.push((
                            c.label.clone(),
                            "release number (compared as a pair)".into(),
                        ));
                        continue;
                    }
                    if c.kind == Kind::AtLeast {
                        if rv >= *cv {
                            t.passed += 1;
                        } else {
                            t.failed += 1;
                            fails.push(format!(
                                "FAIL {}: C {}, Rust {} (this sentinel must not shrink)",
                                c.label,
                                show(Kind::Value, *cv),
                                show(Kind::Value, rv)
                            ));
                        }
                        continue;
                    }
                    if matches!(c.kind, Kind::Size | Kind::Align) {
                        if let Entity::Aggregate { c_name, .. } = &d.entity {
                            if *c_name != d.name {
                                skips.push((
                                    c.label.clone(),
                                    format!("{} mirrors only the leading fields", d.name),
                                ));
                                continue;
                            }
                        }
                        if let Some(why) = short.get(d.name) {
                            skips.push((c.label.clone(), why.clone()));
                            continue;
                        }
                    }
                    if c.kind == Kind::FieldSize {
                        let f = match (&d.entity, c.field) {
                            (Entity::Aggregate { fields, .. }, Some(i)) => fields.get(i),
                            _ => None,
                        };
                        if let Some(t) = f.and_then(|f| f.ty).filter(|t| short.contains_key(t)) {
                            skips.push((c.label.clone(), format!("struct {t} is shorter here")));
                            continue;
                        }
                    }
                    if *cv == rv {
                        t.passed += 1;
                    } else {
                        t.failed += 1;
                        let what = if c.kind == Kind::Follows {
                            "expected by C layout"
                        } else {
                            "C"
                        };
                        if c.label.ends_with(": string") {
                            fails.push(format!("FAIL {}: C's string differs from Rust's", c.label));
                            continue;
                        }
                        fails.push(format!(
                            "FAIL {}: {what} {}, Rust {}",
                            c.label,
                            show(c.kind, *cv),
                            show(c.kind, rv)
                        ));
                    }
                }
            }
        }

        // Shorter structs: this set's layout must end before the first field
        // it lacks.
        if r.broken.is_none() {
            for (&di, abs) in &absent_tops {
                let d = &decls[di];
                let Entity::Aggregate {
                    c_name,
                    union,
                    fields,
                    ..
                } = &d.entity
                else {
                    continue;
                };
                if *c_name != d.name {
                    continue;
                }
                let ty = format!("{} {c_name}", if *union { "union" } else { "struct" });
                let ntop = fields.iter().map(|f| f.top).max().map_or(0, |m| m + 1);
                let first = *abs.iter().next().unwrap();
                let label = format!(
                    "{ty}: ends before {}",
                    fields[fields.iter().position(|f| f.top == first).unwrap()].top_name
                );
                if abs.len() != ntop - first {
                    notes.push(format!(
                        "note {ty}: fields absent in the middle ({}); renamed upstream?",
                        abs.iter()
                            .filter_map(|&t| fields.iter().find(|f| f.top == t))
                            .map(|f| f.top_name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    continue;
                }
                let (Some(size), Some(align)) = (
                    value(&format!("{ty}: size")),
                    value(&format!("{ty}: alignment")),
                ) else {
                    continue;
                };
                let off = fields
                    .iter()
                    .filter(|f| f.top == first)
                    .map(|f| f.offset)
                    .min()
                    .unwrap() as u64;
                let limit = off.div_ceil(align.max(1)) * align.max(1);
                if size <= limit {
                    t.passed += 1;
                } else {
                    t.failed += 1;
                    fails.push(format!(
                        "FAIL {label}: sizeof is {size} here, but Rust puts {} at {off}: \
                         this set has members Rust lacks",
                        fields.iter().find(|f| f.top == first).unwrap().top_name
                    ));
                }
            }
        }

        // Our release is not older than this set's.
        let rust_of = |name: &str| {
            r.checks
                .iter()
                .find(|c| c.kind == Kind::Release && c.c_expr == name)
                .and_then(|c| c.rust)
        };
        if let (Some(a), Some(b), (Some(ca), Some(cb))) = (
            rust_of("FI_MAJOR_VERSION"),
            rust_of("FI_MINOR_VERSION"),
            header_ver,
        ) {
            if (a, b) >= (ca, cb) {
                t.passed += 1;
            } else {
                t.failed += 1;
                fails.push(format!(
                    "FAIL FI_MAJOR_VERSION.FI_MINOR_VERSION: ours {a}.{b} is older than {ca}.{cb}"
                ));
            }
        }

        // The other direction: what this set defines that ours lacks.
        let ours = runs
            .iter()
            .zip(sets)
            .find(|(r2, s2)| s2.version.is_none() && r2.broken.is_none());
        let mut dropped = Vec::new();
        if let (Some((ours, _)), Some(_), None) = (ours, set.version, &r.broken) {
            for (name, (kind, h)) in &r.names {
                if !ours.headers.contains(h) || ours.names.contains_key(name) {
                    continue;
                }
                let kind = if *kind == "macro" { "" } else { kind };
                let item = format!("{kind} {name} ({h})").trim_start().to_string();
                if set.strict {
                    t.failed += 1;
                    fails.push(format!("FAIL {item}: in these headers, not in ours"));
                } else if !runs.iter().zip(sets).any(|(r2, s2)| {
                    s2.strict && s2.version.is_some() && r2.names.contains_key(name)
                }) {
                    dropped.push(item);
                }
            }
            if !dropped.is_empty() {
                notes.push(format!(
                    "dropped by a later release, not in ours either (informational, {}): {}",
                    dropped.len(),
                    dropped.join(", ")
                ));
            }
        }

        t.skipped = skips.len();
        let declared = match header_ver {
            (Some(a), Some(b)) => format!(", declares {a}.{b}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "\n[{}] {}{declared}\n  {} checked: {} passed, {} failed; {} skipped",
            set.label,
            set.include.display(),
            t.passed + t.failed,
            t.passed,
            t.failed,
            t.skipped
        );
        for f in &fails {
            let _ = writeln!(out, "  {f}");
        }
        for n in &notes {
            let _ = writeln!(out, "  {n}");
        }
        if !skips.is_empty() {
            let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, why) in &skips {
                *by_reason.entry(category(why)).or_default() += 1;
            }
            let summary: Vec<String> = by_reason.iter().map(|(w, n)| format!("{w}: {n}")).collect();
            let _ = writeln!(out, "  skipped: {}", summary.join("; "));
            if verbose {
                for (l, why) in &skips {
                    let _ = writeln!(out, "    skip {l}: {why}");
                }
            } else if si + 1 == sets.len() {
                let _ = writeln!(out, "  (OXFABRIC_LAYOUT_VERBOSE=1 lists skipped checks)");
            }
        }
        total.passed += t.passed;
        total.failed += t.failed;
        total.skipped += t.skipped;
    }

    // Rust-side rules that need no header.
    let mut rust_fail = Vec::new();
    for d in decls {
        if !d.repr_c && !d.rust_only {
            rust_fail.push(format!("FAIL {}: not #[repr(C)]", d.name));
        }
    }
    if !rust_fail.is_empty() {
        let _ = writeln!(out, "\n[src/abi]");
        for f in &rust_fail {
            let _ = writeln!(out, "  {f}");
        }
        total.failed += rust_fail.len();
    }

    let _ = writeln!(out, "\n{} passed, {} failed", total.passed, total.failed);
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_are_attributed() {
        let err = "x/layout.c:7:45: error: 'FI_NOPE' undeclared (first use in this function)\n\
                   x/layout.c:7:45: note: each undeclared identifier is reported only once\n\
                   /usr/include/rdma/fabric.h:3:1: error: boom\n";
        let (by_line, other) = errors_by_line(err, "layout.c");
        assert_eq!(by_line.len(), 1);
        assert!(by_line[&7][0].contains("undeclared"));
        assert_eq!(other.len(), 1);
    }

    /// A fake header set with known differences: the engine must report
    /// exactly those as failures and skip what is legitimately absent.
    #[test]
    fn detects_mismatches() {
        let dir = std::env::temp_dir().join(format!("oxl-selftest-{}", std::process::id()));
        fs::create_dir_all(dir.join("inc/rdma")).unwrap();
        fs::write(
            dir.join("inc/rdma/fabric.h"),
            "#define FI_MAJOR_VERSION 9\n#define FI_MINOR_VERSION 9\n\
             struct oxl_s { int a; long b; };\n#define OXL_K 5\n#define OXL_NEG (-1)\n",
        )
        .unwrap();
        let f = |top, name, offset, size, since| Field {
            top,
            top_name: name,
            c: name,
            since,
            ty: None,
            offset,
            size,
            align: size,
        };
        let decls = vec![
            Decl {
                module: "fabric",
                header: "fabric.h",
                name: "oxl_s",
                since: None,
                rust_only: false,
                repr_c: true,
                entity: Entity::Aggregate {
                    c_name: "oxl_s",
                    union: false,
                    size: 24,
                    align: 8,
                    fields: vec![
                        f(0, "a", 0, 4, None),
                        f(1, "b", 4, 8, None), // wrong offset: C says 8
                        f(2, "c", 16, 8, Some((9, 10))), // newer: skipped
                    ],
                },
            },
            Decl {
                module: "fabric",
                header: "fabric.h",
                name: "OXL_K",
                since: None,
                rust_only: false,
                repr_c: true,
                entity: Entity::Const { value: Some(6) }, // wrong
            },
            Decl {
                module: "fabric",
                header: "fabric.h",
                name: "OXL_NEG",
                since: None,
                rust_only: false,
                repr_c: true,
                entity: Entity::Const {
                    value: Some(-1i64 as u64),
                },
            },
            Decl {
                module: "fabric",
                header: "fabric.h",
                name: "OXL_GONE",
                since: None,
                rust_only: false,
                repr_c: true,
                entity: Entity::Const { value: Some(1) }, // untagged, absent: fails
            },
        ];
        let set = HeaderSet {
            label: "fake 9.9".into(),
            include: dir.join("inc"),
            version: Some((9, 9)),
            strict: true,
        };
        let mut log = Vec::new();
        let t = run(&decls, &[set], &dir.join("work"), true, &mut log);
        let log = String::from_utf8(log).unwrap();
        fs::remove_dir_all(&dir).ok();
        assert!(log.contains("struct oxl_s.b: offset: C 8, Rust 4"), "{log}");
        assert!(log.contains("OXL_K: value: C 5, Rust 6"), "{log}");
        assert!(
            log.contains("OXL_GONE: value: not in these headers"),
            "{log}"
        );
        assert!(log.contains("new in 9.10"), "{log}");
        // a.offset, a.size, b.size, OXL_NEG, "ends before c" pass.
        assert_eq!((t.passed, t.failed), (5, 3), "{log}");
        assert!(log.ends_with("5 passed, 3 failed\n"), "{log}");
    }
}
