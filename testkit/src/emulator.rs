//! The AWS emulators' side of the environment: the static credentials moto and dynalite
//! accept, for this process's default credential chain or for a child's.
//!
//! Nothing of the user's own AWS setup may leak in (a profile, a session token, the
//! instance metadata service): a test that passes only on a machine with credentials
//! would prove nothing elsewhere.

use std::process::Command;
use std::sync::Once;

/// The access key id and secret moto and dynalite accept.
pub const TEST_KEY: &str = "testing";
/// The region every emulator test uses.
pub const TEST_REGION: &str = "us-east-1";

/// Set static credentials and a region for this process's default chain, once. Call it
/// before any test of the binary loads an SDK config: `set_var` races with threads that
/// read the environment, so it is done once, as early as possible.
pub fn emulator_credentials() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("AWS_ACCESS_KEY_ID", TEST_KEY);
        std::env::set_var("AWS_SECRET_ACCESS_KEY", TEST_KEY);
        std::env::set_var("AWS_SESSION_TOKEN", TEST_KEY);
        std::env::set_var("AWS_REGION", TEST_REGION);
        std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
        std::env::remove_var("AWS_PROFILE");
    });
}

/// The same for a child process: static key and secret, [`TEST_REGION`], no profile, no
/// session token, no instance metadata.
pub fn emulator_env(cmd: &mut Command) -> &mut Command {
    cmd.env("AWS_ACCESS_KEY_ID", TEST_KEY)
        .env("AWS_SECRET_ACCESS_KEY", TEST_KEY)
        .env("AWS_REGION", TEST_REGION)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
}
