//! The lock of oxshm's per-message state (an endpoint's receive queues,
//! pending operations, peers; a CQ's queues): one locked instruction per
//! critical section instead of two.
//!
//! `std::sync::Mutex` releases with an atomic swap, to learn whether a
//! waiter sleeps. A message takes and releases several such locks, and
//! each locked instruction costs about 20 cycles plus the drain of every
//! store before it. Here the release is a plain store followed by a plain
//! load of the sleepers' count; a waiter that is about to sleep makes that
//! safe with an asymmetric fence among the process's threads
//! ([`super::shm::process_fence`]): after it counted itself and fenced,
//! either it sees the lock free or the releaser sees it counted and wakes
//! it. Without membarrier(2) the release fences (as a swap would).
//!
//! Waiters spin briefly, then sleep on the lock word (futex). A panic
//! under the lock releases it; the state stays usable, as with a poisoned
//! `Mutex` taken with `into_inner`.
//!
//! # A domain the application serializes
//!
//! With FI_THREAD_DOMAIN the application promises that one of its threads
//! at a time calls into a domain's objects. The only other threads that
//! take the domain's locks are oxshm's own (an endpoint's progress thread)
//! and they are *outsiders*: they announce themselves on the domain's
//! [`Serial`] before they take any lock, and withdraw when they go idle.
//! While no outsider is announced, the application's thread takes a lock
//! with plain loads and stores on the `Serial` (the count of locks it holds
//! so), no locked instruction. An outsider that announces itself issues an
//! asymmetric fence, then waits until that count is zero; from then until
//! it withdraws, every thread (the application's too) takes the locks for
//! real. The same fence argument as the sleepers': after the outsider
//! counted itself and fenced, either the application's thread sees it
//! counted, or the outsider sees the application's count.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, fence, AtomicU32, Ordering};
use std::sync::Arc;

pub struct Lock<T> {
    /// 0 free, 1 held.
    state: AtomicU32,
    /// Threads between counting themselves and leaving the sleep path.
    sleepers: AtomicU32,
    /// The serialized domain this lock belongs to, if any.
    serial: Option<Arc<Serial>>,
    value: UnsafeCell<T>,
}

/// The serialization of a FI_THREAD_DOMAIN domain (see the module doc).
#[derive(Default)]
#[repr(align(64))]
pub struct Serial {
    /// Outsiders announced ([`Serial::exclude`]).
    outsiders: AtomicU32,
    /// Locks the application's thread holds without taking them. Written
    /// by that thread alone (one at a time, by the application's promise),
    /// with plain loads and stores.
    held: AtomicU32,
}

impl Serial {
    /// An application thread enters a lock: true when it may go without
    /// taking it (no outsider announced, and the count raised).
    #[inline(always)]
    fn enter(&self) -> bool {
        // An outsider never raises the count: it sees itself announced.
        if self.outsiders.load(Ordering::Acquire) != 0 {
            return false;
        }
        let n = self.held.load(Ordering::Relaxed);
        self.held.store(n + 1, Ordering::Relaxed);
        // Orders the store before the load against an outsider's
        // asymmetric fence (the compiler must not swap them).
        compiler_fence(Ordering::SeqCst);
        if self.outsiders.load(Ordering::Acquire) == 0 {
            return true;
        }
        self.held.store(n, Ordering::Release);
        false
    }

    #[inline(always)]
    fn leave(&self) {
        let n = self.held.load(Ordering::Relaxed);
        self.held.store(n - 1, Ordering::Release);
    }

