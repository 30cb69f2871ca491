//! The pieces of an override entry: its key, its partial policy's four fields, the JSON
//! tree they are read from ([`Node`]) and a field's refusal ([`FieldError`]).
//!
//! Kept apart from [`super::PolicyTable`] because this is where untrusted text is
//! touched; `entry.rs` assembles an entry from these and `read_time.rs`'s fields. Nothing here keeps or formats the document's values: a refusal is a field
//! name and a fixed rule, which the caller attaches to the setting and key.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::OverrideError;
use crate::key::{KeyError, ServiceGroup};
use crate::overlay::PolicyOverlay;
use crate::policy::{PolicyError, MAX_ARRIVAL_JITTER_MS};

const RATE_RULE: &str =
    "must be a finite number greater than 0 (fractions such as 0.5 are allowed)";
const BURST_RULE: &str = "must be a number from 1 through max(1, ratePerSecond)";
const CONCURRENCY_RULE: &str = "must be a positive integer (at most 4294967295)";
const RETRY_RULE: &str = "must be a non-negative integer (0 disables retries)";
const JITTER_RULE: &str =
    "must be a whole number of milliseconds from 0 through 60000 (such as 100; 0 allows for none)";

/// Parse an override key, returning a reason that does not quote it.
pub(super) fn parse_key(raw: &str) -> Result<ServiceGroup, &'static str> {
    match raw.parse::<ServiceGroup>() {
        Ok(name) => Ok(name),
        Err(KeyError::ServiceGroup(_)) => Err("has no ':' between service and group"),
        Err(KeyError::Service(_)) => {
            Err("has an invalid service (use lowercase letters, digits and '-')")
        }
        Err(_) => Err("has an invalid group (use letters, digits, '-', '_', '.' and ':')"),
    }
}

/// A field-level failure, before the setting and key are attached.
pub(super) enum FieldError {
    Unknown(String),
    Duplicate(&'static str),
    Invalid(&'static str, &'static str),
    /// Inside `schedule` or `allowance`: the path below the key and what is wrong (fixed
    /// rules and field names only).
    Nested {
        path: String,
        problem: String,
    },
    /// A schedule and an allowance on one key.
    Conflict,
}

impl FieldError {
    pub(super) fn into_error(self, setting: String, key: String) -> OverrideError {
        match self {
            FieldError::Unknown(field) => OverrideError::UnknownField {
                setting,
                key,
                field,
            },
            FieldError::Duplicate(field) => OverrideError::DuplicateField {
                setting,
                key,
                field,
            },
            FieldError::Invalid(field, rule) => OverrideError::InvalidField {
                setting,
                key,
                field,
                rule,
            },
            FieldError::Nested { path, problem } => OverrideError::InvalidEntry {
                setting,
                key,
                path,
                problem,
            },
            FieldError::Conflict => OverrideError::ReadTimeConflict { setting, key },
        }
    }

    /// The same failure inside `path` (such as `schedule[2]`), listing `fields` as the
    /// fields allowed there.
    pub(super) fn within(self, path: &str, fields: &str) -> FieldError {
        let (path, problem) = match self {
            FieldError::Unknown(field) => (
                path.to_owned(),
                format!("has unknown field {field}; the fields are {fields}"),
            ),
            FieldError::Duplicate(field) => (
                path.to_owned(),
                format!("gives {field} more than once; keep one"),
            ),
            FieldError::Invalid(field, rule) => (format!("{path}.{field}"), rule.to_owned()),
            FieldError::Nested {
                path: inner,
                problem,
            } if inner.is_empty() => (path.to_owned(), problem),
            FieldError::Nested {
                path: inner,
                problem,
            } => (format!("{path}.{inner}"), problem),
            FieldError::Conflict => return FieldError::Conflict,
        };
        FieldError::Nested { path, problem }
    }
}

/// The policy fields of an entry, as given, checked one by one.
#[derive(Default)]
pub(super) struct PolicyFields {
    rate: Option<f64>,
    burst: Option<f64>,
    concurrency: Option<f64>,
    retry: Option<f64>,
    jitter: Option<f64>,
}

impl PolicyFields {
    /// Take `name` if it is a policy field: `Ok(false)` if it is not one.
    pub(super) fn take(&mut self, name: &str, value: &Node) -> Result<bool, FieldError> {
        let (field, slot, rule): (&'static str, &mut Option<f64>, &'static str) = match name {
            "ratePerSecond" => ("ratePerSecond", &mut self.rate, RATE_RULE),
            "burst" => ("burst", &mut self.burst, BURST_RULE),
            "concurrency" => ("concurrency", &mut self.concurrency, CONCURRENCY_RULE),
            "retryCapacity" => ("retryCapacity", &mut self.retry, RETRY_RULE),
            "arrivalJitterMs" => ("arrivalJitterMs", &mut self.jitter, JITTER_RULE),
            _ => return Ok(false),
        };
        if slot.is_some() {
            return Err(FieldError::Duplicate(field));
        }
        let Node::Number(n) = value else {
            return Err(FieldError::Invalid(field, rule));
        };
        *slot = Some(*n);
        Ok(true)
    }

