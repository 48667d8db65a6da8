//! Checking an access against another process's registry.
//!
//! A registry made with [`Registry::with_config_in`] keeps the slots of
//! its first regions in memory its provider shares with other processes.
//! [`RemoteSlots`] is another process's view of those slots: the same
//! seqlock read as [`Registry::verify`] (key and generation, enabled and
//! not consumed, access rights, the whole range), done by the initiator of
//! an access, so that it may copy without asking the target first.
//!
//! It answers only for the plain case, a region held in its slot alone
//! (one iov, or VIRT_ADDR iovs merged into one range) with no
//! authorization key, not single-use, in host memory, bound to no counter
//! or endpoint; for anything else, and for every refusal, it says "ask the
//! target" ([`None`]), whose verification then decides, counts and logs as
//! for any request. It never writes the slots.
//!
//! The provider makes the view safe against a concurrent close: the
//! initiator announces its access (a SeqCst increment in shared memory)
//! before [`RemoteSlots::check`] loads the slot's `seq` with SeqCst, and
//! the target's close, after its SeqCst CAS on `seq`, waits for such
//! announcements to end, as it waits for its own accesses
//! (`Registry::verify`'s note on `seq`).
//!
//! [`Registry::verify`]: super::Registry::verify
//! [`Registry::with_config_in`]: super::Registry::with_config_in

use super::key::KeyCodec;
use super::region::{Access, RegFlags};
use super::registry::Snap;
use super::slot::*;
use super::verify::inline_range;
use std::sync::atomic::{fence, Ordering};

/// Another process's shared slots.
pub struct RemoteSlots {
    base: *const Slot,
    n: usize,
    codec: KeyCodec,
}

// SAFETY: the slots are atomics, only read; the mapping outlives the view
// (RemoteSlots::new's contract).
unsafe impl Send for RemoteSlots {}
// SAFETY: as above.
unsafe impl Sync for RemoteSlots {}

/// Times a slot read is retried while its writer keeps changing it before
/// the view gives the access to the target.
const RETRIES: usize = 4;

impl RemoteSlots {
    /// A view of `bytes / 64` slots at `mem`, of a registry whose
    /// [`key_params`](super::Registry::key_params) are `key_size` and
    /// `secret`. `None` for a key size outside 1..=8.
    ///
    /// # Safety
    /// `mem` is 64-byte aligned and stays mapped, readable, and `bytes`
    /// long while the view lives.
    pub unsafe fn new(mem: *const u8, bytes: usize, key_size: usize, secret: u64) -> Option<Self> {
        if !(1..=8).contains(&key_size) || mem.is_null() || mem as usize % 64 != 0 {
            return None;
        }
        Some(RemoteSlots {
            base: mem as *const Slot,
            n: bytes / 64,
            codec: KeyCodec::new(key_size, secret),
        })
    }

