//! The inventory store from the command line (docs/inventory.md): `--store` on `discover`
//! and `demo` writes each scan, and `tollgate resources` and `tollgate changes` read the
//! store back (`tollgate history` is in `history.rs`).
//!
//! The store's engines are synchronous (rusqlite, and the `postgres` crate, which runs a
//! runtime of its own and must not be called on a tokio worker), so a scan writes through
//! `spawn_blocking`. A store that cannot be written never costs the scan: the report is
//! still written, with a `store` field that says why, and the exit code is 1.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{json, Value};
use tollgate_inventory::{
    ChangeFilter, ChangeRow, PageSize, ResourceFilter, ResourceRow, Since, Store, StoreUrl,
    TypePattern,
};

/// `--store [URL]` of `resources` and `changes`.
#[derive(Debug, clap::Args)]
pub struct ReadStoreFlag {
    /// The inventory store: `sqlite:PATH`, a file path, or `postgres://USER@HOST/DB`
    /// (default: TOLLGATE_STORE, else the SQLite file
    /// $XDG_DATA_HOME/tollgate/inventory.sqlite).
    #[arg(
        long,
        value_name = "URL",
        env = "TOLLGATE_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
}

/// Opens the store `url` names; `None` or empty: the default SQLite file.
pub(super) fn open(url: Option<&str>) -> anyhow::Result<Store> {
    let store = match url.filter(|u| !u.is_empty()) {
        Some(url) => Store::open(url)?,
        None => Store::open_default()?,
    };
    Ok(store)
}

/// The URL a user gave, its password replaced, for messages about a store that did not
/// open (`Store::redacted_url` once it has).
fn redacted(url: &str) -> String {
    if url.is_empty() {
        return tollgate_inventory::default_sqlite_path()
            .map(|p| format!("sqlite:{}", p.display()))
            .unwrap_or_else(|| "the default store".to_owned());
    }
    StoreUrl::parse(url)
        .map(|u| u.redacted())
        .unwrap_or_else(|_| "(an unreadable store URL)".to_owned())
}

/// What storing a finished scan did: the report's `store` field, and whether it failed.
pub(crate) struct Stored {
    pub field: Value,
    pub failed: bool,
}

/// Writes `report` (one account or an organization) to the store `url` names, account by
/// account, and says what it did. Never fails: a failure is the answer's `error`.
pub(crate) async fn store_report(url: &str, report: Value) -> Stored {
    let url = url.to_owned();
    let shown = redacted(&url);
    let written = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let mut store = open(Some(&url))?;
        Ok(store.write_report(&report)?)
    })
    .await;
    summarize(written, shown)
}

/// The `store` field of a write's outcome, and its line on stderr.
fn summarize(
    written: Result<anyhow::Result<tollgate_inventory::StoreSummary>, tokio::task::JoinError>,
    shown: String,
) -> Stored {
    let error = match written {
        Ok(Ok(summary)) => {
            eprintln!(
                "stored in {} as scan {}: {} resources written, {} added, {} modified, {} removed, {} not verified",
                summary.url,
                summary.scan,
                summary.counts.resources_written,
                summary.counts.added,
                summary.counts.modified,
                summary.counts.removed,
                summary.counts.not_verified
            );
            let mut field = serde_json::to_value(&summary).unwrap_or_else(|_| json!({}));
            field["stored"] = json!(true);
            return Stored {
                field,
                failed: false,
            };
        }
        Ok(Err(e)) => format!("{e:#}"),
        Err(e) => format!("the store's writer stopped: {e}"),
    };
    eprintln!(
        "tollgate: the scan was not stored in {shown}: {error}; the report is complete and \
         is written as usual (exit code 1)"
    );
    Stored {
        field: json!({"url": shown, "stored": false, "error": error}),
        failed: true,
    }
}

/// An organization scan's store, written account by account as each account's scan
/// finishes (one transaction each), so that a crash or a kill loses at most the accounts
/// in flight: a thread of its own owns the store (its engines are synchronous).
pub(crate) struct AccountWriter {
    tx: Option<std::sync::mpsc::Sender<Value>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<Written>>>,
    url: String,
}

/// What the writer thread did: the scan's number in the store and what its accounts did.
struct Written {
    store: Store,
    scan: tollgate_inventory::ScanId,
    accounts: Vec<String>,
    counts: tollgate_inventory::WriteCounts,
}

