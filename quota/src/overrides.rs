//! `TOLLGATE_QUOTA_OVERRIDES`: partial policies merged over the defaults.
//!
//! Users tune budgets with a JSON object keyed by canonical `service:group` names whose
//! values are partial policies, in the environment or the config file:
//!
//! ```text
//! {"logs:DescribeLogStreams":{"ratePerSecond":5,"burst":1,"concurrency":3,"retryCapacity":10}}
//! ```
//!
//! This module validates that document once, at the edge, into a [`PolicyTable`]: the
//! one value the rest of tollgate asks "which policy does this key use?". The rules are
//! seed 000's:
//!
//! - unspecified fields inherit from the default row (or the fallback), except that an
//!   inherited burst is capped at `max(1, ratePerSecond)`, so lowering only an EC2 read
//!   rate to 5/s lowers its burst from 10 to 5;
//! - explicit values must satisfy [`Policy`] validation; unknown fields, non-integer
//!   `concurrency`/`retryCapacity`, a key without `:` and a key given twice (also after
//!   resolving service aliases, or as a repeated JSON key) are errors;
//! - keys that match no default row still apply (they are valid `service:group` names),
//!   and are reported by [`PolicyTable::unknown_keys`] rather than silently dropped;
//! - an empty or all-whitespace value means "no overrides".
//!
//! An entry may also carry one read-time function (seed 003, `read_time.rs`): a
//! `schedule` of cron entries overlaying the key's policy, or a calendar `allowance`.
//! Every schedule entry must make a valid policy over the key's policy (the same bounds as
//! any policy), checked again whenever a later layer changes that policy. A key carries
//! at most one of the two, across layers too: a later layer that adds the other must
//! clear the first (`"schedule": []`, `"allowance": null`).
//!
//! Errors name where the JSON came from and the offending key and field, but never echo
//! the document or its values: a mistyped variable may hold a secret. Syntax errors give
//! only line and column; a key or field name that is not a valid name is identified by
//! position instead. Reading the environment is the caller's job ([`PolicyTable::from_env`]
//! takes the value as a parameter), which keeps this crate free of I/O.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::defaults::{default_policy, is_known, row_policy, DEFAULT_ROWS};
use crate::key::{operation_group, QuotaKey, ServiceGroup};
use crate::policy::Policy;
use crate::schedule::{resolve, EffectivePolicy, ReadTime, WallClock};

mod entry;
mod partial;
mod read_time;
use entry::parse_entry;
use partial::{parse_key, policy_field_error, FieldError, Node};

/// The environment variable holding overrides.
pub const OVERRIDES_ENV: &str = "TOLLGATE_QUOTA_OVERRIDES";

const FIELDS: &str =
    "ratePerSecond, burst, concurrency, retryCapacity, arrivalJitterMs, schedule and allowance";

/// Why an overrides document was refused. `setting` names where it came from (the
/// variable name or a config file path); no variant carries the document's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OverrideError {
    #[error("{setting} is not valid JSON ({problem} at line {line}, column {column}); fix the JSON (its value is not shown)")]
    Syntax {
        setting: String,
        problem: &'static str,
        line: usize,
        column: usize,
    },
    #[error("{setting} must be a JSON object keyed by service:group, such as {{\"logs:DescribeLogStreams\":{{\"ratePerSecond\":5}}}}")]
    NotAnObject { setting: String },
    #[error("{setting}: key #{position} {reason}; keys are service:group, such as logs:DescribeLogStreams (the key is not shown)")]
    InvalidKey {
        setting: String,
        position: usize,
        reason: &'static str,
    },
    #[error("{setting}: {key} is given more than once (service aliases resolve to the same key); keep one entry")]
    DuplicateKey { setting: String, key: String },
    #[error("{setting}: the value of {key} must be an object with any of {FIELDS}")]
    NotAPolicy { setting: String, key: String },
    #[error("{setting}: {key} has unknown field {field}; the fields are {FIELDS}")]
    UnknownField {
        setting: String,
        key: String,
        field: String,
    },
    #[error("{setting}: {key} gives {field} more than once; keep one")]
    DuplicateField {
        setting: String,
        key: String,
        field: &'static str,
    },
    #[error("{setting}: {key}.{field} {rule}")]
    InvalidField {
        setting: String,
        key: String,
        field: &'static str,
        rule: &'static str,
    },
    /// Inside `schedule` or `allowance`: `path` is below the key, such as
    /// `schedule[2].timezone`; `problem` holds only rules and field names.
    #[error("{setting}: {key}.{path} {problem}")]
    InvalidEntry {
        setting: String,
        key: String,
        path: String,
        problem: String,
    },
    #[error("{setting}: {key} has both a schedule and an allowance; a key takes at most one read-time function (seed 003): keep one (a later layer clears one with \"schedule\": [] or \"allowance\": null)")]
    ReadTimeConflict { setting: String, key: String },
}

