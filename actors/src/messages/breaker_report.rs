//! `BreakerReport`: what a scope's service answered a call sent through its breaker.

use actix::Message;
use tollgate_quota::{BreakerScope, Outcome, ProbeId};

/// Report a sent call's answer (or that a probe was never sent).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct BreakerReport {
    /// The scope.
    pub scope: BreakerScope,
    /// The service's answer; `None` when the call was never sent (it gives up its probe
    /// lease, so the next waiter probes at once).
    pub outcome: Option<Outcome>,
    /// The probe lease the call went under, if it was the probe.
    pub probe: Option<ProbeId>,
}
