//! The `schedule` and `allowance` fields of an override entry (seed 003).
//!
//! ```text
//! {"kms:Decrypt": {"ratePerSecond": 50,
//!   "schedule": [{"cron": "* 9-17 * * MON-FRI", "timezone": "Europe/Berlin", "ratePerSecond": 1, "burst": 1}]},
//!  "ce:GetCostAndUsage": {"allowance": {"amount": 20000, "resets": "0 0 * * *", "timezone": "America/New_York"}}}
//! ```
//!
//! Parsed here into typed values (cron and zone validated, policy fields checked one by
//! one); the entries are checked against the key's policy, and the one-read-time-function
//! rule applied, by [`PolicyTable`](super::PolicyTable) once the layers are known.
//! Refusals carry a path below the key (`schedule[2].timezone`) and a fixed rule; the cron
//! pattern and zone name given are never repeated. `"schedule": []` and
//! `"allowance": null` clear what an earlier layer gave.

use super::partial::{describe_field, FieldError, Node, PolicyFields};
use crate::schedule::{
    Allowance, CronSchedule, PolicySchedule, ScheduleEntry, MAX_ALLOWANCE_AMOUNT,
    MAX_SCHEDULE_ENTRIES,
};

const ENTRY_FIELDS: &str =
    "cron, timezone, ratePerSecond, burst, concurrency, retryCapacity and arrivalJitterMs";
const ALLOWANCE_FIELDS: &str = "amount, resets and timezone";
const CRON_RULE: &str =
    "must be a string holding a 5-field cron pattern, such as \"* 9-17 * * MON-FRI\"";
const ZONE_RULE: &str =
    "must be a string holding an IANA time zone name, such as \"Europe/Berlin\"";
const AMOUNT_RULE: &str =
    "must be a whole number from 1 through 9007199254740992 (cost units per period)";

fn nested(path: impl Into<String>, problem: impl Into<String>) -> FieldError {
    FieldError::Nested {
        path: path.into(),
        problem: problem.into(),
    }
}

/// `"schedule": [entry, ...]`; `Ok(None)` for `[]`.
pub(super) fn parse_schedule(value: &Node) -> Result<Option<PolicySchedule>, FieldError> {
    let Node::Array(items) = value else {
        return Err(nested(
            "schedule",
            "must be an array of entries such as {\"cron\": \"* 9-17 * * MON-FRI\", \"timezone\": \"Europe/Berlin\", \"ratePerSecond\": 1}",
        ));
    };
    if items.len() > MAX_SCHEDULE_ENTRIES {
        return Err(nested(
            "schedule",
            format!(
                "has {} entries; at most {MAX_SCHEDULE_ENTRIES} are allowed",
                items.len()
            ),
        ));
    }
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = format!("schedule[{index}]");
        entries.push(parse_entry(item).map_err(|e| e.within(&path, ENTRY_FIELDS))?);
    }
    if entries.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        PolicySchedule::new(entries).expect("the entry count was checked above"),
    ))
}

fn parse_entry(item: &Node) -> Result<ScheduleEntry, FieldError> {
    let Node::Object(fields) = item else {
        return Err(nested("", format!("must be an object with {ENTRY_FIELDS}")));
    };
    let mut policy = PolicyFields::default();
    let (mut cron, mut zone) = (None, None);
    for (index, (name, value)) in fields.iter().enumerate() {
        if policy.take(name, value)? {
            continue;
        }
        let (field, slot, rule) = match name.as_str() {
            "cron" => ("cron", &mut cron, CRON_RULE),
            "timezone" => ("timezone", &mut zone, ZONE_RULE),
            other => return Err(FieldError::Unknown(describe_field(other, index))),
        };
        if slot.is_some() {
            return Err(FieldError::Duplicate(field));
        }
        let Node::Text(text) = value else {
            return Err(FieldError::Invalid(field, rule));
        };
        *slot = Some(text.as_str());
    }
    let cron = cron.ok_or(FieldError::Invalid(
        "cron",
        "is required: a 5-field cron pattern",
    ))?;
    let zone = zone.ok_or(FieldError::Invalid(
        "timezone",
        "is required: an IANA time zone name such as Europe/Berlin, or UTC",
    ))?;
    let cron = CronSchedule::parse(cron, zone).map_err(|e| nested(e.subject(), e.to_string()))?;
    Ok(ScheduleEntry {
        cron,
        overlay: policy.into_overlay()?,
    })
}

