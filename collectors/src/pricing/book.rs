//! `PriceBook`: the offer files read so far, one per price list URL and region, shared by
//! every scan of a process (one per supervisor), so an organization scan reads each
//! region's offer once, not once per account.
//!
//! Concurrent readers of one region wait for the same read. A read is cancelled by
//! dropping its future (the scan's cancellation does): another reader then starts it
//! again, and nothing half-read is kept. A price list read is kept [`KEEP_READ`] (seed
//! 000 keeps its public price evidence 12 hours; prices change monthly at most), a failure
//! [`KEEP_FAILURE`], so that a price list that is down costs an organization scan one
//! timeout a minute, not one per account. Expiry uses tokio's clock (paused in tests).
//!
//! Each read emits one attempt event (service `AWS Public Pricing`, operation
//! `GetPublicPriceList`, no quota key: the price list is no account's quota), as seed 000's
//! telemetry does; a read dropped half-way emits one `cancelled`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio::time::Instant;
use tollgate_actors::clock::{monotonic_now, since};
use tollgate_engine::aws::telemetry::{
    emit, AttemptEvent, AttemptOutcome, Attribution, RetryOutcome, TelemetrySink,
};

use super::fetch::{self, FetchError, PriceClient};
use super::offer::{self, OfferError, RegionPrices};

/// How long a read offer file is used.
pub const KEEP_READ: Duration = Duration::from_secs(12 * 3600);

/// How long a failed read stands before the price list is asked again.
pub const KEEP_FAILURE: Duration = Duration::from_secs(60);

/// The telemetry service name of a price list read (seed 000's).
pub const SERVICE: &str = "AWS Public Pricing";

/// The telemetry operation of a price list read (seed 000's).
pub const OPERATION: &str = "GetPublicPriceList";

/// Why a region has no prices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    /// The offer file was not read.
    #[error("{url}: {error}")]
    Fetch {
        /// The offer file's URL.
        url: String,
        /// What went wrong.
        error: FetchError,
    },
    /// It was read but is not an offer file.
    #[error("{url}: {error}")]
    Offer {
        /// The offer file's URL.
        url: String,
        /// What is wrong with it.
        error: OfferError,
    },
}

impl PriceError {
    /// Whether the price list did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            PriceError::Fetch {
                error: FetchError::Timeout,
                ..
            }
        )
    }

    /// The HTTP status the price list answered, when it answered one.
    pub fn status(&self) -> Option<u16> {
        match self {
            PriceError::Fetch { error, .. } => error.status(),
            PriceError::Offer { .. } => None,
        }
    }
}

type Read = Result<Arc<RegionPrices>, PriceError>;

#[derive(Debug)]
struct Entry {
    at: Instant,
    read: Read,
}

/// The process's price list reads.
#[derive(Debug, Default)]
pub struct PriceBook {
    client: OnceLock<PriceClient>,
    entries: Mutex<HashMap<String, Arc<OnceCell<Entry>>>>,
}

impl PriceBook {
    /// An empty book.
    pub fn new() -> Self {
        PriceBook::default()
    }

    /// The prices of `url`'s offer file for `region`: the kept read, or a new one (the
    /// event attributed to `attribution`, started at `at_ms` Unix milliseconds on the
    /// admission clock, and recorded in `sink`).
    pub async fn region(
        &self,
        url: &str,
        region: &str,
        sink: &dyn TelemetrySink,
        attribution: &Attribution,
        at_ms: u64,
    ) -> Read {
        let cell = self.cell(url);
        let entry = cell
            .get_or_init(|| async {
                let read = self.read(url, region, sink, attribution, at_ms).await;
                Entry {
                    at: monotonic_now(),
                    read,
                }
            })
            .await;
        entry.read.clone()
    }

    /// The cell of `url`, a fresh one when the kept read has expired.
    fn cell(&self, url: &str) -> Arc<OnceCell<Entry>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let cell = entries.entry(url.to_string()).or_default();
        let expired = cell.get().is_some_and(|e| {
            let keep = match e.read {
                Ok(_) => KEEP_READ,
                Err(_) => KEEP_FAILURE,
            };
            since(e.at) >= keep
        });
        if expired {
            *cell = Arc::default();
        }
        cell.clone()
    }

    async fn read(
        &self,
        url: &str,
        region: &str,
        sink: &dyn TelemetrySink,
        attribution: &Attribution,
        at_ms: u64,
    ) -> Read {
        let mut event = Event::start(region, attribution, sink, at_ms);
        let client = self.client.get_or_init(fetch::client);
        let fetched = fetch::get(client, url).await;
        let read = match fetched {
            Ok((status, body)) => {
                event.status = Some(status);
                offer::parse(&body, region)
                    .map(Arc::new)
                    .map_err(|error| PriceError::Offer {
                        url: url.into(),
                        error,
                    })
            }
            Err(error) => {
                event.status = error.status();
                Err(PriceError::Fetch {
                    url: url.into(),
                    error,
                })
            }
        };
        event.finish(match &read {
            Ok(_) => AttemptOutcome::Success,
            Err(e) if e.is_timeout() => AttemptOutcome::DeadlineExceeded,
            Err(_) => AttemptOutcome::Fatal,
        });
        read
    }
}

