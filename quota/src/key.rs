//! Quota identity: which requests share one admission budget.
//!
//! A [`QuotaKey`] is the canonical name of one budget: partition, account scope, region
//! (absent for global services), service and operation group. Two requests share
//! admission exactly when their keys are equal, so everything that could make equal
//! quotas look different is normalised here, once, when the key is built:
//!
//! - service aliases (`elbv2`, `monitoring`, `Elastic Load Balancing v2`, ...) resolve to
//!   one canonical service name ([`canonical_service`]);
//! - the region of a global service (Route 53, IAM, ...) is dropped, so a caller passing
//!   `us-east-1` for Route 53 lands on the same key as one passing none;
//! - SDK operation names map to their quota group ([`operation_group`]), so every Lambda
//!   listing call shares `lambda:control-plane`.
//!
//! # Canonical form
//!
//! `partition/account/region/service:group`, for example
//! `aws/123456789012/us-east-1/kms:GetKeyLastUsage`. A global service writes `-` as its
//! region (`aws/123456789012/-/route53:all-requests`); `-` can never be a region because
//! regions start with a letter. The account is a 12-digit account id or
//! `unresolved:<run-id>` (DESIGN §6: a run whose caller identity could not be resolved
//! uses isolated admission). No component may contain `/`, and the service cannot contain
//! `:`, so the form splits unambiguously; the group may contain `:`
//! (`cloudwatch:GetMetricData:recent-datapoints`). `Display` and `FromStr` round-trip
//! exactly; `FromStr` also accepts aliases and a region for a global service, and
//! canonicalises them like [`QuotaKey::new`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod services;
pub use services::{canonical_service, is_global_service, operation_group, ALL_REQUESTS};

/// The region component written for a global service.
pub const GLOBAL_REGION: &str = "-";
/// Prefix of an account scope whose caller identity could not be resolved.
pub const UNRESOLVED_PREFIX: &str = "unresolved:";

const MAX_LABEL_LEN: usize = 64;
const MAX_GROUP_LEN: usize = 128;
const MAX_RUN_ID_LEN: usize = 128;

/// Why a key or one of its parts was refused. Each message says what a valid value is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    #[error("partition `{0}` is invalid: use lowercase letters, digits and '-', starting with a letter (for example `aws`, `aws-cn`, `aws-us-gov`)")]
    Partition(String),
    #[error("account `{0}` is invalid: use a 12-digit AWS account id or `unresolved:<run-id>` with a run id of letters, digits and '-'")]
    Account(String),
    #[error("region `{0}` is invalid: use lowercase letters, digits and '-', starting with a letter (for example `us-east-1`)")]
    Region(String),
    #[error("service `{0}` is regional: pass the region the request is sent to")]
    MissingRegion(String),
    #[error("service `{0}` is invalid: use a service name of lowercase letters, digits and '-' (for example `kms`, `elbv2`, `resource-explorer-2`)")]
    Service(String),
    #[error("group `{0}` is invalid: use an operation name or group of letters, digits, '-', '_', '.' and ':', starting with a letter or digit, at most 128 characters")]
    Group(String),
    #[error("`{0}` is not of the form service:group (for example `logs:DescribeLogStreams`)")]
    ServiceGroup(String),
    #[error("quota key `{0}` is not of the form partition/account/region/service:group (write `-` as the region of a global service)")]
    Malformed(String),
}

/// `true` for a non-empty lowercase label: `[a-z][a-z0-9-]*`, not ending in `-`.
pub(crate) fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_LABEL_LEN
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1] != b'-'
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn is_group(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_GROUP_LEN
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b':'))
}

/// An AWS partition such as `aws`, `aws-cn` or `aws-us-gov`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Partition(String);

