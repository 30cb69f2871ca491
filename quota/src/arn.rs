//! Amazon Resource Names: `arn:<partition>:<service>:<region>:<account>:<resource>`.
//!
//! Why one type? The engine reads ARNs (the caller's identity, a role to assume) and the
//! simulator reads them (the role an `AssumeRole` names); each had its own splitter, and
//! they disagreed on what they accepted. [`Arn`] parses once into checked parts, and
//! `Display` writes back exactly what was parsed (a property test holds it to that).
//!
//! What is checked: the `arn` prefix and six fields; the partition and service are
//! lowercase labels (`aws-us-gov`, `execute-api`); the region is empty or a label; the
//! account is empty (S3 buckets) or 12 digits; the resource is not empty and may hold
//! `:` and `/` (`function:name:alias`, `role/path/name`). Pure: no I/O.

use std::fmt;
use std::str::FromStr;

use crate::key::{is_label, AccountId, Partition};

/// An ARN, split into its checked parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Arn {
    partition: Partition,
    service: String,
    region: Option<String>,
    account: Option<AccountId>,
    resource: String,
}

/// Why a text is not an ARN. Every message names the text and the part at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArnError {
    /// Not `arn:` and five more `:`-separated fields.
    #[error("{0:?} is not an ARN: expected arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE")]
    Shape(String),
    #[error("{arn:?}: partition {part:?} is not a partition name (like `aws`, `aws-cn`)")]
    Partition { arn: String, part: String },
    #[error("{arn:?}: service {part:?} is not a service name (like `iam`, `sts`)")]
    Service { arn: String, part: String },
    #[error("{arn:?}: region {part:?} is neither empty nor a region name (like `eu-west-1`)")]
    Region { arn: String, part: String },
    #[error("{arn:?}: account {part:?} is neither empty nor a 12-digit account id")]
    Account { arn: String, part: String },
    #[error("{0:?}: the resource is empty")]
    EmptyResource(String),
}

impl Arn {
    /// The partition (`aws`).
    pub fn partition(&self) -> &Partition {
        &self.partition
    }
    /// The service namespace (`iam`).
    pub fn service(&self) -> &str {
        &self.service
    }
    /// The region; `None` for global resources (IAM, S3 buckets).
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }
    /// The account; `None` where the ARN has none (S3 buckets).
    pub fn account(&self) -> Option<&AccountId> {
        self.account.as_ref()
    }
    /// The resource, everything after the fifth `:` (`role/path/name`).
    pub fn resource(&self) -> &str {
        &self.resource
    }
}

impl FromStr for Arn {
    type Err = ArnError;

    fn from_str(text: &str) -> Result<Arn, ArnError> {
        let mut parts = text.splitn(6, ':');
        let (
            Some("arn"),
            Some(partition),
            Some(service),
            Some(region),
            Some(account),
            Some(resource),
        ) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        )
        else {
            return Err(ArnError::Shape(text.to_string()));
        };
        let part = |p: &str| (text.to_string(), p.to_string());
        let partition = Partition::new(partition).map_err(|_| {
            let (arn, part) = part(partition);
            ArnError::Partition { arn, part }
        })?;
        if !is_label(service) {
            let (arn, part) = part(service);
            return Err(ArnError::Service { arn, part });
        }
        if !region.is_empty() && !is_label(region) {
            let (arn, part) = part(region);
            return Err(ArnError::Region { arn, part });
        }
        let account = match account {
            "" => None,
            id => Some(AccountId::new(id).map_err(|_| {
                let (arn, part) = part(id);
                ArnError::Account { arn, part }
            })?),
        };
        if resource.is_empty() {
            return Err(ArnError::EmptyResource(text.to_string()));
        }
        Ok(Arn {
            partition,
            service: service.to_string(),
            region: (!region.is_empty()).then(|| region.to_string()),
            account,
            resource: resource.to_string(),
        })
    }
}

impl fmt::Display for Arn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "arn:{}:{}:{}:{}:{}",
            self.partition.as_str(),
            self.service,
            self.region.as_deref().unwrap_or(""),
            self.account.as_ref().map_or("", AccountId::as_str),
            self.resource
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_parts_of_common_arns() {
        let role: Arn = "arn:aws-cn:iam::123456789012:role/path/to/Scanner"
            .parse()
            .unwrap();
        assert_eq!(role.partition().as_str(), "aws-cn");
        assert_eq!(role.service(), "iam");
        assert_eq!(role.region(), None);
        assert_eq!(role.account().map(AccountId::as_str), Some("123456789012"));
        assert_eq!(role.resource(), "role/path/to/Scanner");
        let alias: Arn = "arn:aws:lambda:eu-west-1:123456789012:function:f:live"
            .parse()
            .unwrap();
        assert_eq!(alias.region(), Some("eu-west-1"));
        assert_eq!(alias.resource(), "function:f:live");
        let bucket: Arn = "arn:aws:s3:::my-bucket".parse().unwrap();
        assert_eq!(bucket.account(), None);
    }

    #[test]
    fn a_malformed_arn_is_refused_naming_the_part() {
        let cases = [
            ("not-an-arn", "is not an ARN"),
            ("arn:aws:iam::123456789012", "is not an ARN"),
            ("arn:AWS:iam::123456789012:role/r", "partition \"AWS\""),
            ("arn:aws::us-east-1:123456789012:x", "service \"\""),
            ("arn:aws:ec2:US:123456789012:x", "region \"US\""),
            ("arn:aws:iam::12345:user/short", "account \"12345\""),
            ("arn:aws:iam::123456789012:", "the resource is empty"),
        ];
        for (text, says) in cases {
            let e = text.parse::<Arn>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    fn label() -> impl Strategy<Value = String> {
        "[a-z]([a-z0-9-]{0,10}[a-z0-9])?"
    }

    proptest! {
        #[test]
        fn display_writes_back_what_was_parsed(
            partition in label(),
            service in label(),
            region in prop_oneof![Just(String::new()), label()],
            account in prop_oneof![Just(String::new()), "[0-9]{12}"],
            resource in "[a-zA-Z0-9:/_+=,.@-]{1,40}",
        ) {
            let text = format!("arn:{partition}:{service}:{region}:{account}:{resource}");
            let arn: Arn = text.parse().unwrap();
            prop_assert_eq!(arn.to_string(), text.clone());
            prop_assert_eq!(arn.to_string().parse::<Arn>().unwrap(), arn);
        }

        #[test]
        fn any_text_that_parses_displays_as_itself(text in "arn:[a-z0-9:-]{0,30}") {
            if let Ok(arn) = text.parse::<Arn>() {
                prop_assert_eq!(arn.to_string(), text);
            }
        }
    }
}
