//! The organization `bench org` scans, generated rather than bundled: a management
//! account and `accounts − 1` members, every one enabled in the same `regions`, each with
//! a small inventory per region and server quotas of its own; the hub calls
//! (ListAccounts pages, every AssumeRole) are charged to the management account's.
//!
//! Why generated: a 200-account file would be thousands of lines nobody reads; the shape
//! (accounts, regions, items per region) is what the bench varies.

use std::fmt::Write;

use tollgate_sim::Scenario;

/// Regions, in the order the first `R` are taken (AWS's commercial regions).
pub const REGIONS: &[&str] = &[
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-north-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-south-1",
    "ca-central-1",
    "sa-east-1",
];

/// What the generated organization looks like.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Accounts, the management account included (at least 1).
    pub accounts: usize,
    /// Regions enabled in every account (1 to `REGIONS.len()`).
    pub regions: usize,
    /// Lambda functions, DynamoDB tables and KMS keys per account-region (each).
    pub items_per_region: usize,
    /// EC2 instances, snapshots and images per account-region (each), in a VPC with a
    /// subnet and a security group; 0: no `[ec2]` at all (the scenario of earlier runs).
    pub ec2_per_region: usize,
    /// Resources of each swept Cloud Control type ([`SWEPT`]) per account-region (the
    /// global IAM roles: per account), each type's underlying list operations under
    /// the server quotas of [`UNDERLYING_QUOTAS`]; 0: no `[cloudcontrol]` at all.
    pub cloudcontrol_per_region: usize,
}

/// The Cloud Control types `--breadth` sweeps in every account: (type, global, the
/// underlying operations one `ListResources` page performs, as the checked-in
/// CloudFormation schemas name them: `tollgate types --json`'s `charges`).
pub const SWEPT: &[(&str, bool, &[&str])] = &[
    ("AWS::IAM::Role", true, &["iam:ListRoles"]),
    ("AWS::SQS::Queue", false, &["sqs:ListQueues"]),
    ("AWS::Kinesis::Stream", false, &["kinesis:ListStreams"]),
    ("AWS::SNS::Topic", false, &["sns:ListTopics"]),
    ("AWS::ECR::Repository", false, &["ecr:DescribeRepositories"]),
];

/// Every account's server quotas of underlying operations when it has Cloud Control
/// resources, far below `cloudcontrol:ListResources`'s (the members' default, 50/s):
/// IAM's is one per account (global), the others per account and region. A gate that
/// charged Cloud Control's own key alone would send these pages at 50/s and be
/// throttled.
/// `cloudcontrol:ListResources` is listed at the members' default (50/s burst 50) so
/// that tollgate is told it too: its own default for Cloud Control is 10/s, a figure AWS
/// does not publish, and the bench measures how close tollgate comes to the quotas it
/// is told.
pub const UNDERLYING_QUOTAS: &[(&str, f64, u32, &[&str])] = &[
    ("iam:ListRoles", 2.0, 3, &[]),
    ("sqs:ListQueues", 2.0, 2, &[]),
    ("ecr:DescribeRepositories", 2.0, 2, &[]),
    ("cloudcontrol:ListResources", 50.0, 50, &[]),
];

/// The management account's id.
pub const MANAGEMENT: &str = "100000000000";

/// The id of account `i` (0 is the management account).
pub fn account_id(i: usize) -> String {
    format!("{:012}", 100_000_000_000u64 + i as u64)
}