impl Partition {
    /// Validate a partition name.
    pub fn new(partition: &str) -> Result<Self, KeyError> {
        if is_label(partition) {
            Ok(Self(partition.to_owned()))
        } else {
            Err(KeyError::Partition(partition.to_owned()))
        }
    }
    /// The commercial partition, `aws`.
    pub fn aws() -> Self {
        Self("aws".to_owned())
    }
    /// The partition name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A 12-digit AWS account id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountId(String);

impl AccountId {
    /// Validate an account id: exactly 12 ASCII digits.
    pub fn new(id: &str) -> Result<Self, KeyError> {
        if id.len() == 12 && id.bytes().all(|c| c.is_ascii_digit()) {
            Ok(Self(id.to_owned()))
        } else {
            Err(KeyError::Account(id.to_owned()))
        }
    }
    /// The account id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The id of a run whose caller identity could not be resolved: `[A-Za-z0-9-]+`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(String);

impl RunId {
    /// Validate a run id.
    pub fn new(id: &str) -> Result<Self, KeyError> {
        let ok = !id.is_empty()
            && id.len() <= MAX_RUN_ID_LEN
            && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-');
        if ok {
            Ok(Self(id.to_owned()))
        } else {
            Err(KeyError::Account(format!("{UNRESOLVED_PREFIX}{id}")))
        }
    }
    /// The run id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whose budget a key draws on: a resolved account, or one run's isolated scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum AccountScope {
    /// The signing caller's account.
    Account(AccountId),
    /// Caller identity unresolved: admission isolated to this run (`unresolved:<run-id>`).
    Unresolved(RunId),
}

impl AccountScope {
    /// Whether this scope is shared across processes (a resolved account).
    pub fn is_resolved(&self) -> bool {
        matches!(self, AccountScope::Account(_))
    }
}

impl fmt::Display for AccountScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountScope::Account(id) => f.write_str(id.as_str()),
            AccountScope::Unresolved(run) => write!(f, "{UNRESOLVED_PREFIX}{}", run.as_str()),
        }
    }
}

impl FromStr for AccountScope {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        match s.strip_prefix(UNRESOLVED_PREFIX) {
            Some(run) => RunId::new(run).map(AccountScope::Unresolved),
            None => AccountId::new(s).map(AccountScope::Account),
        }
    }
}

/// A canonical `service:group` name: the unit of default policies and overrides.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServiceGroup {
    service: String,
    group: String,
}

impl ServiceGroup {
    /// Resolve the service's aliases and validate both parts.
    pub fn new(service: &str, group: &str) -> Result<Self, KeyError> {
        let service = canonical_service(service)?;
        if !is_group(group) {
            return Err(KeyError::Group(group.to_owned()));
        }
        Ok(Self {
            service,
            group: group.to_owned(),
        })
    }
    /// Canonical service name.
    pub fn service(&self) -> &str {
        &self.service
    }
    /// Operation or operation group.
    pub fn group(&self) -> &str {
        &self.group
    }
}

impl fmt::Display for ServiceGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.service, self.group)
    }
}

impl FromStr for ServiceGroup {
    type Err = KeyError;
    /// Parse `service:group`, splitting at the first `:`.
    fn from_str(s: &str) -> Result<Self, KeyError> {
        let (service, group) = s
            .split_once(':')
            .ok_or_else(|| KeyError::ServiceGroup(s.to_owned()))?;
        ServiceGroup::new(service, group)
    }
}

/// The canonical identity of one admission budget. See the module docs for its form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QuotaKey {
    partition: Partition,
    account: AccountScope,
    region: Option<String>,
    name: ServiceGroup,
}

impl QuotaKey {
    /// Build a key, resolving service aliases and dropping the region of a global service.
    /// A regional service needs a region.
    pub fn new(
        partition: &Partition,
        account: &AccountScope,
        region: Option<&str>,
        service: &str,
        group: &str,
    ) -> Result<Self, KeyError> {
        Self::from_parts(
            partition.clone(),
            account.clone(),
            region,
            ServiceGroup::new(service, group)?,
        )
    }

    /// The key of an SDK operation: [`QuotaKey::new`] with the group from
    /// [`operation_group`].
    pub fn for_operation(
        partition: &Partition,
        account: &AccountScope,
        region: Option<&str>,
        service: &str,
        operation: &str,
    ) -> Result<Self, KeyError> {
        Self::new(
            partition,
            account,
            region,
            service,
            &operation_group(service, operation),
        )
    }

    fn from_parts(
        partition: Partition,
        account: AccountScope,
        region: Option<&str>,
        name: ServiceGroup,
    ) -> Result<Self, KeyError> {
        let region = if is_global_service(name.service()) {
            None
        } else {
            let region = region.ok_or_else(|| KeyError::MissingRegion(name.service.clone()))?;
            if !is_label(region) {
                return Err(KeyError::Region(region.to_owned()));
            }
            Some(region.to_owned())
        };
        Ok(Self {
            partition,
            account,
            region,
            name,
        })
    }

    /// AWS partition.
    pub fn partition(&self) -> &Partition {
        &self.partition
    }
    /// Account id or unresolved run scope.
    pub fn account(&self) -> &AccountScope {
        &self.account
    }
    /// Region; `None` for a global service.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }
    /// Canonical service name.
    pub fn service(&self) -> &str {
        self.name.service()
    }
    /// Operation or operation group.
    pub fn group(&self) -> &str {
        self.name.group()
    }
    /// The `service:group` part, which selects the key's policy.
    pub fn service_group(&self) -> &ServiceGroup {
        &self.name
    }
}

