//! Provider keys (`FI_MR_PROV_KEY`): a keyed permutation of (slot index,
//! generation).
//!
//! A key is `feistel(gen_low << slot_bits | slot)` over `8 * key_size` bits:
//! a 4-round Feistel network whose round keys come from the registry's
//! random secret. Because it is a permutation, keys of distinct (slot,
//! generation) pairs are distinct; decoding a key gives its slot in O(1)
//! with no index; the generation in the key makes a stale key miss a reused
//! slot; and without the secret, a key says nothing useful about the next
//! one. (It is an obfuscating permutation, not a cryptographic one: a key is
//! a capability only as far as 64 bits of it cannot be guessed.)
//!
//! Bits per key size (`G` generation bits, `S` slot bits, `S + G = 8 *
//! key_size`, `G = max(bits / 4, bits - 24)`):
//!
//! | key_size | S  | G  | live regions | a stale key can match again after |
//! |----------|----|----|--------------|-----------------------------------|
//! | 8        | 24 | 40 | 16,777,216   | 2^40 reuses of its slot           |
//! | 7        | 24 | 32 | 16,777,216   | 2^32                              |
//! | 6        | 24 | 24 | 16,777,216   | 2^24                              |
//! | 5        | 24 | 16 | 16,777,216   | 2^16                              |
//! | 4        | 24 | 8  | 16,777,216   | 256                               |
//! | 3        | 18 | 6  | 262,144      | 64                                |
//! | 2        | 12 | 4  | 4,096        | 16                                |
//! | 1        | 6  | 2  | 64           | 4                                 |
//!
//! For key_size 8 the one (slot, generation) pair whose key would be
//! `FI_KEY_NOTAVAIL` (`u64::MAX`) is skipped: the slot moves on to the next
//! generation.

/// Most slot-index bits any registry uses (16,777,216 live regions).
pub const SLOT_BITS_MAX: u32 = 24;
const ROUNDS: usize = 4;
/// Slot bits of 8-byte keys: the generation takes the other 40 (more than a
/// quarter of the bits, so the table's rule gives the slot all it can).
const SLOT_BITS_64: u32 = SLOT_BITS_MAX;
const _: () = assert!(64 - SLOT_BITS_64 >= 64 / 4);

/// The splitmix64 step: a good stream of round keys from one secret.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Clone, Debug)]
pub(crate) struct KeyCodec {
    bits: u32,
    slot_bits: u32,
    gen_bits: u32,
    half: u32,
    rk: [u64; ROUNDS],
    rm: [u64; ROUNDS],
}

impl KeyCodec {
    /// A codec for keys of `key_size` bytes (1..=8).
    pub(crate) fn new(key_size: usize, secret: u64) -> KeyCodec {
        let bits = (key_size.clamp(1, 8) * 8) as u32;
        let gen_bits = (bits / 4).max(bits.saturating_sub(SLOT_BITS_MAX));
        let mut st = secret;
        let mut rk = [0; ROUNDS];
        let mut rm = [0; ROUNDS];
        for i in 0..ROUNDS {
            rk[i] = splitmix(&mut st);
            rm[i] = splitmix(&mut st) | 1;
        }
        KeyCodec {
            bits,
            slot_bits: bits - gen_bits,
            gen_bits,
            half: bits / 2,
            rk,
            rm,
        }
    }

    /// Bytes of the keys.
    pub(crate) fn key_size(&self) -> usize {
        (self.bits / 8) as usize
    }

    pub(crate) fn slot_bits(&self) -> u32 {
        self.slot_bits
    }

    pub(crate) fn gen_bits(&self) -> u32 {
        self.gen_bits
    }

