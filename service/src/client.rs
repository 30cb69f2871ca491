//! `ServiceClient`: the `tollgate scans` commands' side of the API — one blocking
//! HTTP/1.1 request per call to the local service (loopback by default, so no TLS), with
//! the token from the state directory.
//!
//! Why hyper's client: the AWS SDK compiles hyper 1 and hyper-util anyway, and it frames
//! the exchange (lengths, chunked answers, the connection's end) so this file does not
//! have to. Each call runs on its own current-thread runtime: the commands are blocking.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

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
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(connect)?;
        let exchange = self.exchange(method, path, body.unwrap_or(""));
        let (status, body) = runtime
            .block_on(async { tokio::time::timeout(REQUEST_TIMEOUT, exchange).await })
            .unwrap_or_else(|_| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {}s", REQUEST_TIMEOUT.as_secs()),
                ))
            })
            .map_err(connect)?;
        if (200..300).contains(&status) {
            return Ok(body);
        }
        let answer = serde_json::from_slice::<serde_json::Value>(&body).ok();
        let message = answer
            .as_ref()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
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

    /// One exchange on a fresh connection: (status, body), or why no answer came.
    async fn exchange(
        &self,
        method: &str,
        path: &str,
        body: &str,
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let stream = tokio::net::TcpStream::connect(&self.host_port).await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        // Driven beside the request; it ends when `sender` is dropped.
        tokio::spawn(connection);
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, &self.host_port)
            .header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", self.token.as_str()),
            )
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_owned())))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(std::io::Error::other)?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(std::io::Error::other)?
            .to_bytes();
        Ok((status, body.to_vec()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-shot server on a free loopback port that answers `answer` to the first
    /// request; the client for it, and the request it received (on join).
    fn answering(answer: &'static [u8]) -> (ServiceClient, std::thread::JoinHandle<String>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                if reader.read_line(&mut head).unwrap() == 0 {
                    break;
                }
            }
            (&stream).write_all(answer).unwrap();
            head
        });
        (
            ServiceClient::new(&url, ApiToken::for_tests()).unwrap(),
            server,
        )
    }

    #[test]
    fn a_success_answers_its_body_and_the_request_carries_the_token() {
        let (client, server) = answering(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
        assert_eq!(
            client.request("GET", "/v1/scans", None).unwrap(),
            b"{\"a\":1}"
        );
        let head = server.join().unwrap().to_ascii_lowercase();
        assert!(head.starts_with("get /v1/scans http/1.1\r\n"), "{head}");
        let bearer = format!("authorization: bearer {}", ApiToken::for_tests().as_str());
        assert!(head.contains(&bearer.to_ascii_lowercase()), "{head}");
    }

    #[test]
    fn an_error_answer_is_an_api_error_with_its_error_text() {
        let (client, server) = answering(
            b"HTTP/1.1 409 Conflict\r\nA: b\r\nContent-Length: 13\r\n\r\n{\"error\":\"x\"}",
        );
        match client.request("DELETE", "/v1/scans/1", None) {
            Err(ClientError::Api { status, message }) => {
                assert_eq!((status, &*message), (409, "x"))
            }
            other => panic!("{other:?}"),
        }
        server.join().unwrap();
    }

    #[test]
    fn an_answer_that_is_not_http_is_a_connection_error() {
        let (client, server) = answering(b"garbage");
        let err = client.request("GET", "/v1/scans", None).unwrap_err();
        assert!(matches!(err, ClientError::Connect { .. }), "{err:?}");
        server.join().unwrap();
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
