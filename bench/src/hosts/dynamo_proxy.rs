//! A counting TCP proxy in front of the table's endpoint: every host's coordinator talks
//! to DynamoDB through it, and it counts the requests by `X-Amz-Target`
//! (`DynamoDB_20120810.UpdateItem`, ...). Counting on the wire, outside tollgate, is what
//! makes `dynamodb_requests` a measurement rather than tollgate's own account of itself.
//!
//! It forwards bytes unchanged in both directions and only reads the request stream:
//! each request's head up to the blank line, then `Content-Length` bytes of body, then
//! the next head (HTTP/1.1 keep-alive). Responses are copied without parsing.
//! Each request is also stamped with the wall-clock instant its head arrived (the
//! timeline `request_phases` splits into start-up and steady state), and the responses are
//! scanned for `ConditionalCheckFailedException`: a conditional write lost to another
//! host, counted with the instant it was answered.
//! Its `switch` set to false makes the table unreachable (new connections are closed at
//! once, open ones at their next request): the degraded-mode runs.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Requests by `X-Amz-Target`.
    pub by_target: BTreeMap<String, u64>,
    /// Every request: (Unix µs its head arrived, target).
    pub timeline: Vec<(u64, String)>,
    /// The Unix µs of every answer naming `ConditionalCheckFailedException`.
    pub conditional_failures: Vec<u64>,
}

type Counts = Arc<Mutex<Seen>>;

/// The error code of a conditional write lost to another host.
const CONDITIONAL_FAILED: &[u8] = b"ConditionalCheckFailedException";

