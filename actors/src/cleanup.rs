//! [`Cleanup`]: how a reservation's release went. Its own file because the guard
//! (`handle`), the slots (`backend`) and the client (`remote`) all name it.

/// How a release went (seed 000's `cleanupOutcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleanup {
    /// Handed to the key's actor, or to a live coordinator connection.
    Released,
    /// Queued, to be retried: the coordinator's store refuses writes (the persister
    /// retries the release's record until the store takes it), or no coordinator
    /// connection is up (the client re-sends it after the failover). Either way the
    /// reservation's expiry bounds how long it can hold capacity.
    Queued,
}
