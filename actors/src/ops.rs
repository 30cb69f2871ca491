//! The admission operation set: every request an [`AdmissionHandle`](crate::AdmissionHandle)
//! makes of the quota actors, as one [`Operation`] enum answered by one [`Answer`] enum.
//!
//! Why one enum for both the wire and the dispatch: each operation used to be written six
//! times (an actor message, the in-process backend, the socket client, the request and
//! response bodies, the server's `answer` and the handle), and adding two operations
//! touched seven files. Now an operation is a variant here; the in-process backend
//! (`local`) serves it, the socket client sends it as it is (`remote::client`), the server
//! only decodes it, hands it to the in-process backend and encodes the answer
//! (`remote::server`), and the handle builds it (`handle`). Adding one touches three
//! files: this one (the variant, its answer, its round-trip case), `local.rs` (what it
//! does) and `handle.rs` (the public method that asks it). See docs/architecture.md.
//!
//! The values are typed as the callers hold them: keys are [`CanonicalKey`]s (on the wire
//! their canonical text, parsed once on arrival, see `remote::keys`), waits are
//! [`Duration`]s (milliseconds on the wire; the coordinator reads its own clock, so
//! clients need not agree with it on time), a cancellation scope is an `Option`.
//!
//! The encoding is serde's externally tagged form (`{"reserve": {...}}`): serde decodes it
//! in one pass, where an internally tagged `{"op": "admit", ...}` (protocol version 1) is
//! first buffered whole to find its tag. In a `perf` profile of `tollgate bench admission
//! --processes 4 --serve` at version 1, that buffering was about 9% of the coordinator
//! thread's samples.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tollgate_quota::{Grant, Outcome, Passage, Policy, ProbeId, ReservationId, Timestamp};

use crate::key::CanonicalKey;
use crate::messages::{BreakerStatus, KeyStatus};
use crate::AdmissionError;

/// What a caller asks of admission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Take a concurrency slot, waiting in FIFO order.
    Reserve {
        /// The key.
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// Give up after waiting this long.
        #[serde(rename = "timeout_ms", with = "millis")]
        timeout: Duration,
        /// Cancellation scope (scan id).
        scope: Option<u64>,
    },
    /// [`Reserve`](Self::Reserve), then pass the key's scope's breaker within what is
    /// left of the timeout, in one round trip: what every call does first. A refused
    /// passage gives the slot back before it answers.
    ReservePass {
        /// The key.
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// Give up after waiting this long, for the slot and the passage together.
        #[serde(rename = "timeout_ms", with = "millis")]
        timeout: Duration,
        /// Cancellation scope (scan id).
        scope: Option<u64>,
        /// Then try the first attempt's admission at this cost, without waiting: granted
        /// only if the key admits it at once, otherwise the attempt asks at dispatch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        try_admit: Option<u32>,
    },
    /// Final admission for one attempt under a held slot.
    Admit {
        /// The key.
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// The held slot.
        reservation: ReservationId,
        /// Tokens to charge.
        cost: u32,
        /// A retry spends a unit of the retry allowance.
        retry: bool,
        /// Give up after waiting this long.
        #[serde(rename = "timeout_ms", with = "millis")]
        timeout: Duration,
        /// Cancellation scope (scan id).
        scope: Option<u64>,
    },
    /// Final admission for one attempt that must also charge other keys, atomically: a
    /// GetMetricData attempt's request token and its datapoints (seed 000: "Final
    /// admission atomically charges request capacity and CloudWatch datapoints"), or a
    /// Cloud Control call's own token and one of each underlying operation its handler
    /// performs. Answered like `Admit`, with the grant of `key`; see `local::paired`.
    AdmitWithBudget {
        /// The key (its slot is held).
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// The held slot.
        reservation: ReservationId,
        /// Tokens to charge on `key`.
        cost: u32,
        /// A retry spends a unit of `key`'s retry allowance.
        retry: bool,
        /// Give up after waiting this long.
        #[serde(rename = "timeout_ms", with = "millis")]
        timeout: Duration,
        /// Cancellation scope (scan id).
        scope: Option<u64>,
        /// The other keys and what each is charged (at least one).
        budgets: Vec<BudgetCharge>,
    },
    /// An admitted attempt's outcome.
    Feedback {
        /// The key.
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// What happened.
        outcome: Outcome,
        /// From the attempt's grant.
        admitted_at: Timestamp,
        /// Refund the retry unit of an attempt that never dispatched.
        refund_retry: bool,
    },
    /// A server's Retry-After hint: pause the key for every process.
    Pause {
        /// The key.
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// How long the server asked for (capped by the coordinator).
        #[serde(rename = "hint_ms", with = "millis")]
        hint: Duration,
    },
    /// Passage through the breaker of the key's scope, waiting at most `timeout`.
    BreakerPass {
        /// The key (its scope is the breaker's).
        key: CanonicalKey,
        /// Give up waiting after this long.
        #[serde(rename = "timeout_ms", with = "millis")]
        timeout: Duration,
    },
    /// What the service of the key's scope answered a call sent through its breaker.
    BreakerReport {
        /// The key.
        key: CanonicalKey,
        /// The answer; `None` when the call was never sent.
        outcome: Option<Outcome>,
        /// The probe lease the call went under, if it was the probe.
        probe: Option<ProbeId>,
    },
    /// Give a slot back, after the call's last reports when it carries them.
    ///
    /// A call ends by telling its key the last attempt's outcome, its scope's breaker
    /// the answer, and giving the slot back: three messages the coordinator would decode,
    /// serve and acknowledge one by one. Carried here they are one frame and one answer,
    /// done in the order they were separate messages in: feedback, breaker, release.
    Release {
        /// The key.
        key: CanonicalKey,
        /// The caller's policy for the key.
        policy: Policy,
        /// The slot.
        reservation: ReservationId,
        /// The last attempt's feedback to the key, done before the release.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<LastFeedback>,
        /// The last attempt's report to the key's breaker, done before the release.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        breaker: Option<LastBreakerReport>,
    },
    /// Cancel every queued waiter of a scope, across all processes.
    Cancel {
        /// The scope (scan id).
        scope: u64,
    },
    /// Who coordinates, who is connected, every key's state.
    Status,
}

