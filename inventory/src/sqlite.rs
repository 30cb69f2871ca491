//! The SQLite engine: one file, the default store.
//!
//! Several processes may write one file at once: the journal is WAL (readers never
//! block the writer), every write transaction starts `BEGIN IMMEDIATE` (it takes the
//! write lock first, so two writers never deadlock upgrading a read lock), and a writer
//! that finds the lock held waits up to [`BUSY_TIMEOUT`] instead of failing. Inserts go
//! through cached prepared statements inside the account's one transaction. The file is
//! created 0600 in a directory created 0700 (WAL and shared-memory files take the
//! database file's mode), since an inventory is a map of an estate.

use std::collections::HashMap;
use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{Map, Value};

use crate::backend::Backend;
use crate::error::{InventoryError, InventoryErrorKind, Result};
use crate::merge::{self, Stored};
use crate::model::{
    ChangeKind, ChangeRow, Json, ResourceKey, ResourceRow, ScanId, ScanMeta, ScanOutcome,
    VersionRow, WriteCounts,
};
use crate::query::{self, ChangeFilter, Dialect, Page, Param, ResourceFilter};
use crate::report::AccountDoc;
use crate::schema;

/// How long a writer waits for another process's write transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// A store in a SQLite file.
pub struct SqliteBackend {
    conn: Connection,
    label: String,
    fail_before_commit: bool,
}

/// Switch the connection to the write-ahead log, and say which journal mode it has.
///
/// Why a loop: switching a new file to WAL takes a lock that SQLite does not wait for
/// with the busy handler (a reader upgrading its lock could deadlock), so a second
/// process or thread that opens the file while the first is switching it gets
/// `SQLITE_BUSY` at once, whatever the busy timeout (seen: two writers opening one new
/// file at once, in `two_writers_at_once_lose_no_row`). It is retried every 10 ms for as
/// long as the busy timeout; counted, not timed, so no clock is read.
fn wal_mode(conn: &Connection) -> rusqlite::Result<String> {
    const PAUSE: std::time::Duration = std::time::Duration::from_millis(10);
    let tries = BUSY_TIMEOUT.as_millis() / PAUSE.as_millis();
    let mut tried = 0;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && tried < tries =>
            {
                tried += 1;
                std::thread::sleep(PAUSE);
            }
            other => return other,
        }
    }
}

impl SqliteBackend {
    /// Opens (creating if needed) the file at `path` and migrates its schema.
    pub fn open(path: &Path) -> Result<SqliteBackend> {
        let label = format!("sqlite:{}", path.display());
        create_private_file(path, &label)?;
        let conn = Connection::open(path).map_err(|err| unreachable(&label, err))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|err| unreachable(&label, err))?;
        let mode = wal_mode(&conn).map_err(|err| unreachable(&label, err))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(InventoryError::new(
                InventoryErrorKind::Unreachable,
                format!(
                    "the inventory store {label} cannot use a write-ahead log (journal mode {mode}): \
                     put it on a local file system, not a network share"
                ),
            ));
        }
        // NORMAL is safe with WAL: a power cut may lose the last commits, never corrupt.
        // A 64 MiB page cache: a 100,000-resource account touches that many index pages.
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536")
            .map_err(|err| unreachable(&label, err))?;
        let mut backend = SqliteBackend {
            conn,
            label,
            fail_before_commit: false,
        };
        backend.migrate()?;
        Ok(backend)
    }

    fn db(&self, action: &str) -> impl Fn(rusqlite::Error) -> InventoryError + '_ {
        let action = action.to_string();
        move |err| InventoryError::database(&action, &self.label, err)
    }

    fn migrate(&mut self) -> Result<()> {
        let label = self.label.clone();
        let fail = |err| InventoryError::database("migrate the schema", &label, err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS tollgate_schema (version INTEGER NOT NULL)")
            .map_err(fail)?;
        let found: Option<u32> = tx
            .query_row("SELECT max(version) FROM tollgate_schema", [], |row| {
                row.get(0)
            })
            .map_err(fail)?;
        let steps = schema::steps_from(found.unwrap_or(0), &label)?;
        for step in steps {
            tx.execute_batch(step.sqlite).map_err(|err| {
                InventoryError::new(
                    InventoryErrorKind::Schema,
                    format!(
                        "cannot migrate the inventory store {label} to schema version {}: {err}; nothing was changed, retry or report a bug",
                        step.version
                    ),
                )
                .with_source(err)
            })?;
        }
        if !steps.is_empty() {
            tx.execute("DELETE FROM tollgate_schema", [])
                .map_err(fail)?;
            tx.execute(
                "INSERT INTO tollgate_schema (version) VALUES (?1)",
                [schema::LATEST],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }
}

fn unreachable(label: &str, err: rusqlite::Error) -> InventoryError {
    InventoryError::new(
        InventoryErrorKind::Unreachable,
        format!(
            "cannot open the inventory store {label}: {err}; check the path and its permissions"
        ),
    )
    .with_source(err)
}

/// Creates the directory (0700) and the file (0600) if they are missing.
fn create_private_file(path: &Path, label: &str) -> Result<()> {
    let io_error = |what: &str, at: &Path, err: std::io::Error| {
        InventoryError::new(
            InventoryErrorKind::Unreachable,
            format!(
                "cannot create the inventory store {label}: {what} {}: {err}; check the permissions of its directory, or choose another store",
                at.display()
            ),
        )
        .with_source(err)
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        if !dir.exists() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|err| io_error("cannot create the directory", dir, err))?;
        }
    }
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|err| io_error("cannot create the file", path, err))?;
    Ok(())
}