    /// Where an access of `len` bytes at `addr` through `key`, needing
    /// `want`, lands in the target's memory (`(address, length)`), when
    /// the region allows it and is plain (see the module). `None`: ask the
    /// target.
    #[inline]
    pub fn check(&self, key: u64, addr: u64, len: u64, want: Access) -> Option<(u64, u64)> {
        let (slot, kg) = self.codec.decode(key)?;
        if slot as usize >= self.n {
            return None;
        }
        // SAFETY: slot < n, inside the mapping (new's contract).
        let s = unsafe { &*self.base.add(slot as usize) };
        for _ in 0..RETRIES {
            // SeqCst: see the module (the provider's announcement).
            let seq = s.seq.load(Ordering::SeqCst);
            if seq & READY == 0 || !self.codec.same_gen(kg, gen_of(seq)) {
                return None;
            }
            let snap = Snap::load(s, seq);
            fence(Ordering::Acquire);
            if s.seq.load(Ordering::Relaxed) != seq {
                continue;
            }
            let flags = snap.flags();
            let plain = snap.key == key
                && seq & (ENABLED | CONSUMED) == ENABLED
                && bindings_of(seq).is_empty()
                && snap.meta & META_AUTH == 0
                && meta_iface(snap.meta) == 0
                && meta_access(snap.meta).contains(want)
                && links_iovs(snap.links) <= 1
                && !flags.contains(RegFlags::SINGLE_USE);
            if !plain {
                return None;
            }
            return inline_range(&snap, addr, len).filter(|r| r.1 > 0);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::{Config, Registry, Request};

    /// A registry whose first 256 slots are in `mem` (a page-aligned
    /// anonymous mapping standing in for shared memory), and a view of
    /// them as another process would have it.
    struct Pair {
        reg: Option<Registry>,
        view: RemoteSlots,
        mem: *mut u8,
        bytes: usize,
    }

    impl Pair {
        fn new() -> Pair {
            let bytes = 256 * 64;
            // SAFETY: a fresh private anonymous mapping (zeroed).
            let mem = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            } as *mut u8;
            assert_ne!(mem as *mut libc::c_void, libc::MAP_FAILED);
            let cfg = Config {
                secret: Some(0x1234_5678),
                ..Config::default()
            };
            // SAFETY: zeroed, aligned, mapped until Pair drops (after the
            // registry).
            let reg = unsafe { Registry::with_config_in(cfg, mem, bytes) }.unwrap();
            let (ks, secret) = reg.key_params();
            // SAFETY: as above.
            let view = unsafe { RemoteSlots::new(mem, bytes, ks, secret) }.unwrap();
            Pair {
                reg: Some(reg),
                view,
                mem,
                bytes,
            }
        }

        fn reg(&self) -> &Registry {
            self.reg.as_ref().unwrap()
        }
    }

    impl Drop for Pair {
        fn drop(&mut self) {
            self.reg = None;
            // SAFETY: the mapping made in new, no longer used.
            unsafe { libc::munmap(self.mem as *mut libc::c_void, self.bytes) };
        }
    }

    fn rw() -> Access {
        Access::REMOTE_READ | Access::REMOTE_WRITE
    }

    #[test]
    fn the_view_sees_what_the_target_verifies() {
        let p = Pair::new();
        let buf = vec![0u8; 4096];
        let base = buf.as_ptr() as u64;
        let h = p
            .reg()
            .register(&Request::new(&[(base, 4096)], rw()))
            .unwrap();
        let key = h.key();
        // Offsets (no VIRT_ADDR): the target's verify and the view agree.
        let t = p
            .reg()
            .verify(key, 100, 200, Access::REMOTE_WRITE, None)
            .unwrap();
        assert_eq!(t.pieces(), &[(base + 100, 200)]);
        assert_eq!(
            p.view.check(key, 100, 200, Access::REMOTE_WRITE),
            Some((base + 100, 200))
        );
        // Out of range, a wrong key, a stale key: the target decides.
        assert_eq!(p.view.check(key, 4000, 200, Access::REMOTE_WRITE), None);
        assert_eq!(p.view.check(key ^ 1, 0, 8, Access::REMOTE_WRITE), None);
        assert_eq!(p.view.check(key, 0, 0, Access::REMOTE_WRITE), None, "empty");
        p.reg().close(&h).unwrap();
        assert_eq!(
            p.view.check(key, 0, 8, Access::REMOTE_WRITE),
            None,
            "closed"
        );
        // The slot reused by another region: the old key still misses.
        let h2 = p
            .reg()
            .register(&Request::new(&[(base, 4096)], rw()))
            .unwrap();
        let key2 = h2.key();
        assert_ne!(key, key2);
        assert_eq!(p.view.check(key, 0, 8, Access::REMOTE_WRITE), None);
        assert_eq!(
            p.view.check(key2, 0, 8, Access::REMOTE_READ),
            Some((base, 8))
        );
    }

    #[test]
    fn rights_and_state_are_the_targets() {
        let p = Pair::new();
        let buf = vec![0u8; 4096];
        let base = buf.as_ptr() as u64;
        let ro = p
            .reg()
            .register(&Request::new(&[(base, 4096)], Access::REMOTE_READ))
            .unwrap();
        let k = ro.key();
        assert_eq!(
            p.view.check(k, 0, 64, Access::REMOTE_READ),
            Some((base, 64))
        );
        assert_eq!(p.view.check(k, 0, 64, Access::REMOTE_WRITE), None);
        // Single-use regions, auth keys and multi-iov regions go to the
        // target, which keeps their state.
        let whole = [(base, 4096)];
        let mut once = Request::new(&whole, rw());
        once.flags |= RegFlags::SINGLE_USE;
        let h = p.reg().register(&once).unwrap();
        let k = h.key();
        assert_eq!(p.view.check(k, 0, 64, Access::REMOTE_WRITE), None);
        let mut auth = Request::new(&whole, rw());
        auth.auth = Some(7);
        let h = p.reg().register(&auth).unwrap();
        let k = h.key();
        assert_eq!(p.view.check(k, 0, 64, Access::REMOTE_WRITE), None);
        let halves = [(base, 1024), (base + 2048, 1024)];
        let two = Request::new(&halves, rw());
        let h = p.reg().register(&two).unwrap();
        let k = h.key();
        assert!(p.reg().verify(k, 0, 64, Access::REMOTE_WRITE, None).is_ok());
        assert_eq!(p.view.check(k, 0, 64, Access::REMOTE_WRITE), None);
    }

    #[test]
    fn slots_past_the_shared_ones_are_the_targets() {
        let p = Pair::new();
        let buf = [0u8; 64];
        let base = buf.as_ptr() as u64;
        let mut keys = Vec::new();
        for _ in 0..300 {
            let h = p
                .reg()
                .register(&Request::new(&[(base, 64)], rw()))
                .unwrap();
            keys.push(h.key());
        }
        let seen = keys
            .iter()
            .filter(|&&k| p.view.check(k, 0, 8, Access::REMOTE_WRITE).is_some())
            .count();
        assert_eq!(
            seen, 256,
            "the first 256 slots are shared, the rest private"
        );
        for &k in &keys {
            assert!(p.reg().verify(k, 0, 8, Access::REMOTE_WRITE, None).is_ok());
        }
    }
}
