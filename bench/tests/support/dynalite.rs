//! dynalite, the DynamoDB emulator of the fleet tests: `scripts/test` starts one on
//! loopback (scripts/dynalite.sh) and exports its URL as `TOLLGATE_TEST_DYNALITE_URL`.
//! Without it these tests fail with instructions rather than skip: a fleet test that
//! passes without a table would prove nothing. (moto's DynamoDB is not atomic under
//! concurrent conditional writes: never a substitute here.)

#![allow(dead_code)] // each test file uses the part it needs

/// The variable `scripts/test` sets.
pub const DYNALITE_URL_ENV: &str = "TOLLGATE_TEST_DYNALITE_URL";

/// The running dynalite's URL, or a panic that says how to get one.
pub fn dynalite_url() -> String {
    match std::env::var(DYNALITE_URL_ENV) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{DYNALITE_URL_ENV} is not set: these tests need dynalite (a DynamoDB emulator). \
             Run scripts/test (it installs and starts one), or in one shell: \
             `. scripts/dynalite.sh && DYNALITE_LOG_PREFIX=dev start_dynalite` and then cargo \
             test in that shell, or set {DYNALITE_URL_ENV} to a running dynalite's URL"
        ),
    }
}

/// Static credentials and a region for the SDK's default chain (dynalite checks neither);
/// set before any SDK config of the test binary is loaded.
pub fn emulator_credentials() {
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    std::env::set_var("AWS_SESSION_TOKEN", "testing");
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    std::env::remove_var("AWS_PROFILE");
}

/// A table name unique to this run and test.
#[allow(clippy::disallowed_methods)] // a name, not a measurement
pub fn unique_table(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("tg-{test}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}
