//! The replay script: its JSON form, its defaults, and validation into typed values.
//!
//! Parsing happens in two stages (ripgrep's habit): serde reads the raw document with
//! `deny_unknown_fields`, one request and one response at a time so that every error
//! names where it is (`requests[3] (id "r4").responses[1].outcome`); then validation turns
//! the raw values into a [`Script`] of typed values (durations, quota keys, a
//! [`PolicyTable`], [`RetrySettings`]) that the runner uses without further checks.
//!
//! ```text
//! {"start_at": "2026-01-05T00:00:00Z",
//!  "policies": {"logs:DescribeLogStreams": {"ratePerSecond": 4, "burst": 2,
//!                                           "concurrency": 10, "retryCapacity": 2}},
//!  "retry": {"max_attempts": 6, "initial_delay_ms": 500, "jitter": "full"},
//!  "deadline_ms": 300000,
//!  "requests": [{"id": "r1", "at_ms": 0, "service": "logs",
//!                "operation": "DescribeLogStreams", "account": "123456789012",
//!                "region": "us-east-1", "cost": 1, "process": 1,
//!                "responses": [{"outcome": "throttle", "transport_ms": 0,
//!                               "retry_after_ms": null}],
//!                "cancel_at_ms": null}]}
//! ```
//!
//! `start_at` is the wall-clock instant (RFC 3339) of simulated time 0, so schedule
//! boundaries and allowance resets fall where they would in real time.
//!
//! Defaults for omitted fields: `start_at` `2026-01-05T00:00:00Z` (a Monday);
//! `policies` `{}`; `retry.max_attempts` 6,
//! `retry.initial_delay_ms` tollgate's own bases (1000 ms after a throttle, 200 ms after a
//! transient failure; a given value sets both), `retry.jitter` `"full"`; `deadline_ms`
//! 300000 (the scan deadline of `tollgate discover`, counted from time 0); per request
//! `at_ms` 0, `account` `123456789012`, `region` `us-east-1`, `cost` 1, `process` 1,
//! `responses` `[{"outcome": "success"}]`, `cancel_at_ms` none, `metric_data` none (a
//! `cloudwatch` `GetMetricData` request's queries and window, `crate::metric_data`); per response
//! `transport_ms` 0 and `retry_after_ms` none. `id`, `service` and `operation` are
//! required, and `responses[].outcome`.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tollgate_quota::key::AccountId;
use tollgate_quota::{
    AccountScope, MetricDataRequest, Partition, PolicyTable, QuotaKey, WallClock,
};

use crate::serde_message::message;
use crate::ScriptError;
use tollgate_engine::aws::{Jitter, RetrySettings};

/// Default scan deadline, counted from time 0: `tollgate discover`'s default `--timeout`.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);
/// The wall-clock instant of simulated time 0 when the script names none (a Monday).
pub const DEFAULT_START_AT: &str = "2026-01-05T00:00:00Z";
/// Default account of a request.
pub const DEFAULT_ACCOUNT: &str = "123456789012";
/// Default region of a request.
pub const DEFAULT_REGION: &str = "us-east-1";
/// Latest instant a script may name (30 days): far beyond any scan, short of overflow.
pub const MAX_INSTANT: Duration = Duration::from_secs(30 * 24 * 3600);

/// What the scripted transport answers for one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedOutcome {
    /// 200 with a result.
    Success,
    /// 400 `ThrottlingException`.
    Throttle,
    /// 503 `ServiceUnavailableException`.
    Transient,
    /// 400 `AccessDeniedException`.
    Fatal,
    /// Never answers: the request stays in flight until cancelled or the deadline.
    Hold,
}

impl ScriptedOutcome {
    /// The script's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ScriptedOutcome::Success => "success",
            ScriptedOutcome::Throttle => "throttle",
            ScriptedOutcome::Transient => "transient",
            ScriptedOutcome::Fatal => "fatal",
            ScriptedOutcome::Hold => "hold",
        }
    }
}

/// One scripted answer, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptedResponse {
    /// What the service says.
    pub outcome: ScriptedOutcome,
    /// Time from dispatch to the answer.
    pub transport: Duration,
    /// The server's `x-amz-retry-after` (throttle and transient answers only).
    pub retry_after: Option<Duration>,
}

