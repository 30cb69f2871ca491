//! What the end of a preparation tells the key and the scope's circuit breaker.
//!
//! Why a pure function? Feedback is what keeps the shared state honest: a throttle or
//! transient failure that went out deepens the key's penalty and counts toward the
//! breaker, a success refunds a retry unit and closes a half-open breaker, a retry unit
//! granted to a request that never went out comes back, and an answer that asked for
//! `Retry-After` pauses the key for every process. Which of these a preparation sends
//! depends only on how it ended, whether it reached the service, and what the service
//! answered, so it is decided here, with a table of cases, and the loop only sends it.

use std::time::Duration;

use tollgate_quota::Outcome;

use crate::aws::backoff::ServerDelay;
use crate::aws::taxonomy::ErrorClass;

use super::decide::Ending;
use super::events::feedback_of;
use super::failure::AttemptEnd;
use super::tally::Sent;

/// How a preparation ended, for [`reports`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrepEnd {
    /// The service answered with success: the call is done.
    Success,
    /// Anything else, as the decision sees it.
    Unsuccessful(Ending),
}

impl PrepEnd {
    /// The end of a preparation that answered `answer`.
    pub fn of<T>(answer: &Result<T, AttemptEnd>) -> Self {
        match answer {
            Ok(_) => PrepEnd::Success,
            Err(end) => PrepEnd::Unsuccessful(end.ending()),
        }
    }
}

/// What the preparation's admission grant (if it had one) is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyReport {
    /// Nothing: the answer says nothing about the key's capacity.
    Nothing,
    /// Feed this outcome back to the key (penalty, retry refund).
    Feedback(Outcome),
    /// The retry unit spent on a request that never went out comes back.
    RefundRetry,
}

/// Everything a preparation's end reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reports {
    /// To the key, through the preparation's grant.
    pub key: KeyReport,
    /// To the scope's breaker, with the attempt's probe lease if it holds one (`None`:
    /// no report now; an unanswered lease is given up when the attempt ends).
    pub breaker: Option<Outcome>,
    /// Pause the whole key this long, for every process.
    pub pause: Option<Duration>,
}

impl Reports {
    const NOTHING: Reports = Reports {
        key: KeyReport::Nothing,
        breaker: None,
        pause: None,
    };
}

