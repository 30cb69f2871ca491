//! `AwsGate`: the one door collectors use to call AWS.
//!
//! A collector builds its SDK client once from [`sdk_config`](crate::aws::sdk_config) and
//! sends every request inside [`AwsGate::call`]; the client's HTTP client is the gate's
//! dispatch ([`GateDispatch`](crate::aws::GateDispatch)), which admits the request as the
//! call's current attempt:
//!
//! ```text
//! let out = gate
//!     .call(&ctx, "s3", "ListBuckets", Some(region), |_| client.list_buckets().send())
//!     .await?;
//! ```
//!
//! A client built otherwise is handed the per-attempt [`GatedHttpClient`] the closure
//! gets: `|http| client.list_buckets().customize().config_override(
//! aws_sdk_s3::Config::builder().http_client(http)).send()`.
//!
//! The gate resolves the canonical quota key and its policy, takes the concurrency
//! reservation, and runs the retry owner ([`crate::aws::retry`]); the gated connector awaits final
//! admission for every physical attempt. A client built from `sdk_config` but called
//! without the gate fails with a clear error instead of sending ungated traffic.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use tollgate_actors::AdmissionHandle;
use tollgate_quota::{AccountScope, MetricDataRequest, Partition, PolicyTable, QuotaKey};

use crate::aws::backoff::RetrySettings;
use crate::aws::context::GateInner;
pub use crate::aws::context::{CallContext, ScanId};
use crate::aws::error::{CallError, CallErrorKind};
use crate::aws::gated::{GatedHttpClient, SIGNED_REQUEST_MAX_WAIT};
use crate::aws::identity::CallerIdentity;
use crate::aws::metric_data::MetricDataPlan;
use crate::aws::retry;
use crate::aws::telemetry::{NoTelemetry, TelemetrySink};
use crate::aws::underlying::UnderlyingPlan;
use crate::aws::unfiltered::UnfilteredPlan;

/// The gate: admission handle, policies, the caller's account, retry settings, telemetry
/// and the one shared inner HTTP client. Cheap to clone.
#[derive(Clone)]
pub struct AwsGate {
    pub(crate) inner: Arc<GateInner>,
}

impl fmt::Debug for AwsGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsGate")
            .field("partition", &self.inner.partition)
            .field("account", &self.inner.account.to_string())
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

