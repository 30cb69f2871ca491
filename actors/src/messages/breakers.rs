//! `Breakers`: a read-only view of every known breaker, for status.

use actix::Message;
use serde::{Deserialize, Serialize};
use tollgate_quota::{BreakerState, Timestamp};

/// Ask for every breaker's state.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Vec<BreakerStatus>")]
pub struct Breakers;

/// One scope's breaker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerStatus {
    /// `partition/account/region/service`.
    pub scope: String,
    /// Closed (with its failure count), open, or half-open (with its probe lease).
    pub state: BreakerState,
    /// When it stops refusing without a probe's answer: the end of the opening or of the
    /// probe lease; `None` when a call may go now.
    pub reopens_at: Option<Timestamp>,
    /// How long its next opening lasts, in seconds.
    pub next_open_secs: u64,
    /// Callers waiting for it.
    pub waiting: usize,
    /// Fleet mode: the state was last set from the fleet's breaker item (another host's
    /// opening, claim or probe), not by this host's own answers.
    #[serde(default)]
    pub from_fleet: bool,
}
