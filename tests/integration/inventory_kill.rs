//! Issue 34: SIGKILL of a scan storing an organization, in the middle of it. An
//! organization scan commits each account as its scan finishes (one transaction each),
//! so after the kill the store opens cleanly, the accounts committed before it are there
//! whole, the accounts in flight left nothing, and the next scan completes. The run is
//! `tollgate demo` on an organization scenario: the simulator in-process, and the same
//! `run_organization` path and account writer as `discover --organization --store`.

// Real processes: the poll for the first committed account reads real time.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MANAGEMENT: &str = "100000000000";

/// Member `i` holds `tables(i)` tables: the first finishes long before the last (every
/// answer takes 300 ms, and DescribeTable runs at most 10 at once).
fn tables(i: usize) -> usize {
    [1, 2, 40, 60][i]
}

fn member(i: usize) -> String {
    format!("{:012}", 200_000_000_000u64 + i as u64)
}

fn scenario() -> String {
    let mut text = format!(
        "account = \"{MANAGEMENT}\"\nregions = [\"us-east-1\"]\n\
         [latency]\ndefault = {{ kind = \"fixed\", ms = 300 }}\n\
         [organization]\n"
    );
    for i in 0..4 {
        text.push_str(&format!(
            "[[organization.members]]\naccount = \"{}\"\nregions = [\"us-east-1\"]\n",
            member(i)
        ));
        for t in 0..tables(i) {
            text.push_str(&format!(
                "[[organization.members.inventory.tables]]\nname = \"m{i}-t{t}\"\n\
                 region = \"us-east-1\"\nitem_count = 1\nsize_bytes = 1\n"
            ));
        }
    }
    text
}

fn demo(scenario: &Path, store: &str, tmp: &Path) -> Command {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("demo")
        .arg("--scenario")
        .arg(scenario)
        .args(["--store", store])
        .arg("--dir")
        .arg(tmp.join("admission"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// The accounts the store holds a committed account row of, for its first scan.
fn committed(file: &Path) -> Vec<String> {
    let Ok(db) =
        rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return Vec::new();
    };
    let Ok(mut q) = db.prepare("SELECT account FROM scan_accounts WHERE scan_id = 1") else {
        return Vec::new();
    };
    q.query_map([], |r| r.get::<_, String>(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

/// Resources in the store's current view, per account.
fn per_account(store: &str, tmp: &Path) -> BTreeMap<String, usize> {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(["resources", "--store", store, "--json"])
        .env("TOLLGATE_ADMISSION_DIR", tmp.join("admission"));
    let out = tollgate_testkit::cli::output(&mut cmd);
    assert!(
        out.status.success(),
        "the store opens after the kill: {}",
        tollgate_testkit::cli::describe(&out)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut out = BTreeMap::new();
    for r in rows {
        *out.entry(r["account"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    out
}

#[test]
fn sigkill_mid_organization_keeps_the_committed_accounts_whole_and_nothing_of_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("org.toml");
    std::fs::write(&path, scenario()).unwrap();
    let file = tmp.path().join("inventory.sqlite");
    let store = format!("sqlite:{}", file.display());

    let mut child = demo(&path, &store, tmp.path()).spawn().unwrap();
    let started = Instant::now();
    let before = loop {
        // A member with resources committed (the management account, with none,
        // finishes first).
        let done = committed(&file);
        if done.iter().any(|a| a != MANAGEMENT) {
            break done;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the scan ended ({status}) before any account was committed");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no account committed in 120 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let after = committed(&file);
    assert!(
        after.len() < 5,
        "the kill came mid-scan, not after every account: {after:?}"
    );
    assert!(
        (0..4).any(|i| after.contains(&member(i))) && (0..4).any(|i| !after.contains(&member(i))),
        "some members committed, some in flight: {after:?}"
    );
    assert!(before.iter().all(|a| after.contains(a)));

    // Every committed account is there whole; an account in flight left nothing.
    let stored = per_account(&store, tmp.path());
    for i in 0..4 {
        let account = member(i);
        let expected = if after.contains(&account) {
            tables(i)
        } else {
            0
        };
        assert_eq!(
            stored.get(&account).copied().unwrap_or(0),
            expected,
            "account {account} (committed: {after:?}): {stored:?}"
        );
    }
    println!("committed before the kill: {after:?}; stored per account: {stored:?}");

    // The next scan completes and stores every account.
    let out = tollgate_testkit::cli::output(&mut demo(&path, &store, tmp.path()));
    let all = tollgate_testkit::cli::describe(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("stored in"), "{all}");
    let stored = per_account(&store, tmp.path());
    for i in 0..4 {
        assert_eq!(
            stored.get(&member(i)).copied(),
            Some(tables(i)),
            "{stored:?}"
        );
    }
}