/// `"allowance": {"amount": N, "resets": CRON, "timezone": ZONE}`; `Ok(None)` for `null`.
pub(super) fn parse_allowance(value: &Node) -> Result<Option<Allowance>, FieldError> {
    let fields = match value {
        Node::Null => return Ok(None),
        Node::Object(fields) => fields,
        _ => {
            return Err(nested(
                "allowance",
                format!("must be an object with {ALLOWANCE_FIELDS} (or null to clear it)"),
            ))
        }
    };
    let inner = |e: FieldError| e.within("allowance", ALLOWANCE_FIELDS);
    let (mut amount, mut resets, mut zone) = (None, None, None);
    for (index, (name, value)) in fields.iter().enumerate() {
        match (name.as_str(), value) {
            ("amount", _) if amount.is_some() => {
                return Err(inner(FieldError::Duplicate("amount")))
            }
            ("amount", Node::Number(n)) => amount = Some(*n),
            ("amount", _) => return Err(inner(FieldError::Invalid("amount", AMOUNT_RULE))),
            ("resets", _) if resets.is_some() => {
                return Err(inner(FieldError::Duplicate("resets")))
            }
            ("resets", Node::Text(t)) => resets = Some(t.as_str()),
            ("resets", _) => return Err(inner(FieldError::Invalid("resets", CRON_RULE))),
            ("timezone", _) if zone.is_some() => {
                return Err(inner(FieldError::Duplicate("timezone")))
            }
            ("timezone", Node::Text(t)) => zone = Some(t.as_str()),
            ("timezone", _) => return Err(inner(FieldError::Invalid("timezone", ZONE_RULE))),
            (other, _) => return Err(inner(FieldError::Unknown(describe_field(other, index)))),
        }
    }
    let amount = amount
        .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= MAX_ALLOWANCE_AMOUNT as f64)
        .ok_or_else(|| inner(FieldError::Invalid("amount", AMOUNT_RULE)))?;
    let resets = resets.ok_or_else(|| {
        inner(FieldError::Invalid(
            "resets",
            "is required: a 5-field cron pattern, such as \"0 0 * * *\"",
        ))
    })?;
    let zone = zone.ok_or_else(|| {
        inner(FieldError::Invalid(
            "timezone",
            "is required: an IANA time zone name such as America/New_York, or UTC",
        ))
    })?;
    let schedule = CronSchedule::parse(resets, zone).map_err(|e| {
        let field = if e.subject() == "cron" {
            "resets"
        } else {
            "timezone"
        };
        nested(format!("allowance.{field}"), e.to_string())
    })?;
    let allowance = Allowance::new(amount as u64, schedule)
        .map_err(|_| inner(FieldError::Invalid("amount", AMOUNT_RULE)))?;
    Ok(Some(allowance))
}

#[cfg(test)]
mod tests {
    use super::super::{OverrideError, PolicyTable, OVERRIDES_ENV};
    use crate::key::ServiceGroup;
    use crate::schedule::{ReadTime, WallClock, DEFAULT_SCAN_CAP};

    fn w(text: &str) -> WallClock {
        WallClock::parse_rfc3339(text).unwrap()
    }

    fn name(text: &str) -> ServiceGroup {
        text.parse().unwrap()
    }

