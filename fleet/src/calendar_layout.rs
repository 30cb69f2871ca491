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

use aws_sdk_dynamodb::types::AttributeValue;
use tollgate_quota::fleet::{Declaration, ItemCalendar};
use tollgate_quota::schedule::{AllowanceCounter, AllowancePeriod, WallClock};
use tollgate_quota::Timestamp;

type Attrs = HashMap<String, AttributeValue>;

const CALENDARS: &str = "calendars";
const HOST_CALENDARS: &str = "host_calendars";
const VALID_UNTIL: &str = "valid_until_us";
const TOTAL: &str = "allowance_total";
const BASELINE: &str = "allowance_baseline";
const PERIOD_START: &str = "allowance_period_start_ms";
const NEXT_RESET: &str = "allowance_next_reset_ms";

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
    let mut hosts = HashMap::new();
    for (host, d) in &calendar.declarations {
        let text = d.to_json();
        let id = digest(&text);
        hosts.insert(host.clone(), AttributeValue::S(id.clone()));
        calendars.insert(id, AttributeValue::S(text));
    }
    let n = |v: u64| AttributeValue::N(v.to_string());
    attrs.insert(CALENDARS.into(), AttributeValue::M(calendars));
    attrs.insert(HOST_CALENDARS.into(), AttributeValue::M(hosts));
    attrs.insert(VALID_UNTIL.into(), n(calendar.valid_until.as_micros()));
    if let Some(c) = &calendar.allowance {
        let millis = |w: WallClock| w.unix_millis().max(0) as u64;
        attrs.insert(TOTAL.into(), n(c.consumed_total()));
        attrs.insert(BASELINE.into(), n(c.baseline()));
        attrs.insert(PERIOD_START.into(), n(millis(c.period().start)));
        attrs.insert(NEXT_RESET.into(), n(millis(c.period().next_reset)));
    }
}

/// The calendar of `key`'s `attrs` (`None`: the item has none), or what is wrong.
pub fn decode(key: &str, attrs: &Attrs) -> Result<Option<ItemCalendar>, String> {
    let Some(hosts) = attrs.get(HOST_CALENDARS) else {
        return Ok(None);
    };
    let map = |name: &str, v: Option<&AttributeValue>| -> Result<Attrs, String> {
        match v {
            Some(AttributeValue::M(m)) => Ok(m.clone()),
            _ => Err(format!("{key}: attribute `{name}` is missing or not a map")),
        }
    };
    let int = |name: &str| -> Result<Option<u64>, String> {
        match attrs.get(name) {
            None => Ok(None),
            Some(AttributeValue::N(v)) => v
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("{key}: attribute `{name}` is not a whole number")),
            Some(_) => Err(format!("{key}: attribute `{name}` is not a number")),
        }
    };
    let mut parsed: HashMap<String, Declaration> = HashMap::new();
    for (id, text) in map(CALENDARS, attrs.get(CALENDARS))? {
        let AttributeValue::S(text) = text else {
            return Err(format!("{key}: calendar {id} is not a string"));
        };
        let d = Declaration::from_json(&text).map_err(|e| format!("{key}: {e}"))?;
        parsed.insert(id, d);
    }
    let mut declarations = BTreeMap::new();
    for (host, id) in map(HOST_CALENDARS, Some(hosts))? {
        let AttributeValue::S(id) = id else {
            return Err(format!("{key}: host {host}'s calendar is not a string"));
        };
        let d = parsed
            .get(&id)
            .ok_or_else(|| format!("{key}: host {host}'s calendar {id} is not on the item"))?;
        declarations.insert(host, d.clone());
    }
    let wall = |ms: u64| WallClock::from_unix_millis(ms as i64).unwrap_or(WallClock::MAX);
    let allowance = match (
        int(TOTAL)?,
        int(BASELINE)?,
        int(PERIOD_START)?,
        int(NEXT_RESET)?,
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
            return Err(format!(
                "{key}: the allowance counter's attributes are incomplete"
            ))
        }
    };
    Ok(Some(ItemCalendar {
        declarations,
        valid_until: Timestamp::from_micros(int(VALID_UNTIL)?.unwrap_or(0)),
        allowance,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        for name in [CALENDARS, HOST_CALENDARS, VALID_UNTIL, TOTAL] {
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
        let e = decode("k", &attrs).unwrap_err();
        assert!(e.contains("k:") && e.contains("host h"), "{e}");
    }
}
