//! The organization's accounts: `DescribeOrganization` (its management account) and
//! `ListAccounts` (every page, one at a time through a [`Pager`]), each a gated call of
//! the caller's account under its global `organizations:` key.

use crate::organization::select::ListedAccount;
use tollgate_engine::aws::{AwsGate, CallContext, CallError};

/// The Organizations client: the caller's SDK configuration, signed for `region` (the
/// service is global; its endpoint rules pick the partition's one endpoint).
pub fn client(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_organizations::Client {
    let config = aws_sdk_organizations::config::Builder::from(sdk)
        .region(aws_config::Region::new(region.to_owned()))
        .build();
    aws_sdk_organizations::Client::from_conf(config)
}

/// `DescribeOrganization`'s management account, through `gate` (the caller's); `None`
/// if it did not answer (that only leaves the management account unknown).
pub async fn management_account(
    gate: &AwsGate,
    ctx: &CallContext,
    client: &aws_sdk_organizations::Client,
) -> Option<String> {
    gate.call(ctx, "organizations", "DescribeOrganization", None, |http| {
        client
            .describe_organization()
            .customize()
            .config_override(aws_sdk_organizations::Config::builder().http_client(http))
            .send()
    })
    .await
    .map_err(|e| tracing::debug!(error = %e, "DescribeOrganization: the management account stays unknown"))
    .ok()
    .and_then(|out| out.organization()?.master_account_id().map(str::to_owned))
}

/// The `ListAccounts` pages, one gated call each, fetched one at a time by whoever holds
/// the pager: [`Pager::next`] takes it and gives it back with the next page, so the
/// future of one page can be kept across the organization loop's other events (it is
/// never dropped half-sent) while the accounts of earlier pages are scanned.
pub struct Pager {
    gate: AwsGate,
    ctx: CallContext,
    client: aws_sdk_organizations::Client,
    token: Option<String>,
}

impl Pager {
    /// A pager at the first page.
    pub fn new(gate: AwsGate, ctx: CallContext, client: aws_sdk_organizations::Client) -> Pager {
        Pager {
            gate,
            ctx,
            client,
            token: None,
        }
    }

    /// The next page's accounts, and the pager for the page after it (`None` when this
    /// was the last page: no `NextToken`, an empty one, or the one just sent).
    pub async fn next(mut self) -> (Option<Pager>, Result<Vec<ListedAccount>, CallError>) {
        let sent = self.token.clone();
        let page = self
            .gate
            .call(&self.ctx, "organizations", "ListAccounts", None, |http| {
                self.client
                    .list_accounts()
                    .set_next_token(sent.clone())
                    .customize()
                    .config_override(aws_sdk_organizations::Config::builder().http_client(http))
                    .send()
            })
            .await;
        let page = match page {
            Ok(page) => page,
            Err(e) => return (None, Err(e)),
        };
        let accounts = page
            .accounts()
            .iter()
            .filter_map(|a| {
                let state = a
                    .state()
                    .map(|s| s.as_str().to_owned())
                    .or_else(|| a.status().map(|s| s.as_str().to_owned()))
                    .unwrap_or_else(|| "UNKNOWN".to_owned());
                Some(ListedAccount::new(a.id()?, state))
            })
            .collect();
        let next = match page.next_token() {
            Some(next) if !next.is_empty() && sent.as_deref() != Some(next) => {
                self.token = Some(next.to_owned());
                Some(self)
            }
            _ => None,
        };
        (next, Ok(accounts))
    }
}
