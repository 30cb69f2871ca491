//! The SDK clients of one collector run: one per service and region, built on first use
//! from the scan's SDK configuration and reused by every call.
//!
//! One generic builder ([`CollectorRun::client`](crate::CollectorRun::client))
//! serves every service: each client type says how it is built and which cache holds it
//! ([`ServiceClient`]), so a cache only ever holds its own service's clients and no lookup
//! can return the wrong kind.

use std::collections::HashMap;
use std::sync::Mutex;

use aws_config::{Region, SdkConfig};

/// A region-keyed cache of one service's clients.
#[derive(Debug)]
pub struct ClientCache<C>(Mutex<HashMap<String, C>>);

impl<C> Default for ClientCache<C> {
    fn default() -> Self {
        ClientCache(Mutex::new(HashMap::new()))
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

impl ServiceClient for aws_sdk_lambda::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_lambda::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_lambda::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.lambda
    }
}

impl ServiceClient for aws_sdk_dynamodb::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_dynamodb::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.dynamodb
    }
}

impl ServiceClient for aws_sdk_ec2::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_ec2::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_ec2::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.ec2
    }
}

impl ServiceClient for aws_sdk_kms::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_kms::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_kms::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.kms
    }
}

impl ServiceClient for aws_sdk_cloudwatch::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_cloudwatch::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_cloudwatch::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.cloudwatch
    }
}

impl ServiceClient for aws_sdk_resourcegroupstagging::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_resourcegroupstagging::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_resourcegroupstagging::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.tagging
    }
}

impl ServiceClient for aws_sdk_cloudcontrol::Client {
    fn build(settings: ClientSettings<'_>) -> Self {
        let config = aws_sdk_cloudcontrol::config::Builder::from(settings.sdk)
            .region(region(settings))
            .build();
        aws_sdk_cloudcontrol::Client::from_conf(config)
    }

    fn cache(clients: &Clients) -> &ClientCache<Self> {
        &clients.cloudcontrol
    }
}
