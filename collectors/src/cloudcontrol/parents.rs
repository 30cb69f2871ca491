//! Types whose listing needs a parent (`AWS::EKS::Nodegroup` needs its cluster's name):
//! what a child lists under and the decisions about it. The listing itself, one
//! `ListResources` (all pages) per parent item, its `ResourceModel` the parent's
//! properties as the table maps them ([`CcType::resource_model`]), each page charged like
//! any other listing, is `children`'s.
//!
//! The parent's items come from the parent type's dataset of the same scan (native, as
//! `AWS::Lambda::Function`, or swept), once it finished: the scan supervisor starts a
//! child's collector only then and hands it a [`ParentListing`]. When the parent type is
//! not in the scan, the listing is [`ParentListing::Absent`] and every region is
//! `skipped`, its reason naming the type to add.
//!
//! A parent's failure is never read as "no children" ([`verdict`]): under a `partial`
//! or `failed` parent listing the child lists what parents were found and its coverage
//! there is at best the parent's, with the parent's reason (the dataset `partial` or
//! `failed` as well); under an `unsupported`, `denied` or `skipped` parent there is
//! nothing to list under, and the child is `skipped` with the reason. A parent item
//! that lacks a property the listing needs (its own listing returned identifiers only)
//! makes the region `partial`. A listing under a parent the handler finds gone (deleted
//! after it was listed) has no children: noted, not a gap.

use std::collections::BTreeMap;

use serde_json::Value;

use super::failure::Decided;
use super::schemas::{find, CcType};
use crate::output::{Coverage, CoverageStatus, DatasetReport, DatasetStatus, GLOBAL};

/// What a child type's listing starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum ParentListing {
    /// The parent type is not in the scan: nothing is listed.
    Absent {
        /// The type to add to the scan.
        parent_type: String,
    },
    /// The parent type's dataset, finished: its items' resource models by region.
    Listed {
        /// The parent's type name.
        parent_type: String,
        /// Its items are in region `global`: every region of the child lists under them.
        parent_global: bool,
        /// By region (`global` for a global parent).
        regions: BTreeMap<String, ParentRegion>,
        /// A region the parent's report has no entry for: the dataset's status.
        otherwise: (CoverageStatus, Option<String>),
    },
}

/// The parent's coverage in one region and one listing's model per parent item.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParentRegion {
    status: Option<CoverageStatus>,
    reason: Option<String>,
    models: Vec<ParentModel>,
}

/// One parent item: its id and the `ResourceModel` (JSON text) its children are listed
/// with, or the parent property it lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct ParentModel {
    pub(super) parent_id: String,
    pub(super) model: Result<String, String>,
}

impl ParentListing {
    /// The parent type `parent_type` is not in the scan.
    pub fn absent(parent_type: &str) -> Self {
        ParentListing::Absent {
            parent_type: parent_type.to_string(),
        }
    }

    /// What `child` lists under, from its parent type's finished `report`.
    pub fn of(child: &CcType, report: &DatasetReport) -> Self {
        let Some(link) = &child.parent_type else {
            return ParentListing::absent(&child.parent.join(", "));
        };
        let parent = find(&link.type_name).map(|(_, t)| t);
        let identifier = parent.map(|t| &t.identifier[..]).unwrap_or_default();
        let mut regions: BTreeMap<String, ParentRegion> = BTreeMap::new();
        for entry in &report.coverage {
            let region = regions.entry(entry.region.clone()).or_default();
            region.status = Some(entry.status);
            region.reason = entry.reason.clone();
        }
        for item in &report.items {
            let r = item.resource();
            let Some(region) = r.region.as_ref().filter(|_| !r.is_tags_only()) else {
                continue;
            };
            let model = child
                .resource_model(&r.id, identifier, &r.properties)
                .map(|m| Value::Object(m).to_string());
            regions
                .entry(region.clone())
                .or_default()
                .models
                .push(ParentModel {
                    parent_id: r.id.clone(),
                    model,
                });
        }
        let otherwise = match report.status {
            DatasetStatus::Complete => CoverageStatus::Complete,
            DatasetStatus::Partial => CoverageStatus::Partial,
            DatasetStatus::Failed => CoverageStatus::Failed,
            DatasetStatus::Cancelled => CoverageStatus::Cancelled,
        };
        ParentListing::Listed {
            parent_type: link.type_name.clone(),
            parent_global: parent.is_some_and(|t| t.global),
            regions,
            otherwise: (otherwise, report.reasons.first().map(|r| r.message.clone())),
        }
    }

