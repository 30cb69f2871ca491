//! `ReadTime`: the one read-time function a key may carry.
//!
//! Seed 003 allows at most one read-time function per bucket: something the reader
//! evaluates against the clock to find the limits in force. tollgate has two, a schedule
//! (the policy varies with the calendar) and an allowance (a calendar period's budget with
//! its reset rule). A key takes one or the other, never both: an enum, so the combination
//! cannot be represented, and the overrides parser refuses it with a message naming the
//! key. (They could be combined mechanically, but two calendars on one key would need two
//! valid-until stamps in the hot path and a crash rule for both; the seed's rule keeps the
//! actor's fast path one comparison.)

use serde::Serialize;

use super::allowance::Allowance;
use super::policy::PolicySchedule;

/// A key's read-time function.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadTime {
    /// The policy follows a schedule.
    Schedule(PolicySchedule),
    /// The key has a calendar allowance.
    Allowance(Allowance),
}
