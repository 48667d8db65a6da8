//! Target-side verification: is this remote access to (key, address,
//! length) allowed, and which bytes does it touch?
//!
//! Lock-free: a verification reads one slot (one cache line) and, for a
//! multi-iov region, its iov block, inside the slot's seqlock window, and
//! retries only if a writer changed that slot meanwhile. A provider key is
//! decoded to its slot without any lookup; a requested key goes through the
//! index (`index.rs`), whose stale answers are caught by the slot's key.
//!
//! # Addressing of multi-iov regions
//!
//! **Without FI_MR_VIRT_ADDR** the region is the concatenation of its iovs
//! in registration order, addressed by offset from 0: offset `o` is byte
//! `o - P(i)` of iov `i`, where `P(i)` is the sum of the lengths before it.
//! A range `[o, o + len)` is allowed when `o + len <= total length`; it may
//! span any number of iovs, and [`Target::pieces`] lists one `(address,
//! length)` per iov touched, in order. The pool keeps `(iov address,
//! cumulative end offset)` pairs; a lookup is a binary search.
//!
//! **With FI_MR_VIRT_ADDR** a target address is a virtual address and the
//! region is the set of bytes its iovs cover. The iovs are sorted and merged
//! at registration (overlapping or adjacent iovs become one range); a range
//! is allowed when every byte of it is registered, i.e. it lies inside one
//! merged range. A range that spans two iovs is therefore allowed exactly
//! when those iovs are contiguous (or overlap) in virtual memory, and it is
//! returned as the single piece `(address, length)`: the bytes are
//! contiguous. The pool keeps the merged `[start, end)` pairs; the region's
//! base address (what `fi_mr_raw_attr` reports) is the lowest registered
//! address, which is the first iov's address for the usual ascending layout.
//!
//! A region whose layout reduces to one range (one iov, or VIRT_ADDR iovs
//! that merge into one) keeps it in the slot and uses no pool block.
//!
//! # Edge cases
//!
//! - Zero-length accesses pass the same key, state, auth and access checks;
//!   the address must lie in the region or at its end; no pieces. They
//!   consume a single-use region like any other access.
//! - `address + length` overflowing u64 is out of range (`ACCES`).
//! - An empty `access` asks for no rights (range and state checks only).

use super::region::{Access, Handle, RegFlags};
use super::registry::{Registry, Snap};
use super::slot::*;
use crate::error::{Error, Result};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// What a verified access may touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The region's opaque provider context ([`Request::context`]).
    ///
    /// [`Request::context`]: crate::mr::Request
    pub context: u64,
    /// The region's slot (dense, for per-region side tables).
    pub slot: u32,
    /// The region's handle: what the provider keyed its own state by.
    pub handle: Handle,
    pub flags: RegFlags,
    pub iface: u8,
    pieces: Pieces,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pieces {
    Empty,
    One((u64, u64)),
    Many(Vec<(u64, u64)>),
}

impl Target {
    /// `(address, length)` of each run of bytes the access touches, in the
    /// order of the remote buffer. Empty for a zero-length access.
    pub fn pieces(&self) -> &[(u64, u64)] {
        match &self.pieces {
            Pieces::Empty => &[],
            Pieces::One(p) => std::slice::from_ref(p),
            Pieces::Many(v) => v,
        }
    }
}

/// Why a slot did not verify: `Stale` (no live region with this key
/// there; the caller may look again) or a definite refusal.
enum Miss {
    Stale,
    Denied(Error),
}

impl From<Miss> for Error {
    fn from(m: Miss) -> Error {
        match m {
            Miss::Stale => Error::INVAL,
            Miss::Denied(e) => e,
        }
    }
}

