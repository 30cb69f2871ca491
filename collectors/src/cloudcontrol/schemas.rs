//! The Cloud Control sweep's type table: every CloudFormation type Cloud Control can
//! list, with its primary identifier, the operations its `list` and `read` handlers
//! perform, the parent properties a listing needs (and, where the script could tell,
//! which type's items hold them: [`ParentType`]), its tag property and whether it is
//! global.
//!
//! The table is data, checked in at `collectors/data/cloudcontrol-types.json` and made
//! by `scripts/cloudcontrol-schemas` from the CloudFormation resource provider schemas
//! (its `source` field names them and their date); it is compiled into the binary and
//! parsed once, on first use. Permissions are read as `service:Operation` and mapped onto
//! tollgate's canonical keys as any operation is (`iam:ListRoles`, ECS's cluster reads
//! onto `ecs:cluster-resource-read`): the service lower-cased and the operation's first
//! letter upper-cased, since a few schemas write `iam:listUsers` or `CloudTrail:...`. A
//! wildcard permission (`autoscaling:Describe*`) names no one operation and is not
//! charged; `tollgate types --json` shows what is.

use std::sync::OnceLock;

use serde::Deserialize;

/// The checked-in table.
const DATA: &str = include_str!("../../data/cloudcontrol-types.json");

/// One listable type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcType {
    /// CloudFormation type name.
    pub type_name: String,
    /// The primary identifier's property names (a composite id joins them with `|`).
    pub identifier: Vec<String>,
    /// `(service, Operation)` of each operation one `ListResources` page performs.
    pub list: Vec<(String, String)>,
    /// `(service, Operation)` of each operation one `GetResource` performs.
    pub read: Vec<(String, String)>,
    /// Properties `ListResources` needs in its `ResourceModel` (`[]`: top-level).
    pub parent: Vec<String>,
    /// The type whose items hold those properties, when the schemas or the names tell
    /// (`None` for a top-level type, and for a child no type of the table provides).
    pub parent_type: Option<ParentType>,
    /// The property holding its tags, when it is taggable.
    pub tags: Option<String>,
    /// Account-wide: listed once per account, items in region `global`.
    pub global: bool,
}

/// Where a child type's listing gets its `ResourceModel`: the parent type, and for each
/// of the child's [`CcType::parent`] properties, the parent's property holding its value
/// (`ClusterName` ← `AWS::EKS::Cluster`'s `Name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentType {
    /// The parent's CloudFormation type name.
    pub type_name: String,
    /// The parent's property per listing property, in [`CcType::parent`]'s order.
    pub from: Vec<String>,
}

impl CcType {
    /// The `ResourceModel` one listing of this child type needs, read from one parent
    /// item's properties (a part of the parent's identifier `parent_id` standing in for
    /// a property of its primary identifier `parent_identifier`, as Cloud Control joins
    /// a composite one with `|`), or the first property the item lacks.
    pub fn resource_model(
        &self,
        parent_id: &str,
        parent_identifier: &[String],
        properties: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        let Some(link) = &self.parent_type else {
            return Err(self.parent.join(", "));
        };
        let parts: Vec<&str> = match parent_identifier.len() {
            1 => vec![parent_id],
            _ => parent_id.split('|').collect(),
        };
        let from_id = |from: &String| {
            let at = parent_identifier.iter().position(|p| p == from)?;
            (parts.len() == parent_identifier.len()).then(|| parts[at])
        };
        self.parent
            .iter()
            .zip(&link.from)
            .map(|(want, from)| {
                let value = match (properties.get(from), from_id(from)) {
                    (Some(v), _) if !v.is_null() => v.clone(),
                    (_, Some(part)) => serde_json::Value::from(part),
                    _ => return Err(from.clone()),
                };
                Ok((want.clone(), value))
            })
            .collect()
    }
}

/// The table and where it came from.
#[derive(Debug)]
pub struct Table {
    /// The schemas it was made from, and their date.
    pub source: String,
    /// Every type, sorted by name.
    pub types: Vec<CcType>,
}

#[derive(Deserialize)]
struct RawTable {
    source: String,
    types: Vec<RawType>,
}

#[derive(Deserialize)]
struct RawType {
    #[serde(rename = "type")]
    type_name: String,
    identifier: Vec<String>,
    list: Vec<String>,
    read: Vec<String>,
    parent: Vec<String>,
    #[serde(default)]
    parent_type: Option<String>,
    #[serde(default)]
    parent_from: Vec<String>,
    tags: Option<String>,
    global: bool,
}

/// The table (parsed on first use). A table that does not parse is a build defect the
/// unit tests catch; should one ship, the sweep knows no types (and says so in the log)
/// rather than fail the scan.
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| match parse(DATA) {
        Ok(table) => table,
        Err(e) => {
            tracing::error!(error = %e, "collectors/data/cloudcontrol-types.json does not parse: the Cloud Control sweep knows no types");
            Table {
                source: String::new(),
                types: Vec::new(),
            }
        }
    })
}

/// The type named `type_name`, with its index in [`table`].
pub fn find(type_name: &str) -> Option<(usize, &'static CcType)> {
    let types = &table().types;
    types
        .binary_search_by(|t| t.type_name.as_str().cmp(type_name))
        .ok()
        .map(|i| (i, &types[i]))
}

