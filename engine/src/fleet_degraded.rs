//! The report's `fleet_degraded` note: which of a scan's keys admitted without the fleet
//! table while the scan ran (issue 13, "Degraded mode").
//!
//! Why ask the coordinator rather than watch grants: a grant looks the same under a
//! fleet block and under the local share, and the coordinator may be another process.
//! The coordinator keeps each key's latest degraded spell (`KeyStatus::fleet_degraded`,
//! kept after the key rejoins), so one status request when the scan ends tells which of
//! its keys degraded between its start and its end. Only a supervisor whose engine runs
//! in fleet mode asks ([`DegradedNotes::Ask`]): without `TOLLGATE_FLEET_TABLE` nothing
//! changes.

use std::collections::BTreeSet;
use std::time::Duration;

use tollgate_actors::{AdmissionHandle, KeyStatus};
use tollgate_quota::fleet::FleetMode;
use tollgate_quota::Timestamp;

use crate::report::{rfc3339, DegradedMode, FleetDegraded};

/// Whether the end of a scan asks the coordinator which of its keys degraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DegradedNotes {
    /// Not in fleet mode: no key can degrade, nothing to ask.
    #[default]
    Skip,
    /// In fleet mode: ask once per scan, at its end.
    Ask,
}

impl DegradedNotes {
    /// `Ask` with fleet mode, `Skip` without.
    pub fn for_spec(fleet: &Option<tollgate_actors::FleetSpec>) -> DegradedNotes {
        match fleet {
            Some(_) => DegradedNotes::Ask,
            None => DegradedNotes::Skip,
        }
    }
}

/// How long the end of a scan waits for the coordinator's status.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// The keys among `used` whose latest degraded spell overlaps `[from, to]`.
pub fn degraded_keys(
    statuses: &[KeyStatus],
    used: &BTreeSet<String>,
    from: Timestamp,
    to: Timestamp,
) -> Vec<FleetDegraded> {
    statuses
        .iter()
        .filter(|s| used.contains(&s.key))
        .filter_map(|s| {
            let spell = s.fleet_degraded.as_ref()?;
            spell.overlaps(from, to).then(|| FleetDegraded {
                key: s.key.clone(),
                mode: match spell.mode {
                    FleetMode::Stop => DegradedMode::Stop,
                    _ => DegradedMode::LocalShare,
                },
                error: spell.error.clone(),
                since: rfc3339(spell.since),
                rejoined_at: spell.rejoined_at.map(rfc3339),
            })
        })
        .collect()
}

/// Ask `admission` which of `used` degraded during `[from, to]`. When the status cannot
/// be read in time the note cannot be built: a warning says so (the degradation itself
/// was already warned about by the coordinator).
pub async fn ask(
    admission: AdmissionHandle,
    used: BTreeSet<String>,
    from: Timestamp,
    to: Timestamp,
) -> Vec<FleetDegraded> {
    match tokio::time::timeout(STATUS_TIMEOUT, admission.status()).await {
        Ok(Ok(statuses)) => degraded_keys(&statuses, &used, from, to),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the report cannot say whether fleet admission degraded: the coordinator's status failed");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!(
                "the report cannot say whether fleet admission degraded: no coordinator status within {STATUS_TIMEOUT:?}"
            );
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_actors::FleetDegradedSpell;
    use tollgate_quota::{Policy, QuotaState};

    const KEY: &str = "aws/123456789012/us-east-1/kms:GetKeyLastUsage";

    fn at(s: u64) -> Timestamp {
        Timestamp::from_millis(1_700_000_000_000 + s * 1000)
    }

    fn status(key: &str, spell: Option<FleetDegradedSpell>) -> KeyStatus {
        let policy = Policy::new(10.0, 5.0, 4, 4).unwrap();
        KeyStatus {
            key: key.to_string(),
            state: QuotaState::new(policy, at(0)).snapshot(at(0)),
            waiting_for_reservation: 0,
            waiting_for_admission: 0,
            storage_failure: None,
            calendar: None,
            fleet: None,
            fleet_degraded: spell,
        }
    }

    fn spell(mode: FleetMode, since: u64, rejoined: Option<u64>) -> FleetDegradedSpell {
        FleetDegradedSpell {
            mode,
            error: "fleet DynamoDB table t: Unreachable".to_string(),
            since: at(since),
            rejoined_at: rejoined.map(at),
        }
    }

    #[test]
    fn only_the_scans_keys_degraded_during_the_scan_are_noted() {
        use FleetMode::*;
        let used: BTreeSet<String> = [KEY.to_string()].into();
        // The scan runs from 10 s to 20 s.
        for (spell, noted) in [
            (None, false),
            (Some(spell(LocalShare, 12, None)), true),
            (Some(spell(Stop, 5, None)), true),
            (Some(spell(LocalShare, 5, Some(11))), true),
            (Some(spell(LocalShare, 5, Some(9))), false),
            (Some(spell(LocalShare, 21, None)), false),
        ] {
            let out = degraded_keys(&[status(KEY, spell.clone())], &used, at(10), at(20));
            assert_eq!(out.len(), usize::from(noted), "{spell:?}: {out:?}");
        }
        let other = status(
            "aws/1/us-east-1/s3:ListBuckets",
            Some(spell(Stop, 12, None)),
        );
        assert!(degraded_keys(&[other], &used, at(10), at(20)).is_empty());
    }

    #[test]
    fn the_note_names_mode_error_and_times() {
        let used: BTreeSet<String> = [KEY.to_string()].into();
        let out = degraded_keys(
            &[status(KEY, Some(spell(FleetMode::Stop, 12, Some(15))))],
            &used,
            at(10),
            at(20),
        );
        assert_eq!(out[0].key, KEY);
        assert_eq!(out[0].mode, DegradedMode::Stop);
        assert!(out[0].error.contains("table t"));
        assert_eq!(out[0].since, rfc3339(at(12)));
        assert_eq!(out[0].rejoined_at, Some(rfc3339(at(15))));
    }
}
