//! What one process of `bench fleet` did, read from what it left behind: a tollgate
//! process's report and telemetry, a plain-SDK worker's one-line summary, and whether it
//! crashed or left nothing (which fails the bench rather than counting as zeros).

use std::path::Path;

use serde::Serialize;

use crate::fleet::sdk::FleetWorkerReport;

/// One process's view of its run.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ProcessResult {
    pub logical_requests: u64,
    pub attempts: u64,
    pub retries: u64,
    pub gave_up_calls: u64,
    /// Items fully read, over the four datasets (a partial dataset's items less its lost
    /// per-item reads).
    pub items_complete: u64,
    /// Every dataset complete, with every item of the scenario.
    pub complete: bool,
    pub exit_code: Option<i32>,
    pub elapsed_s: f64,
    /// Why this process's figures are missing (crashed, no report); None when it ran.
    pub failure: Option<String>,
}

/// What ran in a process of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    /// `tollgate discover`: a non-zero exit with a report is a result (a partial discovery).
    Tollgate,
    /// A plain AWS SDK worker: any non-zero exit is a failure.
    PlainSdk,
}

/// Why a process of a run failed, if it did: ended by a signal (or not waited for), a
/// plain-SDK worker exiting non-zero, or no report. tollgate's non-zero exits with a
/// report are results (a partial discovery), not failures.
pub fn failure(
    status: Option<std::process::ExitStatus>,
    reported: bool,
    worker: Worker,
) -> Option<String> {
    match status.map(|s| (s, s.code())) {
        None => Some("could not be waited for".to_owned()),
        Some((s, None)) => Some(format!("crashed: {s}")),
        Some((s, Some(code))) if worker == Worker::PlainSdk && code != 0 => {
            Some(format!("exited with {s}"))
        }
        _ if !reported => Some("wrote no report".to_owned()),
        _ => None,
    }
}

/// A tollgate process: its report says how complete each dataset is, its telemetry how
/// many calls and attempts it made.
pub fn tollgate_process(
    dir: &Path,
    i: usize,
    items_expected: u64,
) -> anyhow::Result<(ProcessResult, bool)> {
    let mut p = ProcessResult::default();
    let telemetry = dir.join(format!("telemetry-{i}.jsonl"));
    let text = std::fs::read_to_string(&telemetry).unwrap_or_default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let field = |name: &str| event.get(name).and_then(|v| v.as_str()).unwrap_or("");
        let attempt = event.get("attempt").and_then(|v| v.as_u64()).unwrap_or(1);
        let dispatched = event.get("dispatched").and_then(|v| v.as_bool()) == Some(true);
        if dispatched {
            p.attempts += 1;
            if attempt > 1 {
                p.retries += 1;
            }
        }
        let retry_outcome = field("retryOutcome");
        let last = !matches!(retry_outcome, "retry" | "reprepare");
        if last {
            p.logical_requests += 1;
            let data_answer = field("errorCode") == "NoSuchLifecycleConfiguration";
            if retry_outcome != "done" && !data_answer {
                p.gave_up_calls += 1;
            }
        }
    }
    let report_path = dir.join(format!("report-{i}.json"));
    let Ok(text) = std::fs::read_to_string(&report_path) else {
        return Ok((p, false));
    };
    {
        let Ok(report) = serde_json::from_str::<serde_json::Value>(&text) else {
            return Ok((p, false));
        };
        let mut all_complete = true;
        if let Some(datasets) = report.get("datasets").and_then(|d| d.as_object()) {
            for dataset in datasets.values() {
                let complete = dataset.get("status").and_then(|s| s.as_str()) == Some("complete");
                all_complete &= complete;
                p.items_complete += items_read(dataset);
            }
        } else {
            all_complete = false;
        }
        p.complete = all_complete && p.items_complete == items_expected;
    }
    Ok((p, true))
}

