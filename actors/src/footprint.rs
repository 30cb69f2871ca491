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
    /// Quota actors the registry holds (one per key used within `evict_after`, or busy).
    pub live_actors: usize,
    /// The most quota actors the registry held at once since it started: what a scan
    /// cost at its peak (after the scan, `live_actors` counts only the keys used within
    /// `evict_after` of its end).
    pub peak_live_actors: usize,
    /// Quota actors started since the registry started: one per key used, plus one each
    /// time a key is used again after its actor retired.
    pub started_actors: u64,
    /// Actor addresses this process's handle remembers (live ones, and dead ones until
    /// the next pruning: `actor_cache`).
    pub cached_addresses: usize,
    /// Breaker scopes the board holds (open, half-open, failing or waited for; closed
    /// and idle ones are forgotten).
    pub breaker_scopes: usize,
}

/// How many quota actors the registry holds, held at most, and started.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "ActorCounts")]
pub(crate) struct CountActors;

/// The registry's answer to [`CountActors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ActorCounts {
    pub(crate) live: usize,
    pub(crate) peak: usize,
    pub(crate) started: u64,
}

/// How many scopes the breaker board holds.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub(crate) struct CountScopes;
