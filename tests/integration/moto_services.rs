//! `tollgate discover` of seed 000's other services against a moto server of this test's
//! own, over real HTTP (issue 36's datasets must-show).
//!
//! The account is populated with the calls boto3 makes, through the SDK: in eu-west-1
//! two ECS clusters, two services and a container instance, a classic load balancer with
//! an instance, an application load balancer with a target group and a listener, two log
//! groups (one with a retention and an event), a multi-region trail, an EMR cluster with
//! its instances; in us-east-1 a single-region trail; and two hosted zones (one private)
//! with a record. The real binary scans both regions with `--details`, and the
//! expectation is moto's own answer, asked with the SDK after the scan: every type in
//! each region is exactly what moto lists (ids, ARNs, tags where the listing has them),
//! each trail once in its home region, hosted zones once in region `global` on a quota
//! key without a region, and every call on the budget seed 000 gives it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use serde_json::{json, Value};
use tollgate_testkit::moto::{DedicatedMoto, MOTO_ACCOUNT};

const HOME: &str = "eu-west-1";
const OTHER: &str = "us-east-1";
const REGIONS: [&str; 2] = [OTHER, HOME];
/// An AMI of moto's catalogue, present in every region.
const SOURCE_AMI: &str = "ami-12c6146b";

/// The types of this issue.
const TYPES: [&str; 11] = [
    "AWS::CloudTrail::Trail",
    "AWS::ECS::Cluster",
    "AWS::ECS::ContainerInstance",
    "AWS::ECS::Service",
    "AWS::EMR::Cluster",
    "AWS::ElasticLoadBalancing::LoadBalancer",
    "AWS::ElasticLoadBalancingV2::Listener",
    "AWS::ElasticLoadBalancingV2::LoadBalancer",
    "AWS::ElasticLoadBalancingV2::TargetGroup",
    "AWS::Logs::LogGroup",
    "AWS::Route53::HostedZone",
];

async fn sdk(url: &str, region: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .endpoint_url(url)
        .region(Region::new(region.to_owned()))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
        .load()
        .await
}

/// The default VPC of `region` and two of its subnets in different zones.
async fn default_network(sdk: &SdkConfig) -> (String, Vec<String>) {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let vpcs = ec2.describe_vpcs().send().await.unwrap();
    let vpc = vpcs
        .vpcs()
        .iter()
        .find(|v| v.is_default() == Some(true))
        .unwrap();
    let vpc = vpc.vpc_id().unwrap().to_string();
    let subnets = ec2.describe_subnets().send().await.unwrap();
    let mut by_zone = BTreeMap::new();
    for s in subnets
        .subnets()
        .iter()
        .filter(|s| s.vpc_id() == Some(&vpc))
    {
        by_zone.insert(
            s.availability_zone().unwrap().to_string(),
            s.subnet_id().unwrap().to_string(),
        );
    }
    (vpc, by_zone.into_values().take(2).collect())
}

async fn an_instance(sdk: &SdkConfig) -> String {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let run = ec2
        .run_instances()
        .image_id(SOURCE_AMI)
        .min_count(1)
        .max_count(1)
        .instance_type(aws_sdk_ec2::types::InstanceType::T3Micro)
        .send()
        .await
        .unwrap();
    run.instances()[0].instance_id().unwrap().to_string()
}

async fn populate_ecs(sdk: &SdkConfig, instance: &str) {
    use aws_sdk_ecs::types::{ContainerDefinition, Tag};
    let ecs = aws_sdk_ecs::Client::new(sdk);
    let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build();
    ecs.create_cluster()
        .cluster_name("web")
        .tags(tag("team", "web"))
        .send()
        .await
        .unwrap();
    // Tagged: moto 5.2.1's GetResources answers HTTP 500 once an ECS cluster without
    // tags exists ('NoneType' object is not iterable).
    ecs.create_cluster()
        .cluster_name("batch")
        .tags(tag("team", "batch"))
        .send()
        .await
        .unwrap();
    let container = ContainerDefinition::builder()
        .name("app")
        .image("nginx")
        .memory(128)
        .build();
    ecs.register_task_definition()
        .family("app")
        .container_definitions(container)
        .send()
        .await
        .unwrap();
    for (name, count) in [("api", 2), ("worker", 1)] {
        ecs.create_service()
            .cluster("web")
            .service_name(name)
            .task_definition("app")
            .desired_count(count)
            .tags(tag("service", name))
            .send()
            .await
            .unwrap();
    }
    ecs.register_container_instance()
        .cluster("web")
        .instance_identity_document(json!({"instanceId": instance}).to_string())
        .send()
        .await
        .unwrap();
}

