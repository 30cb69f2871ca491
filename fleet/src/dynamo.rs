//! `DynamoFleetStore`: the [`FleetStore`] over a DynamoDB table (layout in `layout.rs`).
//!
//! Get is a strongly consistent GetItem; put is a PutItem of the whole item on condition
//! that its `version` is the one read (or that it does not exist yet). PutItem rather than
//! UpdateItem with `ReturnValues ALL_NEW`: the writer computed the whole new item, so it
//! knows what it wrote, and one conditional single-item write is atomic in DynamoDB and in
//! dynalite alike (no transactions, which dynalite lacks).
//!
//! The client is built on first use, inside the runtime that uses it (the coordinator's
//! actor thread), from the usual credential chain. These calls are not admitted through
//! tollgate's own gate: they are coordination, like credential-provider calls, and their
//! number is what fleet mode keeps small (hosts × refreshes). [`DynamoFleetStore::requests`]
//! counts them for the benchmark.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use tokio::sync::OnceCell;
use tollgate_actors::fleet::{
    FleetError, FleetErrorKind, FleetFuture, FleetStore, PutOutcome, Versioned,
};
use tollgate_quota::fleet::FleetItem;

use crate::classify::{classify, is_condition_failed};
use crate::item_error::ItemDecodeError;
use crate::layout::{self, KEY, VERSION};
use crate::settings::FleetSettings;

/// A table that does not answer within this is unreachable (degraded mode takes over).
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(3);
/// Connecting gives up after this.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

struct Inner {
    settings: FleetSettings,
    client: OnceCell<Client>,
    requests: Arc<AtomicU64>,
}

/// The fleet table on DynamoDB.
#[derive(Clone)]
pub struct DynamoFleetStore(Arc<Inner>);

impl std::fmt::Debug for DynamoFleetStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoFleetStore")
            .field("table", &self.0.settings.table)
            .finish()
    }
}

impl DynamoFleetStore {
    /// A store for `settings`; nothing is loaded or sent yet.
    pub fn new(settings: FleetSettings) -> Self {
        DynamoFleetStore(Arc::new(Inner {
            settings,
            client: OnceCell::new(),
            requests: Arc::new(AtomicU64::new(0)),
        }))
    }

    /// The settings.
    pub fn settings(&self) -> &FleetSettings {
        &self.0.settings
    }

    /// DynamoDB requests sent so far: every HTTP attempt of every call (an SDK retry
    /// counts again), counted just before it goes out.
    pub fn requests(&self) -> u64 {
        self.0.requests.load(Ordering::Relaxed)
    }

    /// The client, built on first use.
    pub async fn client(&self) -> Client {
        self.0
            .client
            .get_or_init(|| build_client(&self.0.settings, Arc::clone(&self.0.requests)))
            .await
            .clone()
    }

    fn table(&self) -> &str {
        &self.0.settings.table
    }

    /// The item of `key`.
    pub async fn get_item(&self, key: &str) -> Result<Option<Versioned>, FleetError> {
        let client = self.client().await;
        let out = client
            .get_item()
            .table_name(self.table())
            .key(KEY, AttributeValue::S(key.to_string()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify(&e, &self.describe()))?;
        match out.item() {
            None => Ok(None),
            Some(attrs) => layout::decode(attrs)
                .map(|(_, v)| Some(v))
                .map_err(|message| self.malformed(message)),
        }
    }

    /// Write `item` for `key` on condition of `expected`.
    pub async fn put_item(
        &self,
        key: &str,
        item: &FleetItem,
        expected: Option<u64>,
    ) -> Result<PutOutcome, FleetError> {
        let client = self.client().await;
        let version = expected.unwrap_or(0) + 1;
        let mut put = client
            .put_item()
            .table_name(self.table())
            .set_item(Some(layout::encode(key, item, version)));
        put = match expected {
            None => put
                .condition_expression("attribute_not_exists(#k)")
                .expression_attribute_names("#k", KEY),
            Some(v) => put
                .condition_expression("#v = :v")
                .expression_attribute_names("#v", VERSION)
                .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
        };
        match put.send().await {
            Ok(_) => Ok(PutOutcome::Written(version)),
            Err(e) if is_condition_failed(&e) => Ok(PutOutcome::Conflict),
            Err(e) => Err(classify(&e, &self.describe())),
        }
    }

    /// Every item of the table (for `tollgate fleet status`): key, item, or why an item
    /// could not be read.
    pub async fn scan(
        &self,
    ) -> Result<Vec<Result<(String, Versioned), ItemDecodeError>>, FleetError> {
        let client = self.client().await;
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = client
                .scan()
                .table_name(self.table())
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| classify(&e, &self.describe()))?;
            out.extend(page.items().iter().map(layout::decode));
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(out);
            }
        }
    }

    fn malformed(&self, error: ItemDecodeError) -> FleetError {
        FleetError {
            kind: FleetErrorKind::Other,
            table: self.describe(),
            message: format!(
                "malformed item: {error}; delete it (it is recreated) or fix the writer"
            ),
        }
    }
}

impl FleetStore for DynamoFleetStore {
    fn get(&self, key: &str) -> FleetFuture<Option<Versioned>> {
        let (store, key) = (self.clone(), key.to_string());
        Box::pin(async move { store.get_item(&key).await })
    }

    fn put(&self, key: &str, item: &FleetItem, expected: Option<u64>) -> FleetFuture<PutOutcome> {
        let (store, key, item) = (self.clone(), key.to_string(), item.clone());
        Box::pin(async move { store.put_item(&key, &item, expected).await })
    }

    fn describe(&self) -> String {
        let s = &self.0.settings;
        let mut d = format!("DynamoDB table {}", s.table);
        if let Some(r) = &s.region {
            d.push_str(&format!(" (region {r})"));
        }
        if let Some(u) = &s.endpoint_url {
            d.push_str(&format!(" at {u}"));
        }
        d
    }
}

/// Counts each HTTP attempt just before it is sent.
#[derive(Debug)]
struct CountAttempts(Arc<AtomicU64>);

impl Intercept for CountAttempts {
    fn name(&self) -> &'static str {
        "tollgate-fleet-count-attempts"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

async fn build_client(settings: &FleetSettings, requests: Arc<AtomicU64>) -> Client {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        // One retry for a blip; a table that keeps failing degrades the key instead.
        .retry_config(RetryConfig::standard().with_max_attempts(2))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .operation_timeout(OPERATION_TIMEOUT)
                .build(),
        );
    if let Some(region) = &settings.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if let Some(url) = &settings.endpoint_url {
        loader = loader.endpoint_url(url.clone());
    }
    let config = aws_sdk_dynamodb::config::Builder::from(&loader.load().await)
        .interceptor(CountAttempts(requests))
        .build();
    Client::from_conf(config)
}
