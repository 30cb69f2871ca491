//! Service names and operation groups: which spellings name one service, which services
//! are global, and which operations share one AWS budget.
//!
//! Split from [`crate::key`] because these are data tables that grow with every service a
//! collector adds, while the key's shape does not. Everything here is infallible lookup
//! except [`canonical_service`], which also validates.

use super::{is_label, KeyError};

/// Group shared by every request to a service with one account-wide budget.
pub const ALL_REQUESTS: &str = "all-requests";

/// Services whose quotas are per partition and account, not per region. Erring towards
/// "global" is the safe side: it makes more callers share one (stricter) budget.
pub(super) const GLOBAL_SERVICES: &[&str] = &[
    "account",
    "budgets",
    "ce",
    "cloudfront",
    "globalaccelerator",
    "health",
    "iam",
    "organizations",
    "route53",
    "route53domains",
    "shield",
    "support",
    "waf",
];

/// Alias → canonical service. Inputs are first lowercased with spaces and `_` turned into
/// `-`, so SDK service ids ("Elastic Load Balancing v2") arrive here as
/// `elastic-load-balancing-v2`. Canonical names are the ones seed 000 uses in its policy
/// table; aliases are SDK crate names and endpoint prefixes. The endpoint prefix
/// `elasticloadbalancing` is shared by both ELB API versions and means the classic API.
const SERVICE_ALIASES: &[(&str, &str)] = &[
    ("elbv2", "elasticloadbalancingv2"),
    ("elastic-load-balancing-v2", "elasticloadbalancingv2"),
    ("elb", "elasticloadbalancing"),
    ("elastic-load-balancing", "elasticloadbalancing"),
    ("monitoring", "cloudwatch"),
    ("cloudwatchlogs", "logs"),
    ("cloudwatch-logs", "logs"),
    ("resourceexplorer2", "resource-explorer-2"),
    ("resource-explorer2", "resource-explorer-2"),
    ("elasticmapreduce", "emr"),
    ("api.sagemaker", "sagemaker"),
    ("route-53", "route53"),
];

/// Lambda's function and version reads that share `lambda:control-plane`.
const LAMBDA_CONTROL_PLANE: &[&str] = &[
    "GetFunction",
    "GetFunctionConfiguration",
    "ListAliases",
    "ListFunctions",
    "ListVersionsByFunction",
];

/// DynamoDB control-plane reads that share `dynamodb:control-plane-read` across tables.
const DYNAMODB_CONTROL_PLANE_READ: &[&str] = &[
    "DescribeBackup",
    "DescribeContinuousBackups",
    "DescribeContributorInsights",
    "DescribeExport",
    "DescribeGlobalTable",
    "DescribeGlobalTableSettings",
    "DescribeImport",
    "DescribeKinesisStreamingDestination",
    "DescribeLimits",
    "DescribeTable",
    "DescribeTableReplicaAutoScaling",
    "DescribeTimeToLive",
    "GetResourcePolicy",
    "ListBackups",
    "ListContributorInsights",
    "ListExports",
    "ListGlobalTables",
    "ListImports",
    "ListTables",
    "ListTagsOfResource",
];

/// ECS reads in the `service-read` throttling group.
const ECS_SERVICE_READ: &[&str] = &[
    "DescribeServices",
    "ListServices",
    "ListServicesByNamespace",
];

/// ECS cluster, container-instance and task reads (`cluster-resource-read`).
const ECS_CLUSTER_RESOURCE_READ: &[&str] = &[
    "DescribeClusters",
    "DescribeContainerInstances",
    "DescribeTasks",
    "ListClusters",
    "ListContainerInstances",
    "ListTasks",
];

/// Lowercase, turn spaces and `_` into `-`, and resolve aliases. Infallible: the result
/// may still be invalid; [`canonical_service`] validates it.
fn normalize_service(service: &str) -> String {
    let normalized: String = service
        .trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    match SERVICE_ALIASES
        .iter()
        .find(|(alias, _)| *alias == normalized)
    {
        Some((_, canonical)) => (*canonical).to_owned(),
        None => normalized,
    }
}

