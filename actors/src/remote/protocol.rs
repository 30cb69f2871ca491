//! The frames' documents on the coordinator socket: the admission operation set
//! ([`Operation`], [`Answer`]) wrapped with what only a connection needs.
//!
//! A client opens with [`RequestBody::Hello`]; the coordinator answers
//! [`ResponseBody::Welcome`] or refuses. After that, every request carries an id chosen by
//! the client and every response quotes it, so many requests (a reservation waiting for a
//! slot, several admissions, a status query) are in flight on one connection at once and
//! complete in any order. The operations themselves are `crate::ops`: their typed values
//! are the wire format (keys parsed once on arrival, see `keys`).

use serde::{Deserialize, Serialize};
use tollgate_quota::{Refusal, Timestamp};

use crate::error::{CoordinationErrorKind, StoreFailure, StoreFailureKind};
use crate::key::CanonicalKey;
use crate::ops::{Answer, Operation};
use crate::AdmissionError;

/// A request and the id its response will quote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Chosen by the client, unique per connection.
    pub id: u64,
    /// What is asked.
    pub body: RequestBody,
}

/// What a client can say: the connection's own messages, or an admission operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestBody {
    /// The first frame: who is asking. The coordinator checks `pid` and `uid` against the
    /// socket's peer credentials.
    Hello {
        /// The client's pid.
        pid: u32,
        /// The client's generation (its start instant): tells two lives of a pid apart.
        generation: u64,
        /// The client's uid.
        uid: u32,
        /// The protocol version the client speaks.
        version: u8,
    },
    /// An admission operation, served as the in-process backend serves it.
    Op(Operation),
    /// Are you there? Sent by a client whose requests have waited a while in silence; a
    /// coordinator that does not answer within `UNRESPONSIVE_AFTER` is given up on.
    Ping,
}

/// A response to the request with the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id.
    pub id: u64,
    /// The answer.
    pub body: ResponseBody,
}

/// What the coordinator answers (externally tagged, as [`RequestBody`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseBody {
    /// The connection is accepted.
    Welcome {
        /// The coordinator's pid.
        coordinator_pid: u32,
        /// The coordinator lock's generation.
        generation: u64,
    },
    /// The answer to an operation that succeeded.
    Answer(Answer),
    /// The answer to `Ping`.
    Pong,
    /// The request failed.
    Error(WireError),
}

/// An [`AdmissionError`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireError {
    /// See [`AdmissionError::Refused`].
    Refused {
        /// Canonical key.
        key: CanonicalKey,
        /// Why.
        refusal: Refusal,
    },
    /// See [`AdmissionError::DeadlineExceeded`].
    DeadlineExceeded {
        /// Canonical key.
        key: CanonicalKey,
    },
    /// See [`AdmissionError::Cancelled`].
    Cancelled {
        /// Canonical key.
        key: CanonicalKey,
    },
    /// See [`AdmissionError::Storage`].
    Storage {
        /// What kind of storage failure.
        #[serde(rename = "what")]
        kind: StoreFailureKind,
        /// The key whose record failed, if one did.
        #[serde(default)]
        key: Option<CanonicalKey>,
        /// Why dispatch stopped.
        reason: String,
    },
    /// The coordinator is stopping; ask its successor.
    Stopped,
    /// See [`AdmissionError::BreakerOpen`].
    BreakerOpen {
        /// The breaker's scope.
        scope: String,
        /// When it may let a call through again.
        reopens_at: Timestamp,
    },
    /// See [`AdmissionError::Fleet`].
    Fleet {
        /// Canonical key.
        key: CanonicalKey,
        /// The table and its error.
        reason: String,
    },
    /// The request was refused as a whole (bad hello, wrong user, bad key).
    Rejected {
        /// Why.
        reason: String,
    },
    /// See [`AdmissionError::Coordination`] (other than a refusal).
    Coordination {
        /// What failed.
        #[serde(rename = "what")]
        kind: CoordinationErrorKind,
        /// Why, and what to do next.
        reason: String,
    },
}

