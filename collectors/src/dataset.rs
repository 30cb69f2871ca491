//! `Dataset`: the names a user asks for (`--datasets s3-buckets,kms-keys`) and the one
//! place that maps them to collectors.

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
    /// Every dataset, in report order.
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

/// An unknown dataset name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dataset {0:?}; known datasets: s3-buckets, lambda-functions, dynamodb-tables, kms-keys")]
pub struct UnknownDataset(pub String);

impl FromStr for Dataset {
    type Err = UnknownDataset;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dataset::ALL
            .into_iter()
            .find(|d| d.name() == s.trim())
            .ok_or_else(|| UnknownDataset(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in Dataset::ALL {
            assert_eq!(d.name().parse::<Dataset>(), Ok(d));
        }
        assert!("ec2-instances".parse::<Dataset>().is_err());
    }
}
