//! `GatedHttpClient`: the SDK's HTTP client wrapper whose connector awaits final admission
//! after signing and just before the bytes go out.
//!
//! Why a connector? The SDK orchestrator runs serialization, endpoint resolution,
//! credential resolution and signing, and only then hands the signed request to the
//! connector. So the connector is exactly the point DESIGN §3 names for final admission:
//! everything that can fail locally has happened, and nothing has been sent. Charging
//! tokens any earlier would waste capacity on requests that never leave; any later is
//! impossible.
//!
//! The retry owner ([`crate::aws::retry`]) makes one [`Attempt`] per preparation of an
//! attempt. It carries the call's reservation guard, whether the attempt is a retry, the
//! cancellation token and the deadline, and the connector writes what happened (grant,
//! dispatch instant, status, `Retry-After`) into a record the retry owner reads
//! afterwards. The request reaches it in one of two ways:
//! - a client built from [`sdk_config`](crate::aws::sdk_config) carries the gate's
//!   dispatch as its HTTP client, installed once per SDK client, which finds the
//!   preparation in a task-local the retry owner sets around the SDK's future
//!   ([`crate::aws::dispatch`]); every collector sends this way;
//! - any other client is handed this preparation's `GatedHttpClient` with
//!   `customize().config_override(<Service>::Config::builder().http_client(gated))`.
//!
//! Both end in the same connector code ([`gate_and_send`]). The inner client (hyper over
//! rustls) is one shared instance, so connection pools survive across calls.
//!
//! A signed request waits at most [`SIGNED_REQUEST_MAX_WAIT`] for admission. Past that
//! the connector gives up with [`SignatureRefresh`] and the retry owner prepares the same
//! attempt again (a fresh signature), without spending a retry or counting an attempt.
//! The refreshed request asks for admission again and so rejoins the key's admission
//! FIFO at the back. That queue holds at most the key's `concurrency` waiters (everyone
//! else waits for a reservation, before preparation), so the reordering is bounded.
//! Cancellation while waiting means nothing dispatches; while in flight, the inner
//! request future is dropped, which aborts it.
//!
//! A grant that took [`BREAKER_RECHECK_AFTER`] or longer asks the scope's circuit
//! breaker again before the request goes out (issue 24): the breaker was passed before
//! the wait, and it may have opened since. Found open (or its probe out), the request
//! waits there with its grant, for as long as its signature stays fresh, and goes when
//! the breaker closes or makes it the probe; still open after that, it is not sent
//! ([`BreakerOpenedWhileQueued`]) and the retry owner passes the breaker again and
//! prepares it afresh.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tollgate_actors::clock::{monotonic_now, until};
use tollgate_actors::{
    AdmissionError, AdmissionHandle, BudgetCharge, CanonicalKey, ReservationGuard, WaitOptions,
};
use tollgate_quota::{DatapointCharge, Grant, Passage, ProbeId, QuotaKey};

use crate::aws::backoff::{retry_after, ServerDelay};
use crate::aws::metric_data::{BudgetKey, MetricDataPlan};
use crate::aws::underlying::UnderlyingPlan;
use crate::aws::unfiltered::UnfilteredPlan;

/// Longest a signed request waits for admission: 4 minutes, a margin inside the usual
/// 5-minute SigV4 validity window (seed 000).
pub const SIGNED_REQUEST_MAX_WAIT: Duration = Duration::from_secs(240);

/// The connector's answer when a signed request waited [`SIGNED_REQUEST_MAX_WAIT`]: the
/// retry owner re-prepares the request for a fresh signature.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the signed request waited longer than {SIGNED_REQUEST_MAX_WAIT:?} for admission; it is prepared again with a fresh signature")]
pub struct SignatureRefresh;

/// The connector's answer when the call was cancelled.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the call was cancelled before its response arrived")]
pub struct CancelledByCaller;

