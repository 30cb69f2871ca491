//! The admission state machine of one quota key.
//!
//! `QuotaState` joins the parts (bucket, window, penalty, retry allowance, reservations)
//! under the policy in force, and is the only thing that changes them. Every method takes
//! `now`; none reads a clock. A refused admission says why, and "not now" carries the
//! instant at which asking again can succeed, so a caller sleeps exactly that long.
//!
//! Order of the checks in [`QuotaState::admit`]: a request that can never pass (unknown
//! reservation, cost above burst, retry with an empty allowance) is refused outright; then
//! the cooldown, the window and the bucket each may defer it; only when all pass is
//! anything charged, so a deferred request costs nothing.
//!
//! The bucket holds the policy's admission burst ([`Policy::admission_burst`]: the burst
//! less the arrival-jitter allowance, see `arrival_jitter`). A cost above the burst is
//! refused; one between the two waits for a full bucket and leaves it in debt.
//!
//! A server's Retry-After hint pauses the whole key ([`QuotaState::pause`], seed 001/002:
//! capped at [`MAX_PAUSE`] to survive bogus headers): every waiter of every process is
//! told "not until the pause ends" ([`WaitReason::Paused`]), checked right after the
//! outright refusals, so a paused key charges nothing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::arrival_jitter::{self, Fit};
use crate::bucket::TokenBucket;
use crate::lease::{self, Lease};
use crate::penalty::{Outcome, Penalty};
use crate::policy::Policy;
use crate::reservation::{Owner, ReservationId, Reservations};
use crate::retry::{RetryAllowance, RETRY_COSTS};
use crate::time::Timestamp;
use crate::window::{RollingWindow, WindowShape};

/// How long a quota must go without reservations before a looser policy may replace the
/// stricter one in force.
pub const POLICY_RELAX_IDLE: Duration = Duration::from_secs(60);

/// The longest pause a server's Retry-After hint can put on a key (seed 001:
/// MAX_PAUSE_SECONDS); a longer or bogus hint is cut to this.
pub const MAX_PAUSE: Duration = Duration::from_secs(300);

/// One request for final admission (just before the bytes go out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmitRequest {
    /// The concurrency reservation the attempt runs under.
    pub reservation: ReservationId,
    /// Tokens to charge (1 per request; more for datapoint budgets).
    pub cost: u32,
    /// True for a retry: it must spend one unit of the retry allowance.
    pub retry: bool,
}

impl AdmitRequest {
    /// The tokens a grant charges: the cost, at least 1.
    pub fn charged_cost(&self) -> f64 {
        f64::from(self.cost.max(1))
    }

    /// The fleet tokens a grant under `policy` spends: the cost, at least 1, at most the
    /// admission burst (rounded down). A fleet host's spend windows never hold more than
    /// the admission burst at once, so an oversize page (`arrival_jitter`) spends a full
    /// window's worth instead of waiting forever; the local bucket charges it all.
    pub fn fleet_units(&self, policy: &Policy) -> u64 {
        let cap = policy.admission_burst().floor().max(1.0) as u64;
        u64::from(self.cost.max(1)).min(cap)
    }
}

/// A granted admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// When it was admitted; feedback for this attempt must quote it.
    pub admitted_at: Timestamp,
    /// True if a retry unit was spent.
    pub retry_spent: bool,
}

/// Why a request has to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The server asked, with Retry-After, that nothing is sent before the instant.
    Paused,
    /// A failure cooldown is running.
    Cooldown,
    /// The rolling window is full.
    Window,
    /// The bucket lacks tokens.
    Tokens,
    /// Every concurrency slot is held.
    Concurrency,
}

/// Why a request can never be admitted as asked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    #[error("the reservation is unknown or expired; reserve again before admission")]
    UnknownReservation,
    #[error("cost {cost} exceeds the burst {burst}; raise burst or split the request")]
    CostExceedsBurst { cost: u32, burst: f64 },
    #[error("the key's shared retry allowance is exhausted; the retry is not sent")]
    RetryAllowanceExhausted,
    #[error("the key's calendar allowance is exhausted until {resets_at}, after the request's deadline; raise the allowance or run after the reset")]
    AllowanceExhausted {
        resets_at: crate::schedule::WallClock,
    },
    #[error("cost {cost} exceeds the key's whole calendar allowance of {amount}; raise the allowance or split the request")]
    CostExceedsAllowance { cost: u32, amount: u64 },
    #[error("fleet admission is stopped because its table cannot be used (TOLLGATE_FLEET_ON_ERROR=stop); `tollgate status` names the table and the error")]
    FleetStopped,
}

