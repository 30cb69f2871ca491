//! The PostgreSQL engine: one database for a team or a fleet of hosts.
//!
//! Writers of one account are serialised by a transaction-scoped advisory lock on the
//! account (`pg_advisory_xact_lock`), taken before the account's stored resources are
//! read, so two scans of one account cannot both judge the same resource; writers of
//! different accounts run side by side, and `ON CONFLICT` makes every upsert safe
//! regardless. Rows travel by `COPY ... FROM STDIN` (text format): new resources, the
//! versions and the changes straight into their tables; resources the store already
//! held into a temporary staging table that one `INSERT ... ON CONFLICT` merges into
//! `resources`. The client is the synchronous `postgres` crate without TLS: reach a
//! remote server through a Unix socket, an SSH tunnel or a trusted network.
//!
//! The connection URL is held only as a [`PostgresUrl`]; every message names the
//! redacted URL, and the driver's errors do not repeat a password.

use std::collections::HashMap;
use std::io::Write;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls};
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
use crate::sqlite::{accounts_of, injected_fault, row_cursor, unknown_scan};
use crate::url::PostgresUrl;

/// The advisory lock key that serialises migrations ("tollgate" in ASCII, truncated).
const MIGRATION_LOCK: i64 = 0x746f_6c6c_6761;

/// A store in a PostgreSQL database.
pub struct PostgresBackend {
    client: Client,
    label: String,
    fail_before_commit: bool,
}

impl PostgresBackend {
    /// Connects and migrates the schema.
    pub fn open(url: &PostgresUrl) -> Result<PostgresBackend> {
        let label = url.redacted().to_string();
        let client = Client::connect(url.connection_string(), NoTls).map_err(|err| {
            InventoryError::new(
                InventoryErrorKind::Unreachable,
                format!(
                    "cannot connect to the inventory store {label}: {err}; check that the server runs and accepts this user and password, \
                     and that the database exists"
                ),
            )
            .with_source(err)
        })?;
        let mut backend = PostgresBackend {
            client,
            label,
            fail_before_commit: false,
        };
        backend.migrate()?;
        Ok(backend)
    }

    fn migrate(&mut self) -> Result<()> {
        let label = self.label.clone();
        let fail = |err| InventoryError::database("migrate the schema", &label, err);
        let mut tx = self.client.transaction().map_err(fail)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(fail)?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS tollgate_schema (version INTEGER NOT NULL)")
            .map_err(fail)?;
        let found: Option<i32> = tx
            .query_one("SELECT max(version) FROM tollgate_schema", &[])
            .map_err(fail)?
            .get(0);
        let steps = schema::steps_from(found.unwrap_or(0).max(0) as u32, &label)?;
        for step in steps {
            tx.batch_execute(step.postgres).map_err(|err| {
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
            tx.execute("DELETE FROM tollgate_schema", &[])
                .map_err(fail)?;
            tx.execute(
                "INSERT INTO tollgate_schema (version) VALUES ($1)",
                &[&(schema::LATEST as i32)],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }
}

/// One field in COPY's text format.
fn copy_field(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        None => out.extend_from_slice(b"\\N"),
        Some(text) => {
            for byte in text.bytes() {
                match byte {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    other => out.push(other),
                }
            }
        }
    }
}

/// One row in COPY's text format.
fn copy_row(out: &mut Vec<u8>, fields: &[Option<&str>]) {
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            out.push(b'\t');
        }
        copy_field(out, *field);
    }
    out.push(b'\n');
}

fn copy_in(
    tx: &mut postgres::Transaction<'_>,
    statement: &str,
    rows: &[u8],
) -> std::result::Result<(), postgres::Error> {
    let mut writer = tx.copy_in(statement)?;
    // The writer buffers into the connection; an I/O error here surfaces from finish().
    let _ = writer.write_all(rows);
    writer.finish()?;
    Ok(())
}

fn parse_object(text: &str) -> Map<String, Value> {
    serde_json::from_str(text).unwrap_or_default()
}

type Tx<'a> = postgres::Transaction<'a>;
type PgResult<T> = std::result::Result<T, postgres::Error>;

/// Takes each account's advisory lock for the rest of the transaction (before its
/// stored resources are read, so two writers of one account cannot both judge them).
fn lock_accounts(tx: &mut Tx<'_>, accounts: &[String]) -> PgResult<()> {
    for account in accounts {
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '/' || $1::text))",
            &[account],
        )?;
    }
    Ok(())
}