/// Where an effective policy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A row of [`DEFAULT_ROWS`].
    Default,
    /// An override (merged over the default row or the fallback).
    Override,
    /// The fallback for operations without a row.
    Fallback,
}

/// One `service:group` and the policy it uses, for `tollgate policies`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveRow {
    /// Canonical service name.
    pub service: String,
    /// Operation or operation group.
    pub group: String,
    /// The policy requests under this `service:group` use.
    pub policy: Policy,
    /// Whether it is a default row, an override or the fallback.
    pub origin: Origin,
}

/// The default policies with validated overrides applied.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyTable {
    overrides: BTreeMap<ServiceGroup, Policy>,
    read_time: BTreeMap<ServiceGroup, ReadTime>,
    unknown: Vec<String>,
}

impl PolicyTable {
    /// The defaults, with no overrides.
    pub fn defaults() -> Self {
        Self::default()
    }

    /// The defaults with the overrides in `json`; `source` names where the JSON came from
    /// (for example [`OVERRIDES_ENV`] or a config file path) in error messages.
    pub fn with_overrides(json: &str, source: &str) -> Result<Self, OverrideError> {
        Self::defaults().apply_overrides(json, source)
    }

    /// The table for the value of [`OVERRIDES_ENV`], read by the caller:
    /// `PolicyTable::from_env(std::env::var(OVERRIDES_ENV).ok().as_deref())`.
    pub fn from_env(value: Option<&str>) -> Result<Self, OverrideError> {
        Self::with_overrides(value.unwrap_or(""), OVERRIDES_ENV)
    }

    /// Layer another overrides document over this table (for example the environment over
    /// the config file): its fields win, and its unspecified fields inherit from this
    /// table's effective policy under the same rules as over the defaults.
    pub fn apply_overrides(mut self, json: &str, source: &str) -> Result<Self, OverrideError> {
        if json.trim().is_empty() {
            return Ok(self);
        }
        let setting = source.to_owned();
        let entries = match serde_json::from_str::<Node>(json) {
            Ok(Node::Object(entries)) => entries,
            Ok(_) => return Err(OverrideError::NotAnObject { setting }),
            Err(e) => {
                return Err(OverrideError::Syntax {
                    setting,
                    problem: match e.classify() {
                        serde_json::error::Category::Eof => "unexpected end of input",
                        _ => "syntax error",
                    },
                    line: e.line(),
                    column: e.column(),
                })
            }
        };
        let mut layer: BTreeMap<ServiceGroup, (Policy, Option<ReadTime>)> = BTreeMap::new();
        for (index, (raw_key, value)) in entries.iter().enumerate() {
            let name = parse_key(raw_key).map_err(|reason| OverrideError::InvalidKey {
                setting: setting.clone(),
                position: index + 1,
                reason,
            })?;
            let key = name.to_string();
            if layer.contains_key(&name) {
                return Err(OverrideError::DuplicateKey { setting, key });
            }
            let Node::Object(fields) = value else {
                return Err(OverrideError::NotAPolicy { setting, key });
            };
            let entry = self
                .layer_entry(&name, fields)
                .map_err(|e| e.into_error(setting.clone(), key.clone()))?;
            layer.insert(name, entry);
        }
        for (name, (policy, read_time)) in layer {
            if !is_known(name.service(), name.group()) {
                let key = name.to_string();
                if !self.unknown.contains(&key) {
                    self.unknown.push(key);
                }
            }
            self.overrides.insert(name.clone(), policy);
            match read_time {
                Some(r) => self.read_time.insert(name, r),
                None => self.read_time.remove(&name),
            };
        }
        Ok(self)
    }

