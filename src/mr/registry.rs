//! MR keys of one domain: provider-chosen keys that cannot be predicted from
//! earlier ones, and application-requested keys checked for collisions.

use crate::error::{Error, Result};
use std::collections::HashSet;
use std::sync::Mutex;

/// The key value that means "no key" (`FI_KEY_NOTAVAIL`); never issued.
pub const KEY_NOTAVAIL: u64 = u64::MAX;

pub struct Registry {
    keys: Mutex<HashSet<u64>>,
    /// Secret mixed into provider keys.
    secret: u64,
    counter: Mutex<u64>,
    /// Largest key an application may request (`mr_key_size` bytes).
    max_key: u64,
}

/// A bijection on u64 (the splitmix64 finaliser): distinct inputs give
/// distinct keys, and consecutive inputs give unrelated ones.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Registry {
    pub fn new(key_size: usize, secret: u64) -> Registry {
        let max_key = if key_size >= 8 {
            u64::MAX - 1
        } else {
            (1u64 << (8 * key_size)) - 1
        };
        Registry {
            keys: Mutex::new(HashSet::new()),
            secret,
            counter: Mutex::new(0),
            max_key,
        }
    }

    /// Reserves an application-requested key: -FI_ENOKEY if it is in use,
    /// -FI_EKEYREJECTED if it is FI_KEY_NOTAVAIL or too large.
    pub fn insert_requested(&self, key: u64) -> Result<()> {
        if key == KEY_NOTAVAIL || key > self.max_key {
            return Err(Error::KEYREJECTED);
        }
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !keys.insert(key) {
            return Err(Error::NOKEY);
        }
        Ok(())
    }

    /// Issues a fresh provider key.
    pub fn insert_provider(&self) -> u64 {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let mut ctr = self.counter.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            *ctr = ctr.wrapping_add(1);
            let k = mix(*ctr ^ self.secret);
            if k != KEY_NOTAVAIL && keys.insert(k) {
                return k;
            }
        }
    }

    pub fn remove(&self, key: u64) {
        self.keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    }

    pub fn len(&self) -> usize {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_keys() {
        let r = Registry::new(8, 1);
        r.insert_requested(5).unwrap();
        assert_eq!(r.insert_requested(5), Err(Error::NOKEY));
        assert_eq!(r.insert_requested(KEY_NOTAVAIL), Err(Error::KEYREJECTED));
        r.remove(5);
        r.insert_requested(5).unwrap();
        let small = Registry::new(2, 1);
        assert_eq!(small.insert_requested(0x1_0000), Err(Error::KEYREJECTED));
        small.insert_requested(0xffff).unwrap();
    }

    #[test]
    fn provider_keys_are_unique_and_not_sequential() {
        let r = Registry::new(8, 0x1234);
        let a = r.insert_provider();
        let b = r.insert_provider();
        assert_ne!(a, b);
        assert!(b.wrapping_sub(a) > 1 << 20 || a.wrapping_sub(b) > 1 << 20);
        let keys: std::collections::HashSet<_> = (0..10_000).map(|_| r.insert_provider()).collect();
        assert_eq!(keys.len(), 10_000);
        assert_eq!(r.len(), 10_002);
    }

    proptest::proptest! {
        #[test]
        fn mix_is_injective_on_samples(a in proptest::num::u64::ANY, b in proptest::num::u64::ANY) {
            proptest::prop_assume!(a != b);
            proptest::prop_assert_ne!(mix(a), mix(b));
        }
    }
}
