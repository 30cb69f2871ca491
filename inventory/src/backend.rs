//! The one trait both engines implement.
//!
//! Why a trait with whole operations and not a SQL abstraction? The engines differ in
//! how they write fast and safely together (SQLite: `BEGIN IMMEDIATE` and cached
//! prepared statements; PostgreSQL: an advisory lock per account and `COPY`), and those
//! differences are the whole of each implementation. What they share (the rules of a
//! write, `merge::plan`; the SQL of a read, `query`) lives outside them, once.

use crate::error::Result;
use crate::model::{
    ChangeRow, ResourceKey, ResourceRow, ScanId, ScanMeta, ScanOutcome, VersionRow, WriteCounts,
};
use crate::query::{ChangeFilter, Page, ResourceFilter};
use crate::report::AccountDoc;

/// A store engine: SQLite or PostgreSQL.
pub trait Backend: Send {
    /// The schema version the store holds (after opening: [`crate::schema::LATEST`]).
    fn schema_version(&mut self) -> Result<u32>;
    /// Records a scan as `running` and returns its id.
    fn begin_scan(&mut self, meta: &ScanMeta) -> Result<ScanId>;
    /// Writes one account's report in one transaction: all of it, or nothing.
    fn write_account(&mut self, scan: ScanId, doc: &AccountDoc) -> Result<WriteCounts>;
    /// Records how the scan ended.
    fn finish_scan(&mut self, scan: ScanId, outcome: &ScanOutcome) -> Result<()>;
    /// One page of the current view.
    fn resources(&mut self, filter: &ResourceFilter) -> Result<Page<ResourceRow>>;
    /// One page of changes.
    fn changes(&mut self, filter: &ChangeFilter) -> Result<Page<ChangeRow>>;
    /// One resource's row of the current view, gone or not; `None` if never stored.
    fn resource(&mut self, key: &ResourceKey) -> Result<Option<ResourceRow>>;
    /// Every version of one resource, oldest first.
    fn history(&mut self, key: &ResourceKey) -> Result<Vec<VersionRow>>;
    /// Test hook: the next `write_account` fails after writing its rows, before its
    /// commit (what a crash in the middle of an account does to the transaction).
    #[doc(hidden)]
    fn fail_next_write_before_commit(&mut self);
}
