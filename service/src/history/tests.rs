use std::num::NonZeroUsize;
use std::time::Duration;

use super::*;

const DAY: u64 = 86_400_000_000;

fn record(
    id: &str,
    target: Option<&str>,
    status: ScanStatus,
    queued: u64,
    finished: Option<u64>,
) -> ScanRecord {
    ScanRecord {
        scan_id: id.to_string(),
        target: target.map(str::to_string),
        status,
        queued_at: queued,
        started_at: Some(queued),
        finished_at: finished,
        account: None,
        regions: vec!["us-east-1".into()],
        datasets: vec!["kms-keys".into()],
        final_progress: Vec::new(),
        final_accounts: Vec::new(),
        store: None,
    }
}

/// Open `path` again after a `History` on it was dropped. sled's flusher thread lets go
/// of the file lock at its next wake-up (up to its 500 ms interval) after the last handle
/// is dropped, so an immediate reopen can find the lock still held (seen under load in
/// `.ci/run`): retried 10 ms apart, at most 500 times.
fn reopen(path: &std::path::Path) -> History {
    let mut tries = 0;
    loop {
        match History::open(path) {
            Ok(h) => return h,
            Err(e) if tries < 500 && e.to_string().contains("could not acquire lock") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("reopening the history: {e}"),
        }
    }
}

#[tokio::test]
async fn records_and_reports_survive_reopening() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("h.sled");
    let report: DiscoveryReport = serde_json::from_str(
        r#"{"scan_id":"scan-1","partition":"aws","account":"1","regions":["us-east-1"],
            "started_at":"a","finished_at":"b","datasets":{},"throttling":{}}"#,
    )
    .unwrap();
    {
        let history = History::open(&path).unwrap();
        history
            .finish(
                &record("scan-1", None, ScanStatus::Complete, 1, Some(2)),
                Some(&report),
            )
            .await
            .unwrap();
        history
            .put(&record("scan-2", None, ScanStatus::Running, 3, None))
            .unwrap();
    }
    let history = reopen(&path);
    assert_eq!(history.report("scan-1").unwrap(), Some(report));
    let ids: Vec<_> = history
        .records()
        .unwrap()
        .into_iter()
        .map(|r| r.scan_id)
        .collect();
    assert_eq!(ids, ["scan-2", "scan-1"], "newest first");
}

#[tokio::test]
async fn unfinished_scans_are_marked_interrupted_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let history = History::open(&tmp.path().join("h.sled")).unwrap();
    history
        .put(&record("q", None, ScanStatus::Queued, 1, None))
        .unwrap();
    history
        .put(&record("r", None, ScanStatus::Running, 2, None))
        .unwrap();
    history
        .put(&record("c", None, ScanStatus::Complete, 3, Some(4)))
        .unwrap();
    let mut ids = history.interrupt_unfinished(10).await.unwrap();
    ids.sort();
    assert_eq!(ids, ["q", "r"]);
    let r = history.record("r").unwrap().unwrap();
    assert_eq!(
        (r.status, r.finished_at),
        (ScanStatus::Interrupted, Some(10))
    );
    assert_eq!(
        history.record("c").unwrap().unwrap().status,
        ScanStatus::Complete
    );
}

#[test]
fn retention_keeps_the_newest_per_target_and_drops_the_old() {
    let tmp = tempfile::tempdir().unwrap();
    let history = History::open(&tmp.path().join("h.sled")).unwrap();
    let now = 100 * DAY;
    for i in 0..4u64 {
        let at = now - DAY * (i + 1);
        history
            .put(&record(
                &format!("a{i}"),
                Some("a"),
                ScanStatus::Complete,
                at,
                Some(at),
            ))
            .unwrap();
        history
            .put(&record(
                &format!("b{i}"),
                Some("b"),
                ScanStatus::Failed,
                at,
                Some(at),
            ))
            .unwrap();
    }
    let old = now - 40 * DAY;
    history
        .put(&record("old", None, ScanStatus::Complete, old, Some(old)))
        .unwrap();
    history
        .put(&record("live", Some("a"), ScanStatus::Running, old, None))
        .unwrap();
    let retention = Retention {
        reports_per_target: NonZeroUsize::new(2).unwrap(),
        max_age: Duration::from_secs(30 * 86_400),
    };
    assert_eq!(history.apply_retention(retention, now).unwrap(), 5);
    let mut ids: Vec<_> = history
        .records()
        .unwrap()
        .into_iter()
        .map(|r| r.scan_id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["a0", "a1", "b0", "b1", "live"]);
}
