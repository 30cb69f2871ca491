//! [`Footprint`]: how much of the coordinator's memory is per key or per scope now, as
//! counts (the bytes each costs are in docs/architecture.md, "Memory per key").
//!
//! Why it exists: nothing in admission may grow with every key or account it has ever
//! seen, only with those in use (an organization scan touches tens of thousands of
//! keys). The counts let tests show each structure shrinking back after the keys go
//! idle, and let `bench org` report live actors as a scan proceeds.

use actix::Message;

/// The per-key and per-scope structures of the quota actors in this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Footprint {
    /// Quota actors the registry holds (one per key used within `evict_after`).
    pub live_actors: usize,
    /// Actor addresses this process's handle remembers (live ones, and dead ones until
    /// the next pruning: `actor_cache`).
    pub cached_addresses: usize,
    /// Breaker scopes the board holds (open, half-open, failing or waited for; closed
    /// and idle ones are forgotten).
    pub breaker_scopes: usize,
}

/// How many quota actors the registry holds.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub(crate) struct CountActors;

/// How many scopes the breaker board holds.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub(crate) struct CountScopes;
