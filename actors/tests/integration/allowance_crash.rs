//! A calendar allowance across a coordinator SIGKILL, with real processes: a child process
//! (`tollgate-actors-test-child allowance-coordinator`, tests/bin/child.rs) becomes the
//! coordinator of an admission directory, spends part of a yearly allowance and is
//! killed with SIGKILL; this process then takes over the directory (an unclean takeover of the sled state) and
//! spends what is left. The period's total must stay within the amount: the successor
//! charges the dead coordinator's whole lease (`AllowanceCounter::restore`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::{connect, AdmissionError, CoordinatorSpec, Schedules, WaitOptions};
use tollgate_quota::{Policy, PolicyTable, QuotaKey, Refusal, WallClock};
use tollgate_storage::AdmissionDir;
use tollgate_testkit::runtime;

/// Ten per calendar year (UTC): one period for the whole test, whenever it runs (short of
/// New Year's midnight).
const OVERRIDES: &str = r#"{"kms:ListKeys": {"ratePerSecond": 100, "burst": 4,
    "allowance": {"amount": 10, "resets": "0 0 1 1 *", "timezone": "UTC"}}}"#;
const AMOUNT: usize = 10;
const CHILD_SPENDS: usize = 6;

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/kms:ListKeys".parse().unwrap()
}

fn table() -> PolicyTable {
    PolicyTable::with_overrides(OVERRIDES, "test overrides").unwrap()
}

fn policy() -> Policy {
    table().policy_for_key(&key())
}

/// The spec every coordinator of this test enforces (its own, by failover too).
fn spec() -> CoordinatorSpec {
    CoordinatorSpec {
        schedules: Schedules::new(Arc::new(table()), WallClock::UNIX_EPOCH),
        fleet: None,
    }
}

#[test]
fn after_a_coordinator_sigkill_mid_period_the_allowance_is_not_exceeded() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("adm");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate-actors-test-child"))
        .arg("allowance-coordinator")
        .arg(&path)
        .arg(key().to_string())
        .arg(OVERRIDES)
        .env("TOLLGATE_TEST_CHILD_SPENDS", CHILD_SPENDS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut child_grants = 0;
    loop {
        match lines.next() {
            Some(Ok(line)) if line == "granted" => child_grants += 1,
            Some(Ok(line)) if line == "spent" => break,
            Some(Ok(_)) => {}
            other => panic!("the child ended before spending: {other:?}"),
        }
    }
    // Let a few periodic renewals land, then SIGKILL: no graceful record.
    std::thread::sleep(Duration::from_millis(400));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(child_grants, CHILD_SPENDS);

    let dir = AdmissionDir::at(&path).unwrap();
    let admission = connect(&dir, spec()).unwrap();
    assert!(admission.is_coordinator(), "the dead child's lock is free");
    let rt = runtime();
    let mine = rt.block_on(async {
        let handle = admission.handle();
        let slot = handle
            .reserve(&key(), policy(), WaitOptions::default())
            .await
            .unwrap();
        let short = WaitOptions {
            timeout: Duration::from_secs(2),
            scope: None,
        };
        let mut mine = 0;
        loop {
            match slot.admit(1, false, short).await {
                Ok(_) => mine += 1,
                Err(AdmissionError::Refused {
                    refusal: Refusal::AllowanceExhausted { .. },
                    ..
                }) => break,
                Err(e) => panic!("{e}"),
            }
            assert!(mine <= AMOUNT, "runaway admissions");
        }
        let status = handle.status().await.unwrap();
        let allowance = status[0].calendar.unwrap().allowance.unwrap();
        assert_eq!(allowance.used, AMOUNT as u64, "{allowance:?}");
        drop(slot);
        mine
    });
    rt.block_on(admission.shutdown()).unwrap();
    assert!(
        child_grants + mine <= AMOUNT,
        "{child_grants} + {mine} starts in one period of {AMOUNT}"
    );
    // The successor charged the dead coordinator's whole lease (burst 4 / 4 = 1 unit)
    // on top of its recorded use: one unit fewer than a trusting restore would give.
    assert_eq!(mine, AMOUNT - CHILD_SPENDS - 1);
}
