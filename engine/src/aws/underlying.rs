//! What a Cloud Control call charges besides its own token: one token of each operation
//! its resource type's handler performs (issue 33).
//!
//! AWS executes a Cloud Control `ListResources` or `GetResource` as calls to the
//! underlying service, made with the caller's credentials, so it spends *that service's*
//! quota: listing `AWS::IAM::Role` spends `iam:ListRoles`, which every other IAM reader
//! of the account shares. A gate that charged only `cloudcontrol:ListResources` would
//! let a sweep empty IAM's quota while believing itself polite. [`UnderlyingPlan`] holds
//! the canonical keys of the handler's operations (from the CloudFormation schema's
//! `handlers.list.permissions` or `handlers.read.permissions`); final admission charges
//! the call's own key and every one of them at one instant (`tollgate_actors`'s
//! `admit_with_budgets`), for every physical attempt, retries included.
//!
//! What is modelled and what is not: one token per operation the schema names, per
//! page or resource read. A handler may make more calls than that (one per item for
//! some types, several pages of the underlying listing for one Cloud Control page);
//! the schema does not say how many, so the charge is a floor, and the underlying keys'
//! own feedback (below) slows the sweep when the floor is too low.
//!
//! Feedback: Cloud Control's own `ThrottlingException` is about its own key. A handler
//! whose downstream call was throttled surfaces as a throttling error whose message
//! names the downstream service the way the Java resource handlers write it (`Rate
//! exceeded (Service: Iam, Status Code: 400, ...)`); [`downstream_service`] reads it, and
//! the throttle is fed back to the underlying keys of that service instead (the Cloud
//! Control key is told its call was answered).

use tollgate_quota::{PolicyTable, QuotaKey};

use crate::aws::metric_data::BudgetKey;
use crate::aws::sdk_error::FailureFacts;
use crate::aws::taxonomy::ErrorClass;

/// The underlying keys one call charges beside its own.
#[derive(Debug, Clone)]
pub(crate) struct UnderlyingPlan {
    keys: Vec<(String, BudgetKey)>,
}

impl UnderlyingPlan {
    /// The keys of `operations` (`iam:ListRoles`, ...) beside `own`, in its account and
    /// region (dropped for a global service), with their policies from `policies`.
    /// Duplicates, and an operation that is the call's own key, are charged once.
    pub fn new(
        own: &QuotaKey,
        operations: &[(String, String)],
        policies: &PolicyTable,
    ) -> Result<UnderlyingPlan, tollgate_quota::KeyError> {
        let mut keys: Vec<(String, BudgetKey)> = Vec::new();
        for (service, operation) in operations {
            let key = QuotaKey::for_operation(
                own.partition(),
                own.account(),
                own.region(),
                service,
                operation,
            )?;
            if &key == own || keys.iter().any(|(_, k)| k.key == key) {
                continue;
            }
            let policy = policies.policy_for_key(&key);
            keys.push((service.to_ascii_lowercase(), BudgetKey { key, policy }));
        }
        Ok(UnderlyingPlan { keys })
    }

    /// Every key, in the order given.
    pub fn keys(&self) -> impl Iterator<Item = &BudgetKey> {
        self.keys.iter().map(|(_, k)| k)
    }

    /// The keys a downstream throttle of `service` (as [`downstream_service`] read it)
    /// is fed back to: those of that service, or every key when none is of it (a
    /// message naming the service differently than its IAM prefix).
    pub fn throttled(&self, service: &str) -> Vec<&BudgetKey> {
        let wanted = normalise(service);
        let of_service: Vec<&BudgetKey> = self
            .keys
            .iter()
            .filter(|(s, _)| normalise(s) == wanted)
            .map(|(_, k)| k)
            .collect();
        match of_service.is_empty() {
            true => self.keys().collect(),
            false => of_service,
        }
    }
}

/// A Cloud Control answer from an endpoint that does not serve Cloud Control: a 5xx
/// that bears no mark of an AWS service (no error code, no request id: moto answers
/// every service it lacks with such an HTML 500). AWS's own 5xx always carry a request
/// id, so they stay transient; this one is fatal (no retry, no penalty, no breaker
/// trip: it says nothing about capacity), with a message saying why, so the sweep
/// reports the type `unsupported` there rather than retrying every type into a failed
/// scan.
pub(crate) fn endpoint_without_cloud_control(mut facts: FailureFacts) -> FailureFacts {
    if facts.unmarked && facts.status.is_some_and(|s| s >= 500) {
        facts.class = ErrorClass::Fatal;
        facts.message = format!(
            "the endpoint answered HTTP {} without an AWS error code or request id: it does \
             not serve Cloud Control",
            facts.status.unwrap_or_default()
        );
    }
    facts
}

