//! One blocking HTTP/1.1 exchange through hyper's client, for tests that talk to a
//! `tollgate serve`, a `tollgate simulate` or moto without the AWS SDK.
//!
//! Why hyper and not a request written by hand: the SDK compiles hyper 1 and hyper-util
//! anyway, and a hand-written exchange (six copies of it once) gets framing wrong in
//! ways a test then blames on the server (a chunked answer, a keep-alive that never
//! ends). Each call opens its own connection on its own current-thread runtime, so the
//! caller needs no runtime and may be inside none.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// How long one exchange may take before the test fails.
pub const EXCHANGE_LIMIT: Duration = Duration::from_secs(30);

/// An answer: status, headers and the whole body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Response headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, read to its end.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON, or a panic that shows it.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "a {} answer {:?} is not JSON: {e}",
                self.status,
                self.text()
            )
        })
    }
}

/// A request to send with [`exchange`].
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// Path and query, `/v1/scans`.
    pub path: &'a str,
    /// Extra headers (`Host` is always `addr`).
    pub headers: Vec<(&'a str, String)>,
    /// The body (empty: none).
    pub body: Vec<u8>,
}

impl<'a> Call<'a> {
    /// `method path` with no headers and no body.
    pub fn new(method: &'a str, path: &'a str) -> Call<'a> {
        Call {
            method,
            path,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// With a header.
    pub fn header(mut self, name: &'a str, value: impl Into<String>) -> Call<'a> {
        self.headers.push((name, value.into()));
        self
    }

    /// With a body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Call<'a> {
        self.body = body.into();
        self
    }
}

/// Why an exchange failed before an answer arrived.
#[derive(Debug)]
pub enum ExchangeError {
    /// No connection.
    Connect(std::io::Error),
    /// The request could not be built (a bad method or header).
    Request(String),
    /// The connection broke or the answer was not HTTP.
    Protocol(hyper::Error),
    /// No whole answer within [`EXCHANGE_LIMIT`].
    Timeout,
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::Connect(e) => write!(f, "connecting: {e}"),
            ExchangeError::Request(e) => write!(f, "building the request: {e}"),
            ExchangeError::Protocol(e) => write!(f, "exchanging: {e}"),
            ExchangeError::Timeout => write!(f, "no answer within {EXCHANGE_LIMIT:?}"),
        }
    }
}

impl std::error::Error for ExchangeError {}

/// Send `call` to `addr` (`HOST:PORT`) on a fresh connection; the whole answer.
pub fn exchange(addr: &str, call: Call<'_>) -> Result<Answer, ExchangeError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        // Called from an async test: a runtime cannot block inside another, so the
        // exchange gets a thread (and a runtime) of its own.
        return std::thread::scope(|s| {
            s.spawn(|| exchange_here(addr, call))
                .join()
                .expect("the exchange thread panicked")
        });
    }
    exchange_here(addr, call)
}

/// [`exchange`] on this thread, which no runtime drives.
fn exchange_here(addr: &str, call: Call<'_>) -> Result<Answer, ExchangeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ExchangeError::Connect)?;
    runtime.block_on(async {
        tokio::time::timeout(EXCHANGE_LIMIT, exchange_async(addr, call))
            .await
            .unwrap_or(Err(ExchangeError::Timeout))
    })
}

async fn exchange_async(addr: &str, call: Call<'_>) -> Result<Answer, ExchangeError> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(ExchangeError::Connect)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(ExchangeError::Protocol)?;
    // The connection is driven beside the request and ends when `sender` is dropped.
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(call.method)
        .uri(call.path)
        .header(hyper::header::HOST, addr);
    for (name, value) in &call.headers {
        request = request.header(*name, value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(call.body)))
        .map_err(|e| ExchangeError::Request(e.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(ExchangeError::Protocol)?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(ExchangeError::Protocol)?
        .to_bytes()
        .to_vec();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// [`exchange`], or a panic naming the request: for tests, where a failed exchange is a
/// failed test.
#[track_caller]
pub fn must(addr: &str, call: Call<'_>) -> Answer {
    let what = format!("{} {} at {addr}", call.method, call.path);
    exchange(addr, call).unwrap_or_else(|e| panic!("{what}: {e}"))
}
