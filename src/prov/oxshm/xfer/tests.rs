use super::*;

fn piece(off: u64, len: u64, released: bool) -> Carve {
    Carve::Piece { off, len, released }
}

#[test]
fn only_a_ping_pongs_long_send_skips_the_ring() {
    // Lone: long enough, reachable, nothing waiting, polled since.
    assert!(lone_send(LONE_MIN, true, true, 0, true));
    assert!(lone_send(INLINE, true, true, 0, true));
    // Too short for the system call to pay; above INLINE every send
    // is a cross-memory copy anyway.
    assert!(!lone_send(LONE_MIN - 1, true, true, 0, true));
    assert!(!lone_send(INLINE + 1, true, true, 0, true));
    // Peers that cannot copy between them keep the ring.
    assert!(!lone_send(LONE_MIN, false, true, 0, true));
    // A burst: the first send is in flight, or the application has
    // not polled since it.
    assert!(!lone_send(LONE_MIN, true, true, 1, true));
    assert!(!lone_send(LONE_MIN, true, true, 0, false));
    // Where a cross-memory call is dear, even a lone one keeps the ring.
    assert!(!lone_send(LONE_MIN, true, false, 0, true));
}

#[test]
fn only_a_lone_mid_sized_rma_goes_direct_early() {
    use crate::prov::oxshm::direct::{DIRECT_MIN, LONE_DIRECT_MIN};
    let (lo, hi) = (LONE_DIRECT_MIN as usize, DIRECT_MIN as usize);
    // Lone: from LONE_DIRECT_MIN, nothing waiting, polled since.
    assert!(lone_rma(lo, true, 0, true));
    assert!(lone_rma(hi - 1, true, 0, true));
    // Shorter ones keep the ring; from DIRECT_MIN every plain one goes
    // direct anyway, lone or not.
    assert!(!lone_rma(lo - 1, true, 0, true));
    assert!(!lone_rma(hi, true, 0, true));
    // A stream: something in flight, or no poll since the last one.
    assert!(!lone_rma(lo, true, 1, true));
    assert!(!lone_rma(lo, true, 0, false));
    // Where a cross-memory call is dear, even a lone one keeps the ring.
    assert!(!lone_rma(lo, false, 0, true));
}

#[test]
fn a_cross_memory_call_is_measured_once_and_judged_by_its_cost() {
    let ns = copy::cma_call_ns();
    // A system call costs something; this one well under a millisecond
    // on any machine these tests run on.
    assert!(ns > 0 && ns < 1_000_000, "{ns} ns");
    assert_eq!(copy::cma_call_ns(), ns);
}

#[test]
fn the_lone_verdict_follows_the_setting_and_else_the_measured_cost() {
    use super::tune::Policy;
    let never = || -> u64 { panic!("measured though the setting decides") };
    assert!(copy::lone_verdict(Policy::Always, never).0);
    assert!(!copy::lone_verdict(Policy::Never, never).0);
    let cheap = copy::lone_verdict(Policy::Auto, || copy::CMA_CHEAP_NS);
    assert!(cheap.0 && cheap.1.contains("1000 ns"), "{cheap:?}");
    assert!(!copy::lone_verdict(Policy::Auto, || copy::CMA_CHEAP_NS + 1).0);
    // A refused call reads u64::MAX: dear.
    assert!(!copy::lone_verdict(Policy::Auto, || u64::MAX).0);
    // Spellings the setting takes, and a bad one taken as auto.
    assert_eq!(Policy::parse("1"), Some(Policy::Always));
    assert_eq!(Policy::parse("0"), Some(Policy::Never));
    assert_eq!(Policy::parse("auto"), Some(Policy::Auto));
    assert_eq!(Policy::parse("fast"), None);
}

