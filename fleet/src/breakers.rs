//! The fleet's circuit breakers on DynamoDB: [`BreakerStore`] for [`DynamoFleetStore`],
//! one item per breaker scope in the same table as the quota items.
//!
//! | attribute          | type | meaning                                                    |
//! |--------------------|------|------------------------------------------------------------|
//! | `key`              | S    | `breaker#` + the scope (`partition/account/region/service`)|
//! | `version`          | N    | incremented by every write; the conditional write checks it|
//! | `failing_since_us` | N    | start of the failure (µs since the Unix epoch); absent: closed|
//! | `open_until_us`    | N    | end of the current opening                                 |
//! | `openings`         | N    | openings since the failure started                         |
//! | `probe_host`       | S    | the host holding the probe lease, if any                   |
//! | `probe_until_us`   | N    | end of that lease                                          |
//! | `written_us`       | N    | the last write                                             |
//! | `ttl`              | N    | epoch seconds, `written_us` + 1 day: idle breakers expire  |
//!
//! Same operations as the quota items (strongly consistent GetItem, PutItem on condition
//! of `version`), so the IAM policy `tollgate fleet init` prints covers them. They are
//! sent only while a scope fails (see `tollgate_actors::fleet::breakers`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use tollgate_actors::fleet::{
    BreakerStore, FleetError, FleetErrorKind, FleetFuture, FleetStore, PutOutcome, VersionedBreaker,
};
use tollgate_quota::breaker_fleet::{FleetBreaker, FleetProbe};
use tollgate_quota::{BreakerScope, Timestamp};

use crate::classify::{classify, is_condition_failed};
use crate::layout::{IDLE_TTL_SECS, KEY, TTL, VERSION};
use crate::DynamoFleetStore;

/// Item keys of breakers start with this (quota keys never do: they start with a
/// partition name).
pub const BREAKER_PREFIX: &str = "breaker#";

type Attrs = HashMap<String, AttributeValue>;

/// The item key of `scope`'s breaker.
pub fn item_key(scope: &BreakerScope) -> String {
    format!("{BREAKER_PREFIX}{scope}")
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The attributes of `item` for `scope` at `version`.
pub fn encode(scope: &BreakerScope, item: &FleetBreaker, version: u64) -> Attrs {
    let mut attrs = HashMap::from([
        (KEY.into(), AttributeValue::S(item_key(scope))),
        (VERSION.into(), n(version)),
        ("open_until_us".into(), n(item.open_until.as_micros())),
        ("openings".into(), n(u64::from(item.openings))),
        ("written_us".into(), n(item.written_at.as_micros())),
        (
            TTL.into(),
            n(item.written_at.as_micros() / 1_000_000 + IDLE_TTL_SECS),
        ),
    ]);
    if let Some(since) = item.failing_since {
        attrs.insert("failing_since_us".into(), n(since.as_micros()));
    }
    if let Some(probe) = &item.probe {
        attrs.insert("probe_host".into(), AttributeValue::S(probe.host.clone()));
        attrs.insert("probe_until_us".into(), n(probe.until.as_micros()));
    }
    attrs
}

/// The breaker item in `attrs`, or what is wrong with it.
pub fn decode(attrs: &Attrs) -> Result<VersionedBreaker, String> {
    let int = |name: &str| -> Result<Option<u64>, String> {
        match attrs.get(name) {
            None => Ok(None),
            Some(AttributeValue::N(v)) => v
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("attribute `{name}` is not a whole number: {v}")),
            Some(_) => Err(format!("attribute `{name}` is not a number")),
        }
    };
    let required = |name: &str| int(name)?.ok_or(format!("attribute `{name}` is missing"));
    let at = |us: u64| Timestamp::from_micros(us);
    let probe = match (attrs.get("probe_host"), int("probe_until_us")?) {
        (Some(AttributeValue::S(host)), Some(until)) => Some(FleetProbe {
            host: host.clone(),
            until: at(until),
        }),
        (None, None) => None,
        _ => return Err("`probe_host` and `probe_until_us` must come together".into()),
    };
    Ok(VersionedBreaker {
        version: required(VERSION)?,
        item: FleetBreaker {
            failing_since: int("failing_since_us")?.map(at),
            open_until: at(required("open_until_us")?),
            openings: u32::try_from(required("openings")?)
                .map_err(|_| "attribute `openings` is out of range".to_string())?,
            probe,
            written_at: at(required("written_us")?),
        },
    })
}

