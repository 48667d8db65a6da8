//! Scans `../../src/abi/*.rs` and writes `$OUT_DIR/decls.rs`: one
//! `oxfabric_layout::Decl` per public struct, union, enum, constant and type
//! alias, with its Rust-side layout (size, alignment, every field's offset,
//! size and alignment) or value computed by the compiler from the real
//! `oxfabric::abi` items. Nothing here is hand-maintained: a new item in
//! src/abi is picked up on the next build.
//!
//! Conventions understood (see /work/notes/CONVENTIONS.md and build.rs):
//! * `E_raw` aliases stand for `enum E` and are not items of their own;
//! * a field whose type is a `__anon*` union/struct is expanded into that
//!   aggregate's members (a field named `__anon*` has no C name of its own,
//!   so `attr.mr_iov` is `mr_iov` in C);
//! * a `/// Since X.Y.` doc line on an item, field or variant gives the
//!   version that introduced it; `cbindgen:ignore` marks a Rust-only item.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

use syn::ext::IdentExt;

const INT_TYPES: &[&str] = &[
    "c_char",
    "c_schar",
    "c_uchar",
    "c_short",
    "c_ushort",
    "c_int",
    "c_uint",
    "c_long",
    "c_ulong",
    "c_longlong",
    "c_ulonglong",
    "size_t",
    "ssize_t",
    "off_t",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "isize",
    "usize",
];

struct Field {
    /// Rust token (`r#type` for a keyword).
    rust: String,
    /// Name without `r#`.
    name: String,
    since: Option<(u32, u32)>,
    /// Last path segment of the type, when it is a plain path.
    ty: Option<String>,
}

/// (Rust path, C designator, since, type name) of each C-visible member.
type Entries = Vec<(Vec<String>, Vec<String>, Option<(u32, u32)>, Option<String>)>;

struct Agg {
    module: String,
    name: String,
    /// C tag when it differs (partial mirrors).
    c_name: Option<String>,
    union: bool,
    since: Option<(u32, u32)>,
    ignore: bool,
    repr_c: bool,
    /// Has a private field: an opaque type with no C layout.
    opaque: bool,
    fields: Vec<Field>,
}

struct Enum {
    module: String,
    name: String,
    since: Option<(u32, u32)>,
    ignore: bool,
    repr_c: bool,
    variants: Vec<(String, Option<(u32, u32)>)>,
}

struct Simple {
    module: String,
    name: String,
    since: Option<(u32, u32)>,
    ignore: bool,
    ty: Option<String>,
    /// `&CStr` constant.
    cstr: bool,
}

#[derive(Default)]
struct Model {
    aggs: Vec<Agg>,
    enums: Vec<Enum>,
    consts: Vec<Simple>,
    aliases: Vec<Simple>,
    raw: BTreeMap<String, String>,     // E -> module of E_raw
    headers: BTreeMap<String, String>, // module -> header under rdma/
}

fn docs(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// `Since X.Y` in a doc line (`/// Since 2.7.`, or at the end of a sentence).
fn since(attrs: &[syn::Attribute]) -> Option<(u32, u32)> {
    for d in docs(attrs) {
        for (pos, _) in d.match_indices("Since ") {
            if pos > 0 && !d[..pos].ends_with(char::is_whitespace) {
                continue;
            }
            let v: String = d[pos + "Since ".len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut it = v.trim_end_matches('.').split('.');
            if let (Some(Ok(a)), Some(Ok(b))) =
                (it.next().map(str::parse), it.next().map(str::parse))
            {
                return Some((a, b));
            }
        }
    }
    None
}

/// `struct X` when the doc says the item holds "the leading fields of
/// `struct X`" (a partial mirror under another name, e.g. prov.rs).
fn prefix_of(attrs: &[syn::Attribute]) -> Option<String> {
    let text = docs(attrs).join(" ");
    let lower = text.to_lowercase();
    let pos = lower.find("leading fields of `struct ")?;
    let rest = &text[pos + "leading fields of `struct ".len()..];
    Some(rest.split('`').next()?.trim().to_string())
}

/// The header a file mirrors, from its `//! Mirror of ... `rdma/X.h``
/// line; `None` falls back to the file name.
fn header_of(file: &syn::File) -> Option<String> {
    let text = docs(&file.attrs).join("\n");
    let pos = text.find("`rdma/")?;
    let rest = &text[pos + "`rdma/".len()..];
    let h = rest.split('`').next()?;
    h.ends_with(".h").then(|| h.to_string())
}

fn ignored(attrs: &[syn::Attribute]) -> bool {
    docs(attrs).iter().any(|d| d.contains("cbindgen:ignore"))
}

fn has_cfg(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg"))
}

fn repr_c(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("repr") && {
            let mut c = false;
            let _ = a.parse_nested_meta(|m| {
                if m.path.is_ident("C") {
                    c = true;
                }
                Ok(())
            });
            c
        }
    })
}