/// Items of one dataset of a tollgate report read in full: the items listed, less one
/// per per-item read that was lost (a reason with a `field`, other than `unavailable`,
/// which is the account's answer, not a loss). A partial dataset's items count too, so
/// that a scan that lost 3 keys of 106 has lost 3 items, not 106; an item that lost two
/// reads is counted lost twice, so the figure errs towards loss.
fn items_read(dataset: &serde_json::Value) -> u64 {
    let listed = dataset
        .get("items")
        .and_then(|i| i.as_array())
        .map_or(0, |i| i.len() as u64);
    let lost: u64 = dataset
        .get("reasons")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
        .filter(|r| {
            r.get("field").is_some_and(|f| !f.is_null())
                && r.get("kind").and_then(|k| k.as_str()) != Some("unavailable")
        })
        .filter_map(|r| r.get("count").and_then(|c| c.as_u64()))
        .sum();
    listed.saturating_sub(lost)
}

/// A plain-SDK process: its one-line JSON summary.
pub fn sdk_process(
    dir: &Path,
    i: usize,
    items_expected: u64,
) -> anyhow::Result<(ProcessResult, bool)> {
    let path = dir.join(format!("stdout-{i}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some(report) = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<FleetWorkerReport>(l).ok())
    else {
        return Ok((ProcessResult::default(), false));
    };
    let logical: u64 = report.operations.values().map(|o| o.calls).sum();
    let items = report.buckets_complete
        + report.functions_complete
        + report.tables_complete
        + report.keys_complete;
    let p = ProcessResult {
        logical_requests: logical,
        attempts: report.attempts,
        retries: report.attempts.saturating_sub(logical),
        gave_up_calls: report.operations.values().map(|o| o.gave_up).sum(),
        items_complete: items,
        complete: items == items_expected && report.listings_failed == 0,
        exit_code: None,
        elapsed_s: report.elapsed_s,
        failure: None,
    };
    Ok((p, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_partial_dataset_loses_its_lost_reads_not_all_its_items() {
        let dataset = serde_json::json!({
            "status": "partial",
            "items": [{"key_id": "a"}, {"key_id": "b"}, {"key_id": "c"}, {"key_id": "d"}],
            "reasons": [
                {"operation": "kms:GetKeyLastUsage", "field": "last_used_at",
                 "kind": "breaker_open", "message": "m", "count": 2},
                {"operation": "kms:DescribeKey", "field": "key_state",
                 "kind": "unavailable", "message": "m", "count": 4},
                {"operation": "kms:ListKeys", "kind": "transient", "message": "m", "count": 1}
            ]
        });
        assert_eq!(items_read(&dataset), 2);
        let complete = serde_json::json!({"status": "complete", "items": [{}, {}], "reasons": []});
        assert_eq!(items_read(&complete), 2);
        let worse = serde_json::json!({"items": [{}], "reasons": [
            {"field": "x", "kind": "throttled", "count": 5}]});
        assert_eq!(items_read(&worse), 0);
    }

    #[test]
    fn crashes_and_missing_reports_are_failures_and_partial_discoveries_are_not() {
        let exit = |code: i32| Some(std::process::ExitStatus::from_raw(code << 8));
        let killed = Some(std::process::ExitStatus::from_raw(9));
        assert_eq!(failure(exit(0), true, Worker::PlainSdk), None);
        // tollgate's partial discovery (non-zero, with a report) is a result
        assert_eq!(failure(exit(3), true, Worker::Tollgate), None);
        assert!(failure(exit(3), true, Worker::PlainSdk)
            .unwrap()
            .contains("exited with"));
        assert!(failure(killed, true, Worker::Tollgate)
            .unwrap()
            .starts_with("crashed"));
        assert_eq!(
            failure(exit(0), false, Worker::Tollgate).as_deref(),
            Some("wrote no report")
        );
        assert!(failure(None, true, Worker::PlainSdk).is_some());
    }
}
