//! What every EC2 item shares: its ARN, owner, tags, and the small conversions from the
//! SDK's answer to CloudFormation-shaped property values.
//!
//! ARNs are written as the Resource Groups Tagging API writes EC2's,
//! `arn:<partition>:ec2:<region>:<owner>:<kind>/<id>` ([`arn`]), so the tagging sweep's
//! tags merge into these items by ARN. That includes AMIs and snapshots (`image/`,
//! `snapshot/`): AWS's IAM reference writes those two without an account (they can be
//! shared, so a policy names them account-free), the tagging API and moto's with the
//! owner's; tollgate writes the owner's (an item says whose it is), and the tagging
//! merge matches either form (`crate::tagging`).

use std::collections::BTreeMap;

use aws_sdk_ec2::types::Tag;
use serde_json::{Map, Value};

use crate::dataset::Ec2Type;
use crate::{CollectorRun, Resource};

/// `arn:<partition>:ec2:<region>:<owner>:<resource>` (`resource`: `volume/vol-1`), the
/// owner being `owner` when the answer names one, else the scan's account.
pub fn arn(run: &CollectorRun, region: &str, owner: Option<&str>, resource: &str) -> String {
    match owner {
        Some(owner) => format!(
            "arn:{}:ec2:{region}:{owner}:{resource}",
            run.gate.partition().as_str()
        ),
        None => run.arn("ec2", region, resource),
    }
}

/// An item of `ty` in `region` identified by `id`, owned by `owner` (else the scan's
/// account).
pub fn resource(
    run: &CollectorRun,
    ty: Ec2Type,
    region: &str,
    id: &str,
    owner: Option<&str>,
) -> Resource {
    Resource::new(ty.resource_type(), id.to_string())
        .account(owner.map(str::to_string).or_else(|| run.account()))
        .region(Some(region.to_string()))
}

/// Whether a snapshot or image owned by `owner` is the scan's account's own: what
/// `OwnerIds=self` / `Owners=self` ask for, checked again on the answer (moto 5.2.1
/// ignores `OwnerIds` and answers its public catalogue too). When either account is
/// unknown, the answer is taken as asked.
pub fn owned(run: &CollectorRun, owner: Option<&str>) -> bool {
    match (owner, run.account()) {
        (Some(owner), Some(account)) => owner == account,
        _ => true,
    }
}

/// An answer's `Tags` as the item's tags.
pub fn tags(tags: &[Tag]) -> BTreeMap<String, String> {
    tags.iter()
        .filter_map(|t| {
            let key = t.key()?;
            Some((key.to_string(), t.value().unwrap_or_default().to_string()))
        })
        .collect()
}

/// A JSON object of `fields`, leaving out the `null` ones (an absent property, as Cloud
/// Control leaves it out).
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    let map: Map<String, Value> = fields
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Value::Object(map)
}

/// A list of strings (`["sg-1", "sg-2"]`), `null` when empty (left out).
pub fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> Value {
    let list: Vec<Value> = values.into_iter().map(Value::from).collect();
    list_or_null(list)
}

/// A list, `null` when empty (left out).
pub fn list_or_null(list: Vec<Value>) -> Value {
    match list.is_empty() {
        true => Value::Null,
        false => Value::Array(list),
    }
}

/// An SDK enum's wire value (`gp3`, `running`), `null` when absent.
pub fn text<T: AsRef<str>>(value: Option<&T>) -> Value {
    value
        .map(|v| Value::from(v.as_ref()))
        .unwrap_or(Value::Null)
}

/// A timestamp as RFC 3339 UTC, `null` when absent.
pub fn time(value: Option<&aws_smithy_types::DateTime>) -> Value {
    value
        .map(|t| Value::from(crate::output::format_date_time(t)))
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_and_lists_leave_absent_values_out() {
        assert_eq!(
            object([("A", json!(1)), ("B", Value::Null), ("C", json!("x"))]),
            json!({"A": 1, "C": "x"})
        );
        assert_eq!(strings(["a", "b"]), json!(["a", "b"]));
        assert_eq!(strings([]), Value::Null);
        let tagged = [
            Tag::builder().key("team").value("core").build(),
            Tag::builder().key("empty").build(),
            Tag::builder().value("no key").build(),
        ];
        let got = tags(&tagged);
        assert_eq!(got.len(), 2);
        assert_eq!(got["team"], "core");
        assert_eq!(got["empty"], "");
    }
}