impl AccountWriter {
    /// Open the store `url` names and record the organization scan `scan_id` as running.
    pub(crate) fn start(url: &str, scan_id: String) -> AccountWriter {
        let (tx, rx) = std::sync::mpsc::channel::<Value>();
        let owned = url.to_owned();
        let thread = std::thread::spawn(move || -> anyhow::Result<Written> {
            let mut store = open(Some(&owned))?;
            // The stored scan's start, a record for readers (the final report's
            // `started_at` is not known yet): no admission decision reads it.
            #[allow(clippy::disallowed_methods)]
            let started: chrono::DateTime<chrono::Utc> = std::time::SystemTime::now().into();
            let meta = tollgate_inventory::ScanMeta {
                report_scan_id: Some(scan_id),
                started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                caller_account: None,
                organization: true,
                options: json!({}),
            };
            let scan = store.begin_scan(&meta)?;
            let mut written = Written {
                store,
                scan,
                accounts: Vec::new(),
                counts: Default::default(),
            };
            for doc in rx {
                let counts = written.store.write_account(scan, &doc)?;
                add_counts(&mut written.counts, counts);
                written
                    .accounts
                    .push(doc["account"].as_str().unwrap_or_default().to_owned());
            }
            Ok(written)
        });
        AccountWriter {
            tx: Some(tx),
            thread: Some(thread),
            url: url.to_owned(),
        }
    }

    /// Queue one finished account's report (a single-account document).
    pub(crate) fn account(&self, report: &impl serde::Serialize) {
        if let (Some(tx), Ok(doc)) = (&self.tx, serde_json::to_value(report)) {
            // A writer that stopped on an error says so in `finish`.
            let _ = tx.send(doc);
        }
    }

    /// Write the accounts of the final `report` not written yet (read back from its
    /// spool), record how the scan ended, and say what was stored (the report's `store`
    /// field).
    pub(crate) async fn finish(mut self, report: &tollgate_scan::OrganizationReport) -> Stored {
        let shown = redacted(&self.url);
        let thread = self.thread.take();
        drop(self.tx.take());
        let report = report.clone();
        let done = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let joined = thread
                .map(|t| t.join())
                .ok_or_else(|| anyhow::anyhow!("the writer was already finished"))?;
            let mut w = joined.map_err(|_| anyhow::anyhow!("the store's writer panicked"))??;
            let missing: Vec<String> = report
                .accounts
                .digests()
                .filter_map(|d| d.account.clone())
                .filter(|a| !w.accounts.contains(a))
                .collect();
            for account in missing {
                let Some(doc) = report.account(&account)? else {
                    continue;
                };
                let counts = w
                    .store
                    .write_account(w.scan, &serde_json::to_value(&doc)?)?;
                add_counts(&mut w.counts, counts);
                w.accounts.push(account);
            }
            // The scan's status and end from the report's header and its accounts' worst
            // status, as the store would decode them from the whole report.
            let header = serde_json::to_value(tollgate_scan::OrganizationReport {
                accounts: Default::default(),
                ..report.clone()
            })?;
            let decoded = tollgate_inventory::Report::from_value(&header)?;
            let status = report
                .accounts
                .digests()
                .fold(decoded.status, |s, d| s.worst(scan_status(d.status)));
            let finished_at = decoded
                .finished_at
                .clone()
                .unwrap_or_else(|| decoded.meta.started_at.clone());
            w.store.finish_scan(
                w.scan,
                &tollgate_inventory::ScanOutcome {
                    status,
                    finished_at,
                },
            )?;
            Ok(tollgate_inventory::StoreSummary {
                url: w.store.redacted_url(),
                scan: w.scan,
                accounts: w.accounts.len() as u64,
                counts: w.counts,
            })
        })
        .await;
        summarize(done, shown)
    }
}

/// The store's status of a dataset status (as it decodes an account document's).
fn scan_status(status: tollgate_collectors::DatasetStatus) -> tollgate_inventory::ScanStatus {
    use tollgate_collectors::DatasetStatus as D;
    use tollgate_inventory::ScanStatus as S;
    match status {
        D::Complete => S::Complete,
        D::Partial => S::Partial,
        D::Failed => S::Failed,
        D::Cancelled => S::Cancelled,
    }
}

fn add_counts(total: &mut tollgate_inventory::WriteCounts, more: tollgate_inventory::WriteCounts) {
    total.resources_written += more.resources_written;
    total.added += more.added;
    total.modified += more.modified;
    total.removed += more.removed;
    total.not_verified += more.not_verified;
}

