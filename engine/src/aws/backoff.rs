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
//! What the server asked for ([`ServerDelay`]) governs this call's own retry by header:
//! - `Retry-After` (seconds) is a floor: the delay is never shorter (seed 002);
//! - `x-amz-retry-after` (milliseconds) is used as sent, clamped between the computed
//!   backoff and the computed backoff plus [`AMZ_RETRY_AFTER_SLACK`] (5 s), with no jitter
//!   added: the service is expected to have jittered it (seed 004's SDK rule).
//!
//! Either hint on a throttle or a 503 also pauses the whole key for every process
//! (`ReservationGuard::pause`, capped at 300 s by the key); docs/architecture.md says
//! which rule wins where the seeds differ.
//!
//! `Retry-After` may also be an HTTP date (RFC 9110: IMF-fixdate, and the obsolete
//! RFC 850 and asctime forms). It is read relative to the answer's own `Date` header
//! when that parses (so a client whose clock is off still waits what the server meant),
//! else relative to the admission clock's instant, which is injected (Unix time in
//! production); a date in the past asks for nothing. Both forms are capped at
//! [`MAX_PAUSE`] (300 s, seed 001), the longest the key itself would pause.

use std::num::NonZeroU32;
use std::time::{Duration, UNIX_EPOCH};

use aws_smithy_runtime_api::http::Headers;
use tollgate_quota::{Timestamp, MAX_PAUSE};

use crate::aws::taxonomy::ErrorClass;

/// Default maximum physical attempts per call (1 + 5 retries), as seed 000.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 6;
/// Backoff base after a throttle.
pub const THROTTLE_BASE: Duration = Duration::from_secs(1);
/// Backoff base after a transient failure.
pub const TRANSIENT_BASE: Duration = Duration::from_millis(200);
/// Longest computed backoff (a server's `Retry-After` may ask for more).
pub const BACKOFF_CAP: Duration = Duration::from_secs(20);
/// How far past the computed backoff an `x-amz-retry-after` may push a retry (seed 004:
/// "a maximum of the computed backoff delay plus 5,000 ms").
pub const AMZ_RETRY_AFTER_SLACK: Duration = Duration::from_secs(5);

/// The delays a server's answer asked for, by header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerDelay {
    /// `Retry-After` (seconds, or an HTTP date read as the time until it): a floor for
    /// this call's retry.
    pub retry_after: Option<Duration>,
    /// `x-amz-retry-after`, in milliseconds: this call's retry, clamped to
    /// `[computed, computed + 5 s]`.
    pub amz_retry_after: Option<Duration>,
}

impl ServerDelay {
    /// How long the key should pause, if the answer asked at all: the longer hint (a
    /// zero hint asks for nothing).
    pub fn key_pause(&self) -> Option<Duration> {
        self.retry_after
            .max(self.amz_retry_after)
            .filter(|d| !d.is_zero())
    }
}

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
    /// The delay before retry number `retry` (1-based) after a failure of `class`: the
    /// jittered exponential step, replaced by the server's `x-amz-retry-after` clamped to
    /// `[step, step + 5 s]` (no jitter added), and never shorter than its `Retry-After`.
    /// `unit` draws from `[0, 1)`.
    pub fn backoff(
        &self,
        retry: u32,
        class: ErrorClass,
        server: ServerDelay,
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
        let delay = match server.amz_retry_after {
            Some(amz) => amz.clamp(delay, delay.saturating_add(AMZ_RETRY_AFTER_SLACK)),
            None => delay,
        };
        delay.max(server.retry_after.unwrap_or_default())
    }
}

/// A uniform draw in `[0, 1)` for full jitter.
pub fn random_unit() -> f64 {
    fastrand::f64()
}