impl Operation {
    /// Whether serving it may wait (for a slot, a grant or a breaker): the coordinator
    /// caps how many of these one connection has in flight, while the others complete at
    /// once and must get through (releases above all).
    pub fn may_wait(&self) -> bool {
        matches!(
            self,
            Operation::Reserve { .. }
                | Operation::ReservePass { .. }
                | Operation::Admit { .. }
                | Operation::AdmitWithBudget { .. }
                | Operation::BreakerPass { .. }
        )
    }

    /// The key it names, if it names one.
    pub fn key(&self) -> Option<&CanonicalKey> {
        match self {
            Operation::Reserve { key, .. }
            | Operation::ReservePass { key, .. }
            | Operation::Admit { key, .. }
            | Operation::AdmitWithBudget { key, .. }
            | Operation::Feedback { key, .. }
            | Operation::Pause { key, .. }
            | Operation::BreakerPass { key, .. }
            | Operation::BreakerReport { key, .. }
            | Operation::Release { key, .. } => Some(key),
            Operation::Cancel { .. } | Operation::Status => None,
        }
    }
}

/// The feedback an [`Operation::Release`] carries: what [`Operation::Feedback`] says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LastFeedback {
    /// What happened.
    pub outcome: Outcome,
    /// The grant the attempt was admitted by.
    pub admitted_at: Timestamp,
    /// Return the retry unit the grant spent.
    #[serde(default)]
    pub refund_retry: bool,
}

/// The breaker report an [`Operation::Release`] carries: what
/// [`Operation::BreakerReport`] says, for the release's key.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LastBreakerReport {
    /// The service's answer (`None`: the call was never sent).
    pub outcome: Option<Outcome>,
    /// The probe lease, if the call was the probe.
    pub probe: Option<ProbeId>,
}

/// One of the other keys of an [`Operation::AdmitWithBudget`]: a budget charged beside
/// the attempt's own key (the account/region datapoint budget of a GetMetricData
/// attempt, an underlying operation of a Cloud Control call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetCharge {
    /// The budget's key.
    pub key: CanonicalKey,
    /// The caller's policy for it.
    pub policy: Policy,
    /// What the attempt charges it (datapoints).
    pub cost: u32,
}

