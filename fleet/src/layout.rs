//! The item layout: one DynamoDB item per canonical quota key, attribute by attribute.
//! This is the one place it is written down in code (docs/fleet.md repeats it).
//!
//! | attribute           | type | meaning                                                    |
//! |---------------------|------|------------------------------------------------------------|
//! | `key`               | S    | partition key: the canonical quota key                     |
//! | `version`           | N    | incremented by every write; the conditional write checks it|
//! | `tat_us`            | N    | GCRA theoretical arrival time (µs since the Unix epoch): the due instant of the last token handed out; never moves back |
//! | `rate`, `burst`     | N    | the last writer's policy                                   |
//! | `factor`            | N    | fleet penalty factor on the rate (1/32 ..= 1)              |
//! | `cooldown_until_us` | N    | no change to `factor` before this instant                  |
//! | `ceiling`           | N    | the factor at the last throttle (learned ceiling)          |
//! | `retry_units`       | N    | shared retry units not yet handed out                      |
//! | `retry_capacity`    | N    | the last writer's retry capacity                           |
//! | `hosts`             | M    | host id → N: the host's last write (µs, its own clock)     |
//! | `ttl`               | N    | epoch seconds, latest of `tat_us` and the hosts' writes + 1 day: DynamoDB's TTL drops idle keys |
//!
//! A key some host declared a schedule or an allowance for also carries its calendar
//! (issue 23): the attributes in `calendar_layout.rs`, absent on every other item.
//!
//! Blocks are not on the item: a grant's tokens are due after the previous `tat_us`, so the
//! item needs no record of who holds what (see `tollgate_quota::fleet`).
//!
//! Numbers are written with Rust's shortest round-trip decimal form (never an exponent).
//! The attributes are a serde struct (`QuotaRecord`) read and written by `serde_dynamo`;
//! a value that does not fit is an [`ItemDecodeError`] naming the attribute.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use tollgate_quota::fleet::{FleetItem, FleetPenalty};
use tollgate_quota::Timestamp;

use tollgate_actors::fleet::Versioned;

use crate::item_error::{from_attrs, to_attrs, Attrs, ItemDecodeError, ItemProblem};

/// The partition key attribute.
pub const KEY: &str = "key";
/// The version attribute.
pub const VERSION: &str = "version";
/// The TTL attribute `tollgate fleet init` enables.
pub const TTL: &str = "ttl";
/// How long an idle key's item lives after its last write.
pub const IDLE_TTL_SECS: u64 = 86_400;

/// The quota attributes of an item, field by field as stored (the table above): the
/// serde form `serde_dynamo` reads and writes. Numbers are `N`, `hosts` an `M` of `N`.
#[derive(Debug, Serialize, Deserialize)]
struct QuotaRecord {
    key: String,
    version: u64,
    tat_us: u64,
    rate: f64,
    burst: f64,
    factor: f64,
    cooldown_until_us: u64,
    ceiling: f64,
    retry_units: u32,
    retry_capacity: u32,
    /// Absent on items written before hosts were recorded.
    #[serde(default)]
    hosts: BTreeMap<String, u64>,
    /// Written, never read back (DynamoDB's TTL reads it).
    #[serde(default)]
    ttl: u64,
}

fn float(v: f64) -> f64 {
    // Tiny leftovers would print with many digits; DynamoDB numbers hold 38.
    if v.abs() < 1e-9 {
        0.0
    } else {
        v
    }
}

/// The attributes of `item` under `key` at `version`.
pub fn encode(key: &str, item: &FleetItem, version: u64) -> Attrs {
    let record = QuotaRecord {
        key: key.to_string(),
        version,
        tat_us: item.tat.as_micros(),
        rate: float(item.rate),
        burst: float(item.burst),
        factor: float(item.penalty.factor),
        cooldown_until_us: item.penalty.cooldown_until.as_micros(),
        ceiling: float(item.penalty.ceiling),
        retry_units: item.retry_units,
        retry_capacity: item.retry_capacity,
        hosts: item
            .hosts
            .iter()
            .map(|(host, seen)| (host.clone(), seen.as_micros()))
            .collect(),
        ttl: item.last_touched().as_micros() / 1_000_000 + IDLE_TTL_SECS,
    };
    let mut attrs = to_attrs(&record);
    if let Some(calendar) = &item.calendar {
        crate::calendar_layout::encode(calendar, &mut attrs);
    }
    attrs
}

