//! Executes libfabric atomic operations (fi_atomic(3)) on target memory.
//!
//! [`apply`] runs `count` elements of one operation on a byte slice of the
//! target (native endian, any alignment), optionally returning the original
//! values; [`valid`] answers `fi_atomicvalid` / `fi_fetch_atomicvalid` /
//! `fi_compare_atomicvalid`. Plain read-modify-write: the caller serializes
//! concurrent atomics on the same memory.
//!
//! Operations per [`Kind`]:
//!
//! | kind      | ops                                                       |
//! |-----------|-----------------------------------------------------------|
//! | `Base`    | MIN MAX SUM PROD LOR LAND BOR BAND LXOR BXOR ATOMIC_WRITE |
//! | `Fetch`   | the `Base` ops and ATOMIC_READ                            |
//! | `Compare` | CSWAP CSWAP_NE CSWAP_LE CSWAP_LT CSWAP_GE CSWAP_GT MSWAP  |
//!
//! Operations per datatype:
//!
//! | datatype                         | ops                                               |
//! |----------------------------------|---------------------------------------------------|
//! | INT8..UINT64, INT128, UINT128    | all                                               |
//! | FLOAT, DOUBLE, LONG_DOUBLE       | all but BOR BAND BXOR MSWAP                       |
//! | FLOAT_COMPLEX .. LONG_DOUBLE_COMPLEX | SUM PROD LOR LAND LXOR ATOMIC_READ/WRITE CSWAP CSWAP_NE |
//! | FLOAT16, BFLOAT16, FLOAT8_*      | none                                              |
//!
//! Integer SUM and PROD wrap. LOR, LAND and LXOR treat a nonzero value (for
//! complex: either part nonzero) as true and store 1 or 0. The compare ops
//! swap in the operand when `compare <op> target` holds (CSWAP_LE: when
//! `compare <= target`); MSWAP stores `(operand & compare) | (target & !compare)`.
//!
//! Elements are native-endian; INT128/UINT128 are 16 bytes (C's
//! `__int128`), compared signed or unsigned by type. LONG_DOUBLE is C's
//! `long double` on x86-64 (x87 80-bit extended in 16 bytes, computed on
//! the x87 unit: see [`super::x87`]) and LONG_DOUBLE_COMPLEX two of them;
//! elsewhere long double is another format (binary128 on aarch64, which
//! stable Rust cannot compute with) and both are refused. The half and
//! 8-bit float types and FI_DIFF are refused too; FI_VOID and FI_NOOP are
//! collective-only.

use crate::abi::domain::{fi_datatype, fi_op};
use crate::error::{Error, Result};
use std::ops::{BitAnd, BitOr, BitXor, Not, Sub};

#[cfg(target_arch = "x86_64")]
use super::x87::LongDouble;

/// Which atomic entry point an operation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `fi_atomic`: no result.
    Base,
    /// `fi_fetch_atomic`: the result gets the original target value.
    Fetch,
    /// `fi_compare_atomic`: compare values; the result gets the original.
    Compare,
}

/// How a datatype computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Int,
    Float,
    Complex,
}

/// Class and element size of a supported datatype.
fn class(dt: u32) -> Option<(Class, usize)> {
    use fi_datatype::*;
    Some(match fi_datatype::from_raw(dt)? {
        FI_INT8 | FI_UINT8 => (Class::Int, 1),
        FI_INT16 | FI_UINT16 => (Class::Int, 2),
        FI_INT32 | FI_UINT32 => (Class::Int, 4),
        FI_INT64 | FI_UINT64 => (Class::Int, 8),
        FI_INT128 | FI_UINT128 => (Class::Int, 16),
        FI_FLOAT => (Class::Float, 4),
        FI_DOUBLE => (Class::Float, 8),
        FI_FLOAT_COMPLEX => (Class::Complex, 8),
        FI_DOUBLE_COMPLEX => (Class::Complex, 16),
        #[cfg(target_arch = "x86_64")]
        FI_LONG_DOUBLE => (Class::Float, 16),
        #[cfg(target_arch = "x86_64")]
        FI_LONG_DOUBLE_COMPLEX => (Class::Complex, 32),
        #[cfg(not(target_arch = "x86_64"))]
        FI_LONG_DOUBLE | FI_LONG_DOUBLE_COMPLEX => return None,
        FI_FLOAT16 | FI_BFLOAT16 | FI_FLOAT8_E4M3 | FI_FLOAT8_E5M2 | FI_VOID => return None,
    })
}

/// Size in bytes of one element of `dt`, or None for an unsupported/unknown datatype.
pub fn elem_size(dt: u32) -> Option<usize> {
    class(dt).map(|(_, size)| size)
}

/// Whether (dt, op) is valid for `kind` (raw C enum values, any u32 accepted).
pub fn valid(kind: Kind, dt: u32, op: u32) -> bool {
    use fi_op::*;
    let (Some((class, _)), Some(op)) = (class(dt), fi_op::from_raw(op)) else {
        return false;
    };
    let base = matches!(
        op,
        FI_MIN
            | FI_MAX
            | FI_SUM
            | FI_PROD
            | FI_LOR
            | FI_LAND
            | FI_BOR
            | FI_BAND
            | FI_LXOR
            | FI_BXOR
            | FI_ATOMIC_WRITE
    );
    let in_kind = match kind {
        Kind::Base => base,
        Kind::Fetch => base || op == FI_ATOMIC_READ,
        Kind::Compare => matches!(
            op,
            FI_CSWAP
                | FI_CSWAP_NE
                | FI_CSWAP_LE
                | FI_CSWAP_LT
                | FI_CSWAP_GE
                | FI_CSWAP_GT
                | FI_MSWAP
        ),
    };
    in_kind
        && match class {
            Class::Int => true,
            Class::Float => !matches!(op, FI_BOR | FI_BAND | FI_BXOR | FI_MSWAP),
            Class::Complex => matches!(
                op,
                FI_SUM
                    | FI_PROD
                    | FI_LOR
                    | FI_LAND
                    | FI_LXOR
                    | FI_ATOMIC_READ
                    | FI_ATOMIC_WRITE
                    | FI_CSWAP
                    | FI_CSWAP_NE
            ),
        }
}

