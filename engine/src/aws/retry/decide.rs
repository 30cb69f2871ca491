//! The retry decision: after a preparation of an attempt that did not succeed, what the
//! call does next.
//!
//! Why a pure function? The retry owner's loop ([`crate::aws::retry`]) sleeps, sends
//! feedback to the key and emits telemetry; the rules that decide between "prepare again",
//! "retry after this delay" and "give up, and why" are separate from all of that,
//! so they can be read in one place and checked with a table of cases, without a clock,
//! an SDK or an admission runtime. Time comes in as the time left before the deadline,
//! randomness as the `unit` draw that [`RetrySettings::backoff`] takes.

use std::time::Duration;

use tollgate_actors::AdmissionError;
use tollgate_quota::Refusal;

use crate::aws::backoff::{RetrySettings, ServerDelay};
use crate::aws::error::CallErrorKind;
use crate::aws::taxonomy::ErrorClass;
use crate::aws::telemetry::RetryOutcome;

/// How a preparation of an attempt ended without success, as far as the decision needs
/// to know. (A success ends the call; there is nothing to decide.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The signed request waited too long for admission; it needs a fresh signature.
    NeedsRefresh,
    /// Granted after a long wait, the scope's breaker was found open: not sent.
    BreakerOpened,
    /// The call was cancelled before an answer came.
    Cancelled,
    /// The call's deadline passed before an answer came.
    DeadlinePassed,
    /// Final admission did not grant the attempt.
    Admission(AdmissionStop),
    /// The attempt failed with this class of error (dispatched or not).
    Failed(ErrorClass),
}

/// Why final admission did not grant an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AdmissionStop {
    /// The key's shared retry allowance is empty: the retry is not sent.
    AllowanceExhausted,
    /// The key's calendar allowance is spent until after the deadline.
    CalendarAllowance,
    /// The call was cancelled while waiting.
    Cancelled,
    /// The deadline passed while waiting.
    DeadlineExceeded,
    /// The scope's circuit breaker stays open past the deadline: nothing is sent.
    BreakerOpen,
    /// Anything else (storage, coordination, a refusal other than the allowance).
    Failed,
}

impl From<&AdmissionError> for AdmissionStop {
    fn from(e: &AdmissionError) -> Self {
        match e {
            AdmissionError::Refused {
                refusal: Refusal::RetryAllowanceExhausted,
                ..
            } => AdmissionStop::AllowanceExhausted,
            AdmissionError::Refused {
                refusal: Refusal::AllowanceExhausted { .. },
                ..
            } => AdmissionStop::CalendarAllowance,
            AdmissionError::Cancelled { .. } => AdmissionStop::Cancelled,
            AdmissionError::DeadlineExceeded { .. } => AdmissionStop::DeadlineExceeded,
            AdmissionError::BreakerOpen { .. } => AdmissionStop::BreakerOpen,
            _ => AdmissionStop::Failed,
        }
    }
}

/// Where the call stands when a preparation ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Standing {
    /// Attempts used so far, this one included if it counted (dispatched attempts plus
    /// transient failures before dispatch).
    pub attempts_used: u32,
    /// What the server's answer asked for (`Retry-After`, `x-amz-retry-after`).
    pub server: ServerDelay,
    /// Time left before the call's deadline (zero once it has passed).
    pub time_left: Duration,
}

/// What the call does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Prepare the same attempt again: no attempt counted, no retry spent.
    Reprepare,
    /// Pass the breaker again (it opened while the attempt queued; the attempt waits for
    /// the probe's answer there): no attempt counted, no retry spent.
    PassAgain,
    /// Retry after this backoff.
    RetryAfter(Duration),
    /// Give up: telemetry says `retry`, the call fails with `kind`.
    GiveUp {
        retry: RetryOutcome,
        kind: CallErrorKind,
    },
}

/// Decide what follows a preparation that ended as `ending`. `unit` draws from `[0, 1)`
/// for the backoff's jitter; it is called only when a retry is possible.
pub(crate) fn decide(
    ending: Ending,
    standing: Standing,
    settings: &RetrySettings,
    unit: impl FnOnce() -> f64,
) -> Decision {
    let give_up = |retry, kind| Decision::GiveUp { retry, kind };
    match ending {
        Ending::NeedsRefresh => Decision::Reprepare,
        Ending::BreakerOpened => Decision::PassAgain,
        Ending::Cancelled => give_up(RetryOutcome::Cancelled, CallErrorKind::Cancelled),
        Ending::DeadlinePassed => give_up(RetryOutcome::Deadline, CallErrorKind::DeadlineExceeded),
        Ending::Admission(stop) => {
            let (retry, kind) = admission_give_up(stop);
            give_up(retry, kind)
        }
        Ending::Failed(class) => {
            let kind = kind_of(class);
            if !class.is_retryable() {
                return give_up(RetryOutcome::NotRetryable, kind);
            }
            if standing.attempts_used >= settings.max_attempts.get() {
                return give_up(RetryOutcome::AttemptsExhausted, kind);
            }
            let delay = settings.backoff(standing.attempts_used, class, standing.server, unit);
            if delay >= standing.time_left {
                return give_up(RetryOutcome::Deadline, CallErrorKind::DeadlineExceeded);
            }
            Decision::RetryAfter(delay)
        }
    }
}

