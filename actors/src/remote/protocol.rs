//! The messages on the coordinator socket: the in-process API, as data.
//!
//! A client opens with [`RequestBody::Hello`]; the coordinator answers
//! [`ResponseBody::Welcome`] or refuses. After that, every request carries an id chosen by
//! the client and every response quotes it, so many requests (a reservation waiting for a
//! slot, several admissions, a status query) are in flight on one connection at once and
//! complete in any order. Deadlines travel as durations and reservations as ids: the
//! coordinator reads its own clock, so clients need not agree with it on time. Keys travel
//! as their canonical text: the server parses each request's key once into a
//! [`CanonicalKey`](crate::CanonicalKey) and passes the typed key on (a key that does not
//! parse is answered with an error, and the connection stays up).

use serde::{Deserialize, Serialize};
use tollgate_quota::{Outcome, Passage, Policy, ProbeId, Refusal, ReservationId, Timestamp};

use crate::messages::{BreakerStatus, KeyStatus};
use crate::AdmissionError;

/// A request and the id its response will quote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Chosen by the client, unique per connection.
    pub id: u64,
    /// What is asked.
    pub body: RequestBody,
}

/// What a client can ask.
///
/// Externally tagged (`{"admit": {...}}`): serde decodes that form in one pass, where an
/// internally tagged `{"op": "admit", ...}` (protocol version 1) is first buffered whole
/// to find its tag. In a `perf` profile of `tollgate bench admission --processes 4
/// --serve` at version 1, that buffering (serde's `Content*` functions) was about 9% of
/// the coordinator thread's samples.
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
    /// Take a concurrency slot.
    Reserve {
        /// Canonical key.
        key: String,
        /// The caller's policy for the key.
        policy: Policy,
        /// Give up after waiting this long.
        timeout_ms: u64,
        /// Cancellation scope (scan id); 0 for none.
        scope: u64,
    },
    /// Final admission for one attempt.
    Admit {
        /// Canonical key.
        key: String,
        /// The caller's policy for the key.
        policy: Policy,
        /// The held slot.
        reservation: ReservationId,
        /// Tokens to charge.
        cost: u32,
        /// A retry spends a unit of the retry allowance.
        retry: bool,
        /// Give up after waiting this long.
        timeout_ms: u64,
        /// Cancellation scope (scan id); 0 for none.
        scope: u64,
    },
    /// An attempt's outcome.
    Feedback {
        /// Canonical key.
        key: String,
        /// The caller's policy for the key.
        policy: Policy,
        /// What happened.
        outcome: Outcome,
        /// From the attempt's grant.
        admitted_at: Timestamp,
        /// Refund the retry unit of an attempt that never dispatched.
        refund_retry: bool,
    },
    /// A server's Retry-After hint: pause the key for every process (protocol 3).
    Pause {
        /// Canonical key.
        key: String,
        /// The caller's policy for the key.
        policy: Policy,
        /// How long the server asked for, in milliseconds (capped by the coordinator).
        hint_ms: u64,
    },
    /// Passage through the breaker of the key's scope, waiting at most `timeout_ms`
    /// (protocol 3).
    BreakerPass {
        /// Canonical key (the coordinator derives its scope).
        key: String,
        /// Give up waiting after this long.
        timeout_ms: u64,
    },
    /// What the service of the key's scope answered a call sent through its breaker
    /// (protocol 3).
    BreakerReport {
        /// Canonical key.
        key: String,
        /// The answer; `None` when the call was never sent.
        outcome: Option<Outcome>,
        /// The probe lease the call went under, if it was the probe.
        probe: Option<ProbeId>,
    },
    /// Give a slot back.
    Release {
        /// Canonical key.
        key: String,
        /// The caller's policy for the key.
        policy: Policy,
        /// The slot.
        reservation: ReservationId,
    },
    /// Cancel every queued waiter of a scope, across all processes.
    Cancel {
        /// The scope (scan id).
        scope: u64,
    },
    /// Who coordinates, who is connected, every key's state.
    Status,
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
    /// A slot was taken.
    Reserved {
        /// The slot.
        reservation: ReservationId,
    },
    /// An attempt may start.
    Admitted {
        /// When (coordinator clock); feedback quotes it.
        admitted_at: Timestamp,
        /// Whether a retry unit was spent.
        retry_spent: bool,
    },
    /// Feedback or release applied.
    Done,
    /// The answer to `BreakerPass`: go, or go as the probe.
    Passage(Passage),
    /// Waiters removed by a cancel.
    Cancelled {
        /// How many.
        removed: usize,
    },
    /// The coordinator's state.
    Status(CoordinationStatus),
    /// The answer to `Ping`.
    Pong,
    /// The request failed.
    Error(WireError),
}

