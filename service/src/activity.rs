//! `Activity`: per quota key, admissions and throttled responses over the last
//! [`WINDOW`], in a small ring of [`BUCKETS`] buckets of [`BUCKET`] each. The live page
//! draws one chart per key from it (where is a scan held back?), and `/metrics` ranks
//! accounts by it (which accounts get their own label).
//!
//! Why a ring per key and not the counters: the counters are totals since the service
//! started, folded to bound their labels; a chart needs the recent shape of one key.
//!
//! Memory is bounded by the keys in use: a ring is [`RING_BYTES`] plus its key, and a
//! ring whose newest bucket has left the window has nothing to draw and is dropped (on
//! the next pruning, every [`BUCKET`] or when the map reaches its high-water mark). The
//! key's actor is gone sooner, seconds after its last use
//! (`tollgate_actors::registry::DEFAULT_EVICT_AFTER`): the ring keeps what the chart
//! draws, and goes five minutes after its key's last event.
//!
//! Time comes in with each event (when it was sent, on the admission clock) and with
//! each read (`now`); nothing here reads a clock.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

/// One bucket's span.
pub const BUCKET: Duration = Duration::from_secs(10);
/// Buckets per ring.
pub const BUCKETS: usize = 30;
/// What a ring covers: five minutes.
pub const WINDOW: Duration = Duration::from_secs(BUCKET.as_secs() * BUCKETS as u64);
/// Bytes of one ring's counts (two `u32` per bucket), its key and map entry aside.
pub const RING_BYTES: usize = BUCKETS * 2 * std::mem::size_of::<u32>();
/// The smallest high-water mark at which the map prunes before a bucket has passed.
const MIN_HIGH_WATER: usize = 1024;

const BUCKET_MS: u64 = BUCKET.as_millis() as u64;

/// One key's recent counts, oldest bucket first (what the page draws).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KeySeries {
    /// Attempts sent (admitted by the gate) per bucket.
    pub admitted: Vec<u32>,
    /// Throttled responses per bucket.
    pub throttled: Vec<u32>,
}

/// A ring of buckets; `newest` is the index (milliseconds / [`BUCKET`]) of the newest.
#[derive(Debug, Clone)]
struct Ring {
    newest: u64,
    admitted: [u32; BUCKETS],
    throttled: [u32; BUCKETS],
}

impl Ring {
    fn new(bucket: u64) -> Self {
        Ring {
            newest: bucket,
            admitted: [0; BUCKETS],
            throttled: [0; BUCKETS],
        }
    }

    /// Count into `bucket`, moving the ring forward (clearing what it passes) when the
    /// bucket is newer; a bucket older than the ring's window is ignored.
    fn add(&mut self, bucket: u64, admitted: u32, throttled: u32) {
        if bucket > self.newest {
            let passed = (bucket - self.newest).min(BUCKETS as u64);
            for step in 1..=passed {
                let slot = ((self.newest + step) % BUCKETS as u64) as usize;
                self.admitted[slot] = 0;
                self.throttled[slot] = 0;
            }
            self.newest = bucket;
        } else if self.newest - bucket >= BUCKETS as u64 {
            return;
        }
        let slot = (bucket % BUCKETS as u64) as usize;
        self.admitted[slot] = self.admitted[slot].saturating_add(admitted);
        self.throttled[slot] = self.throttled[slot].saturating_add(throttled);
    }

    /// The window ending with bucket `now`, oldest first.
    fn series(&self, now: u64) -> KeySeries {
        let mut out = KeySeries {
            admitted: Vec::with_capacity(BUCKETS),
            throttled: Vec::with_capacity(BUCKETS),
        };
        for age in (0..BUCKETS as u64).rev() {
            let Some(bucket) = now.checked_sub(age) else {
                out.admitted.push(0);
                out.throttled.push(0);
                continue;
            };
            let held = bucket <= self.newest && self.newest - bucket < BUCKETS as u64;
            let slot = (bucket % BUCKETS as u64) as usize;
            out.admitted
                .push(if held { self.admitted[slot] } else { 0 });
            out.throttled
                .push(if held { self.throttled[slot] } else { 0 });
        }
        out
    }

    /// Nothing of the ring is inside the window ending with bucket `now`.
    fn expired(&self, now: u64) -> bool {
        now.saturating_sub(self.newest) >= BUCKETS as u64
    }

