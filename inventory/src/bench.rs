//! Synthetic reports for benchmarks and tests: a one-account report of `n` resources in
//! the shape of docs/report.md, every type listed completely, so that a bench measures
//! the store and not a scan.

use serde_json::{json, Value};

/// The types a synthetic report spreads its items over, with their datasets.
const TYPES: [(&str, &str); 4] = [
    ("AWS::S3::Bucket", "s3-buckets"),
    ("AWS::Lambda::Function", "lambda-functions"),
    ("AWS::DynamoDB::Table", "dynamodb-tables"),
    ("AWS::KMS::Key", "kms-keys"),
];

/// The region of every synthetic item.
pub const REGION: &str = "eu-west-1";

/// A one-account report of `n` items (`n / 4` per type, the rest on the first types),
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
    match TYPES.iter().position(|(name, _)| *name == resource_type) {
        Some(index) => (index..n).step_by(TYPES.len()).count(),
        None => 0,
    }
}
