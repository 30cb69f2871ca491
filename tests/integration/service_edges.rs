//! Timeouts no duration can hold, tried as a user would: over real HTTP against a
//! `tollgate serve` child, and in the configuration file it is started with. Both went
//! through a parser without an overflow guard: the request panicked an actix worker
//! ("cannot convert float seconds to Duration", the client got an empty reply) and the
//! configuration made `serve` exit 101 with a panic.

use crate::service_support;

use std::process::Command;

use service_support::{child_env, Dirs, Serve};

#[test]
fn a_timeout_of_1e20_seconds_is_a_400_naming_the_field_not_a_dead_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&Dirs::new(tmp.path()), &[], &[]);
    for body in [
        r#"{"regions":["us-east-1"],"datasets":["kms-keys"],"timeout":1e20}"#,
        r#"{"regions":["us-east-1"],"datasets":["kms-keys"],"timeout":"99999999999999999999d"}"#,
        r#"{"regions":["us-east-1"],"datasets":["kms-keys"],"timeout":1e300}"#,
    ] {
        // Twice: a panicking worker would leave the second one an empty reply too.
        for _ in 0..2 {
            let (code, answer) = serve.json("POST", "/v1/scans", Some(body));
            assert_eq!(code, 400, "{body}: {answer}");
            let error = answer["error"].as_str().unwrap();
            assert!(error.starts_with("timeout:"), "{body}: {error}");
            assert!(error.contains("at most 168h"), "{body}: {error}");
        }
    }
    let (_, list) = serve.json("GET", "/v1/scans", None);
    assert_eq!(list["scans"], serde_json::json!([]), "no scan was queued");
    assert!(serve.terminate().success(), "serve stops cleanly");
}

#[test]
fn a_configured_timeout_too_long_for_a_duration_exits_1_naming_file_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("service.toml");
    std::fs::write(
        &config,
        "[[target]]\nname = \"prod\"\nregions = [\"us-east-1\"]\ntimeout = \"99999999999999999999d\"\n",
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config);
    child_env(&mut cmd, &Dirs::new(tmp.path()));
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let at = format!("{}:4: `target[0].timeout`", config.display());
    assert!(stderr.contains(&at), "wanted {at:?} in {stderr}");
    assert!(stderr.contains("at most 168h"), "{stderr}");
}
