//! dynalite, the DynamoDB emulator of the fleet tests: `scripts/test` starts one on
//! loopback (scripts/dynalite.sh) and exports its URL as `TOLLGATE_TEST_DYNALITE_URL`.
//! Without it these tests fail with instructions rather than skip: a fleet test that
//! passes without a table would prove nothing. (moto's DynamoDB is not atomic under
//! concurrent conditional writes: never a substitute here.)

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
             test in that shell, or start `dynalite --host 127.0.0.1 --port PORT \
             --createTableMs 0` and set {DYNALITE_URL_ENV}=http://127.0.0.1:PORT"
        ),
    }
}