/// The key and versioned item of `attrs`, or which attribute does not fit.
pub fn decode(attrs: &Attrs) -> Result<(String, Versioned), ItemDecodeError> {
    let key = match attrs.get(KEY) {
        Some(AttributeValue::S(k)) => k.clone(),
        _ => {
            return Err(ItemDecodeError::new(
                None,
                Some(KEY),
                ItemProblem::Layout(serde::de::Error::custom(
                    "the item has no string attribute `key`",
                )),
            ))
        }
    };
    let r: QuotaRecord = from_attrs(Some(&key), attrs)?;
    let item = FleetItem {
        tat: Timestamp::from_micros(r.tat_us),
        rate: r.rate,
        burst: r.burst,
        penalty: FleetPenalty {
            factor: r.factor,
            cooldown_until: Timestamp::from_micros(r.cooldown_until_us),
            ceiling: r.ceiling,
        },
        retry_units: r.retry_units,
        retry_capacity: r.retry_capacity,
        hosts: r
            .hosts
            .into_iter()
            .map(|(host, seen)| (host, Timestamp::from_micros(seen)))
            .collect(),
        calendar: crate::calendar_layout::decode(&key, attrs)?,
    };
    Ok((
        key,
        Versioned {
            item,
            version: r.version,
        },
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn an_item_round_trips_through_its_attributes() {
        let mut item = FleetItem::fresh(1.0 / 3.0, 5.0, 20);
        item.tat = Timestamp::from_micros(1_700_000_003_000_123);
        item.hosts
            .insert("h-1".into(), Timestamp::from_micros(1_700_000_000_000_000));
        item.penalty.factor = 0.125;
        let attrs = encode("aws/1/r/s:o", &item, 7);
        let (key, v) = decode(&attrs).unwrap();
        assert_eq!(key, "aws/1/r/s:o");
        assert_eq!(v.version, 7);
        assert_eq!(v.item, item);
    }

    #[test]
    fn the_ttl_counts_from_the_latest_instant_the_item_knows() {
        let mut item = FleetItem::fresh(1.0, 1.0, 1);
        item.tat = Timestamp::from_micros(5_000_000);
        item.hosts
            .insert("h".into(), Timestamp::from_micros(9_000_000));
        let attrs = encode("k", &item, 1);
        assert_eq!(
            attrs[TTL],
            AttributeValue::N((9 + IDLE_TTL_SECS).to_string())
        );
    }

    #[test]
    fn the_stored_format_is_the_hand_written_one() {
        // Items written before serde_dynamo (same names, same types, same numbers).
        let mut item = FleetItem::fresh(0.5, 5.0, 20);
        item.hosts.insert("h".into(), Timestamp::from_micros(9));
        let attrs = encode("k", &item, 3);
        let n = |v: &str| AttributeValue::N(v.into());
        assert_eq!(attrs[KEY], AttributeValue::S("k".into()));
        assert_eq!(attrs[VERSION], n("3"));
        assert_eq!(attrs["rate"], n("0.5"));
        assert_eq!(attrs["burst"], n("5"));
        assert_eq!(attrs["retry_capacity"], n("20"));
        assert_eq!(
            attrs["hosts"],
            AttributeValue::M(HashMap::from([("h".to_string(), n("9"))]))
        );
        let mut names: Vec<&str> = attrs.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "burst",
                "ceiling",
                "cooldown_until_us",
                "factor",
                "hosts",
                "key",
                "rate",
                "retry_capacity",
                "retry_units",
                "tat_us",
                "ttl",
                "version"
            ]
        );
    }

    #[test]
    fn an_attribute_of_the_wrong_type_is_refused_naming_it() {
        let mut attrs = encode("k", &FleetItem::fresh(1.0, 1.0, 1), 1);
        attrs.insert("rate".into(), AttributeValue::S("fast".into()));
        let e = decode(&attrs).unwrap_err();
        assert_eq!(e.key(), Some("k"));
        assert_eq!(e.attribute(), Some("rate"));
        assert!(e.to_string().contains("attribute `rate`"), "{e}");

        let mut attrs = encode("k", &FleetItem::fresh(1.0, 1.0, 1), 1);
        attrs.insert(
            "hosts".into(),
            AttributeValue::M(HashMap::from([(
                "h-1".to_string(),
                AttributeValue::S("x".into()),
            )])),
        );
        let e = decode(&attrs).unwrap_err();
        assert_eq!(e.attribute(), Some("hosts.h-1"), "{e}");
    }

    #[test]
    fn a_malformed_item_names_the_key_and_attribute() {
        let mut attrs = encode("k", &FleetItem::fresh(1.0, 1.0, 1), 1);
        attrs.insert("tat_us".into(), AttributeValue::S("x".into()));
        let e = decode(&attrs).unwrap_err().to_string();
        assert!(e.contains("k:") && e.contains("tat_us"), "{e}");
    }
}
