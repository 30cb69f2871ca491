//! A key's calendar in its actor: the schedule in force (cached with its valid-until
//! stamp) or the calendar allowance and its monotonic counter.
//!
//! # The hot path pays one comparison
//! [`Calendar::due`] is `now >= valid_until`. An unscheduled key (and an allowance key,
//! whose policy never changes) has `valid_until` = [`NEVER`], so each poll pays that one
//! timestamp comparison; per admission, an unscheduled key adds only branches on the
//! calendar's kind (`gate`, `charge`: no wall-clock conversion, no cron, no allocation).
//! No key evaluates a cron per admission. A scheduled key
//! re-resolves ([`Calendar::refresh`]) at the first poll at or after its stamp, so a
//! boundary takes effect at the first admission after it, and the actor also wakes at the
//! stamp while anyone waits ([`Calendar::wake`]): the waiting head is re-checked under the
//! new policy, so a raised rate lets it start sooner, and a lowered one re-computes its
//! instant from the new rate (never earlier than that rate allows).
//!
//! # Allowances and the crash rule
//! The counter is stored in the key's record beside the quota state (an `allowance`
//! field, so records without one read as before), snapshotted together with it under the
//! record's lease. Every grant is charged to the lease, so after the snapshot at most
//! `lease.cost` more was consumed; [`AllowanceCounter::restore`] charges all of it, and no
//! period admits more than its amount across a crash.

use serde::{Deserialize, Serialize};
use tollgate_quota::schedule::{AllowanceDenial, DEFAULT_SCAN_CAP};
use tollgate_quota::{
    schedule, Allowance, AllowanceCounter, Lease, Policy, PolicySchedule, QuotaRecord, QuotaState,
    ReadTime, Refusal, Timestamp, WallClock,
};

use super::gate::Gate;

use crate::messages::{AllowanceStatus, CalendarStatus};

/// A stamp that never comes due.
pub(super) const NEVER: Timestamp = Timestamp::from_micros(u64::MAX);

/// The calendar of one key.
#[derive(Debug, Clone)]
pub(super) struct Calendar {
    anchor: WallClock,
    valid_until: Timestamp,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Plain,
    Schedule {
        base: Policy,
        schedule: PolicySchedule,
        entry: Option<usize>,
        until: WallClock,
    },
    Allowance {
        allowance: Allowance,
        counter: AllowanceCounter,
    },
}

/// The part of a stored record this module reads and writes.
#[derive(Debug, Serialize, Deserialize)]
struct AllowanceField {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowance: Option<AllowanceCounter>,
}

/// A record as stored: the quota state's record plus the allowance counter, if any.
#[derive(Serialize)]
pub(super) struct KeyRecord<'a> {
    #[serde(flatten)]
    record: &'a QuotaRecord,
    #[serde(flatten)]
    allowance: AllowanceField,
}

impl Calendar {
    /// A key without a read-time function.
    pub(super) fn plain() -> Self {
        Calendar {
            anchor: WallClock::UNIX_EPOCH,
            valid_until: NEVER,
            kind: Kind::Plain,
        }
    }

    /// True for a key without a schedule or an allowance.
    pub(super) fn is_plain(&self) -> bool {
        matches!(self.kind, Kind::Plain)
    }

    /// The calendar of a key with `read_time` over `base`, restoring an allowance counter
    /// from the key's `stored` record at `now` (see the module docs for the crash rule).
    pub(super) fn load(
        anchor: WallClock,
        base: Policy,
        read_time: ReadTime,
        stored: Option<&[u8]>,
        now: Timestamp,
    ) -> Self {
        let wall = WallClock::from_timestamp(now, anchor);
        let kind = match read_time {
            ReadTime::Schedule(schedule) => Kind::Schedule {
                base,
                schedule,
                entry: None,
                until: WallClock::UNIX_EPOCH,
            },
            ReadTime::Allowance(allowance) => {
                let counter = match stored.and_then(recorded_counter) {
                    Some((recorded, Some(lease))) => {
                        let spent = lease.cost.ceil() as u64;
                        AllowanceCounter::restore(&allowance, &recorded, spent, wall)
                    }
                    Some((recorded, None)) => recorded,
                    None => AllowanceCounter::new(&allowance, 0, wall),
                };
                Kind::Allowance { allowance, counter }
            }
        };
        let valid_until = match kind {
            // Resolved at the first poll.
            Kind::Schedule { .. } => Timestamp::ZERO,
            _ => NEVER,
        };
        Calendar {
            anchor,
            valid_until,
            kind,
        }
    }

