//! Engine benchmarks: `cargo bench --bench verify` (about a minute).
//!
//! - verify with 1,000,000 live regions: one hot key, and keys taken in a
//!   random order over all of them (cache misses included); each alone and
//!   while another thread registers and closes continuously;
//! - the same for requested keys (through the index);
//! - a register + close pair: one iov and four iovs.
//!
//! Criterion's medians are in `target/criterion/<group>/<name>/new/estimates.json`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use oxfabric::mr::{Access, Config, Registry, Request};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const LIVE: usize = 1_000_000;
const RW: Access = Access::REMOTE_READ.union(Access::REMOTE_WRITE);

fn registry(prov_keys: bool) -> Registry {
    Registry::with_config(Config {
        prov_keys,
        secret: Some(0xbe4c),
        ..Config::default()
    })
    .unwrap()
}

/// Fills `r` with `LIVE` one-page regions; returns their keys in a
/// random order.
fn fill(r: &Registry) -> Vec<u64> {
    let mut keys = Vec::with_capacity(LIVE);
    for i in 0..LIVE as u64 {
        let iov = [(0x1000_0000 + i * 4096, 4096)];
        let mut q = Request::new(&iov, RW);
        q.requested_key = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 1;
        q.context = i;
        keys.push(r.register(&q).unwrap().key());
    }
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    for i in (1..keys.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        keys.swap(i, (s % (i as u64 + 1)) as usize);
    }
    keys
}

/// Registers and closes on `r` until `stop`.
fn churn(r: &Registry, stop: &AtomicBool) {
    let mut k = 1u64 << 62;
    while !stop.load(Ordering::Relaxed) {
        let iov = [(0x9000_0000, 4096)];
        let mut q = Request::new(&iov, RW);
        q.requested_key = k;
        k += 1;
        let h = r.register(&q).unwrap();
        r.close(&h).unwrap();
    }
}

fn verify_benches(c: &mut Criterion) {
    for prov in [true, false] {
        let kind = if prov { "provider" } else { "requested" };
        let r = registry(prov);
        let keys = fill(&r);
        eprintln!(
            "{kind} keys: engine memory {:.1} bytes per live region at {LIVE}",
            r.stats().engine_bytes as f64 / LIVE as f64
        );
        let mut g = c.benchmark_group(format!("verify_1M_live_{kind}_keys"));
        for churning in [false, true] {
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                if churning {
                    s.spawn(|| churn(&r, &stop));
                }
                let tag = if churning { "with_churn" } else { "quiet" };
                let hot = keys[keys.len() / 2];
                g.bench_function(BenchmarkId::new("hot_key", tag), |b| {
                    b.iter(|| r.verify(black_box(hot), 64, 8, Access::REMOTE_WRITE, None))
                });
                let mut i = 0usize;
                g.bench_function(BenchmarkId::new("random_keys", tag), |b| {
                    b.iter(|| {
                        i = if i + 1 == keys.len() { 0 } else { i + 1 };
                        r.verify(keys[i], 64, 8, Access::REMOTE_WRITE, None)
                    })
                });
                stop.store(true, Ordering::Relaxed);
            });
        }
        g.finish();
        assert_eq!(r.stats().live_regions, LIVE);
        assert_eq!(r.stats().denied, 0);
    }
}

fn register_close_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("register_close");
    for prov in [true, false] {
        let kind = if prov { "provider" } else { "requested" };
        let r = registry(prov);
        for n in [1usize, 4] {
            let iovs: Vec<(u64, u64)> = (0..n as u64)
                .map(|i| (0x1000_0000 + i * 8192, 4096))
                .collect();
            let mut k = 0u64;
            g.bench_function(
                BenchmarkId::new(format!("{kind}_keys"), format!("{n}_iov")),
                |b| {
                    b.iter(|| {
                        let mut q = Request::new(&iovs, RW);
                        q.requested_key = k;
                        k += 1;
                        let h = r.register(&q).unwrap();
                        r.close(&h).unwrap();
                    })
                },
            );
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = verify_benches, register_close_benches
}
criterion_main!(benches);