#[test]
fn the_last_peer_is_answered_until_the_map_drops_it() {
    let addr = |id: u32| Address {
        pid: std::process::id(),
        ep_id: 910_000 + id,
        nonce: 0x0fed_cba9_8765_4321 ^ id as u64,
    };
    let (a, b) = (addr(1), addr(2));
    let (_own_a, _own_b) = (
        Segment::create(&a, None).unwrap(),
        Segment::create(&b, None).unwrap(),
    );
    let peer = |x: &Address| {
        Arc::new(Peer {
            seg: Segment::open(x).unwrap(),
            cma: true,
            table: Default::default(),
        })
    };
    let (pa, pb) = (peer(&a), peer(&b));
    let mut m = PeerMap::default();
    assert!(m.get_cached(&a).is_none());
    m.insert(a, Arc::clone(&pa));
    m.insert(b, Arc::clone(&pb));
    assert!(std::ptr::eq(m.get_cached(&a).unwrap(), &*pa));
    assert!(std::ptr::eq(m.get_cached(&a).unwrap(), &*pa));
    assert!(std::ptr::eq(m.get_cached(&b).unwrap(), &*pb));
    assert!(std::ptr::eq(m.get_cached(&a).unwrap(), &*pa));
    // Removed: the cached entry goes too, and the map keeps no count.
    m.remove(&a);
    assert!(m.get_cached(&a).is_none());
    assert_eq!(Arc::strong_count(&pa), 1);
    // Replaced under the same address: the new peer is answered.
    let pb2 = peer(&b);
    assert!(m.get_cached(&b).is_some());
    m.insert(b, Arc::clone(&pb2));
    assert!(std::ptr::eq(m.get_cached(&b).unwrap(), &*pb2));
    assert_eq!(Arc::strong_count(&pb), 1);

    // A send destination: answered while the fi_addr_t and the AV's
    // version are the ones it was resolved under, and the peer is held.
    let pa = peer(&a);
    m.insert(a, Arc::clone(&pa));
    assert!(m.by_dest(7, 3).is_none());
    assert!(std::ptr::eq(m.learn_dest(7, 3, &a).unwrap(), &*pa));
    let (got, p) = m.by_dest(7, 3).unwrap();
    assert!(got == a && std::ptr::eq(p, &*pa));
    assert!(m.by_dest(8, 3).is_none(), "another fi_addr_t");
    assert!(m.by_dest(7, 4).is_none(), "the AV changed since");
    // Version 0 (no AV) never matches, even as learnt.
    assert!(m.learn_dest(7, 0, &a).is_some());
    assert!(m.by_dest(7, 0).is_none());
    // Another peer looked up, or this one removed: forgotten.
    assert!(m.learn_dest(7, 3, &a).is_some());
    assert!(m.get_cached(&b).is_some());
    assert!(m.by_dest(7, 3).is_none());
    assert!(m.learn_dest(7, 3, &a).is_some());
    m.remove(&a);
    assert!(m.by_dest(7, 3).is_none());
    assert!(m.learn_dest(7, 3, &a).is_none(), "a peer not met");
    assert_eq!(Arc::strong_count(&pa), 1);
}

#[test]
fn iov_list_keeps_order_in_place_and_past_it() {
    let few: Vec<(u64, u64)> = (0..IOV_MAX as u64).map(|i| (i, i + 1)).collect();
    let l = IovList::from(&few[..]);
    assert!(matches!(l, IovList::Inline(..)));
    assert_eq!(&l[..], &few[..]);
    let mut many = few.clone();
    many.push((99, 100));
    let l = IovList::from(&many[..]);
    assert!(matches!(l, IovList::Heap(_)));
    assert_eq!(&l[..], &many[..]);
    assert!(IovList::default().is_empty());
}

/// A multi-receive buffer packs messages back to back and is released
/// by the message after which less than the minimum remains.
#[test]
fn multi_packs_until_min() {
    let m = Multi::new(100);
    assert_eq!(m.carve(1000, 300), piece(0, 300, false));
    assert_eq!(m.carve(1000, 300), piece(300, 300, false));
    assert_eq!(m.carve(1000, 0), piece(600, 0, false));
    assert_eq!(m.carve(1000, 350), piece(600, 350, true));
    // The pieces complete in any order; the last one says so.
    assert!(!m.piece_done());
    assert!(!m.piece_done());
    assert!(!m.piece_done());
    assert!(m.piece_done());
}

/// Exactly the minimum left keeps the buffer; one byte less releases.
#[test]
fn multi_min_boundary() {
    let m = Multi::new(100);
    assert_eq!(m.carve(300, 200), piece(0, 200, false));
    let m = Multi::new(100);
    assert_eq!(m.carve(300, 201), piece(0, 201, true));
    // A minimum of 0: the buffer goes when it is full.
    let m = Multi::new(0);
    assert_eq!(m.carve(10, 9), piece(0, 9, false));
    assert_eq!(m.carve(10, 1), piece(9, 1, true));
}