    /// A thread outside the application's serialization (a progress
    /// thread) announces itself: from the return until the guard drops,
    /// every lock of the domain is taken for real. Costs an asymmetric
    /// fence, so an outsider holds the guard while it stays busy.
    ///
    /// Waits for the application's thread to leave the sections it
    /// entered without taking the locks: never to be called by that
    /// thread while it holds one of the domain's locks (it would wait for
    /// itself). A fork(2) child inherits the counts of the moment; it
    /// does not use its parent's endpoints.
    pub fn exclude(&self) -> Excluded<'_> {
        self.outsiders.fetch_add(1, Ordering::SeqCst);
        if !super::shm::process_fence() {
            // No asymmetric fence (membarrier(2) failed, or a fork child
            // could not register): the application's thread may have
            // entered a section whose count this thread cannot see yet.
            // The serialization ends for good (an outsider that never
            // withdraws: every lock is taken for real from now on), and
            // the thread waits for the stores in flight to land.
            self.outsiders.fetch_add(1, Ordering::SeqCst);
            crate::ox_log!(
                Warn,
                Domain,
                super::NAME,
                "no asymmetric fence: FI_THREAD_DOMAIN locks are taken for real from now on"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // The application's thread finishes the sections it entered
        // without the lock; new ones see the announcement.
        let mut spins = 0u32;
        while self.held.load(Ordering::Acquire) != 0 {
            spins += 1;
            if spins < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Excluded(self)
    }

    /// The application's thread enters a section that no outsider may
    /// overlap, without a locked instruction: None when an outsider is
    /// announced (the caller then takes its lock for real). While the
    /// section lasts, [`Serial::exclude`] waits; so the thread must not
    /// call it meanwhile, as with the locks.
    #[inline(always)]
    pub fn section(&self) -> Option<Section<'_>> {
        self.enter().then(|| Section(self))
    }

    /// Whether serialization may stand in for the locks here: it needs the
    /// asymmetric fence.
    pub fn available() -> bool {
        super::shm::asym()
    }
}

/// An outsider's announcement ([`Serial::exclude`]).
pub struct Excluded<'a>(&'a Serial);

/// A section of the application's thread ([`Serial::section`]).
pub struct Section<'a>(&'a Serial);

