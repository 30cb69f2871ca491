//! Retry settings and backoff maths: how many physical attempts, how long between them.
//!
//! Backoff is exponential with **full jitter**: the delay before retry `n` (1-based) is
//! uniform in `[0, min(cap, base · 2^(n-1))]`. The base depends on the failure:
//! [`THROTTLE_BASE`] (1 s) after a throttle, because the service asked for time;
//! [`TRANSIENT_BASE`] (200 ms) after a transient failure, which usually clears quickly.
//! Both are capped at [`BACKOFF_CAP`] (20 s), as in the SDKs' standard mode (seed 004).
//!
//! The backoff only spreads one call's retries. The key's shared cooldown and penalty
//! (DESIGN §3) still apply on top, at admission, to every caller on the key; so a small
//! jittered delay here never makes the fleet retry faster than admission allows.
//!
//! A server's `Retry-After` (seconds) or `x-amz-retry-after` (milliseconds) is a floor:
//! the delay is never shorter, and it is not jittered below it (the service is expected
//! to have jittered it). HTTP-date forms of `Retry-After` are ignored: reading them would
//! need a wall clock, and AWS services send seconds.

use std::num::NonZeroU32;
use std::time::Duration;

use aws_smithy_runtime_api::http::Headers;

use crate::aws::taxonomy::ErrorClass;

/// Default maximum physical attempts per call (1 + 5 retries), as seed 000.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 6;
/// Backoff base after a throttle.
pub const THROTTLE_BASE: Duration = Duration::from_secs(1);
/// Backoff base after a transient failure.
pub const TRANSIENT_BASE: Duration = Duration::from_millis(200);
/// Longest computed backoff (a server's `Retry-After` may ask for more).
pub const BACKOFF_CAP: Duration = Duration::from_secs(20);

/// How the exponential delay is randomized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Jitter {
    /// Uniform in `[0, step]` (full jitter).
    #[default]
    Full,
    /// Always the full step: deterministic, for tests and simulations.
    None,
}

/// The retry owner's settings, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySettings {
    /// Physical attempts per call, first included.
    pub max_attempts: NonZeroU32,
    /// Backoff base after a throttle.
    pub throttle_base: Duration,
    /// Backoff base after a transient failure.
    pub transient_base: Duration,
    /// Cap of the computed backoff.
    pub cap: Duration,
    /// Randomization.
    pub jitter: Jitter,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            max_attempts: NonZeroU32::new(DEFAULT_MAX_ATTEMPTS).expect("non-zero"),
            throttle_base: THROTTLE_BASE,
            transient_base: TRANSIENT_BASE,
            cap: BACKOFF_CAP,
            jitter: Jitter::Full,
        }
    }
}

impl RetrySettings {
    /// The delay before retry number `retry` (1-based) after a failure of `class`, never
    /// shorter than the server's `retry_after`. `unit` draws from `[0, 1)`.
    pub fn backoff(
        &self,
        retry: u32,
        class: ErrorClass,
        retry_after: Option<Duration>,
        unit: impl FnOnce() -> f64,
    ) -> Duration {
        let base = match class {
            ErrorClass::Throttled => self.throttle_base,
            ErrorClass::Transient | ErrorClass::Fatal | ErrorClass::Credentials => {
                self.transient_base
            }
        };
        let doublings = retry.saturating_sub(1).min(30);
        let step = base.saturating_mul(1u32 << doublings).min(self.cap);
        let delay = match self.jitter {
            Jitter::Full => step.mul_f64(unit().clamp(0.0, 1.0)),
            Jitter::None => step,
        };
        delay.max(retry_after.unwrap_or_default())
    }
}

/// A uniform draw in `[0, 1)` for full jitter.
pub fn random_unit() -> f64 {
    fastrand::f64()
}

/// The server's requested delay: `x-amz-retry-after` (milliseconds) or `Retry-After`
/// (seconds, possibly fractional); the larger when both are present.
pub fn retry_after(headers: &Headers) -> Option<Duration> {
    let amz = headers
        .get("x-amz-retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis);
    let standard = headers
        .get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)));
    amz.max(standard)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(jitter: Jitter) -> RetrySettings {
        RetrySettings {
            jitter,
            ..RetrySettings::default()
        }
    }

    #[test]
    fn exponential_steps_by_class_capped() {
        let s = settings(Jitter::None);
        let t = |n| s.backoff(n, ErrorClass::Throttled, None, || 0.0);
        assert_eq!(
            [t(1), t(2), t(3), t(5), t(6), t(40)],
            [1, 2, 4, 16, 20, 20].map(Duration::from_secs)
        );
        let tr = |n| s.backoff(n, ErrorClass::Transient, None, || 0.0);
        assert_eq!(
            [tr(1), tr(2), tr(3)],
            [200, 400, 800].map(Duration::from_millis)
        );
    }

    #[test]
    fn full_jitter_scales_the_step_and_retry_after_is_a_floor() {
        let s = settings(Jitter::Full);
        assert_eq!(
            s.backoff(2, ErrorClass::Throttled, None, || 0.25),
            Duration::from_millis(500)
        );
        assert_eq!(
            s.backoff(2, ErrorClass::Throttled, None, || 0.0),
            Duration::ZERO
        );
        assert_eq!(
            s.backoff(
                1,
                ErrorClass::Throttled,
                Some(Duration::from_secs(7)),
                || 0.9
            ),
            Duration::from_secs(7)
        );
        assert_eq!(
            s.backoff(
                6,
                ErrorClass::Throttled,
                Some(Duration::from_secs(7)),
                || 1.0
            ),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut h = Headers::new();
        assert_eq!(retry_after(&h), None);
        h.insert("Retry-After", "7");
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("x-amz-retry-after", "9500");
        assert_eq!(retry_after(&h), Some(Duration::from_millis(9_500)));
        let mut h = Headers::new();
        h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT");
        assert_eq!(retry_after(&h), None, "HTTP dates are ignored");
        h.insert("retry-after", "1.5");
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1_500)));
    }
}
