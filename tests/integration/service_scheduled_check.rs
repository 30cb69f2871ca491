//! A scheduled scan runs the credentials check `POST /v1/scans` runs: a target whose
//! profile does not exist, scheduled every minute, is stored as a `failed` scan whose
//! report says what the check said (the profile's name), instead of a scan whose every
//! call fails. Real `tollgate serve`, real HTTP.
//!
//! Test time: the schedule's cursor is stored before the service starts, at an instant
//! long past, so the schedule has a missed instant and `catch_up` (on by default) fires
//! it once at start-up, through the same runner and the same submit as an instant
//! reached while running. Waiting for the next whole minute instead cost up to 60 s of
//! real time (34 s in a suite run) for a rule the scheduler's paused-time tests prove
//! (`service/src/scheduler/tests.rs`: `fires_on_each_instant_in_simulated_time`,
//! `a_missed_instant_runs_once_at_start_with_catch_up_and_not_without`).

use crate::service_support;

use std::time::Duration;

use service_support::{Dirs, Serve};
use tollgate_quota::schedule::WallClock;
use tollgate_service::scheduler::CursorStore;
use tollgate_service::{History, ServiceConfig, StateDir};

const PROFILE: &str = "nope-tollgate-scheduled";

#[test]
fn a_scheduled_scan_without_credentials_is_stored_failed_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    std::fs::write(
        &config,
        format!(
            "[[target]]\nname = \"nocreds\"\nregions = [\"us-east-1\"]\ndatasets = [\"kms-keys\"]\n\
             profile = \"{PROFILE}\"\n\n[[schedule]]\ntarget = \"nocreds\"\ncron = \"* * * * *\"\n\
             timezone = \"UTC\"\n"
        ),
    )
    .unwrap();
    // The service last handled its schedule long ago: one missed instant, run at start-up.
    let dirs = Dirs::new(tmp.path());
    let schedules = ServiceConfig::load(&config).unwrap().schedules;
    assert_eq!(schedules.len(), 1);
    let history =
        History::open(&StateDir::open(dirs.state.clone()).unwrap().history_path()).unwrap();
    let long_ago = WallClock::parse_rfc3339("2026-01-05T00:00:00.000Z").unwrap();
    history.set_cursor(
        &schedules[0].id,
        long_ago.to_timestamp(WallClock::UNIX_EPOCH),
    );
    drop(history);
    // No shared config files: the profile cannot exist.
    let none = tmp.path().join("none");
    let serve = Serve::start(
        &dirs,
        &["--config", config.to_str().unwrap()],
        &[
            ("AWS_CONFIG_FILE", none.to_str().unwrap()),
            ("AWS_SHARED_CREDENTIALS_FILE", none.to_str().unwrap()),
        ],
    );
    let mut found = None;
    for _ in 0..150 {
        let (code, list) = serve.json("GET", "/v1/scans", None);
        assert_eq!(code, 200, "{list}");
        if let Some(scan) = list["scans"].as_array().and_then(|s| s.first()) {
            found = Some(scan.clone());
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let scan = found.expect("the missed schedule fired within 75 s of the start");
    assert_eq!(scan["target"], "nocreds", "{scan}");
    assert_eq!(scan["status"], "failed", "{scan}");
    let id = scan["scan_id"].as_str().unwrap();
    let (code, report) = serve.json("GET", &format!("/v1/scans/{id}/report"), None);
    assert_eq!(code, 200, "{report}");
    assert!(report.to_string().contains(PROFILE), "{report}");
}
