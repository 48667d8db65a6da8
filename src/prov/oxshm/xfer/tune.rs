//! Whether shared copies pay on this machine.
//!
//! A shared copy ([`super::SPLIT_MIN`]) hands the initiator a share of a
//! bulk transfer so that both processes copy at once. Whether that is
//! faster than the target copying alone depends on the machine, not on
//! the transfer: on a host whose one core copies far below what the memory
//! system can give two (the AMD EPYC host of the project's earlier tables),
//! sharing a stream of 64 KiB messages gave 1.27-1.40x; on a host whose one
//! core copies near that limit (the Intel Xeon host of 2026-12-05), the
//! grant and its answer cost more than the second copier brings: the same
//! stream ran at 0.62x of a target that copied alone (fabtests'
//! `fi_rdm_bw`, 12.9 against 20.8 GB/s).
//!
//! So the target measures. Transfers eligible for sharing are counted in
//! epochs of [`EPOCH_OPS`]; each epoch uses one way, and its rate (bytes
//! over the time from its first transfer to its last) is kept for that way.
//! A cycle of [`CYCLE`] epochs tries sharing first, then copying alone, and
//! spends the rest on the faster of the two as last measured, so a change
//! of workload or machine load is followed within a cycle and the slower
//! way costs at most two epochs in [`CYCLE`]. An epoch with a pause longer
//! than [`GAP_NS`] between two transfers measures the application, not the
//! copy: it is started again.
//!
//! `FI_OXSHM_SHARE` overrides: `1` always shares, `0` never does, `auto`
//! (the default) measures.

/// Transfers in one epoch.
pub const EPOCH_OPS: u32 = 64;
/// Epochs in the first cycle: one sharing, one alone, then the faster.
pub const CYCLE: u32 = 8;
/// Most epochs in a cycle: a cycle whose two measurements agree with the
/// last cycle's, by more than [`CLEAR`] percent, makes the next cycle
/// twice as long (the slower way is tried less often), up to this.
pub const CYCLE_MAX: u32 = 64;
/// The margin, in percent, by which one way must win to lengthen the cycle.
pub const CLEAR: u64 = 10;
/// A pause between two eligible transfers that starts the epoch again.
pub const GAP_NS: u64 = 1_000_000;

/// `FI_OXSHM_SHARE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Auto,
    Always,
    Never,
}

impl Policy {
    /// The policy `FI_OXSHM_SHARE` asks for; an unknown value is logged
    /// and taken as `auto`.
    pub fn from_env() -> Policy {
        match std::env::var("FI_OXSHM_SHARE") {
            Err(_) => Policy::Auto,
            Ok(v) => Policy::parse(&v).unwrap_or_else(|| {
                crate::ox_log!(
                    Warn,
                    EpData,
                    super::super::NAME,
                    "FI_OXSHM_SHARE={:?} is not 0, 1 or auto: taken as auto",
                    v
                );
                Policy::Auto
            }),
        }
    }

    pub fn parse(v: &str) -> Option<Policy> {
        match v.trim() {
            "1" | "always" | "yes" => Some(Policy::Always),
            "0" | "never" | "no" => Some(Policy::Never),
            "auto" | "" => Some(Policy::Auto),
            _ => None,
        }
    }
}

/// One endpoint's measurements (used by its one drainer at a time).
#[derive(Debug)]
pub struct Tuner {
    policy: Policy,
    /// Epochs ended in this cycle, and the cycle's length.
    epoch: u32,
    cycle: u32,
    /// The way that won the last cycle clearly (true: sharing).
    clear_winner: Option<bool>,
    /// Transfers and bytes of the current epoch, its first and latest
    /// transfer's time.
    ops: u32,
    bytes: u64,
    start: u64,
    last: u64,
    /// Last measured rate (bytes per microsecond) alone and shared; 0 not
    /// measured yet.
    rate: [u64; 2],
}

impl Tuner {
    pub fn new(policy: Policy) -> Tuner {
        Tuner {
            policy,
            epoch: 0,
            cycle: CYCLE,
            clear_winner: None,
            ops: 0,
            bytes: 0,
            start: 0,
            last: 0,
            rate: [0; 2],
        }
    }