impl Drop for Section<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl Drop for Excluded<'_> {
    fn drop(&mut self) {
        self.0.outsiders.fetch_sub(1, Ordering::Release);
    }
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
            serial: None,
            value: UnsafeCell::new(value),
        }
    }

    /// A lock of a domain serialized by `serial` (None: a plain lock).
    pub fn serialized(value: T, serial: Option<&Arc<Serial>>) -> Lock<T> {
        Lock {
            serial: serial.cloned(),
            ..Lock::new(value)
        }
    }

    /// Whether the lock belongs to a domain the application serializes.
    #[inline(always)]
    pub fn is_serialized(&self) -> bool {
        self.serial.is_some()
    }

    #[inline]
    fn acquire(&self) -> bool {
        self.state
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Whether the calling thread takes the lock through its domain's
    /// serialization ([`Serial::enter`]): the word is then set and cleared
    /// with plain stores, so that a lock the thread holds already is still
    /// refused (by `try_lock`; `lock` waits, as it would for any holder).
    #[inline(always)]
    fn enter(&self) -> bool {
        let Some(s) = &self.serial else {
            return false;
        };
        if !s.enter() {
            return false;
        }
        if self.state.load(Ordering::Relaxed) != 0 {
            s.leave();
            return false;
        }
        self.state.store(1, Ordering::Relaxed);
        true
    }

    #[inline(always)]
    pub fn lock(&self) -> LockGuard<'_, T> {
        if self.enter() {
            return LockGuard {
                lock: self,
                serial: true,
                _not_send: std::marker::PhantomData,
            };
        }
        if !self.acquire() {
            self.lock_slow();
        }
        LockGuard {
            lock: self,
            serial: false,
            _not_send: std::marker::PhantomData,
        }
    }

    #[inline]
    pub fn try_lock(&self) -> Result<LockGuard<'_, T>, WouldBlock> {
        if self.enter() {
            Ok(LockGuard {
                lock: self,
                serial: true,
                _not_send: std::marker::PhantomData,
            })
        } else if self.acquire() {
            Ok(LockGuard {
                lock: self,
                serial: false,
                _not_send: std::marker::PhantomData,
            })
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
            super::shm::process_fence();
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

    /// Out of line: a guard's drop is then small enough to inline where
    /// the domain is serialized and the lock never taken.
    #[inline(never)]
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
    /// Held through the domain's serialization: released by the thread
    /// that took it (the count it lowers is that thread's).
    serial: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl<T> LockGuard<'_, T> {
    /// Whether the lock was taken through its domain's serialization: the
    /// holder is then the application's thread (an outsider never takes
    /// a lock so).
    #[inline(always)]
    pub fn serialized(&self) -> bool {
        self.serial
    }
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
        if self.serial {
            self.lock.state.store(0, Ordering::Relaxed);
            if let Some(s) = &self.lock.serial {
                // Release: the word and the value before the count.
                s.leave();
            }
        } else {
            self.lock.release();
        }
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
    fn a_section_refused_to_an_outsider_leaves_the_count_alone() {
        let s = Arc::new(Serial::default());
        {
            let sec = s.section().expect("no outsider yet");
            assert_eq!(s.held.load(Ordering::Relaxed), 1);
            let nested = s.section().expect("nested");
            assert_eq!(s.held.load(Ordering::Relaxed), 2);
            drop(nested);
            drop(sec);
        }
        assert_eq!(s.held.load(Ordering::Relaxed), 0);
        let out = s.exclude();
        // Refused: nothing entered, so nothing to leave.
        assert!(s.section().is_none());
        assert_eq!(s.held.load(Ordering::Relaxed), 0);
        drop(out);
        // An outsider after it finds the count at zero and gets in.
        let s2 = s.clone();
        std::thread::spawn(move || drop(s2.exclude()))
            .join()
            .unwrap();
        assert!(s.section().is_some());
        assert_eq!(s.held.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn an_outsider_waits_for_the_section_to_end() {
        let s = Arc::new(Serial::default());
        let sec = s.section().unwrap();
        let s2 = s.clone();
        let t = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            drop(s2.exclude());
            start.elapsed()
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(sec);
        assert!(t.join().unwrap() >= std::time::Duration::from_millis(40));
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

    #[test]
    fn a_serialized_lock_is_held_by_plain_stores_while_no_outsider_is_busy() {
        assert!(Serial::available(), "membarrier(2) global expedited");
        let s = Arc::new(Serial::default());
        let l = Lock::serialized(7, Some(&s));
        {
            let g = l.lock();
            assert_eq!(*g, 7);
            assert!(g.serial, "taken through the serialization");
            assert_eq!(s.held.load(Ordering::Relaxed), 1);
            assert_eq!(l.state.load(Ordering::Relaxed), 1);
            // A lock its own thread holds is still refused.
            assert!(l.try_lock().is_err());
            assert_eq!(s.held.load(Ordering::Relaxed), 1);
        }
        assert_eq!(s.held.load(Ordering::Relaxed), 0);
        assert_eq!(l.state.load(Ordering::Relaxed), 0);
        // With an outsider announced, the word is taken for real.
        let out = s.exclude();
        let g = l.lock();
        assert!(!g.serial);
        assert_eq!(l.state.load(Ordering::Relaxed), 1);
        assert_eq!(s.held.load(Ordering::Relaxed), 0);
        assert!(l.try_lock().is_err());
        drop(g);
        drop(out);
        assert_eq!(s.outsiders.load(Ordering::Relaxed), 0);
        assert!(l.lock().serial, "back to the serialization");
    }

    #[test]
    fn an_outsider_waits_for_the_sections_the_application_entered() {
        assert!(Serial::available(), "membarrier(2) global expedited");
        let s = Arc::new(Serial::default());
        let l = Arc::new(Lock::serialized(0u64, Some(&s)));
        let g = l.lock();
        let entered = Arc::new(AtomicU32::new(0));
        let t = {
            let (s, l, entered) = (s.clone(), l.clone(), entered.clone());
            std::thread::spawn(move || {
                let _out = s.exclude();
                entered.store(1, Ordering::SeqCst);
                *l.lock() += 1;
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(entered.load(Ordering::SeqCst), 0, "the outsider waited");
        drop(g);
        t.join().unwrap();
        assert_eq!(*l.lock(), 1);
    }

    #[test]
    fn serialized_and_outsider_threads_lose_no_update() {
        // One application thread (the serialization's promise) against two
        // outsiders that come and go, all adding to one count, each with a
        // window between its read and its write: every addition lands.
        assert!(Serial::available(), "membarrier(2) global expedited");
        let s = Arc::new(Serial::default());
        let l = Arc::new(Lock::serialized(0u64, Some(&s)));
        let outsiders: Vec<_> = (0..2)
            .map(|_| {
                let (s, l) = (s.clone(), l.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    for round in 0..300 {
                        let _out = s.exclude();
                        for _ in 0..(round % 7 + 1) * 10 {
                            let mut g = l.lock();
                            let v = *g;
                            for _ in 0..20 {
                                std::hint::spin_loop();
                            }
                            *g = v + 1;
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        let mut mine = 0u64;
        for i in 0..300_000u64 {
            let mut g = l.lock();
            let v = *g;
            for _ in 0..20 {
                std::hint::spin_loop();
            }
            if i % 5000 == 0 {
                std::thread::yield_now();
            }
            *g = v + 1;
            mine += 1;
        }
        let theirs: u64 = outsiders.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(theirs > 0);
        assert_eq!(*l.lock(), mine + theirs);
        assert_eq!(s.held.load(Ordering::Relaxed), 0);
        assert_eq!(s.outsiders.load(Ordering::Relaxed), 0);
    }
}
