//! Calendar allowances: at most `amount` cost units between consecutive resets, given
//! back in one lump at each reset (not dripped like a token bucket).
//!
//! # Periods
//! The resets are the fire instants of a cron schedule (with its DST rule, `fire.rs`), so
//! `"0 0 * * *"` in America/New_York resets at each local midnight, once, however the
//! night's clock change falls. The period containing `t` is
//! `[last reset at or before t, next reset after t)`; before the first reset the period
//! starts at the Unix epoch.
//!
//! # Use is derived from a monotonic counter
//! [`AllowanceCounter`] keeps the total cost consumed since the key was created, which only
//! grows, and the total as it stood when the current period began. The period's use is
//! the difference. A reset writes a new baseline and never subtracts, so usage
//! aggregation (deltas of the total) is unaffected by resets, as seed 003 asks.
//! The counter rolls forward only: a clock that steps back never re-opens a period.
//!
//! # Persistence and the crash rule (proposal for the actor, phase 2)
//! The counter is persisted with the key's record, and every grant is charged under the
//! record's write-ahead [`Lease`](crate::Lease) (`lease.rs`): a record with a counter
//! snapshot allows at most `lease.cost` more cost after it. On a crash,
//! [`AllowanceCounter::restore`] charges the whole lease as consumed:
//! - restored in the snapshot's period: the period's use grows by the lease, which covers
//!   every grant the dead coordinator could have made after the snapshot;
//! - restored in a later period: the period's use *is* the lease (those grants may have
//!   fallen after the reset), and the earlier period is over.
//!
//! Either way the restored use is at least the real use, so no period ever admits more
//! than `amount` across a crash; the price of a crash is at most one lease of allowance.
//! Processes share the counter through the coordinator, like the bucket.

use serde::{Deserialize, Serialize};

use super::cron::CronSchedule;
use super::wall_clock::WallClock;

/// The largest allowance amount (integers up to here are exact in JSON numbers).
pub const MAX_ALLOWANCE_AMOUNT: u64 = 1 << 53;

/// A validated allowance: `amount` cost units per period between resets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Allowance {
    amount: u64,
    #[serde(flatten)]
    resets: CronSchedule,
}

/// An amount outside `1..=MAX_ALLOWANCE_AMOUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be a whole number from 1 through {MAX_ALLOWANCE_AMOUNT}")]
pub struct InvalidAmount;

/// One period: `[start, next_reset)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowancePeriod {
    /// The last reset at or before the instant asked about (the Unix epoch if none).
    pub start: WallClock,
    /// The next reset ([`WallClock::MAX`] if the schedule fires no more).
    pub next_reset: WallClock,
}

/// Why a charge does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum AllowanceDenial {
    /// Not now: the period's allowance is spent; it comes back at `resets_at`.
    Exhausted { resets_at: WallClock },
    /// Never: one charge costs more than a whole period allows.
    ExceedsAmount { cost: u64, amount: u64 },
}

impl Allowance {
    /// `amount` per period between the fire instants of `resets`.
    pub fn new(amount: u64, resets: CronSchedule) -> Result<Self, InvalidAmount> {
        if amount == 0 || amount > MAX_ALLOWANCE_AMOUNT {
            return Err(InvalidAmount);
        }
        Ok(Allowance { amount, resets })
    }

    /// Cost units per period.
    pub fn amount(&self) -> u64 {
        self.amount
    }

    /// The reset schedule.
    pub fn resets(&self) -> &CronSchedule {
        &self.resets
    }

    /// The period containing `t`.
    pub fn period_at(&self, t: WallClock) -> AllowancePeriod {
        AllowancePeriod {
            start: self
                .resets
                .last_fire_at_or_before(t)
                .unwrap_or(WallClock::UNIX_EPOCH),
            next_reset: self.resets.next_fire_after(t).unwrap_or(WallClock::MAX),
        }
    }
}