fn last_segment(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().map(|s| s.ident.to_string())
        }
        _ => None,
    }
}

fn is_pub(v: &syn::Visibility) -> bool {
    matches!(v, syn::Visibility::Public(_))
}

fn fields_of(named: &syn::FieldsNamed) -> Vec<Field> {
    named
        .named
        .iter()
        .map(|f| {
            let id = f.ident.as_ref().unwrap();
            Field {
                rust: id.to_string(),
                name: id.unraw().to_string(),
                since: since(&f.attrs),
                ty: last_segment(&f.ty),
            }
        })
        .collect()
}

fn scan(model: &mut Model, module: &str, file: &syn::File) {
    for item in &file.items {
        match item {
            syn::Item::Struct(s) if is_pub(&s.vis) && !has_cfg(&s.attrs) => {
                let fields = match &s.fields {
                    syn::Fields::Named(n) => fields_of(n),
                    _ => Vec::new(),
                };
                let opaque = s.fields.iter().any(|f| !is_pub(&f.vis));
                model.aggs.push(Agg {
                    module: module.into(),
                    name: s.ident.to_string(),
                    c_name: prefix_of(&s.attrs),
                    union: false,
                    since: since(&s.attrs),
                    ignore: ignored(&s.attrs),
                    repr_c: repr_c(&s.attrs),
                    opaque,
                    fields,
                });
            }
            syn::Item::Union(u) if is_pub(&u.vis) && !has_cfg(&u.attrs) => {
                model.aggs.push(Agg {
                    module: module.into(),
                    name: u.ident.to_string(),
                    c_name: prefix_of(&u.attrs),
                    union: true,
                    since: since(&u.attrs),
                    ignore: ignored(&u.attrs),
                    repr_c: repr_c(&u.attrs),
                    opaque: u.fields.named.iter().any(|f| !is_pub(&f.vis)),
                    fields: fields_of(&u.fields),
                });
            }
            syn::Item::Enum(e) if is_pub(&e.vis) && !has_cfg(&e.attrs) => {
                model.enums.push(Enum {
                    module: module.into(),
                    name: e.ident.to_string(),
                    since: since(&e.attrs),
                    ignore: ignored(&e.attrs),
                    repr_c: repr_c(&e.attrs),
                    variants: e
                        .variants
                        .iter()
                        .filter(|v| matches!(v.fields, syn::Fields::Unit))
                        .map(|v| (v.ident.to_string(), since(&v.attrs)))
                        .collect(),
                });
            }
            syn::Item::Const(c) if is_pub(&c.vis) && !has_cfg(&c.attrs) => {
                let cstr = matches!(&*c.ty, syn::Type::Reference(r)
                    if last_segment(&r.elem).as_deref() == Some("CStr"));
                model.consts.push(Simple {
                    module: module.into(),
                    name: c.ident.to_string(),
                    since: since(&c.attrs),
                    ignore: ignored(&c.attrs),
                    ty: last_segment(&c.ty),
                    cstr,
                });
            }
            syn::Item::Type(t) if is_pub(&t.vis) && !has_cfg(&t.attrs) => {
                let name = t.ident.to_string();
                if let Some(e) = name.strip_suffix("_raw") {
                    model.raw.insert(e.to_string(), module.to_string());
                    continue;
                }
                model.aliases.push(Simple {
                    module: module.into(),
                    name,
                    since: since(&t.attrs),
                    ignore: ignored(&t.attrs),
                    ty: last_segment(&t.ty),
                    cstr: false,
                });
            }
            _ => {}
        }
    }
}