fn parse(text: &str) -> Result<Table, serde_json::Error> {
    let raw: RawTable = serde_json::from_str(text)?;
    let mut types: Vec<CcType> = raw
        .types
        .into_iter()
        .map(|t| CcType {
            type_name: t.type_name,
            identifier: t.identifier,
            list: operations(&t.list),
            read: operations(&t.read),
            parent_type: t
                .parent_type
                .filter(|_| t.parent_from.len() == t.parent.len())
                .map(|type_name| ParentType {
                    type_name,
                    from: t.parent_from,
                }),
            parent: t.parent,
            tags: t.tags,
            global: t.global,
        })
        .collect();
    types.sort_by(|a, b| a.type_name.cmp(&b.type_name));
    types.dedup_by(|a, b| a.type_name == b.type_name);
    Ok(Table {
        source: raw.source,
        types,
    })
}

/// `iam:listUsers` → `("iam", "ListUsers")`; wildcards and malformed entries dropped;
/// duplicates once.
fn operations(permissions: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for p in permissions {
        let Some((service, operation)) = p.split_once(':') else {
            continue;
        };
        if service.is_empty() || operation.is_empty() || operation.contains('*') {
            continue;
        }
        let mut chars = operation.chars();
        let operation: String = chars
            .next()
            .map(|c| c.to_ascii_uppercase())
            .into_iter()
            .chain(chars)
            .collect();
        let op = (service.to_ascii_lowercase(), operation);
        if !out.contains(&op) {
            out.push(op);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_table_parses_sorted_and_names_its_source() {
        let table = parse(DATA).expect("collectors/data/cloudcontrol-types.json parses");
        assert!(table.source.contains("cfn-lint"), "{}", table.source);
        assert!(table.types.len() > 1_000, "{}", table.types.len());
        assert!(table
            .types
            .windows(2)
            .all(|w| w[0].type_name < w[1].type_name));
    }

    #[test]
    fn iam_roles_are_global_and_list_with_iam_list_roles() {
        let (_, role) = find("AWS::IAM::Role").unwrap();
        assert!(role.global);
        assert_eq!(role.identifier, vec!["RoleName"]);
        assert_eq!(
            role.list,
            vec![("iam".to_string(), "ListRoles".to_string())]
        );
        assert_eq!(role.tags.as_deref(), Some("Tags"));
        let (_, eip) = find("AWS::EC2::EIP").unwrap();
        assert_eq!(eip.identifier, vec!["PublicIp", "AllocationId"]);
        assert!(!eip.global);
        assert!(find("AWS::Nope::Nope").is_none());
    }

    #[test]
    fn permissions_are_normalised_and_wildcards_dropped() {
        let got = operations(&[
            "iam:listUsers".to_string(),
            "CloudTrail:DescribeTrails".to_string(),
            "autoscaling:Describe*".to_string(),
            "nonsense".to_string(),
            "iam:ListUsers".to_string(),
        ]);
        assert_eq!(
            got,
            vec![
                ("iam".to_string(), "ListUsers".to_string()),
                ("cloudtrail".to_string(), "DescribeTrails".to_string()),
            ]
        );
    }

    #[test]
    fn a_parent_type_says_what_its_listing_needs_and_which_type_holds_it() {
        let (_, alias) = find("AWS::Lambda::Alias").unwrap();
        assert_eq!(alias.parent, vec!["FunctionName"]);
        let link = alias.parent_type.as_ref().unwrap();
        assert_eq!(link.type_name, "AWS::Lambda::Function");
        assert_eq!(link.from, vec!["FunctionName"]);
        let (_, nodegroup) = find("AWS::EKS::Nodegroup").unwrap();
        let link = nodegroup.parent_type.as_ref().unwrap();
        assert_eq!(
            (link.type_name.as_str(), &link.from[..]),
            ("AWS::EKS::Cluster", &["Name".to_string()][..])
        );
        let (_, listener) = find("AWS::ElasticLoadBalancingV2::Listener").unwrap();
        assert_eq!(
            listener.parent_type.as_ref().unwrap().type_name,
            "AWS::ElasticLoadBalancingV2::LoadBalancer"
        );
        let (_, acl) = find("AWS::WAFv2::WebACL").unwrap();
        assert_eq!(acl.parent, vec!["Scope"]);
        assert!(acl.parent_type.is_none(), "an enum names no parent type");
        let (_, role) = find("AWS::IAM::Role").unwrap();
        assert!(role.parent_type.is_none());
        let resolved = table()
            .types
            .iter()
            .filter(|t| t.parent_type.is_some())
            .count();
        assert!(resolved > 300, "{resolved}");
    }

    #[test]
    fn a_resource_model_reads_the_parents_properties_or_its_identifier() {
        let (_, nodegroup) = find("AWS::EKS::Nodegroup").unwrap();
        let props = |v: serde_json::Value| v.as_object().unwrap().clone();
        let name = vec!["Name".to_string()];
        assert_eq!(
            nodegroup.resource_model(
                "prod",
                &name,
                &props(serde_json::json!({"Name": "prod", "Arn": "a"}))
            ),
            Ok(props(serde_json::json!({"ClusterName": "prod"})))
        );
        assert_eq!(
            nodegroup.resource_model("prod", &name, &serde_json::Map::new()),
            Ok(props(serde_json::json!({"ClusterName": "prod"}))),
            "the parent's identifier stands in for its identifier property"
        );
        let arn = vec!["Arn".to_string()];
        assert_eq!(
            nodegroup.resource_model("arn:x", &arn, &serde_json::Map::new()),
            Err("Name".to_string())
        );
        let (_, deployment) = find("AWS::AppConfig::Deployment").unwrap();
        let (_, environment) = find("AWS::AppConfig::Environment").unwrap();
        assert_eq!(
            deployment.resource_model(
                "app1|env1",
                &environment.identifier,
                &serde_json::Map::new()
            ),
            Ok(props(
                serde_json::json!({"ApplicationId": "app1", "EnvironmentId": "env1"})
            )),
            "a composite identifier's parts stand in for its properties"
        );
    }
}