/// A message larger than what remains releases a used buffer without
/// it (nothing truncated); a fresh buffer truncates it instead.
#[test]
fn multi_too_big() {
    let m = Multi::new(10);
    assert_eq!(m.carve(100, 60), piece(0, 60, false));
    assert_eq!(m.carve(100, 41), Carve::Full);
    assert_eq!(
        *lock(&m.state),
        MultiState {
            used: 60,
            pieces: 1,
            released: true
        }
    );
    // The piece still out carries the release.
    assert!(m.piece_done());
    let m = Multi::new(10);
    assert_eq!(m.carve(100, 500), piece(0, 100, true));
}

/// A cancelled buffer with no piece out completes on its own; with
/// pieces out, the last of them carries the release.
#[test]
fn multi_release() {
    let m = Multi::new(10);
    assert!(m.release());
    let m = Multi::new(10);
    assert_eq!(m.carve(100, 5), piece(0, 5, false));
    assert_eq!(m.carve(100, 5), piece(5, 5, false));
    assert!(!m.release());
    assert!(!m.piece_done());
    assert!(m.piece_done());
}

/// A receive matches a message by kind, tag under the ignore mask and
/// source; a piece of a multi-receive buffer matches as its buffer.
#[test]
fn matching() {
    let a = Address {
        pid: 1,
        ep_id: 2,
        nonce: 3,
    };
    let b = Address { nonce: 4, ..a };
    let r = Recv {
        tagged: true,
        tag: 0x1200,
        ignore: 0xff,
        any_src: false,
        src: a,
        iov: [(0x1000, 64)][..].into(),
        report: true,
        context: std::ptr::null_mut(),
        multi: None,
    };
    let w = |flags, tag, from: Address| Wire {
        flags,
        tag,
        src_pid: from.pid,
        src_ep: from.ep_id,
        src_nonce: from.nonce,
        ..Wire::default()
    };
    assert!(matches(&r, &w(W_TAGGED, 0x12ab, a)));
    assert!(!matches(&r, &w(W_TAGGED, 0x13ab, a)));
    assert!(!matches(&r, &w(W_TAGGED, 0x12ab, b)));
    assert!(!matches(&r, &w(0, 0x1200, a)));
    let any = Recv {
        tagged: false,
        any_src: true,
        iov: [][..].into(),
        multi: None,
        ..r
    };
    assert!(matches(&any, &w(0, 0, b)));
    assert!(!matches(&any, &w(W_TAGGED, 0, b)));
}

/// A list of pieces keeps [`IOV_MAX`] in place and moves to the heap
/// with the next, in order; a split of a long list keeps every piece.
#[test]
fn pieces_past_the_inline_ones_move_to_the_heap_in_order() {
    let mut p = Pieces::default();
    for i in 0..IOV_MAX as u64 {
        p.push((i * 100, 10));
        assert!(matches!(p, IovList::Inline(..)));
    }
    p.push((9000, 5));
    assert!(matches!(p, IovList::Heap(_)));
    let want: Vec<(u64, u64)> = (0..IOV_MAX as u64)
        .map(|i| (i * 100, 10))
        .chain([(9000, 5)])
        .collect();
    assert_eq!(&p[..], &want[..]);
    let (a, b) = split_at(&p, 25);
    assert_eq!(&a[..], &[(0, 10), (100, 10), (200, 5)]);
    assert_eq!(&b[..], &[(205, 5), (300, 10), (9000, 5)]);
}

/// `window` names the same bytes as the two splits it replaces, for
/// every offset and length over pieces of several shapes.
#[test]
fn window_matches_split() {
    let shapes: [&[(u64, u64)]; 3] = [
        &[(1000, 64)],
        &[(1000, 10), (5000, 1), (9000, 30)],
        &[(0, 3), (100, 0), (200, 7)],
    ];
    for pieces in shapes {
        let total: u64 = pieces.iter().map(|p| p.1).sum();
        for off in 0..=total {
            for len in 0..=total - off {
                let (_, rest) = split_at(pieces, off);
                let (want, _) = split_at(&rest, len);
                let got = window(pieces, off, len);
                let flat = |v: &[(u64, u64)]| -> Vec<u64> {
                    v.iter().flat_map(|&(a, l)| a..a + l).collect()
                };
                assert_eq!(flat(&got), flat(&want), "off {off} len {len}");
            }
        }
    }
}

