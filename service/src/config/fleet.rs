//! The `[fleet]` section: fleet mode for the service's coordinator (docs/fleet.md), the
//! same values as `TOLLGATE_FLEET_*`, checked by the same rules (`tollgate_fleet::settings`)
//! but named by file, line and key.
//!
//! The section only holds values; `tollgate serve` combines them with the environment,
//! whose variables win value by value (see [`FleetValues::or`] for why).

use tollgate_fleet::settings::{check_endpoint_url, check_skew_ms, check_table};
use tollgate_fleet::FleetValues;
use tollgate_quota::fleet::UnknownOnError;

use super::error::Locator;
use super::raw::RawFleet;
use crate::config::ConfigError;

/// Stage two of `[fleet]`.
pub(super) fn validate(at: &Locator<'_>, raw: RawFleet) -> Result<FleetValues, ConfigError> {
    let table = raw.table.get_ref().trim().to_string();
    check_table(&table).map_err(|e| at.at(Some(raw.table.span()), "fleet.table", e.to_string()))?;
    let region = match &raw.region {
        None => None,
        Some(r) => {
            let region = r.get_ref().trim();
            let valid = !region.is_empty()
                && region
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !valid {
                return Err(at.at(
                    Some(r.span()),
                    "fleet.region",
                    format!("{region:?} is not a region name (like \"eu-west-1\")"),
                ));
            }
            Some(region.to_string())
        }
    };
    let endpoint_url = match &raw.endpoint_url {
        None => None,
        Some(u) => {
            let url = u.get_ref().trim();
            check_endpoint_url(url)
                .map_err(|e| at.at(Some(u.span()), "fleet.endpoint_url", e.to_string()))?;
            Some(url.to_string())
        }
    };
    let skew = match &raw.skew_ms {
        None => None,
        Some(ms) => Some(
            check_skew_ms(*ms.get_ref())
                .map_err(|e| at.at(Some(ms.span()), "fleet.skew_ms", e.to_string()))?,
        ),
    };
    let on_error = match &raw.on_error {
        None => None,
        Some(mode) => Some(mode.get_ref().trim().parse().map_err(|e: UnknownOnError| {
            at.at(Some(mode.span()), "fleet.on_error", e.to_string())
        })?),
    };
    Ok(FleetValues {
        table: Some(table),
        region,
        endpoint_url,
        skew,
        on_error,
    })
}
