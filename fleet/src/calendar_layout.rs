//! The calendar's attributes on a key's item (issue 23): absent on a key no host declared
//! a schedule or an allowance for, so an unscheduled item is as it was.
//!
//! | attribute                   | type | meaning                                                |
//! |-----------------------------|------|--------------------------------------------------------|
//! | `calendars`                 | M    | digest → S: each distinct declaration (override-entry JSON) once |
//! | `host_calendars`            | M    | host id → S: the digest of the host's declaration     |
//! | `valid_until_us`            | N    | the stamp: no effective parameter changes before it (µs) |
//! | `allowance_total`           | N    | the fleet allowance's monotonic total consumed         |
//! | `allowance_baseline`        | N    | the total when the current period began                |
//! | `allowance_period_start_ms` | N    | the current period: its start (Unix ms)...             |
//! | `allowance_next_reset_ms`   | N    | ...and its end, the next reset (Unix ms)               |
//!
//! Why digests? Hosts usually declare the same calendar: it is stored once, and each host
//! costs one short string, so the item grows by about one declaration (a few hundred
//! bytes for a schedule) plus ~40 bytes per host, not a declaration per host.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use tollgate_quota::fleet::{Declaration, ItemCalendar};
use tollgate_quota::schedule::{AllowanceCounter, AllowancePeriod, WallClock};
use tollgate_quota::Timestamp;

use crate::item_error::Attrs;
use crate::item_error::{from_attrs, to_attrs, ItemDecodeError, ItemProblem};

const CALENDARS: &str = "calendars";
const HOST_CALENDARS: &str = "host_calendars";

/// The calendar attributes (the table above) as `serde_dynamo` reads and writes them;
/// each absent one is `None` and is not written.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CalendarRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    calendars: Option<HashMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host_calendars: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    valid_until_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowance_total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowance_baseline: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowance_period_start_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowance_next_reset_ms: Option<u64>,
}

/// A stable short digest of a declaration's JSON (FNV-1a, 64 bits, hex).
fn digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Add the attributes of `calendar` to `attrs`.
pub fn encode(calendar: &ItemCalendar, attrs: &mut Attrs) {
    let mut calendars = HashMap::new();
    let mut hosts = BTreeMap::new();
    for (host, d) in &calendar.declarations {
        let text = d.to_json();
        let id = digest(&text);
        hosts.insert(host.clone(), id.clone());
        calendars.insert(id, text);
    }
    let mut record = CalendarRecord {
        calendars: Some(calendars),
        host_calendars: Some(hosts),
        valid_until_us: Some(calendar.valid_until.as_micros()),
        ..CalendarRecord::default()
    };
    if let Some(c) = &calendar.allowance {
        let millis = |w: WallClock| w.unix_millis().max(0) as u64;
        record.allowance_total = Some(c.consumed_total());
        record.allowance_baseline = Some(c.baseline());
        record.allowance_period_start_ms = Some(millis(c.period().start));
        record.allowance_next_reset_ms = Some(millis(c.period().next_reset));
    }
    attrs.extend(to_attrs(&record));
}

