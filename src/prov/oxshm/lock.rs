//! The lock of oxshm's per-message state (an endpoint's receive queues,
//! pending operations, peers; a CQ's queues): one locked instruction per
//! critical section instead of two.
//!
//! `std::sync::Mutex` releases with an atomic swap, to learn whether a
//! waiter sleeps. A message takes and releases several such locks, and
//! each locked instruction costs about 20 cycles plus the drain of every
//! store before it. Here the release is a plain store followed by a plain
//! load of the sleepers' count; a waiter that is about to sleep makes that
//! safe with an asymmetric fence (membarrier(2), the same registration as
//! the rings' [`super::shm`] fences): after it counted itself and fenced,
//! either it sees the lock free or the releaser sees it counted and wakes
//! it. Without membarrier(2) the release fences (as a swap would).
//!
//! Waiters spin briefly, then sleep on the lock word (futex). A panic
//! under the lock releases it; the state stays usable, as with a poisoned
//! `Mutex` taken with `into_inner`.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, fence, AtomicU32, Ordering};

pub struct Lock<T> {
    /// 0 free, 1 held.
    state: AtomicU32,
    /// Threads between counting themselves and leaving the sleep path.
    sleepers: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, one at a time (the
// state word, taken by compare-exchange with Acquire, released with a
// Release store).
unsafe impl<T: Send> Sync for Lock<T> {}
// SAFETY: as above; moving the lock moves the value.
unsafe impl<T: Send> Send for Lock<T> {}

/// [`Lock::try_lock`] found the lock held.
#[derive(Debug)]
pub struct WouldBlock;

impl<T> Lock<T> {
    pub const fn new(value: T) -> Lock<T> {
        Lock {
            state: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    fn acquire(&self) -> bool {
        self.state
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[inline]
    pub fn lock(&self) -> LockGuard<'_, T> {
        if !self.acquire() {
            self.lock_slow();
        }
        LockGuard { lock: self }
    }

    #[inline]
    pub fn try_lock(&self) -> Result<LockGuard<'_, T>, WouldBlock> {
        if self.acquire() {
            Ok(LockGuard { lock: self })
        } else {
            Err(WouldBlock)
        }
    }

    #[cold]
    fn lock_slow(&self) {
        for _ in 0..200 {
            std::hint::spin_loop();
            if self.state.load(Ordering::Relaxed) == 0 && self.acquire() {
                return;
            }
        }
        loop {
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            // Pairs with the release's plain store and load (see above).
            super::shm::heavy_fence();
            if self.acquire() {
                self.sleepers.fetch_sub(1, Ordering::Relaxed);
                return;
            }
            futex_wait(&self.state, 1);
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
            if self.acquire() {
                return;
            }
        }
    }

    #[inline(always)]
    fn release(&self) {
        self.state.store(0, Ordering::Release);
        if super::shm::asym() {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            futex_wake(&self.state);
        }
    }
}

impl<T: Default> Default for Lock<T> {
    fn default() -> Lock<T> {
        Lock::new(T::default())
    }
}

pub struct LockGuard<'a, T> {
    lock: &'a Lock<T>,
}

impl<T> Deref for LockGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for LockGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, and &mut self is unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for LockGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.lock.release();
    }
}

fn futex_wait(word: &AtomicU32, val: u32) {
    // A bounded sleep: should a wake-up ever be missed (a kernel without
    // the fence's guarantee), the waiter looks again.
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    // SAFETY: word is a valid u32; ts is a valid timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            &ts as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: word is a valid u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_across_threads_through_sleeps() {
        // More threads than CPUs, and a critical section that yields:
        // waiters go through the sleep path.
        let l = Arc::new(Lock::new(0u64));
        let ts: Vec<_> = (0..6)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        let mut g = l.lock();
                        let v = *g;
                        if i % 1000 == 0 {
                            std::thread::yield_now();
                        }
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 120_000);
        assert_eq!(l.sleepers.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_waiter_asleep_is_woken_by_the_release() {
        let l = Arc::new(Lock::new(()));
        let g = l.lock();
        let l2 = l.clone();
        let t = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            drop(l2.lock());
            start.elapsed()
        });
        // Long enough for the waiter to be asleep in the kernel.
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(g);
        let waited = t.join().unwrap();
        assert!(waited >= std::time::Duration::from_millis(40));
    }

    #[test]
    fn try_lock_refuses_a_held_lock() {
        let l = Lock::new(5);
        let g = l.lock();
        assert!(l.try_lock().is_err());
        drop(g);
        assert_eq!(*l.try_lock().unwrap(), 5);
    }

    #[test]
    fn a_panic_under_the_lock_releases_it() {
        let l = Lock::new(1);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = l.lock();
            panic!("under the lock");
        }));
        assert!(r.is_err());
        assert_eq!(*l.lock(), 1);
    }
}
