//! `tollgate fleet status`: each key's item as the table holds it now.

use std::time::Duration;

use std::collections::BTreeMap;

use serde::Serialize;
use tollgate_actors::fleet::FleetError;
use tollgate_quota::fleet::{effective_at, FleetItem, HOSTS_SEEN_WINDOW};
use tollgate_quota::schedule::WallClock;
use tollgate_quota::Timestamp;

use crate::dynamo::DynamoFleetStore;

/// One key's fleet state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyFleetStatus {
    pub key: String,
    pub version: u64,
    /// The GCRA theoretical arrival time: the due instant of the last token handed out.
    pub tat_us: u64,
    /// How far `tat` is ahead of `now` (ms; 0 if behind): capacity reserved by hosts.
    pub reserved_ahead_ms: u64,
    pub rate: f64,
    pub burst: f64,
    pub factor: f64,
    pub cooldown_remaining_ms: u64,
    pub ceiling: f64,
    pub retry_units: u32,
    pub retry_capacity: u32,
    /// Hosts that wrote in the last minute.
    pub hosts_seen_recently: Vec<String>,
    /// The key's calendar (issue 23), when a host declared a schedule or an allowance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calendar: Option<CalendarStatus>,
}

/// Every host's declared calendar and the effective one (the strictest among the hosts
/// seen recently) at the instant of the status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalendarStatus {
    /// Host id → its declaration, as an override entry (`ratePerSecond`, `burst`, ...,
    /// `schedule` or `allowance`).
    pub declarations: BTreeMap<String, serde_json::Value>,
    /// Hosts seen whose declarations are not all the same (empty when they agree).
    pub disagreeing_hosts: Vec<String>,
    pub effective: EffectiveCalendar,
}

/// The parameters in force now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveCalendar {
    pub rate: f64,
    pub burst: f64,
    /// Until when they certainly stay in force (RFC 3339, UTC).
    pub valid_until: String,
    /// The fleet allowance in force, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowance: Option<AllowanceNow>,
}

/// The fleet allowance as the item counts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllowanceNow {
    pub amount: u64,
    pub resets: String,
    pub timezone: String,
    /// Charged in the current period (blocks are charged when granted) and what is left.
    pub used: u64,
    pub remaining: u64,
    pub consumed_total: u64,
    pub next_reset: String,
}

/// The calendar part of `item`'s status at `now` (Unix µs), if it has one.
pub fn calendar_status(item: &FleetItem, now: Timestamp) -> Option<CalendarStatus> {
    let calendar = item.calendar.as_ref()?;
    let since = now.saturating_sub(HOSTS_SEEN_WINDOW);
    let seen: Vec<_> = calendar
        .declarations
        .iter()
        .filter(|(h, _)| item.hosts.get(*h).is_some_and(|t| *t >= since))
        .collect();
    let anchor = WallClock::UNIX_EPOCH;
    let effective = effective_at(seen.iter().map(|(_, d)| *d), now, anchor);
    let all_same = seen.windows(2).all(|w| w[0].1 == w[1].1);
    let disagreeing_hosts = if all_same {
        Vec::new()
    } else {
        seen.iter().map(|(h, _)| (*h).clone()).collect()
    };
    let rfc = |t: Timestamp| WallClock::from_timestamp(t, anchor).to_rfc3339();
    let effective = match effective {
        Some(e) => {
            let allowance = e.allowance.as_ref().map(|a| {
                let wall = WallClock::from_timestamp(now, anchor);
                let mut counter = calendar
                    .allowance
                    .unwrap_or_else(|| tollgate_quota::AllowanceCounter::new(a, 0, wall));
                counter.roll(a, wall);
                AllowanceNow {
                    amount: a.amount(),
                    resets: a.resets().pattern().to_string(),
                    timezone: a.resets().timezone().to_string(),
                    used: counter.used(),
                    remaining: counter.remaining(a),
                    consumed_total: counter.consumed_total(),
                    next_reset: counter.period().next_reset.to_rfc3339(),
                }
            });
            EffectiveCalendar {
                rate: e.policy.rate_per_second(),
                burst: e.policy.burst(),
                valid_until: rfc(e.valid_until),
                allowance,
            }
        }
        None => EffectiveCalendar {
            rate: item.rate,
            burst: item.burst,
            valid_until: rfc(calendar.valid_until),
            allowance: None,
        },
    };
    Some(CalendarStatus {
        declarations: calendar
            .declarations
            .iter()
            .map(|(h, d)| (h.clone(), d.to_value()))
            .collect(),
        disagreeing_hosts,
        effective,
    })
}

