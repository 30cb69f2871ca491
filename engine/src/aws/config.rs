//! SDK configuration for gated clients: one shared inner HTTP client, retries disabled,
//! no operation timeouts, and a default client that refuses ungated requests.
//!
//! - The inner client (hyper 1 over rustls/ring) is built once per process
//!   ([`default_http_client`]): every gated attempt and every credential provider share
//!   its connection pools.
//! - Credential providers (IMDS, SSO, `AssumeRole` inside the chain, `credential_process`)
//!   are built by `aws-config` with that inner client directly: their requests are not
//!   charged to the account's quotas (DESIGN §6).
//! - The returned [`SdkConfig`]'s own HTTP client is the gate's dispatch
//!   ([`GateDispatch`]): a service client built from it sends nothing unless the request
//!   is an attempt of [`AwsGate::call`](crate::aws::AwsGate::call) (it refuses with
//!   [`UngatedRequest`] otherwise), and is admitted by that attempt's connector.
//! - Retries are `RetryConfig::disabled()` (the engine owns them), and there is no
//!   operation or attempt timeout: the admission wait happens inside the SDK's attempt,
//!   so an SDK timeout would cut it short. The scan deadline bounds the call instead.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_config::SdkConfig;
use aws_credential_types::Credentials;
use aws_smithy_async::time::TimeSource;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use tollgate_quota::Clock;

use crate::aws::assume_role::AssumeRole;
use crate::aws::chain::{default_http_client, load_chain};
use crate::aws::dispatch::{GateDispatch, UngatedRequest};

/// Load the default credential chain (`profile` from the shared config files, or the
/// default chain), the default `region` chain unless one is given, and `endpoint_url` for
/// every service (`--endpoint-url`, e.g. a moto server). See the module docs.
pub async fn sdk_config(
    profile: Option<&str>,
    region: Option<&str>,
    endpoint_url: Option<&str>,
) -> SdkConfig {
    sdk_config_with(default_http_client(), profile, region, endpoint_url).await
}

/// [`sdk_config`] with an explicit inner client (tests, embedders with their own TLS).
pub async fn sdk_config_with(
    inner: SharedHttpClient,
    profile: Option<&str>,
    region: Option<&str>,
    endpoint_url: Option<&str>,
) -> SdkConfig {
    sdk_config_with_credentials(inner, profile, region, endpoint_url, None).await
}

/// [`sdk_config_with`], with static `credentials` in place of the default credential
/// chain when given (the fixture simulator, tests); `None` keeps the chain (real runs).
pub async fn sdk_config_with_credentials(
    inner: SharedHttpClient,
    profile: Option<&str>,
    region: Option<&str>,
    endpoint_url: Option<&str>,
    credentials: Option<Credentials>,
) -> SdkConfig {
    sdk_config_assuming(inner, profile, region, endpoint_url, credentials, None).await
}

/// [`sdk_config_with_credentials`], then, with a `role`, that role's credentials on top
/// (STS `AssumeRole` signed by the chain, see [`AssumeRole`]).
pub async fn sdk_config_assuming(
    inner: SharedHttpClient,
    profile: Option<&str>,
    region: Option<&str>,
    endpoint_url: Option<&str>,
    credentials: Option<Credentials>,
    role: Option<&AssumeRole>,
) -> SdkConfig {
    let sdk = load_chain(
        inner.clone(),
        profile,
        region,
        endpoint_url,
        credentials,
        role,
    )
    .await;
    // The credential providers captured the inner client while loading; service clients
    // get the gate's dispatch, which sends only inside a gated attempt.
    sdk.into_builder()
        .http_client(GateDispatch::new(inner))
        .build()
}

/// An HTTP client whose every request fails, naming the fix (tests and embedders that
/// want a client which can send only through a per-attempt override).
#[derive(Debug, Clone, Copy, Default)]
pub struct UngatedRefusal;

impl HttpClient for UngatedRefusal {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(UngatedRefusal)
    }
}

impl HttpConnector for UngatedRefusal {
    fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
        HttpConnectorFuture::ready(Err(ConnectorError::user(Box::new(UngatedRequest))))
    }
}

/// An SDK time source reading tollgate's injected clock, so signing times follow the
/// admission clock (and paused time in simulations).
#[derive(Clone)]
pub struct ClockTimeSource(pub Arc<dyn Clock>);

impl std::fmt::Debug for ClockTimeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClockTimeSource")
    }
}

impl TimeSource for ClockTimeSource {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.0.now().as_micros())
    }
}
