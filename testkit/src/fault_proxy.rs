//! A fault proxy on loopback in front of an emulator: every HTTP/1.1 request is forwarded
//! to the upstream, except those a predicate picks, which the proxy answers itself with a
//! 500 (`InternalError`, in S3's XML shape, which the SDK reads for every REST-XML
//! service): a listing that fails for real, over the wire, while everything else answers.
//!
//! moto closes every connection after one answer (`Connection: close`), so the proxy
//! does too: one request per client connection, one upstream connection per forwarded
//! request, the answer copied until the upstream closes. Plain threads: a test's traffic
//! is a few hundred requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The request line and headers of one request, as the predicate sees them.
#[derive(Debug, Clone)]
pub struct RequestHead {
    pub method: String,
    /// The request target: path and query (`/?x-id=ListBuckets`).
    pub target: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The first header `name` (lower case), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The service of the SigV4 credential scope (`.../us-east-1/s3/aws4_request`).
    pub fn signed_service(&self) -> Option<&str> {
        let auth = self.header("authorization")?;
        let scope = auth.split("Credential=").nth(1)?.split(',').next()?;
        scope.split('/').nth(3)
    }

    /// The path without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

type Predicate = dyn Fn(&RequestHead) -> bool + Send + Sync;

/// A running proxy; dropped, it stops accepting.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    failed: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl FaultProxy {
    /// Listen on a free loopback port, forwarding to `upstream` (`127.0.0.1:PORT`) every
    /// request `fail` does not pick.
    pub fn start(
        upstream: &str,
        fail: impl Fn(&RequestHead) -> bool + Send + Sync + 'static,
    ) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port for the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let failed = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let fail: Arc<Predicate> = Arc::new(fail);
        let upstream = upstream.to_owned();
        let (failed2, stop2) = (failed.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (fail, failed, upstream) = (fail.clone(), failed2.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &upstream, &*fail, &failed);
                });
            }
        });
        FaultProxy {
            url: format!("http://{addr}"),
            failed,
            stop,
            addr,
        }
    }

    /// Requests answered with the injected 500 so far.
    pub fn failed(&self) -> usize {
        self.failed.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

const INJECTED: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code><Message>injected by the test's fault proxy</Message><RequestId>fault-proxy</RequestId></Error>";

fn serve(
    conn: TcpStream,
    upstream: &str,
    fail: &Predicate,
    failed: &AtomicUsize,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut head_bytes = Vec::new();
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        head_bytes.extend_from_slice(line.as_bytes());
        let trimmed = line.trim_end_matches(['\r', '\n']).to_owned();
        if trimmed.is_empty() {
            break;
        }
        lines.push(trimmed);
    }
    let mut parts = lines.first().map(|l| l.split(' ')).into_iter().flatten();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .iter()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let head = RequestHead {
        method,
        target,
        headers,
    };
    let length: usize = head
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut client = conn;
    if fail(&head) {
        failed.fetch_add(1, Ordering::SeqCst);
        let answer = format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{INJECTED}",
            INJECTED.len()
        );
        client.write_all(answer.as_bytes())?;
        return client.shutdown(Shutdown::Both);
    }
    let mut up = TcpStream::connect(upstream)?;
    up.write_all(&head_bytes)?;
    up.write_all(&body)?;
    std::io::copy(&mut up, &mut client)?;
    client.shutdown(Shutdown::Both)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_service_is_read_from_the_credential_scope() {
        let head = RequestHead {
            method: "GET".into(),
            target: "/?x-id=ListBuckets".into(),
            headers: vec![(
                "authorization".into(),
                "AWS4-HMAC-SHA256 Credential=AKID/20261203/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00".into(),
            )],
        };
        assert_eq!(head.signed_service(), Some("s3"));
        assert_eq!(head.path(), "/");
    }
}
