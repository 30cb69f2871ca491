//! The admission gate chain: what an admission passes, in order, before the key's quota
//! state is asked. Its reservation must be its own, the calendar allowance must have
//! room, the lease in hand must cover its cost, and in fleet mode a token of the key's
//! fleet block must be spendable.
//!
//! Why a pure function? `serve` (in `mod.rs`) answers waiters, charges grants and wakes
//! the actor; which gate stops an admission, and what each stop asks of the actor (a
//! lease renewal for the cost, a fleet block for the units, a refusal), is decided here,
//! with a table of cases. The gates are asked through [`Gates`], lazily and in chain
//! order, so a gate behind a stop is never asked: the calendar's check rolls its
//! counter, and the fleet's walks the tokens in hand.

use std::time::Duration;

use tollgate_quota::fleet::FleetGate;
use tollgate_quota::{Refusal, Timestamp};

/// A waiter held back for a lease is woken by the renewal's acknowledgement; this is only
/// a backstop.
pub(super) const LEASE_RECHECK: Duration = Duration::from_secs(1);
/// A waiter held back for a block is woken by the request's answer; this is a backstop.
pub(super) const FLEET_RECHECK: Duration = Duration::from_secs(1);

/// Whose reservation an admission quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Its owner's (or one the state no longer knows, which admission treats as before).
    Own,
    /// Someone else's: a stale id from before a failover.
    Foreign,
}

/// Whether the lease in hand covers an admission's cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lease {
    Covers,
    Short,
}

/// The fleet's answer about an admission.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FleetAnswer {
    pub gate: FleetGate,
    /// For a stopped key: whether an attempt to rejoin is in flight or due now.
    pub rejoin: Rejoin,
}

/// Whether a stopped key is about to rejoin the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rejoin {
    /// A request is in flight or would start now: hold the waiter for its answer.
    Underway,
    /// No attempt is due: refuse.
    NotDue,
}

/// The gates' answers about one admission, asked in chain order.
pub(super) trait Gates {
    /// Whose reservation it quotes.
    fn slot(&self) -> Slot;
    /// The calendar allowance's stop (`None`: room, or no allowance): a [`Gate::Wait`]
    /// for a reset before the deadline, otherwise a [`Gate::Refuse`].
    fn calendar(&mut self) -> Option<Gate>;
    /// Whether the lease in hand covers its cost.
    fn lease(&self) -> Lease;
    /// The fleet's answer, when the key is in fleet mode and the cost within the
    /// policy's burst (a larger one is the quota state's to refuse).
    fn fleet(&self) -> Option<FleetAnswer>;
}

/// Where the chain sends an admission.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Gate {
    /// Every gate passed: ask the quota state (and charge each gate on a grant).
    Pass,
    /// Wait until the instant (a calendar reset, a token's window, the local share).
    Wait(Timestamp),
    /// Refuse the admission.
    Refuse(Refusal),
    /// The lease in hand is short: store a renewal for `cost`, recheck at the instant.
    LeaseShort { cost: f64, recheck_at: Timestamp },
    /// A fleet block of `units` is needed: request one, recheck at the instant.
    NeedsBlock { units: u64, recheck_at: Timestamp },
}

/// The chain's answer, and whether it reached the fleet gate (a degraded key in use
/// retries the table even when its local share admitted everyone).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Verdict {
    pub gate: Gate,
    pub fleet_asked: bool,
}

