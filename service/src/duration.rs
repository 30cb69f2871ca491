//! Durations as people write them in configuration and request bodies: `90s`, `5m`,
//! `1h`, `1500ms`, `30d`, or plain seconds.

use std::time::Duration;

/// Parse a positive duration; the error says what is accepted.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try 90s, 5m, 1h or 1500ms)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use ms, s, m, h or d)"
            ))
        }
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("{text:?}: a duration must be longer than zero"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_and_nonsense_is_refused() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("12"), Ok(Duration::from_secs(12)));
        for bad in ["0s", "", "5 parsecs", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
