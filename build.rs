//! Generates `include/rdma/*.h` from `src/abi` (types, constants) and the
//! `src/capi` files that export each header's functions.
//!
//! cbindgen is run once per header over that header's own sources, so each
//! header holds exactly what its upstream namesake holds. Three conventions in
//! `src/abi` let the output match upstream's spelling where cbindgen alone
//! cannot:
//!
//! * A struct or union named in a header other than the one being generated is
//!   printed as `struct NAME` / `union NAME` (a rename built from a scan of all
//!   of `src/abi`).
//! * A C enum `E` is written twice in Rust: `#[repr(C)] pub enum E` (the
//!   header's definition) and a `cbindgen:ignore`d `pub type E_raw = c_uint`
//!   used for every field and parameter that holds it, so that Rust never
//!   materialises an out-of-range discriminant read from C memory. `E_raw` is
//!   printed as `enum E`.
//! * A union or struct whose Rust name starts with `__anon` is inlined, without
//!   its tag, at the field that uses it; a field whose name also starts with
//!   `__anon` becomes an anonymous member (`attr.mr_iov` in C).
//!
//! Verbatim C (function-like macros, variadic prototypes, inline helpers that
//! upstream also keeps inline) comes from `src/abi/c/<header>.top.h` (after
//! the includes) and `src/abi/c/<header>.end.h` (before the closing guard).
//! Headers are rewritten only when their text changes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// (header, include guard, abi source, capi sources, includes)
type HeaderSpec = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

const HEADERS: &[HeaderSpec] = &[
    (
        "fi_errno.h",
        "FI_ERRNO_H",
        "errno.rs",
        &["errno.rs"],
        &["errno.h"],
    ),
    (
        "fabric.h",
        "FABRIC_H",
        "fabric.rs",
        &["fabric.rs", "info.rs", "tostr.rs"],
        &[
            "stdint.h",
            "stddef.h",
            "sys/types.h",
            "sys/uio.h",
            "rdma/fi_errno.h",
        ],
    ),
    (
        "fi_eq.h",
        "FI_EQ_H",
        "eq.rs",
        &["eq.rs"],
        &["poll.h", "pthread.h", "rdma/fabric.h", "rdma/fi_errno.h"],
    ),
    (
        "fi_domain.h",
        "FI_DOMAIN_H",
        "domain.rs",
        &["domain.rs"],
        &["string.h", "rdma/fabric.h", "rdma/fi_eq.h"],
    ),
    (
        "fi_xpu.h",
        "FI_XPU_H",
        "xpu.rs",
        &["xpu.rs"],
        &["rdma/fabric.h", "rdma/fi_domain.h"],
    ),
    (
        "fi_endpoint.h",
        "FI_ENDPOINT_H",
        "endpoint.rs",
        &["endpoint.rs"],
        &["rdma/fabric.h", "rdma/fi_domain.h"],
    ),
    (
        "fi_cm.h",
        "FI_CM_H",
        "cm.rs",
        &["cm.rs"],
        &["rdma/fi_endpoint.h"],
    ),
    (
        "fi_rma.h",
        "FI_RMA_H",
        "rma.rs",
        &["rma.rs"],
        &["rdma/fabric.h", "rdma/fi_endpoint.h"],
    ),
    (
        "fi_tagged.h",
        "FI_TAGGED_H",
        "tagged.rs",
        &["tagged.rs"],
        &["rdma/fabric.h", "rdma/fi_endpoint.h"],
    ),
    (
        "fi_atomic.h",
        "FI_ATOMIC_H",
        "atomic.rs",
        &["atomic.rs"],
        &["rdma/fabric.h", "rdma/fi_endpoint.h", "rdma/fi_rma.h"],
    ),
    (
        "fi_collective.h",
        "FI_COLLECTIVE_H",
        "collective.rs",
        &["collective.rs"],
        &["rdma/fi_atomic.h", "rdma/fi_domain.h", "rdma/fi_cm.h"],
    ),
    (
        "fi_trigger.h",
        "FI_TRIGGER_H",
        "trigger.rs",
        &["trigger.rs"],
        &[
            "rdma/fabric.h",
            "rdma/fi_endpoint.h",
            "rdma/fi_rma.h",
            "rdma/fi_tagged.h",
            "rdma/fi_atomic.h",
        ],
    ),
    (
        "fi_ext.h",
        "FI_EXT_H",
        "ext.rs",
        &["ext.rs"],
        &[
            "stdbool.h",
            "rdma/fabric.h",
            "rdma/fi_eq.h",
            "rdma/fi_endpoint.h",
        ],
    ),
];

