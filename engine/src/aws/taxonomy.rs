//! The error taxonomy: is a failed attempt throttled, transient, fatal, or a
//! credentials failure?
//!
//! The answer decides everything downstream: whether the retry owner tries again, which
//! backoff base it uses, and what feedback the key's admission state receives (a throttle
//! or transient failure deepens the key's penalty; a fatal answer says nothing about
//! capacity). Classification runs in a fixed order (DESIGN §6, seed 004):
//!
//! 1. **error code** first: a throttling code ([`THROTTLING_CODES`]: aws-smithy's
//!    standard-mode `THROTTLING_ERRORS` plus the seeds' `RateExceeded` and
//!    `ThrottlingError`) is throttling whatever the status, so a `SlowDown` on a 503 is
//!    throttling, not a transient 5xx. `LimitExceededException` is throttling only when
//!    its message speaks of a rate (`rate`, `throttl`, `per second`, `tps`, `too many
//!    requests`, `too many calls`); otherwise it is a resource-count quota ("You have
//!    reached the maximum number of keys", "too many buckets") that no retry fixes. A
//!    bare "too many" (seed 002's list) is deliberately not enough: it is exactly the
//!    resource-count wording the rule exists to keep fatal;
//! 2. then the **HTTP status**: 429 is throttling; 408, 500, 502, 503 and 504 are
//!    transient; any other status with an error is fatal. A 503 without a code is
//!    *transient*, not throttling as seed 001 has it: aws-smithy and seed 004 treat it so,
//!    the services that throttle with 503 say so with a code (S3's `SlowDown`), and a bare
//!    503 is most often a load balancer or an outage, where the transient base (200 ms, not
//!    1 s) and the breaker are the right tools. Both classes deepen the key's penalty the
//!    same way, and a 503's `Retry-After` pauses the key either way, so the choice only
//!    sets the backoff base and the report's wording (docs/architecture.md);
//! 3. then, with no response at all, the **kind of failure**: timeouts and I/O or dispatch
//!    failures are transient; failures to build the request are fatal;
//! 4. only when none of those says anything (no code, no error status, an answer that is
//!    not a timeout or a dispatch failure) does the **message text** count: "rate
//!    exceeded", "throttl" or "too many requests" make it throttling.
//!
//! A **credentials** failure is its own class: the SDK could not load credentials to sign
//! with (before anything was sent), or the service refused them as expired or unknown
//! ([`CREDENTIALS_CODES`], checked first). No retry fixes it and it says nothing about the
//! key's capacity; the report names it `credentials` rather than `transient`, so that
//! expired credentials mid-scan read as what they are. A credentials *provider* that could
//! not answer this time (it timed out, or the instance metadata service, the SSO portal or
//! STS behind an assumed role answered 5xx, throttled or dropped the connection) is
//! [`FailureKind::CredentialsProvider`]: transient, retried before dispatch within the
//! call's attempt limit without touching the key (see `crate::aws::credentials::provider`).

/// What a failed attempt means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The service asked us to slow down: retry after backoff, deepen the key's penalty.
    Throttled,
    /// A failure that a later attempt may not see (5xx, timeout, reset): retry after
    /// backoff; it also counts as pressure on the key.
    Transient,
    /// An answer no retry changes (access denied, validation, missing configuration).
    Fatal,
    /// The caller's credentials could not be loaded, or the service refused them as
    /// expired or unknown: not retried, says nothing about capacity.
    Credentials,
}

impl ErrorClass {
    /// Whether the retry owner may try again.
    pub fn is_retryable(self) -> bool {
        !matches!(self, ErrorClass::Fatal | ErrorClass::Credentials)
    }
}

/// Error codes that mean the request's credentials are expired, unknown or wrong (not a
/// permission: `AccessDenied` stays fatal), on any status.
pub const CREDENTIALS_CODES: &[&str] = &[
    "ExpiredToken",
    "ExpiredTokenException",
    "TokenRefreshRequired",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AuthFailure",
];

