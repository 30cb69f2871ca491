//! Hosts racing for blocks of one key's item: what `tests/dynalite.rs` runs in one
//! process and its helper binary (`tests/bin/block_taker.rs`) runs in several.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::fleet::{exchange, FleetErrorKind, FleetStore};
use tollgate_fleet::settings::FleetSettings;
use tollgate_fleet::DynamoFleetStore;
use tollgate_quota::fleet::{BlockRequest, FleetConfig, TokenRun};
use tollgate_quota::Clock;

use super::ManualClock;

/// The instant the manual clocks start at (µs).
pub const T0: u64 = 1_700_000_000_000_000;

/// The fleet settings of `table` on the emulator at `endpoint`.
pub fn settings(table: &str, endpoint: &str) -> FleetSettings {
    FleetSettings {
        table: table.to_string(),
        region: Some("us-east-1".into()),
        endpoint_url: Some(endpoint.to_string()),
        config: FleetConfig::default(),
    }
}

/// `host` asks for `wanted` tokens at 10/s, burst 40, a 2 s horizon.
pub fn block(host: &str, wanted: u64) -> BlockRequest {
    BlockRequest {
        host: host.into(),
        wanted,
        rate: 10.0,
        burst: 40.0,
        retry_capacity: 6,
        throttled: false,
        retry_want: 0,
        retry_refund: 0,
        horizon: Duration::from_secs(2),
        round_trip: Duration::ZERO,
        declared: None,
        item_sizing: None,
    }
}

/// `hosts` hosts take blocks of 3 concurrently, `rounds` times each, at the clock's
/// instant; returns the runs granted. Runs inside a `LocalSet`.
pub async fn race(
    store: &DynamoFleetStore,
    clock: &Arc<ManualClock>,
    prefix: &str,
    hosts: usize,
    rounds: usize,
) -> Vec<TokenRun> {
    let tasks = (0..hosts).map(|h| {
        let store: Arc<dyn FleetStore> = Arc::new(store.clone());
        let clock: Arc<dyn Clock> = clock.clone();
        let host = format!("{prefix}-{h}");
        async move {
            let mut cached = None;
            let mut granted = Vec::new();
            let mut done = 0;
            while done < rounds {
                match exchange(
                    store.clone(),
                    "aws/1/us-east-1/kms:GetKeyLastUsage".into(),
                    block(&host, 3),
                    clock.clone(),
                    cached.take(),
                )
                .await
                {
                    Ok((grant, item, _)) => {
                        if grant.run.count > 0 {
                            granted.push(grant.run);
                        }
                        cached = Some(item);
                        done += 1;
                    }
                    // Lost every write to the other racers: ask again, as the actor does.
                    Err(e) if e.kind == FleetErrorKind::Contention => {}
                    Err(e) => panic!("{e}"),
                }
            }
            granted
        }
    });
    futures_join(tasks).await.into_iter().flatten().collect()
}

async fn futures_join<T: 'static, F: std::future::Future<Output = T> + 'static>(
    fs: impl Iterator<Item = F>,
) -> Vec<T> {
    let handles: Vec<_> = fs.map(tokio::task::spawn_local).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