async fn populate_load_balancers(sdk: &SdkConfig, instance: &str) {
    use aws_sdk_elasticloadbalancing::types::{Instance, Listener};
    use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum, ProtocolEnum};
    let (vpc, subnets) = default_network(sdk).await;
    let elb = aws_sdk_elasticloadbalancing::Client::new(sdk);
    let listener = Listener::builder()
        .protocol("HTTP")
        .load_balancer_port(80)
        .instance_protocol("HTTP")
        .instance_port(8080)
        .build()
        .unwrap();
    elb.create_load_balancer()
        .load_balancer_name("legacy")
        .listeners(listener)
        .availability_zones(format!("{HOME}a"))
        .send()
        .await
        .unwrap();
    elb.register_instances_with_load_balancer()
        .load_balancer_name("legacy")
        .instances(Instance::builder().instance_id(instance).build())
        .send()
        .await
        .unwrap();
    let v2 = aws_sdk_elasticloadbalancingv2::Client::new(sdk);
    let lb = v2
        .create_load_balancer()
        .name("front")
        .set_subnets(Some(subnets))
        .send()
        .await
        .unwrap();
    let lb = lb.load_balancers()[0]
        .load_balancer_arn()
        .unwrap()
        .to_string();
    let tg = v2
        .create_target_group()
        .name("app")
        .protocol(ProtocolEnum::Http)
        .port(80)
        .vpc_id(vpc)
        .send()
        .await
        .unwrap();
    let tg = tg.target_groups()[0]
        .target_group_arn()
        .unwrap()
        .to_string();
    let forward = Action::builder()
        .r#type(ActionTypeEnum::Forward)
        .target_group_arn(tg)
        .build();
    v2.create_listener()
        .load_balancer_arn(lb)
        .protocol(ProtocolEnum::Http)
        .port(80)
        .default_actions(forward)
        .send()
        .await
        .unwrap();
}

/// The log groups; the time of the one event written (ms since the epoch).
async fn populate_logs(sdk: &SdkConfig) -> i64 {
    use aws_sdk_cloudwatchlogs::types::InputLogEvent;
    let logs = aws_sdk_cloudwatchlogs::Client::new(sdk);
    logs.create_log_group()
        .log_group_name("/app/web")
        .tags("team", "web")
        .send()
        .await
        .unwrap();
    logs.put_retention_policy()
        .log_group_name("/app/web")
        .retention_in_days(30)
        .send()
        .await
        .unwrap();
    logs.create_log_stream()
        .log_group_name("/app/web")
        .log_stream_name("i-1")
        .send()
        .await
        .unwrap();
    // AWS (and moto) refuse events older than 14 days: one from a minute ago.
    #[allow(clippy::disallowed_methods)] // wall clock: moto keeps only events of the last 14 days
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let at = i64::try_from(now.as_millis()).unwrap() / 1000 * 1000 - 60_000;
    let event = InputLogEvent::builder()
        .timestamp(at)
        .message("started")
        .build()
        .unwrap();
    logs.put_log_events()
        .log_group_name("/app/web")
        .log_stream_name("i-1")
        .log_events(event)
        .send()
        .await
        .unwrap();
    logs.create_log_group()
        .log_group_name("/app/jobs")
        .send()
        .await
        .unwrap();
    at
}

async fn populate_trails(url: &str) {
    let other = sdk(url, OTHER).await;
    let s3 = aws_sdk_s3::Client::new(&other);
    s3.create_bucket()
        .bucket("trail-logs")
        .send()
        .await
        .unwrap();
    aws_sdk_cloudtrail::Client::new(&other)
        .create_trail()
        .name("local")
        .s3_bucket_name("trail-logs")
        .send()
        .await
        .unwrap();
    aws_sdk_cloudtrail::Client::new(&sdk(url, HOME).await)
        .create_trail()
        .name("audit")
        .s3_bucket_name("trail-logs")
        .is_multi_region_trail(true)
        .enable_log_file_validation(true)
        .send()
        .await
        .unwrap();
}