impl From<AdmissionError> for WireError {
    fn from(e: AdmissionError) -> Self {
        match e {
            AdmissionError::Refused { key, refusal } => WireError::Refused { key, refusal },
            AdmissionError::DeadlineExceeded { key } => WireError::DeadlineExceeded { key },
            AdmissionError::Cancelled { key } => WireError::Cancelled { key },
            AdmissionError::Storage(failure) => WireError::Storage {
                kind: failure.kind(),
                key: failure.key().cloned(),
                reason: failure.message().to_owned(),
            },
            AdmissionError::Stopped => WireError::Stopped,
            AdmissionError::BreakerOpen { scope, reopens_at } => {
                WireError::BreakerOpen { scope, reopens_at }
            }
            AdmissionError::Coordination {
                kind: CoordinationErrorKind::Refused,
                reason,
            } => WireError::Rejected { reason },
            AdmissionError::Coordination { kind, reason } => {
                WireError::Coordination { kind, reason }
            }
            AdmissionError::Fleet { key, reason } => WireError::Fleet { key, reason },
        }
    }
}

impl From<WireError> for AdmissionError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Refused { key, refusal } => AdmissionError::Refused { key, refusal },
            WireError::DeadlineExceeded { key } => AdmissionError::DeadlineExceeded { key },
            WireError::Cancelled { key } => AdmissionError::Cancelled { key },
            WireError::Storage { kind, key, reason } => AdmissionError::Storage(match key {
                Some(key) => StoreFailure::keyed(kind, key, reason),
                None => StoreFailure::new(kind, reason),
            }),
            WireError::Stopped => AdmissionError::Stopped,
            WireError::BreakerOpen { scope, reopens_at } => {
                AdmissionError::BreakerOpen { scope, reopens_at }
            }
            WireError::Rejected { reason } => {
                AdmissionError::coordination(CoordinationErrorKind::Refused, reason)
            }
            WireError::Coordination { kind, reason } => AdmissionError::coordination(kind, reason),
            WireError::Fleet { key, reason } => AdmissionError::Fleet { key, reason },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::ReservationId;

    fn key() -> CanonicalKey {
        CanonicalKey::parse("aws/123456789012/us-east-1/logs:DescribeLogStreams").unwrap()
    }

    #[test]
    fn requests_and_responses_round_trip_as_externally_tagged_json() {
        let req = Request {
            id: 3,
            body: RequestBody::Op(Operation::Cancel { scope: 9 }),
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(json, r#"{"id":3,"body":{"op":{"cancel":{"scope":9}}}}"#);
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), req);
        let ping = serde_json::to_string(&Request {
            id: 4,
            body: RequestBody::Ping,
        })
        .unwrap();
        assert_eq!(ping, r#"{"id":4,"body":"ping"}"#);
        let reserved = Response {
            id: 5,
            body: ResponseBody::Answer(Answer::Reserved(ReservationId(2))),
        };
        let json = serde_json::to_string(&reserved).unwrap();
        assert_eq!(json, r#"{"id":5,"body":{"answer":{"reserved":2}}}"#);
        assert_eq!(serde_json::from_str::<Response>(&json).unwrap(), reserved);
    }

    #[test]
    fn every_admission_error_crosses_the_wire_as_itself() {
        let errors = vec![
            AdmissionError::Refused {
                key: key(),
                refusal: Refusal::UnknownReservation,
            },
            AdmissionError::DeadlineExceeded { key: key() },
            AdmissionError::Cancelled { key: key() },
            AdmissionError::Storage(StoreFailure::new(StoreFailureKind::Write, "disk full")),
            AdmissionError::Storage(
                StoreFailure::new(StoreFailureKind::Closed, "closed").of_key(key()),
            ),
            AdmissionError::coordination(CoordinationErrorKind::Refused, "wrong uid"),
            AdmissionError::coordination(CoordinationErrorKind::OutOfProtocol, "odd answer"),
            AdmissionError::BreakerOpen {
                scope: "aws/123456789012/us-east-1/logs".into(),
                reopens_at: Timestamp::from_micros(3),
            },
            AdmissionError::Fleet {
                key: key(),
                reason: "table t: throttled".into(),
            },
            AdmissionError::Stopped,
        ];
        for error in errors {
            let json = serde_json::to_string(&WireError::from(error.clone())).unwrap();
            let back = AdmissionError::from(serde_json::from_str::<WireError>(&json).unwrap());
            assert_eq!(back, error, "{json}");
        }
    }
}
