//! `AccountCredentials`: one SDK client per service and region for every member account
//! of an organization scan, each request signed with its own account's credentials.
//!
//! # Why share clients across accounts
//! A member's collectors and tag sweep used to build their own SDK clients from the
//! member's SDK configuration: one per service and region, about 70 per account at 17
//! regions with the four default datasets (computed: Lambda, DynamoDB and KMS in each
//! region, S3 in one, the sweep's tagging client in each), each used for two or three
//! calls and dropped with the account's scan. Building and dropping
//! them was about 4 % of the scanner's CPU in `bench org --accounts 50 --regions 17`
//! (`perf record --call-graph dwarf`: `ServiceClient::build`/`from_conf` and
//! `drop_in_place<Clients>`, plus the glibc heap work their large blocks cause), and at
//! 1,000 accounts it is some 50,000 clients per scan. The clients differ only in their
//! credentials, and an SDK client takes its credentials from its identity resolver on
//! every request: so one client per service and region can serve every member if the
//! resolver answers with the credentials of the account whose request is being signed.
//!
//! # How a request finds its account
//! A collector's whole run, and a member's tag sweep, is wrapped in [`in_account`], which
//! sets a task-local for every poll of it; the shared clients' credentials provider ([`AccountCredentials`]) reads that
//! task-local each time the SDK asks, and delegates to the account's own provider (a
//! member role's `RoleCredentials`, which caches and refreshes through the gate). Outside
//! any [`in_account`] scope it refuses with a credentials error: a shared client can never
//! sign with whichever account happened to ask last. The SDK's identity cache is turned
//! off on these clients ([`AccountCredentials::install`]): it keys identities by resolver,
//! and one resolver serving every account would hand the first account's credentials to
//! all of them. The account's provider does the caching instead.
//!
//! A task-local, not a parameter, for the reason the gate's dispatch uses one
//! (`dispatch`): the SDK resolves the identity deep inside `send()`, where only the
//! client's configuration and the polling task are in reach. Neither the collectors nor
//! the sweep spawn (their regions run in one task, `join_all`), so every request they
//! send is polled inside their scope.

use std::future::Future;

use aws_config::identity::IdentityCache;
use aws_config::SdkConfig;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{future, ProvideCredentials, SharedCredentialsProvider};

tokio::task_local! {
    /// The credentials of the account whose collector is being polled.
    static ACCOUNT: SharedCredentialsProvider;
}

/// The credentials provider of clients shared across accounts: the credentials of the
/// account [`in_account`] names, or an error outside one (module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct AccountCredentials;

impl AccountCredentials {
    /// `sdk` for clients shared across accounts: this provider, and no identity cache
    /// (module docs say why).
    pub fn install(sdk: &SdkConfig) -> SdkConfig {
        sdk.clone()
            .into_builder()
            .credentials_provider(SharedCredentialsProvider::new(AccountCredentials))
            .identity_cache(IdentityCache::no_cache())
            .build()
    }
}

/// Run `work` with `credentials` answering every request of a shared client it sends.
pub async fn in_account<F: Future>(credentials: SharedCredentialsProvider, work: F) -> F::Output {
    ACCOUNT.scope(credentials, work).await
}

impl ProvideCredentials for AccountCredentials {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        // The account is read when the future is polled (inside the collector's scope),
        // not when it is made.
        future::ProvideCredentials::new(async {
            match ACCOUNT.try_with(SharedCredentialsProvider::clone) {
                Ok(account) => account.provide_credentials().await,
                Err(_) => Err(CredentialsError::not_loaded(
                    "a client shared by an organization's accounts was used outside an \
                     account's scope, so it has no credentials to sign with (tollgate bug: \
                     the call must run inside `in_account`)",
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use aws_credential_types::Credentials;

    use super::*;

    fn named(key: &str) -> SharedCredentialsProvider {
        SharedCredentialsProvider::new(Credentials::new(key, "secret", None, None, "test"))
    }

    async fn key() -> Result<String, CredentialsError> {
        let c = AccountCredentials.provide_credentials().await?;
        Ok(c.access_key_id().to_owned())
    }

    #[tokio::test]
    async fn outside_an_account_the_shared_provider_refuses() {
        let e = key().await.unwrap_err();
        assert!(
            matches!(e, CredentialsError::CredentialsNotLoaded(_)),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn each_account_interleaved_in_one_task_is_answered_with_its_own_credentials() {
        // Two accounts' work polled in turn by one task (as `join_all` polls a scan's
        // collectors): each resolution sees its own account, before and after yielding.
        let work = |name: &'static str| {
            in_account(named(name), async move {
                let before = key().await.unwrap();
                tokio::task::yield_now().await;
                let after = key().await.unwrap();
                (before, after)
            })
        };
        let (a, b) = tokio::join!(work("AKIDA"), work("AKIDB"));
        assert_eq!(a, ("AKIDA".to_owned(), "AKIDA".to_owned()));
        assert_eq!(b, ("AKIDB".to_owned(), "AKIDB".to_owned()));
        assert!(key().await.is_err(), "the scope ends with the work");
    }

    #[test]
    fn an_installed_configuration_answers_with_the_scoped_accounts_credentials_never_its_own() {
        let base = SdkConfig::builder()
            .credentials_provider(named("AKIDBASE"))
            .build();
        let shared = AccountCredentials::install(&base);
        let provider = shared.credentials_provider().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // The base configuration's own credentials never answer for a shared client.
        assert!(rt.block_on(provider.provide_credentials()).is_err());
        let got = rt.block_on(in_account(named("AKIDM"), provider.provide_credentials()));
        assert_eq!(got.unwrap().access_key_id(), "AKIDM");
    }
}