/// Executes `count` elements of the op on `target` (count*elem_size bytes, possibly unaligned),
/// with `operand` (count*size bytes; ignored for ATOMIC_READ, may be empty then),
/// `compare` (count*size bytes, Compare kind only, else empty), writing the original
/// target values into `result` when it is Some (count*size bytes). Returns
/// Err(crate::error::Error::INVAL) for a bad combination or wrong slice lengths (checked before anything is modified).
pub fn apply(
    kind: Kind,
    dt: u32,
    op: u32,
    target: &mut [u8],
    operand: &[u8],
    compare: &[u8],
    result: Option<&mut [u8]>,
) -> Result<()> {
    if !valid(kind, dt, op) {
        return Err(Error::INVAL);
    }
    let (Some(size), Some(op), Some(dt)) = (
        elem_size(dt),
        fi_op::from_raw(op),
        fi_datatype::from_raw(dt),
    ) else {
        return Err(Error::INVAL);
    };
    let len = target.len();
    let lengths_ok = len % size == 0
        && (operand.len() == len || (op == fi_op::FI_ATOMIC_READ && operand.is_empty()))
        && compare.len() == if kind == Kind::Compare { len } else { 0 }
        && result.as_ref().is_none_or(|r| r.len() == len);
    if !lengths_ok {
        return Err(Error::INVAL);
    }

    let bufs = Bufs {
        target,
        operand,
        compare,
        result,
    };
    use fi_datatype::*;
    match dt {
        FI_INT8 => bufs.run(op, int_step::<i8>),
        FI_UINT8 => bufs.run(op, int_step::<u8>),
        FI_INT16 => bufs.run(op, int_step::<i16>),
        FI_UINT16 => bufs.run(op, int_step::<u16>),
        FI_INT32 => bufs.run(op, int_step::<i32>),
        FI_UINT32 => bufs.run(op, int_step::<u32>),
        FI_INT64 => bufs.run(op, int_step::<i64>),
        FI_UINT64 => bufs.run(op, int_step::<u64>),
        FI_INT128 => bufs.run(op, int_step::<i128>),
        FI_UINT128 => bufs.run(op, int_step::<u128>),
        FI_FLOAT => bufs.run(op, ord_step::<f32>),
        FI_DOUBLE => bufs.run(op, ord_step::<f64>),
        FI_FLOAT_COMPLEX => bufs.run(op, num_step::<Complex<f32>>),
        FI_DOUBLE_COMPLEX => bufs.run(op, num_step::<Complex<f64>>),
        #[cfg(target_arch = "x86_64")]
        FI_LONG_DOUBLE => bufs.run(op, ord_step::<LongDouble>),
        #[cfg(target_arch = "x86_64")]
        FI_LONG_DOUBLE_COMPLEX => bufs.run(op, num_step::<Complex<LongDouble>>),
        // Refused by valid() above.
        _ => return Err(Error::INVAL),
    }
    Ok(())
}

/// The checked buffers of one [`apply`].
struct Bufs<'a> {
    target: &'a mut [u8],
    operand: &'a [u8],
    compare: &'a [u8],
    result: Option<&'a mut [u8]>,
}

impl Bufs<'_> {
    /// `target[i] = step(op, target[i], operand[i], compare[i])` for every
    /// element, an empty `operand` or `compare` reading as zero.
    fn run<T: Num>(self, op: fi_op, step: fn(fi_op, T, T, T) -> T) {
        let n = T::SIZE;
        let Bufs {
            target,
            operand,
            compare,
            mut result,
        } = self;
        let at = |s: &[u8], i: usize| s.get(i * n..(i + 1) * n).map_or(T::zero(), T::load);
        for (i, t) in target.chunks_exact_mut(n).enumerate() {
            let old = T::load(t);
            if let Some(r) = result.as_deref_mut() {
                old.store(&mut r[i * n..(i + 1) * n]);
            }
            step(op, old, at(operand, i), at(compare, i)).store(t);
        }
    }
}

/// An element type: native-endian bytes and ring arithmetic.
trait Num: Copy + PartialEq {
    const SIZE: usize;
    /// From exactly `SIZE` bytes.
    fn load(b: &[u8]) -> Self;
    /// Into exactly `SIZE` bytes.
    fn store(self, b: &mut [u8]);
    fn zero() -> Self;
    fn one() -> Self;
    /// Wrapping for integers.
    fn add(self, o: Self) -> Self;
    /// Wrapping for integers.
    fn mul(self, o: Self) -> Self;
}

macro_rules! impl_num {
    ($add:ident, $mul:ident, $zero:literal, $one:literal: $($t:ty),+) => {$(
        impl Num for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
            fn zero() -> Self {
                $zero
            }
            fn one() -> Self {
                $one
            }
            fn add(self, o: Self) -> Self {
                impl_num!(@op $add, self, o, +)
            }
            fn mul(self, o: Self) -> Self {
                impl_num!(@op $mul, self, o, *)
            }
        }
    )+};
    (@op plain, $a:ident, $b:ident, $sym:tt) => { $a $sym $b };
    (@op $method:ident, $a:ident, $b:ident, $sym:tt) => { $a.$method($b) };
}
impl_num!(wrapping_add, wrapping_mul, 0, 1: i8, u8, i16, u16, i32, u32, i64, u64, i128, u128);
impl_num!(plain, plain, 0.0, 1.0: f32, f64);

#[cfg(target_arch = "x86_64")]
impl Num for LongDouble {
    const SIZE: usize = 16;
    fn load(b: &[u8]) -> Self {
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        LongDouble(a)
    }
    fn store(self, b: &mut [u8]) {
        b.copy_from_slice(&self.0);
    }
    fn zero() -> Self {
        LongDouble::ZERO
    }
    fn one() -> Self {
        LongDouble::ONE
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
}

/// `re + im·i`, stored as two consecutive `F`s (C's `float complex`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Complex<F> {
    re: F,
    im: F,
}

impl<F: Num + Sub<Output = F>> Num for Complex<F> {
    const SIZE: usize = 2 * F::SIZE;
    fn load(b: &[u8]) -> Self {
        let (re, im) = b.split_at(F::SIZE);
        Complex {
            re: F::load(re),
            im: F::load(im),
        }
    }
    fn store(self, b: &mut [u8]) {
        let (re, im) = b.split_at_mut(F::SIZE);
        self.re.store(re);
        self.im.store(im);
    }
    fn zero() -> Self {
        Complex {
            re: F::zero(),
            im: F::zero(),
        }
    }
    fn one() -> Self {
        Complex {
            re: F::one(),
            im: F::zero(),
        }
    }
    fn add(self, o: Self) -> Self {
        Complex {
            re: self.re.add(o.re),
            im: self.im.add(o.im),
        }
    }
    fn mul(self, o: Self) -> Self {
        Complex {
            re: self.re.mul(o.re) - self.im.mul(o.im),
            im: self.re.mul(o.im).add(self.im.mul(o.re)),
        }
    }
}