/// One logical request, validated.
#[derive(Debug, Clone)]
pub struct ScriptedRequest {
    /// The script's id (unique).
    pub id: String,
    /// When the call starts (simulated time from 0).
    pub at: Duration,
    /// Service, as the gate is called with it (`logs`).
    pub service: String,
    /// Operation (`DescribeLogStreams`).
    pub operation: String,
    /// The account whose quotas it uses.
    pub account: AccountId,
    /// Region the request goes to.
    pub region: String,
    /// The canonical quota key the gate will use.
    pub key: QuotaKey,
    /// The simulated process that makes it.
    pub process: u32,
    /// Answers per physical attempt; the last repeats.
    pub responses: Vec<ScriptedResponse>,
    /// When the call is cancelled, if it is.
    pub cancel_at: Option<Duration>,
    /// A GetMetricData request's queries and window: each attempt then charges its
    /// datapoint budget too ([`crate::metric_data`]).
    pub metric_data: Option<MetricDataRequest>,
}

/// A validated replay script.
#[derive(Debug, Clone)]
pub struct Script {
    /// The wall-clock instant of simulated time 0.
    pub start_at: WallClock,
    /// Policies: the base table with the script's `policies` over it.
    pub policies: PolicyTable,
    /// The retry owner's settings.
    pub retry: RetrySettings,
    /// The scan deadline, from time 0.
    pub deadline: Duration,
    /// The requests, in script order.
    pub requests: Vec<ScriptedRequest>,
}

// ---------------------------------------------------------------- raw (serde) forms

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript<'a> {
    #[serde(default)]
    start_at: Option<String>,
    #[serde(borrow, default)]
    policies: Option<&'a RawValue>,
    #[serde(borrow, default)]
    retry: Option<&'a RawValue>,
    #[serde(default)]
    deadline_ms: Option<u64>,
    #[serde(borrow)]
    requests: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    max_attempts: Option<u32>,
    initial_delay_ms: Option<u64>,
    jitter: Option<RawJitter>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum RawJitter {
    Full,
    None,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest<'a> {
    id: String,
    #[serde(default)]
    at_ms: u64,
    service: String,
    operation: String,
    account: Option<String>,
    region: Option<String>,
    cost: Option<u32>,
    process: Option<u32>,
    #[serde(borrow)]
    responses: Option<Vec<&'a RawValue>>,
    cancel_at_ms: Option<u64>,
    #[serde(borrow)]
    metric_data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    outcome: ScriptedOutcome,
    #[serde(default)]
    transport_ms: u64,
    retry_after_ms: Option<u64>,
}

/// Only the id, to name a request in errors about its other fields.
#[derive(Deserialize)]
struct IdOnly {
    id: Option<serde_json::Value>,
}

fn located(location: impl Into<String>, problem: impl Into<String>) -> ScriptError {
    ScriptError {
        location: Some(location.into()),
        problem: problem.into(),
    }
}

fn millis(ms: u64, location: &str, field: &str) -> Result<Duration, ScriptError> {
    let d = Duration::from_millis(ms);
    if d > MAX_INSTANT {
        let at = if location.is_empty() {
            field.to_owned()
        } else {
            format!("{location}.{field}")
        };
        return Err(located(
            at,
            format!(
                "{ms} ms is beyond the longest replay ({} ms, 30 days)",
                MAX_INSTANT.as_millis()
            ),
        ));
    }
    Ok(d)
}

