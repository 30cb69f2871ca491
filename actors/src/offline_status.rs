//! The quota state of an admission directory when no coordinator runs: what
//! `tollgate status` shows without one.
//!
//! Why here and not in the binary: reading the stored state is a coordinator's act in
//! miniature. It takes the coordinator lock (so no process starts admitting from the
//! state while it is read), decodes every record as a restore would (reservations of dead
//! owners reaped, an allowance's counter charged with the record's lease), and releases
//! the directory marked cleanly shut down, because reading changed nothing and the next
//! coordinator must not treat the state as a crash's. When a coordinator holds the
//! directory, nothing is read: its live view comes over the socket instead
//! ([`AdmissionHandle::coordination`](crate::AdmissionHandle::coordination)).

use std::path::PathBuf;

use serde::Serialize;
use tollgate_quota::schedule::DEFAULT_SCAN_CAP;
use tollgate_quota::{
    AllowanceCounter, PolicyTable, QuotaKey, QuotaRecord, QuotaSnapshot, QuotaState, ReadTime,
    Timestamp, WallClock,
};
use tollgate_storage::{AdmissionDir, CoordinatorLock, QuotaStore, SledStore, StorageError};

use crate::messages::{AllowanceStatus, CalendarStatus};

/// What an admission directory holds, read without a coordinator.
#[derive(Debug, Clone, PartialEq)]
pub enum OfflineStatus {
    /// No process held the directory: every stored key's state at the reading instant.
    Stored(Vec<StoredKeyStatus>),
    /// A coordinator holds the directory; ask it for the live state.
    Coordinated,
}

/// One stored key, as a coordinator would restore it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredKeyStatus {
    /// Canonical key.
    pub key: String,
    /// Bucket, window, penalty, allowance, reservations.
    pub state: QuotaSnapshot,
    /// The key's schedule entry in force, or its allowance's use, if it has either.
    pub calendar: Option<CalendarStatus>,
}

/// The stored state could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfflineStatusError {
    /// The lock, the store or its clean-shutdown marker failed (the message says how).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A record does not decode.
    #[error(
        "{key}: stored quota state is corrupted; stop every tollgate process using {}, move \
         its state aside, then retry",
        dir.display()
    )]
    Corrupted {
        /// The record's key.
        key: String,
        /// The admission directory.
        dir: PathBuf,
        /// Why it does not decode.
        #[source]
        source: serde_json::Error,
    },
}

/// Read `dir`'s stored state at `now` with `policies`' calendars, unless a coordinator
/// holds it. Takes the lock only for the read and marks the state cleanly shut down
/// (after storing, if the last coordinator crashed, the instant its unrecorded grants are
/// charged at).
pub fn read_offline(
    dir: &AdmissionDir,
    policies: &PolicyTable,
    now: Timestamp,
) -> Result<OfflineStatus, OfflineStatusError> {
    let Some(lock) = CoordinatorLock::try_acquire(dir)? else {
        return Ok(OfflineStatus::Coordinated);
    };
    let opened = SledStore::open(dir, &lock)?;
    // Keep a crash's evidence past the clean mark below: keys without a record are
    // charged what the dead coordinator may have granted on them.
    crate::fresh_keys::settle(&opened, now)?;
    let mut keys = Vec::new();
    for (key, bytes) in opened.store.entries()? {
        let record: QuotaRecord =
            serde_json::from_slice(&bytes).map_err(|source| OfflineStatusError::Corrupted {
                key: key.clone(),
                dir: dir.path().to_path_buf(),
                source,
            })?;
        let lease_cost = record.lease.map(|l| l.cost);
        let calendar = stored_calendar(policies, &key, &bytes, lease_cost, now);
        let (state, _) = QuotaState::from_record(record, now, &tollgate_storage::pid_alive);
        keys.push(StoredKeyStatus {
            key,
            state: state.snapshot(now),
            calendar,
        });
    }
    opened.store.mark_clean_shutdown()?;
    Ok(OfflineStatus::Stored(keys))
}

