//! Where one call stands between the retry loop's steps: which attempt and preparation
//! this is, how many attempts reached the service, how many failed before dispatch.
//!
//! Why a tally of its own? The loop in [`crate::aws::retry`] is a small state machine
//! ([`Next`]): pass the breaker, prepare, back off. What it does after each step is a
//! [`Decision`] from [`super::decide`]; what a decision does to the counts is applied
//! here, purely, so the counting rules have a table of their own: a failure before
//! dispatch counts against `max_attempts` but is not a new attempt (and spends no
//! retry), a fresh signature counts nothing, and only a later attempt after one that
//! went out is a retry for the key's shared allowance.

use std::time::Duration;

use crate::aws::error::CallErrorKind;
use crate::aws::gated::AttemptRecord;
use crate::aws::telemetry::RetryOutcome;

use super::decide::Decision;

/// The retry loop's states: what it does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// A new attempt begins: ask the scope's circuit breaker for passage.
    PassBreaker,
    /// Prepare (sign and send) the current attempt.
    Prepare,
    /// Sleep this backoff (raced with cancellation), then begin the next attempt.
    Backoff(Duration),
}

/// Whether a preparation's request reached the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The request went out: the service may have seen it.
    Dispatched,
    /// Nothing reached the service.
    Unsent,
}

impl Sent {
    /// Whether the connector recorded the request going out.
    pub fn of(record: &AttemptRecord) -> Self {
        match record.dispatched_at {
            Some(_) => Sent::Dispatched,
            None => Sent::Unsent,
        }
    }
}

/// One call's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    /// The attempt being prepared, from 1 (telemetry's `attempt`).
    pub attempt: u32,
    /// Preparations of this attempt so far (telemetry's `preparationCount`).
    pub preparation: u32,
    /// Attempts whose request reached the transport (the call error's `attempts`).
    pub dispatched: u32,
    /// Failures before dispatch that were retried: they use up attempts too.
    pub unsent_retries: u32,
}

impl Tally {
    /// A call before its first preparation.
    pub const FIRST: Tally = Tally {
        attempt: 1,
        preparation: 0,
        dispatched: 0,
        unsent_retries: 0,
    };

    /// A preparation of the current attempt begins.
    pub fn prepare(&mut self) {
        self.preparation += 1;
    }

    /// Whether the preparation about to go out is a retry for the key's shared
    /// allowance: a later attempt, after at least one that reached the service.
    pub fn is_retry(&self) -> bool {
        self.attempt > 1 && self.dispatched > 0
    }

    /// A preparation ended without success, `sent` or not.
    pub fn ended(&mut self, sent: Sent) {
        if sent == Sent::Dispatched {
            self.dispatched += 1;
        }
    }

    /// Attempts used so far, the one that just ended included if it counted: what
    /// [`super::decide::Standing::attempts_used`] compares with `max_attempts`.
    pub fn attempts_used(&self) -> u32 {
        self.dispatched + self.unsent_retries
    }

    /// Apply `decision`, taken after a preparation that ended `sent` or not: a retry
    /// starts the next attempt (a dispatched one) or counts a failure before dispatch,
    /// with no preparation yet; a fresh signature or giving up counts nothing.
    pub fn follow(&mut self, decision: &Decision, sent: Sent) {
        if let Decision::RetryAfter(_) = decision {
            match sent {
                Sent::Dispatched => self.attempt += 1,
                Sent::Unsent => self.unsent_retries += 1,
            }
            self.preparation = 0;
        }
    }
}

impl Decision {
    /// What the loop does after this decision: a fresh signature prepares the same
    /// attempt again, a retry backs off first; `Err(kind)`: the call fails as `kind`.
    pub(crate) fn next(&self) -> Result<Next, CallErrorKind> {
        match self {
            Decision::Reprepare => Ok(Next::Prepare),
            Decision::PassAgain => Ok(Next::PassBreaker),
            Decision::RetryAfter(delay) => Ok(Next::Backoff(*delay)),
            Decision::GiveUp { kind, .. } => Err(*kind),
        }
    }