/// The resources the store holds for `accounts`, by key.
fn load_stored(tx: &mut Tx<'_>, accounts: &[String]) -> PgResult<HashMap<ResourceKey, Stored>> {
    let mut stored = HashMap::new();
    let rows = tx.query(
        "SELECT account, region, resource_type, id, arn, tags::text, properties::text, fields::text,
                gone_since IS NOT NULL, tags_only, first_scan, first_seen, versioned
         FROM resources WHERE account = ANY($1)",
        &[&accounts],
    )?;
    for row in rows {
        let key = ResourceKey {
            account: row.get(0),
            region: row.get(1),
            resource_type: row.get(2),
            id: row.get(3),
        };
        stored.insert(
            key,
            Stored {
                arn: row.get(4),
                tags: parse_object(row.get(5)),
                properties: parse_object(row.get(6)),
                fields: parse_object(row.get(7)),
                gone: row.get(8),
                tags_only: row.get(9),
                first_scan: row.get(10),
                first_seen: row.get(11),
                versioned: row.get(12),
            },
        );
    }
    Ok(stored)
}

/// Copies the coverage lines of `doc` into `coverage` under the scan `scan_text`.
fn copy_coverage(tx: &mut Tx<'_>, scan_text: &str, doc: &AccountDoc) -> PgResult<()> {
    let mut buffer = Vec::new();
    for line in &doc.coverage {
        let count = line.count.to_string();
        copy_row(
            &mut buffer,
            &[
                Some(scan_text),
                Some(&line.account),
                Some(&line.region),
                Some(&line.resource_type),
                Some(line.status.as_str()),
                line.reason.as_deref(),
                Some(&count),
            ],
        );
    }
    copy_in(
        tx,
        "COPY coverage (scan_id, account, region, resource_type, status, reason, count) FROM STDIN",
        &buffer,
    )
}

/// The planned upserts and versions as COPY text rows.
struct UpsertRows {
    /// Keys new to the store: full `resources` rows.
    fresh: Vec<u8>,
    /// Keys the store held: rows of the staging table.
    seen_before: Vec<u8>,
    /// `resource_versions` rows: each first version, then this scan's.
    versions: Vec<u8>,
}

impl UpsertRows {
    /// Encodes `upserts` for the scan `scan_text` started `at`.
    fn new(upserts: &[merge::Upsert], at: &str, scan_text: &str) -> UpsertRows {
        let mut rows = UpsertRows {
            fresh: Vec::new(),
            seen_before: Vec::new(),
            versions: Vec::new(),
        };
        for row in upserts {
            rows.push_resource(row, at, scan_text);
            rows.push_versions(row, at, scan_text);
        }
        rows
    }

    /// Adds the `resources` or staging row of one upsert.
    fn push_resource(&mut self, row: &merge::Upsert, at: &str, scan_text: &str) {
        let key = &row.key;
        let tags_only = if row.tags_only { "t" } else { "f" };
        let versioned = if row.versioned { "t" } else { "f" };
        let key_and_content = [
            Some(key.account.as_str()),
            Some(&key.region),
            Some(&key.resource_type),
            Some(&key.id),
            row.arn.as_deref(),
            Some(&row.tags),
            Some(&row.properties),
            Some(&row.fields),
            Some(tags_only),
            Some(versioned),
        ];
        if row.existed {
            copy_row(&mut self.seen_before, &key_and_content);
        } else {
            let mut full = key_and_content.to_vec();
            full.extend([Some(at), Some(at), None, Some(scan_text), Some(scan_text)]);
            copy_row(&mut self.fresh, &full);
        }
    }

    /// Adds the version rows of one upsert: its first version, then this scan's.
    fn push_versions(&mut self, row: &merge::Upsert, at: &str, scan_text: &str) {
        let key = &row.key;
        if let Some(first) = &row.first_version {
            let first_scan = first.scan.to_string();
            copy_row(
                &mut self.versions,
                &[
                    Some(&key.account),
                    Some(&key.region),
                    Some(&key.resource_type),
                    Some(&key.id),
                    Some(&first_scan),
                    Some(&first.seen_at),
                    first.arn.as_deref(),
                    Some(&first.tags),
                    Some(&first.properties),
                ],
            );
        }
        if row.new_version {
            copy_row(
                &mut self.versions,
                &[
                    Some(&key.account),
                    Some(&key.region),
                    Some(&key.resource_type),
                    Some(&key.id),
                    Some(scan_text),
                    Some(at),
                    row.arn.as_deref(),
                    Some(&row.tags),
                    Some(&row.properties),
                ],
            );
        }
    }
}

