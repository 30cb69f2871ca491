//! One override entry parsed: its policy fields (`partial.rs`) and, if given, its
//! read-time function (`read_time.rs`).
//!
//! Its own file so that both halves depend only on the pieces in `partial.rs`, and
//! neither on the other: the entry is the one place that knows every field.

use super::partial::{describe_field, FieldError, Node, PolicyFields};
use super::read_time::{parse_allowance, parse_schedule};
use crate::overlay::PolicyOverlay;
use crate::schedule::{Allowance, PolicySchedule};

/// One override entry: its policy fields and, if given, its read-time function.
/// `Some(None)` clears one inherited from an earlier layer (`"schedule": []`,
/// `"allowance": null`).
pub(super) struct ParsedEntry {
    pub(super) overlay: PolicyOverlay,
    pub(super) schedule: Option<Option<PolicySchedule>>,
    pub(super) allowance: Option<Option<Allowance>>,
}

/// Parse an override entry's fields.
pub(super) fn parse_entry(fields: &[(String, Node)]) -> Result<ParsedEntry, FieldError> {
    let mut policy = PolicyFields::default();
    let (mut schedule, mut allowance) = (None, None);
    for (index, (name, value)) in fields.iter().enumerate() {
        if policy.take(name, value)? {
            continue;
        }
        match name.as_str() {
            "schedule" if schedule.is_some() => return Err(FieldError::Duplicate("schedule")),
            "schedule" => schedule = Some(parse_schedule(value)?),
            "allowance" if allowance.is_some() => return Err(FieldError::Duplicate("allowance")),
            "allowance" => allowance = Some(parse_allowance(value)?),
            other => return Err(FieldError::Unknown(describe_field(other, index))),
        }
    }
    Ok(ParsedEntry {
        overlay: policy.into_overlay()?,
        schedule,
        allowance,
    })
}
