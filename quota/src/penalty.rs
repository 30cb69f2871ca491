//! Failure feedback: the AIMD penalty on the refill rate and the shared cooldown.
//!
//! A throttle or retryable transient failure halves the effective refill rate (down to
//! 1/32 of the configured rate) and starts a cooldown of 500 ms that doubles per
//! consecutive failure up to 8 s, during which nothing on the key starts. This is the
//! multiplicative decrease; recovery is one step per success *admitted after* the latest
//! failure, so an old request that was in flight when the failure was seen proves nothing
//! about the server's current state and clears nothing.
//!
//! Failures "within one short interval count as one event": a failure reported for an
//! attempt admitted before the latest recorded failure was in flight at the same time, so
//! it is the same event and does not deepen the penalty. Because the cooldown blocks new
//! starts for at least 500 ms after a failure, that interval is the cooldown itself.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Deepest penalty: the effective rate never drops below `rate / 2^MAX_PENALTY_STEPS`.
pub const MAX_PENALTY_STEPS: u8 = 5;
/// Cooldown after the first failure of a run.
pub const INITIAL_COOLDOWN: Duration = Duration::from_millis(500);
/// Longest cooldown.
pub const MAX_COOLDOWN: Duration = Duration::from_secs(8);

/// What an attempt's outcome tells the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The server answered; not a capacity signal.
    Success,
    /// The server asked us to slow down.
    Throttled,
    /// A retryable failure (5xx, timeout, reset): treated as pressure too.
    Transient,
    /// A non-retryable answer (access denied, validation): no capacity signal.
    Fatal,
}

/// Penalty depth, consecutive failures and cooldown of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Penalty {
    steps: u8,
    consecutive_failures: u32,
    cooldown_until: Option<Timestamp>,
    last_failure_at: Option<Timestamp>,
}

impl Penalty {
    /// The refill rate after the penalty.
    pub fn effective_rate(&self, configured_rate: f64) -> f64 {
        configured_rate / f64::from(1u32 << self.steps)
    }

    /// Halvings currently applied (0 = none).
    pub fn steps(&self) -> u8 {
        self.steps
    }

    /// End of the current cooldown, if one is running at `now`.
    pub fn cooldown_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.cooldown_until.filter(|until| *until > now)
    }

    /// When the latest failure event was recorded.
    pub fn last_failure_at(&self) -> Option<Timestamp> {
        self.last_failure_at
    }

    /// Cooldown for the `n`th consecutive failure (n ≥ 1).
    pub fn cooldown_for(n: u32) -> Duration {
        let doublings = n.saturating_sub(1).min(16);
        INITIAL_COOLDOWN
            .saturating_mul(1u32 << doublings)
            .min(MAX_COOLDOWN)
    }

    /// Apply an attempt's outcome, reported at `now`, for an attempt admitted at
    /// `admitted_at`. Returns true if the state changed.
    pub fn observe(&mut self, outcome: Outcome, admitted_at: Timestamp, now: Timestamp) -> bool {
        // Strictly after: the failure starts a cooldown, so nothing is admitted at the
        // instant it is recorded; an attempt admitted at that very instant was admitted
        // before it (with instant answers, as in simulations, the instants coincide).
        let after_latest_failure = self.last_failure_at.is_none_or(|at| admitted_at > at);
        match outcome {
            Outcome::Throttled | Outcome::Transient => {
                if !after_latest_failure {
                    return false; // same event as the latest failure
                }
                self.steps = (self.steps + 1).min(MAX_PENALTY_STEPS);
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                self.cooldown_until = Some(now + Self::cooldown_for(self.consecutive_failures));
                self.last_failure_at = Some(now);
                true
            }
            Outcome::Success => {
                if !after_latest_failure || (self.steps == 0 && self.cooldown_until.is_none()) {
                    return false;
                }
                self.steps = self.steps.saturating_sub(1);
                self.consecutive_failures = 0;
                self.cooldown_until = None;
                true
            }
            Outcome::Fatal => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    #[test]
    fn cooldown_doubles_to_eight_seconds() {
        let got: Vec<u64> = (1..=7)
            .map(|n| Penalty::cooldown_for(n).as_millis() as u64)
            .collect();
        assert_eq!(got, [500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
    }

    #[test]
    fn halves_down_to_one_thirty_second() {
        let mut p = Penalty::default();
        for i in 0..10u64 {
            // each failure is from an attempt admitted after the previous one
            p.observe(Outcome::Throttled, ms(i * 10_000), ms(i * 10_000 + 1));
        }
        assert_eq!(p.steps(), MAX_PENALTY_STEPS);
        assert_eq!(p.effective_rate(32.0), 1.0);
    }

    #[test]
    fn concurrent_failures_count_once() {
        let mut p = Penalty::default();
        assert!(p.observe(Outcome::Throttled, ms(0), ms(10)));
        assert!(!p.observe(Outcome::Throttled, ms(5), ms(12)));
        assert_eq!(p.steps(), 1);
        assert_eq!(p.cooldown_until(ms(12)), Some(ms(510)));
    }

    /// Regression: two attempts admitted at one instant and answered "throttled" at that
    /// same instant (zero transport time) counted as two failure events, deepening the
    /// penalty twice and doubling the cooldown (seed 000's sustained-throttling fixture).
    #[test]
    fn failures_of_attempts_admitted_at_the_failure_instant_count_once() {
        let mut p = Penalty::default();
        assert!(p.observe(Outcome::Throttled, ms(0), ms(0)));
        assert!(!p.observe(Outcome::Throttled, ms(0), ms(0)));
        assert_eq!(p.steps(), 1);
        assert_eq!(p.cooldown_until(ms(0)), Some(ms(500)));
        // nor does a success admitted at that instant clear the failure
        assert!(!p.observe(Outcome::Success, ms(0), ms(0)));
        assert_eq!(p.steps(), 1);
    }

    #[test]
    fn only_a_success_admitted_after_the_failure_recovers() {
        let mut p = Penalty::default();
        p.observe(Outcome::Throttled, ms(0), ms(100));
        // in flight before the failure was seen: clears nothing
        assert!(!p.observe(Outcome::Success, ms(50), ms(120)));
        assert_eq!(p.steps(), 1);
        assert!(p.cooldown_until(ms(120)).is_some());
        // admitted after: one step off, cooldown cleared
        assert!(p.observe(Outcome::Success, ms(700), ms(720)));
        assert_eq!(p.steps(), 0);
        assert_eq!(p.cooldown_until(ms(720)), None);
    }

    #[test]
    fn fatal_is_not_a_capacity_signal() {
        let mut p = Penalty::default();
        assert!(!p.observe(Outcome::Fatal, ms(0), ms(1)));
        assert_eq!(p, Penalty::default());
    }
}