    /// The overlay, each field checked on its own (the burst against the rate is checked
    /// when it is applied to a base).
    pub(super) fn into_overlay(self) -> Result<PolicyOverlay, FieldError> {
        if let Some(r) = self.rate {
            if !r.is_finite() || r <= 0.0 {
                return Err(FieldError::Invalid("ratePerSecond", RATE_RULE));
            }
        }
        if let Some(b) = self.burst {
            if !b.is_finite() || b < 1.0 {
                return Err(FieldError::Invalid("burst", BURST_RULE));
            }
        }
        let concurrency = match self.concurrency.map(whole_u32) {
            Some(Some(c)) if c > 0 => Some(c),
            Some(_) => return Err(FieldError::Invalid("concurrency", CONCURRENCY_RULE)),
            None => None,
        };
        let retry = match self.retry.map(whole_u32) {
            Some(Some(r)) => Some(r),
            Some(None) => return Err(FieldError::Invalid("retryCapacity", RETRY_RULE)),
            None => None,
        };
        let jitter = match self.jitter.map(whole_u32) {
            Some(Some(ms)) if ms <= MAX_ARRIVAL_JITTER_MS => Some(ms),
            Some(_) => return Err(FieldError::Invalid("arrivalJitterMs", JITTER_RULE)),
            None => None,
        };
        PolicyOverlay::new(self.rate, self.burst, concurrency, retry)
            .and_then(|o| o.with_arrival_jitter_ms(jitter))
            .map_err(|e| policy_field_error(&e))
    }
}

/// The field and rule of a policy refusal.
pub(super) fn policy_field_error(e: &PolicyError) -> FieldError {
    match e {
        PolicyError::Rate(_) => FieldError::Invalid("ratePerSecond", RATE_RULE),
        PolicyError::Concurrency => FieldError::Invalid("concurrency", CONCURRENCY_RULE),
        PolicyError::ArrivalJitter(_) => FieldError::Invalid("arrivalJitterMs", JITTER_RULE),
        _ => FieldError::Invalid("burst", BURST_RULE),
    }
}

/// A non-negative whole number that fits `u32` (`3` and `3.0` both count).
fn whole_u32(n: f64) -> Option<u32> {
    (n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX)).then_some(n as u32)
}

/// Name an unknown field only when it looks like a field name; otherwise by position.
pub(super) fn describe_field(name: &str, index: usize) -> String {
    if !name.is_empty() && name.len() <= 32 && name.bytes().all(|c| c.is_ascii_alphabetic()) {
        format!("`{name}`")
    } else {
        format!("#{} (its name is not shown)", index + 1)
    }
}

/// Just enough of a JSON tree to validate overrides: objects keep every entry in order
/// (so repeated keys are caught, which `serde_json::Value` would silently collapse),
/// numbers are kept as `f64`, arrays, strings and null as such; booleans are `Other`.
/// No error message ever formats a `Text`.
pub(super) enum Node {
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
    Number(f64),
    Text(String),
    Null,
    Other,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Node>()? {
            entries.push(entry);
        }
        Ok(Node::Object(entries))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Number(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v as f64))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Other)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Text(v.to_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
}