/// What `status` found: readable keys, and items it could not read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetStatus {
    pub table: String,
    pub keys: Vec<KeyFleetStatus>,
    pub unreadable: Vec<String>,
}

/// Scan the table and summarize each item at `now` (Unix µs).
pub async fn fleet_status(
    store: &DynamoFleetStore,
    now: Timestamp,
) -> Result<FleetStatus, FleetError> {
    let mut keys = Vec::new();
    let mut unreadable = Vec::new();
    for entry in store.scan().await? {
        match entry {
            // Breaker items (`crate::breakers`) are not quota keys: `tollgate status`
            // shows each host's breakers and whether their state came from the fleet.
            Err(why)
                if why
                    .key()
                    .is_some_and(|k| k.starts_with(crate::breakers::BREAKER_PREFIX)) => {}
            Err(why) => unreadable.push(why.to_string()),
            Ok((key, v)) => {
                let item = v.item;
                let remaining = |at: Timestamp| at.saturating_since(now).as_millis() as u64;
                let since = now.saturating_sub(HOSTS_SEEN_WINDOW);
                let calendar = calendar_status(&item, now);
                keys.push(KeyFleetStatus {
                    key,
                    version: v.version,
                    tat_us: item.tat.as_micros(),
                    reserved_ahead_ms: remaining(item.tat),
                    rate: item.rate,
                    burst: item.burst,
                    factor: item.penalty.factor,
                    cooldown_remaining_ms: remaining(item.penalty.cooldown_until),
                    ceiling: item.penalty.ceiling,
                    retry_units: item.retry_units,
                    retry_capacity: item.retry_capacity,
                    hosts_seen_recently: item
                        .hosts
                        .iter()
                        .filter(|(_, seen)| **seen >= since)
                        .map(|(h, _)| h.clone())
                        .collect(),
                    calendar,
                });
            }
        }
    }
    keys.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(FleetStatus {
        table: store.settings().table.clone(),
        keys,
        unreadable,
    })
}

/// A table for people.
pub fn render(status: &FleetStatus) -> String {
    let mut out = format!(
        "fleet table {}: {} key(s)\n",
        status.table,
        status.keys.len()
    );
    for k in &status.keys {
        out.push_str(&format!(
            "{}\n  reserved {} ms ahead, burst {} at {}/s, factor {}{}, retry units {}/{}\n",
            k.key,
            k.reserved_ahead_ms,
            k.burst,
            k.rate,
            k.factor,
            if k.cooldown_remaining_ms > 0 {
                format!(" (cooldown {} ms)", k.cooldown_remaining_ms)
            } else {
                String::new()
            },
            k.retry_units,
            k.retry_capacity
        ));
        out.push_str(&format!(
            "  hosts seen in the last {} s: {}\n",
            Duration::as_secs(&HOSTS_SEEN_WINDOW),
            if k.hosts_seen_recently.is_empty() {
                "none".to_string()
            } else {
                k.hosts_seen_recently.join(", ")
            }
        ));
        render_calendar(k, &mut out);
    }
    for u in &status.unreadable {
        out.push_str(&format!("unreadable item: {u}\n"));
    }
    out
}

