//! Unit tests of the registry: every error path, states, sub-regions,
//! multi-iov addressing, and statistics.

use super::*;
use crate::mr::region::Access;
use crate::mr::Target;
use std::collections::HashSet;

const RW: Access = Access::REMOTE_READ.union(Access::REMOTE_WRITE);

fn prov() -> Registry {
    Registry::with_config(Config {
        secret: Some(0x5eed),
        ..Config::default()
    })
    .unwrap()
}

fn requested(key_size: usize) -> Registry {
    Registry::with_config(Config {
        key_size,
        prov_keys: false,
        secret: Some(0x5eed),
        ..Config::default()
    })
    .unwrap()
}

/// Provider keys, at most 4 iovs a region.
fn four_iovs() -> Registry {
    Registry::with_config(Config {
        max_iovs: 4,
        secret: Some(1),
        ..Config::default()
    })
    .unwrap()
}

fn reg(r: &Registry, iovs: &[(u64, u64)], access: Access, flags: RegFlags) -> Result<Handle> {
    let mut q = Request::new(iovs, access);
    q.flags = flags;
    r.register(&q)
}

fn pieces(t: Result<Target>) -> Vec<(u64, u64)> {
    t.unwrap().pieces().to_vec()
}

#[test]
fn config_is_checked() {
    for key_size in [0, 9] {
        let c = Config {
            key_size,
            ..Config::default()
        };
        assert_eq!(Registry::with_config(c).err(), Some(Error::INVAL));
    }
    for max_iovs in [0, MAX_IOVS + 1] {
        let c = Config {
            max_iovs,
            ..Config::default()
        };
        assert_eq!(Registry::with_config(c).err(), Some(Error::INVAL));
    }
    let r = Registry::with_config(Config::default()).unwrap();
    assert!(r.prov_keys());
    assert_eq!(r.capacity(), 1 << 24);
    assert_eq!(r.generation_bits(), 40);
}

#[test]
fn offset_addressing_single_iov() {
    let r = prov();
    let mut q = Request::new(&[(0x10000, 4096)], RW);
    q.context = 77;
    let h = r.register(&q).unwrap();
    let t = r
        .verify(h.key(), 100, 8, Access::REMOTE_WRITE, None)
        .unwrap();
    assert_eq!(t.context, 77);
    assert_eq!(t.slot, h.slot());
    assert_eq!(t.pieces(), &[(0x10000 + 100, 8)]);
    assert_eq!(
        pieces(r.verify(h.key(), 4088, 8, RW, None)),
        [(0x10000 + 4088, 8)]
    );
    assert_eq!(
        r.verify(h.key(), 4089, 8, RW, None).unwrap_err(),
        Error::ACCES
    );
    assert_eq!(
        r.verify(h.key(), 0x10000, 8, RW, None).unwrap_err(),
        Error::ACCES,
        "a virtual address is out of range without VIRT_ADDR"
    );
}

#[test]
fn virt_addr_single_iov() {
    let r = prov();
    let h = reg(&r, &[(0x10000, 4096)], RW, RegFlags::VIRT_ADDR).unwrap();
    assert_eq!(
        pieces(r.verify(h.key(), 0x10000 + 100, 8, RW, None)),
        [(0x10000 + 100, 8)]
    );
    assert!(r.verify(h.key(), 0x10000 + 4088, 8, RW, None).is_ok());
    for (addr, len) in [(0x10000 + 4089, 8), (0xfff8, 16), (100, 8)] {
        assert_eq!(
            r.verify(h.key(), addr, len, RW, None).unwrap_err(),
            Error::ACCES,
            "{addr:#x}+{len}"
        );
    }
    assert_eq!(r.region(&h).unwrap().base_addr, 0x10000);
}

#[test]
fn malformed_requests_are_inval() {
    let r = four_iovs();
    let five = [(0x1000, 1); 5];
    let bad: [&[(u64, u64)]; 5] = [
        &[],
        &five,
        &[(0x1000, 0)],
        &[(u64::MAX - 1, 4)],
        &[(0, 1 << 63), (1 << 63, 1 << 63)],
    ];
    for iovs in bad {
        assert_eq!(
            reg(&r, iovs, RW, RegFlags::empty()),
            Err(Error::INVAL),
            "{iovs:?}"
        );
    }
    let iov = [(0x1000, 16)];
    let mut q = Request::new(&iov, RW);
    q.page_size = 3;
    assert_eq!(r.register(&q), Err(Error::INVAL));
    q.page_size = 4096;
    q.iface = 16;
    assert_eq!(r.register(&q), Err(Error::INVAL));
    q.iface = 0;
    assert!(r.register(&q).is_ok());
    // Four iovs is the limit, not past it; a NULL address is the glue's
    // business, not the engine's.
    assert!(reg(&r, &[(0, 1); 4], RW, RegFlags::empty()).is_ok());
    let s = r.stats();
    assert_eq!((s.failures, s.registrations, s.live_regions), (7, 2, 2));
}

