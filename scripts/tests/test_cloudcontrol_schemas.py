"""Tests of scripts/cloudcontrol-schemas' parent resolution on planted schemas.

Run: python3 -m unittest discover -s scripts/tests   (from the repository root)
"""

import unittest

from load_script import load


schemas = load("cloudcontrol-schemas")


def schema(type_name, properties, identifier, parent=None, refs=None):
    """A resource schema with a list handler; `parent` its listing's required
    properties, `refs` {property: [(type, property), ...]} relationshipRefs."""
    props = {p: {"type": "string"} for p in properties}
    for p, targets in (refs or {}).items():
        alternatives = [
            {"relationshipRef": {"typeName": t, "propertyPath": f"/properties/{f}"}}
            for t, f in targets
        ]
        props[p] = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    list_handler = {"permissions": ["x:List"]}
    if parent:
        list_handler["handlerSchema"] = {"required": parent}
    return {
        "typeName": type_name,
        "properties": props,
        "primaryIdentifier": [f"/properties/{p}" for p in identifier],
        "handlers": {"list": list_handler, "read": {"permissions": ["x:Get"]}},
    }


def rows(*planted):
    return {r["type"]: r for r in schemas.table(planted, "test")["types"]}


class Parents(unittest.TestCase):
    def test_a_kind_and_suffix_name_the_parent_and_its_property(self):
        got = rows(
            schema("AWS::EKS::Cluster", ["Name", "Arn"], ["Name"]),
            schema("AWS::EKS::Nodegroup", ["ClusterName", "Id"], ["Id"], ["ClusterName"]),
        )
        nodegroup = got["AWS::EKS::Nodegroup"]
        self.assertEqual(nodegroup["parent_type"], "AWS::EKS::Cluster")
        self.assertEqual(nodegroup["parent_from"], ["Name"])
        self.assertEqual(nodegroup["parent_by"], "name")
        self.assertNotIn("parent_type", got["AWS::EKS::Cluster"])

    def test_the_same_property_name_on_the_parent_wins_over_the_suffix(self):
        got = rows(
            schema("AWS::Lambda::Function", ["FunctionName", "Arn"], ["FunctionName"]),
            schema("AWS::Lambda::Alias", ["FunctionName", "AliasArn"], ["AliasArn"], ["FunctionName"]),
        )
        self.assertEqual(got["AWS::Lambda::Alias"]["parent_from"], ["FunctionName"])

    def test_kinds_compare_ignoring_case_and_a_relationship_ref_comes_first(self):
        got = rows(
            schema("AWS::EC2::VPC", ["VpcId"], ["VpcId"]),
            schema("AWS::EC2::VPCCidrBlock", ["VpcId", "Id"], ["Id", "VpcId"], ["VpcId"]),
            schema("AWS::ELB::LoadBalancer", ["LoadBalancerArn"], ["LoadBalancerArn"]),
            schema("AWS::ELB::Other", ["Key"], ["Key"]),
            schema(
                "AWS::ELB::Listener",
                ["ListenerArn"],
                ["ListenerArn"],
                ["LoadBalancerArn"],
                refs={"LoadBalancerArn": [("AWS::ELB::Other", "Key")]},
            ),
        )
        self.assertEqual(got["AWS::EC2::VPCCidrBlock"]["parent_type"], "AWS::EC2::VPC")
        listener = got["AWS::ELB::Listener"]
        self.assertEqual(
            (listener["parent_type"], listener["parent_from"], listener["parent_by"]),
            ("AWS::ELB::Other", ["Key"], "relationshipRef"),
        )

    def test_several_properties_come_from_the_most_specific_parent(self):
        got = rows(
            schema("AWS::Cases::Domain", ["DomainId"], ["DomainId"]),
            schema("AWS::Cases::Case", ["DomainId", "CaseId"], ["CaseId"], ["DomainId"]),
            schema("AWS::Cases::RelatedItem", ["Id"], ["Id"], ["DomainId", "CaseId"]),
        )
        item = got["AWS::Cases::RelatedItem"]
        self.assertEqual(item["parent_type"], "AWS::Cases::Case")
        self.assertEqual(item["parent_from"], ["DomainId", "CaseId"])
        self.assertEqual(got["AWS::Cases::Case"]["parent_type"], "AWS::Cases::Domain")

    def test_values_no_type_holds_a_union_of_types_or_two_from_one_are_left_unresolved(self):
        got = rows(
            schema("AWS::WAFv2::WebACL", ["Scope", "Id"], ["Id"], ["Scope"]),
            schema("AWS::EC2::VPNGateway", ["VPNGatewayId"], ["VPNGatewayId"]),
            schema("AWS::EC2::TransitGateway", ["Id"], ["Id"]),
            schema(
                "AWS::DX::Association",
                ["AssociationId"],
                ["AssociationId"],
                ["GatewayId"],
                refs={
                    "GatewayId": [
                        ("AWS::EC2::VPNGateway", "VPNGatewayId"),
                        ("AWS::EC2::TransitGateway", "Id"),
                    ]
                },
            ),
            schema("AWS::AppSync::Api", ["ApiId"], ["ApiId"]),
            schema(
                "AWS::AppSync::Merge",
                ["Arn"],
                ["Arn"],
                ["SourceApiIdentifier", "MergedApiIdentifier"],
            ),
        )
        for t in ("AWS::WAFv2::WebACL", "AWS::DX::Association", "AWS::AppSync::Merge"):
            self.assertIsNone(got[t]["parent_type"], t)
            self.assertNotIn("parent_from", got[t], t)

    def test_a_child_of_an_unresolved_parent_is_unresolved_too(self):
        got = rows(
            schema("AWS::X::Pool", ["PoolId"], ["PoolId"], ["Scope"]),
            schema("AWS::X::Entry", ["Id"], ["Id"], ["PoolId"]),
        )
        self.assertIsNone(got["AWS::X::Pool"]["parent_type"])
        self.assertIsNone(got["AWS::X::Entry"]["parent_type"])


if __name__ == "__main__":
    unittest.main()