/// The server's requested delays: `x-amz-retry-after` (milliseconds) and `Retry-After`
/// (seconds, possibly fractional, or an HTTP date), each capped at [`MAX_PAUSE`]. `now`
/// is the admission clock's instant, the reference for a date when the answer has no
/// usable `Date` header.
pub fn retry_after(headers: &Headers, now: Timestamp) -> ServerDelay {
    let amz = headers
        .get("x-amz-retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms).min(MAX_PAUSE));
    let standard = headers
        .get("retry-after")
        .and_then(|v| retry_after_value(v, headers.get("date"), now));
    ServerDelay {
        retry_after: standard,
        amz_retry_after: amz,
    }
}

/// One `Retry-After` value: seconds (`120`, `1.5`) or an HTTP date, read against the
/// answer's `date` header if it parses, else against `now`. `None` when the value is
/// neither, or a date that is not after the reference (nothing to wait for).
pub fn retry_after_value(value: &str, date: Option<&str>, now: Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(MAX_PAUSE.as_secs_f64())));
    }
    let until = http_date(value)?;
    let reference = date
        .and_then(http_date)
        .unwrap_or_else(|| Duration::from_micros(now.as_micros()));
    let wait = until.checked_sub(reference)?;
    (!wait.is_zero()).then(|| wait.min(MAX_PAUSE))
}