async fn populate_zones(sdk: &SdkConfig) {
    use aws_sdk_route53::types::{
        Change, ChangeAction, ChangeBatch, HostedZoneConfig, ResourceRecord, ResourceRecordSet,
        RrType, Vpc, VpcRegion,
    };
    let (vpc, _) = default_network(sdk).await;
    let r53 = aws_sdk_route53::Client::new(sdk);
    let public = r53
        .create_hosted_zone()
        .name("example.com.")
        .caller_reference("public-1")
        .send()
        .await
        .unwrap();
    let id = public.hosted_zone().unwrap().id().to_string();
    let record = ResourceRecordSet::builder()
        .name("www.example.com.")
        .r#type(RrType::A)
        .ttl(60)
        .resource_records(ResourceRecord::builder().value("10.0.0.1").build().unwrap())
        .build()
        .unwrap();
    let change = Change::builder()
        .action(ChangeAction::Create)
        .resource_record_set(record)
        .build()
        .unwrap();
    r53.change_resource_record_sets()
        .hosted_zone_id(id)
        .change_batch(ChangeBatch::builder().changes(change).build().unwrap())
        .send()
        .await
        .unwrap();
    let config = HostedZoneConfig::builder()
        .private_zone(true)
        .comment("inside")
        .build();
    r53.create_hosted_zone()
        .name("internal.example.")
        .caller_reference("private-1")
        .hosted_zone_config(config)
        .vpc(
            Vpc::builder()
                .vpc_id(vpc)
                .vpc_region(VpcRegion::EuWest1)
                .build(),
        )
        .send()
        .await
        .unwrap();
}

async fn populate_emr(sdk: &SdkConfig) {
    use aws_sdk_emr::types::{
        Application, InstanceGroupConfig, InstanceRoleType, JobFlowInstancesConfig, Tag,
    };
    // Instance groups: moto 5.2.1 makes instances for those, not for `InstanceCount`.
    let group = |role: InstanceRoleType, count: i32| {
        InstanceGroupConfig::builder()
            .instance_role(role)
            .instance_type("m5.xlarge")
            .instance_count(count)
            .build()
    };
    let instances = JobFlowInstancesConfig::builder()
        .instance_groups(group(InstanceRoleType::Master, 1))
        .instance_groups(group(InstanceRoleType::Core, 2))
        .keep_job_flow_alive_when_no_steps(true)
        .build();
    aws_sdk_emr::Client::new(sdk)
        .run_job_flow()
        .name("etl")
        .release_label("emr-6.10.0")
        .applications(Application::builder().name("Spark").build())
        .instances(instances)
        .service_role("EMR_DefaultRole")
        .job_flow_role("EMR_EC2_DefaultRole")
        .tags(Tag::builder().key("team").value("data").build())
        .send()
        .await
        .unwrap();
}

/// Everything, as boto3 would make it; the log event's time.
async fn populate(url: &str) -> i64 {
    let home = sdk(url, HOME).await;
    let instance = an_instance(&home).await;
    populate_ecs(&home, &instance).await;
    populate_load_balancers(&home, &instance).await;
    populate_trails(url).await;
    populate_zones(&home).await;
    populate_emr(&home).await;
    populate_logs(&home).await
}

/// id → ARN of every resource of each type moto lists in `region` (hosted zones: the
/// account's, under `global`).
type Listing = BTreeMap<&'static str, BTreeMap<String, Option<String>>>;

async fn moto_lists_ecs(sdk: &SdkConfig, out: &mut Listing) {
    let ecs = aws_sdk_ecs::Client::new(sdk);
    for cluster in ecs.list_clusters().send().await.unwrap().cluster_arns() {
        let name = cluster.rsplit('/').next().unwrap();
        let entry = out.entry("AWS::ECS::Cluster").or_default();
        entry.insert(name.to_string(), Some(cluster.clone()));
        let services = ecs.list_services().cluster(cluster).send().await.unwrap();
        for s in services.service_arns() {
            let entry = out.entry("AWS::ECS::Service").or_default();
            entry.insert(format!("{s}|{cluster}"), Some(s.clone()));
        }
        let instances = ecs
            .list_container_instances()
            .cluster(cluster)
            .send()
            .await
            .unwrap();
        for i in instances.container_instance_arns() {
            let entry = out.entry("AWS::ECS::ContainerInstance").or_default();
            entry.insert(i.clone(), Some(i.clone()));
        }
    }
}

