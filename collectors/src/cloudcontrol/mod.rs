//! The Cloud Control sweep: any CloudFormation type Cloud Control can list, through
//! `ListResources` (pages of 25, `NextToken` to the end), every call charged to Cloud
//! Control's own key **and** to the operations the type's handler performs (issue 33).
//!
//! Why charge the underlying operations? AWS executes a Cloud Control call as calls to
//! the underlying service with the caller's credentials ("Cloud Control API must make
//! calls to the underlying AWS services"), so a sweep of `AWS::IAM::Role` spends
//! `iam:ListRoles`, the quota every other IAM reader of the account shares. Each page is
//! therefore admitted on `cloudcontrol:ListResources` and one token of each operation in
//! the type's `handlers.list.permissions` ([`schemas`]) at one instant
//! ([`AwsGate::call_with_underlying`](tollgate_engine::aws::AwsGate::call_with_underlying)).
//! [`Charges::OwnKeyOnly`] turns that off, to measure what it prevents.
//!
//! Items use the model every collector fills: `id` is Cloud Control's identifier (a
//! composite primary identifier's parts joined by `|`, as Cloud Control writes it),
//! `properties` the resource model it returned (CloudFormation property names), `arn`
//! the model's `Arn` property (or another `...Arn` property naming the type, or the
//! identifier when it is an ARN), `tags` the schema's tag property (a list of
//! `{Key, Value}`, or a map). A global type (IAM, CloudFront, Route 53) is listed once
//! per account, in the scan's first region, its items in region `global`: Cloud Control
//! answers it in every region.
//!
//! Coverage, per type and region: `complete`; `unsupported` for
//! `UnsupportedActionException`, `TypeNotFoundException` or an endpoint without the API
//! (including one that answers 5xx with no mark of an AWS service, which the gate does
//! not retry: moto answers every service it lacks so);
//! `denied` for access denied; both with their reason and never a failed scan (the
//! dataset stays `complete`). `GeneralServiceException` is read by its message: a
//! throttle (`partial`, the listing's prefix kept), a missing service or resource
//! (`unsupported`), anything else `failed`. Types whose listing needs a parent's
//! identifiers (`schemas::CcType::parent`) are not in the catalog yet.

pub mod schemas;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::operation;
use crate::output::{Coverage, CoverageStatus, DatasetReport, Item};
use crate::resource::GLOBAL;
use crate::{CollectorRun, Operation, ReportBuilder, ServiceClient};
use schemas::CcType;
use tollgate_engine::aws::{CallError, CallErrorKind};

pub use schemas::{find, table};

/// Cloud Control's listing.
pub const LIST_RESOURCES: Operation = operation!("cloudcontrol", "ListResources");

/// The telemetry collector of every sweep call (`Dataset::collector` of its datasets).
pub const COLLECTOR: &str = "cloudcontrol";

/// What a Cloud Control call is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Charges {
    /// Cloud Control's own key and one token of each underlying operation (the default).
    #[default]
    Underlying,
    /// Cloud Control's own key alone: what every other tool does. A diagnostic control
    /// (`TOLLGATE_CLOUDCONTROL_CHARGES=own-key`), to show what the underlying charge
    /// prevents.
    OwnKeyOnly,
}

impl Charges {
    /// From `TOLLGATE_CLOUDCONTROL_CHARGES` (`own-key`; anything else, or unset, is the
    /// default).
    pub fn from_env() -> Charges {
        match std::env::var("TOLLGATE_CLOUDCONTROL_CHARGES").as_deref() {
            Ok("own-key") => Charges::OwnKeyOnly,
            _ => Charges::Underlying,
        }
    }
}

/// Collect `ty` over the scan's regions (once, in the first, for a global type).
pub async fn collect(run: &CollectorRun, ty: &'static CcType) -> DatasetReport {
    if !ty.global {
        return run
            .per_region(&ty.type_name, |run, region| collect_region(run, ty, region))
            .await;
    }
    let mut out = collect_region(run, ty, run.home_region()).await;
    if run.is_cancelled() {
        out.cancelled();
    }
    if !out.has_coverage() {
        let account = run.account();
        let entry = out.coverage_entry(&ty.type_name, account.as_deref(), GLOBAL, out.len() as u64);
        out.covered(entry);
    }
    out.finish()
}

async fn collect_region(run: &CollectorRun, ty: &'static CcType, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_cloudcontrol::Client>(region);
    let underlying: &[(String, String)] = match run.cloudcontrol {
        Charges::Underlying => &ty.list,
        Charges::OwnKeyOnly => &[],
    };
    let item_region = if ty.global { GLOBAL } else { region };
    let mut token: Option<String> = None;
    loop {
        let page = run
            .gate
            .call_with_underlying(
                &run.ctx,
                (LIST_RESOURCES.service(), LIST_RESOURCES.name()),
                Some(region),
                underlying,
                |http| {
                    client
                        .list_resources()
                        .type_name(&ty.type_name)
                        .set_next_token(token.clone())
                        .customize()
                        .config_override(aws_sdk_cloudcontrol::Client::gated(http))
                        .send()
                },
            )
            .await;
        run.progress.done(1);
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                failed(run, ty, item_region, &mut out, &e);
                break;
            }
        };
        let found = page.resource_descriptions();
        run.progress.listed_more(found.len());
        for description in found {
            let Some(id) = description.identifier() else {
                continue;
            };
            let properties = description
                .properties()
                .and_then(|p| serde_json::from_str::<Map<String, Value>>(p).ok())
                .unwrap_or_default();
            out.push(Item::Resource(item(run, ty, item_region, id, properties)));
        }
        run.progress.items_more(found.len());
        token = page
            .next_token()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() || run.is_cancelled() {
            break;
        }
    }
    out
}

