//! `PolicyOverlay`: a partial policy laid over a base.
//!
//! Both an override entry (over the default row) and a schedule entry (over the key's
//! policy) give only some fields; the rest come from the base. One rule, seed 000's, for
//! both: an *inherited* burst is capped at `max(1, ratePerSecond)` (lowering only a rate
//! lowers the burst with it), while an *explicit* burst must already lie in
//! `1..=max(1, ratePerSecond)`. Each explicit value is checked on its own when the
//! overlay is built; [`PolicyOverlay::apply`] checks the combination.

use serde::Serialize;

use crate::policy::{Policy, PolicyError};

/// Some of a policy's fields. Build with [`PolicyOverlay::new`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyOverlay {
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_capacity: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_jitter_ms: Option<u32>,
}

impl PolicyOverlay {
    /// An overlay that changes nothing.
    pub const NONE: PolicyOverlay = PolicyOverlay {
        rate_per_second: None,
        burst: None,
        concurrency: None,
        retry_capacity: None,
        arrival_jitter_ms: None,
    };

    /// Check each given field on its own: a finite positive rate, a finite burst of at
    /// least 1, a positive concurrency.
    pub fn new(
        rate_per_second: Option<f64>,
        burst: Option<f64>,
        concurrency: Option<u32>,
        retry_capacity: Option<u32>,
    ) -> Result<Self, PolicyError> {
        if let Some(rate) = rate_per_second {
            if !rate.is_finite() || rate <= 0.0 {
                return Err(PolicyError::Rate(rate));
            }
        }
        if let Some(b) = burst {
            if !b.is_finite() || b < 1.0 {
                let max = rate_per_second.unwrap_or(1.0).max(1.0);
                return Err(PolicyError::Burst { got: b, max });
            }
        }
        if concurrency == Some(0) {
            return Err(PolicyError::Concurrency);
        }
        Ok(PolicyOverlay {
            rate_per_second,
            burst,
            concurrency,
            retry_capacity,
            arrival_jitter_ms: None,
        })
    }

    /// This overlay with an explicit arrival jitter (`None`: inherited from the base),
    /// refused above [`crate::policy::MAX_ARRIVAL_JITTER_MS`].
    pub fn with_arrival_jitter_ms(self, ms: Option<u32>) -> Result<Self, PolicyError> {
        if let Some(ms) = ms.filter(|ms| *ms > crate::policy::MAX_ARRIVAL_JITTER_MS) {
            return Err(PolicyError::ArrivalJitter(u64::from(ms)));
        }
        Ok(PolicyOverlay {
            arrival_jitter_ms: ms,
            ..self
        })
    }

    /// The policy this overlay makes of `base`; refused when an explicit burst exceeds
    /// `max(1, ratePerSecond)` of the result.
    pub fn apply(&self, base: &Policy) -> Result<Policy, PolicyError> {
        let rate = self.rate_per_second.unwrap_or(base.rate_per_second());
        let burst = self.burst.unwrap_or(base.burst().min(rate.max(1.0)));
        Policy::new(
            rate,
            burst,
            self.concurrency.unwrap_or(base.concurrency()),
            self.retry_capacity.unwrap_or(base.retry_capacity()),
        )?
        .with_arrival_jitter_ms(self.arrival_jitter_ms.unwrap_or(base.arrival_jitter_ms()))
    }

    /// [`apply`](Self::apply), with an explicit burst capped at `max(1, rate)` instead of
    /// refused: for a base other than the one the overlay was validated over (a stricter
    /// policy adopted from another process), so resolution never fails.
    pub fn apply_capped(&self, base: &Policy) -> Policy {
        let rate = self.rate_per_second.unwrap_or(base.rate_per_second());
        let max_burst = rate.max(1.0);
        let burst = self.burst.unwrap_or(base.burst()).clamp(1.0, max_burst);
        Policy::new(
            rate,
            burst,
            self.concurrency.unwrap_or(base.concurrency()),
            self.retry_capacity.unwrap_or(base.retry_capacity()),
        )
        .and_then(|p| {
            p.with_arrival_jitter_ms(self.arrival_jitter_ms.unwrap_or(base.arrival_jitter_ms()))
        })
        .unwrap_or(*base)
    }

    /// The explicit rate, if any.
    pub fn rate_per_second(&self) -> Option<f64> {
        self.rate_per_second
    }
    /// The explicit burst, if any.
    pub fn burst(&self) -> Option<f64> {
        self.burst
    }
    /// The explicit concurrency, if any.
    pub fn concurrency(&self) -> Option<u32> {
        self.concurrency
    }
    /// The explicit retry capacity, if any.
    pub fn retry_capacity(&self) -> Option<u32> {
        self.retry_capacity
    }
    /// The explicit arrival jitter in milliseconds, if any.
    pub fn arrival_jitter_ms(&self) -> Option<u32> {
        self.arrival_jitter_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omitted_fields_come_from_the_base_with_the_burst_capped() {
        let base = Policy::new(10.0, 10.0, 4, 7).unwrap();
        type Fields = (f64, f64, u32, u32);
        let cases: &[(PolicyOverlay, Fields)] = &[
            (PolicyOverlay::NONE, (10.0, 10.0, 4, 7)),
            (
                PolicyOverlay::new(Some(1.0), None, None, None).unwrap(),
                (1.0, 1.0, 4, 7),
            ),
            (
                PolicyOverlay::new(Some(5.0), Some(2.0), Some(1), Some(0)).unwrap(),
                (5.0, 2.0, 1, 0),
            ),
            (
                PolicyOverlay::new(Some(50.0), None, None, None).unwrap(),
                (50.0, 10.0, 4, 7),
            ),
        ];
        for (overlay, (rate, burst, conc, retry)) in cases {
            let p = overlay.apply(&base).unwrap();
            assert_eq!(
                (
                    p.rate_per_second(),
                    p.burst(),
                    p.concurrency(),
                    p.retry_capacity()
                ),
                (*rate, *burst, *conc, *retry),
                "{overlay:?}"
            );
            assert_eq!(overlay.apply_capped(&base), p);
        }
    }

    #[test]
    fn an_explicit_burst_above_the_rate_is_refused_or_capped() {
        let base = Policy::new(10.0, 10.0, 4, 7).unwrap();
        let overlay = PolicyOverlay::new(Some(2.0), Some(5.0), None, None).unwrap();
        assert!(matches!(
            overlay.apply(&base),
            Err(PolicyError::Burst { .. })
        ));
        assert_eq!(overlay.apply_capped(&base).burst(), 2.0);
        assert!(PolicyOverlay::new(Some(0.0), None, None, None).is_err());
        assert!(PolicyOverlay::new(None, Some(0.5), None, None).is_err());
        assert!(PolicyOverlay::new(None, None, Some(0), None).is_err());
    }
}