impl fmt::Display for QuotaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.partition.as_str(),
            self.account,
            self.region.as_deref().unwrap_or(GLOBAL_REGION),
            self.name
        )
    }
}

impl FromStr for QuotaKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        let malformed = || KeyError::Malformed(s.to_owned());
        let mut parts = s.splitn(4, '/');
        let (Some(partition), Some(account), Some(region), Some(name)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed());
        };
        if name.contains('/') {
            return Err(malformed());
        }
        let region = (region != GLOBAL_REGION).then_some(region);
        Self::from_parts(
            Partition::new(partition)?,
            account.parse()?,
            region,
            name.parse()?,
        )
    }
}

macro_rules! string_conversions {
    ($($ty:ty),*) => {$(
        impl TryFrom<String> for $ty {
            type Error = KeyError;
            fn try_from(s: String) -> Result<Self, KeyError> {
                s.parse()
            }
        }
        impl From<$ty> for String {
            fn from(v: $ty) -> String {
                v.to_string()
            }
        }
    )*};
}
string_conversions!(AccountScope, ServiceGroup, QuotaKey);

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl FromStr for Partition {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        Partition::new(s)
    }
}
string_conversions!(Partition);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::mem::discriminant;

    fn acct() -> AccountScope {
        "123456789012".parse().unwrap()
    }

    fn key(region: Option<&str>, service: &str, group: &str) -> Result<QuotaKey, KeyError> {
        QuotaKey::new(&Partition::aws(), &acct(), region, service, group)
    }

    #[test]
    fn canonical_strings() {
        #[rustfmt::skip]
        let cases: &[(Option<&str>, &str, &str, &str)] = &[
            (Some("us-east-1"), "kms", "GetKeyLastUsage", "aws/123456789012/us-east-1/kms:GetKeyLastUsage"),
            (None, "route53", "all-requests", "aws/123456789012/-/route53:all-requests"),
            (Some("us-east-1"), "route53", "all-requests", "aws/123456789012/-/route53:all-requests"),
            (Some("eu-west-1"), "IAM", "ListRoles", "aws/123456789012/-/iam:ListRoles"),
            (Some("eu-west-1"), "elbv2", "all-requests", "aws/123456789012/eu-west-1/elasticloadbalancingv2:all-requests"),
            (Some("eu-west-1"), "Elastic Load Balancing v2", "all-requests", "aws/123456789012/eu-west-1/elasticloadbalancingv2:all-requests"),
            (Some("eu-west-1"), "elb", "all-requests", "aws/123456789012/eu-west-1/elasticloadbalancing:all-requests"),
            (Some("eu-west-1"), "monitoring", "ListMetrics", "aws/123456789012/eu-west-1/cloudwatch:ListMetrics"),
            (Some("eu-west-1"), "resourceexplorer2", "non-search", "aws/123456789012/eu-west-1/resource-explorer-2:non-search"),
            (Some("eu-west-1"), "resource-explorer2", "non-search", "aws/123456789012/eu-west-1/resource-explorer-2:non-search"),
            (Some("eu-west-1"), "cloudwatch", "GetMetricData:recent-datapoints", "aws/123456789012/eu-west-1/cloudwatch:GetMetricData:recent-datapoints"),
            (Some("eu-west-1"), "sts", "GetCallerIdentity", "aws/123456789012/eu-west-1/sts:GetCallerIdentity"),
            (Some("eu-west-1"), "api.sagemaker", "DescribeEndpoint", "aws/123456789012/eu-west-1/sagemaker:DescribeEndpoint"),
            (Some("cn-north-1"), "kms", "ListKeys", "aws/123456789012/cn-north-1/kms:ListKeys"),
        ];
        for &(region, service, group, want) in cases {
            let k = key(region, service, group).unwrap();
            assert_eq!(k.to_string(), want, "{service}:{group} in {region:?}");
            assert_eq!(want.parse::<QuotaKey>().unwrap(), k, "{want}");
        }
    }

    #[test]
    fn unresolved_scope_round_trips() {
        let scope: AccountScope = "unresolved:run-42".parse().unwrap();
        assert!(!scope.is_resolved());
        let k = QuotaKey::new(
            &Partition::aws(),
            &scope,
            Some("us-east-1"),
            "kms",
            "ListKeys",
        )
        .unwrap();
        assert_eq!(
            k.to_string(),
            "aws/unresolved:run-42/us-east-1/kms:ListKeys"
        );
        assert_eq!(k.to_string().parse::<QuotaKey>().unwrap(), k);
    }

    #[test]
    fn refusals() {
        use KeyError as E;
        type Variant = fn(String) -> KeyError;
        let cases: &[(&str, Variant)] = &[
            ("aws/123/us-east-1/kms:ListKeys", E::Account),
            ("aws/unresolved:/us-east-1/kms:ListKeys", E::Account),
            ("aws/unresolved:a_b/us-east-1/kms:ListKeys", E::Account),
            ("AWS/123456789012/us-east-1/kms:ListKeys", E::Partition),
            ("aws/123456789012/US-EAST-1/kms:ListKeys", E::Region),
            ("aws/123456789012/-/kms:ListKeys", E::MissingRegion),
            ("aws/123456789012/us-east-1/kms", E::ServiceGroup),
            ("aws/123456789012/us-east-1/km$:ListKeys", E::Service),
            ("aws/123456789012/us-east-1/kms:", E::Group),
            ("aws/123456789012/us-east-1/kms:List Keys", E::Group),
            ("aws/123456789012/us-east-1/kms:a/b", E::Malformed),
            ("aws/123456789012/kms:ListKeys", E::Malformed),
            ("", E::Malformed),
        ];
        for (input, variant) in cases {
            let err = input.parse::<QuotaKey>().unwrap_err();
            let want = variant(String::new());
            assert_eq!(discriminant(&err), discriminant(&want), "{input}: {err:?}");
        }
    }

    #[test]
    fn for_operation_uses_the_operation_group() {
        let k = QuotaKey::for_operation(
            &Partition::aws(),
            &acct(),
            Some("us-west-2"),
            "lambda",
            "ListFunctions",
        )
        .unwrap();
        assert_eq!(
            k.to_string(),
            "aws/123456789012/us-west-2/lambda:control-plane"
        );
    }

    #[test]
    fn service_group_parses_and_resolves_aliases() {
        let sg: ServiceGroup = "monitoring:GetMetricData:older-datapoints".parse().unwrap();
        assert_eq!(
            (sg.service(), sg.group()),
            ("cloudwatch", "GetMetricData:older-datapoints")
        );
        assert_eq!(sg.to_string(), "cloudwatch:GetMetricData:older-datapoints");
        assert!(matches!(
            "logs".parse::<ServiceGroup>(),
            Err(KeyError::ServiceGroup(_))
        ));
    }

    #[test]
    fn serde_uses_the_canonical_string() {
        let k = key(Some("us-east-1"), "kms", "ListKeys").unwrap();
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(json, "\"aws/123456789012/us-east-1/kms:ListKeys\"");
        assert_eq!(serde_json::from_str::<QuotaKey>(&json).unwrap(), k);
        assert!(serde_json::from_str::<QuotaKey>("\"aws/1/us-east-1/kms:ListKeys\"").is_err());
    }

    /// Partition, account, region, service, group.
    type KeyParts = (String, String, Option<String>, String, String);

    fn arb_key() -> impl Strategy<Value = KeyParts> {
        (
            prop_oneof![
                Just("aws".to_owned()),
                Just("aws-cn".to_owned()),
                "[a-z][a-z0-9-]{0,10}[a-z0-9]"
            ],
            prop_oneof!["[0-9]{12}", "unresolved:[A-Za-z0-9-]{1,20}"],
            proptest::option::of("[a-z]{2}(-[a-z]{2,9})?-[a-z]{3,9}-[0-9]"),
            prop_oneof![
                Just("route53".to_owned()),
                Just("elbv2".to_owned()),
                Just("Monitoring".to_owned()),
                "[a-z][a-z0-9-]{0,15}[a-z0-9]",
            ],
            "[A-Za-z0-9][A-Za-z0-9._:-]{0,30}",
        )
    }

    proptest! {
        #[test]
        fn display_and_from_str_round_trip((p, a, r, s, g) in arb_key()) {
            let built = QuotaKey::new(&p.parse().unwrap(), &a.parse().unwrap(), r.as_deref(), &s, &g);
            // A regional service without a region is refused; everything else builds.
            prop_assume!(built.is_ok() || r.is_some());
            let k = built.unwrap();
            let text = k.to_string();
            prop_assert_eq!(text.parse::<QuotaKey>().unwrap(), k.clone());
            prop_assert_eq!(text.parse::<QuotaKey>().unwrap().to_string(), text);
        }

        #[test]
        fn global_services_ignore_the_region(region in "[a-z]{2}-[a-z]{4,9}-[0-9]", a in "[0-9]{12}") {
            let a: AccountScope = a.parse().unwrap();
            for service in services::GLOBAL_SERVICES {
                let with = QuotaKey::new(&Partition::aws(), &a, Some(&region), service, "X").unwrap();
                let without = QuotaKey::new(&Partition::aws(), &a, None, service, "X").unwrap();
                prop_assert_eq!(with, without);
            }
        }
    }
}
