//! Layout tests of `src/abi` against libfabric 1.17, 2.1 and our own
//! `include/rdma`; see the crate documentation in `src/lib.rs` for how the
//! checks are derived. Prints one block per header set and ends with
//! `N passed, N failed`; exits non-zero on any failure.

include!(concat!(env!("OUT_DIR"), "/decls.rs"));

fn main() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    let sets = oxfabric_layout::default_sets(&workspace);
    let workdir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oxfabric-layout");
    let verbose = std::env::var_os("OXFABRIC_LAYOUT_VERBOSE").is_some_and(|v| v != "0");
    let decls = decls();
    let totals = oxfabric_layout::run(
        &decls,
        &sets,
        &workdir,
        verbose,
        &mut std::io::stdout().lock(),
    );
    if totals.failed > 0 {
        std::process::exit(1);
    }
}