fn ver(v: Option<(u32, u32)>) -> String {
    match v {
        Some((a, b)) => format!("Some(({a}, {b}))"),
        None => "None".into(),
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    let abi = root.join("src/abi");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", abi.display());

    let mut model = Model::default();
    let mut files: Vec<PathBuf> = fs::read_dir(&abi)
        .unwrap_or_else(|e| panic!("{}: {e}", abi.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| p.file_stem().is_some_and(|s| s != "mod"))
        .collect();
    files.sort();
    for path in &files {
        let module = path.file_stem().unwrap().to_str().unwrap().to_string();
        let text = fs::read_to_string(path).unwrap();
        let file = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
        let header = header_of(&file).unwrap_or_else(|| match module.as_str() {
            "fabric" => "fabric.h".to_string(),
            m => format!("fi_{m}.h"),
        });
        model.headers.insert(module.clone(), header);
        scan(&mut model, &module, &file);
    }

    // Integer-ness of aliases (for signedness checks and constants), resolved
    // through alias chains.
    let alias_ty: BTreeMap<&str, &str> = model
        .aliases
        .iter()
        .filter_map(|a| a.ty.as_deref().map(|t| (a.name.as_str(), t)))
        .collect();
    let is_int = |ty: &str| {
        let mut t = ty;
        for _ in 0..8 {
            if INT_TYPES.contains(&t) || t.ends_with("_raw") {
                return true;
            }
            match alias_ty.get(t) {
                Some(next) => t = next,
                None => return false,
            }
        }
        false
    };
    let enum_names: Vec<&str> = model.enums.iter().map(|e| e.name.as_str()).collect();
    let anon: BTreeMap<&str, &Agg> = model
        .aggs
        .iter()
        .filter(|a| a.name.starts_with("__anon"))
        .map(|a| (a.name.as_str(), a))
        .collect();

    let named_aggs: Vec<&str> = model
        .aggs
        .iter()
        .filter(|a| !a.name.starts_with("__anon"))
        .map(|a| a.name.as_str())
        .collect();
    let mut out = String::new();
    out.push_str("// Generated by capi-tests/layout/build.rs from src/abi; do not edit.\n");
    out.push_str("#[allow(unused_unsafe, clippy::all)]\n");
    out.push_str("pub fn decls() -> Vec<::oxfabric_layout::Decl> {\n");
    out.push_str("    use ::oxfabric_layout::{field, Decl, Entity, Variant};\n");
    out.push_str("    use ::core::mem::{align_of, size_of};\n");
    out.push_str("    #[allow(unused_mut)]\n    let mut v: Vec<Decl> = Vec::new();\n");

    for a in model.aggs.iter().filter(|a| !a.name.starts_with("__anon")) {
        if a.opaque {
            writeln!(
                out,
                "    v.push(Decl {{ module: {:?}, header: {:?}, name: {:?}, since: {}, rust_only: {}, \
                 repr_c: true, entity: Entity::Opaque }});",
                a.module,
                model.headers[&a.module],
                a.name,
                ver(a.since),
                a.ignore
            )
            .unwrap();
            continue;
        }
        let path = format!("::oxfabric::abi::{}::{}", a.module, a.name);
        let mut fields = String::new();
        // (rust path, c path, since) with anonymous aggregates expanded.
        fn visit(
            f: &Field,
            rp: &[String],
            cp: &[String],
            inherited: Option<(u32, u32)>,
            anon: &BTreeMap<&str, &Agg>,
            out: &mut Entries,
            depth: usize,
        ) {
            let mut rp = rp.to_vec();
            rp.push(f.rust.clone());
            let mut cp = cp.to_vec();
            let named = !f.name.starts_with("__anon");
            if named {
                cp.push(f.name.clone());
            }
            let since = f.since.or(inherited);
            if named {
                out.push((rp.clone(), cp.clone(), since, f.ty.clone()));
            }
            if depth < 8 {
                if let Some(inner) = f.ty.as_deref().and_then(|t| anon.get(t)) {
                    for g in &inner.fields {
                        visit(g, &rp, &cp, since, anon, out, depth + 1);
                    }
                }
            }
        }
        for (top, f) in a.fields.iter().enumerate() {
            let mut entries = Vec::new();
            visit(f, &[], &[], None, &anon, &mut entries, 0);
            for (rp, cp, since, ty) in entries {
                // By-value aggregate (its size may differ between sets).
                let ty = ty.filter(|t| named_aggs.contains(&t.as_str()));
                writeln!(
                    fields,
                    "            field!({path}, {top}, {:?}, {:?}, {}, {:?}; {}),",
                    f.name,
                    cp.join("."),
                    ver(since),
                    ty,
                    rp.join(".")
                )
                .unwrap();
            }
        }
        writeln!(
            out,
            "    v.push(Decl {{ module: {:?}, header: {:?}, name: {:?}, since: {}, rust_only: {}, repr_c: {}, \
             entity: Entity::Aggregate {{ c_name: {:?}, union: {}, size: size_of::<{path}>(), align: align_of::<{path}>(), \
             fields: vec![\n{fields}        ] }} }});",
            a.module,
            model.headers[&a.module],
            a.name,
            ver(a.since),
            a.ignore,
            a.repr_c,
            a.c_name.as_deref().unwrap_or(&a.name),
            a.union
        )
        .unwrap();
    }

    for e in &model.enums {
        let path = format!("::oxfabric::abi::{}::{}", e.module, e.name);
        let raw = model
            .raw
            .get(&e.name)
            .map(|m| format!("::oxfabric::abi::{m}::{}_raw", e.name))
            .unwrap_or_else(|| path.clone());
        let mut vars = String::new();
        for (name, since) in &e.variants {
            writeln!(
                vars,
                "            Variant {{ name: {name:?}, since: {}, value: {path}::{name} as i64 as u64 }},",
                ver(*since)
            )
            .unwrap();
        }
        writeln!(
            out,
            "    v.push(Decl {{ module: {:?}, header: {:?}, name: {:?}, since: {}, rust_only: {}, repr_c: {}, \
             entity: Entity::Enum {{ size: size_of::<{raw}>(), variants: vec![\n{vars}        ] }} }});",
            e.module,
            model.headers[&e.module],
            e.name,
            ver(e.since),
            e.ignore,
            e.repr_c
        )
        .unwrap();
    }

    for c in &model.consts {
        let path = format!("::oxfabric::abi::{}::{}", c.module, c.name);
        let ty = c.ty.as_deref().unwrap_or("");
        let entity = if c.cstr {
            format!("Entity::Str {{ value: {path}.to_bytes() }}")
        } else if is_int(ty) || enum_names.contains(&ty) {
            format!("Entity::Const {{ value: Some({path} as i64 as u64) }}")
        } else {
            "Entity::Const { value: None }".to_string()
        };
        writeln!(
            out,
            "    v.push(Decl {{ module: {:?}, header: {:?}, name: {:?}, since: {}, rust_only: {}, repr_c: true, \
             entity: {entity} }});",
            c.module,
            model.headers[&c.module],
            c.name,
            ver(c.since),
            c.ignore
        )
        .unwrap();
    }

    for t in &model.aliases {
        let path = format!("::oxfabric::abi::{}::{}", t.module, t.name);
        let signed = if t.ty.as_deref().is_some_and(is_int) {
            format!("Some(!(0 as {path}) < (0 as {path}))")
        } else {
            "None".to_string()
        };
        writeln!(
            out,
            "    v.push(Decl {{ module: {:?}, header: {:?}, name: {:?}, since: {}, rust_only: {}, repr_c: true, \
             entity: Entity::Alias {{ size: size_of::<{path}>(), align: align_of::<{path}>(), signed: {signed} }} }});",
            t.module,
            model.headers[&t.module],
            t.name,
            ver(t.since),
            t.ignore
        )
        .unwrap();
    }

    out.push_str("    v\n}\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("decls.rs");
    if fs::read_to_string(&dest).ok().as_deref() != Some(out.as_str()) {
        fs::write(dest, out).unwrap();
    }
}
