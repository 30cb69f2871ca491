//! The Cloud Control sweep's type table: every CloudFormation type Cloud Control can
//! list, with its primary identifier, the operations its `list` and `read` handlers
//! perform, the parent properties a listing needs, its tag property and whether it is
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
    /// The property holding its tags, when it is taggable.
    pub tags: Option<String>,
    /// Account-wide: listed once per account, items in region `global`.
    pub global: bool,
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
    fn a_parent_type_says_what_its_listing_needs() {
        let (_, alias) = find("AWS::Lambda::Alias").unwrap();
        assert_eq!(alias.parent, vec!["FunctionName"]);
    }
}
