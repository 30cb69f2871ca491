//! What `catalog status` reports per region: the index (type, state), the default view
//! (its filter and scope), or — when a probe gave up — the evidence.

use serde::Serialize;
use tollgate_engine::aws::CallError;

/// One region's catalog status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegionStatus {
    pub region: String,
    #[serde(flatten)]
    pub state: RegionState,
}

/// What the probes found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum RegionState {
    /// Resource Explorer has no index in the region (it is not turned on there).
    NoIndex,
    /// An index, and the region's default view when it has one.
    Indexed {
        index: IndexInfo,
        #[serde(rename = "defaultView")]
        default_view: Option<ViewInfo>,
    },
    /// A probe gave up: the region's status is unknown.
    Unavailable { evidence: Evidence },
}

impl RegionState {
    /// `no-index`, `indexed`, `unavailable`.
    pub fn label(&self) -> &'static str {
        match self {
            RegionState::NoIndex => "no-index",
            RegionState::Indexed { .. } => "indexed",
            RegionState::Unavailable { .. } => "unavailable",
        }
    }
}

/// A region's index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexInfo {
    pub arn: String,
    /// `LOCAL` or `AGGREGATOR`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `ACTIVE`, `CREATING`, `UPDATING`, ...
    pub state: String,
}

/// A region's default view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewInfo {
    pub arn: String,
    /// The view's filter string (`None`: every resource the index holds).
    pub filter: Option<String>,
    /// The view's scope (the account, or an organization path).
    pub scope: Option<String>,
    pub included_properties: Vec<String>,
}

/// Why a region is `unavailable`: the probe that gave up and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The operation (`ListIndexes`).
    pub probe: String,
    /// `throttled`, `failed`, ...
    pub kind: String,
    /// The service's error code, when it answered.
    pub code: Option<String>,
    pub message: String,
    /// Physical attempts made.
    pub attempts: u32,
}

impl Evidence {
    /// The evidence of a failed call.
    pub fn of(error: &CallError) -> Evidence {
        Evidence {
            probe: error.operation().to_owned(),
            kind: error.kind().to_string(),
            code: error.code().map(str::to_owned),
            message: error.message().to_owned(),
            attempts: error.attempts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_status_serialises_flat_with_its_status_tag() {
        let status = RegionStatus {
            region: "eu-west-1".into(),
            state: RegionState::Indexed {
                index: IndexInfo {
                    arn: "arn:i".into(),
                    kind: "LOCAL".into(),
                    state: "ACTIVE".into(),
                },
                default_view: None,
            },
        };
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["region"], "eu-west-1");
        assert_eq!(json["status"], "indexed");
        assert_eq!(json["index"]["type"], "LOCAL");
        assert!(json["defaultView"].is_null());
        let none = RegionStatus {
            region: "x-1".into(),
            state: RegionState::NoIndex,
        };
        assert_eq!(serde_json::to_value(&none).unwrap()["status"], "no-index");
    }
}
