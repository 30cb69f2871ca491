//! The types tollgate knows (`tollgate types`): each one's CloudFormation name, how it
//! is collected, whether a scan collects it by default, and whether CloudFormation has
//! the type at all.
//!
//! Three sources, one table: the native datasets, the Cloud Control sweep's types (both
//! [`Dataset::catalog`], selectable with `--types`; a Cloud Control row says which
//! operations its listing charges beside `cloudcontrol:ListResources`) and the ARN
//! shapes of the tagging sweep ([`arn_type::KNOWN`]), whose types appear only as
//! `tags-only` items. A type in several is listed once, as its dataset. An ARN that matches no row still gets a best-effort
//! name in the same style (see [`arn_type`]); such a name is not in this table and may
//! not be a CloudFormation type.

use serde::Serialize;

use crate::dataset::{Dataset, DEFAULT_SWEEP};
use crate::tagging::arn_type::{self, GLOBAL_SERVICES};

/// How a type's items are produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectedBy {
    /// A native collector lists the type with its own SDK calls (full properties).
    Native,
    /// The Cloud Control sweep lists it (`ListResources`), charging the underlying
    /// operations too.
    Cloudcontrol,
    /// Only the tagging sweep sees it: tagged resources with ARN and tags, never proof
    /// that others are absent.
    TagsOnly,
}

/// One row of `tollgate types`. `--types` selects the [`CollectedBy::Native`] and
/// [`CollectedBy::Cloudcontrol`] rows (a child type's with its [`TypeInfo::parent`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypeInfo {
    /// CloudFormation type name, or one in the same style (`AWS::EC2::Snapshot`).
    pub resource_type: &'static str,
    /// The dataset alias `--types` also accepts (`s3-buckets`), if any.
    pub alias: Option<&'static str>,
    /// How its items are produced.
    pub collected_by: CollectedBy,
    /// Whether a scan without `--types` collects it natively.
    pub default: bool,
    /// Whether `--types cloudcontrol` (the default Cloud Control sweep) lists it.
    pub default_sweep: bool,
    /// The quota keys (`service:group`) collecting it charges: a native row's every
    /// call (`ec2:DescribeVolumes`, `lambda:control-plane`); a Cloud Control row's
    /// operations one `ListResources` page is charged beside `cloudcontrol:ListResources`
    /// (`iam:ListRoles`); empty for a tags-only row.
    pub charges: Vec<String>,
    /// Cloud Control rows: the operations one `GetResource` (`--details`) is charged
    /// beside `cloudcontrol:GetResource` (`iam:GetRole`, ...); empty for the others.
    pub read_charges: Vec<String>,
    /// A child type's parent: the type whose items its listing needs (listed once per
    /// parent item, when the parent type is in the scan); `null` for a top-level type.
    pub parent: Option<&'static str>,
    /// Whether its items' region is `global`.
    pub global: bool,
    /// Whether CloudFormation has the type (`false`: a name in its style, for types
    /// CloudFormation does not model, such as EBS snapshots and AMIs).
    pub cloudformation: bool,
}

/// The names tollgate uses for types CloudFormation does not have.
pub const NOT_CLOUDFORMATION: &[&str] = &[
    "AWS::EC2::Snapshot",
    "AWS::EC2::Image",
    "AWS::ECS::ContainerInstance",
];

/// Every known type, sorted by name.
pub fn catalog() -> Vec<TypeInfo> {
    let defaults = Dataset::defaults();
    let mut rows: Vec<TypeInfo> = Dataset::catalog()
        .into_iter()
        .map(|d| {
            let keys = |ops: &[(String, String)]| -> Vec<String> {
                ops.iter().map(|(s, o)| format!("{s}:{o}")).collect()
            };
            let (collected_by, charges, read_charges, parent) = match d {
                Dataset::CloudControl(id) => (
                    CollectedBy::Cloudcontrol,
                    keys(&id.info().list),
                    keys(&id.info().read),
                    id.info().parent_type.as_ref().map(|p| p.type_name.as_str()),
                ),
                native => (
                    CollectedBy::Native,
                    native_charges(native),
                    Vec::new(),
                    None,
                ),
            };
            TypeInfo {
                resource_type: d.resource_type(),
                alias: d.alias(),
                collected_by,
                default: defaults.contains(&d),
                default_sweep: DEFAULT_SWEEP.contains(&d.resource_type()),
                charges,
                read_charges,
                parent,
                global: d.is_global(),
                cloudformation: !NOT_CLOUDFORMATION.contains(&d.resource_type()),
            }
        })
        .collect();
    for (service, _, resource_type, _) in arn_type::KNOWN {
        if rows.iter().any(|r| r.resource_type == *resource_type) {
            continue;
        }
        rows.push(TypeInfo {
            resource_type,
            alias: None,
            collected_by: CollectedBy::TagsOnly,
            default: false,
            default_sweep: false,
            charges: Vec::new(),
            read_charges: Vec::new(),
            parent: None,
            global: GLOBAL_SERVICES.contains(service),
            cloudformation: !NOT_CLOUDFORMATION.contains(resource_type),
        });
    }
    rows.sort_by_key(|r| r.resource_type);
    rows
}

