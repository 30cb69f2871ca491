//! One unauthenticated GET of a region's offer file, bounded by [`TIMEOUT`] and by the
//! caller (drop the future to cancel it).
//!
//! The timeout covers the whole exchange, connection, headers and the body read to its
//! end, so a server that answers its headers and then stalls in the body times out as one
//! that never answers does. An answer that is not a success is not read at all: the
//! response is dropped with its body unread, which closes the connection rather than
//! draining it (seed 000: "unused error response bodies are cancelled"); an error page
//! may be large or never end. A body larger than [`MAX_OFFER_BYTES`] is refused as it
//! crosses the limit.
//!
//! Why hyper-util's client: the AWS SDK's HTTP client is built on it, with rustls over ring
//! and the system's roots (hyper-rustls), so this adds no crate to the build; the SDK's
//! own client cannot be called outside an SDK operation without its runtime components.

use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// How long one offer file may take, headers and body (seed 000: 5 seconds).
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The largest offer file read (a region's `AmazonVPC` offer is a few megabytes).
pub const MAX_OFFER_BYTES: usize = 64 << 20;

/// The price list's client: HTTPS (the system's roots) or plain HTTP (`--pricing-url`
/// at a local simulator).
pub type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// Why an offer file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No complete answer within [`TIMEOUT`].
    #[error("no complete answer within {}s", TIMEOUT.as_secs())]
    Timeout,
    /// The server answered this status (its body was not read).
    #[error("the server answered HTTP {0}")]
    Status(u16),
    /// The connection failed, or the body broke off.
    #[error("{0}")]
    Transport(String),
    /// The body is over [`MAX_OFFER_BYTES`].
    #[error("the offer file is larger than {} MiB", MAX_OFFER_BYTES >> 20)]
    TooLarge,
    /// No client could be built (no system roots for HTTPS).
    #[error("no HTTPS client: {0}")]
    Client(String),
    /// The URL is not one.
    #[error("{0:?} is not a URL: {1}")]
    BadUrl(String, String),
}

impl FetchError {
    /// The HTTP status, when the server answered one.
    pub fn status(&self) -> Option<u16> {
        match self {
            FetchError::Status(s) => Some(*s),
            _ => None,
        }
    }
}

/// A client for the price list: HTTPS with the system's root certificates (and rustls
/// over ring, the provider the SDK's client uses), or plain HTTP. Without root
/// certificates (a minimal container) it still speaks plain HTTP; an `https://` read
/// then fails at once with [`FetchError::Client`] saying so.
pub struct PriceClient {
    /// `None` only if no TLS configuration could be made at all.
    client: Option<HttpClient>,
    /// Why HTTPS is unavailable, when it is.
    no_https: Option<String>,
}

impl std::fmt::Debug for PriceClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriceClient")
            .field("no_https", &self.no_https)
            .finish_non_exhaustive()
    }
}

/// Build the client.
pub fn client() -> PriceClient {
    let provider = || std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let connector = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider())
    {
        Ok(builder) => Ok((builder, None)),
        Err(e) => {
            // No roots: an empty store, so that plain HTTP still works.
            let why = format!("no root certificates found on this system ({e})");
            rustls::ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map(|c| {
                    let config = c
                        .with_root_certificates(rustls::RootCertStore::empty())
                        .with_no_client_auth();
                    let builder = hyper_rustls::HttpsConnectorBuilder::new();
                    (builder.with_tls_config(config), Some(why.clone()))
                })
                .map_err(|tls| format!("{why}; no TLS configuration either: {tls}"))
        }
    };
    match connector {
        Ok((builder, no_https)) => {
            let https = builder.https_or_http().enable_http1().build();
            PriceClient {
                client: Some(Client::builder(TokioExecutor::new()).build(https)),
                no_https,
            }
        }
        Err(why) => PriceClient {
            client: None,
            no_https: Some(why),
        },
    }
}

/// GET `url` and read its body, within [`TIMEOUT`]: the body on a success status,
/// else why not.
pub async fn get(client: &PriceClient, url: &str) -> Result<(u16, Bytes), FetchError> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e: hyper::http::uri::InvalidUri| FetchError::BadUrl(url.into(), e.to_string()))?;
    let client = match (uri.scheme_str(), &client.client, &client.no_https) {
        (Some("https"), _, Some(why)) | (_, None, Some(why)) => {
            return Err(FetchError::Client(why.clone()))
        }
        (_, Some(client), _) => client,
        (_, None, None) => return Err(FetchError::Client("no HTTP client".into())),
    };
    let exchange = async {
        let request = hyper::Request::get(uri)
            .header(
                hyper::header::USER_AGENT,
                concat!("tollgate/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::new())
            .map_err(|e| FetchError::BadUrl(url.into(), e.to_string()))?;
        let response = client
            .request(request)
            .await
            .map_err(|e| FetchError::Transport(transport_message(&e)))?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            // Dropped unread: the connection closes instead of draining the error page.
            drop(response);
            return Err(FetchError::Status(status));
        }
        let body = Limited::new(response.into_body(), MAX_OFFER_BYTES)
            .collect()
            .await
            .map_err(
                |e| match e.downcast_ref::<http_body_util::LengthLimitError>() {
                    Some(_) => FetchError::TooLarge,
                    None => FetchError::Transport(format!("the body broke off: {e}")),
                },
            )?;
        Ok((status, body.to_bytes()))
    };
    match tokio::time::timeout(TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout),
    }
}

/// A connection error with its causes (hyper-util's own message says only "client error").
fn transport_message(error: &hyper_util::client::legacy::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