/// The ops every datatype has: arithmetic, logical, read/write, (in)equality swaps.
fn num_step<T: Num>(op: fi_op, t: T, o: T, c: T) -> T {
    use fi_op::*;
    let truth = |b: bool| if b { T::one() } else { T::zero() };
    let nz = |v: T| v != T::zero();
    let swap_if = |b: bool| if b { o } else { t };
    match op {
        FI_SUM => t.add(o),
        FI_PROD => t.mul(o),
        FI_LOR => truth(nz(t) || nz(o)),
        FI_LAND => truth(nz(t) && nz(o)),
        FI_LXOR => truth(nz(t) != nz(o)),
        FI_ATOMIC_WRITE => o,
        FI_CSWAP => swap_if(c == t),
        FI_CSWAP_NE => swap_if(c != t),
        // FI_ATOMIC_READ; any other op was refused by valid().
        _ => t,
    }
}

/// Adds the ordered ops: MIN, MAX and the ordered swaps.
fn ord_step<T: Num + PartialOrd>(op: fi_op, t: T, o: T, c: T) -> T {
    use fi_op::*;
    let swap_if = |b: bool| if b { o } else { t };
    match op {
        FI_MIN => swap_if(o < t),
        FI_MAX => swap_if(o > t),
        FI_CSWAP_LE => swap_if(c <= t),
        FI_CSWAP_LT => swap_if(c < t),
        FI_CSWAP_GE => swap_if(c >= t),
        FI_CSWAP_GT => swap_if(c > t),
        _ => num_step(op, t, o, c),
    }
}