#[test]
fn check_iovs_names_the_faulty_iov_and_register_checked_takes_only_its_own() {
    let r = four_iovs();
    type Case<'a> = (&'a [(u64, u64)], bool, IovFault);
    let cases: [Case; 6] = [
        (&[], false, IovFault::Count(0)),
        (&[(0x1000, 1); 5], false, IovFault::Count(5)),
        (&[(0x1000, 8), (0x2000, 0)], false, IovFault::Empty(1)),
        (&[(0x1000, 8), (0, 8)], true, IovFault::Null(1)),
        (&[(0x1000, 8), (u64::MAX - 1, 4)], false, IovFault::Wraps(1)),
        (&[(1, 1 << 63), (1 << 62, 1 << 63)], false, IovFault::Total),
    ];
    for (iovs, refuse_null, want) in cases {
        assert_eq!(
            r.check_iovs(iovs, refuse_null).map(|_| ()),
            Err(want),
            "{iovs:?}"
        );
    }
    // Address 0 is the engine's to accept unless asked.
    assert!(r.check_iovs(&[(0, 8)], false).is_ok());
    // Checked iovs register their own request, not another one's.
    let a = [(0x1000u64, 64u64)];
    let b = [(0x1000u64, 64u64)];
    let c = r.check_iovs(&a, true).unwrap();
    assert_eq!(
        r.register_checked(&Request::new(&b, Access::all()), c),
        Err(Error::INVAL)
    );
    let h = r
        .register_checked(&Request::new(&a, Access::all()), c)
        .unwrap();
    assert_eq!(r.region(&h).unwrap().len, 64);
    let s = r.stats();
    assert_eq!((s.failures, s.live_regions), (1, 1));
}

#[test]
fn requested_key_rules() {
    let r = requested(8);
    let iov = [(0x1000, 16)];
    let mut q = Request::new(&iov, RW);
    q.requested_key = KEY_NOTAVAIL;
    assert_eq!(r.register(&q), Err(Error::KEYREJECTED));
    q.requested_key = KEY_NOTAVAIL - 1;
    let a = r.register(&q).unwrap();
    assert_eq!(a.key(), KEY_NOTAVAIL - 1);
    assert_eq!(r.register(&q), Err(Error::NOKEY));
    q.requested_key = 0;
    let z = r.register(&q).unwrap();
    assert_eq!(z.key(), 0);
    assert!(r.verify(0, 0, 16, RW, None).is_ok());
    r.close(&a).unwrap();
    q.requested_key = KEY_NOTAVAIL - 1;
    let b = r.register(&q).unwrap();
    assert_eq!(b.key(), a.key());
    assert_eq!(r.close(&a), Err(Error::INVAL), "old handle stays dead");
    assert_eq!(r.handle(b.key()), Ok(b));

    let small = requested(2);
    q.requested_key = 0x1_0000;
    assert_eq!(small.register(&q), Err(Error::KEYREJECTED));
    q.requested_key = 0xffff;
    assert!(small.register(&q).is_ok());
    assert_eq!(
        small
            .verify(0x1_0000, 0, 1, Access::empty(), None)
            .unwrap_err(),
        Error::INVAL
    );
}

#[test]
fn provider_keys_are_unique_never_notavail_and_stale_after_close() {
    let r = prov();
    let iov = [(0x1000, 16)];
    let mut live = Vec::new();
    let mut seen = HashSet::new();
    for i in 0..2000 {
        let h = reg(&r, &iov, RW, RegFlags::empty()).unwrap();
        assert_ne!(h.key(), KEY_NOTAVAIL);
        assert!(seen.insert(h.key()), "key {:#x} issued twice", h.key());
        live.push(h);
        if i % 3 == 0 {
            let old = live.swap_remove(i % live.len());
            r.close(&old).unwrap();
            assert_eq!(r.close(&old), Err(Error::INVAL), "double close");
            assert_eq!(
                r.verify(old.key(), 0, 1, RW, None).unwrap_err(),
                Error::INVAL
            );
            assert_eq!(r.region(&old), Err(Error::INVAL));
            assert_eq!(r.enable(&old), Err(Error::INVAL));
        }
    }
    for h in &live {
        assert!(r.verify(h.key(), 0, 16, RW, None).is_ok());
    }
    assert_eq!(r.stats().live_regions, live.len());
}

#[test]
fn unknown_keys_are_inval() {
    for r in [prov(), requested(8)] {
        let h = reg(&r, &[(0x1000, 16)], RW, RegFlags::empty());
        let key = h.map_or(1, |h| h.key());
        for k in [
            key ^ 1,
            key ^ (1 << 40),
            0x1234_5678_9abc_def0,
            KEY_NOTAVAIL,
        ] {
            assert_eq!(r.verify(k, 0, 1, RW, None).unwrap_err(), Error::INVAL);
        }
        assert_eq!(r.handle(key ^ 1), Err(Error::INVAL));
        assert!(r.stats().denied >= 4);
    }
    let small = Registry::with_config(Config {
        key_size: 2,
        secret: Some(3),
        ..Config::default()
    })
    .unwrap();
    assert_eq!(
        small.verify(0x1_0000, 0, 1, RW, None).unwrap_err(),
        Error::INVAL,
        "outside the key size"
    );
}

