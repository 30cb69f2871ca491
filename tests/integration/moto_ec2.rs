//! `tollgate discover --types 'AWS::EC2::*'` against a moto server of this test's own,
//! over real HTTP (issue 33's EC2 must-show).
//!
//! The account is populated in two regions with plain Query-protocol requests, the calls
//! boto3 makes (instances with tags, a volume and its snapshot, AMIs made public, shared
//! with another account and private, a VPC with a subnet, a security group with rules,
//! an Elastic IP, a key pair), and the real binary scans it. The expectation is moto's
//! own answer, asked with the SDK after the scan: every native EC2 type in each region
//! is exactly what moto lists for the account (its default VPC, subnets and security
//! groups, the instances' root volumes and interfaces included; snapshots and AMIs the
//! account owns, not moto's public catalogue), with the ids, ARNs and tags it gives, the
//! AMIs' launch permissions, and exactly one `DescribeImageAttribute` per AMI. The rest
//! of `AWS::EC2::*` goes to Cloud Control, which moto does not serve: coverage entries
//! `unsupported`, never a failed scan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use aws_sdk_ec2::types::Tag;
use serde_json::{json, Value};
use tollgate_testkit::http::Call;
use tollgate_testkit::moto::{DedicatedMoto, Moto, MOTO_ACCOUNT};

const REGIONS: [&str; 2] = ["us-east-1", "eu-west-1"];
/// The account the shared AMIs are shared with.
const OTHER_ACCOUNT: &str = "210987654321";
/// An AMI of moto's catalogue, present in every region.
const SOURCE_AMI: &str = "ami-12c6146b";

/// The natively collected types (`tollgate types`: `native`) and their ARNs' kind.
const NATIVE: [(&str, &str); 17] = [
    ("AWS::EC2::EIP", "elastic-ip"),
    ("AWS::EC2::Image", "image"),
    ("AWS::EC2::Instance", "instance"),
    ("AWS::EC2::InternetGateway", "internet-gateway"),
    ("AWS::EC2::KeyPair", "key-pair"),
    ("AWS::EC2::LaunchTemplate", "launch-template"),
    ("AWS::EC2::NatGateway", "natgateway"),
    ("AWS::EC2::NetworkInterface", "network-interface"),
    ("AWS::EC2::RouteTable", "route-table"),
    ("AWS::EC2::SecurityGroup", "security-group"),
    ("AWS::EC2::Snapshot", "snapshot"),
    ("AWS::EC2::Subnet", "subnet"),
    ("AWS::EC2::TransitGateway", "transit-gateway"),
    (
        "AWS::EC2::TransitGatewayAttachment",
        "transit-gateway-attachment",
    ),
    ("AWS::EC2::VPC", "vpc"),
    ("AWS::EC2::VPCEndpoint", "vpc-endpoint"),
    ("AWS::EC2::Volume", "volume"),
];

/// One EC2 Query request in `region` (`params` without `Version`); the answer's text.
fn ec2(moto: &Moto, region: &str, params: &str) -> String {
    let call = Call::new("POST", "/")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("{params}&Version=2016-11-15"));
    let answer = moto.call_in(region, "ec2", call);
    assert_eq!(answer.status, 200, "{params}: {}", answer.text());
    answer.text()
}

/// Every `<tag>` text of `xml`, in order.
fn all(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(&open)
        .skip(1)
        .filter_map(|rest| rest.split_once(&close).map(|(v, _)| v.to_string()))
        .collect()
}

/// The first `<tag>` text of `xml`.
fn first(xml: &str, tag: &str) -> String {
    all(xml, tag)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no <{tag}> in {xml}"))
}

/// `TagSpecification.1` for `resource_type` with `key=value`.
fn tagged(resource_type: &str, key: &str, value: &str) -> String {
    format!(
        "TagSpecification.1.ResourceType={resource_type}&TagSpecification.1.Tag.1.Key={key}\
         &TagSpecification.1.Tag.1.Value={value}"
    )
}

/// The AMIs made in one region.
struct Amis {
    public: String,
    shared: String,
    private: String,
}

