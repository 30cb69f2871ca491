//! The credential chain and the inner HTTP client, before the gate's dispatch is
//! installed ([`crate::aws::config`] installs it): what both the gated SDK configuration
//! and the credentials check (`crate::aws::credentials`, which sends nothing through
//! service clients) load. Retries are disabled and there is no operation or attempt
//! timeout (the config module docs say why).

use std::sync::OnceLock;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

use crate::aws::assume_role::AssumeRole;

/// Connect timeout of the inner client (the SDK's default for current behavior versions).
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(3_100);

/// The process's shared inner HTTPS client (rustls over ring), built on first use.
pub fn default_http_client() -> SharedHttpClient {
    static CLIENT: OnceLock<SharedHttpClient> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            aws_smithy_http_client::Builder::new()
                .tls_provider(Provider::Rustls(CryptoMode::Ring))
                .build_https()
        })
        .clone()
}

/// The chain as the gated configuration loads it, `role` applied on top, with `inner` as
/// every HTTP client (the caller installs the gate's dispatch for service clients).
pub(crate) async fn load_chain(
    inner: SharedHttpClient,
    profile: Option<&str>,
    region: Option<&str>,
    endpoint_url: Option<&str>,
    credentials: Option<Credentials>,
    role: Option<&AssumeRole>,
) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(inner)
        .retry_config(RetryConfig::disabled())
        .timeout_config(gated_timeouts())
        .stalled_stream_protection(gated_stalled_stream_protection());
    if let Some(profile) = profile {
        loader = loader.profile_name(profile);
    }
    if let Some(region) = region {
        loader = loader.region(Region::new(region.to_owned()));
    }
    if let Some(url) = endpoint_url {
        loader = loader.endpoint_url(url);
    }
    if let Some(credentials) = credentials {
        loader = loader.credentials_provider(credentials);
    }
    let mut sdk = loader.load().await;
    if let Some(role) = role {
        sdk = role.apply(sdk).await;
    }
    sdk
}

/// Stalled-stream protection without its upload half. The admission wait happens inside
/// the SDK's attempt while the request body is held, so upload protection (1 B/s after a
/// 5 s grace period) would turn any admission wait past 5 s (a cooldown, a slow policy)
/// into a "transient" dispatch failure. Response bodies are still protected.
pub fn gated_stalled_stream_protection() -> StalledStreamProtectionConfig {
    StalledStreamProtectionConfig::enabled()
        .upload_enabled(false)
        .download_enabled(true)
        .build()
}

/// Connect timeout only: no operation or attempt timeout (module docs).
pub fn gated_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .disable_operation_timeout()
        .disable_operation_attempt_timeout()
        .build()
}
