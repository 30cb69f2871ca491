//! Circuit breakers: stop sending to a scope that is failing hard, and find out with one
//! probe when it has recovered.
//!
//! The penalty ([`crate::penalty`]) slows a key down; it never stops it: a dependency that
//! answers 503 for ninety seconds still receives first attempts at 1/32 of the rate, each
//! retried. A breaker stops it. One breaker guards one [`BreakerScope`] (partition,
//! account, region, service: every operation group of the service), because a service
//! that is down is down for all its operations, and a per-group breaker would need five
//! failures per group to notice.
//!
//! States (seed 002 §2.6):
//! - **closed**: calls flow; [`FAILURE_THRESHOLD`] consecutive transient answers open it;
//! - **open** until an instant: nothing is sent; the first opening lasts [`BASE_OPEN`],
//!   each re-opening after a failed probe lasts a tenth ([`OPEN_SHARE`]) of how long the
//!   scope has been failing, at least [`MIN_REOPEN`] and at most [`MAX_OPEN`];
//! - **half-open**: exactly one caller gets a [`ProbeLease`] and is sent; everyone else
//!   waits for its outcome. Success closes the breaker and restores [`BASE_OPEN`]; a
//!   transient answer re-opens it. A probe that never reports back (cancelled, crashed)
//!   loses its lease after [`PROBE_LEASE`], and the next caller becomes the probe, so a
//!   breaker never stays half-open with nobody probing.
//!
//! What counts:
//! - transient answers (5xx, timeouts, resets) count as failures, per answer: five 503s
//!   in a row open the scope whether they came from one call's retries or five calls;
//! - a **fatal** answer from the service (access denied, validation, not found) proves the
//!   service is reachable, so it resets the count like a success and never opens anything
//!   (seed 002: an AccessDenied storm never opens a circuit);
//! - a **throttle** neither counts nor resets while closed. Seed 002 counts a call that
//!   gave up on throttles, but in tollgate throttles already have two answers of their own,
//!   the penalty (rate halved, cooldown) and the key-wide Retry-After pause
//!   ([`crate::QuotaState::pause`]); a throttle is the service answering, so opening a
//!   whole service on it would stop operations that are within their quota. A throttle
//!   answering the probe closes the breaker for the same reason: the service is back, and
//!   the rate limiter takes over from there.
//! - while open or half-open, only the probe's answer moves the breaker: answers of calls
//!   sent before it opened say nothing about the service now.
//!
//! Why openings grow with the outage's age and not by doubling (issue 14 asked for 60 s
//! doubling to 600 s): a probe finds a recovery one opening late at worst, and the issue's
//! own target for a 90-second outage is to finish within 10 s of the recovery (plus the
//! work left). With 60 s doubling, the probe at 60 s fails and the next comes at 180 s,
//! 90 s after the recovery (the outage bench measured it). With openings of a tenth of
//! the failure's age, a recovery is found within max(10 s, a tenth of the outage): within
//! 10 s of the end of a 90-second outage, having sent about 9 probes for the whole scope;
//! an outage of an hour costs about 50 probes and is found within 6 minutes; the openings
//! still reach 600 s, after 100 minutes of failure.
//!
//! Why re-openings last at least [`MIN_REOPEN`] (10 s) while the first lasts [`BASE_OPEN`]
//! (5 s), issue 24: a failing key's own cooldown ([`crate::penalty::MAX_COOLDOWN`], 8 s
//! after four failures) already spaces its attempts, so re-openings of 5 s held nothing
//! back: `bench outage` (a 90-second DescribeTable outage through moto, three processes)
//! measured the same 15 attempts with breakers on and off. A probe is one attempt into a
//! failing service, and the half-open probe is the only attempt an open scope sends, so
//! its spacing is the outage's price: 10 s halves the probes of a young failure and still
//! finds a recovery within 10 s, which leaves a scan whose remaining work takes a few
//! seconds done within 15 s of the end (docs/benchmarks.md, "A DynamoDB outage through
//! moto"). The first opening stays short: a failure that ends within seconds (a blip
//! that still met five failures in a row) costs 5 s, not 10.
//!
//! Time is passed in; nothing here reads a clock.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::key::QuotaKey;
use crate::penalty::Outcome;
use crate::time::Timestamp;

