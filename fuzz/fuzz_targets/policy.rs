//! The policy parsers: `TOLLGATE_QUOTA_OVERRIDES` (JSON) and `TOLLGATE_POLICY_FILE` (TOML
//! or JSON, by extension or by content), with schedules (cron patterns, time zones) and
//! calendar allowances inside. The first byte picks the entry point; a table that parses
//! is then read the ways `tollgate policies` and admission read it, schedules resolved and
//! allowance periods found at a few instants (the epoch, a DST change, the last
//! representable instant) as a key's actor does. Errors are expected; a panic is a
//! finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_engine::config::policy_text_table;
use tollgate_quota::schedule::{resolve, DEFAULT_SCAN_CAP};
use tollgate_quota::{PolicyTable, ReadTime, ServiceGroup, WallClock};

/// Instants a schedule or allowance is read at: the epoch, Berlin's spring-forward
/// night of 2026, the end of the range.
const INSTANTS: [i64; 4] = [0, 1_774_746_000_000, 1_774_749_600_000, 253_402_300_799_999];

/// Read `table`'s calendar entries as the key actors do (`calendar.rs`).
fn read_calendars(table: &PolicyTable) {
    for row in table.rows() {
        let Ok(name) = ServiceGroup::new(&row.service, &row.group) else {
            continue;
        };
        for millis in INSTANTS {
            let t = WallClock::from_unix_millis(millis).expect("in range");
            match table.read_time_for_name(&name) {
                Some(ReadTime::Schedule(schedule)) => {
                    let _ = resolve(&row.policy, schedule, t, t.saturating_add(DEFAULT_SCAN_CAP));
                    let _ = table.resolve_for_name(&name, t, t.saturating_add(DEFAULT_SCAN_CAP));
                }
                Some(ReadTime::Allowance(allowance)) => {
                    let _ = allowance.period_at(t);
                }
                None => {}
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let table = match mode % 4 {
        0 => PolicyTable::with_overrides(text, "TOLLGATE_QUOTA_OVERRIDES").ok(),
        1 => policy_text_table(text, "policy.toml", Some(false)).ok(),
        2 => policy_text_table(text, "policy.json", Some(true)).ok(),
        _ => policy_text_table(text, "policy", None).ok(),
    };
    if let Some(table) = table {
        let _ = table.rows();
        let _ = table.warnings();
        for (service, group) in [
            ("s3", "ListBuckets"),
            ("kms", "ListKeys"),
            ("ce", "GetCostAndUsage"),
        ] {
            let _ = table.policy_for(service, group);
            let _ = table.effective(service, group);
        }
        read_calendars(&table);
    }
});
