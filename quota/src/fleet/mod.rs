//! Fleet admission: one quota shared by every host, drawn in token blocks from one
//! DynamoDB item per canonical key (issue 13, seeds 003 and 004).
//!
//! Pure, like the rest of this crate: the item is data, a block is taken by a function of
//! (item, request, now), and the host side is bookkeeping the quota actor applies. The
//! DynamoDB store and the retry-on-conflict loop live elsewhere (`tollgate-fleet`,
//! `tollgate-actors`); here is only what decides.
//!
//! # The block protocol ([`take_block`]): future-dated tokens (GCRA)
//! The item holds `tat`, the theoretical arrival time of GCRA: the due instant of the last
//! token handed out. With `r = rate·factor` and `T = 1/r`, a host at clock `now` asking
//! for `n` tokens gets the due instants `e_1 = max(tat, now + lead) + T`,
//! `e_j = e_1 + (j − 1)·T`, and the item's `tat` becomes `e_n`. Token `j` may be spent, by
//! the spending host's clock, only inside its window `[e_j − W, e_j − C]`
//! ([`SpendWindow`]: `C = 1/rate`, `W = C + max((burst − 1)/rate, MIN_TOLERANCE)`, from
//! the policy's rate without the penalty factor); a token whose window passed unspent is
//! dropped, never returned. Every write grants a useful block (no host polls a level), and
//! a grant whose first window would open more than the request's horizon after `now` is
//! refused with the instant to ask again, so nobody reserves far ahead.
//!
//! The write is conditional on the version read, so writes are serialized and `tat` only
//! moves forward: the `e_j` of all grants form one strictly increasing sequence spaced at
//! least `T_min = 1/r_max` apart.
//!
//! # Why the fleet never over-admits (beyond the skew term)
//! Let every host's clock be within `S` of every other's ([`FleetConfig::skew`]): offsets
//! from true time lie in some `[o_min, o_max]` with `o_max − o_min ≤ S`. A token spent at
//! true time `u` by a host with offset `o` had `u + o ∈ [e − W, e − C]`, so
//! `e ∈ [u + o + C, u + o + W]`. The tokens spent in a true interval `[a, a + L]` therefore
//! have due instants in `[a + o_min + C, a + L + o_max + W]`, of length at most
//! `L + S + W − C`; due instants are spaced at least `T_min`, so their number is at most
//! `1 + r_max·(L + S + W − C)`. With `W − C = (burst − 1)/rate` and `r_max ≤ rate`:
//! **admissions over any interval `L` ≤ `burst + r_max·(L + S)`**, where `burst` is
//! replaced by `1 + rate·MIN_TOLERANCE` when that is larger (bursts near 1). With `S = 0`
//! it is the exact bucket bound. Tested with skewed clocks in `tests/fleet.rs`.
//!
//! # Layout
//! - [`backoff`]: the wait after a lost conditional write (jittered, per contender).
//! - [`item`]: the item (`FleetItem`); `host_id`: [`HostId`], a host's name on it.
//! - [`declaration`]: a host's declared calendar (base policy, schedule or allowance).
//! - [`calendar`]: the calendar on the item: the strictest declaration of the hosts seen,
//!   the valid-until stamp, the fleet's allowance counter, blocks placed on segments.
//! - [`window`]: a grant's run of future-dated tokens and the window each may be spent in.
//! - [`take`]: `take_block`, its request and grant.
//! - [`penalty`]: the fleet factor: halved at most once per cooldown, learned ceiling.
//! - [`sizing`]: how many tokens a host asks for (its recent demand).
//! - [`host`]: the host's side: its mode (fleet, or degraded with a fallback), the request
//!   in flight, retry units, the reports for the next request.
//! - `hand`: the tokens in hand and the window each may be spent in.
//! - [`share`]: degraded mode's local share when the table does not answer.

pub mod backoff;
pub mod calendar;
pub mod declaration;
mod hand;
pub mod host;
mod host_id;
pub mod item;
pub mod penalty;
pub mod share;
pub mod sizing;
pub mod take;
pub mod window;

use std::time::Duration;

pub use backoff::conflict_backoff;
pub use calendar::{effective_at, AllowanceSeen, Effective, ItemCalendar};
pub use declaration::{Declaration, Declared, MalformedDeclaration};
pub use host::{FleetGate, FleetMode, FleetView, HostLedger, KeyUse, Transition, ROUND_TRIP_MAX};
pub use host_id::HostId;
pub use item::FleetItem;
pub use penalty::{FleetPenalty, FLEET_COOLDOWN, MIN_FACTOR};
pub use share::LocalShare;
pub use sizing::DemandMeter;
pub use take::{take_block, BlockGrant, BlockRequest, ItemSizing};
pub use window::{SpendWindow, TokenRun, MIN_TOLERANCE, SPEND_LEAD};

