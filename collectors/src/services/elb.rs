//! `AWS::ElasticLoadBalancing::LoadBalancer`: classic load balancers, from
//! `DescribeLoadBalancers` of the 2012-06-01 API (400 a page, following `NextMarker`), on
//! the classic API's budget `elasticloadbalancing:all-requests` (10/s, seed 000).
//!
//! `id` is the name (CloudFormation's primary identifier), `arn`
//! `arn:<partition>:elasticloadbalancing:<region>:<account>:loadbalancer/<name>` as the
//! tagging API writes it (the answer carries no ARN, nor tags: the tagging sweep's merge
//! by ARN brings them). Properties (CloudFormation's names): `LoadBalancerName`,
//! `DNSName`, `CanonicalHostedZoneName`, `Scheme`, `AvailabilityZones`, `Subnets`,
//! `SecurityGroups`, `Instances` (instance ids: a classic load balancer with none is a
//! cost finding), `Listeners`; and `VPCId`, `CreatedTime` from the answer.

use aws_sdk_elasticloadbalancing::operation::describe_load_balancers::DescribeLoadBalancersOutput;
use aws_sdk_elasticloadbalancing::types::{ListenerDescription, LoadBalancerDescription};
use serde_json::Value;

use crate::dataset::ServiceType;
use crate::ec2::model::{list_or_null, object, strings, time};
use crate::ec2::page::{listing, Page};
use crate::ec2::Call;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_LOAD_BALANCERS: Operation =
    operation!("elasticloadbalancing", "DescribeLoadBalancers");

/// The action's largest page.
const PAGE: i32 = 400;

/// What the collector calls.
pub const CALLS: &[Call] = &[Call {
    operation: DESCRIBE_LOAD_BALANCERS,
    parameters: "PageSize=400",
    per: "region",
}];

impl Page for DescribeLoadBalancersOutput {
    fn count(&self) -> usize {
        self.load_balancer_descriptions().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_marker()
    }
}

/// Every classic load balancer of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let client = run.client::<aws_sdk_elasticloadbalancing::Client>(region);
    let send = |marker| {
        client
            .describe_load_balancers()
            .page_size(PAGE)
            .set_marker(marker)
            .send()
    };
    listing(
        run,
        DESCRIBE_LOAD_BALANCERS,
        region,
        send,
        |p| p.load_balancer_descriptions(),
        item,
    )
    .await
}

fn item(run: &CollectorRun, region: &str, lb: &LoadBalancerDescription) -> Option<Resource> {
    let name = lb.load_balancer_name()?;
    let ty = ServiceType::ElbLoadBalancer.resource_type();
    let arn = run.arn(
        "elasticloadbalancing",
        region,
        &format!("loadbalancer/{name}"),
    );
    let instances = lb.instances().iter().filter_map(|i| i.instance_id());
    let listeners: Vec<Value> = lb
        .listener_descriptions()
        .iter()
        .filter_map(listener)
        .collect();
    let resource = run
        .resource(ty, name, Some(region))
        .arn(Some(arn))
        .property("LoadBalancerName", name)
        .property("DNSName", lb.dns_name())
        .property("CanonicalHostedZoneName", lb.canonical_hosted_zone_name())
        .property("Scheme", lb.scheme())
        .property(
            "AvailabilityZones",
            strings(lb.availability_zones().iter().map(String::as_str)),
        )
        .property("Subnets", strings(lb.subnets().iter().map(String::as_str)))
        .property(
            "SecurityGroups",
            strings(lb.security_groups().iter().map(String::as_str)),
        )
        .property(
            "Instances",
            Value::Array(instances.map(Value::from).collect()),
        )
        .property("Listeners", list_or_null(listeners))
        .property("VPCId", lb.vpc_id())
        .property("CreatedTime", time(lb.created_time()));
    Some(resource)
}

/// One listener, as CloudFormation shapes `Listeners`.
fn listener(d: &ListenerDescription) -> Option<Value> {
    let l = d.listener()?;
    Some(object([
        ("LoadBalancerPort", l.load_balancer_port().into()),
        ("InstancePort", l.instance_port().into()),
        ("Protocol", l.protocol().into()),
        ("InstanceProtocol", l.instance_protocol().into()),
        ("SSLCertificateId", l.ssl_certificate_id().into()),
    ]))
}
