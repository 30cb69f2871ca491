//! `AWS::Logs::LogGroup`: every log group of the region, from `DescribeLogGroups` (50 a
//! page, following `nextToken`) on `logs:DescribeLogGroups` (10/s, seed 000); with
//! `--details`, each group's last event time from one `DescribeLogStreams`
//! (`orderBy=LastEventTime`, `descending`, `limit=1`) on `logs:DescribeLogStreams`
//! (25/s).
//!
//! `id` is the group's name (CloudFormation's primary identifier), `arn` the group's ARN
//! without the trailing `:*` (as the tagging API writes it). Properties: `LogGroupName`,
//! `Arn` (with `:*`, as CloudFormation's attribute), `RetentionInDays` (absent: kept
//! forever), `KmsKeyId`, `LogGroupClass` (CloudFormation's names), `StoredBytes` and
//! `CreationTime` from the answer, and with `--details` `LastEventTime` (`null` when no
//! stream has an event; a group nothing writes to any more is a cost finding). A failed
//! last-event read leaves `LastEventTime` out with a reason.

use aws_sdk_cloudwatchlogs::operation::describe_log_groups::DescribeLogGroupsOutput;
use aws_sdk_cloudwatchlogs::types::{LogGroup, OrderBy};
use serde_json::Value;
use tollgate_engine::aws::CallError;

use crate::cloudcontrol::Details;
use crate::dataset::ServiceType;
use crate::ec2::model::text;
use crate::ec2::page::{pages, Page};
use crate::ec2::Call;
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_LOG_GROUPS: Operation = operation!("logs", "DescribeLogGroups");
const DESCRIBE_LOG_STREAMS: Operation = operation!("logs", "DescribeLogStreams");

/// The listing's largest page.
const PAGE: i32 = 50;

/// The item field a failed last-event read leaves out.
const FIELD: &str = "properties.LastEventTime";

/// What the collector calls.
pub const CALLS: &[Call] = &[
    Call {
        operation: DESCRIBE_LOG_GROUPS,
        parameters: "limit=50",
        per: "region",
    },
    Call {
        operation: DESCRIBE_LOG_STREAMS,
        parameters: "logGroupName=<group>&orderBy=LastEventTime&descending=true&limit=1",
        per: "log group, with --details",
    },
];

impl Page for DescribeLogGroupsOutput {
    fn count(&self) -> usize {
        self.log_groups().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_token()
    }
}

/// Every log group of `region`, with its last event time under `--details`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_cloudwatchlogs::Client>(region);
    let send = |token| {
        client
            .describe_log_groups()
            .limit(PAGE)
            .set_next_token(token)
            .send()
    };
    let listed = pages(run, DESCRIBE_LOG_GROUPS, region, &mut out, send).await;
    let groups: Vec<&LogGroup> = listed.iter().flat_map(|p| p.log_groups()).collect();
    let details = run.details == Details::Read;
    if details {
        run.progress.plan_more(groups.len());
    }
    for group in groups {
        let Some(name) = group.log_group_name() else {
            continue;
        };
        let mut last_event = None;
        if details && !run.is_cancelled() {
            match last_event_time(run, region, name).await {
                Ok(time) => last_event = Some(time),
                Err(e) => out.value_missing(DESCRIBE_LOG_STREAMS, FIELD, &e),
            }
        }
        out.push(Item::Resource(item(run, region, name, group, last_event)));
        run.progress.items_more(1);
    }
    if run.is_cancelled() {
        out.cancelled();
    }
    out
}

/// The latest `lastEventTimestamp` of the group's streams (`null`: none has an event).
async fn last_event_time(
    run: &CollectorRun,
    region: &str,
    group: &str,
) -> Result<Value, CallError> {
    let client = run.client::<aws_sdk_cloudwatchlogs::Client>(region);
    let answer = run
        .call_item(DESCRIBE_LOG_STREAMS, region, || {
            client
                .describe_log_streams()
                .log_group_name(group)
                .order_by(OrderBy::LastEventTime)
                .descending(true)
                .limit(1)
                .send()
        })
        .await?;
    let latest = answer
        .log_streams()
        .iter()
        .filter_map(|s| s.last_event_timestamp())
        .max();
    Ok(latest.map(epoch_millis).unwrap_or(Value::Null))
}

/// Milliseconds since the epoch as RFC 3339 UTC (the raw number when out of range).
fn epoch_millis(ms: i64) -> Value {
    let time = aws_smithy_types::DateTime::from_millis(ms);
    Value::from(crate::output::format_date_time(&time))
}

fn item(
    run: &CollectorRun,
    region: &str,
    name: &str,
    g: &LogGroup,
    last_event: Option<Value>,
) -> Resource {
    let ty = ServiceType::LogGroup.resource_type();
    let listed_arn = g.arn().map(str::to_string);
    let arn = g
        .log_group_arn()
        .map(str::to_string)
        .or_else(|| {
            listed_arn
                .as_deref()
                .map(|a| a.trim_end_matches(":*").to_string())
        })
        .unwrap_or_else(|| run.arn("logs", region, &format!("log-group:{name}")));
    run.resource(ty, name, Some(region))
        .account(super::ecs::account_of(&arn).or_else(|| run.account()))
        .arn(Some(arn))
        .property("LogGroupName", name)
        .property("Arn", listed_arn)
        .property("RetentionInDays", g.retention_in_days())
        .property("KmsKeyId", g.kms_key_id())
        .property("LogGroupClass", text(g.log_group_class()))
        .property("StoredBytes", g.stored_bytes())
        .property("CreationTime", g.creation_time().map(epoch_millis))
        .property("LastEventTime", last_event.unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_milliseconds_read_as_utc_timestamps() {
        assert_eq!(epoch_millis(0), Value::from("1970-01-01T00:00:00Z"));
        assert_eq!(
            epoch_millis(1_700_000_000_123),
            Value::from("2023-11-14T22:13:20.123Z")
        );
    }
}
