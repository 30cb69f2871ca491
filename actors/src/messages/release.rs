//! `Release` and `ReleaseOwner`: give concurrency slots back.

use actix::Message;
use tollgate_quota::{Owner, ReservationId};

/// Give one slot back.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Release {
    /// The slot.
    pub reservation: ReservationId,
    /// Who releases it: only the holder's own release counts, so a stale id held by one
    /// process can never free a slot that a coordinator handed to another.
    pub owner: Owner,
}

/// Give back every slot of an owner and drop its waiters (a client went away).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct ReleaseOwner {
    /// The owner.
    pub owner: Owner,
}
