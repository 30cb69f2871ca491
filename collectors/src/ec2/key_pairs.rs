//! `AWS::EC2::KeyPair`: key pairs, from one `DescribeKeyPairs` per region (the action
//! does not paginate: it answers every key pair at once).
//!
//! `id` is the key's name (CloudFormation's primary identifier); the ARN is
//! `key-pair/<KeyPairId>`. Properties (CloudFormation's names): `KeyName`, `KeyPairId`,
//! `KeyFingerprint`, `KeyType`.

use aws_sdk_ec2::types::KeyPairInfo;

use super::model::{self, text};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_KEY_PAIRS: Operation = operation!("ec2", "DescribeKeyPairs");

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_KEY_PAIRS, "")];

page!(
    aws_sdk_ec2::operation::describe_key_pairs::DescribeKeyPairsOutput,
    key_pairs
);

/// Every key pair of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |_token: Option<String>| client.describe_key_pairs().send();
    listing(
        run,
        DESCRIBE_KEY_PAIRS,
        region,
        send,
        |p| p.key_pairs(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, k: &KeyPairInfo) -> Option<Resource> {
    let name = k.key_name()?;
    let arn = k
        .key_pair_id()
        .map(|id| model::arn(run, region, None, &format!("key-pair/{id}")));
    let resource = model::resource(run, Ec2Type::KeyPair, region, name, None)
        .arn(arn)
        .tags(model::tags(k.tags()))
        .property("KeyName", name)
        .property("KeyPairId", k.key_pair_id())
        .property("KeyFingerprint", k.key_fingerprint())
        .property("KeyType", text(k.key_type()));
    Some(resource)
}