/// One read's telemetry: emitted when the read ends, or as `cancelled` when it is
/// dropped before.
struct Event<'a> {
    region: String,
    attribution: Attribution,
    sink: &'a dyn TelemetrySink,
    started: Instant,
    at_ms: u64,
    status: Option<u16>,
    emitted: bool,
}

impl<'a> Event<'a> {
    fn start(
        region: &str,
        attribution: &Attribution,
        sink: &'a dyn TelemetrySink,
        at_ms: u64,
    ) -> Self {
        Event {
            region: region.to_string(),
            attribution: attribution.clone(),
            sink,
            started: monotonic_now(),
            at_ms,
            status: None,
            emitted: false,
        }
    }

    fn finish(&mut self, outcome: AttemptOutcome) {
        if std::mem::replace(&mut self.emitted, true) {
            return;
        }
        let retry_outcome = match outcome {
            AttemptOutcome::Success => RetryOutcome::Done,
            AttemptOutcome::Cancelled => RetryOutcome::Cancelled,
            _ => RetryOutcome::NotRetryable,
        };
        let event = AttemptEvent {
            service: SERVICE.to_string(),
            operation: OPERATION.to_string(),
            quota: None,
            attempt: 1,
            retry_count: 0,
            started_at_ms: self.at_ms,
            preparation_count: 1,
            queue_duration_ms: 0,
            transport_duration_ms: since(self.started).as_millis() as u64,
            dispatched: true,
            status_code: self.status,
            outcome,
            retry_outcome,
            error_code: None,
            attribution: self.attribution.clone(),
            cleanup_outcome: None,
            datapoints: None,
            unfiltered_quota: None,
            region: Some(self.region.clone()),
        };
        emit(self.sink, &event);
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        self.finish(AttemptOutcome::Cancelled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_engine::aws::MemoryTelemetry;

    /// A port nothing listens on: every read fails at once (connection refused).
    fn closed_port() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/offers/v1.0/aws/AmazonVPC/current/us-east-1/index.json")
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_read_stands_for_a_minute_then_the_price_list_is_asked_again() {
        let book = PriceBook::new();
        let telemetry = MemoryTelemetry::new();
        let who = Attribution::new("scan-1".into(), "ec2", &[]);
        let url = closed_port();
        let first = book.region(&url, "us-east-1", &telemetry, &who, 0).await;
        let error = first.unwrap_err();
        // Refused at once on loopback (or, were the refusal slow, the 5 s timeout).
        assert!(
            matches!(
                error,
                PriceError::Fetch {
                    error: FetchError::Transport(_) | FetchError::Timeout,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains(&url), "{error}");
        tokio::time::advance(KEEP_FAILURE - Duration::from_secs(1)).await;
        let kept = book.region(&url, "us-east-1", &telemetry, &who, 0).await;
        assert_eq!(kept.unwrap_err(), error, "the same failure, not a new read");
        assert_eq!(telemetry.events().len(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        let _ = book.region(&url, "us-east-1", &telemetry, &who, 0).await;
        let events = telemetry.events();
        assert_eq!(events.len(), 2, "read again once the failure expired");
        assert!(events.iter().all(|e| e.service == SERVICE
            && e.operation == OPERATION
            && e.quota.is_none()
            && e.region.as_deref() == Some("us-east-1")
            && matches!(
                e.outcome,
                AttemptOutcome::Fatal | AttemptOutcome::DeadlineExceeded
            )));
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_dropped_half_way_is_recorded_cancelled_and_not_kept() {
        // A listener that accepts and never answers: the read waits until dropped.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/index.json", listener.local_addr().unwrap());
        let book = PriceBook::new();
        let telemetry = MemoryTelemetry::new();
        let who = Attribution::new("scan-1".into(), "ec2", &[]);
        let read = book.region(&url, "eu-west-1", &telemetry, &who, 0);
        let dropped = tokio::time::timeout(Duration::from_secs(1), read).await;
        assert!(dropped.is_err(), "still waiting at 1 s");
        let events = telemetry.events();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].outcome, AttemptOutcome::Cancelled);
        // Nothing was kept: the next read asks again (and times out at 5 s).
        let next = book.region(&url, "eu-west-1", &telemetry, &who, 0).await;
        assert!(next.unwrap_err().is_timeout());
        drop(listener);
    }
}