/// Error codes that always mean "slow down", on any status.
pub const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "RequestThrottled",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
    "RequestLimitExceededException",
    "ThrottlingError",
    // Seeds 001/002: the rest of the standard-mode names the SDKs of other languages use.
    "RateExceeded",
];

/// Error codes that mean a transient server-side failure, whatever the status says.
pub const TRANSIENT_CODES: &[&str] = &[
    "RequestTimeout",
    "RequestTimeoutException",
    "InternalError",
    "InternalFailure",
    "InternalServerError",
    "InternalServerException",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "IDPCommunicationError",
];

/// The code that is throttling only when its message speaks of rate.
pub const LIMIT_EXCEEDED: &str = "LimitExceededException";

/// Statuses that mean a transient failure when no code says otherwise.
pub const TRANSIENT_STATUSES: &[u16] = &[408, 500, 502, 503, 504];

/// HTTP 429 Too Many Requests.
pub const TOO_MANY_REQUESTS: u16 = 429;

/// What went wrong when there is no (parseable) HTTP answer to go by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The service answered with an error (code and status describe it).
    Response,
    /// The attempt or connection timed out.
    Timeout,
    /// Connecting, TLS or I/O failed, or the connector gave up for another reason.
    Dispatch,
    /// The request could not be built (serialization, endpoint, invalid input).
    Construction,
    /// Credentials to sign with could not be loaded (nothing was sent).
    Credentials,
    /// The credentials provider could not answer this time (it timed out, or its own
    /// service answered 5xx, throttled or dropped the connection): nothing was sent, and
    /// a later preparation may succeed.
    CredentialsProvider,
}

/// The facts one classification looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure<'a> {
    /// The service's error code (`ThrottlingException`, `AccessDenied`, ...).
    pub code: Option<&'a str>,
    /// The service's error message.
    pub message: Option<&'a str>,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// What kind of failure it was.
    pub kind: FailureKind,
}

/// Classify one failed attempt: code, then status, then kind.
pub fn classify(failure: &Failure<'_>) -> ErrorClass {
    if failure.kind == FailureKind::Credentials {
        return ErrorClass::Credentials;
    }
    if let Some(code) = failure.code {
        if CREDENTIALS_CODES.contains(&code) {
            return ErrorClass::Credentials;
        }
        if THROTTLING_CODES.contains(&code) {
            return ErrorClass::Throttled;
        }
        if code == LIMIT_EXCEEDED {
            return if speaks_of_rate(failure.message.unwrap_or_default()) {
                ErrorClass::Throttled
            } else {
                ErrorClass::Fatal
            };
        }
        if TRANSIENT_CODES.contains(&code) {
            return ErrorClass::Transient;
        }
    }
    if let Some(status) = failure.status {
        if status == TOO_MANY_REQUESTS {
            return ErrorClass::Throttled;
        }
        if TRANSIENT_STATUSES.contains(&status) {
            return ErrorClass::Transient;
        }
        if status >= 400 {
            return ErrorClass::Fatal;
        }
    }
    match failure.kind {
        FailureKind::Timeout | FailureKind::Dispatch | FailureKind::CredentialsProvider => {
            ErrorClass::Transient
        }
        // An error answer with neither a code nor an error status (e.g. an unparseable
        // 200) is not something a retry is known to fix, unless its text says "slow down":
        // the last resort, when nothing more specific spoke.
        FailureKind::Response if failure.code.is_none() => {
            if says_throttled(failure.message.unwrap_or_default()) {
                ErrorClass::Throttled
            } else {
                ErrorClass::Fatal
            }
        }
        FailureKind::Response | FailureKind::Construction => ErrorClass::Fatal,
        FailureKind::Credentials => ErrorClass::Credentials,
    }
}

