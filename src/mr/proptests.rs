//! Property tests: the key allocator, range checks across multi-iov
//! regions against a byte-by-byte model, sub-region containment, and the
//! requested-key rules against a map.

use super::*;
use crate::error::Error;
use proptest::collection::vec;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

const RW: Access = Access::REMOTE_READ.union(Access::REMOTE_WRITE);

fn registry(key_size: usize, prov_keys: bool, secret: u64) -> Registry {
    Registry::with_config(Config {
        key_size,
        prov_keys,
        secret: Some(secret),
        ..Config::default()
    })
    .unwrap()
}

fn access_from(bits: u8) -> Access {
    Access::from_bits_truncate(u64::from(bits) << 6)
}

/// Reference: for each offset of the concatenated region, (iov, address).
fn bytes_of(iovs: &[(u64, u64)]) -> Vec<(usize, u64)> {
    iovs.iter()
        .enumerate()
        .flat_map(|(i, &(b, l))| (b..b + l).map(move |a| (i, a)))
        .collect()
}

/// Reference pieces for an offset-mode access: runs of one iov.
fn offset_model(iovs: &[(u64, u64)], addr: u64, len: u64) -> Option<Vec<(u64, u64)>> {
    let bytes = bytes_of(iovs);
    let end = addr.checked_add(len)?;
    if end > bytes.len() as u64 {
        return None;
    }
    let mut out: Vec<(usize, u64, u64)> = Vec::new();
    for &(i, a) in &bytes[addr as usize..end as usize] {
        match out.last_mut() {
            Some(last) if last.0 == i => last.2 += 1,
            _ => out.push((i, a, 1)),
        }
    }
    Some(out.into_iter().map(|(_, a, n)| (a, n)).collect())
}

/// Reference for VIRT_ADDR: every byte registered (for length 0: the
/// address is inside or at the end of some iov).
fn virt_model(iovs: &[(u64, u64)], addr: u64, len: u64) -> Option<Vec<(u64, u64)>> {
    let end = addr.checked_add(len)?;
    if len == 0 {
        return iovs
            .iter()
            .any(|&(b, l)| b <= addr && addr <= b + l)
            .then(Vec::new);
    }
    let set: HashSet<u64> = iovs.iter().flat_map(|&(b, l)| b..b + l).collect();
    (addr..end)
        .all(|a| set.contains(&a))
        .then(|| vec![(addr, len)])
}