    /// Whether the epoch `epoch` of a cycle shares.
    fn epoch_shares(&self, epoch: u32) -> bool {
        match epoch {
            0 => true,
            1 => false,
            // Until both are known, share (the behaviour measured first).
            _ => self.rate[0] == 0 || self.rate[1] >= self.rate[0],
        }
    }

    /// Whether a transfer of `len` bytes that may be shared, seen at
    /// `now_ns`, is shared; counts it in the current epoch.
    pub fn share(&mut self, len: u64, now_ns: u64) -> bool {
        match self.policy {
            Policy::Always => return true,
            Policy::Never => return false,
            Policy::Auto => {}
        }
        if self.ops > 0 && now_ns.saturating_sub(self.last) > GAP_NS {
            self.ops = 0;
        }
        if self.ops == 0 {
            self.start = now_ns;
            self.bytes = 0;
        }
        let shares = self.epoch_shares(self.epoch);
        self.ops += 1;
        self.bytes += len;
        self.last = now_ns;
        if self.ops == EPOCH_OPS {
            // The first transfer's bytes came before the first time taken.
            let first = self.bytes / u64::from(EPOCH_OPS);
            let us = (now_ns - self.start) / 1000;
            if let Some(rate) = (self.bytes - first).checked_div(us) {
                self.rate[usize::from(shares)] = rate.max(1);
            }
            self.ops = 0;
            if self.epoch == 1 {
                self.size_cycle();
            }
            self.epoch = (self.epoch + 1) % self.cycle;
        }
        shares
    }

    /// After a cycle's two measurements: doubles the cycle when the same
    /// way won clearly twice in a row, starts again from [`CYCLE`] when not.
    fn size_cycle(&mut self) {
        let [alone, shared] = self.rate;
        let clear = if alone == 0 || shared == 0 {
            None
        } else if shared * 100 > alone * (100 + CLEAR) {
            Some(true)
        } else if alone * 100 > shared * (100 + CLEAR) {
            Some(false)
        } else {
            None
        };
        self.cycle = if clear.is_some() && clear == self.clear_winner {
            (self.cycle * 2).min(CYCLE_MAX)
        } else {
            CYCLE
        };
        self.clear_winner = clear;
    }

    /// The rates last measured (bytes per microsecond): alone, shared.
    #[cfg(test)]
    pub fn rates(&self) -> [u64; 2] {
        self.rate
    }

    #[cfg(test)]
    pub fn cycle(&self) -> u32 {
        self.cycle
    }
}