/// What an [`Operation`] is answered when it succeeds (a failure is an
/// [`AdmissionError`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// `Reserve`: the slot taken.
    Reserved(ReservationId),
    /// `ReservePass`: the slot taken and the breaker passed.
    ReservedPassed {
        /// The slot.
        reservation: ReservationId,
        /// The breaker's passage (`Go` or `Probe`).
        passage: Passage,
        /// The first attempt's grant (no retry unit spent), when `try_admit` was asked
        /// and the key admitted it at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        admitted_at: Option<Timestamp>,
    },
    /// `Admit`: the attempt may start.
    Admitted {
        /// When (coordinator clock); feedback quotes it.
        admitted_at: Timestamp,
        /// Whether a retry unit was spent.
        retry_spent: bool,
    },
    /// `Feedback`, `Pause`, `BreakerReport`, `Release`: applied.
    Done,
    /// `BreakerPass`: go, or go as the probe (never [`Passage::Wait`]).
    Passage(Passage),
    /// `Cancel`: how many waiters were removed.
    Cancelled(usize),
    /// `Status`: the coordinator's state.
    Status(CoordinationStatus),
}

impl Answer {
    /// The error for an answer that does not fit the operation asked.
    pub(crate) fn unexpected(self) -> AdmissionError {
        AdmissionError::coordination(
            crate::error::CoordinationErrorKind::OutOfProtocol,
            format!(
                "the admission coordinator answered out of protocol ({self:?}); run one \
                 tollgate version per admission directory"
            ),
        )
    }
}

impl From<Grant> for Answer {
    fn from(g: Grant) -> Self {
        Answer::Admitted {
            admitted_at: g.admitted_at,
            retry_spent: g.retry_spent,
        }
    }
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

/// Durations as whole milliseconds (saturating) on the wire.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::{BreakerState, ProbeLease, QuotaState};

    fn key() -> CanonicalKey {
        CanonicalKey::parse("aws/123456789012/us-east-1/logs:DescribeLogStreams").unwrap()
    }

    /// One of each operation: a new variant that is not added here fails the
    /// exhaustiveness check in `every_operation_round_trips_through_the_wire`.
    fn every_operation() -> Vec<Operation> {
        let policy = Policy::with_rate(4.0, 2.0).unwrap();
        let second = Duration::from_millis(1500);
        vec![
            Operation::Reserve {
                key: key(),
                policy,
                timeout: second,
                scope: Some(7),
            },
            Operation::Reserve {
                key: key(),
                policy,
                timeout: Duration::ZERO,
                scope: None,
            },
            Operation::ReservePass {
                key: key(),
                policy,
                timeout: second,
                scope: Some(8),
                try_admit: Some(1),
            },
            Operation::Admit {
                key: key(),
                policy,
                reservation: ReservationId(3),
                cost: 2,
                retry: true,
                timeout: second,
                scope: Some(0),
            },
            Operation::AdmitWithBudget {
                key: key(),
                policy,
                reservation: ReservationId(3),
                cost: 1,
                retry: false,
                timeout: second,
                scope: Some(2),
                budgets: vec![
                    BudgetCharge {
                        key: CanonicalKey::parse(
                            "aws/123456789012/us-east-1/cloudwatch:GetMetricData:recent-datapoints",
                        )
                        .unwrap(),
                        policy: Policy::with_rate(180_000.0, 180_000.0).unwrap(),
                        cost: 7_000,
                    },
                    BudgetCharge {
                        key: CanonicalKey::parse("aws/123456789012/-/iam:ListRoles").unwrap(),
                        policy: Policy::with_rate(2.0, 2.0).unwrap(),
                        cost: 1,
                    },
                ],
            },
            Operation::Feedback {
                key: key(),
                policy,
                outcome: Outcome::Throttled,
                admitted_at: Timestamp::from_micros(11),
                refund_retry: true,
            },
            Operation::Pause {
                key: key(),
                policy,
                hint: Duration::from_secs(3),
            },
            Operation::BreakerPass {
                key: key(),
                timeout: second,
            },
            Operation::BreakerReport {
                key: key(),
                outcome: Some(Outcome::Success),
                probe: Some(ProbeId(5)),
            },
            Operation::BreakerReport {
                key: key(),
                outcome: None,
                probe: None,
            },
            Operation::Release {
                key: key(),
                policy,
                reservation: ReservationId(9),
                feedback: None,
                breaker: None,
            },
            Operation::Release {
                key: key(),
                policy,
                reservation: ReservationId(10),
                feedback: Some(LastFeedback {
                    outcome: Outcome::Success,
                    admitted_at: Timestamp::from_micros(12),
                    refund_retry: false,
                }),
                breaker: Some(LastBreakerReport {
                    outcome: Some(Outcome::Success),
                    probe: Some(ProbeId(6)),
                }),
            },
            Operation::Cancel { scope: 12 },
            Operation::Status,
        ]
    }

