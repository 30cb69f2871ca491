//! The SDK clients of one collector run: one per service and region, built on first use
//! from the scan's SDK configuration and reused by every call.
//!
//! One generic builder ([`CollectorRun::client`](crate::CollectorRun::client))
//! serves every service: each client type says how it is built and which cache holds it
//! ([`ServiceClient`]), so a cache only ever holds its own service's clients and no lookup
//! can return the wrong kind.
//!
//! An organization scan's member accounts share one set ([`SharedClients`]): one client
//! per service and region for the whole organization, each request signed with the
//! credentials of the account whose collector sends it
//! (`tollgate_engine::aws::account_credentials` says how, and why).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_config::{Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;
use tollgate_engine::aws::AccountCredentials;

/// A region-keyed cache of one service's clients.
#[derive(Debug)]
pub struct ClientCache<C>(Mutex<HashMap<String, C>>);

impl<C> Default for ClientCache<C> {
    fn default() -> Self {
        ClientCache(Mutex::new(HashMap::new()))
    }
}

impl<C> ClientCache<C> {
    /// How many clients it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl<C: Clone> ClientCache<C> {
    fn get_or_build(&self, region: &str, build: impl FnOnce() -> C) -> C {
        let mut clients = self.0.lock().unwrap_or_else(|e| e.into_inner());
        clients
            .entry(region.to_string())
            .or_insert_with(build)
            .clone()
    }
}

/// Every service's client cache.
#[derive(Debug, Default)]
pub struct Clients {
    s3: ClientCache<aws_sdk_s3::Client>,
    lambda: ClientCache<aws_sdk_lambda::Client>,
    dynamodb: ClientCache<aws_sdk_dynamodb::Client>,
    ec2: ClientCache<aws_sdk_ec2::Client>,
    kms: ClientCache<aws_sdk_kms::Client>,
    cloudwatch: ClientCache<aws_sdk_cloudwatch::Client>,
    tagging: ClientCache<aws_sdk_resourcegroupstagging::Client>,
    cloudcontrol: ClientCache<aws_sdk_cloudcontrol::Client>,
    ecs: ClientCache<aws_sdk_ecs::Client>,
    elb: ClientCache<aws_sdk_elasticloadbalancing::Client>,
    elbv2: ClientCache<aws_sdk_elasticloadbalancingv2::Client>,
    logs: ClientCache<aws_sdk_cloudwatchlogs::Client>,
    cloudtrail: ClientCache<aws_sdk_cloudtrail::Client>,
    route53: ClientCache<aws_sdk_route53::Client>,
    emr: ClientCache<aws_sdk_emr::Client>,
}

/// The clients every member account of one organization scan shares, built from the
/// organization's SDK configuration with [`AccountCredentials`] as their credentials.
#[derive(Debug)]
pub struct SharedClients {
    clients: Clients,
    sdk: SdkConfig,
}

impl SharedClients {
    /// An empty set over `sdk` (the caller's configuration: its HTTP client, endpoint and
    /// retry settings; its credentials are replaced by each account's).
    pub fn new(sdk: &SdkConfig) -> Arc<SharedClients> {
        Arc::new(SharedClients {
            clients: Clients::default(),
            sdk: AccountCredentials::install(sdk),
        })
    }
}

/// One account's use of [`SharedClients`]: the set, and the credentials its requests are
/// signed with.
#[derive(Debug, Clone)]
pub struct AccountClients {
    /// The organization's shared clients.
    pub shared: Arc<SharedClients>,
    /// This account's credentials (a member role's, cached and refreshed by its provider).
    pub credentials: SharedCredentialsProvider,
}

impl AccountClients {
    /// The shared cache and the configuration its clients are built from.
    pub(crate) fn parts(&self) -> (&Clients, &SdkConfig) {
        (&self.shared.clients, &self.shared.sdk)
    }
}

