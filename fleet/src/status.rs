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
    /// The level as stored (as of `at`; refill since then not applied).
    pub level: f64,
    pub at_us: u64,
    pub rate: f64,
    pub burst: f64,
    pub factor: f64,
    pub cooldown_remaining_ms: u64,
    pub ceiling: f64,
    pub retry_units: u32,
    pub retry_capacity: u32,
    /// Unexpired blocks at `now`.
    pub blocks: Vec<BlockStatus>,
    /// Hosts that wrote in the last minute.
    pub hosts_seen_recently: Vec<String>,
}

/// One outstanding block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockStatus {
    pub host: String,
    pub tokens: u64,
    pub expires_in_ms: u64,
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
                    level: item.level,
                    at_us: item.at.as_micros(),
                    rate: item.rate,
                    burst: item.burst,
                    factor: item.penalty.factor,
                    cooldown_remaining_ms: remaining(item.penalty.cooldown_until),
                    ceiling: item.penalty.ceiling,
                    retry_units: item.retry_units,
                    retry_capacity: item.retry_capacity,
                    blocks: item
                        .blocks
                        .iter()
                        .filter(|(_, b)| b.expires_at > now)
                        .map(|(host, b)| BlockStatus {
                            host: host.clone(),
                            tokens: b.tokens,
                            expires_in_ms: remaining(b.expires_at),
                        })
                        .collect(),
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
            "{}\n  level {:.2} of burst {} at {}/s, factor {}{}, retry units {}/{}\n",
            k.key,
            k.level,
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
        for b in &k.blocks {
            out.push_str(&format!(
                "  block {}: {} token(s), lapses in {} ms\n",
                b.host, b.tokens, b.expires_in_ms
            ));
        }
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
