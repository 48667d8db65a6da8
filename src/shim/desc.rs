//! The desc → registration map that the data-path checks read, and the
//! rules they apply.
//!
//! A desc the application passes is the provider's `mem_desc`, which the
//! shim copied into its wrapper ([`super::mr`]). Each registration the shim
//! wraps gets one slot here, keyed by that desc: its range, access, domain
//! and whether it was closed (kept while the wrapper sits in quarantine).
//! Some providers give several registrations the same desc (a key, a
//! constant, an address reused after a close), so a desc may name several
//! slots; a use is fine when any live registration of the endpoint's
//! domain among them covers the buffer with the access needed, and
//! otherwise the finding names the likeliest explanation.
//!
//! Readers take no lock: open addressing over a fixed array, one cache
//! line per slot, each read under the slot's sequence counter. Writers
//! hold the shim's state lock, so there is one writer at a time.

use super::report::Kind;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

/// 32768 slots of 64 bytes (2 MiB): the live registrations and the
/// [`super::mr::QUARANTINE`] closed ones at a low load.
const BITS: u32 = 15;
const SLOTS: usize = 1 << BITS;
/// Longest probe sequence: a registration that finds no free slot within
/// it is not entered (its desc then reads as unknown: no check, counted).
const MAX_PROBE: usize = 64;
const EMPTY: usize = 0;
const TOMB: usize = usize::MAX;

/// `state` bits of a slot.
const CLOSED: usize = 1;
/// The registration's range is not one contiguous span (iovs with gaps,
/// a dma-buf): the range is not checked.
const SPAN_UNKNOWN: usize = 2;

#[repr(C, align(64))]
struct Slot {
    seq: AtomicU64,
    desc: AtomicUsize,
    addr: AtomicUsize,
    len: AtomicUsize,
    access: AtomicU64,
    domain: AtomicUsize,
    state: AtomicUsize,
    mr: AtomicUsize,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            seq: AtomicU64::new(0),
            desc: AtomicUsize::new(EMPTY),
            addr: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            access: AtomicU64::new(0),
            domain: AtomicUsize::new(0),
            state: AtomicUsize::new(0),
            mr: AtomicUsize::new(0),
        }
    }

    /// The sequence counter, then every field: a copy that holds if the
    /// counter was even and has not moved since (the caller looks again).
    #[inline(always)]
    fn snapshot(&self) -> (u64, View) {
        let s1 = self.seq.load(Ordering::Acquire);
        let v = View {
            desc: self.desc.load(Ordering::Relaxed),
            addr: self.addr.load(Ordering::Relaxed),
            len: self.len.load(Ordering::Relaxed),
            access: self.access.load(Ordering::Relaxed),
            domain: self.domain.load(Ordering::Relaxed),
            state: self.state.load(Ordering::Relaxed),
            mr: self.mr.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        (s1, v)
    }

    /// Whether a snapshot taken at counter `s1` holds.
    #[inline(always)]
    fn holds(&self, s1: u64) -> bool {
        s1 & 1 == 0 && self.seq.load(Ordering::Relaxed) == s1
    }

    /// A consistent copy (None while a writer is changing it, after a few
    /// tries: treated as a slot that does not match).
    fn read(&self) -> Option<View> {
        for _ in 0..16 {
            let (s1, v) = self.snapshot();
            if self.holds(s1) {
                return Some(v);
            }
            std::hint::spin_loop();
        }
        None
    }

    /// Whether the slot holds a live registration with `desc`, of
    /// `domain`, that covers `addr..addr+len` with `need`: the common
    /// answer, one look under the sequence counter. False while a writer
    /// is changing it (the caller then looks again, with [`judge`]).
    #[inline(always)]
    fn fits(&self, desc: usize, domain: usize, addr: usize, len: usize, need: u64) -> bool {
        let (s1, v) = self.snapshot();
        self.holds(s1) && v.fits(desc, domain, addr, len, need)
    }

    /// Runs `f` as the slot's one writer (the caller holds the state lock).
    fn write(&self, f: impl FnOnce(&Slot)) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        f(self);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// What one slot says of a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub desc: usize,
    pub addr: usize,
    pub len: usize,
    pub access: u64,
    /// The [`super::objects::DomainHook`] it was registered on.
    pub domain: usize,
    pub state: usize,
    /// The [`super::mr::ShimMr`] wrapper.
    pub mr: usize,
}

impl View {
    #[inline(always)]
    fn closed(&self) -> bool {
        self.state & CLOSED != 0
    }

