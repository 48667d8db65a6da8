//! The transport's two tables: the operations waiting for their responses
//! ([`PendTable`], by generation-checked id) and the peers an endpoint has
//! met ([`PeerMap`], by address, with its hash and a one-entry cache).

use super::{Address, Peer, Pending};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Default)]
pub(super) struct PendTable {
    slots: Vec<(u32, Option<Pending>)>,
    free: Vec<u32>,
    pub(super) live: usize,
}

impl PendTable {
    pub(super) fn insert(&mut self, p: Pending) -> u64 {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[i as usize];
        s.0 = s.0.wrapping_add(1);
        s.1 = Some(p);
        self.live += 1;
        (u64::from(s.0) << 32) | u64::from(i)
    }

    pub(super) fn take(&mut self, id: u64) -> Option<Pending> {
        let (i, g) = ((id & 0xffff_ffff) as usize, (id >> 32) as u32);
        let s = self.slots.get_mut(i)?;
        if s.0 != g {
            return None;
        }
        let p = s.1.take()?;
        self.free.push(i as u32);
        self.live -= 1;
        Some(p)
    }

    pub(super) fn get(&self, id: u64) -> Option<&Pending> {
        let (i, g) = ((id & 0xffff_ffff) as usize, (id >> 32) as u32);
        let s = self.slots.get(i)?;
        if s.0 != g {
            return None;
        }
        s.1.as_ref()
    }

    pub(super) fn ids_for(&self, peer: &Address) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, (_, p))| p.as_ref().is_some_and(|p| p.peer == *peer))
            .map(|(i, (g, _))| (u64::from(*g) << 32) | i as u64)
            .collect()
    }
}

/// The hash of the peer table, looked up at least twice per operation: a
/// multiply-rotate of the address's words instead of SipHash. Its keys are
/// endpoint addresses this endpoint has mapped, not chosen by a peer.
#[derive(Default)]
pub(in crate::prov::oxshm) struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

pub(in crate::prov::oxshm) type PeerHash = std::hash::BuildHasherDefault<AddrHasher>;

/// The peers an endpoint has met, by address, and the one it sent to last
/// ([`PeerMap::get_cached`]): a stream of small sends to one peer compares
/// an address instead of hashing it and probing the table.
#[derive(Default)]
pub(in crate::prov::oxshm) struct PeerMap {
    map: HashMap<Address, Arc<Peer>, PeerHash>,
    /// The peer last found by `get_cached`, while `map` holds it (every
    /// removal clears it).
    last: Option<(Address, *const Peer)>,
    /// The send destination (`fi_addr_t`) that `last` was found for, and
    /// the AV's version when it was resolved ([`PeerMap::learn_dest`]);
    /// version 0, which an AV never has, for none. Cleared whenever
    /// `last` changes.
    last_dest: (u64, u64),
}

// SAFETY: `last` points into an Arc that `map` holds; it is read and
// written only by the holder of the peers lock, as `map` is.
unsafe impl Send for PeerMap {}

impl PeerMap {
    pub(super) fn get(&self, a: &Address) -> Option<&Arc<Peer>> {
        self.map.get(a)
    }

    pub(super) fn contains_key(&self, a: &Address) -> bool {
        self.map.contains_key(a)
    }

    /// As `get`, answered from the last peer found when it is `a`.
    #[inline]
    pub(super) fn get_cached(&mut self, a: &Address) -> Option<&Peer> {
        if let Some((l, p)) = self.last {
            if l == *a {
                // SAFETY: `map` still holds the Arc `p` points into (see
                // `last`), and the caller holds the lock.
                return Some(unsafe { &*p });
            }
        }
        let p = self.map.get(a)?;
        self.last = Some((*a, Arc::as_ptr(p)));
        self.last_dest = (0, 0);
        Some(p)
    }

    /// The address and peer of send destination `dest`, when it is the
    /// last one [`PeerMap::learn_dest`] resolved and the AV is still at
    /// the version it was resolved under: a stream of sends to one
    /// `fi_addr_t` skips the AV's lookup.
    #[inline(always)]
    pub(super) fn by_dest(&self, dest: u64, version: u64) -> Option<(Address, &Peer)> {
        match self.last {
            Some((a, p)) if self.last_dest == (dest, version) && version != 0 => {
                // SAFETY: as in `get_cached`.
                Some((a, unsafe { &*p }))
            }
            _ => None,
        }
    }

    /// [`PeerMap::get_cached`] for `a`, which send destination `dest`
    /// resolved to under the AV's `version`, remembered for
    /// [`PeerMap::by_dest`].
    pub(super) fn learn_dest(&mut self, dest: u64, version: u64, a: &Address) -> Option<&Peer> {
        let p: *const Peer = self.get_cached(a)?;
        self.last_dest = (dest, version);
        // SAFETY: `p` is `last`'s, as in `get_cached`.
        Some(unsafe { &*p })
    }

    pub(super) fn insert(&mut self, a: Address, p: Arc<Peer>) {
        if self.last.is_some_and(|(l, _)| l == a) {
            self.last = None;
            self.last_dest = (0, 0);
        }
        self.map.insert(a, p);
    }

    pub(super) fn remove(&mut self, a: &Address) {
        if self.last.is_some_and(|(l, _)| l == *a) {
            self.last = None;
            self.last_dest = (0, 0);
        }
        self.map.remove(a);
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&Address, &Arc<Peer>)> {
        self.map.iter()
    }
}