    /// One entry of a layer over this table: the key's new policy and read-time function
    /// (inherited unless the entry gives or clears it), checked together.
    fn layer_entry(
        &self,
        name: &ServiceGroup,
        fields: &[(String, Node)],
    ) -> Result<(Policy, Option<ReadTime>), FieldError> {
        let parsed = parse_entry(fields)?;
        let policy = parsed
            .overlay
            .apply(&self.policy_for_name(name))
            .map_err(|e| policy_field_error(&e))?;
        let inherited = self.read_time.get(name);
        let schedule = match parsed.schedule {
            Some(given) => given,
            None => match inherited {
                Some(ReadTime::Schedule(s)) => Some(s.clone()),
                _ => None,
            },
        };
        let allowance = match parsed.allowance {
            Some(given) => given,
            None => match inherited {
                Some(ReadTime::Allowance(a)) => Some(a.clone()),
                _ => None,
            },
        };
        match (schedule, allowance) {
            (Some(_), Some(_)) => Err(FieldError::Conflict),
            (Some(schedule), None) => {
                schedule.check_over(&policy).map_err(|(index, e)| {
                    policy_field_error(&e).within(&format!("schedule[{index}]"), "")
                })?;
                Ok((policy, Some(ReadTime::Schedule(schedule))))
            }
            (None, Some(allowance)) => Ok((policy, Some(ReadTime::Allowance(allowance)))),
            (None, None) => Ok((policy, None)),
        }
    }

    /// The read-time function (schedule or allowance) of a canonical `service:group`.
    pub fn read_time_for_name(&self, name: &ServiceGroup) -> Option<&ReadTime> {
        self.read_time.get(name)
    }

    /// The read-time function of a quota key.
    pub fn read_time_for_key(&self, key: &QuotaKey) -> Option<&ReadTime> {
        self.read_time_for_name(key.service_group())
    }

    /// The policy in force for `name` at `t`, and until when: a scheduled key's schedule
    /// resolved over its policy (valid until the next change of any entry's match, or
    /// `cap`); any other key's policy, valid until [`WallClock::MAX`] (an allowance does
    /// not change the policy; its periods are the allowance counter's business).
    pub fn resolve_for_name(
        &self,
        name: &ServiceGroup,
        t: WallClock,
        cap: WallClock,
    ) -> EffectivePolicy {
        let base = self.policy_for_name(name);
        match self.read_time.get(name) {
            Some(ReadTime::Schedule(schedule)) => resolve(&base, schedule, t, cap),
            _ => EffectivePolicy {
                policy: base,
                entry: None,
                valid_until: WallClock::MAX,
            },
        }
    }

    /// The policy of a `service:group` (service aliases resolved).
    pub fn policy_for(&self, service: &str, group: &str) -> Policy {
        match ServiceGroup::new(service, group) {
            Ok(name) => self.policy_for_name(&name),
            Err(_) => default_policy(service, group),
        }
    }

    /// The policy of a quota key.
    pub fn policy_for_key(&self, key: &QuotaKey) -> Policy {
        self.policy_for_name(key.service_group())
    }

    /// The policy of a canonical `service:group`.
    pub fn policy_for_name(&self, name: &ServiceGroup) -> Policy {
        self.effective_for_name(name).policy
    }

    /// The policy of a `service:group` and where it came from.
    pub fn effective(&self, service: &str, group: &str) -> EffectiveRow {
        match ServiceGroup::new(service, group) {
            Ok(name) => self.effective_for_name(&name),
            Err(_) => EffectiveRow {
                service: service.to_owned(),
                group: group.to_owned(),
                policy: default_policy(service, group),
                origin: Origin::Fallback,
            },
        }
    }

    fn effective_for_name(&self, name: &ServiceGroup) -> EffectiveRow {
        let (policy, origin) = match self.overrides.get(name) {
            Some(p) => (*p, Origin::Override),
            None if is_known(name.service(), name.group()) => (
                default_policy(name.service(), name.group()),
                Origin::Default,
            ),
            None => (
                default_policy(name.service(), name.group()),
                Origin::Fallback,
            ),
        };
        EffectiveRow {
            service: name.service().to_owned(),
            group: name.group().to_owned(),
            policy,
            origin,
        }
    }

