//! A scope's circuit breaker shared by the fleet: the item's content and the pure rules
//! that change it.
//!
//! Each host keeps its own [`Breaker`](crate::Breaker) (its coordinator's processes share
//! it); in fleet mode the hosts also share one [`FleetBreaker`] per scope, so that a dead
//! service costs the fleet about [`FAILURE_THRESHOLD`](crate::breaker::FAILURE_THRESHOLD)
//! failures per outage (not that many per host) and one probe per opening (not one per
//! host). The table is touched only while a scope fails: a host writes the item when its
//! breaker opens, reads it on its first transient failure while closed (to adopt an
//! opening the fleet already knows), claims the fleet's probe before it probes, and writes
//! the probe's answer. Nothing is read or written per admission or while all is well.
//!
//! Every change is a read, one of these functions, and a write on condition of the
//! version read; a lost write reads again. The rules are monotone where hosts race:
//! - an opening only writes a **closed** item; a host that finds the item already failing
//!   adopts it instead (the earliest start of the failure, the fleet's end of opening), so
//!   two hosts opening at once make one opening, not two;
//! - a probe is claimed only in a half-open item whose probe lease is free or lapsed: the
//!   conditional write lets exactly one host win, the others wait and read again;
//! - a probe's success closes the item; its failure re-opens it for a tenth of the
//!   failure's age ([`opening_for`]) unless someone already re-opened it (then the later
//!   end wins).
//!
//! Time is passed in; nothing here reads a clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::breaker::opening_for;
use crate::fleet::HostId;
use crate::time::Timestamp;

/// A failing item whose opening ended this long ago with no probe's answer since reads as
/// closed: the longest opening, so a live failure with callers re-opens well within it.
pub const STALE_AFTER: Duration = crate::breaker::MAX_OPEN;

/// The fleet's probe lease on a half-open scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetProbe {
    /// The host probing.
    pub host: HostId,
    /// After this instant another host may claim the probe.
    pub until: Timestamp,
}

/// One scope's breaker as the fleet shares it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FleetBreaker {
    /// When the failure started (the first opening); `None`: closed.
    pub failing_since: Option<Timestamp>,
    /// The end of the current opening (meaningless while closed).
    pub open_until: Timestamp,
    /// Openings since the failure started (first opening and re-openings).
    pub openings: u32,
    /// The probe lease, if one was claimed during this half-open period.
    pub probe: Option<FleetProbe>,
    /// When the item was last written (its idle expiry counts from here).
    pub written_at: Timestamp,
}

/// The item as a host reads it at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetBreakerView {
    /// No failure known to the fleet.
    Closed,
    /// Failing: nothing is sent before `until` (in the past: half-open).
    Failing {
        failing_since: Timestamp,
        until: Timestamp,
        /// A live probe lease held by some host.
        probe: Option<FleetProbe>,
    },
}

impl FleetBreaker {
    /// What the item says at `now`.
    pub fn view(&self, now: Timestamp) -> FleetBreakerView {
        match self.failing_since {
            None => FleetBreakerView::Closed,
            // Nobody probed for [`STALE_AFTER`] after the opening ended (the hosts that
            // knew of it stopped calling, or crashed mid-probe): what it says is too old
            // to stop anyone, and its age must not stretch the next opening.
            Some(_) if now >= self.open_until + STALE_AFTER => FleetBreakerView::Closed,
            Some(failing_since) => FleetBreakerView::Failing {
                failing_since,
                until: self.open_until,
                probe: self
                    .probe
                    .clone()
                    .filter(|p| p.until > now && self.open_until <= now),
            },
        }
    }
}

/// View of an item that may not exist yet (no item: closed).
pub fn view_of(item: Option<&FleetBreaker>, now: Timestamp) -> FleetBreakerView {
    item.map_or(FleetBreakerView::Closed, |i| i.view(now))
}

