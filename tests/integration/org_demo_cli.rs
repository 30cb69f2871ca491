//! `tollgate demo` on an organization scenario, as a user runs it: the organization
//! scan through the in-process simulator, and Ctrl-C (SIGINT) in the middle of it:
//! queued accounts are skipped, running ones cancelled, the report of what was
//! collected is still written, and the exit code is 130.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

/// An organization of `members` members whose every answer takes 2 s.
fn slow_organization(members: usize) -> String {
    let mut text = String::from(
        "account = \"100000000000\"\nregions = [\"us-east-1\"]\n\
         [latency]\ndefault = { kind = \"fixed\", ms = 2000 }\n\
         [organization]\n",
    );
    for i in 0..members {
        text.push_str(&format!(
            "[[organization.members]]\naccount = \"{:012}\"\nregions = [\"us-east-1\"]\n\
             [[organization.members.inventory.tables]]\nname = \"t{i}\"\nregion = \"us-east-1\"\n\
             item_count = 1\nsize_bytes = 1\n",
            200_000_000_000u64 + i as u64
        ));
    }
    text
}

#[test]
fn ctrl_c_mid_organization_writes_the_partial_report_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("org.toml");
    std::fs::write(&scenario, slow_organization(12)).unwrap();
    let report_path = tmp.path().join("report.json");
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("demo")
        .arg("--scenario")
        .arg(&scenario)
        .arg("--output")
        .arg(&report_path)
        .arg("--dir")
        .arg(tmp.path().join("admission"));
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // An account's scan has started (its calls take 2 s each, so it is still running,
    // and with 8 accounts in flight some are still queued).
    while !(seen.contains("accounts listed") && seen.contains(": scanning")) {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no scanning line: {seen}"
        );
        seen.push_str(&line);
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("cancelling"), "{rest}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let org = &report["organization"];
    assert_eq!(org["listed"], 13, "{org}");
    let scanned = org["scanned"].as_u64().unwrap();
    let skipped = org["skipped"].as_array().unwrap();
    assert_eq!(scanned as usize + skipped.len(), 13, "{org}");
    assert!(
        skipped.iter().any(|s| s["reason"] == "cancelled"),
        "queued accounts are skipped as cancelled: {org}"
    );
    // What ran was kept, its unfinished datasets cancelled.
    let accounts = report["accounts"].as_array().unwrap();
    assert_eq!(accounts.len() as u64, scanned);
    assert!(
        accounts.iter().any(|a| a["datasets"]
            .as_object()
            .unwrap()
            .values()
            .any(|d| d["status"] == "cancelled")),
        "{report}"
    );
}
