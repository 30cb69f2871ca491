//! `Operation`: an AWS operation a collector calls, named once.
//!
//! A collector needs an operation's name twice: as the quota's service and operation when
//! it calls ([`CollectorRun::call`](crate::CollectorRun::call)), and as
//! `service:Operation` in the report's reasons. Written as a constant pair and a string
//! they could drift apart; [`operation!`](crate::operation) writes both from one pair of
//! literals.

use std::fmt;

/// An AWS operation: service (`kms`) and operation (`DescribeKey`), and the report's
/// `kms:DescribeKey`. Build one with [`operation!`](crate::operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Operation {
    service: &'static str,
    name: &'static str,
    qualified: &'static str,
}

/// An [`Operation`] from its service and name literals:
/// `operation!("kms", "DescribeKey")` is `kms` / `DescribeKey` / `kms:DescribeKey`.
#[macro_export]
macro_rules! operation {
    ($service:literal, $name:literal) => {
        $crate::Operation::from_parts($service, $name, concat!($service, ":", $name))
    };
}

impl Operation {
    /// Use [`operation!`](crate::operation), which derives `qualified` from the parts.
    #[doc(hidden)]
    pub const fn from_parts(
        service: &'static str,
        name: &'static str,
        qualified: &'static str,
    ) -> Self {
        Operation {
            service,
            name,
            qualified,
        }
    }

    /// The service, as quota keys name it (`kms`).
    pub const fn service(self) -> &'static str {
        self.service
    }

    /// The operation (`DescribeKey`).
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// `service:Operation`, as reports name it.
    pub const fn qualified(self) -> &'static str {
        self.qualified
    }
}

impl AsRef<str> for Operation {
    fn as_ref(&self) -> &str {
        self.qualified
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.qualified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESCRIBE_KEY: Operation = crate::operation!("kms", "DescribeKey");

    #[test]
    fn one_pair_of_literals_names_the_call_and_the_report() {
        assert_eq!(DESCRIBE_KEY.service(), "kms");
        assert_eq!(DESCRIBE_KEY.name(), "DescribeKey");
        assert_eq!(DESCRIBE_KEY.qualified(), "kms:DescribeKey");
        assert_eq!(DESCRIBE_KEY.to_string(), "kms:DescribeKey");
    }
}