/// What a rule decided: write this item (on condition of the version read), or leave
/// the item as it is; either way, `view` is the state the host should take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change<T> {
    /// The item to write, if any.
    pub write: Option<FleetBreaker>,
    /// The answer for the host.
    pub answer: T,
}

/// A host's breaker opened at `now` after its failures, for `open_for`: write the
/// opening to a closed item; a failing item is left alone and its view returned (the
/// host adopts it).
pub fn publish_opening(
    item: Option<&FleetBreaker>,
    now: Timestamp,
    open_for: Duration,
) -> Change<FleetBreakerView> {
    match view_of(item, now) {
        FleetBreakerView::Closed => {
            let written = FleetBreaker {
                failing_since: Some(now),
                open_until: now + open_for,
                openings: 1,
                probe: None,
                written_at: now,
            };
            Change {
                answer: written.view(now),
                write: Some(written),
            }
        }
        failing => Change {
            write: None,
            answer: failing,
        },
    }
}

/// What a claim of the fleet's probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeClaim {
    /// This host probes, until the instant.
    Won { until: Timestamp },
    /// Another host holds a live lease until the instant: wait, read again.
    Held { until: Timestamp },
    /// The item is closed (a probe succeeded elsewhere): close.
    Closed,
    /// The item is open until `until`: adopt the opening.
    Open {
        failing_since: Timestamp,
        until: Timestamp,
    },
}

/// `host` wants to probe a scope its own breaker holds half-open, at `now`, under a lease
/// of `lease`. Wins a half-open item whose lease is free, lapsed or already its own.
pub fn claim_probe(
    item: Option<&FleetBreaker>,
    host: &str,
    now: Timestamp,
    lease: Duration,
) -> Change<ProbeClaim> {
    let keep = |answer| Change {
        write: None,
        answer,
    };
    let Some(current) = item else {
        return keep(ProbeClaim::Closed);
    };
    match current.view(now) {
        FleetBreakerView::Closed => keep(ProbeClaim::Closed),
        FleetBreakerView::Failing {
            failing_since,
            until,
            ..
        } if until > now => keep(ProbeClaim::Open {
            failing_since,
            until,
        }),
        FleetBreakerView::Failing { probe: Some(p), .. } if p.host != host => {
            keep(ProbeClaim::Held { until: p.until })
        }
        FleetBreakerView::Failing { .. } => {
            let until = now + lease;
            Change {
                write: Some(FleetBreaker {
                    probe: Some(FleetProbe {
                        host: host.to_string(),
                        until,
                    }),
                    written_at: now,
                    ..current.clone()
                }),
                answer: ProbeClaim::Won { until },
            }
        }
    }
}

/// A probe's answer at `now`: `recovered` closes the item; a failure re-opens it for
/// [`opening_for`] its failure's age (`local_since`, the host's own start of the failure,
/// stands in if the item says closed). An item someone already re-opened keeps the later
/// end.
pub fn publish_answer(
    item: Option<&FleetBreaker>,
    recovered: bool,
    local_since: Timestamp,
    now: Timestamp,
) -> Change<FleetBreakerView> {
    let current = item.cloned().unwrap_or_default();
    let written = if recovered {
        FleetBreaker {
            written_at: now,
            ..FleetBreaker::default()
        }
    } else {
        let (since, still_open, openings) = match current.view(now) {
            FleetBreakerView::Failing {
                failing_since,
                until,
                ..
            } => (failing_since, until > now, current.openings),
            FleetBreakerView::Closed => (local_since, false, 0),
        };
        FleetBreaker {
            failing_since: Some(since),
            open_until: if still_open {
                current.open_until.max(now + opening_for(Some(since), now))
            } else {
                now + opening_for(Some(since), now)
            },
            openings: if still_open { openings } else { openings + 1 },
            probe: None,
            written_at: now,
        }
    };
    Change {
        answer: written.view(now),
        write: Some(written),
    }
}

#[cfg(test)]
#[path = "breaker_fleet_tests.rs"]
mod tests;