fn parse_object(text: &str) -> Map<String, Value> {
    serde_json::from_str(text).unwrap_or_default()
}

/// The start time of `scan` (the time of every row its writes stamp), if it exists.
fn scan_started_at(conn: &Connection, scan: ScanId) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT started_at FROM scans WHERE id = ?1",
        [scan.0],
        |row| row.get(0),
    )
    .optional()
}

/// The resources the store holds for the accounts of `doc`, by key.
fn load_stored(
    conn: &Connection,
    doc: &AccountDoc,
) -> rusqlite::Result<HashMap<ResourceKey, Stored>> {
    let mut stored = HashMap::new();
    let mut load = conn.prepare_cached(
        "SELECT region, resource_type, id, arn, tags, properties, fields, gone_since IS NOT NULL, tags_only,
                first_scan, first_seen, versioned
         FROM resources WHERE account = ?1",
    )?;
    for account in accounts_of(doc) {
        let rows = load.query_map([&account], |row| {
            let key = ResourceKey {
                account: account.clone(),
                region: row.get(0)?,
                resource_type: row.get(1)?,
                id: row.get(2)?,
            };
            let tags: String = row.get(4)?;
            let properties: String = row.get(5)?;
            let fields: String = row.get(6)?;
            Ok((
                key,
                Stored {
                    arn: row.get(3)?,
                    tags: parse_object(&tags),
                    properties: parse_object(&properties),
                    fields: parse_object(&fields),
                    gone: row.get(7)?,
                    tags_only: row.get(8)?,
                    first_scan: row.get(9)?,
                    first_seen: row.get(10)?,
                    versioned: row.get(11)?,
                },
            ))
        })?;
        for row in rows {
            let (key, old) = row?;
            stored.insert(key, old);
        }
    }
    Ok(stored)
}

/// Records the coverage lines of `doc` under `scan`.
fn insert_coverage(conn: &Connection, scan: ScanId, doc: &AccountDoc) -> rusqlite::Result<()> {
    let mut coverage = conn.prepare_cached(
        "INSERT INTO coverage (scan_id, account, region, resource_type, status, reason, count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for line in &doc.coverage {
        coverage.execute(params![
            scan.0,
            line.account,
            line.region,
            line.resource_type,
            line.status.as_str(),
            line.reason,
            line.count as i64
        ])?;
    }
    Ok(())
}

