//! `Resource`: the fields every item of every dataset carries, whichever collector
//! produced it (a native one, the Cloud Control sweep, the tagging sweep).
//!
//! `resource_type` is the CloudFormation type name (`AWS::EC2::Instance`), or a name in
//! the same style for a type CloudFormation does not have (`AWS::EC2::Snapshot`); `id` is
//! the CloudFormation primary identifier, a composite one joined by `|` as Cloud Control
//! writes it; `properties` use the CloudFormation schema's property names, so an item
//! keeps its shape when its type changes collectors. `region` is the resource's region,
//! [`GLOBAL`] for a global type, `null` when it could not be read. `tags` is `{}` when
//! the resource has none (or, without the tagging sweep, when none were read).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `region` of a global type's items (IAM, CloudFront, Route 53, S3's listing).
pub const GLOBAL: &str = "global";

/// `coverage` of an item only the tagging sweep saw.
pub const TAGS_ONLY: &str = "tags-only";

/// The common fields of an item.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Resource {
    /// CloudFormation type name (`AWS::S3::Bucket`).
    pub resource_type: String,
    /// CloudFormation primary identifier (parts joined by `|`).
    pub id: String,
    /// The resource's ARN, where the type has one.
    pub arn: Option<String>,
    /// The owning account; `null` when the caller's identity was not resolved.
    pub account: Option<String>,
    /// The resource's region, `global` for a global type, `null` when unknown.
    pub region: Option<String>,
    /// Tags by key (`{}` when none).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Properties by CloudFormation property name.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// `tags-only` for an item only the tagging sweep saw; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<String>,
}

impl Resource {
    /// A resource of `resource_type` identified by `id`, with nothing else known yet.
    pub fn new(resource_type: &str, id: String) -> Self {
        Resource {
            resource_type: resource_type.to_string(),
            id,
            ..Resource::default()
        }
    }

    /// With its ARN.
    pub fn arn(mut self, arn: Option<String>) -> Self {
        self.arn = arn;
        self
    }

    /// With its account.
    pub fn account(mut self, account: Option<String>) -> Self {
        self.account = account;
        self
    }

    /// With its region (`None`: unknown).
    pub fn region(mut self, region: Option<String>) -> Self {
        self.region = region;
        self
    }

    /// With one property, skipped when `value` is `null` (an absent property, as Cloud
    /// Control leaves it out).
    pub fn property(mut self, name: &str, value: impl Into<Value>) -> Self {
        let value = value.into();
        if !value.is_null() {
            self.properties.insert(name.to_string(), value);
        }
        self
    }

    /// With its tags.
    pub fn tags(mut self, tags: BTreeMap<String, String>) -> Self {
        self.tags = tags;
        self
    }

    /// Whether only the tagging sweep saw it.
    pub fn is_tags_only(&self) -> bool {
        self.coverage.as_deref() == Some(TAGS_ONLY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_serialises_every_common_field_with_empty_tags_as_an_object() {
        let r = Resource::new("AWS::KMS::Key", "k-1".into())
            .region(Some("eu-west-1".into()))
            .property("KeyId", "k-1")
            .property("Description", Value::Null);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "resource_type": "AWS::KMS::Key",
                "id": "k-1",
                "arn": null,
                "account": null,
                "region": "eu-west-1",
                "tags": {},
                "properties": {"KeyId": "k-1"},
            })
        );
        assert_eq!(serde_json::from_value::<Resource>(json).unwrap(), r);
    }
}