/// The answer to an admission request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Go now.
    Granted(Grant),
    /// Ask again at `at`.
    NotUntil { at: Timestamp, reason: WaitReason },
    /// Never, as asked.
    Refused(Refusal),
}

/// Everything one key knows.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaState {
    policy: Policy,
    bucket: TokenBucket,
    window: RollingWindow,
    penalty: Penalty,
    retry: RetryAllowance,
    reservations: Reservations,
    last_active_at: Timestamp,
    paused_until: Option<Timestamp>,
    /// The class of the key's latest failure (throttle or transient): what the next
    /// retry is priced as under [`RETRY_COSTS`].
    last_failure: Outcome,
}

impl QuotaState {
    /// A fresh key: full bucket, empty window, full retry allowance.
    pub fn new(policy: Policy, now: Timestamp) -> Self {
        QuotaState {
            policy,
            bucket: TokenBucket::full(policy.admission_burst(), now),
            window: RollingWindow::default(),
            penalty: Penalty::default(),
            retry: RetryAllowance::full(RETRY_COSTS, policy.retry_capacity()),
            reservations: Reservations::default(),
            last_active_at: now,
            paused_until: None,
            last_failure: Outcome::Transient,
        }
    }

    /// Pause the key for a server's Retry-After `hint` seen at `now`: nothing on the key
    /// is admitted before `now + hint` (at most [`MAX_PAUSE`]). A shorter hint never
    /// shortens a longer pause in force. Returns the end of the pause in force.
    pub fn pause(&mut self, hint: Duration, now: Timestamp) -> Timestamp {
        let until = now + hint.min(MAX_PAUSE);
        let until = self.paused_until(now).map_or(until, |u| u.max(until));
        self.paused_until = Some(until);
        until
    }

    /// The end of the pause, if one is running at `now`.
    pub fn paused_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.paused_until.filter(|until| *until > now)
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn shape(&self) -> WindowShape {
        WindowShape::for_rate(self.policy.rate_per_second())
    }

    fn effective_rate(&self) -> f64 {
        self.penalty.effective_rate(self.policy.rate_per_second())
    }

    /// Bring in a caller's policy. A stricter field takes effect at once; a looser policy
    /// replaces the one in force only when the key is healthy (no penalty) and has had no
    /// reservations for [`POLICY_RELAX_IDLE`]. Returns true if the policy in force changed.
    pub fn adopt_policy(&mut self, requested: &Policy, now: Timestamp) -> bool {
        if *requested == self.policy {
            return false;
        }
        let idle = self.reservations.is_empty()
            && self.penalty.steps() == 0
            && now.saturating_since(self.last_active_at) >= POLICY_RELAX_IDLE;
        let next = if idle {
            *requested
        } else {
            self.policy.strictest(requested)
        };
        if next == self.policy {
            return false;
        }
        // Settle the bucket under the old rate before the rate changes.
        self.bucket
            .refill(self.policy.admission_burst(), self.effective_rate(), now);
        self.policy = next;
        self.bucket
            .refill(next.admission_burst(), self.effective_rate(), now);
        self.retry.clamp(RETRY_COSTS, next.retry_capacity());
        true
    }

    /// Put `policy` in force now, looser or stricter: a schedule's boundary, where the
    /// policy is the schedule's rather than a caller's. The bucket is settled under the old
    /// rate first, so time already passed earns what it earned. True if it changed.
    pub fn enforce_policy(&mut self, policy: Policy, now: Timestamp) -> bool {
        if policy == self.policy {
            return false;
        }
        self.bucket
            .refill(self.policy.admission_burst(), self.effective_rate(), now);
        self.policy = policy;
        self.bucket
            .refill(policy.admission_burst(), self.effective_rate(), now);
        self.retry.clamp(RETRY_COSTS, policy.retry_capacity());
        true
    }