impl Script {
    /// Parse and validate `text`. The script's `policies` are layered over `base` (the
    /// defaults, or the defaults with `TOLLGATE_QUOTA_OVERRIDES`): script fields win,
    /// unspecified ones inherit under the overrides' rules.
    pub fn parse(text: &str, base: &PolicyTable) -> Result<Script, ScriptError> {
        let raw: RawScript<'_> = serde_json::from_str(text).map_err(|e| ScriptError {
            location: None,
            problem: if e.is_syntax() || e.is_eof() {
                format!(
                    "not valid JSON ({}); fix the syntax",
                    e.to_string().replace(" at line", ", at line")
                )
            } else {
                format!(
                    "{}; the top-level fields are start_at, policies, retry, deadline_ms and requests",
                    e
                )
            },
        })?;
        let policies = match raw.policies {
            None => base.clone(),
            Some(json) => base
                .clone()
                .apply_overrides(json.get(), "policies")
                .map_err(|e| ScriptError {
                    location: None,
                    problem: e.to_string(),
                })?,
        };
        let start_at = match raw.start_at.as_deref() {
            None => WallClock::parse_rfc3339(DEFAULT_START_AT).expect("the default is valid"),
            Some(text) => WallClock::parse_rfc3339(text).map_err(|_| {
                located(
                    "start_at",
                    "must be an RFC 3339 instant from 1970 on, such as 2026-01-05T00:00:00Z",
                )
            })?,
        };
        let retry = parse_retry(raw.retry)?;
        let deadline = match raw.deadline_ms {
            None => DEFAULT_DEADLINE,
            Some(0) => return Err(located("deadline_ms", "must be at least 1 ms")),
            Some(ms) => millis(ms, "", "deadline_ms")?,
        };
        if raw.requests.is_empty() {
            return Err(located(
                "requests",
                "is empty; list at least one request to replay",
            ));
        }
        let mut ids = HashSet::new();
        let mut requests = Vec::with_capacity(raw.requests.len());
        for (index, raw) in raw.requests.iter().enumerate() {
            let request = parse_request(index, raw)?;
            if !ids.insert(request.id.clone()) {
                return Err(located(
                    format!("requests[{index}].id"),
                    format!(
                        "{:?} is used by an earlier request; ids must be unique",
                        request.id
                    ),
                ));
            }
            requests.push(request);
        }
        Ok(Script {
            start_at,
            policies,
            retry,
            deadline,
            requests,
        })
    }
}

fn parse_retry(raw: Option<&RawValue>) -> Result<RetrySettings, ScriptError> {
    let raw: RawRetry = match raw {
        None => RawRetry::default(),
        Some(json) => serde_json::from_str(json.get()).map_err(|e| {
            located(
                "retry",
                format!(
                    "{}; the fields are max_attempts, initial_delay_ms and jitter",
                    message(&e)
                ),
            )
        })?,
    };
    let mut retry = RetrySettings::default();
    if let Some(n) = raw.max_attempts {
        retry.max_attempts = NonZeroU32::new(n).ok_or_else(|| {
            located(
                "retry.max_attempts",
                "must be at least 1 (the first attempt counts)",
            )
        })?;
    }
    if let Some(ms) = raw.initial_delay_ms {
        let base = millis(ms, "retry", "initial_delay_ms")?;
        retry.throttle_base = base;
        retry.transient_base = base;
    }
    retry.jitter = match raw.jitter {
        None | Some(RawJitter::Full) => Jitter::Full,
        Some(RawJitter::None) => Jitter::None,
    };
    Ok(retry)
}

fn parse_request(index: usize, raw: &RawValue) -> Result<ScriptedRequest, ScriptError> {
    let here = request_location(index, raw);
    let r: RawRequest<'_> = serde_json::from_str(raw.get()).map_err(|e| {
        located(
            here.clone(),
            format!(
                "{}; a request has id, at_ms, service, operation, account, region, cost, process, responses, cancel_at_ms and metric_data",
                message(&e)
            ),
        )
    })?;
    if r.id.trim().is_empty() {
        return Err(located(format!("{here}.id"), "must not be empty"));
    }
    let at = millis(r.at_ms, &here, "at_ms")?;
    let cancel_at = parse_cancel_at(&here, &r, at)?;
    check_cost(&here, r.cost)?;
    let account_text = r.account.as_deref().unwrap_or(DEFAULT_ACCOUNT);
    let account = AccountId::new(account_text)
        .map_err(|e| located(format!("{here}.account"), e.to_string()))?;
    let region = r.region.unwrap_or_else(|| DEFAULT_REGION.to_owned());
    let key = request_key(&here, &account, &region, &r.service, &r.operation)?;
    let metric_data = match r.metric_data {
        None => None,
        Some(raw) => Some(crate::metric_data::parse(&here, &key, raw)?),
    };
    let responses = parse_responses(&here, r.responses)?;
    Ok(ScriptedRequest {
        id: r.id,
        at,
        service: r.service,
        operation: r.operation,
        account,
        region,
        key,
        process: r.process.unwrap_or(1),
        responses,
        cancel_at,
        metric_data,
    })
}

/// How errors name the request: its position, and its id when one can be read.
fn request_location(index: usize, raw: &RawValue) -> String {
    let id = serde_json::from_str::<IdOnly>(raw.get())
        .ok()
        .and_then(|i| i.id)
        .and_then(|v| v.as_str().map(str::to_owned));
    match &id {
        Some(id) => format!("requests[{index}] (id {id:?})"),
        None => format!("requests[{index}]"),
    }
}