/// The telemetry verdict and call error kind of an admission that did not grant.
pub(crate) fn admission_give_up(stop: AdmissionStop) -> (RetryOutcome, CallErrorKind) {
    match stop {
        AdmissionStop::AllowanceExhausted => (
            RetryOutcome::AllowanceExhausted,
            CallErrorKind::RetryAllowanceExhausted,
        ),
        AdmissionStop::CalendarAllowance => (
            RetryOutcome::NotRetryable,
            CallErrorKind::AllowanceExhausted,
        ),
        AdmissionStop::Cancelled => (RetryOutcome::Cancelled, CallErrorKind::Cancelled),
        AdmissionStop::DeadlineExceeded => {
            (RetryOutcome::Deadline, CallErrorKind::DeadlineExceeded)
        }
        AdmissionStop::BreakerOpen => (RetryOutcome::BreakerOpen, CallErrorKind::BreakerOpen),
        AdmissionStop::Failed => (RetryOutcome::NotRetryable, CallErrorKind::Admission),
    }
}

fn kind_of(class: ErrorClass) -> CallErrorKind {
    match class {
        ErrorClass::Throttled => CallErrorKind::Throttled,
        ErrorClass::Transient => CallErrorKind::Transient,
        ErrorClass::Fatal => CallErrorKind::Fatal,
        ErrorClass::Credentials => CallErrorKind::Credentials,
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::aws::backoff::Jitter;
    use tollgate_actors::{StoreFailure, StoreFailureKind};

    const fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    const fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    fn settings(jitter: Jitter) -> RetrySettings {
        RetrySettings {
            max_attempts: NonZeroU32::new(6).expect("non-zero"),
            jitter,
            ..RetrySettings::default()
        }
    }

    fn standing(
        attempts_used: u32,
        retry_after: Option<Duration>,
        time_left: Duration,
    ) -> Standing {
        Standing {
            attempts_used,
            server: ServerDelay {
                retry_after,
                amz_retry_after: None,
            },
            time_left,
        }
    }

    fn give_up(retry: RetryOutcome, kind: CallErrorKind) -> Decision {
        Decision::GiveUp { retry, kind }
    }

    #[test]
    fn each_ending_leads_to_its_decision() {
        use CallErrorKind as K;
        use Decision::RetryAfter;
        use Ending::*;
        use ErrorClass::*;
        use RetryOutcome as R;
        let hour = secs(3_600);
        // (case, ending, standing, expected) with no jitter and default bases (1 s
        // throttle, 200 ms transient, 20 s cap), at most 6 attempts.
        let table: &[(&str, Ending, Standing, Decision)] = &[
            (
                "a stale signature is prepared again, whatever the count",
                NeedsRefresh,
                standing(6, None, Duration::ZERO),
                Decision::Reprepare,
            ),
            (
                "a breaker found open after the grant is passed again, whatever the count",
                BreakerOpened,
                standing(6, None, Duration::ZERO),
                Decision::PassAgain,
            ),
            (
                "cancellation gives up",
                Cancelled,
                standing(1, None, hour),
                give_up(R::Cancelled, K::Cancelled),
            ),
            (
                "a passed deadline gives up",
                DeadlinePassed,
                standing(1, None, hour),
                give_up(R::Deadline, K::DeadlineExceeded),
            ),
            (
                "first throttle waits the throttle base",
                Failed(Throttled),
                standing(1, None, hour),
                RetryAfter(secs(1)),
            ),
            (
                "third throttle waits four bases",
                Failed(Throttled),
                standing(3, None, hour),
                RetryAfter(secs(4)),
            ),
            (
                "backoff is capped",
                Failed(Throttled),
                standing(5, None, hour),
                RetryAfter(secs(16)),
            ),
            (
                "transient failures back off from the transient base",
                Failed(Transient),
                standing(2, None, hour),
                RetryAfter(ms(400)),
            ),
            (
                "the server's retry-after is a floor",
                Failed(Throttled),
                standing(1, Some(secs(7)), hour),
                RetryAfter(secs(7)),
            ),
            (
                "a shorter retry-after does not shorten the backoff",
                Failed(Throttled),
                standing(3, Some(secs(1)), hour),
                RetryAfter(secs(4)),
            ),
            (
                "fatal failures are not retried",
                Failed(Fatal),
                standing(1, None, hour),
                give_up(R::NotRetryable, K::Fatal),
            ),
            (
                "credentials failures are not retried",
                Failed(ErrorClass::Credentials),
                standing(1, None, hour),
                give_up(R::NotRetryable, K::Credentials),
            ),
            (
                "the sixth attempt is the last",
                Failed(Throttled),
                standing(6, None, hour),
                give_up(R::AttemptsExhausted, K::Throttled),
            ),
            (
                "attempts exhausted keeps the transient kind",
                Failed(Transient),
                standing(6, None, hour),
                give_up(R::AttemptsExhausted, K::Transient),
            ),
            (
                "a backoff reaching the deadline gives up",
                Failed(Throttled),
                standing(2, None, secs(2)),
                give_up(R::Deadline, K::DeadlineExceeded),
            ),
            (
                "a backoff ending just before the deadline retries",
                Failed(Throttled),
                standing(2, None, secs(2) + ms(1)),
                RetryAfter(secs(2)),
            ),
            (
                "a retry-after past the deadline gives up",
                Failed(Transient),
                standing(1, Some(secs(30)), secs(10)),
                give_up(R::Deadline, K::DeadlineExceeded),
            ),
            (
                "an empty retry allowance stops the call",
                Admission(AdmissionStop::AllowanceExhausted),
                standing(2, None, hour),
                give_up(R::AllowanceExhausted, K::RetryAllowanceExhausted),
            ),
            (
                "cancelled in admission",
                Admission(AdmissionStop::Cancelled),
                standing(1, None, hour),
                give_up(R::Cancelled, K::Cancelled),
            ),
            (
                "deadline in admission",
                Admission(AdmissionStop::DeadlineExceeded),
                standing(1, None, hour),
                give_up(R::Deadline, K::DeadlineExceeded),
            ),
            (
                "an open breaker past the deadline ends the call unsent, as breaker_open",
                Admission(AdmissionStop::BreakerOpen),
                standing(0, None, hour),
                give_up(R::BreakerOpen, K::BreakerOpen),
            ),
            (
                "other admission failures are not retried",
                Admission(AdmissionStop::Failed),
                standing(1, None, hour),
                give_up(R::NotRetryable, K::Admission),
            ),
        ];
        let s = settings(Jitter::None);
        for (case, ending, standing, expected) in table {
            let got = decide(*ending, *standing, &s, || panic!("no jitter draw"));
            assert_eq!(got, *expected, "{case}");
        }
    }

    #[test]
    fn full_jitter_scales_the_step_by_the_draw() {
        let s = settings(Jitter::Full);
        let got = decide(
            Ending::Failed(ErrorClass::Throttled),
            standing(2, None, secs(60)),
            &s,
            || 0.25,
        );
        assert_eq!(got, Decision::RetryAfter(ms(500)));
    }

    #[test]
    fn no_jitter_is_drawn_when_no_retry_is_possible() {
        let s = settings(Jitter::Full);
        let cases = [
            (
                Ending::Failed(ErrorClass::Fatal),
                standing(1, None, secs(60)),
            ),
            (
                Ending::Failed(ErrorClass::Throttled),
                standing(6, None, secs(60)),
            ),
            (
                Ending::Failed(ErrorClass::Credentials),
                standing(1, None, secs(60)),
            ),
        ];
        for (ending, standing) in cases {
            decide(ending, standing, &s, || panic!("drew for {ending:?}"));
        }
    }

    #[test]
    fn admission_errors_map_to_their_stop() {
        // Parsed, so the table reads the same whether the error carries the key as text
        // or typed.
        let key = || {
            "aws/123456789012/us-east-1/s3:ListBuckets"
                .parse()
                .expect("a canonical key")
        };
        let table = [
            (
                AdmissionError::Refused {
                    key: key(),
                    refusal: Refusal::RetryAllowanceExhausted,
                },
                AdmissionStop::AllowanceExhausted,
            ),
            (
                AdmissionError::Refused {
                    key: key(),
                    refusal: Refusal::AllowanceExhausted {
                        resets_at: tollgate_quota::WallClock::UNIX_EPOCH,
                    },
                },
                AdmissionStop::CalendarAllowance,
            ),
            (
                AdmissionError::Refused {
                    key: key(),
                    refusal: Refusal::UnknownReservation,
                },
                AdmissionStop::Failed,
            ),
            (
                AdmissionError::Cancelled { key: key() },
                AdmissionStop::Cancelled,
            ),
            (
                AdmissionError::DeadlineExceeded { key: key() },
                AdmissionStop::DeadlineExceeded,
            ),
            (
                AdmissionError::Storage(StoreFailure::new(StoreFailureKind::Write, "disk full")),
                AdmissionStop::Failed,
            ),
            (AdmissionError::Stopped, AdmissionStop::Failed),
            (
                AdmissionError::BreakerOpen {
                    scope: "aws/123456789012/us-east-1/s3".into(),
                    reopens_at: tollgate_quota::Timestamp::from_micros(1),
                },
                AdmissionStop::BreakerOpen,
            ),
        ];
        for (error, stop) in table {
            assert_eq!(AdmissionStop::from(&error), stop, "{error}");
        }
    }
}