/// Whether a `LimitExceededException` message is about request rate rather than a
/// resource count: "Rate exceeded", "request rate", "throttled", "5 per second", "TPS",
/// "too many requests", "too many calls" (and the older "slow down"). "rate" and "tps"
/// count as words only ("separate", "operate" and "https" are not rates).
fn speaks_of_rate(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let phrase = [
        "throttl",
        "per second",
        "too many requests",
        "too many calls",
        "slow down",
    ]
    .iter()
    .any(|needle| m.contains(needle));
    phrase || has_word(&m, "rate", true) || has_word(&m, "tps", false)
}

/// The message-text fallback (seed 002): "rate exceeded", "throttl", "too many requests".
fn says_throttled(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["rate exceeded", "throttl", "too many requests"]
        .iter()
        .any(|needle| m.contains(needle))
}

/// Whether `word` occurs in `text` (lowercase) at a word start; with `prefix`, a longer
/// word starting with it counts too ("rates", "ratelimit").
fn has_word(text: &str, word: &str, prefix: bool) -> bool {
    let is_letter = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !is_letter(before) && (prefix || !is_letter(after))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorClass::*;
    use FailureKind::*;

    fn case(
        code: Option<&str>,
        message: Option<&str>,
        status: Option<u16>,
        kind: FailureKind,
    ) -> ErrorClass {
        classify(&Failure {
            code,
            message,
            status,
            kind,
        })
    }

    /// code, message, status, kind → expected class.
    type Row<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Option<u16>,
        FailureKind,
        ErrorClass,
    );

    #[test]
    fn table() {
        #[rustfmt::skip]
        let table: &[Row<'_>] = &[
            // throttling codes, on 400, 429 and 5xx alike
            (Some("Throttling"), None, Some(400), Response, Throttled),
            (Some("ThrottlingException"), None, Some(400), Response, Throttled),
            (Some("ThrottledException"), None, Some(429), Response, Throttled),
            (Some("RequestLimitExceeded"), None, Some(503), Response, Throttled),
            (Some("TooManyRequestsException"), None, Some(429), Response, Throttled),
            (Some("ProvisionedThroughputExceededException"), None, Some(400), Response, Throttled),
            (Some("RequestThrottled"), None, Some(400), Response, Throttled),
            (Some("RequestThrottledException"), None, Some(400), Response, Throttled),
            (Some("SlowDown"), None, Some(503), Response, Throttled),
            (Some("PriorRequestNotComplete"), None, Some(400), Response, Throttled),
            (Some("BandwidthLimitExceeded"), None, Some(400), Response, Throttled),
            (Some("EC2ThrottledException"), None, Some(400), Response, Throttled),
            (Some("TransactionInProgressException"), None, Some(400), Response, Throttled),
            // a throttling code on a 5xx is throttling, not transient
            (Some("ThrottlingException"), None, Some(500), Response, Throttled),
            // LimitExceededException: rate → throttled, resource count → fatal
            (Some("LimitExceededException"), Some("Rate exceeded"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("Request RATE is too high"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("Too many requests"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("Maximum number of keys reached"), Some(400), Response, Fatal),
            (Some("LimitExceededException"), None, Some(400), Response, Fatal),
            // issue 24: the seeds' words for a rate, and resource counts that stay fatal
            (Some("LimitExceededException"), Some("Throttled: slow down"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("Exceeded 5 requests per second"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("API limit of 20 TPS exceeded"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("Too many calls to GetKeyLastUsage"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("rates of requests above the limit"), Some(400), Response, Throttled),
            (Some("LimitExceededException"), Some("You have reached the maximum number of keys"), Some(400), Response, Fatal),
            (Some("LimitExceededException"), Some("Too many buckets"), Some(400), Response, Fatal),
            (Some("LimitExceededException"), Some("Cannot create a separate alias"), Some(400), Response, Fatal),
            (Some("LimitExceededException"), Some("see https://docs for limits"), Some(400), Response, Fatal),
            // issue 24: RateExceeded (seeds 001/002) on 400, and the rest of aws-smithy's list
            (Some("RateExceeded"), Some("Rate exceeded"), Some(400), Response, Throttled),
            (Some("RateExceeded"), None, Some(503), Response, Throttled),
            (Some("RequestLimitExceededException"), None, Some(400), Response, Throttled),
            (Some("ThrottlingError"), None, Some(400), Response, Throttled),
            // message text only when nothing else speaks
            (None, Some("Rate exceeded"), None, Response, Throttled),
            (None, Some("request was throttled"), Some(200), Response, Throttled),
            (None, Some("Too Many Requests"), None, Response, Throttled),
            (None, Some("unparseable body"), None, Response, Fatal),
            (Some("AccessDenied"), Some("rate exceeded"), Some(403), Response, Fatal),
            (Some("SomethingNew"), Some("rate exceeded"), None, Response, Fatal),
            (None, Some("rate exceeded"), Some(404), Response, Fatal),
            (None, Some("rate exceeded"), None, Construction, Fatal),
            (None, Some("throttled"), Some(500), Response, Transient),
            // a 503 without a code is transient (seed 001 says throttling; see the docs)
            (None, Some("Service Unavailable"), Some(503), Response, Transient),
            // transient codes, and status when the code is unknown
            (Some("InternalError"), None, Some(500), Response, Transient),
            (Some("RequestTimeout"), None, Some(400), Response, Transient),
            (Some("ServiceUnavailable"), None, Some(503), Response, Transient),
            (Some("SomethingNew"), None, Some(502), Response, Transient),
            (None, None, Some(500), Response, Transient),
            (None, None, Some(502), Response, Transient),
            (None, None, Some(503), Response, Transient),
            (None, None, Some(504), Response, Transient),
            (None, None, Some(408), Response, Transient),
            (None, None, Some(429), Response, Throttled),
            (Some("SomethingNew"), None, Some(429), Response, Throttled),
            // fatal answers
            (Some("AccessDenied"), None, Some(403), Response, Fatal),
            (Some("AccessDeniedException"), None, Some(400), Response, Fatal),
            (Some("NoSuchLifecycleConfiguration"), None, Some(404), Response, Fatal),
            (Some("ValidationException"), None, Some(400), Response, Fatal),
            (Some("InvalidParameterValue"), None, Some(400), Response, Fatal),
            (None, None, Some(404), Response, Fatal),
            (None, None, Some(501), Response, Fatal),
            // no response: by kind
            (None, None, None, Timeout, Transient),
            (None, None, None, Dispatch, Transient),
            (None, None, None, Construction, Fatal),
            (None, None, None, Response, Fatal),
            (None, None, Some(200), Response, Fatal),
            // credentials: not loaded before dispatch, or refused as expired or unknown
            (None, None, None, FailureKind::Credentials, ErrorClass::Credentials),
            (Some("ExpiredToken"), None, Some(400), Response, ErrorClass::Credentials),
            (Some("ExpiredTokenException"), None, Some(400), Response, ErrorClass::Credentials),
            (Some("InvalidClientTokenId"), None, Some(403), Response, ErrorClass::Credentials),
            (Some("UnrecognizedClientException"), None, Some(400), Response, ErrorClass::Credentials),
            (Some("InvalidAccessKeyId"), None, Some(403), Response, ErrorClass::Credentials),
            (Some("AccessDenied"), Some("expired"), Some(403), Response, Fatal),
            // a provider that could not answer this time is transient (issue 24)
            (None, None, None, CredentialsProvider, Transient),
        ];
        for (i, (code, message, status, kind, want)) in table.iter().enumerate() {
            assert_eq!(
                case(*code, *message, *status, *kind),
                *want,
                "row {i}: {code:?} {message:?} {status:?} {kind:?}"
            );
        }
    }

    #[test]
    fn only_fatal_and_credentials_are_not_retryable() {
        assert!(Throttled.is_retryable());
        assert!(Transient.is_retryable());
        assert!(!Fatal.is_retryable());
        assert!(!ErrorClass::Credentials.is_retryable());
    }
}
