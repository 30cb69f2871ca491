//! Reading: the filters of `tollgate resources` / `changes` and `GET /v1/resources`,
//! validated once into typed values, and the SQL they become in either dialect.
//!
//! Pages are bounded ([`PageSize::MAX`]) and continue from an opaque cursor (the last
//! row's key), so a reader of a million rows never holds them all, and a page is the
//! same whatever was written after the previous one was read.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::{InventoryError, InventoryErrorKind, Result};
use crate::model::{ResourceKey, ScanId};

/// A type name, or a pattern with `*` (`AWS::S3::*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypePattern(String);

impl TypePattern {
    /// Accepts letters, digits, `:` and `*` (CloudFormation type names and globs).
    pub fn parse(text: &str) -> Result<TypePattern> {
        let valid = !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == ':' || c == '*');
        if !valid {
            return Err(invalid(format!(
                "{text:?} is not a resource type or pattern: write AWS::S3::Bucket, or AWS::S3::* for every S3 type"
            )));
        }
        Ok(TypePattern(text.to_string()))
    }

    fn is_glob(&self) -> bool {
        self.0.contains('*')
    }
}

/// How many rows a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u32);

impl PageSize {
    /// The largest page a reader can ask for.
    pub const MAX: u32 = 10_000;
    /// The page size when none is asked for.
    pub const DEFAULT: PageSize = PageSize(1_000);

    /// Accepts 1..=[`PageSize::MAX`].
    pub fn new(rows: u32) -> Result<PageSize> {
        if rows == 0 || rows > Self::MAX {
            return Err(invalid(format!(
                "a page holds 1 to {} rows, not {rows}: ask for fewer and follow the cursor",
                Self::MAX
            )));
        }
        Ok(PageSize(rows))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for PageSize {
    fn default() -> Self {
        PageSize::DEFAULT
    }
}

/// The filter of `resources`: every list empty means "all".
#[derive(Debug, Clone, Default)]
pub struct ResourceFilter {
    pub types: Vec<TypePattern>,
    pub accounts: Vec<String>,
    pub regions: Vec<String>,
    /// `--tag K=V`: every pair must match.
    pub tags: Vec<(String, String)>,
    /// Include resources proven gone (`gone_since` set).
    pub include_gone: bool,
    pub page_size: PageSize,
    /// The `next` of the previous page.
    pub cursor: Option<String>,
}

/// Where `changes` starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// Changes written by scans after this one.
    AfterScan(ScanId),
    /// Changes of scans started at or after this time (RFC 3339, the store's form).
    At(String),
}

impl Since {
    /// `--since`: a scan id (`42`), a duration back from `now` (`90s`, `30m`, `24h`,
    /// `7d`) or an RFC 3339 timestamp. `now` is the caller's clock.
    pub fn parse(text: &str, now: DateTime<Utc>) -> Result<Since> {
        let text = text.trim();
        if let Ok(id) = text.parse::<i64>() {
            return Ok(Since::AfterScan(ScanId(id)));
        }
        if let Some(back) = parse_duration(text) {
            let back = chrono::Duration::from_std(back).map_err(|_| too_far(text))?;
            let at = now.checked_sub_signed(back).ok_or_else(|| too_far(text))?;
            return Ok(Since::At(crate::time::format(at)));
        }
        match crate::time::normalize(text) {
            Ok(at) => Ok(Since::At(at)),
            Err(_) => Err(invalid(format!(
                "--since {text:?} is neither a scan id (42), a duration (24h, 7d, 30m, 90s) nor an RFC 3339 time"
            ))),
        }
    }
}

fn too_far(text: &str) -> InventoryError {
    invalid(format!(
        "--since {text:?} reaches too far back: give a shorter duration"
    ))
}

fn parse_duration(text: &str) -> Option<Duration> {
    let unit = text.chars().last()?;
    let seconds_per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        _ => return None,
    };
    let count: u64 = text[..text.len() - 1].parse().ok()?;
    Some(Duration::from_secs(count.checked_mul(seconds_per)?))
}

/// Which end of the changes a page starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChangeOrder {
    /// The order they were written in (what `tollgate changes` prints).
    #[default]
    OldestFirst,
    /// The latest first (the live page's "latest changes": one bounded page of them,
    /// without reading every older change before it).
    NewestFirst,
}