/// libc types that headers name by tag.
const LIBC_TAGS: &[(&str, &str)] = &[
    ("iovec", "struct iovec"),
    ("sockaddr", "struct sockaddr"),
    ("pollfd", "struct pollfd"),
    ("timespec", "struct timespec"),
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let abi = root.join("src/abi");
    let capi = root.join("src/capi");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/abi");
    println!("cargo:rerun-if-changed=src/capi");
    println!("cargo:rustc-check-cfg=cfg(oxfabric_symver)");
    if std::env::var_os("CARGO_FEATURE_SYMVER").is_some() {
        println!("cargo:rustc-cfg=oxfabric_symver");
    }

    // Which abi file defines each struct/union/enum.
    let mut owner: BTreeMap<String, (String, &'static str)> = BTreeMap::new();
    let mut raw_enums: BTreeSet<String> = BTreeSet::new();
    for &(_, _, src, _, _) in HEADERS {
        let path = abi.join(src);
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for item in scan_items(&text) {
            match item {
                Item::Tagged(kind, name) => {
                    owner.insert(name, (src.to_string(), kind));
                }
                Item::RawEnum(name) => {
                    raw_enums.insert(name);
                }
            }
        }
    }

    let out_dir = root.join("include/rdma");
    fs::create_dir_all(&out_dir).unwrap();
    for &(header, guard, src, capi_srcs, includes) in HEADERS {
        let abi_path = abi.join(src);
        if !abi_path.exists() {
            continue;
        }
        let mut cfg = cbindgen::Config {
            language: cbindgen::Language::C,
            style: cbindgen::Style::Tag,
            usize_is_size_t: true,
            cpp_compat: true,
            include_guard: Some(guard.to_string()),
            no_includes: true,
            documentation: true,
            documentation_style: cbindgen::DocumentationStyle::Doxy,
            header: Some(format!(
                "/* {header}: generated by oxfabric's build.rs from src/abi/{src}; do not edit. */"
            )),
            ..Default::default()
        };
        cfg.sys_includes = includes.iter().map(|s| s.to_string()).collect();
        cfg.function.sort_by = Some(cbindgen::SortKey::None);
        cfg.constant.sort_by = Some(cbindgen::SortKey::None);
        cfg.sort_by = cbindgen::SortKey::None;
        let top = abi.join("c").join(format!("{header}.top"));
        let end = abi.join("c").join(format!("{header}.end"));
        cfg.after_includes = fs::read_to_string(&top).ok();
        let end_text = fs::read_to_string(&end).ok();
        for (name, (file, kind)) in &owner {
            if file != src {
                cfg.export
                    .rename
                    .insert(name.clone(), format!("{kind} {name}"));
            } else if !name.starts_with("__anon") {
                cfg.export.include.push(name.clone());
            }
        }
        for e in &raw_enums {
            cfg.export
                .rename
                .insert(format!("{e}_raw"), format!("enum {e}"));
        }
        for (rust, c) in LIBC_TAGS {
            cfg.export.rename.insert(rust.to_string(), c.to_string());
        }
        // Type aliases defined in this file are exported too.
        if let Ok(text) = fs::read_to_string(&abi_path) {
            for alias in scan_aliases(&text) {
                cfg.export.include.push(alias);
            }
        }

        let mut builder = cbindgen::Builder::new()
            .with_config(cfg)
            .with_src(&abi_path);
        for c in capi_srcs {
            let p = capi.join(c);
            if p.exists() {
                builder = builder.with_src(p);
            }
        }
        let bindings = builder
            .generate()
            .unwrap_or_else(|e| panic!("cbindgen failed on {header}: {e}"));
        let mut buf = Vec::new();
        bindings.write(&mut buf);
        let mut text = inline_anonymous(&String::from_utf8(buf).unwrap());
        if let Some(end_text) = end_text {
            // Inside the include guard, before its closing #endif.
            let close = format!("#endif  /* {guard} */");
            let at = text.rfind(&close).expect("generated header has its guard");
            text.insert_str(at, &format!("{}\n\n", end_text.trim_end()));
        }
        write_if_changed(&out_dir.join(header), &text);
    }
}

enum Item {
    Tagged(&'static str, String),
    RawEnum(String),
}

/// Finds `pub struct|union|enum NAME` and `pub type NAME_raw` in a source file.
fn scan_items(text: &str) -> Vec<Item> {
    let mut items = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        let kind = [
            ("pub struct ", "struct"),
            ("pub union ", "union"),
            ("pub enum ", "enum"),
        ]
        .iter()
        .find_map(|(prefix, kind)| l.strip_prefix(prefix).map(|rest| (*kind, rest)));
        if let Some((kind, rest)) = kind {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                items.push(Item::Tagged(kind, name));
            }
            continue;
        }
        if let Some(rest) = l.strip_prefix("pub type ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if let Some(e) = name.strip_suffix("_raw") {
                items.push(Item::RawEnum(e.to_string()));
            }
        }
    }
    items
}