/// Pass an admission of `cost` through `gates` at `now`.
pub(super) fn admission_gate(gates: &mut impl Gates, cost: u32, now: Timestamp) -> Verdict {
    let stop = |gate| Verdict {
        gate,
        fleet_asked: false,
    };
    if gates.slot() == Slot::Foreign {
        return stop(Gate::Refuse(Refusal::UnknownReservation));
    }
    if let Some(gate) = gates.calendar() {
        return stop(gate);
    }
    if gates.lease() == Lease::Short {
        let (cost, recheck_at) = (f64::from(cost.max(1)), now + LEASE_RECHECK);
        return stop(Gate::LeaseShort { cost, recheck_at });
    }
    let Some(fleet) = gates.fleet() else {
        return stop(Gate::Pass);
    };
    let units = u64::from(cost.max(1));
    let needs_block = Gate::NeedsBlock {
        units,
        recheck_at: now + FLEET_RECHECK,
    };
    let gate = match fleet.gate {
        FleetGate::Go => Gate::Pass,
        FleetGate::Wait(at) => Gate::Wait(at),
        FleetGate::NeedBlock => needs_block,
        FleetGate::RetryRefused => Gate::Refuse(Refusal::RetryAllowanceExhausted),
        // Held for a rejoin attempt in flight or due now; refused otherwise.
        FleetGate::Stopped(_) => match fleet.rejoin {
            Rejoin::Underway => needs_block,
            Rejoin::NotDue => Gate::Refuse(Refusal::FleetStopped),
        },
    };
    Verdict {
        gate,
        fleet_asked: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gates with fixed answers that record which were asked.
    #[derive(Debug, Clone)]
    struct Fixed {
        slot: Slot,
        calendar: Option<Gate>,
        lease: Lease,
        fleet: Option<FleetAnswer>,
        asked: Vec<&'static str>,
    }

    impl Gates for Fixed {
        fn slot(&self) -> Slot {
            self.slot
        }
        fn calendar(&mut self) -> Option<Gate> {
            self.asked.push("calendar");
            self.calendar.clone()
        }
        fn lease(&self) -> Lease {
            self.lease
        }
        fn fleet(&self) -> Option<FleetAnswer> {
            self.fleet.clone()
        }
    }

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    const OPEN: Fixed = Fixed {
        slot: Slot::Own,
        calendar: None,
        lease: Lease::Covers,
        fleet: None,
        asked: Vec::new(),
    };

    fn fleet(gate: FleetGate, rejoin: Rejoin) -> Option<FleetAnswer> {
        Some(FleetAnswer { gate, rejoin })
    }

    #[test]
    fn each_gate_stops_an_admission_in_chain_order_or_lets_it_pass() {
        let now = ms(1_000);
        let recheck = ms(2_000);
        let refuse = Gate::Refuse;
        let stopped = || FleetGate::Stopped("table t: AccessDenied".into());
        // (case, gates, cost, gate, fleet asked, calendar asked)
        let table: Vec<(&str, Fixed, u32, Gate, bool, bool)> = vec![
            (
                "no gate stops a plain key",
                OPEN,
                1,
                Gate::Pass,
                false,
                true,
            ),
            (
                "someone else's slot is refused before any other gate",
                Fixed {
                    slot: Slot::Foreign,
                    calendar: Some(Gate::Wait(ms(5_000))),
                    lease: Lease::Short,
                    ..OPEN
                },
                1,
                refuse(Refusal::UnknownReservation),
                false,
                false,
            ),
            (
                "the calendar's stop comes before the lease",
                Fixed {
                    calendar: Some(Gate::Wait(ms(5_000))),
                    lease: Lease::Short,
                    fleet: fleet(FleetGate::Go, Rejoin::NotDue),
                    ..OPEN
                },
                1,
                Gate::Wait(ms(5_000)),
                false,
                true,
            ),
            (
                "an allowance refusal passes through",
                Fixed {
                    calendar: Some(refuse(Refusal::CostExceedsAllowance { cost: 9, amount: 5 })),
                    ..OPEN
                },
                9,
                refuse(Refusal::CostExceedsAllowance { cost: 9, amount: 5 }),
                false,
                true,
            ),
            (
                "a short lease holds the admission for a renewal of its cost",
                Fixed {
                    lease: Lease::Short,
                    fleet: fleet(FleetGate::Go, Rejoin::NotDue),
                    ..OPEN
                },
                3,
                Gate::LeaseShort {
                    cost: 3.0,
                    recheck_at: recheck,
                },
                false,
                true,
            ),
            (
                "a zero cost is charged as one",
                Fixed {
                    lease: Lease::Short,
                    ..OPEN
                },
                0,
                Gate::LeaseShort {
                    cost: 1.0,
                    recheck_at: recheck,
                },
                false,
                true,
            ),
            (
                "a spendable fleet token passes",
                Fixed {
                    fleet: fleet(FleetGate::Go, Rejoin::NotDue),
                    ..OPEN
                },
                1,
                Gate::Pass,
                true,
                true,
            ),
            (
                "a token's window not yet open waits for it",
                Fixed {
                    fleet: fleet(FleetGate::Wait(ms(1_050)), Rejoin::NotDue),
                    ..OPEN
                },
                1,
                Gate::Wait(ms(1_050)),
                true,
                true,
            ),
            (
                "no token in hand asks for a block of the admission's units",
                Fixed {
                    fleet: fleet(FleetGate::NeedBlock, Rejoin::NotDue),
                    ..OPEN
                },
                2,
                Gate::NeedsBlock {
                    units: 2,
                    recheck_at: recheck,
                },
                true,
                true,
            ),
            (
                "the fleet's retry units used up refuse the retry",
                Fixed {
                    fleet: fleet(FleetGate::RetryRefused, Rejoin::NotDue),
                    ..OPEN
                },
                1,
                refuse(Refusal::RetryAllowanceExhausted),
                true,
                true,
            ),
            (
                "a stopped key about to rejoin holds the admission for the answer",
                Fixed {
                    fleet: fleet(stopped(), Rejoin::Underway),
                    ..OPEN
                },
                1,
                Gate::NeedsBlock {
                    units: 1,
                    recheck_at: recheck,
                },
                true,
                true,
            ),
            (
                "a stopped key with no rejoin due refuses",
                Fixed {
                    fleet: fleet(stopped(), Rejoin::NotDue),
                    ..OPEN
                },
                1,
                refuse(Refusal::FleetStopped),
                true,
                true,
            ),
        ];
        for (case, mut gates, cost, gate, fleet_asked, calendar_asked) in table {
            let verdict = admission_gate(&mut gates, cost, now);
            assert_eq!(verdict, Verdict { gate, fleet_asked }, "{case}");
            assert_eq!(gates.asked == ["calendar"], calendar_asked, "{case}");
        }
    }
}
