//! The credentials check: resolve the credential chain (and the named profile) once,
//! before a scan, with a short deadline, and say what is wrong in terms a user can act on.
//!
//! Why check up front? Without it, a machine with no AWS configuration starts a scan whose
//! every call fails inside the SDK with a dispatch failure that names an instance-metadata
//! token, and the report calls it `transient`. The chain's own errors are not much better:
//! a profile that does not exist is "not loaded" and the chain moves on to the next
//! source, so `--profile nope` ends as "no providers in chain provided credentials".
//! [`check_credentials`] therefore reads the shared files itself first (with aws-config's
//! parser), refuses a named profile that neither file defines, and only then asks the
//! chain, mapping its answer to a [`CredentialsError`] with a kind and a fix.
//!
//! Secrets: aws-config's `credential_process` error carries the process's stderr, which
//! may hold secrets. [`safe_description`] keeps the exit status and drops the rest; the
//! retry owner uses it too, so a failure mid-scan reaches neither report nor telemetry
//! with that output.
//!
//! Instance metadata: the chain's last source, and its region chain's, is IMDS. aws-config
//! bounds each probe (1 s connect and read timeouts, timeouts not retried), so a machine
//! without a metadata service costs about a second per probe; `AWS_EC2_METADATA_DISABLED=true`
//! skips them. [`CREDENTIALS_CHECK_TIMEOUT`] bounds the whole resolution.
//!
//! Mid-scan, [`provider`] tells a provider that could not answer this time (a timeout,
//! its service's 5xx) from credentials that are missing or expired: the first is retried
//! before dispatch, the second is a `credentials` failure.

mod error;
mod profile;
pub(crate) mod provider;

use std::time::Duration;

use aws_credential_types::provider::error::CredentialsError as ChainError;
use aws_credential_types::provider::ProvideCredentials;
use aws_smithy_runtime_api::client::http::SharedHttpClient;

pub use error::{CredentialsError, CredentialsErrorKind};
use profile::{profile_facts, ProfileFacts};

use crate::aws::chain::{default_http_client, load_chain};

/// How long the check waits for the chain: the SDK's own credential cache gives a load
/// the same 5 s, so nothing that would work during a scan is refused here.
pub const CREDENTIALS_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A successful check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CredentialsCheck {
    /// The region the configuration names (the request's first region when it names
    /// one); `None` when nothing does (a scan then uses `us-east-1`).
    pub region: Option<String>,
}

/// What the check needs of a scan request (the scan crate's `DiscoveryRequest` gives it
/// with `credentials_source()`): the engine names no request type of the layers above it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CredentialsSource<'a> {
    /// The request's first region, if it names any.
    pub first_region: Option<&'a str>,
    /// The request carries static credentials of its own (the demo, tests).
    pub static_credentials: bool,
    /// The named profile, if any.
    pub profile: Option<&'a str>,
    /// The endpoint override, if any.
    pub endpoint_url: Option<&'a str>,
}

/// Check that `request`'s credentials can be had (see the module docs). Static
/// credentials in the request (the demo, tests) pass without touching the user's. With
/// a role to assume, this checks the base credentials that sign `AssumeRole`; the role
/// itself is assumed when the scan starts, and a refusal fails the scan naming the role.
pub async fn check_credentials(
    request: CredentialsSource<'_>,
) -> Result<CredentialsCheck, CredentialsError> {
    check_credentials_with(default_http_client(), request).await
}

/// [`check_credentials`] with an explicit inner HTTP client.
pub async fn check_credentials_with(
    http: SharedHttpClient,
    request: CredentialsSource<'_>,
) -> Result<CredentialsCheck, CredentialsError> {
    let first_region = request.first_region;
    if request.static_credentials {
        return Ok(CredentialsCheck {
            region: first_region.map(str::to_owned),
        });
    }
    let facts = profile_facts(request.profile).await;
    if let Some(why) = &facts.unreadable {
        return Err(error(
            CredentialsErrorKind::InvalidConfiguration,
            &facts,
            why,
        ));
    }
    if facts.named && !facts.exists {
        let defined = facts.defined.join(", ");
        return Err(error(
            CredentialsErrorKind::ProfileNotFound,
            &facts,
            &defined,
        ));
    }
    let sdk = load_chain(
        http,
        request.profile,
        first_region,
        request.endpoint_url,
        None,
        None,
    )
    .await;
    let region = sdk.region().map(|r| r.as_ref().to_owned());
    let Some(provider) = sdk.credentials_provider() else {
        return Err(error(CredentialsErrorKind::NotFound, &facts, ""));
    };
    match tokio::time::timeout(CREDENTIALS_CHECK_TIMEOUT, provider.provide_credentials()).await {
        Err(_) => Err(error(CredentialsErrorKind::TimedOut, &facts, "")),
        Ok(Ok(_)) => Ok(CredentialsCheck { region }),
        Ok(Err(e)) => Err(from_chain(&e, &facts)),
    }
}

fn error(kind: CredentialsErrorKind, facts: &ProfileFacts, detail: &str) -> CredentialsError {
    CredentialsError {
        kind,
        profile: facts.name.clone(),
        profile_named: facts.named,
        files: facts.files.clone(),
        detail: detail.to_owned(),
    }
}