/// `cancel_at_ms`, at or after the request's start `at`.
fn parse_cancel_at(
    here: &str,
    r: &RawRequest<'_>,
    at: Duration,
) -> Result<Option<Duration>, ScriptError> {
    let Some(ms) = r.cancel_at_ms else {
        return Ok(None);
    };
    let c = millis(ms, here, "cancel_at_ms")?;
    if c < at {
        return Err(located(
            format!("{here}.cancel_at_ms"),
            format!(
                "{ms} is before at_ms {}; a request is cancelled at or after its start",
                r.at_ms
            ),
        ));
    }
    Ok(Some(c))
}

/// `cost`: only 1 (or none) is supported.
fn check_cost(here: &str, cost: Option<u32>) -> Result<(), ScriptError> {
    match cost {
        None | Some(1) => Ok(()),
        Some(other) => Err(located(
            format!("{here}.cost"),
            format!(
                "{other} is not supported: the gated call path charges 1 token per attempt (datapoint costs arrive with CloudWatch collectors); use 1"
            ),
        )),
    }
}

/// The quota key the gate will use, a refusal naming the field at fault.
fn request_key(
    here: &str,
    account: &AccountId,
    region: &str,
    service: &str,
    operation: &str,
) -> Result<QuotaKey, ScriptError> {
    QuotaKey::for_operation(
        &Partition::aws(),
        &AccountScope::Account(account.clone()),
        Some(region),
        service,
        operation,
    )
    .map_err(|e| {
        let field = match e {
            tollgate_quota::key::KeyError::Region(_) => "region",
            tollgate_quota::key::KeyError::Group(_) => "operation",
            _ => "service",
        };
        located(format!("{here}.{field}"), e.to_string())
    })
}

/// `responses`: none is one immediate success; an empty list is refused.
fn parse_responses(
    here: &str,
    responses: Option<Vec<&RawValue>>,
) -> Result<Vec<ScriptedResponse>, ScriptError> {
    match responses {
        None => Ok(vec![ScriptedResponse {
            outcome: ScriptedOutcome::Success,
            transport: Duration::ZERO,
            retry_after: None,
        }]),
        Some(list) if list.is_empty() => Err(located(
            format!("{here}.responses"),
            "is empty; give at least one response (the last one repeats), or omit it for one success",
        )),
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, raw)| parse_response(&format!("{here}.responses[{i}]"), raw))
            .collect(),
    }
}