/// The monotonic consumed counter of one allowance and its current period's baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowanceCounter {
    consumed_total: u64,
    period: AllowancePeriod,
    consumed_at_period_start: u64,
}

impl AllowanceCounter {
    /// A counter standing at `consumed_total`, with nothing used in the period of `now`.
    pub fn new(allowance: &Allowance, consumed_total: u64, now: WallClock) -> Self {
        AllowanceCounter {
            consumed_total,
            period: allowance.period_at(now),
            consumed_at_period_start: consumed_total,
        }
    }

    /// A counter as stored elsewhere (a fleet item's attributes): the total consumed, the
    /// period it is in and the total at that period's start (at most the total).
    pub fn from_parts(consumed_total: u64, period: AllowancePeriod, baseline: u64) -> Self {
        AllowanceCounter {
            consumed_total,
            period,
            consumed_at_period_start: baseline.min(consumed_total),
        }
    }

    /// The total as it stood when the current period began.
    pub fn baseline(&self) -> u64 {
        self.consumed_at_period_start
    }

    /// Charge `cost` without a check: a fleet block the caller sized to
    /// [`AllowanceCounter::remaining`] (the counter only grows).
    pub fn charge(&mut self, cost: u64) {
        self.consumed_total = self.consumed_total.saturating_add(cost);
    }

    /// Total cost consumed since creation (never decreases).
    pub fn consumed_total(&self) -> u64 {
        self.consumed_total
    }

    /// The period the counter is in.
    pub fn period(&self) -> AllowancePeriod {
        self.period
    }

    /// Cost used in the current period.
    pub fn used(&self) -> u64 {
        self.consumed_total - self.consumed_at_period_start
    }

    /// Cost left in the current period.
    pub fn remaining(&self, allowance: &Allowance) -> u64 {
        allowance.amount.saturating_sub(self.used())
    }

    /// Move to the period of `now` if a reset has passed: the whole amount comes back.
    pub fn roll(&mut self, allowance: &Allowance, now: WallClock) {
        if now >= self.period.next_reset {
            self.period = allowance.period_at(now);
            self.consumed_at_period_start = self.consumed_total;
        }
    }

    /// Whether `cost` fits at `now` (after rolling to `now`'s period), without charging.
    pub fn check(
        &mut self,
        allowance: &Allowance,
        cost: u64,
        now: WallClock,
    ) -> Result<(), AllowanceDenial> {
        self.roll(allowance, now);
        if cost > allowance.amount {
            return Err(AllowanceDenial::ExceedsAmount {
                cost,
                amount: allowance.amount,
            });
        }
        if cost > self.remaining(allowance) {
            return Err(AllowanceDenial::Exhausted {
                resets_at: self.period.next_reset,
            });
        }
        Ok(())
    }

    /// Charge `cost` at `now` if it fits.
    pub fn consume(
        &mut self,
        allowance: &Allowance,
        cost: u64,
        now: WallClock,
    ) -> Result<(), AllowanceDenial> {
        self.check(allowance, cost, now)?;
        self.consumed_total = self.consumed_total.saturating_add(cost);
        Ok(())
    }

