//! The fault proxy of `bench outage`: an HTTP/1.1 proxy on loopback in front of moto that
//! answers 500 (a DynamoDB-shaped `InternalServerError`) to every request whose
//! `X-Amz-Target` is the faulted target while the outage window is open, and forwards the
//! rest. It counts every request it receives by target, and records the arrival instant
//! and the process of each request of the faulted target.
//!
//! Why its own proxy and not `hosts::dynamo_proxy` (which copies bytes): answering in
//! the proxy's name needs request boundaries and an answer per request, and the figure is
//! the server-side count, so it must be taken where the requests arrive, outside
//! tollgate. moto closes every connection after one answer (`Connection: close`), so the
//! proxy does the same: one request per client connection, one upstream connection per
//! forwarded request, the answer copied until the upstream closes.
//!
//! One listener per tollgate process (each process gets its own endpoint URL), so each
//! arrival is attributed to the process that sent it without parsing signatures.

#![allow(clippy::disallowed_methods)] // the outage's window is real time

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The faulted target.
pub const DESCRIBE_TABLE: &str = "DynamoDB_20120810.DescribeTable";

/// When the outage is: `[start, start + duration)` after the window is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: Duration,
    pub duration: Duration,
    /// How long the proxy holds a request before answering it 500: a service that fails
    /// slowly, as an overloaded one does (zero: at once).
    pub error_latency: Duration,
}

impl Window {
    /// The end of the outage, from the arming instant.
    pub fn end(&self) -> Duration {
        self.start + self.duration
    }

    /// Whether a request arriving `at` after arming is inside the outage.
    pub fn contains(&self, at: Duration) -> bool {
        at >= self.start && at < self.end()
    }
}

/// What the proxy does with one request: the pure decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Forward,
    Fail,
}

/// Fail the faulted target inside the armed window; forward everything else.
pub fn verdict(target: &str, armed_at: Option<Duration>, window: Window) -> Verdict {
    match armed_at {
        Some(at) if target == DESCRIBE_TABLE && window.contains(at) => Verdict::Fail,
        _ => Verdict::Forward,
    }
}

/// One arrival of the faulted target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Which process's listener received it.
    pub process: usize,
    /// Since the window was armed.
    pub at: Duration,
    /// Answered 500 by the proxy.
    pub failed: bool,
}

#[derive(Debug, Default)]
struct Tally {
    by_target: BTreeMap<String, u64>,
    arrivals: Vec<Arrival>,
    /// When the window was armed (the outage's clock starts there).
    armed: Option<Instant>,
}

type Shared = Arc<Mutex<Tally>>;

/// The proxy; stops with its connections on drop.
pub struct FaultProxy {
    /// One endpoint URL per process, `http://127.0.0.1:PORT`.
    pub urls: Vec<String>,
    tally: Shared,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FaultProxy {
    /// Listen on `listeners` free loopback ports and forward to `upstream` (`http://host:port`).
    pub fn start(upstream: &str, listeners: usize, window: Window) -> anyhow::Result<FaultProxy> {
        let authority = upstream
            .strip_prefix("http://")
            .context("the fault proxy forwards plain http only")?
            .trim_end_matches('/');
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let upstream: SocketAddr = runtime
            .block_on(tokio::net::lookup_host(authority))
            .with_context(|| format!("resolving {authority}"))?
            .next()
            .with_context(|| format!("{authority} resolves to no address"))?;
        let tally = Shared::default();
        let mut urls = Vec::new();
        for process in 0..listeners {
            let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0"))?;
            urls.push(format!("http://{}", listener.local_addr()?));
            let tally = tally.clone();
            runtime.spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    tokio::spawn(serve(client, upstream, process, window, tally.clone()));
                }
            });
        }
        Ok(FaultProxy {
            urls,
            tally,
            runtime: Some(runtime),
        })
    }

    /// Start the outage's clock now (the window counts from here); later calls keep the
    /// first instant.
    pub fn arm(&self) {
        let mut tally = self.tally.lock().expect("proxy tally");
        tally.armed.get_or_insert_with(Instant::now);
    }

    /// The instant the window was armed.
    pub fn armed(&self) -> Option<Instant> {
        self.tally.lock().expect("proxy tally").armed
    }

    /// Requests of the faulted target received so far.
    pub fn describe_tables(&self) -> u64 {
        let tally = self.tally.lock().expect("proxy tally");
        tally.by_target.get(DESCRIBE_TABLE).copied().unwrap_or(0)
    }

    /// Requests received so far, by `X-Amz-Target` (`-` without one).
    pub fn by_target(&self) -> BTreeMap<String, u64> {
        self.tally.lock().expect("proxy tally").by_target.clone()
    }

    /// Every arrival of the faulted target, in order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.tally.lock().expect("proxy tally").arrivals.clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// One client connection: one request, answered by the proxy or by moto.
async fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    process: usize,
    window: Window,
    tally: Shared,
) {
    let _ = client.set_nodelay(true);
    let Some(request) = read_request(&mut client).await else {
        return;
    };
    let target = header(&request.head, "x-amz-target")
        .unwrap_or("-")
        .to_owned();
    let failed = {
        let mut t = tally.lock().expect("proxy tally");
        let at = t.armed.map(|armed| armed.elapsed());
        let failed = verdict(&target, at, window) == Verdict::Fail;
        *t.by_target.entry(target.clone()).or_default() += 1;
        if target == DESCRIBE_TABLE {
            if let Some(at) = at {
                t.arrivals.push(Arrival {
                    process,
                    at,
                    failed,
                });
            }
        }
        failed
    };
    if failed {
        tokio::time::sleep(window.error_latency).await;
        let _ = client.write_all(INTERNAL_ERROR.as_bytes()).await;
        let _ = client.shutdown().await;
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return; // the client sees the connection close, as from a dead server
    };
    let _ = server.set_nodelay(true);
    if server.write_all(&request.bytes).await.is_err() {
        return;
    }
    let _ = tokio::io::copy(&mut server, &mut client).await;
    let _ = client.shutdown().await;
}

/// The proxy's answer inside the outage: what DynamoDB sends for an internal error.
const INTERNAL_ERROR: &str = concat!(
    "HTTP/1.1 500 Internal Server Error\r\n",
    "Content-Type: application/x-amz-json-1.0\r\n",
    "x-amzn-RequestId: TOLLGATEBENCHOUTAGE\r\n",
    "Content-Length: 107\r\n",
    "Connection: close\r\n",
    "\r\n",
    r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error (bench)"}"#,
);

/// One request as read: its head (text) and every byte, head and body.
struct Request {
    head: String,
    bytes: Vec<u8>,
}

/// Read one request: the head up to the blank line, then `Content-Length` bytes of body.
async fn read_request(client: &mut TcpStream) -> Option<Request> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = find(&bytes, b"\r\n\r\n") {
            break at + 4;
        }
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let body: usize = header(&head, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + body {
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Some(Request { head, bytes })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A header's value (names are case-insensitive).
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Window = Window {
        start: Duration::from_secs(2),
        duration: Duration::from_secs(90),
        error_latency: Duration::ZERO,
    };

    #[test]
    fn only_describe_table_inside_the_armed_window_fails() {
        let s = Duration::from_secs;
        let cases = [
            (DESCRIBE_TABLE, None, Verdict::Forward, "not armed yet"),
            (
                DESCRIBE_TABLE,
                Some(s(1)),
                Verdict::Forward,
                "before the start",
            ),
            (DESCRIBE_TABLE, Some(s(2)), Verdict::Fail, "at the start"),
            (DESCRIBE_TABLE, Some(s(91)), Verdict::Fail, "inside"),
            (DESCRIBE_TABLE, Some(s(92)), Verdict::Forward, "at the end"),
            (
                "DynamoDB_20120810.ListTables",
                Some(s(10)),
                Verdict::Forward,
                "other target",
            ),
            ("-", Some(s(10)), Verdict::Forward, "no target"),
        ];
        for (target, at, expected, why) in cases {
            assert_eq!(verdict(target, at, WINDOW), expected, "{why}");
        }
    }

    #[test]
    fn the_error_body_matches_its_content_length() {
        let (head, body) = INTERNAL_ERROR.split_once("\r\n\r\n").unwrap();
        let length: usize = header(head, "content-length").unwrap().parse().unwrap();
        assert_eq!(body.len(), length);
        assert!(body.contains("InternalServerError"));
    }

    #[test]
    fn a_request_is_read_whole_before_it_is_judged() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let writer = tokio::spawn(async move {
                let mut s = TcpStream::connect(addr).await.unwrap();
                for piece in [
                    "POST / HTTP/1.1\r\nX-Amz-Tar",
                    "get: T\r\nContent-Length: 4\r\n\r\nab",
                    "cd",
                ] {
                    s.write_all(piece.as_bytes()).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
            let (mut conn, _) = listener.accept().await.unwrap();
            let request = read_request(&mut conn).await.unwrap();
            writer.await.unwrap();
            assert_eq!(header(&request.head, "x-amz-target"), Some("T"));
            assert!(request.bytes.ends_with(b"\r\n\r\nabcd"));
        });
    }
}