/// Inserts or updates each planned resource, and writes its planned versions (its
/// first version, then this scan's).
fn write_upserts(
    conn: &Connection,
    scan: ScanId,
    at: &str,
    upserts: &[merge::Upsert],
) -> rusqlite::Result<()> {
    let mut upsert = conn.prepare_cached(
        "INSERT INTO resources (account, region, resource_type, id, arn, tags, properties, fields, tags_only,
                                first_seen, last_seen, gone_since, first_scan, last_scan, versioned)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, NULL, ?11, ?11, ?12)
         ON CONFLICT (account, resource_type, region, id) DO UPDATE SET
            arn = excluded.arn, tags = excluded.tags, properties = excluded.properties,
            fields = excluded.fields, tags_only = excluded.tags_only,
            last_seen = excluded.last_seen, gone_since = NULL, last_scan = excluded.last_scan,
            versioned = excluded.versioned",
    )?;
    let mut version = conn.prepare_cached(
        "INSERT OR REPLACE INTO resource_versions (account, region, resource_type, id, scan_id, seen_at, arn, tags, properties)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for row in upserts {
        let key = &row.key;
        upsert.execute(params![
            key.account,
            key.region,
            key.resource_type,
            key.id,
            row.arn,
            row.tags,
            row.properties,
            row.fields,
            row.tags_only,
            at,
            scan.0,
            row.versioned
        ])?;
        if let Some(first) = &row.first_version {
            version.execute(params![
                key.account,
                key.region,
                key.resource_type,
                key.id,
                first.scan,
                first.seen_at,
                first.arn,
                first.tags,
                first.properties
            ])?;
        }
        if row.new_version {
            version.execute(params![
                key.account,
                key.region,
                key.resource_type,
                key.id,
                scan.0,
                at,
                row.arn,
                row.tags,
                row.properties
            ])?;
        }
    }
    Ok(())
}

/// Marks the resources proven `gone` as gone since `at`.
fn mark_gone(conn: &Connection, at: &str, gone: &[ResourceKey]) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(
        "UPDATE resources SET gone_since = ?1
         WHERE account = ?2 AND resource_type = ?3 AND region = ?4 AND id = ?5",
    )?;
    for key in gone {
        statement.execute(params![
            at,
            key.account,
            key.resource_type,
            key.region,
            key.id
        ])?;
    }
    Ok(())
}

/// Records the planned `changes` of `scan`, stamped `at`.
fn insert_changes(
    conn: &Connection,
    scan: ScanId,
    at: &str,
    changes: &[merge::PlannedChange],
) -> rusqlite::Result<()> {
    let mut change = conn.prepare_cached(
        "INSERT INTO changes (scan_id, at, kind, account, region, resource_type, resource_id, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for planned in changes {
        let key = &planned.key;
        let detail = serde_json::to_string(&planned.detail).unwrap_or_else(|_| "[]".into());
        change.execute(params![
            scan.0,
            at,
            planned.kind.as_str(),
            key.account,
            key.region,
            key.resource_type,
            key.id,
            detail
        ])?;
    }
    Ok(())
}

/// Records the account's status and counts in `scan` (replacing an earlier write).
fn record_account(
    conn: &Connection,
    scan: ScanId,
    doc: &AccountDoc,
    counts: &WriteCounts,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO scan_accounts (scan_id, account, status, resources_written, added, modified, removed, not_verified)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        scan.0,
        doc.account,
        doc.status.as_str(),
        counts.resources_written as i64,
        counts.added as i64,
        counts.modified as i64,
        counts.removed as i64,
        counts.not_verified as i64
    ])?;
    Ok(())
}

/// A row of the resources query (`query::resource_columns`).
fn resource_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ResourceRow> {
    let tags: String = row.get(5)?;
    let properties: String = row.get(6)?;
    let fields: String = row.get(7)?;
    Ok(ResourceRow {
        resource_type: row.get(0)?,
        id: row.get(1)?,
        arn: row.get(2)?,
        account: row.get(3)?,
        region: row.get(4)?,
        tags: Json::from_text(tags),
        properties: Json::from_text(properties),
        fields: Json::from_text(fields),
        tags_only: row.get(8)?,
        first_seen: row.get(9)?,
        last_seen: row.get(10)?,
        gone_since: row.get(11)?,
        last_scan: ScanId(row.get(12)?),
    })
}

