//! `Release` and `ReleaseOwner`: give concurrency slots back.

use actix::Message;
use tollgate_quota::{Owner, ReservationId};

/// Give one slot back.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Release {
    /// The slot.
    pub reservation: ReservationId,
}

/// Give back every slot of an owner and drop its waiters (a client went away).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct ReleaseOwner {
    /// The owner.
    pub owner: Owner,
}