    /// The verdict and parent items for the child's listing in `region`.
    pub(super) fn for_region(&self, region: &str) -> (Verdict, &[ParentModel]) {
        match self {
            ParentListing::Absent { parent_type } => (absent(parent_type), &[]),
            ParentListing::Listed {
                parent_type,
                parent_global,
                regions,
                otherwise,
            } => {
                let key = if *parent_global { GLOBAL } else { region };
                let found = regions.get(key);
                let status = found.and_then(|r| r.status).unwrap_or(otherwise.0);
                let reason = match found.and_then(|r| r.status) {
                    Some(_) => found.and_then(|r| r.reason.as_deref()),
                    None => otherwise.1.as_deref(),
                };
                let models = found.map(|r| &r.models[..]).unwrap_or_default();
                (verdict(parent_type, key, status, reason), models)
            }
        }
    }
}

/// What the child does in a region, from its parent's coverage there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// List under each parent item; the child's coverage is at best `floor` (the
    /// parent's partial or failed listing), with its reason.
    List { floor: Option<Decided> },
    /// Nothing to list under: the child's coverage there.
    Nothing(Decided),
}

pub(super) fn absent(parent_type: &str) -> Verdict {
    Verdict::Nothing(Decided {
        status: CoverageStatus::Skipped,
        reason: format!(
            "its listing needs items of its parent type {parent_type}, which is not in the \
             scan: add {parent_type} to --types"
        ),
    })
}

/// The child's verdict in a region where its parent type's coverage is `status`.
pub(super) fn verdict(
    parent_type: &str,
    region: &str,
    status: CoverageStatus,
    reason: Option<&str>,
) -> Verdict {
    let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
    let floor = |status, what: &str| {
        Some(Decided {
            status,
            reason: format!(
                "the parent type {parent_type}'s listing in {region} is {what}{why}: children \
                 of parents it missed are missing too"
            ),
        })
    };
    match status {
        CoverageStatus::Complete => Verdict::List { floor: None },
        CoverageStatus::Partial => Verdict::List {
            floor: floor(CoverageStatus::Partial, "partial"),
        },
        CoverageStatus::Failed => Verdict::List {
            floor: floor(CoverageStatus::Failed, "failed"),
        },
        CoverageStatus::Cancelled => Verdict::Nothing(Decided {
            status: CoverageStatus::Cancelled,
            reason: format!("the scan was cancelled before {parent_type} was listed in {region}"),
        }),
        other => Verdict::Nothing(Decided {
            status: CoverageStatus::Skipped,
            reason: format!(
                "the parent type {parent_type} is {} in {region}{why}: no parent item to list \
                 under",
                other.as_str()
            ),
        }),
    }
}