/// The proxy; stops (with its connections) on drop.
pub struct CountingProxy {
    /// `http://127.0.0.1:PORT`: give this to the hosts as the endpoint.
    pub url: String,
    counts: Counts,
    reachable: Arc<AtomicBool>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl CountingProxy {
    /// Listen on a free loopback port and forward to `upstream` (`http://host:port`).
    pub fn start(upstream: &str) -> anyhow::Result<CountingProxy> {
        let authority = upstream
            .strip_prefix("http://")
            .with_context(|| {
                format!(
                    "--endpoint-url {upstream}: the bench counts DynamoDB requests through a \
                     loopback proxy, which speaks plain http only; give an emulator's \
                     http:// URL (dynalite)"
                )
            })?
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
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}", listener.local_addr()?);
        let counts = Counts::default();
        let reachable = Arc::new(AtomicBool::new(true));
        let (c, r) = (counts.clone(), reachable.clone());
        runtime.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !r.load(Ordering::Relaxed) {
                    drop(client);
                    continue;
                }
                tokio::spawn(serve(client, upstream, c.clone(), r.clone()));
            }
        });
        Ok(CountingProxy {
            url,
            counts,
            reachable,
            runtime: Some(runtime),
        })
    }

    /// Requests seen so far, by `X-Amz-Target` (`-` for a request without one).
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.counts.lock().expect("proxy counts").by_target.clone()
    }

    /// Everything seen so far: counts, the timeline, the lost conditional writes.
    pub fn seen(&self) -> Seen {
        self.counts.lock().expect("proxy counts").clone()
    }

    /// The switch: `true` while the table is reachable (`false`: every connection is
    /// closed, new ones at once, open ones at their next request).
    pub fn switch(&self) -> Arc<AtomicBool> {
        self.reachable.clone()
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

async fn serve(client: TcpStream, upstream: SocketAddr, counts: Counts, up: Arc<AtomicBool>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return; // the client sees the connection close: as if the table were unreachable
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_r, mut client_w) = client.into_split();
    let (mut server_r, mut server_w) = server.into_split();
    let failures = counts.clone();
    let answers = tokio::spawn(async move {
        let mut scan = NeedleCounter::new(CONDITIONAL_FAILED);
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            let n = match server_r.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let found = scan.feed(&chunk[..n]);
            if found > 0 {
                let at = tollgate_actors::clock::unix_now().as_micros();
                let mut seen = failures.lock().expect("proxy counts");
                seen.conditional_failures
                    .extend(std::iter::repeat_n(at, found));
            }
            if client_w.write_all(&chunk[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_w.shutdown().await;
    });
    let mut parser = RequestCounter::default();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match client_r.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !up.load(Ordering::Relaxed) {
            break;
        }
        let targets = parser.feed(&chunk[..n]);
        if !targets.is_empty() {
            let at = tollgate_actors::clock::unix_now().as_micros();
            let mut seen = counts.lock().expect("proxy counts");
            for target in targets {
                *seen.by_target.entry(target.clone()).or_default() += 1;
                seen.timeline.push((at, target));
            }
        }
        if server_w.write_all(&chunk[..n]).await.is_err() {
            break;
        }
    }
    let _ = server_w.shutdown().await;
    if !up.load(Ordering::Relaxed) {
        answers.abort();
    } else {
        let _ = answers.await;
    }
}

/// Finds request boundaries in an HTTP/1.1 request stream.
#[derive(Debug, Default)]
struct RequestCounter {
    /// Bytes of an incomplete head.
    head: Vec<u8>,
    /// Body bytes still to skip.
    body_left: usize,
}

impl RequestCounter {
    /// Feed the next bytes; the `X-Amz-Target` of every request whose head completed.
    fn feed(&mut self, mut data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        while !data.is_empty() {
            if self.body_left > 0 {
                let skip = self.body_left.min(data.len());
                self.body_left -= skip;
                data = &data[skip..];
                continue;
            }
            let before = self.head.len();
            self.head.extend_from_slice(data);
            // Search from a little before the new bytes: the blank line may straddle.
            let from = before.saturating_sub(3);
            match find(&self.head[from..], b"\r\n\r\n") {
                Some(at) => {
                    let end = from + at + 4;
                    let head = String::from_utf8_lossy(&self.head[..end]).into_owned();
                    out.push(header(&head, "x-amz-target").unwrap_or("-").to_owned());
                    self.body_left = header(&head, "content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    // What followed the head in this chunk: body, maybe a next request.
                    let consumed = end - before;
                    data = &data[consumed..];
                    self.head.clear();
                }
                None => data = &[],
            }
        }
        out
    }
}

/// Counts a needle's occurrences in a stream however it is cut.
#[derive(Debug)]
struct NeedleCounter {
    needle: &'static [u8],
    /// The last `needle.len() - 1` bytes seen (a match may straddle chunks).
    tail: Vec<u8>,
}

impl NeedleCounter {
    fn new(needle: &'static [u8]) -> Self {
        NeedleCounter {
            needle,
            tail: Vec::new(),
        }
    }

    fn feed(&mut self, data: &[u8]) -> usize {
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(data);
        let n = self.needle.len();
        let found = window.windows(n).filter(|w| *w == self.needle).count();
        let keep = window.len().min(n - 1);
        self.tail = window[window.len() - keep..].to_vec();
        found
    }
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

    fn request(target: &str, body: &str) -> String {
        format!(
            "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: {target}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    #[test]
    fn counts_keep_alive_requests_however_the_stream_is_cut() {
        let stream = [
            request("DynamoDB_20120810.GetItem", "{\"a\":1}"),
            request("DynamoDB_20120810.UpdateItem", "{\"b\":\"\\r\\n\\r\\n\"}"),
            request("DynamoDB_20120810.UpdateItem", ""),
        ]
        .concat();
        for cut in [1, 2, 3, 7, 64, stream.len()] {
            let mut counter = RequestCounter::default();
            let mut seen = Vec::new();
            for piece in stream.as_bytes().chunks(cut) {
                seen.extend(counter.feed(piece));
            }
            assert_eq!(
                seen,
                [
                    "DynamoDB_20120810.GetItem",
                    "DynamoDB_20120810.UpdateItem",
                    "DynamoDB_20120810.UpdateItem"
                ],
                "chunks of {cut}"
            );
        }
    }

    #[test]
    fn lost_conditional_writes_are_counted_however_the_answers_are_cut() {
        let answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 90\r\n\r\n\
                      {\"__type\":\"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException\"}";
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        let stream = [answer, ok, answer].concat();
        for cut in [1, 5, 30, stream.len()] {
            let mut scan = NeedleCounter::new(CONDITIONAL_FAILED);
            let found: usize = stream.as_bytes().chunks(cut).map(|c| scan.feed(c)).sum();
            assert_eq!(found, 2, "chunks of {cut}");
        }
    }

    #[test]
    fn a_request_without_a_target_counts_as_dash() {
        let mut counter = RequestCounter::default();
        let seen = counter.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(seen, ["-"]);
    }
}