#[test]
fn access_bits_and_ranges_are_acces() {
    let r = prov();
    let h = reg(&r, &[(0x1000, 64)], Access::REMOTE_READ, RegFlags::empty()).unwrap();
    let k = h.key();
    assert_eq!(
        r.verify(k, 0, 8, Access::REMOTE_WRITE, None).unwrap_err(),
        Error::ACCES
    );
    assert_eq!(r.verify(k, 0, 8, RW, None).unwrap_err(), Error::ACCES);
    assert_eq!(
        r.verify(k, 60, 8, Access::REMOTE_READ, None).unwrap_err(),
        Error::ACCES
    );
    assert_eq!(
        r.verify(k, u64::MAX, 2, Access::REMOTE_READ, None)
            .unwrap_err(),
        Error::ACCES,
        "overflow"
    );
    assert_eq!(
        r.verify(k, 2, u64::MAX, Access::REMOTE_READ, None)
            .unwrap_err(),
        Error::ACCES,
        "overflow"
    );
    // Zero-length: inside or at the end only, no pieces.
    assert_eq!(pieces(r.verify(k, 64, 0, Access::REMOTE_READ, None)), []);
    assert_eq!(pieces(r.verify(k, 0, 0, Access::REMOTE_READ, None)), []);
    assert_eq!(
        r.verify(k, 65, 0, Access::REMOTE_READ, None).unwrap_err(),
        Error::ACCES
    );
    // No rights asked: range and state only.
    assert!(r.verify(k, 0, 64, Access::empty(), None).is_ok());
    assert_eq!(r.stats().denied, 6);
}

#[test]
fn verify_into_writes_what_verify_returns_and_leaves_out_alone_on_a_refusal() {
    let r = four_iovs();
    let one = reg(&r, &[(0x1000, 64)], RW, RegFlags::empty()).unwrap();
    let many = reg(&r, &[(0x4000, 16), (0x8000, 16)], RW, RegFlags::empty()).unwrap();
    for (k, addr, len) in [(one.key(), 8, 16), (many.key(), 8, 16), (one.key(), 64, 0)] {
        let mut out = None;
        r.verify_into(k, addr, len, Access::REMOTE_WRITE, None, &mut out)
            .unwrap();
        assert!(out.is_some());
        assert_eq!(out, r.verify(k, addr, len, Access::REMOTE_WRITE, None).ok());
    }
    // A refusal (a range past the end, an unknown key) writes nothing:
    // `out` keeps the last target written into it.
    let mut out = None;
    r.verify_into(many.key(), 0, 32, RW, None, &mut out)
        .unwrap();
    let before = out.clone();
    assert_eq!(
        before.as_ref().map(Target::pieces),
        Some(&[(0x4000, 16), (0x8000, 16)][..])
    );
    assert_eq!(
        r.verify_into(many.key(), 8, 32, RW, None, &mut out),
        Err(Error::ACCES)
    );
    assert_eq!(
        r.verify_into(one.key() ^ 0x55, 0, 8, RW, None, &mut out),
        Err(Error::INVAL)
    );
    assert_eq!(out, before);
}

#[test]
fn disabled_regions_until_enable() {
    let r = prov();
    let h = reg(&r, &[(0x1000, 64)], RW, RegFlags::DISABLED).unwrap();
    assert!(!r.region(&h).unwrap().enabled);
    assert_eq!(r.verify(h.key(), 0, 8, RW, None).unwrap_err(), Error::ACCES);
    r.bind(&h, Bindings::COUNTER).unwrap();
    r.enable(&h).unwrap();
    r.enable(&h).unwrap();
    assert!(r.verify(h.key(), 0, 8, RW, None).is_ok());
    assert_eq!(r.bind(&h, Bindings::COUNTER), Err(Error::OPBADSTATE));
    let info = r.region(&h).unwrap();
    assert!(info.enabled);
    assert_eq!(info.bindings, Bindings::COUNTER);
    r.close(&h).unwrap();
    assert_eq!(r.enable(&h), Err(Error::INVAL));
    assert_eq!(r.bind(&h, Bindings::COUNTER), Err(Error::INVAL));
}

#[test]
fn endpoint_regions_need_a_binding_before_enable() {
    let r = prov();
    let h = reg(
        &r,
        &[(0x1000, 64)],
        RW,
        RegFlags::DISABLED | RegFlags::NEEDS_EP,
    )
    .unwrap();
    assert_eq!(r.enable(&h), Err(Error::OPBADSTATE));
    assert_eq!(r.verify(h.key(), 0, 8, RW, None).unwrap_err(), Error::ACCES);
    r.bind(&h, Bindings::ENDPOINT).unwrap();
    r.enable(&h).unwrap();
    assert!(r.verify(h.key(), 0, 8, RW, None).is_ok());
    assert_eq!(r.bind(&h, Bindings::ENDPOINT), Err(Error::OPBADSTATE));
    // A region enabled from the start may be bound at any time.
    let e = reg(&r, &[(0x1000, 64)], RW, RegFlags::empty()).unwrap();
    r.bind(&e, Bindings::COUNTER).unwrap();
    assert!(r.verify(e.key(), 0, 8, RW, None).is_ok());
}

