//! C's `long double` on x86-64, for the FI_LONG_DOUBLE and
//! FI_LONG_DOUBLE_COMPLEX atomics: the x87 80-bit extended format (sign,
//! 15-bit exponent, 64-bit significand with an explicit integer bit) in the
//! first 10 of 16 bytes, the other 6 padding.
//!
//! Rust has no such type (its unstable `f128` is IEEE binary128, another
//! format), so the arithmetic and the comparisons run on the x87 unit,
//! exactly as a C program's `long double` code does: the same rounding
//! (the precision and rounding control in force, round-to-nearest-even by
//! default), the same NaNs and infinities, the same treatment of the
//! encodings that are not numbers. Results are therefore bit-identical to
//! what an application computes with `long double`.

use std::arch::asm;
use std::cmp::Ordering;

/// One `long double` as stored in memory: 16 bytes, the value in the first
/// 10. Arithmetic keeps the padding of its left operand; comparisons and
/// equality are C's (`0.0 == -0.0`, a NaN compares unordered with anything).
#[derive(Clone, Copy, Debug)]
pub struct LongDouble(pub [u8; 16]);

/// The value bytes of a `long double`.
const VALUE: usize = 10;

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble([0; 16]);
    /// 1.0: exponent 0x3fff (the bias), significand 1 << 63.
    pub const ONE: LongDouble =
        LongDouble([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f, 0, 0, 0, 0, 0, 0]);

    /// The value `n`, exactly (every i64 fits a 64-bit significand).
    pub fn from_i64(n: i64) -> LongDouble {
        if n == 0 {
            return LongDouble::ZERO;
        }
        let m = n.unsigned_abs();
        let lz = m.leading_zeros();
        let exp = (0x3fff + 63 - lz as u16) | if n < 0 { 0x8000 } else { 0 };
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(m << lz).to_le_bytes());
        b[8..VALUE].copy_from_slice(&exp.to_le_bytes());
        LongDouble(b)
    }
}

/// `Add`, `Sub` and `Mul` on the x87 unit: `self` loaded first (st(1)),
/// `other` second (st(0)), then the popping instruction leaves
/// `self <op> other` in st(0), stored over a copy of `self`.
macro_rules! x87_op {
    ($($trait:ident $method:ident $insn:literal),+) => {$(
        impl std::ops::$trait for LongDouble {
            type Output = LongDouble;
            fn $method(self, other: LongDouble) -> LongDouble {
                let mut out = self;
                let (a, b, o) = (self.0.as_ptr(), other.0.as_ptr(), out.0.as_mut_ptr());
                // SAFETY: each pointer addresses 16 readable (a, b) or
                // writable (o) bytes of which the instructions touch 10; the
                // x87 stack is empty on entry (every st register is declared
                // clobbered) and on exit (two loads, one popping operation,
                // one popping store). No stack memory is used.
                unsafe {
                    asm!(
                        "fld tbyte ptr [{a}]",
                        "fld tbyte ptr [{b}]",
                        $insn,
                        "fstp tbyte ptr [{o}]",
                        a = in(reg) a, b = in(reg) b, o = in(reg) o,
                        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                        options(nostack),
                    );
                }
                out
            }
        }
    )+};
}
x87_op!(
    Add add "faddp st(1), st",
    Sub sub "fsubp st(1), st",
    Mul mul "fmulp st(1), st"
);

impl PartialOrd for LongDouble {
    /// As C's relational operators: None when either is a NaN (or an
    /// encoding the x87 unit does not take as a number).
    fn partial_cmp(&self, other: &LongDouble) -> Option<Ordering> {
        let (a, b) = (self.0.as_ptr(), other.0.as_ptr());
        let (unordered, below, equal): (u8, u8, u8);
        // SAFETY: a and b address 16 readable bytes each, of which the loads
        // read 10; the x87 stack is empty on entry (every st register is
        // declared clobbered) and on exit (two loads, the popping compare,
        // one pop). No stack memory is used.
        unsafe {
            asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fucomip st, st(1)",
                "fstp st(0)",
                "setp {u}",
                "setb {l}",
                "sete {e}",
                a = in(reg) a, b = in(reg) b,
                u = out(reg_byte) unordered, l = out(reg_byte) below, e = out(reg_byte) equal,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack, readonly),
            );
        }
        match (unordered, below, equal) {
            (1, _, _) => None,
            (_, 1, _) => Some(Ordering::Less),
            (_, _, 1) => Some(Ordering::Equal),
            _ => Some(Ordering::Greater),
        }
    }
}

