//! The scripted transport: the inner HTTP client of a replayed request's gate.
//!
//! It stands where hyper stands in production: behind the [`GatedHttpClient`]'s
//! connector, so a request reaches it only after final admission, exactly when it would
//! have gone out. Each call is one physical attempt; it answers with the request's next
//! scripted response (the last repeats) as a real wire response of the awsJson 1.1
//! protocol, which CloudWatch Logs (seed 000's `DescribeLogStreams`) and KMS both speak:
//!
//! | outcome | wire answer |
//! |---|---|
//! | success | 200, `{"Keys":[],"Truncated":false}` |
//! | throttle | 400, `{"__type":"ThrottlingException"}`, `x-amz-retry-after` when given |
//! | transient | 503, `{"__type":"ServiceUnavailableException"}`, `x-amz-retry-after` when given |
//! | fatal | 400, `{"__type":"AccessDeniedException"}` |
//! | hold | never answers |
//!
//! The SDK parses these answers and the production taxonomy classifies them, so the retry
//! owner, the shared retry allowance, the penalty and the backoff see what they would see
//! from AWS. Every call is logged with its dispatch instant and, once answered, its
//! answer instant; an attempt still unanswered when its call ended was aborted. The SDK
//! plumbing is the shared [`FakeTransport`]; this file only scripts its answers.
//!
//! [`GatedHttpClient`]: tollgate_engine::aws::GatedHttpClient

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{HttpConnectorFuture, SharedHttpClient};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use tokio::time::Instant;
use tollgate_sim::transport::{response, FakeTransport};

use crate::script::{ScriptedOutcome, ScriptedResponse};

/// One physical attempt as the transport saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exchange {
    /// Simulated time of dispatch, from time 0.
    pub dispatched_at: Duration,
    /// What the script said to answer.
    pub outcome: ScriptedOutcome,
    /// Simulated time of the answer; `None` while in flight (or never: aborted).
    pub answered_at: Option<Duration>,
}

/// One request's scripted transport. Cheap to clone; clones share the log.
#[derive(Debug, Clone)]
pub(crate) struct ScriptedTransport {
    responses: Arc<[ScriptedResponse]>,
    origin: Instant,
    log: Arc<Mutex<Vec<Exchange>>>,
}

impl ScriptedTransport {
    /// A transport answering `responses` in order (the last repeats); instants are
    /// measured from `origin`, the replay's time 0.
    pub fn new(responses: &[ScriptedResponse], origin: Instant) -> Self {
        ScriptedTransport {
            responses: responses.into(),
            origin,
            log: Arc::default(),
        }
    }

    /// Every attempt so far, in dispatch order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The transport as a gate's inner HTTP client; clones share the log.
    pub fn http_client(&self) -> SharedHttpClient {
        let this = self.clone();
        FakeTransport::new(move |_request| this.answer()).http_client()
    }

    /// Log the attempt and answer it with the script's next response.
    fn answer(&self) -> HttpConnectorFuture {
        let now = tollgate_actors::clock::monotonic_now();
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let index = log.len();
        let response = self.responses[index.min(self.responses.len() - 1)];
        log.push(Exchange {
            dispatched_at: now.saturating_duration_since(self.origin),
            outcome: response.outcome,
            answered_at: None,
        });
        drop(log);
        if response.outcome == ScriptedOutcome::Hold {
            return HttpConnectorFuture::new(std::future::pending());
        }
        let this = self.clone();
        HttpConnectorFuture::new(async move {
            if !response.transport.is_zero() {
                tokio::time::sleep(response.transport).await;
            }
            let mut log = this.log.lock().unwrap_or_else(PoisonError::into_inner);
            log[index].answered_at = Some(tollgate_actors::clock::since(this.origin));
            drop(log);
            Ok(wire_response(&response))
        })
    }
}

/// The awsJson 1.1 answer for a scripted response (module docs).
fn wire_response(scripted: &ScriptedResponse) -> HttpResponse {
    let (status, body) = match scripted.outcome {
        ScriptedOutcome::Success => (200, r#"{"Keys":[],"Truncated":false}"#),
        ScriptedOutcome::Throttle => (
            400,
            r#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#,
        ),
        ScriptedOutcome::Transient => (
            503,
            r#"{"__type":"ServiceUnavailableException","message":"Service unavailable"}"#,
        ),
        ScriptedOutcome::Fatal => (
            400,
            r#"{"__type":"AccessDeniedException","message":"scripted access denied"}"#,
        ),
        ScriptedOutcome::Hold => unreachable!("a hold never answers"),
    };
    let mut http = response(status, "application/x-amz-json-1.1", body);
    http.headers_mut()
        .insert("x-amzn-requestid", "00000000-0000-0000-0000-000000000000");
    if let Some(after) = scripted.retry_after {
        http.headers_mut()
            .insert("x-amz-retry-after", after.as_millis().to_string());
    }
    http
}
