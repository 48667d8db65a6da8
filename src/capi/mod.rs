//! The C boundary: every `extern "C"` export of libfabric.so.1.
//!
//! Each export's body runs through `guard` (or one of its typed siblings,
//! in [`crate::boundary`]), which catches panics (-FI_EOTHER) and turns the
//! core's `Error` into a negative `FI_E*` code in one place.

// The panic barrier and the NULL check live below the providers, which
// call them too (crate::boundary); the exports reach them from here.
pub(crate) use crate::boundary::{guard, guard_or, guard_ssize, nonnull};

/// `op!(ops, OpsType, slot)`: the function in an ops table's slot, or
/// `Err(Error::NOSYS)` when the table is NULL, too short to hold the slot
/// (its `size` field), or the slot is NULL.
///
/// Must be used inside an `unsafe` context where `ops` is NULL or points to a
/// readable ops table.
#[macro_export]
#[doc(hidden)]
macro_rules! op {
    ($ops:expr, $ty:ty, $slot:ident) => {{
        let ops: *const $ty = $ops as *const $ty;
        if ops.is_null() {
            Err($crate::error::Error::NOSYS)
        } else if (*ops).size <= ::core::mem::offset_of!($ty, $slot) {
            Err($crate::error::Error::NOSYS)
        } else {
            match (*ops).$slot {
                Some(f) => Ok(f),
                None => Err($crate::error::Error::NOSYS),
            }
        }
    }};
}

/// `dispatch!(FUNC, obj, table_expr, TableType, slot(args...))`: the body
/// of an export that forwards to one slot of an object's ops table. Fails
/// with -FI_EINVAL (warning that `obj` is NULL, under FUNC's name) when `obj`
/// is NULL and -FI_ENOSYS when `op!` finds no slot; otherwise yields
/// `Ok(result)` of the slot. `table_expr` and the arguments are evaluated
/// only after the NULL check.
///
/// Meant as the whole closure of a [`guard`] (or sibling), whose `Result`
/// the `?` returns into. It is in scope in every capi file, without an
/// import, because it is defined above their `mod` lines: keep it there.
macro_rules! dispatch {
    ($func:expr, $obj:ident, $table:expr, $ty:ty, $slot:ident ( $($arg:expr),* $(,)? )) => {{
        $crate::capi::nonnull($obj, $func, stringify!($obj))?;
        // SAFETY: `$obj` is non-NULL and, by the caller's contract, points to
        // a live object whose ops tables outlive it; `op!` rejects a NULL or
        // short table and an unset slot before the call.
        unsafe {
            let f = $crate::op!($table, $ty, $slot)?;
            Ok(f($($arg),*))
        }
    }};
}

pub mod atomic;
pub mod cm;
pub mod collective;
pub mod compat;
pub mod domain;
pub mod endpoint;
pub mod eq;
pub mod errno;
pub mod ext;
pub mod fabric;
pub mod info;
pub mod log;
pub mod param;
pub mod rma;
pub mod tagged;
pub mod tostr;
pub mod trigger;
pub mod xpu;

/// Test support shared by the dispatch tests of the capi files: fake ops
/// slots that record their call, a table-of-cases runner, and ([`text`]) a
/// call log as text.
#[cfg(test)]
pub(crate) mod fake {
    use std::cell::RefCell;

    /// What every fake slot returns.
    pub const RET: i32 = 4242;

    thread_local! {
        static LAST: RefCell<Option<(&'static str, Vec<u64>)>> = const { RefCell::new(None) };
    }

    /// An argument as the bits the fake saw.
    pub trait Arg {
        fn bits(self) -> u64;
    }
    impl<T> Arg for *mut T {
        fn bits(self) -> u64 {
            self as usize as u64
        }
    }
    impl<T> Arg for *const T {
        fn bits(self) -> u64 {
            self as usize as u64
        }
    }
    impl Arg for u64 {
        fn bits(self) -> u64 {
            self
        }
    }
    impl Arg for usize {
        fn bits(self) -> u64 {
            self as u64
        }
    }
    impl Arg for i32 {
        fn bits(self) -> u64 {
            self as i64 as u64
        }
    }
    impl Arg for u32 {
        fn bits(self) -> u64 {
            self as u64
        }
    }

    pub fn record(slot: &'static str, args: Vec<u64>) {
        LAST.with(|l| *l.borrow_mut() = Some((slot, args)));
    }

    pub fn take() -> Option<(&'static str, Vec<u64>)> {
        LAST.with(|l| l.borrow_mut().take())
    }

    /// A recognisable non-NULL pointer argument.
    pub fn p<T>(n: usize) -> *mut T {
        std::ptr::without_provenance_mut(n)
    }

    /// `fake_fn!(slot(a: T, ...) -> R)` defines an `extern "C"` fake that
    /// records `"slot"` and its arguments and returns RET.
    macro_rules! fake_fn {
        ($name:ident($($a:ident: $t:ty),* $(,)?) -> $r:ty) => {
            unsafe extern "C" fn $name($($a: $t),*) -> $r {
                $crate::capi::fake::record(
                    stringify!($name),
                    vec![$($crate::capi::fake::Arg::bits($a)),*],
                );
                $crate::capi::fake::RET as $r
            }
        };
    }
    pub(crate) use fake_fn;

    /// One export call on an object `O`: the slot it must reach, the call
    /// (given the object), and the arguments the slot must see after the
    /// object itself.
    pub struct Case<O> {
        pub slot: &'static str,
        pub call: fn(*mut O) -> i64,
        pub args: &'static [u64],
    }

    /// Every case reaches its slot with the object and its arguments, and
    /// returns the slot's result.
    pub fn dispatches<O>(obj: *mut O, cases: &[Case<O>]) {
        for c in cases {
            take();
            assert_eq!((c.call)(obj), RET as i64, "{} result", c.slot);
            let (slot, args) = take().unwrap_or_else(|| panic!("{} not called", c.slot));
            assert_eq!(slot, c.slot);
            assert_eq!(args[0], obj as usize as u64, "{} object", c.slot);
            assert_eq!(&args[1..], c.args, "{} arguments", c.slot);
        }
    }

    /// Every case returns `code` without reaching any slot.
    pub fn all_fail<O>(obj: *mut O, cases: &[Case<O>], code: i32) {
        for c in cases {
            take();
            assert_eq!((c.call)(obj), code as i64, "{}", c.slot);
            assert!(take().is_none(), "{} reached a slot", c.slot);
        }
    }

    /// A call log kept as text, for fakes that check their arguments by
    /// formatting them (the domain and EQ tests).
    pub mod text {
        use std::cell::RefCell;

        thread_local! {
            static CALLS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
        }

        /// Appends one call to this thread's log.
        pub fn record(s: String) {
            CALLS.with(|c| c.borrow_mut().push(s));
        }

        /// This thread's log so far; it starts again empty.
        pub fn calls() -> Vec<String> {
            CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()))
        }

        /// A pointer's address, to format it (the reverse of
        /// [`super::p`] and [`fake_ptr`]).
        pub fn p<T>(ptr: *const T) -> usize {
            ptr as usize
        }

        /// A NULL pointer argument.
        pub fn n<T>() -> *mut T {
            std::ptr::null_mut()
        }

        /// A recognisable non-NULL pointer argument, never dereferenced.
        pub fn fake_ptr<T>(v: usize) -> *mut T {
            v as *mut T
        }
    }
}