    /// Take a concurrency slot, or learn the earliest instant one lapses by expiry.
    pub fn reserve(
        &mut self,
        owner: Owner,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> Result<ReservationId, Timestamp> {
        self.last_active_at = self.last_active_at.max(now);
        self.reservations
            .try_reserve(owner, expires_at, self.policy.concurrency())
    }

    /// Give a slot back. Returns false if it was not held.
    pub fn release(&mut self, id: ReservationId, now: Timestamp) -> bool {
        self.last_active_at = self.last_active_at.max(now);
        self.reservations.release(id)
    }

    /// Give back every slot of one owner (a client that went away).
    pub fn release_owner(&mut self, owner: Owner, now: Timestamp) -> usize {
        self.last_active_at = self.last_active_at.max(now);
        self.reservations.release_owner(owner)
    }

    /// Remove reservations past expiry or of dead processes.
    pub fn reap(&mut self, now: Timestamp, pid_alive: &dyn Fn(u32) -> bool) -> usize {
        self.reservations.reap(now, pid_alive)
    }

    /// Final admission: grant and charge, defer with an instant, or refuse.
    pub fn admit(&mut self, request: &AdmitRequest, now: Timestamp) -> Admission {
        if self.reservations.get(request.reservation, now).is_none() {
            return Admission::Refused(Refusal::UnknownReservation);
        }
        let cost = request.charged_cost();
        let capacity = self.policy.admission_burst();
        let fit = arrival_jitter::fit(cost, capacity, self.policy.burst());
        if fit == Fit::TooLarge {
            return Admission::Refused(Refusal::CostExceedsBurst {
                cost: request.cost,
                burst: self.policy.burst(),
            });
        }
        if request.retry && !self.retry.can_spend(RETRY_COSTS, self.last_failure) {
            return Admission::Refused(Refusal::RetryAllowanceExhausted);
        }
        if let Some(at) = self.paused_until(now) {
            return Admission::NotUntil {
                at,
                reason: WaitReason::Paused,
            };
        }
        if let Some(at) = self.penalty.cooldown_until(now) {
            return Admission::NotUntil {
                at,
                reason: WaitReason::Cooldown,
            };
        }
        let shape = self.shape();
        if let Some(at) = self.window.ready_at(shape, now) {
            return Admission::NotUntil {
                at,
                reason: WaitReason::Window,
            };
        }
        let rate = self.effective_rate();
        // An oversize cost (above the admission burst, within the server's) waits for a
        // full bucket and then leaves it in debt (`arrival_jitter`'s module docs).
        let wanted = cost.min(capacity);
        if let Some(at) = self.bucket.ready_at(wanted, capacity, rate, now) {
            return Admission::NotUntil {
                at,
                reason: WaitReason::Tokens,
            };
        }
        self.window.record(shape, now);
        match fit {
            Fit::Oversize => self.bucket.take_into_debt(cost, capacity, rate, now),
            _ => self.bucket.take(cost, capacity, rate, now),
        }
        let retry_spent = request.retry && self.retry.try_spend(RETRY_COSTS, self.last_failure);
        self.last_active_at = self.last_active_at.max(now);
        Admission::Granted(Grant {
            admitted_at: now,
            retry_spent,
        })
    }

    /// An attempt's outcome, for an attempt admitted at `admitted_at`. A success refunds
    /// the cost model's refund to the retry allowance; throttles and transient failures
    /// deepen the penalty and price the key's next retry. True if this was a new failure
    /// event (the penalty deepened).
    pub fn feedback(&mut self, outcome: Outcome, admitted_at: Timestamp, now: Timestamp) -> bool {
        let rate_before = self.effective_rate();
        self.bucket
            .refill(self.policy.admission_burst(), rate_before, now);
        let changed = self.penalty.observe(outcome, admitted_at, now);
        match outcome {
            Outcome::Success => self
                .retry
                .refund_success(RETRY_COSTS, self.policy.retry_capacity()),
            Outcome::Throttled | Outcome::Transient => self.last_failure = outcome,
            Outcome::Fatal => {}
        }
        changed && outcome != Outcome::Success
    }

    /// Undo a grant of `cost` that was never sent because what it had to be charged
    /// together with could not be (a GetMetricData attempt's request token and its
    /// datapoints, seed 000: "atomically charges request capacity and CloudWatch
    /// datapoints"): its tokens go back to the bucket, capped at the burst, its start
    /// (granted at `grant.admitted_at`) leaves the window, and its retry unit, if one was
    /// spent, goes back to the allowance. The lease keeps its charge, which errs on the
    /// side of admitting less.
    pub fn refund_unsent(&mut self, cost: u32, grant: &Grant, now: Timestamp) {
        let cost = f64::from(cost.max(1));
        let (capacity, rate) = (self.policy.admission_burst(), self.effective_rate());
        self.bucket.give_back(cost, capacity, rate, now);
        let shape = self.shape();
        self.window.forget(shape, grant.admitted_at);
        let retry_spent = grant.retry_spent;
        if retry_spent {
            self.refund_retry();
        }
    }

    /// Return a retry unit that was spent but never dispatched.
    pub fn refund_retry(&mut self) {
        self.retry
            .refund_retry(RETRY_COSTS, self.last_failure, self.policy.retry_capacity());
    }

    /// A read-only summary for status output.
    pub fn snapshot(&self, now: Timestamp) -> QuotaSnapshot {
        let rate = self.effective_rate();
        QuotaSnapshot {
            policy: self.policy,
            tokens: self
                .bucket
                .available(self.policy.admission_burst(), rate, now),
            effective_rate_per_second: rate,
            penalty_steps: self.penalty.steps(),
            cooldown_remaining_ms: self
                .penalty
                .cooldown_until(now)
                .map(|until| until.saturating_since(now).as_millis() as u64),
            retry_units: self.retry.units(),
            reservations: self.reservations.len(),
            window_starts: {
                let mut w = self.window.clone();
                w.count(self.shape(), now)
            },
            window_limit: self.shape().limit,
            paused_until: self.paused_until(now),
        }
    }

    /// The state to persist at `now`. Every record carries the live part (bucket and
    /// window, the bucket brought up to `now`); [`Handover`] says what may follow it.
    pub fn to_record(&self, handover: Handover, now: Timestamp) -> QuotaRecord {
        let mut bucket = self.bucket;
        bucket.refill(self.policy.admission_burst(), self.effective_rate(), now);
        QuotaRecord {
            format: QuotaRecord::FORMAT,
            durable: Durable {
                policy: self.policy,
                penalty: self.penalty,
                retry: self.retry,
                reservations: self.reservations.clone(),
                paused_until: self.paused_until(now),
            },
            live: Some(Live {
                bucket,
                window: self.window.clone(),
                last_active_at: self.last_active_at,
            }),
            lease: match handover {
                Handover::Graceful => None,
                Handover::Leased(lease) => Some(lease),
            },
        }
    }

    /// Rebuild a key from its record at `now`. Reservations of dead processes or past
    /// expiry are reaped; the penalty is kept as stored. Bucket, window and retry
    /// allowance:
    /// - after a graceful hand-over (live part, no lease): exactly as they were;
    /// - from a leased record (the writer may have granted up to the lease after its
    ///   snapshot, then died): the snapshot with the whole lease charged at `now`
    ///   ([`lease::restore`]), and as many retry units taken as the lease has starts
    ///   (each of those grants may have been a retry); never more permissive than the dead
    ///   coordinator could be;
    /// - from a format-1 periodic record (no live part): an empty bucket and a window
    ///   counted full at `now`. A crash may waste capacity; it never over-admits.
    pub fn from_record(
        record: QuotaRecord,
        now: Timestamp,
        pid_alive: &dyn Fn(u32) -> bool,
    ) -> (QuotaState, Recovery) {
        let Durable {
            policy,
            penalty,
            mut retry,
            mut reservations,
            paused_until,
        } = record.durable;
        retry.clamp(RETRY_COSTS, policy.retry_capacity());
        let reaped = reservations.reap(now, pid_alive);
        let shape = WindowShape::for_rate(policy.rate_per_second());
        let (bucket, window, last_active_at, restored) = match (record.live, record.lease) {
            (Some(live), None) => (
                live.bucket,
                live.window,
                live.last_active_at,
                Restored::Exact,
            ),
            (Some(live), Some(lease)) => {
                let (bucket, window) =
                    lease::restore(&lease, &policy, live.bucket, live.window, now);
                retry.charge(RETRY_COSTS, u32::try_from(lease.starts).unwrap_or(u32::MAX));
                (
                    bucket,
                    window,
                    now.max(live.last_active_at),
                    Restored::LeaseCharged(lease),
                )
            }
            (None, _) => (
                TokenBucket::empty(now),
                RollingWindow::full_at(shape, now),
                now,
                Restored::WindowCountedFull,
            ),
        };
        let state = QuotaState {
            policy,
            bucket,
            window,
            penalty,
            retry,
            reservations,
            last_active_at,
            paused_until: paused_until.filter(|until| *until > now),
            last_failure: Outcome::Transient,
        };
        (
            state,
            Recovery {
                conservative: restored != Restored::Exact,
                restored,
                reaped,
            },
        )
    }

    /// `self` with bucket and window replaced by a restore's charge (`crate::unrecorded`).
    pub(crate) fn with_charge(mut self, bucket: TokenBucket, window: RollingWindow) -> Self {
        self.bucket = bucket;
        self.window = window;
        self
    }

    /// The held reservations.
    pub fn reservations(&self) -> &Reservations {
        &self.reservations
    }

    /// The penalty state.
    pub fn penalty(&self) -> &Penalty {
        &self.penalty
    }

    /// Retry units left.
    pub fn retry_units(&self) -> u32 {
        self.retry.units()
    }
}

/// What may follow a persisted record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Handover {
    /// Nothing: the writer stops granting on this key (retiring, shutting down).
    Graceful,
    /// At most this lease: the writer keeps granting, charging each grant to it.
    Leased(Lease),
}