    /// Largest value a key of this size can take.
    pub(crate) fn max_key(&self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1 << self.bits) - 1
        }
    }

    fn gen_mask(&self) -> u64 {
        (1u64 << self.gen_bits) - 1
    }

    #[inline]
    fn round(&self, i: usize, x: u64) -> u64 {
        (x ^ self.rk[i]).wrapping_mul(self.rm[i]) >> (64 - self.half)
    }

    /// [`KeyCodec::round`] with the 64-bit key size's constant shift.
    #[inline(always)]
    fn round64(&self, i: usize, x: u64) -> u64 {
        (x ^ self.rk[i]).wrapping_mul(self.rm[i]) >> 32
    }

    /// The key of `slot` at generation `gen` (only its low `gen_bits` count).
    #[inline]
    pub(crate) fn encode(&self, slot: u32, gen: u64) -> u64 {
        debug_assert!(u64::from(slot) >> self.slot_bits == 0);
        if self.bits == 64 {
            // The common size, with its shifts and masks as constants.
            let p = (gen << SLOT_BITS_64) | u64::from(slot);
            let (mut l, mut r) = (p >> 32, p & 0xffff_ffff);
            for i in 0..ROUNDS {
                (l, r) = (r, l ^ self.round64(i, r));
            }
            return (l << 32) | r;
        }
        self.encode_any(slot, gen)
    }

    /// [`KeyCodec::encode`] for any key size.
    #[inline(never)]
    fn encode_any(&self, slot: u32, gen: u64) -> u64 {
        let p = ((gen & self.gen_mask()) << self.slot_bits) | u64::from(slot);
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (p >> self.half, p & mask);
        for i in 0..ROUNDS {
            (l, r) = (r, l ^ self.round(i, r));
        }
        (l << self.half) | r
    }

    /// The (slot, generation low bits) a key stands for; `None` for a value
    /// outside the key size.
    #[inline]
    pub(crate) fn decode(&self, key: u64) -> Option<(u32, u64)> {
        if self.bits == 64 {
            let (mut l, mut r) = (key >> 32, key & 0xffff_ffff);
            for i in (0..ROUNDS).rev() {
                (l, r) = (r ^ self.round64(i, l), l);
            }
            let p = (l << 32) | r;
            return Some(((p & ((1 << SLOT_BITS_64) - 1)) as u32, p >> SLOT_BITS_64));
        }
        self.decode_any(key)
    }

    /// [`KeyCodec::decode`] for any key size.
    fn decode_any(&self, key: u64) -> Option<(u32, u64)> {
        if self.bits < 64 && key >> self.bits != 0 {
            return None;
        }
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (key >> self.half, key & mask);
        for i in (0..ROUNDS).rev() {
            (l, r) = (r ^ self.round(i, l), l);
        }
        let p = (l << self.half) | r;
        Some((
            (p & ((1 << self.slot_bits) - 1)) as u32,
            p >> self.slot_bits,
        ))
    }

    /// Whether the key's generation bits match full generation `gen`.
    #[inline]
    pub(crate) fn same_gen(&self, key_gen: u64, gen: u64) -> bool {
        key_gen == gen & self.gen_mask()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn layout_per_key_size() {
        let want = [
            (1, 6, 2),
            (2, 12, 4),
            (3, 18, 6),
            (4, 24, 8),
            (5, 24, 16),
            (6, 24, 24),
            (7, 24, 32),
            (8, 24, 40),
        ];
        for (size, s, g) in want {
            let c = KeyCodec::new(size, 7);
            assert_eq!((c.slot_bits(), c.gen_bits()), (s, g), "key_size {size}");
        }
    }

    #[test]
    fn round_trip_every_key_of_one_byte() {
        let c = KeyCodec::new(1, 0xfeed);
        let mut seen = HashSet::new();
        for slot in 0..64u32 {
            for gen in 0..4u64 {
                let k = c.encode(slot, gen);
                assert!(k <= 0xff);
                assert!(seen.insert(k));
                assert_eq!(c.decode(k), Some((slot, gen)));
            }
        }
        assert_eq!(seen.len(), 256);
        assert_eq!(c.decode(0x100), None);
    }

    #[test]
    fn the_eight_byte_fast_path_is_the_general_permutation() {
        let c = KeyCodec::new(8, 0x0dd_ba11);
        let mut st = 3u64;
        for _ in 0..10_000 {
            let slot = (splitmix(&mut st) & ((1 << SLOT_BITS_MAX) - 1)) as u32;
            let gen = splitmix(&mut st);
            let k = c.encode(slot, gen);
            assert_eq!(k, c.encode_any(slot, gen));
            let want = Some((slot, gen & c.gen_mask()));
            assert_eq!(c.decode(k), want);
            assert_eq!(c.decode_any(k), want);
            let other = splitmix(&mut st);
            assert_eq!(c.decode(other), c.decode_any(other));
        }
    }

    #[test]
    fn secret_changes_keys() {
        let a = KeyCodec::new(8, 1);
        let b = KeyCodec::new(8, 2);
        let same = (0..1000)
            .filter(|&i| a.encode(i, 0) == b.encode(i, 0))
            .count();
        assert_eq!(same, 0);
    }

    #[test]
    fn consecutive_keys_look_unrelated() {
        let c = KeyCodec::new(8, 0x1234_5678);
        let keys: Vec<u64> = (0..4096).map(|i| c.encode(i, 1)).collect();
        // Differences between neighbours are spread over the whole range:
        // on average half the bits flip.
        let flips: u32 = keys.windows(2).map(|w| (w[0] ^ w[1]).count_ones()).sum();
        let mean = flips as f64 / (keys.len() - 1) as f64;
        assert!((24.0..40.0).contains(&mean), "mean bit flips {mean}");
        // Generation changes alone also move the key everywhere.
        let g: u32 = (0..1000)
            .map(|i| (c.encode(5, i) ^ c.encode(5, i + 1)).count_ones())
            .sum();
        assert!((24_000..40_000).contains(&g), "{g}");
    }

    proptest::proptest! {
        #[test]
        fn decode_inverts_encode(size in 1usize..=8, secret in proptest::num::u64::ANY,
                                 slot in proptest::num::u32::ANY, gen in proptest::num::u64::ANY) {
            let c = KeyCodec::new(size, secret);
            let slot = slot & ((1 << c.slot_bits()) - 1);
            let k = c.encode(slot, gen);
            proptest::prop_assert!(k <= c.max_key());
            let (s, g) = c.decode(k).unwrap();
            proptest::prop_assert_eq!(s, slot);
            proptest::prop_assert!(c.same_gen(g, gen));
        }

        #[test]
        fn encode_inverts_decode(size in 1usize..=8, secret in proptest::num::u64::ANY,
                                 key in proptest::num::u64::ANY) {
            let c = KeyCodec::new(size, secret);
            let key = key & c.max_key();
            let (s, g) = c.decode(key).unwrap();
            proptest::prop_assert_eq!(c.encode(s, g), key);
        }
    }
}
