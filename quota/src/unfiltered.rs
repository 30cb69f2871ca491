//! Which budget an EC2 read charges: its action's, or the action's smaller
//! `:unfiltered` budget (issue 33, item 2, the pure part).
//!
//! EC2 throttles each action on its own token bucket per account and region, and seven
//! actions ([`UNFILTERED_BUDGETS`]) called with neither a filter nor pagination draw on a
//! smaller bucket instead (AWS's EC2 API throttling page; seed 000: "Separate quota per
//! API, including the smaller unfiltered/unpaginated read allowance"). So the budget is
//! chosen from the request itself, as a datapoint budget is chosen from `StartTime`:
//! such a request without `MaxResults`/`NextToken` and without `Filter` is charged to
//! `ec2:<Action>:unfiltered` besides its action's key.
//!
//! What the rule reads is the request as sent ([`RequestShape::from_query`]: the
//! parameters of its Query-protocol form), not what the caller meant to send: the SDK
//! leaves an empty filter list out of the request, and AWS then sees an unfiltered call
//! (AWS's pagination guide warns of exactly that). A parameter present with an empty
//! value (`NextToken=`) is read as absent, so a doubtful request is charged to the
//! smaller budget. Resource ids (`VolumeId.1=...`) are neither a filter nor pagination
//! by this rule, which is the issue's; a request that names ids without either is
//! charged to the smaller budget too: the conservative side.

use crate::key::{KeyError, QuotaKey};

/// The service whose actions have `:unfiltered` budgets.
pub const EC2_SERVICE: &str = "ec2";

/// The seven actions with a smaller unfiltered and unpaginated budget, each with its
/// budget's group (the row of [`crate::defaults::DEFAULT_ROWS`] and the key of
/// `TOLLGATE_QUOTA_OVERRIDES`), sorted by action.
pub const UNFILTERED_BUDGETS: [(&str, &str); 7] = [
    (
        "DescribeInstanceStatus",
        "DescribeInstanceStatus:unfiltered",
    ),
    ("DescribeInstances", "DescribeInstances:unfiltered"),
    (
        "DescribeNetworkInterfaces",
        "DescribeNetworkInterfaces:unfiltered",
    ),
    (
        "DescribeSecurityGroups",
        "DescribeSecurityGroups:unfiltered",
    ),
    ("DescribeSnapshots", "DescribeSnapshots:unfiltered"),
    (
        "DescribeSpotInstanceRequests",
        "DescribeSpotInstanceRequests:unfiltered",
    ),
    ("DescribeVolumes", "DescribeVolumes:unfiltered"),
];

/// What of a request decides its budget, read from the request as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestShape {
    /// It carries at least one `Filter`.
    pub filtered: bool,
    /// It carries `MaxResults` or `NextToken`.
    pub paginated: bool,
}

impl RequestShape {
    /// The shape of a Query-protocol request from its parameters (`Action=...&Filter.1.Name=...
    /// &MaxResults=1000`, the form-encoded body or the URL's query): `Filter.N...` makes
    /// it filtered, `MaxResults` or `NextToken` paginated; a parameter with an empty value
    /// counts as absent. Names are compared as the protocol writes them (case-sensitive,
    /// never percent-encoded: they are letters, digits and dots).
    pub fn from_query(query: &str) -> RequestShape {
        let mut shape = RequestShape::default();
        for pair in query.split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if value.is_empty() {
                continue;
            }
            match name {
                "MaxResults" | "NextToken" => shape.paginated = true,
                _ if name.starts_with("Filter.") => shape.filtered = true,
                _ => {}
            }
        }
        shape
    }
}

/// The budget one request of an action draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBudget {
    /// The action's own budget (`ec2:DescribeVolumes`) only.
    Action,
    /// The action's `:unfiltered` budget as well (`ec2:DescribeVolumes:unfiltered`).
    Unfiltered(&'static str),
}

/// The `:unfiltered` group of `service`'s `operation`, when it has one
/// (`DescribeVolumes` → `DescribeVolumes:unfiltered`). Service names are compared as
/// keys spell them after aliasing (only `ec2` has these budgets).
pub fn unfiltered_group(service: &str, operation: &str) -> Option<&'static str> {
    if crate::key::canonical_service(service).ok()? != EC2_SERVICE {
        return None;
    }
    UNFILTERED_BUDGETS
        .iter()
        .find(|(action, _)| *action == operation)
        .map(|(_, group)| *group)
}

/// The budget a request of `operation` shaped `shape` draws on: the `:unfiltered` one
/// for one of the seven actions sent with neither a filter nor pagination.
pub fn read_budget(service: &str, operation: &str, shape: RequestShape) -> ReadBudget {
    match unfiltered_group(service, operation) {
        Some(group) if !shape.filtered && !shape.paginated => ReadBudget::Unfiltered(group),
        _ => ReadBudget::Action,
    }
}

