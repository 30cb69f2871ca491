//! `CredentialsError`: why no AWS credentials could be had, what was tried, and what to
//! do next.
//!
//! One struct with a documented, `#[non_exhaustive]` kind (the house habit, as
//! `tollgate_storage::StorageError`): the CLI prints it as one message, embedders branch
//! on [`CredentialsErrorKind`] (a missing profile, an SSO session to renew, a failing
//! `credential_process`). Every text here is safe to print and store: a
//! `credential_process` failure carries its exit status, never its output, which may
//! hold secrets.

use std::fmt;
use std::path::PathBuf;

use super::CREDENTIALS_CHECK_TIMEOUT;

/// What kind of credentials failure it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CredentialsErrorKind {
    /// No source of the default chain had credentials.
    NotFound,
    /// The named profile (`--profile`, `AWS_PROFILE`) is in neither shared file.
    ProfileNotFound,
    /// The profile's SSO session has expired or was never started: `aws sso login`.
    SsoLoginRequired,
    /// The profile's `credential_process` failed (its exit status is kept, its output not).
    ProcessFailed,
    /// The shared files, or the profile's settings, are invalid.
    InvalidConfiguration,
    /// A source failed for another reason (instance metadata, the container endpoint,
    /// web identity, an assumed role).
    ProviderFailed,
    /// Resolution did not finish within [`CREDENTIALS_CHECK_TIMEOUT`].
    TimedOut,
}

/// Why no AWS credentials could be had. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialsError {
    pub(crate) kind: CredentialsErrorKind,
    pub(crate) profile: String,
    pub(crate) profile_named: bool,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) detail: String,
}

impl CredentialsError {
    /// The kind of failure.
    pub fn kind(&self) -> CredentialsErrorKind {
        self.kind
    }

    /// The profile the chain read (`default` unless one was named).
    pub fn profile(&self) -> &str {
        &self.profile
    }

    /// Whether the profile was named (`--profile`, `AWS_PROFILE`) rather than the default.
    pub fn profile_named(&self) -> bool {
        self.profile_named
    }

    /// The shared config and credentials files that were read (or would have been).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// What the failing source said, without secrets (a `credential_process`'s exit
    /// status, an SSO error; for `ProfileNotFound`, the profiles the files define, comma
    /// separated); empty when there is nothing to add.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    fn files_text(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                let missing = if f.exists() { "" } else { " (missing)" };
                format!("{}{missing}", f.display())
            })
            .collect();
        match files.len() {
            0 => "the shared config files (no home directory found)".to_string(),
            _ => files.join(" and "),
        }
    }

    fn detail_text(&self) -> String {
        if self.detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.detail)
        }
    }

    /// The sources the default chain tries, in order.
    fn tried(&self) -> String {
        format!(
            "tried: environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), \
             profile `{}` in {} (keys, SSO, credential_process, assumed role), \
             web identity (AWS_WEB_IDENTITY_TOKEN_FILE), the container endpoint \
             (AWS_CONTAINER_CREDENTIALS_*) and EC2 instance metadata",
            self.profile,
            self.files_text()
        )
    }
}

/// The ways to set credentials up, for messages about a missing or failing chain.
const HOW_TO_FIX: &str = "to fix: run `aws configure` (access keys) or `aws configure sso`; \
     or choose a configured profile with --profile NAME or AWS_PROFILE=NAME (for an SSO \
     profile, run `aws sso login --profile NAME` first); or export AWS_ACCESS_KEY_ID and \
     AWS_SECRET_ACCESS_KEY";

impl fmt::Display for CredentialsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.profile;
        match self.kind {
            CredentialsErrorKind::NotFound => write!(
                f,
                "no AWS credentials found{}; {}.\n{HOW_TO_FIX}",
                self.detail_text(),
                self.tried()
            ),
            CredentialsErrorKind::ProfileNotFound => write!(
                f,
                "AWS profile `{p}` not found in {}{}.\nto fix: choose a configured profile \
                 with --profile NAME or AWS_PROFILE=NAME, or create this one with \
                 `aws configure --profile {p}` (or `aws configure sso --profile {p}`)",
                self.files_text(),
                if self.detail.is_empty() {
                    " (no profiles are defined)".to_string()
                } else {
                    format!(" (profiles defined: {})", self.detail)
                }
            ),
            CredentialsErrorKind::SsoLoginRequired => write!(
                f,
                "the SSO session of AWS profile `{p}` has expired or was never started{}.\n\
                 to fix: run `aws sso login --profile {p}`, then try again",
                self.detail_text()
            ),
            CredentialsErrorKind::ProcessFailed => write!(
                f,
                "the credential_process of AWS profile `{p}` failed{}; its output is not \
                 shown because it may contain secrets.\nto fix: run that command yourself to \
                 see why, or choose another profile with --profile NAME or AWS_PROFILE=NAME",
                self.detail_text()
            ),
            CredentialsErrorKind::InvalidConfiguration => write!(
                f,
                "the AWS configuration of profile `{p}` is invalid{}.\nto fix: correct it in {} \
                 (or rewrite it with `aws configure --profile {p}`)",
                self.detail_text(),
                self.files_text()
            ),
            CredentialsErrorKind::ProviderFailed => write!(
                f,
                "AWS credentials could not be loaded{}; {}.\n{HOW_TO_FIX}",
                self.detail_text(),
                self.tried()
            ),
            CredentialsErrorKind::TimedOut => write!(
                f,
                "loading AWS credentials did not finish within {} s; {}.\n{HOW_TO_FIX}; \
                 off EC2, AWS_EC2_METADATA_DISABLED=true skips the instance metadata probe",
                CREDENTIALS_CHECK_TIMEOUT.as_secs(),
                self.tried()
            ),
        }
    }
}

impl std::error::Error for CredentialsError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: CredentialsErrorKind, profile: &str, detail: &str) -> CredentialsError {
        CredentialsError {
            kind,
            profile: profile.into(),
            profile_named: profile != "default",
            files: vec![
                "/nonexistent/.aws/config".into(),
                "/nonexistent/.aws/credentials".into(),
            ],
            detail: detail.into(),
        }
    }

    #[test]
    fn each_kind_says_what_to_do() {
        use CredentialsErrorKind::*;
        #[rustfmt::skip]
        let table: &[(CredentialsErrorKind, &str, &[&str])] = &[
            (NotFound, "default", &["no AWS credentials found", "environment variables", "profile `default`", "/nonexistent/.aws/config (missing)", "web identity", "container", "instance metadata", "aws configure", "--profile", "AWS_PROFILE", "aws sso login"]),
            (ProfileNotFound, "nope", &["profile `nope` not found", "/nonexistent/.aws/credentials (missing)", "no profiles are defined", "aws configure --profile nope"]),
            (SsoLoginRequired, "work", &["SSO session of AWS profile `work`", "aws sso login --profile work"]),
            (ProcessFailed, "helper", &["credential_process of AWS profile `helper` failed (exit status: 3)", "not shown"]),
            (TimedOut, "default", &["did not finish within 5 s", "AWS_EC2_METADATA_DISABLED"]),
        ];
        for (kind, profile, needles) in table {
            let detail = if *kind == ProcessFailed {
                "exit status: 3"
            } else {
                ""
            };
            let text = error(*kind, profile, detail).to_string();
            for needle in *needles {
                assert!(
                    text.contains(needle),
                    "{kind:?}: {needle:?} missing in {text}"
                );
            }
        }
    }
}