/// Writes the resource rows: new keys straight into `resources` (the account lock,
/// taken before the account's rows were read, makes them new), keys the store held
/// merged from a staging table.
fn write_resources(tx: &mut Tx<'_>, rows: &UpsertRows, scan: ScanId, at: &str) -> PgResult<()> {
    if !rows.fresh.is_empty() {
        copy_in(
            tx,
            "COPY resources (account, region, resource_type, id, arn, tags, properties, fields, tags_only, versioned,
                             first_seen, last_seen, gone_since, first_scan, last_scan) FROM STDIN",
            &rows.fresh,
        )?;
    }
    if !rows.seen_before.is_empty() {
        merge_seen_before(tx, &rows.seen_before, scan, at)?;
    }
    Ok(())
}

/// Merges the rows of keys the store held into `resources` through the staging table.
fn merge_seen_before(tx: &mut Tx<'_>, seen_before: &[u8], scan: ScanId, at: &str) -> PgResult<()> {
    tx.batch_execute(
        "CREATE TEMP TABLE IF NOT EXISTS tollgate_staging_resources (
            account TEXT, region TEXT, resource_type TEXT, id TEXT, arn TEXT,
            tags TEXT, properties TEXT, fields TEXT, tags_only BOOLEAN, versioned BOOLEAN
         ) ON COMMIT DELETE ROWS",
    )?;
    copy_in(
        tx,
        "COPY tollgate_staging_resources FROM STDIN",
        seen_before,
    )?;
    tx.execute(
        "INSERT INTO resources (account, region, resource_type, id, arn, tags, properties, fields, tags_only,
                                versioned, first_seen, last_seen, gone_since, first_scan, last_scan)
         SELECT account, region, resource_type, id, arn, tags::jsonb, properties::jsonb, fields::jsonb, tags_only,
                versioned, $1, $1, NULL, $2, $2
         FROM tollgate_staging_resources
         ON CONFLICT (account, resource_type, region, id) DO UPDATE SET
            arn = excluded.arn, tags = excluded.tags, properties = excluded.properties,
            fields = excluded.fields, tags_only = excluded.tags_only, versioned = excluded.versioned,
            last_seen = excluded.last_seen, gone_since = NULL, last_scan = excluded.last_scan",
        &[&at, &scan.0],
    )?;
    Ok(())
}

/// Marks the resources proven `gone` as gone since `at`.
fn mark_gone(tx: &mut Tx<'_>, at: &str, gone: &[ResourceKey]) -> PgResult<()> {
    if gone.is_empty() {
        return Ok(());
    }
    let statement = tx.prepare(
        "UPDATE resources SET gone_since = $1
         WHERE account = $2 AND resource_type = $3 AND region = $4 AND id = $5",
    )?;
    for key in gone {
        tx.execute(
            &statement,
            &[&at, &key.account, &key.resource_type, &key.region, &key.id],
        )?;
    }
    Ok(())
}

/// Copies the planned `changes` of the scan `scan_text`, stamped `at`, into `changes`.
fn copy_changes(
    tx: &mut Tx<'_>,
    scan_text: &str,
    at: &str,
    changes: &[merge::PlannedChange],
) -> PgResult<()> {
    let mut buffer = Vec::new();
    for planned in changes {
        let key = &planned.key;
        let detail = serde_json::to_string(&planned.detail).unwrap_or_else(|_| "[]".into());
        copy_row(
            &mut buffer,
            &[
                Some(scan_text),
                Some(at),
                Some(planned.kind.as_str()),
                Some(&key.account),
                Some(&key.region),
                Some(&key.resource_type),
                Some(&key.id),
                Some(&detail),
            ],
        );
    }
    copy_in(
        tx,
        "COPY changes (scan_id, at, kind, account, region, resource_type, resource_id, detail) FROM STDIN",
        &buffer,
    )
}

