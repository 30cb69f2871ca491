//! The inventory store: every scan's resources, coverage and changes in a real database,
//! SQLite (embedded, the default) or PostgreSQL (a team's server), so that "which account
//! has an unencrypted volume?", "what vanished since yesterday?" and "since when has this
//! bucket existed?" are SQL queries, and their answers are honest: a resource missing
//! from a scan is gone only if the scan listed its type, account and region completely
//! (`rules.rs`, docs/inventory.md "Removed means proven gone").
//!
//! The store reads the report as JSON (docs/report.md), not the scan crate's types, so
//! a report file can be stored as well as a scan, and nothing here links the AWS SDK.
//!
//! # Layout
//! - `url`: store URLs, their redaction, the default SQLite file.
//! - `report`: the report decoded into account documents (path-aware errors).
//! - `model`: keys, statuses, rows and summaries.
//! - `rules`: the pure decisions (removed or not verified, which fields changed).
//! - `merge`: one account's write planned in memory, shared by both engines.
//! - `schema`: the migrations of both dialects and the version check.
//! - `backend`: the engine trait; `sqlite` and `postgres` implement it.
//! - `query`: the read filters, pages and cursors, and their SQL.
//! - `history`: one resource's row and versions, with what changed in each.
//! - `store`: [`Store`], the one type callers hold.
//! - `bench`: synthetic reports for benchmarks.
//! - `error`: [`InventoryError`].
#![forbid(unsafe_code)]

pub mod backend;
pub mod bench;
mod error;
mod history;
mod merge;
mod model;
mod postgres;
mod query;
mod report;
pub mod rules;
pub mod schema;
mod sqlite;
mod store;
pub mod time;
mod url;

pub use crate::error::{InventoryError, InventoryErrorKind, Result};
pub use crate::history::{ResourceHistory, Version};
pub use crate::model::{
    ChangeKind, ChangeRow, CoverageStatus, Json, ResourceKey, ResourceRow, ScanId, ScanMeta,
    ScanOutcome, ScanStatus, StoreSummary, VersionRow, WriteCounts, UNKNOWN,
};
pub use crate::postgres::PostgresBackend;
pub use crate::query::{
    ChangeFilter, ChangeOrder, Page, PageSize, ResourceFilter, Since, TypePattern,
};
pub use crate::report::{AccountDoc, CoverageLine, Fields, Item, Report};
pub use crate::sqlite::{SqliteBackend, BUSY_TIMEOUT};
pub use crate::store::Store;
pub use crate::url::{default_sqlite_path, default_sqlite_path_from, PostgresUrl, StoreUrl};
