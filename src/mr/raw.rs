//! Raw keys (`fi_mr_raw_attr`, `fi_mr_map_raw`, `fi_mr_unmap_key`).
//!
//! # Format (version 1), 40 bytes, little-endian
//!
//! | offset | size | field                                                    |
//! |--------|------|----------------------------------------------------------|
//! | 0      | 1    | format version, 1                                        |
//! | 1      | 1    | key size of the issuing registry, bytes (1..=8)          |
//! | 2      | 1    | flags: bit 0 VIRT_ADDR, bit 1 SINGLE_USE, bit 2 RMA_EVENT |
//! | 3      | 1    | iface (`fi_hmem_iface`)                                  |
//! | 4      | 4    | check: low 32 bits of FNV-1a-64 over bytes 0..4 and 8..40 |
//! | 8      | 8    | the 64-bit key (carries slot and generation, `key.rs`)    |
//! | 16     | 8    | base address (what `fi_mr_raw_attr` returns)              |
//! | 24     | 8    | length in bytes                                          |
//! | 32     | 8    | access bits (libfabric values)                           |
//!
//! It carries what a peer needs to aim an access before it sends one:
//! the key, how the target addresses the region (virtual addresses from
//! `base` or offsets from 0), its extent and its rights. The check catches
//! corruption and foreign bytes, not forgery: the key itself is the
//! capability, verified at the target like any key. The key's generation
//! travels inside the key, so a raw key of a closed region maps fine but
//! every access with it fails at the target.
//!
//! Mapping ([`Registry::map_raw`]) validates the format and returns the
//! embedded key; this engine's keys need no translation. Mapped keys are
//! counted per key until unmapped, and a domain must not close while
//! [`Registry::mapped_count`] is nonzero (`-FI_EBUSY`).

use super::region::{Access, Handle, RegFlags};
use super::registry::Registry;
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;

/// Bytes of a raw key (what `mr_key_size` reports under FI_MR_RAW).
pub const RAW_KEY_SIZE: usize = 40;
pub const RAW_KEY_VERSION: u8 = 1;

/// A region's raw key and base address, from [`Registry::raw_attr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawKey {
    pub base_addr: u64,
    bytes: [u8; RAW_KEY_SIZE],
}

/// A decoded raw key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFields {
    pub key_size: u8,
    pub flags: RegFlags,
    pub iface: u8,
    pub key: u64,
    pub base_addr: u64,
    pub len: u64,
    pub access: Access,
}

