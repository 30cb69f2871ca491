//! The organization's accounts: `DescribeOrganization` (its management account) and
//! `ListAccounts` (every page), each page a gated call of the caller's account under its
//! global `organizations:` key.

use crate::aws::{AwsGate, CallContext, CallError};
use crate::organization::select::ListedAccount;

/// What the listing found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// `DescribeOrganization`'s management account; `None` if it did not answer.
    pub management_account: Option<String>,
    /// Every account `ListAccounts` returned.
    pub accounts: Vec<ListedAccount>,
}

/// The Organizations client: the caller's SDK configuration, signed for `region` (the
/// service is global; its endpoint rules pick the partition's one endpoint).
pub fn client(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_organizations::Client {
    let config = aws_sdk_organizations::config::Builder::from(sdk)
        .region(aws_config::Region::new(region.to_owned()))
        .build();
    aws_sdk_organizations::Client::from_conf(config)
}

/// List the organization through `gate` (the caller's). A `ListAccounts` failure is the
/// scan's failure; a `DescribeOrganization` failure only leaves the management account
/// unknown.
pub async fn list(
    gate: &AwsGate,
    ctx: &CallContext,
    client: &aws_sdk_organizations::Client,
) -> Result<Listing, CallError> {
    let management_account = gate
        .call(ctx, "organizations", "DescribeOrganization", None, |http| {
            client
                .describe_organization()
                .customize()
                .config_override(aws_sdk_organizations::Config::builder().http_client(http))
                .send()
        })
        .await
        .map_err(|e| tracing::debug!(error = %e, "DescribeOrganization: the management account stays unknown"))
        .ok()
        .and_then(|out| out.organization()?.master_account_id().map(str::to_owned));
    let mut accounts = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = gate
            .call(ctx, "organizations", "ListAccounts", None, |http| {
                client
                    .list_accounts()
                    .set_next_token(token.clone())
                    .customize()
                    .config_override(aws_sdk_organizations::Config::builder().http_client(http))
                    .send()
            })
            .await?;
        accounts.extend(page.accounts().iter().filter_map(|a| {
            let state = a
                .state()
                .map(|s| s.as_str().to_owned())
                .or_else(|| a.status().map(|s| s.as_str().to_owned()))
                .unwrap_or_else(|| "UNKNOWN".to_owned());
            Some(ListedAccount::new(a.id()?, state))
        }));
        match page.next_token() {
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_owned())
            }
            _ => break,
        }
    }
    Ok(Listing {
        management_account,
        accounts,
    })
}
