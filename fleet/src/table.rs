//! `tollgate fleet init`: create the table (on-demand, partition key `key`, TTL on `ttl`)
//! and the IAM policy hosts need.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification,
};
use tollgate_actors::fleet::{FleetError, FleetErrorKind, FleetStore};

use crate::classify::classify;
use crate::dynamo::DynamoFleetStore;
use crate::layout::{KEY, TTL};

/// How long `init` waits for a new table to become active.
pub const ACTIVE_WAIT: Duration = Duration::from_secs(120);

/// What `init` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InitReport {
    pub table: String,
    /// False if the table existed already.
    pub created: bool,
    /// True if TTL on `ttl` is enabled (or was already).
    pub ttl_enabled: bool,
    /// Why TTL could not be enabled (an emulator without UpdateTimeToLive), if so.
    pub ttl_warning: Option<String>,
}

/// Create the table if missing, wait until it is active, enable TTL.
pub async fn create_table(store: &DynamoFleetStore) -> Result<InitReport, FleetError> {
    let client = store.client().await;
    let table = store.settings().table.clone();
    let describe = store.describe();
    let created = match client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(KEY)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("name and type are set"),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(KEY)
                .key_type(KeyType::Hash)
                .build()
                .expect("name and type are set"),
        )
        .send()
        .await
    {
        Ok(_) => true,
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            false
        }
        Err(e) => return Err(classify(&e, &describe)),
    };
    let mut waited = Duration::ZERO;
    loop {
        let out = client
            .describe_table()
            .table_name(&table)
            .send()
            .await
            .map_err(|e| classify(&e, &describe))?;
        let status = out.table().and_then(|t| t.table_status()).cloned();
        if status == Some(TableStatus::Active) {
            break;
        }
        if waited >= ACTIVE_WAIT {
            return Err(FleetError {
                kind: FleetErrorKind::Other,
                table: describe,
                message: format!(
                    "still {status:?} after {} s; run `tollgate fleet init` again later",
                    ACTIVE_WAIT.as_secs()
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        waited += Duration::from_millis(500);
    }
    let ttl = client
        .update_time_to_live()
        .table_name(&table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name(TTL)
                .enabled(true)
                .build()
                .expect("name and flag are set"),
        )
        .send()
        .await;
    let (ttl_enabled, ttl_warning) = match ttl {
        Ok(_) => (true, None),
        // Enabling twice is refused with "TimeToLive is already enabled".
        Err(e) if format!("{:?}", e).contains("already enabled") => (true, None),
        Err(e) => {
            let why = classify(&e, &describe);
            tracing::warn!(
                "{describe}: TTL not enabled ({}); idle keys' items are not removed automatically",
                why.message
            );
            (false, Some(why.message))
        }
    };
    Ok(InitReport {
        table,
        created,
        ttl_enabled,
        ttl_warning,
    })
}

/// The IAM policy fleet mode needs on `table`: hosts read and write items, `fleet status`
/// scans, `fleet init` creates the table and enables TTL (drop that statement for hosts).
pub fn iam_policy(table: &str) -> String {
    let arn = format!("arn:aws:dynamodb:*:*:table/{table}");
    let policy = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TollgateFleetHosts",
                "Effect": "Allow",
                "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"],
                "Resource": arn,
            },
            {
                "Sid": "TollgateFleetInit",
                "Effect": "Allow",
                "Action": [
                    "dynamodb:CreateTable",
                    "dynamodb:DescribeTable",
                    "dynamodb:UpdateTimeToLive",
                    "dynamodb:DescribeTimeToLive"
                ],
                "Resource": arn,
            }
        ]
    });
    serde_json::to_string_pretty(&policy).expect("a JSON value serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_names_the_table_and_the_actions() {
        let p: serde_json::Value = serde_json::from_str(&iam_policy("tg")).unwrap();
        let host = &p["Statement"][0];
        assert_eq!(host["Resource"], "arn:aws:dynamodb:*:*:table/tg");
        assert_eq!(host["Action"][1], "dynamodb:PutItem");
    }
}