    #[inline(always)]
    fn fits(&self, desc: usize, domain: usize, addr: usize, len: usize, need: u64) -> bool {
        self.desc == desc
            && !self.closed()
            && self.domain == domain
            && self.covers(addr, len)
            && self.access & need == need
    }

    #[inline(always)]
    fn covers(&self, addr: usize, len: usize) -> bool {
        self.state & SPAN_UNKNOWN != 0
            || (addr >= self.addr && len <= self.len && addr - self.addr <= self.len - len)
    }
}

#[inline]
fn home(desc: usize) -> usize {
    ((desc as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize
}

/// Enters a registration; returns its slot (None: no room, see MAX_PROBE).
/// The caller holds the state lock.
///
/// Closed registrations with the same desc that the walk meets are
/// forgotten (`dropped` is called with each one's `mr`): the provider gave
/// their desc to a new registration, so a later use of it means the new
/// one. Without this, a provider that reuses a few descs (oxshm's slots,
/// malloc'd objects) would pile up quarantined entries on one probe
/// sequence. Inlined into each registration entry: it runs once per
/// registration.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn insert(
    desc: usize,
    addr: usize,
    len: usize,
    exact: bool,
    access: u64,
    domain: usize,
    mr: usize,
    mut dropped: impl FnMut(usize),
) -> Option<usize> {
    if desc == EMPTY || desc == TOMB {
        return None;
    }
    prefault();
    let h = home(desc);
    // One pass along the probe sequence: the first free slot (empty, a
    // tombstone, or a closed entry of this desc, which the new one then
    // overwrites) takes the registration. A closed entry of this desc
    // found first ends the walk; past a tombstone the walk goes on to the
    // end, and the closed entries of this desc it meets become tombstones.
    // Several entries of one desc exist only where the provider gave it to
    // several live registrations at once; then closed ones may stay behind
    // the entry the walk stopped at, until later registrations of the desc
    // take them.
    let mut free = None;
    for i in 0..MAX_PROBE {
        let idx = (h + i) & (SLOTS - 1);
        let s = &TABLE[idx];
        let d = s.desc.load(Ordering::Relaxed);
        if d == EMPTY {
            free = free.or(Some(idx));
            break;
        }
        if d == TOMB {
            free = free.or(Some(idx));
        } else if d == desc && s.state.load(Ordering::Relaxed) & CLOSED != 0 {
            let m = s.mr.load(Ordering::Relaxed);
            dropped(m);
            if free.is_none() {
                // The common case (a provider reusing the desc of a
                // registration closed earlier): the entry is overwritten
                // in place and the walk stops there.
                free = Some(idx);
                break;
            }
            remove(idx);
        }
    }
    let idx = free?;
    TABLE[idx].write(|s| {
        s.addr.store(addr, Ordering::Relaxed);
        s.len.store(len, Ordering::Relaxed);
        s.access.store(access, Ordering::Relaxed);
        s.domain.store(domain, Ordering::Relaxed);
        s.state
            .store(if exact { 0 } else { SPAN_UNKNOWN }, Ordering::Relaxed);
        s.mr.store(mr, Ordering::Relaxed);
        s.desc.store(desc, Ordering::Relaxed);
    });
    Some(idx)
}

/// Touches every page of the table once, at the first registration:
/// otherwise each registration whose desc hashes to a page not yet
/// touched pays a page fault (measured: +300 to +450 ns per registration
/// over tcp;ofi_rxm, whose descs are spread-out heap addresses).
fn prefault() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        for s in TABLE.iter().step_by(4096 / std::mem::size_of::<Slot>()) {
            s.seq.fetch_add(0, Ordering::Relaxed);
        }
    });
}

/// Marks the registration in `slot` closed (its wrapper is in quarantine).
pub(crate) fn set_closed(slot: usize) {
    let s = &TABLE[slot];
    s.write(|s| {
        let v = s.state.load(Ordering::Relaxed);
        s.state.store(v | CLOSED, Ordering::Relaxed);
    });
}

/// Whether the registration in `slot` has an exact span.
pub(crate) fn exact(slot: usize) -> bool {
    TABLE[slot].state.load(Ordering::Relaxed) & SPAN_UNKNOWN == 0
}

/// Forgets the registration in `slot` (its wrapper left quarantine).
pub(crate) fn remove(slot: usize) {
    TABLE[slot].write(|s| {
        s.desc.store(TOMB, Ordering::Relaxed);
        s.mr.store(0, Ordering::Relaxed);
    });
}