/// Records the account's status and counts in `scan` (replacing an earlier write).
fn record_account(
    tx: &mut Tx<'_>,
    scan: ScanId,
    doc: &AccountDoc,
    counts: &WriteCounts,
) -> PgResult<()> {
    tx.execute(
        "INSERT INTO scan_accounts (scan_id, account, status, resources_written, added, modified, removed, not_verified)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (scan_id, account) DO UPDATE SET status = excluded.status,
            resources_written = excluded.resources_written, added = excluded.added, modified = excluded.modified,
            removed = excluded.removed, not_verified = excluded.not_verified",
        &[
            &scan.0,
            &doc.account,
            &doc.status.as_str(),
            &(counts.resources_written as i64),
            &(counts.added as i64),
            &(counts.modified as i64),
            &(counts.removed as i64),
            &(counts.not_verified as i64),
        ],
    )?;
    Ok(())
}

fn boxed(params: &[Param]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|param| -> Box<dyn ToSql + Sync> {
            match param {
                Param::Text(text) => Box::new(text.clone()),
                Param::Int(int) => Box::new(*int),
            }
        })
        .collect()
}

/// The parameters with their types, for `query_typed_raw`.
fn typed(params: &[Param]) -> Vec<(Box<dyn ToSql + Sync>, Type)> {
    params
        .iter()
        .map(|param| -> (Box<dyn ToSql + Sync>, Type) {
            match param {
                Param::Text(text) => (Box::new(text.clone()), Type::TEXT),
                Param::Int(int) => (Box::new(*int), Type::INT8),
            }
        })
        .collect()
}

/// A row of the resources query (`query::resource_columns`).
fn resource_row(row: &postgres::Row) -> ResourceRow {
    ResourceRow {
        resource_type: row.get(0),
        id: row.get(1),
        arn: row.get(2),
        account: row.get(3),
        region: row.get(4),
        tags: Json::from_text(row.get(5)),
        properties: Json::from_text(row.get(6)),
        fields: Json::from_text(row.get(7)),
        tags_only: row.get(8),
        first_seen: row.get(9),
        last_seen: row.get(10),
        gone_since: row.get(11),
        last_scan: ScanId(row.get(12)),
    }
}

impl Backend for PostgresBackend {
    fn schema_version(&mut self) -> Result<u32> {
        let version: Option<i32> = self
            .client
            .query_one("SELECT max(version) FROM tollgate_schema", &[])
            .map_err(|err| InventoryError::database("read the schema version", &self.label, err))?
            .get(0);
        Ok(version.unwrap_or(0).max(0) as u32)
    }

    fn begin_scan(&mut self, meta: &ScanMeta) -> Result<ScanId> {
        let options = meta.options.to_string();
        let row = self
            .client
            .query_one(
                "INSERT INTO scans (report_scan_id, started_at, caller_account, organization, status, options)
                 VALUES ($1, $2, $3, $4, 'running', $5::text::jsonb) RETURNING id",
                &[&meta.report_scan_id, &meta.started_at, &meta.caller_account, &meta.organization, &options],
            )
            .map_err(|err| InventoryError::database("record the scan", &self.label, err))?;
        Ok(ScanId(row.get(0)))
    }

    fn write_account(&mut self, scan: ScanId, doc: &AccountDoc) -> Result<WriteCounts> {
        let label = self.label.clone();
        let fail = |err| InventoryError::database("write the account's scan", &label, err);
        let mut tx = self.client.transaction().map_err(fail)?;
        let accounts = accounts_of(doc);
        lock_accounts(&mut tx, &accounts).map_err(fail)?;
        let at: String = tx
            .query_opt("SELECT started_at FROM scans WHERE id = $1", &[&scan.0])
            .map_err(fail)?
            .ok_or_else(|| unknown_scan(scan, &label))?
            .get(0);
        let stored = load_stored(&mut tx, &accounts).map_err(fail)?;
        let plan = merge::plan(doc, &stored);
        let scan_text = scan.0.to_string();
        copy_coverage(&mut tx, &scan_text, doc).map_err(fail)?;
        let rows = UpsertRows::new(&plan.upserts, &at, &scan_text);
        write_resources(&mut tx, &rows, scan, &at).map_err(fail)?;
        copy_in(
            &mut tx,
            "COPY resource_versions (account, region, resource_type, id, scan_id, seen_at, arn, tags, properties) FROM STDIN",
            &rows.versions,
        )
        .map_err(fail)?;
        mark_gone(&mut tx, &at, &plan.gone).map_err(fail)?;
        copy_changes(&mut tx, &scan_text, &at, &plan.changes).map_err(fail)?;
        record_account(&mut tx, scan, doc, &plan.counts).map_err(fail)?;
        if std::mem::take(&mut self.fail_before_commit) {
            // Dropping the transaction rolls it back, as a lost connection would.
            return Err(injected_fault(&label));
        }
        tx.commit().map_err(fail)?;
        Ok(plan.counts)
    }