/// The calendar lines of one key's text status.
fn render_calendar(k: &KeyFleetStatus, out: &mut String) {
    let Some(c) = &k.calendar else { return };
    out.push_str(&format!(
        "  calendar in force: {}/s burst {} until {}{}\n",
        c.effective.rate,
        c.effective.burst,
        c.effective.valid_until,
        match &c.effective.allowance {
            Some(a) => format!(
                "; allowance {} per \"{}\" ({}): {} used, {} left, next reset {}",
                a.amount, a.resets, a.timezone, a.used, a.remaining, a.next_reset
            ),
            None => String::new(),
        }
    ));
    for (host, d) in &c.declarations {
        out.push_str(&format!("    {host} declares {d}\n"));
    }
    if !c.disagreeing_hosts.is_empty() {
        out.push_str(&format!(
            "    WARNING: hosts {} declare different calendars; the strictest is in force\n",
            c.disagreeing_hosts.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tollgate_quota::fleet::{take_block, BlockRequest, Declaration, Declared};
    use tollgate_quota::PolicyTable;

    use super::*;

    fn request(host: &str, json: &str) -> BlockRequest {
        let name = "kms:ListKeys".parse().unwrap();
        let t = PolicyTable::with_overrides(json, "test").unwrap();
        let policy = t.policy_for_name(&name);
        BlockRequest {
            host: host.into(),
            wanted: 3,
            rate: policy.rate_per_second(),
            burst: policy.burst(),
            retry_capacity: policy.retry_capacity(),
            throttled: false,
            retry_want: 0,
            retry_refund: 0,
            horizon: Duration::from_secs(2),
            round_trip: Duration::ZERO,
            declared: Some(Declared {
                declaration: Declaration::new(policy, t.read_time_for_name(&name).cloned()),
                anchor: WallClock::UNIX_EPOCH,
            }),
            item_sizing: None,
        }
    }

    #[test]
    fn the_status_shows_every_hosts_declaration_and_the_strictest_calendar_in_force() {
        let allowance = r#"{"kms:ListKeys": {"ratePerSecond": 20, "burst": 5,
            "allowance": {"amount": 50, "resets": "0 * * * *", "timezone": "UTC"}}}"#;
        let slower = r#"{"kms:ListKeys": {"ratePerSecond": 4, "burst": 2}}"#;
        let now = WallClock::parse_rfc3339("2026-01-05T10:20:00Z")
            .unwrap()
            .to_timestamp(WallClock::UNIX_EPOCH);
        let (item, _) = take_block(None, &request("a", allowance), now);
        let (item, _) = take_block(Some(&item), &request("b", slower), now);
        let status = calendar_status(&item, now).expect("a calendar");
        assert_eq!(status.declarations.len(), 2);
        assert_eq!(status.declarations["a"]["allowance"]["amount"], 50);
        assert_eq!(status.declarations["b"]["ratePerSecond"], 4.0);
        assert_eq!(status.disagreeing_hosts, ["a", "b"]);
        assert_eq!((status.effective.rate, status.effective.burst), (4.0, 2.0));
        let a = status
            .effective
            .allowance
            .clone()
            .expect("the allowance in force");
        assert_eq!((a.amount, a.used, a.remaining), (50, 6, 44));
        assert_eq!(a.next_reset, "2026-01-05T11:00:00.000Z");
        let text = {
            let mut out = String::new();
            let key = KeyFleetStatus {
                key: "k".into(),
                version: 2,
                tat_us: 0,
                reserved_ahead_ms: 0,
                rate: 4.0,
                burst: 2.0,
                factor: 1.0,
                cooldown_remaining_ms: 0,
                ceiling: 1.0,
                retry_units: 0,
                retry_capacity: 0,
                hosts_seen_recently: vec!["a".into(), "b".into()],
                calendar: Some(status),
            };
            render_calendar(&key, &mut out);
            out
        };
        assert!(
            text.contains("a declares") && text.contains("b declares"),
            "{text}"
        );
        assert!(text.contains("WARNING: hosts a, b"), "{text}");
    }

    #[test]
    fn an_unscheduled_item_has_no_calendar_status() {
        assert_eq!(
            calendar_status(&FleetItem::fresh(1.0, 1.0, 1), Timestamp::ZERO),
            None
        );
    }
}