/// One region's resources, as boto3 would make them; the AMIs made.
fn populate(moto: &Moto, region: &str, n: usize) -> Amis {
    let vpc = first(
        &ec2(
            moto,
            region,
            &format!(
                "Action=CreateVpc&CidrBlock=10.{n}.0.0/16&{}",
                tagged("vpc", "Name", "app")
            ),
        ),
        "vpcId",
    );
    let subnet = first(
        &ec2(
            moto,
            region,
            &format!(
                "Action=CreateSubnet&VpcId={vpc}&CidrBlock=10.{n}.1.0/24&AvailabilityZone={region}a&{}",
                tagged("subnet", "tier", "web")
            ),
        ),
        "subnetId",
    );
    let gateway = first(
        &ec2(
            moto,
            region,
            &format!(
                "Action=CreateTransitGateway&Description=core+network&{}",
                tagged("transit-gateway", "team", "network")
            ),
        ),
        "transitGatewayId",
    );
    ec2(
        moto,
        region,
        &format!(
            "Action=CreateTransitGatewayVpcAttachment&TransitGatewayId={gateway}&VpcId={vpc}\
             &SubnetIds.1={subnet}&{}",
            tagged("transit-gateway-attachment", "team", "network")
        ),
    );
    let group = first(
        &ec2(
            moto,
            region,
            &format!(
                "Action=CreateSecurityGroup&GroupName=web&GroupDescription=web+servers&VpcId={vpc}&{}",
                tagged("security-group", "team", "web")
            ),
        ),
        "groupId",
    );
    ec2(
        moto,
        region,
        &format!(
            "Action=AuthorizeSecurityGroupIngress&GroupId={group}\
             &IpPermissions.1.IpProtocol=tcp&IpPermissions.1.FromPort=443&IpPermissions.1.ToPort=443\
             &IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0/8&IpPermissions.1.IpRanges.1.Description=inside"
        ),
    );
    let instances = all(
        &ec2(
            moto,
            region,
            &format!(
                "Action=RunInstances&ImageId={SOURCE_AMI}&MinCount=2&MaxCount=2&InstanceType=t3.micro\
                 &SubnetId={subnet}&SecurityGroupId.1={group}&{}",
                tagged("instance", "team", "core")
            ),
        ),
        "instanceId",
    );
    assert_eq!(instances.len(), 2);
    let volume = first(
        &ec2(
            moto,
            region,
            &format!(
                "Action=CreateVolume&AvailabilityZone={region}a&Size=20&{}",
                tagged("volume", "purpose", "data")
            ),
        ),
        "volumeId",
    );
    ec2(
        moto,
        region,
        &format!(
            "Action=CreateSnapshot&VolumeId={volume}&Description=nightly&{}",
            tagged("snapshot", "backup", "nightly")
        ),
    );
    let image = |name: &str, instance: &str| {
        first(
            &ec2(
                moto,
                region,
                &format!(
                    "Action=CreateImage&InstanceId={instance}&Name={name}-{region}&{}",
                    tagged("image", "visibility", name)
                ),
            ),
            "imageId",
        )
    };
    let amis = Amis {
        public: image("public", &instances[0]),
        shared: image("shared", &instances[1]),
        private: image("private", &instances[0]),
    };
    let permit = |ami: &str, who: &str| {
        ec2(
            moto,
            region,
            &format!("Action=ModifyImageAttribute&ImageId={ami}&LaunchPermission.Add.1.{who}"),
        )
    };
    permit(&amis.public, "Group=all");
    permit(&amis.shared, &format!("UserId={OTHER_ACCOUNT}"));
    ec2(
        moto,
        region,
        &format!(
            "Action=AllocateAddress&Domain=vpc&{}",
            tagged("elastic-ip", "role", "egress")
        ),
    );
    ec2(
        moto,
        region,
        &format!(
            "Action=CreateKeyPair&KeyName=deploy-{region}&{}",
            tagged("key-pair", "owner", "ops")
        ),
    );
    amis
}

/// What moto lists of one type in one region: by id, the ARN and tags it must have.
type Listing = BTreeMap<String, (String, BTreeMap<String, String>)>;