/// The child's coverage in a region: a refusal of the type itself (unsupported, denied)
/// says most; else the worse of its own listing's and the parent's floor.
pub(super) fn settle(own: Coverage, decided: Option<Decided>, floor: Option<Decided>) -> Coverage {
    let mut entry = own;
    let own_listing = matches!(
        entry.status,
        CoverageStatus::Complete | CoverageStatus::Partial | CoverageStatus::Failed
    );
    for d in [decided, floor].into_iter().flatten() {
        let refusal = matches!(
            d.status,
            CoverageStatus::Unsupported | CoverageStatus::Denied
        );
        let worse = d.status > entry.status;
        let says_why = d.status == entry.status && entry.reason.is_none();
        if refusal || (own_listing && (worse || says_why)) {
            entry.status = d.status;
            entry.reason = Some(d.reason);
            if refusal {
                break;
            }
        }
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Item;
    use crate::Resource;
    use serde_json::json;
    use CoverageStatus::*;

    #[test]
    fn a_parents_coverage_decides_whether_and_how_its_children_are_listed() {
        let p = "AWS::EKS::Cluster";
        #[rustfmt::skip]
        let cases: &[(CoverageStatus, bool, Option<CoverageStatus>)] = &[
            // parent there   lists  child's coverage at best / instead
            (Complete,       true,  None),
            (Partial,        true,  Some(Partial)),
            (Failed,         true,  Some(Failed)),
            (Unsupported,    false, Some(Skipped)),
            (Denied,         false, Some(Skipped)),
            (Skipped,        false, Some(Skipped)),
            (Cancelled,      false, Some(Cancelled)),
        ];
        for (parent, lists, child) in cases {
            let got = verdict(p, "us-east-1", *parent, Some("why"));
            let (listed, status, reason) = match &got {
                Verdict::List { floor } => (
                    true,
                    floor.as_ref().map(|f| f.status),
                    floor.as_ref().map(|f| f.reason.clone()),
                ),
                Verdict::Nothing(d) => (false, Some(d.status), Some(d.reason.clone())),
            };
            assert_eq!((listed, status), (*lists, *child), "{parent:?}");
            if let Some(reason) = reason {
                assert!(reason.contains(p), "{reason}");
                assert!(reason.contains("us-east-1"), "{reason}");
            }
        }
        let Verdict::Nothing(skip) = absent(p) else {
            panic!("an absent parent lists nothing")
        };
        assert_eq!(skip.status, Skipped);
        assert!(
            skip.reason.contains("add AWS::EKS::Cluster to --types"),
            "{}",
            skip.reason
        );
    }

    fn entry(status: CoverageStatus) -> Coverage {
        Coverage {
            resource_type: "AWS::EKS::Nodegroup".into(),
            account: None,
            region: "us-east-1".into(),
            status,
            reason: None,
            count: 3,
        }
    }

    fn decided(status: CoverageStatus, reason: &str) -> Option<Decided> {
        Some(Decided {
            status,
            reason: reason.into(),
        })
    }

    #[test]
    fn a_childs_coverage_is_never_better_than_its_parents_and_a_refusal_says_most() {
        #[rustfmt::skip]
        let cases = [
            // own,      decided,                          floor,                     want
            (Complete,  None,                              None,                      Complete, None),
            (Complete,  None,                              decided(Partial, "p"),     Partial,  Some("p")),
            (Partial,   None,                              decided(Failed, "f"),      Failed,   Some("f")),
            (Failed,    None,                              decided(Partial, "p"),     Failed,   None),
            (Failed,    None,                              decided(Failed, "f"),      Failed,   Some("f")),
            (Complete,  decided(Unsupported, "u"),         decided(Failed, "f"),      Unsupported, Some("u")),
            (Complete,  decided(Denied, "d"),              None,                      Denied,   Some("d")),
            (Cancelled, None,                              decided(Partial, "p"),     Cancelled, None),
            (Complete,  decided(Skipped, "s"),             None,                      Skipped,  Some("s")),
        ];
        for (own, d, floor, want, reason) in cases {
            let got = settle(entry(own), d, floor);
            assert_eq!(
                (got.status, got.reason.as_deref(), got.count),
                (want, reason, 3),
                "{own:?}"
            );
        }
    }

    fn parent_report(
        status: DatasetStatus,
        coverage: Vec<Coverage>,
        items: Vec<Resource>,
    ) -> DatasetReport {
        DatasetReport {
            status,
            reasons: Vec::new(),
            items: items.into_iter().map(Item::Resource).collect(),
            coverage,
        }
    }

    fn cluster(region: &str, name: &str) -> Resource {
        Resource::new("AWS::EKS::Cluster", name.into())
            .region(Some(region.into()))
            .property("Name", name)
    }

    #[test]
    fn a_parent_listing_holds_one_model_per_parent_item_by_region() {
        let (_, nodegroup) = find("AWS::EKS::Nodegroup").unwrap();
        let mut east = entry(Complete);
        east.resource_type = "AWS::EKS::Cluster".into();
        let mut west = east.clone();
        west.region = "eu-west-1".into();
        west.status = Partial;
        west.reason = Some("eks:ListClusters throttled".into());
        let report = parent_report(
            DatasetStatus::Partial,
            vec![east, west],
            vec![cluster("us-east-1", "prod"), cluster("eu-west-1", "dev")],
        );
        let listing = ParentListing::of(nodegroup, &report);
        let (verdict_east, models) = listing.for_region("us-east-1");
        assert_eq!(verdict_east, Verdict::List { floor: None });
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].model.as_deref(), Ok(r#"{"ClusterName":"prod"}"#));
        let (verdict_west, models) = listing.for_region("eu-west-1");
        let Verdict::List { floor: Some(floor) } = verdict_west else {
            panic!("a partial parent still lists, at best partial")
        };
        assert_eq!(floor.status, Partial);
        assert!(
            floor.reason.contains("eks:ListClusters throttled"),
            "{}",
            floor.reason
        );
        assert_eq!(models.len(), 1);
        // A region the parent's report does not name: its dataset's status.
        let (verdict_other, models) = listing.for_region("ap-south-1");
        assert!(matches!(verdict_other, Verdict::List { floor: Some(_) }));
        assert!(models.is_empty());
    }

    #[test]
    fn a_parent_item_without_the_property_is_a_gap_and_the_identifier_stands_in() {
        let (_, nodegroup) = find("AWS::EKS::Nodegroup").unwrap();
        let bare =
            Resource::new("AWS::EKS::Cluster", "prod".into()).region(Some("us-east-1".into()));
        let report = parent_report(DatasetStatus::Complete, Vec::new(), vec![bare]);
        let listing = ParentListing::of(nodegroup, &report);
        let (_, models) = listing.for_region("us-east-1");
        assert_eq!(
            models[0].model.as_deref(),
            Ok(r#"{"ClusterName":"prod"}"#),
            "the cluster's primary identifier is its Name"
        );
        let (_, alias) = find("AWS::Lambda::Alias").unwrap();
        let function = Resource::new("AWS::Lambda::Function", "f".into())
            .region(Some("us-east-1".into()))
            .property("Runtime", json!("python3.12"));
        let report = parent_report(DatasetStatus::Complete, Vec::new(), vec![function]);
        let listing = ParentListing::of(alias, &report);
        let (_, models) = listing.for_region("us-east-1");
        assert_eq!(models[0].model.as_deref(), Ok(r#"{"FunctionName":"f"}"#));
    }
}