/// An HTTP date (any of RFC 9110's three forms) as time since the Unix epoch.
fn http_date(text: &str) -> Option<Duration> {
    httpdate::parse_http_date(text.trim())
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(secs: u64) -> ServerDelay {
        ServerDelay {
            retry_after: Some(Duration::from_secs(secs)),
            amz_retry_after: None,
        }
    }

    fn amz(ms: u64) -> ServerDelay {
        ServerDelay {
            retry_after: None,
            amz_retry_after: Some(Duration::from_millis(ms)),
        }
    }

    #[test]
    fn an_amz_retry_after_is_used_as_sent_between_the_backoff_and_five_seconds_more() {
        let s = settings(Jitter::None);
        let ms = Duration::from_millis;
        // Third throttle: the computed step is 4 s.
        let table = [
            ("inside the band: used as sent", amz(6_500), ms(6_500)),
            ("below the backoff: raised to it", amz(100), ms(4_000)),
            ("far above: cut to backoff + 5 s", amz(60_000), ms(9_000)),
        ];
        for (case, server, want) in table {
            assert_eq!(
                s.backoff(3, ErrorClass::Throttled, server, || 0.0),
                want,
                "{case}"
            );
        }
        // No jitter is added to it: with full jitter the band starts at the drawn step.
        let jittered = settings(Jitter::Full);
        assert_eq!(
            jittered.backoff(3, ErrorClass::Throttled, amz(3_000), || 0.5),
            ms(3_000)
        );
        assert_eq!(
            jittered.backoff(3, ErrorClass::Throttled, amz(30_000), || 0.5),
            ms(7_000)
        );
        // A Retry-After beside it stays a floor.
        let both = ServerDelay {
            retry_after: Some(Duration::from_secs(12)),
            amz_retry_after: Some(ms(100)),
        };
        assert_eq!(
            s.backoff(1, ErrorClass::Throttled, both, || 0.0),
            ms(12_000)
        );
        assert_eq!(both.key_pause(), Some(ms(12_000)));
    }

    fn settings(jitter: Jitter) -> RetrySettings {
        RetrySettings {
            jitter,
            ..RetrySettings::default()
        }
    }

    #[test]
    fn exponential_steps_by_class_capped() {
        let s = settings(Jitter::None);
        let t = |n| s.backoff(n, ErrorClass::Throttled, ServerDelay::default(), || 0.0);
        assert_eq!(
            [t(1), t(2), t(3), t(5), t(6), t(40)],
            [1, 2, 4, 16, 20, 20].map(Duration::from_secs)
        );
        let tr = |n| s.backoff(n, ErrorClass::Transient, ServerDelay::default(), || 0.0);
        assert_eq!(
            [tr(1), tr(2), tr(3)],
            [200, 400, 800].map(Duration::from_millis)
        );
    }

    #[test]
    fn full_jitter_scales_the_step_and_retry_after_is_a_floor() {
        let s = settings(Jitter::Full);
        assert_eq!(
            s.backoff(2, ErrorClass::Throttled, ServerDelay::default(), || 0.25),
            Duration::from_millis(500)
        );
        assert_eq!(
            s.backoff(2, ErrorClass::Throttled, ServerDelay::default(), || 0.0),
            Duration::ZERO
        );
        assert_eq!(
            s.backoff(1, ErrorClass::Throttled, floor(7), || 0.9),
            Duration::from_secs(7)
        );
        assert_eq!(
            s.backoff(6, ErrorClass::Throttled, floor(7), || 1.0),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut h = Headers::new();
        assert_eq!(retry_after(&h, NOW), ServerDelay::default());
        assert_eq!(retry_after(&h, NOW).key_pause(), None);
        h.insert("Retry-After", "7");
        assert_eq!(retry_after(&h, NOW), floor(7));
        h.insert("x-amz-retry-after", "9500");
        assert_eq!(
            retry_after(&h, NOW).amz_retry_after,
            Some(Duration::from_millis(9_500))
        );
        assert_eq!(
            retry_after(&h, NOW).key_pause(),
            Some(Duration::from_millis(9_500))
        );
        let mut h = Headers::new();
        h.insert("retry-after", "1.5");
        assert_eq!(
            retry_after(&h, NOW).retry_after,
            Some(Duration::from_millis(1_500))
        );
        // Both header forms are capped at the key's longest pause.
        h.insert("retry-after", "86400");
        h.insert("x-amz-retry-after", "86400000");
        assert_eq!(retry_after(&h, NOW).retry_after, Some(MAX_PAUSE));
        assert_eq!(retry_after(&h, NOW).amz_retry_after, Some(MAX_PAUSE));
        for junk in [
            "-3",
            "NaN",
            "inf",
            "soon",
            "Wed, 32 Oct 2026 07:28:00 GMT",
            "",
        ] {
            h.insert("retry-after", junk);
            assert_eq!(retry_after(&h, NOW).retry_after, None, "{junk:?}");
        }
    }

    /// 2026-10-21T07:28:00Z, the instant the tests' dates are read against.
    const NOW: Timestamp = Timestamp::from_micros(1_792_567_680 * 1_000_000);

    fn date_wait(value: &str, date: Option<&str>, now: Timestamp) -> Option<Duration> {
        retry_after_value(value, date, now)
    }

    #[test]
    fn an_http_date_is_read_against_the_answer_date_else_the_clock() {
        let secs = Duration::from_secs;
        let later = "Wed, 21 Oct 2026 07:28:42 GMT";
        // No Date header: against the injected clock.
        assert_eq!(date_wait(later, None, NOW), Some(secs(42)));
        // A Date header wins over the clock (ours may be off; the server meant 12 s).
        let date = Some("Wed, 21 Oct 2026 07:28:30 GMT");
        assert_eq!(date_wait(later, date, NOW), Some(secs(12)));
        assert_eq!(
            date_wait(later, date, Timestamp::from_micros(0)),
            Some(secs(12))
        );
        // An unreadable Date header falls back to the clock.
        assert_eq!(date_wait(later, Some("yesterday"), NOW), Some(secs(42)));
        // The obsolete forms (RFC 850, asctime) read the same.
        assert_eq!(
            date_wait("Wednesday, 21-Oct-26 07:28:42 GMT", None, NOW),
            Some(secs(42))
        );
        assert_eq!(
            date_wait("Wed Oct 21 07:28:42 2026", None, NOW),
            Some(secs(42))
        );
        // Capped at 300 s like the seconds form.
        assert_eq!(
            date_wait("Thu, 22 Oct 2026 07:28:00 GMT", None, NOW),
            Some(MAX_PAUSE)
        );
        // A date in the past, or the reference instant itself, asks for no pause.
        for past in [
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "Wed, 21 Oct 2026 07:28:00 GMT",
        ] {
            assert_eq!(date_wait(past, None, NOW), None, "{past}");
        }
        assert_eq!(
            date_wait(later, Some("Wed, 21 Oct 2026 07:29:00 GMT"), NOW),
            None
        );
    }

    #[test]
    fn a_retry_after_date_pauses_the_key_and_floors_the_retry() {
        let mut h = Headers::new();
        h.insert("Retry-After", "Wed, 21 Oct 2026 07:28:09 GMT");
        h.insert("Date", "Wed, 21 Oct 2026 07:28:00 GMT");
        let server = retry_after(&h, NOW);
        assert_eq!(server.key_pause(), Some(Duration::from_secs(9)));
        let s = settings(Jitter::None);
        assert_eq!(
            s.backoff(1, ErrorClass::Throttled, server, || 0.0),
            Duration::from_secs(9)
        );
        // In the past: no pause, the computed backoff alone.
        h.insert("Retry-After", "Tue, 20 Oct 2026 07:28:09 GMT");
        let server = retry_after(&h, NOW);
        assert_eq!(server.key_pause(), None);
        assert_eq!(
            s.backoff(1, ErrorClass::Throttled, server, || 0.0),
            Duration::from_secs(1)
        );
    }
}