/// The calendar of `key`'s `attrs` (`None`: the item has none), or which attribute does
/// not fit.
pub fn decode(key: &str, attrs: &Attrs) -> Result<Option<ItemCalendar>, ItemDecodeError> {
    if !attrs.contains_key(HOST_CALENDARS) {
        return Ok(None);
    }
    let r: CalendarRecord = from_attrs(Some(key), attrs)?;
    let fail = |attribute: &str, problem| ItemDecodeError::new(Some(key), Some(attribute), problem);
    let calendars = r.calendars.ok_or_else(|| {
        fail(
            CALENDARS,
            ItemProblem::Layout(serde::de::Error::custom(
                "missing (an item with host calendars has their declarations)",
            )),
        )
    })?;
    let mut parsed: HashMap<String, Declaration> = HashMap::new();
    for (id, text) in calendars {
        let d = Declaration::from_json(&text)
            .map_err(|e| fail(&format!("{CALENDARS}.{id}"), e.into()))?;
        parsed.insert(id, d);
    }
    let mut declarations = BTreeMap::new();
    for (host, id) in r.host_calendars.unwrap_or_default() {
        let Some(d) = parsed.get(&id) else {
            return Err(fail(
                &format!("{HOST_CALENDARS}.{host}"),
                ItemProblem::UnknownCalendar { host, digest: id },
            ));
        };
        declarations.insert(host, d.clone());
    }
    let wall = |ms: u64| WallClock::from_unix_millis(ms as i64).unwrap_or(WallClock::MAX);
    let allowance = match (
        r.allowance_total,
        r.allowance_baseline,
        r.allowance_period_start_ms,
        r.allowance_next_reset_ms,
    ) {
        (Some(total), Some(baseline), Some(start), Some(next)) => {
            let period = AllowancePeriod {
                start: wall(start),
                next_reset: wall(next),
            };
            Some(AllowanceCounter::from_parts(total, period, baseline))
        }
        (None, None, None, None) => None,
        _ => {
            return Err(ItemDecodeError::new(
                Some(key),
                None,
                ItemProblem::Incomplete("the allowance counter's four attributes"),
            ))
        }
    };
    Ok(Some(ItemCalendar {
        declarations,
        valid_until: Timestamp::from_micros(r.valid_until_us.unwrap_or(0)),
        allowance,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;
    use tollgate_quota::fleet::FleetItem;
    use tollgate_quota::{Policy, PolicyTable};

    fn declaration(json: &str) -> Declaration {
        let name = "kms:ListKeys".parse().unwrap();
        let t = PolicyTable::with_overrides(json, "test").unwrap();
        Declaration::new(
            t.policy_for_name(&name),
            t.read_time_for_name(&name).cloned(),
        )
    }

    #[test]
    fn a_calendar_round_trips_and_hosts_that_agree_share_one_declaration() {
        let allowance = declaration(
            r#"{"kms:ListKeys": {"allowance": {"amount": 50, "resets": "* * * * *", "timezone": "UTC"}}}"#,
        );
        let plain = Declaration::plain(Policy::with_rate(5.0, 2.0).unwrap());
        let period = AllowancePeriod {
            start: WallClock::from_unix_millis(60_000).unwrap(),
            next_reset: WallClock::from_unix_millis(120_000).unwrap(),
        };
        let calendar = ItemCalendar {
            declarations: BTreeMap::from([
                ("a".to_string(), allowance.clone()),
                ("b".to_string(), allowance),
                ("c".to_string(), plain),
            ]),
            valid_until: Timestamp::from_micros(120_000_000),
            allowance: Some(AllowanceCounter::from_parts(130, period, 100)),
        };
        let mut attrs = HashMap::new();
        encode(&calendar, &mut attrs);
        let Some(AttributeValue::M(distinct)) = attrs.get(CALENDARS) else {
            panic!("no calendars")
        };
        assert_eq!(distinct.len(), 2, "a and b share their declaration");
        assert_eq!(decode("k", &attrs).unwrap(), Some(calendar));
    }

    #[test]
    fn an_unscheduled_item_has_no_calendar_attributes() {
        let attrs = crate::layout::encode("k", &FleetItem::fresh(1.0, 1.0, 1), 1);
        for name in [
            CALENDARS,
            HOST_CALENDARS,
            "valid_until_us",
            "allowance_total",
        ] {
            assert!(!attrs.contains_key(name), "{name}");
        }
        assert_eq!(decode("k", &attrs).unwrap(), None);
    }

    #[test]
    fn a_declaration_missing_from_the_item_names_the_key_and_host() {
        let mut attrs = HashMap::new();
        attrs.insert(CALENDARS.into(), AttributeValue::M(HashMap::new()));
        attrs.insert(
            HOST_CALENDARS.into(),
            AttributeValue::M(HashMap::from([(
                "h".to_string(),
                AttributeValue::S("00".into()),
            )])),
        );
        let e = decode("k", &attrs).unwrap_err().to_string();
        assert!(e.contains("k:") && e.contains("host h"), "{e}");
    }
}
