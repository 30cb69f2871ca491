//! [`apply`]'s rules, table by table: tags by ARN, tags-only only for what no collector
//! listed, and a failed region a coverage entry rather than a failed scan.

use super::*;
use crate::output::{DatasetStatus, KmsKey, S3Bucket};

const ACCOUNT: &str = "123456789012";

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn covered(resource_type: &str, region: &str, status: CoverageStatus) -> Coverage {
    Coverage {
        resource_type: resource_type.into(),
        account: Some(ACCOUNT.into()),
        region: region.into(),
        status,
        reason: None,
        count: 1,
    }
}

/// One bucket and one key, listed completely in us-east-1; KMS failed in eu-west-1.
fn reports() -> BTreeMap<Dataset, DatasetReport> {
    let bucket = Item::S3Bucket(S3Bucket {
        resource: Resource::new("AWS::S3::Bucket", "b".into())
            .arn(Some("arn:aws:s3:::b".into()))
            .region(Some("us-east-1".into())),
        name: "b".into(),
        lifecycle_rule_count: Some(0),
        intelligent_tiering_configuration_count: None,
        activity: None,
    });
    let key = Item::KmsKey(KmsKey {
        resource: Resource::new("AWS::KMS::Key", "k".into())
            .arn(Some(format!("arn:aws:kms:us-east-1:{ACCOUNT}:key/k")))
            .region(Some("us-east-1".into())),
        key_id: "k".into(),
        key_manager: None,
        key_state: None,
        last_used_at: None,
    });
    let report = |item: Item, coverage: Vec<Coverage>| DatasetReport {
        status: DatasetStatus::Complete,
        reasons: Vec::new(),
        items: vec![item],
        coverage,
    };
    BTreeMap::from([
        (
            Dataset::S3Buckets,
            report(
                bucket,
                vec![covered(
                    "AWS::S3::Bucket",
                    "us-east-1",
                    CoverageStatus::Complete,
                )],
            ),
        ),
        (
            Dataset::KmsKeys,
            report(
                key,
                vec![
                    covered("AWS::KMS::Key", "us-east-1", CoverageStatus::Complete),
                    covered("AWS::KMS::Key", "eu-west-1", CoverageStatus::Failed),
                ],
            ),
        ),
    ])
}

fn region(name: &str, found: &[(&str, BTreeMap<String, String>)]) -> RegionSweep {
    RegionSweep {
        region: name.into(),
        found: found
            .iter()
            .map(|(arn, t)| (arn.to_string(), t.clone()))
            .collect(),
        failure: None,
    }
}

