//! Serving the admission queue: each head admission goes through the gate chain
//! ([`super::gate`]), then the quota state; a grant is charged to every gate.
//!
//! This file only applies the chain's [`Verdict`]: it answers waiters, notes what a held
//! waiter needs (a lease renewal, a fleet block) and charges grants. The gates' answers
//! come from the actor's parts through [`AdmitGates`], read in chain order.

use tollgate_quota::fleet::KeyUse;
use tollgate_quota::{Admission, Exit, LeaseLedger, QuotaState, Refusal, Step, Timestamp};

use super::calendar::Calendar;
use super::fleet::FleetKey;
use super::gate::{admission_gate, FleetAnswer, Gate, Gates, Lease, Rejoin, Slot, Verdict};
use super::QuotaActor;
use crate::messages::Admit;
use crate::AdmissionError;

impl QuotaActor {
    /// Run the admission queue once. Returns the next instant worth waking at, and the
    /// cost of the head admission if it waits for a lease.
    pub(super) fn serve_admissions(&mut self, now: Timestamp) -> (Option<Timestamp>, Option<f64>) {
        let key = &self.key;
        let state = &mut self.state;
        let calendar = &mut self.calendar;
        let ledger = &mut self.ledger;
        let stop_reason = self.fleet.as_deref().and_then(FleetKey::stop_reason);
        let fleet = &mut self.fleet;
        let mut unsent_retries = 0;
        let mut blocked_on_lease = None;
        let wake = self.admitting.poll(
            now,
            |a| {
                if a.reply.is_closed() {
                    return Step::Drop;
                }
                let mut gates = AdmitGates {
                    admit: a,
                    state,
                    calendar,
                    ledger,
                    fleet: fleet.as_deref(),
                    now,
                };
                let Verdict { gate, fleet_asked } = admission_gate(&mut gates, a.request.cost, now);
                if let Some(f) = fleet.as_mut() {
                    f.asked |= fleet_asked;
                }
                match gate {
                    Gate::Pass => {}
                    Gate::Wait(at) => return Step::Wait(at),
                    Gate::Refuse(refusal) => return Step::Refuse(refusal),
                    Gate::LeaseShort { cost, recheck_at } => {
                        blocked_on_lease = Some(cost);
                        return Step::Wait(recheck_at);
                    }
                    Gate::NeedsBlock { units, recheck_at } => {
                        if let Some(f) = fleet.as_mut() {
                            f.blocked = Some(units);
                        }
                        return Step::Wait(recheck_at);
                    }
                }
                match state.admit(&a.request, now) {
                    Admission::Granted(g) => {
                        ledger.charge(a.request.charged_cost());
                        if let Some(f) = fleet.as_mut() {
                            let units = a.request.fleet_units(state.policy());
                            f.ledger.charge(units, a.request.retry, now);
                        }
                        calendar.charge(a.request.cost, now);
                        Step::Grant(g)
                    }
                    Admission::NotUntil { at, .. } => Step::Wait(at),
                    Admission::Refused(r) => Step::Refuse(r),
                }
            },
            |a, exit| match exit {
                Exit::Granted(g) => {
                    if a.reply.send(Ok(g)).is_err() && g.retry_spent {
                        unsent_retries += 1;
                    }
                }
                Exit::Refused(refusal) => {
                    let error = match (&stop_reason, refusal) {
                        (Some(reason), Refusal::FleetStopped) => AdmissionError::Fleet {
                            key: key.clone(),
                            reason: reason.clone(),
                        },
                        _ => AdmissionError::Refused {
                            key: key.clone(),
                            refusal,
                        },
                    };
                    let _ = a.reply.send(Err(error));
                }
                Exit::DeadlineExceeded => {
                    let _ = a
                        .reply
                        .send(Err(AdmissionError::DeadlineExceeded { key: key.clone() }));
                }
                Exit::Dropped => {}
            },
        );
        for _ in 0..unsent_retries {
            state.refund_retry();
        }
        (wake, blocked_on_lease)
    }
}

/// One admission's gates, over the actor's parts.
struct AdmitGates<'a> {
    admit: &'a Admit,
    state: &'a QuotaState,
    calendar: &'a mut Calendar,
    ledger: &'a LeaseLedger,
    fleet: Option<&'a FleetKey>,
    now: Timestamp,
}

impl Gates for AdmitGates<'_> {
    fn slot(&self) -> Slot {
        let holder = self
            .state
            .reservations()
            .get(self.admit.request.reservation, self.now);
        match holder {
            Some(r) if r.owner != self.admit.tag.owner => Slot::Foreign,
            _ => Slot::Own,
        }
    }

    fn calendar(&mut self) -> Option<Gate> {
        let request = &self.admit.request;
        self.calendar
            .gate(request.cost, self.now, self.admit.deadline)
    }

    fn lease(&self) -> Lease {
        let request = &self.admit.request;
        let covered = match request.retry {
            // Never under a provisional first lease (`tollgate_quota::unrecorded`).
            true => self.ledger.covers_retry(request.charged_cost()),
            false => self.ledger.covers(request.charged_cost()),
        };
        match covered {
            true => Lease::Covers,
            false => Lease::Short,
        }
    }

    fn fleet(&self) -> Option<FleetAnswer> {
        let request = &self.admit.request;
        let f = self
            .fleet
            .filter(|_| request.charged_cost() <= self.state.policy().burst())?;
        let units = request.fleet_units(self.state.policy());
        let gate = f.ledger.gate(units, request.retry, self.now);
        let underway =
            || f.ledger.in_flight() || f.ledger.wants_request(KeyUse::NeedsBlock, self.now);
        let rejoin = match gate {
            tollgate_quota::fleet::FleetGate::Stopped(_) if underway() => Rejoin::Underway,
            _ => Rejoin::NotDue,
        };
        Some(FleetAnswer { gate, rejoin })
    }
}