/// `tollgate resources` flags.
#[derive(Debug, clap::Args)]
pub struct ResourcesArgs {
    #[command(flatten)]
    pub store: ReadStoreFlag,
    /// Resource types, comma-separated, with `*` globs (`AWS::S3::*`).
    #[arg(long, alias = "datasets", value_delimiter = ',', value_name = "TYPE")]
    pub types: Vec<String>,
    /// Accounts, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub accounts: Vec<String>,
    /// Regions, comma-separated (`global` for global types).
    #[arg(long, value_delimiter = ',', value_name = "REGION")]
    pub regions: Vec<String>,
    /// Only resources with this tag (repeatable: every one must match).
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tag: Vec<(String, String)>,
    /// Also list resources proven gone (`gone_since` set).
    #[arg(long)]
    pub include_gone: bool,
    /// Print JSON (an array of rows) instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (tags and properties as JSON text) instead of a table.
    #[arg(long)]
    pub csv: bool,
}

/// `tollgate changes` flags.
#[derive(Debug, clap::Args)]
pub struct ChangesArgs {
    #[command(flatten)]
    pub store: ReadStoreFlag,
    /// Changes after this stored scan (its number, as `resources` and `stored in` print
    /// it), or within this long (`24h`, `7d`, `30m`), or since an RFC 3339 time
    /// (default: every change).
    #[arg(long, value_name = "SCAN|DURATION|TIME")]
    pub since: Option<String>,
    /// Resource types, comma-separated, with `*` globs.
    #[arg(long, alias = "datasets", value_delimiter = ',', value_name = "TYPE")]
    pub types: Vec<String>,
    /// Accounts, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub accounts: Vec<String>,
    /// Print JSON (an array of rows) instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn parse_tag(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{text:?} is not KEY=VALUE (e.g. --tag env=prod)")),
    }
}

fn type_patterns(types: &[String]) -> anyhow::Result<Vec<TypePattern>> {
    types
        .iter()
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            // A dataset alias (`s3-buckets`) stands for its type, as in `discover`.
            let name = tollgate_collectors::Dataset::catalog()
                .into_iter()
                .find(|d| d.name() == t.trim())
                .map(|d| d.resource_type().to_owned())
                .unwrap_or_else(|| t.trim().to_owned());
            TypePattern::parse(&name).map_err(anyhow::Error::from)
        })
        .collect()
}

/// Every page of a paged read, in order.
fn all_pages<T>(
    mut page: impl FnMut(Option<String>) -> anyhow::Result<tollgate_inventory::Page<T>>,
) -> anyhow::Result<Vec<T>> {
    let mut rows = Vec::new();
    let mut cursor = None;
    loop {
        let p = page(cursor)?;
        rows.extend(p.rows);
        match p.next {
            Some(next) => cursor = Some(next),
            None => return Ok(rows),
        }
    }
}

/// `tollgate resources`.
pub fn resources(args: ResourcesArgs) -> anyhow::Result<ExitCode> {
    let mut store = open(args.store.store.as_deref())?;
    let filter = ResourceFilter {
        types: type_patterns(&args.types)?,
        accounts: args.accounts,
        regions: args.regions,
        tags: args.tag,
        include_gone: args.include_gone,
        page_size: PageSize::new(PageSize::MAX)?,
        cursor: None,
    };
    let rows = all_pages(|cursor| {
        Ok(store.resources(&ResourceFilter {
            cursor,
            ..filter.clone()
        })?)
    })?;
    match (args.json, args.csv) {
        (false, true) => print_rows(&rows, Output::Csv, "resources", &store, resources_csv),
        (json, _) => print_rows(
            &rows,
            Output::of(json),
            "resources",
            &store,
            resources_table,
        ),
    }
}

/// How `resources` and `changes` print their rows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Json,
    Csv,
    Table,
}

impl Output {
    fn of(json: bool) -> Output {
        if json {
            Output::Json
        } else {
            Output::Table
        }
    }
}

/// Rows on stdout: a JSON array, or `text` (the CSV or the table); after a table, the
/// count on stderr.
fn print_rows<T: serde::Serialize>(
    rows: &[T],
    output: Output,
    what: &str,
    store: &Store,
    text: fn(&mut std::io::StdoutLock<'static>, &[T]) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if output == Output::Json {
        serde_json::to_writer_pretty(&mut out, rows).context("writing JSON")?;
        writeln!(out)?;
    } else {
        text(&mut out, rows)?;
    }
    out.flush()?;
    if output == Output::Table {
        eprintln!("{} {what} in {}", rows.len(), store.redacted_url());
    }
    Ok(ExitCode::SUCCESS)
}