#[test]
fn tags_are_merged_by_arn_and_only_unlisted_types_become_tags_only() {
    let mut reports = reports();
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT}:alerts");
    let listed_key = format!("arn:aws:kms:us-east-1:{ACCOUNT}:key/k");
    // A key of a region whose KMS listing succeeded but did not return it (created
    // since): KMS was listed there, so it is not reported again.
    let late_key = format!("arn:aws:kms:us-east-1:{ACCOUNT}:key/late");
    // A key of a region whose KMS listing failed: only the sweep saw it.
    let lost_key = format!("arn:aws:kms:eu-west-1:{ACCOUNT}:key/lost");
    let sweeps = vec![
        region(
            "eu-west-1",
            &[
                (lost_key.as_str(), tags(&[("team", "data")])),
                // S3 answers every region's sweep with the same bucket (moto does).
                ("arn:aws:s3:::b", tags(&[("env", "prod")])),
            ],
        ),
        region(
            "us-east-1",
            &[
                ("arn:aws:s3:::b", tags(&[("env", "prod")])),
                (listed_key.as_str(), tags(&[])),
                (late_key.as_str(), tags(&[("x", "y")])),
                (topic.as_str(), tags(&[("owner", "ops"), ("env", "dev")])),
            ],
        ),
    ];
    let only = apply(sweeps, &mut reports, Some(ACCOUNT), None);

    let bucket = reports[&Dataset::S3Buckets].items[0].resource();
    assert_eq!(bucket.tags, tags(&[("env", "prod")]));
    assert!(reports[&Dataset::KmsKeys].items[0]
        .resource()
        .tags
        .is_empty());
    assert_eq!(reports[&Dataset::KmsKeys].status, DatasetStatus::Complete);

    let got: Vec<(&str, &str, &str, Option<&str>)> = only
        .items
        .iter()
        .map(|i| {
            let r = i.resource();
            (
                r.resource_type.as_str(),
                r.id.as_str(),
                r.region.as_deref().unwrap(),
                r.coverage.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("AWS::KMS::Key", "lost", "eu-west-1", Some(TAGS_ONLY)),
            (
                "AWS::SNS::Topic",
                topic.as_str(),
                "us-east-1",
                Some(TAGS_ONLY)
            ),
        ]
    );
    assert_eq!(
        only.items[1].resource().tags,
        tags(&[("owner", "ops"), ("env", "dev")])
    );
    assert_eq!(only.items[1].resource().account.as_deref(), Some(ACCOUNT));
    assert_eq!(only.status, DatasetStatus::Complete);
    let coverage: Vec<(&str, &str, CoverageStatus, u64)> = only
        .coverage
        .iter()
        .map(|c| {
            (
                c.resource_type.as_str(),
                c.region.as_str(),
                c.status,
                c.count,
            )
        })
        .collect();
    assert_eq!(
        coverage,
        [
            (SWEEP_TYPE, "eu-west-1", CoverageStatus::Complete, 2),
            (SWEEP_TYPE, "us-east-1", CoverageStatus::Complete, 4),
            ("AWS::KMS::Key", "eu-west-1", CoverageStatus::TagsOnly, 1),
            ("AWS::SNS::Topic", "us-east-1", CoverageStatus::TagsOnly, 1),
        ]
    );
}

#[test]
fn a_failed_or_unsupported_region_is_a_coverage_entry_and_no_dataset_changes() {
    let cases = [
        (
            CallError::in_answer(
                CallErrorKind::Fatal,
                "GetResources",
                Some("AccessDeniedException".into()),
                "no",
            ),
            CoverageStatus::Denied,
            DatasetStatus::Complete,
        ),
        (
            CallError::in_answer(
                CallErrorKind::Fatal,
                "GetResources",
                Some("UnknownOperationException".into()),
                "no",
            ),
            CoverageStatus::Unsupported,
            DatasetStatus::Complete,
        ),
        (
            CallError::in_answer(CallErrorKind::Fatal, "GetResources", None, "not found")
                .with_status(404),
            CoverageStatus::Unsupported,
            DatasetStatus::Complete,
        ),
        (
            CallError::in_answer(CallErrorKind::Throttled, "GetResources", None, "slow down"),
            CoverageStatus::Failed,
            DatasetStatus::Failed,
        ),
        (
            CallError::in_answer(CallErrorKind::Cancelled, "GetResources", None, "cancelled"),
            CoverageStatus::Cancelled,
            DatasetStatus::Cancelled,
        ),
    ];
    for (error, coverage, status) in cases {
        let mut reports = reports();
        let before = reports.clone();
        let sweeps = vec![RegionSweep {
            region: "us-east-1".into(),
            found: Vec::new(),
            failure: Some(error.clone()),
        }];
        let only = apply(sweeps, &mut reports, Some(ACCOUNT), None);
        assert_eq!(reports, before, "{error}");
        assert_eq!(only.status, status, "{error}");
        assert_eq!(only.coverage.len(), 1);
        assert_eq!(only.coverage[0].resource_type, SWEEP_TYPE);
        assert_eq!(only.coverage[0].status, coverage, "{error}");
        assert!(only.coverage[0]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("tag:GetResources"));
        assert_eq!(only.reasons[0].operation, "tag:GetResources");
    }
}