/// Monotonic time in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds one epoch of transfers of `len` bytes, `gap` ns apart, from
    /// `*t`; returns the way the epoch took.
    fn epoch(tu: &mut Tuner, t: &mut u64, len: u64, gap: u64) -> bool {
        let first = tu.share(len, *t);
        for _ in 1..EPOCH_OPS {
            *t += gap;
            assert_eq!(tu.share(len, *t), first, "one way per epoch");
        }
        *t += gap;
        first
    }

    #[test]
    fn a_cycle_tries_both_then_keeps_the_faster() {
        // Sharing is slower here: 64 KiB every 6 us shared, every 3 us alone.
        let mut tu = Tuner::new(Policy::Auto);
        let mut t = 1_000_000u64;
        assert!(
            epoch(&mut tu, &mut t, 65536, 6000),
            "the first epoch shares"
        );
        assert!(!epoch(&mut tu, &mut t, 65536, 3000), "the second does not");
        let [alone, shared] = tu.rates();
        assert!(alone > shared && shared > 0, "{alone} {shared}");
        for _ in 2..CYCLE {
            assert!(!epoch(&mut tu, &mut t, 65536, 3000), "the faster: alone");
        }
        // The next cycle measures both again.
        assert!(epoch(&mut tu, &mut t, 65536, 6000));
        assert!(!epoch(&mut tu, &mut t, 65536, 3000));
    }

    #[test]
    fn a_clear_winner_makes_cycles_longer_and_a_change_short_again() {
        let mut tu = Tuner::new(Policy::Auto);
        let mut t = 0u64;
        let mut ways = Vec::new();
        // Alone is twice as fast: cycles of 8, 8 (first clear win), then
        // 16, 32, 64, 64.
        for _ in 0..(8 + 8 + 16 + 32 + 64 + 64) {
            let e = tu.cycle();
            let gap = if tu.epoch_shares(tu.epoch) {
                6000
            } else {
                3000
            };
            ways.push((e, epoch(&mut tu, &mut t, 65536, gap)));
        }
        assert_eq!(tu.cycle(), CYCLE_MAX);
        let shared = ways.iter().filter(|w| w.1).count();
        assert_eq!(shared, 6, "one shared epoch per cycle: {ways:?}");
        // Now sharing is faster: the next cycle's measurement sees it, and
        // the cycle is short again.
        while tu.epoch != 0 {
            epoch(&mut tu, &mut t, 65536, 3000);
        }
        assert!(epoch(&mut tu, &mut t, 65536, 1000));
        assert!(!epoch(&mut tu, &mut t, 65536, 3000));
        assert_eq!(tu.cycle(), CYCLE);
        assert!(epoch(&mut tu, &mut t, 65536, 1000), "the faster: shared");
    }

    #[test]
    fn sharing_kept_where_it_is_faster() {
        let mut tu = Tuner::new(Policy::Auto);
        let mut t = 5u64;
        assert!(epoch(&mut tu, &mut t, 65536, 2000));
        assert!(!epoch(&mut tu, &mut t, 65536, 3500));
        for _ in 2..CYCLE {
            assert!(epoch(&mut tu, &mut t, 65536, 2000), "the faster: shared");
        }
    }

    #[test]
    fn a_slower_exploit_epoch_changes_the_choice() {
        let mut tu = Tuner::new(Policy::Auto);
        let mut t = 0u64;
        epoch(&mut tu, &mut t, 65536, 2000);
        epoch(&mut tu, &mut t, 65536, 3000);
        // Sharing chosen, but it slows down (the machine got busier).
        assert!(epoch(&mut tu, &mut t, 65536, 5000));
        assert!(!epoch(&mut tu, &mut t, 65536, 3000), "alone is now faster");
    }

    #[test]
    fn a_pause_starts_the_epoch_again() {
        let mut tu = Tuner::new(Policy::Auto);
        let mut t = 0u64;
        // Half an epoch shared, then the application pauses 2 ms.
        for _ in 0..EPOCH_OPS / 2 {
            assert!(tu.share(65536, t));
            t += 2000;
        }
        t += 2 * GAP_NS;
        // The epoch starts over: still sharing, and the pause is not in
        // its rate.
        assert!(epoch(&mut tu, &mut t, 65536, 2000));
        assert_eq!(tu.rates()[1], 65536 / 2);
    }

    #[test]
    fn until_both_are_measured_it_shares() {
        let mut tu = Tuner::new(Policy::Auto);
        // Transfers all at one instant: no rate can be taken, and the cycle
        // stays at its first length.
        for _ in 0..EPOCH_OPS * CYCLE {
            tu.share(1 << 20, 7);
        }
        assert_eq!(tu.rates(), [0, 0]);
        let mut t = 7u64;
        assert!(epoch(&mut tu, &mut t, 1 << 20, 0), "epoch 0 of a cycle");
        assert!(!epoch(&mut tu, &mut t, 1 << 20, 0));
        assert!(epoch(&mut tu, &mut t, 1 << 20, 0), "unknown: shares");
    }

    #[test]
    fn the_policy_overrides() {
        let mut always = Tuner::new(Policy::Always);
        let mut never = Tuner::new(Policy::Never);
        for i in 0..EPOCH_OPS * CYCLE * 2 {
            assert!(always.share(65536, u64::from(i) * 1000));
            assert!(!never.share(65536, u64::from(i) * 1000));
        }
        assert_eq!(Policy::parse("0"), Some(Policy::Never));
        assert_eq!(Policy::parse("1"), Some(Policy::Always));
        assert_eq!(Policy::parse(" auto "), Some(Policy::Auto));
        assert_eq!(Policy::parse("sometimes"), None);
    }
}
