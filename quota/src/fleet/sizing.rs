//! How many tokens a host asks for: about [`BLOCK_DEMAND`] of its recent admission rate.
//!
//! A block too small costs a DynamoDB write per handful of admissions; a block too large
//! holds capacity other hosts could use (the item counts a block as outstanding until it
//! lapses or its host takes the next one). Half a second of this host's own demand, at
//! least what its waiters need now, at most the burst, keeps writes per key growing with
//! hosts × refreshes rather than admissions. The rate is an exponentially decaying
//! average (time constant [`DEMAND_TAU`]), updated from time passed in.

use std::time::Duration;

use crate::time::Timestamp;

/// A block is sized to this much of the host's recent demand.
pub const BLOCK_DEMAND: Duration = Duration::from_millis(1_000);
/// The demand average's time constant.
pub const DEMAND_TAU: Duration = Duration::from_secs(1);
/// The smallest block worth a write, when the burst allows it (a burst-1 key takes 1).
pub const MIN_USEFUL_BLOCK: u64 = 2;

/// A decaying average of admitted cost per second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DemandMeter {
    rate: f64,
    at: Timestamp,
}

impl DemandMeter {
    /// Count `cost` admitted at `now`.
    pub fn record(&mut self, cost: f64, now: Timestamp) {
        let tau = DEMAND_TAU.as_secs_f64();
        self.rate = self.rate_at(now) + cost / tau;
        self.at = self.at.max(now);
    }

    /// The average at `now`.
    pub fn rate_at(&self, now: Timestamp) -> f64 {
        let dt = now.saturating_since(self.at).as_secs_f64();
        self.rate * (-dt / DEMAND_TAU.as_secs_f64()).exp()
    }

    /// The block to ask for at `now`, the head waiter costing `head` and `waiting` cost
    /// queued in all: `(wanted, at_least)`.
    pub fn block_size(&self, head: u64, waiting: u64, burst: f64, now: Timestamp) -> (u64, u64) {
        let max = (burst.floor() as u64).max(1);
        let recent = (self.rate_at(now) * BLOCK_DEMAND.as_secs_f64()).ceil() as u64;
        let wanted = recent.max(waiting).max(head).max(MIN_USEFUL_BLOCK).min(max);
        // Wait for half the block rather than take whatever trickled in: otherwise the
        // first host to ask after 2 tokens refilled takes 2, and blocks shrink to the
        // polling interval instead of following demand.
        let at_least = head
            .max(wanted.div_ceil(2))
            .max(MIN_USEFUL_BLOCK.min(max / 2).max(1))
            .min(max);
        (wanted, at_least)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_rate_is_tracked() {
        let mut m = DemandMeter::default();
        for i in 0..1_000 {
            m.record(1.0, Timestamp::from_millis(i * 20)); // 50/s for 20 s
        }
        let r = m.rate_at(Timestamp::from_millis(20_000));
        assert!((r - 50.0).abs() < 2.0, "{r}");
        let wanted = m.block_size(1, 1, 200.0, Timestamp::from_millis(20_000)).0;
        assert!((48..=52).contains(&wanted), "{wanted}: one second of 50/s");
    }

    #[test]
    fn sizes_stay_within_one_and_the_burst() {
        let m = DemandMeter::default();
        let t = Timestamp::ZERO;
        assert_eq!(m.block_size(1, 1, 1.0, t), (1, 1));
        assert_eq!(m.block_size(1, 1, 5.0, t), (2, 2));
        assert_eq!(m.block_size(1, 9, 5.0, t), (5, 3));
        assert_eq!(m.block_size(3, 3, 100.0, t), (3, 3));
        assert_eq!(m.block_size(9, 9, 5.0, t), (5, 5));
    }

    #[test]
    fn demand_decays_when_idle() {
        let mut m = DemandMeter::default();
        m.record(10.0, Timestamp::ZERO);
        assert!(m.rate_at(Timestamp::from_millis(10_000)) < 0.001);
    }
}