/// One item from Cloud Control's identifier and resource model.
fn item(
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

/// The model's `Arn`, else a `<Type>Arn` property (`TopicArn` of `AWS::SNS::Topic`),
/// else the identifier when it is an ARN.
fn arn_of(ty: &CcType, id: &str, properties: &Map<String, Value>) -> Option<String> {
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
fn tags_of(value: &Value) -> BTreeMap<String, String> {
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

/// How a failed `ListResources` leaves the type's coverage in `region`.
pub fn failure_status(error: &CallError) -> CoverageStatus {
    let code = error.code().unwrap_or_default();
    let message = error.message().to_ascii_lowercase();
    match (error.kind(), code) {
        (CallErrorKind::Cancelled, _) => CoverageStatus::Cancelled,
        (_, "UnsupportedActionException" | "TypeNotFoundException") => CoverageStatus::Unsupported,
        (CallErrorKind::Fatal, c) if crate::report_builder::is_access_denied(c) => {
            CoverageStatus::Denied
        }
        // A fatal 5xx: the gate found no AWS service behind the answer (an emulator
        // without Cloud Control, such as moto); AWS's own 5xx are transient.
        (CallErrorKind::Fatal, "") if error.status().is_some_and(|s| s >= 500) => {
            CoverageStatus::Unsupported
        }
        (_, "GeneralServiceException") if is_throttle_message(&message) => CoverageStatus::Partial,
        (_, "GeneralServiceException")
            if [
                "not found",
                "does not exist",
                "not supported",
                "not available",
            ]
            .iter()
            .any(|m| message.contains(m)) =>
        {
            CoverageStatus::Unsupported
        }
        _ => match crate::tagging::failure_coverage(error) {
            CoverageStatus::Unsupported => CoverageStatus::Unsupported,
            _ => CoverageStatus::Failed,
        },
    }
}

fn is_throttle_message(message: &str) -> bool {
    message.contains("throttl") || message.contains("rate exceeded")
}

/// Record a failed listing: unsupported and denied types are coverage entries with
/// their reason, the dataset untouched; the rest fail (or degrade) it as any listing.
fn failed(
    run: &CollectorRun,
    ty: &CcType,
    region: &str,
    out: &mut ReportBuilder,
    error: &CallError,
) {
    let status = failure_status(error);
    let reason = format!("{LIST_RESOURCES}: {}", error.message());
    match status {
        CoverageStatus::Unsupported | CoverageStatus::Denied => {
            out.value_missing(LIST_RESOURCES, "items", error);
        }
        CoverageStatus::Partial => out.enrichment_missing(LIST_RESOURCES, "items", error),
        _ => {
            out.listing_failed(LIST_RESOURCES, error);
            return;
        }
    }
    out.covered(Coverage {
        resource_type: ty.type_name.clone(),
        account: run.account(),
        region: region.to_string(),
        status,
        reason: Some(reason),
        count: out.len() as u64,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(kind: CallErrorKind, code: &str, message: &str) -> CallError {
        let code = (!code.is_empty()).then(|| code.to_string());
        let status = if code.is_none() { 500 } else { 400 };
        CallError::in_answer(kind, "ListResources", code, message).with_status(status)
    }

    #[test]
    fn each_failure_leaves_the_coverage_its_class_says() {
        use CallErrorKind::{Cancelled, Fatal, Throttled};
        use CoverageStatus::*;
        let cases = [
            (Fatal, "UnsupportedActionException", "no LIST", Unsupported),
            (Fatal, "TypeNotFoundException", "no such type", Unsupported),
            (Fatal, "AccessDeniedException", "not authorized", Denied),
            (
                Fatal,
                "GeneralServiceException",
                "Rate exceeded (Service: Iam)",
                Partial,
            ),
            (
                Fatal,
                "GeneralServiceException",
                "The resource does not exist",
                Unsupported,
            ),
            (Fatal, "GeneralServiceException", "something else", Failed),
            (Throttled, "ThrottlingException", "Rate exceeded", Failed),
            (Fatal, "", "does not serve Cloud Control", Unsupported),
            (Cancelled, "", "cancelled", CoverageStatus::Cancelled),
        ];
        for (kind, code, message, want) in cases {
            assert_eq!(
                failure_status(&error(kind, code, message)),
                want,
                "{code}: {message}"
            );
        }
    }

    #[test]
    fn the_collector_name_is_the_datasets() {
        let role: crate::Dataset = "AWS::IAM::Role".parse().unwrap();
        assert_eq!(role.collector(), COLLECTOR);
    }

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
}