/// Adds the bitwise ops (integers).
fn int_step<T>(op: fi_op, t: T, o: T, c: T) -> T
where
    T: Num
        + PartialOrd
        + BitAnd<Output = T>
        + BitOr<Output = T>
        + BitXor<Output = T>
        + Not<Output = T>,
{
    use fi_op::*;
    match op {
        FI_BOR => t | o,
        FI_BAND => t & o,
        FI_BXOR => t ^ o,
        FI_MSWAP => (o & c) | (t & !c),
        _ => ord_step(op, t, o, c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fi_datatype::*;
    use fi_op::*;
    use std::collections::HashSet;
    use std::fmt::Debug;

    const KINDS: [Kind; 3] = [Kind::Base, Kind::Fetch, Kind::Compare];

    /// (kind, datatype, op) of one tested combination.
    type Key = (u8, u32, u32);

    /// Every raw value of the two enums, plus a few outside them.
    fn raw_values() -> impl Iterator<Item = u32> + Clone {
        (0..=21).chain([255, 256, 257, u32::MAX])
    }

    /// A small integer as an element value.
    trait Small {
        fn small(x: i8) -> Self;
    }
    macro_rules! impl_small {
        ($($t:ty),+) => {$(
            impl Small for $t {
                fn small(x: i8) -> Self {
                    x as $t
                }
            }
        )+};
    }
    impl_small!(i8, u8, i16, u16, i32, u32, i64, u64, i128, u128, f32, f64);
    #[cfg(target_arch = "x86_64")]
    impl Small for LongDouble {
        fn small(x: i8) -> Self {
            LongDouble::from_i64(x.into())
        }
    }

    fn bytes<T: Num>(v: T) -> Vec<u8> {
        let mut b = vec![0; T::SIZE];
        v.store(&mut b);
        b
    }

    /// Runs one element of (kind, dt, op) on `t` and checks the new target
    /// is `want` and, for Fetch and Compare, that the result is `t`.
    fn check<T: Num + Debug>(
        kind: Kind,
        dt: fi_datatype,
        op: fi_op,
        t: T,
        o: T,
        c: T,
        want: T,
    ) -> Key {
        let mut target = bytes(t);
        let operand = bytes(o);
        let compare = if kind == Kind::Compare {
            bytes(c)
        } else {
            vec![]
        };
        let mut result = vec![0xa5; T::SIZE];
        let res = (kind != Kind::Base).then_some(&mut result[..]);
        let what = format!("{kind:?} {dt:?} {op:?} t={t:?} o={o:?} c={c:?}");
        apply(
            kind,
            dt as u32,
            op as u32,
            &mut target,
            &operand,
            &compare,
            res,
        )
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(T::load(&target), want, "{what}: target");
        if kind != Kind::Base {
            assert_eq!(T::load(&result), t, "{what}: result");
        }
        (kind as u8, dt as u32, op as u32)
    }

    /// Cases for the integer and float types: t = 12, o = 10.
    macro_rules! ordered_cases {
        ($seen:ident, $t:ty, $dt:expr) => {{
            let v = <$t as Small>::small;
            for kind in [Kind::Base, Kind::Fetch] {
                for (op, t, o, want) in [
                    (FI_MIN, 12, 10, 10),
                    (FI_MIN, 10, 12, 10),
                    (FI_MAX, 12, 10, 12),
                    (FI_MAX, 10, 12, 12),
                    (FI_SUM, 12, 10, 22),
                    (FI_PROD, 12, 10, 120),
                    (FI_LOR, 12, 10, 1),
                    (FI_LOR, 0, 0, 0),
                    (FI_LAND, 12, 10, 1),
                    (FI_LAND, 12, 0, 0),
                    (FI_LXOR, 12, 10, 0),
                    (FI_LXOR, 0, 10, 1),
                    (FI_ATOMIC_WRITE, 12, 10, 10),
                ] {
                    $seen.insert(check(kind, $dt, op, v(t), v(o), v(0), v(want)));
                }
            }
            $seen.insert(check(
                Kind::Fetch,
                $dt,
                FI_ATOMIC_READ,
                v(12),
                v(10),
                v(0),
                v(12),
            ));
            // (op, compare, want) on t = 12, o = 10: once swapping, once not.
            for (op, c, want) in [
                (FI_CSWAP, 12, 10),
                (FI_CSWAP, 6, 12),
                (FI_CSWAP_NE, 6, 10),
                (FI_CSWAP_NE, 12, 12),
                (FI_CSWAP_LE, 12, 10),
                (FI_CSWAP_LE, 13, 12),
                (FI_CSWAP_LT, 11, 10),
                (FI_CSWAP_LT, 12, 12),
                (FI_CSWAP_GE, 12, 10),
                (FI_CSWAP_GE, 11, 12),
                (FI_CSWAP_GT, 13, 10),
                (FI_CSWAP_GT, 12, 12),
            ] {
                $seen.insert(check(Kind::Compare, $dt, op, v(12), v(10), v(c), v(want)));
            }
        }};
    }

    /// Bitwise cases for the integer types: t = 0b1100, o = 0b1010.
    macro_rules! int_cases {
        ($seen:ident, $t:ty, $dt:expr) => {{
            ordered_cases!($seen, $t, $dt);
            let v = <$t as Small>::small;
            for kind in [Kind::Base, Kind::Fetch] {
                for (op, want) in [(FI_BOR, 0b1110), (FI_BAND, 0b1000), (FI_BXOR, 0b0110)] {
                    $seen.insert(check(kind, $dt, op, v(0b1100), v(0b1010), v(0), v(want)));
                }
            }
            // (o & c) | (t & !c) = 0b0010 | 0b1000.
            $seen.insert(check(
                Kind::Compare,
                $dt,
                FI_MSWAP,
                v(0b1100),
                v(0b1010),
                v(0b0110),
                v(0b1010),
            ));
            // Sign bit and all bits: -1 is all ones.
            $seen.insert(check(
                Kind::Compare,
                $dt,
                FI_MSWAP,
                v(0),
                v(-1),
                v(-1),
                v(-1),
            ));
        }};
    }

    fn complex_cases<F>(seen: &mut HashSet<Key>, dt: fi_datatype)
    where
        F: Num + Sub<Output = F> + Debug + Small,
    {
        let z = |re: i8, im: i8| Complex {
            re: F::small(re),
            im: F::small(im),
        };
        for kind in [Kind::Base, Kind::Fetch] {
            for (op, t, o, want) in [
                (FI_SUM, z(1, 2), z(3, 4), z(4, 6)),
                // (1 + 2i)(3 + 4i) = 3 - 8 + (4 + 6)i
                (FI_PROD, z(1, 2), z(3, 4), z(-5, 10)),
                (FI_PROD, z(0, 1), z(0, 1), z(-1, 0)),
                (FI_LOR, z(0, 0), z(0, 5), z(1, 0)),
                (FI_LOR, z(0, 0), z(0, 0), z(0, 0)),
                (FI_LAND, z(1, 0), z(0, 5), z(1, 0)),
                (FI_LAND, z(0, 0), z(0, 5), z(0, 0)),
                (FI_LXOR, z(0, 2), z(3, 0), z(0, 0)),
                (FI_LXOR, z(0, 0), z(3, 0), z(1, 0)),
                (FI_ATOMIC_WRITE, z(1, 2), z(3, 4), z(3, 4)),
            ] {
                seen.insert(check(kind, dt, op, t, o, z(0, 0), want));
            }
        }
        seen.insert(check(
            Kind::Fetch,
            dt,
            FI_ATOMIC_READ,
            z(1, 2),
            z(3, 4),
            z(0, 0),
            z(1, 2),
        ));
        for (op, c, want) in [
            (FI_CSWAP, z(1, 2), z(3, 4)),
            (FI_CSWAP, z(1, 3), z(1, 2)),
            (FI_CSWAP_NE, z(2, 2), z(3, 4)),
            (FI_CSWAP_NE, z(1, 2), z(1, 2)),
        ] {
            seen.insert(check(Kind::Compare, dt, op, z(1, 2), z(3, 4), c, want));
        }
    }

    #[test]
    fn every_valid_combination_computes() {
        let mut seen = HashSet::new();
        int_cases!(seen, i8, FI_INT8);
        int_cases!(seen, u8, FI_UINT8);
        int_cases!(seen, i16, FI_INT16);
        int_cases!(seen, u16, FI_UINT16);
        int_cases!(seen, i32, FI_INT32);
        int_cases!(seen, u32, FI_UINT32);
        int_cases!(seen, i64, FI_INT64);
        int_cases!(seen, u64, FI_UINT64);
        int_cases!(seen, i128, FI_INT128);
        int_cases!(seen, u128, FI_UINT128);
        ordered_cases!(seen, f32, FI_FLOAT);
        ordered_cases!(seen, f64, FI_DOUBLE);
        complex_cases::<f32>(&mut seen, FI_FLOAT_COMPLEX);
        complex_cases::<f64>(&mut seen, FI_DOUBLE_COMPLEX);
        #[cfg(target_arch = "x86_64")]
        {
            ordered_cases!(seen, LongDouble, FI_LONG_DOUBLE);
            complex_cases::<LongDouble>(&mut seen, FI_LONG_DOUBLE_COMPLEX);
        }
        // Long double where it is x87 extended.
        let ld = usize::from(cfg!(target_arch = "x86_64"));

        let mut all = HashSet::new();
        for kind in KINDS {
            for dt in raw_values() {
                for op in raw_values() {
                    if valid(kind, dt, op) {
                        all.insert((kind as u8, dt, op));
                    }
                }
            }
        }
        // 10 integer types × (11 + 12 + 7), 2 or 3 floats × (8 + 9 + 6),
        // 2 or 3 complex × (6 + 7 + 2).
        assert_eq!(all.len(), 10 * 30 + (2 + ld) * 23 + (2 + ld) * 15);
        // Every case tested was valid, and every valid combination tested.
        assert_eq!(seen, all);
    }

    #[test]
    fn elem_sizes() {
        for (dt, size) in [
            (FI_INT8, 1),
            (FI_UINT8, 1),
            (FI_INT16, 2),
            (FI_UINT16, 2),
            (FI_INT32, 4),
            (FI_UINT32, 4),
            (FI_INT64, 8),
            (FI_UINT64, 8),
            (FI_INT128, 16),
            (FI_UINT128, 16),
            (FI_FLOAT, 4),
            (FI_DOUBLE, 8),
            (FI_FLOAT_COMPLEX, 8),
            (FI_DOUBLE_COMPLEX, 16),
        ] {
            assert_eq!(elem_size(dt as u32), Some(size), "{dt:?}");
        }
        // C's long double and its complex on x86-64; refused elsewhere.
        let x86 = cfg!(target_arch = "x86_64");
        assert_eq!(elem_size(FI_LONG_DOUBLE as u32), x86.then_some(16));
        assert_eq!(elem_size(FI_LONG_DOUBLE_COMPLEX as u32), x86.then_some(32));
        for dt in [
            FI_FLOAT16,
            FI_BFLOAT16,
            FI_FLOAT8_E4M3,
            FI_FLOAT8_E5M2,
            FI_VOID,
        ] {
            assert_eq!(elem_size(dt as u32), None, "{dt:?}");
        }
        assert_eq!(elem_size(20), None);
        assert_eq!(elem_size(u32::MAX), None);
    }

    #[test]
    fn invalid_combinations_refused_untouched() {
        let mut refused = 0;
        for kind in KINDS {
            for dt in raw_values() {
                for op in raw_values() {
                    if valid(kind, dt, op) {
                        continue;
                    }
                    refused += 1;
                    let n = 2 * elem_size(dt).unwrap_or(8);
                    let mut target: Vec<u8> = (1..=n as u8).collect();
                    let operand = vec![0x5a; n];
                    let compare = if kind == Kind::Compare {
                        vec![0x5a; n]
                    } else {
                        vec![]
                    };
                    let mut result = vec![0xa5; n];
                    let r = apply(
                        kind,
                        dt,
                        op,
                        &mut target,
                        &operand,
                        &compare,
                        Some(&mut result),
                    );
                    assert_eq!(r, Err(Error::INVAL), "{kind:?} {dt} {op}");
                    assert!(target.iter().copied().eq(1..=n as u8), "{kind:?} {dt} {op}");
                    assert!(result.iter().all(|&b| b == 0xa5), "{kind:?} {dt} {op}");
                }
            }
        }
        assert!(refused > 0);
        for (kind, dt, op) in [
            (Kind::Base, FI_FLOAT, FI_BOR),
            (Kind::Fetch, FI_DOUBLE, FI_BXOR),
            (Kind::Compare, FI_DOUBLE, FI_MSWAP),
            (Kind::Base, FI_FLOAT_COMPLEX, FI_MIN),
            (Kind::Compare, FI_DOUBLE_COMPLEX, FI_CSWAP_LT),
            (Kind::Base, FI_LONG_DOUBLE, FI_BOR),
            (Kind::Compare, FI_LONG_DOUBLE, FI_MSWAP),
            (Kind::Compare, FI_LONG_DOUBLE_COMPLEX, FI_CSWAP_LT),
            (Kind::Base, FI_LONG_DOUBLE_COMPLEX, FI_MAX),
            (Kind::Base, FI_INT32, FI_ATOMIC_READ),
            (Kind::Fetch, FI_INT32, FI_CSWAP),
            (Kind::Compare, FI_INT32, FI_SUM),
            (Kind::Fetch, FI_INT32, FI_DIFF),
            (Kind::Base, FI_VOID, FI_SUM),
            (Kind::Base, FI_INT32, FI_NOOP),
        ] {
            assert!(!valid(kind, dt as u32, op as u32), "{kind:?} {dt:?} {op:?}");
        }
    }

    #[test]
    fn wrong_lengths_refused_untouched() {
        let s = FI_INT64 as u32;
        let orig: Vec<u8> = (1..=16).collect();
        let eight = [7u8; 8];
        let sixteen = [7u8; 16];
        // (kind, op, target length, operand, compare, result length)
        type Case<'a> = (Kind, fi_op, usize, &'a [u8], &'a [u8], Option<usize>);
        let cases: [Case; 9] = [
            // Target not a multiple of the element size.
            (Kind::Base, FI_SUM, 15, &sixteen[..15], &[], None),
            // Short or missing operand.
            (Kind::Base, FI_SUM, 16, &eight, &[], None),
            (Kind::Fetch, FI_SUM, 16, &[], &[], Some(16)),
            // Short operand for ATOMIC_READ (only empty or full allowed).
            (Kind::Fetch, FI_ATOMIC_READ, 16, &eight, &[], Some(16)),
            // Compare given outside Compare, or short/missing in Compare.
            (Kind::Fetch, FI_SUM, 16, &sixteen, &sixteen, Some(16)),
            (Kind::Compare, FI_CSWAP, 16, &sixteen, &eight, Some(16)),
            (Kind::Compare, FI_CSWAP, 16, &sixteen, &[], Some(16)),
            // Result of the wrong size.
            (Kind::Fetch, FI_SUM, 16, &sixteen, &[], Some(8)),
            (Kind::Compare, FI_CSWAP, 16, &sixteen, &sixteen, Some(24)),
        ];
        for (kind, op, tlen, operand, compare, rlen) in cases {
            let mut target = orig[..tlen].to_vec();
            let mut result = vec![0xa5; rlen.unwrap_or(0)];
            let res = rlen.map(|_| &mut result[..]);
            let r = apply(kind, s, op as u32, &mut target, operand, compare, res);
            assert_eq!(r, Err(Error::INVAL), "{kind:?} {op:?} {tlen}");
            assert_eq!(target, orig[..tlen], "{kind:?} {op:?} {tlen}");
            assert!(result.iter().all(|&b| b == 0xa5));
        }
    }

    #[test]
    fn empty_and_optional_buffers() {
        // count 0 is fine.
        let sum = FI_SUM as u32;
        apply(Kind::Base, FI_INT32 as u32, sum, &mut [], &[], &[], None).unwrap();
        apply(
            Kind::Fetch,
            FI_INT32 as u32,
            sum,
            &mut [],
            &[],
            &[],
            Some(&mut []),
        )
        .unwrap();
        // ATOMIC_READ with no operand, and with a (ignored) full one.
        let mut t = 42u32.to_ne_bytes();
        let mut r = [0u8; 4];
        let read = FI_ATOMIC_READ as u32;
        apply(
            Kind::Fetch,
            FI_UINT32 as u32,
            read,
            &mut t,
            &[],
            &[],
            Some(&mut r),
        )
        .unwrap();
        assert_eq!((u32::from_ne_bytes(t), u32::from_ne_bytes(r)), (42, 42));
        let o = 7u32.to_ne_bytes();
        apply(
            Kind::Fetch,
            FI_UINT32 as u32,
            read,
            &mut t,
            &o,
            &[],
            Some(&mut r),
        )
        .unwrap();
        assert_eq!((u32::from_ne_bytes(t), u32::from_ne_bytes(r)), (42, 42));
        // Fetch and Compare without a result buffer still update the target.
        apply(Kind::Fetch, FI_UINT32 as u32, sum, &mut t, &o, &[], None).unwrap();
        assert_eq!(u32::from_ne_bytes(t), 49);
        let c = 49u32.to_ne_bytes();
        apply(
            Kind::Compare,
            FI_UINT32 as u32,
            FI_CSWAP as u32,
            &mut t,
            &o,
            &c,
            None,
        )
        .unwrap();
        assert_eq!(u32::from_ne_bytes(t), 7);
    }

    #[test]
    fn wrapping_sum_and_prod() {
        let sum = FI_SUM as u32;
        let mut t = [250u8];
        apply(Kind::Base, FI_UINT8 as u32, sum, &mut t, &[10], &[], None).unwrap();
        assert_eq!(t, [4]);
        let mut t = 127i8.to_ne_bytes();
        apply(
            Kind::Base,
            FI_INT8 as u32,
            sum,
            &mut t,
            &1i8.to_ne_bytes(),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(i8::from_ne_bytes(t), i8::MIN);
        let mut t = [16u8];
        apply(
            Kind::Base,
            FI_UINT8 as u32,
            FI_PROD as u32,
            &mut t,
            &[17],
            &[],
            None,
        )
        .unwrap();
        assert_eq!(t, [16]); // 272 mod 256
        let mut t = u128::MAX.to_ne_bytes();
        let o = 2u128.to_ne_bytes();
        apply(Kind::Base, FI_UINT128 as u32, sum, &mut t, &o, &[], None).unwrap();
        assert_eq!(u128::from_ne_bytes(t), 1);
    }

    /// One element of (kind, dt, op): the new target; checks that Fetch and
    /// Compare return the old one.
    fn one<T: Num + Debug>(kind: Kind, dt: fi_datatype, op: fi_op, t: T, o: T, c: T) -> T {
        let mut target = bytes(t);
        let compare = if kind == Kind::Compare {
            bytes(c)
        } else {
            vec![]
        };
        let mut result = vec![0; T::SIZE];
        let res = (kind != Kind::Base).then_some(&mut result[..]);
        apply(
            kind,
            dt as u32,
            op as u32,
            &mut target,
            &bytes(o),
            &compare,
            res,
        )
        .unwrap();
        if kind != Kind::Base {
            assert_eq!(T::load(&result), t, "{kind:?} {dt:?} {op:?}: result");
        }
        T::load(&target)
    }

    #[test]
    fn int128_every_op_at_full_width() {
        let (i, u) = (FI_INT128, FI_UINT128);
        let (b, f, c) = (Kind::Base, Kind::Fetch, Kind::Compare);
        let hi = 1u128 << 64;
        let lo = u64::MAX as u128;
        // The same bits, signed and unsigned: -1 is u128::MAX.
        assert_eq!(one(b, i, FI_MIN, 1i128, -1, 0), -1);
        assert_eq!(one(b, u, FI_MIN, 1u128, u128::MAX, 0), 1);
        assert_eq!(one(f, i, FI_MAX, 1i128, -1, 0), 1);
        assert_eq!(one(f, u, FI_MAX, 1u128, u128::MAX, 0), u128::MAX);
        assert_eq!(one(b, i, FI_MIN, i128::MAX, i128::MIN, 0), i128::MIN);
        assert_eq!(
            one(b, u, FI_MIN, i128::MAX as u128, 1 << 127, 0),
            i128::MAX as u128
        );
        assert_eq!(one(b, i, FI_MAX, i128::MAX, i128::MIN, 0), i128::MAX);
        assert_eq!(one(b, u, FI_MAX, i128::MAX as u128, 1 << 127, 0), 1 << 127);
        // The high half decides.
        assert_eq!(one(b, u, FI_MIN, hi, lo, 0), lo);
        assert_eq!(one(b, i, FI_MAX, lo as i128, hi as i128, 0), hi as i128);
        // SUM carries across the halves and wraps at the type's ends.
        assert_eq!(one(b, u, FI_SUM, lo, 1, 0), hi);
        assert_eq!(one(f, u, FI_SUM, u128::MAX, 1, 0), 0);
        assert_eq!(one(f, i, FI_SUM, i128::MAX, 1, 0), i128::MIN);
        assert_eq!(one(b, i, FI_SUM, i128::MIN, -1, 0), i128::MAX);
        assert_eq!(one(b, i, FI_SUM, -(hi as i128), 1, 0), -(lo as i128));
        // PROD keeps the low 128 bits of the product.
        assert_eq!(one(b, u, FI_PROD, hi, 1 << 63, 0), 1 << 127);
        assert_eq!(one(f, i, FI_PROD, hi as i128, 1 << 63, 0), i128::MIN);
        assert_eq!(one(b, u, FI_PROD, hi, hi, 0), 0);
        assert_eq!(one(b, i, FI_PROD, i128::MIN, -1, 0), i128::MIN);
        // -2^64 * (1 - 2^64) = 2^128 - 2^64, which wraps to -2^64.
        assert_eq!(
            one(b, i, FI_PROD, -(hi as i128), 1 - hi as i128, 0),
            -(hi as i128)
        );
        // Logical ops: a value with only high bits set is true.
        assert_eq!(one(b, u, FI_LOR, hi, 0, 0), 1);
        assert_eq!(one(b, i, FI_LAND, i128::MIN, hi as i128, 0), 1);
        assert_eq!(one(f, u, FI_LAND, 1u128 << 127, 0, 0), 0);
        assert_eq!(one(b, i, FI_LXOR, hi as i128, 0, 0), 1);
        assert_eq!(one(f, u, FI_LXOR, hi, 1 << 127, 0), 0);
        // Bitwise ops over all 128 bits.
        let a = 0xaaaa_aaaa_aaaa_aaaa_aaaa_aaaa_aaaa_aaaau128;
        let m = !lo;
        assert_eq!(one(b, u, FI_BAND, a, m, 0), a & m);
        assert_eq!(
            one(f, u, FI_BOR, a, m, 0),
            0xffff_ffff_ffff_ffff_aaaa_aaaa_aaaa_aaaa
        );
        assert_eq!(one(b, i, FI_BXOR, a as i128, -1, 0), !a as i128);
        // READ and WRITE of the extreme values.
        assert_eq!(one(f, i, FI_ATOMIC_READ, i128::MIN, 0, 0), i128::MIN);
        assert_eq!(one(b, u, FI_ATOMIC_WRITE, 0, u128::MAX, 0), u128::MAX);
        assert_eq!(one(f, i, FI_ATOMIC_WRITE, 0, i128::MIN, 0), i128::MIN);
        // CSWAP compares all 128 bits: equal low halves are not enough.
        assert_eq!(one(c, u, FI_CSWAP, hi | 5, 9, 5), hi | 5);
        assert_eq!(one(c, u, FI_CSWAP, hi | 5, 9, hi | 5), 9);
        assert_eq!(one(c, i, FI_CSWAP_NE, hi as i128 | 5, 9, 5), 9);
        assert_eq!(one(c, i, FI_CSWAP_NE, -1i128, 9, -1), -1);
        // Ordered swaps (compare <op> target) differ by signedness: -1 is
        // below 1 signed, above it unsigned.
        assert_eq!(one(c, i, FI_CSWAP_LT, 1i128, 9, -1), 9);
        assert_eq!(one(c, u, FI_CSWAP_LT, 1u128, 9, u128::MAX), 1);
        assert_eq!(one(c, i, FI_CSWAP_GT, 1i128, 9, -1), 1);
        assert_eq!(one(c, u, FI_CSWAP_GT, 1u128, 9, u128::MAX), 9);
        assert_eq!(one(c, i, FI_CSWAP_LE, i128::MIN, 9, i128::MIN), 9);
        assert_eq!(
            one(c, i, FI_CSWAP_LE, i128::MIN, 9, i128::MIN + 1),
            i128::MIN
        );
        assert_eq!(one(c, u, FI_CSWAP_GE, u128::MAX, 9, u128::MAX), 9);
        assert_eq!(one(c, u, FI_CSWAP_GE, hi, 9, lo), hi);
        assert_eq!(one(c, u, FI_CSWAP_GE, hi, 9, hi + 1), 9);
        // MSWAP with a mask over the high half only.
        assert_eq!(one(c, u, FI_MSWAP, lo, u128::MAX, m), u128::MAX);
        assert_eq!(one(c, i, FI_MSWAP, -1i128, 0, m as i128), lo as i128);
    }

    #[test]
    fn int128_sixteen_elements_unaligned() {
        // 16 elements (256 bytes, one atomic's most) at an odd address.
        let vals: Vec<u128> = (0..16u32)
            .map(|k| (u64::MAX as u128) + u128::from(k))
            .collect();
        let mut buf = vec![0xeeu8; 16 * 16 + 2];
        for (k, v) in vals.iter().enumerate() {
            buf[1 + 16 * k..17 + 16 * k].copy_from_slice(&v.to_ne_bytes());
        }
        let o: Vec<u8> = (0..16u128).flat_map(|k| (k << 64).to_ne_bytes()).collect();
        let mut r = vec![0u8; 256];
        let (dt, op) = (FI_UINT128 as u32, FI_SUM as u32);
        apply(Kind::Fetch, dt, op, &mut buf[1..257], &o, &[], Some(&mut r)).unwrap();
        for (k, v) in vals.iter().enumerate() {
            let at = |b: &[u8]| u128::from_ne_bytes(b[16 * k..16 * k + 16].try_into().unwrap());
            assert_eq!(at(&buf[1..]), v + ((k as u128) << 64));
            assert_eq!(at(&r), *v);
        }
        assert_eq!((buf[0], buf[257]), (0xee, 0xee));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double_is_c_long_double() {
        let n = LongDouble::from_i64;
        let (b, f, c) = (Kind::Base, Kind::Fetch, Kind::Compare);
        let ld = FI_LONG_DOUBLE;
        // 2^62 + 1 needs more than a double's 53 bits.
        let big = n((1 << 62) + 1);
        assert_eq!(one(b, ld, FI_SUM, n(1 << 62), n(1), n(0)), big);
        assert_eq!(one(f, ld, FI_PROD, n(-3), n(1 << 40), n(0)), n(-3 << 40));
        assert_eq!(one(f, ld, FI_MIN, big, n(1 << 62), n(0)), n(1 << 62));
        assert_eq!(one(b, ld, FI_MAX, big, n(1 << 62), n(0)), big);
        // A NaN operand leaves MIN and MAX alone, as C's `<` does.
        let nan = LongDouble([0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x7f, 0, 0, 0, 0, 0, 0]);
        assert_eq!(one(b, ld, FI_MIN, n(5), nan, n(0)), n(5));
        assert_eq!(one(b, ld, FI_MAX, n(5), nan, n(0)), n(5));
        // NaN is true; -0 equals 0.
        assert_eq!(one(b, ld, FI_LAND, nan, n(2), n(0)), n(1));
        let mut neg_zero = LongDouble::ZERO;
        neg_zero.0[9] = 0x80;
        assert_eq!(one(c, ld, FI_CSWAP, n(0), n(7), neg_zero), n(7));
        assert_eq!(one(c, ld, FI_CSWAP_GT, big, n(7), n(1 << 62)), big);
        assert_eq!(one(c, ld, FI_CSWAP_LT, big, n(7), n(1 << 62)), n(7));
        // Complex: (1 + 2i)(3 + 4i) = -5 + 10i, real part first.
        let z = |re, im| Complex {
            re: n(re),
            im: n(im),
        };
        let ldc = FI_LONG_DOUBLE_COMPLEX;
        let got = one(f, ldc, FI_PROD, z(1, 2), z(3, 4), z(0, 0));
        assert_eq!(got, z(-5, 10));
        let mut raw = bytes(z(1, 2));
        apply(
            b,
            ldc as u32,
            FI_SUM as u32,
            &mut raw,
            &bytes(z(1 << 62, 0)),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(LongDouble::load(&raw[..16]), n((1 << 62) + 1));
        assert_eq!(LongDouble::load(&raw[16..]), n(2));
    }

    #[test]
    fn mswap_mixes_bits() {
        let mut t = 0x1234_5678u32.to_ne_bytes();
        let o = 0xabcd_ef01u32.to_ne_bytes();
        let c = 0xffff_0000u32.to_ne_bytes();
        let mut r = [0u8; 4];
        let (dt, op) = (FI_UINT32 as u32, FI_MSWAP as u32);
        apply(Kind::Compare, dt, op, &mut t, &o, &c, Some(&mut r)).unwrap();
        assert_eq!(u32::from_ne_bytes(t), 0xabcd_5678);
        assert_eq!(u32::from_ne_bytes(r), 0x1234_5678);
        // A zero mask keeps the target.
        apply(Kind::Compare, dt, op, &mut t, &o, &[0; 4], None).unwrap();
        assert_eq!(u32::from_ne_bytes(t), 0xabcd_5678);
    }

    #[test]
    fn cswap_is_per_element() {
        // Element-wise: [5, 6, 7] against compare [5, 0, 7] swaps 0 and 2.
        let mut t: Vec<u8> = [5i16, 6, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let o: Vec<u8> = [-1i16, -2, -3]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let c: Vec<u8> = [5i16, 0, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut r = vec![0u8; 6];
        let (dt, op) = (FI_INT16 as u32, FI_CSWAP as u32);
        apply(Kind::Compare, dt, op, &mut t, &o, &c, Some(&mut r)).unwrap();
        let words = |b: &[u8]| -> Vec<i16> {
            b.chunks(2)
                .map(|c| i16::from_ne_bytes([c[0], c[1]]))
                .collect()
        };
        assert_eq!(words(&t), [-1, 6, -3]);
        assert_eq!(words(&r), [5, 6, 7]);
        // CSWAP_GT: compare > target, on [-1, 6, -3] with compare [0, 0, -4].
        let c: Vec<u8> = [0i16, 0, -4].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let o: Vec<u8> = [9i16, 9, 9].iter().flat_map(|v| v.to_ne_bytes()).collect();
        apply(Kind::Compare, dt, FI_CSWAP_GT as u32, &mut t, &o, &c, None).unwrap();
        assert_eq!(words(&t), [9, 6, -3]);
    }

    #[test]
    fn complex_prod() {
        // (1.5 - 2i)(-0.5 + 4i) = -0.75 + 8 + (6 + 1)i
        let mut t: Vec<u8> = [1.5f64, -2.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let o: Vec<u8> = [-0.5f64, 4.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let mut r = vec![0u8; 16];
        let (dt, op) = (FI_DOUBLE_COMPLEX as u32, FI_PROD as u32);
        apply(Kind::Fetch, dt, op, &mut t, &o, &[], Some(&mut r)).unwrap();
        let re = f64::from_ne_bytes(t[..8].try_into().unwrap());
        let im = f64::from_ne_bytes(t[8..].try_into().unwrap());
        assert_eq!((re, im), (7.25, 7.0));
        assert_eq!(r[..8], 1.5f64.to_ne_bytes());
        assert_eq!(r[8..], (-2.0f64).to_ne_bytes());
    }

    #[test]
    fn float_min_max() {
        let vals = [3.5f32, -1.25, 8.0];
        let ops = [0.5f32, -7.0, 8.5];
        let enc = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_ne_bytes()).collect() };
        let dec = |b: &[u8]| -> Vec<f32> {
            b.chunks(4)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let mut t = enc(&vals);
        apply(
            Kind::Base,
            FI_FLOAT as u32,
            FI_MIN as u32,
            &mut t,
            &enc(&ops),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(dec(&t), [0.5, -7.0, 8.0]);
        let mut t = enc(&vals);
        apply(
            Kind::Base,
            FI_FLOAT as u32,
            FI_MAX as u32,
            &mut t,
            &enc(&ops),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(dec(&t), [3.5, -1.25, 8.5]);
    }

    #[test]
    fn unaligned_target() {
        let mut buf = [0xeeu8; 17];
        buf[1..9].copy_from_slice(&0x0102_0304_0506_0708u64.to_ne_bytes());
        let o = 0x1010_1010_1010_1010u64.to_ne_bytes();
        let mut r = [0u8; 8];
        let (dt, op) = (FI_UINT64 as u32, FI_SUM as u32);
        apply(Kind::Fetch, dt, op, &mut buf[1..9], &o, &[], Some(&mut r)).unwrap();
        assert_eq!(
            u64::from_ne_bytes(buf[1..9].try_into().unwrap()),
            0x1112_1314_1516_1718
        );
        assert_eq!(u64::from_ne_bytes(r), 0x0102_0304_0506_0708);
        assert_eq!(buf[0], 0xee);
        assert!(buf[9..].iter().all(|&b| b == 0xee));

        // Several unaligned i32 elements, operand unaligned too.
        let mut buf = [0u8; 13];
        let mut obuf = [0u8; 13];
        for (i, v) in [1i32, -2, 3].iter().enumerate() {
            buf[1 + 4 * i..5 + 4 * i].copy_from_slice(&v.to_ne_bytes());
            obuf[1 + 4 * i..5 + 4 * i].copy_from_slice(&(10 * v).to_ne_bytes());
        }
        let (dt, op) = (FI_INT32 as u32, FI_SUM as u32);
        apply(Kind::Base, dt, op, &mut buf[1..], &obuf[1..], &[], None).unwrap();
        let got: Vec<i32> = buf[1..]
            .chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [11, -22, 33]);
        assert_eq!(buf[0], 0);
    }

    proptest::proptest! {
        #[test]
        fn sum_i64_wraps(pairs in proptest::collection::vec(
            (proptest::num::i64::ANY, proptest::num::i64::ANY), 0..16)) {
            let mut t: Vec<u8> = pairs.iter().flat_map(|p| p.0.to_ne_bytes()).collect();
            let o: Vec<u8> = pairs.iter().flat_map(|p| p.1.to_ne_bytes()).collect();
            let mut r = vec![0u8; t.len()];
            let (dt, op) = (FI_INT64 as u32, FI_SUM as u32);
            apply(Kind::Fetch, dt, op, &mut t, &o, &[], Some(&mut r)).unwrap();
            for (i, &(a, b)) in pairs.iter().enumerate() {
                let at = |v: &[u8]| i64::from_ne_bytes(v[8 * i..8 * i + 8].try_into().unwrap());
                proptest::prop_assert_eq!(at(&t), a.wrapping_add(b));
                proptest::prop_assert_eq!(at(&r), a);
            }
        }
    }
}