impl DynamoFleetStore {
    async fn get_breaker_item(
        &self,
        scope: &BreakerScope,
    ) -> Result<Option<VersionedBreaker>, FleetError> {
        let out = self
            .client()
            .await
            .get_item()
            .table_name(&self.settings().table)
            .key(KEY, AttributeValue::S(item_key(scope)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify(&e, &self.describe()))?;
        match out.item() {
            None => Ok(None),
            Some(attrs) => decode(attrs).map(Some).map_err(|message| FleetError {
                kind: FleetErrorKind::Other,
                table: self.describe(),
                message: format!(
                    "malformed breaker item {}: {message}; delete it (it is recreated)",
                    item_key(scope)
                ),
            }),
        }
    }

    async fn put_breaker_item(
        &self,
        scope: &BreakerScope,
        item: &FleetBreaker,
        expected: Option<u64>,
    ) -> Result<PutOutcome, FleetError> {
        let version = expected.unwrap_or(0) + 1;
        let put = self
            .client()
            .await
            .put_item()
            .table_name(&self.settings().table)
            .set_item(Some(encode(scope, item, version)));
        let put = match expected {
            None => put
                .condition_expression("attribute_not_exists(#k)")
                .expression_attribute_names("#k", KEY),
            Some(v) => put
                .condition_expression("#v = :v")
                .expression_attribute_names("#v", VERSION)
                .expression_attribute_values(":v", n(v)),
        };
        match put.send().await {
            Ok(_) => Ok(PutOutcome::Written(version)),
            Err(e) if is_condition_failed(&e) => Ok(PutOutcome::Conflict),
            Err(e) => Err(classify(&e, &self.describe())),
        }
    }
}

impl BreakerStore for DynamoFleetStore {
    fn get_breaker(&self, scope: &BreakerScope) -> FleetFuture<Option<VersionedBreaker>> {
        let (store, scope) = (self.clone(), scope.clone());
        Box::pin(async move { store.get_breaker_item(&scope).await })
    }

    fn put_breaker(
        &self,
        scope: &BreakerScope,
        item: &FleetBreaker,
        expected: Option<u64>,
    ) -> FleetFuture<PutOutcome> {
        let (store, scope, item) = (self.clone(), scope.clone(), item.clone());
        Box::pin(async move { store.put_breaker_item(&scope, &item, expected).await })
    }

    fn describe_breakers(&self) -> String {
        self.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_reads_back_as_written_open_half_open_with_a_probe_and_closed() {
        let scope = BreakerScope::of(&"aws/123456789012/eu-west-1/ec2:describe".parse().unwrap());
        let t = |s: u64| Timestamp::from_micros(1_700_000_000_000_000 + s * 1_000_000);
        let open = FleetBreaker {
            failing_since: Some(t(0)),
            open_until: t(5),
            openings: 1,
            probe: None,
            written_at: t(0),
        };
        let probing = FleetBreaker {
            probe: Some(FleetProbe {
                host: "host-a".into(),
                until: t(65),
            }),
            written_at: t(5),
            ..open.clone()
        };
        let closed = FleetBreaker {
            written_at: t(7),
            ..FleetBreaker::default()
        };
        for (version, item) in [(1, open), (2, probing), (3, closed)] {
            let attrs = encode(&scope, &item, version);
            assert_eq!(
                attrs.get(KEY),
                Some(&AttributeValue::S(
                    "breaker#aws/123456789012/eu-west-1/ec2".into()
                ))
            );
            assert_eq!(decode(&attrs), Ok(VersionedBreaker { item, version }));
        }
    }
}