fn iov_strategy(max: usize) -> impl Strategy<Value = Vec<(u64, u64)>> {
    vec((0u64..64, 1u64..48), 1..=max)
        .prop_map(|v| v.into_iter().map(|(b, l)| (b * 16, l)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Live keys are distinct; a closed key verifies only if the same value
    /// is live again, which a slot's keys cannot be before 2^gen_bits
    /// reuses; every live key verifies.
    #[test]
    fn key_allocator(key_size in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
                     secret in any::<u64>(),
                     ops in vec((any::<bool>(), any::<u16>()), 1..400)) {
        let r = registry(key_size, true, secret);
        let period = 1usize << r.generation_bits();
        let iov = [(0x1000u64, 64u64)];
        let mut live: Vec<Handle> = Vec::new();
        let mut dead: Vec<u64> = Vec::new();
        let mut per_slot: HashMap<u32, Vec<u64>> = HashMap::new();
        for (add, pick) in ops {
            if add || live.is_empty() {
                match r.register(&Request::new(&iov, RW)) {
                    Ok(h) => {
                        prop_assert!(h.key() <= r.max_key() && h.key() != KEY_NOTAVAIL);
                        let hist = per_slot.entry(h.slot()).or_default();
                        let recent = hist.len().saturating_sub(period - 1);
                        prop_assert!(!hist[recent..].contains(&h.key()),
                            "slot {} reissued a key within {} generations", h.slot(), period);
                        hist.push(h.key());
                        live.push(h);
                    }
                    Err(e) => {
                        prop_assert_eq!(e, Error::NOSPC);
                        prop_assert_eq!(live.len(), r.capacity());
                    }
                }
            } else {
                let h = live.swap_remove(pick as usize % live.len());
                r.close(&h).unwrap();
                dead.push(h.key());
            }
            let keys: HashSet<u64> = live.iter().map(|h| h.key()).collect();
            prop_assert_eq!(keys.len(), live.len(), "duplicate live key");
            for &k in dead.iter().rev().take(8) {
                let got = r.verify(k, 0, 1, RW, None);
                prop_assert_eq!(got.is_ok(), keys.contains(&k));
            }
        }
        for h in &live {
            prop_assert!(r.verify(h.key(), 0, 64, RW, None).is_ok());
        }
    }

    /// A closed region's key never verifies again, however often its slot
    /// is reused (8-byte keys: 2^40 generations).
    #[test]
    fn stale_key_after_many_reuses(secret in any::<u64>(), reuses in 1usize..3000) {
        let r = registry(8, true, secret);
        let iov = [(0x1000u64, 64u64)];
        let first = r.register(&Request::new(&iov, RW)).unwrap();
        r.close(&first).unwrap();
        for _ in 0..reuses {
            let h = r.register(&Request::new(&iov, RW)).unwrap();
            prop_assert_eq!(h.slot(), first.slot());
            prop_assert_ne!(h.key(), first.key());
            prop_assert_eq!(r.verify(first.key(), 0, 1, RW, None).unwrap_err(), Error::INVAL);
            r.close(&h).unwrap();
        }
        prop_assert_eq!(r.verify(first.key(), 0, 1, RW, None).unwrap_err(), Error::INVAL);
    }

    /// Offset addressing across iovs matches the byte-by-byte model,
    /// pieces included.
    #[test]
    fn offset_ranges_match_model(iovs in iov_strategy(8),
                                 queries in vec((0u64..400, 0u64..200), 1..40)) {
        let r = registry(8, true, 1);
        let h = r.register(&Request::new(&iovs, RW)).unwrap();
        for (addr, len) in queries {
            let want = offset_model(&iovs, addr, len);
            match r.verify(h.key(), addr, len, RW, None) {
                Ok(t) => prop_assert_eq!(Some(t.pieces().to_vec()), want, "{}+{}", addr, len),
                Err(e) => {
                    prop_assert_eq!(e, Error::ACCES);
                    prop_assert!(want.is_none(), "{}+{} refused, model {:?}", addr, len, want);
                }
            }
        }
        prop_assert!(r.verify(h.key(), u64::MAX, 2, RW, None).is_err());
    }

    /// VIRT_ADDR: an access is allowed iff every byte is registered.
    #[test]
    fn virt_ranges_match_model(iovs in iov_strategy(8),
                               queries in vec((0u64..1100, 0u64..200), 1..40)) {
        let r = registry(8, true, 2);
        let mut q = Request::new(&iovs, RW);
        q.flags = RegFlags::VIRT_ADDR;
        let h = r.register(&q).unwrap();
        for (addr, len) in queries {
            let want = virt_model(&iovs, addr, len);
            match r.verify(h.key(), addr, len, RW, None) {
                Ok(t) => prop_assert_eq!(Some(t.pieces().to_vec()), want, "{}+{}", addr, len),
                Err(e) => {
                    prop_assert_eq!(e, Error::ACCES);
                    prop_assert!(want.is_none(), "{}+{} refused, model {:?}", addr, len, want);
                }
            }
        }
        // Every registered byte is reachable, one at a time.
        for &(b, l) in &iovs {
            prop_assert!(r.verify(h.key(), b, l, RW, None).is_ok());
        }
    }

    /// A sub-region registers iff its bytes are the base's and its rights
    /// are a subset of the base's; then it verifies with its own rights.
    #[test]
    fn sub_region_containment(base in iov_strategy(5), virt in any::<bool>(),
                              base_bits in any::<u8>(), sub in iov_strategy(3),
                              sub_bits in any::<u8>()) {
        let r = registry(8, true, 3);
        let (ba, sa) = (access_from(base_bits), access_from(sub_bits));
        let mut q = Request::new(&base, ba);
        if virt {
            q.flags = RegFlags::VIRT_ADDR;
        }
        let b = r.register(&q).unwrap();
        let mut s = Request::new(&sub, sa);
        s.parent = Some(b);
        s.flags = q.flags;
        let set: HashSet<u64> = base.iter().flat_map(|&(b, l)| b..b + l).collect();
        let inside = sub.iter().all(|&(b, l)| (b..b + l).all(|a| set.contains(&a)));
        let ok = inside && ba.contains(sa);
        match r.register(&s) {
            Ok(h) => {
                prop_assert!(ok);
                prop_assert_eq!(r.close(&b), Err(Error::BUSY));
                let probe = if virt { sub[0].0 } else { 0 };
                prop_assert!(r.verify(h.key(), probe, 1, sa, None).is_ok());
                let extra = Access::all() - sa;
                if !extra.is_empty() {
                    prop_assert_eq!(r.verify(h.key(), probe, 1, extra, None).unwrap_err(), Error::ACCES);
                }
                r.close(&h).unwrap();
            }
            Err(e) => {
                prop_assert_eq!(e, Error::INVAL);
                prop_assert!(!ok, "refused a contained sub-region");
            }
        }
        prop_assert!(r.close(&b).is_ok());
    }

    /// Requested keys behave like a map: NOKEY exactly when the key is
    /// live; a verify finds exactly the live keys.
    #[test]
    fn requested_keys_match_a_map(ops in vec((any::<bool>(), 0u64..24), 1..300)) {
        let r = registry(8, false, 4);
        let mut model: HashMap<u64, Handle> = HashMap::new();
        let iov = [(0x1000u64, 8u64)];
        for (add, k) in ops {
            if add {
                let mut q = Request::new(&iov, RW);
                q.requested_key = k;
                q.context = k;
                match r.register(&q) {
                    Ok(h) => {
                        prop_assert!(!model.contains_key(&k));
                        model.insert(k, h);
                    }
                    Err(e) => {
                        prop_assert_eq!(e, Error::NOKEY);
                        prop_assert!(model.contains_key(&k));
                    }
                }
            } else if let Some(h) = model.remove(&k) {
                r.close(&h).unwrap();
            }
            for probe in 0..24 {
                let got = r.verify(probe, 0, 8, RW, None);
                prop_assert_eq!(got.as_ref().ok().map(|t| t.context),
                                model.contains_key(&probe).then_some(probe));
            }
        }
        prop_assert_eq!(r.stats().live_regions, model.len());
    }
}
