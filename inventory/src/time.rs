//! Timestamps as the store keeps them: RFC 3339 UTC with milliseconds
//! (`2026-12-03T06:37:18.671Z`), one fixed width so that text order is time order on
//! both engines. The store never reads the clock: times come from the report, and a
//! relative `--since 24h` is resolved against a `now` the caller passes.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::error::{InventoryError, InventoryErrorKind, Result};

/// Parses an RFC 3339 timestamp and writes it in the store's fixed form.
pub fn normalize(timestamp: &str) -> Result<String> {
    let parsed = DateTime::parse_from_rfc3339(timestamp).map_err(|err| {
        InventoryError::new(
            InventoryErrorKind::MalformedReport,
            format!(
                "{timestamp:?} is not an RFC 3339 timestamp ({err}); write it as 2026-12-03T06:37:18Z"
            ),
        )
    })?;
    Ok(format(parsed.with_timezone(&Utc)))
}

/// Writes a time in the store's fixed form.
pub fn format(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_timestamp_gets_one_width() {
        assert_eq!(
            normalize("2026-12-03T06:37:18Z").unwrap(),
            "2026-12-03T06:37:18.000Z"
        );
        assert_eq!(
            normalize("2026-12-03T07:37:18.5+01:00").unwrap(),
            "2026-12-03T06:37:18.500Z"
        );
        assert_eq!(
            normalize("yesterday").unwrap_err().kind(),
            InventoryErrorKind::MalformedReport
        );
    }
}