#[test]
fn only_a_streams_transfer_from_split_min_is_measured_for_sharing() {
    assert!(measured_share(SPLIT_MIN, false));
    assert!(measured_share(4 << 20, false));
    // A stream's 16 KiB transfer goes in halves unmeasured, as a lone one.
    assert!(!measured_share(16384, false));
    assert!(!measured_share(SPLIT_MIN - 1, false));
    assert!(!measured_share(4 << 20, true));
}

/// A receive numbered `n` (its context), with a multi-receive handle
/// whose count tells whether the queue dropped it.
fn numbered(n: usize, multi: &Arc<Multi>) -> Recv {
    Recv {
        context: n as *mut c_void,
        multi: Some(Arc::clone(multi)),
        ..Recv::VACANT
    }
}

fn contexts(q: &Posted) -> Vec<usize> {
    q.iter().map(|r| r.context as usize).collect()
}

/// The posted-receive ring keeps receives oldest first through
/// wrap-arounds and growths, takes them from the front or the middle,
/// and drops each one exactly once: taken, discarded or left at the end.
#[test]
fn posted_ring_keeps_order_and_drops_each_receive_once() {
    let m = Arc::new(Multi::new(0));
    let mut q = Posted::default();
    assert!(q.is_empty() && q.front().is_none() && q.pop_front().is_none());
    q.discard_front();
    let mut want: std::collections::VecDeque<usize> = Default::default();
    let mut next = 0;
    // Fill, drain part, refill past the first growth while wrapped.
    for round in 0..6 {
        for _ in 0..(5 + 3 * round) {
            q.push_back(numbered(next, &m));
            want.push_back(next);
            next += 1;
        }
        for _ in 0..(2 + round) {
            q.discard_front();
            want.pop_front();
        }
        assert_eq!(contexts(&q), Vec::from(want.clone()));
        assert_eq!(q.len(), want.len());
        assert_eq!(Arc::strong_count(&m), 1 + want.len());
    }
    // From the middle, then the front: the rest keep their order.
    let mid = q.len() / 2;
    let r = q.remove(mid).expect("in range");
    assert_eq!(r.context as usize, want.remove(mid).unwrap());
    drop(r);
    let r = q.pop_front().expect("not empty");
    assert_eq!(r.context as usize, want.pop_front().unwrap());
    drop(r);
    assert!(q.remove(q.len()).is_none());
    assert_eq!(contexts(&q), Vec::from(want.clone()));
    assert_eq!(q[1].context as usize, want[1]);
    assert_eq!(Arc::strong_count(&m), 1 + want.len());
    drop(q);
    assert_eq!(Arc::strong_count(&m), 1);
}

/// A plain receive pushed field by field reads back as posted: one
/// buffer in place, more than IOV_MAX on the heap, any source or one.
#[test]
fn posted_ring_plain_receives_read_back_as_posted() {
    let mut q = Posted::default();
    let src = Address {
        pid: 7,
        ep_id: 8,
        nonce: 9,
    };
    let many: Vec<(u64, u64)> = (0..=IOV_MAX as u64).map(|i| (i * 100, i + 1)).collect();
    q.push_plain(true, 5, 1, None, &[(0x1000, 64)], true, 3 as *mut c_void);
    q.push_plain(false, 0, 0, Some(src), &many, false, 4 as *mut c_void);
    q.push_plain(false, 0, 0, None, &[], true, 5 as *mut c_void);
    let a = &q[0];
    assert!(a.tagged && a.tag == 5 && a.ignore == 1 && a.any_src && a.report);
    assert!(a.multi.is_none() && a.context as usize == 3);
    assert!(matches!(a.iov, IovList::Inline(1, _)));
    assert_eq!(&a.iov[..], &[(0x1000, 64)]);
    let b = &q[1];
    assert!(!b.tagged && !b.any_src && b.src == src && !b.report);
    assert!(matches!(b.iov, IovList::Heap(_)));
    assert_eq!(&b.iov[..], &many[..]);
    assert!(q[2].iov.is_empty() && q[2].any_src);
    q.discard_front();
    assert_eq!(q.front().map(|r| r.context as usize), Some(4));
}