async fn moto_lists_load_balancers(sdk: &SdkConfig, region: &str, out: &mut Listing) {
    let elb = aws_sdk_elasticloadbalancing::Client::new(sdk);
    for lb in elb
        .describe_load_balancers()
        .send()
        .await
        .unwrap()
        .load_balancer_descriptions()
    {
        let name = lb.load_balancer_name().unwrap();
        let arn =
            format!("arn:aws:elasticloadbalancing:{region}:{MOTO_ACCOUNT}:loadbalancer/{name}");
        let entry = out
            .entry("AWS::ElasticLoadBalancing::LoadBalancer")
            .or_default();
        entry.insert(name.to_string(), Some(arn));
    }
    let v2 = aws_sdk_elasticloadbalancingv2::Client::new(sdk);
    for lb in v2
        .describe_load_balancers()
        .send()
        .await
        .unwrap()
        .load_balancers()
    {
        let arn = lb.load_balancer_arn().unwrap();
        let entry = out
            .entry("AWS::ElasticLoadBalancingV2::LoadBalancer")
            .or_default();
        entry.insert(arn.to_string(), Some(arn.to_string()));
        let listeners = v2
            .describe_listeners()
            .load_balancer_arn(arn)
            .send()
            .await
            .unwrap();
        for l in listeners.listeners() {
            let arn = l.listener_arn().unwrap().to_string();
            let entry = out
                .entry("AWS::ElasticLoadBalancingV2::Listener")
                .or_default();
            entry.insert(arn.clone(), Some(arn));
        }
    }
    for tg in v2
        .describe_target_groups()
        .send()
        .await
        .unwrap()
        .target_groups()
    {
        let arn = tg.target_group_arn().unwrap().to_string();
        let entry = out
            .entry("AWS::ElasticLoadBalancingV2::TargetGroup")
            .or_default();
        entry.insert(arn.clone(), Some(arn));
    }
}

async fn moto_lists(url: &str, region: &str) -> Listing {
    let sdk = sdk(url, region).await;
    let mut out = Listing::new();
    moto_lists_ecs(&sdk, &mut out).await;
    moto_lists_load_balancers(&sdk, region, &mut out).await;
    let logs = aws_sdk_cloudwatchlogs::Client::new(&sdk);
    for g in logs
        .describe_log_groups()
        .send()
        .await
        .unwrap()
        .log_groups()
    {
        let entry = out.entry("AWS::Logs::LogGroup").or_default();
        let arn = g.arn().unwrap().trim_end_matches(":*").to_string();
        entry.insert(g.log_group_name().unwrap().to_string(), Some(arn));
    }
    let trails = aws_sdk_cloudtrail::Client::new(&sdk);
    let trails = trails
        .describe_trails()
        .include_shadow_trails(true)
        .send()
        .await
        .unwrap();
    for t in trails
        .trail_list()
        .iter()
        .filter(|t| t.home_region() == Some(region))
    {
        let entry = out.entry("AWS::CloudTrail::Trail").or_default();
        entry.insert(
            t.name().unwrap().to_string(),
            t.trail_arn().map(str::to_string),
        );
    }
    let emr = aws_sdk_emr::Client::new(&sdk);
    for c in emr.list_clusters().send().await.unwrap().clusters() {
        let entry = out.entry("AWS::EMR::Cluster").or_default();
        entry.insert(
            c.id().unwrap().to_string(),
            c.cluster_arn().map(str::to_string),
        );
    }
    out
}

fn discover(url: &str, dir: &Path) -> std::process::Output {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("discover")
        .args(["--endpoint-url", url, "--regions", "us-east-1,eu-west-1"])
        .args([
            "--types",
            &TYPES.join(","),
            "--details",
            "--timeout",
            "120s",
        ])
        .arg("--output")
        .arg(dir.join("report.json"))
        .arg("--telemetry")
        .arg(dir.join("attempts.jsonl"))
        .env("TOLLGATE_ADMISSION_DIR", dir.join("admission"));
    tollgate_testkit::cli::output(tollgate_testkit::emulator_env(&mut cmd))
}

/// The report's items of `ty` in `region`, by id.
fn items<'a>(report: &'a Value, ty: &str, region: &str) -> BTreeMap<String, &'a Value> {
    report["datasets"][ty]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no {ty} dataset"))
        .iter()
        .filter(|i| i["region"] == region)
        .map(|i| (i["id"].as_str().unwrap().to_string(), i))
        .collect()
}

