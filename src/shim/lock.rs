//! The lock behind the shim's state: one locked instruction per critical
//! section instead of two.
//!
//! `std::sync::Mutex` releases with an atomic swap (it must learn whether a
//! waiter sleeps in the kernel). On the registration and close paths the
//! shim takes its lock once per call, and that release was a fifth of the
//! shim's own cost per registration: a locked instruction waits for every
//! store before it to drain. This lock releases with a plain store; its
//! waiters never sleep in the kernel, so there is no wake-up to lose: they
//! spin briefly, then yield the CPU until the holder is done. The shim's
//! critical sections are bookkeeping of tens of nanoseconds, except the
//! exit report and a fork, during which other threads yield.
//!
//! A panic under the lock releases it (the guard's drop); the shim's state
//! stays usable, as with a poisoned `Mutex` taken with `into_inner`.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct SpinLock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and one guard exists
// at a time (the `held` flag, taken by compare-exchange with Acquire and
// released with a Release store).
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: as above; moving the lock moves the value.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) const fn new(value: T) -> SpinLock<T> {
        SpinLock {
            held: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        SpinGuard { lock: self }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            // Wait on a plain load, so that waiters do not bounce the line.
            while self.held.load(Ordering::Relaxed) {
                if spins < 200 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self
                .held
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

// SAFETY: a guard hands out &T only; T: Sync makes that shareable.
unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, and &mut self is unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.held.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_across_threads() {
        let l = Arc::new(SpinLock::new(0u64));
        let ts: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..50_000 {
                        // A read-modify-write in two steps: lost updates
                        // would show without mutual exclusion.
                        let mut g = l.lock();
                        let v = *g;
                        std::hint::black_box(&v);
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 200_000);
    }

    #[test]
    fn a_panic_under_the_lock_releases_it() {
        let l = SpinLock::new(1);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = l.lock();
            panic!("under the lock");
        }));
        assert!(r.is_err());
        assert_eq!(*l.lock(), 1);
    }
}
