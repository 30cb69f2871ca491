//! `GateDispatch`: the HTTP client installed once in every SDK client built from
//! [`sdk_config`](crate::aws::sdk_config), which sends a request only as the preparation
//! of a gated attempt.
//!
//! Why not hand each attempt its own client? That is what
//! `customize().config_override(..)` does (and still may, for clients built otherwise:
//! [`GatedHttpClient`](crate::aws::GatedHttpClient)), and it costs the SDK a second
//! configuration layer and a second merge of runtime components on every attempt: about
//! 15 µs of the scanner's CPU per call under perf (issue 35; docs/benchmarks-history.md,
//! "Where the scanner's CPU goes"), more than a tenth of what the plain SDK spends on
//! the whole call. Here the client is installed once per SDK client, and the attempt
//! reaches the connector through a task-local that the retry owner sets around the SDK's
//! future ([`in_attempt`]): the connector runs inside that future's poll (the
//! orchestrator awaits it, nothing is spawned in between), so it sees exactly the
//! attempt whose preparation it is sending.
//!
//! The guarantee stays what `config_override` gave: nothing leaves an SDK client built
//! from `sdk_config` without admission. Outside an attempt there is no task-local, and
//! the request fails with [`UngatedRequest`] (naming the fix), as the refusing client did
//! before. Inside one, the preparation's one request slot is claimed: a second request
//! in the same scope (a client from `sdk_config` used by code the SDK calls while
//! preparing, such as a credentials provider) fails with [`SecondRequest`] instead of
//! riding on the attempt's grant. Nested gated calls set their own task-local, which
//! shadows the outer one for their duration.

use std::future::Future;
use std::sync::Arc;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

use crate::aws::gated::{gate_and_send, Attempt};

tokio::task_local! {
    /// The preparation being sent by the future the retry owner polls.
    static ATTEMPT: Arc<Attempt>;
}

/// Poll `future` (a `send` closure's SDK future) with `attempt` as the preparation every
/// [`GateDispatch`] request inside it belongs to.
pub(crate) fn in_attempt<F: Future>(
    attempt: Arc<Attempt>,
    future: F,
) -> impl Future<Output = F::Output> {
    ATTEMPT.scope(attempt, future)
}

/// The error an ungated request gets.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("tollgate: this AWS client sends only through AwsGate::call (every request needs admission): send it inside the call's closure, or pass the closure's gated HTTP client with customize().config_override(..)")]
pub struct UngatedRequest;

/// A second request inside one preparation's scope.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("tollgate: one gated attempt sends one request; a second request inside the same AwsGate::call attempt was refused (a client built from sdk_config was used by code outside the gate, e.g. a credentials provider: build that client with the inner HTTP client instead)")]
pub struct SecondRequest;

/// The HTTP client of every SDK client built from `sdk_config`: it sends through the
/// admission of the attempt in scope, and refuses anything outside an attempt. See the
/// module docs.
#[derive(Debug, Clone)]
pub struct GateDispatch {
    inner: SharedHttpClient,
}

impl GateDispatch {
    /// A dispatch sending admitted requests through `inner` (the shared hyper client).
    pub fn new(inner: SharedHttpClient) -> Self {
        GateDispatch { inner }
    }
}

impl HttpClient for GateDispatch {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(DispatchConnector {
            inner: self.inner.http_connector(settings, components),
        })
    }
}

#[derive(Debug)]
struct DispatchConnector {
    inner: SharedHttpConnector,
}

impl HttpConnector for DispatchConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let attempt = match ATTEMPT.try_with(Arc::clone) {
            Ok(attempt) => attempt,
            Err(_) => return refuse(UngatedRequest),
        };
        if !attempt.claim() {
            return refuse(SecondRequest);
        }
        let inner = self.inner.clone();
        HttpConnectorFuture::new(async move { gate_and_send(&attempt, &inner, request).await })
    }
}

fn refuse(error: impl std::error::Error + Send + Sync + 'static) -> HttpConnectorFuture {
    HttpConnectorFuture::ready(Err(ConnectorError::user(Box::new(error))))
}