    /// Every default row (overridden or not), in table order, then every override that
    /// matches no default row, sorted by `service:group`.
    pub fn rows(&self) -> Vec<EffectiveRow> {
        let defaults = DEFAULT_ROWS.iter().map(|r| {
            let name = ServiceGroup::new(r.service, r.group).expect("default rows are canonical");
            match self.overrides.get(&name) {
                Some(p) => (r.service, r.group, *p, Origin::Override),
                None => (r.service, r.group, row_policy(r), Origin::Default),
            }
        });
        let extra = self
            .overrides
            .iter()
            .filter(|(name, _)| !is_known(name.service(), name.group()))
            .map(|(name, p)| (name.service(), name.group(), *p, Origin::Override));
        defaults
            .chain(extra)
            .map(|(service, group, policy, origin)| EffectiveRow {
                service: service.to_owned(),
                group: group.to_owned(),
                policy,
                origin,
            })
            .collect()
    }

    /// Override keys (canonical `service:group`) that match no default row. They are
    /// applied; the CLI should warn about them ([`PolicyTable::warnings`]).
    pub fn unknown_keys(&self) -> &[String] {
        &self.unknown
    }

    /// One human-readable warning per unknown key, with a hint when the key names an
    /// operation that is admitted under a group (so the override can never apply).
    pub fn warnings(&self) -> Vec<String> {
        self.unknown
            .iter()
            .map(|key| {
                let (service, group) = key.split_once(':').unwrap_or((key, ""));
                let grouped = operation_group(service, group);
                if grouped == group {
                    format!("quota override {key} matches no default policy; it applies to {key} on top of the fallback")
                } else {
                    format!("quota override {key} never applies: {group} requests are admitted under {service}:{grouped}; override that key instead")
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::{fallback_policy, FALLBACK_BURST};
    use crate::key::{AccountScope, Partition};
    use crate::policy::{DEFAULT_CONCURRENCY, DEFAULT_RETRY_CAPACITY};

    fn table(json: &str) -> PolicyTable {
        PolicyTable::with_overrides(json, OVERRIDES_ENV).unwrap()
    }

    /// Rate, burst, concurrency, retry capacity.
    type Fields = (f64, f64, u32, u32);

    fn fields(p: Policy) -> Fields {
        (
            p.rate_per_second(),
            p.burst(),
            p.concurrency(),
            p.retry_capacity(),
        )
    }

    #[test]
    fn merges() {
        let (c, r) = (DEFAULT_CONCURRENCY, DEFAULT_RETRY_CAPACITY);
        // (overrides, service, group, expected rate, burst, concurrency, retry capacity)
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str, Fields)] = &[
            (r#"{"logs:DescribeLogStreams":{"ratePerSecond":5,"burst":1,"concurrency":3,"retryCapacity":10}}"#,
                "logs", "DescribeLogStreams", (5.0, 1.0, 3, 10)),
            // Lowering only an EC2 read rate lowers its inherited burst 10 → 5.
            (r#"{"ec2:DescribeInstances":{"ratePerSecond":5}}"#, "ec2", "DescribeInstances", (5.0, 5.0, c, r)),
            // A fractional rate caps the inherited burst at 1.
            (r#"{"emr:DescribeCluster":{"ratePerSecond":0.5}}"#, "emr", "DescribeCluster", (0.5, 1.0, c, r)),
            (r#"{"emr:ListInstances":{"ratePerSecond":0.25}}"#, "emr", "ListInstances", (0.25, 1.0, c, r)),
            // Raising a rate keeps the default burst.
            (r#"{"kms:GetKeyLastUsage":{"ratePerSecond":50}}"#, "kms", "GetKeyLastUsage", (50.0, 1.0, c, r)),
            (r#"{"route53:all-requests":{"burst":2}}"#, "route53", "all-requests", (5.0, 2.0, c, r)),
            (r#"{"ec2:DescribeVpcs":{"concurrency":2,"retryCapacity":0}}"#, "ec2", "DescribeVpcs", (10.0, 10.0, 2, 0)),
            (r#"{"ec2:DescribeVpcs":{"concurrency":2.0}}"#, "ec2", "DescribeVpcs", (10.0, 10.0, 2, r)),
            // Aliases resolve, in the override and in the lookup.
            (r#"{"elbv2:all-requests":{"ratePerSecond":4}}"#, "elasticloadbalancingv2", "all-requests", (4.0, 1.0, c, r)),
            (r#"{"monitoring:ListMetrics":{"ratePerSecond":4}}"#, "cloudwatch", "ListMetrics", (4.0, 1.0, c, r)),
            // Override-only keys inherit from the fallback.
            (r#"{"ec2:RunInstances":{"ratePerSecond":2}}"#, "ec2", "RunInstances", (2.0, 2.0, c, r)),
            (r#"{"ec2:RunInstances":{}}"#, "ec2", "RunInstances", (10.0, FALLBACK_BURST, c, r)),
            // Empty or blank means no overrides.
            ("", "logs", "DescribeLogStreams", (25.0, 1.0, c, r)),
            (" \n\t", "logs", "DescribeLogStreams", (25.0, 1.0, c, r)),
            ("{}", "logs", "DescribeLogStreams", (25.0, 1.0, c, r)),
        ];
        for &(json, service, group, want) in cases {
            assert_eq!(
                fields(table(json).policy_for(service, group)),
                want,
                "{json}"
            );
        }
    }

    /// A short name for an error's kind, and the field it names if any.
    fn kind(e: &OverrideError) -> String {
        match e {
            OverrideError::Syntax { .. } => "Syntax".into(),
            OverrideError::NotAnObject { .. } => "NotAnObject".into(),
            OverrideError::InvalidKey { position, .. } => format!("InvalidKey#{position}"),
            OverrideError::DuplicateKey { .. } => "DuplicateKey".into(),
            OverrideError::NotAPolicy { .. } => "NotAPolicy".into(),
            OverrideError::UnknownField { .. } => "UnknownField".into(),
            OverrideError::DuplicateField { field, .. } => format!("DuplicateField({field})"),
            OverrideError::InvalidField { field, .. } => format!("InvalidField({field})"),
            OverrideError::InvalidEntry { path, .. } => format!("InvalidEntry({path})"),
            OverrideError::ReadTimeConflict { .. } => "ReadTimeConflict".into(),
        }
    }

    #[test]
    fn an_arrival_jitter_is_inherited_overridden_or_set_to_zero() {
        let dp = "cloudwatch:GetMetricData:older-datapoints";
        // (overrides, key, expected jitter ms, expected admission burst)
        let cases: &[(String, &str, u32, f64)] = &[
            ("{}".into(), dp, 100, 356_400.0),
            // A lowered rate and burst keep the default allowance.
            (
                format!(r#"{{"{dp}":{{"ratePerSecond":8000,"burst":8000}}}}"#),
                dp,
                100,
                7_200.0,
            ),
            (
                format!(r#"{{"{dp}":{{"arrivalJitterMs":0}}}}"#),
                dp,
                0,
                396_000.0,
            ),
            (
                format!(r#"{{"{dp}":{{"arrivalJitterMs":250.0}}}}"#),
                dp,
                250,
                297_000.0,
            ),
            // Any key may have one; none has one by default.
            (
                r#"{"ec2:DescribeVpcs":{"arrivalJitterMs":100}}"#.into(),
                "ec2:DescribeVpcs",
                100,
                9.0,
            ),
            ("{}".into(), "ec2:DescribeVpcs", 0, 10.0),
            // Never below 1: 100/s for 100 ms is more than a burst of 1.
            (
                r#"{"kms:ListKeys":{"arrivalJitterMs":100}}"#.into(),
                "kms:ListKeys",
                100,
                1.0,
            ),
        ];
        for (overrides, key, jitter, admission) in cases {
            let t = PolicyTable::with_overrides(overrides, OVERRIDES_ENV).unwrap();
            let p = t.policy_for_name(&key.parse().unwrap());
            assert_eq!(
                (p.arrival_jitter_ms(), p.admission_burst()),
                (*jitter, *admission),
                "{overrides} {key}"
            );
        }
        // A schedule entry inherits the key's allowance or sets its own.
        let t = PolicyTable::with_overrides(
            &format!(
                r#"{{"{dp}":{{"schedule":[{{"cron":"* * * * *","timezone":"UTC","arrivalJitterMs":7}}]}}}}"#
            ),
            OVERRIDES_ENV,
        );
        assert!(t.is_ok(), "{t:?}");
    }

    #[test]
    fn refusals() {
        #[rustfmt::skip]
        let cases: &[(&str, &str)] = &[
            (r#"{"ec2:DescribeInstances":{"ratePerSecond":5,"burst":6}}"#, "InvalidField(burst)"),
            (r#"{"emr:ListInstances":{"burst":0.5}}"#, "InvalidField(burst)"),
            (r#"{"logs:DescribeLogGroups":{"burst":11}}"#, "InvalidField(burst)"),
            (r#"{"logs:DescribeLogGroups":{"ratePerSecond":0}}"#, "InvalidField(ratePerSecond)"),
            (r#"{"logs:DescribeLogGroups":{"ratePerSecond":-1}}"#, "InvalidField(ratePerSecond)"),
            (r#"{"logs:DescribeLogGroups":{"ratePerSecond":"5"}}"#, "InvalidField(ratePerSecond)"),
            (r#"{"logs:DescribeLogGroups":{"concurrency":0}}"#, "InvalidField(concurrency)"),
            (r#"{"logs:DescribeLogGroups":{"concurrency":1.5}}"#, "InvalidField(concurrency)"),
            (r#"{"logs:DescribeLogGroups":{"concurrency":5000000000}}"#, "InvalidField(concurrency)"),
            (r#"{"logs:DescribeLogGroups":{"retryCapacity":-1}}"#, "InvalidField(retryCapacity)"),
            (r#"{"logs:DescribeLogGroups":{"retryCapacity":null}}"#, "InvalidField(retryCapacity)"),
            (r#"{"logs:DescribeLogGroups":{"arrivalJitterMs":-1}}"#, "InvalidField(arrivalJitterMs)"),
            (r#"{"logs:DescribeLogGroups":{"arrivalJitterMs":1.5}}"#, "InvalidField(arrivalJitterMs)"),
            (r#"{"logs:DescribeLogGroups":{"arrivalJitterMs":60001}}"#, "InvalidField(arrivalJitterMs)"),
            (r#"{"logs:DescribeLogGroups":{"arrivalJitterMs":1e300}}"#, "InvalidField(arrivalJitterMs)"),
            (r#"{"logs:DescribeLogGroups":{"arrivalJitterMs":"100ms"}}"#, "InvalidField(arrivalJitterMs)"),
            (r#"{"logs:DescribeLogGroups":{"arrivalJitterMs":null}}"#, "InvalidField(arrivalJitterMs)"),
            (r#"{"logs:DescribeLogGroups":{"rate":5}}"#, "UnknownField"),
            (r#"{"logs:DescribeLogGroups":{"burst":1,"burst":1}}"#, "DuplicateField(burst)"),
            (r#"{"logs:DescribeLogGroups":5}"#, "NotAPolicy"),
            (r#"{"logs":{"ratePerSecond":5}}"#, "InvalidKey#1"),
            (r#"{"logs:A":{},"b@d:B":{}}"#, "InvalidKey#2"),
            (r#"{"logs:A":{},"logs:A b":{}}"#, "InvalidKey#2"),
            (r#"{"elb:all-requests":{},"elasticloadbalancing:all-requests":{}}"#, "DuplicateKey"),
            (r#"{"logs:A":{},"logs:A":{}}"#, "DuplicateKey"),
            ("[1,2]", "NotAnObject"),
            (r#""text""#, "NotAnObject"),
            ("null", "NotAnObject"),
            (r#"{"logs:A":"#, "Syntax"),
            ("{logs:A}", "Syntax"),
        ];
        for &(json, want) in cases {
            let err = PolicyTable::with_overrides(json, OVERRIDES_ENV).unwrap_err();
            assert_eq!(kind(&err), want, "{json}: {err}");
            assert!(err.to_string().starts_with(OVERRIDES_ENV), "{err}");
        }
    }

    #[test]
    fn errors_never_echo_the_document() {
        const SECRET: &str = "AKIAZZSECRETTOKEN9f8e7d";
        let docs = [
            format!(r#"{{"logs:DescribeLogStreams":{{"ratePerSecond": {SECRET}}}}}"#),
            format!(r#"{{"logs:DescribeLogStreams":{{"ratePerSecond":"{SECRET}"}}}}"#),
            format!(r#"{{"logs:DescribeLogStreams":{{"{SECRET}":1}}}}"#),
            format!(r#"{{"{SECRET}":{{}}}}"#),
            format!(r#"{{"svc:{SECRET}/x":{{}}}}"#),
            format!(r#""{SECRET}""#),
            SECRET.to_owned(),
            format!(r#"{{"logs:DescribeLogStreams":{{"burst":1e999, "x": "{SECRET}"}}}}"#),
        ];
        for doc in &docs {
            let msg = PolicyTable::with_overrides(doc, OVERRIDES_ENV)
                .unwrap_err()
                .to_string();
            assert!(msg.contains(OVERRIDES_ENV), "{msg}");
            // No run of 6 characters from the secret (or the raw document past its key) appears.
            for w in SECRET.as_bytes().windows(6) {
                let w = std::str::from_utf8(w).unwrap();
                assert!(!msg.contains(w), "message {msg:?} echoes {w:?}");
            }
        }
    }

    #[test]
    fn syntax_errors_report_position_and_source() {
        let err = PolicyTable::with_overrides("{\n  \"logs:A\": {oops}\n}", "/etc/tollgate.json")
            .unwrap_err();
        assert!(
            matches!(err, OverrideError::Syntax { line: 2, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("/etc/tollgate.json"));
    }

    #[test]
    fn unknown_keys_are_applied_and_reported() {
        let t = table(
            r#"{"ec2:RunInstances":{"ratePerSecond":2},"lambda:ListFunctions":{},"logs:DescribeLogGroups":{}}"#,
        );
        assert_eq!(
            t.unknown_keys(),
            ["ec2:RunInstances", "lambda:ListFunctions"]
        );
        assert_eq!(t.policy_for("ec2", "RunInstances").rate_per_second(), 2.0);
        let warnings = t.warnings();
        assert!(warnings[1].contains("lambda:control-plane"), "{warnings:?}");
        let rows = t.rows();
        assert_eq!(rows.len(), DEFAULT_ROWS.len() + 2);
        let row = |s: &str, g: &str| {
            rows.iter()
                .find(|r| r.service == s && r.group == g)
                .unwrap()
                .origin
        };
        assert_eq!(row("ec2", "RunInstances"), Origin::Override);
        assert_eq!(row("logs", "DescribeLogGroups"), Origin::Override);
        assert_eq!(row("logs", "DescribeLogStreams"), Origin::Default);
        assert_eq!(t.effective("kms", "Decrypt").origin, Origin::Fallback);
        assert_eq!(t.effective("kms", "Decrypt").policy, fallback_policy());
    }

    #[test]
    fn layers_merge_field_by_field() {
        let t = PolicyTable::with_overrides(
            r#"{"ec2:DescribeVolumes":{"ratePerSecond":4}}"#,
            "tollgate.json",
        )
        .unwrap()
        .apply_overrides(
            r#"{"ec2:DescribeVolumes":{"concurrency":2}}"#,
            OVERRIDES_ENV,
        )
        .unwrap();
        assert_eq!(
            fields(t.policy_for("ec2", "DescribeVolumes")),
            (4.0, 4.0, 2, DEFAULT_RETRY_CAPACITY)
        );
    }

    #[test]
    fn from_env_and_keys() {
        assert_eq!(
            PolicyTable::from_env(None).unwrap(),
            PolicyTable::defaults()
        );
        let t = PolicyTable::from_env(Some(r#"{"kms:ListKeys":{"ratePerSecond":7}}"#)).unwrap();
        let key = QuotaKey::for_operation(
            &Partition::aws(),
            &"123456789012".parse::<AccountScope>().unwrap(),
            Some("us-east-1"),
            "kms",
            "ListKeys",
        )
        .unwrap();
        assert_eq!(t.policy_for_key(&key).rate_per_second(), 7.0);
        let err = PolicyTable::from_env(Some("{")).unwrap_err();
        assert!(err.to_string().contains(OVERRIDES_ENV));
    }

    #[test]
    fn rows_serialize_for_the_cli() {
        let json = serde_json::to_value(&table("").rows()[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"service":"logs","group":"DescribeLogStreams","origin":"default",
                "policy":{"ratePerSecond":25.0,"burst":1.0,"concurrency":10,"retryCapacity":20}})
        );
    }

    proptest::proptest! {
        /// Any valid rate alone, over any default row, yields a valid policy whose
        /// inherited burst is the default's capped at max(1, rate).
        #[test]
        fn a_lone_rate_caps_the_inherited_burst(row in 0..DEFAULT_ROWS.len(), eighths in 1u32..8_000_000) {
            // Multiples of 1/8 print and parse exactly (serde_json may round others by 1 ulp).
            let rate = f64::from(eighths) / 8.0;
            let r = &DEFAULT_ROWS[row];
            let json = format!(r#"{{"{}:{}":{{"ratePerSecond":{rate}}}}}"#, r.service, r.group);
            let p = table(&json).policy_for(r.service, r.group);
            proptest::prop_assert_eq!(p.rate_per_second(), rate);
            proptest::prop_assert_eq!(p.burst(), r.burst.min(rate.max(1.0)));
        }
    }
}