fn tags(tags: &[Tag]) -> BTreeMap<String, String> {
    tags.iter()
        .map(|t| {
            (
                t.key().unwrap_or_default().to_string(),
                t.value().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// moto's own answer for `region`, by type: the account's resources of each native type.
async fn moto_lists(url: &str, region: &str) -> BTreeMap<&'static str, Listing> {
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .http_client(tollgate_engine::aws::default_http_client())
        .endpoint_url(url)
        .region(Region::new(region.to_owned()))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
        .load()
        .await;
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let arn = |kind: &str, id: &str| format!("arn:aws:ec2:{region}:{MOTO_ACCOUNT}:{kind}/{id}");
    let mut out: BTreeMap<&'static str, Listing> = BTreeMap::new();
    let mut put = |ty: &'static str, id: &str, arn_id: &str, t: &[Tag]| {
        let kind = NATIVE.iter().find(|(n, _)| *n == ty).unwrap().1;
        out.entry(ty)
            .or_default()
            .insert(id.to_string(), (arn(kind, arn_id), tags(t)));
    };
    for r in ec2
        .describe_instances()
        .send()
        .await
        .unwrap()
        .reservations()
    {
        for i in r.instances() {
            let id = i.instance_id().unwrap();
            put("AWS::EC2::Instance", id, id, i.tags());
        }
    }
    for v in ec2.describe_volumes().send().await.unwrap().volumes() {
        let id = v.volume_id().unwrap();
        put("AWS::EC2::Volume", id, id, v.tags());
    }
    let snapshots = ec2
        .describe_snapshots()
        .owner_ids("self")
        .send()
        .await
        .unwrap();
    assert!(
        snapshots
            .snapshots()
            .iter()
            .any(|s| s.owner_id() != Some(MOTO_ACCOUNT)),
        "moto answers OwnerIds=self with its public catalogue too: the collector must not"
    );
    for s in snapshots.snapshots() {
        if s.owner_id() == Some(MOTO_ACCOUNT) {
            let id = s.snapshot_id().unwrap();
            put("AWS::EC2::Snapshot", id, id, s.tags());
        }
    }
    for i in ec2
        .describe_images()
        .owners("self")
        .send()
        .await
        .unwrap()
        .images()
    {
        let id = i.image_id().unwrap();
        put("AWS::EC2::Image", id, id, i.tags());
    }
    for v in ec2.describe_vpcs().send().await.unwrap().vpcs() {
        let id = v.vpc_id().unwrap();
        put("AWS::EC2::VPC", id, id, v.tags());
    }
    for s in ec2.describe_subnets().send().await.unwrap().subnets() {
        let id = s.subnet_id().unwrap();
        put("AWS::EC2::Subnet", id, id, s.tags());
    }
    for g in ec2
        .describe_security_groups()
        .send()
        .await
        .unwrap()
        .security_groups()
    {
        let id = g.group_id().unwrap();
        put("AWS::EC2::SecurityGroup", id, id, g.tags());
    }
    for n in ec2
        .describe_network_interfaces()
        .send()
        .await
        .unwrap()
        .network_interfaces()
    {
        let id = n.network_interface_id().unwrap();
        put("AWS::EC2::NetworkInterface", id, id, n.tag_set());
    }
    for a in ec2.describe_addresses().send().await.unwrap().addresses() {
        let allocation = a.allocation_id().unwrap();
        let id = format!("{}|{allocation}", a.public_ip().unwrap());
        put("AWS::EC2::EIP", &id, allocation, a.tags());
    }
    for g in ec2
        .describe_nat_gateways()
        .send()
        .await
        .unwrap()
        .nat_gateways()
    {
        let id = g.nat_gateway_id().unwrap();
        put("AWS::EC2::NatGateway", id, id, g.tags());
    }
    for g in ec2
        .describe_internet_gateways()
        .send()
        .await
        .unwrap()
        .internet_gateways()
    {
        let id = g.internet_gateway_id().unwrap();
        put("AWS::EC2::InternetGateway", id, id, g.tags());
    }
    for t in ec2
        .describe_route_tables()
        .send()
        .await
        .unwrap()
        .route_tables()
    {
        let id = t.route_table_id().unwrap();
        put("AWS::EC2::RouteTable", id, id, t.tags());
    }
    for e in ec2
        .describe_vpc_endpoints()
        .send()
        .await
        .unwrap()
        .vpc_endpoints()
    {
        let id = e.vpc_endpoint_id().unwrap();
        put("AWS::EC2::VPCEndpoint", id, id, e.tags());
    }
    for t in ec2
        .describe_launch_templates()
        .send()
        .await
        .unwrap()
        .launch_templates()
    {
        let id = t.launch_template_id().unwrap();
        put("AWS::EC2::LaunchTemplate", id, id, t.tags());
    }
    for g in ec2
        .describe_transit_gateways()
        .send()
        .await
        .unwrap()
        .transit_gateways()
    {
        let id = g.transit_gateway_id().unwrap();
        put("AWS::EC2::TransitGateway", id, id, g.tags());
    }
    for a in ec2
        .describe_transit_gateway_attachments()
        .send()
        .await
        .unwrap()
        .transit_gateway_attachments()
    {
        let id = a.transit_gateway_attachment_id().unwrap();
        put("AWS::EC2::TransitGatewayAttachment", id, id, a.tags());
    }
    for k in ec2.describe_key_pairs().send().await.unwrap().key_pairs() {
        put(
            "AWS::EC2::KeyPair",
            k.key_name().unwrap(),
            k.key_pair_id().unwrap(),
            k.tags(),
        );
    }
    out
}

fn discover(url: &str, dir: &Path) -> std::process::Output {
    let mut cmd = tollgate_testkit::cli::command(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("discover")
        .args(["--endpoint-url", url, "--regions", "us-east-1,eu-west-1"])
        .args(["--types", "AWS::EC2::*", "--timeout", "120s"])
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

#[test]
fn discover_ec2_reports_exactly_what_moto_lists_in_two_regions_with_arns_tags_and_launch_permissions(
) {
    let dedicated = DedicatedMoto::start();
    let moto = Moto {
        url: dedicated.url.clone(),
    };
    let amis: Vec<Amis> = REGIONS
        .iter()
        .enumerate()
        .map(|(n, r)| populate(&moto, r, n))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let out = discover(&moto.url, tmp.path());
    let described = tollgate_testkit::cli::describe(&out);
    assert_eq!(out.status.code(), Some(0), "{described}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
    tollgate_testkit::report_schema::assert_valid(&report);
    let rt = tokio::runtime::Runtime::new().unwrap();

    for (region, amis) in REGIONS.iter().zip(&amis) {
        let want = rt.block_on(moto_lists(&moto.url, region));
        for (ty, _) in NATIVE {
            let got = items(&report, ty, region);
            let expected = want.get(ty).cloned().unwrap_or_default();
            let got_ids: BTreeSet<&String> = got.keys().collect();
            let want_ids: BTreeSet<&String> = expected.keys().collect();
            assert_eq!(got_ids, want_ids, "{ty} in {region}");
            for (id, (arn, tags)) in &expected {
                let item = got[id];
                assert_eq!(item["arn"], arn.as_str(), "{ty} {id}");
                assert_eq!(item["tags"], json!(tags), "{ty} {id}");
                assert_eq!(item["account"], MOTO_ACCOUNT, "{ty} {id}");
            }
            let coverage = &report["datasets"][ty]["coverage"];
            let here: Vec<&Value> = coverage
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["region"] == *region)
                .collect();
            assert_eq!(here.len(), 1, "{ty} {region}: {coverage}");
            assert_eq!(here[0]["status"], "complete", "{ty} {region}");
            assert_eq!(here[0]["count"], expected.len(), "{ty} {region}");
        }
        // What was made is there: tagged, with the account's own AMIs and their
        // launch permissions, and moto's defaults (default VPC, its subnets and group).
        let images = items(&report, "AWS::EC2::Image", region);
        let permissions = |ami: &str| &images[ami]["properties"]["LaunchPermissions"];
        assert_eq!(permissions(&amis.public), &json!([{"Group": "all"}]));
        assert_eq!(
            permissions(&amis.shared),
            &json!([{"UserId": OTHER_ACCOUNT}])
        );
        assert_eq!(permissions(&amis.private), &json!([]));
        assert_eq!(images[&amis.public]["properties"]["Public"], true);
        assert_eq!(images[&amis.shared]["properties"]["Public"], false);
        assert_eq!(images.len(), 3, "self-owned AMIs only");
        assert_eq!(
            images[&amis.public]["tags"],
            json!({"visibility": "public"})
        );
        let vpcs = items(&report, "AWS::EC2::VPC", region);
        assert_eq!(vpcs.len(), 2, "the default VPC and the one made: {vpcs:?}");
        let instances = items(&report, "AWS::EC2::Instance", region);
        assert_eq!(instances.len(), 2);
        let volumes = items(&report, "AWS::EC2::Volume", region);
        let interfaces = items(&report, "AWS::EC2::NetworkInterface", region);
        for instance in instances.values() {
            assert_eq!(instance["tags"], json!({"team": "core"}));
            let p = &instance["properties"];
            for v in p["Volumes"].as_array().unwrap() {
                let id = v["VolumeId"].as_str().unwrap();
                assert!(volumes.contains_key(id), "root volume {id} listed");
            }
            for n in p["NetworkInterfaces"].as_array().unwrap() {
                let id = n["NetworkInterfaceId"].as_str().unwrap();
                assert!(interfaces.contains_key(id), "interface {id} listed");
            }
        }
        let groups = items(&report, "AWS::EC2::SecurityGroup", region);
        let web = groups
            .values()
            .find(|g| g["properties"]["GroupName"] == "web")
            .expect("the group made");
        assert!(
            web["properties"]["SecurityGroupIngress"]
                .as_array()
                .unwrap()
                .contains(&json!({"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443,
                    "CidrIp": "10.0.0.0/8", "Description": "inside"})),
            "{web}"
        );
        let snapshots = items(&report, "AWS::EC2::Snapshot", region);
        assert!(snapshots
            .values()
            .any(|s| s["tags"] == json!({"backup": "nightly"})));
        let keys = items(&report, "AWS::EC2::KeyPair", region);
        let key = &keys[&format!("deploy-{region}")];
        assert_eq!(key["tags"], json!({"owner": "ops"}));
        // The transit gateway and its VPC attachment; without --pricing, no price.
        let gateways = items(&report, "AWS::EC2::TransitGateway", region);
        assert_eq!(gateways.len(), 1, "{gateways:?}");
        let (gateway, g) = gateways.iter().next().unwrap();
        assert_eq!(g["tags"], json!({"team": "network"}));
        assert_eq!(g["properties"]["Description"], "core network");
        let attachments = items(&report, "AWS::EC2::TransitGatewayAttachment", region);
        assert_eq!(attachments.len(), 1, "{attachments:?}");
        let a = &attachments.values().next().unwrap()["properties"];
        assert_eq!(a["TransitGatewayId"], gateway.as_str());
        assert_eq!(a["ResourceType"], "vpc");
        assert_eq!(a["VpcId"], a["ResourceId"]);
        assert!(vpcs.contains_key(a["VpcId"].as_str().unwrap()), "{a}");
        assert!(a.get("HourlyPrice").is_none() && g["properties"].get("HourlyPrice").is_none());
    }

    // Every tagged EC2 resource the tagging API lists was merged into its item by ARN:
    // none is left over as tags-only.
    assert_eq!(report["datasets"]["tags-only"]["items"], json!([]));

    // The rest of AWS::EC2::* went to Cloud Control, which moto does not serve.
    let native: BTreeSet<&str> = NATIVE.iter().map(|(t, _)| *t).collect();
    let swept: Vec<(&String, &Value)> = report["datasets"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| name.starts_with("AWS::EC2::") && !native.contains(name.as_str()))
        .collect();
    assert!(swept.len() > 40, "{}", swept.len());
    for (name, dataset) in swept {
        assert_eq!(dataset["status"], "complete", "{name}");
        for c in dataset["coverage"].as_array().unwrap() {
            // A type listed under a parent (AWS::EC2::IPAMAllocation under its pool) is
            // skipped, for its parent type's own reason.
            let reason = c["reason"].as_str().unwrap();
            match c["status"].as_str() {
                Some("unsupported") => {}
                Some("skipped") => assert!(reason.starts_with("the parent type"), "{reason}"),
                _ => panic!("{name}: {c}"),
            }
            assert!(reason.contains("does not serve Cloud Control"), "{reason}");
        }
    }

    // One DescribeImageAttribute per AMI, and every EC2 call on its action's own budget.
    let events: Vec<Value> = std::fs::read_to_string(tmp.path().join("attempts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["service"] == "ec2")
        .collect();
    for region in REGIONS {
        let reads = events
            .iter()
            .filter(|e| e["operation"] == "DescribeImageAttribute")
            .filter(|e| e["quota"].as_str().unwrap().contains(region))
            .filter(|e| e["dispatched"] == true)
            .count();
        assert_eq!(reads, 3, "one per AMI in {region}");
    }
    assert!(events.iter().all(|e| e.get("unfilteredQuota").is_none()));
}
