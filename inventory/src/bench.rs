//! Synthetic reports for benchmarks and tests: a one-account report of `n` resources in
//! the shape of docs/report.md, every type listed completely, so that a bench measures
//! the store and not a scan.

use serde_json::{json, Value};

/// The types a synthetic report spreads its items over, with their datasets: ten, so
/// that 100,000 items are 10,000 of each type (the bench's query returns one type of
/// one account, at most one page).
pub const TYPES: [(&str, &str); 10] = [
    ("AWS::S3::Bucket", "s3-buckets"),
    ("AWS::Lambda::Function", "lambda-functions"),
    ("AWS::DynamoDB::Table", "dynamodb-tables"),
    ("AWS::KMS::Key", "kms-keys"),
    ("AWS::IAM::Role", "AWS::IAM::Role"),
    ("AWS::EC2::Volume", "AWS::EC2::Volume"),
    ("AWS::EC2::Instance", "AWS::EC2::Instance"),
    ("AWS::SQS::Queue", "AWS::SQS::Queue"),
    ("AWS::SNS::Topic", "AWS::SNS::Topic"),
    ("AWS::Logs::LogGroup", "AWS::Logs::LogGroup"),
];

/// The region of every synthetic item.
pub const REGION: &str = "eu-west-1";

/// A one-account report of `n` items (`n / 10` per type, the rest on the first types),
/// started at `started_at`. Item `i` has the id `r{i}` and tags `{"env": env, "n": i}`.
pub fn synthetic_report(account: &str, n: usize, started_at: &str, env: &str) -> Value {
    let mut datasets = serde_json::Map::new();
    for (index, (resource_type, dataset)) in TYPES.iter().enumerate() {
        let items: Vec<Value> = (index..n)
            .step_by(TYPES.len())
            .map(|i| {
                let id = format!("r{i}");
                json!({
                    "resource_type": resource_type,
                    "id": id,
                    "arn": format!("arn:aws:synthetic:{REGION}:{account}:{id}"),
                    "account": account,
                    "region": REGION,
                    "tags": {"env": env, "n": i.to_string()},
                    "properties": {"Name": id, "Encrypted": i % 2 == 0, "Size": i % 1000},
                })
            })
            .collect();
        let count = items.len();
        datasets.insert(
            dataset.to_string(),
            json!({
                "status": "complete",
                "reasons": [],
                "items": items,
                "coverage": [{"resource_type": resource_type, "account": account, "region": REGION,
                              "status": "complete", "count": count}],
            }),
        );
    }
    json!({
        "scan_id": format!("synthetic-{account}"),
        "partition": "aws",
        "account": account,
        "regions": [REGION],
        "started_at": started_at,
        "finished_at": started_at,
        "datasets": datasets,
        "throttling": null,
    })
}

/// The number of items of `resource_type` in `synthetic_report(_, n, ..)`.
pub fn synthetic_count(resource_type: &str, n: usize) -> usize {
    // Item i goes to type i % TYPES.len().
    match TYPES.iter().position(|(name, _)| *name == resource_type) {
        Some(index) => (index..n).step_by(TYPES.len()).count(),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synthetic_report_spreads_its_items_evenly_and_decodes() {
        let report = synthetic_report("111111111111", 1_000, "2026-12-01T00:00:00Z", "prod");
        let decoded = crate::Report::from_value(&report).unwrap();
        assert_eq!(decoded.accounts[0].items.len(), 1_000);
        assert_eq!(synthetic_count("AWS::S3::Bucket", 1_000), 100);
        assert_eq!(synthetic_count("AWS::S3::Bucket", 1_005), 101);
        assert_eq!(decoded.accounts[0].coverage.len(), TYPES.len());
    }
}