fn to_sql(params: &[Param]) -> Vec<rusqlite::types::Value> {
    params
        .iter()
        .map(|param| match param {
            Param::Text(text) => rusqlite::types::Value::Text(text.clone()),
            Param::Int(int) => rusqlite::types::Value::Integer(*int),
        })
        .collect()
}

impl Backend for SqliteBackend {
    fn schema_version(&mut self) -> Result<u32> {
        self.conn
            .query_row("SELECT max(version) FROM tollgate_schema", [], |row| {
                row.get(0)
            })
            .map_err(self.db("read the schema version"))
    }

    fn begin_scan(&mut self, meta: &ScanMeta) -> Result<ScanId> {
        self.conn
            .execute(
                "INSERT INTO scans (report_scan_id, started_at, caller_account, organization, status, options)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5)",
                params![
                    meta.report_scan_id,
                    meta.started_at,
                    meta.caller_account,
                    meta.organization,
                    meta.options.to_string()
                ],
            )
            .map_err(self.db("record the scan"))?;
        Ok(ScanId(self.conn.last_insert_rowid()))
    }

    fn write_account(&mut self, scan: ScanId, doc: &AccountDoc) -> Result<WriteCounts> {
        let label = self.label.clone();
        let fail = |err| InventoryError::database("write the account's scan", &label, err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let at = scan_started_at(&tx, scan)
            .map_err(fail)?
            .ok_or_else(|| unknown_scan(scan, &label))?;
        let stored = load_stored(&tx, doc).map_err(fail)?;
        let plan = merge::plan(doc, &stored);
        insert_coverage(&tx, scan, doc).map_err(fail)?;
        write_upserts(&tx, scan, &at, &plan.upserts).map_err(fail)?;
        mark_gone(&tx, &at, &plan.gone).map_err(fail)?;
        insert_changes(&tx, scan, &at, &plan.changes).map_err(fail)?;
        record_account(&tx, scan, doc, &plan.counts).map_err(fail)?;
        if std::mem::take(&mut self.fail_before_commit) {
            // Dropping the transaction rolls it back, as a crash would.
            return Err(injected_fault(&label));
        }
        tx.commit().map_err(fail)?;
        Ok(plan.counts)
    }

    fn finish_scan(&mut self, scan: ScanId, outcome: &ScanOutcome) -> Result<()> {
        let (code, meaning) = outcome.status.exit_code().unzip();
        let updated = self
            .conn
            .execute(
                "UPDATE scans SET finished_at = ?1, status = ?2, exit_code = ?3, exit_meaning = ?4 WHERE id = ?5",
                params![outcome.finished_at, outcome.status.as_str(), code, meaning, scan.0],
            )
            .map_err(self.db("record the end of the scan"))?;
        if updated == 0 {
            return Err(unknown_scan(scan, &self.label));
        }
        Ok(())
    }

    fn resources(&mut self, filter: &ResourceFilter) -> Result<Page<ResourceRow>> {
        let sql = query::resources_sql(Dialect::Sqlite, filter)?;
        let label = self.label.clone();
        let fail = |err| InventoryError::database("read resources", &label, err);
        let mut statement = self.conn.prepare_cached(&sql.text).map_err(fail)?;
        let rows = statement
            .query_map(
                rusqlite::params_from_iter(to_sql(&sql.params)),
                resource_row,
            )
            .map_err(fail)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(fail)?;
        Ok(query::into_page(rows, filter.page_size, row_cursor))
    }

    fn resource(&mut self, key: &ResourceKey) -> Result<Option<ResourceRow>> {
        let sql = query::resource_sql(Dialect::Sqlite, key);
        let label = self.label.clone();
        let fail = |err| InventoryError::database("read a resource", &label, err);
        let mut statement = self.conn.prepare_cached(&sql.text).map_err(fail)?;
        statement
            .query_row(
                rusqlite::params_from_iter(to_sql(&sql.params)),
                resource_row,
            )
            .optional()
            .map_err(fail)
    }

    fn changes(&mut self, filter: &ChangeFilter) -> Result<Page<ChangeRow>> {
        let sql = query::changes_sql(Dialect::Sqlite, filter)?;
        let label = self.label.clone();
        let fail = |err| InventoryError::database("read changes", &label, err);
        let mut statement = self.conn.prepare_cached(&sql.text).map_err(fail)?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(to_sql(&sql.params)), |row| {
                let kind: String = row.get(3)?;
                let detail: String = row.get(8)?;
                Ok(ChangeRow {
                    change: row.get(0)?,
                    scan: ScanId(row.get(1)?),
                    at: row.get(2)?,
                    kind: ChangeKind::parse(&kind).unwrap_or(ChangeKind::NotVerified),
                    resource_type: row.get(4)?,
                    account: row.get(5)?,
                    region: row.get(6)?,
                    id: row.get(7)?,
                    detail: serde_json::from_str(&detail).unwrap_or_default(),
                })
            })
            .map_err(fail)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(fail)?;
        Ok(query::into_page(rows, filter.page_size, |row| {
            row.change.to_string()
        }))
    }