/// The stored counter of an allowance key's record.
#[derive(serde::Deserialize)]
struct StoredAllowance {
    #[serde(default)]
    allowance: Option<AllowanceCounter>,
}

/// A key's calendar from the configuration and its stored record.
fn stored_calendar(
    table: &PolicyTable,
    key: &str,
    bytes: &[u8],
    lease_cost: Option<f64>,
    now: Timestamp,
) -> Option<CalendarStatus> {
    let key: QuotaKey = key.parse().ok()?;
    let at = WallClock::from_timestamp(now, WallClock::UNIX_EPOCH);
    match table.read_time_for_key(&key)? {
        ReadTime::Schedule(_) => {
            let resolved = table.resolve_for_name(
                key.service_group(),
                at,
                at.saturating_add(DEFAULT_SCAN_CAP),
            );
            Some(CalendarStatus {
                entry: resolved.entry,
                valid_until: Some(resolved.valid_until),
                allowance: None,
            })
        }
        ReadTime::Allowance(allowance) => {
            let stored = serde_json::from_slice::<StoredAllowance>(bytes)
                .ok()
                .and_then(|s| s.allowance);
            let mut counter = match (stored, lease_cost) {
                (Some(c), Some(cost)) => {
                    AllowanceCounter::restore(allowance, &c, cost.ceil() as u64, at)
                }
                (Some(c), None) => c,
                (None, _) => AllowanceCounter::new(allowance, 0, at),
            };
            counter.roll(allowance, at);
            Some(CalendarStatus {
                entry: None,
                valid_until: None,
                allowance: Some(AllowanceStatus::of(allowance, &counter)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_quota::{Handover, Policy};
    use tollgate_storage::PreviousShutdown;

    const KEY: &str = "aws/123456789012/us-east-1/kms:GetKeyLastUsage";

    fn dir_in(tmp: &tempfile::TempDir) -> AdmissionDir {
        AdmissionDir::at(tmp.path().join("admission")).unwrap()
    }

    #[test]
    fn an_idle_directory_shows_its_stored_keys_and_is_left_cleanly_shut_down() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_in(&tmp);
        let now = Timestamp::from_micros(5_000_000);
        {
            let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
            let opened = SledStore::open(&dir, &lock).unwrap();
            let policy = Policy::new(2.0, 2.0, 10, 20).unwrap();
            let record = QuotaState::new(policy, now).to_record(Handover::Graceful, now);
            let bytes = serde_json::to_vec(&record).unwrap();
            opened.store.save(KEY, &bytes).unwrap();
            opened.store.flush().unwrap();
            // Dropped without a clean-shutdown mark: a crash.
        }
        let OfflineStatus::Stored(keys) =
            read_offline(&dir, &PolicyTable::defaults(), now).unwrap()
        else {
            panic!("no coordinator runs, so the state is read");
        };
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].key, KEY);
        assert_eq!(keys[0].calendar, None);
        let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        let opened = SledStore::open(&dir, &lock).unwrap();
        assert_eq!(
            opened.previous_shutdown,
            PreviousShutdown::Clean,
            "reading marked the state cleanly shut down"
        );
    }

    #[test]
    fn a_held_directory_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_in(&tmp);
        let _held = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        let status = read_offline(&dir, &PolicyTable::defaults(), Timestamp::from_micros(0));
        assert_eq!(status.unwrap(), OfflineStatus::Coordinated);
    }

    #[test]
    fn a_corrupted_record_names_its_key_and_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir_in(&tmp);
        {
            let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
            let opened = SledStore::open(&dir, &lock).unwrap();
            opened.store.save(KEY, b"not json").unwrap();
            opened.store.flush().unwrap();
        }
        let err = read_offline(&dir, &PolicyTable::defaults(), Timestamp::from_micros(0))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(KEY), "{err}");
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
    }
}