    /// The telemetry verdict of the preparation this decision follows.
    pub(crate) fn retry_outcome(&self) -> RetryOutcome {
        match self {
            Decision::Reprepare | Decision::PassAgain => RetryOutcome::Reprepare,
            Decision::RetryAfter(_) => RetryOutcome::Retry,
            Decision::GiveUp { retry, .. } => *retry,
        }
    }

    /// Whether the attempt keeps its breaker probe lease: only while the same attempt is
    /// prepared again. Any other decision gives an unanswered lease up, so the scope's
    /// next caller probes at once.
    pub(crate) fn keeps_probe(&self) -> bool {
        matches!(self, Decision::Reprepare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(attempt: u32, preparation: u32, dispatched: u32, unsent_retries: u32) -> Tally {
        Tally {
            attempt,
            preparation,
            dispatched,
            unsent_retries,
        }
    }

    #[test]
    fn each_decision_moves_the_tally_and_the_loop_to_their_next_state() {
        use Sent::*;
        let retry = Decision::RetryAfter(Duration::from_secs(1));
        let give_up = Decision::GiveUp {
            retry: RetryOutcome::AttemptsExhausted,
            kind: CallErrorKind::Throttled,
        };
        type Row = (
            &'static str,
            Tally,
            Decision,
            Sent,
            Tally,
            Result<Next, CallErrorKind>,
            RetryOutcome,
            bool,
        );
        // (case, tally after the preparation ended, decision, sent, tally after, next,
        // verdict, keeps the probe)
        let table: &[Row] = &[
            (
                "a dispatched failure retried starts the next attempt, unprepared",
                tally(1, 1, 1, 0),
                retry,
                Dispatched,
                tally(2, 0, 1, 0),
                Ok(Next::Backoff(Duration::from_secs(1))),
                RetryOutcome::Retry,
                false,
            ),
            (
                "a failure before dispatch retried keeps the attempt number but uses an attempt",
                tally(1, 1, 0, 0),
                retry,
                Unsent,
                tally(1, 0, 0, 1),
                Ok(Next::Backoff(Duration::from_secs(1))),
                RetryOutcome::Retry,
                false,
            ),
            (
                "a fresh signature counts nothing and keeps the probe",
                tally(2, 1, 1, 0),
                Decision::Reprepare,
                Unsent,
                tally(2, 1, 1, 0),
                Ok(Next::Prepare),
                RetryOutcome::Reprepare,
                true,
            ),
            (
                "giving up counts nothing and ends the call",
                tally(6, 1, 6, 0),
                give_up,
                Dispatched,
                tally(6, 1, 6, 0),
                Err(CallErrorKind::Throttled),
                RetryOutcome::AttemptsExhausted,
                false,
            ),
        ];
        for (case, before, decision, sent, after, next, verdict, keeps_probe) in table {
            let mut t = *before;
            t.follow(decision, *sent);
            assert_eq!(t, *after, "{case}");
            assert_eq!(decision.next(), *next, "{case}");
            assert_eq!(decision.retry_outcome(), *verdict, "{case}");
            assert_eq!(decision.keeps_probe(), *keeps_probe, "{case}");
        }
    }

    #[test]
    fn only_a_later_attempt_after_a_dispatched_one_spends_a_retry() {
        // (case, tally, is a retry)
        let table = [
            ("the first attempt", tally(1, 1, 0, 0), false),
            ("the first attempt prepared again", tally(1, 2, 0, 0), false),
            (
                "a second attempt after a dispatched failure",
                tally(2, 1, 1, 0),
                true,
            ),
            (
                "the first attempt again after a failure before dispatch",
                tally(1, 1, 0, 1),
                false,
            ),
        ];
        for (case, t, retry) in table {
            assert_eq!(t.is_retry(), retry, "{case}");
        }
    }

    #[test]
    fn attempts_used_counts_dispatched_attempts_and_failures_before_dispatch() {
        let mut t = Tally::FIRST;
        t.prepare();
        t.ended(Sent::Unsent);
        assert_eq!(
            t.attempts_used(),
            0,
            "an unsent failure counts once retried"
        );
        t.follow(&Decision::RetryAfter(Duration::ZERO), Sent::Unsent);
        t.prepare();
        t.ended(Sent::Dispatched);
        assert_eq!(t, tally(1, 1, 1, 1));
        assert_eq!(t.attempts_used(), 2);
    }
}
