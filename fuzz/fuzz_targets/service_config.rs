//! The service's configuration file (`tollgate serve --config FILE`, TOML):
//! `ServiceConfig::parse`, both stages (serde's shape with unknown keys refused, then
//! every value checked: counts, the cooldown, retention, targets through the same
//! `ScanFields` as the API, cron patterns and time zones, `[fleet]`). A config that
//! parses is then used as the service uses it at start: every schedule asked for its
//! next instant by the scheduler's pure `decide` from a few cursors (the epoch, Berlin's
//! 2026 spring-forward hour, the end of `WallClock`'s range).
//!
//! Beyond "no panic": a refusal names the file and a line inside the file, and the
//! message says something; an accepted file gives the same config when parsed again,
//! its targets are requests the engine accepts unchanged, its cooldown and retention
//! are in range.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tollgate_scan::request::MAX_TIMEOUT;
use tollgate_quota::Timestamp;
use tollgate_service::scheduler::{decide, Phase};
use tollgate_service::ServiceConfig;

const FILE: &str = "/etc/tollgate/service.toml";

/// Scheduler cursors, in microseconds since the epoch.
const CURSORS: [u64; 4] = [
    0,
    1_774_746_000_000_000,
    1_774_749_600_000_000,
    253_402_300_799_999_000,
];

fn check_accepted(text: &str, config: &ServiceConfig) {
    let again = ServiceConfig::parse(Path::new(FILE), text).expect("accepted once, refused twice");
    assert_eq!(&again, config, "the same file parses differently");
    for (name, request) in &config.targets {
        assert_eq!(
            request.clone().validate().as_ref(),
            Ok(request),
            "target {name:?} changes when validated again"
        );
    }
    assert!(
        config.guard.cooldown <= MAX_TIMEOUT,
        "{:?}",
        config.guard.cooldown
    );
    assert!(!config.retention.max_age.is_zero());
    for schedule in &config.schedules {
        assert!(
            config.targets.contains_key(&schedule.target),
            "{}",
            schedule.id
        );
        for cursor in CURSORS {
            let cursor = Timestamp::from_micros(cursor);
            let now = Timestamp::from_micros(cursor.as_micros().saturating_add(3_600_000_000));
            let _ = decide(schedule.next.as_ref(), cursor, now, Phase::Starting, false);
            let _ = decide(schedule.next.as_ref(), cursor, now, Phase::Running, true);
        }
    }
}

fn check_refused(text: &str, error: &tollgate_service::ConfigError) {
    let shown = error.to_string();
    assert!(shown.starts_with(FILE), "the file is not named: {shown}");
    assert!(!error.message.trim().is_empty(), "no reason: {shown}");
    let line = error
        .line
        .unwrap_or_else(|| panic!("a refusal without a line: {shown}"));
    let lines = text.matches('\n').count() + 1;
    assert!(
        (1..=lines).contains(&line),
        "line {line} of a {lines}-line file: {shown}"
    );
    if let Some(key) = &error.key {
        assert!(!key.trim().is_empty(), "an empty key: {shown}");
        assert!(
            !key.chars().any(char::is_control),
            "a key no one can write: {shown}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    // `ServiceConfig::load` reads the file with `read_to_string`: non-UTF-8 is refused
    // there, before parsing.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ServiceConfig::parse(Path::new(FILE), text) {
        Ok(config) => check_accepted(text, &config),
        Err(error) => check_refused(text, &error),
    }
});