fn check(b: &[u8; RAW_KEY_SIZE]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b[..4].iter().chain(&b[8..]) {
        h = (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as u32
}

fn word(b: &[u8; RAW_KEY_SIZE], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

const RAW_VIRT: u8 = 1 << 0;
const RAW_SINGLE_USE: u8 = 1 << 1;
const RAW_RMA_EVENT: u8 = 1 << 2;

impl RawKey {
    pub fn encode(f: &RawFields) -> RawKey {
        let mut b = [0u8; RAW_KEY_SIZE];
        b[0] = RAW_KEY_VERSION;
        b[1] = f.key_size;
        b[2] = [
            (RegFlags::VIRT_ADDR, RAW_VIRT),
            (RegFlags::SINGLE_USE, RAW_SINGLE_USE),
            (RegFlags::RMA_EVENT, RAW_RMA_EVENT),
        ]
        .iter()
        .filter(|(rf, _)| f.flags.contains(*rf))
        .fold(0, |a, (_, bit)| a | bit);
        b[3] = f.iface;
        b[8..16].copy_from_slice(&f.key.to_le_bytes());
        b[16..24].copy_from_slice(&f.base_addr.to_le_bytes());
        b[24..32].copy_from_slice(&f.len.to_le_bytes());
        b[32..40].copy_from_slice(&f.access.bits().to_le_bytes());
        let c = check(&b);
        b[4..8].copy_from_slice(&c.to_le_bytes());
        RawKey {
            base_addr: f.base_addr,
            bytes: b,
        }
    }

    /// Parses raw key bytes. `INVAL` for a short buffer, another version, a
    /// bad check, or fields out of range.
    pub fn decode(bytes: &[u8]) -> Result<RawFields> {
        let b: &[u8; RAW_KEY_SIZE] = bytes
            .get(..RAW_KEY_SIZE)
            .and_then(|s| s.try_into().ok())
            .ok_or(Error::INVAL)?;
        let c = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if b[0] != RAW_KEY_VERSION || c != check(b) || !(1..=8).contains(&b[1]) {
            return Err(Error::INVAL);
        }
        let key = word(b, 8);
        if b[1] < 8 && key >> (8 * b[1]) != 0 {
            return Err(Error::INVAL);
        }
        let access = Access::from_bits(word(b, 32)).ok_or(Error::INVAL)?;
        if b[2] & !(RAW_VIRT | RAW_SINGLE_USE | RAW_RMA_EVENT) != 0 {
            return Err(Error::INVAL);
        }
        let mut flags = RegFlags::empty();
        flags.set(RegFlags::VIRT_ADDR, b[2] & RAW_VIRT != 0);
        flags.set(RegFlags::SINGLE_USE, b[2] & RAW_SINGLE_USE != 0);
        flags.set(RegFlags::RMA_EVENT, b[2] & RAW_RMA_EVENT != 0);
        Ok(RawFields {
            key_size: b[1],
            flags,
            iface: b[3],
            key,
            base_addr: word(b, 16),
            len: word(b, 24),
            access,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Copies the key into `buf` (`fi_mr_raw_attr`): the size written, or
    /// `TOOSMALL` (nothing written) when `buf` is shorter than
    /// [`RAW_KEY_SIZE`].
    pub fn copy_to(&self, buf: &mut [u8]) -> Result<usize> {
        let dst = buf.get_mut(..RAW_KEY_SIZE).ok_or(Error::TOOSMALL)?;
        dst.copy_from_slice(&self.bytes);
        Ok(RAW_KEY_SIZE)
    }
}

impl Registry {
    /// The raw key of a live region; `INVAL` if it is gone.
    pub fn raw_attr(&self, h: &Handle) -> Result<RawKey> {
        let r = self.region(h)?;
        Ok(RawKey::encode(&RawFields {
            key_size: self.key_size() as u8,
            flags: r.flags,
            iface: r.iface,
            key: r.key,
            base_addr: r.base_addr,
            len: r.len,
            access: r.access,
        }))
    }

    /// Bytes of a key of this registry.
    pub fn key_size(&self) -> usize {
        (64 - self.max_key().leading_zeros() as usize) / 8
    }

    /// Turns a peer's raw key into a usable key (`fi_mr_map_raw`) and
    /// counts it as mapped. `base_addr` must be the one `fi_mr_raw_attr`
    /// returned with the key. `INVAL` for a malformed key or a mismatched
    /// base address.
    pub fn map_raw(&self, bytes: &[u8], base_addr: u64) -> Result<u64> {
        let f = RawKey::decode(bytes)?;
        if f.base_addr != base_addr {
            return Err(Error::INVAL);
        }
        let mut m = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(f.key).or_insert(0) += 1;
        self.mapped_total.fetch_add(1, Ordering::Relaxed);
        Ok(f.key)
    }

    /// Releases one mapping of `key` (`fi_mr_unmap_key`); `INVAL` if the key
    /// is not mapped.
    pub fn unmap_key(&self, key: u64) -> Result<()> {
        let mut m = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.get_mut(&key).ok_or(Error::INVAL)?;
        *n -= 1;
        if *n == 0 {
            m.remove(&key);
        }
        self.mapped_total.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// Mappings not yet released.
    pub fn mapped_count(&self) -> usize {
        self.mapped_total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::{Config, Request};

    fn reg() -> Registry {
        Registry::with_config(Config {
            secret: Some(11),
            ..Config::default()
        })
        .unwrap()
    }

    #[test]
    fn round_trip() {
        let r = reg();
        let iov = [(0x1000, 0x2000)];
        let mut q = Request::new(&iov, Access::REMOTE_READ | Access::REMOTE_WRITE);
        q.flags = RegFlags::VIRT_ADDR | RegFlags::RMA_EVENT;
        q.iface = 2;
        let h = r.register(&q).unwrap();
        let raw = r.raw_attr(&h).unwrap();
        assert_eq!(raw.base_addr, 0x1000);
        assert_eq!(raw.as_bytes().len(), RAW_KEY_SIZE);
        let f = RawKey::decode(raw.as_bytes()).unwrap();
        assert_eq!(f.key, h.key());
        assert_eq!(f.len, 0x2000);
        assert_eq!(f.key_size, 8);
        assert_eq!(f.flags, RegFlags::VIRT_ADDR | RegFlags::RMA_EVENT);
        assert_eq!(f.iface, 2);
        assert_eq!(f.access, Access::REMOTE_READ | Access::REMOTE_WRITE);
        let k = r.map_raw(raw.as_bytes(), raw.base_addr).unwrap();
        assert_eq!(k, h.key());
        assert!(r.verify(k, 0x1800, 8, Access::REMOTE_READ, None).is_ok());
        assert_eq!(r.mapped_count(), 1);
        assert_eq!(r.stats().mapped_keys, 1);
        r.unmap_key(k).unwrap();
        assert_eq!(r.mapped_count(), 0);
    }

    #[test]
    fn offset_regions_report_base_zero() {
        let r = reg();
        let iov = [(0x1000, 0x10), (0x5000, 0x10)];
        let h = r
            .register(&Request::new(&iov, Access::REMOTE_READ))
            .unwrap();
        let raw = r.raw_attr(&h).unwrap();
        assert_eq!(raw.base_addr, 0);
        assert_eq!(RawKey::decode(raw.as_bytes()).unwrap().len, 0x20);
    }

    #[test]
    fn copy_to_short_buffer_is_toosmall() {
        let r = reg();
        let iov = [(0x1000, 1)];
        let h = r.register(&Request::new(&iov, Access::READ)).unwrap();
        let raw = r.raw_attr(&h).unwrap();
        let mut small = [0u8; RAW_KEY_SIZE - 1];
        assert_eq!(raw.copy_to(&mut small), Err(Error::TOOSMALL));
        assert_eq!(small, [0u8; RAW_KEY_SIZE - 1], "nothing written");
        let mut big = [0u8; 64];
        assert_eq!(raw.copy_to(&mut big), Ok(RAW_KEY_SIZE));
        assert_eq!(&big[..RAW_KEY_SIZE], raw.as_bytes());
    }

    #[test]
    fn malformed_raw_keys_are_inval() {
        let r = reg();
        let iov = [(0x1000, 1)];
        let h = r.register(&Request::new(&iov, Access::READ)).unwrap();
        let raw = r.raw_attr(&h).unwrap();
        let good = raw.as_bytes().to_vec();
        assert_eq!(r.map_raw(&good[..RAW_KEY_SIZE - 1], 0), Err(Error::INVAL));
        assert_eq!(r.map_raw(&good, 1), Err(Error::INVAL), "base mismatch");
        for at in [0usize, 1, 2, 4, 9, 20, 39] {
            let mut bad = good.clone();
            bad[at] ^= 0x40;
            assert_eq!(r.map_raw(&bad, 0), Err(Error::INVAL), "byte {at}");
        }
        assert_eq!(r.mapped_count(), 0);
        assert_eq!(r.unmap_key(h.key()), Err(Error::INVAL), "never mapped");
        // Fields out of range, with a correct check.
        let mut f = RawKey::decode(&good).unwrap();
        f.key_size = 2;
        f.key = 0x1_0000;
        assert_eq!(
            RawKey::decode(RawKey::encode(&f).as_bytes()),
            Err(Error::INVAL)
        );
    }

    #[test]
    fn mapped_keys_count_per_mapping() {
        let r = reg();
        let iov = [(0x1000, 1)];
        let h = r.register(&Request::new(&iov, Access::READ)).unwrap();
        let raw = r.raw_attr(&h).unwrap();
        r.map_raw(raw.as_bytes(), 0).unwrap();
        r.map_raw(raw.as_bytes(), 0).unwrap();
        assert_eq!(r.mapped_count(), 2);
        r.unmap_key(h.key()).unwrap();
        r.unmap_key(h.key()).unwrap();
        assert_eq!(r.unmap_key(h.key()), Err(Error::INVAL));
        assert_eq!(r.mapped_count(), 0);
    }

    #[test]
    fn raw_attr_of_closed_region_is_inval_and_old_raw_key_fails_verify() {
        let r = reg();
        let iov = [(0x1000, 16)];
        let h = r
            .register(&Request::new(&iov, Access::REMOTE_READ))
            .unwrap();
        let raw = r.raw_attr(&h).unwrap();
        r.close(&h).unwrap();
        assert_eq!(r.raw_attr(&h), Err(Error::INVAL));
        let k = r.map_raw(raw.as_bytes(), 0).unwrap();
        assert_eq!(
            r.verify(k, 0, 1, Access::REMOTE_READ, None).unwrap_err(),
            Error::INVAL
        );
        r.unmap_key(k).unwrap();
    }

    #[test]
    fn small_key_sizes_travel() {
        let r = Registry::with_config(Config {
            key_size: 2,
            secret: Some(5),
            ..Config::default()
        })
        .unwrap();
        assert_eq!(r.key_size(), 2);
        let iov = [(0x1000, 1)];
        let h = r.register(&Request::new(&iov, Access::READ)).unwrap();
        let f = RawKey::decode(r.raw_attr(&h).unwrap().as_bytes()).unwrap();
        assert_eq!((f.key_size, f.key), (2, h.key()));
    }
}