/// The downstream service a throttling error's message names (`Rate exceeded (Service:
/// Iam, Status Code: 400, Request ID: ...)` → `Iam`), or `None` when the message names
/// none or names Cloud Control itself: then the throttle is Cloud Control's own.
pub fn downstream_service(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("(Service: ")?;
    let name = rest.split([',', ')']).next()?.trim();
    let own = ["cloudcontrol", "cloudcontrolapi", "cloudformation"];
    match name.is_empty() || own.contains(&normalise(name).as_str()) {
        true => None,
        false => Some(name),
    }
}

/// A service's name compared loosely: `Iam`, `iam`, `ElasticLoadBalancingV2` and
/// `elasticloadbalancing` are told apart only by letters (version suffixes dropped).
fn normalise(service: &str) -> String {
    let lower: String = service
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    lower.trim_end_matches("v2").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unmarked_5xx_is_an_endpoint_without_cloud_control() {
        let facts = |status: u16, unmarked: bool| FailureFacts {
            class: ErrorClass::Transient,
            code: None,
            message: String::new(),
            status: Some(status),
            unmarked,
        };
        let moto = endpoint_without_cloud_control(facts(500, true));
        assert_eq!(moto.class, ErrorClass::Fatal);
        assert!(
            moto.message.contains("does not serve Cloud Control"),
            "{}",
            moto.message
        );
        // AWS's own 500 carries a request id: still transient, retried.
        assert_eq!(
            endpoint_without_cloud_control(facts(500, false)).class,
            ErrorClass::Transient
        );
        // An unmarked 4xx is already fatal and keeps its own message.
        let bad = endpoint_without_cloud_control(FailureFacts {
            class: ErrorClass::Fatal,
            ..facts(404, true)
        });
        assert_eq!((bad.class, bad.message.as_str()), (ErrorClass::Fatal, ""));
    }

    #[test]
    fn a_downstream_throttle_names_its_service_and_cloud_controls_own_names_none() {
        let iam = "Rate exceeded (Service: Iam, Status Code: 400, Request ID: 1f2e)";
        assert_eq!(downstream_service(iam), Some("Iam"));
        assert_eq!(downstream_service("Rate exceeded"), None);
        assert_eq!(
            downstream_service("Rate exceeded (Service: CloudControlApi, Status Code: 400)"),
            None
        );
        assert_eq!(downstream_service("(Service: )"), None);
        assert_eq!(downstream_service("(Service: Sqs)"), Some("Sqs"));
    }

    fn plan(ops: &[(&str, &str)]) -> UnderlyingPlan {
        let own: QuotaKey = "aws/123456789012/us-east-1/cloudcontrol:ListResources"
            .parse()
            .unwrap();
        let ops: Vec<(String, String)> = ops
            .iter()
            .map(|(s, o)| (s.to_string(), o.to_string()))
            .collect();
        UnderlyingPlan::new(&own, &ops, &PolicyTable::defaults()).unwrap()
    }

    #[test]
    fn underlying_keys_are_canonical_global_where_the_service_is_and_charged_once() {
        let p = plan(&[
            ("iam", "ListRoles"),
            ("iam", "ListRoles"),
            ("ecs", "DescribeClusters"),
            ("ecs", "DescribeTasks"),
        ]);
        let keys: Vec<String> = p.keys().map(|k| k.key.to_string()).collect();
        assert_eq!(
            keys,
            vec![
                "aws/123456789012/-/iam:ListRoles",
                "aws/123456789012/us-east-1/ecs:cluster-resource-read",
            ],
            "ecs's two cluster reads are one budget in seed 000's table"
        );
    }

    #[test]
    fn a_throttle_goes_to_the_named_services_keys_or_to_all_when_none_matches() {
        let p = plan(&[("iam", "ListRoles"), ("sqs", "ListQueues")]);
        let names = |keys: Vec<&BudgetKey>| -> Vec<String> {
            keys.iter().map(|k| k.key.to_string()).collect()
        };
        assert_eq!(
            names(p.throttled("Iam")),
            vec!["aws/123456789012/-/iam:ListRoles"]
        );
        assert_eq!(names(p.throttled("Kinesis")).len(), 2);
    }
}
