//! The token bucket: capacity `burst`, refilled continuously at the effective rate.
//!
//! The bucket is the "how much" half of admission: it bounds admitted cost over any
//! interval `T` by `burst + rate·T`. The rolling window (see `window`) is the "how
//! often" half. Tokens are kept as `f64` because rates are fractional; a grant needs the
//! full cost (within [`EPSILON`] for rounding) and the balance is clamped at zero, so it is
//! never negative.

use serde::{Deserialize, Serialize};

use crate::time::{secs_ceil, Timestamp};

/// Slack for floating-point rounding when comparing a balance with a cost.
pub const EPSILON: f64 = 1e-9;

/// A token balance and the instant it was last brought up to date.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TokenBucket {
    tokens: f64,
    updated_at: Timestamp,
}

impl TokenBucket {
    /// A full bucket.
    pub fn full(capacity: f64, now: Timestamp) -> Self {
        TokenBucket {
            tokens: capacity,
            updated_at: now,
        }
    }

    /// An empty bucket: what a coordinator assumes after an unclean takeover.
    pub fn empty(now: Timestamp) -> Self {
        TokenBucket {
            tokens: 0.0,
            updated_at: now,
        }
    }

    /// A bucket holding `tokens` at `at`: what a restore from a leased snapshot computes.
    pub fn with_tokens(tokens: f64, at: Timestamp) -> Self {
        TokenBucket {
            tokens: tokens.max(0.0),
            updated_at: at,
        }
    }

    /// The balance after refilling up to `now`, without changing the bucket.
    pub fn available(&self, capacity: f64, rate: f64, now: Timestamp) -> f64 {
        let elapsed = now.saturating_since(self.updated_at).as_secs_f64();
        (self.tokens + rate * elapsed).min(capacity)
    }

    /// Bring the balance up to `now`. A clock that steps back refills nothing.
    pub fn refill(&mut self, capacity: f64, rate: f64, now: Timestamp) {
        if now > self.updated_at {
            self.tokens = self.available(capacity, rate, now);
            self.updated_at = now;
        } else {
            self.tokens = self.tokens.min(capacity);
        }
    }

    /// When `cost` tokens will be available, or `None` if they are now.
    pub fn ready_at(
        &self,
        cost: f64,
        capacity: f64,
        rate: f64,
        now: Timestamp,
    ) -> Option<Timestamp> {
        let have = self.available(capacity, rate, now);
        if have + EPSILON >= cost {
            None
        } else {
            Some(now.max(self.updated_at) + secs_ceil((cost - have) / rate))
        }
    }

    /// Take `cost` tokens; the caller has checked [`TokenBucket::ready_at`].
    pub fn take(&mut self, cost: f64, capacity: f64, rate: f64, now: Timestamp) {
        self.refill(capacity, rate, now);
        self.tokens = (self.tokens - cost).max(0.0);
    }

    /// Take `cost` tokens from a full bucket whose capacity is below `cost` (an
    /// oversize page, [`crate::arrival_jitter`]): the balance goes negative by the rest,
    /// so later grants wait until that debt is repaid instead of it being forgiven.
    pub fn take_into_debt(&mut self, cost: f64, capacity: f64, rate: f64, now: Timestamp) {
        self.refill(capacity, rate, now);
        self.tokens -= cost;
    }

    /// Put back `cost` tokens taken by a grant that was never sent, up to `capacity`: the
    /// balance is then at most what it would be had the grant never been made, so a
    /// refund never lets more through than the bucket allows.
    pub fn give_back(&mut self, cost: f64, capacity: f64, rate: f64, now: Timestamp) {
        self.refill(capacity, rate, now);
        self.tokens = (self.tokens + cost).min(capacity);
    }

    /// The stored balance (as of the last update).
    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refills_at_rate_up_to_capacity() {
        let t0 = Timestamp::ZERO;
        let mut b = TokenBucket::empty(t0);
        assert_eq!(
            b.ready_at(1.0, 2.0, 4.0, t0),
            Some(Timestamp::from_millis(250))
        );
        assert_eq!(b.available(2.0, 4.0, Timestamp::from_millis(250)), 1.0);
        assert_eq!(
            b.available(2.0, 4.0, Timestamp::from_secs_for_test(10)),
            2.0
        );
        b.take(1.0, 2.0, 4.0, Timestamp::from_millis(250));
        assert_eq!(b.tokens(), 0.0);
    }

    #[test]
    fn tokens_given_back_never_fill_the_bucket_past_capacity() {
        let t0 = Timestamp::ZERO;
        let mut b = TokenBucket::full(4.0, t0);
        b.take(3.0, 4.0, 1.0, t0);
        b.give_back(3.0, 4.0, 1.0, t0);
        assert_eq!(b.tokens(), 4.0);
        b.take(3.0, 4.0, 1.0, t0);
        // Two seconds later the bucket holds 3; giving back 3 tops it up to 4, not 6.
        b.give_back(3.0, 4.0, 1.0, Timestamp::from_millis(2_000));
        assert_eq!(b.tokens(), 4.0);
    }

    #[test]
    fn a_debt_is_repaid_before_the_bucket_grants_again() {
        let t0 = Timestamp::ZERO;
        let mut b = TokenBucket::full(4.0, t0);
        b.take_into_debt(6.0, 4.0, 2.0, t0);
        assert_eq!(b.tokens(), -2.0);
        // 1 s repays the debt; 1 token more takes another half second.
        assert_eq!(
            b.ready_at(1.0, 4.0, 2.0, t0),
            Some(Timestamp::from_millis(1_500))
        );
        assert_eq!(b.available(4.0, 2.0, Timestamp::from_millis(4_000)), 4.0);
    }

    #[test]
    fn clock_stepping_back_refills_nothing() {
        let mut b = TokenBucket::empty(Timestamp::from_millis(1_000));
        b.refill(5.0, 1.0, Timestamp::from_millis(10));
        assert_eq!(b.tokens(), 0.0);
    }

    impl Timestamp {
        fn from_secs_for_test(s: u64) -> Timestamp {
            Timestamp::from_millis(s * 1_000)
        }
    }
}
