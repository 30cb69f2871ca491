//! The `[[target]]` entries: each one's name checked (a unique, plain word) and its
//! fields turned into a [`ScanRequest`] by the same rules as an on-demand scan
//! ([`ScanFields::into_request`]), every refusal named by file, line and key.

use std::collections::BTreeMap;
use std::ops::Range;

use super::error::Locator;
use super::raw::RawTarget;
use crate::config::ConfigError;
use crate::duration::parse_duration;
use crate::scan_request::{ScanFields, ScanRequest};

/// Stage two of every `[[target]]`, by name.
pub(super) fn validate(
    at: &Locator<'_>,
    raw: Vec<RawTarget>,
) -> Result<BTreeMap<String, ScanRequest>, ConfigError> {
    let mut targets = BTreeMap::new();
    for (i, target) in raw.into_iter().enumerate() {
        let key = |field: &str| format!("target[{i}].{field}");
        let name = checked_name(at, &target, &targets, key("name"))?;
        let request = fields(at, &target, &key)?
            .into_request()
            .map_err(|e| at.at(span_of(&target, e.field), key(e.field), e.message))?;
        targets.insert(name, request);
    }
    Ok(targets)
}

/// The target's name, trimmed: letters, digits, `-`, `_` or `.`, and not one already
/// defined.
fn checked_name(
    at: &Locator<'_>,
    target: &RawTarget,
    defined: &BTreeMap<String, ScanRequest>,
    key: String,
) -> Result<String, ConfigError> {
    let name = target.name.get_ref().trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(at.at(
            Some(target.name.span()),
            key,
            "use letters, digits, '-', '_' or '.'",
        ));
    }
    if defined.contains_key(&name) {
        return Err(at.at(
            Some(target.name.span()),
            key,
            format!("a target named {name:?} is already defined"),
        ));
    }
    Ok(name)
}

/// The target's values as an on-demand scan's fields (its `timeout` parsed here).
fn fields(
    at: &Locator<'_>,
    target: &RawTarget,
    key: &dyn Fn(&str) -> String,
) -> Result<ScanFields, ConfigError> {
    let timeout = match &target.timeout {
        None => None,
        Some(t) => Some(
            parse_duration(t.get_ref())
                .map_err(|e| at.at(Some(t.span()), key("timeout"), e.to_string()))?,
        ),
    };
    Ok(ScanFields {
        regions: list(&target.regions),
        datasets: list(&target.datasets),
        types: list(&target.types),
        endpoint_url: target.endpoint_url.as_ref().map(|e| e.get_ref().clone()),
        profile: target.profile.clone(),
        timeout,
        role_arn: target.role_arn.as_ref().map(|r| r.get_ref().clone()),
        external_id: target.external_id.as_ref().map(|r| r.get_ref().clone()),
        session_name: target.session_name.as_ref().map(|r| r.get_ref().clone()),
        metrics: target.metrics,
        details: target.details,
        pricing: target.pricing,
        pricing_url: target.pricing_url.as_ref().map(|u| u.get_ref().clone()),
        regions_fallback: list(&target.regions_fallback),
        organization: target.organization.as_ref().is_some_and(|o| *o.get_ref()),
        role_name: target.role_name.as_ref().map(|r| r.get_ref().clone()),
        accounts: list(&target.accounts),
        exclude_accounts: list(&target.exclude_accounts),
        max_accounts_in_flight: target.max_accounts_in_flight.as_ref().map(|n| *n.get_ref()),
    })
}

/// Where `field` (as a [`ScanFields`] refusal names it) is written; a field the file
/// does not hold points at the target's name.
fn span_of(target: &RawTarget, field: &str) -> Option<Range<usize>> {
    match field {
        "regions" => target.regions.as_ref().map(|r| r.span()),
        "datasets" => target.datasets.as_ref().map(|d| d.span()),
        "types" => target.types.as_ref().map(|d| d.span()),
        "endpoint_url" => target.endpoint_url.as_ref().map(|e| e.span()),
        "timeout" => target.timeout.as_ref().map(|t| t.span()),
        "role_arn" => target.role_arn.as_ref().map(|r| r.span()),
        "external_id" => target.external_id.as_ref().map(|r| r.span()),
        "session_name" => target.session_name.as_ref().map(|r| r.span()),
        "regions_fallback" => target.regions_fallback.as_ref().map(|r| r.span()),
        "organization" => target.organization.as_ref().map(|r| r.span()),
        "role_name" => target.role_name.as_ref().map(|r| r.span()),
        "accounts" => target.accounts.as_ref().map(|r| r.span()),
        "exclude_accounts" => target.exclude_accounts.as_ref().map(|r| r.span()),
        "max_accounts_in_flight" => target.max_accounts_in_flight.as_ref().map(|r| r.span()),
        "pricing_url" => target.pricing_url.as_ref().map(|r| r.span()),
        _ => Some(target.name.span()),
    }
}

/// A list-valued key's strings (absent: none).
fn list(value: &Option<toml::Spanned<Vec<String>>>) -> Vec<String> {
    value
        .as_ref()
        .map(|v| v.get_ref().clone())
        .unwrap_or_default()
}