/// The outcome of one (buffer, desc) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ok,
    /// No registration the shim knows has this desc.
    Unknown,
    /// A finding of `Kind` about the registration `View` (the likeliest
    /// of those with this desc), with how many had it.
    Bad(Kind, View, usize),
}

/// Ranks an explanation of a desc that fails: lower is likelier.
fn rank(v: &View, domain: usize, addr: usize, len: usize, need: u64) -> (u8, Kind) {
    let mine = v.domain == domain;
    let covers = v.covers(addr, len);
    let access = v.access & need == need;
    match (v.closed(), mine, covers, access) {
        (false, false, true, true) => (1, Kind::DescForeignDomain),
        (true, _, true, _) => (2, Kind::DescClosedMr),
        (false, true, true, false) => (3, Kind::DescAccess),
        (false, true, false, _) => (4, Kind::DescRange),
        (false, false, _, _) => (5, Kind::DescForeignDomain),
        (true, _, false, _) => (6, Kind::DescClosedMr),
        (false, true, true, true) => (0, Kind::DescRange),
    }
}

/// Whether `desc` names a live registration of `domain` that covers the
/// local buffer `addr..addr+len` of an endpoint with `need`: the common
/// answer, found without copying or ranking anything. False sends the
/// caller to [`judge`] for the verdict.
#[inline(always)]
pub(crate) fn fits(desc: usize, domain: usize, addr: usize, len: usize, need: u64) -> bool {
    let h = home(desc);
    for i in 0..MAX_PROBE {
        let s = &TABLE[(h + i) & (SLOTS - 1)];
        let d = s.desc.load(Ordering::Acquire);
        if d == EMPTY {
            return false;
        }
        if d == desc && s.fits(desc, domain, addr, len, need) {
            return true;
        }
    }
    false
}

/// Judges a desc for the local buffer `addr..addr+len` of an endpoint of
/// `domain` that needs `need`, ranking the explanations of one that fails.
#[cold]
#[inline(never)]
pub(crate) fn judge(desc: usize, domain: usize, addr: usize, len: usize, need: u64) -> Verdict {
    judge_in(&TABLE, desc, domain, addr, len, need)
}

