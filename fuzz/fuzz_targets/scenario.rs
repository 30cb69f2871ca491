//! Simulator scenario files (TOML): parsed and validated as `tollgate simulate` and the
//! benches load them, then the derived figures a bench reads (expected calls, inventory
//! counts, server quotas). Errors are expected; a panic, or a valid scenario whose
//! expansion eats the machine (bounded by `MAX_RESOURCES`), is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_sim::Scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(scenario) = Scenario::parse(text, "fuzz.toml") {
        let _ = scenario.inventory_counts();
        let _ = scenario.expected_calls();
        let _ = scenario.expected_calls_by_region();
        for op in [
            "s3:ListBuckets",
            "lambda:ListVersionsByFunction",
            "kms:GetKeyLastUsage",
        ] {
            let _ = scenario.server_quota(op);
        }
    }
});
