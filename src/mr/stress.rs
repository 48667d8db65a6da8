//! Concurrency: two threads register and close while two others verify
//! continuously. A key known live for the whole verification must verify
//! (with consistent fields); a key known closed must not. The number of
//! registrations is `OX_STRESS_N` (default 200,000) for provider keys, a
//! quarter of that for requested keys.

use super::*;
use crate::error::Error;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

const WRITERS: usize = 2;
const VERIFIERS: usize = 2;
const CELLS: usize = 32;
const GRAVE: usize = 64;
const RW: Access = Access::REMOTE_READ.union(Access::REMOTE_WRITE);

fn stress_n() -> usize {
    std::env::var("OX_STRESS_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000)
}

struct Cell {
    key: AtomicU64,
    /// Even and nonzero: `key` is live. Odd: being replaced.
    ver: AtomicU64,
}

struct Board {
    cells: Vec<Cell>,
    grave: Vec<AtomicU64>,
    done: AtomicBool,
    /// Live and dead checks the verifiers have made so far: the writers
    /// go on past their count until both are nonzero (on a loaded machine
    /// the verifiers may not have run at all by then).
    live_checks: AtomicU64,
    dead_checks: AtomicU64,
}

impl Board {
    fn checked_both(&self) -> bool {
        self.live_checks.load(SeqCst) > 0 && self.dead_checks.load(SeqCst) > 0
    }
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// Region `n` of writer `w` at cell `c`: where it is, and the context that
/// lets a verifier check the fields it got belong together.
fn layout(w: usize, c: usize, n: u64) -> (Vec<(u64, u64)>, u64) {
    let base = (((w * CELLS + c) as u64 + 1) << 24) | ((n % 256) << 12);
    let iovs = if n % 4 == 0 {
        vec![(base, 64), (base + 0x800, 32), (base + 0x400, 16)]
    } else {
        vec![(base, 64 + n % 64)]
    };
    (iovs, base)
}

/// Registers at least `count` regions (more while the verifiers have not
/// yet checked both a live and a dead key, up to 50 times `count`, or 10
/// seconds); returns how many it registered.
fn writer(r: &Registry, b: &Board, w: usize, count: usize, prov: bool) -> u64 {
    let mut handles: Vec<Option<Handle>> = vec![None; CELLS];
    let mut rng = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
    let mut grave_at = 0;
    let start = std::time::Instant::now();
    let mut n = 0u64;
    while n < count as u64
        || (!b.checked_both()
            && n < 50 * count as u64
            && start.elapsed() < std::time::Duration::from_secs(10))
    {
        let c = (xorshift(&mut rng) % CELLS as u64) as usize;
        let cell = &b.cells[w * CELLS + c];
        let v = cell.ver.load(SeqCst);
        cell.ver.store(v | 1, SeqCst);
        if let Some(h) = handles[c].take() {
            r.close(&h).unwrap();
            b.grave[w * GRAVE + grave_at % GRAVE].store(h.key(), SeqCst);
            grave_at += 1;
        }
        let (iovs, ctx) = layout(w, c, n);
        let mut q = Request::new(&iovs, RW);
        q.context = ctx;
        // Requested keys: unique forever, so a dead key stays dead.
        q.requested_key = ((w as u64) << 40) | n;
        let h = r.register(&q).unwrap();
        assert!(prov || h.key() == q.requested_key);
        handles[c] = Some(h);
        cell.key.store(h.key(), SeqCst);
        cell.ver.store((v | 1) + 1, SeqCst);
        n += 1;
    }
    for (c, h) in handles.iter().enumerate() {
        if let Some(h) = h {
            b.cells[w * CELLS + c].ver.fetch_or(1, SeqCst);
            r.close(h).unwrap();
        }
    }
    n
}

/// Returns (live checks, dead checks) made.
fn verifier(r: &Registry, b: &Board, seed: u64) -> (u64, u64) {
    let mut rng = seed;
    let (mut live, mut dead) = (0, 0);
    while !b.done.load(SeqCst) {
        let x = xorshift(&mut rng);
        let cell = &b.cells[x as usize % b.cells.len()];
        let off = if x & (1 << 40) != 0 { 63 } else { 0 };
        let v1 = cell.ver.load(SeqCst);
        let k = cell.key.load(SeqCst);
        let got = r.verify(k, off, 1, Access::REMOTE_WRITE, None);
        let v2 = cell.ver.load(SeqCst);
        if v1 == v2 && v1 != 0 && v1 & 1 == 0 {
            let t = got.unwrap_or_else(|e| panic!("live key {k:#x} refused: {e:?}"));
            assert_eq!(t.pieces(), &[(t.context + off, 1)], "torn read of {k:#x}");
            live += 1;
            b.live_checks.fetch_add(1, SeqCst);
        }
        let g = b.grave[(x >> 20) as usize % b.grave.len()].load(SeqCst);
        if g != KEY_NOTAVAIL {
            match r.verify(g, 0, 1, Access::REMOTE_READ, None) {
                Err(e) => assert_eq!(e, Error::INVAL, "dead key {g:#x}"),
                Ok(t) => panic!("dead key {g:#x} verified: {t:?}"),
            }
            dead += 1;
            b.dead_checks.fetch_add(1, SeqCst);
        }
    }
    (live, dead)
}

fn run(prov: bool, total: usize) {
    let r = Registry::with_config(Config {
        prov_keys: prov,
        secret: Some(0x0571_2e55),
        ..Config::default()
    })
    .unwrap();
    let b = Board {
        cells: (0..WRITERS * CELLS)
            .map(|_| Cell {
                key: AtomicU64::new(KEY_NOTAVAIL),
                ver: AtomicU64::new(0),
            })
            .collect(),
        grave: (0..WRITERS * GRAVE)
            .map(|_| AtomicU64::new(KEY_NOTAVAIL))
            .collect(),
        done: AtomicBool::new(false),
        live_checks: AtomicU64::new(0),
        dead_checks: AtomicU64::new(0),
    };
    let (registered, checks) = std::thread::scope(|s| {
        let vs: Vec<_> = (0..VERIFIERS)
            .map(|i| {
                let (r, b) = (&r, &b);
                s.spawn(move || verifier(r, b, 0x1234_5678 + i as u64))
            })
            .collect();
        let ws: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (r, b) = (&r, &b);
                s.spawn(move || writer(r, b, w, total / WRITERS, prov))
            })
            .collect();
        let registered: u64 = ws.into_iter().map(|w| w.join().unwrap()).sum();
        b.done.store(true, SeqCst);
        let checks = vs
            .into_iter()
            .map(|v| v.join().unwrap())
            .fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
        (registered, checks)
    });
    let s = r.stats();
    assert_eq!(s.live_regions, 0);
    assert_eq!(s.live_bytes, 0);
    assert!(registered >= (total / WRITERS * WRITERS) as u64);
    assert_eq!(s.registrations, registered);
    assert_eq!(s.closes, s.registrations);
    assert_eq!(s.failures, 0);
    // Nothing leaked: slots were recycled, never more than were live.
    assert!(
        r.slots.high_water() <= WRITERS * CELLS,
        "{} slots used",
        r.slots.high_water()
    );
    assert!(checks.0 > 0 && checks.1 > 0, "checks made: {checks:?}");
    eprintln!(
        "stress ({} keys): {} registrations, {} live and {} dead keys checked",
        if prov { "provider" } else { "requested" },
        s.registrations,
        checks.0,
        checks.1
    );
}