    fn total(&self, now: u64) -> (u64, u64) {
        let s = self.series(now);
        (
            s.admitted.iter().map(|&n| u64::from(n)).sum(),
            s.throttled.iter().map(|&n| u64::from(n)).sum(),
        )
    }
}

#[derive(Debug)]
struct Rings {
    by_key: HashMap<String, Ring>,
    high_water: usize,
    pruned_at: u64,
}

/// Every key's ring (shared; every method takes `&self`).
#[derive(Debug)]
pub struct Activity {
    rings: Mutex<Rings>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            rings: Mutex::new(Rings {
                by_key: HashMap::new(),
                high_water: MIN_HIGH_WATER,
                pruned_at: 0,
            }),
        }
    }
}

fn bucket_of(ms: u64) -> u64 {
    ms / BUCKET_MS
}

impl Activity {
    fn lock(&self) -> std::sync::MutexGuard<'_, Rings> {
        self.rings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Count `admitted` attempts and `throttled` responses of `key` at `at_ms` (Unix
    /// milliseconds, the admission clock).
    pub fn record(&self, key: &str, at_ms: u64, admitted: u32, throttled: u32) {
        let bucket = bucket_of(at_ms);
        let mut rings = self.lock();
        match rings.by_key.get_mut(key) {
            Some(ring) => ring.add(bucket, admitted, throttled),
            None => {
                let mut ring = Ring::new(bucket);
                ring.add(bucket, admitted, throttled);
                rings.by_key.insert(key.to_string(), ring);
            }
        }
        if rings.by_key.len() >= rings.high_water || bucket > rings.pruned_at {
            prune(&mut rings, bucket);
        }
    }

    /// The key's window ending at `now_ms`; `None` when it has no ring (nothing in the
    /// window).
    pub fn series(&self, key: &str, now_ms: u64) -> Option<KeySeries> {
        let now = bucket_of(now_ms);
        let rings = self.lock();
        let ring = rings.by_key.get(key)?;
        (!ring.expired(now)).then(|| ring.series(now))
    }

    /// Admissions and throttled responses over the window ending at `now_ms`, summed per
    /// account (the key's second part), for the accounts that had any.
    pub fn per_account(&self, now_ms: u64) -> HashMap<String, (u64, u64)> {
        let now = bucket_of(now_ms);
        let rings = self.lock();
        let mut out: HashMap<String, (u64, u64)> = HashMap::new();
        for (key, ring) in rings.by_key.iter().filter(|(_, r)| !r.expired(now)) {
            let account = key.split('/').nth(1).unwrap_or("").to_string();
            let (a, t) = ring.total(now);
            let sum = out.entry(account).or_default();
            sum.0 += a;
            sum.1 += t;
        }
        out
    }

    /// Rings held now (expired ones until the next pruning).
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// No ring is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The accounts each running scan has sent calls for (from its attempts' quota keys),
/// so that the API and the page can place a running scan under its accounts before its
/// report names them. An entry goes when the manager stores the scan
/// ([`ScanAccounts::forget`]): the map holds running scans × their accounts.
#[derive(Debug, Default)]
pub struct ScanAccounts {
    by_scan: Mutex<HashMap<String, BTreeSet<String>>>,
}

impl ScanAccounts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        self.by_scan.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `scan` (the engine's id) sent a call under `key`.
    pub fn note(&self, scan: &str, key: &str) {
        let Some(account) = key.split('/').nth(1) else {
            return;
        };
        let account = match account.starts_with(tollgate_quota::key::UNRESOLVED_PREFIX) {
            true => "unresolved",
            false => account,
        };
        let mut by_scan = self.lock();
        match by_scan.get_mut(scan) {
            Some(accounts) if accounts.contains(account) => {}
            Some(accounts) => {
                accounts.insert(account.to_string());
            }
            None => {
                by_scan.insert(scan.to_string(), BTreeSet::from([account.to_string()]));
            }
        }
    }

    /// The accounts `scan` has sent calls for so far, sorted.
    pub fn of(&self, scan: &str) -> Vec<String> {
        self.lock()
            .get(scan)
            .map(|a| a.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The scan is stored: forget it.
    pub fn forget(&self, scan: &str) {
        self.lock().remove(scan);
    }

    /// Scans held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// No scan is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn prune(rings: &mut Rings, now: u64) {
    rings.by_key.retain(|_, r| !r.expired(now));
    if rings.by_key.capacity() > 2 * rings.by_key.len() + MIN_HIGH_WATER {
        rings.by_key.shrink_to(2 * rings.by_key.len());
    }
    rings.high_water = (2 * rings.by_key.len()).max(MIN_HIGH_WATER);
    rings.pruned_at = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_800_000_000_000;
    const KEY: &str = "aws/123456789012/us-east-1/kms:GetKeyLastUsage";

    fn at(seconds: u64) -> u64 {
        T0 + seconds * 1000
    }

    #[test]
    fn a_key_s_window_holds_its_last_five_minutes_oldest_first() {
        let activity = Activity::default();
        activity.record(KEY, at(0), 1, 0);
        activity.record(KEY, at(5), 2, 1);
        activity.record(KEY, at(25), 4, 0);
        // Out of order but inside the window: counted where it belongs.
        activity.record(KEY, at(12), 1, 1);
        let s = activity.series(KEY, at(25)).unwrap();
        assert_eq!(s.admitted.len(), BUCKETS);
        let tail = |v: &[u32]| v[BUCKETS - 3..].to_vec();
        assert_eq!(tail(&s.admitted), [3, 1, 4], "T0..10 s, 10..20 s, 20..30 s");
        assert_eq!(tail(&s.throttled), [1, 1, 0]);
        // Later, the old buckets slide out of the window.
        let s = activity.series(KEY, at(300)).unwrap();
        assert_eq!(
            s.admitted.iter().sum::<u32>(),
            5,
            "the first bucket left: {s:?}"
        );
        assert_eq!(activity.series(KEY, at(330)), None, "all of it left");
    }

    #[test]
    fn an_event_older_than_the_window_is_ignored_and_a_long_gap_clears_the_ring() {
        let activity = Activity::default();
        activity.record(KEY, at(400), 1, 0);
        activity.record(KEY, at(10), 7, 7);
        let s = activity.series(KEY, at(400)).unwrap();
        assert_eq!(s.admitted.iter().sum::<u32>(), 1);
        activity.record(KEY, at(4000), 2, 0);
        let s = activity.series(KEY, at(4000)).unwrap();
        assert_eq!(
            s.admitted.iter().sum::<u32>(),
            2,
            "nothing of before the gap"
        );
    }

    #[test]
    fn a_scan_s_accounts_are_noted_once_each_and_forgotten_with_it() {
        let accounts = ScanAccounts::default();
        for scan in 0..100 {
            for account in 0..50u64 {
                for region in ["us-east-1", "eu-west-1"] {
                    let key = format!("aws/{:012}/{region}/kms:ListKeys", account);
                    accounts.note(&format!("scan-{scan}"), &key);
                }
            }
        }
        accounts.note(
            "scan-u",
            "aws/unresolved:scan-00000000000000a1/us-east-1/kms:ListKeys",
        );
        assert_eq!(accounts.of("scan-7").len(), 50);
        assert_eq!(accounts.of("scan-7")[0], "000000000000");
        assert_eq!(accounts.of("scan-u"), ["unresolved"]);
        assert_eq!(accounts.len(), 101);
        for scan in 0..100 {
            accounts.forget(&format!("scan-{scan}"));
        }
        accounts.forget("scan-u");
        assert!(accounts.is_empty(), "nothing of a stored scan is kept");
        assert!(accounts.of("scan-7").is_empty());
    }

    #[test]
    fn ten_thousand_keys_go_idle_and_their_rings_are_dropped() {
        let activity = Activity::default();
        for account in 0..50u64 {
            for region in 0..20 {
                for op in 0..10 {
                    let key = format!("aws/{:012}/region-{region}/svc:Op{op}", account);
                    activity.record(&key, at(0), 1, u32::from(op == 0));
                }
            }
        }
        assert_eq!(activity.len(), 10_000);
        let per_account = activity.per_account(at(0));
        assert_eq!(per_account.len(), 50);
        assert_eq!(per_account["000000000007"], (200, 20));
        // Five minutes on, one key is used again: every idle ring goes.
        activity.record(KEY, at(300), 1, 0);
        assert_eq!(activity.len(), 1, "only the key in use keeps a ring");
        assert!(activity.per_account(at(300)).contains_key("123456789012"));
    }
}
