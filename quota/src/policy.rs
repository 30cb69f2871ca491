//! A validated admission policy: how fast, how bursty, how many at once, and how many
//! retries a quota key allows.
//!
//! Validation happens once, here, at the edge (`Policy::new`); everything downstream
//! takes a `Policy` and never re-checks. The rules are seed 000's: the rate is finite and
//! positive (fractional rates allowed), `1 ≤ burst ≤ max(1, rate)`, concurrency is
//! positive and retry capacity is non-negative.
//!
//! A fifth field, `arrivalJitterMs` (issue 22's follow-up, 0 unless set), is tollgate's
//! own: how much later one request may reach the server than another, relative to their
//! admission instants. The gate's bucket then holds the *admission burst*
//! `max(1, burst − rate·jitter)` instead of `burst`; `arrival_jitter.rs` says why that is
//! enough for a server bucket of `rate` and `burst` refilled by arrival time.

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
    arrival_jitter_ms: u32,
}

/// The largest arrival jitter a policy accepts, in milliseconds (one minute): beyond it
/// the allowance is no longer about scheduling and transport jitter, and the reduced
/// burst of any realistic key would be down to 1.
pub const MAX_ARRIVAL_JITTER_MS: u32 = 60_000;

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
    #[error("arrivalJitterMs must be a whole number of milliseconds from 0 through {MAX_ARRIVAL_JITTER_MS} (got {0})")]
    ArrivalJitter(u64),
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
            arrival_jitter_ms: 0,
        })
    }

    /// This policy with an arrival jitter of `ms` milliseconds (see the module docs);
    /// refused above [`MAX_ARRIVAL_JITTER_MS`].
    pub fn with_arrival_jitter_ms(self, ms: u32) -> Result<Self, PolicyError> {
        if ms > MAX_ARRIVAL_JITTER_MS {
            return Err(PolicyError::ArrivalJitter(u64::from(ms)));
        }
        Ok(Self {
            arrival_jitter_ms: ms,
            ..self
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
    /// How much later one request may arrive than another, relative to their admission
    /// instants, in milliseconds (0: not allowed for).
    pub fn arrival_jitter_ms(&self) -> u32 {
        self.arrival_jitter_ms
    }

    /// The capacity of the gate's own bucket: `burst` less what arrival jitter can bring
    /// together, `max(1, burst − rate·jitter)` ([`crate::arrival_jitter`]). Equal to
    /// [`burst`](Self::burst) when the jitter is 0. Every bucket the gate keeps for this
    /// policy (local, coordinator, fleet) is sized by this, not by `burst`; `burst`
    /// stays the server's figure, the one a cost may never exceed.
    pub fn admission_burst(&self) -> f64 {
        crate::arrival_jitter::admission_burst(
            self.burst,
            self.rate_per_second,
            self.arrival_jitter_ms,
        )
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
            // A longer allowance is stricter: it admits less at once.
            arrival_jitter_ms: self.arrival_jitter_ms.max(other.arrival_jitter_ms),
        }
    }

    /// True when every field of `self` is at least as strict as `other`'s.
    pub fn is_at_least_as_strict_as(&self, other: &Policy) -> bool {
        self.rate_per_second <= other.rate_per_second
            && self.burst <= other.burst
            && self.concurrency <= other.concurrency
            && self.retry_capacity <= other.retry_capacity
            && self.arrival_jitter_ms >= other.arrival_jitter_ms
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/s burst {} concurrency {} retry capacity {}",
            self.rate_per_second, self.burst, self.concurrency, self.retry_capacity
        )?;
        if self.arrival_jitter_ms > 0 {
            write!(f, " arrival jitter {} ms", self.arrival_jitter_ms)?;
        }
        Ok(())
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
    /// Absent in records and messages written before the field existed, and left out
    /// when 0, so every policy without an allowance serializes as before.
    #[serde(default, skip_serializing_if = "is_zero")]
    arrival_jitter_ms: u32,
}

fn is_zero(ms: &u32) -> bool {
    *ms == 0
}

impl TryFrom<RawPolicy> for Policy {
    type Error = PolicyError;
    fn try_from(raw: RawPolicy) -> Result<Self, PolicyError> {
        Policy::new(
            raw.rate_per_second,
            raw.burst,
            raw.concurrency,
            raw.retry_capacity,
        )?
        .with_arrival_jitter_ms(raw.arrival_jitter_ms)
    }
}

impl From<Policy> for RawPolicy {
    fn from(p: Policy) -> Self {
        RawPolicy {
            rate_per_second: p.rate_per_second,
            burst: p.burst,
            concurrency: p.concurrency,
            retry_capacity: p.retry_capacity,
            arrival_jitter_ms: p.arrival_jitter_ms,
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
    fn an_arrival_jitter_is_kept_through_serde_and_left_out_when_zero() {
        let plain = Policy::with_rate(8_000.0, 8_000.0).unwrap();
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("arrivalJitterMs"), "{json}");
        let jittered = plain.with_arrival_jitter_ms(100).unwrap();
        let json = serde_json::to_string(&jittered).unwrap();
        assert!(json.contains(r#""arrivalJitterMs":100"#), "{json}");
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), jittered);
        assert_eq!(jittered.admission_burst(), 7_200.0);
        assert_eq!(plain.admission_burst(), 8_000.0);
        assert!(plain
            .with_arrival_jitter_ms(MAX_ARRIVAL_JITTER_MS + 1)
            .is_err());
        assert!(serde_json::from_str::<Policy>(
            r#"{"ratePerSecond":1,"burst":1,"concurrency":1,"retryCapacity":0,"arrivalJitterMs":60001}"#
        )
        .is_err());
    }

    #[test]
    fn the_strictest_of_two_policies_keeps_the_longer_arrival_jitter() {
        let a = Policy::with_rate(100.0, 100.0).unwrap();
        let b = a.with_arrival_jitter_ms(100).unwrap();
        assert_eq!(a.strictest(&b).arrival_jitter_ms(), 100);
        assert!(b.is_at_least_as_strict_as(&a));
        assert!(!a.is_at_least_as_strict_as(&b));
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