/// Sub-regions come and go under one base from two threads while a third
/// keeps trying to close the base and a fourth verifies it: the base
/// closes only once no sub-region is left, and stays valid until then.
#[test]
fn concurrent_sub_regions_and_base_close() {
    let r = Registry::with_config(Config {
        secret: Some(77),
        ..Config::default()
    })
    .unwrap();
    let rounds = (stress_n() / 400).max(10);
    for _ in 0..rounds {
        let base = r
            .register(&Request::new(&[(0x10_0000, 0x1000)], RW))
            .unwrap();
        let closed = AtomicBool::new(false);
        // Odd while a close of the base is in flight.
        let attempt = AtomicU64::new(0);
        let live_subs = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let (r, closed, live_subs) = (&r, &closed, &live_subs);
                s.spawn(move || {
                    for i in 0..50u64 {
                        let iov = [(0x10_0000 + (t * 64 + i) * 8, 8)];
                        let mut q = Request::new(&iov, Access::REMOTE_READ);
                        q.parent = Some(base);
                        match r.register(&q) {
                            Ok(h) => {
                                live_subs.fetch_add(1, SeqCst);
                                assert!(!closed.load(SeqCst), "sub-region under a closed base");
                                assert!(r.verify(h.key(), 0, 8, Access::REMOTE_READ, None).is_ok());
                                live_subs.fetch_sub(1, SeqCst);
                                r.close(&h).unwrap();
                            }
                            Err(e) => {
                                assert_eq!(e, Error::INVAL);
                                return;
                            }
                        }
                    }
                });
            }
            s.spawn(|| loop {
                attempt.fetch_add(1, SeqCst);
                match r.close(&base) {
                    Ok(()) => {
                        closed.store(true, SeqCst);
                        assert_eq!(live_subs.load(SeqCst), 0);
                        return;
                    }
                    Err(e) => assert_eq!(e, Error::BUSY),
                }
                attempt.fetch_add(1, SeqCst);
                std::thread::yield_now();
            });
            s.spawn(|| {
                while !closed.load(SeqCst) {
                    let a = attempt.load(SeqCst);
                    let got = r.verify(base.key(), 0, 8, RW, None);
                    if a & 1 == 0 && attempt.load(SeqCst) == a {
                        assert!(got.is_ok(), "base refused while no close ran: {got:?}");
                    }
                }
            });
        });
    }
    assert_eq!(r.stats().live_regions, 0);
}

#[test]
fn concurrent_register_close_verify_provider_keys() {
    run(true, stress_n());
}

#[test]
fn concurrent_register_close_verify_requested_keys() {
    run(false, stress_n() / 4);
}
