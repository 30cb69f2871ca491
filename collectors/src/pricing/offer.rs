//! One region's offer file (`AmazonVPC`, the price list's bulk format) read down to what
//! `--pricing` needs: the hourly on-demand USD price of a transit gateway attachment, per
//! attachment kind.
//!
//! The file is `{"products": {SKU: {"attributes": {..}}}, "terms": {"OnDemand": {SKU:
//! {TERM: {"priceDimensions": {RATE: {"unit": "Hrs", "pricePerUnit": {"USD": "0.05"}}}}}}}}`
//! (plus `version` and `publicationDate`). An attachment's hourly product is the one
//! seed 000 reads: attribute `group` `AWSTransitGateway`, `usagetype` ending in
//! `TransitGateway-Hours` (`USE1-TransitGateway-Hours`), `regionCode` the region when
//! present, and `attachmentType` naming the kind (`VPC`, `VPN`, `Peering`, `Connect`,
//! `Direct Connect Gateway`), whose first dimension priced in hours (`Hrs`) gives the
//! price. The data-processing products (`TransitGateway-Bytes`, per GB) and the offer's
//! other products are skipped.
//!
//! Only the fields read are deserialised (serde skips the rest without building it), so
//! a regional offer of a few megabytes parses in one pass.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

/// The hourly prices of one region's transit gateway attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionPrices {
    /// Attachment kind ([`kind_key`] of the offer's `attachmentType`) → USD per hour.
    pub hourly: BTreeMap<String, f64>,
    /// The offer's `version` (`20261201000000`), when it names one.
    pub version: Option<String>,
    /// The offer's `publicationDate`, when it names one.
    pub publication_date: Option<String>,
}

impl RegionPrices {
    /// The hourly price of an attachment whose EC2 `ResourceType` is `resource_type`
    /// (`vpc`, `vpn`, `direct-connect-gateway`, `connect`, `peering`, `tgw-peering`,
    /// `network-function`), when the offer has one.
    pub fn attachment(&self, resource_type: &str) -> Option<f64> {
        let key = match resource_type {
            // EC2 names a peering attachment either way; the offer has one kind.
            "tgw-peering" => "peering".to_string(),
            other => kind_key(other),
        };
        self.hourly.get(&key).copied()
    }
}

/// An offer's or EC2's name of an attachment kind, compared as lower case with spaces as
/// dashes: the offer's `Direct Connect Gateway` is EC2's `direct-connect-gateway`.
pub fn kind_key(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(' ', "-")
}

/// Why an offer file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the price list's answer is not an offer file: {0}")]
pub struct OfferError(pub String);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Offer {
    version: Option<String>,
    publication_date: Option<String>,
    /// By SKU, sorted: when two products price one kind, the first SKU's wins, the same
    /// one on every read.
    #[serde(default)]
    products: BTreeMap<String, Product>,
    #[serde(default)]
    terms: Terms,
}

#[derive(Deserialize)]
struct Product {
    #[serde(default)]
    attributes: HashMap<String, String>,
}

#[derive(Deserialize, Default)]
struct Terms {
    #[serde(rename = "OnDemand", default)]
    on_demand: HashMap<String, BTreeMap<String, Term>>,
}

#[derive(Deserialize)]
struct Term {
    #[serde(rename = "priceDimensions", default)]
    price_dimensions: BTreeMap<String, Dimension>,
}

#[derive(Deserialize)]
struct Dimension {
    #[serde(default)]
    unit: String,
    #[serde(rename = "pricePerUnit", default)]
    price_per_unit: HashMap<String, String>,
}

/// Read the attachment prices of `region` out of an offer file's bytes.
pub fn parse(bytes: &[u8], region: &str) -> Result<RegionPrices, OfferError> {
    let offer: Offer = serde_json::from_slice(bytes).map_err(|e| OfferError(e.to_string()))?;
    let mut hourly = BTreeMap::new();
    for (sku, product) in &offer.products {
        let Some(kind) = attachment_hours(&product.attributes, region) else {
            continue;
        };
        if let Some(price) = hourly_price(offer.terms.on_demand.get(sku)) {
            hourly.entry(kind_key(kind)).or_insert(price);
        }
    }
    Ok(RegionPrices {
        hourly,
        version: offer.version,
        publication_date: offer.publication_date,
    })
}

/// The attachment kind of an attachment-hours product of `region`, `None` for any other
/// product.
fn attachment_hours<'a>(attributes: &'a HashMap<String, String>, region: &str) -> Option<&'a str> {
    let attribute = |name: &str| attributes.get(name).map(String::as_str);
    let hours = attribute("usagetype").is_some_and(|u| u.ends_with("TransitGateway-Hours"));
    let ours = attribute("regionCode").is_none_or(|r| r == region);
    match (attribute("group"), hours && ours) {
        (Some("AWSTransitGateway"), true) => attribute("attachmentType"),
        _ => None,
    }
}