fn judge_in(
    table: &[Slot],
    desc: usize,
    domain: usize,
    addr: usize,
    len: usize,
    need: u64,
) -> Verdict {
    let mask = table.len() - 1;
    let h = ((desc as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> (64 - table.len().trailing_zeros())) as usize;
    let mut best: Option<(u8, Kind, View)> = None;
    let mut seen = 0;
    for i in 0..MAX_PROBE {
        let s = &table[(h + i) & mask];
        let d = s.desc.load(Ordering::Acquire);
        if d == EMPTY {
            break;
        }
        if d != desc {
            continue;
        }
        let Some(v) = s.read() else { continue };
        if v.desc != desc {
            continue;
        }
        seen += 1;
        if v.fits(desc, domain, addr, len, need) {
            return Verdict::Ok;
        }
        let (r, k) = rank(&v, domain, addr, len, need);
        if best.is_none_or(|(b, _, _)| r < b) {
            best = Some((r, k, v));
        }
    }
    match best {
        None => Verdict::Unknown,
        Some((_, k, v)) => Verdict::Bad(k, v, seen),
    }
}

/// Bytes of one element of an atomic datatype (None: not known here, the
/// range is then not checked).
pub(crate) fn datatype_size(dt: u32) -> Option<usize> {
    Some(match dt {
        0 | 1 => 1,                        // INT8, UINT8
        2 | 3 => 2,                        // INT16, UINT16
        4 | 5 | 8 => 4,                    // INT32, UINT32, FLOAT
        6 | 7 | 9 | 10 => 8,               // INT64, UINT64, DOUBLE, FLOAT_COMPLEX
        11 => 16,                          // DOUBLE_COMPLEX
        12 => std::mem::size_of::<u128>(), // LONG_DOUBLE (x86-64: 16)
        13 => 32,                          // LONG_DOUBLE_COMPLEX
        14 | 15 => 16,                     // INT128, UINT128
        16 | 17 => 2,                      // FLOAT16, BFLOAT16
        18 | 19 => 1,                      // FLOAT8_E4M3, FLOAT8_E5M2
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::fabric::{FI_READ, FI_RECV, FI_SEND, FI_WRITE};

    fn table() -> Vec<Slot> {
        (0..1024).map(|_| Slot::new()).collect()
    }

    fn put(t: &[Slot], idx: usize, v: View) {
        t[idx].write(|s| {
            s.addr.store(v.addr, Ordering::Relaxed);
            s.len.store(v.len, Ordering::Relaxed);
            s.access.store(v.access, Ordering::Relaxed);
            s.domain.store(v.domain, Ordering::Relaxed);
            s.state.store(v.state, Ordering::Relaxed);
            s.mr.store(v.mr, Ordering::Relaxed);
            s.desc.store(v.desc, Ordering::Relaxed);
        });
    }

    fn home_in(t: &[Slot], desc: usize) -> usize {
        ((desc as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - t.len().trailing_zeros()))
            as usize
    }

    fn mr(desc: usize, addr: usize, len: usize, access: u64, domain: usize) -> View {
        View {
            desc,
            addr,
            len,
            access,
            domain,
            state: 0,
            mr: 1,
        }
    }

    #[test]
    fn judges_each_kind() {
        let t = table();
        let d = 0x5000;
        let h = home_in(&t, d);
        put(&t, h, mr(d, 0x1000, 0x100, FI_SEND, 1));
        let j = |addr, len, need, dom| judge_in(&t, d, dom, addr, len, need);
        assert_eq!(j(0x1000, 0x100, FI_SEND, 1), Verdict::Ok);
        assert_eq!(j(0x1080, 0x80, FI_SEND, 1), Verdict::Ok);
        assert!(matches!(
            j(0x1080, 0x81, FI_SEND, 1),
            Verdict::Bad(Kind::DescRange, _, 1)
        ));
        assert!(matches!(
            j(0xfff, 1, FI_SEND, 1),
            Verdict::Bad(Kind::DescRange, _, 1)
        ));
        assert!(matches!(
            j(0x1000, 8, FI_RECV, 1),
            Verdict::Bad(Kind::DescAccess, _, 1)
        ));
        assert!(matches!(
            j(0x1000, 8, FI_SEND, 2),
            Verdict::Bad(Kind::DescForeignDomain, _, 1)
        ));
        assert_eq!(
            judge_in(&t, 0x6000, 1, 0x1000, 8, FI_SEND),
            Verdict::Unknown
        );
        let mut c = mr(d, 0x1000, 0x100, FI_SEND, 1);
        c.state = CLOSED;
        put(&t, h, c);
        assert!(matches!(
            j(0x1000, 8, FI_SEND, 1),
            Verdict::Bad(Kind::DescClosedMr, _, 1)
        ));
    }

    #[test]
    fn shared_descs_pass_when_any_fits() {
        let t = table();
        let d = 7;
        let h = home_in(&t, d);
        let mut closed = mr(d, 0x1000, 0x100, FI_SEND, 1);
        closed.state = CLOSED;
        put(&t, h, closed);
        put(
            &t,
            (h + 1) & 1023,
            mr(d, 0x9000, 0x100, FI_SEND | FI_RECV, 1),
        );
        assert_eq!(judge_in(&t, d, 1, 0x9000, 0x10, FI_RECV), Verdict::Ok);
        // Neither fits: the closed one covers the buffer, the likelier story.
        assert!(matches!(
            judge_in(&t, d, 1, 0x1000, 0x10, FI_SEND),
            Verdict::Bad(Kind::DescClosedMr, _, 2)
        ));
        // A tombstone in the chain is skipped.
        t[h].write(|s| s.desc.store(TOMB, Ordering::Relaxed));
        assert_eq!(judge_in(&t, d, 1, 0x9000, 0x10, FI_RECV), Verdict::Ok);
    }

    #[test]
    fn unknown_span_checks_access_only() {
        let t = table();
        let d = 0x77;
        let mut v = mr(d, 0, 0, FI_READ, 1);
        v.state = SPAN_UNKNOWN;
        put(&t, home_in(&t, d), v);
        assert_eq!(judge_in(&t, d, 1, 0x1234, 99, FI_READ), Verdict::Ok);
        assert!(matches!(
            judge_in(&t, d, 1, 0x1234, 99, FI_WRITE),
            Verdict::Bad(Kind::DescAccess, _, 1)
        ));
    }

    #[test]
    fn insert_and_remove_in_the_global_table() {
        let s = insert(0xdead_0000, 0x1000, 64, true, FI_SEND, 9, 1, |_| ()).unwrap();
        assert_eq!(judge(0xdead_0000, 9, 0x1000, 64, FI_SEND), Verdict::Ok);
        // The data path's first look agrees with the verdict, both ways.
        assert!(fits(0xdead_0000, 9, 0x1000, 64, FI_SEND));
        assert!(fits(0xdead_0000, 9, 0x1010, 0x30, 0));
        assert!(!fits(0xdead_0000, 9, 0x1010, 0x31, 0));
        assert!(!fits(0xdead_0000, 9, 0x1000, 64, FI_RECV));
        assert!(!fits(0xdead_0000, 8, 0x1000, 64, FI_SEND));
        assert!(!fits(0xdead_0001, 9, 0x1000, 64, FI_SEND));
        set_closed(s);
        assert!(!fits(0xdead_0000, 9, 0x1000, 64, FI_SEND));
        assert!(matches!(
            judge(0xdead_0000, 9, 0x1000, 64, FI_SEND),
            Verdict::Bad(Kind::DescClosedMr, _, 1)
        ));
        // A new registration with the desc of a closed one replaces it.
        let mut gone = vec![];
        let t = insert(0xdead_0000, 0x2000, 64, true, FI_SEND, 9, 2, |m| {
            gone.push(m)
        })
        .unwrap();
        assert_eq!(gone, vec![1]);
        assert_eq!(judge(0xdead_0000, 9, 0x2000, 64, FI_SEND), Verdict::Ok);
        assert!(matches!(
            judge(0xdead_0000, 9, 0x1000, 64, FI_SEND),
            Verdict::Bad(Kind::DescRange, _, 1)
        ));
        // ... in the closed one's own slot.
        assert_eq!(t, s);
        remove(t);
        assert_eq!(judge(0xdead_0000, 9, 0x1000, 64, FI_SEND), Verdict::Unknown);
    }

    #[test]
    fn a_closed_entry_of_the_desc_found_first_is_taken_and_ends_the_walk() {
        // A provider that gave one desc to two live registrations.
        let d = 0xcafe_0000usize;
        let s1 = insert(d, 0x1000, 64, true, FI_SEND, 5, 20, |_| ()).unwrap();
        let s2 = insert(d, 0x2000, 64, true, FI_SEND, 5, 21, |_| ()).unwrap();
        assert_eq!(s2, (s1 + 1) & (SLOTS - 1));
        set_closed(s1);
        set_closed(s2);
        // The next registration of d overwrites the first and stops there:
        // only that one is forgotten; the second stays, closed.
        let mut gone = vec![];
        let t = insert(d, 0x3000, 64, true, FI_SEND, 5, 22, |m| gone.push(m)).unwrap();
        assert_eq!((t, gone), (s1, vec![20]));
        assert_eq!(judge(d, 5, 0x3000, 64, FI_SEND), Verdict::Ok);
        assert!(matches!(
            judge(d, 5, 0x2000, 64, FI_SEND),
            Verdict::Bad(Kind::DescClosedMr, View { mr: 21, .. }, 2)
        ));
        // The one after takes the closed entry left behind.
        let mut gone = vec![];
        let u = insert(d, 0x4000, 64, true, FI_SEND, 5, 23, |m| gone.push(m)).unwrap();
        assert_eq!((u, gone), (s2, vec![21]));
        assert_eq!(judge(d, 5, 0x4000, 64, FI_SEND), Verdict::Ok);
        remove(t);
        remove(u);
        assert_eq!(judge(d, 5, 0x3000, 64, FI_SEND), Verdict::Unknown);
    }

    #[test]
    fn insert_takes_the_first_free_slot_and_forgets_closed_ones_past_it() {
        // Two descs with one home: a's entry, then b's, on one sequence.
        let a = 0xbeef_0000usize;
        let b = (a + 1..).find(|&d| home(d) == home(a)).unwrap();
        let sa = insert(a, 0x1000, 64, true, FI_SEND, 7, 10, |_| ()).unwrap();
        let sb = insert(b, 0x2000, 64, true, FI_SEND, 7, 11, |_| ()).unwrap();
        assert_eq!(sb, (sa + 1) & (SLOTS - 1));
        set_closed(sb);
        remove(sa);
        // b again: the tombstone a left comes first and takes it; the
        // closed entry of b behind it is forgotten.
        let mut gone = vec![];
        let t = insert(b, 0x3000, 64, true, FI_SEND, 7, 12, |m| gone.push(m)).unwrap();
        assert_eq!((t, gone), (sa, vec![11]));
        assert_eq!(judge(b, 7, 0x3000, 64, FI_SEND), Verdict::Ok);
        assert!(matches!(
            judge(b, 7, 0x2000, 64, FI_SEND),
            Verdict::Bad(Kind::DescRange, _, 1)
        ));
        assert_eq!(TABLE[sb].desc.load(Ordering::Relaxed), TOMB);
        remove(t);
        assert_eq!(judge(b, 7, 0x3000, 64, FI_SEND), Verdict::Unknown);
    }
}