/// A native dataset's quota keys, each once, in call order.
fn native_charges(dataset: Dataset) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for op in crate::native_operations(dataset) {
        let key = format!(
            "{}:{}",
            op.service(),
            tollgate_quota::operation_group(op.service(), op.name())
        );
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dataset_is_a_native_row_under_its_alias() {
        let rows = catalog();
        for d in Dataset::ALL {
            let row = rows
                .iter()
                .find(|r| r.resource_type == d.resource_type())
                .unwrap();
            assert_eq!(row.alias, Some(d.name()));
            assert_eq!(row.collected_by, CollectedBy::Native);
            assert!(row.cloudformation);
            assert!(row.default);
        }
        let row = |t: &str| rows.iter().find(|r| r.resource_type == t).unwrap();
        assert_eq!(
            row("AWS::Lambda::Function").charges,
            vec!["lambda:control-plane"],
            "both listings share Lambda's control-plane budget"
        );
    }

    #[test]
    fn the_ec2_types_are_native_rows_with_their_keys_in_the_default_scan() {
        let rows = catalog();
        let row = |t: &str| rows.iter().find(|r| r.resource_type == t).unwrap();
        for t in crate::dataset::Ec2Type::ALL {
            let r = row(t.resource_type());
            assert_eq!(r.collected_by, CollectedBy::Native, "{t:?}");
            assert_eq!(r.alias, None);
            assert!(r.default && !r.default_sweep && !r.global, "{t:?}");
            assert!(
                r.charges.iter().all(|k| k.starts_with("ec2:Describe")),
                "{t:?}"
            );
        }
        assert_eq!(row("AWS::EC2::Volume").charges, vec!["ec2:DescribeVolumes"]);
        assert_eq!(
            row("AWS::EC2::Image").charges,
            vec!["ec2:DescribeImages", "ec2:DescribeImageAttribute"]
        );
        assert_eq!(
            row("AWS::EC2::Snapshot").collected_by,
            CollectedBy::Native,
            "snapshots and AMIs are native, though not CloudFormation types"
        );
        assert_eq!(
            row("AWS::EC2::TransitGatewayRouteTable").collected_by,
            CollectedBy::Cloudcontrol,
            "EC2's other types stay with Cloud Control"
        );
    }

    #[test]
    fn seed_000s_other_services_are_native_rows_on_their_budgets_and_left_the_sweep() {
        let rows = catalog();
        let row = |t: &str| rows.iter().find(|r| r.resource_type == t).unwrap();
        for t in crate::dataset::ServiceType::ALL {
            let r = row(t.resource_type());
            assert_eq!(r.collected_by, CollectedBy::Native, "{t:?}");
            assert!(r.default && !r.default_sweep, "{t:?}");
            assert_eq!(
                r.global,
                t == crate::dataset::ServiceType::Route53HostedZone
            );
        }
        assert_eq!(
            row("AWS::ECS::Service").charges,
            vec!["ecs:cluster-resource-read", "ecs:service-read"]
        );
        assert_eq!(
            row("AWS::ElasticLoadBalancing::LoadBalancer").charges,
            vec!["elasticloadbalancing:all-requests"]
        );
        assert_eq!(
            row("AWS::ElasticLoadBalancingV2::Listener").charges,
            vec!["elasticloadbalancingv2:all-requests"]
        );
        assert_eq!(
            row("AWS::Logs::LogGroup").charges,
            vec!["logs:DescribeLogGroups", "logs:DescribeLogStreams"]
        );
        assert_eq!(
            row("AWS::Route53::HostedZone").charges,
            vec!["route53:all-requests"]
        );
        assert_eq!(
            row("AWS::EMR::Cluster").charges,
            vec![
                "emr:ListClusters",
                "emr:DescribeCluster",
                "emr:ListInstances"
            ]
        );
        assert!(!row("AWS::ECS::ContainerInstance").cloudformation);
    }

    #[test]
    fn native_rows_are_what_types_selects_and_tags_only_rows_are_refused() {
        for row in catalog() {
            let selected = crate::dataset::select(&[row.resource_type]);
            match row.collected_by {
                CollectedBy::Native | CollectedBy::Cloudcontrol => assert_eq!(
                    selected.map(|d| d.iter().map(|d| d.resource_type()).collect::<Vec<_>>()),
                    Ok(vec![row.resource_type])
                ),
                CollectedBy::TagsOnly => assert!(selected.is_err(), "{}", row.resource_type),
            }
        }
    }

    #[test]
    fn each_type_is_listed_once_and_the_table_is_sorted() {
        let rows = catalog();
        let names: Vec<&str> = rows.iter().map(|r| r.resource_type).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn snapshots_and_images_are_marked_not_cloudformation_and_iam_is_global() {
        let rows = catalog();
        let row = |t: &str| rows.iter().find(|r| r.resource_type == t).unwrap();
        assert!(!row("AWS::EC2::Snapshot").cloudformation);
        assert!(!row("AWS::EC2::Image").cloudformation);
        assert!(row("AWS::EC2::Instance").cloudformation);
        assert!(row("AWS::IAM::Role").global);
        assert!(!row("AWS::SQS::Queue").global);
        assert_eq!(
            row("AWS::SQS::Queue").collected_by,
            CollectedBy::Cloudcontrol
        );
        assert!(row("AWS::SQS::Queue").default_sweep);
        assert_eq!(row("AWS::SQS::Queue").charges, vec!["sqs:ListQueues"]);
        assert_eq!(row("AWS::SQS::Queue").parent, None);
        assert_eq!(
            row("AWS::IAM::Role").read_charges,
            vec![
                "iam:GetRole",
                "iam:GetRolePolicy",
                "iam:ListAttachedRolePolicies",
                "iam:ListRolePolicies"
            ]
        );
        assert_eq!(row("AWS::EKS::Nodegroup").parent, Some("AWS::EKS::Cluster"));
        assert_eq!(
            row("AWS::Lambda::Alias").parent,
            Some("AWS::Lambda::Function")
        );
    }
}
