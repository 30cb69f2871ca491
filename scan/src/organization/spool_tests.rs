use std::collections::BTreeMap;

use serde_json::json;
use tollgate_collectors::output::{Coverage, CoverageStatus, DatasetReport, Item};
use tollgate_collectors::Resource;

use super::*;

/// An account's report with `n` tables in us-east-1 and one `unsupported` coverage entry.
fn report(account: &str, n: usize) -> DiscoveryReport {
    let items = (0..n)
        .map(|i| {
            Item::Resource(
                Resource::new("AWS::DynamoDB::Table", format!("t-{i}"))
                    .account(Some(account.into()))
                    .region(Some("us-east-1".into()))
                    .property("TableName", format!("t-{i}")),
            )
        })
        .collect();
    let coverage = vec![
        Coverage {
            resource_type: "AWS::DynamoDB::Table".into(),
            account: Some(account.into()),
            region: "us-east-1".into(),
            status: CoverageStatus::Complete,
            reason: None,
            count: n as u64,
        },
        Coverage {
            resource_type: "AWS::SNS::Topic".into(),
            account: Some(account.into()),
            region: "us-east-1".into(),
            status: CoverageStatus::Unsupported,
            reason: Some("not here".into()),
            count: 0,
        },
    ];
    DiscoveryReport {
        scan_id: format!("scan-{account}"),
        partition: "aws".into(),
        account: Some(account.into()),
        identity_note: None,
        regions: vec!["us-east-1".into()],
        regions_reason: None,
        regions_source: None,
        started_at: "2026-12-06T00:00:00Z".into(),
        finished_at: "2026-12-06T00:01:00Z".into(),
        datasets: BTreeMap::from([(
            "dynamodb-tables".to_string(),
            DatasetReport {
                status: DatasetStatus::Complete,
                reasons: Vec::new(),
                items,
                coverage,
            },
        )]),
        throttling: None,
        fleet_degraded: Vec::new(),
    }
}

#[test]
fn spooled_reports_read_back_equal_ordered_by_account_and_serialise_as_the_reports_did() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::in_dir(dir.path().to_path_buf());
    let (b, a) = (report("222222222222", 3), report("111111111111", 5));
    let spooled = vec![spool.write(b.clone()), spool.write(a.clone())];
    let accounts = AccountReports::from_spooled(spooled);

    assert_eq!(accounts.len(), 2);
    assert_eq!(accounts.held_in_memory(), 0);
    let read: Vec<DiscoveryReport> = accounts.iter().map(Result::unwrap).collect();
    assert_eq!(read, vec![a.clone(), b.clone()]);
    assert_eq!(
        serde_json::to_value(&accounts).unwrap(),
        serde_json::to_value(vec![&a, &b]).unwrap()
    );
    assert_eq!(accounts.get("222222222222").unwrap(), Some(b));
    assert_eq!(accounts.get("333333333333").unwrap(), None);
    assert_eq!(
        accounts,
        AccountReports::in_memory(vec![a, read[1].clone()])
    );
}

#[test]
fn a_digest_keeps_the_counts_status_and_coverage_without_the_items() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::in_dir(dir.path().to_path_buf());
    let spooled = spool.write(report("111111111111", 7));
    let digest = spooled.digest();
    assert_eq!(digest.account.as_deref(), Some("111111111111"));
    assert_eq!(digest.items, 7);
    assert_eq!(digest.reasons, 0);
    assert_eq!(digest.status, DatasetStatus::Complete);
    assert_eq!(digest.regions, vec!["us-east-1".to_string()]);
    assert_eq!(digest.coverage.counts_line(), "1 complete, 1 unsupported");
    assert_eq!(digest.coverage.gaps.len(), 1);
}

#[test]
fn a_report_that_cannot_be_spooled_is_kept_in_memory_and_lost_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-a-directory");
    let spool = Spool::in_dir(missing);
    let original = report("111111111111", 2);
    let accounts = AccountReports::from_spooled(vec![spool.write(original.clone())]);
    assert_eq!(accounts.held_in_memory(), 1);
    assert_eq!(
        accounts.get("111111111111").unwrap(),
        Some(original.clone())
    );
    assert_eq!(
        serde_json::to_value(&accounts).unwrap(),
        json!([serde_json::to_value(&original).unwrap()])
    );
}

#[test]
fn a_damaged_spool_file_is_an_error_naming_the_account_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::in_dir(dir.path().to_path_buf());
    let spooled = spool.write(report("111111111111", 2));
    damage(&spooled);
    let accounts = AccountReports::from_spooled(vec![spooled]);
    let e = accounts.iter().next().unwrap().unwrap_err();
    assert_eq!(e.account, "111111111111");
    assert!(e.to_string().contains("TMPDIR"), "{e}");
    let serialised = serde_json::to_string(&accounts).unwrap_err();
    assert!(
        serialised.to_string().contains("111111111111"),
        "{serialised}"
    );
}

#[test]
fn a_decoded_report_holds_its_accounts_in_memory_and_round_trips() {
    let a = report("111111111111", 1);
    let json = serde_json::to_value(vec![&a]).unwrap();
    let decoded: AccountReports = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(decoded.len(), 1);
    assert_eq!(serde_json::to_value(&decoded).unwrap(), json);
}