/// The chain's error as a [`CredentialsError`].
fn from_chain(e: &ChainError, facts: &ProfileFacts) -> CredentialsError {
    let (kind, detail) = classify(e, facts.uses_sso);
    error(kind, facts, &detail)
}

/// The kind of a chain error and a description safe to print. `uses_sso`: the selected
/// profile gets its credentials from SSO.
fn classify(e: &ChainError, uses_sso: bool) -> (CredentialsErrorKind, String) {
    use CredentialsErrorKind as K;
    let text = chain_text(e);
    if let Some(process) = process_failure(&text) {
        return (K::ProcessFailed, process);
    }
    // The source's own words, without the generic "an error occurred while loading
    // credentials" of the outer error.
    let text = redact_output(&std::error::Error::source(e).map_or(text, chain_text))
        .replace("an error occurred while loading credentials: ", "")
        .replace("an error occurred while loading an access token: ", "");
    let kind = match e {
        // "Not loaded" by every source: the listed sources say enough.
        ChainError::CredentialsNotLoaded(_) => return (K::NotFound, String::new()),
        ChainError::ProviderTimedOut(_) => K::TimedOut,
        // Instance metadata is the chain's last source: every other one had nothing. A
        // metadata service that refuses (or a proxy answering for it) is not a reason to
        // call the failure anything but "no credentials".
        _ if text.contains("IMDS") => K::NotFound,
        _ if uses_sso => K::SsoLoginRequired,
        ChainError::InvalidConfiguration(_) => K::InvalidConfiguration,
        _ => K::ProviderFailed,
    };
    (kind, text)
}

/// A short description of a chain error, safe for reports and logs (no process output):
/// its kind and what the source said.
pub fn safe_description(e: &ChainError) -> String {
    let (kind, detail) = classify(e, false);
    let what = match kind {
        CredentialsErrorKind::ProcessFailed => "the credential_process failed",
        CredentialsErrorKind::NotFound => "no credentials found",
        CredentialsErrorKind::TimedOut => "loading credentials timed out",
        _ => "credentials could not be loaded",
    };
    match detail.is_empty() {
        true => what.to_owned(),
        false => format!("{what} ({detail})"),
    }
}

/// The error and its sources, joined (Display only: `Debug` would repeat payloads).
fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// aws-config's `credential_process` errors (aws-config 1.x: "Error retrieving
/// credentials: external process exited with code {status}. Stderr: {stderr}", "Error
/// retrieving credentials from external process: ..."): the exit status, or what went
/// wrong, without the process's output.
fn process_failure(text: &str) -> Option<String> {
    const EXITED: &str = "external process exited with code ";
    if let Some(start) = text.find(EXITED) {
        let rest = &text[start + EXITED.len()..];
        let status = rest.split(". Stderr").next().unwrap_or_default().trim();
        return Some(status.chars().take(40).collect());
    }
    if !text.contains("from external process") {
        return None;
    }
    Some(
        if text.contains("could not parse response") {
            "its output is not valid credentials JSON"
        } else if text.contains("could not decode output") {
            "its output is not UTF-8"
        } else {
            "it could not be started"
        }
        .to_owned(),
    )
}

/// Anything after a `Stderr:` marker is some process's output: drop it.
fn redact_output(text: &str) -> String {
    match text.find("Stderr:") {
        Some(i) => format!("{}Stderr: (not shown)", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "AKIA-SECRET-DO-NOT-PRINT";

    #[test]
    fn a_failing_process_keeps_its_exit_status_and_drops_its_output() {
        let e = ChainError::provider_error(format!(
            "Error retrieving credentials: external process exited with code exit status: 3. \
             Stderr: token={SECRET}\nmore"
        ));
        let (kind, detail) = classify(&e, false);
        assert_eq!(kind, CredentialsErrorKind::ProcessFailed);
        assert_eq!(detail, "exit status: 3");
        let short = safe_description(&e);
        assert!(short.contains("exit status: 3"), "{short}");
        assert!(!short.contains(SECRET), "{short}");
        let parse = ChainError::provider_error(format!(
            "Error retrieving credentials from external process, could not parse response: {SECRET}"
        ));
        assert!(!safe_description(&parse).contains(SECRET));
    }

    #[test]
    fn chain_errors_map_to_kinds() {
        use CredentialsErrorKind as K;
        let not_loaded = ChainError::not_loaded("no providers in chain provided credentials");
        assert_eq!(classify(&not_loaded, false).0, K::NotFound);
        let sso = ChainError::provider_error("the SSO token has expired and cannot be refreshed");
        assert_eq!(classify(&sso, true).0, K::SsoLoginRequired);
        assert_eq!(classify(&sso, false).0, K::ProviderFailed);
        let invalid = ChainError::invalid_configuration("bad role_arn");
        assert_eq!(classify(&invalid, false).0, K::InvalidConfiguration);
        let imds = ChainError::provider_error(
            "failed to load IMDS session token: service error: request forbidden",
        );
        let (kind, detail) = classify(&imds, false);
        assert_eq!(kind, K::NotFound);
        assert!(detail.contains("IMDS session token"), "{detail}");
        let other = ChainError::provider_error(format!("proxy said Stderr: {SECRET}"));
        let (kind, detail) = classify(&other, false);
        assert_eq!(kind, K::ProviderFailed);
        assert!(!detail.contains(SECRET), "{detail}");
    }
}
