//! `Cancel`: remove queued waiters of one scope; they never start.

use actix::Message;

/// Which waiters to cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelScope {
    /// Every waiter tagged with this scope (scan) id.
    Scope(u64),
    /// Every waiter that came through this connection (it closed; a reconnection of the
    /// same process keeps its own waiters).
    Connection(u64),
}

/// Cancel queued waiters; answers how many were removed.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct Cancel(pub CancelScope);
