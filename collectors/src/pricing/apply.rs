//! Prices onto items: a region's transit gateway attachments when their listing is done
//! ([`attachments`]), and every transit gateway once the scan's datasets are in
//! ([`gateways`]).
//!
//! An attachment's `HourlyPrice` is its kind's attachment-hour price in its region (its
//! `ResourceType`, [`RegionPrices::attachment`](super::RegionPrices::attachment)); one
//! that no longer bills (`deleting`, `deleted`, `failed`, `failing`, `rejected`,
//! `rejecting`) is `0`. A gateway's is the sum of its attachments' in the same scan and
//! region: AWS bills a transit gateway by its attachments' hours, not by the gateway.
//! It is `null` with a reason when one of them has no price, when the attachments'
//! listing was not complete, or when the scan did not list attachments at all.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use tollgate_engine::aws::telemetry::Attribution;

use super::{FIELD, REASON_OPERATION};
use crate::dataset::Ec2Type;
use crate::output::{DatasetReport, DatasetStatus, ReasonKind};
use crate::{CollectorRun, Dataset, Item, ReportBuilder};

/// Attachment states that do not bill: not yet accepted, or no longer there.
const NOT_BILLED: [&str; 8] = [
    "initiatingRequest",
    "pendingAcceptance",
    "deleting",
    "deleted",
    "failed",
    "failing",
    "rejected",
    "rejecting",
];

/// Price the attachments `out` holds for `region` (under `--pricing`; nothing without
/// it, or without attachments). The scan's cancellation stops the read and marks the
/// region cancelled.
pub async fn attachments(run: &CollectorRun, region: &str, out: &mut ReportBuilder) {
    let Some(pricing) = run.pricing.as_ref() else {
        return;
    };
    if out.is_empty() {
        return;
    }
    let url = pricing.offer_url(region);
    let mut attribution = Attribution::new(
        run.ctx.scan_id.to_string(),
        run.ctx.collector,
        &run.ctx.datasets,
    );
    if let Some(account) = run.account() {
        attribution = attribution.with_account(account);
    }
    let sink = run.gate.telemetry().clone();
    let at_ms = run.gate.admission().now().as_micros() / 1_000;
    let read = tokio::select! {
        biased;
        _ = run.ctx.cancel.cancelled() => {
            out.cancelled();
            return;
        }
        read = pricing.book.region(&url, region, sink.as_ref(), &attribution, at_ms) => read,
    };
    let prices = match read {
        Ok(prices) => prices,
        Err(e) => {
            set_all(out, Value::Null);
            let kind = match e.is_timeout() {
                true => ReasonKind::Transient,
                false => ReasonKind::Unavailable,
            };
            let code = e.status().map(|s| s.to_string());
            let message = format!("no price list for {region}, prices left null: {e}");
            out.optional_missing(REASON_OPERATION, FIELD, kind, code, message);
            return;
        }
    };
    let mut unpriced: Vec<String> = Vec::new();
    for item in out.items_mut() {
        let Item::Resource(r) = item else { continue };
        let text = |name: &str| r.properties.get(name).and_then(Value::as_str);
        let kind = text("ResourceType").unwrap_or("unknown").to_string();
        let billed = !text("State").is_some_and(|s| NOT_BILLED.contains(&s));
        let price = match billed {
            false => Some(0.0),
            true => prices.attachment(&kind),
        };
        if price.is_none() && !unpriced.contains(&kind) {
            unpriced.push(kind);
        }
        r.properties.insert(FIELD.to_string(), number(price));
    }
    if !unpriced.is_empty() {
        let message = format!(
            "the price list for {region} has no attachment-hour price of a {} attachment \
             ({url}); their HourlyPrice is null",
            unpriced.join(", ")
        );
        out.optional_missing(
            REASON_OPERATION,
            FIELD,
            ReasonKind::Unavailable,
            None,
            message,
        );
    }
}

fn set_all(out: &mut ReportBuilder, value: Value) {
    for item in out.items_mut() {
        if let Item::Resource(r) = item {
            r.properties.insert(FIELD.to_string(), value.clone());
        }
    }
}