/// Consecutive transient answers that open a closed breaker.
pub const FAILURE_THRESHOLD: u32 = 5;
/// The shortest opening: the first, and every re-opening while the scope has been
/// failing for less than `OPEN_SHARE · BASE_OPEN` (50 s).
pub const BASE_OPEN: Duration = Duration::from_secs(5);
/// The shortest re-opening after a failed probe: longer than the failing key's own
/// cooldown (8 s at most), so that the breaker, not the cooldown, spaces the probes, and
/// short enough that a recovery is found within 10 s while the failure is young (for
/// less than `OPEN_SHARE · MIN_REOPEN`, 100 s).
pub const MIN_REOPEN: Duration = Duration::from_secs(10);
/// The longest opening.
pub const MAX_OPEN: Duration = Duration::from_secs(600);
/// A re-opening lasts `1 / OPEN_SHARE` of how long the scope has been failing (since
/// the breaker first opened), within [`MIN_REOPEN`, `MAX_OPEN`].
pub const OPEN_SHARE: u32 = 10;
/// How long a probe holds the half-open scope before the next caller may probe instead:
/// longer than any single attempt tollgate sends, short enough that a lost probe costs
/// one minute.
pub const PROBE_LEASE: Duration = Duration::from_secs(60);

/// How long an opening that starts at `now` lasts when the scope has been failing since
/// `failing_since`: [`BASE_OPEN`] for the first (`None`: the failure starts now), then a
/// tenth of the failure's age within [`MIN_REOPEN`, `MAX_OPEN`].
pub fn opening_for(failing_since: Option<Timestamp>, now: Timestamp) -> Duration {
    match failing_since {
        None => BASE_OPEN,
        Some(since) => (now.saturating_since(since) / OPEN_SHARE).clamp(MIN_REOPEN, MAX_OPEN),
    }
}

/// The scope of one breaker: `partition/account/region/service` of a quota key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BreakerScope(String);

impl BreakerScope {
    /// The scope guarding `key`: its key without the operation group.
    pub fn of(key: &QuotaKey) -> Self {
        BreakerScope(format!(
            "{}/{}/{}/{}",
            key.partition().as_str(),
            key.account(),
            key.region().unwrap_or(crate::key::GLOBAL_REGION),
            key.service()
        ))
    }

    /// The scope as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BreakerScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Identifies one probe lease of one breaker; its answer must quote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProbeId(pub u64);

/// The lease of the one caller allowed through a half-open breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeLease {
    /// Quote it when reporting the probe's answer.
    pub id: ProbeId,
    /// After this instant the next caller may probe instead.
    pub expires_at: Timestamp,
}

/// What a caller may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Passage {
    /// Closed: send.
    Go,
    /// Half-open and this caller is the probe: send, and report the answer with the id.
    Probe(ProbeLease),
    /// Do not send; ask again at `at` (or as soon as the probe in flight reports).
    Wait {
        /// When asking again can change the answer.
        at: Timestamp,
        /// Why.
        reason: BreakerWait,
    },
}

/// Why a breaker holds a caller back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerWait {
    /// Open: nothing is sent until the instant.
    Open,
    /// Half-open: another caller's probe is in flight, its lease ends at the instant.
    ProbeInFlight,
}

/// The state a breaker is in, as status shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum BreakerState {
    /// Calls flow; `failures` consecutive transient answers so far.
    Closed { failures: u32 },
    /// Nothing is sent until `until`.
    Open { until: Timestamp },
    /// One probe may go; `probe` is the lease in force, if any.
    HalfOpen { probe: Option<ProbeLease> },
}

/// One scope's breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    state: BreakerState,
    /// How long the latest opening lasted.
    open_for: Duration,
    /// The id the next probe lease gets.
    next_probe: u64,
    /// When the breaker opened after being closed: the start of the failure.
    #[serde(default)]
    failing_since: Option<Timestamp>,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            state: BreakerState::Closed { failures: 0 },
            open_for: BASE_OPEN,
            next_probe: 1,
            failing_since: None,
        }
    }
}

impl Breaker {
    /// The state at `now` (an opening that has run out shows as half-open).
    pub fn state(&self, now: Timestamp) -> BreakerState {
        match self.state {
            BreakerState::Open { until } if now >= until => BreakerState::HalfOpen { probe: None },
            BreakerState::HalfOpen { probe: Some(p) } if now >= p.expires_at => {
                BreakerState::HalfOpen { probe: None }
            }
            state => state,
        }
    }

    /// How long the latest opening lasted ([`BASE_OPEN`] while closed).
    pub fn open_for(&self) -> Duration {
        self.open_for
    }

    /// How long an opening that starts at `now` lasts: [`BASE_OPEN`] while closed, then
    /// a tenth of the failure's age within [`MIN_REOPEN`, `MAX_OPEN`].
    pub fn opening_at(&self, now: Timestamp) -> Duration {
        opening_for(self.failing_since, now)
    }

