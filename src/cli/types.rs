//! `tollgate types`: every resource type tollgate knows, how it is collected, and
//! whether `--types` can select it (`tollgate_collectors::types`).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use tollgate_collectors::types::{self, CollectedBy};

pub fn run(json: bool) -> anyhow::Result<ExitCode> {
    let rows = types::catalog();
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&rows).context("encoding the type table")?;
        writeln!(out, "{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<44} {:<18} {:<9} {:<7} {:<6} cloudformation",
        "type", "alias", "collected", "default", "global"
    )?;
    let yes = |b: bool| if b { "yes" } else { "no" };
    for row in &rows {
        writeln!(
            out,
            "{:<44} {:<18} {:<9} {:<7} {:<6} {}",
            row.resource_type,
            row.alias.unwrap_or("-"),
            match row.collected_by {
                CollectedBy::Native => "native",
                CollectedBy::TagsOnly => "tags-only",
            },
            yes(row.default),
            yes(row.global),
            yes(row.cloudformation),
        )?;
    }
    writeln!(
        out,
        "\nnative types are selectable with --types (names, `*` globs or aliases); tags-only \
         types appear only as the tagging sweep's tagged resources. Other ARNs get a \
         best-effort name in the same style, which may not be a CloudFormation type."
    )?;
    Ok(ExitCode::SUCCESS)
}