    fn history(&mut self, key: &ResourceKey) -> Result<Vec<VersionRow>> {
        let label = self.label.clone();
        let fail = |err| InventoryError::database("read a resource's history", &label, err);
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT scan_id, seen_at, arn, tags, properties FROM resource_versions
                 WHERE account = ?1 AND resource_type = ?2 AND region = ?3 AND id = ?4 ORDER BY scan_id",
            )
            .map_err(fail)?;
        let rows = statement
            .query_map(
                params![key.account, key.resource_type, key.region, key.id],
                |row| {
                    let tags: String = row.get(3)?;
                    let properties: String = row.get(4)?;
                    Ok(VersionRow {
                        scan: ScanId(row.get(0)?),
                        seen_at: row.get(1)?,
                        arn: row.get(2)?,
                        tags: serde_json::from_str(&tags).unwrap_or(Value::Null),
                        properties: serde_json::from_str(&properties).unwrap_or(Value::Null),
                    })
                },
            )
            .map_err(fail)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(fail)?;
        if !rows.is_empty() {
            return Ok(rows);
        }
        // Never changed: its row in `resources` is its one version.
        let mut current = self
            .conn
            .prepare_cached(
                "SELECT first_scan, first_seen, arn, tags, properties FROM resources
                 WHERE account = ?1 AND resource_type = ?2 AND region = ?3 AND id = ?4",
            )
            .map_err(fail)?;
        let versions = current
            .query_map(
                params![key.account, key.resource_type, key.region, key.id],
                |row| {
                    let tags: String = row.get(3)?;
                    let properties: String = row.get(4)?;
                    Ok(VersionRow {
                        scan: ScanId(row.get(0)?),
                        seen_at: row.get(1)?,
                        arn: row.get(2)?,
                        tags: serde_json::from_str(&tags).unwrap_or(Value::Null),
                        properties: serde_json::from_str(&properties).unwrap_or(Value::Null),
                    })
                },
            )
            .map_err(fail)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(fail);
        versions
    }

    fn fail_next_write_before_commit(&mut self) {
        self.fail_before_commit = true;
    }
}

/// The accounts whose stored resources a write must compare against.
pub(crate) fn accounts_of(doc: &AccountDoc) -> Vec<String> {
    let mut accounts: Vec<String> = std::iter::once(doc.account.clone())
        .chain(doc.items.iter().map(|item| item.key.account.clone()))
        .collect();
    accounts.sort();
    accounts.dedup();
    accounts
}

pub(crate) fn row_cursor(row: &ResourceRow) -> String {
    query::resource_cursor(&ResourceKey {
        account: row.account.clone(),
        region: row.region.clone(),
        resource_type: row.resource_type.clone(),
        id: row.id.clone(),
    })
}

pub(crate) fn unknown_scan(scan: ScanId, label: &str) -> InventoryError {
    InventoryError::new(
        InventoryErrorKind::UnknownScan,
        format!("the inventory store {label} has no scan {scan}: call begin_scan first, and write to the store it returned"),
    )
}

pub(crate) fn injected_fault(label: &str) -> InventoryError {
    InventoryError::new(
        InventoryErrorKind::Database,
        format!("the write to {label} was made to fail before its commit (test hook); nothing of the account was written"),
    )
}
