//! Catalog collection for `discover --catalog`: which types and regions hold resources,
//! read from Resource Explorer instead of listing every dataset in every region.
//!
//! `ListIndexes` (every page) finds the account's indexes; with an aggregator, its
//! region's default view is searched once (it sees every indexed region); without one,
//! each scanned region's own default view. `Search` (empty query, pages of 1,000) runs on
//! its own key, `resource-explorer-2:Search` (seed 000 gives it no figure: the fallback
//! policy, marked unverified); the other calls on the regional `non-search` budget.
//! `ListSupportedResourceTypes` says which types the catalog indexes at all.
//!
//! A region is *covered* when a searched view sees it (its index is the aggregator's
//! source or the searched region itself) and the search succeeded. Resources another
//! account owns (an organization view's) are left out: the caller's identity, not a
//! catalog resource's account, decides whose inventory this is (seed 000).
//!
//! What is not modelled: AWS's `Search` returns at most 1,000 resources per query; a
//! view larger than that reports `Count.Complete = false`, and the region is then
//! treated as not covered (swept as usual), never as empty.

use std::collections::{BTreeMap, BTreeSet};

use tollgate_engine::aws::{AwsGate, CallContext, CallError};

use super::{client, through, SERVICE};
use crate::tagging::arn_type::arn_type;

/// `Search`'s page (AWS's maximum).
pub const SEARCH_PAGE: i32 = 1_000;

/// What the catalog says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogFindings {
    /// The CloudFormation types the catalog indexes (from `ListSupportedResourceTypes`).
    pub indexed: BTreeSet<String>,
    /// Regions whose resources a successful search saw in full.
    pub covered: BTreeSet<String>,
    /// CloudFormation type → the regions holding resources of it (`global` included).
    pub found: BTreeMap<String, BTreeSet<String>>,
    /// Why some or all regions are not covered (said once by the caller).
    pub notes: Vec<String>,
}

/// Read the catalog for `regions` of `account` (see the module docs).
pub async fn collect(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    regions: &[String],
    account: Option<&str>,
) -> Result<CatalogFindings, CallError> {
    let mut out = CatalogFindings::default();
    let Some(home) = regions.first() else {
        return Ok(out);
    };
    let indexes = list_indexes(gate, sdk, ctx, home).await?;
    if indexes.is_empty() {
        out.notes.push(
            "Resource Explorer has no index in this account (tollgate catalog init turns it on): every region is swept".into(),
        );
        return Ok(out);
    }
    out.indexed = supported_types(gate, sdk, ctx, home).await?;
    let aggregator = indexes
        .iter()
        .find(|(_, t)| t == "AGGREGATOR")
        .map(|(r, _)| r.clone());
    let views: Vec<(String, Vec<String>)> = match &aggregator {
        Some(agg) => {
            let seen = indexes.iter().map(|(r, _)| r.clone()).collect();
            vec![(agg.clone(), seen)]
        }
        None => indexes
            .iter()
            .filter(|(r, _)| regions.contains(r))
            .map(|(r, _)| (r.clone(), vec![r.clone()]))
            .collect(),
    };
    for (region, sees) in views {
        match search(gate, sdk, ctx, &region, account).await {
            Ok(Some(found)) => {
                out.covered.extend(sees.into_iter().filter(|r| regions.contains(r)));
                for (ty, rs) in found {
                    out.found.entry(ty).or_default().extend(rs);
                }
            }
            Ok(None) => out.notes.push(format!(
                "the default view of {region} answered an incomplete search (over 1,000 resources): its regions are swept"
            )),
            Err(e) if e.code() == Some("UnauthorizedException") || e.code() == Some("ResourceNotFoundException") => {
                out.notes.push(format!("{region} has no usable default view ({}): its regions are swept", e.message()));
            }
            Err(e) => return Err(e),
        }
    }
    let uncovered: Vec<&str> = regions
        .iter()
        .filter(|r| !out.covered.contains(*r))
        .map(String::as_str)
        .collect();
    if !uncovered.is_empty() && out.notes.is_empty() {
        out.notes
            .push(format!("no index covers {}: swept", uncovered.join(", ")));
    }
    Ok(out)
}