fn parse_response(here: &str, raw: &RawValue) -> Result<ScriptedResponse, ScriptError> {
    let r: RawResponse = serde_json::from_str(raw.get()).map_err(|e| {
        located(
            here,
            format!(
                "{}; a response has outcome (success, throttle, transient, fatal or hold), transport_ms and retry_after_ms",
                message(&e)
            ),
        )
    })?;
    let transport = millis(r.transport_ms, here, "transport_ms")?;
    if r.outcome == ScriptedOutcome::Hold && r.transport_ms > 0 {
        return Err(located(
            format!("{here}.transport_ms"),
            "a hold never answers, so transport_ms does not apply; remove it",
        ));
    }
    let retry_after = match r.retry_after_ms {
        None => None,
        Some(ms) => {
            if !matches!(
                r.outcome,
                ScriptedOutcome::Throttle | ScriptedOutcome::Transient
            ) {
                return Err(located(
                    format!("{here}.retry_after_ms"),
                    format!(
                        "only throttle and transient answers carry a retry-after, not {}; remove it",
                        r.outcome.as_str()
                    ),
                ));
            }
            Some(millis(ms, here, "retry_after_ms")?)
        }
    };
    Ok(ScriptedResponse {
        outcome: r.outcome,
        transport,
        retry_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Script, ScriptError> {
        Script::parse(text, &PolicyTable::defaults())
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn defaults_fill_omitted_fields() {
        let s =
            parse(r#"{"requests":[{"id":"a","service":"logs","operation":"DescribeLogStreams"}]}"#)
                .unwrap();
        assert_eq!(s.deadline, DEFAULT_DEADLINE);
        assert_eq!(s.retry, RetrySettings::default());
        let r = &s.requests[0];
        assert_eq!((r.at, r.process, r.cancel_at), (Duration::ZERO, 1, None));
        assert_eq!(
            r.key.to_string(),
            "aws/123456789012/us-east-1/logs:DescribeLogStreams"
        );
        assert_eq!(r.responses.len(), 1);
        assert_eq!(r.responses[0].outcome, ScriptedOutcome::Success);
        // logs:DescribeLogStreams from the default table: 25/s burst 1.
        let p = s.policies.policy_for_key(&r.key);
        assert_eq!((p.rate_per_second(), p.burst()), (25.0, 1.0));
    }

    #[test]
    fn script_policies_and_retry_apply() {
        let s = parse(
            r#"{"policies":{"logs:DescribeLogStreams":{"ratePerSecond":4,"burst":2,"retryCapacity":2}},
                "retry":{"max_attempts":3,"initial_delay_ms":500,"jitter":"none"},
                "deadline_ms":60000,
                "requests":[{"id":"a","service":"logs","operation":"DescribeLogStreams",
                  "responses":[{"outcome":"throttle","retry_after_ms":700},{"outcome":"success","transport_ms":40}],
                  "at_ms":10,"cancel_at_ms":10,"process":2,"cost":1}]}"#,
        )
        .unwrap();
        let p = s.policies.policy_for_key(&s.requests[0].key);
        assert_eq!(
            (
                p.rate_per_second(),
                p.burst(),
                p.concurrency(),
                p.retry_capacity()
            ),
            (4.0, 2.0, 10, 2)
        );
        assert_eq!(s.retry.max_attempts.get(), 3);
        assert_eq!(s.retry.throttle_base, Duration::from_millis(500));
        assert_eq!(s.retry.transient_base, Duration::from_millis(500));
        assert_eq!(s.retry.jitter, Jitter::None);
        assert_eq!(s.deadline, Duration::from_secs(60));
        let r = &s.requests[0];
        assert_eq!(r.responses[0].retry_after, Some(Duration::from_millis(700)));
        assert_eq!(r.responses[1].transport, Duration::from_millis(40));
        assert_eq!(r.cancel_at, Some(Duration::from_millis(10)));
    }

    #[test]
    fn errors_name_the_request_and_field() {
        let base = r#""service":"logs","operation":"DescribeLogStreams""#;
        let cases = [
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{base},"responses":[{{"outcome":"throtle"}}]}}]}}"#
                ),
                r#"requests[0] (id "a").responses[0]: unknown variant `throtle`"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{base}}},{{"id":"b",{base},"at_ms":"soon"}}]}}"#
                ),
                r#"requests[1] (id "b"): invalid type: string "soon""#,
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base},"colour":1}}]}}"#),
                r#"requests[0] (id "a"): unknown field `colour`"#,
            ),
            (
                r#"{"requests":[{"id":"a","operation":"X"}]}"#.to_owned(),
                r#"requests[0] (id "a"): missing field `service`"#,
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base}}},{{"id":"a",{base}}}]}}"#),
                "requests[1].id: \"a\" is used by an earlier request",
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base},"cost":2}}]}}"#),
                r#"requests[0] (id "a").cost: 2 is not supported"#,
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base},"account":"42"}}]}}"#),
                r#"requests[0] (id "a").account: account `42` is invalid"#,
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base},"region":"US East"}}]}}"#),
                r#"requests[0] (id "a").region"#,
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base},"at_ms":50,"cancel_at_ms":10}}]}}"#),
                r#"requests[0] (id "a").cancel_at_ms: 10 is before at_ms 50"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{base},"responses":[{{"outcome":"success","retry_after_ms":5}}]}}]}}"#
                ),
                r#"requests[0] (id "a").responses[0].retry_after_ms"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{base},"responses":[{{"outcome":"hold","transport_ms":5}}]}}]}}"#
                ),
                r#"requests[0] (id "a").responses[0].transport_ms"#,
            ),
            (
                format!(r#"{{"requests":[{{"id":"a",{base},"responses":[]}}]}}"#),
                r#"requests[0] (id "a").responses: is empty"#,
            ),
            (
                format!(r#"{{"deadline_ms":999999999999,"requests":[{{"id":"a",{base}}}]}}"#),
                "deadline_ms: 999999999999 ms is beyond the longest replay",
            ),
            (r#"{"requests":[]}"#.to_owned(), "requests: is empty"),
            (
                format!(r#"{{"retry":{{"max_attempts":0}},"requests":[{{"id":"a",{base}}}]}}"#),
                "retry.max_attempts: must be at least 1",
            ),
            (
                format!(r#"{{"retry":{{"jitter":"some"}},"requests":[{{"id":"a",{base}}}]}}"#),
                "retry: unknown variant `some`",
            ),
            (
                format!(
                    r#"{{"policies":{{"logs:DescribeLogStreams":{{"ratePerSec":4}}}},"requests":[{{"id":"a",{base}}}]}}"#
                ),
                "policies: logs:DescribeLogStreams has unknown field `ratePerSec`",
            ),
            (
                format!(r#"{{"request":[{{"id":"a",{base}}}]}}"#),
                "unknown field `request`",
            ),
            (r#"{"requests":[{"id":"a""#.to_owned(), "not valid JSON"),
        ];
        for (text, want) in cases {
            let got = error(&text);
            assert!(got.contains(want), "{text}\n  got:  {got}\n  want: {want}");
        }
    }

    #[test]
    fn a_get_metric_data_request_carries_its_queries_and_window() {
        let s = parse(
            r#"{"requests":[{"id":"m","service":"cloudwatch","operation":"GetMetricData",
                "metric_data":{"start_time":"2025-12-22T00:00:00Z","end_time":"2026-01-05T00:00:00Z",
                  "max_datapoints":50000,
                  "queries":[{"period_s":86400},{"period_s":300,"return_data":false},{"expression":"SUM(m1)"}]}}]}"#,
        )
        .unwrap();
        let m = s.requests[0].metric_data.as_ref().unwrap();
        let ms = |t| WallClock::parse_rfc3339(t).unwrap().unix_millis();
        assert_eq!(m.start_time_ms, Some(ms("2025-12-22T00:00:00Z")));
        assert_eq!(m.end_time_ms, Some(ms("2026-01-05T00:00:00Z")));
        assert_eq!(m.max_datapoints, Some(50_000));
        assert_eq!(
            m.queries,
            [
                tollgate_quota::MetricQuery::metric_stat(86_400),
                tollgate_quota::MetricQuery::MetricStat {
                    period_s: Some(300),
                    return_data: false
                },
                tollgate_quota::MetricQuery::Expression,
            ]
        );
    }

    #[test]
    fn metric_data_errors_name_the_field() {
        let gmd = r#""service":"cloudwatch","operation":"GetMetricData""#;
        let window = r#""start_time":"2026-01-04T00:00:00Z","end_time":"2026-01-05T00:00:00Z""#;
        let cases = [
            (
                format!(
                    r#"{{"requests":[{{"id":"a","service":"logs","operation":"DescribeLogStreams","metric_data":{{{window},"queries":[{{"period_s":60}}]}}}}]}}"#
                ),
                r#"requests[0] (id "a").metric_data: only a cloudwatch GetMetricData request charges datapoints"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{gmd},"metric_data":{{"start_time":"yesterday","end_time":"2026-01-05T00:00:00Z","queries":[{{"period_s":60}}]}}}}]}}"#
                ),
                r#"requests[0] (id "a").metric_data.start_time: must be an RFC 3339 instant"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{gmd},"metric_data":{{{window},"queries":[]}}}}]}}"#
                ),
                r#"requests[0] (id "a").metric_data.queries: is empty"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{gmd},"metric_data":{{{window},"queries":[{{"period":60}}]}}}}]}}"#
                ),
                r#"requests[0] (id "a").metric_data: data did not match any variant"#,
            ),
            (
                format!(
                    r#"{{"requests":[{{"id":"a",{gmd},"metric_data":{{{window},"queries":[{{"period_s":60}}],"colour":1}}}}]}}"#
                ),
                r#"requests[0] (id "a").metric_data: unknown field `colour`"#,
            ),
        ];
        for (text, want) in cases {
            let got = error(&text);
            assert!(got.contains(want), "{text}\n  got:  {got}\n  want: {want}");
        }
    }

    #[test]
    fn a_global_service_drops_the_region() {
        let s =
            parse(r#"{"requests":[{"id":"a","service":"route53","operation":"ListHostedZones"}]}"#)
                .unwrap();
        assert_eq!(
            s.requests[0].key.to_string(),
            "aws/123456789012/-/route53:all-requests"
        );
    }
}
