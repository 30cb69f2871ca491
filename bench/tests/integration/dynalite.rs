//! The emulator the fleet tests stand on: dynalite from scripts/test answers, has a new
//! table ACTIVE within a timer turn (`--createTableMs 0`), and its conditional UpdateItem both succeeds and
//! refuses as DynamoDB's does. The fleet protocol takes blocks with exactly this write
//! (version check, ALL_NEW), so if it misbehaves every fleet test above it means nothing.

// The client's timeouts read real time; this is a real server.
#![allow(clippy::disallowed_methods)]

use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, ReturnValue,
    ScalarAttributeType, TableStatus,
};

use tollgate_testkit::{dynalite_url, emulator_credentials, unique_table};

async fn client(url: &str) -> aws_sdk_dynamodb::Client {
    emulator_credentials();
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .endpoint_url(url)
        .region(Region::new("us-east-1"))
        .load()
        .await;
    aws_sdk_dynamodb::Client::new(&sdk)
}

/// Bump `version` from `expected` to `expected + 1`, adding `take` to `taken`.
async fn conditional_bump(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    expected: u64,
    take: u64,
) -> Result<
    aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
    aws_sdk_dynamodb::error::SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError>,
> {
    db.update_item()
        .table_name(table)
        .key(
            "key",
            AttributeValue::S("aws/123456789012/us-east-1/s3:ListBuckets".into()),
        )
        .update_expression("SET version = :next ADD taken :take")
        .condition_expression("version = :expected")
        .expression_attribute_values(":expected", AttributeValue::N(expected.to_string()))
        .expression_attribute_values(":next", AttributeValue::N((expected + 1).to_string()))
        .expression_attribute_values(":take", AttributeValue::N(take.to_string()))
        .return_values(ReturnValue::AllNew)
        .send()
        .await
}

#[test]
fn conditional_update_item_succeeds_on_the_read_version_and_refuses_a_stale_one() {
    let url = dynalite_url();
    let table = unique_table("smoke");
    let rt = tollgate_testkit::runtime();
    rt.block_on(async {
        let db = client(&url).await;
        let created = db
            .create_table()
            .table_name(&table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("key")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("key")
                    .key_type(KeyType::Hash)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateTable on dynalite at {url}: {e:?}"));
        // CreateTable answers CREATING even at --createTableMs 0; the table turns ACTIVE
        // on dynalite's next timer turn (a DescribeTable sent at once may still see
        // CREATING). The default would keep it CREATING for 500 ms: look for 400 ms.
        assert!(created.table_description().is_some(), "{created:?}");
        let mut status = None;
        for _ in 0..40 {
            let described = db.describe_table().table_name(&table).send().await.unwrap();
            status = described.table().and_then(|t| t.table_status()).cloned();
            if status == Some(TableStatus::Active) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(
            status,
            Some(TableStatus::Active),
            "dynalite must run with --createTableMs 0 (scripts/dynalite.sh does)"
        );

        // No item yet: `version = :expected` cannot hold on a missing attribute.
        let missing = conditional_bump(&db, &table, 0, 3).await;
        assert_conditional_failure(missing);

        db.put_item()
            .table_name(&table)
            .item(
                "key",
                AttributeValue::S("aws/123456789012/us-east-1/s3:ListBuckets".into()),
            )
            .item("version", AttributeValue::N("0".into()))
            .item("taken", AttributeValue::N("0".into()))
            .send()
            .await
            .expect("PutItem");

        let first = conditional_bump(&db, &table, 0, 3)
            .await
            .expect("the update on the version just read succeeds");
        let attrs = first.attributes().expect("ALL_NEW returns the item");
        assert_eq!(attrs.get("version"), Some(&AttributeValue::N("1".into())));
        assert_eq!(attrs.get("taken"), Some(&AttributeValue::N("3".into())));

        // A second writer that read version 0 too loses, and its write leaves no trace.
        assert_conditional_failure(conditional_bump(&db, &table, 0, 5).await);
        let second = conditional_bump(&db, &table, 1, 2)
            .await
            .expect("version 1");
        let attrs = second.attributes().unwrap();
        assert_eq!(attrs.get("version"), Some(&AttributeValue::N("2".into())));
        assert_eq!(attrs.get("taken"), Some(&AttributeValue::N("5".into())));

        db.delete_table().table_name(&table).send().await.unwrap();
    });
}

fn assert_conditional_failure(
    result: Result<
        aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
        aws_sdk_dynamodb::error::SdkError<
            aws_sdk_dynamodb::operation::update_item::UpdateItemError,
        >,
    >,
) {
    match result {
        Ok(out) => panic!("a stale conditional update succeeded: {out:?}"),
        Err(e) => {
            let service = e.into_service_error();
            assert!(
                service.is_conditional_check_failed_exception(),
                "expected ConditionalCheckFailedException, got {service:?}"
            );
        }
    }
}