/// Every index of the account: (region, type).
async fn list_indexes(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
) -> Result<Vec<(String, String)>, CallError> {
    let client = client(sdk, region);
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = gate
            .call(ctx, SERVICE, "ListIndexes", Some(region), |http| {
                client
                    .list_indexes()
                    .set_next_token(token.clone())
                    .customize()
                    .config_override(through(http))
                    .send()
            })
            .await?;
        out.extend(page.indexes().iter().filter_map(|i| {
            Some((
                i.region()?.to_owned(),
                i.r#type().map_or("", |t| t.as_str()).to_owned(),
            ))
        }));
        match page.next_token() {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_owned())
            }
            _ => return Ok(out),
        }
    }
}

/// The CloudFormation type of a Resource Explorer type name (`ec2:security-group` →
/// `AWS::EC2::SecurityGroup`), read as the tagging sweep reads an ARN of that type.
pub fn cloudformation_type(resource_type: &str) -> Option<String> {
    let (service, kind) = resource_type.split_once(':')?;
    let arn = format!("arn:aws:{service}:us-east-1:000000000000:{kind}/catalog");
    arn_type(&arn, "us-east-1").map(|t| t.resource_type)
}

async fn supported_types(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
) -> Result<BTreeSet<String>, CallError> {
    let client = client(sdk, region);
    let mut out = BTreeSet::new();
    let mut token: Option<String> = None;
    loop {
        let page = gate
            .call(
                ctx,
                SERVICE,
                "ListSupportedResourceTypes",
                Some(region),
                |http| {
                    client
                        .list_supported_resource_types()
                        .set_next_token(token.clone())
                        .customize()
                        .config_override(through(http))
                        .send()
                },
            )
            .await?;
        out.extend(
            page.resource_types()
                .iter()
                .filter_map(|t| t.resource_type())
                .filter_map(cloudformation_type),
        );
        match page.next_token() {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_owned())
            }
            _ => return Ok(out),
        }
    }
}

/// Every resource `region`'s default view holds, by type and region; `None` when the
/// answer says it is incomplete.
async fn search(
    gate: &AwsGate,
    sdk: &aws_config::SdkConfig,
    ctx: &CallContext,
    region: &str,
    account: Option<&str>,
) -> Result<Option<BTreeMap<String, BTreeSet<String>>>, CallError> {
    let client = client(sdk, region);
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut token: Option<String> = None;
    loop {
        let page = gate
            .call(ctx, SERVICE, "Search", Some(region), |http| {
                client
                    .search()
                    .query_string("")
                    .max_results(SEARCH_PAGE)
                    .set_next_token(token.clone())
                    .customize()
                    .config_override(through(http))
                    .send()
            })
            .await?;
        if page.count().and_then(|c| c.complete()) == Some(false) {
            return Ok(None);
        }
        for resource in page.resources() {
            let owner = resource.owning_account_id();
            if account.is_some() && owner.is_some() && owner != account {
                continue;
            }
            let Some(arn) = resource.arn() else { continue };
            let seen_in = resource.region().unwrap_or(region);
            if let Some(t) = arn_type(arn, seen_in) {
                found.entry(t.resource_type).or_default().insert(t.region);
            }
        }
        match page.next_token() {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_owned())
            }
            _ => return Ok(Some(found)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_explorer_type_names_map_to_cloudformation_types() {
        let cases = [
            ("s3:bucket", "AWS::S3::Bucket"),
            ("lambda:function", "AWS::Lambda::Function"),
            ("dynamodb:table", "AWS::DynamoDB::Table"),
            ("kms:key", "AWS::KMS::Key"),
            ("ec2:instance", "AWS::EC2::Instance"),
            ("ec2:security-group", "AWS::EC2::SecurityGroup"),
            ("ec2:elastic-ip", "AWS::EC2::EIP"),
        ];
        for (name, cfn) in cases {
            assert_eq!(cloudformation_type(name).as_deref(), Some(cfn), "{name}");
        }
        assert_eq!(cloudformation_type("no-colon"), None);
    }
}