fn resources_csv(out: &mut impl Write, rows: &[ResourceRow]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "resource_type",
        "account",
        "region",
        "id",
        "arn",
        "tags",
        "properties",
        "first_seen",
        "last_seen",
        "gone_since",
    ])?;
    for r in rows {
        w.write_record([
            r.resource_type.as_str(),
            &r.account,
            &r.region,
            &r.id,
            r.arn.as_deref().unwrap_or(""),
            &r.tags.to_string(),
            &r.properties.to_string(),
            &r.first_seen,
            &r.last_seen,
            r.gone_since.as_deref().unwrap_or(""),
        ])?;
    }
    w.flush()?;
    Ok(())
}

fn resources_table(out: &mut impl Write, rows: &[ResourceRow]) -> anyhow::Result<()> {
    let width =
        |f: fn(&ResourceRow) -> usize, min: usize| rows.iter().map(f).max().unwrap_or(0).max(min);
    let (wt, wa, wr) = (
        width(|r| r.resource_type.len(), 13),
        width(|r| r.account.len(), 7),
        width(|r| r.region.len(), 6),
    );
    writeln!(
        out,
        "{:<wt$}  {:<wa$}  {:<wr$}  {:<24}  {:<20}  id",
        "resource_type", "account", "region", "first_seen", "gone_since"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<wt$}  {:<wa$}  {:<wr$}  {:<24}  {:<20}  {}",
            r.resource_type,
            r.account,
            r.region,
            r.first_seen,
            r.gone_since.as_deref().unwrap_or("-"),
            r.id
        )?;
    }
    Ok(())
}

/// `tollgate changes`.
pub fn changes(args: ChangesArgs) -> anyhow::Result<ExitCode> {
    let mut store = open(args.store.store.as_deref())?;
    // The CLI's one clock read: `--since 24h` is relative to now.
    #[allow(clippy::disallowed_methods)]
    let now: chrono::DateTime<chrono::Utc> = std::time::SystemTime::now().into();
    let filter = ChangeFilter {
        since: args
            .since
            .as_deref()
            .map(|s| Since::parse(s, now))
            .transpose()?,
        types: type_patterns(&args.types)?,
        accounts: args.accounts,
        order: tollgate_inventory::ChangeOrder::OldestFirst,
        page_size: PageSize::new(PageSize::MAX)?,
        cursor: None,
    };
    let rows = all_pages(|cursor| {
        Ok(store.changes(&ChangeFilter {
            cursor,
            ..filter.clone()
        })?)
    })?;
    print_rows(
        &rows,
        Output::of(args.json),
        "changes",
        &store,
        changes_table,
    )
}

fn changes_table(out: &mut impl Write, rows: &[ChangeRow]) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:>5}  {:<24}  {:<12}  {:<28}  {:<12}  {:<14}  id (detail)",
        "scan", "at", "kind", "resource_type", "account", "region"
    )?;
    for r in rows {
        let detail = if r.detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.detail.join(", "))
        };
        writeln!(
            out,
            "{:>5}  {:<24}  {:<12}  {:<28}  {:<12}  {:<14}  {}{detail}",
            r.scan,
            r.at,
            r.kind.as_str(),
            r.resource_type,
            r.account,
            r.region,
            r.id
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_filter_needs_a_key_and_an_equals_sign() {
        assert_eq!(parse_tag("env=prod"), Ok(("env".into(), "prod".into())));
        assert_eq!(parse_tag("env="), Ok(("env".into(), String::new())));
        assert!(parse_tag("=prod").is_err());
        assert!(parse_tag("env").unwrap_err().contains("KEY=VALUE"));
    }

    #[test]
    fn a_dataset_alias_selects_its_type() {
        let p = type_patterns(&["s3-buckets".into(), "AWS::KMS::*".into()]).unwrap();
        let names: Vec<String> = p.iter().map(|t| format!("{t:?}")).collect();
        assert!(names[0].contains("AWS::S3::Bucket"), "{names:?}");
        assert!(names[1].contains("AWS::KMS::*"), "{names:?}");
    }

    #[test]
    fn a_password_never_reaches_a_message() {
        let shown = redacted("postgres://scanner:hunter2@db.example:5432/inv");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("db.example"), "{shown}");
    }
}