impl PartialEq for LongDouble {
    fn eq(&self, other: &LongDouble) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value bytes of sign * significand * 2^(exp - 63).
    fn ld(negative: bool, significand: u64, exp: i32) -> LongDouble {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&significand.to_le_bytes());
        let e = (0x3fff + exp) as u16 | if negative { 0x8000 } else { 0 };
        b[8..10].copy_from_slice(&e.to_le_bytes());
        LongDouble(b)
    }

    #[test]
    fn from_i64_is_exact() {
        assert_eq!(LongDouble::from_i64(1).0, LongDouble::ONE.0);
        assert_eq!(LongDouble::from_i64(0).0, LongDouble::ZERO.0);
        assert_eq!(
            LongDouble::from_i64(-3).0,
            ld(true, 0xc000_0000_0000_0000, 1).0
        );
        assert_eq!(LongDouble::from_i64(i64::MIN).0, ld(true, 1 << 63, 63).0);
        assert_eq!(
            LongDouble::from_i64(i64::MAX).0,
            ld(false, (u64::MAX >> 1) << 1, 62).0
        );
    }

    #[test]
    fn arithmetic_has_64_significant_bits() {
        let n = LongDouble::from_i64;
        assert_eq!(n(5) - n(3), n(2));
        assert_eq!(n(3) - n(5), n(-2));
        assert_eq!(n(6) * n(-7), n(-42));
        assert_eq!(n(40) + n(2), n(42));
        // 2^63 + 1 needs 64 bits: a double would round it away.
        let big = ld(false, 1 << 63, 63);
        let sum = big + LongDouble::ONE;
        assert_eq!(sum.0[..10], ld(false, (1 << 63) | 1, 63).0[..10]);
        // (2^32 + 1)^2 = 2^64 + 2^33 + 1 needs 65 bits: the last one is a
        // tie, rounded to even, which drops it.
        let a = ld(false, (1 << 63) | (1 << 31), 32);
        assert_eq!(
            (a * a).0[..10],
            ld(false, (1 << 63) | (1 << 32), 64).0[..10]
        );
    }

    #[test]
    fn padding_of_the_left_operand_is_kept() {
        let mut a = LongDouble::from_i64(2);
        a.0[10..].fill(0x5a);
        let mut b = LongDouble::from_i64(3);
        b.0[10..].fill(0xa5);
        let s = a + b;
        assert_eq!(s.0[..10], LongDouble::from_i64(5).0[..10]);
        assert!(s.0[10..].iter().all(|&x| x == 0x5a));
    }

    #[test]
    fn comparisons_are_c_ones() {
        let n = LongDouble::from_i64;
        assert_eq!(n(-2).partial_cmp(&n(3)), Some(Ordering::Less));
        assert_eq!(n(3).partial_cmp(&n(-2)), Some(Ordering::Greater));
        assert_eq!(n(7).partial_cmp(&n(7)), Some(Ordering::Equal));
        // -0 == +0.
        let neg_zero = ld(true, 0, -0x3fff);
        assert_eq!(neg_zero, LongDouble::ZERO);
        // A quiet NaN (exponent all ones, significand 0xc000...) is
        // unordered, even with itself; infinity is ordered.
        let nan = LongDouble([0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x7f, 0, 0, 0, 0, 0, 0]);
        let inf = LongDouble([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x7f, 0, 0, 0, 0, 0, 0]);
        assert_eq!(nan.partial_cmp(&nan), None);
        assert!(nan != nan && nan != LongDouble::ZERO);
        assert!(inf > n(i64::MAX));
        // inf - inf is a NaN.
        assert_eq!((inf - inf).partial_cmp(&LongDouble::ZERO), None);
        // Padding does not take part.
        let mut p = n(9);
        p.0[12] = 0xff;
        assert_eq!(p, n(9));
    }
}
