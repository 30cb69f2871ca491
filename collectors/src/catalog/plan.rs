//! Which datasets a catalog-driven scan loads, and where: a pure decision over the
//! catalog's findings, table-tested.

use std::collections::BTreeSet;

use super::search::CatalogFindings;
use crate::dataset::Dataset;

/// What a catalog-driven scan does with one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetPlan {
    /// Load it in these regions.
    Load {
        regions: Vec<String>,
        why: &'static str,
    },
    /// Do not load it: the catalog covers every scanned region and holds none.
    Skip,
}

/// The plan of `dataset` for a scan of `regions` given `findings`:
/// - a type the catalog does not index: every region (swept as usual);
/// - else the regions where the catalog found it, plus every region no search covered;
/// - a global type: every region when found anywhere or when a region is uncovered;
/// - nothing left: skipped.
pub fn plan(dataset: Dataset, regions: &[String], findings: &CatalogFindings) -> DatasetPlan {
    let ty = dataset.resource_type();
    if !findings.indexed.contains(ty) {
        return DatasetPlan::Load {
            regions: regions.to_vec(),
            why: "not indexed by the catalog: swept",
        };
    }
    let found: BTreeSet<&str> = findings
        .found
        .get(ty)
        .map(|rs| rs.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let uncovered = regions.iter().any(|r| !findings.covered.contains(r));
    if dataset.is_global() {
        return match !found.is_empty() || uncovered {
            true => DatasetPlan::Load {
                regions: regions.to_vec(),
                why: "global: found by the catalog or not covered",
            },
            false => DatasetPlan::Skip,
        };
    }
    let load: Vec<String> = regions
        .iter()
        .filter(|r| found.contains(r.as_str()) || !findings.covered.contains(*r))
        .cloned()
        .collect();
    match load.is_empty() {
        true => DatasetPlan::Skip,
        false => DatasetPlan::Load {
            regions: load,
            why: "found by the catalog, or in a region it does not cover",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings() -> CatalogFindings {
        let s3 = "AWS::S3::Bucket".to_string();
        CatalogFindings {
            indexed: [s3.as_str(), "AWS::Lambda::Function", "AWS::DynamoDB::Table"]
                .map(String::from)
                .into(),
            covered: ["us-east-1", "eu-west-1"].map(String::from).into(),
            found: [(s3, ["eu-west-1".to_string()].into())].into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn datasets_load_where_the_catalog_found_them_or_cannot_see_and_skip_otherwise() {
        let regions = ["eu-west-1", "us-east-1"].map(String::from).to_vec();
        let all = ["ap-south-1", "eu-west-1", "us-east-1"]
            .map(String::from)
            .to_vec();
        let load = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases = [
            (Dataset::S3Buckets, &regions, Some(load(&["eu-west-1"]))),
            (Dataset::LambdaFunctions, &regions, None),
            // ap-south-1 is not covered: swept there.
            (Dataset::LambdaFunctions, &all, Some(load(&["ap-south-1"]))),
            (
                Dataset::S3Buckets,
                &all,
                Some(load(&["ap-south-1", "eu-west-1"])),
            ),
            // KMS keys are not indexed in this catalog: every region.
            (Dataset::KmsKeys, &regions, Some(regions.clone())),
        ];
        for (dataset, scanned, expected) in cases {
            let got = match plan(dataset, scanned, &findings()) {
                DatasetPlan::Load { regions, .. } => Some(regions),
                DatasetPlan::Skip => None,
            };
            assert_eq!(got, expected, "{dataset:?} over {scanned:?}");
        }
    }
}
