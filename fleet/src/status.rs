//! `tollgate fleet status`: each key's item as the table holds it now.

use std::time::Duration;

use serde::Serialize;
use tollgate_actors::fleet::FleetError;
use tollgate_quota::fleet::HOSTS_SEEN_WINDOW;
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
            Err(why) if why.starts_with(crate::breakers::BREAKER_PREFIX) => {}
            Err(why) => unreadable.push(why),
            Ok((key, v)) => {
                let item = v.item;
                let remaining = |at: Timestamp| at.saturating_since(now).as_millis() as u64;
                let since = now.saturating_sub(HOSTS_SEEN_WINDOW);
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
    }
    for u in &status.unreadable {
        out.push_str(&format!("unreadable item: {u}\n"));
    }
    out
}