/// Every regional type in each region is exactly moto's listing, complete.
fn assert_exactly_what_moto_lists(report: &Value, rt: &tokio::runtime::Runtime, url: &str) {
    for region in REGIONS {
        let want = rt.block_on(moto_lists(url, region));
        for ty in TYPES.iter().filter(|t| **t != "AWS::Route53::HostedZone") {
            let got = items(report, ty, region);
            let expected = want.get(ty).cloned().unwrap_or_default();
            let got_ids: BTreeSet<&String> = got.keys().collect();
            let want_ids: BTreeSet<&String> = expected.keys().collect();
            assert_eq!(got_ids, want_ids, "{ty} in {region}");
            for (id, arn) in &expected {
                assert_eq!(got[id]["arn"], json!(arn), "{ty} {id}");
                assert_eq!(got[id]["account"], MOTO_ACCOUNT, "{ty} {id}");
            }
            let coverage = report["datasets"][ty]["coverage"].as_array().unwrap();
            let here: Vec<&Value> = coverage.iter().filter(|c| c["region"] == region).collect();
            assert_eq!(here.len(), 1, "{ty} {region}: {coverage:?}");
            assert_eq!(here[0]["status"], "complete", "{ty} {region}");
            assert_eq!(here[0]["count"], expected.len(), "{ty} {region}");
        }
    }
}