/// Who coordinates, who is connected, and every key's state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CoordinationStatus {
    /// The coordinator's pid.
    pub coordinator_pid: u32,
    /// Processes connected to the coordinator's socket.
    pub clients: Vec<ClientInfo>,
    /// Every key's state.
    pub keys: Vec<KeyStatus>,
    /// Every circuit breaker the coordinator knows (closed ones nobody waits for are
    /// forgotten).
    #[serde(default)]
    pub breakers: Vec<BreakerStatus>,
}

/// One connected client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Its pid.
    pub pid: u32,
    /// Its generation.
    pub generation: u64,
    /// Requests it has in flight.
    pub in_flight: usize,
}

/// An [`AdmissionError`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireError {
    /// See [`AdmissionError::Refused`].
    Refused {
        /// Canonical key.
        key: String,
        /// Why.
        refusal: Refusal,
    },
    /// See [`AdmissionError::DeadlineExceeded`].
    DeadlineExceeded {
        /// Canonical key.
        key: String,
    },
    /// See [`AdmissionError::Cancelled`].
    Cancelled {
        /// Canonical key.
        key: String,
    },
    /// See [`AdmissionError::Storage`].
    Storage {
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
        key: String,
        /// The table and its error.
        reason: String,
    },
    /// The request was refused as a whole (bad hello, wrong user, bad key).
    Rejected {
        /// Why.
        reason: String,
    },
}

impl From<AdmissionError> for WireError {
    fn from(e: AdmissionError) -> Self {
        match e {
            AdmissionError::Refused { key, refusal } => WireError::Refused { key, refusal },
            AdmissionError::DeadlineExceeded { key } => WireError::DeadlineExceeded { key },
            AdmissionError::Cancelled { key } => WireError::Cancelled { key },
            AdmissionError::Storage(reason) => WireError::Storage { reason },
            AdmissionError::Stopped => WireError::Stopped,
            AdmissionError::BreakerOpen { scope, reopens_at } => {
                WireError::BreakerOpen { scope, reopens_at }
            }
            AdmissionError::Coordination(reason) => WireError::Rejected { reason },
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
            WireError::Storage { reason } => AdmissionError::Storage(reason),
            WireError::Stopped => AdmissionError::Stopped,
            WireError::BreakerOpen { scope, reopens_at } => {
                AdmissionError::BreakerOpen { scope, reopens_at }
            }
            WireError::Rejected { reason } => AdmissionError::Coordination(reason),
            WireError::Fleet { key, reason } => AdmissionError::Fleet { key, reason },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_externally_tagged_json() {
        let req = Request {
            id: 3,
            body: RequestBody::Release {
                key: "aws/1/r/s:o".into(),
                policy: Policy::with_rate(4.0, 2.0).unwrap(),
                reservation: ReservationId(9),
            },
        };
        let json = serde_json::to_string(&req).unwrap();
        assert!(
            json.starts_with(r#"{"id":3,"body":{"release":{"key":"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), req);
        let status = serde_json::to_string(&Request {
            id: 4,
            body: RequestBody::Status,
        })
        .unwrap();
        assert_eq!(status, r#"{"id":4,"body":"status"}"#);
        let admitted = Response {
            id: 5,
            body: ResponseBody::Admitted {
                admitted_at: Timestamp::from_micros(7),
                retry_spent: false,
            },
        };
        let json = serde_json::to_string(&admitted).unwrap();
        assert!(
            json.starts_with(r#"{"id":5,"body":{"admitted":{"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Response>(&json).unwrap(), admitted);
    }
}