impl AwsGate {
    /// A gate for `identity`'s account over `admission`, sending through `http` (the
    /// shared inner client, e.g. [`default_http_client`](crate::aws::default_http_client)).
    ///
    /// For an unresolved identity, pass an isolated in-memory admission handle
    /// ([`isolated_admission`](crate::aws::isolated_admission)), not the shared one.
    pub fn new(
        admission: AdmissionHandle,
        policies: PolicyTable,
        identity: &CallerIdentity,
        http: SharedHttpClient,
    ) -> Self {
        AwsGate {
            inner: Arc::new(GateInner {
                admission,
                policies,
                partition: identity.partition.clone(),
                account: identity.account.clone(),
                retry: RetrySettings::default(),
                telemetry: Arc::new(NoTelemetry),
                http,
                signed_request_max_wait: SIGNED_REQUEST_MAX_WAIT,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut GateInner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                let old = &self.inner;
                let mut copy = GateInner {
                    admission: old.admission.clone(),
                    policies: old.policies.clone(),
                    partition: old.partition.clone(),
                    account: old.account.clone(),
                    retry: old.retry,
                    telemetry: old.telemetry.clone(),
                    http: old.http.clone(),
                    signed_request_max_wait: old.signed_request_max_wait,
                };
                f(&mut copy);
                self.inner = Arc::new(copy);
            }
        }
        self
    }

    /// Use these retry settings (default: 6 attempts, full jitter).
    pub fn with_retry(self, retry: RetrySettings) -> Self {
        self.edit(|g| g.retry = retry)
    }

    /// The same gate with at most `attempts` physical attempts per call, its other retry
    /// settings kept: a caller whose calls must give up early (the catalog's status
    /// probes: at most 2 attempts, each admitted) takes such a copy, sharing admission,
    /// policies, telemetry and the inner client with this one.
    pub fn with_max_attempts(self, attempts: std::num::NonZeroU32) -> Self {
        self.edit(|g| g.retry.max_attempts = attempts)
    }

    /// The physical attempts per call this gate allows.
    pub fn max_attempts(&self) -> std::num::NonZeroU32 {
        self.inner.retry.max_attempts
    }

    /// Send attempt events to `sink` as well as to `tracing`.
    pub fn with_telemetry(self, sink: Arc<dyn TelemetrySink>) -> Self {
        self.edit(|g| g.telemetry = sink)
    }

    /// Where this gate's attempt events go (a collector's calls outside AWS, such as a
    /// public price list read, record theirs there too).
    pub fn telemetry(&self) -> &Arc<dyn TelemetrySink> {
        &self.inner.telemetry
    }

    /// The partition every key uses.
    pub fn partition(&self) -> &Partition {
        &self.inner.partition
    }

    /// The account (or `unresolved:<run-id>` scope) every key uses.
    pub fn account(&self) -> &AccountScope {
        &self.inner.account
    }

    /// The admission handle.
    pub fn admission(&self) -> &AdmissionHandle {
        &self.inner.admission
    }

    /// The canonical quota key of an operation in this gate's account.
    pub fn quota_key(
        &self,
        service: &str,
        operation: &str,
        region: Option<&str>,
    ) -> Result<QuotaKey, CallError> {
        QuotaKey::for_operation(
            &self.inner.partition,
            &self.inner.account,
            region,
            service,
            operation,
        )
        .map_err(|e| CallError::new(CallErrorKind::Admission, operation, e.to_string()))
    }

    /// Make one logical AWS call: reserve, then for every physical attempt prepare the
    /// request with `send(gated_client)`, await final admission in the connector, send,
    /// classify, and retry throttled or transient failures within the limits. `service`
    /// and `operation` name the quota (`"s3"`, `"ListBuckets"`); `region` is `None` only
    /// for global services.
    ///
    /// `send` is called once per preparation (an attempt is prepared again when its
    /// signed request waited too long for admission). A client built from
    /// [`sdk_config`](crate::aws::sdk_config) needs nothing more: its HTTP client is the
    /// gate's dispatch, which sends the request as this preparation (`dispatch` module).
    /// A client built otherwise must be handed the client `send` is given, through
    /// `customize().config_override(..)`.
    ///
    /// An EC2 read of one of the seven actions with a smaller unfiltered budget
    /// (`DescribeVolumes`, ...) is charged that budget too (`ec2:DescribeVolumes:unfiltered`)
    /// whenever the request as sent carries neither a filter nor `MaxResults`/`NextToken`:
    /// the gate reads the serialised request at each attempt (see the `unfiltered`
    /// module); pass `MaxResults` to stay on the action's own budget.
    pub async fn call<T, E, F, Fut>(
        &self,
        ctx: &CallContext,
        service: &str,
        operation: &str,
        region: Option<&str>,
        send: F,
    ) -> Result<T, CallError>
    where
        F: FnMut(GatedHttpClient) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let key = self.quota_key(service, operation, region)?;
        let beside = retry::Beside {
            unfiltered: UnfilteredPlan::new(&key, &self.inner.policies).map(Arc::new),
            ..retry::Beside::default()
        };
        retry::run(&self.inner, ctx, (service, operation), key, beside, send).await
    }

