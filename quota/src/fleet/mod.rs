//! Fleet admission: one quota shared by every host, drawn in token blocks from one
//! DynamoDB item per canonical key (issue 13, seeds 003 and 004).
//!
//! Pure, like the rest of this crate: the item is data, a block is taken by a function of
//! (item, request, now), and the host side is bookkeeping the quota actor applies. The
//! DynamoDB store and the retry-on-conflict loop live elsewhere (`tollgate-fleet`,
//! `tollgate-actors`); here is only what decides.
//!
//! # The block protocol ([`take_block`])
//! The item holds `level` (tokens not yet handed out), `at` (its timestamp, which never
//! moves backwards), the fleet penalty, the shared retry units, and one outstanding block
//! per host. Taking a block, at the writer's `now' = max(now, at)`:
//! 1. the writer's previous block is void (it stopped spending it when it asked);
//! 2. `level = min(burst − Σ unexpired blocks of others, level + rate·factor·(now' − at))`;
//! 3. the grant is `g = min(wanted, ⌊level⌋)` (zero below the smallest useful block, with
//!    the instant at which one will be there), `level −= g`, `blocks[host] = (g, now' + ttl)`.
//!
//! The write is conditional on the version read, so writes are serialized.
//!
//! # Why the fleet never over-admits (beyond the skew term)
//! Invariant: after every write, `level + Σ unexpired blocks ≤ burst`. Tokens admitted in
//! `[a, b]` come from blocks outstanding at `a` or granted in `[a, b]`; the first are at
//! most `outstanding(a)`, the second at most `level(a)` plus what refilled in `[a, b]`.
//! With exact clocks the refill is `rate·(b − a)` (the item's time only moves forward,
//! refill is charged from `at`), so admissions ≤ `burst + rate·T`: the bucket bound.
//!
//! Skew: every host's clock is within `S` of every other's ([`FleetConfig::skew`]). A host
//! spends a block only while its own clock is before `expires − S`; another host frees the
//! block when *its* clock reaches `expires`, when the first one's reads at least
//! `expires − S`: a freed block is never still being spent. A host whose clock runs `S`
//! ahead moves `at` up to `S` ahead of true time, which refills at most `rate·S` tokens
//! early. Documented bound: **admissions over any interval `T` ≤ `burst + rate·(T + S)`**,
//! tested with skewed clocks in `tests/fleet.rs`.
//!
//! # Layout
//! - [`item`]: the item (`FleetItem`) and one host's outstanding block.
//! - [`take`]: `take_block`, its request and grant.
//! - [`penalty`]: the fleet factor: halved at most once per cooldown, learned ceiling.
//! - [`sizing`]: how many tokens a host asks for (its recent demand).
//! - [`host`]: the host's side: the block being spent, the one asked for, retry units.
//! - [`share`]: degraded mode's local share when the table does not answer.

pub mod host;
pub mod item;
pub mod penalty;
pub mod share;
pub mod sizing;
pub mod take;

use std::time::Duration;

pub use host::{FleetGate, FleetMode, FleetView, HostLedger, Transition};
pub use item::{FleetItem, HostBlock, HostId};
pub use penalty::{FleetPenalty, FLEET_COOLDOWN, MIN_FACTOR};
pub use share::LocalShare;
pub use sizing::DemandMeter;
pub use take::{take_block, BlockGrant, BlockRequest};

/// The default bound on clock skew between hosts (issue 13: NTP-synchronized, 1 s).
pub const DEFAULT_SKEW: Duration = Duration::from_secs(1);

/// How long a host may spend a block (on its own clock) before it must take a new one;
/// the block's time to live on the item is this plus the skew bound.
pub const BLOCK_SPEND_FOR: Duration = Duration::from_secs(2);

/// A host is counted as "seen recently" for this long after its last write (the local
/// share of degraded mode divides the rate by these hosts).
pub const HOSTS_SEEN_WINDOW: Duration = Duration::from_secs(60);

/// A host that has not written for this long is dropped from the item's `hosts` map.
pub const HOSTS_FORGET_AFTER: Duration = Duration::from_secs(600);

/// What to do when the table cannot be used (unreachable, throttled, access denied).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// Admit locally at the key's rate divided by the hosts seen in the last minute.
    #[default]
    LocalShare,
    /// Refuse requests, naming the table and the error.
    Stop,
}

impl std::str::FromStr for OnError {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local-share" => Ok(OnError::LocalShare),
            "stop" => Ok(OnError::Stop),
            other => Err(format!(
                "unknown fleet on-error mode {other:?}; use \"local-share\" or \"stop\""
            )),
        }
    }
}

/// Validated fleet settings shared by every key of a host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetConfig {
    /// The bound on clock skew between any two hosts.
    pub skew: Duration,
    /// How long a host spends a block on its own clock.
    pub spend_for: Duration,
    /// What to do when the table cannot be used.
    pub on_error: OnError,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            skew: DEFAULT_SKEW,
            spend_for: BLOCK_SPEND_FOR,
            on_error: OnError::LocalShare,
        }
    }
}

impl FleetConfig {
    /// A block's time to live on the item: spend time plus the skew bound.
    pub fn block_ttl(&self) -> Duration {
        self.spend_for + self.skew
    }
}