/// The default bound on clock skew between hosts (issue 13: NTP-synchronized, 1 s).
pub const DEFAULT_SKEW: Duration = Duration::from_secs(1);

/// A block is sized to about this much of the host's recent demand: about one write per
/// host per second keeps a key's requests within issue 13's targets even when every
/// write costs a read as well (four busy hosts: 4–8 requests/s per key).
pub const BLOCK_REFRESH: Duration = Duration::from_secs(1);

/// A grant whose first token's window would open more than this after the writer's clock
/// is refused (see [`FleetConfig::horizon`]); at least this.
pub const HORIZON_MIN: Duration = Duration::from_millis(250);

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

/// A fleet on-error mode that is neither `local-share` nor `stop`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fleet on-error mode {given:?}; use \"local-share\" or \"stop\"")]
pub struct UnknownOnError {
    given: String,
}

impl std::str::FromStr for OnError {
    type Err = UnknownOnError;
    fn from_str(s: &str) -> Result<Self, UnknownOnError> {
        match s {
            "local-share" => Ok(OnError::LocalShare),
            "stop" => Ok(OnError::Stop),
            other => Err(UnknownOnError {
                given: other.to_string(),
            }),
        }
    }
}

/// Validated fleet settings shared by every key of a host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetConfig {
    /// The bound on clock skew between any two hosts: the bound's skew term. The protocol
    /// itself never reads it (windows are on the spending host's own clock).
    pub skew: Duration,
    /// Blocks are sized to about this much of the host's demand ([`BLOCK_REFRESH`]).
    pub refresh: Duration,
    /// What to do when the table cannot be used.
    pub on_error: OnError,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            skew: DEFAULT_SKEW,
            refresh: BLOCK_REFRESH,
            on_error: OnError::LocalShare,
        }
    }
}

/// Up to this many hosts seen, a host's blocks last one refresh; with more, the refresh
/// grows faster than the hosts (see [`FleetConfig::refresh_for`]).
pub const HOSTS_PER_REFRESH: usize = 4;

impl FleetConfig {
    /// The refresh interval of a host among `hosts` seen: [`FleetConfig::refresh`] up to
    /// [`HOSTS_PER_REFRESH`] hosts, then `refresh·(hosts/HOSTS_PER_REFRESH)^1.5` (issue
    /// 23: a key's requests flat in its busy hosts). Why faster than the hosts? With the
    /// refresh in proportion to them (writes per second constant in theory) 16 busy hosts
    /// still made 12.7 table requests/s in the paused-time test, since each host spends
    /// its block at the fleet's rate in its turn and asks again while the others' blocks
    /// come due; the power 1.5 gives 16 hosts an 8 s refresh. Blocks grow with it (each
    /// lasts one refresh of the host's demand) and so does the horizon; the bound does
    /// not depend on either, and a dead host loses at most about two of its blocks.
    pub fn refresh_for(&self, hosts: usize) -> Duration {
        let ratio = (hosts as f64 / HOSTS_PER_REFRESH as f64).max(1.0);
        self.refresh.mul_f64(ratio.powf(1.5))
    }

    /// The most of the fleet rate one block may hold, for a host among `hosts` seen: its
    /// refresh up to [`HOSTS_PER_REFRESH`] hosts (as before issue 23), beyond that the
    /// larger of [`FleetConfig::refresh`] and twice its share of a refresh. Without the
    /// cap a host that just spent a block fast asks for a refresh of the *fleet* rate
    /// (8 s at 16 hosts) and pushes every other host's next block past the horizon.
    pub fn block_cap_for(&self, hosts: usize) -> Duration {
        let refresh = self.refresh_for(hosts);
        let share = refresh.mul_f64(2.0 / hosts.max(1) as f64);
        refresh.min(share.max(self.refresh))
    }

    /// [`FleetConfig::horizon`] for a host among `hosts` seen: two of its refreshes.
    pub fn horizon_for(&self, hosts: usize) -> Duration {
        (self.refresh_for(hosts) * 2).max(HORIZON_MIN)
    }

    /// How far ahead a host may reserve: a grant whose first token's window opens later
    /// than this after `now` is refused. Two refresh intervals: a busy fleet's
    /// reservations run about one refresh ahead (each host holds about one block of
    /// `refresh` worth of its demand, all hosts' blocks tiling one refresh of the rate),
    /// so busy hosts are not refused, while a dead host loses at most about two of its
    /// blocks (`2·refresh` of its share).
    pub fn horizon(&self) -> Duration {
        (self.refresh * 2).max(HORIZON_MIN)
    }
}