    fn finish_scan(&mut self, scan: ScanId, outcome: &ScanOutcome) -> Result<()> {
        let (code, meaning) = outcome.status.exit_code().unzip();
        let updated = self
            .client
            .execute(
                "UPDATE scans SET finished_at = $1, status = $2, exit_code = $3, exit_meaning = $4 WHERE id = $5",
                &[&outcome.finished_at, &outcome.status.as_str(), &code, &meaning, &scan.0],
            )
            .map_err(|err| InventoryError::database("record the end of the scan", &self.label, err))?;
        if updated == 0 {
            return Err(unknown_scan(scan, &self.label));
        }
        Ok(())
    }

    fn resources(&mut self, filter: &ResourceFilter) -> Result<Page<ResourceRow>> {
        let sql = query::resources_sql(Dialect::Postgres, filter)?;
        let fail = |err| InventoryError::database("read resources", &self.label, err);
        // One round trip (the parameters' types are given, so no statement is prepared
        // first), and each row is decoded as it arrives, while the server sends the next.
        let mut rows = self
            .client
            .query_typed_raw(&sql.text, typed(&sql.params))
            .map_err(fail)?;
        let mut out = Vec::with_capacity(filter.page_size.get() as usize + 1);
        while let Some(row) = rows.next().map_err(fail)? {
            out.push(resource_row(&row));
        }
        Ok(query::into_page(out, filter.page_size, row_cursor))
    }

    fn resource(&mut self, key: &ResourceKey) -> Result<Option<ResourceRow>> {
        let sql = query::resource_sql(Dialect::Postgres, key);
        let params = boxed(&sql.params);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let row = self
            .client
            .query_opt(&sql.text, &refs)
            .map_err(|err| InventoryError::database("read a resource", &self.label, err))?;
        Ok(row.as_ref().map(resource_row))
    }

    fn changes(&mut self, filter: &ChangeFilter) -> Result<Page<ChangeRow>> {
        let sql = query::changes_sql(Dialect::Postgres, filter)?;
        let params = boxed(&sql.params);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self
            .client
            .query(&sql.text, &refs)
            .map_err(|err| InventoryError::database("read changes", &self.label, err))?;
        let rows = rows
            .iter()
            .map(|row| ChangeRow {
                change: row.get(0),
                scan: ScanId(row.get(1)),
                at: row.get(2),
                kind: ChangeKind::parse(row.get(3)).unwrap_or(ChangeKind::NotVerified),
                resource_type: row.get(4),
                account: row.get(5),
                region: row.get(6),
                id: row.get(7),
                detail: serde_json::from_str(row.get(8)).unwrap_or_default(),
            })
            .collect();
        Ok(query::into_page(rows, filter.page_size, |row| {
            row.change.to_string()
        }))
    }

    fn history(&mut self, key: &ResourceKey) -> Result<Vec<VersionRow>> {
        let rows = self
            .client
            .query(
                "SELECT scan_id, seen_at, arn, tags::text, properties::text FROM resource_versions
                 WHERE account = $1 AND resource_type = $2 AND region = $3 AND id = $4 ORDER BY scan_id",
                &[&key.account, &key.resource_type, &key.region, &key.id],
            )
            .map_err(|err| InventoryError::database("read a resource's history", &self.label, err))?;
        let rows = if rows.is_empty() {
            // Never changed: its row in `resources` is its one version.
            self.client
                .query(
                    "SELECT first_scan, first_seen, arn, tags::text, properties::text FROM resources
                     WHERE account = $1 AND resource_type = $2 AND region = $3 AND id = $4",
                    &[&key.account, &key.resource_type, &key.region, &key.id],
                )
                .map_err(|err| InventoryError::database("read a resource's history", &self.label, err))?
        } else {
            rows
        };
        Ok(rows
            .iter()
            .map(|row| VersionRow {
                scan: ScanId(row.get(0)),
                seen_at: row.get(1),
                arn: row.get(2),
                tags: serde_json::from_str(row.get(3)).unwrap_or(Value::Null),
                properties: serde_json::from_str(row.get(4)).unwrap_or(Value::Null),
            })
            .collect())
    }

    fn fail_next_write_before_commit(&mut self) {
        self.fail_before_commit = true;
    }
}
