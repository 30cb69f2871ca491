//! The messages a quota actor serves (and the breaker board's: `BreakerPass`,
//! `BreakerReport`, `Breakers`), one concern per file. `Refund` gives back the unsent
//! half of a paired admission.
//!
//! Waiting requests (`Reserve`, `Admit`) carry a oneshot reply sender instead of an actix
//! response: the actor keeps the sender in its FIFO and answers when the request is
//! granted, refused, timed out or cancelled. A caller that drops its receiver (its future
//! was dropped) is treated as cancelled and never starts.

pub(crate) mod admit;
mod breaker_pass;
mod breaker_report;
mod breakers;
mod cancel;
mod feedback;
mod pause;
mod refund;
mod release;
mod reserve;
mod status;

pub use admit::Admit;
pub use breaker_pass::BreakerPass;
pub use breaker_report::BreakerReport;
pub use breakers::{BreakerStatus, Breakers};
pub use cancel::{Cancel, CancelScope};
pub use feedback::Feedback;
pub use pause::Pause;
pub use refund::Refund;
pub use release::{Release, ReleaseOwner};
pub use reserve::Reserve;
pub use status::{AllowanceStatus, CalendarStatus, FleetDegradedSpell, KeyStatus, Status};

/// Identifies a waiter for cancellation: the scan (or other scope) it belongs to, the
/// process that sent it, and the connection it came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaiterTag {
    /// The scan or scope id, if it has one.
    pub scope: Option<u64>,
    /// The requesting process.
    pub owner: tollgate_quota::Owner,
    /// The coordinator connection it came through; [`IN_PROCESS`] for none.
    pub connection: u64,
}

/// The connection id of requests made in the coordinator's own process.
pub const IN_PROCESS: u64 = 0;