/// `pub type NAME = ...;` aliases that are not `_raw` enum stand-ins.
fn scan_aliases(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut ignore_next = false;
    for line in text.lines() {
        let l = line.trim_start();
        if l.contains("cbindgen:ignore") {
            ignore_next = true;
            continue;
        }
        if let Some(rest) = l.strip_prefix("pub type ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !ignore_next && !name.ends_with("_raw") {
                out.push(name);
            }
        }
        if !l.starts_with("///") && !l.starts_with("#[") {
            ignore_next = false;
        }
    }
    out
}

/// Replaces each use of a `__anon*` struct or union by its body, without a tag,
/// and drops its standalone definition.
fn inline_anonymous(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut bodies: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    let mut keep = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let def = ["union ", "struct "].iter().find_map(|kw| {
            let name = l.strip_prefix(kw)?.strip_suffix(" {")?;
            name.starts_with("__anon")
                .then(|| (kw.trim().to_string(), name.to_string()))
        });
        if let Some((kind, name)) = def {
            let mut body = Vec::new();
            i += 1;
            while lines[i] != "};" {
                body.push(lines[i].to_string());
                i += 1;
            }
            i += 1;
            // Drop the blank line and doc comment that cbindgen put before it.
            while keep.last().is_some_and(|l: &String| {
                l.is_empty() || l.starts_with("/*") || l.starts_with(" *")
            }) {
                keep.pop();
            }
            keep.push(String::new());
            bodies.insert(name, (kind, body));
            continue;
        }
        keep.push(l.to_string());
        i += 1;
    }
    let mut out = String::new();
    for l in keep {
        let trimmed = l.trim_start();
        let indent = &l[..l.len() - trimmed.len()];
        let hit = bodies
            .iter()
            .find(|(name, (kind, _))| trimmed.starts_with(&format!("{kind} {name} ")));
        if let Some((name, (kind, body))) = hit {
            let member = trimmed
                .trim_start_matches(&format!("{kind} {name} "))
                .trim_end_matches(';');
            out.push_str(&format!("{indent}{kind} {{\n"));
            for b in body {
                out.push_str(&format!("{indent}{b}\n"));
            }
            if member.starts_with("__anon") {
                out.push_str(&format!("{indent}}};\n"));
            } else {
                out.push_str(&format!("{indent}}} {member};\n"));
            }
        } else {
            out.push_str(&l);
            out.push('\n');
        }
    }
    // Collapse the runs of blank lines left by removed definitions.
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    out
}

fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::write(path, text).unwrap();
    }
}