#[test]
fn a_type_selection_keeps_tags_only_items_of_the_selected_types_alone() {
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT}:alerts");
    let lost_key = format!("arn:aws:kms:eu-west-1:{ACCOUNT}:key/lost");
    let sweep = || {
        vec![
            region(
                "eu-west-1",
                &[(lost_key.as_str(), tags(&[("team", "data")]))],
            ),
            region(
                "us-east-1",
                &[
                    ("arn:aws:s3:::b", tags(&[("env", "prod")])),
                    (topic.as_str(), tags(&[("owner", "ops")])),
                ],
            ),
        ]
    };
    let types = |only: &DatasetReport| -> Vec<String> {
        only.items
            .iter()
            .map(|i| i.resource().resource_type.clone())
            .collect()
    };

    let mut got = reports();
    let selected = [Dataset::S3Buckets, Dataset::KmsKeys];
    let only = apply(sweep(), &mut got, Some(ACCOUNT), Some(&selected));
    // Tags still reach the selected types' items; the SNS topic is left out.
    assert_eq!(
        got[&Dataset::S3Buckets].items[0].resource().tags,
        tags(&[("env", "prod")])
    );
    assert_eq!(types(&only), ["AWS::KMS::Key"]);
    assert!(only
        .coverage
        .iter()
        .all(|c| c.resource_type != "AWS::SNS::Topic"));

    let mut got = reports();
    let only = apply(
        sweep(),
        &mut got,
        Some(ACCOUNT),
        Some(&[Dataset::S3Buckets]),
    );
    assert!(types(&only).is_empty(), "{:?}", types(&only));
    // The sweep's own entries stay: they say how each region's sweep went.
    assert_eq!(
        only.coverage
            .iter()
            .filter(|c| c.resource_type == SWEEP_TYPE)
            .count(),
        2
    );

    let mut got = reports();
    let only = apply(sweep(), &mut got, Some(ACCOUNT), None);
    assert_eq!(types(&only), ["AWS::KMS::Key", "AWS::SNS::Topic"]);
}

#[test]
fn an_ami_or_snapshot_arn_merges_with_or_without_its_account_and_nothing_else_does() {
    let cases: &[(&str, &str)] = &[
        (
            "arn:aws:ec2:us-east-1:123456789012:image/ami-1",
            "arn:aws:ec2:us-east-1::image/ami-1",
        ),
        (
            "arn:aws:ec2:us-east-1::snapshot/snap-1",
            "arn:aws:ec2:us-east-1::snapshot/snap-1",
        ),
        (
            "arn:aws-cn:ec2:cn-north-1:123456789012:snapshot/snap-1",
            "arn:aws-cn:ec2:cn-north-1::snapshot/snap-1",
        ),
        (
            "arn:aws:ec2:us-east-1:123456789012:volume/vol-1",
            "arn:aws:ec2:us-east-1:123456789012:volume/vol-1",
        ),
        (
            "arn:aws:rds:us-east-1:123456789012:snapshot:s",
            "arn:aws:rds:us-east-1:123456789012:snapshot:s",
        ),
        ("not-an-arn", "not-an-arn"),
    ];
    for (arn, key) in cases {
        assert_eq!(merge_key(arn), *key, "{arn}");
    }

    // The collector writes the owner's account; a sweep that wrote none still tags it,
    // and the image is not reported again as tags-only.
    let image = Item::Resource(
        Resource::new("AWS::EC2::Image", "ami-1".into())
            .arn(Some(format!("arn:aws:ec2:us-east-1:{ACCOUNT}:image/ami-1")))
            .region(Some("us-east-1".into())),
    );
    let mut reports = BTreeMap::from([(
        Dataset::Ec2(crate::dataset::Ec2Type::Image),
        DatasetReport {
            status: DatasetStatus::Complete,
            reasons: Vec::new(),
            items: vec![image],
            coverage: vec![covered(
                "AWS::EC2::Image",
                "us-east-1",
                CoverageStatus::Complete,
            )],
        },
    )]);
    let sweeps = vec![region(
        "us-east-1",
        &[(
            "arn:aws:ec2:us-east-1::image/ami-1",
            tags(&[("team", "build")]),
        )],
    )];
    let only = apply(sweeps, &mut reports, Some(ACCOUNT), None);
    let merged = reports.values().next().unwrap().items[0].resource();
    assert_eq!(merged.tags, tags(&[("team", "build")]));
    assert!(only.items.is_empty(), "{:?}", only.items);
}