fn assert_properties(report: &Value, logged_at: i64) {
    let clusters = items(report, "AWS::ECS::Cluster", HOME);
    assert_eq!(clusters["web"]["tags"], json!({"team": "web"}));
    assert_eq!(clusters["web"]["properties"]["ClusterName"], "web");
    let services = items(report, "AWS::ECS::Service", HOME);
    let api = services
        .values()
        .find(|s| s["properties"]["ServiceName"] == "api")
        .unwrap();
    assert_eq!(api["properties"]["DesiredCount"], 2);
    assert_eq!(api["tags"], json!({"service": "api"}));
    let instances = items(report, "AWS::ECS::ContainerInstance", HOME);
    assert_eq!(instances.len(), 1);
    let classic = items(report, "AWS::ElasticLoadBalancing::LoadBalancer", HOME);
    assert_eq!(
        classic["legacy"]["properties"]["Instances"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        classic["legacy"]["properties"]["Listeners"][0]["InstancePort"],
        8080
    );
    let listeners = items(report, "AWS::ElasticLoadBalancingV2::Listener", HOME);
    let listener = listeners.values().next().unwrap();
    assert_eq!(
        listener["properties"]["DefaultActions"][0]["Type"],
        "forward"
    );
    let groups = items(report, "AWS::Logs::LogGroup", HOME);
    let web = &groups["/app/web"]["properties"];
    assert_eq!(web["RetentionInDays"], 30);
    assert!(web["StoredBytes"].is_number(), "{web}");
    let at = chrono::DateTime::from_timestamp_millis(logged_at)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
    assert_eq!(
        web["LastEventTime"],
        at.as_str(),
        "--details reads the last event"
    );
    assert!(groups["/app/jobs"]["properties"]
        .get("RetentionInDays")
        .is_none());
    assert_eq!(
        groups["/app/web"]["tags"],
        json!({"team": "web"}),
        "tags by ARN"
    );
    let trails = items(report, "AWS::CloudTrail::Trail", HOME);
    assert_eq!(trails["audit"]["properties"]["IsMultiRegionTrail"], true);
    assert_eq!(
        trails["audit"]["properties"]["EnableLogFileValidation"],
        true
    );
    assert!(items(report, "AWS::CloudTrail::Trail", OTHER).contains_key("local"));
    let emr = items(report, "AWS::EMR::Cluster", HOME);
    let etl = emr.values().next().unwrap();
    assert_eq!(etl["properties"]["Name"], "etl");
    assert_eq!(etl["properties"]["ReleaseLabel"], "emr-6.10.0");
    assert_eq!(etl["tags"], json!({"team": "data"}));
    let instances = etl["properties"]["Instances"].as_array().unwrap();
    assert_eq!(instances.len(), 3, "a master and two core instances");
    assert!(
        instances.iter().all(|i| i["Ec2InstanceId"].is_string()),
        "{instances:?}"
    );
}

/// Hosted zones: once, `global`, the record counts moto gives, a key without a region.
fn assert_zones(report: &Value, rt: &tokio::runtime::Runtime, url: &str) {
    let want = rt.block_on(async {
        let r53 = aws_sdk_route53::Client::new(&sdk(url, HOME).await);
        let zones = r53.list_hosted_zones().send().await.unwrap();
        zones
            .hosted_zones()
            .iter()
            .map(|z| {
                let id = z.id().trim_start_matches("/hostedzone/").to_string();
                (id, z.resource_record_set_count())
            })
            .collect::<BTreeMap<String, Option<i64>>>()
    });
    let got = items(report, "AWS::Route53::HostedZone", "global");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert_eq!(got.len(), 2);
    for (id, count) in &want {
        let z = &got[id];
        assert_eq!(z["arn"], format!("arn:aws:route53:::hostedzone/{id}"));
        assert_eq!(z["properties"]["ResourceRecordSetCount"], json!(count));
    }
    let public = got
        .values()
        .find(|z| z["properties"]["Name"] == "example.com.")
        .unwrap();
    assert_eq!(public["properties"]["PrivateZone"], false);
    assert_eq!(
        public["properties"]["ResourceRecordSetCount"], 3,
        "SOA, NS and the A"
    );
    let coverage = &report["datasets"]["AWS::Route53::HostedZone"]["coverage"];
    assert_eq!(coverage.as_array().unwrap().len(), 1, "{coverage}");
    assert_eq!(coverage[0]["region"], "global");
}

/// Each call was dispatched on the budget seed 000 gives it.
fn assert_budgets(dir: &Path) {
    let events: Vec<Value> = std::fs::read_to_string(dir.join("attempts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["dispatched"] == true)
        .collect();
    let quota = |op: &str| -> BTreeSet<String> {
        let keys = events.iter().filter(|e| e["operation"] == op);
        keys.map(|e| e["quota"].as_str().unwrap().to_string())
            .collect()
    };
    let tail = |key: &str| {
        key.split_once('/')
            .map(|(_, rest)| rest.to_string())
            .unwrap()
    };
    assert_eq!(
        quota("ListHostedZones")
            .iter()
            .map(|k| tail(k))
            .collect::<Vec<_>>(),
        [format!("{MOTO_ACCOUNT}/-/route53:all-requests")],
        "one global key, no region"
    );
    for (op, group) in [
        ("DescribeServices", "ecs:service-read"),
        ("ListServices", "ecs:service-read"),
        ("DescribeClusters", "ecs:cluster-resource-read"),
        ("ListContainerInstances", "ecs:cluster-resource-read"),
        ("DescribeListeners", "elasticloadbalancingv2:all-requests"),
        (
            "DescribeTargetGroups",
            "elasticloadbalancingv2:all-requests",
        ),
        ("DescribeLogStreams", "logs:DescribeLogStreams"),
        ("DescribeTrails", "cloudtrail:DescribeTrails"),
        ("DescribeCluster", "emr:DescribeCluster"),
        ("ListInstances", "emr:ListInstances"),
    ] {
        let keys = quota(op);
        assert!(!keys.is_empty(), "{op} was called");
        assert!(keys.iter().all(|k| k.ends_with(group)), "{op}: {keys:?}");
    }
    let classic = events
        .iter()
        .filter(|e| e["service"] == "elasticloadbalancing");
    assert!(classic
        .map(|e| e["quota"].as_str().unwrap())
        .all(|k| k.ends_with("/elasticloadbalancing:all-requests")));
}

#[test]
fn discover_reports_exactly_what_moto_lists_of_ecs_load_balancers_logs_trails_zones_and_emr() {
    let moto = DedicatedMoto::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let logged_at = rt.block_on(populate(&moto.url));
    let tmp = tempfile::tempdir().unwrap();
    let out = discover(&moto.url, tmp.path());
    let described = tollgate_testkit::cli::describe(&out);
    assert_eq!(out.status.code(), Some(0), "{described}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let sweep = report["datasets"]["tags-only"]["coverage"]
        .as_array()
        .unwrap();
    assert!(sweep.iter().all(|c| c["status"] == "complete"), "{sweep:?}");
    assert_eq!(
        report["datasets"]["tags-only"]["items"],
        json!([]),
        "every tag merged by ARN"
    );
    assert_exactly_what_moto_lists(&report, &rt, &moto.url);
    assert_properties(&report, logged_at);
    assert_zones(&report, &rt, &moto.url);
    assert_budgets(tmp.path());
}
