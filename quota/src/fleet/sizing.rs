//! How many tokens a host asks for: about one refresh interval of its recent demand.
//!
//! A block too small costs a DynamoDB write per handful of admissions; a block too large
//! reserves capacity ahead that a dying host would waste (tokens are future-dated, so a
//! big block does not hold anyone back, it only reaches further ahead). About
//! [`crate::fleet::BLOCK_REFRESH`] of the host's own demand, at least what its waiters need
//! now, at most one refresh of the fleet rate, keeps writes per key growing with hosts ×
//! refreshes rather than admissions. The demand is an exponentially decaying average (time
//! constant [`DEMAND_TAU`]), updated from time passed in.
//!
//! A cold average lags a host that just started: while each block was spent to the last
//! token (none lapsed), the next one may double, up to the host's fair share of one
//! refresh (the rate over the hosts seen), like a slow start.

use std::time::Duration;

use crate::time::Timestamp;

/// The demand average's time constant.
pub const DEMAND_TAU: Duration = Duration::from_secs(1);

/// A decaying average of admitted cost per second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DemandMeter {
    rate: f64,
    at: Timestamp,
}

/// What the next block's size depends on besides the demand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeHints {
    /// The head waiter's cost (1 if none).
    pub head: u64,
    /// The cost queued in all.
    pub waiting: u64,
    /// The previous block's size, and whether it was spent to the last token.
    pub last: u64,
    pub last_spent: bool,
    /// The fleet rate (with the factor last seen), tokens/s.
    pub rate: f64,
    /// Hosts seen on the item (at least 1).
    pub hosts: usize,
    /// The refresh interval the block should last.
    pub refresh: Duration,
    /// At most this much of the fleet rate in one block (the refresh up to 4 hosts
    /// seen; beyond, about twice the host's share, so one host's block does not push the
    /// others' past the horizon).
    pub cap: Duration,
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

    /// The block to ask for at `now`: at least 1 and the head waiter's cost, at most one
    /// refresh of the fleet rate (or the head's cost if larger).
    pub fn block_size(&self, hints: &SizeHints, now: Timestamp) -> u64 {
        let refresh = hints.refresh.as_secs_f64();
        let cap = hints.cap.min(hints.refresh).as_secs_f64();
        let max = ((hints.rate * cap).ceil() as u64).max(1);
        let share = ((hints.rate * refresh / hints.hosts.max(1) as f64).ceil() as u64).max(1);
        let recent = (self.rate_at(now) * refresh).ceil() as u64;
        let grown = if hints.last_spent {
            hints.last.saturating_mul(2).min(share)
        } else {
            0
        };
        recent
            .max(grown)
            .max(hints.waiting)
            .max(1)
            .min(max)
            .max(hints.head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(rate: f64, hosts: usize) -> SizeHints {
        SizeHints {
            head: 1,
            waiting: 1,
            last: 0,
            last_spent: false,
            rate,
            hosts,
            refresh: Duration::from_secs(1),
            cap: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_steady_rate_is_tracked() {
        let mut m = DemandMeter::default();
        for i in 0..1_000 {
            m.record(1.0, Timestamp::from_millis(i * 20)); // 50/s for 20 s
        }
        let now = Timestamp::from_millis(20_000);
        let r = m.rate_at(now);
        assert!((r - 50.0).abs() < 2.0, "{r}");
        let wanted = m.block_size(&hints(200.0, 4), now);
        assert!((48..=52).contains(&wanted), "{wanted}: one second of 50/s");
    }

    #[test]
    fn sizes_stay_within_one_and_a_refresh_of_the_rate() {
        let m = DemandMeter::default();
        let t = Timestamp::ZERO;
        assert_eq!(m.block_size(&hints(0.5, 1), t), 1);
        let h = SizeHints {
            waiting: 90,
            ..hints(20.0, 4)
        };
        assert_eq!(m.block_size(&h, t), 20, "one second of 20/s");
        let h = SizeHints {
            head: 30,
            ..hints(20.0, 4)
        };
        assert_eq!(m.block_size(&h, t), 30, "the head waiter's cost");
    }

    #[test]
    fn a_block_spent_to_the_last_token_doubles_up_to_the_fair_share() {
        let m = DemandMeter::default();
        let t = Timestamp::ZERO;
        let mut h = hints(200.0, 4);
        h.last_spent = true;
        h.last = 8;
        assert_eq!(m.block_size(&h, t), 16);
        h.last = 40;
        assert_eq!(m.block_size(&h, t), 50, "200/s over 4 hosts");
        h.last_spent = false;
        assert_eq!(m.block_size(&h, t), 1, "tokens lapsed: the demand decides");
    }

    #[test]
    fn demand_decays_when_idle() {
        let mut m = DemandMeter::default();
        m.record(10.0, Timestamp::ZERO);
        assert!(m.rate_at(Timestamp::from_millis(10_000)) < 0.001);
    }
}