fn number(price: Option<f64>) -> Value {
    price
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// After every dataset of a priced scan is in: each transit gateway's `HourlyPrice` is
/// the sum of the attachments billed to its owner, the scan's `account`. AWS bills an
/// attachment's hours to its resource's owner (a VPC attached from another account is
/// that account's bill), so an attachment whose `ResourceOwnerId` is another account is
/// left out of the sum; a gateway another account shares with this one is priced in its
/// owner's scan, `null` here.
pub fn gateways(reports: &mut BTreeMap<Dataset, DatasetReport>, account: Option<&str>) {
    let gateways = Dataset::Ec2(Ec2Type::TransitGateway);
    if !reports.contains_key(&gateways) {
        return;
    }
    let (sums, why_not) = sums(reports, account);
    let Some(report) = reports.remove(&gateways) else {
        return;
    };
    let mut out = ReportBuilder::from_report(report);
    let mut reasons: Vec<String> = Vec::new();
    for item in out.items_mut() {
        let Item::Resource(g) = item else { continue };
        let owner = g.properties.get("OwnerId").and_then(Value::as_str);
        let shared = owner.zip(account).filter(|(o, a)| o != a).map(|(o, _)| o);
        let key = (g.region.clone().unwrap_or_default(), g.id.clone());
        let price = match (shared, &why_not) {
            (Some(owner), _) => Err(format!(
                "a gateway account {owner} shares with this one is priced in its owner's scan"
            )),
            (None, Some(why)) => Err(format!(
                "a gateway's price is its attachments' sum, but {why}"
            )),
            (None, None) => sums.get(&key).copied().unwrap_or(Some(0.0)).ok_or_else(|| {
                "a gateway's price is its attachments' sum, and an attachment of it has no \
                 price (see that dataset's reasons)"
                    .to_string()
            }),
        };
        if let Err(why) = &price {
            if !reasons.contains(why) {
                reasons.push(why.clone());
            }
        }
        g.properties.insert(FIELD.to_string(), number(price.ok()));
    }
    for message in reasons {
        out.optional_missing(
            REASON_OPERATION,
            FIELD,
            ReasonKind::Unavailable,
            None,
            message,
        );
    }
    reports.insert(gateways, out.finish());
}

/// (region, gateway id) → the sum of the prices of the attachments billed to `account`
/// (`None` once one of them has no price); or why there is none.
type Sums = HashMap<(String, String), Option<f64>>;

fn sums(
    reports: &BTreeMap<Dataset, DatasetReport>,
    account: Option<&str>,
) -> (Sums, Option<String>) {
    let name = Ec2Type::TransitGatewayAttachment.resource_type();
    let mut sums: Sums = HashMap::new();
    let report = match reports.get(&Dataset::Ec2(Ec2Type::TransitGatewayAttachment)) {
        None => {
            return (
                sums,
                Some(format!("the scan did not list {name} (add it to --types)")),
            )
        }
        Some(r) if r.status != DatasetStatus::Complete => {
            return (
                sums,
                Some(format!("the listing of {name} is {}", r.status.as_str())),
            )
        }
        Some(r) => r,
    };
    for item in &report.items {
        let Item::Resource(a) = item else { continue };
        let text = |name: &str| a.properties.get(name).and_then(Value::as_str);
        let (Some(region), Some(id)) = (a.region.clone(), text("TransitGatewayId")) else {
            continue;
        };
        let billed_elsewhere = text("ResourceOwnerId")
            .zip(account)
            .is_some_and(|(o, a)| o != a);
        if billed_elsewhere {
            continue;
        }
        let price = a.properties.get(FIELD).and_then(Value::as_f64);
        let sum = sums.entry((region, id.to_string())).or_insert(Some(0.0));
        *sum = sum.zip(price).map(|(s, p)| s + p);
    }
    (sums, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Resource;
    use serde_json::json;

    fn report(items: Vec<Resource>, status: DatasetStatus) -> DatasetReport {
        let mut out = ReportBuilder::new();
        for r in items {
            out.push(Item::Resource(r));
        }
        let mut report = out.finish();
        report.status = status;
        report
    }

    fn gateway(id: &str) -> Resource {
        Resource::new("AWS::EC2::TransitGateway", id.into()).region(Some("us-east-1".into()))
    }

    fn attachment(id: &str, tgw: &str, price: Value) -> Resource {
        Resource::new("AWS::EC2::TransitGatewayAttachment", id.into())
            .region(Some("us-east-1".into()))
            .property("TransitGatewayId", tgw)
            .property(FIELD, price)
    }

    fn price_of(reports: &BTreeMap<Dataset, DatasetReport>, id: &str) -> Value {
        let report = &reports[&Dataset::Ec2(Ec2Type::TransitGateway)];
        report
            .items
            .iter()
            .find_map(|i| match i {
                Item::Resource(r) if r.id == id => Some(r.properties[FIELD].clone()),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn a_gateway_costs_the_sum_of_its_attachments_and_nothing_without_any() {
        let mut reports = BTreeMap::new();
        let listed = vec![gateway("tgw-1"), gateway("tgw-2"), gateway("tgw-3")];
        let attachments = vec![
            attachment("a", "tgw-1", json!(0.05)),
            attachment("b", "tgw-1", json!(0.07)),
            attachment("c", "tgw-2", Value::Null),
            attachment("d", "tgw-2", json!(0.05)),
        ];
        reports.insert(
            Dataset::Ec2(Ec2Type::TransitGateway),
            report(listed, DatasetStatus::Complete),
        );
        reports.insert(
            Dataset::Ec2(Ec2Type::TransitGatewayAttachment),
            report(attachments, DatasetStatus::Complete),
        );
        gateways(&mut reports, None);
        let sum = price_of(&reports, "tgw-1").as_f64().unwrap();
        assert!((sum - 0.12).abs() < 1e-9, "{sum}");
        assert_eq!(price_of(&reports, "tgw-2"), Value::Null);
        assert_eq!(price_of(&reports, "tgw-3"), json!(0.0));
        let report = &reports[&Dataset::Ec2(Ec2Type::TransitGateway)];
        assert_eq!(
            report.status,
            DatasetStatus::Complete,
            "pricing is optional"
        );
        assert_eq!(report.reasons.len(), 1);
        assert_eq!(report.reasons[0].field.as_deref(), Some(FIELD));
    }

    #[test]
    fn without_a_complete_attachment_listing_no_gateway_is_priced() {
        for attachments in [None, Some(DatasetStatus::Partial)] {
            let mut reports = BTreeMap::new();
            reports.insert(
                Dataset::Ec2(Ec2Type::TransitGateway),
                report(vec![gateway("tgw-1")], DatasetStatus::Complete),
            );
            if let Some(status) = attachments {
                let listed = vec![attachment("a", "tgw-1", json!(0.05))];
                reports.insert(
                    Dataset::Ec2(Ec2Type::TransitGatewayAttachment),
                    report(listed, status),
                );
            }
            gateways(&mut reports, None);
            assert_eq!(price_of(&reports, "tgw-1"), Value::Null, "{attachments:?}");
            let reason = &reports[&Dataset::Ec2(Ec2Type::TransitGateway)].reasons[0];
            assert!(
                reason.message.contains("TransitGatewayAttachment"),
                "{reason:?}"
            );
        }
    }

    #[test]
    fn a_gateway_sums_only_what_its_owner_is_billed_and_a_shared_one_is_priced_by_its_owner() {
        let mut reports = BTreeMap::new();
        let own = gateway("tgw-1").property("OwnerId", "111111111111");
        let shared = gateway("tgw-2").property("OwnerId", "222222222222");
        let foreign =
            attachment("b", "tgw-1", json!(0.05)).property("ResourceOwnerId", "333333333333");
        let attachments = vec![
            attachment("a", "tgw-1", json!(0.05)).property("ResourceOwnerId", "111111111111"),
            foreign,
            attachment("c", "tgw-2", json!(0.05)).property("ResourceOwnerId", "111111111111"),
        ];
        reports.insert(
            Dataset::Ec2(Ec2Type::TransitGateway),
            report(vec![own, shared], DatasetStatus::Complete),
        );
        reports.insert(
            Dataset::Ec2(Ec2Type::TransitGatewayAttachment),
            report(attachments, DatasetStatus::Complete),
        );
        gateways(&mut reports, Some("111111111111"));
        assert_eq!(
            price_of(&reports, "tgw-1"),
            json!(0.05),
            "the other account's VPC is its bill"
        );
        assert_eq!(price_of(&reports, "tgw-2"), Value::Null);
        let reasons = &reports[&Dataset::Ec2(Ec2Type::TransitGateway)].reasons;
        assert!(reasons[0].message.contains("222222222222"), "{reasons:?}");
    }
}
