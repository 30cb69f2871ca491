//! `tollgate history`: one resource's current row and every version from the inventory
//! store, newest first, each with the fields that changed (the same answer as
//! `GET /v1/resources/history`; `--json` prints that answer, versions oldest first).
//!
//! The resource is named by the four parts of its key as `resources` prints them; ids
//! hold `/` and `|`, so each part is a flag of its own rather than one joined string.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use tollgate_inventory::{ResourceHistory, ResourceKey};

use super::store::{open, ReadStoreFlag};

/// `tollgate history` flags.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub store: ReadStoreFlag,
    /// The resource's account.
    #[arg(long, value_name = "ID")]
    pub account: String,
    /// The resource's type (`AWS::S3::Bucket`; a dataset name such as `s3-buckets` too).
    #[arg(long = "type", value_name = "TYPE")]
    pub resource_type: String,
    /// The resource's region (`global` for global types).
    #[arg(long, value_name = "REGION")]
    pub region: String,
    /// The resource's id, as `resources` prints it.
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// Print JSON (`{"resource", "versions"}`, versions oldest first) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A dataset name (`s3-buckets`) stands for its type, as in `resources --types`.
fn type_name(text: &str) -> String {
    tollgate_collectors::Dataset::catalog()
        .into_iter()
        .find(|d| d.name() == text)
        .map(|d| d.resource_type().to_owned())
        .unwrap_or_else(|| text.to_owned())
}

/// `tollgate history`: exit 0 with the history, 1 when the store never held it.
pub fn run(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    let mut store = open(args.store.store.as_deref())?;
    let key = ResourceKey {
        account: args.account,
        resource_type: type_name(&args.resource_type),
        region: args.region,
        id: args.id,
    };
    let Some(history) = store.resource_history(&key)? else {
        anyhow::bail!(
            "{} holds no {} {:?} in account {} region {}: `tollgate resources --include-gone` lists what it holds",
            store.redacted_url(),
            key.resource_type,
            key.id,
            key.account,
            key.region
        );
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &history).context("writing JSON")?;
        writeln!(out)?;
    } else {
        print_text(&mut out, &key, &history)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn print_text(
    out: &mut impl Write,
    key: &ResourceKey,
    history: &ResourceHistory,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{} {} in account {} region {}",
        key.resource_type, key.id, key.account, key.region
    )?;
    if let Some(r) = &history.resource {
        writeln!(
            out,
            "first seen {}, last seen {}{}",
            r.first_seen,
            r.last_seen,
            r.gone_since
                .as_ref()
                .map(|g| format!(", gone since {g}"))
                .unwrap_or_default()
        )?;
    }
    writeln!(out, "{:>5}  {:<24}  changed", "scan", "seen_at")?;
    for v in history.versions.iter().rev() {
        let changed = if v.changed.is_empty() {
            "(first version)".to_owned()
        } else {
            v.changed.join(", ")
        };
        writeln!(out, "{:>5}  {:<24}  {changed}", v.row.scan, v.row.seen_at)?;
        writeln!(out, "       tags {}", v.row.tags)?;
        writeln!(out, "       properties {}", v.row.properties)?;
    }
    Ok(())
}
