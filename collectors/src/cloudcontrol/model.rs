//! A Cloud Control resource description as an item of the resource model: `id` is Cloud
//! Control's identifier (a composite primary identifier's parts joined by `|`, as Cloud
//! Control writes it), `properties` the resource model it returned (CloudFormation
//! property names), `arn` the model's `Arn` property (or another `...Arn` property
//! naming the type, or the identifier when it is an ARN), `tags` the schema's tag
//! property (a list of `{Key, Value}`, or a map), moved out of `properties`.
//!
//! Listings and `GetResource` (`--details`) build items the same way, so an item read in
//! full has the shape of one listed in full.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::schemas::CcType;
use crate::CollectorRun;

/// One item from Cloud Control's identifier and resource model.
pub(super) fn item(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    id: &str,
    mut properties: Map<String, Value>,
) -> crate::Resource {
    let arn = arn_of(ty, id, &properties);
    let tags = ty
        .tags
        .as_deref()
        .and_then(|p| properties.get(p))
        .map(tags_of)
        .unwrap_or_default();
    // The tags are the item's `tags`; the model's copy would say the same twice.
    if let Some(p) = ty.tags.as_deref() {
        properties.remove(p);
    }
    let mut resource = run
        .resource(&ty.type_name, id, Some(region))
        .arn(arn)
        .tags(tags);
    resource.properties = properties;
    resource
}

/// The resource model in a description's `Properties` (a JSON object as text); `{}`
/// when absent or not an object.
pub(super) fn properties_of(text: Option<&str>) -> Map<String, Value> {
    text.and_then(|p| serde_json::from_str::<Map<String, Value>>(p).ok())
        .unwrap_or_default()
}

/// Whether a listed item carries nothing beyond its primary identifier (many list
/// handlers return only that): what `--details` reads in full.
pub(super) fn is_identifiers_only(ty: &CcType, resource: &crate::Resource) -> bool {
    resource.tags.is_empty()
        && resource
            .properties
            .keys()
            .all(|k| ty.identifier.iter().any(|i| i == k))
}

/// The model's `Arn`, else a `<Type>Arn` property (`TopicArn` of `AWS::SNS::Topic`),
/// else the identifier when it is an ARN.
pub(super) fn arn_of(ty: &CcType, id: &str, properties: &Map<String, Value>) -> Option<String> {
    let text = |name: &str| {
        properties
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let short = ty.type_name.rsplit("::").next().unwrap_or_default();
    text("Arn")
        .or_else(|| text(&format!("{short}Arn")))
        .or_else(|| id.starts_with("arn:").then(|| id.to_string()))
}

/// Tags as CloudFormation writes them: `[{"Key": k, "Value": v}]`, or a `{k: v}` map.
pub(super) fn tags_of(value: &Value) -> BTreeMap<String, String> {
    match value {
        Value::Array(list) => list
            .iter()
            .filter_map(|t| {
                let key = t.get("Key")?.as_str()?;
                let value = t.get("Value").and_then(Value::as_str).unwrap_or_default();
                Some((key.to_string(), value.to_string()))
            })
            .collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
        _ => BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;
    use serde_json::json;

    #[test]
    fn tags_read_from_a_list_or_a_map() {
        let list = json!([{"Key": "team", "Value": "core"}, {"Key": "empty"}]);
        let got = tags_of(&list);
        assert_eq!(got["team"], "core");
        assert_eq!(got["empty"], "");
        let map = json!({"env": "prod"});
        assert_eq!(tags_of(&map)["env"], "prod");
        assert!(tags_of(&json!("nope")).is_empty());
    }

    #[test]
    fn the_arn_comes_from_arn_then_the_types_own_arn_property_then_the_identifier() {
        let (_, topic) = find("AWS::SNS::Topic").unwrap();
        let props = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            arn_of(
                topic,
                "x",
                &props(json!({"TopicArn": "arn:aws:sns:us-east-1:1:t"}))
            ),
            Some("arn:aws:sns:us-east-1:1:t".to_string())
        );
        assert_eq!(
            arn_of(
                topic,
                "x",
                &props(json!({"Arn": "arn:a", "TopicArn": "arn:b"}))
            ),
            Some("arn:a".to_string())
        );
        assert_eq!(
            arn_of(topic, "arn:aws:sns:us-east-1:1:t", &Map::new()),
            Some("arn:aws:sns:us-east-1:1:t".to_string())
        );
        assert_eq!(arn_of(topic, "t", &Map::new()), None);
    }

    #[test]
    fn an_item_is_identifiers_only_when_its_properties_are_its_primary_identifier_at_most() {
        let (_, queue) = find("AWS::SQS::Queue").unwrap();
        let with = |v: Value| {
            let mut r = crate::Resource::new("AWS::SQS::Queue", "u".into());
            r.properties = v.as_object().unwrap().clone();
            r
        };
        assert!(is_identifiers_only(queue, &with(json!({}))));
        assert!(is_identifiers_only(queue, &with(json!({"QueueUrl": "u"}))));
        assert!(!is_identifiers_only(
            queue,
            &with(json!({"QueueUrl": "u", "QueueName": "q"}))
        ));
        let mut tagged = with(json!({"QueueUrl": "u"}));
        tagged.tags.insert("team".into(), "core".into());
        assert!(!is_identifiers_only(queue, &tagged), "tags were listed");
        assert_eq!(properties_of(Some(r#"{"A":1}"#))["A"], 1);
        assert!(properties_of(Some("[1]")).is_empty());
        assert!(properties_of(None).is_empty());
    }
}
