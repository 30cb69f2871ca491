//! `ServiceClient`: the `tollgate scans` commands' side of the API — one blocking
//! HTTP/1.1 request per call over a plain TCP connection to the local service (loopback
//! by default, so no TLS and no HTTP client crate), with the token from the state
//! directory.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::token::ApiToken;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The default service URL (`tollgate serve`'s default `--listen`).
pub const DEFAULT_URL: &str = "http://127.0.0.1:7878";

/// A request failed before an HTTP answer arrived, or the answer was an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL is not `http://HOST:PORT`.
    #[error("{0:?} is not a service URL (expected http://HOST:PORT)")]
    BadUrl(String),
    /// No connection or a broken one.
    #[error("cannot reach the service at {url}: {source}; is `tollgate serve` running there?")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The guard rails refused a submission (HTTP 429, docs/service.md "Guard rails").
    #[error("the service refused the scan ({reason}): {message}")]
    Refused {
        /// `cooldown` or `busy`.
        reason: String,
        /// Seconds until a submission may be accepted.
        retry_after_seconds: u64,
        /// The account's latest scan, to read instead.
        latest_scan: String,
        /// Its `error` text.
        message: String,
    },
    /// The service answered with an error.
    #[error("the service answered {status}: {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// Its `error` text.
        message: String,
    },
}

/// A client of one service.
#[derive(Debug, Clone)]
pub struct ServiceClient {
    url: String,
    host_port: String,
    token: ApiToken,
}

impl ServiceClient {
    /// A client of the service at `url` (`http://HOST:PORT`).
    pub fn new(url: &str, token: ApiToken) -> Result<ServiceClient, ClientError> {
        let host_port = url
            .strip_prefix("http://")
            .map(|rest| rest.trim_end_matches('/'))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .ok_or_else(|| ClientError::BadUrl(url.to_string()))?;
        Ok(ServiceClient {
            url: url.trim_end_matches('/').to_string(),
            host_port: host_port.to_string(),
            token,
        })
    }

    /// `method path` with an optional JSON body; the answer's body on 2xx.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<Vec<u8>, ClientError> {
        let connect = |source| ClientError::Connect {
            url: self.url.clone(),
            source,
        };
        let mut stream = TcpStream::connect(&self.host_port).map_err(connect)?;
        stream
            .set_read_timeout(Some(REQUEST_TIMEOUT))
            .map_err(connect)?;
        let body = body.unwrap_or("");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.host_port,
            self.token.as_str(),
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(connect)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(connect)?;
        let (status, body) = split_response(&answer).ok_or_else(|| {
            connect(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not an HTTP answer",
            ))
        })?;
        if (200..300).contains(&status) {
            return Ok(body.to_vec());
        }
        let answer = serde_json::from_slice::<serde_json::Value>(body).ok();
        let message = answer
            .as_ref()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        if let (429, Some(answer)) = (status, &answer) {
            if let (Some(reason), Some(latest_scan)) =
                (answer["reason"].as_str(), answer["latest_scan"].as_str())
            {
                return Err(ClientError::Refused {
                    reason: reason.to_string(),
                    retry_after_seconds: answer["retry_after_seconds"].as_u64().unwrap_or(0),
                    latest_scan: latest_scan.to_string(),
                    message,
                });
            }
        }
        Err(ClientError::Api { status, message })
    }

    /// Like [`request`](Self::request), the answer parsed as JSON.
    pub fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<serde_json::Value, ClientError> {
        let bytes = self.request(method, path, body)?;
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Api {
            status: 200,
            message: format!("the answer is not JSON: {e}"),
        })
    }
}

/// (status, body) of an HTTP/1.1 answer whose body ends with the connection.
fn split_response(answer: &[u8]) -> Option<(u16, &[u8])> {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..end]).ok()?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, &answer[end + 4..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_split_into_status_and_body() {
        let (status, body) =
            split_response(b"HTTP/1.1 409 Conflict\r\nA: b\r\n\r\n{\"error\":\"x\"}").unwrap();
        assert_eq!((status, body), (409, &b"{\"error\":\"x\"}"[..]));
        assert!(split_response(b"garbage").is_none());
    }

    #[test]
    fn only_plain_http_urls_are_accepted() {
        let token = ApiToken::for_tests();
        assert!(ServiceClient::new("http://127.0.0.1:7878/", token.clone()).is_ok());
        for bad in [
            "https://x:1",
            "127.0.0.1:7878",
            "http://",
            "http://h:1/path",
        ] {
            assert!(ServiceClient::new(bad, token.clone()).is_err(), "{bad}");
        }
    }
}
