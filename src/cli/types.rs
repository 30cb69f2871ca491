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
        "{:<52} {:<18} {:<12} {:<7} {:<5} {:<6} {:<14} {:<52} charges",
        "type", "alias", "collected", "default", "sweep", "global", "cloudformation", "parent"
    )?;
    let yes = |b: bool| if b { "yes" } else { "no" };
    for row in &rows {
        writeln!(
            out,
            "{:<52} {:<18} {:<12} {:<7} {:<5} {:<6} {:<14} {:<52} {}",
            row.resource_type,
            row.alias.unwrap_or("-"),
            match row.collected_by {
                CollectedBy::Native => "native",
                CollectedBy::Cloudcontrol => "cloudcontrol",
                CollectedBy::TagsOnly => "tags-only",
            },
            yes(row.default),
            yes(row.default_sweep),
            yes(row.global),
            yes(row.cloudformation),
            row.parent.unwrap_or("-"),
            match row.charges.is_empty() {
                true => "-".to_string(),
                false => row.charges.join(","),
            },
        )?;
    }
    writeln!(
        out,
        "\nnative and cloudcontrol types are selectable with --types (names, `*` globs or \
         aliases; `--types native` is every native type, `--types cloudcontrol` the sweep column's types). A native type's \
         charges are the keys its collector's calls spend; a cloudcontrol listing is \
         charged to cloudcontrol:ListResources and to each of its charges; a type with a \
         parent is listed once per item of its parent type, when that type is in the scan \
         too (else it is skipped). tags-only types appear only as the tagging sweep's \
         tagged resources; other ARNs \
         get a best-effort name in the same style, which may not be a CloudFormation type."
    )?;
    Ok(ExitCode::SUCCESS)
}