/// What a preparation that ended as `end`, `sent` or not, with the answer's `status` and
/// `server` delay, reports. Only the service's own answers count: a failure before
/// dispatch or an aborted request tells the breaker and the penalty nothing.
pub(crate) fn reports(
    end: PrepEnd,
    sent: Sent,
    status: Option<u16>,
    server: ServerDelay,
) -> Reports {
    match (end, sent) {
        (PrepEnd::Success, _) => Reports {
            key: KeyReport::Feedback(Outcome::Success),
            breaker: Some(Outcome::Success),
            pause: None,
        },
        (PrepEnd::Unsuccessful(Ending::Failed(class)), Sent::Dispatched) => {
            let outcome = feedback_of(class).0;
            let pausing = class == ErrorClass::Throttled || status == Some(503);
            Reports {
                key: KeyReport::Feedback(outcome),
                breaker: Some(outcome),
                pause: server.key_pause().filter(|_| pausing),
            }
        }
        (
            PrepEnd::Unsuccessful(
                Ending::Cancelled | Ending::DeadlinePassed | Ending::BreakerOpened,
            ),
            Sent::Unsent,
        ) => Reports {
            key: KeyReport::RefundRetry,
            ..Reports::NOTHING
        },
        _ => Reports::NOTHING,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::retry::decide::AdmissionStop;

    const fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn asked(retry_after: Option<Duration>) -> ServerDelay {
        ServerDelay {
            retry_after,
            amz_retry_after: None,
        }
    }

    fn said(outcome: Outcome, pause: Option<Duration>) -> Reports {
        Reports {
            key: KeyReport::Feedback(outcome),
            breaker: Some(outcome),
            pause,
        }
    }

    #[test]
    fn each_preparation_end_reports_what_the_service_said() {
        use ErrorClass::*;
        use PrepEnd::*;
        use Sent::*;
        let nothing = Reports::NOTHING;
        let refund = Reports {
            key: KeyReport::RefundRetry,
            ..nothing
        };
        let none = asked(None);
        let hint = asked(Some(secs(7)));
        type Row = (
            &'static str,
            PrepEnd,
            Sent,
            Option<u16>,
            ServerDelay,
            Reports,
        );
        // (case, end, sent, status, server delay, expected)
        let table: &[Row] = &[
            (
                "a success refunds and closes",
                Success,
                Dispatched,
                Some(200),
                none,
                said(Outcome::Success, None),
            ),
            (
                "a success never pauses, whatever it asked",
                Success,
                Dispatched,
                Some(200),
                hint,
                said(Outcome::Success, None),
            ),
            (
                "a dispatched throttle deepens the penalty and counts for the breaker",
                Unsuccessful(Ending::Failed(Throttled)),
                Dispatched,
                Some(400),
                none,
                said(Outcome::Throttled, None),
            ),
            (
                "a throttle with retry-after pauses the key",
                Unsuccessful(Ending::Failed(Throttled)),
                Dispatched,
                Some(400),
                hint,
                said(Outcome::Throttled, Some(secs(7))),
            ),
            (
                "a 503 with retry-after pauses the key",
                Unsuccessful(Ending::Failed(Transient)),
                Dispatched,
                Some(503),
                hint,
                said(Outcome::Transient, Some(secs(7))),
            ),
            (
                "another transient failure's retry-after does not pause the key",
                Unsuccessful(Ending::Failed(Transient)),
                Dispatched,
                Some(500),
                hint,
                said(Outcome::Transient, None),
            ),
            (
                "a zero retry-after asks for no pause",
                Unsuccessful(Ending::Failed(Throttled)),
                Dispatched,
                Some(400),
                asked(Some(Duration::ZERO)),
                said(Outcome::Throttled, None),
            ),
            (
                "a fatal answer says nothing about capacity but is the breaker's answer",
                Unsuccessful(Ending::Failed(Fatal)),
                Dispatched,
                Some(403),
                none,
                said(Outcome::Fatal, None),
            ),
            (
                "a credentials failure that went out reports as fatal",
                Unsuccessful(Ending::Failed(Credentials)),
                Dispatched,
                Some(403),
                none,
                said(Outcome::Fatal, None),
            ),
            (
                "a failure before dispatch reports nothing",
                Unsuccessful(Ending::Failed(Transient)),
                Unsent,
                None,
                none,
                nothing,
            ),
            (
                "cancelled before dispatch refunds the retry unit",
                Unsuccessful(Ending::Cancelled),
                Unsent,
                None,
                none,
                refund,
            ),
            (
                "a deadline before dispatch refunds the retry unit",
                Unsuccessful(Ending::DeadlinePassed),
                Unsent,
                None,
                none,
                refund,
            ),
            (
                "a grant held at a breaker that stayed open refunds the retry unit",
                Unsuccessful(Ending::BreakerOpened),
                Unsent,
                None,
                none,
                refund,
            ),
            (
                "a request aborted in flight reports nothing",
                Unsuccessful(Ending::Cancelled),
                Dispatched,
                None,
                none,
                nothing,
            ),
            (
                "a deadline in flight reports nothing",
                Unsuccessful(Ending::DeadlinePassed),
                Dispatched,
                None,
                none,
                nothing,
            ),
            (
                "a stale signature reports nothing",
                Unsuccessful(Ending::NeedsRefresh),
                Unsent,
                None,
                none,
                nothing,
            ),
            (
                "a refused admission reports nothing",
                Unsuccessful(Ending::Admission(AdmissionStop::AllowanceExhausted)),
                Unsent,
                None,
                none,
                nothing,
            ),
        ];
        for (case, end, sent, status, server, expected) in table {
            assert_eq!(reports(*end, *sent, *status, *server), *expected, "{case}");
        }
    }
}