#[test]
fn single_use_regions_are_consumed_once() {
    for r in [prov(), requested(8)] {
        let mut q = Request::new(&[(0x1000, 64)], RW);
        q.flags = RegFlags::SINGLE_USE;
        q.requested_key = 42;
        let h = r.register(&q).unwrap();
        // A refused access does not consume.
        assert_eq!(
            r.verify(h.key(), 60, 8, RW, None).unwrap_err(),
            Error::ACCES
        );
        assert!(!r.region(&h).unwrap().consumed);
        assert!(r.verify(h.key(), 0, 8, RW, None).is_ok());
        assert!(r.region(&h).unwrap().consumed);
        assert_eq!(r.verify(h.key(), 0, 8, RW, None).unwrap_err(), Error::ACCES);
        r.close(&h).unwrap();
    }
}

#[test]
fn single_use_is_consumed_by_exactly_one_racing_verifier() {
    let r = prov();
    for _ in 0..200 {
        let h = reg(&r, &[(0x1000, 64)], RW, RegFlags::SINGLE_USE).unwrap();
        let wins = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    if r.verify(h.key(), 0, 8, RW, None).is_ok() {
                        wins.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(wins.load(Ordering::Relaxed), 1);
        r.close(&h).unwrap();
    }
}

#[test]
fn auth_keys() {
    let r = prov();
    let d = r.auth_digest(b"tenant-a");
    assert_eq!(d, r.auth_digest(b"tenant-a"));
    assert_ne!(d, r.auth_digest(b"tenant-b"));
    assert_ne!(r.auth_digest(b""), r.auth_digest(&[0]));
    let mut q = Request::new(&[(0x1000, 64)], RW);
    q.auth = Some(d);
    let h = r.register(&q).unwrap();
    assert!(r.region(&h).unwrap().has_auth);
    assert_eq!(r.verify(h.key(), 0, 8, RW, None).unwrap_err(), Error::ACCES);
    assert_eq!(
        r.verify(h.key(), 0, 8, RW, Some(d ^ 1)).unwrap_err(),
        Error::ACCES
    );
    assert!(r.verify(h.key(), 0, 8, RW, Some(d)).is_ok());
    let open = reg(&r, &[(0x1000, 64)], RW, RegFlags::empty()).unwrap();
    assert!(r.verify(open.key(), 0, 8, RW, Some(d)).is_ok());
    assert!(r.verify(open.key(), 0, 8, RW, None).is_ok());
}

#[test]
fn multi_iov_offsets_span_iovs() {
    let r = prov();
    let iovs = [(0x1000, 0x10), (0x5000, 0x20), (0x9000, 0x8)];
    let h = reg(&r, &iovs, RW, RegFlags::empty()).unwrap();
    let k = h.key();
    assert_eq!(pieces(r.verify(k, 0x4, 0x8, RW, None)), [(0x1004, 0x8)]);
    assert_eq!(
        pieces(r.verify(k, 0x8, 0x20, RW, None)),
        [(0x1008, 0x8), (0x5000, 0x18)]
    );
    assert_eq!(
        pieces(r.verify(k, 0, 0x38, RW, None)),
        [(0x1000, 0x10), (0x5000, 0x20), (0x9000, 0x8)]
    );
    assert_eq!(pieces(r.verify(k, 0x30, 0x8, RW, None)), [(0x9000, 0x8)]);
    assert_eq!(pieces(r.verify(k, 0x38, 0, RW, None)), []);
    assert_eq!(r.verify(k, 0x37, 2, RW, None).unwrap_err(), Error::ACCES);
    assert_eq!(r.iovs(&h).unwrap(), iovs);
    let info = r.region(&h).unwrap();
    assert_eq!((info.len, info.iov_count, info.base_addr), (0x38, 3, 0));
    assert_eq!(r.stats().live_bytes, 0x38);
    r.close(&h).unwrap();
    assert_eq!(r.stats().live_bytes, 0);
}

#[test]
fn multi_iov_virtual_addresses_must_be_registered_bytes() {
    let r = prov();
    // Two adjacent iovs (out of order) and one apart.
    let iovs = [(0x1100, 0x100), (0x1000, 0x100), (0x3000, 0x100)];
    let h = reg(&r, &iovs, RW, RegFlags::VIRT_ADDR).unwrap();
    let k = h.key();
    assert_eq!(
        pieces(r.verify(k, 0x10f0, 0x20, RW, None)),
        [(0x10f0, 0x20)],
        "spans the two adjacent iovs"
    );
    assert_eq!(
        pieces(r.verify(k, 0x3000, 0x100, RW, None)),
        [(0x3000, 0x100)]
    );
    for (a, l) in [
        (0x11f0, 0x20),
        (0x2000, 1),
        (0xfff, 2),
        (0x30ff, 2),
        (0x1000, 0x2100),
    ] {
        assert_eq!(
            r.verify(k, a, l, RW, None).unwrap_err(),
            Error::ACCES,
            "{a:#x}+{l:#x}"
        );
    }
    assert_eq!(r.iovs(&h).unwrap(), [(0x1000, 0x200), (0x3000, 0x100)]);
    let info = r.region(&h).unwrap();
    assert_eq!(
        (info.len, info.iov_count, info.base_addr),
        (0x300, 2, 0x1000)
    );
    // Overlapping iovs that merge into one range need no pool block.
    let one = reg(
        &r,
        &[(0x1000, 0x80), (0x1040, 0x80)],
        RW,
        RegFlags::VIRT_ADDR,
    )
    .unwrap();
    let info = r.region(&one).unwrap();
    assert_eq!((info.len, info.iov_count), (0xc0, 1));
    assert!(r.verify(one.key(), 0x1000, 0xc0, RW, None).is_ok());
}

#[test]
fn max_iovs_region() {
    let r = prov();
    let iovs: Vec<(u64, u64)> = (0..MAX_IOVS as u64)
        .map(|i| (0x10_0000 * (i + 1), 16))
        .collect();
    let h = reg(&r, &iovs, RW, RegFlags::empty()).unwrap();
    let p = pieces(r.verify(h.key(), 8, 16 * (MAX_IOVS as u64 - 1), RW, None));
    assert_eq!(p.len(), MAX_IOVS);
    assert_eq!(p[0], (0x10_0008, 8));
    assert_eq!(p[MAX_IOVS - 1], (0x10_0000 * MAX_IOVS as u64, 8));
    r.close(&h).unwrap();
}

#[test]
fn sub_regions() {
    let r = prov();
    let base = reg(&r, &[(0x1000, 0x1000)], RW, RegFlags::empty()).unwrap();
    let mut q = Request::new(&[(0x1800, 0x100)], Access::REMOTE_READ);
    q.parent = Some(base);
    let sub = r.register(&q).unwrap();
    assert_ne!(sub.key(), base.key());
    assert_eq!(r.region(&sub).unwrap().parent, Some(base.slot()));
    assert_eq!(r.region(&base).unwrap().children, 1);
    // Own rights: read only; own addressing: offset 0 is 0x1800.
    assert_eq!(
        pieces(r.verify(sub.key(), 0, 8, Access::REMOTE_READ, None)),
        [(0x1800, 8)]
    );
    assert_eq!(
        r.verify(sub.key(), 0, 8, Access::REMOTE_WRITE, None)
            .unwrap_err(),
        Error::ACCES
    );
    assert_eq!(
        r.verify(sub.key(), 0x100, 1, Access::REMOTE_READ, None)
            .unwrap_err(),
        Error::ACCES
    );
    // Outside the base, straddling its end, or wider rights: INVAL.
    for (iov, access) in [
        ((0x2000, 1), Access::REMOTE_READ),
        ((0x1fff, 2), Access::REMOTE_READ),
        ((0xfff, 2), Access::REMOTE_READ),
        ((0x1800, 1), Access::REMOTE_READ | Access::SEND),
    ] {
        let iovs = [iov];
        let mut q = Request::new(&iovs, access);
        q.parent = Some(base);
        assert_eq!(r.register(&q), Err(Error::INVAL), "{iov:?} {access:?}");
    }
    assert_eq!(
        r.region(&base).unwrap().children,
        1,
        "failures leave no count"
    );
    // A hierarchy: a sub-region of the sub-region.
    let iov = [(0x1810, 0x10)];
    let mut q = Request::new(&iov, Access::REMOTE_READ);
    q.parent = Some(sub);
    let leaf = r.register(&q).unwrap();
    assert_eq!(r.close(&base), Err(Error::BUSY));
    assert_eq!(r.close(&sub), Err(Error::BUSY));
    assert!(
        r.verify(base.key(), 0, 8, RW, None).is_ok(),
        "BUSY changes nothing"
    );
    r.close(&leaf).unwrap();
    r.close(&sub).unwrap();
    assert_eq!(r.region(&base).unwrap().children, 0);
    r.close(&base).unwrap();
    // A dead base.
    let mut q = Request::new(&iov, Access::REMOTE_READ);
    q.parent = Some(base);
    assert_eq!(r.register(&q), Err(Error::INVAL));
}

#[test]
fn sub_regions_inherit_iface_and_page_size() {
    let r = prov();
    let iov = [(0x1000, 0x1000)];
    let mut q = Request::new(&iov, RW);
    q.iface = 3;
    q.page_size = 1 << 21;
    q.sub_mr_cnt = 100;
    let base = r.register(&q).unwrap();
    let sub_iov = [(0x1000, 0x10)];
    let mut s = Request::new(&sub_iov, RW);
    s.parent = Some(base);
    s.iface = 1;
    s.page_size = 4096;
    let sub = r.register(&s).unwrap();
    let info = r.region(&sub).unwrap();
    assert_eq!((info.iface, info.page_size), (3, 1 << 21));
    assert_eq!(r.verify(sub.key(), 0, 1, RW, None).unwrap().iface, 3);
}

#[test]
fn sub_regions_of_multi_iov_bases_check_virtual_bytes() {
    let r = prov();
    let base = reg(
        &r,
        &[(0x1000, 0x100), (0x1100, 0x100), (0x4000, 0x100)],
        RW,
        RegFlags::empty(),
    )
    .unwrap();
    for (iovs, ok) in [
        (vec![(0x10f0, 0x20)], true),
        (vec![(0x1000, 0x200), (0x4000, 0x100)], true),
        (vec![(0x11f0, 0x20)], false),
        (vec![(0x1000, 0x10), (0x3fff, 2)], false),
    ] {
        let mut q = Request::new(&iovs, RW);
        q.parent = Some(base);
        q.flags = RegFlags::VIRT_ADDR;
        let got = r.register(&q);
        assert_eq!(got.is_ok(), ok, "{iovs:x?}");
        if let Ok(h) = got {
            r.close(&h).unwrap();
        }
    }
    r.close(&base).unwrap();
}

#[test]
fn close_races_with_sub_region_creation_stay_consistent() {
    let r = prov();
    for _ in 0..200 {
        let base = reg(&r, &[(0x1000, 0x1000)], RW, RegFlags::empty()).unwrap();
        let iov = [(0x1000, 0x10)];
        let (closed, sub) = std::thread::scope(|s| {
            let c = s.spawn(|| r.close(&base));
            let mut q = Request::new(&iov, RW);
            q.parent = Some(base);
            let sub = r.register(&q);
            (c.join().unwrap(), sub)
        });
        match (closed, sub) {
            (Ok(()), Err(e)) => assert_eq!(e, Error::INVAL),
            (Err(e), Ok(sub)) => {
                assert_eq!(e, Error::BUSY);
                r.close(&sub).unwrap();
                r.close(&base).unwrap();
            }
            other => panic!("both or neither won: {other:?}"),
        }
    }
    assert_eq!(r.stats().live_regions, 0);
}

#[test]
fn full_registry_is_nospc() {
    let r = Registry::with_config(Config {
        max_regions: 2,
        secret: Some(1),
        ..Config::default()
    })
    .unwrap();
    let iov = [(0x1000, 1)];
    let a = reg(&r, &iov, RW, RegFlags::empty()).unwrap();
    reg(&r, &iov, RW, RegFlags::empty()).unwrap();
    assert_eq!(reg(&r, &iov, RW, RegFlags::empty()), Err(Error::NOSPC));
    r.close(&a).unwrap();
    assert!(reg(&r, &iov, RW, RegFlags::empty()).is_ok());
    // A key size caps the registry too: one byte leaves 64 slots.
    let tiny = Registry::with_config(Config {
        key_size: 1,
        secret: Some(1),
        ..Config::default()
    })
    .unwrap();
    assert_eq!(tiny.capacity(), 64);
    let keys: HashSet<u64> = (0..64)
        .map(|_| reg(&tiny, &iov, RW, RegFlags::empty()).unwrap().key())
        .collect();
    assert_eq!(keys.len(), 64);
    assert!(keys.iter().all(|&k| k <= 0xff));
    assert_eq!(reg(&tiny, &iov, RW, RegFlags::empty()), Err(Error::NOSPC));
}

#[test]
fn generations_wrap_only_after_two_to_the_gen_bits() {
    // One-byte keys: 2 generation bits, so a slot's key repeats every 4
    // reuses and never sooner.
    let r = Registry::with_config(Config {
        key_size: 1,
        secret: Some(9),
        ..Config::default()
    })
    .unwrap();
    assert_eq!(r.generation_bits(), 2);
    let iov = [(0x1000, 1)];
    let mut keys = Vec::new();
    for _ in 0..12 {
        let h = reg(&r, &iov, RW, RegFlags::empty()).unwrap();
        assert_eq!(h.slot(), 0, "LIFO reuse");
        keys.push(h.key());
        r.close(&h).unwrap();
    }
    for i in 0..keys.len() {
        for j in i + 1..keys.len() {
            assert_eq!(keys[i] == keys[j], (j - i) % 4 == 0, "{i} {j}");
        }
    }
}

#[test]
fn stats_count() {
    let r = prov();
    let a = reg(&r, &[(0x1000, 100)], RW, RegFlags::empty()).unwrap();
    let _b = reg(&r, &[(0x1000, 10), (0x3000, 20)], RW, RegFlags::empty()).unwrap();
    let _ = reg(&r, &[], RW, RegFlags::empty());
    let _ = r.verify(a.key(), 100, 1, RW, None);
    r.close(&a).unwrap();
    let s = r.stats();
    assert_eq!(s.live_regions, 1);
    assert_eq!(s.live_bytes, 30);
    assert_eq!(s.registrations, 2);
    assert_eq!(s.closes, 1);
    assert_eq!(s.failures, 1);
    assert_eq!(s.denied, 1);
    assert!(s.engine_bytes > 0);
    assert_eq!(r.len(), 1);
}

#[test]
fn stats_count_reused_slots_and_refusals_from_the_generations() {
    // Registrations and closes come from the slots' generations: a slot
    // reused many times counts each of its regions once, a refused
    // registration that took a slot (a requested key in use) counts none,
    // and a concurrent churn adds up exactly once it is over.
    for r in [prov(), requested(8)] {
        let iov = [(0x1000u64, 64u64)];
        let mut q = Request::new(&iov, RW);
        for i in 0..1000u64 {
            q.requested_key = 1000 + i;
            let h = r.register(&q).unwrap();
            r.close(&h).unwrap();
        }
        q.requested_key = 7;
        let keep = r.register(&q).unwrap();
        if !r.prov_keys() {
            assert_eq!(r.register(&q), Err(Error::NOKEY));
        }
        let s = r.stats();
        assert_eq!((s.registrations, s.closes, s.live_regions), (1001, 1000, 1));
        std::thread::scope(|sc| {
            for t in 0..2u64 {
                let r = &r;
                sc.spawn(move || {
                    let mut q = Request::new(&iov, RW);
                    for i in 0..5000u64 {
                        q.requested_key = ((t + 1) << 32) | i;
                        let h = r.register(&q).unwrap();
                        r.close(&h).unwrap();
                    }
                });
            }
        });
        r.close(&keep).unwrap();
        let s = r.stats();
        assert_eq!(
            (s.registrations, s.closes, s.live_regions),
            (11_001, 11_001, 0)
        );
        assert!(r.is_empty());
    }
}

#[test]
fn handle_at_finds_the_region_by_slot_and_generation_until_it_closes() {
    for r in [prov(), requested(8)] {
        let iov = [(0x1000u64, 64u64)];
        let mut q = Request::new(&iov, RW);
        q.requested_key = 11;
        let a = r.register(&q).unwrap();
        assert_eq!(r.handle_at(a.slot(), a.gen()), Ok(a));
        assert_eq!(r.handle_at(a.slot(), a.gen() + 1), Err(Error::INVAL));
        assert_eq!(r.handle_at(u32::MAX, 0), Err(Error::INVAL));
        assert_eq!(r.close_at(a.slot(), a.gen(), || {}), Ok(a));
        assert_eq!(r.handle_at(a.slot(), a.gen()), Err(Error::INVAL));
        // The slot is reused at the next generation; the old pair names
        // nothing and cannot close the new region.
        q.requested_key = 12;
        let b = r.register(&q).unwrap();
        assert_eq!((b.slot(), b.gen()), (a.slot(), a.gen() + 1));
        assert_eq!(r.close_at(a.slot(), a.gen(), || {}), Err(Error::INVAL));
        assert_eq!(r.handle_at(b.slot(), b.gen()), Ok(b));
        r.close(&b).unwrap();
    }
}

#[test]
fn live_regions_lists_what_is_open() {
    let r = prov();
    let a = reg(&r, &[(0x1000, 1)], RW, RegFlags::empty()).unwrap();
    let b = reg(&r, &[(0x2000, 2)], RW, RegFlags::empty()).unwrap();
    r.close(&a).unwrap();
    let live = r.live_regions();
    assert_eq!(live.len(), 1);
    assert_eq!((live[0].key, live[0].len), (b.key(), 2));
}

#[test]
fn engine_state_is_64_bytes_per_single_iov_region() {
    assert_eq!(std::mem::size_of::<Slot>(), 64);
    assert_eq!(std::mem::align_of::<Slot>(), 64);
    let r = prov();
    let n = 50_000;
    let iov = [(0x1000, 4096)];
    let q = Request::new(&iov, RW);
    for _ in 0..n {
        r.register(&q).unwrap();
    }
    let per = r.stats().engine_bytes as f64 / n as f64;
    // Slots allocated in chunks: at most one chunk (1 MiB) ahead of use.
    assert!(
        per <= 64.0 + (1 << 20) as f64 / n as f64 + 1.0,
        "{per} B/region"
    );
}

#[test]
fn merge_small_agrees_with_merge() {
    // Pseudo-random short lists of (base, length): overlapping, adjacent,
    // nested, duplicate and apart.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for _ in 0..20_000 {
        let n = 1 + next(8) as usize;
        let mut iovs: Vec<(u64, u64)> = (0..n).map(|_| (1 + next(64) * 16, 1 + next(48))).collect();
        // As given, and in address order (where the pieces are often apart
        // or just touching: the shortcut for lists already merged).
        for sorted in [false, true] {
            if sorted {
                iovs.sort_unstable();
            }
            let want = merge(iovs.iter().map(|&(b, l)| (b, b + l)).collect());
            let mut buf = [(0u64, 0u64); 8];
            let m = merge_small(&mut buf, &iovs);
            assert_eq!(&buf[..m], &want[..], "{iovs:?}");
        }
    }
    // Apart and in order: kept as they are; touching: joined.
    let mut buf = [(0u64, 0u64); 8];
    assert_eq!(merge_small(&mut buf, &[(16, 16), (48, 16), (96, 8)]), 3);
    assert_eq!(&buf[..3], &[(16, 32), (48, 64), (96, 104)]);
    assert_eq!(merge_small(&mut buf, &[(16, 16), (32, 16), (96, 8)]), 2);
    assert_eq!(&buf[..2], &[(16, 48), (96, 104)]);
}