    #[test]
    fn a_schedule_overlays_the_keys_policy_during_its_minutes() {
        let t = PolicyTable::with_overrides(
            r#"{"kms:ListKeys":{"ratePerSecond":50,"schedule":[
                {"cron":"* 9-16 * * MON-FRI","timezone":"Europe/Berlin","ratePerSecond":1,"burst":1}]}}"#,
            OVERRIDES_ENV,
        )
        .unwrap();
        let key = name("kms:ListKeys");
        assert_eq!(t.policy_for_name(&key).rate_per_second(), 50.0);
        assert!(matches!(
            t.read_time_for_name(&key),
            Some(ReadTime::Schedule(_))
        ));
        let at = w("2026-01-05T08:30:00Z"); // Monday 09:30 CET
        let r = t.resolve_for_name(&key, at, at.saturating_add(DEFAULT_SCAN_CAP));
        assert_eq!(
            (r.policy.rate_per_second(), r.policy.burst(), r.entry),
            (1.0, 1.0, Some(0))
        );
        assert_eq!(r.valid_until, w("2026-01-05T16:00:00Z"));
        // Unscheduled keys resolve to their policy, valid for ever.
        let other = t.resolve_for_name(&name("kms:Decrypt"), at, at);
        assert_eq!((other.entry, other.valid_until), (None, WallClock::MAX));
    }

    #[test]
    fn an_allowance_is_typed_and_leaves_the_policy_alone() {
        let t = PolicyTable::with_overrides(
            r#"{"ce:GetCostAndUsage":{"allowance":{"amount":20000,"resets":"0 0 * * *","timezone":"America/New_York"}}}"#,
            OVERRIDES_ENV,
        )
        .unwrap();
        let Some(ReadTime::Allowance(a)) = t.read_time_for_name(&name("ce:GetCostAndUsage")) else {
            panic!("no allowance");
        };
        assert_eq!(a.amount(), 20_000);
        assert_eq!(
            a.period_at(w("2026-01-05T12:00:00Z")).next_reset,
            w("2026-01-06T05:00:00Z")
        );
    }

    fn refusal(json: &str) -> OverrideError {
        PolicyTable::with_overrides(json, OVERRIDES_ENV).unwrap_err()
    }

    fn path(e: &OverrideError) -> String {
        match e {
            OverrideError::InvalidEntry { path, .. } => path.clone(),
            OverrideError::ReadTimeConflict { .. } => "conflict".into(),
            OverrideError::InvalidField { field, .. } => format!("field {field}"),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn refusals_name_the_setting_the_key_and_the_field() {
        let e = |entry: &str| {
            format!(r#"{{"kms:ListKeys":{{"ratePerSecond":5,"schedule":[{entry}]}}}}"#)
        };
        #[rustfmt::skip]
        let cases: Vec<(String, &str)> = vec![
            (e(r#"{"cron":"* * * *","timezone":"UTC"}"#), "schedule[0].cron"),
            (e(r#"{"cron":"* 25 * * *","timezone":"UTC"}"#), "schedule[0].cron"),
            (e(r#"{"cron":"0 0 30 2 *","timezone":"UTC"}"#), "schedule[0].cron"),
            (e(r#"{"cron":"* * * * *","timezone":"Mars/Base"}"#), "schedule[0].timezone"),
            (e(r#"{"cron":"* * * * *"}"#), "schedule[0].timezone"),
            (e(r#"{"timezone":"UTC"}"#), "schedule[0].cron"),
            (e(r#"{"cron":5,"timezone":"UTC"}"#), "schedule[0].cron"),
            (e(r#"{"cron":"* * * * *","timezone":"UTC","rate":1}"#), "schedule[0]"),
            (e(r#"{"cron":"* * * * *","timezone":"UTC","cron":"* * * * *"}"#), "schedule[0]"),
            (e(r#"{"cron":"* * * * *","timezone":"UTC","ratePerSecond":0}"#), "schedule[0].ratePerSecond"),
            (e(r#"{"cron":"* * * * *","timezone":"UTC","concurrency":0.5}"#), "schedule[0].concurrency"),
            // The same bounds as any policy, after the overlay: burst 6 over rate 5.
            (e(r#"{"cron":"* * * * *","timezone":"UTC","burst":6}"#), "schedule[0].burst"),
            (e(r#"{"cron":"* * * * *","timezone":"UTC"},5"#), "schedule[1]"),
            (r#"{"kms:ListKeys":{"schedule":{}}}"#.into(), "schedule"),
            (r#"{"kms:ListKeys":{"allowance":{"amount":0,"resets":"0 0 * * *","timezone":"UTC"}}}"#.into(), "allowance.amount"),
            (r#"{"kms:ListKeys":{"allowance":{"amount":1.5,"resets":"0 0 * * *","timezone":"UTC"}}}"#.into(), "allowance.amount"),
            (r#"{"kms:ListKeys":{"allowance":{"amount":5,"resets":"0 0 * *","timezone":"UTC"}}}"#.into(), "allowance.resets"),
            (r#"{"kms:ListKeys":{"allowance":{"amount":5,"resets":"0 0 * * *","timezone":"Nowhere"}}}"#.into(), "allowance.timezone"),
            (r#"{"kms:ListKeys":{"allowance":{"amount":5,"resets":"0 0 * * *"}}}"#.into(), "allowance.timezone"),
            (r#"{"kms:ListKeys":{"allowance":{"amount":5,"resets":"0 0 * * *","timezone":"UTC","x":1}}}"#.into(), "allowance"),
            (r#"{"kms:ListKeys":{"allowance":7}}"#.into(), "allowance"),
            (r#"{"kms:ListKeys":{"allowance":null,"allowance":null}}"#.into(), "DuplicateField { setting: \"TOLLGATE_QUOTA_OVERRIDES\", key: \"kms:ListKeys\", field: \"allowance\" }"),
            (r#"{"kms:ListKeys":{"schedule":[{"cron":"* * * * *","timezone":"UTC"}],"allowance":{"amount":5,"resets":"0 0 * * *","timezone":"UTC"}}}"#.into(), "conflict"),
        ];
        for (json, want) in &cases {
            let err = refusal(json);
            assert_eq!(&path(&err), want, "{json}: {err}");
            let msg = err.to_string();
            assert!(
                msg.starts_with(OVERRIDES_ENV) && msg.contains("kms:ListKeys"),
                "{msg}"
            );
        }
    }

    #[test]
    fn refusals_never_echo_the_pattern_or_the_zone() {
        const SECRET: &str = "AKIAZZSECRETTOKEN9f8e7d";
        let docs = [
            format!(
                r#"{{"kms:ListKeys":{{"schedule":[{{"cron":"{SECRET}","timezone":"UTC"}}]}}}}"#
            ),
            format!(
                r#"{{"kms:ListKeys":{{"schedule":[{{"cron":"* * * * {SECRET}","timezone":"UTC"}}]}}}}"#
            ),
            format!(
                r#"{{"kms:ListKeys":{{"schedule":[{{"cron":"* * * * *","timezone":"{SECRET}"}}]}}}}"#
            ),
            format!(
                r#"{{"kms:ListKeys":{{"schedule":[{{"cron":"* * * * *","timezone":"UTC","{SECRET}":1}}]}}}}"#
            ),
            format!(
                r#"{{"kms:ListKeys":{{"allowance":{{"amount":1,"resets":"{SECRET}","timezone":"UTC"}}}}}}"#
            ),
            format!(
                r#"{{"kms:ListKeys":{{"allowance":{{"amount":"{SECRET}","resets":"0 0 * * *","timezone":"UTC"}}}}}}"#
            ),
        ];
        for doc in &docs {
            let msg = refusal(doc).to_string();
            for window in SECRET.as_bytes().windows(6) {
                let window = std::str::from_utf8(window).unwrap();
                assert!(!msg.contains(window), "message {msg:?} echoes {window:?}");
            }
        }
    }

    #[test]
    fn layers_inherit_clear_and_recheck_the_read_time_function() {
        let file = PolicyTable::with_overrides(
            r#"{"kms:ListKeys":{"ratePerSecond":50,"schedule":[{"cron":"* 9-16 * * *","timezone":"UTC","burst":20}]}}"#,
            "tollgate.toml",
        )
        .unwrap();
        let key = name("kms:ListKeys");
        // A later layer changing only the rate keeps the schedule...
        let t = file
            .clone()
            .apply_overrides(r#"{"kms:ListKeys":{"ratePerSecond":40}}"#, OVERRIDES_ENV)
            .unwrap();
        assert!(matches!(
            t.read_time_for_name(&key),
            Some(ReadTime::Schedule(_))
        ));
        // ...but its entries are checked again: burst 20 over a rate of 10 is refused.
        let err = file
            .clone()
            .apply_overrides(r#"{"kms:ListKeys":{"ratePerSecond":10}}"#, OVERRIDES_ENV)
            .unwrap_err();
        assert_eq!(path(&err), "schedule[0].burst");
        assert!(err.to_string().starts_with(OVERRIDES_ENV), "{err}");
        // Adding an allowance needs the schedule cleared in the same layer.
        let allowance = r#""allowance":{"amount":5,"resets":"0 0 * * *","timezone":"UTC"}"#;
        let err = file
            .clone()
            .apply_overrides(
                &format!(r#"{{"kms:ListKeys":{{{allowance}}}}}"#),
                OVERRIDES_ENV,
            )
            .unwrap_err();
        assert_eq!(path(&err), "conflict");
        let t = file
            .apply_overrides(
                &format!(r#"{{"kms:ListKeys":{{"schedule":[],{allowance}}}}}"#),
                OVERRIDES_ENV,
            )
            .unwrap();
        assert!(matches!(
            t.read_time_for_name(&key),
            Some(ReadTime::Allowance(_))
        ));
        let t = t
            .apply_overrides(r#"{"kms:ListKeys":{"allowance":null}}"#, OVERRIDES_ENV)
            .unwrap();
        assert_eq!(t.read_time_for_name(&key), None);
    }
}
