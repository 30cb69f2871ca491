//! tollgate's collectors: one actix actor per dataset, each running its requests through
//! [`AwsGate::call`] so that every physical attempt passes admission, and the report's
//! resource model ([`output`], [`dataset`]) the collectors fill.
//!
//! A collector is a plain async function over a [`CollectorRun`] (the scan's gate, call
//! context, regions, SDK configuration and progress counters) that returns a
//! [`DatasetReport`]; [`CollectorActor`] runs it inside the supervisor's actor system and
//! reports the result ([`actor::DatasetFinished`]). Status rules (complete / partial /
//! failed / cancelled, `null` with a reason) live in one place, [`ReportBuilder`], so
//! collectors cannot disagree about them. This crate sits on `tollgate-engine` (the gate)
//! and under `tollgate-scan` (which starts the collectors): the arrows point one way.
//!
//! # Layout
//! - [`dataset`]: `Dataset`, the datasets a scan may ask for.
//! - [`output`]: the report's model — `DiscoveryReport`, `DatasetReport`, statuses,
//!   reasons, items (re-exporting the engine's throttling and degraded-mode pieces).
//! - [`activity`]: CloudWatch activity of the items (`--metrics`), a phase after the
//!   datasets: one planner per region batching every dataset's GetMetricData queries.
//! - [`tagging`]: the tagging sweep (`GetResources` per region, on by default), beside the
//!   datasets: tags merged into the items by ARN, the rest reported as `tags-only` items.
//! - [`cloudcontrol`]: the Cloud Control sweep (`ListResources` per type and region, a
//!   child type's once per parent item; `GetResource` per identifiers-only item with
//!   `--details`), each call charged to Cloud Control's key and to the underlying
//!   operations of the type's handler; its type table (`cloudcontrol::schemas`) is
//!   checked-in data.
//! - [`types`]: every type tollgate knows (`tollgate types`): native, Cloud Control or
//!   tags-only.
//! - [`catalog`]: the Resource Explorer catalog: `catalog status` probes and `catalog
//!   init`'s set-up, on the regional `resource-explorer-2:non-search` budget.
//! - [`actor`]: `CollectorActor` and the message it sends the supervisor.
//! - [`clients`]: the run's SDK clients, one generic builder and cache per service.
//! - [`join`]: `join_in_order`, a collector's concurrent calls (regions, a batch's items),
//!   each polled only when woken.
//! - [`operation`]: `Operation`, an operation named once for calls and reports.
//! - [`coverage`]: `Coverage` per type, account and region, and its summary.
//! - [`resource`]: `Resource`, the common fields of every item.
//! - [`progress`]: `Progress`, counters a collector bumps and the supervisor publishes.
//! - [`report_builder`]: `ReportBuilder`, the status and reasons rules.
//! - [`s3_buckets`], [`lambda_functions`], [`dynamodb_tables`], [`kms_keys`]: one file per
//!   dataset.
//! - [`ec2`]: the seventeen EC2 types, one file each, and their shared listing and model.
//! - [`pricing`]: transit gateway attachments' hourly prices from the public price list
//!   (`--pricing`): one unauthenticated read per region, kept per process.
//! - [`services`]: seed 000's other services (ECS, ELB, ELBv2, Logs, CloudTrail,
//!   Route 53, EMR), eleven types, one file each.
#![forbid(unsafe_code)]

pub mod dataset;
pub mod output;

pub mod activity;
pub mod actor;
pub mod catalog;
pub mod clients;
pub mod cloudcontrol;
pub mod coverage;
pub mod dynamodb_tables;
pub mod ec2;
pub mod join;
pub mod kms_keys;
pub mod lambda_functions;
pub mod operation;
pub mod pricing;
pub mod progress;
pub mod report_builder;
pub mod resource;
pub mod s3_buckets;
pub mod services;
pub mod tagging;
pub mod types;

use std::future::Future;

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

pub use actor::CollectorActor;
pub use clients::{AccountClients, ServiceClient, SharedClients};
pub use operation::Operation;
pub use progress::{DatasetProgress, Progress};
pub use report_builder::ReportBuilder;

pub use dataset::Dataset;
pub use output::{DatasetReport, DatasetStatus, DiscoveryReport, Item};
pub use resource::Resource;

use clients::{ClientSettings, Clients};
use tollgate_engine::aws::{in_account, AwsGate, CallContext, CallError};