/// What the retry owner tells one preparation's connector.
#[derive(Debug, Clone)]
pub(crate) struct AttemptPlan {
    pub guard: Arc<ReservationGuard>,
    pub retry: bool,
    pub cost: u32,
    pub scope: u64,
    pub cancel: CancellationToken,
    pub deadline: Instant,
    pub max_wait: Duration,
    /// Ask the scope's breaker again after a grant that took [`BREAKER_RECHECK_AFTER`]
    /// or longer (`None`: the attempt holds the probe lease, nothing to ask).
    pub breaker: Option<BreakerRecheck>,
    /// The attempt's grant, taken with the call's reservation (the first attempt of a
    /// call whose key admitted it at once, `retry::run`): dispatched on without asking
    /// for admission again.
    pub granted: Option<Grant>,
    /// A GetMetricData call's datapoint budgets: final admission charges the attempt's
    /// datapoints with its request token (`None` for every other operation).
    pub metric_data: Option<Arc<MetricDataPlan>>,
    /// A Cloud Control call's underlying operations: final admission charges one token
    /// of each with the request token (`None` for every other operation).
    pub underlying: Option<Arc<UnderlyingPlan>>,
    /// An EC2 read with an `:unfiltered` budget: final admission charges it with the
    /// request token when the request as sent is unfiltered and unpaginated (`None` for
    /// every other operation).
    pub unfiltered: Option<Arc<UnfilteredPlan>>,
}

/// Where an attempt asks its scope's breaker again before sending.
#[derive(Debug, Clone)]
pub(crate) struct BreakerRecheck {
    pub admission: AdmissionHandle,
    pub key: QuotaKey,
}

/// A grant that took this long may find the breaker opened since the attempt passed it
/// (issue 24): calls that passed a closed breaker and then queued behind the failing
/// key's cooldown (8 s at most) were sent one per cooldown through an open breaker, so
/// in a 90-second outage the breaker held back nothing (`bench outage`). Shorter waits
/// are the rate limiter's ordinary pacing; not asking then spares a round trip to the
/// coordinator per attempt. An attempt that asks holds its grant at the breaker (for the
/// probe's answer, or to be the probe) while its signature stays fresh.
pub(crate) const BREAKER_RECHECK_AFTER: Duration = Duration::from_secs(1);

/// The connector's answer when the scope's breaker opened while the attempt queued.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the scope's circuit breaker opened while the request waited for admission")]
pub struct BreakerOpenedWhileQueued;

/// What happened in one preparation, as far as the connector saw it.
#[derive(Debug, Default)]
pub(crate) struct AttemptRecord {
    /// Final admission's grant.
    pub grant: Option<Grant>,
    /// Why the connector stopped the request short of an answer, if it did.
    pub stop: Option<ConnectorStop>,
    /// When the request went out.
    pub dispatched_at: Option<Instant>,
    /// When the response head (or transport error) came back.
    pub finished_at: Option<Instant>,
    /// The response status.
    pub status: Option<u16>,
    /// The server's `Retry-After` / `x-amz-retry-after`.
    pub retry_after: ServerDelay,
    /// The probe lease the breaker gave this preparation when it asked again after its
    /// grant (the attempt is then the scope's probe).
    pub probe: Option<ProbeId>,
    /// The datapoints final admission charged with the grant (GetMetricData only).
    pub datapoints: Option<DatapointCharge>,
    /// The `:unfiltered` budget final admission charged with the grant (an EC2 read sent
    /// with neither a filter nor pagination only).
    pub unfiltered: Option<BudgetKey>,
}

/// Why the connector stopped a request short of an answer.
#[derive(Debug, Clone)]
pub(crate) enum ConnectorStop {
    /// The connector saw the call's cancellation (waiting, granted, or in flight).
    Cancelled,
    /// The admission wait hit [`SIGNED_REQUEST_MAX_WAIT`]: prepare the request again.
    NeedsRefresh,
    /// Final admission failed (refused, deadline, cancelled, storage...).
    Admission(AdmissionError),
    /// Granted after a long wait, the scope's breaker was found open and stayed open for
    /// as long as the signature stays fresh: not sent; the attempt passes the breaker
    /// again and is prepared afresh.
    BreakerOpened,
}

