//! Scanning another account: credentials from STS `AssumeRole` on top of the base chain.
//!
//! A request with an [`AssumeRole`] signs every call (and its `GetCallerIdentity`) with
//! the role's temporary credentials. The base chain (the profile, or the default chain)
//! only signs `AssumeRole` itself. aws-config's `AssumeRoleProvider` does the work; the
//! SDK configuration's identity cache keeps its credentials and refreshes them before
//! they expire, so a scan longer than the session (1 h by default) goes on.
//!
//! Why the identity follows: caller identity is resolved with the scan's own SDK
//! configuration, so the account that keys every quota (and that the report names) is
//! the role's account, and two accounts' keys never mix.
//!
//! `AssumeRole` is a credential provider's request, so like IMDS or SSO it goes out
//! through the inner HTTP client, ungated and not charged to any account's quotas
//! (DESIGN §6). A failure is a setup failure of the scan naming the role
//! (the scan crate's scan set-up); the external id, which the role's owner may treat as a
//! secret, is never printed (`Debug` redacts it).

use aws_config::sts::AssumeRoleProvider;
use aws_config::{Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;

use crate::aws::FALLBACK_REGION;

/// The session name `AssumeRole` gets when the request names none (CloudTrail shows it).
pub const DEFAULT_SESSION_NAME: &str = "tollgate";

/// A role to assume for a scan.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct AssumeRole {
    /// `arn:<partition>:iam::<account>:role/<name>`.
    pub role_arn: String,
    /// The external id the role's trust policy requires, if any.
    pub external_id: Option<String>,
    /// The role session name (default [`DEFAULT_SESSION_NAME`]).
    pub session_name: Option<String>,
}

impl std::fmt::Debug for AssumeRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssumeRole")
            .field("role_arn", &self.role_arn)
            .field(
                "external_id",
                &self.external_id.as_ref().map(|_| "(redacted)"),
            )
            .field("session_name", &self.session_name)
            .finish()
    }
}

/// Which part of an [`AssumeRole`] is malformed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoleError {
    /// Not an IAM role ARN.
    #[error(
        "{0:?} is not an IAM role ARN (expected arn:aws:iam::123456789012:role/NAME, the \
         account as 12 digits)"
    )]
    BadArn(String),
    /// The external id's length or characters.
    #[error(
        "the external id must be 2 to 1224 characters of letters, digits and +=,.@:/-_ \
         (as STS accepts)"
    )]
    BadExternalId,
    /// The session name's length or characters.
    #[error("session name {0:?} must be 2 to 64 characters of letters, digits and +=,.@-_")]
    BadSessionName(String),
}

impl RoleError {
    /// The request field it is about (`role_arn`, `external_id`, `session_name`).
    pub fn field(&self) -> &'static str {
        match self {
            RoleError::BadArn(_) => "role_arn",
            RoleError::BadExternalId => "external_id",
            RoleError::BadSessionName(_) => "session_name",
        }
    }
}

fn chars_ok(text: &str, extra: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || extra.contains(c))
}

impl AssumeRole {
    /// A role without external id or session name.
    pub fn new(role_arn: impl Into<String>) -> AssumeRole {
        AssumeRole {
            role_arn: role_arn.into(),
            external_id: None,
            session_name: None,
        }
    }

    /// Check the ARN, external id and session name (STS's own limits).
    pub fn validate(&self) -> Result<(), RoleError> {
        if role_account(&self.role_arn).is_none() {
            return Err(RoleError::BadArn(self.role_arn.clone()));
        }
        if let Some(id) = &self.external_id {
            if !(2..=1224).contains(&id.len()) || !chars_ok(id, "+=,.@:/-") {
                return Err(RoleError::BadExternalId);
            }
        }
        if let Some(name) = &self.session_name {
            if !(2..=64).contains(&name.len()) || !chars_ok(name, "+=,.@-") {
                return Err(RoleError::BadSessionName(name.clone()));
            }
        }
        Ok(())
    }

    /// The session name `AssumeRole` is called with.
    pub fn session_name(&self) -> &str {
        self.session_name.as_deref().unwrap_or(DEFAULT_SESSION_NAME)
    }

    /// `base` with this role's credentials: `AssumeRole` signed by `base`'s chain, sent
    /// through `base`'s (inner) HTTP client to its STS endpoint and region (else
    /// [`FALLBACK_REGION`]).
    pub async fn apply(&self, base: SdkConfig) -> SdkConfig {
        let region = base
            .region()
            .cloned()
            .unwrap_or_else(|| Region::new(FALLBACK_REGION));
        let mut builder = AssumeRoleProvider::builder(&self.role_arn)
            .session_name(self.session_name())
            .region(region)
            .configure(&base);
        if let Some(id) = &self.external_id {
            builder = builder.external_id(id);
        }
        let provider = builder.build().await;
        base.into_builder()
            .credentials_provider(SharedCredentialsProvider::new(provider))
            .build()
    }
}

/// The account of a well-formed IAM role ARN
/// (`arn:<partition>:iam::<12 digits>:role/<path/name>`).
pub fn role_account(arn: &str) -> Option<String> {
    let parsed: tollgate_quota::Arn = arn.parse().ok()?;
    let name = parsed.resource().strip_prefix("role/")?;
    let name_ok =
        !name.is_empty() && !name.ends_with('/') && arn.len() <= 2048 && chars_ok(name, "+=,.@-/");
    let global_iam = parsed.service() == "iam" && parsed.region().is_none();
    (global_iam && name_ok)
        .then(|| parsed.account().map(|a| a.as_str().to_string()))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_arns_are_checked() {
        for good in [
            "arn:aws:iam::111111111111:role/scanner",
            "arn:aws-cn:iam::123456789012:role/path/to/Scanner_1",
        ] {
            assert!(role_account(good).is_some(), "{good}");
        }
        for bad in [
            "",
            "scanner",
            "arn:aws:iam::11111111111:role/scanner",
            "arn:aws:iam::111111111111:user/scanner",
            "arn:aws:iam::111111111111:role/",
            "arn:aws:sts::111111111111:role/scanner",
            "arn:aws:iam:us-east-1:111111111111:role/scanner",
            "arn:aws:iam::111111111111:role/sp ace",
        ] {
            let role = AssumeRole::new(bad);
            assert_eq!(role.validate(), Err(RoleError::BadArn(bad.into())), "{bad}");
        }
    }

    #[test]
    fn external_id_and_session_name_follow_sts_limits() {
        let mut role = AssumeRole::new("arn:aws:iam::111111111111:role/scanner");
        role.session_name = Some("x".into());
        assert_eq!(role.validate().unwrap_err().field(), "session_name");
        role.session_name = Some("a".repeat(65));
        assert_eq!(role.validate().unwrap_err().field(), "session_name");
        role.session_name = Some("nightly@host".into());
        role.external_id = Some("has space".into());
        let err = role.validate().unwrap_err();
        assert_eq!(err.field(), "external_id");
        assert!(!err.to_string().contains("has space"), "{err}");
        role.external_id = Some("tenant:42/abc".into());
        assert_eq!(role.validate(), Ok(()));
        assert!(!format!("{role:?}").contains("tenant:42"));
    }
}