    /// Make one Cloud Control call (`ListResources`, `GetResource`: `service` and
    /// `operation` name its own quota) exactly as [`AwsGate::call`], except that every
    /// physical attempt, retries included, also charges one token of each of
    /// `underlying` (`("iam", "ListRoles")`, ...: the operations the resource type's
    /// handler performs, from its CloudFormation schema), all at one instant; and a
    /// throttle of the handler's downstream call is fed back to those keys, not to
    /// Cloud Control's (see the `underlying` module). An empty `underlying` is a plain
    /// [`AwsGate::call`].
    pub async fn call_with_underlying<T, E, F, Fut>(
        &self,
        ctx: &CallContext,
        (service, operation): (&str, &str),
        region: Option<&str>,
        underlying: &[(String, String)],
        send: F,
    ) -> Result<T, CallError>
    where
        F: FnMut(GatedHttpClient) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let key = self.quota_key(service, operation, region)?;
        let plan = UnderlyingPlan::new(&key, underlying, &self.inner.policies)
            .map_err(|e| CallError::new(CallErrorKind::Admission, operation, e.to_string()))?;
        let beside = retry::Beside {
            underlying: Some(Arc::new(plan)),
            ..retry::Beside::default()
        };
        retry::run(&self.inner, ctx, (service, operation), key, beside, send).await
    }

    /// Make one call exactly as [`AwsGate::call`], except that its concurrency
    /// reservation and retry allowance are those of `allowance` (a group of the same
    /// service and region: `resource-explorer-2:setup`), not the operation's: every
    /// physical attempt, retries included, charges the operation's key (its rate, shared
    /// with every other caller) and the allowance key at one instant, as a Cloud Control
    /// call charges its underlying operations.
    ///
    /// Why: two kinds of work on one AWS budget keep separate retry allowances. Seed 000's
    /// catalog collection and its set-up mutations both draw on the regional
    /// `resource-explorer-2:non-search` budget, but a set-up meeting throttles must not
    /// spend the retries collection needs; set-up calls here, with its allowance on a key
    /// of its own. A throttle answer is fed back to the allowance key (the caller's own
    /// work slows), not to the operation's.
    pub async fn call_with_allowance<T, E, F, Fut>(
        &self,
        ctx: &CallContext,
        (service, operation): (&str, &str),
        region: Option<&str>,
        allowance: &str,
        send: F,
    ) -> Result<T, CallError>
    where
        F: FnMut(GatedHttpClient) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let own = QuotaKey::new(
            &self.inner.partition,
            &self.inner.account,
            region,
            service,
            allowance,
        )
        .map_err(|e| CallError::new(CallErrorKind::Admission, operation, e.to_string()))?;
        let rate = [(service.to_owned(), operation.to_owned())];
        let plan = UnderlyingPlan::new(&own, &rate, &self.inner.policies)
            .map_err(|e| CallError::new(CallErrorKind::Admission, operation, e.to_string()))?;
        let beside = retry::Beside {
            underlying: Some(Arc::new(plan)),
            ..retry::Beside::default()
        };
        retry::run(&self.inner, ctx, (service, operation), own, beside, send).await
    }

    /// Make one CloudWatch `GetMetricData` call (one page: pass the `NextToken` into the
    /// builder and call again for the next) in `region`, exactly as [`AwsGate::call`]
    /// with the same `send` contract, except that every physical attempt, retries
    /// included, also charges the account/region datapoint budget: at the attempt, the
    /// gate computes [`DatapointCharge::for_attempt`](tollgate_quota::DatapointCharge)
    /// of `request` (the page's queries and time window as sent; see
    /// [`MetricDataRequest`]) and admits the request token and the datapoints together
    /// (`cloudwatch:GetMetricData:recent-datapoints` or `…:older-datapoints`, seed
    /// 000). Telemetry events of the call carry `datapoints: {budget, cost}`.
    pub async fn call_metric_data<T, E, F, Fut>(
        &self,
        ctx: &CallContext,
        region: &str,
        request: &MetricDataRequest,
        send: F,
    ) -> Result<T, CallError>
    where
        F: FnMut(GatedHttpClient) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        const SERVICE: &str = "cloudwatch";
        const OPERATION: &str = "GetMetricData";
        let key = self.quota_key(SERVICE, OPERATION, Some(region))?;
        let plan = MetricDataPlan::new(request.clone(), &key, &self.inner.policies)
            .map_err(|e| CallError::new(CallErrorKind::Admission, OPERATION, e.to_string()))?;
        let beside = retry::Beside {
            metric_data: Some(Arc::new(plan)),
            ..retry::Beside::default()
        };
        retry::run(&self.inner, ctx, (SERVICE, OPERATION), key, beside, send).await
    }
}