/// Where a scan's clients point.
#[derive(Debug, Clone, Copy)]
pub struct ClientSettings<'a> {
    /// SDK configuration (credentials, endpoint).
    pub sdk: &'a SdkConfig,
    /// The client's region.
    pub region: &'a str,
    /// S3 path-style addressing (emulators).
    pub force_path_style: bool,
}

/// An SDK client a collector uses.
pub trait ServiceClient: Clone + Sized {
    /// Build a client.
    fn build(settings: ClientSettings<'_>) -> Self;

    /// This service's cache.
    fn cache(clients: &Clients) -> &ClientCache<Self>;

    /// The cached client for the settings' region, built on first use.
    fn cached(clients: &Clients, settings: ClientSettings<'_>) -> Self {
        Self::cache(clients).get_or_build(settings.region, || Self::build(settings))
    }
}

fn region(settings: ClientSettings<'_>) -> Region {
    Region::new(settings.region.to_string())
}

impl ServiceClient for aws_sdk_s3::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_s3::config::Builder::from(settings.sdk)
            .region(region(settings))
            .force_path_style(settings.force_path_style)
            .build();
        aws_sdk_s3::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.s3
    }
}

/// `impl ServiceClient` for a service whose client needs only its region (every one but
/// S3's): `regional!(aws_sdk_ecs, ecs)` builds `aws_sdk_ecs::Client`s into `Clients::ecs`.
macro_rules! regional {
    ($($sdk:ident => $cache:ident),* $(,)?) => {$(
        impl ServiceClient for $sdk::Client {
            fn build(settings: ClientSettings<'_>) -> Self {
                let config = $sdk::config::Builder::from(settings.sdk)
                    .region(region(settings))
                    .build();
                $sdk::Client::from_conf(config)
            }

            fn cache(clients: &Clients) -> &ClientCache<Self> {
                &clients.$cache
            }
        }
    )*};
}

regional!(
    aws_sdk_lambda => lambda,
    aws_sdk_dynamodb => dynamodb,
    aws_sdk_ec2 => ec2,
    aws_sdk_kms => kms,
    aws_sdk_cloudwatch => cloudwatch,
    aws_sdk_resourcegroupstagging => tagging,
    aws_sdk_cloudcontrol => cloudcontrol,
    aws_sdk_ecs => ecs,
    aws_sdk_elasticloadbalancing => elb,
    aws_sdk_elasticloadbalancingv2 => elbv2,
    aws_sdk_cloudwatchlogs => logs,
    aws_sdk_cloudtrail => cloudtrail,
    aws_sdk_route53 => route53,
    aws_sdk_emr => emr,
);

#[cfg(test)]
mod tests {
    use aws_credential_types::Credentials;

    use super::*;

    fn credentials(key: &str) -> SharedCredentialsProvider {
        SharedCredentialsProvider::new(Credentials::new(key, "secret", None, None, "test"))
    }

    #[test]
    fn accounts_sharing_a_set_build_one_client_per_service_and_region_between_them() {
        let base = SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .credentials_provider(credentials("AKIDBASE"))
            .build();
        let shared = SharedClients::new(&base);
        let account = |key| AccountClients {
            shared: shared.clone(),
            credentials: credentials(key),
        };
        for member in [account("AKIDA"), account("AKIDB"), account("AKIDC")] {
            for region in ["us-east-1", "eu-west-1"] {
                let (clients, sdk) = member.parts();
                let settings = ClientSettings {
                    sdk,
                    region,
                    force_path_style: false,
                };
                let _: aws_sdk_kms::Client = ServiceClient::cached(clients, settings);
                let _: aws_sdk_lambda::Client = ServiceClient::cached(clients, settings);
            }
        }
        assert_eq!(shared.clients.kms.len(), 2);
        assert_eq!(shared.clients.lambda.len(), 2);
        assert_eq!(shared.clients.s3.len(), 0);
    }
}
