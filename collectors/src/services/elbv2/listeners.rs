//! `AWS::ElasticLoadBalancingV2::Listener`: the listeners of every v2 load balancer of the
//! region, from `DescribeLoadBalancers` then `DescribeListeners` per load balancer (400 a
//! page, following `NextMarker`). Cloud Control lists this type only under a parent load
//! balancer too.
//!
//! Properties (CloudFormation's names): `ListenerArn`, `LoadBalancerArn`, `Port`,
//! `Protocol`, `SslPolicy`, `DefaultActions` (`Type` and `TargetGroupArn` of each).

use aws_sdk_elasticloadbalancingv2::operation::describe_listeners::DescribeListenersOutput;
use aws_sdk_elasticloadbalancingv2::types::{Action, Listener};
use serde_json::Value;

use super::{resource, DESCRIBE_LOAD_BALANCERS, PAGE};
use crate::dataset::ServiceType;
use crate::ec2::model::{list_or_null, object, text};
use crate::ec2::page::{pages, Page};
use crate::ec2::Call;
use crate::output::Item;
use crate::{operation, CollectorRun, Operation, ReportBuilder, Resource};

const DESCRIBE_LISTENERS: Operation = operation!("elasticloadbalancingv2", "DescribeListeners");

/// What the collector calls.
pub const CALLS: &[Call] = &[
    Call {
        operation: DESCRIBE_LOAD_BALANCERS,
        parameters: "PageSize=400",
        per: "region",
    },
    Call {
        operation: DESCRIBE_LISTENERS,
        parameters: "LoadBalancerArn=<load balancer>&PageSize=400",
        per: "load balancer",
    },
];

impl Page for DescribeListenersOutput {
    fn count(&self) -> usize {
        self.listeners().len()
    }
    fn next(&self) -> Option<&str> {
        self.next_marker()
    }
}

/// Every listener of every v2 load balancer of `region`.
pub async fn collect_region(run: &CollectorRun, region: &str) -> ReportBuilder {
    let mut out = ReportBuilder::new();
    let client = run.client::<aws_sdk_elasticloadbalancingv2::Client>(region);
    let send = |marker| {
        client
            .describe_load_balancers()
            .page_size(PAGE)
            .set_marker(marker)
            .send()
    };
    let lbs = pages(run, DESCRIBE_LOAD_BALANCERS, region, &mut out, send).await;
    let arns: Vec<&str> = lbs
        .iter()
        .flat_map(|p| p.load_balancers())
        .filter_map(|lb| lb.load_balancer_arn())
        .collect();
    run.progress.plan_more(arns.len());
    for lb in arns {
        if run.is_cancelled() || out.status() != crate::DatasetStatus::Complete {
            break;
        }
        let send = |marker| {
            client
                .describe_listeners()
                .load_balancer_arn(lb)
                .page_size(PAGE)
                .set_marker(marker)
                .send()
        };
        let listed = pages(run, DESCRIBE_LISTENERS, region, &mut out, send).await;
        run.progress.done(1);
        let before = out.len();
        for l in listed.iter().flat_map(|p| p.listeners()) {
            if let Some(r) = item(run, region, l) {
                out.push(Item::Resource(r));
            }
        }
        run.progress.items_more(out.len() - before);
    }
    if run.is_cancelled() {
        out.cancelled();
    }
    out
}

fn item(run: &CollectorRun, region: &str, l: &Listener) -> Option<Resource> {
    let arn = l.listener_arn()?;
    let ty = ServiceType::Elbv2Listener.resource_type();
    let actions: Vec<Value> = l.default_actions().iter().map(action).collect();
    let resource = resource(run, ty, region, arn)
        .property("ListenerArn", arn)
        .property("LoadBalancerArn", l.load_balancer_arn())
        .property("Port", l.port())
        .property("Protocol", text(l.protocol()))
        .property("SslPolicy", l.ssl_policy())
        .property("DefaultActions", list_or_null(actions));
    Some(resource)
}

/// One default action, as CloudFormation shapes them.
fn action(a: &Action) -> Value {
    object([
        ("Type", text(a.r#type())),
        ("TargetGroupArn", a.target_group_arn().into()),
        ("Order", a.order().into()),
    ])
}
