//! `Dataset`: what one collector collects (one resource type), the names a user asks
//! for (`--types 'AWS::EC2::*'`, or the first four datasets' aliases `s3-buckets`, ...)
//! and the one place that maps them to collectors.
//!
//! [`Dataset::catalog`] is every dataset tollgate can collect, [`Dataset::defaults`] the
//! ones a scan without `--types` collects; [`select`] turns `--types` patterns (type
//! names with `*` globs, or aliases) into datasets.

use std::fmt;
use std::str::FromStr;

/// A dataset tollgate can collect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Dataset {
    /// S3 buckets with lifecycle and Intelligent-Tiering configuration counts.
    S3Buckets,
    /// Lambda functions with their published version counts.
    LambdaFunctions,
    /// DynamoDB tables with billing mode and item count.
    DynamoDbTables,
    /// KMS keys with metadata and last usage.
    KmsKeys,
}

impl Dataset {
    /// The four first datasets (the seed 000 cost datasets), in report order.
    pub const ALL: [Dataset; 4] = [
        Dataset::S3Buckets,
        Dataset::LambdaFunctions,
        Dataset::DynamoDbTables,
        Dataset::KmsKeys,
    ];

    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Dataset::S3Buckets => "s3-buckets",
            Dataset::LambdaFunctions => "lambda-functions",
            Dataset::DynamoDbTables => "dynamodb-tables",
            Dataset::KmsKeys => "kms-keys",
        }
    }

    /// Every dataset tollgate can collect, in report order.
    pub fn catalog() -> Vec<Dataset> {
        Dataset::ALL.to_vec()
    }

    /// What a scan without `--types` collects, in report order.
    pub fn defaults() -> Vec<Dataset> {
        Dataset::catalog()
    }

    /// The CloudFormation type name of its items (`AWS::S3::Bucket`).
    ///
    /// The names live here, not in the collectors: the collectors name their own type
    /// through this (`TYPE`), so the dataset list depends on no collector.
    pub const fn resource_type(self) -> &'static str {
        match self {
            Dataset::S3Buckets => "AWS::S3::Bucket",
            Dataset::LambdaFunctions => "AWS::Lambda::Function",
            Dataset::DynamoDbTables => "AWS::DynamoDB::Table",
            Dataset::KmsKeys => "AWS::KMS::Key",
        }
    }

    /// Whether its type is global (listed once per account, items in region `global`).
    pub fn is_global(self) -> bool {
        false
    }

    /// The collector that produces it (telemetry attribution).
    pub fn collector(self) -> &'static str {
        match self {
            Dataset::S3Buckets => "s3",
            Dataset::LambdaFunctions => "lambda",
            Dataset::DynamoDbTables => "dynamodb",
            Dataset::KmsKeys => "kms",
        }
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--types` entry that names no dataset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown type {0:?}: give a CloudFormation type name (`AWS::EC2::Instance`), a glob \
     (`AWS::EC2::*`, `AWS::*`) or a dataset alias (s3-buckets, lambda-functions, \
     dynamodb-tables, kms-keys); `tollgate types` lists them all"
)]
pub struct UnknownDataset(pub String);

impl FromStr for Dataset {
    type Err = UnknownDataset;

    /// One dataset by alias (`s3-buckets`) or exact type name (`AWS::S3::Bucket`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Dataset::catalog()
            .into_iter()
            .find(|d| d.name() == s || d.resource_type() == s)
            .ok_or_else(|| UnknownDataset(s.to_string()))
    }
}

/// The datasets `patterns` select, deduplicated, in report order: each pattern is an
/// alias (`s3-buckets`), a type name (`AWS::S3::Bucket`) or a glob over type names
/// (`AWS::EC2::*`, `*::Bucket`; `*` matches any run of characters, case-sensitively as
/// CloudFormation spells types). A pattern that selects nothing is an error naming it.
pub fn select<S: AsRef<str>>(patterns: &[S]) -> Result<Vec<Dataset>, UnknownDataset> {
    let catalog = Dataset::catalog();
    let mut selected = Vec::new();
    for pattern in patterns {
        let pattern = pattern.as_ref().trim();
        let before = selected.len();
        selected.extend(
            catalog
                .iter()
                .copied()
                .filter(|d| d.name() == pattern || glob_matches(pattern, d.resource_type())),
        );
        if selected.len() == before {
            return Err(UnknownDataset(pattern.to_string()));
        }
    }
    selected.sort_unstable();
    selected.dedup();
    Ok(selected)
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (none
/// included) and everything else matches itself. Written here rather than taken from a
/// glob crate: type names have no path separators, classes or escapes to honour, and
/// this is the whole of the syntax `--types` documents.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in Dataset::catalog() {
            assert_eq!(d.name().parse::<Dataset>(), Ok(d));
            assert_eq!(d.resource_type().parse::<Dataset>(), Ok(d));
        }
        assert!("ec2-instances".parse::<Dataset>().is_err());
    }

    #[test]
    fn globs_match_type_names_and_aliases_stay_names() {
        assert!(glob_matches("AWS::EC2::*", "AWS::EC2::Instance"));
        assert!(glob_matches("AWS::*", "AWS::S3::Bucket"));
        assert!(glob_matches("*::Bucket", "AWS::S3::Bucket"));
        assert!(glob_matches("AWS::*::Key", "AWS::KMS::Key"));
        assert!(glob_matches("*", "AWS::KMS::Key"));
        assert!(glob_matches("AWS::KMS::Key", "AWS::KMS::Key"));
        assert!(!glob_matches("AWS::KMS::Key", "AWS::KMS::KeyX"));
        assert!(!glob_matches("AWS::EC2::*", "AWS::S3::Bucket"));
        assert!(!glob_matches("AWS::*::Keys", "AWS::KMS::Key"));
        assert!(!glob_matches("a*a", "a"));
        assert_eq!(
            select(&["AWS::*"]).unwrap(),
            Dataset::catalog(),
            "AWS::* is every type"
        );
        assert_eq!(
            select(&["kms-keys", "AWS::KMS::Key", "AWS::S3::*"]).unwrap(),
            vec![Dataset::S3Buckets, Dataset::KmsKeys]
        );
        let e = select(&["AWS::Nope::*"]).unwrap_err();
        assert!(e.to_string().contains("AWS::Nope::*"), "{e}");
    }
}