/// The canonical name of a service: aliases resolved, lowercase, validated.
pub fn canonical_service(service: &str) -> Result<String, KeyError> {
    let canonical = normalize_service(service);
    if is_label(&canonical) {
        Ok(canonical)
    } else {
        Err(KeyError::Service(service.to_owned()))
    }
}

/// Whether a (canonical) service's quotas are per account rather than per region.
pub fn is_global_service(service: &str) -> bool {
    GLOBAL_SERVICES.contains(&normalize_service(service).as_str())
}

/// The quota group of an SDK operation (PascalCase, as in `ListFunctions`), per seed
/// 000's default table: operations that share one AWS budget map to its group name;
/// every other operation is its own group.
pub fn operation_group(service: &str, operation: &str) -> String {
    let group = match normalize_service(service).as_str() {
        "route53" | "elasticloadbalancing" | "elasticloadbalancingv2" => ALL_REQUESTS,
        "lambda" if LAMBDA_CONTROL_PLANE.contains(&operation) => "control-plane",
        "dynamodb" if DYNAMODB_CONTROL_PLANE_READ.contains(&operation) => "control-plane-read",
        "ecs" if ECS_SERVICE_READ.contains(&operation) => "service-read",
        "ecs" if ECS_CLUSTER_RESOURCE_READ.contains(&operation) => "cluster-resource-read",
        "resource-explorer-2" if operation != "Search" => "non-search",
        _ => operation,
    };
    group.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_groups() {
        let cases: &[(&str, &str, &str)] = &[
            ("lambda", "ListFunctions", "control-plane"),
            ("lambda", "ListVersionsByFunction", "control-plane"),
            ("lambda", "GetFunction", "control-plane"),
            ("lambda", "Invoke", "Invoke"),
            ("dynamodb", "ListTables", "control-plane-read"),
            ("dynamodb", "DescribeTable", "control-plane-read"),
            (
                "dynamodb",
                "DescribeContinuousBackups",
                "control-plane-read",
            ),
            ("dynamodb", "GetItem", "GetItem"),
            ("route53", "ListHostedZones", "all-requests"),
            ("elbv2", "DescribeLoadBalancers", "all-requests"),
            (
                "elasticloadbalancing",
                "DescribeLoadBalancers",
                "all-requests",
            ),
            ("ecs", "DescribeServices", "service-read"),
            ("ecs", "ListServices", "service-read"),
            ("ecs", "ListClusters", "cluster-resource-read"),
            ("ecs", "DescribeTasks", "cluster-resource-read"),
            ("ecs", "ListContainerInstances", "cluster-resource-read"),
            ("ecs", "ListTaskDefinitions", "ListTaskDefinitions"),
            ("resource-explorer-2", "ListResources", "non-search"),
            ("resourceexplorer2", "GetDefaultView", "non-search"),
            ("resource-explorer-2", "Search", "Search"),
            ("kms", "GetKeyLastUsage", "GetKeyLastUsage"),
            ("ec2", "DescribeInstances", "DescribeInstances"),
        ];
        for &(service, op, want) in cases {
            assert_eq!(operation_group(service, op), want, "{service}:{op}");
        }
    }

    #[test]
    fn aliases_resolve_to_one_service() {
        let cases: &[(&str, Option<&str>)] = &[
            ("elbv2", Some("elasticloadbalancingv2")),
            ("Elastic Load Balancing v2", Some("elasticloadbalancingv2")),
            ("elb", Some("elasticloadbalancing")),
            ("monitoring", Some("cloudwatch")),
            ("CloudWatch Logs", Some("logs")),
            ("cloudwatchlogs", Some("logs")),
            ("resourceexplorer2", Some("resource-explorer-2")),
            ("Resource Explorer 2", Some("resource-explorer-2")),
            ("elasticmapreduce", Some("emr")),
            ("api.sagemaker", Some("sagemaker")),
            ("DynamoDB", Some("dynamodb")),
            ("lambda", Some("lambda")),
            ("  kms ", Some("kms")),
            ("", None),
            ("k$s", None),
            ("-kms", None),
        ];
        for &(input, want) in cases {
            assert_eq!(canonical_service(input).ok().as_deref(), want, "{input:?}");
        }
        assert!(is_global_service("Route 53") && is_global_service("iam"));
        assert!(!is_global_service("sts") && !is_global_service("s3"));
    }
}