    /// The counter after a crash: `recorded` is the last stored snapshot, `lease_cost` the
    /// most cost its lease allowed after it (see the module docs for why this never lets a
    /// period exceed its amount).
    pub fn restore(
        allowance: &Allowance,
        recorded: &AllowanceCounter,
        lease_cost: u64,
        now: WallClock,
    ) -> Self {
        let consumed_total = recorded.consumed_total.saturating_add(lease_cost);
        if now >= recorded.period.start && now < recorded.period.next_reset {
            AllowanceCounter {
                consumed_total,
                ..*recorded
            }
        } else {
            AllowanceCounter {
                consumed_total,
                period: allowance.period_at(now),
                consumed_at_period_start: recorded.consumed_total,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> WallClock {
        WallClock::parse_rfc3339(text).unwrap()
    }

    fn daily_new_york(amount: u64) -> Allowance {
        Allowance::new(
            amount,
            CronSchedule::parse("0 0 * * *", "America/New_York").unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn a_daily_period_runs_from_local_midnight_to_local_midnight() {
        let a = daily_new_york(20_000);
        // 2026-03-08 is the spring-forward day: that local day is 23 hours long.
        let p = a.period_at(w("2026-03-08T12:00:00Z"));
        assert_eq!(
            p,
            AllowancePeriod {
                start: w("2026-03-08T05:00:00Z"),
                next_reset: w("2026-03-09T04:00:00Z")
            }
        );
        // At the reset instant itself the new period has begun.
        assert_eq!(
            a.period_at(w("2026-03-09T04:00:00Z")).start,
            w("2026-03-09T04:00:00Z")
        );
        // 2026-11-01 falls back: 25 hours.
        let p = a.period_at(w("2026-11-01T12:00:00Z"));
        assert_eq!(
            p,
            AllowancePeriod {
                start: w("2026-11-01T04:00:00Z"),
                next_reset: w("2026-11-02T05:00:00Z")
            }
        );
    }

    #[test]
    fn an_exhausted_allowance_waits_for_the_reset_and_comes_back_in_one_lump() {
        let a = daily_new_york(3);
        let t = w("2026-01-05T15:00:00Z");
        let mut c = AllowanceCounter::new(&a, 100, t);
        assert_eq!(c.consume(&a, 2, t), Ok(()));
        assert_eq!(c.consume(&a, 1, t), Ok(()));
        let reset = w("2026-01-06T05:00:00Z");
        assert_eq!(
            c.consume(&a, 1, t),
            Err(AllowanceDenial::Exhausted { resets_at: reset })
        );
        assert_eq!(
            c.consume(&a, 4, t),
            Err(AllowanceDenial::ExceedsAmount { cost: 4, amount: 3 })
        );
        assert_eq!(
            c.consume(&a, 1, reset.plus_millis(-1)),
            Err(AllowanceDenial::Exhausted { resets_at: reset })
        );
        assert_eq!((c.used(), c.consumed_total()), (3, 103));
        assert_eq!(c.consume(&a, 3, reset), Ok(()));
        assert_eq!((c.used(), c.remaining(&a), c.consumed_total()), (3, 0, 106));
        // A clock stepping back never re-opens the spent period.
        assert!(c.consume(&a, 1, t).is_err());
    }

    #[test]
    fn a_restore_charges_the_whole_lease_to_the_period_of_the_restore() {
        let a = daily_new_york(10);
        let t = w("2026-01-05T15:00:00Z");
        let mut recorded = AllowanceCounter::new(&a, 0, t);
        recorded.consume(&a, 4, t).unwrap();
        // Same period: 4 used + a lease of 3.
        let same = AllowanceCounter::restore(&a, &recorded, 3, w("2026-01-05T16:00:00Z"));
        assert_eq!((same.used(), same.consumed_total()), (7, 7));
        // After the reset: the lease alone, since those grants may follow the reset.
        let later = AllowanceCounter::restore(&a, &recorded, 3, w("2026-01-06T06:00:00Z"));
        assert_eq!((later.used(), later.consumed_total()), (3, 7));
        assert_eq!(later.period().start, w("2026-01-06T05:00:00Z"));
    }

    #[test]
    fn amounts_are_bounded() {
        let resets = CronSchedule::parse("0 0 * * *", "UTC").unwrap();
        assert_eq!(Allowance::new(0, resets.clone()), Err(InvalidAmount));
        assert_eq!(
            Allowance::new(MAX_ALLOWANCE_AMOUNT + 1, resets.clone()),
            Err(InvalidAmount)
        );
        assert!(Allowance::new(MAX_ALLOWANCE_AMOUNT, resets).is_ok());
    }
}
