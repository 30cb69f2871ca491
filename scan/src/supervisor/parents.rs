//! The order of a scan's datasets: a Cloud Control type whose listing needs a parent
//! (`AWS::EKS::Nodegroup` needs its cluster's name) starts only once its parent type's
//! dataset finished in the same scan, that is in the scan's account and every region,
//! so its listing has every parent item to list under. Every other dataset starts at
//! once, as before; the supervisor runs them as parallel actors.
//!
//! One pure step, [`ready`], asked when the scan's collectors start and again whenever a
//! dataset finishes: which waiting datasets can start now, each with what it lists under
//! ([`ParentListing`]). A child whose parent type is not in the scan starts at once with
//! [`ParentListing::Absent`] (its collector writes `skipped` coverage naming the type to
//! add; no call is made), never a failed scan. A child of a child waits for its parent,
//! which waits for its own. Waiting datasets the deadline or a cancellation overtakes are
//! reported as any unfinished dataset.

use std::collections::{BTreeMap, BTreeSet};

use tollgate_collectors::cloudcontrol::ParentListing;
use tollgate_collectors::dataset::Dataset;
use tollgate_collectors::output::DatasetReport;

/// The datasets of `waiting` that can start now, removed from it, each with the parent
/// items it lists under (`None`: not a child type). `in_scan` is every dataset of the
/// scan; `finished` the reports in so far.
pub fn ready(
    waiting: &mut BTreeSet<Dataset>,
    in_scan: &BTreeSet<Dataset>,
    finished: &BTreeMap<Dataset, DatasetReport>,
) -> Vec<(Dataset, Option<ParentListing>)> {
    let mut start = Vec::new();
    waiting.retain(|dataset| match step(*dataset, in_scan, finished) {
        Step::Wait => true,
        Step::Start(parents) => {
            start.push((*dataset, parents));
            false
        }
    });
    start
}

/// What one dataset does now.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Its parent type's dataset has not finished.
    Wait,
    /// Start its collector, with its parent items if it is a child type.
    Start(Option<ParentListing>),
}

fn step(
    dataset: Dataset,
    in_scan: &BTreeSet<Dataset>,
    finished: &BTreeMap<Dataset, DatasetReport>,
) -> Step {
    let Dataset::CloudControl(id) = dataset else {
        return Step::Start(None);
    };
    let ty = id.info();
    if ty.parent.is_empty() {
        return Step::Start(None);
    }
    let named = ty
        .parent_type
        .as_ref()
        .map_or_else(|| ty.parent.join(", "), |p| p.type_name.clone());
    match dataset.parent() {
        Some(parent) if in_scan.contains(&parent) => match finished.get(&parent) {
            Some(report) => Step::Start(Some(ParentListing::of(ty, report))),
            None => Step::Wait,
        },
        _ => Step::Start(Some(ParentListing::absent(&named))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_collectors::output::DatasetStatus;

    fn d(name: &str) -> Dataset {
        name.parse().unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn report() -> DatasetReport {
        DatasetReport {
            status: DatasetStatus::Complete,
            reasons: Vec::new(),
            items: Vec::new(),
            coverage: Vec::new(),
        }
    }

    /// `(dataset, in the scan, finished)` → what `step` answers, by kind.
    #[test]
    fn each_dataset_waits_only_for_its_parent_type_in_the_same_scan() {
        let scan = [
            "kms-keys",
            "lambda-functions",
            "AWS::IAM::Role",
            "AWS::Lambda::Alias",
            "AWS::EKS::Nodegroup",
            "AWS::AppConfig::Application",
            "AWS::AppConfig::Environment",
            "AWS::AppConfig::Deployment",
        ];
        let in_scan: BTreeSet<Dataset> = scan.iter().map(|n| d(n)).collect();
        #[rustfmt::skip]
        let cases: &[(&str, &[&str], &str)] = &[
            // dataset                     finished so far                        step
            ("kms-keys",                   &[],                                   "start"),
            ("AWS::IAM::Role",             &[],                                   "start"),
            ("AWS::Lambda::Alias",         &[],                                   "wait"),
            ("AWS::Lambda::Alias",         &["lambda-functions"],                 "listed"),
            ("AWS::EKS::Nodegroup",        &[],                                   "absent"),
            ("AWS::AppConfig::Environment", &[],                                  "wait"),
            ("AWS::AppConfig::Environment", &["AWS::AppConfig::Application"],     "listed"),
            ("AWS::AppConfig::Deployment", &["AWS::AppConfig::Application"],      "wait"),
            ("AWS::AppConfig::Deployment", &["AWS::AppConfig::Environment"],      "listed"),
        ];
        for (dataset, done, want) in cases {
            let finished: BTreeMap<Dataset, DatasetReport> =
                done.iter().map(|n| (d(n), report())).collect();
            let got = match step(d(dataset), &in_scan, &finished) {
                Step::Wait => "wait",
                Step::Start(None) => "start",
                Step::Start(Some(ParentListing::Absent { .. })) => "absent",
                Step::Start(Some(ParentListing::Listed { .. })) => "listed",
            };
            assert_eq!(got, *want, "{dataset} after {done:?}");
        }
        let Step::Start(Some(ParentListing::Absent { parent_type })) =
            step(d("AWS::EKS::Nodegroup"), &in_scan, &BTreeMap::new())
        else {
            panic!("an absent parent starts the child with nothing to list under")
        };
        assert_eq!(parent_type, "AWS::EKS::Cluster");
    }

    #[test]
    fn ready_starts_what_it_can_and_keeps_the_rest_waiting() {
        let names = [
            "lambda-functions",
            "AWS::Lambda::Alias",
            "AWS::Lambda::Version",
        ];
        let in_scan: BTreeSet<Dataset> = names.iter().map(|n| d(n)).collect();
        let mut waiting = in_scan.clone();
        let first = ready(&mut waiting, &in_scan, &BTreeMap::new());
        assert_eq!(
            first.iter().map(|(d, _)| d.name()).collect::<Vec<_>>(),
            ["lambda-functions"]
        );
        assert_eq!(waiting.len(), 2);
        assert!(ready(&mut waiting, &in_scan, &BTreeMap::new()).is_empty());
        let finished = BTreeMap::from([(d("lambda-functions"), report())]);
        let then = ready(&mut waiting, &in_scan, &finished);
        assert_eq!(then.len(), 2);
        assert!(waiting.is_empty());
    }
}