impl ChangeOrder {
    /// `oldest` or `newest` (the API's `order=`).
    pub fn parse(text: &str) -> Result<ChangeOrder> {
        match text {
            "oldest" => Ok(ChangeOrder::OldestFirst),
            "newest" => Ok(ChangeOrder::NewestFirst),
            _ => Err(invalid(format!(
                "{text:?} is not an order of changes: write oldest or newest"
            ))),
        }
    }
}

/// The filter of `changes`.
#[derive(Debug, Clone, Default)]
pub struct ChangeFilter {
    pub since: Option<Since>,
    pub types: Vec<TypePattern>,
    pub accounts: Vec<String>,
    pub order: ChangeOrder,
    pub page_size: PageSize,
    /// The `next` of the previous page.
    pub cursor: Option<String>,
}

/// One page of rows and the cursor of the next, `None` on the last page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Page<T> {
    pub rows: Vec<T>,
    pub next: Option<String>,
}

fn invalid(message: String) -> InventoryError {
    InventoryError::new(InventoryErrorKind::InvalidQuery, message)
}

/// The two SQL dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A query parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Text(String),
    Int(i64),
}

/// A SQL statement under construction: text and its parameters.
pub(crate) struct Sql {
    dialect: Dialect,
    pub text: String,
    pub params: Vec<Param>,
}

impl Sql {
    fn new(dialect: Dialect, text: &str) -> Sql {
        Sql {
            dialect,
            text: text.to_string(),
            params: Vec::new(),
        }
    }

    /// Adds a parameter and returns its placeholder.
    fn bind(&mut self, param: Param) -> String {
        self.params.push(param);
        match self.dialect {
            Dialect::Sqlite => format!("?{}", self.params.len()),
            Dialect::Postgres => format!("${}", self.params.len()),
        }
    }

    fn any_of(&mut self, column: &str, values: &[String]) -> Option<String> {
        if values.is_empty() {
            return None;
        }
        let slots: Vec<String> = values
            .iter()
            .map(|value| self.bind(Param::Text(value.clone())))
            .collect();
        Some(format!("{column} IN ({})", slots.join(", ")))
    }

    fn types(&mut self, column: &str, types: &[TypePattern]) -> Option<String> {
        if types.is_empty() {
            return None;
        }
        let exact: Vec<String> = types
            .iter()
            .filter(|t| !t.is_glob())
            .map(|t| t.0.clone())
            .collect();
        let mut alternatives: Vec<String> = self.any_of(column, &exact).into_iter().collect();
        for glob in types.iter().filter(|t| t.is_glob()) {
            // Type patterns hold only [A-Za-z0-9:*]: nothing else to escape.
            let clause = match self.dialect {
                Dialect::Sqlite => {
                    format!("{column} GLOB {}", self.bind(Param::Text(glob.0.clone())))
                }
                Dialect::Postgres => {
                    let like = glob.0.replace('*', "%");
                    format!("{column} LIKE {}", self.bind(Param::Text(like)))
                }
            };
            alternatives.push(clause);
        }
        Some(format!("({})", alternatives.join(" OR ")))
    }

    fn finish(mut self, clauses: Vec<String>, tail: &str) -> Sql {
        if !clauses.is_empty() {
            self.text.push_str(" WHERE ");
            self.text.push_str(&clauses.join(" AND "));
        }
        self.text.push(' ');
        self.text.push_str(tail);
        self
    }
}

/// The columns every resource read selects, in [`ResourceRow`](crate::ResourceRow)'s
/// order (JSON as text on both engines).
pub(crate) fn resource_columns(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "resource_type, id, arn, account, region, tags, properties, fields, tags_only, first_seen, last_seen, gone_since, last_scan",
        Dialect::Postgres => "resource_type, id, arn, account, region, tags::text, properties::text, fields::text, tags_only, first_seen, last_seen, gone_since, last_scan",
    }
}

