//! `Ec2Type`: the EC2 types collected natively (issue 33, item 2), named once: their
//! CloudFormation type names, in the order the report lists them.
//!
//! Here rather than in the collectors (`crate::ec2`) for the reason the other native
//! types' names live in [`Dataset`](super::Dataset): the dataset list depends on no
//! collector. `AWS::EC2::Snapshot` and `AWS::EC2::Image` are not CloudFormation types
//! (CloudFormation has neither); they are names in the same style
//! ([`crate::types::NOT_CLOUDFORMATION`]).

/// One natively collected EC2 type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ec2Type {
    /// `AWS::EC2::EIP`: Elastic IP addresses.
    Eip,
    /// `AWS::EC2::Image`: AMIs the account owns, with their launch permissions.
    Image,
    /// `AWS::EC2::Instance`.
    Instance,
    /// `AWS::EC2::InternetGateway`.
    InternetGateway,
    /// `AWS::EC2::KeyPair`.
    KeyPair,
    /// `AWS::EC2::LaunchTemplate`.
    LaunchTemplate,
    /// `AWS::EC2::NatGateway`.
    NatGateway,
    /// `AWS::EC2::NetworkInterface`.
    NetworkInterface,
    /// `AWS::EC2::RouteTable`.
    RouteTable,
    /// `AWS::EC2::SecurityGroup`, with its rules.
    SecurityGroup,
    /// `AWS::EC2::Snapshot`: EBS snapshots the account owns.
    Snapshot,
    /// `AWS::EC2::Subnet`.
    Subnet,
    /// `AWS::EC2::TransitGateway`, with an hourly price under `--pricing` (the sum of
    /// its attachments': AWS charges per attachment-hour).
    TransitGateway,
    /// `AWS::EC2::TransitGatewayAttachment`: every attachment kind (VPC, VPN, peering,
    /// Connect, Direct Connect gateway), with its hourly price under `--pricing`.
    TransitGatewayAttachment,
    /// `AWS::EC2::VPC`.
    Vpc,
    /// `AWS::EC2::VPCEndpoint`.
    VpcEndpoint,
    /// `AWS::EC2::Volume`: EBS volumes.
    Volume,
}

impl Ec2Type {
    /// Every one, sorted by type name (the order of the variants).
    pub const ALL: [Ec2Type; 17] = [
        Ec2Type::Eip,
        Ec2Type::Image,
        Ec2Type::Instance,
        Ec2Type::InternetGateway,
        Ec2Type::KeyPair,
        Ec2Type::LaunchTemplate,
        Ec2Type::NatGateway,
        Ec2Type::NetworkInterface,
        Ec2Type::RouteTable,
        Ec2Type::SecurityGroup,
        Ec2Type::Snapshot,
        Ec2Type::Subnet,
        Ec2Type::TransitGateway,
        Ec2Type::TransitGatewayAttachment,
        Ec2Type::Vpc,
        Ec2Type::VpcEndpoint,
        Ec2Type::Volume,
    ];

    /// The type name of its items (`AWS::EC2::Instance`).
    pub const fn resource_type(self) -> &'static str {
        match self {
            Ec2Type::Eip => "AWS::EC2::EIP",
            Ec2Type::Image => "AWS::EC2::Image",
            Ec2Type::Instance => "AWS::EC2::Instance",
            Ec2Type::InternetGateway => "AWS::EC2::InternetGateway",
            Ec2Type::KeyPair => "AWS::EC2::KeyPair",
            Ec2Type::LaunchTemplate => "AWS::EC2::LaunchTemplate",
            Ec2Type::NatGateway => "AWS::EC2::NatGateway",
            Ec2Type::NetworkInterface => "AWS::EC2::NetworkInterface",
            Ec2Type::RouteTable => "AWS::EC2::RouteTable",
            Ec2Type::SecurityGroup => "AWS::EC2::SecurityGroup",
            Ec2Type::Snapshot => "AWS::EC2::Snapshot",
            Ec2Type::Subnet => "AWS::EC2::Subnet",
            Ec2Type::TransitGateway => "AWS::EC2::TransitGateway",
            Ec2Type::TransitGatewayAttachment => "AWS::EC2::TransitGatewayAttachment",
            Ec2Type::Vpc => "AWS::EC2::VPC",
            Ec2Type::VpcEndpoint => "AWS::EC2::VPCEndpoint",
            Ec2Type::Volume => "AWS::EC2::Volume",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_holds_every_type_once_sorted_by_name_as_the_variants_are() {
        let names: Vec<&str> = Ec2Type::ALL.iter().map(|t| t.resource_type()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        let mut variants = Ec2Type::ALL;
        variants.sort();
        assert_eq!(variants, Ec2Type::ALL);
    }
}
