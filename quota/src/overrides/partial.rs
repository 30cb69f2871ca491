//! One override entry: its key and its partial policy, parsed and merged over a base.
//!
//! Kept apart from [`super::PolicyTable`] because this is where untrusted text is
//! touched. Nothing here keeps or formats the document's values: a refusal is a field
//! name and a fixed rule, which the caller attaches to the setting and key.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::OverrideError;
use crate::key::{KeyError, ServiceGroup};
use crate::policy::Policy;

const RATE_RULE: &str =
    "must be a finite number greater than 0 (fractions such as 0.5 are allowed)";
const BURST_RULE: &str = "must be a number from 1 through max(1, ratePerSecond)";
const CONCURRENCY_RULE: &str = "must be a positive integer (at most 4294967295)";
const RETRY_RULE: &str = "must be a non-negative integer (0 disables retries)";

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
        }
    }
}

/// Merge a partial policy over `base`.
pub(super) fn merge(base: Policy, fields: &[(String, Node)]) -> Result<Policy, FieldError> {
    let (mut rate, mut burst, mut concurrency, mut retry) = (None, None, None, None);
    for (index, (name, value)) in fields.iter().enumerate() {
        let (field, slot, rule): (&'static str, &mut Option<f64>, &'static str) =
            match name.as_str() {
                "ratePerSecond" => ("ratePerSecond", &mut rate, RATE_RULE),
                "burst" => ("burst", &mut burst, BURST_RULE),
                "concurrency" => ("concurrency", &mut concurrency, CONCURRENCY_RULE),
                "retryCapacity" => ("retryCapacity", &mut retry, RETRY_RULE),
                other => return Err(FieldError::Unknown(describe_field(other, index))),
            };
        if slot.is_some() {
            return Err(FieldError::Duplicate(field));
        }
        let Node::Number(n) = value else {
            return Err(FieldError::Invalid(field, rule));
        };
        *slot = Some(*n);
    }
    let rate = match rate {
        Some(r) if r.is_finite() && r > 0.0 => r,
        Some(_) => return Err(FieldError::Invalid("ratePerSecond", RATE_RULE)),
        None => base.rate_per_second(),
    };
    let max_burst = rate.max(1.0);
    let burst = match burst {
        Some(b) if (1.0..=max_burst).contains(&b) => b,
        Some(_) => return Err(FieldError::Invalid("burst", BURST_RULE)),
        None => base.burst().min(max_burst),
    };
    let concurrency = match concurrency.map(whole_u32) {
        Some(Some(c)) if c > 0 => c,
        Some(_) => return Err(FieldError::Invalid("concurrency", CONCURRENCY_RULE)),
        None => base.concurrency(),
    };
    let retry = match retry.map(whole_u32) {
        Some(Some(r)) => r,
        Some(None) => return Err(FieldError::Invalid("retryCapacity", RETRY_RULE)),
        None => base.retry_capacity(),
    };
    // Every field was checked above; a refusal here would be a bug in those checks.
    Policy::new(rate, burst, concurrency, retry)
        .map_err(|_| FieldError::Invalid("burst", BURST_RULE))
}

/// A non-negative whole number that fits `u32` (`3` and `3.0` both count).
fn whole_u32(n: f64) -> Option<u32> {
    (n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX)).then_some(n as u32)
}

/// Name an unknown field only when it looks like a field name; otherwise by position.
fn describe_field(name: &str, index: usize) -> String {
    if !name.is_empty() && name.len() <= 32 && name.bytes().all(|c| c.is_ascii_alphabetic()) {
        format!("`{name}`")
    } else {
        format!("#{} (its name is not shown)", index + 1)
    }
}

/// Just enough of a JSON tree to validate overrides: objects keep every entry in order
/// (so repeated keys are caught, which `serde_json::Value` would silently collapse), and
/// numbers are kept as `f64`; every other value is only "not a number".
pub(super) enum Node {
    Object(Vec<(String, Node)>),
    Number(f64),
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
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Node::Other)
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
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Other)
    }
}