/// The query behind `resources`: one page plus one row (to know whether more follow).
pub(crate) fn resources_sql(dialect: Dialect, filter: &ResourceFilter) -> Result<Sql> {
    let mut sql = Sql::new(
        dialect,
        &format!("SELECT {} FROM resources", resource_columns(dialect)),
    );
    let mut clauses = Vec::new();
    clauses.extend(sql.types("resource_type", &filter.types));
    clauses.extend(sql.any_of("account", &filter.accounts));
    clauses.extend(sql.any_of("region", &filter.regions));
    for (key, value) in &filter.tags {
        let key = sql.bind(Param::Text(key.clone()));
        let value = sql.bind(Param::Text(value.clone()));
        clauses.push(match dialect {
            Dialect::Sqlite => format!(
                "EXISTS (SELECT 1 FROM json_each(resources.tags) AS tag WHERE tag.key = {key} AND tag.value = {value})"
            ),
            Dialect::Postgres => format!("tags ->> ({key}::text) = {value}"),
        });
    }
    if !filter.include_gone {
        clauses.push("gone_since IS NULL".to_string());
    }
    if let Some(cursor) = &filter.cursor {
        let after = decode_resource_cursor(cursor)?;
        let slots = [after.account, after.resource_type, after.region, after.id]
            .map(|part| sql.bind(Param::Text(part)));
        clauses.push(format!(
            "(account, resource_type, region, id) > ({}, {}, {}, {})",
            slots[0], slots[1], slots[2], slots[3]
        ));
    }
    let limit = i64::from(filter.page_size.get()) + 1;
    let limit = sql.bind(Param::Int(limit));
    Ok(sql.finish(
        clauses,
        &format!("ORDER BY account, resource_type, region, id LIMIT {limit}"),
    ))
}

/// The query behind one resource's row: its key, whether gone or not.
pub(crate) fn resource_sql(dialect: Dialect, key: &ResourceKey) -> Sql {
    let mut sql = Sql::new(
        dialect,
        &format!("SELECT {} FROM resources", resource_columns(dialect)),
    );
    let clauses = [
        ("account", &key.account),
        ("resource_type", &key.resource_type),
        ("region", &key.region),
        ("id", &key.id),
    ]
    .map(|(column, value)| format!("{column} = {}", sql.bind(Param::Text(value.clone()))));
    sql.finish(clauses.to_vec(), "")
}

/// The query behind `changes`.
pub(crate) fn changes_sql(dialect: Dialect, filter: &ChangeFilter) -> Result<Sql> {
    let detail = match dialect {
        Dialect::Sqlite => "detail",
        Dialect::Postgres => "detail::text",
    };
    let mut sql = Sql::new(
        dialect,
        &format!("SELECT id, scan_id, at, kind, resource_type, account, region, resource_id, {detail} FROM changes"),
    );
    let mut clauses = Vec::new();
    match &filter.since {
        Some(Since::AfterScan(scan)) => {
            let slot = sql.bind(Param::Int(scan.0));
            clauses.push(format!("scan_id > {slot}"));
        }
        Some(Since::At(at)) => {
            let slot = sql.bind(Param::Text(at.clone()));
            // Through the scans' start (indexed) rather than an index on changes.at.
            clauses.push(format!(
                "scan_id IN (SELECT id FROM scans WHERE started_at >= {slot})"
            ));
        }
        None => {}
    }
    clauses.extend(sql.types("resource_type", &filter.types));
    clauses.extend(sql.any_of("account", &filter.accounts));
    if let Some(cursor) = &filter.cursor {
        let after: i64 = cursor.parse().map_err(|_| {
            invalid(format!(
                "{cursor:?} is not a cursor of changes: pass the `next` of the previous page"
            ))
        })?;
        let slot = sql.bind(Param::Int(after));
        clauses.push(match filter.order {
            ChangeOrder::OldestFirst => format!("id > {slot}"),
            ChangeOrder::NewestFirst => format!("id < {slot}"),
        });
    }
    let limit = sql.bind(Param::Int(i64::from(filter.page_size.get()) + 1));
    let order = match filter.order {
        ChangeOrder::OldestFirst => "id",
        ChangeOrder::NewestFirst => "id DESC",
    };
    Ok(sql.finish(clauses, &format!("ORDER BY {order} LIMIT {limit}")))
}