/// One preparation of an attempt: its plan and what the connector records of it.
#[derive(Debug)]
pub(crate) struct Attempt {
    plan: AttemptPlan,
    record: Mutex<AttemptRecord>,
    /// Whether a request went to the gate through [`crate::aws::dispatch`] already: one
    /// preparation sends one request.
    claimed: AtomicBool,
}

impl Attempt {
    /// Take the preparation's one request slot: `false` when a request took it already.
    pub(crate) fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }

    fn update(&self, f: impl FnOnce(&mut AttemptRecord)) {
        if let Ok(mut record) = self.record.lock() {
            f(&mut record);
        }
    }
}

/// The per-preparation HTTP client handed to the SDK. See the module docs.
#[derive(Debug, Clone)]
pub struct GatedHttpClient {
    inner: SharedHttpClient,
    attempt: Arc<Attempt>,
}

impl GatedHttpClient {
    pub(crate) fn new(inner: SharedHttpClient, plan: AttemptPlan) -> Self {
        GatedHttpClient {
            inner,
            attempt: Arc::new(Attempt {
                plan,
                record: Mutex::new(AttemptRecord::default()),
                claimed: AtomicBool::new(false),
            }),
        }
    }

    /// The preparation this client sends (the dispatch's task-local, `dispatch` module).
    pub(crate) fn attempt(&self) -> Arc<Attempt> {
        self.attempt.clone()
    }

    /// A handle on the record the connector fills in.
    pub(crate) fn recorder(&self) -> AttemptRecorder {
        AttemptRecorder(self.attempt.clone())
    }
}

/// The retry owner's view of a preparation's record.
#[derive(Debug, Clone)]
pub(crate) struct AttemptRecorder(Arc<Attempt>);

impl AttemptRecorder {
    /// Take the record (leaving an empty one).
    pub fn take(&self) -> AttemptRecord {
        self.0
            .record
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }
}

impl HttpClient for GatedHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(GatedConnector {
            inner: self.inner.http_connector(settings, components),
            attempt: self.attempt.clone(),
        })
    }
}

/// The connector: admission, then the inner connector.
#[derive(Debug)]
struct GatedConnector {
    inner: SharedHttpConnector,
    attempt: Arc<Attempt>,
}

impl HttpConnector for GatedConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let inner = self.inner.clone();
        let attempt = self.attempt.clone();
        HttpConnectorFuture::new(async move { gate_and_send(&attempt, &inner, request).await })
    }
}

/// Final admission of the attempt: its request token, and for a GetMetricData call its
/// datapoints, computed now (each attempt, retries included) and charged with the token
/// at one instant ([`MetricDataPlan`]); for a Cloud Control call, one token of each
/// underlying operation as well ([`UnderlyingPlan`]); for an EC2 read that `request`
/// sends with neither a filter nor pagination, one token of its `:unfiltered` budget
/// ([`UnfilteredPlan`]).
async fn final_admission(
    attempt: &Attempt,
    request: &HttpRequest,
    wait: WaitOptions,
) -> Result<Grant, AdmissionError> {
    let plan = &attempt.plan;
    let mut budgets = Vec::new();
    let mut datapoints = None;
    let unfiltered = plan
        .unfiltered
        .as_deref()
        .and_then(|u| u.charge_for(request))
        .cloned();
    if let Some(budget) = &unfiltered {
        budgets.push(BudgetCharge {
            key: CanonicalKey::new(&budget.key),
            policy: budget.policy,
            cost: 1,
        });
    }
    if let Some(metric_data) = plan.metric_data.as_deref() {
        let (charge, budget) = metric_data.charge_at(plan.guard.now());
        budgets.push(BudgetCharge {
            key: CanonicalKey::new(&budget.key),
            policy: budget.policy,
            cost: charge.cost,
        });
        datapoints = Some(charge);
    }
    if let Some(underlying) = plan.underlying.as_deref() {
        budgets.extend(underlying.keys().map(|k| BudgetCharge {
            key: CanonicalKey::new(&k.key),
            policy: k.policy,
            cost: 1,
        }));
    }
    let granted = plan
        .guard
        .admit_with_budgets(plan.cost, plan.retry, budgets, wait)
        .await;
    if granted.is_ok() && (datapoints.is_some() || unfiltered.is_some()) {
        attempt.update(|r| {
            r.datapoints = datapoints;
            r.unfiltered = unfiltered;
        });
    }
    granted
}

