//! `AWS::EC2::SecurityGroup`: security groups with their rules, the default ones
//! included, from `DescribeSecurityGroups` (`MaxResults=1000`, following `NextToken`).
//!
//! Properties (CloudFormation's names): `Id` and `GroupId` (the group id; `Id` is the
//! primary identifier), `GroupName`, `GroupDescription`, `VpcId`,
//! `SecurityGroupIngress` and `SecurityGroupEgress`. The rules are flattened as
//! CloudFormation writes them (and Cloud Control returns them): one entry per source
//! or destination of each EC2 permission, `{IpProtocol, FromPort, ToPort}` with one of
//! `CidrIp`, `CidrIpv6`, `SourcePrefixListId` / `DestinationPrefixListId`, or
//! `SourceSecurityGroupId` (+ `SourceSecurityGroupOwnerId`) / `DestinationSecurityGroupId`,
//! and its `Description`. `IpProtocol` `-1` is every protocol; ports absent where EC2
//! gives none.

use aws_sdk_ec2::operation::describe_security_groups::DescribeSecurityGroupsOutput;
use aws_sdk_ec2::types::{IpPermission, SecurityGroup};
use serde_json::Value;

use super::model::{self, object};
use super::page::{listing, page};
use super::{per_region, Call};
use crate::dataset::Ec2Type;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_SECURITY_GROUPS: Operation = operation!("ec2", "DescribeSecurityGroups");

/// The action's largest page.
const PAGE: i32 = 1_000;

/// What the collector calls.
pub const CALLS: &[Call] = &[per_region(DESCRIBE_SECURITY_GROUPS, "MaxResults=1000")];

page!(DescribeSecurityGroupsOutput, security_groups, paginated);

/// Every security group of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_ec2::Client>(region);
    let send = |token| {
        client
            .describe_security_groups()
            .max_results(PAGE)
            .set_next_token(token)
            .send()
    };
    listing(
        run,
        DESCRIBE_SECURITY_GROUPS,
        region,
        send,
        DescribeSecurityGroupsOutput::security_groups,
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, g: &SecurityGroup) -> Option<Resource> {
    let id = g.group_id()?;
    let arn = g
        .security_group_arn()
        .map(str::to_string)
        .unwrap_or_else(|| model::arn(run, region, g.owner_id(), &format!("security-group/{id}")));
    let resource = model::resource(run, Ec2Type::SecurityGroup, region, id, g.owner_id())
        .arn(Some(arn))
        .tags(model::tags(g.tags()))
        .property("Id", id)
        .property("GroupId", id)
        .property("GroupName", g.group_name())
        .property("GroupDescription", g.description())
        .property("VpcId", g.vpc_id())
        .property("SecurityGroupIngress", rules(g.ip_permissions(), Way::In))
        .property(
            "SecurityGroupEgress",
            rules(g.ip_permissions_egress(), Way::Out),
        );
    Some(resource)
}

/// Which list a rule is in: the schema names its peer `Source...` in, `Destination...`
/// out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    In,
    Out,
}

/// `permissions` flattened into the schema's rules, `[]` when there are none.
fn rules(permissions: &[IpPermission], way: Way) -> Value {
    Value::Array(permissions.iter().flat_map(|p| rules_of(p, way)).collect())
}

/// One EC2 permission's rules: one per peer (or the permission alone if it has none).
fn rules_of(p: &IpPermission, way: Way) -> Vec<Value> {
    let (prefix_list, group) = match way {
        Way::In => ("SourcePrefixListId", "SourceSecurityGroupId"),
        Way::Out => ("DestinationPrefixListId", "DestinationSecurityGroupId"),
    };
    let rule = |peer: [(&str, Value); 3]| {
        object([
            ("IpProtocol", p.ip_protocol().into()),
            ("FromPort", p.from_port().into()),
            ("ToPort", p.to_port().into()),
            (peer[0].0, peer[0].1.clone()),
            (peer[1].0, peer[1].1.clone()),
            (peer[2].0, peer[2].1.clone()),
        ])
    };
    let none = || ("", Value::Null);
    let mut out: Vec<Value> = Vec::new();
    for r in p.ip_ranges() {
        let peer = [("CidrIp", r.cidr_ip().into()), none(), none()];
        out.push(rule(with_description(peer, r.description())));
    }
    for r in p.ipv6_ranges() {
        let peer = [("CidrIpv6", r.cidr_ipv6().into()), none(), none()];
        out.push(rule(with_description(peer, r.description())));
    }
    for r in p.prefix_list_ids() {
        let peer = [(prefix_list, r.prefix_list_id().into()), none(), none()];
        out.push(rule(with_description(peer, r.description())));
    }
    for r in p.user_id_group_pairs() {
        let owner = match way {
            Way::In => ("SourceSecurityGroupOwnerId", r.user_id().into()),
            Way::Out => none(),
        };
        let peer = [(group, r.group_id().into()), owner, none()];
        out.push(rule(with_description(peer, r.description())));
    }
    if out.is_empty() {
        out.push(rule([none(), none(), none()]));
    }
    out
}

/// `peer` with its `Description` in the last free place.
fn with_description<'a>(
    mut peer: [(&'a str, Value); 3],
    description: Option<&str>,
) -> [(&'a str, Value); 3] {
    if let Some(slot) = peer.iter_mut().find(|(name, _)| name.is_empty()) {
        *slot = ("Description", description.into());
    }
    peer
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{IpRange, UserIdGroupPair};
    use serde_json::json;

    #[test]
    fn each_peer_of_a_permission_is_one_rule_in_the_schemas_names() {
        let p = IpPermission::builder()
            .ip_protocol("tcp")
            .from_port(443)
            .to_port(443)
            .ip_ranges(
                IpRange::builder()
                    .cidr_ip("10.0.0.0/8")
                    .description("inside")
                    .build(),
            )
            .ip_ranges(IpRange::builder().cidr_ip("192.168.0.0/16").build())
            .user_id_group_pairs(
                UserIdGroupPair::builder()
                    .group_id("sg-peer")
                    .user_id("111122223333")
                    .build(),
            )
            .build();
        assert_eq!(
            rules(std::slice::from_ref(&p), Way::In),
            json!([
                {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8", "Description": "inside"},
                {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "192.168.0.0/16"},
                {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "SourceSecurityGroupId": "sg-peer", "SourceSecurityGroupOwnerId": "111122223333"},
            ])
        );
        assert_eq!(
            rules(std::slice::from_ref(&p), Way::Out)[2],
            json!({"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "DestinationSecurityGroupId": "sg-peer"})
        );
        let all = IpPermission::builder().ip_protocol("-1").build();
        assert_eq!(rules(&[all], Way::Out), json!([{"IpProtocol": "-1"}]));
        assert_eq!(rules(&[], Way::In), json!([]));
    }
}