/// First index in `0..n` whose `word(i)` is above `x` (words ascending).
#[inline]
fn search(n: usize, x: u64, word: impl Fn(usize) -> u64) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if word(mid) <= x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl Registry {
    /// Checks a remote access of `len` bytes at `addr` (an offset, or a
    /// virtual address for VIRT_ADDR regions) needing `access`, from an
    /// initiator presenting authorization key `auth` (`None`: the domain's
    /// default). Consumes a single-use region.
    ///
    /// Errors: `INVAL` for a key that names no live region (unknown, stale,
    /// out of the key size); `ACCES` for a disabled or consumed region, an
    /// auth key mismatch, missing access bits, or a range outside the
    /// region.
    pub fn verify(
        &self,
        key: u64,
        addr: u64,
        len: u64,
        access: Access,
        auth: Option<u64>,
    ) -> Result<Target> {
        let mut t = None;
        self.verify_into(key, addr, len, access, auth, &mut t)?;
        t.ok_or(Error::INVAL)
    }

    /// As [`Registry::verify`], writing the target into `out` (left as it
    /// was on an error). `out` starts as `None`: a target to fill would be
    /// written twice. A data path that uses the target where it was
    /// written reads each field as it was stored. A returned target is
    /// built in a temporary field by field and moved with 16-byte loads
    /// right after, each of which waits for the narrower stores it spans
    /// to land (a quarter of oxshm's `handle` samples at the target of
    /// `fi_rma_bw -o writedata -S 64`, `perf record`).
    #[inline(always)]
    pub fn verify_into(
        &self,
        key: u64,
        addr: u64,
        len: u64,
        access: Access,
        auth: Option<u64>,
        out: &mut Option<Target>,
    ) -> Result<()> {
        let r = match &self.index {
            None => match self.codec.decode(key) {
                Some((slot, kg)) => self.check(slot, Some(kg), key, addr, len, access, auth, out),
                None => Err(Miss::Stale),
            },
            Some(ix) => loop {
                let (found, v) = ix.lookup(key);
                let r = match found {
                    Some(s) => self.check(s, None, key, addr, len, access, auth, out),
                    None => Err(Miss::Stale),
                };
                match r {
                    Err(Miss::Stale) if !ix.unchanged(v) => continue,
                    r => break r,
                }
            },
        };
        r.map_err(|m| {
            self.count_denied();
            m.into()
        })
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn check(
        &self,
        slot: u32,
        key_gen: Option<u64>,
        key: u64,
        addr: u64,
        len: u64,
        want: Access,
        auth: Option<u64>,
        out: &mut Option<Target>,
    ) -> std::result::Result<(), Miss> {
        let s = self.slot(slot).ok_or(Miss::Stale)?;
        loop {
            // SeqCst: a provider that counts its accesses in flight (an
            // RMW before this call) and whose close reads that count after
            // the close's SeqCst CAS on `seq` (Registry::close_at) needs
            // no further fence: of the two, one sees the other (oxshm's
            // Domain::quiesce). A plain load on x86, an ldar on arm64.
            let seq = s.seq.load(Ordering::SeqCst);
            if seq & READY == 0 {
                return Err(Miss::Stale);
            }
            if let Some(kg) = key_gen {
                if !self.codec.same_gen(kg, gen_of(seq)) {
                    return Err(Miss::Stale);
                }
            }
            let snap = Snap::load(s, seq);
            let n = links_iovs(snap.links);
            let multi = (n > 1).then(|| self.multi(&snap, n, addr, len));
            fence(Ordering::Acquire);
            if s.seq.load(Ordering::Relaxed) != seq {
                continue;
            }
            // From here on, `snap` and `multi` are one generation's values.
            if snap.key != key {
                return Err(Miss::Stale);
            }
            if seq & (ENABLED | CONSUMED) != ENABLED
                || (snap.meta & META_AUTH != 0 && auth != Some(snap.auth))
                || !meta_access(snap.meta).contains(want)
            {
                return Err(Miss::Denied(Error::ACCES));
            }
            let pieces = match multi {
                Some(p) => p,
                None => inline(&snap, addr, len),
            }
            .ok_or(Miss::Denied(Error::ACCES))?;
            let flags = snap.flags();
            if flags.contains(RegFlags::SINGLE_USE)
                && s.seq
                    .compare_exchange(seq, seq | CONSUMED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            *out = Some(Target {
                context: snap.context,
                slot,
                handle: Handle {
                    slot,
                    gen: gen_of(seq),
                    key,
                },
                flags,
                iface: meta_iface(snap.meta),
                pieces,
            });
            return Ok(());
        }
    }

    /// The pieces of a multi-iov access, read from the pool inside the
    /// caller's read window: garbage in (a torn read) gives garbage or
    /// `None` out, never a panic; the caller discards it unless the window
    /// validates.
    #[cold]
    #[inline(never)]
    fn multi(&self, snap: &Snap, n: usize, addr: u64, len: u64) -> Option<Pieces> {
        let w = self.pool.words(n, links_block(snap.links))?;
        let end = addr.checked_add(len)?;
        let word = |i: usize| {
            w.get(i)
                .map_or(u64::MAX, |a: &AtomicU64| a.load(Ordering::Relaxed))
        };
        if snap.flags().contains(RegFlags::VIRT_ADDR) {
            // Merged, sorted [start, end) pairs: the range must sit in one.
            let i = search(n, addr, |i| word(2 * i));
            if i == 0 || end > word(2 * (i - 1) + 1) {
                return None;
            }
            return Some(if len == 0 {
                Pieces::Empty
            } else {
                Pieces::One((addr, len))
            });
        }
        // (iov address, cumulative end offset) pairs.
        if end > snap.len {
            return None;
        }
        if len == 0 {
            return Some(Pieces::Empty);
        }
        let mut i = search(n, addr, |i| word(2 * i + 1));
        let mut prev = if i == 0 { 0 } else { word(2 * i - 1) };
        let mut at = addr;
        let mut out = Vec::new();
        while at < end && i < n {
            let (base, cum) = (word(2 * i), word(2 * i + 1));
            let take = cum.min(end).checked_sub(at)?;
            out.push((base.checked_add(at.checked_sub(prev)?)?, take));
            at += take;
            prev = cum;
            i += 1;
        }
        match out.len() {
            _ if at != end => None,
            1 => Some(Pieces::One(out[0])),
            _ => Some(Pieces::Many(out)),
        }
    }
}

/// The piece of an access to a region held in its slot alone.
#[inline]
fn inline(snap: &Snap, addr: u64, len: u64) -> Option<Pieces> {
    let (start, len) = inline_range(snap, addr, len)?;
    Some(if len == 0 {
        Pieces::Empty
    } else {
        Pieces::One((start, len))
    })
}

/// The bytes `(address, length)` an access of `len` at `addr` touches in
/// a region held in its slot alone, if the range lies in it.
#[inline]
pub(crate) fn inline_range(snap: &Snap, addr: u64, len: u64) -> Option<(u64, u64)> {
    let end = addr.checked_add(len)?;
    let start = if snap.flags().contains(RegFlags::VIRT_ADDR) {
        if addr < snap.base || end > snap.base.saturating_add(snap.len) {
            return None;
        }
        addr
    } else {
        if end > snap.len {
            return None;
        }
        snap.base.wrapping_add(addr)
    };
    Some((start, len))
}
