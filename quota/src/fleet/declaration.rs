//! A host's declared calendar for one key: the base policy its configuration gives the
//! key and the read-time function (schedule or allowance) over it, if any.
//!
//! Why declarations on the item? Seed 003 puts the schedule on the item so every reader
//! resolves the same parameters from the item itself. Hosts are configured separately,
//! so they can disagree; the item records each host's declaration (issue 23) and the
//! parameters in force are the strictest among the hosts seen recently
//! ([`super::calendar`]), as seed 000's rule across processes on one host.
//!
//! On the table a declaration is stored as the JSON of an override entry
//! (`TOLLGATE_POLICY_OVERRIDES`' shape: `ratePerSecond`, `burst`, `concurrency`,
//! `retryCapacity`, `arrivalJitterMs` when not 0, and `schedule` or `allowance`), and read back through the same parser,
//! so a declaration the parser would refuse never enters a host's resolution.

use serde_json::{json, Value};

use crate::overrides::PolicyTable;
use crate::policy::Policy;
use crate::schedule::{ReadTime, WallClock};

/// The service group a stored declaration is parsed under (only its fields matter).
const PARSE_AS: &str = "fleet:declared";

/// One host's calendar for a key, and the instant its clock's `Timestamp::ZERO` is.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    policy: Policy,
    read_time: Option<ReadTime>,
}

/// A declaration that could not be read back (names the rule broken, never the text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a host's declared calendar on the item is malformed: {0}")]
pub struct MalformedDeclaration(String);

impl Declaration {
    /// `policy` under `read_time` (none: a plain policy).
    pub fn new(policy: Policy, read_time: Option<ReadTime>) -> Self {
        Declaration { policy, read_time }
    }

    /// A host with no schedule or allowance for the key, only `policy`.
    pub fn plain(policy: Policy) -> Self {
        Declaration::new(policy, None)
    }

    /// The base policy the read-time function transforms.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The schedule or allowance, if any.
    pub fn read_time(&self) -> Option<&ReadTime> {
        self.read_time.as_ref()
    }

    /// True if it carries a schedule or an allowance.
    pub fn has_calendar(&self) -> bool {
        self.read_time.is_some()
    }

    /// The override entry's JSON for the table (and `fleet status`).
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The override entry's JSON value.
    pub fn to_value(&self) -> Value {
        let p = &self.policy;
        let mut v = json!({
            "ratePerSecond": p.rate_per_second(),
            "burst": p.burst(),
            "concurrency": p.concurrency(),
            "retryCapacity": p.retry_capacity(),
        });
        // Only when set, so every declaration without an allowance reads as before.
        if p.arrival_jitter_ms() > 0 {
            v["arrivalJitterMs"] = json!(p.arrival_jitter_ms());
        }
        match &self.read_time {
            Some(ReadTime::Schedule(s)) => {
                v["schedule"] = serde_json::to_value(s).unwrap_or(Value::Null);
            }
            Some(ReadTime::Allowance(a)) => {
                v["allowance"] = json!({
                    "amount": a.amount(),
                    "resets": a.resets().pattern(),
                    "timezone": a.resets().timezone(),
                });
            }
            None => {}
        }
        v
    }

    /// Read a stored declaration back through the override parser.
    pub fn from_json(text: &str) -> Result<Self, MalformedDeclaration> {
        let document = format!("{{\"{PARSE_AS}\": {text}}}");
        let table = PolicyTable::with_overrides(&document, "a fleet item")
            .map_err(|e| MalformedDeclaration(e.to_string()))?;
        let name = PARSE_AS.parse().expect("a valid service group");
        Ok(Declaration {
            policy: table.policy_for_name(&name),
            read_time: table.read_time_for_name(&name).cloned(),
        })
    }
}

/// A request's declaration: the host's calendar and its clock's anchor on the calendar
/// (the wall-clock instant of `Timestamp::ZERO`).
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    pub declaration: Declaration,
    pub anchor: WallClock,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(json: &str) -> Declaration {
        let name = "kms:ListKeys".parse().unwrap();
        let t = PolicyTable::with_overrides(json, "test").unwrap();
        Declaration::new(
            t.policy_for_name(&name),
            t.read_time_for_name(&name).cloned(),
        )
    }

    #[test]
    fn every_kind_of_declaration_round_trips_through_its_json() {
        let cases = [
            r#"{"kms:ListKeys": {"ratePerSecond": 3, "burst": 2}}"#,
            r#"{"kms:ListKeys": {"ratePerSecond": 50, "burst": 10,
                "schedule": [{"cron": "* 9-16 * * MON-FRI", "timezone": "Europe/Berlin",
                              "ratePerSecond": 1}]}}"#,
            r#"{"kms:ListKeys": {"allowance": {"amount": 50, "resets": "* * * * *",
                "timezone": "UTC"}}}"#,
        ];
        for case in cases {
            let d = table(case);
            let back = Declaration::from_json(&d.to_json()).unwrap();
            assert_eq!(back, d, "{case}");
        }
    }

    #[test]
    fn a_malformed_declaration_is_refused_without_echoing_it() {
        let e = Declaration::from_json(r#"{"ratePerSecond": "secret-ish"}"#).unwrap_err();
        assert!(!e.to_string().contains("secret-ish"), "{e}");
        assert!(Declaration::from_json("{").is_err());
    }
}
