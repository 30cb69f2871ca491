//! A validated admission policy: how fast, how bursty, how many at once, and how many
//! retries a quota key allows.
//!
//! Validation happens once, here, at the edge (`Policy::new`); everything downstream
//! takes a `Policy` and never re-checks. The rules are seed 000's: the rate is finite and
//! positive (fractional rates allowed), `1 ≤ burst ≤ max(1, rate)`, concurrency is
//! positive and retry capacity is non-negative.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Default concurrency of every request policy.
pub const DEFAULT_CONCURRENCY: u32 = 10;
/// Default shared retry allowance of every request policy.
pub const DEFAULT_RETRY_CAPACITY: u32 = 20;

/// A validated policy. Construct with [`Policy::new`]; fields are read through accessors so
/// an invalid value cannot be written back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawPolicy", into = "RawPolicy")]
pub struct Policy {
    rate_per_second: f64,
    burst: f64,
    concurrency: u32,
    retry_capacity: u32,
}

/// Why a policy was refused. The messages name the field and the rule, never the raw
/// input document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    #[error("ratePerSecond must be a finite number greater than 0 (got {0})")]
    Rate(f64),
    #[error(
        "burst must be a finite number from 1 through max(1, ratePerSecond) = {max} (got {got})"
    )]
    Burst { got: f64, max: f64 },
    #[error("concurrency must be a positive integer")]
    Concurrency,
}

impl Policy {
    /// Validate and build a policy.
    pub fn new(
        rate_per_second: f64,
        burst: f64,
        concurrency: u32,
        retry_capacity: u32,
    ) -> Result<Self, PolicyError> {
        if !rate_per_second.is_finite() || rate_per_second <= 0.0 {
            return Err(PolicyError::Rate(rate_per_second));
        }
        let max_burst = rate_per_second.max(1.0);
        if !burst.is_finite() || burst < 1.0 || burst > max_burst {
            return Err(PolicyError::Burst {
                got: burst,
                max: max_burst,
            });
        }
        if concurrency == 0 {
            return Err(PolicyError::Concurrency);
        }
        Ok(Self {
            rate_per_second,
            burst,
            concurrency,
            retry_capacity,
        })
    }

    /// A request policy with the default concurrency and retry capacity.
    pub fn with_rate(rate_per_second: f64, burst: f64) -> Result<Self, PolicyError> {
        Self::new(
            rate_per_second,
            burst,
            DEFAULT_CONCURRENCY,
            DEFAULT_RETRY_CAPACITY,
        )
    }

    /// Sustained refill rate in requests (or cost units) per second.
    pub fn rate_per_second(&self) -> f64 {
        self.rate_per_second
    }
    /// Token capacity.
    pub fn burst(&self) -> f64 {
        self.burst
    }
    /// Maximum concurrent reservations.
    pub fn concurrency(&self) -> u32 {
        self.concurrency
    }
    /// Shared allowance for additional attempts.
    pub fn retry_capacity(&self) -> u32 {
        self.retry_capacity
    }

    /// The field-by-field strictest of two policies: lower rate, burst, concurrency and
    /// retry capacity. Used when processes with different policies share one key.
    pub fn strictest(&self, other: &Policy) -> Policy {
        let rate = self.rate_per_second.min(other.rate_per_second);
        Policy {
            rate_per_second: rate,
            burst: self.burst.min(other.burst).min(rate.max(1.0)),
            concurrency: self.concurrency.min(other.concurrency),
            retry_capacity: self.retry_capacity.min(other.retry_capacity),
        }
    }

    /// True when every field of `self` is at least as strict as `other`'s.
    pub fn is_at_least_as_strict_as(&self, other: &Policy) -> bool {
        self.rate_per_second <= other.rate_per_second
            && self.burst <= other.burst
            && self.concurrency <= other.concurrency
            && self.retry_capacity <= other.retry_capacity
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/s burst {} concurrency {} retry capacity {}",
            self.rate_per_second, self.burst, self.concurrency, self.retry_capacity
        )
    }
}

/// The serialized (camelCase) shape of a policy, validated on the way in.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPolicy {
    rate_per_second: f64,
    burst: f64,
    concurrency: u32,
    retry_capacity: u32,
}

impl TryFrom<RawPolicy> for Policy {
    type Error = PolicyError;
    fn try_from(raw: RawPolicy) -> Result<Self, PolicyError> {
        Policy::new(
            raw.rate_per_second,
            raw.burst,
            raw.concurrency,
            raw.retry_capacity,
        )
    }
}

impl From<Policy> for RawPolicy {
    fn from(p: Policy) -> Self {
        RawPolicy {
            rate_per_second: p.rate_per_second,
            burst: p.burst,
            concurrency: p.concurrency,
            retry_capacity: p.retry_capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_table() {
        let cases: &[(f64, f64, u32, bool)] = &[
            (10.0, 10.0, 10, true),
            (0.5, 1.0, 1, true),
            (0.5, 0.5, 1, false), // burst below 1
            (4.0, 5.0, 1, false), // burst above rate
            (0.0, 1.0, 1, false),
            (-1.0, 1.0, 1, false),
            (f64::NAN, 1.0, 1, false),
            (f64::INFINITY, 1.0, 1, false),
            (10.0, 1.0, 0, false),
        ];
        for &(rate, burst, conc, ok) in cases {
            assert_eq!(
                Policy::new(rate, burst, conc, 0).is_ok(),
                ok,
                "rate {rate} burst {burst} concurrency {conc}"
            );
        }
    }

    #[test]
    fn strictest_takes_each_field_minimum() {
        let a = Policy::new(10.0, 10.0, 3, 20).unwrap();
        let b = Policy::new(5.0, 1.0, 10, 2).unwrap();
        let s = a.strictest(&b);
        assert_eq!(s, Policy::new(5.0, 1.0, 3, 2).unwrap());
        assert!(s.is_at_least_as_strict_as(&a) && s.is_at_least_as_strict_as(&b));
    }

    #[test]
    fn serde_round_trip_validates() {
        let p = Policy::with_rate(4.0, 2.0).unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), p);
        assert!(serde_json::from_str::<Policy>(
            r#"{"ratePerSecond":1,"burst":3,"concurrency":1,"retryCapacity":0}"#
        )
        .is_err());
    }
}
