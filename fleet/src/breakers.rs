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

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use tollgate_actors::fleet::{
    BreakerStore, FleetError, FleetErrorKind, FleetFuture, FleetStore, PutOutcome, VersionedBreaker,
};
use tollgate_quota::breaker_fleet::{FleetBreaker, FleetProbe};
use tollgate_quota::{BreakerScope, Timestamp};

use crate::classify::{classify, is_condition_failed};
use crate::item_error::Attrs;
use crate::item_error::{from_attrs, to_attrs, ItemDecodeError, ItemProblem};
use crate::layout::{IDLE_TTL_SECS, KEY, VERSION};
use crate::DynamoFleetStore;

/// Item keys of breakers start with this (quota keys never do: they start with a
/// partition name).
pub const BREAKER_PREFIX: &str = "breaker#";

/// The breaker attributes (the table above) as `serde_dynamo` reads and writes them.
#[derive(Debug, Serialize, Deserialize)]
struct BreakerRecord {
    key: String,
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failing_since_us: Option<u64>,
    open_until_us: u64,
    openings: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probe_host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probe_until_us: Option<u64>,
    written_us: u64,
    /// Written, never read back (DynamoDB's TTL reads it).
    #[serde(default)]
    ttl: u64,
}

/// The item key of `scope`'s breaker.
pub fn item_key(scope: &BreakerScope) -> String {
    format!("{BREAKER_PREFIX}{scope}")
}

/// The attributes of `item` for `scope` at `version`.
pub fn encode(scope: &BreakerScope, item: &FleetBreaker, version: u64) -> Attrs {
    to_attrs(&BreakerRecord {
        key: item_key(scope),
        version,
        failing_since_us: item.failing_since.map(Timestamp::as_micros),
        open_until_us: item.open_until.as_micros(),
        openings: item.openings,
        probe_host: item.probe.as_ref().map(|p| p.host.clone()),
        probe_until_us: item.probe.as_ref().map(|p| p.until.as_micros()),
        written_us: item.written_at.as_micros(),
        ttl: item.written_at.as_micros() / 1_000_000 + IDLE_TTL_SECS,
    })
}

/// The breaker item in `attrs`, or which attribute does not fit.
pub fn decode(attrs: &Attrs) -> Result<VersionedBreaker, ItemDecodeError> {
    let key = match attrs.get(KEY) {
        Some(AttributeValue::S(k)) => Some(k.as_str()),
        _ => None,
    };
    let r: BreakerRecord = from_attrs(key, attrs)?;
    let at = Timestamp::from_micros;
    let probe = match (r.probe_host, r.probe_until_us) {
        (Some(host), Some(until)) => Some(FleetProbe {
            host,
            until: at(until),
        }),
        (None, None) => None,
        _ => {
            return Err(ItemDecodeError::new(
                key,
                None,
                ItemProblem::Incomplete("`probe_host` and `probe_until_us`"),
            ))
        }
    };
    Ok(VersionedBreaker {
        version: r.version,
        item: FleetBreaker {
            failing_since: r.failing_since_us.map(at),
            open_until: at(r.open_until_us),
            openings: r.openings,
            probe,
            written_at: at(r.written_us),
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
                // The error names the item's key.
                message: format!("malformed breaker item {message}; delete it (it is recreated)"),
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
                .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
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
            assert_eq!(decode(&attrs).unwrap(), VersionedBreaker { item, version });
        }
    }

    #[test]
    fn a_breaker_attribute_of_the_wrong_type_is_refused_naming_it() {
        let scope = BreakerScope::of(&"aws/123456789012/eu-west-1/ec2:describe".parse().unwrap());
        let mut attrs = encode(&scope, &FleetBreaker::default(), 1);
        attrs.insert("openings".into(), AttributeValue::S("one".into()));
        let e = decode(&attrs).unwrap_err();
        assert_eq!(e.attribute(), Some("openings"), "{e}");
        assert!(
            e.to_string()
                .contains("breaker#aws/123456789012/eu-west-1/ec2"),
            "{e}"
        );
    }
}