#[test]
fn handle_finds_a_live_key_while_other_threads_rebuild_the_index() {
    // Requested keys: every registration and close writes the index, and
    // its tombstones make it rebuild every few operations. A thread's own
    // live keys must always be found (a lookup that raced a rebuild may
    // land on another key's slot; that is a retry, not a miss).
    let r = requested(8);
    let iov = [(0x1000u64, 0x40u64)];
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let r = &r;
            s.spawn(move || {
                let mut live = std::collections::VecDeque::new();
                for i in 0..40_000u64 {
                    let mut q = Request::new(&iov, Access::REMOTE_READ);
                    q.requested_key = (t << 32) | i;
                    live.push_back(r.register(&q).unwrap());
                    if live.len() > 6 {
                        let old = live.pop_front().unwrap();
                        let h = r.handle(old.key());
                        assert_eq!(h.as_ref().ok(), Some(&old), "key {:#x}: {h:?}", old.key());
                        r.close(&old).unwrap();
                    }
                }
                for h in live {
                    r.close(&h).unwrap();
                }
            });
        }
    });
    assert_eq!(r.stats().live_regions, 0);
}

#[test]
fn a_slot_keeps_its_iov_block_for_its_next_region() {
    let r = prov();
    let block_of =
        |h: &Handle| links_block(r.slot(h.slot()).unwrap().links.load(Ordering::Relaxed));
    let four = [(0x1000, 8), (0x3000, 8), (0x5000, 8), (0x7000, 8)];
    let three = [(0x1000, 8), (0x3000, 8), (0x5000, 8)];
    let a = reg(&r, &four, RW, RegFlags::empty()).unwrap();
    let b0 = block_of(&a);
    r.close(&a).unwrap();
    // Same slot, same size class (3 and 4 iovs share one): the parked
    // block, with the new region's pairs in it.
    let b = reg(&r, &three, RW, RegFlags::empty()).unwrap();
    assert_eq!((b.slot(), block_of(&b)), (a.slot(), b0));
    assert_eq!(
        pieces(r.verify(b.key(), 8, 16, RW, None)),
        vec![(0x3000, 8), (0x5000, 8)]
    );
    r.close(&b).unwrap();
    // A single-iov region in that slot returns the block to the pool, where
    // the next region of that class finds it.
    let c = reg(&r, &[(0x9000, 64)], RW, RegFlags::empty()).unwrap();
    assert_eq!(c.slot(), a.slot());
    let d = reg(&r, &four, RW, RegFlags::empty()).unwrap();
    assert_ne!(d.slot(), a.slot());
    assert_eq!(block_of(&d), b0);
    r.close(&c).unwrap();
    r.close(&d).unwrap();
    // Another class: the parked block goes back, a block of the new class
    // comes out; nothing leaks across many alternations (once each class
    // has its first storage).
    let alternate = |rounds: usize| {
        for i in 0..rounds {
            let two: &[(u64, u64)] = &[(0x1000, 8), (0x3000, 8)];
            let iovs: &[(u64, u64)] = if i % 2 == 0 { &four } else { two };
            let h = reg(&r, iovs, RW, RegFlags::empty()).unwrap();
            r.close(&h).unwrap();
        }
    };
    alternate(2);
    let before = r.stats().engine_bytes;
    alternate(2000);
    assert_eq!(r.stats().engine_bytes, before);
    assert_eq!(r.stats().live_regions, 0);
}