/// How [`QuotaState::from_record`] rebuilt bucket and window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Restored {
    /// From a graceful record: exactly as they were.
    Exact,
    /// From a leased snapshot, with the whole lease charged at the restore instant.
    LeaseCharged(Lease),
    /// From a record without a live part (format 1): empty bucket, window counted full.
    WindowCountedFull,
}

/// What [`QuotaState::from_record`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recovery {
    /// True if bucket and window were charged for what the previous owner may have granted
    /// after its record (anything but a graceful hand-over).
    pub conservative: bool,
    /// How bucket and window were rebuilt.
    pub restored: Restored,
    /// Reservations removed because their process was gone or they had expired.
    pub reaped: usize,
}

/// A key's persisted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaRecord {
    /// Record format version: 1 (live part only after a graceful hand-over) or 2 (live
    /// part always, with a lease unless graceful).
    pub format: u32,
    /// What survives any restart.
    pub durable: Durable,
    /// Bucket and window as of the record (format 1: only after a graceful hand-over).
    pub live: Option<Live>,
    /// What the writer may have granted after the record; `None` after a graceful one.
    #[serde(default)]
    pub lease: Option<Lease>,
}

impl QuotaRecord {
    /// The format this version writes.
    pub const FORMAT: u32 = 2;

    /// True if this version reads records of `format`.
    pub fn readable(format: u32) -> bool {
        (1..=Self::FORMAT).contains(&format)
    }
}

/// The part of a key's state that must survive a crash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Durable {
    pub policy: Policy,
    pub penalty: Penalty,
    pub retry: RetryAllowance,
    pub reservations: Reservations,
    /// A Retry-After pause in force when the record was written (absent in older records).
    #[serde(default)]
    pub paused_until: Option<Timestamp>,
}

/// Bucket and window: exact after a graceful hand-over, a snapshot under a lease otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Live {
    pub bucket: TokenBucket,
    pub window: RollingWindow,
    pub last_active_at: Timestamp,
}

/// A read-only summary of one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaSnapshot {
    pub policy: Policy,
    pub tokens: f64,
    pub effective_rate_per_second: f64,
    pub penalty_steps: u8,
    pub cooldown_remaining_ms: Option<u64>,
    pub retry_units: u32,
    pub reservations: usize,
    pub window_starts: u64,
    pub window_limit: u64,
    /// End of a Retry-After pause in force.
    #[serde(default)]
    pub paused_until: Option<Timestamp>,
}
