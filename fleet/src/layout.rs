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

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use tollgate_quota::fleet::{FleetItem, FleetPenalty};
use tollgate_quota::Timestamp;

use tollgate_actors::fleet::Versioned;

/// The partition key attribute.
pub const KEY: &str = "key";
/// The version attribute.
pub const VERSION: &str = "version";
/// The TTL attribute `tollgate fleet init` enables.
pub const TTL: &str = "ttl";
/// How long an idle key's item lives after its last write.
pub const IDLE_TTL_SECS: u64 = 86_400;

type Attrs = HashMap<String, AttributeValue>;

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn float(v: f64) -> AttributeValue {
    // Tiny leftovers would print with many digits; DynamoDB numbers hold 38.
    let v = if v.abs() < 1e-9 { 0.0 } else { v };
    n(v)
}

/// The attributes of `item` under `key` at `version`.
pub fn encode(key: &str, item: &FleetItem, version: u64) -> Attrs {
    let hosts = item
        .hosts
        .iter()
        .map(|(host, seen)| (host.clone(), n(seen.as_micros())))
        .collect();
    let mut attrs = HashMap::from([
        (KEY.into(), AttributeValue::S(key.into())),
        (VERSION.into(), n(version)),
        ("tat_us".into(), n(item.tat.as_micros())),
        ("rate".into(), float(item.rate)),
        ("burst".into(), float(item.burst)),
        ("factor".into(), float(item.penalty.factor)),
        (
            "cooldown_until_us".into(),
            n(item.penalty.cooldown_until.as_micros()),
        ),
        ("ceiling".into(), float(item.penalty.ceiling)),
        ("retry_units".into(), n(item.retry_units)),
        ("retry_capacity".into(), n(item.retry_capacity)),
        ("hosts".into(), AttributeValue::M(hosts)),
        (
            TTL.into(),
            n(item.last_touched().as_micros() / 1_000_000 + IDLE_TTL_SECS),
        ),
    ]);
    if let Some(calendar) = &item.calendar {
        crate::calendar_layout::encode(calendar, &mut attrs);
    }
    attrs
}

/// The key and versioned item of `attrs`, or what is wrong with them.
pub fn decode(attrs: &Attrs) -> Result<(String, Versioned), String> {
    let key = match attrs.get(KEY) {
        Some(AttributeValue::S(k)) => k.clone(),
        _ => return Err("the item has no string attribute `key`".into()),
    };
    let num = |name: &str| -> Result<f64, String> {
        match attrs.get(name) {
            Some(AttributeValue::N(v)) => v
                .parse::<f64>()
                .map_err(|_| format!("{key}: attribute `{name}` is not a number: {v}")),
            _ => Err(format!(
                "{key}: attribute `{name}` is missing or not a number"
            )),
        }
    };
    let int = |name: &str| -> Result<u64, String> {
        match attrs.get(name) {
            Some(AttributeValue::N(v)) => v
                .parse::<u64>()
                .map_err(|_| format!("{key}: attribute `{name}` is not a whole number: {v}")),
            _ => Err(format!(
                "{key}: attribute `{name}` is missing or not a number"
            )),
        }
    };
    let map = |name: &str| -> Result<Attrs, String> {
        match attrs.get(name) {
            Some(AttributeValue::M(m)) => Ok(m.clone()),
            None => Ok(HashMap::new()),
            _ => Err(format!("{key}: attribute `{name}` is not a map")),
        }
    };
    let mut hosts = BTreeMap::new();
    for (host, v) in map("hosts")? {
        let AttributeValue::N(seen) = v else {
            return Err(format!("{key}: host {host}'s last write is not a number"));
        };
        let seen = seen
            .parse()
            .map_err(|_| format!("{key}: host {host}'s last write is not a whole number"))?;
        hosts.insert(host, Timestamp::from_micros(seen));
    }
    let item = FleetItem {
        tat: Timestamp::from_micros(int("tat_us")?),
        rate: num("rate")?,
        burst: num("burst")?,
        penalty: FleetPenalty {
            factor: num("factor")?,
            cooldown_until: Timestamp::from_micros(int("cooldown_until_us")?),
            ceiling: num("ceiling")?,
        },
        retry_units: int("retry_units")? as u32,
        retry_capacity: int("retry_capacity")? as u32,
        hosts,
        calendar: crate::calendar_layout::decode(&key, attrs)?,
    };
    let version = int(VERSION)?;
    Ok((key, Versioned { item, version }))
}

#[cfg(test)]
mod tests {
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
        assert_eq!(attrs[TTL], n(9 + IDLE_TTL_SECS));
    }

    #[test]
    fn a_malformed_item_names_the_key_and_attribute() {
        let mut attrs = encode("k", &FleetItem::fresh(1.0, 1.0, 1), 1);
        attrs.insert("tat_us".into(), AttributeValue::S("x".into()));
        let e = decode(&attrs).unwrap_err();
        assert!(e.contains("k:") && e.contains("tat_us"), "{e}");
    }
}
