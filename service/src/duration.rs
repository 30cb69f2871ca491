//! Durations as people write them on the command line, in the configuration file and in
//! request bodies: `90s`, `5m`, `1h`, `1500ms`, `2d`, or plain seconds (`12`, `1.5`).
//!
//! This is the one parser: `tollgate discover --timeout`, a target's `timeout` in the
//! service's configuration and `POST /v1/scans`'s `"timeout"` all go through it. Every
//! duration it gives is a scan timeout, so it is bounded by the engine's
//! [`MAX_TIMEOUT`]; checking that bound *before* converting is the overflow guard
//! (`Duration::from_secs_f64` panics past `u64` seconds, which took down an actix worker
//! on `"timeout": 1e20` and `tollgate serve` on `timeout = "99999999999999999999d"`).
//!
//! Why not a crate such as humantime: it refuses bare numbers (`12`) and fractions
//! (`1.5m`), both of which tollgate documents and accepts today, and it accepts units
//! and combinations (`1y 2months`) that a scan timeout has no use for. The grammar here
//! is one number and one unit; the conversion is `Duration::try_from_secs_f64`, which
//! refuses what it cannot represent instead of panicking.

use std::time::Duration;

use tollgate_scan::request::MAX_TIMEOUT;

/// The units accepted, in seconds.
const UNITS: [(&str, f64); 6] = [
    ("ms", 0.001),
    ("", 1.0),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3_600.0),
    ("d", 86_400.0),
];

/// A duration was refused; the message says what is accepted instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The text does not start with a number.
    #[error("{0:?} is not a duration (try 90s, 5m, 1h or 1500ms)")]
    NotANumber(String),
    /// The number is followed by something other than a unit.
    #[error("{text:?}: unknown unit {unit:?} (use ms, s, m, h or d)")]
    UnknownUnit {
        /// What was written.
        text: String,
        /// The unit part of it.
        unit: String,
    },
    /// Zero, negative or not a number (`NaN`).
    #[error("{0}: a duration must be longer than zero")]
    NotPositive(String),
    /// Longer than [`MAX_TIMEOUT`] (infinite and overflowing numbers included).
    #[error("{0}: a duration must be at most 168h (7 days)")]
    TooLong(String),
}

/// Parse a positive duration of at most [`MAX_TIMEOUT`]; never panics.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| DurationError::NotANumber(text.to_string()))?;
    let Some(&(_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
        return Err(DurationError::UnknownUnit {
            text: text.to_string(),
            unit: unit.to_string(),
        });
    };
    bounded(value * scale, || format!("{text:?}"))
}

/// A number of seconds (a JSON number in a request body) as a duration, with the same
/// bounds as [`parse_duration`]; never panics.
pub fn duration_from_seconds(seconds: f64) -> Result<Duration, DurationError> {
    bounded(seconds, || format!("{seconds} seconds"))
}

/// The one guard: positive, at most [`MAX_TIMEOUT`], then converted without panicking.
fn bounded(seconds: f64, shown: impl Fn() -> String) -> Result<Duration, DurationError> {
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(DurationError::NotPositive(shown()));
    }
    if seconds > MAX_TIMEOUT.as_secs_f64() {
        return Err(DurationError::TooLong(shown()));
    }
    let duration =
        Duration::try_from_secs_f64(seconds).map_err(|_| DurationError::TooLong(shown()))?;
    if duration.is_zero() {
        // Positive but below a nanosecond.
        return Err(DurationError::NotPositive(shown()));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units_parse_and_nonsense_is_refused() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("12"), Ok(Duration::from_secs(12)));
        assert_eq!(parse_duration(" 1.5m "), Ok(Duration::from_secs(90)));
        for bad in [
            "0s",
            "",
            "5 parsecs",
            "-1s",
            "s",
            "1.2.3s",
            "NaNs",
            "infs",
            "1e30s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_huge_duration_is_refused_not_a_panic() {
        // Regression: the service's copy of the parser panicked on these.
        for huge in [
            "99999999999999999999d",
            "100000000000000000000000000000h",
            "169h",
            "604801s",
            "8d",
        ] {
            let err = parse_duration(huge).unwrap_err();
            assert!(err.to_string().contains("at most 168h"), "{huge}: {err}");
        }
        assert_eq!(parse_duration("168h"), Ok(MAX_TIMEOUT));
        assert_eq!(parse_duration("7d"), Ok(MAX_TIMEOUT));
    }

    #[test]
    fn seconds_from_a_request_body_have_the_same_bounds() {
        assert_eq!(duration_from_seconds(30.0), Ok(Duration::from_secs(30)));
        assert_eq!(duration_from_seconds(0.25), Ok(Duration::from_millis(250)));
        for (seconds, want) in [
            (1e20, "at most 168h"),
            (f64::INFINITY, "at most 168h"),
            (604_801.0, "at most 168h"),
            (0.0, "longer than zero"),
            (-3.0, "longer than zero"),
            (f64::NAN, "longer than zero"),
            (1e-12, "longer than zero"),
        ] {
            let err = duration_from_seconds(seconds).unwrap_err().to_string();
            assert!(err.contains(want), "{seconds}: {err}");
        }
    }

    proptest! {
        #[test]
        fn no_text_makes_the_parser_panic(text in ".{0,40}") {
            let _ = parse_duration(&text);
        }

        #[test]
        fn no_number_and_unit_make_the_parser_panic(
            number in "[0-9.]{0,30}",
            unit in prop::sample::select(vec!["", "ms", "s", "m", "h", "d", "x", " "]),
        ) {
            if let Ok(d) = parse_duration(&format!("{number}{unit}")) {
                prop_assert!(!d.is_zero() && d <= MAX_TIMEOUT, "{d:?}");
            }
        }

        #[test]
        fn no_number_of_seconds_makes_the_conversion_panic(seconds in any::<f64>()) {
            if let Ok(d) = duration_from_seconds(seconds) {
                prop_assert!(!d.is_zero() && d <= MAX_TIMEOUT, "{d:?}");
            }
        }

        #[test]
        fn whole_seconds_up_to_the_bound_parse_exactly(
            seconds in 1..=MAX_TIMEOUT.as_secs(),
        ) {
            prop_assert_eq!(
                parse_duration(&format!("{seconds}s")),
                Ok(Duration::from_secs(seconds))
            );
            prop_assert_eq!(parse_duration(&seconds.to_string()), Ok(Duration::from_secs(seconds)));
        }
    }
}