/// Everything one collector needs for one scan.
pub struct CollectorRun {
    /// The scan's gate.
    pub gate: AwsGate,
    /// Attribution, deadline and cancellation of every call.
    pub ctx: CallContext,
    /// Regions to scan (validated, sorted, at least one).
    pub regions: Vec<String>,
    /// SDK configuration (credentials, endpoint) clients are built from.
    pub sdk: aws_config::SdkConfig,
    /// S3 path-style addressing (emulators).
    pub force_path_style: bool,
    /// Counters the supervisor publishes.
    pub progress: Progress,
    /// What a Cloud Control call is charged (its own key and the underlying operations,
    /// unless a diagnostic run asks otherwise).
    pub cloudcontrol: cloudcontrol::Charges,
    /// Whether the Cloud Control sweep reads identifiers-only items in full
    /// (`--details`: one `GetResource` each).
    pub details: cloudcontrol::Details,
    /// A child type's parent items (Cloud Control types that need a parent); `None`
    /// for every other dataset.
    pub parents: Option<cloudcontrol::ParentListing>,
    /// `--pricing`: where the public price list is, and the process's kept reads;
    /// `None` (the default): no price is read.
    pub pricing: Option<pricing::Pricing>,
    clients: Clients,
    /// A member account of an organization scan: the organization's shared clients and
    /// this account's credentials (used instead of `clients` and `sdk`'s credentials).
    account_clients: Option<AccountClients>,
}

impl std::fmt::Debug for CollectorRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectorRun")
            .field("ctx", &self.ctx)
            .field("regions", &self.regions)
            .finish_non_exhaustive()
    }
}

impl CollectorRun {
    /// Run `per_region` for every region of the scan at once and merge the results into
    /// one dataset report of `resource_type` (marked cancelled if the scan was), with one
    /// coverage entry per region (unless the region's part wrote its own).
    pub async fn per_region<'a, F, Fut>(
        &'a self,
        resource_type: &str,
        per_region: F,
    ) -> DatasetReport
    where
        F: Fn(&'a CollectorRun, &'a str) -> Fut,
        Fut: Future<Output = ReportBuilder>,
    {
        let mut out = ReportBuilder::new();
        let regions = join::join_in_order(self.regions.iter().map(|r| per_region(self, r))).await;
        let account = self.account();
        for (name, mut region) in self.regions.iter().zip(regions) {
            if self.is_cancelled() {
                region.cancelled();
            }
            if !region.has_coverage() {
                let entry = region.coverage_entry(
                    resource_type,
                    account.as_deref(),
                    name,
                    region.len() as u64,
                );
                region.covered(entry);
            }
            region.merge_into(&mut out);
        }
        if self.is_cancelled() {
            out.cancelled();
        }
        out.finish()
    }

    /// A run over `regions` (must not be empty).
    pub fn new(
        gate: AwsGate,
        ctx: CallContext,
        regions: Vec<String>,
        sdk: aws_config::SdkConfig,
        force_path_style: bool,
        progress: Progress,
    ) -> Self {
        CollectorRun {
            gate,
            ctx,
            regions,
            sdk,
            force_path_style,
            progress,
            cloudcontrol: cloudcontrol::Charges::default(),
            details: cloudcontrol::Details::default(),
            parents: None,
            pricing: None,
            clients: Clients::default(),
            account_clients: None,
        }
    }

    /// With the SDK clients an organization's member accounts share, signing as this
    /// account (`clients` says how): none are built for this run alone.
    pub fn with_account_clients(mut self, account_clients: Option<AccountClients>) -> Self {
        self.account_clients = account_clients;
        self
    }

    /// With Cloud Control calls charged as `charges` says.
    pub fn with_cloudcontrol_charges(mut self, charges: cloudcontrol::Charges) -> Self {
        self.cloudcontrol = charges;
        self
    }

    /// With Cloud Control's identifiers-only items read in full, or not.
    pub fn with_cloudcontrol_details(mut self, details: cloudcontrol::Details) -> Self {
        self.details = details;
        self
    }

    /// With prices read from the public price list (`--pricing`).
    pub fn with_pricing(mut self, pricing: Option<pricing::Pricing>) -> Self {
        self.pricing = pricing;
        self
    }

    /// With the parent items a child type's listing needs.
    pub fn with_parents(mut self, parents: cloudcontrol::ParentListing) -> Self {
        self.parents = Some(parents);
        self
    }

    /// The region for global listings (S3 ListBuckets): the scan's first.
    pub fn home_region(&self) -> &str {
        self.regions
            .first()
            .map(String::as_str)
            .unwrap_or("us-east-1")
    }

    /// The scanned account, `None` when the caller's identity was not resolved.
    pub fn account(&self) -> Option<String> {
        match self.gate.account() {
            tollgate_quota::AccountScope::Account(id) => Some(id.as_str().to_string()),
            tollgate_quota::AccountScope::Unresolved(_) => None,
        }
    }

    /// A resource of this scan's account: `resource_type` identified by `id` in `region`
    /// (`None`: unknown).
    pub fn resource(&self, resource_type: &str, id: &str, region: Option<&str>) -> Resource {
        Resource::new(resource_type, id.to_string())
            .account(self.account())
            .region(region.map(str::to_string))
    }

    /// `arn:<partition>:<service>:<region>:<account>:<resource>` of this scan's account
    /// (`<account>` empty when unresolved, as AWS writes an ARN without one).
    pub fn arn(&self, service: &str, region: &str, resource: &str) -> String {
        format!(
            "arn:{}:{service}:{region}:{}:{resource}",
            self.gate.partition().as_str(),
            self.account().unwrap_or_default()
        )
    }

    /// Whether the scan was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.ctx.cancel.is_cancelled()
    }

    /// One gated call of `operation` in `region` (see [`AwsGate::call`]). `send` sends the
    /// request with a client from [`CollectorRun::client`]: its HTTP client is the scan's gated
    /// dispatch, which sends only inside this call's attempts (and refuses outside them).
    pub async fn call<T, E, F, Fut>(
        &self,
        operation: Operation,
        region: &str,
        mut send: F,
    ) -> Result<T, CallError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        self.gate
            .call(
                &self.ctx,
                operation.service(),
                operation.name(),
                Some(region),
                |_| send(),
            )
            .await
    }

    /// [`CollectorRun::call`] for one planned call: counts it done in the progress, whatever
    /// its outcome.
    pub async fn call_item<T, E, F, Fut>(
        &self,
        operation: Operation,
        region: &str,
        send: F,
    ) -> Result<T, CallError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let answer = self.call(operation, region, send).await;
        self.progress.done(1);
        answer
    }

    /// The `C` client for `region` (`let kms: aws_sdk_kms::Client = run.client(region)`),
    /// built on first use and reused.
    pub fn client<C: ServiceClient>(&self, region: &str) -> C {
        let (clients, sdk) = match &self.account_clients {
            Some(shared) => shared.parts(),
            None => (&self.clients, &self.sdk),
        };
        C::cached(
            clients,
            ClientSettings {
                sdk,
                region,
                force_path_style: self.force_path_style,
            },
        )
    }
}