    /// True when the policy in force must be resolved again (one comparison).
    #[inline]
    pub(super) fn due(&self, now: Timestamp) -> bool {
        now >= self.valid_until
    }

    /// True if the schedule, not the callers, sets the key's policy.
    pub(super) fn sets_policy(&self) -> bool {
        matches!(self.kind, Kind::Schedule { .. })
    }

    /// Resolve the schedule at `now`, put its policy in force and stamp it.
    pub(super) fn refresh(&mut self, state: &mut QuotaState, now: Timestamp) {
        let Kind::Schedule {
            base,
            schedule,
            entry,
            until,
        } = &mut self.kind
        else {
            self.valid_until = NEVER;
            return;
        };
        let t = WallClock::from_timestamp(now, self.anchor);
        let effective = schedule::resolve(base, schedule, t, t.saturating_add(DEFAULT_SCAN_CAP));
        state.enforce_policy(effective.policy, now);
        (*entry, *until) = (effective.entry, effective.valid_until);
        self.valid_until = effective.valid_until.to_timestamp(self.anchor);
    }

    /// The next wake-up of an actor with waiters (`next` is `Some` then): no later than
    /// the schedule's stamp, so waiters are re-checked under the next policy.
    pub(super) fn wake(&self, next: Option<Timestamp>) -> Option<Timestamp> {
        match self.kind {
            Kind::Schedule { .. } => next.map(|at| at.min(self.valid_until)),
            _ => next,
        }
    }

    /// Whether an admission of `cost` may go on to the quota state at `now`: `None` if so
    /// (or the key has no allowance), else the gate's stop for the waiting head: wait for
    /// the reset when it comes before `deadline`, otherwise refuse now.
    pub(super) fn gate(&mut self, cost: u32, now: Timestamp, deadline: Timestamp) -> Option<Gate> {
        let Kind::Allowance { allowance, counter } = &mut self.kind else {
            return None;
        };
        let wall = WallClock::from_timestamp(now, self.anchor);
        match counter.check(allowance, u64::from(cost.max(1)), wall) {
            Ok(()) => None,
            Err(AllowanceDenial::Exhausted { resets_at }) => {
                let at = resets_at.to_timestamp(self.anchor);
                Some(if at <= deadline {
                    Gate::Wait(at)
                } else {
                    Gate::Refuse(Refusal::AllowanceExhausted { resets_at })
                })
            }
            Err(AllowanceDenial::ExceedsAmount { amount, .. }) => {
                Some(Gate::Refuse(Refusal::CostExceedsAllowance { cost, amount }))
            }
        }
    }

    /// Charge a granted admission of `cost` to the allowance (after [`Calendar::gate`]).
    pub(super) fn charge(&mut self, cost: u32, now: Timestamp) {
        if let Kind::Allowance { allowance, counter } = &mut self.kind {
            let wall = WallClock::from_timestamp(now, self.anchor);
            let _ = counter.consume(allowance, u64::from(cost.max(1)), wall);
        }
    }

    /// `record` with this calendar's counter, ready to encode.
    pub(super) fn record<'a>(&self, record: &'a QuotaRecord) -> KeyRecord<'a> {
        let allowance = match &self.kind {
            Kind::Allowance { counter, .. } => Some(*counter),
            _ => None,
        };
        KeyRecord {
            record,
            allowance: AllowanceField { allowance },
        }
    }

    /// What `tollgate status` shows of the calendar at `now`, if the key has one.
    pub(super) fn status(&self, now: Timestamp) -> Option<CalendarStatus> {
        match &self.kind {
            Kind::Plain => None,
            Kind::Schedule { entry, until, .. } => Some(CalendarStatus {
                entry: *entry,
                valid_until: Some(*until),
                allowance: None,
            }),
            Kind::Allowance { allowance, counter } => {
                let mut counter = *counter;
                counter.roll(allowance, WallClock::from_timestamp(now, self.anchor));
                Some(CalendarStatus {
                    entry: None,
                    valid_until: None,
                    allowance: Some(AllowanceStatus::of(allowance, &counter)),
                })
            }
        }
    }
}

/// The counter and lease of a stored record, if it has a counter.
fn recorded_counter(bytes: &[u8]) -> Option<(AllowanceCounter, Option<Lease>)> {
    let counter = serde_json::from_slice::<AllowanceField>(bytes)
        .ok()?
        .allowance?;
    let lease = serde_json::from_slice::<QuotaRecord>(bytes)
        .ok()
        .and_then(|r| r.lease);
    Some((counter, lease))
}
