//! What an EC2 read charges besides its request token when it is sent with neither a
//! filter nor pagination: its action's smaller `:unfiltered` budget (issue 33, item 2).
//!
//! [`AwsGate::call`](crate::aws::AwsGate::call) makes an [`UnfilteredPlan`] for a call
//! of one of the seven actions that have such a budget
//! ([`tollgate_quota::unfiltered::UNFILTERED_BUDGETS`]). The connector asks it, for each
//! physical attempt and immediately before final admission, whether the request as the
//! SDK serialised and signed it is filtered or paginated
//! ([`tollgate_quota::RequestShape::from_query`] over its Query-protocol body): the
//! choice is made from the bytes that go out, not from a flag the caller asserts or a
//! builder field that the serialiser might drop (an empty filter list is not sent). An
//! unfiltered, unpaginated attempt is admitted on the action's key and the
//! `:unfiltered` key at one instant, as a GetMetricData attempt with its datapoints;
//! every other attempt on the action's key alone. What the service answers such an
//! attempt is fed back to both keys: its throttle is the smaller bucket's as much as
//! the action's.

use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use tollgate_quota::{read_budget, PolicyTable, QuotaKey, ReadBudget, RequestShape};

use crate::aws::metric_data::BudgetKey;

/// The `:unfiltered` budget of one call's action.
#[derive(Debug, Clone)]
pub(crate) struct UnfilteredPlan {
    service: String,
    operation: String,
    budget: BudgetKey,
}

impl UnfilteredPlan {
    /// The plan of a call under `request_key` (`ec2:DescribeVolumes` of an account and
    /// region), with the budget's policy from `policies`; `None` for an action without
    /// an `:unfiltered` budget (or whose budget key cannot be written, which a valid
    /// request key rules out).
    pub fn new(request_key: &QuotaKey, policies: &PolicyTable) -> Option<UnfilteredPlan> {
        let key = tollgate_quota::unfiltered::unfiltered_key_beside(request_key)?.ok()?;
        let policy = policies.policy_for_key(&key);
        Some(UnfilteredPlan {
            service: request_key.service().to_string(),
            operation: request_key.group().to_string(),
            budget: BudgetKey { key, policy },
        })
    }

    /// The budget `request` draws on besides its action's: the `:unfiltered` one when
    /// its parameters carry neither a filter nor `MaxResults`/`NextToken`.
    pub fn charge_for(&self, request: &HttpRequest) -> Option<&BudgetKey> {
        let shape = RequestShape::from_query(&query_of(request));
        match read_budget(&self.service, &self.operation, shape) {
            ReadBudget::Unfiltered(_) => Some(&self.budget),
            ReadBudget::Action => None,
        }
    }
}

/// A Query-protocol request's parameters: its form-encoded body, and its URL's query
/// (a GET form, which the SDK does not send but the protocol allows), joined by `&`.
/// A body that is not text (a streamed one) contributes nothing.
fn query_of(request: &HttpRequest) -> String {
    let body = request
        .body()
        .bytes()
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or_default();
    let query = request.uri().split_once('?').map(|(_, q)| q).unwrap_or("");
    format!("{body}&{query}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_types::body::SdkBody;

    fn plan(operation: &str) -> Option<UnfilteredPlan> {
        let key: QuotaKey = format!("aws/123456789012/eu-west-1/ec2:{operation}")
            .parse()
            .unwrap();
        UnfilteredPlan::new(&key, &PolicyTable::defaults())
    }

    fn request(uri: &str, body: &str) -> HttpRequest {
        let mut request = HttpRequest::new(SdkBody::from(body.to_string()));
        request.set_uri(uri).unwrap();
        request
    }

    #[test]
    fn an_attempt_charges_the_smaller_budget_only_when_what_it_sends_is_unfiltered_and_unpaginated()
    {
        let volumes = plan("DescribeVolumes").expect("DescribeVolumes has one");
        assert!(plan("DescribeVpcs").is_none(), "DescribeVpcs has none");
        let url = "https://ec2.eu-west-1.amazonaws.com/";
        // (case, uri, body, charged)
        let cases = [
            (
                "bare",
                url,
                "Action=DescribeVolumes&Version=2016-11-15",
                true,
            ),
            (
                "paginated",
                url,
                "Action=DescribeVolumes&Version=2016-11-15&MaxResults=500",
                false,
            ),
            (
                "filtered",
                url,
                "Action=DescribeVolumes&Filter.1.Name=status&Filter.1.Value.1=in-use",
                false,
            ),
            (
                "an empty token is no token",
                url,
                "Action=DescribeVolumes&NextToken=",
                true,
            ),
            (
                "a GET query counts",
                "https://ec2.eu-west-1.amazonaws.com/?Action=DescribeVolumes&MaxResults=5",
                "",
                false,
            ),
        ];
        for (case, uri, body, charged) in cases {
            let budget = volumes.charge_for(&request(uri, body));
            assert_eq!(budget.is_some(), charged, "{case}");
            if let Some(b) = budget {
                assert_eq!(
                    b.key.to_string(),
                    "aws/123456789012/eu-west-1/ec2:DescribeVolumes:unfiltered"
                );
                assert_eq!(
                    (b.policy.rate_per_second(), b.policy.burst()),
                    (5.0, 5.0),
                    "{case}: the default row"
                );
            }
        }
    }
}