/// The operations `dataset`'s native collector calls (`Operation`s, in call order);
/// empty for a Cloud Control dataset, whose charges are its type's handler's.
pub fn native_operations(dataset: Dataset) -> Vec<Operation> {
    match dataset {
        Dataset::S3Buckets => s3_buckets::OPERATIONS.to_vec(),
        Dataset::LambdaFunctions => lambda_functions::OPERATIONS.to_vec(),
        Dataset::DynamoDbTables => dynamodb_tables::OPERATIONS.to_vec(),
        Dataset::KmsKeys => kms_keys::OPERATIONS.to_vec(),
        Dataset::Ec2(ty) => ec2::calls(ty).iter().map(|c| c.operation).collect(),
        Dataset::Service(ty) => services::operations(ty),
        Dataset::CloudControl(_) => Vec::new(),
    }
}

/// Run `dataset`'s collector to the end (signing as its account, when its clients are
/// shared: `clients`).
pub async fn collect(dataset: Dataset, run: &CollectorRun) -> DatasetReport {
    match &run.account_clients {
        Some(shared) => in_account(shared.credentials.clone(), collect_in(dataset, run)).await,
        None => collect_in(dataset, run).await,
    }
}

async fn collect_in(dataset: Dataset, run: &CollectorRun) -> DatasetReport {
    match dataset {
        Dataset::S3Buckets => s3_buckets::collect(run).await,
        Dataset::LambdaFunctions => lambda_functions::collect(run).await,
        Dataset::DynamoDbTables => dynamodb_tables::collect(run).await,
        Dataset::KmsKeys => kms_keys::collect(run).await,
        Dataset::Ec2(ty) => ec2::collect(run, ty).await,
        Dataset::Service(ty) => services::collect(run, ty).await,
        Dataset::CloudControl(id) => cloudcontrol::collect(run, id.info()).await,
    }
}
