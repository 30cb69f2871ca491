//! [`Store`]: what a caller (the CLI, the service, a bench) holds. It opens the engine a
//! URL names, decodes reports at the edge and hands typed values to the engine.
//!
//! Writing a scan is three calls, so an organization scan commits account by account
//! and a crash loses at most the account in flight: [`Store::begin_scan`], then
//! [`Store::write_account`] per account, then [`Store::finish_scan`].
//! [`Store::write_report`] does the three for a finished report.

use serde_json::Value;

use crate::backend::Backend;
use crate::error::{InventoryError, InventoryErrorKind, Result};
use crate::history::ResourceHistory;
use crate::model::{
    ChangeRow, ResourceKey, ResourceRow, ScanId, ScanMeta, ScanOutcome, StoreSummary, VersionRow,
    WriteCounts,
};
use crate::postgres::PostgresBackend;
use crate::query::{ChangeFilter, Page, ResourceFilter};
use crate::report::{AccountDoc, Report};
use crate::sqlite::SqliteBackend;
use crate::url::{default_sqlite_path, StoreUrl};

/// An open inventory store.
pub struct Store {
    url: StoreUrl,
    backend: Box<dyn Backend>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.url.redacted())
    }
}

impl Store {
    /// Opens the store `url` names (`sqlite:PATH`, a path, `postgres://...`,
    /// `postgresql://...`), creating and migrating its schema as needed.
    pub fn open(url: &str) -> Result<Store> {
        Store::open_url(StoreUrl::parse(url)?)
    }

    /// Opens a parsed store URL.
    pub fn open_url(url: StoreUrl) -> Result<Store> {
        let backend: Box<dyn Backend> = match &url {
            StoreUrl::Sqlite(path) => Box::new(SqliteBackend::open(path)?),
            StoreUrl::Postgres(postgres) => Box::new(PostgresBackend::open(postgres)?),
        };
        Ok(Store { url, backend })
    }

    /// Opens the default store, [`default_sqlite_path`].
    pub fn open_default() -> Result<Store> {
        let path = default_sqlite_path().ok_or_else(|| {
            InventoryError::new(
                InventoryErrorKind::InvalidUrl,
                "neither XDG_DATA_HOME nor HOME is set, so there is no default inventory store: pass --store sqlite:PATH",
            )
        })?;
        Store::open_url(StoreUrl::Sqlite(path))
    }

    /// The store's URL with any password replaced by `***`.
    pub fn redacted_url(&self) -> String {
        self.url.redacted()
    }

    /// The schema version the store holds.
    pub fn schema_version(&mut self) -> Result<u32> {
        self.backend.schema_version()
    }

    /// Records a scan as running; its accounts follow with [`Store::write_account`].
    pub fn begin_scan(&mut self, meta: &ScanMeta) -> Result<ScanId> {
        let mut meta = meta.clone();
        meta.started_at = crate::time::normalize(&meta.started_at)?;
        self.backend.begin_scan(&meta)
    }

    /// Writes one account document (a one-account report, or one of an organization
    /// report's `accounts[]`) in one transaction.
    pub fn write_account(&mut self, scan: ScanId, account_doc: &Value) -> Result<WriteCounts> {
        let doc = AccountDoc::from_value(account_doc)?;
        self.backend.write_account(scan, &doc)
    }

    /// Records how the scan ended (`finished_at` RFC 3339).
    pub fn finish_scan(&mut self, scan: ScanId, outcome: &ScanOutcome) -> Result<()> {
        let mut outcome = outcome.clone();
        outcome.finished_at = crate::time::normalize(&outcome.finished_at)?;
        self.backend.finish_scan(scan, &outcome)
    }

    /// Stores a whole report (one account or an organization), account by account; the
    /// scan's status is the one its datasets add up to. The summary is the report's
    /// `store` field. On an error, the accounts before it stay committed and the scan
    /// stays `running`.
    pub fn write_report(&mut self, report: &Value) -> Result<StoreSummary> {
        let decoded = Report::from_value(report)?;
        let scan = self.backend.begin_scan(&decoded.meta)?;
        let mut counts = WriteCounts::default();
        for doc in &decoded.accounts {
            counts.add(self.backend.write_account(scan, doc)?);
        }
        let finished_at = decoded
            .finished_at
            .clone()
            .unwrap_or_else(|| decoded.meta.started_at.clone());
        self.backend.finish_scan(
            scan,
            &ScanOutcome {
                status: decoded.status,
                finished_at,
            },
        )?;
        Ok(StoreSummary {
            url: self.redacted_url(),
            scan,
            accounts: decoded.accounts.len() as u64,
            counts,
        })
    }

    /// One page of the current view.
    pub fn resources(&mut self, filter: &ResourceFilter) -> Result<Page<ResourceRow>> {
        self.backend.resources(filter)
    }

    /// One page of changes, oldest first (or newest, as the filter's `order` says).
    pub fn changes(&mut self, filter: &ChangeFilter) -> Result<Page<ChangeRow>> {
        self.backend.changes(filter)
    }

    /// One resource's row of the current view, gone or not (`gone_since` says);
    /// `None` if the store never held it.
    pub fn resource(&mut self, key: &ResourceKey) -> Result<Option<ResourceRow>> {
        self.backend.resource(key)
    }

    /// Every version of one resource, oldest first.
    pub fn history(&mut self, key: &ResourceKey) -> Result<Vec<VersionRow>> {
        self.backend.history(key)
    }

    /// One resource's current row and versions, each with what changed in it; `None`
    /// when the store never held it.
    pub fn resource_history(&mut self, key: &ResourceKey) -> Result<Option<ResourceHistory>> {
        let resource = self.backend.resource(key)?;
        let versions = self.backend.history(key)?;
        Ok(ResourceHistory::new(resource, versions))
    }

    /// Test hook: the next account write fails after writing its rows, before commit.
    #[doc(hidden)]
    pub fn fail_next_write_before_commit(&mut self) {
        self.backend.fail_next_write_before_commit();
    }
}