/// The scenario's TOML text (kept so that `--keep` can write it next to the reports).
pub fn toml(shape: Shape) -> String {
    let regions: Vec<String> = REGIONS[..shape.regions.clamp(1, REGIONS.len())]
        .iter()
        .map(|r| format!("{r:?}"))
        .collect();
    let regions = regions.join(", ");
    let mut t = String::new();
    let _ = writeln!(
        t,
        "account = {MANAGEMENT:?}\nregions = [{regions}]\nseed = 21\n"
    );
    t.push_str("[latency]\ndefault = { kind = \"lognormal\", p50_ms = 5, p99_ms = 25 }\n\n");
    t.push_str("[quotas]\ndefault = { rate_per_second = 50.0, burst = 50 }\n\n");
    t.push_str("[quotas.operations]\n");
    t.push_str("\"sts:AssumeRole\" = { rate_per_second = 10.0, burst = 5 }\n");
    t.push_str("\"organizations:ListAccounts\" = { rate_per_second = 2.0, burst = 1 }\n");
    underlying_quotas(&mut t, shape);
    t.push('\n');
    inventory(&mut t, "inventory", shape);
    ec2(&mut t, "ec2", shape);
    cloudcontrol(&mut t, "cloudcontrol", shape);
    t.push_str("[organization]\nlist_accounts_page = 20\n\n");
    for i in 1..shape.accounts.max(1) {
        let _ = writeln!(
            t,
            "[[organization.members]]\naccount = {:?}\nregions = [{regions}]\n",
            account_id(i)
        );
        t.push_str(
            "[organization.members.quotas]\ndefault = { rate_per_second = 50.0, burst = 50 }\n\n",
        );
        if shape.cloudcontrol_per_region > 0 {
            t.push_str("[organization.members.quotas.operations]\n");
            underlying_quotas(&mut t, shape);
            t.push('\n');
        }
        inventory(&mut t, "organization.members.inventory", shape);
        ec2(&mut t, "organization.members.ec2", shape);
        cloudcontrol(&mut t, "organization.members.cloudcontrol", shape);
    }
    t
}

/// One account's EC2 when `ec2_per_region` is above 0: in every region a VPC with a
/// subnet and a security group (fixed ids: ids are per account), and `ec2_per_region`
/// instances in the subnet (each with its root volume and primary interface), snapshots
/// and images of the account's own.
fn ec2(t: &mut String, table: &str, shape: Shape) {
    let n = shape.ec2_per_region;
    if n == 0 {
        return;
    }
    for (k, region) in REGIONS[..shape.regions.clamp(1, REGIONS.len())]
        .iter()
        .enumerate()
    {
        let (vpc, subnet) = (
            format!("vpc-{:08x}", k + 1),
            format!("subnet-{:08x}", k + 1),
        );
        let group = format!("sg-{:08x}", k + 1);
        let _ = writeln!(
            t,
            "[[{table}.vpcs]]\nid = {vpc:?}\nregion = {region:?}\n\n\
             [[{table}.subnets]]\nid = {subnet:?}\nregion = {region:?}\nvpc_id = {vpc:?}\n\n\
             [[{table}.security_groups]]\nid = {group:?}\nregion = {region:?}\nvpc_id = {vpc:?}\n\n\
             [[{table}.instance_sets]]\ncount = {n}\nregion = {region:?}\nsubnet_id = {subnet:?}\n\
             security_group_ids = [{group:?}]\n\n\
             [[{table}.snapshot_sets]]\ncount = {n}\nregion = {region:?}\n\n\
             [[{table}.image_sets]]\ncount = {n}\nregion = {region:?}\nname = \"bench\"\n"
        );
    }
}

/// [`UNDERLYING_QUOTAS`] as `[quotas.operations]` entries, when the shape sweeps.
fn underlying_quotas(t: &mut String, shape: Shape) {
    if shape.cloudcontrol_per_region == 0 {
        return;
    }
    for (name, rate, burst, operations) in UNDERLYING_QUOTAS {
        let operations = match operations {
            [] => String::new(),
            ops => {
                let ops: Vec<String> = ops.iter().map(|o| format!("{o:?}")).collect();
                format!(", operations = [{}]", ops.join(", "))
            }
        };
        let _ = writeln!(
            t,
            "{name:?} = {{ rate_per_second = {rate:.1}, burst = {burst}{operations} }}"
        );
    }
}

/// One account's Cloud Control types ([`SWEPT`]) and `cloudcontrol_per_region`
/// resources of each in every region (the global roles once).
fn cloudcontrol(t: &mut String, table: &str, shape: Shape) {
    let n = shape.cloudcontrol_per_region;
    if n == 0 {
        return;
    }
    let regions = &REGIONS[..shape.regions.clamp(1, REGIONS.len())];
    for (ty, global, ops) in SWEPT {
        let ops: Vec<String> = ops.iter().map(|o| format!("{o:?}")).collect();
        let _ = writeln!(
            t,
            "[[{table}.types]]\ntype = {ty:?}\nglobal = {global}\nlist_operations = [{}]\n",
            ops.join(", ")
        );
        let prefix = ty.rsplit("::").next().unwrap_or("r").to_ascii_lowercase();
        let places: &[&str] = if *global { &regions[..1] } else { regions };
        for region in places {
            let _ = writeln!(
                t,
                "[[{table}.resource_sets]]\ntype = {ty:?}\nregion = {region:?}\ncount = {n}\nprefix = \"{prefix}-{region}\"\n"
            );
        }
    }
}