pub(crate) async fn gate_and_send(
    attempt: &Attempt,
    inner: &SharedHttpConnector,
    request: HttpRequest,
) -> Result<aws_smithy_runtime_api::client::orchestrator::HttpResponse, ConnectorError> {
    let plan = &attempt.plan;
    let cancelled = || {
        attempt.update(|r| r.stop = Some(ConnectorStop::Cancelled));
        ConnectorError::user(Box::new(CancelledByCaller))
    };
    if plan.cancel.is_cancelled() {
        return Err(cancelled());
    }
    let remaining = until(plan.deadline);
    let refresh_bound = plan.max_wait < remaining;
    let wait = WaitOptions {
        timeout: plan.max_wait.min(remaining),
        scope: Some(plan.scope),
    };
    let asked = monotonic_now();
    let admitted = match plan.granted {
        Some(grant) => Ok(grant),
        None => tokio::select! {
            biased;
            _ = plan.cancel.cancelled() => return Err(cancelled()),
            admitted = final_admission(attempt, &request, wait) => admitted,
        },
    };
    let grant = match admitted {
        Ok(grant) => grant,
        Err(AdmissionError::DeadlineExceeded { .. }) if refresh_bound => {
            attempt.update(|r| r.stop = Some(ConnectorStop::NeedsRefresh));
            return Err(ConnectorError::other(Box::new(SignatureRefresh), None));
        }
        Err(e) => {
            attempt.update(|r| r.stop = Some(ConnectorStop::Admission(e.clone())));
            return Err(ConnectorError::other(Box::new(e), None));
        }
    };
    attempt.update(|r| r.grant = Some(grant));
    if let Some(check) = plan.breaker.as_ref() {
        let waited = monotonic_now().saturating_duration_since(asked);
        if waited >= BREAKER_RECHECK_AFTER {
            // Hold the grant at the breaker for as long as the signature stays fresh:
            // giving it up would cost a grant per queued call, and the probe, queued
            // behind them for a grant of its own, would wait for all of them.
            let hold = plan
                .max_wait
                .saturating_sub(waited)
                .min(until(plan.deadline));
            let passed = tokio::select! {
                biased;
                _ = plan.cancel.cancelled() => return Err(cancelled()),
                passed = check.admission.breaker_pass(&check.key, hold) => passed,
            };
            match passed {
                Ok(Passage::Probe(lease)) => attempt.update(|r| r.probe = Some(lease.id)),
                Ok(_) => {}
                Err(AdmissionError::BreakerOpen { .. }) => {
                    attempt.update(|r| r.stop = Some(ConnectorStop::BreakerOpened));
                    return Err(ConnectorError::other(
                        Box::new(BreakerOpenedWhileQueued),
                        None,
                    ));
                }
                Err(e) => {
                    attempt.update(|r| r.stop = Some(ConnectorStop::Admission(e.clone())));
                    return Err(ConnectorError::other(Box::new(e), None));
                }
            }
        }
    }
    if plan.cancel.is_cancelled() {
        // Granted but never sent: the retry owner returns the retry unit, if one was
        // spent, when it reads the record (grant without dispatch).
        return Err(cancelled());
    }
    attempt.update(|r| r.dispatched_at = Some(monotonic_now()));
    let response = tokio::select! {
        biased;
        // Dropping the inner future aborts the request.
        _ = plan.cancel.cancelled() => {
            attempt.update(|r| r.finished_at = Some(monotonic_now()));
            return Err(cancelled());
        }
        response = inner.call(request) => response,
    };
    let now = plan.guard.now();
    attempt.update(|r| {
        r.finished_at = Some(monotonic_now());
        if let Ok(response) = &response {
            r.status = Some(response.status().as_u16());
            r.retry_after = retry_after(response.headers(), now);
        }
    });
    response
}