#[test]
fn a_refused_requested_key_keeps_the_block_with_the_slot() {
    let r = requested(8);
    let four = [(0x1000, 8), (0x3000, 8), (0x5000, 8), (0x7000, 8)];
    let mut q = Request::new(&four, RW);
    q.requested_key = 5;
    let a = r.register(&q).unwrap();
    let before = r.stats().engine_bytes;
    for _ in 0..1000 {
        assert_eq!(r.register(&q), Err(Error::NOKEY));
    }
    assert_eq!(r.stats().engine_bytes, before);
    r.close(&a).unwrap();
    q.requested_key = 6;
    let b = r.register(&q).unwrap();
    assert_eq!(pieces(r.verify(6, 0, 32, RW, None)).len(), 4);
    r.close(&b).unwrap();
}

#[test]
fn local_cover_checks_the_buffer_against_the_ranges() {
    for r in [prov(), requested(8)] {
        let mut next_key = 100u64;
        let mut reg = |r: &Registry, iovs: &[(u64, u64)], access: Access, flags: RegFlags| {
            let mut q = Request::new(iovs, access);
            q.flags = flags;
            next_key += 1;
            q.requested_key = next_key;
            r.register(&q)
        };
        let one = reg(&r, &[(0x1000, 0x100)], RW | Access::SEND, RegFlags::empty()).unwrap();
        let cover = |h: &Handle, a: u64, e: u64| r.local_cover(h.slot(), h.gen(), a, e);
        assert_eq!(cover(&one, 0x1000, 0x1100), Ok(Some(RW | Access::SEND)));
        assert_eq!(cover(&one, 0x1080, 0x1081), Ok(Some(RW | Access::SEND)));
        assert_eq!(cover(&one, 0xfff, 0x1001), Ok(None));
        assert_eq!(cover(&one, 0x10ff, 0x1101), Ok(None));
        // Several iovs, both addressing modes: a buffer lies inside one of
        // them, never across the hole between two.
        for flags in [RegFlags::empty(), RegFlags::VIRT_ADDR] {
            let two = reg(&r, &[(0x4000, 0x100), (0x8000, 0x100)], RW, flags).unwrap();
            assert_eq!(cover(&two, 0x8010, 0x8020), Ok(Some(RW)));
            assert_eq!(cover(&two, 0x4000, 0x4100), Ok(Some(RW)));
            assert_eq!(cover(&two, 0x40f0, 0x8010), Ok(None));
            r.close(&two).unwrap();
            assert_eq!(cover(&two, 0x8010, 0x8020), Err(Error::INVAL));
        }
        r.close(&one).unwrap();
        assert_eq!(cover(&one, 0x1000, 0x1001), Err(Error::INVAL));
    }
}