/// One account's inventory: one bucket in the first region, and `items_per_region`
/// functions, tables and keys in every region.
fn inventory(t: &mut String, table: &str, shape: Shape) {
    let n = shape.items_per_region;
    let _ = writeln!(
        t,
        "[[{table}.bucket_sets]]\ncount = 1\nprefix = \"bench-\"\nregion = {:?}\n",
        REGIONS[0]
    );
    if n == 0 {
        return;
    }
    for region in &REGIONS[..shape.regions.clamp(1, REGIONS.len())] {
        let _ = writeln!(
            t,
            "[[{table}.function_sets]]\ncount = {n}\nprefix = \"fn-{region}-\"\nregion = {region:?}\n"
        );
        let _ = writeln!(
            t,
            "[[{table}.table_sets]]\ncount = {n}\nprefix = \"t-{region}-\"\nregion = {region:?}\n"
        );
        let _ = writeln!(
            t,
            "[[{table}.key_sets]]\ncount = {n}\nregion = {region:?}\n"
        );
    }
}

/// The scenario itself.
pub fn scenario(shape: Shape) -> anyhow::Result<Scenario> {
    Scenario::parse(&toml(shape), "bench org (generated)")
        .map_err(|e| anyhow::anyhow!("the generated organization scenario: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_organization_has_every_member_in_every_region() {
        let s = scenario(Shape {
            accounts: 3,
            regions: 2,
            items_per_region: 1,
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
        })
        .unwrap();
        let org = s.organization.as_ref().unwrap();
        assert_eq!(org.members.len(), 2);
        for m in &org.members {
            assert_eq!(m.scenario.regions, ["us-east-1", "us-east-2"]);
            let c = m.scenario.inventory_counts();
            assert_eq!((c.buckets, c.functions, c.tables, c.keys), (1, 2, 2, 2));
            assert!(m.scenario.ec2_counts().is_empty(), "no EC2 unless asked");
        }
        assert_eq!(s.server_quota("sts:AssumeRole"), (10.0, 5));
    }

    #[test]
    fn members_get_ec2_in_every_region_when_asked_and_the_rest_is_unchanged() {
        let shape = Shape {
            accounts: 3,
            regions: 2,
            items_per_region: 1,
            ec2_per_region: 4,
            cloudcontrol_per_region: 0,
        };
        let s = scenario(shape).unwrap();
        for account in std::iter::once(&s).chain(
            s.organization
                .iter()
                .flat_map(|o| o.members.iter().map(|m| &m.scenario)),
        ) {
            let c = account.ec2_counts();
            let each = |ty: &str| c[ty];
            // 2 regions × (4 instances, their 4 root volumes and 4 interfaces, ...).
            assert_eq!(each("AWS::EC2::Instance"), 8);
            assert_eq!(
                (each("AWS::EC2::Volume"), each("AWS::EC2::NetworkInterface")),
                (8, 8)
            );
            assert_eq!(
                (each("AWS::EC2::Snapshot"), each("AWS::EC2::Image")),
                (8, 8)
            );
            assert_eq!((each("AWS::EC2::VPC"), each("AWS::EC2::Subnet")), (2, 2));
        }
        // Without EC2 the text is exactly the earlier scenario's.
        let without = toml(Shape {
            ec2_per_region: 0,
            cloudcontrol_per_region: 0,
            ..shape
        });
        assert!(!without.contains("ec2"));
        assert_eq!(
            scenario(Shape {
                ec2_per_region: 0,
                cloudcontrol_per_region: 0,
                ..shape
            })
            .unwrap()
            .inventory_counts(),
            s.inventory_counts()
        );
    }
}