    #[test]
    fn every_operation_round_trips_through_the_wire() {
        let ops = every_operation();
        for op in &ops {
            // Exhaustive on purpose: a new operation must be given a case above.
            match op {
                Operation::Reserve { .. }
                | Operation::ReservePass { .. }
                | Operation::Admit { .. }
                | Operation::AdmitWithBudget { .. }
                | Operation::Feedback { .. }
                | Operation::Pause { .. }
                | Operation::BreakerPass { .. }
                | Operation::BreakerReport { .. }
                | Operation::Release { .. }
                | Operation::Cancel { .. }
                | Operation::Status => {}
            }
            let json = serde_json::to_string(op).unwrap();
            let back: Operation = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, op, "{json}");
            if let Some(key) = back.key() {
                assert_eq!(key.quota_key(), op.key().unwrap().quota_key());
            }
        }
    }

    #[test]
    fn every_answer_round_trips_through_the_wire() {
        let snapshot = QuotaState::new(Policy::with_rate(4.0, 2.0).unwrap(), Timestamp::ZERO)
            .snapshot(Timestamp::ZERO);
        let answers = vec![
            Answer::Reserved(ReservationId(4)),
            Answer::ReservedPassed {
                reservation: ReservationId(5),
                passage: Passage::Probe(ProbeLease {
                    id: ProbeId(3),
                    expires_at: Timestamp::from_micros(9),
                }),
                admitted_at: None,
            },
            Answer::ReservedPassed {
                reservation: ReservationId(6),
                passage: Passage::Go,
                admitted_at: Some(Timestamp::from_micros(10)),
            },
            Answer::Admitted {
                admitted_at: Timestamp::from_micros(7),
                retry_spent: true,
            },
            Answer::Done,
            Answer::Passage(Passage::Go),
            Answer::Cancelled(5),
            Answer::Status(CoordinationStatus {
                coordinator_pid: 42,
                clients: vec![ClientInfo {
                    pid: 43,
                    generation: 1,
                    in_flight: 2,
                }],
                keys: vec![KeyStatus {
                    key: key().to_string(),
                    state: snapshot,
                    waiting_for_reservation: 1,
                    waiting_for_admission: 0,
                    storage_failure: None,
                    calendar: None,
                    fleet: None,
                    fleet_degraded: None,
                }],
                breakers: vec![BreakerStatus {
                    scope: "aws/123456789012/us-east-1/logs".into(),
                    state: BreakerState::Open {
                        until: Timestamp::from_micros(9),
                    },
                    reopens_at: None,
                    next_open_secs: 1,
                    waiting: 0,
                    from_fleet: false,
                }],
            }),
        ];
        for answer in answers {
            let json = serde_json::to_string(&answer).unwrap();
            assert_eq!(
                serde_json::from_str::<Answer>(&json).unwrap(),
                answer,
                "{json}"
            );
        }
    }

    #[test]
    fn operations_are_externally_tagged_with_keys_as_their_canonical_text() {
        let json = serde_json::to_string(&Operation::Release {
            key: CanonicalKey::parse("aws/123456789012/us-east-1/elbv2:DescribeLoadBalancers")
                .unwrap(),
            policy: Policy::with_rate(4.0, 2.0).unwrap(),
            reservation: ReservationId(9),
            feedback: None,
            breaker: None,
        })
        .unwrap();
        assert!(
            !json.contains("feedback") && !json.contains("breaker"),
            "a release without reports says nothing of them: {json}"
        );
        assert!(
            json.starts_with(
                r#"{"release":{"key":"aws/123456789012/us-east-1/elasticloadbalancingv2:DescribeLoadBalancers","#
            ),
            "{json}"
        );
        assert_eq!(
            serde_json::to_string(&Operation::Status).unwrap(),
            r#""status""#
        );
    }

    #[test]
    fn an_operation_naming_text_that_is_not_a_key_does_not_decode() {
        let err = serde_json::from_str::<Operation>(r#"{"cancel":{"scope":1}}"#).map(|_| ());
        assert!(err.is_ok());
        let err = serde_json::from_str::<Operation>(
            r#"{"breaker_pass":{"key":"aws/1/us-east-1/logs:X","timeout_ms":5}}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("not a canonical quota key"),
            "{err}"
        );
    }

    #[test]
    fn only_the_operations_that_wait_count_against_the_in_flight_cap() {
        let waiting: Vec<bool> = every_operation().iter().map(Operation::may_wait).collect();
        assert_eq!(
            waiting,
            [
                true, true, true, true, true, false, false, true, false, false, false, false,
                false, false
            ]
        );
    }
}
