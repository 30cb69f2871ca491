//! The manager's read side: what `GET /v1/scans`, `GET /v1/scans/{id}` and the report
//! route see — active scans as they are now (live progress), the rest as stored.

use tollgate_collectors::output::{Coverage, CoverageSummary, ThrottlingSummary};

use super::{ManagerError, ScanManager};
use crate::record::{OrganizationView, ProgressView, ScanDetail, ScanRecord, ScanSummary};

impl ScanManager {
    /// Every scan, newest first: the active ones as they are now, the rest as stored.
    pub fn list(&self) -> Result<Vec<ScanSummary>, ManagerError> {
        let mut records = self.shared.deps.history.records()?;
        let state = self.state();
        let mut summaries = Vec::with_capacity(records.len());
        for record in &mut records {
            match state.active.get(&record.scan_id) {
                Some(active) => summaries.push(self.active_summary(active)),
                None => summaries.push(record.summary()),
            }
        }
        Ok(summaries)
    }

    /// An active scan's summary, with the accounts it has called so far (its account
    /// too, while it has called exactly one).
    fn active_summary(&self, active: &super::Active) -> ScanSummary {
        let mut summary = active.record.summary();
        if let Some((engine_id, _)) = &active.engine {
            summary.accounts = self
                .shared
                .deps
                .metrics
                .scan_accounts()
                .of(&engine_id.to_string());
            if summary.account.is_none() && summary.accounts.len() == 1 {
                summary.account = summary.accounts.first().cloned();
            }
        }
        summary
    }

    /// One scan with per-dataset progress.
    pub fn show(&self, scan_id: &str) -> Result<ScanDetail, ManagerError> {
        {
            let state = self.state();
            if let Some(active) = state.active.get(scan_id) {
                let progress = match &active.engine {
                    Some((_, progress)) => progress
                        .iter()
                        .map(|p| ProgressView::from(&p.snapshot()))
                        .collect(),
                    None => active.record.stored_progress(),
                };
                let organization = match (&active.organization, active.request.organization()) {
                    (Some(handle), _) => Some(OrganizationView::from(&handle.progress())),
                    (None, Some(_)) => Some(OrganizationView {
                        listed: None,
                        accounts: Vec::new(),
                    }),
                    (None, None) => None,
                };
                return Ok(ScanDetail {
                    summary: self.active_summary(active),
                    progress,
                    throttling: None,
                    coverage: None,
                    organization,
                    store: None,
                });
            }
        }
        let record = self.stored(scan_id)?;
        let (throttling, coverage) = match record.status.is_active() {
            true => (None, None),
            false => (
                self.stored_throttling(scan_id),
                self.stored_coverage(scan_id),
            ),
        };
        let organization = match record.final_accounts.is_empty() {
            true => None,
            false => Some(OrganizationView {
                listed: self.stored_listed(scan_id),
                accounts: record.final_accounts.clone(),
            }),
        };
        Ok(ScanDetail {
            summary: record.summary(),
            progress: record.stored_progress(),
            throttling,
            coverage,
            organization,
            store: record.store.clone(),
        })
    }

    /// The stored report's coverage entries, summarised (a one-account report's datasets,
    /// or every account's of an organization report; items are skipped, not built).
    fn stored_coverage(&self, scan_id: &str) -> Option<CoverageSummary> {
        #[derive(serde::Deserialize)]
        struct OnlyCoverage {
            #[serde(default)]
            coverage: Vec<Coverage>,
        }
        #[derive(serde::Deserialize)]
        struct Account {
            #[serde(default)]
            datasets: std::collections::BTreeMap<String, OnlyCoverage>,
        }
        #[derive(serde::Deserialize)]
        struct Report {
            #[serde(flatten)]
            account: Account,
            #[serde(default)]
            accounts: Vec<Account>,
        }
        let bytes = self.shared.deps.history.report_json(scan_id).ok()??;
        let report = serde_json::from_slice::<Report>(&bytes).ok()?;
        let entries: Vec<Coverage> = std::iter::once(report.account)
            .chain(report.accounts)
            .flat_map(|a| a.datasets.into_values())
            .flat_map(|d| d.coverage)
            .collect();
        Some(CoverageSummary::of(&entries))
    }

    /// The stored report's `throttling` block (the rest of the report is skipped, not
    /// built).
    fn stored_throttling(&self, scan_id: &str) -> Option<ThrottlingSummary> {
        #[derive(serde::Deserialize)]
        struct OnlyThrottling {
            #[serde(default)]
            throttling: Option<ThrottlingSummary>,
        }
        let bytes = match self.shared.deps.history.report_json(scan_id) {
            Ok(bytes) => bytes?,
            Err(e) => {
                tracing::warn!(%scan_id, error = %e, "could not read the stored report");
                return None;
            }
        };
        serde_json::from_slice::<OnlyThrottling>(&bytes)
            .ok()?
            .throttling
    }

    /// The stored organization report's `organization.listed` (the rest is skipped).
    fn stored_listed(&self, scan_id: &str) -> Option<u64> {
        #[derive(serde::Deserialize)]
        struct Listed {
            listed: u64,
        }
        #[derive(serde::Deserialize)]
        struct OnlyOrganization {
            organization: Listed,
        }
        let bytes = self.shared.deps.history.report_json(scan_id).ok()??;
        serde_json::from_slice::<OnlyOrganization>(&bytes)
            .ok()
            .map(|r| r.organization.listed)
    }

    pub(super) fn stored(&self, scan_id: &str) -> Result<ScanRecord, ManagerError> {
        self.shared
            .deps
            .history
            .record(scan_id)?
            .ok_or_else(|| ManagerError::UnknownScan(scan_id.to_string()))
    }

    /// A finished scan's report, as the JSON `tollgate discover` writes.
    pub fn report_json(&self, scan_id: &str) -> Result<Vec<u8>, ManagerError> {
        if let Some(active) = self.state().active.get(scan_id) {
            return Err(ManagerError::NotFinished(
                scan_id.to_string(),
                active.record.status.as_str(),
            ));
        }
        let record = self.stored(scan_id)?;
        if record.status.is_active() {
            // Stored active but not in the table: another instance's, or a stop in progress.
            return Err(ManagerError::NotFinished(
                scan_id.to_string(),
                record.status.as_str(),
            ));
        }
        self.shared
            .deps
            .history
            .report_json(scan_id)?
            .ok_or_else(|| ManagerError::NoReport(scan_id.to_string()))
    }
}