/// The USD price of the first dimension (by term and rate code) priced per hour, when it
/// is a number ≥ 0.
fn hourly_price(terms: Option<&BTreeMap<String, Term>>) -> Option<f64> {
    let dimensions = terms?.values().flat_map(|t| t.price_dimensions.values());
    dimensions
        .filter(|d| {
            matches!(
                d.unit.to_ascii_lowercase().as_str(),
                "hrs" | "hour" | "hours"
            )
        })
        .filter_map(|d| d.price_per_unit.get("USD")?.trim().parse::<f64>().ok())
        .find(|p| p.is_finite() && *p >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn product(sku: &str, usagetype: &str, kind: &str, region: &str) -> serde_json::Value {
        json!({"sku": sku, "productFamily": "Transit Gateway", "attributes": {
            "group": "AWSTransitGateway", "usagetype": usagetype, "attachmentType": kind,
            "regionCode": region, "operation": format!("TransitGateway{kind}")}})
    }

    fn term(sku: &str, unit: &str, usd: &str) -> serde_json::Value {
        json!({format!("{sku}.JRTCKXETXF"): {"priceDimensions": {
            format!("{sku}.JRTCKXETXF.6YS6EN2CT7"): {"unit": unit, "pricePerUnit": {"USD": usd}}}}})
    }

    #[test]
    fn an_offer_gives_each_attachment_kind_its_hourly_price_and_skips_the_rest() {
        let offer = json!({
            "version": "20261201000000",
            "publicationDate": "2026-12-01T00:00:00Z",
            "products": {
                "A": product("A", "USE1-TransitGateway-Hours", "VPC", "us-east-1"),
                "B": product("B", "USE1-TransitGateway-Hours", "Direct Connect Gateway", "us-east-1"),
                "C": product("C", "USE1-TransitGateway-Bytes", "VPN", "us-east-1"),
                "D": product("D", "EU-TransitGateway-Hours", "VPN", "eu-west-1"),
                "E": {"attributes": {"usagetype": "USE1-VpcEndpoint-Hours", "group": "VpcEndpoint"}},
            },
            "terms": {"OnDemand": {
                "A": term("A", "Hrs", "0.0500000000"),
                "B": term("B", "Hrs", "0.07"),
                "C": term("C", "GB", "0.02"),
                "D": term("D", "Hrs", "0.06"),
                "E": term("E", "Hrs", "0.01"),
            }},
        });
        let prices = parse(offer.to_string().as_bytes(), "us-east-1").unwrap();
        assert_eq!(prices.attachment("vpc"), Some(0.05));
        assert_eq!(prices.attachment("direct-connect-gateway"), Some(0.07));
        assert_eq!(
            prices.attachment("vpn"),
            None,
            "bytes, and another region's"
        );
        assert_eq!(prices.hourly.len(), 2);
        assert_eq!(prices.version.as_deref(), Some("20261201000000"));
    }

    #[test]
    fn peering_attachments_under_either_name_take_the_peering_price() {
        let offer = json!({
            "products": {"P": product("P", "USW2-TransitGateway-Hours", "Peering", "us-west-2")},
            "terms": {"OnDemand": {"P": term("P", "Hrs", "0.05")}},
        });
        let prices = parse(offer.to_string().as_bytes(), "us-west-2").unwrap();
        assert_eq!(prices.attachment("peering"), Some(0.05));
        assert_eq!(prices.attachment("tgw-peering"), Some(0.05));
    }

    #[test]
    fn a_price_that_is_not_a_non_negative_number_is_no_price() {
        for usd in ["", "free", "-1", "NaN"] {
            let offer = json!({
                "products": {"A": product("A", "USE1-TransitGateway-Hours", "VPC", "us-east-1")},
                "terms": {"OnDemand": {"A": term("A", "Hrs", usd)}},
            });
            let prices = parse(offer.to_string().as_bytes(), "us-east-1").unwrap();
            assert_eq!(prices.attachment("vpc"), None, "{usd:?}");
        }
    }

    #[test]
    fn an_answer_that_is_not_an_offer_is_an_error_not_a_panic() {
        for body in [
            &b"<html>503</html>"[..],
            b"",
            b"{\"products\": 3}",
            b"\xff\xfe",
        ] {
            let e = parse(body, "us-east-1").unwrap_err();
            assert!(e.to_string().contains("not an offer file"), "{e}");
        }
    }
}
