//! A scheduled scan runs the credentials check `POST /v1/scans` runs: a target whose
//! profile does not exist, scheduled every minute, is stored as a `failed` scan whose
//! report says what the check said (the profile's name), instead of a scan whose every
//! call fails. Real `tollgate serve`, real HTTP; waits for the next whole minute (at
//! most about 60 s).

mod service_support;

use std::time::Duration;

use service_support::{Dirs, Serve};

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
    // No shared config files: the profile cannot exist.
    let none = tmp.path().join("none");
    let serve = Serve::start(
        &Dirs::new(tmp.path()),
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
    let scan = found.expect("the schedule fired within 75 s");
    assert_eq!(scan["target"], "nocreds", "{scan}");
    assert_eq!(scan["status"], "failed", "{scan}");
    let id = scan["scan_id"].as_str().unwrap();
    let (code, report) = serve.json("GET", &format!("/v1/scans/{id}/report"), None);
    assert_eq!(code, 200, "{report}");
    assert!(report.to_string().contains(PROFILE), "{report}");
}