/// The cursor after a resource: its key as hex-encoded JSON (opaque to readers).
pub(crate) fn resource_cursor(key: &ResourceKey) -> String {
    let json = serde_json::to_vec(&[&key.account, &key.resource_type, &key.region, &key.id])
        .unwrap_or_default();
    json.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn decode_resource_cursor(cursor: &str) -> Result<ResourceKey> {
    let bad = || {
        invalid(format!(
            "{cursor:?} is not a cursor of resources: pass the `next` of the previous page"
        ))
    };
    if !cursor.len().is_multiple_of(2) || !cursor.is_ascii() {
        return Err(bad());
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&cursor[at..at + 2], 16).ok())
        .collect();
    let parts: [String; 4] = serde_json::from_slice(&bytes.ok_or_else(bad)?).map_err(|_| bad())?;
    let [account, resource_type, region, id] = parts;
    Ok(ResourceKey {
        account,
        region,
        resource_type,
        id,
    })
}

/// Cuts the one extra row off a page and makes the cursor of the next.
pub(crate) fn into_page<T>(
    mut rows: Vec<T>,
    size: PageSize,
    cursor_of: impl Fn(&T) -> String,
) -> Page<T> {
    let more = rows.len() > size.get() as usize;
    rows.truncate(size.get() as usize);
    let next = if more {
        rows.last().map(cursor_of)
    } else {
        None
    };
    Page { rows, next }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn type_patterns_accept_names_and_globs_only() {
        assert!(TypePattern::parse("AWS::S3::Bucket").is_ok());
        assert!(TypePattern::parse("AWS::S3::*").unwrap().is_glob());
        for bad in ["", "AWS::S3::%", "x' OR 1=1"] {
            assert_eq!(
                TypePattern::parse(bad).unwrap_err().kind(),
                InventoryErrorKind::InvalidQuery
            );
        }
    }

    #[test]
    fn page_sizes_are_bounded() {
        assert!(PageSize::new(PageSize::MAX).is_ok());
        assert!(PageSize::new(0).is_err());
        assert!(PageSize::new(PageSize::MAX + 1).is_err());
    }

    #[test]
    fn since_reads_a_scan_a_duration_or_a_time() {
        let now = Utc.with_ymd_and_hms(2026, 12, 3, 12, 0, 0).unwrap();
        assert_eq!(
            Since::parse("42", now).unwrap(),
            Since::AfterScan(ScanId(42))
        );
        assert_eq!(
            Since::parse("24h", now).unwrap(),
            Since::At("2026-12-02T12:00:00.000Z".into())
        );
        assert_eq!(
            Since::parse("30m", now).unwrap(),
            Since::At("2026-12-03T11:30:00.000Z".into())
        );
        assert_eq!(
            Since::parse("2026-12-01T00:00:00Z", now).unwrap(),
            Since::At("2026-12-01T00:00:00.000Z".into())
        );
        assert!(Since::parse("yesterday", now).is_err());
    }

    #[test]
    fn a_resource_cursor_round_trips_and_garbage_is_refused() {
        let key = ResourceKey {
            account: "1".into(),
            region: "eu-west-1".into(),
            resource_type: "AWS::S3::Bucket".into(),
            id: "a|\"b\"".into(),
        };
        assert_eq!(decode_resource_cursor(&resource_cursor(&key)).unwrap(), key);
        for bad in ["zz", "abc", "7b7d"] {
            assert!(decode_resource_cursor(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn filters_become_placeholders_never_spliced_text() {
        let filter = ResourceFilter {
            types: vec![
                TypePattern::parse("AWS::S3::*").unwrap(),
                TypePattern::parse("AWS::KMS::Key").unwrap(),
            ],
            accounts: vec!["1".into()],
            tags: vec![("env".into(), "prod' --".into())],
            ..ResourceFilter::default()
        };
        let sql = resources_sql(Dialect::Postgres, &filter).unwrap();
        assert!(
            sql.text
                .contains("(resource_type IN ($1) OR resource_type LIKE $2)"),
            "{}",
            sql.text
        );
        assert!(!sql.text.contains("prod"));
        assert_eq!(sql.params[1], Param::Text("AWS::S3::%".into()));
        let sqlite = resources_sql(Dialect::Sqlite, &filter).unwrap();
        assert!(
            sqlite.text.contains("resource_type GLOB ?2"),
            "{}",
            sqlite.text
        );
        assert!(sqlite.text.ends_with("LIMIT ?6"), "{}", sqlite.text);
    }
}
