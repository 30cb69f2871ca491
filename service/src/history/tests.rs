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
    let history = History::open(&path).unwrap();
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