    /// When the current failure started (the first opening), `None` while closed.
    pub fn failing_since(&self) -> Option<Timestamp> {
        self.failing_since
    }

    /// Take an opening another host published (fleet mode): open until `until` (already
    /// half-open if `until` has passed), failing since the earlier of both starts. A probe
    /// lease in flight here is kept: its answer moves the breaker. Returns true if the
    /// state changed.
    pub fn adopt(&mut self, failing_since: Timestamp, until: Timestamp, now: Timestamp) -> bool {
        if let BreakerState::HalfOpen { probe: Some(_) } = self.state(now) {
            return false;
        }
        let before = self.clone();
        self.failing_since = Some(
            self.failing_since
                .map_or(failing_since, |s| s.min(failing_since)),
        );
        self.open_for = until.saturating_since(now).clamp(BASE_OPEN, MAX_OPEN);
        self.state = BreakerState::Open { until };
        *self != before
    }

    /// Close because another host's probe succeeded (fleet mode). A probe lease in flight
    /// here is dropped with the rest: its answer no longer matters. Returns true if the
    /// state changed.
    pub fn close(&mut self) -> bool {
        let before = self.clone();
        self.state = BreakerState::Closed { failures: 0 };
        self.open_for = BASE_OPEN;
        self.failing_since = None;
        *self != before
    }

    /// The instant the breaker stops refusing without a probe's answer: the end of the
    /// opening, or of the probe lease in flight; `None` when a caller may go now.
    pub fn reopens_at(&self, now: Timestamp) -> Option<Timestamp> {
        match self.state(now) {
            BreakerState::Open { until } => Some(until),
            BreakerState::HalfOpen { probe: Some(p) } => Some(p.expires_at),
            _ => None,
        }
    }

    /// May a caller send now? In a half-open breaker with no live probe, the caller
    /// becomes the probe (the lease is taken by this call).
    pub fn pass(&mut self, now: Timestamp) -> Passage {
        self.state = self.state(now);
        match self.state {
            BreakerState::Closed { .. } => Passage::Go,
            BreakerState::Open { until } => Passage::Wait {
                at: until,
                reason: BreakerWait::Open,
            },
            BreakerState::HalfOpen { probe: Some(p) } => Passage::Wait {
                at: p.expires_at,
                reason: BreakerWait::ProbeInFlight,
            },
            BreakerState::HalfOpen { probe: None } => {
                let lease = ProbeLease {
                    id: ProbeId(self.next_probe),
                    expires_at: now + PROBE_LEASE,
                };
                self.next_probe += 1;
                self.state = BreakerState::HalfOpen { probe: Some(lease) };
                Passage::Probe(lease)
            }
        }
    }

    /// Record a service's answer at `now`. `probe` is the lease the call went under, if
    /// it was the probe. Returns true if the state changed (waiters should ask again).
    pub fn record(&mut self, outcome: Outcome, probe: Option<ProbeId>, now: Timestamp) -> bool {
        let before = self.clone();
        self.state = self.state(now);
        match self.state {
            BreakerState::Closed { failures } => match outcome {
                Outcome::Transient => {
                    let failures = failures + 1;
                    self.state = if failures >= FAILURE_THRESHOLD {
                        self.failing_since = Some(now);
                        self.open_for = BASE_OPEN;
                        BreakerState::Open {
                            until: now + BASE_OPEN,
                        }
                    } else {
                        BreakerState::Closed { failures }
                    };
                }
                Outcome::Success | Outcome::Fatal => {
                    self.state = BreakerState::Closed { failures: 0 };
                }
                Outcome::Throttled => {}
            },
            BreakerState::HalfOpen { probe: Some(lease) } if Some(lease.id) == probe => {
                match outcome {
                    Outcome::Transient => {
                        self.open_for = self.opening_at(now);
                        self.state = BreakerState::Open {
                            until: now + self.open_for,
                        };
                    }
                    Outcome::Success | Outcome::Fatal | Outcome::Throttled => {
                        self.open_for = BASE_OPEN;
                        self.failing_since = None;
                        self.state = BreakerState::Closed { failures: 0 };
                    }
                }
            }
            // Open, or half-open and not the probe's answer: sent before the opening.
            _ => {}
        }
        *self != before
    }

    /// Give up a probe lease whose call was never sent (its caller was cancelled or ran
    /// out of time before sending): the next caller becomes the probe at once.
    pub fn abandon(&mut self, probe: ProbeId, now: Timestamp) -> bool {
        match self.state(now) {
            BreakerState::HalfOpen { probe: Some(lease) } if lease.id == probe => {
                self.state = BreakerState::HalfOpen { probe: None };
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
#[path = "breaker_tests.rs"]
mod tests;