/// The `:unfiltered` budget's key beside `request_key` (the action's key: same
/// partition, account and region), when the action has one.
pub fn unfiltered_key_beside(request_key: &QuotaKey) -> Option<Result<QuotaKey, KeyError>> {
    let group = unfiltered_group(request_key.service(), request_key.group())?;
    Some(QuotaKey::new(
        request_key.partition(),
        request_key.account(),
        request_key.region(),
        EC2_SERVICE,
        group,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_filtered_or_paginated_by_what_it_sends() {
        // (query, filtered, paginated)
        let cases: &[(&str, bool, bool)] = &[
            ("Action=DescribeVolumes&Version=2016-11-15", false, false),
            (
                "Action=DescribeVolumes&Version=2016-11-15&MaxResults=500",
                false,
                true,
            ),
            ("Action=DescribeVolumes&NextToken=abc%3D", false, true),
            (
                "Action=DescribeVolumes&Filter.1.Name=status&Filter.1.Value.1=available",
                true,
                false,
            ),
            ("Action=DescribeVolumes&NextToken=", false, false),
            ("Action=DescribeVolumes&MaxResults", false, false),
            ("Action=DescribeVolumes&VolumeId.1=vol-1", false, false),
            ("Action=DescribeVolumes&FilterX=1&maxresults=5", false, false),
            (
                "Action=DescribeSnapshots&Owner.1=self&MaxResults=1000&Filter.1.Name=a&Filter.1.Value.1=b",
                true,
                true,
            ),
            ("", false, false),
        ];
        for &(query, filtered, paginated) in cases {
            assert_eq!(
                RequestShape::from_query(query),
                RequestShape {
                    filtered,
                    paginated
                },
                "{query}"
            );
        }
    }

    #[test]
    fn only_the_seven_actions_unfiltered_and_unpaginated_draw_on_the_smaller_budget() {
        let bare = RequestShape::default();
        let paged = RequestShape {
            paginated: true,
            ..bare
        };
        let filtered = RequestShape {
            filtered: true,
            ..bare
        };
        // (service, operation, shape, budget)
        let cases: &[(&str, &str, RequestShape, ReadBudget)] = &[
            (
                "ec2",
                "DescribeVolumes",
                bare,
                ReadBudget::Unfiltered("DescribeVolumes:unfiltered"),
            ),
            ("ec2", "DescribeVolumes", paged, ReadBudget::Action),
            ("ec2", "DescribeVolumes", filtered, ReadBudget::Action),
            (
                "ec2",
                "DescribeSpotInstanceRequests",
                bare,
                ReadBudget::Unfiltered("DescribeSpotInstanceRequests:unfiltered"),
            ),
            ("ec2", "DescribeVpcs", bare, ReadBudget::Action),
            ("ec2", "DescribeImages", bare, ReadBudget::Action),
            ("ec2", "DescribeAddresses", bare, ReadBudget::Action),
            ("kms", "DescribeVolumes", bare, ReadBudget::Action),
            ("ec2", "describevolumes", bare, ReadBudget::Action),
        ];
        for &(service, operation, shape, want) in cases {
            assert_eq!(
                read_budget(service, operation, shape),
                want,
                "{service}:{operation} {shape:?}"
            );
        }
    }

    #[test]
    fn each_budget_is_its_actions_group_with_the_suffix_and_has_a_default_row_of_half_the_reads() {
        for (action, group) in UNFILTERED_BUDGETS {
            assert_eq!(group, format!("{action}:unfiltered"));
            let unfiltered = crate::defaults::lookup(EC2_SERVICE, group).expect(group);
            let read = crate::defaults::lookup(EC2_SERVICE, action).expect(action);
            assert_eq!(
                (unfiltered.rate_per_second, unfiltered.burst),
                (read.rate_per_second / 2.0, read.burst / 2.0),
                "{group}: AWS's ratio, 10/s refill of 50 against 20/s of 100"
            );
            assert_eq!(unfiltered.verified, read.verified, "{group}");
            let name = format!("ec2:{group}");
            assert_eq!(
                name.parse::<crate::ServiceGroup>().unwrap().to_string(),
                name
            );
        }
        let mut sorted = UNFILTERED_BUDGETS;
        sorted.sort();
        assert_eq!(sorted, UNFILTERED_BUDGETS);
    }

    #[test]
    fn the_budget_key_shares_the_action_keys_account_and_region() {
        let key: QuotaKey = "aws/123456789012/eu-west-1/ec2:DescribeVolumes"
            .parse()
            .unwrap();
        assert_eq!(
            unfiltered_key_beside(&key).unwrap().unwrap().to_string(),
            "aws/123456789012/eu-west-1/ec2:DescribeVolumes:unfiltered"
        );
        let vpcs: QuotaKey = "aws/123456789012/eu-west-1/ec2:DescribeVpcs"
            .parse()
            .unwrap();
        assert!(unfiltered_key_beside(&vpcs).is_none());
    }
}
