//! `OrganizationRequest`: what an organization scan asks for, validated once at the edge
//! so the run only sees usable values (account ids of 12 digits, a role name STS
//! accepts, at least one account in flight).

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use crate::request::{DiscoveryRequest, RequestError};
use tollgate_engine::aws::assume_role::{AssumeRole, RoleError};

/// The role assumed in every member account unless the request names another: the one
/// Organizations creates in accounts it creates.
pub const DEFAULT_ROLE_NAME: &str = "OrganizationAccountAccessRole";

/// Accounts scanned at once unless the request says otherwise (`--max-accounts-in-flight`).
pub const DEFAULT_MAX_ACCOUNTS_IN_FLIGHT: usize = 8;

/// Which listed accounts may be scanned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountFilter {
    /// Only these accounts (`--accounts`); empty: every listed account.
    pub only: BTreeSet<String>,
    /// Never these accounts (`--exclude-accounts`), the caller's own included.
    pub exclude: BTreeSet<String>,
}

/// One organization scan's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationRequest {
    /// What every account's scan covers and how the caller signs: regions (or
    /// `--regions all`), datasets, endpoint, profile or static credentials, and the
    /// deadline of the *whole organization* (`timeout`). Its `role` must be `None`: the
    /// member roles are [`OrganizationRequest::role_name`]'s.
    pub scan: DiscoveryRequest,
    /// The role assumed in each member account (default [`DEFAULT_ROLE_NAME`]); the ARN
    /// is `arn:<caller's partition>:iam::<member>:role/<role_name>`.
    pub role_name: String,
    /// The external id the member roles' trust policies require, if any (never printed).
    pub external_id: Option<String>,
    /// The role session name (default `tollgate`; CloudTrail shows it).
    pub session_name: Option<String>,
    /// Which accounts to scan.
    pub accounts: AccountFilter,
    /// Accounts scanned at once.
    pub max_accounts_in_flight: NonZeroUsize,
}

impl OrganizationRequest {
    /// An organization scan of `scan`'s regions and datasets with the defaults: role
    /// [`DEFAULT_ROLE_NAME`], every account, [`DEFAULT_MAX_ACCOUNTS_IN_FLIGHT`].
    pub fn new(scan: DiscoveryRequest) -> OrganizationRequest {
        OrganizationRequest {
            scan,
            role_name: DEFAULT_ROLE_NAME.to_owned(),
            external_id: None,
            session_name: None,
            accounts: AccountFilter::default(),
            max_accounts_in_flight: NonZeroUsize::new(DEFAULT_MAX_ACCOUNTS_IN_FLIGHT)
                .expect("the default is positive"),
        }
    }

    /// The role to assume in `account` of `partition`.
    pub fn role_for(&self, partition: &str, account: &str) -> AssumeRole {
        AssumeRole {
            role_arn: format!("arn:{partition}:iam::{account}:role/{}", self.role_name),
            external_id: self.external_id.clone(),
            session_name: self.session_name.clone(),
        }
    }

    /// Check every field; the scan part as [`DiscoveryRequest::validate`] does.
    pub fn validate(mut self) -> Result<OrganizationRequest, OrganizationRequestError> {
        if self.scan.role.is_some() {
            return Err(OrganizationRequestError::RoleArnWithOrganization);
        }
        self.scan = self.scan.validate()?;
        for id in self.accounts.only.iter().chain(&self.accounts.exclude) {
            if id.len() != 12 || !id.bytes().all(|b| b.is_ascii_digit()) {
                return Err(OrganizationRequestError::BadAccountId(id.clone()));
            }
        }
        // The ARN template checks the name's characters; the external id and session
        // name are checked as `--role-arn`'s are.
        let template = self.role_for("aws", "000000000000");
        template.validate().map_err(|e| match e {
            RoleError::BadArn(_) => OrganizationRequestError::BadRoleName(self.role_name.clone()),
            other => OrganizationRequestError::Role(other),
        })?;
        Ok(self)
    }
}

/// An organization request was refused before any AWS call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OrganizationRequestError {
    /// The scan part is refused.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// An account id in `--accounts` / `--exclude-accounts` is not 12 digits.
    #[error("{0:?} is not an AWS account id (12 digits); check --accounts and --exclude-accounts")]
    BadAccountId(String),
    /// The role name would not make an IAM role ARN.
    #[error(
        "--role-name {0:?} is not an IAM role name (letters, digits and +=,.@-_, with / \
         for a path)"
    )]
    BadRoleName(String),
    /// The external id or session name is malformed.
    #[error(transparent)]
    Role(RoleError),
    /// `--role-arn` and `--organization` together: the members' roles come from
    /// `--role-name`.
    #[error(
        "--role-arn cannot be combined with --organization: the caller's own credentials \
         list the organization and each member is scanned through --role-name"
    )]
    RoleArnWithOrganization,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> OrganizationRequest {
        OrganizationRequest::new(DiscoveryRequest::default())
    }

    #[test]
    fn the_defaults_are_the_organization_role_and_eight_accounts_in_flight() {
        let r = request().validate().unwrap();
        assert_eq!(r.role_name, "OrganizationAccountAccessRole");
        assert_eq!(r.max_accounts_in_flight.get(), 8);
        assert_eq!(
            r.role_for("aws-cn", "111111111111").role_arn,
            "arn:aws-cn:iam::111111111111:role/OrganizationAccountAccessRole"
        );
    }

    #[test]
    fn bad_account_ids_role_names_and_a_role_arn_are_refused() {
        let mut r = request();
        r.accounts.exclude.insert("12345".into());
        assert_eq!(
            r.validate(),
            Err(OrganizationRequestError::BadAccountId("12345".into()))
        );
        let mut r = request();
        r.role_name = "has space".into();
        assert_eq!(
            r.validate(),
            Err(OrganizationRequestError::BadRoleName("has space".into()))
        );
        let mut r = request();
        r.session_name = Some("x".into());
        assert!(matches!(
            r.validate(),
            Err(OrganizationRequestError::Role(_))
        ));
        let mut r = request();
        r.scan.role = Some(AssumeRole::new("arn:aws:iam::111111111111:role/x"));
        assert_eq!(
            r.validate(),
            Err(OrganizationRequestError::RoleArnWithOrganization)
        );
        let mut r = request();
        r.role_name = "path/Scanner".into();
        assert!(r.validate().is_ok());
    }
}
