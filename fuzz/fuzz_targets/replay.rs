//! Replay scripts (JSON, `tollgate replay`): parsed and validated against the default
//! policies, the script's own `policies` layered over them. Errors are expected; a panic
//! is a finding.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use tollgate_replay::script::Script;
use tollgate_quota::PolicyTable;

static DEFAULTS: LazyLock<PolicyTable> = LazyLock::new(PolicyTable::defaults);

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Script::parse(text, &DEFAULTS);
});
