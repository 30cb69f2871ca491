//! `Status`: a read-only view of one key.

use actix::Message;
use serde::{Deserialize, Serialize};
use tollgate_quota::fleet::FleetMode;
use tollgate_quota::{QuotaSnapshot, Timestamp, WallClock};

/// Ask for the key's state.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "KeyStatus")]
pub struct Status;

/// One key's state and queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyStatus {
    /// Canonical key.
    pub key: String,
    /// Bucket, window, penalty, allowance, reservations.
    pub state: QuotaSnapshot,
    /// Callers waiting for a concurrency slot.
    pub waiting_for_reservation: usize,
    /// Callers waiting for final admission.
    pub waiting_for_admission: usize,
    /// Why dispatch is stopped, if it is.
    pub storage_failure: Option<String>,
    /// The key's schedule or allowance, if it has one (absent from older coordinators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<CalendarStatus>,
    /// Fleet mode's state of the key on this host (absent without fleet mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<tollgate_quota::fleet::FleetView>,
    /// The key's latest spell of degraded fleet mode on this host, kept after it rejoins
    /// (absent when it never degraded, and from older coordinators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet_degraded: Option<FleetDegradedSpell>,
}

/// A spell during which a key admitted without the fleet table (local share or stop).
///
/// Why keep it after the key rejoins: a scan's report must say that some of its calls
/// were admitted (or refused) in degraded mode, and the scan may finish after the table
/// answers again. Only the latest spell is kept; a report asks right when its scan ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetDegradedSpell {
    /// `local-share` or `stop`.
    pub mode: FleetMode,
    /// The table's error that started the spell (names the table).
    pub error: String,
    /// When the key left fleet mode (the coordinator's clock).
    pub since: Timestamp,
    /// When the table answered again; `None` while the spell lasts.
    pub rejoined_at: Option<Timestamp>,
}

impl FleetDegradedSpell {
    /// A spell starting at `at`.
    pub fn began(mode: FleetMode, error: String, at: Timestamp) -> Self {
        FleetDegradedSpell {
            mode,
            error,
            since: at,
            rejoined_at: None,
        }
    }

    /// Whether the spell overlaps `[from, to]`.
    pub fn overlaps(&self, from: Timestamp, to: Timestamp) -> bool {
        self.since <= to && self.rejoined_at.is_none_or(|end| end >= from)
    }
}

/// A scheduled key's policy in force, or an allowance key's use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CalendarStatus {
    /// The schedule entry in force (`None` for the base policy).
    pub entry: Option<usize>,
    /// Until when the policy in force certainly stays (scheduled keys).
    pub valid_until: Option<WallClock>,
    /// The allowance's use (allowance keys).
    pub allowance: Option<AllowanceStatus>,
}

/// An allowance's current period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowanceStatus {
    /// Cost units per period.
    pub amount: u64,
    /// Used in the current period.
    pub used: u64,
    /// Consumed since the key was created (monotonic).
    pub consumed_total: u64,
    /// The period's start (its last reset).
    pub period_start: WallClock,
    /// The next reset.
    pub resets_at: WallClock,
}

impl AllowanceStatus {
    /// The status of `counter`, already rolled to the instant it describes.
    pub fn of(
        allowance: &tollgate_quota::Allowance,
        counter: &tollgate_quota::AllowanceCounter,
    ) -> Self {
        let period = counter.period();
        AllowanceStatus {
            amount: allowance.amount(),
            used: counter.used(),
            consumed_total: counter.consumed_total(),
            period_start: period.start,
            resets_at: period.next_reset,
        }
    }
}
